"""Array values and several results (language 1.1, docs/spec-language.md 6.7 and 17): array literals `[a, b, c]`,
scalar operations lifted to arrays element by element (`-y`, `sin(y)`, `clip(y, lo, hi)`, `y > 0.0`,
`if c then y else z`, casts), functions that return several values (`returns: [f32, f32]`, `return a, b`) and
taking their values apart (`let x, v = f(...)`, `x, v = f(...)`). BodyChecker (envc/check/body.py) calls in here.

In the IR an array literal is `ir.ArrayLit` (its items already of the element type); a lifted operation is
`ir.Map`, the scalar operation checked as usual over placeholder locals (`map__x0`, ...) that stand for the elements;
`return a, b` is an `ir.ReturnS` of `ir.Values`. `let x, v = f(...)` declares `x` and `v` (`ir.LetS` of a zero) and
unpacks the call into them (`ir.Unpack`); `x, v = f(...)` unpacks into new locals of the result types and assigns
those (`ir.Assign`, converting as 6.5 says), so an `ir.Unpack` never converts.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar, cast

from envc import ast, ir
from envc.check.symbols import CallableSym, LocalVar
from envc.diagnostics import Span
from envc.ir import F32, I32, DType, Ty

if TYPE_CHECKING:
    from envc.check.body import BodyChecker

# Binary operators lifted to arrays (`+ - * / // %` are BodyChecker.elementwise's).
LIFTED_OPS = frozenset({"==", "!=", "<", "<=", ">", ">=", "&", "|", "^", "**", "<<", ">>"})

E = TypeVar("E", ast.Unary, ast.Binary, ast.IfExpr, ast.Call)


# ---- array literals ----------------------------------------------------------------------------------------------
def _raw(bc: BodyChecker, x: ir.Expr) -> tuple[ir.Expr, ...] | None:
    """The items of an array literal as written (before conversion to its element type), None for other values."""
    got = bc.array_items.get(id(x))
    return got[1] if got is not None and got[0] is x else None


def _leaves(bc: BodyChecker, x: ir.Expr) -> list[ir.Expr]:
    """The scalars of an array literal as written, rows of rows included; another value stands for itself."""
    raw = _raw(bc, x)
    if raw is None:
        return [x]
    return [leaf for item in raw for leaf in _leaves(bc, item)]


def _common(bc: BodyChecker, leaves: list[ir.Expr]) -> Ty:
    """The element type of an array literal: the common type of its elements (6.4), `i32` for untyped literals."""
    typed = [x for x in leaves if not bc.is_weak(x)]
    if not typed:
        return I32
    first = typed[0].ty.scalar()
    for x in leaves:
        t = x.ty.scalar()
        special = t.dtype is DType.BOOL or t.enum is not None or first.dtype is DType.BOOL or first.enum is not None
        if special and (bc.is_weak(x) or t != first):
            shown = "an integer literal" if bc.is_weak(x) else t.show()
            fix = next((y for y in (first, t) if y.dtype is not DType.BOOL and y.enum is None), I32)
            raise bc.err(
                x.span,
                "E040",
                f"the elements of an array have one type: {first.show()} and {shown} do not mix; convert the "
                f"odd ones, e.g. `{fix.show()}(x)`",
            )
    if first.dtype is DType.BOOL or first.enum is not None:
        return first
    kinds = [x.ty.scalar() for x in typed]
    floats = [t for t in kinds if t.dtype.is_float]
    if floats:
        return next((t for t in floats if t.dtype is not DType.F32), F32)
    if len({t.dtype.signed for t in kinds}) == 2:
        u = next(x for x in typed if not x.ty.dtype.signed)
        raise bc.err(
            u.span,
            "E040",
            f"the elements of an array mix signed and unsigned integers ({first.show()} and {u.ty.scalar().show()}); "
            "cast one, e.g. `i32(x)` or `u32(x)`",
        )
    return max(kinds, key=lambda t: t.dtype.bits)


def _build(bc: BodyChecker, items: list[ir.Expr], elem: Ty, span: Span, what: str) -> ir.ArrayLit:
    """An array literal of `items` (scalars, or rows of one shape) converted to the element type `elem`."""
    out = [bc.coerce(x, Ty(dtype=elem.dtype, shape=x.ty.shape, enum=elem.enum), x.span, what) for x in items]
    shape = (len(items), *items[0].ty.shape)
    lit = ir.ArrayLit(items=tuple(out), ty=Ty(dtype=elem.dtype, shape=shape, enum=elem.enum), span=span)
    bc.array_items[id(lit)] = (lit, tuple(items))
    return lit


def _kind(ty: Ty) -> str:
    return f"an array {ty.show()}" if ty.shape else f"a scalar {ty.show()}"


def array_lit(bc: BodyChecker, e: ast.ArrayLit) -> ir.Expr:
    """`[a, b, c]`: a 1-D array of scalars, or `[row, row]` of arrays of one shape (`[[1, 2], [3, 4]]`)."""
    if not e.items:
        raise bc.err(
            e.span,
            "E041",
            "an empty array `[]` has no size or element type; write its elements (`[0.0, 0.0]`), or start from an "
            "array of the shape you want (`let d = y * 0.0`)",
        )
    xs = [bc.expr(item) for item in e.items]
    for k, x in enumerate(xs[1:], 2):
        if x.ty.shape != xs[0].ty.shape:
            raise bc.err(
                e.items[k - 1].span,
                "E041",
                f"the items of an array have one shape: item 1 is {_kind(xs[0].ty)}, item {k} is {_kind(x.ty)}; "
                "give every row the same number of elements",
            )
    elem = _common(bc, [leaf for x in xs for leaf in _leaves(bc, x)])
    return _build(bc, xs, elem, e.span, "element of the array")


def adapt(bc: BodyChecker, x: ir.Expr, ty: Ty, span: Span, what: str) -> ir.Expr | None:
    """An array literal converted to the element type of `ty` (of its shape), as its elements would be one by one
    (6.5: an untyped literal must fit, ints convert to f32, f32 does not convert to ints); None for other values."""
    raw = _raw(bc, x)
    if raw is None:
        return None
    if x.ty.scalar() == ty.scalar():
        return x
    return _build(bc, list(raw), ty.scalar(), x.span, what)


def element(bc: BodyChecker, x: ir.Expr, name: str) -> ir.Expr:
    """The scalar that stands for the elements of array `x` when typing an elementwise operation: an untyped literal
    for an array literal of untyped integers (so `y * [1, 2]` takes the type of `y`), else a local of its type."""
    leaves = _leaves(bc, x)
    if _raw(bc, x) is not None and all(bc.is_weak(leaf) for leaf in leaves):
        return leaves[0]
    return ir.Local(name=name, ty=x.ty.scalar(), span=x.span)


# ---- scalar operations on arrays ---------------------------------------------------------------------------------
def _parts(e: ast.Expr) -> list[ast.Expr]:
    if isinstance(e, ast.Unary):
        return [e.x]
    if isinstance(e, ast.Binary):
        return [e.a, e.b]
    if isinstance(e, ast.IfExpr):
        return [e.cond, e.a, e.b]
    assert isinstance(e, ast.Call)
    return list(e.args)


def _rebuild(e: ast.Expr, subs: dict[int, ast.Expr]) -> ast.Expr:
    """`e` with its operands replaced (by id)."""

    def sub(a: ast.Expr) -> ast.Expr:
        return subs.get(id(a), a)

    if isinstance(e, ast.Unary):
        return replace(e, x=sub(e.x))
    if isinstance(e, ast.Binary):
        return replace(e, a=sub(e.a), b=sub(e.b))
    if isinstance(e, ast.IfExpr):
        return replace(e, cond=sub(e.cond), a=sub(e.a), b=sub(e.b))
    assert isinstance(e, ast.Call)
    return replace(e, args=tuple(sub(a) for a in e.args))


def _what(e: ast.Expr) -> str:
    if isinstance(e, ast.Unary):
        return f"'{e.op}'"
    if isinstance(e, ast.Binary):
        return f"'{e.op}'"
    if isinstance(e, ast.IfExpr):
        return "if/else"
    assert isinstance(e, ast.Call)
    return f"{e.func}(...)"


def lift(bc: BodyChecker, e: ast.Expr, xs: list[ir.Expr]) -> ir.Expr:
    """`e` (a unary or binary operation, `if`/`else`, or a builtin call) with the typed operands `xs`, at least one an
    array: the scalar operation applied element by element (`ir.Map`). Arrays need one shape; a scalar operand
    applies to every element; literals stay in the scalar operation, where they adapt as usual (6.3)."""
    parts = _parts(e)
    shape: tuple[int, ...] = ()
    for x in xs:
        if x.ty.shape and shape and x.ty.shape != shape:
            raise bc.err(
                e.span,
                "E041",
                f"shape mismatch in {_what(e)}: {list(shape)} and {list(x.ty.shape)}; elementwise operands need the "
                "same shape (or one scalar)",
            )
        shape = shape or x.ty.shape
    names: list[str] = []
    args: list[ir.Expr] = []
    scope: dict[str, LocalVar] = {}
    subs: dict[int, ast.Expr] = {}
    for a, x in zip(parts, xs):
        if isinstance(x, ir.Lit):
            subs[id(a)] = ast.Checked(x, a.span)
            continue
        name = f"map__x{len(names)}"
        names.append(name)
        args.append(x)
        scope[name] = LocalVar(x.ty.scalar(), False)
        subs[id(a)] = ast.Name(name, a.span)
    bc.scopes.append(scope)
    try:
        body = bc.expr(_rebuild(e, subs))
    finally:
        bc.scopes.pop()
    ty = Ty(dtype=body.ty.dtype, shape=shape, enum=body.ty.enum)
    return ir.Map(names=tuple(names), args=tuple(args), body=body, ty=ty, span=e.span)


def operands(bc: BodyChecker, e: E) -> tuple[ir.Expr | None, E]:
    """Type the operands of `e` once: (its lifted form, e) when one is an array, else (None, `e` with its operands
    typed, as `ast.Checked`), which the scalar checks take as they are."""
    parts = _parts(e)
    xs = [bc.expr(a) for a in parts]
    if any(x.ty.shape for x in xs):
        return lift(bc, e, xs), e
    return None, cast(E, _rebuild(e, {id(a): ast.Checked(x, a.span) for a, x in zip(parts, xs)}))


def zero(ty: Ty, span: Span) -> ir.Expr:
    """A zero of type `ty` (every element, for an array)."""
    value: bool | int | float = False if ty.dtype is DType.BOOL else 0.0 if ty.dtype.is_float else 0
    lit = ir.Lit(value=value, ty=ty.scalar(), span=span)
    if not ty.shape:
        return lit
    return ir.Map(names=(), args=(), body=lit, ty=ty, span=span)


# ---- several results ---------------------------------------------------------------------------------------------
def _types(results: tuple[Ty, ...]) -> str:
    """`[f32, "f32[4]"]`, as written after `returns:` in YAML."""
    return "[" + ", ".join(f'"{t.show()}"' if t.shape else t.show() for t in results) + "]"


def misplaced(bc: BodyChecker, e: ast.Tuple) -> Exception:
    """Several values where one is expected."""
    return bc.err(
        e.span,
        "E040",
        f"{len(e.items)} values separated by commas, where one value is expected; only a function that returns "
        "several (`returns: [f32, f32]`) returns them (`return a, b`); for an array write `[a, b]`",
    )


def several(bc: BodyChecker, e: ast.Call, sym: CallableSym) -> Exception:
    """A function that returns several values, called where one value is expected."""
    n = len(sym.results)
    names = ", ".join(chr(ord("a") + k) for k in range(min(n, 26)))
    return bc.err(
        e.span,
        "E040",
        f"'{sym.name}' returns {n} values ({_types(sym.results)[1:-1]}); take them apart first: "
        f"`let {names} = {sym.name}(...)`",
    )


def ret(bc: BodyChecker, s: ast.Return) -> list[ir.Stmt]:
    """`return a, b` in a function with `returns: [T1, T2]` (and `return a, b` in one that returns one value)."""
    assert bc.ctx.returns is not None
    results = bc.ctx.results or (bc.ctx.returns,)
    items = s.value.items if isinstance(s.value, ast.Tuple) else (s.value,)
    if len(items) != len(results):
        if len(results) == 1:
            from envc.check.body import Bail

            shown = []
            for item in items:
                try:
                    shown.append(bc.expr(item).ty)
                except Bail:  # the item's own error is reported
                    return []
            raise bc.err(
                s.value.span,
                "E040",
                f"{bc.ctx.where} returns one value (`returns: {results[0].show()}`), this returns {len(items)}; to "
                f"return several, list their types: `returns: {_types(tuple(shown))}`",
            )
        raise bc.err(
            s.value.span,
            "E040",
            f"{bc.ctx.where} returns {len(results)} values ({_types(results)[1:-1]}), this returns {len(items)}; "
            f"write `return` with {len(results)} values separated by commas",
        )
    if len(results) == 1:
        return [ir.ReturnS(value=bc.shaped(items[0], results[0], "return value"), span=s.span)]
    vals = tuple(bc.shaped(item, ty, f"return value {k}") for k, (item, ty) in enumerate(zip(items, results), 1))
    return [ir.ReturnS(value=ir.Values(items=vals, ty=vals[0].ty, span=s.value.span), span=s.span)]


def _call_of(bc: BodyChecker, value: ast.Expr, n: int, written: str) -> tuple[ir.CallFn, tuple[Ty, ...]]:
    """The call of a function that returns `n` values on the right of `written = ...` (`let x, v` or `x, v`)."""
    sym = bc.env.symbols.get(value.func) if isinstance(value, ast.Call) else None
    if isinstance(sym, CallableSym) and sym.results:
        assert isinstance(value, ast.Call)
        if len(sym.results) != n:
            names = ", ".join(chr(ord("a") + k) for k in range(min(len(sym.results), 26)))
            raise bc.err(
                value.span,
                "E040",
                f"'{sym.name}' returns {len(sym.results)} values ({_types(sym.results)[1:-1]}), not {n}; take them "
                f"all: `{'let ' if written.startswith('let ') else ''}{names} = {sym.name}(...)`",
            )
        call = ir.CallFn(fn=sym.name, args=bc.call_args(sym, value), ty=sym.results[0], span=value.span)
        return call, sym.results
    if isinstance(value, ast.Tuple):
        raise bc.err(
            value.span,
            "E040",
            f"`{written} = ...` takes the values of a function that returns several; for separate values write one "
            "assignment per line",
        )
    x = bc.expr(value)
    raise bc.err(
        value.span,
        "E040",
        f"`{written} = ...` takes the values of a function that returns {n} (`returns: [T1, T2]`, `return a, b`); "
        f"this is one value ({x.ty.show()}): write one assignment per line",
    )


def let_many(bc: BodyChecker, s: ast.LetMany) -> list[ir.Stmt]:
    """`let x, v = f(...)`: declare a local per value, then unpack the call into them."""
    from envc.check.body import Bail

    try:
        call, results = _call_of(bc, s.value, len(s.names), "let " + ", ".join(s.names))
        out: list[ir.Stmt] = []
        targets = []
        for name, span, ty in zip(s.names, s.name_spans, results):
            bc.declare(name, LocalVar(ty, True), span, "local")
            out.append(ir.LetS(name=name, value=zero(ty, span), span=span))
            targets.append(ir.Target(space="local", name=name, ty=ty, span=span))
        out.append(ir.Unpack(targets=tuple(targets), value=call, span=s.span))
        return out
    except Bail:
        for name in s.names:
            if bc.lookup_local(name) is None and name not in bc.env.symbols:
                bc.broken_locals.add(name)  # later uses are not "unknown names"
        raise


def assign_many(bc: BodyChecker, s: ast.AssignMany) -> list[ir.Stmt]:
    """`x, v = f(...)`: unpack the call into new locals, then assign each to its target (converted, 6.5)."""
    for t in s.targets:
        if isinstance(t, ast.Name) and t.id == "step_count":
            raise bc.err(t.span, "E050", "'step_count' is maintained by the runtime and is read-only")
    targets = [bc.target(t) for t in s.targets]
    call, results = _call_of(bc, s.value, len(s.targets), ", ".join(f"t{k}" for k in range(1, len(targets) + 1)))
    # (`t1, t2` in messages: the targets may be long expressions)
    bc.unpacks += 1
    out: list[ir.Stmt] = []
    temps = []
    assigns: list[ir.Stmt] = []
    for k, (tgt, t_ast, ty) in enumerate(zip(targets, s.targets, results)):
        name = f"unpack{bc.unpacks}__v{k}"
        out.append(ir.LetS(name=name, value=zero(ty, t_ast.span), span=t_ast.span))
        temps.append(ir.Target(space="local", name=name, ty=ty, span=t_ast.span))
        what = f"value {k + 1} of {call.fn}"
        if ty.shape != tgt.ty.shape:
            raise bc.err(t_ast.span, "E041", f"{what} is {_kind(ty)}, but this target holds {_kind(tgt.ty)}")
        v = bc.coerce(ir.Local(name=name, ty=ty, span=t_ast.span), tgt.ty, t_ast.span, what)
        assigns.append(ir.Assign(target=tgt, value=v, span=t_ast.span))
    return [*out, ir.Unpack(targets=tuple(temps), value=call, span=s.span), *assigns]
