"""Integer value ranges of IR expressions, so that the lowerings index without a clamp where none can fire.

An index the checker cannot bound statically is lowered with a clamp (reads) or a guard (writes), the fallback
of spec-language 14.3. Where the index is a loop variable or a constant combined with constants (`row - 1` for
`row` in `range(1, rows)`, `c // 4` for `c` in `range(16)`), its range is known and the clamp is dead code.
"""

from __future__ import annotations

from collections.abc import Mapping

from envc import ir

Interval = tuple[int, int]  # half-open: lo <= v < hi


def interval(e: ir.Expr, ranges: Mapping[str, Interval]) -> Interval | None:
    """The values an integer scalar expression can take, given the ranges of some locals; None if unknown.

    Exact integer arithmetic: a result that could leave its type's range (and so wrap) is unknown."""
    if e.ty.shape or not e.ty.dtype.is_int:
        return None
    got = _interval(e, ranges)
    if got is None:
        return None
    lo, hi = e.ty.dtype.int_range
    return got if lo <= got[0] and got[1] - 1 <= hi else None


def _interval(e: ir.Expr, ranges: Mapping[str, Interval]) -> Interval | None:
    if isinstance(e, ir.Lit):
        return (e.value, e.value + 1) if isinstance(e.value, int) and not isinstance(e.value, bool) else None
    if isinstance(e, ir.Local):
        return ranges.get(e.name)
    if isinstance(e, ir.Unary) and e.op == "neg":
        x = interval(e.x, ranges)
        return None if x is None else (1 - x[1], 1 - x[0])
    if isinstance(e, ir.Cast) and e.x.ty.dtype.is_int:
        return interval(e.x, ranges)
    if isinstance(e, ir.Math) and e.fn in ("min", "max") and len(e.args) == 2:
        a, b = (interval(x, ranges) for x in e.args)
        if a is None or b is None:
            return None
        pick = min if e.fn == "min" else max
        return (pick(a[0], b[0]), pick(a[1] - 1, b[1] - 1) + 1)
    if isinstance(e, ir.Binary) and e.op in ("+", "-", "*", "//", "%"):
        a = interval(e.a, ranges)
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
        b = interval(e.b, ranges)
        if b is None:
            return None
        if e.op == "+":
            return (a[0] + b[0], a[1] + b[1] - 1)
        if e.op == "-":
            return (a[0] - (b[1] - 1), a[1] - b[0])
        ends = [x * y for x in (a[0], a[1] - 1) for y in (b[0], b[1] - 1)]
        return (min(ends), max(ends) + 1)
    return None


__all__ = ["Interval", "interval"]
