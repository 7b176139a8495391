"""Runtime param overrides (`envc.build(spec, params=...)`), checked against the IR's declarations once for every
backend: unknown names are a KeyError, values that are not a value of the param's type a ValueError naming
the param, its type and what was given (docs/spec-language.md 4.2)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from envc.ir import DType, SpecIR
from envc.mathops import wrap

F32_MAX = float(np.finfo(np.float32).max)


def shown_value(value: Any) -> str:
    text = repr(value)
    return (text if len(text) <= 60 else text[:57] + "...") + f" ({type(value).__name__})"


def to_scalar(value: Any) -> Any:
    """A 0-d array or array scalar (numpy's, JAX's) as the Python scalar it holds; anything else unchanged."""
    if getattr(value, "shape", None) == () and hasattr(value, "item"):
        return value.item()
    return value


def traced(value: Any) -> bool:
    """A JAX tracer (a param under `jax.jit`/`jax.vmap`): its value cannot be read here; the backend takes it."""
    return any(c.__name__ == "Tracer" and c.__module__.startswith("jax") for c in type(value).__mro__)


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


__all__ = ["checked_params", "param_value", "shown_value", "to_scalar", "traced"]
