"""Actions handed to `step` through the runtime API (`envc.build(...)`), checked alike on every backend: an id
outside `[0, num_actions)` is an illegal action (docs/spec-language.md 14.3) on all of them, and what is not
an action at all is a ValueError, never a backend's own conversion error or a silent truncation."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from envc.ir import SpecIR
from envc.params import shown_value, to_scalar, traced

ILLEGAL = -1  # the id every out-of-range action becomes: illegal on every backend, and an int32


def checked_action(spec: SpecIR, action: Any) -> Any:
    """A discrete spec's action as an int id (`ILLEGAL` when outside the action range), a box spec's as a
    float32 array of the box's shape; traced values pass as they are."""
    if traced(action):
        return action
    if spec.box is None:
        return _action_id(spec.num_actions, action)
    return _box_action(spec, action)


def _action_id(num_actions: int, action: Any) -> int:
    if type(action) is int:  # the common case, first
        return action if 0 <= action < num_actions else ILLEGAL
    v = to_scalar(action)
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return _action_id(num_actions, int(v))
    if isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v)) and float(v).is_integer():
        return _action_id(num_actions, int(float(v)))
    raise ValueError(f"an action is an integer id (0 to {num_actions - 1}), got {shown_value(action)}")


def _box_action(spec: SpecIR, action: Any) -> np.ndarray:
    assert spec.box is not None
    shape = tuple(spec.box.shape)
    size = math.prod(shape)
    try:
        arr = np.asarray(action, dtype=np.float32) if action is not None else None
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.dtype != np.float32:
        raise ValueError(f"an action is {size} number(s) for the box {list(shape)}, got {shown_value(action)}")
    if arr.size != size:
        raise ValueError(f"an action is {size} number(s) for the box {list(shape)}, got {arr.size}")
    return arr.reshape(shape)


__all__ = ["ILLEGAL", "checked_action"]
