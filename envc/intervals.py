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
    if isinstance(e, ir.CallFn):  # what the function returns on every call (`fixed_ranges`)
        return consts.get(e.fn + "()")
    if isinstance(e, ir.Reduce) and e.start < e.stop and e.op in ("argmax", "argmin", "choice", "count"):
        if e.op == "count":
            return (0, e.stop - e.start + 1)
        # a position of the range; argmax/argmin give -1 where a filter holds nowhere (choice: the range start)
        return (e.start, e.stop) if e.cond is None or e.op == "choice" else (min(e.start, -1), max(e.stop, 0))
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


_FIXED: dict[int, tuple[ir.SpecIR, dict[str, Interval]]] = {}


def fixed_ranges(spec: ir.SpecIR) -> dict[str, Interval]:
    """Ranges that hold everywhere in the spec: its integer constants (`const_ranges`) and, as `name()`, what each
    function returns on every call (`first_free` is an `argmax` over bench positions 1-5), whatever its arguments
    (callees before callers, a function's top-level lets kept as in a body)."""
    got = _FIXED.get(id(spec))
    if got is not None and got[0] is spec:
        return got[1]
    out = const_ranges(spec)
    callables = {c.name: c for c in spec.callables}
    done: set[str] = set()

    def result(name: str, seen: tuple[str, ...]) -> None:
        if name in done or name in seen:  # recursion (the checker rejects it): no range
            return
        c = callables[name]
        for callee in _calls(c.body):
            result(callee, (*seen, name))
        done.add(name)
        if c.returns is None or c.results or c.returns.shape or not c.returns.dtype.is_int:
            return
        ranges: dict[str, Interval] = {}
        body = c.body[:-1]
        for i, st in enumerate(body):  # top-level lets never assigned again
            if isinstance(st, ir.LetS):
                keep_let(ranges, st, body[i + 1 :], out)
            else:
                for t in _targets(st):
                    ranges.pop(t.name, None)
        last = c.body[-1]
        assert isinstance(last, ir.ReturnS) and last.value is not None
        iv = interval(last.value, ranges, out)
        lo, hi = c.returns.dtype.int_range
        if iv is not None and lo <= iv[0] and iv[1] - 1 <= hi:
            out[name + "()"] = iv

    for name in callables:
        result(name, ())
    if len(_FIXED) > 16:
        _FIXED.clear()
    _FIXED[id(spec)] = (spec, out)
    return out


def keep_let(
    ranges: dict[str, Interval], s: ir.LetS, later: tuple[ir.Stmt, ...], consts: Mapping[str, Interval]
) -> None:
    """After `s`: its local keeps its value's range if nothing in `later` assigns it again, else has none."""
    iv = None if s.name in assigned_locals(later) else interval(s.value, ranges, consts)
    if iv is None:
        ranges.pop(s.name, None)
    else:
        ranges[s.name] = iv


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


def param_ranges(spec: ir.SpecIR) -> dict[str, dict[str, Interval]]:
    """The range of each integer parameter of each function and procedure: the union of what every call in the
    spec passes (`slide(d)` is only called with an action's direction). A parameter the body assigns, one some
    call passes an unknown value for, or one of a callable that nothing calls, has none. Generated code calls
    these functions only from the spec's own code, so the union covers every call."""
    consts = fixed_ranges(spec)
    callables = {c.name: c for c in spec.callables}
    passed: dict[str, list[list[Interval | None]]] = {name: [] for name in callables}

    def fits(iv: Interval | None, ty: ir.Ty) -> Interval | None:
        if iv is None or ty.shape or not ty.dtype.is_int:
            return None
        lo, hi = ty.dtype.int_range
        return iv if lo <= iv[0] and iv[1] - 1 <= hi else None

    def record(name: str, args: tuple[ir.Expr, ...], ranges: dict[str, Interval]) -> None:
        params = callables[name].params
        passed[name].append([fits(interval(a, ranges, consts), t) for a, (_, t) in zip(args, params)])

    def visit(node: object, ranges: dict[str, Interval]) -> None:
        """Record the calls in `node` with the ranges of their arguments."""
        if isinstance(node, tuple):
            for x in node:
                visit(x, ranges)
            return
        if isinstance(node, ir._Stmt):
            block((node,), ranges)  # type: ignore[arg-type]  # every _Stmt subclass is in ir.Stmt
            return
        if not isinstance(node, ir._Node):
            return
        if isinstance(node, ir.CallFn):
            record(node.fn, node.args, ranges)
        if isinstance(node, ir.Reduce):
            ranges = {**ranges, node.var: (node.start, node.stop)}
        elif isinstance(node, ir.Map):
            ranges = {k: v for k, v in ranges.items() if k not in node.names}
        for k in type(node).model_fields:
            if k not in ("ty", "span"):
                visit(getattr(node, k), ranges)

    def block(stmts: tuple[ir.Stmt, ...], outer: dict[str, Interval]) -> None:
        ranges = dict(outer)  # the block's lets add their ranges to this copy
        for i, s in enumerate(stmts):
            if isinstance(s, ir.ForS):
                visit((s.body,), {**ranges, s.var: (s.start, s.stop)})
                continue
            if isinstance(s, (ir.IfS, ir.Switch)):
                visit(s.cond if isinstance(s, ir.IfS) else s.subject, ranges)
                arms = (s.then, s.orelse) if isinstance(s, ir.IfS) else (*(b for _, b in s.cases), s.default)
                for arm in arms:
                    block(arm, ranges)
                continue
            if isinstance(s, ir.CallProc):
                record(s.proc, s.args, ranges)
            for k in type(s).model_fields:
                if k != "span":
                    visit(getattr(s, k), ranges)
            if isinstance(s, ir.LetS):
                keep_let(ranges, s, stmts[i + 1 :], consts)
            else:  # a local written here loses the range of its `let`
                for t in _targets(s):
                    if t.space == "local":
                        ranges.pop(t.name, None)

    for a in spec.actions:
        own = {p.name: (p.start, p.stop) for p in a.params}
        visit(a.legal, own)
        block(a.effect, own)
    if spec.box is not None:
        block(spec.box.effect, {})
    block(spec.reset, {})
    block(spec.observation, {})
    for r in spec.rules:
        visit(r.when, {})
        block(r.body, {})
    visit((spec.reward, spec.terminated, spec.truncated, *(e for _, e in spec.invariants), spec.render), {})
    # callables after every callable that calls them, so that their own parameters' ranges are known
    callers: dict[str, set[str]] = {name: set() for name in callables}
    for c in spec.callables:
        for callee in _calls(c.body):
            callers[callee].add(c.name)
    out: dict[str, dict[str, Interval]] = {}
    todo = list(callables)
    while todo:
        ready = [n for n in todo if not (callers[n] - {m for m in callables if m not in todo})]
        if not ready:  # recursion (the checker rejects it): no ranges at all rather than unsound ones
            return {}
        for name in ready:
            todo.remove(name)
            c = callables[name]
            assigned = assigned_locals(c.body)
            mine: dict[str, Interval] = {}
            for j, (pname, _) in enumerate(c.params):
                got = [call[j] for call in passed[name]]
                if got and pname not in assigned and all(iv is not None for iv in got):
                    mine[pname] = (min(iv[0] for iv in got if iv), max(iv[1] for iv in got if iv))
            out[name] = mine
            block(c.body, mine)
    return out


def _targets(s: ir.Stmt) -> tuple[ir.Target, ...]:
    """What a statement writes (not the writes of the statements inside it)."""
    if isinstance(s, ir.Unpack):
        return s.targets
    if isinstance(s, ir.ZoneOp):
        return (s.out,) if s.out is not None else ()
    return (s.target,) if isinstance(s, ir.Assign) else ()


def _calls(node: object) -> set[str]:
    """The callables that `node` calls directly."""
    if isinstance(node, tuple):
        return set().union(*(_calls(x) for x in node)) if node else set()
    if not isinstance(node, ir._Node):
        return set()
    own = {node.fn} if isinstance(node, ir.CallFn) else {node.proc} if isinstance(node, ir.CallProc) else set()
    return own.union(*(_calls(getattr(node, k)) for k in type(node).model_fields if k not in ("ty", "span")))


__all__ = ["Interval", "assigned_locals", "const_ranges", "fixed_ranges", "interval", "keep_let", "param_ranges"]
