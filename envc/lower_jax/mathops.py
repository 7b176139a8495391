"""JAX lowering of the language 1.1 arithmetic (`ir.Math` fns of envc/mathops.py): `**` with a static exponent as
the exact products of `powi_steps` (one Python variable each, so XLA keeps their order), `pow`, the shifts with the
counts outside [0, width) handled here (XLA's shifts are never given such a count), `~`, and the f32 builtins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envc import ir
from envc.ir import DType
from envc.mathops import powi_steps

if TYPE_CHECKING:
    from envc.lower_jax.emit import Emitter, Scope

# Builtins that are one jnp function of their (already converted) arguments.
_JNP = {
    "round": "jnp.round",  # half to even
    "trunc": "jnp.trunc",
    "asin": "jnp.arcsin",
    "acos": "jnp.arccos",
    "atan": "jnp.arctan",
    "sinh": "jnp.sinh",
    "cosh": "jnp.cosh",
    "log1p": "jnp.log1p",
    "expm1": "jnp.expm1",
    "hypot": "jnp.hypot",
    "fmod": "jnp.fmod",
    "pow": "jnp.power",
    "isnan": "jnp.isnan",
    "isinf": "jnp.isinf",
    "isfinite": "jnp.isfinite",
    "invert": "jnp.invert",
}


def emit(em: Emitter, e: ir.Math, sc: Scope) -> str:
    """The JAX expression of `e` (statements it needs are bound before the current line)."""
    from envc.lower_jax.emit import JNP, literal

    if e.fn in _JNP:
        return f"{_JNP[e.fn]}({', '.join(em.expr(a, sc) for a in e.args)})"
    if e.fn == "sign":
        if not e.ty.dtype.is_float:
            return f"jnp.sign({em.expr(e.args[0], sc)})"
        # NaN and ±0.0 pass through (XLA's sign of a constant -0.0 folds to +0.0)
        v = em.bind("signed", em.expr(e.args[0], sc))
        one = f"{JNP[e.ty.dtype]}(1.0)"
        return f"jnp.where({v} > 0, {one}, jnp.where({v} < 0, -{one}, {v}))"
    x, n = e.args
    if e.fn == "powi":
        assert isinstance(n, ir.Lit) and isinstance(n.value, int)
        return _powi(em, em.expr(x, sc), n.value, e.ty)
    # shifts: counts below 0 give 0 (a spec bug's fallback), counts >= the width 0 or the sign (section 6.4)
    bits = e.ty.dtype.bits
    xv = em.bind("shifted", em.expr(x, sc))
    nv = em.bind("count", em.expr(n, sc))
    zero = literal(0, e.ty)
    count = f"jnp.clip({nv}, 0, {bits - 1}).astype({JNP[e.ty.dtype]})"
    if e.fn == "shl":
        return f"jnp.where(({nv} < 0) | ({nv} >= {bits}), {zero}, jnp.left_shift({xv}, {count}))"
    if e.ty.dtype is DType.U32:  # logical
        return f"jnp.where(({nv} < 0) | ({nv} >= {bits}), {zero}, jnp.right_shift({xv}, {count}))"
    return f"jnp.where({nv} < 0, {zero}, jnp.right_shift({xv}, {count}))"  # arithmetic: sign fill from bits - 1


def _powi(em: Emitter, x: str, n: int, ty: ir.Ty) -> str:
    """`x ** n`: 1 for n == 0, the products of `powi_steps(|n|)` in order, then 1 / that for n < 0 (f32, f64)."""
    from envc.lower_jax.emit import JNP, literal

    if n == 0:
        return literal(1, ty)
    p = em.bind("base", x)
    acc: str | None = None
    for what, _ in powi_steps(abs(n)):
        if what == "acc":
            acc = p if acc is None else em.bind("power", f"{acc} * {p}")
        else:
            p = em.bind("square", f"{p} * {p}")
    assert acc is not None
    return acc if n > 0 else f"({JNP[ty.dtype]}(1.0) / {acc})"
