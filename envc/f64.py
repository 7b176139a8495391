"""The opt-in `f64` type (docs/spec-language.md 6.1, "f64: when and what it costs"): what the passes share.

A spec opts in by naming `f64` anywhere (a field, param, constant, local, cast, ...). f64 arithmetic is IEEE
binary64 with one rounding per operation, exactly as f32 is binary32: the reference interpreter computes with
Python floats, Rust with `f64`, JAX with float64 arrays (x64 enabled only inside the generated package's functions,
`uses_f64`). `//` and `%` count subnormal operands and results as zeros, as for f32 (XLA on CPU flushes f64
subnormals too); the other operations keep IEEE gradual underflow on the reference and Rust.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from envc import ir
from envc.ir import DType

DBL_MIN = 2.0**-1022  # the smallest normal f64

# The math constants at f64 precision: a constant used where an f64 is expected takes these values (`pi` in
# `x64 * pi` is math.pi), elsewhere the f32 nearest to them (envc.mathops.CONSTANTS).
CONSTANTS64: dict[str, float] = {"pi": math.pi, "tau": math.tau, "e": math.e, "inf": math.inf}


def uses_f64(spec: ir.SpecIR) -> bool:
    """Does any declaration or expression of `spec` have type f64? (The JAX package then runs with x64.)"""
    stack: list[object] = [spec]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if isinstance(n, DType):
            if n is DType.F64:
                return True
            continue
        if isinstance(n, (tuple, list)):
            stack.extend(n)
            continue
        if not isinstance(n, BaseModel) or id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, ir.Ty):
            if n.dtype is DType.F64:
                return True
            continue
        stack.extend(getattr(n, k) for k in type(n).model_fields if k != "span")
    return False


def ftz64(x: float) -> float:
    """`x`, or a zero of its sign when `x` is a subnormal f64 (how f64 `//` and `%` see operands and results)."""
    return math.copysign(0.0, x) if 0 < abs(x) < DBL_MIN else x


def div64(x: float, y: float) -> float:
    """IEEE f64 `x / y` (Python raises on a zero divisor: ±inf, or NaN for 0/0 and NaN/0)."""
    if y == 0:
        if x == 0 or math.isnan(x):
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def floor_div64(x: float, y: float) -> float:
    """f64 `x // y`: the IEEE floor of the rounded quotient; subnormal operands and quotient count as zeros."""
    q = ftz64(div64(ftz64(x), ftz64(y)))
    return math.copysign(float(math.floor(q)), q) if math.isfinite(q) else q


def floor_mod64(x: float, y: float) -> float:
    """f64 `x % y`: Python's float modulo (fmod, then the divisor's sign, rounded once); subnormal operands and
    results count as zeros; NaN for a zero divisor, an infinite `x` or a NaN."""
    x, y = ftz64(x), ftz64(y)
    if y == 0 or not math.isfinite(x) or math.isnan(y):
        return math.nan
    r = ftz64(math.fmod(x, y))  # exact
    if r == 0:
        return math.copysign(0.0, y)
    if (r < 0) != (y < 0):
        return ftz64(r + y)
    return r
