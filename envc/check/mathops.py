"""Typing of the language 1.1 arithmetic (docs/spec-language.md 6.4 and 10): `**` and `pow`, `<<` `>>` `~`,
the f32 builtins added with them, the math constants, and the diagnostics for code ported from Python
(`np.clip(...)`, `math.pi`, `x ^ 2` on floats). BodyChecker (envc/check/body.py) calls in here; everything lowers
to `ir.Math` nodes (fns listed in envc/mathops.py) or to folded literals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envc import ast, ir
from envc.diagnostics import Span
from envc.ir import BOOL, F32, I32, DType, Ty
from envc.mathops import (
    ALIASES,
    CONSTANTS,
    F32_1,
    F32_2,
    MODULE_PREFIXES,
    PREDICATES,
    powi_int,
    shift_left,
    shift_right,
    wrap,
)

if TYPE_CHECKING:
    from envc.check.body import Bail, BodyChecker

# The builtins this module types (BodyChecker.call hands them over).
BUILTIN_FNS = frozenset({*F32_1, *F32_2, *PREDICATES, "sign", "pow"})
CONSTANT_NAMES = tuple(CONSTANTS)  # pi tau e inf


def literal_fits(value: int) -> bool:
    """Can an untyped integer literal hold `value` (6.2: an i32 or a u32)?"""
    return -(2**31) <= value < 2**32


def _lit(value: bool | int | float, ty: Ty, span: Span) -> ir.Lit:
    return ir.Lit(value=value, ty=ty, span=span)


def _static_int(x: ir.Expr) -> int | None:
    """The value of a static integer (a literal, static param, integer constant, num_players, folded)."""
    if isinstance(x, ir.Lit) and isinstance(x.value, int) and not isinstance(x.value, bool) and x.ty.enum is None:
        return x.value
    return None


def _weak_result(chk: BodyChecker, value: int, span: Span, text: str) -> ir.Lit:
    """An untyped literal folded from two untyped literals: exact, and it must fit an integer literal."""
    if not literal_fits(value):
        raise chk.err(span, "E040", f"{text} is {value}, which does not fit in 32 bits")
    lit = _lit(value, I32, span)
    chk.weak[id(lit)] = lit
    return lit


def constant(name: str, span: Span) -> ir.Lit | None:
    """A math constant (`pi`, `tau`, `e`, `inf`) as an f32 literal; None for other names."""
    if name in CONSTANTS:
        return _lit(CONSTANTS[name], F32, span)
    return None


# ---- `**` ------------------------------------------------------------------------------------------------------


def power(chk: BodyChecker, a_ast: ast.Expr, b_ast: ast.Expr, span: Span) -> ir.Expr:
    """`a ** b` (and `pow(a, b)`): repeated multiplication for a static integer exponent, f32 `pow` otherwise."""
    a, b = chk.scalar(a_ast), chk.scalar(b_ast)
    chk.numeric(a, a_ast.span, "**")
    chk.numeric(b, b_ast.span, "**")
    n = _static_int(b)
    if a.ty.dtype.is_int and n is not None:
        if n < 0:
            raise chk.err(
                b_ast.span,
                "E040",
                f"negative exponent {n} on an integer: the result is not an integer; use a float base, e.g. "
                f"`f32(x) ** {n}`",
            )
        if isinstance(a, ir.Lit) and isinstance(a.value, int):
            if chk.is_weak(a):  # an untyped literal stays one: exact, adapting to where it is used
                base = a.value
                if abs(base) >= 2 and n > 64:
                    raise chk.err(span, "E040", f"{base} ** {n} does not fit in 32 bits")
                return _weak_result(chk, base**n, span, f"{base} ** {n}")
            d = a.ty.dtype
            return _lit(powi_int(a.value, n, d.bits, d.signed), a.ty.scalar(), span)  # type: ignore[arg-type]
        return ir.Math(fn="powi", args=(a, _exponent(chk, b, span)), ty=a.ty.scalar(), span=span)
    if a.ty.dtype.is_float and n is not None:
        return ir.Math(fn="powi", args=(a, _exponent(chk, b, span)), ty=a.ty.scalar(), span=span)
    if a.ty.dtype.is_int and b.ty.dtype.is_int:
        raise chk.err(
            b_ast.span,
            "E051",
            "`**` on an integer needs a static exponent (a literal, constant or static param); for a power of two "
            "write `1 << n`, for a float power convert the base: `f32(x) ** n`",
        )
    ft = chk.float_ty(a, b)  # f64 if either is (6.4)
    a, b = chk.cast(a, ft), chk.cast(b, ft)
    return ir.Math(fn="pow", args=(a, b), ty=ft, span=span)


def _exponent(chk: BodyChecker, b: ir.Expr, span: Span) -> ir.Expr:
    return chk.fit(b, I32, span) if chk.is_weak(b) else b


# ---- shifts and `~` -------------------------------------------------------------------------------------------


def _int_operand(chk: BodyChecker, x: ir.Expr, span: Span, op: str) -> None:
    if x.ty.enum is not None or not x.ty.dtype.is_int:
        raise chk.err(
            span, "E040", f"'{op}' shifts bits and needs integers, got {x.ty.show()} (a comparison is '{op[0]}')"
        )


def shift(chk: BodyChecker, e: ast.Binary) -> ir.Expr:
    """`a << n`, `a >> n`: the type of `a` (an untyped literal: i32, or u32 when it does not fit i32); the count
    may be any integer type."""
    op = e.op
    a, n = chk.scalar(e.a), chk.scalar(e.b)
    _int_operand(chk, a, e.a.span, op)
    _int_operand(chk, n, e.b.span, op)
    count = _static_int(n)
    if count is not None and count < 0:
        raise chk.err(e.b.span, "E040", f"negative shift count {count}; a shift count is 0 or more")
    fn = "shl" if op == "<<" else "shr"
    if isinstance(a, ir.Lit) and isinstance(a.value, int) and count is not None:
        if chk.is_weak(a):  # exact, still an untyped literal
            if a.value != 0 and op == "<<" and count > 64:
                raise chk.err(e.span, "E040", f"{a.value} << {count} does not fit in 32 bits")
            value = a.value << count if op == "<<" else a.value >> min(count, 64)
            return _weak_result(chk, value, e.span, f"{a.value} {op} {count}")
        d = a.ty.dtype
        assert isinstance(a.value, int)
        v = shift_left(a.value, count, d.bits, d.signed) if op == "<<" else shift_right(a.value, count, d.bits)
        return _lit(v, a.ty.scalar(), e.span)
    if chk.is_weak(n):
        n = chk.fit(n, I32, e.span)
    if chk.is_weak(a):
        assert isinstance(a, ir.Lit) and isinstance(a.value, int)
        a = chk.fit(a, I32 if a.value < 2**31 else Ty(dtype=DType.U32), e.span)
        node = ir.Math(fn=fn, args=(a, n), ty=a.ty.scalar(), span=e.span)
        chk.weak_shifts[id(node)] = node  # the literal may still adapt to the other operand (adapt)
        return node
    return ir.Math(fn=fn, args=(a, n), ty=a.ty.scalar(), span=e.span)


def adapt(chk: BodyChecker, a: ir.Expr, b: ir.Expr, span: Span) -> tuple[ir.Expr, ir.Expr]:
    """A shift of an untyped literal (`1 << i`) takes the integer type of the other operand, as the literal alone
    would: `bits & (1 << i)` with `bits: u32` is a u32 operation."""

    def retype(x: ir.Expr, other: ir.Expr) -> ir.Expr:
        if chk.weak_shifts.get(id(x)) is not x or not isinstance(x, ir.Math):
            return x
        if chk.is_weak(other) or chk.weak_shifts.get(id(other)) is other:
            return x
        if other.ty.enum is not None or not other.ty.dtype.is_int or other.ty.scalar() == x.ty:
            return x
        lit = x.args[0]
        assert isinstance(lit, ir.Lit)
        ty = other.ty.scalar()
        return ir.Math(fn=x.fn, args=(chk.fit(lit, ty, span), x.args[1]), ty=ty, span=x.span)

    return retype(a, b), retype(b, a)


def invert(chk: BodyChecker, e: ast.Unary) -> ir.Expr:
    """`~x`: bitwise not of an integer (`-x - 1` for signed types, `4294967295 - x` for u32)."""
    x = chk.scalar(e.x)
    if x.ty.dtype is DType.BOOL and x.ty.enum is None:
        raise chk.err(e.span, "E040", "`~` is bitwise not on integers; for a bool write `not x`")
    if x.ty.enum is not None or not x.ty.dtype.is_int:
        raise chk.err(e.span, "E040", f"`~` needs an integer, got {x.ty.show()}")
    if isinstance(x, ir.Lit) and isinstance(x.value, int):
        if chk.is_weak(x):
            return _weak_result(chk, ~x.value, e.span, f"~{x.value}")
        d = x.ty.dtype
        return _lit(wrap(~x.value, d.bits, d.signed), x.ty.scalar(), e.span)
    return ir.Math(fn="invert", args=(x,), ty=x.ty.scalar(), span=e.span)


# ---- builtins --------------------------------------------------------------------------------------------------


def builtin(chk: BodyChecker, e: ast.Call) -> ir.Expr:
    """sign, round, trunc, hypot, asin, acos, atan, sinh, cosh, log1p, expm1, fmod, isnan, isinf, isfinite, pow."""
    f = e.func
    if f == "pow":
        chk.arity(e, 2)
        return power(chk, e.args[0], e.args[1], e.span)
    chk.arity(e, 2 if f in F32_2 else 1)
    xs = [chk.scalar(a) for a in e.args]
    for x, arg in zip(xs, e.args):
        chk.numeric(x, arg.span, f)
    if f == "sign":
        (x,) = xs
        if isinstance(x, ir.Lit) and isinstance(x.value, int) and chk.is_weak(x):
            return _weak_result(chk, (x.value > 0) - (x.value < 0), e.span, f"sign({x.value})")
        return ir.Math(fn="sign", args=(x,), ty=x.ty.scalar(), span=e.span)
    ft = chk.float_ty(*xs)
    args = tuple(chk.cast(x, ft) for x in xs)
    return ir.Math(fn=f, args=args, ty=BOOL if f in PREDICATES else ft, span=e.span)


# ---- diagnostics for code ported from Python -------------------------------------------------------------------


def _known(name: str) -> bool:
    from envc.check.body import BUILTINS

    return name in BUILTINS or name in CONSTANTS


def prefix_error(chk: BodyChecker, dotted: str, span: Span, called: bool) -> Bail:
    """`np.clip(...)`, `math.pi`: say to drop the prefix (or that no such builtin exists)."""
    name = dotted.rsplit(".", 1)[1]
    target = ALIASES.get(name, name)
    if _known(target):
        shown = f"{target}(...)" if target not in CONSTANTS else target
        return chk.err(span, "E030", f"write `{shown}`: builtins have no module prefix")
    what = f"{dotted}(...)" if called else dotted
    if name == "nan":
        return chk.err(span, "E030", f"`{what}` is not available: there is no NaN constant; write `0.0 / 0.0`")
    return chk.err(
        span, "E030", f"`{what}` is not available: builtins have no module prefix, and there is no builtin '{name}'"
    )


def module_attr(chk: BodyChecker, e: ast.Attr) -> Bail | None:
    """`math.pi` / `np.inf` where the root name is no declaration: the prefix diagnostic, else None."""
    parts = [e.name]
    base: ast.Expr = e.base
    while isinstance(base, ast.Attr):
        parts.append(base.name)
        base = base.base
    if not isinstance(base, ast.Name) or base.id not in MODULE_PREFIXES:
        return None
    if chk.lookup_local(base.id) is not None or base.id in chk.env.symbols:
        return None
    return prefix_error(chk, ".".join([base.id, *reversed(parts)]), e.span, False)


def alias_hint(name: str) -> str:
    """` (did you mean 'atan2'?)` for another library's name of a builtin (`arctan2`), else ''."""
    target = ALIASES.get(name)
    return f" (did you mean '{target}'?)" if target is not None else ""


def _show(x: ast.Expr, depth: int = 0) -> str | None:
    """Short source text of an expression (for messages), or None when it is long."""
    if depth > 3:
        return None
    if isinstance(x, ast.Name):
        return x.id
    if isinstance(x, ast.Num):
        return repr(x.value) if isinstance(x.value, float) else str(x.value)
    if isinstance(x, ast.Attr):
        b = _show(x.base, depth + 1)
        return None if b is None else f"{b}.{x.name}"
    if isinstance(x, ast.Index):
        b = _show(x.base, depth + 1)
        ix = [_show(i, depth + 1) for i in x.indices]
        if b is None or any(i is None for i in ix):
            return None
        return f"{b}[{', '.join(i for i in ix if i is not None)}]"
    if isinstance(x, ast.Call):
        args = [_show(a, depth + 1) for a in x.args]
        if any(a is None for a in args):
            return None
        return f"{x.func}({', '.join(a for a in args if a is not None)})"
    if isinstance(x, ast.Unary) and x.op in ("-", "~"):
        v = _show(x.x, depth + 1)
        return None if v is None else f"{x.op}{v}"
    if isinstance(x, ast.Binary):
        a, b = _show(x.a, depth + 1), _show(x.b, depth + 1)
        return None if a is None or b is None else f"({a} {x.op} {b})"
    return None


def xor_error(chk: BodyChecker, e: ast.Binary) -> Bail:
    """`x ^ 2` on floats: `^` is xor, the power is `**`. The operands are shown when each is one term: `^` binds
    looser than `+` and `*`, so in `a ^ 2 + b ^ 2` the user's operands are not the parsed ones."""
    a, b = _show(e.a), _show(e.b)
    if a is not None and isinstance(e.a, ast.Unary):
        a = f"({a})"  # `-x ** 2` is `-(x ** 2)`
    if a is None or b is None or isinstance(e.b, ast.Binary):
        return chk.err(
            e.span,
            "E040",
            "`^` is bitwise xor; for a power write `**`, which binds tighter than `*` and `+` (`a ** 2 + b ** 2`)",
        )
    return chk.err(e.span, "E040", f"`^` is bitwise xor; write `{a} ** {b}`")
