"""Rust lowering of the language 1.1 arithmetic (`ir.Math` fns of envc/mathops.py). The definitions live in the
runtime (rust_runtime/src/mathx.rs: `powi_f32`, the shifts, `sign_f32`, `fmod`); f32 functions with a libm
counterpart are the std methods, which call it (`asinf`, `sinhf`, `hypotf`, `powf`, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envc import ir
from envc.ir import DType

if TYPE_CHECKING:
    from envc.lower_rust.emit import Ctx, Emitter

# f32 -> f32 (or bool) std methods of one argument.
_METHOD = {
    "round": "round_ties_even",
    "trunc": "trunc",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "log1p": "ln_1p",
    "expm1": "exp_m1",
    "isnan": "is_nan",
    "isinf": "is_infinite",
    "isfinite": "is_finite",
}


def emit(em: Emitter, e: ir.Math, ctx: Ctx) -> str:
    """The Rust expression of `e`."""
    from envc.lower_rust.emit import paren

    fn = e.fn
    args = [em.expr(a, ctx) for a in e.args]
    if fn in _METHOD:
        return f"{paren(args[0])}.{_METHOD[fn]}()"
    if fn == "hypot":
        return f"{paren(args[0])}.hypot({args[1]})"
    if fn == "pow":
        return f"{paren(args[0])}.powf({args[1]})"
    if fn == "fmod":
        mod = "rt::f64x::fmod" if e.args[0].ty.dtype is DType.F64 else "rt::mathx::fmod"
        return f"{mod}({args[0]}, {args[1]})"
    if fn == "invert":
        return f"!{paren(args[0])}"
    if fn == "sign":
        if e.ty.dtype is DType.F32:
            return f"rt::mathx::sign_f32({args[0]})"
        if e.ty.dtype is DType.F64:
            return f"rt::f64x::sign({args[0]})"
        if e.ty.dtype is DType.U32:
            return f"rt::mathx::sign_u32({args[0]})"
        return f"{paren(args[0])}.signum()"
    if fn == "powi":
        n = e.args[1]
        assert isinstance(n, ir.Lit) and isinstance(n.value, int)
        if e.ty.dtype is DType.F32:
            return f"rt::mathx::powi_f32({args[0]}, {n.value}i64)"
        if e.ty.dtype is DType.F64:
            return f"rt::f64x::powi({args[0]}, {n.value}i64)"
        return f"{paren(args[0])}.wrapping_pow({n.value}u32)"  # x^n mod 2^bits, in any order
    if fn in ("shl", "shr"):
        return f"rt::mathx::{fn}({args[0]}, i64::from({args[1]}))"
    raise KeyError(fn)
