"""Integer value ranges of IR expressions, so that the lowerings index without a clamp where none can fire.

An index the checker cannot bound statically is lowered with a clamp (reads) or a guard (writes), the fallback
of spec-language 14.3. Where the index is a loop variable or a constant combined with constants (`row - 1` for
`row` in `range(1, rows)`, `c // 4` for `c` in `range(16)`), its range is known and the clamp is dead code.
"""

from __future__ import annotations

from collections.abc import Mapping

from envc import ir

Interval = tuple[int, int]  # half-open: lo <= v < hi


def interval(
    e: ir.Expr, ranges: Mapping[str, Interval], consts: Mapping[str, Interval] | None = None
) -> Interval | None:
    """The values an integer scalar expression can take, given the ranges of some locals (and of the constant
    tables, `const_ranges`); None if unknown.

    Exact integer arithmetic: a result that could leave its type's range (and so wrap) is unknown."""
    if e.ty.shape or not e.ty.dtype.is_int:
        return None
    got = _interval(e, ranges, consts or {})
    if got is None:
        return None
    lo, hi = e.ty.dtype.int_range
    return got if lo <= got[0] and got[1] - 1 <= hi else None


def _interval(e: ir.Expr, ranges: Mapping[str, Interval], consts: Mapping[str, Interval]) -> Interval | None:
    if isinstance(e, ir.Lit):
        return (e.value, e.value + 1) if isinstance(e.value, int) and not isinstance(e.value, bool) else None
    if isinstance(e, ir.Local):
        return ranges.get(e.name)
    if isinstance(e, ir.Read) and e.space == "const":  # any element of an immutable table (a clamped read too)
        return consts.get(e.name)
    if isinstance(e, ir.Unary) and e.op == "neg":
        x = interval(e.x, ranges, consts)
        return None if x is None else (1 - x[1], 1 - x[0])
    if isinstance(e, ir.Cast) and e.x.ty.dtype.is_int:
        return interval(e.x, ranges, consts)
    if isinstance(e, ir.Math) and e.fn in ("min", "max") and len(e.args) == 2:
        a, b = (interval(x, ranges, consts) for x in e.args)
        if a is None or b is None:
            return None
        pick = min if e.fn == "min" else max
        return (pick(a[0], b[0]), pick(a[1] - 1, b[1] - 1) + 1)
    if isinstance(e, ir.Binary) and e.op in ("+", "-", "*", "//", "%"):
        a = interval(e.a, ranges, consts)
        if a is None:
            return None
        c = e.b.value if isinstance(e.b, ir.Lit) and type(e.b.value) is int else None
        if e.op in ("//", "%"):  # by a positive constant: floor division and modulo as in Python
            if c is None or c <= 0:
                return None
            if e.op == "//":
                return (a[0] // c, (a[1] - 1) // c + 1)
            if a[0] // c == (a[1] - 1) // c:  # within one period: a shifted copy of the operand's range
                return (a[0] % c, (a[1] - 1) % c + 1)
            return (0, c)
        b = interval(e.b, ranges, consts)
        if b is None:
            return None
        if e.op == "+":
            return (a[0] + b[0], a[1] + b[1] - 1)
        if e.op == "-":
            return (a[0] - (b[1] - 1), a[1] - b[0])
        ends = [x * y for x in (a[0], a[1] - 1) for y in (b[0], b[1] - 1)]
        return (min(ends), max(ends) + 1)
    return None


def const_ranges(spec: ir.SpecIR) -> dict[str, Interval]:
    """The range of the values of every integer constant (a table column, a scalar constant)."""
    return {
        c.name: (min(int(v) for v in c.values), max(int(v) for v in c.values) + 1)
        for c in spec.consts
        if c.ty.dtype.is_int and c.values
    }


def assigned_locals(stmts: tuple[ir.Stmt, ...]) -> set[str]:
    """Locals that these statements assign (so their `let` must be `mut`)."""
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, ir.Unpack):
            out |= {t.name for t in s.targets if t.space == "local"}
        if isinstance(s, ir.Assign) and s.target.space == "local":
            out.add(s.target.name)
        elif isinstance(s, ir.ZoneOp) and s.out is not None and s.out.space == "local":
            out.add(s.out.name)
        elif isinstance(s, ir.IfS):
            out |= assigned_locals(s.then) | assigned_locals(s.orelse)
        elif isinstance(s, ir.Switch):
            for _, body in s.cases:
                out |= assigned_locals(body)
            out |= assigned_locals(s.default)
        elif isinstance(s, ir.ForS):
            out |= assigned_locals(s.body)
    return out


__all__ = ["Interval", "assigned_locals", "const_ranges", "interval"]
