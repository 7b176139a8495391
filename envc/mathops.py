"""The arithmetic of language 1.1 that every pass shares (docs/spec-language.md sections 6.4, 9 and 10): the math
constants, the module prefixes newcomers write (`np.`, `math.`), and the reference semantics of `**`, the shifts,
`~` and the f32 builtins added with them. The reference interpreter calls `reference_math`; the JAX and Rust
lowerings implement the same definitions (envc/lower_jax/mathops.py, envc/lower_rust/mathops.py and
rust_runtime/src/mathx.rs).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

# The math constants: f32 values (the nearest f32 to each), usable wherever an expression is. A declaration of
# the same name (a local, parameter, constant, state field, ...) shadows them.
CONSTANTS: dict[str, float] = {
    "pi": struct.unpack("f", struct.pack("f", math.pi))[0],
    "tau": struct.unpack("f", struct.pack("f", math.tau))[0],
    "e": struct.unpack("f", struct.pack("f", math.e))[0],
    "inf": math.inf,
}

# Module prefixes of Python code that people port (`np.clip(...)`, `math.pi`): the language has no modules.
MODULE_PREFIXES = frozenset({"math", "cmath", "np", "numpy", "jnp", "jax", "lax", "torch", "scipy", "random"})

# Names of other libraries for builtins: `np.arctan2` -> `atan2`, `np.float32(x)` -> `f32(x)`.
ALIASES: dict[str, str] = {
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "arctan2": "atan2",
    "power": "pow",
    "absolute": "abs",
    "fabs": "abs",
    "minimum": "min",
    "maximum": "max",
    "clamp": "clip",
    "signum": "sign",
    "rint": "round",
    "around": "round",
    "float32": "f32",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint32": "u32",
    "bool_": "bool",
}

# f32 -> f32 functions added in 1.1 (ints are converted to f32 first), and their two-argument kin.
F32_1 = ("round", "trunc", "asin", "acos", "atan", "sinh", "cosh", "log1p", "expm1")
F32_2 = ("hypot", "fmod")
PREDICATES = ("isnan", "isinf", "isfinite")  # f32 -> bool
# Everything `ir.Math` may hold beyond the 1.0 functions: `powi` (x, static int exponent), `pow` (f32, f32),
# `shl`/`shr` (int, int count), `invert` (int), `sign` (int or f32).
FNS = frozenset({*F32_1, *F32_2, *PREDICATES, "sign", "powi", "pow", "shl", "shr", "invert"})
# Transcendental functions: compiled backends agree with the reference within a tolerance, not bit for bit.
TRANSCENDENTAL = frozenset({"asin", "acos", "atan", "sinh", "cosh", "log1p", "expm1", "hypot", "pow"})

_pack = struct.Struct("f").pack
_unpack = struct.Struct("f").unpack


def f32(x: float) -> float:
    """Round to the nearest f32 (overflow to inf)."""
    try:
        return _unpack(_pack(x))[0]  # type: ignore[no-any-return]
    except OverflowError:
        return math.copysign(math.inf, x)


def wrap(v: int, bits: int, signed: bool) -> int:
    """`v` wrapped (two's complement) to a `bits`-wide integer."""
    mask = (1 << bits) - 1
    v &= mask
    return v - (1 << bits) if signed and v >> (bits - 1) else v


# ---- `**` ---------------------------------------------------------------------------------------------------


def powi_steps(n: int) -> list[tuple[str, int]]:
    """The multiplications of `x ** n` for a static n >= 1, in the defined order (docs section 6.4): binary
    exponentiation from the lowest bit, `p` holding x^(2^k). Each step is ("acc", k) (acc = acc * p, or acc = p
    the first time) or ("sq", k) (p = p * p). Every backend evaluates exactly these products."""
    out: list[tuple[str, int]] = []
    k = 0
    while n:
        if n & 1:
            out.append(("acc", k))
        n >>= 1
        if n:
            out.append(("sq", k))
            k += 1
    return out


def powi_float(x: float, n: int, rnd: Callable[[float], float] = f32) -> float:
    """f32 `x ** n` for a static integer n: 1.0 for n == 0 (also for NaN), the products of `powi_steps` rounded
    one by one, and for n < 0 the f32 quotient 1.0 / (x ** -n). (`rnd=float`: the same in f64.)"""
    if n == 0:
        return 1.0
    acc: float | None = None
    p = x
    for what, _ in powi_steps(abs(n)):
        if what == "acc":
            acc = p if acc is None else rnd(acc * p)
        else:
            p = rnd(p * p)
    assert acc is not None
    if n > 0:
        return acc
    if acc == 0:
        return math.copysign(math.inf, acc)
    return rnd(1.0 / acc)


def powi_int(x: int, n: int, bits: int, signed: bool) -> int:
    """Integer `x ** n` for a static n >= 0, wrapped: the same as n - 1 wrapping multiplications."""
    return wrap(pow(x, n, 1 << bits), bits, signed)


def _odd_integer(y: float) -> bool:
    return math.isfinite(y) and y == math.trunc(y) and math.fmod(y, 2.0) != 0


def pow_float(x: float, y: float, rnd: Callable[[float], float] = f32) -> float:
    """f32 `x ** y` for a float or runtime exponent: C99/IEEE `pow` (pow(x, 0) == 1 and pow(1, y) == 1 even for
    NaN, a negative base with a non-integer exponent is NaN, pow(±0, negative) is ±inf, pow(-inf, 0.5) is inf),
    computed in f64 and rounded once. (Python's math.pow is C99's but raises where C99 signals; numpy's power
    takes shortcuts such as sqrt for 0.5, which differ at -inf.) (`rnd=float`: f64 `pow`, not rounded.)"""
    try:
        return rnd(math.pow(x, y))
    except OverflowError:
        return -math.inf if x < 0 and _odd_integer(y) else math.inf
    except ValueError:
        if x == 0:  # a zero to a negative power: a pole
            return -math.inf if math.copysign(1.0, x) < 0 and _odd_integer(y) else math.inf
        return math.nan  # a negative base to a non-integer power


# ---- shifts and `~` -------------------------------------------------------------------------------------------


def shift_left(x: int, n: int, bits: int, signed: bool) -> int:
    """`x << n` for n >= 0: x * 2**n wrapped (0 once n >= the width). A negative n is a spec bug (fallback 0)."""
    if n < 0:
        return 0
    return wrap(x << min(n, bits), bits, signed)


def shift_right(x: int, n: int, bits: int) -> int:
    """`x >> n` for n >= 0: floor(x / 2**n), i.e. arithmetic for signed types (sign fill once n >= the width)
    and logical for u32 (0 once n >= 32). A negative n is a spec bug (fallback 0)."""
    if n < 0:
        return 0
    return x >> min(n, bits)


# ---- the f32 builtins ---------------------------------------------------------------------------------------


def _round(x: float) -> float:
    if not math.isfinite(x):
        return x
    return math.copysign(float(round(x)), x)  # Python rounds half to even; round(-0.5) == -0.0


def _trunc(x: float) -> float:
    return math.copysign(float(math.trunc(x)), x) if math.isfinite(x) else x


def _asin(x: float) -> float:
    return math.asin(x) if -1.0 <= x <= 1.0 else math.nan


def _acos(x: float) -> float:
    return math.acos(x) if -1.0 <= x <= 1.0 else math.nan


def _sinh(x: float) -> float:
    try:
        return math.sinh(x)
    except OverflowError:
        return math.copysign(math.inf, x)


def _cosh(x: float) -> float:
    try:
        return math.cosh(x)
    except OverflowError:
        return math.inf


def _log1p(x: float) -> float:
    if x == -1.0:
        return -math.inf
    return math.log1p(x) if x > -1.0 else math.nan  # NaN too


def _expm1(x: float) -> float:
    try:
        return math.expm1(x)
    except OverflowError:
        return math.inf


def _fmod(x: float, y: float) -> float:
    """C `fmod`: x - trunc(x / y) * y, exact, with the sign of x; NaN for y == 0, infinite x or a NaN."""
    if y == 0 or math.isinf(x) or math.isnan(x) or math.isnan(y):
        return math.nan
    if math.isinf(y):
        return x
    return math.fmod(x, y)


def sign_float(x: float) -> float:
    """f32 `sign`: -1.0, +1.0, the zero itself (±0.0 kept), or NaN."""
    if x > 0:
        return 1.0
    if x < 0:
        return -1.0
    return x


F32_FUNCS: dict[str, Callable[..., float]] = {
    "round": _round,
    "trunc": _trunc,
    "asin": _asin,
    "acos": _acos,
    "atan": math.atan,
    "sinh": _sinh,
    "cosh": _cosh,
    "log1p": _log1p,
    "expm1": _expm1,
    "hypot": math.hypot,
    "fmod": _fmod,
}


def reference_math(
    fn: str,
    args: list[Callable[[Any], Any]],
    ty_bits: int | None,
    signed: bool,
    on_bad_count: Callable[[int], None],
    rnd: Callable[[float], float] = f32,
) -> Callable[[Any], Any]:
    """The reference closure of `ir.Math(fn)` for the functions of this module. `ty_bits`/`signed`: the result's
    integer width and signedness (None for float and bool results); `on_bad_count(n)` reports a negative shift
    count (a spec bug) before the fallback applies; `rnd` rounds a float result (`float` for f64 results)."""
    if fn in F32_FUNCS:
        f = F32_FUNCS[fn]
        if len(args) == 1:
            (a0,) = args
            return lambda fr: rnd(f(a0(fr)))
        a0, a1 = args
        return lambda fr: rnd(f(a0(fr), a1(fr)))
    if fn in PREDICATES:
        pred = {"isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite}[fn]
        (a0,) = args
        return lambda fr: pred(a0(fr))
    if fn == "pow":
        a0, a1 = args
        return lambda fr: pow_float(a0(fr), a1(fr), rnd)
    if fn == "sign":
        (a0,) = args
        if ty_bits is None:
            return lambda fr: sign_float(a0(fr))
        return lambda fr: (a0(fr) > 0) - (a0(fr) < 0)
    if fn == "powi":
        a0, a1 = args
        if ty_bits is None:
            return lambda fr: powi_float(a0(fr), a1(fr), rnd)
        bits = ty_bits
        return lambda fr: powi_int(a0(fr), a1(fr), bits, signed)
    if fn == "invert":
        (a0,) = args
        assert ty_bits is not None
        bits = ty_bits
        return lambda fr: wrap(~a0(fr), bits, signed)
    if fn in ("shl", "shr"):
        a0, a1 = args
        assert ty_bits is not None
        bits = ty_bits
        left = fn == "shl"

        def shift(fr: Any) -> int:
            x, n = a0(fr), a1(fr)
            if n < 0:
                on_bad_count(n)
                return 0
            return shift_left(x, n, bits, signed) if left else shift_right(x, n, bits)

        return shift
    raise KeyError(fn)
