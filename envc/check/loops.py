"""Loop control (language 1.1): `break`, `continue` and `while cond max N:`, desugared into the static `for` loops
every backend already has, so the interpreter, JAX and Rust run them unchanged (docs/spec-language.md 8.3).

A loop whose body has a `break` gets a bool local `loopK__break`, declared false before the loop; each iteration
runs under `if not loopK__break:`. A loop with a `continue` gets `loopK__skip`, declared false at the start of each
iteration. `break` sets both flags (the ones the loop has), `continue` sets `loopK__skip`. In every block of the
body, the statements after one that may break or continue run under `if not FLAG:` (`loopK__skip` if the loop has
one, else `loopK__break`): one guard per such statement, each at the level of its block, so the IR grows linearly
and nests no deeper than the source. A `let` inside a guarded run is declared before the guard (with its type's
zero) and assigned inside it, so later guarded runs still see it. Iterations are masked, not cut short: on JAX
every iteration still runs.

`while cond max N: body` is `for loopK__i in range(N): if cond: body else: loopK__stop = true`, every iteration
under `if not loopK__stop:` (`break` sets `loopK__stop`), followed by a spec-bug check (`ir.CheckS`, reference
only) that the condition no longer holds. No draw site or loop id is added or renumbered, so draws keep their keys.

Also here: the messages for bounds that are not static, which show the static-bound-plus-`if` pattern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envc import ast, ir
from envc.check.symbols import ConstSym, LocalVar, StorageSym
from envc.check.values import zero
from envc.diagnostics import Span
from envc.ir import BOOL, I32

if TYPE_CHECKING:
    from envc.check.body import Bail, BodyChecker


@dataclass
class LoopFrame:
    """The flags of the loop being checked (empty names: the loop has no such flag)."""

    brk: str  # set by `break` (and, for `while`, when the condition fails); kept across iterations
    skip: str  # set by `break` and `continue`; reset at the start of each iteration
    exits: int = 0  # `break`/`continue` statements checked so far (a block guards what follows a new one)

    @property
    def guard(self) -> str:
        """The flag that skips the rest of an iteration."""
        return self.skip or self.brk


def exits_of(stmts: tuple[ast.Stmt, ...]) -> tuple[bool, bool]:
    """Whether these statements `break` / `continue` the loop they are the body of (nested loops have their own)."""
    brk = cont = False
    todo: list[ast.Stmt] = list(stmts)
    while todo:
        s = todo.pop()
        if isinstance(s, ast.Break):
            brk = True
        elif isinstance(s, ast.Continue):
            cont = True
        elif isinstance(s, ast.If):
            for _, body in s.branches:
                todo.extend(body)
            todo.extend(s.orelse)
        elif isinstance(s, ast.Match):
            for c in s.cases:
                todo.extend(c.body)
    return brk, cont


def _local(name: str, span: Span) -> ir.Local:
    return ir.Local(name=name, ty=BOOL, span=span)


def _set(name: str, span: Span) -> ir.Assign:
    return ir.Assign(
        target=ir.Target(space="local", name=name, ty=BOOL, span=span),
        value=ir.Lit(value=True, ty=BOOL, span=span),
        span=span,
    )


def _declare(name: str, span: Span) -> ir.LetS:
    return ir.LetS(name=name, value=ir.Lit(value=False, ty=BOOL, span=span), span=span)


def _unless(flag: str, body: tuple[ir.Stmt, ...], span: Span) -> ir.IfS:
    return ir.IfS(cond=ir.Unary(op="not", x=_local(flag, span), ty=BOOL, span=span), then=body, span=span)


def _frame(bc: BodyChecker, has_break: bool, has_continue: bool) -> LoopFrame:
    bc.loop_count += 1
    k = bc.loop_count
    return LoopFrame(f"loop{k}__break" if has_break else "", f"loop{k}__skip" if has_continue else "")


def _iteration(frame: LoopFrame, body: tuple[ir.Stmt, ...], span: Span) -> tuple[ir.Stmt, ...]:
    """One iteration: the `continue` flag reset, all of it skipped once the loop broke."""
    if frame.skip:
        body = (_declare(frame.skip, span), *body)
    return (_unless(frame.brk, body, span),) if frame.brk else body


def for_stmt(bc: BodyChecker, s: ast.For) -> list[ir.Stmt]:
    """`for v in range(a, b):` with static bounds, and the `break`/`continue` of its body."""
    start, stop = bc.range_of(s.iter, s.var)
    frame = _frame(bc, *exits_of(s.body))
    bc.scopes.append({})
    before = bc.uses_random
    bc.uses_random = False
    bc.loops.append(frame)
    try:
        bc.declare(s.var, LocalVar(I32, False, (start, stop)), s.span, "loop variable")
        body = bc.block(s.body)
    finally:
        bc.loops.pop()
        bc.scopes.pop()
    rnd = bc.uses_random
    bc.uses_random = before or rnd
    loop = ir.ForS(
        var=s.var,
        start=start,
        stop=stop,
        body=_iteration(frame, body, s.span),
        loop_id=bc.env.next_site(),
        random=rnd,
        span=s.span,
    )
    return [_declare(frame.brk, s.span), loop] if frame.brk else [loop]


def _header(s: ast.While) -> Span:
    """The span of `while cond`."""
    sp, c = s.span, s.cond.span
    return Span(sp.path, sp.line, sp.col, c.end_line, c.end_col)


def while_stmt(bc: BodyChecker, s: ast.While) -> list[ir.Stmt]:
    """`while cond max N:` as a masked `for` loop over range(N), then the reference's check of the cap."""
    if s.bound is None:
        raise bc.err(
            _header(s), "E051", "a `while` loop needs a static bound: write `while cond max N:` (N the most iterations)"
        )
    n = bc.static_int(s.bound, Bound("while"))
    if n < 1:
        raise bc.err(s.bound.span, "E051", f"`max {n}`: the most iterations of a `while` loop must be at least 1")
    frame = _frame(bc, True, exits_of(s.body)[1])
    k = bc.loop_count
    frame.brk = stop = f"loop{k}__stop"
    before = bc.uses_random
    bc.uses_random = False
    bc.loops.append(frame)
    try:
        cond = bc.checked(lambda: bc.bool_expr(s.cond, "`while` condition"), s.cond.span)
        cond_draws = bc.uses_random
        body = bc.block(s.body)
    finally:
        bc.loops.pop()
    rnd = bc.uses_random
    bc.uses_random = before or rnd
    head = _header(s)
    step = ir.IfS(cond=cond, then=body, orelse=(_set(stop, head),), span=head)
    loop_id = bc.env.next_site()
    loop = ir.ForS(
        var=f"loop{k}__i",
        start=0,
        stop=n,
        body=_iteration(frame, (step,), s.span),
        loop_id=loop_id,
        random=rnd,
        span=s.span,
    )
    running = ir.Unary(op="not", x=_local(stop, head), ty=BOOL, span=head)
    still = ir.Binary(op="and", a=running, b=cond, ty=BOOL, span=head)
    message = (
        f"`while` condition still true after {n} iterations (`max {n}`); raise the bound, or write "
        f"`for k in range({n}):` with `if not ...: break` where stopping there is intended"
    )
    check = ir.CheckS(cond=still, message=message, loop_id=loop_id if cond_draws else None, iteration=n, span=head)
    return [_declare(stop, s.span), loop, check]


def exit_stmt(bc: BodyChecker, s: ast.Break | ast.Continue) -> list[ir.Stmt]:
    """`break` / `continue`: set the innermost loop's flags."""
    if not bc.loops:
        if isinstance(s, ast.Break):
            what = "`break` is only allowed inside a `for` or `while` loop (it leaves the innermost one)"
        else:
            what = "`continue` is only allowed inside a `for` or `while` loop (it goes on with the next iteration)"
        raise bc.err(s.span, "E020", f"{what}; to skip the rest of a body, put it under `if ...:`")
    frame = bc.loops[-1]
    frame.exits += 1
    out: list[ir.Stmt] = []
    if isinstance(s, ast.Break):
        out.append(_set(frame.brk, s.span))
    if frame.skip:
        out.append(_set(frame.skip, s.span))
    return out


def misused(word: str) -> str:
    """The message for `break`/`continue` used as a value."""
    return f"`{word}` is a statement: write it alone on its line inside a `for` or `while` loop, not in an expression"


class Segments:
    """The statements of one block; those after a statement that may `break`/`continue` the innermost loop run
    under `if not FLAG:`, one guard per such statement, at this block's level."""

    def __init__(self, bc: BodyChecker):
        self.frame = bc.loops[-1] if bc.loops else None
        self.out: list[ir.Stmt] = []
        self.run: list[ir.Stmt] | None = None  # statements after the last exit, guarded when the run ends
        self.mark = 0

    def before(self) -> None:
        """Call before checking each statement."""
        if self.frame is not None:
            self.mark = self.frame.exits

    def add(self, stmts: list[ir.Stmt]) -> None:
        """The IR of the statement just checked."""
        (self.out if self.run is None else self.run).extend(stmts)
        if self.frame is not None and self.frame.exits != self.mark:
            self._close()
            self.run = []

    def _close(self) -> None:
        if not self.run or self.frame is None:
            return
        inner: list[ir.Stmt] = []
        for s in self.run:
            if isinstance(s, ir.LetS):  # declared out here, so the next guarded run sees it
                if isinstance(s.value, ir.Lit):
                    self.out.append(s)
                    continue
                self.out.append(ir.LetS(name=s.name, value=zero(s.value.ty, s.span), span=s.span))  # arrays too
                s = ir.Assign(
                    target=ir.Target(space="local", name=s.name, ty=s.value.ty, span=s.span), value=s.value, span=s.span
                )
            inner.append(s)
        span = self.run[0].span
        self.out.append(_unless(self.frame.guard, tuple(inner), span))
        self.run = None

    def finish(self) -> tuple[ir.Stmt, ...]:
        """The block's IR."""
        self._close()
        return tuple(self.out)


# ---- bounds that are not static -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Bound:
    """Where a static bound is needed: `for` or generator ranges (with the range) or a `while` loop's `max`."""

    kind: str  # "for", "generator" or "while"
    var: str = "i"
    args: tuple[ast.Expr, ...] = ()  # the range's arguments
    gen: ast.GenCall | None = None  # the generator


_PREC = {"or": 1, "and": 2, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4, "|": 5, "^": 6, "&": 7}
_PREC.update({"<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "//": 10, "%": 10, "**": 12})


def _key(e: ast.Expr) -> str | None:
    """The text of a name or a zone count (`hand.count`, `count(hand)`, `len(hand)`) that may be replaced."""
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attr) and e.name == "count" and isinstance(e.base, ast.Name):
        return f"{e.base.id}.count"
    if isinstance(e, ast.Call) and e.func in ("count", "len") and len(e.args) == 1 and isinstance(e.args[0], ast.Name):
        return f"{e.args[0].id}.count"
    return None


def show(e: ast.Expr, repl: dict[str, str] | None = None, prec: int = 0) -> str:
    """An expression as source text (names and zone counts in `repl` replaced)."""
    key = _key(e)
    if repl and key is not None and key in repl:
        return repl[key]
    if isinstance(e, ast.Num):
        return repr(e.value)
    if isinstance(e, ast.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attr):
        return f"{show(e.base, repl, 20)}.{e.name}"
    if isinstance(e, ast.Index):
        return f"{show(e.base, repl, 20)}[{', '.join(show(i, repl) for i in e.indices)}]"
    if isinstance(e, ast.Call):
        return f"{e.func}({', '.join(show(a, repl) for a in e.args)})"
    if isinstance(e, ast.Unary):
        op = "not " if e.op == "not" else e.op
        text = f"{op}{show(e.x, repl, 11)}"
        return f"({text})" if prec > 11 else text
    if isinstance(e, ast.Binary):
        p = _PREC.get(e.op, 3)
        text = f"{show(e.a, repl, p)} {e.op} {show(e.b, repl, p + 1)}"
        return f"({text})" if prec > p else text
    return "..."


def _value(e: ast.Expr, repl: dict[str, str]) -> int | None:
    """The integer a bound comes to once `repl` is applied, if it is plain integer arithmetic (`4 + 1` -> 5)."""
    key = _key(e)
    if key is not None and key in repl:
        return int(repl[key]) if re.fullmatch(r"-?[0-9]+", repl[key]) else None
    if isinstance(e, ast.Num) and isinstance(e.value, int):
        return e.value
    if isinstance(e, ast.Binary) and e.op in ("+", "-", "*"):
        a, b = _value(e.a, repl), _value(e.b, repl)
        if a is None or b is None:
            return None
        return a + b if e.op == "+" else a - b if e.op == "-" else a * b
    return None


def _tokens(name: str) -> set[str]:
    parts = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower().split("_")
    return {p for p in parts if p}


_LIMIT_WORDS = {"max", "cap", "capacity", "limit", "most"}


def _limit_name(bc: BodyChecker, name: str) -> str | None:
    """A static param or constant that names the limit of `name` (`MAX_N` for `n`, `max_cards` for `cards`)."""
    want = _tokens(name)
    found = [
        k
        for k, sym in bc.env.symbols.items()
        if isinstance(sym, ConstSym)
        and isinstance(sym.value, int)
        and not isinstance(sym.value, bool)
        and _tokens(k) & _LIMIT_WORDS
        and want <= _tokens(k)
    ]
    return found[0] if len(found) == 1 else None


def _dynamic(x: ir.Expr) -> tuple[list[str], list[str]]:
    """The runtime params and the other run-time sources (state fields, locals) an expression reads."""
    params: list[str] = []
    other: list[str] = []
    todo: list[object] = [x]
    while todo:
        node = todo.pop()
        if isinstance(node, tuple):
            todo.extend(node)
            continue
        if isinstance(node, ir.Param):
            params.append(node.name)
        elif isinstance(node, (ir.Local, ir.Read)) and not (isinstance(node, ir.Read) and node.space == "const"):
            other.append(node.name)
        elif isinstance(node, (ir.Random, ir.CallFn, ir.ZoneFind, ir.Reduce, ir.ReduceArray)):
            other.append("")
        if isinstance(node, (ir._Expr, ir.ZoneRef)):
            todo.extend(getattr(node, k) for k in type(node).model_fields if k not in ("ty", "span"))
    return params, other


def _replacements(bc: BodyChecker, e: ast.Expr) -> dict[str, str | None]:
    """For each name or zone count in `e` that is not static, its static stand-in (None if there is none)."""
    out: dict[str, str | None] = {}
    todo: list[object] = [e]
    while todo:
        node = todo.pop()
        if isinstance(node, tuple):
            todo.extend(node)
            continue
        key = _key(node) if isinstance(node, (ast.Name, ast.Attr, ast.Call)) else None
        if key is not None and key.endswith(".count"):
            sym = bc.env.symbols.get(key[: -len(".count")])
            if isinstance(sym, StorageSym) and sym.kind == "zone" and not sym.outer:
                out[key] = f"capacity({key[: -len('.count')]})"
                continue
        if isinstance(node, ast.Name):
            sym = bc.env.symbols.get(node.id)
            var = bc.lookup_local(node.id)
            if var is not None:
                if var.range is not None and var.range[1] > var.range[0]:
                    out[node.id] = str(var.range[1] - 1)  # an action parameter's largest value
                else:
                    out[node.id] = _limit_name(bc, node.id)
            elif isinstance(sym, StorageSym) and sym.space == "state":
                out[node.id] = _limit_name(bc, node.id)
            continue
        if isinstance(node, ast.Attr):
            todo.append(node.base)
        elif isinstance(node, ast.Index):
            todo.extend((node.base, *node.indices))
        elif isinstance(node, ast.Call):
            todo.extend(node.args)
        elif isinstance(node, ast.Unary):
            todo.append(node.x)
        elif isinstance(node, ast.Binary):
            todo.extend((node.a, node.b))
        elif isinstance(node, ast.IfExpr):
            todo.extend((node.cond, node.a, node.b))
    return out


def not_static(bc: BodyChecker, e: ast.Expr, x: ir.Expr, use: Bound) -> Bail:
    """E051 for a bound that is only known at run time, with what to write instead."""
    params, other = _dynamic(x)
    what = "loop bound" if use.kind != "while" else "`while` bound"
    if params and not other:
        return bc.err(e.span, "E051", f"'{params[0]}' is a runtime param; mark it `static: true` to use it as a {what}")
    repl = _replacements(bc, e)
    known = {k: v for k, v in repl.items() if v is not None}
    complete = bool(repl) and len(known) == len(repl)
    text = show(e)
    folded = _value(e, known) if complete else None
    static = str(folded) if folded is not None else show(e, known) if complete else "MAX"
    note = "" if complete else f" (MAX: a literal, static param or constant at least `{text}`)"
    if use.kind == "while":
        return bc.err(
            e.span,
            "E051",
            f"the `max` of a `while` loop must be static, and `{text}` is only known at run time: write the most "
            f"iterations it can need, `max {static}`{note}",
        )
    v = use.var
    args = use.args
    start = args[0] if len(args) == 2 else None
    stop = args[-1]
    conds: list[str] = []
    lo = ""
    if start is not None:
        lo = f"{show(start)}, "
        if start is e:
            conds.append(f"{v} >= {text}")
            lo = "MIN, "
            note = f" (MIN: a literal, static param or constant at most `{text}`)"
    hi = show(stop)
    if stop is e:
        if isinstance(stop, ast.Binary) and stop.op == "+" and isinstance(stop.b, ast.Num) and stop.b.value == 1:
            conds.append(f"{v} <= {show(stop.a)}")
        else:
            conds.append(f"{v} < {show(stop)}")
        hi = static
    if use.gen is not None and use.gen.cond is not None:
        conds.append(show(use.gen.cond, None, 3))
    cond = " and ".join(conds)
    if use.gen is not None:
        pattern = f"{use.gen.func}({show(use.gen.elt)} for {v} in range({lo}{hi}) if {cond})"
    else:
        pattern = f"for {v} in range({lo}{hi}): if {cond}: ..."
    return bc.err(
        e.span,
        "E051",
        f"loop bounds must be static, and `{text}` is only known at run time: loop to a static bound and skip the "
        f"rest, `{pattern}`{note}",
    )
