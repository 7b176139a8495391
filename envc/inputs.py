"""What the runtime API takes from its caller, checked against the IR once for every backend, so that all of them
accept and refuse the same inputs: param overrides (`envc.build(spec, params=...)`, docs/spec-language.md 4.2),
actions (`step`, 14.3) and injected states (`state_from_dict`). A bad input is one KeyError or ValueError that
names what was wrong, never a backend's own conversion error, a silent truncation or a NaN read as 0."""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from envc.ir import NP_DTYPE, DType, SpecIR
from envc.mathops import wrap

F32_MAX = float(np.finfo(np.float32).max)


def shown_value(value: Any) -> str:
    """A short repr of a rejected value and its type, for error messages."""
    text = repr(value)
    return (text if len(text) <= 60 else text[:57] + "...") + f" ({type(value).__name__})"


def to_scalar(value: Any) -> Any:
    """A 0-d array or array scalar (numpy's, JAX's) as the Python scalar it holds; anything else unchanged."""
    if getattr(value, "shape", None) == () and hasattr(value, "item"):
        return value.item()
    return value


def traced(value: Any) -> bool:
    """A JAX tracer (a param under `jax.jit`/`jax.vmap`): its value cannot be read here; the backend takes it.
    Without jax imported nothing is one, and the reference and Rust backends never import it for this."""
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(value, jax.core.Tracer)


def param_value(name: str, dtype: DType, value: Any) -> bool | int | float:
    """`value` as a Python value of `dtype` (an integer wrapped to the type's width, as documented; a float kept
    in double precision, each backend rounds it), or a ValueError saying why it is none."""
    v = to_scalar(value)
    kind = dtype.value
    if dtype is DType.BOOL:
        if isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)):
            return bool(v)
        raise ValueError(f"param '{name}' ({kind}): expected true or false, got {shown_value(value)}")
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ValueError(f"param '{name}' ({kind}): expected a number, got {shown_value(value)}")
    if dtype.is_float:
        x = float(v)
        if dtype is DType.F32 and math.isfinite(x) and abs(x) > F32_MAX:
            raise ValueError(f"param '{name}' ({kind}): {v!r} does not fit in f32")
        return x
    if isinstance(v, numbers.Integral):
        return wrap(int(v), dtype.bits, dtype.signed)
    x = float(v)
    if math.isfinite(x) and x.is_integer():
        return wrap(int(x), dtype.bits, dtype.signed)
    raise ValueError(f"param '{name}' ({kind}): expected an integer, got {shown_value(value)}")


def checked_params(spec: SpecIR, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The overrides in `params`, each checked and converted (`param_value`; traced values pass as they are);
    no defaults filled in."""
    if not params:
        return {}
    if not isinstance(params, Mapping):
        raise ValueError(f"params must be a mapping of param names to values, got {shown_value(params)}")
    runtime = {p.name: p for p in spec.params if not p.static}
    unknown = set(params) - set(runtime)
    if unknown:
        raise KeyError(f"unknown runtime params {sorted(map(str, unknown))}; runtime params are {sorted(runtime)}")
    return {k: v if traced(v) else param_value(k, runtime[k].ty.dtype, v) for k, v in params.items()}


ILLEGAL = -1  # the id every out-of-range action becomes: illegal on every backend, and an int32


def checked_action(spec: SpecIR, action: Any) -> Any:
    """A discrete spec's action as an int id (`ILLEGAL` when outside the action range), a box spec's as a
    float32 array of the box's shape; traced values pass as they are."""
    if spec.box is None and type(action) is int:  # the common case of a step loop, first
        return action if 0 <= action < spec.num_actions else ILLEGAL
    if traced(action):
        return action
    if spec.box is None:
        return _action_id(spec.num_actions, action)
    return _box_action(spec, action)


def _action_id(num_actions: int, action: Any) -> int:
    v = to_scalar(action)
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        if not isinstance(v, numbers.Integral):
            x = float(v)
            v = int(x) if math.isfinite(x) and x.is_integer() else None
        if v is not None:
            return int(v) if 0 <= v < num_actions else ILLEGAL
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


def checked_state(spec: SpecIR, d: Mapping[str, Any]) -> dict[str, Any]:
    """`d` (a `state_to_dict`-style mapping) with every field of the spec as a numpy array of the field's shape
    and dtype (integers wrapped to it, as the backends store them); other keys pass unchanged."""
    missing = [f.name for f in spec.fields if f.name not in d]
    if missing:
        raise KeyError(f"state dict lacks fields {missing}")
    out = dict(d)
    for f in spec.fields:
        arr = np.asarray(d[f.name])
        kind = f.ty.enum or f.ty.dtype.value
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"field '{f.name}' ({kind}): expected numbers, got {arr.dtype} values")
        if arr.shape != tuple(f.ty.shape):
            raise ValueError(f"field '{f.name}' has shape {arr.shape}, expected {tuple(f.ty.shape)}")
        want = NP_DTYPE[f.ty.dtype]
        if arr.dtype == want:  # what state_to_dict gives: nothing to convert
            out[f.name] = arr
        elif not f.ty.dtype.is_int:
            out[f.name] = arr.astype(want)
        else:
            if arr.dtype.kind == "f":
                bad = ~np.isfinite(arr) | (arr != np.trunc(np.where(np.isfinite(arr), arr, 0)))
                if bad.any():
                    first = float(arr.reshape(-1)[np.argmax(bad.reshape(-1))])
                    raise ValueError(f"field '{f.name}' ({kind}): {first!r} is not an integer")
            out[f.name] = _wrapped(arr, f.ty.dtype).astype(want)
    return out


def _wrapped(arr: np.ndarray, dtype: DType) -> np.ndarray:
    """The integers of `arr` (ints, bools or integral floats) wrapped to `dtype`'s width, as int64."""
    if arr.dtype.kind == "f" and arr.size and float(np.abs(arr).max()) >= 2.0**63:  # beyond int64: exactly, in Python
        flat = [wrap(int(v), dtype.bits, dtype.signed) for v in arr.reshape(-1).tolist()]
        return np.array(flat, np.int64).reshape(arr.shape)
    low = arr.astype(np.int64) & ((1 << dtype.bits) - 1)  # a uint64 beyond 2**63 keeps its low bits
    return np.where(low >> (dtype.bits - 1), low - (1 << dtype.bits), low) if dtype.signed else low

__all__ = ["ILLEGAL", "checked_action", "checked_params", "checked_state", "param_value", "shown_value", "to_scalar",
           "traced"]
