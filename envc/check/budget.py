"""Static bounds on one step of a checked spec: its work, its code with calls expanded, and how deep it nests.

Every loop bound is static, so the work of a step has an upper bound known before anything runs: count the IR
nodes each body executes, a loop's (or generator's) body once per iteration and a call as the callee's whole
body. The JAX backend inlines every call, so the code it traces (calls expanded, loops once) is bounded too. A
spec over a budget is rejected (E058) instead of hanging the interpreter, the tracer or the compiler, and a spec
whose calls nest too deeply (E003) instead of overflowing the stack of a backend that walks code recursively.

Each callable is costed once, callees first, so the analysis is linear in the size of the spec whatever its call
graph (a chain of functions each calling the next twice costs 2^n at run time, not here).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import BaseModel

from envc import ir
from envc.diagnostics import Diagnostics
from envc.parse import MAX_NESTING

MAX_TRIPS = 1 << 24  # iterations of one loop, generator or reduction
MAX_WORK = 100_000_000  # IR nodes executed by one step (loops multiplied out, calls expanded)
MAX_CODE = 250_000  # IR nodes of one step with calls expanded (loops once): the code the JAX backend traces
MAX_CALL_DEPTH = 64  # calls nested in calls
# Nesting of one body with its calls expanded, counted like the parser's MAX_NESTING (a statement with a block is
# two levels), with room for a body at that limit. The backends walk code recursively, and the Rust lowering
# follows calls into their callees: about three Python frames per level, so this keeps them under Python's
# default limit of 1,000 frames, with room for the caller's own stack.
MAX_DEPTH = MAX_NESTING + 40
_CAP = 10**30  # work saturates here, so the numbers stay small whatever the spec


@dataclass(frozen=True)
class Cost:
    """The bounds of a node or a body, calls expanded."""

    work: int  # IR nodes executed
    depth: int  # nesting, counted like MAX_NESTING
    calls: int  # calls nested in calls
    code: int  # IR nodes with calls expanded but loops not multiplied out: what the JAX backend traces


@dataclass(frozen=True)
class Part:
    """One body that runs in a step, `times` times per step (each action id's legality, each player's reward)."""

    label: str  # what it is, for messages ("the legality of 'place'")
    nodes: tuple[BaseModel, ...]
    times: int = 1


def step_parts(spec: ir.SpecIR) -> list[Part]:
    """Everything one step may run: the vectorized backends evaluate every action kind's effect (a switch under
    vmap runs all its branches), the legal mask checks each action id, and an auto-reset runs `reset`."""
    parts = [Part("reset", spec.reset)]
    for a in spec.actions:
        parts.append(Part(f"the legality of '{a.name}'", (a.legal,), a.size))
        parts.append(Part(f"the effect of '{a.name}'", a.effect))
    if spec.box is not None:
        parts.append(Part("the continuous action's effect", spec.box.effect))
    for r in spec.rules:
        parts.append(Part(f"rule '{r.name}'", (r.when, *r.body)))
    parts.append(Part("the reward", (spec.reward,), spec.players))
    parts.append(Part("the observation", spec.observation, spec.players))
    parts.append(Part("terminated", (spec.terminated,)))
    parts.append(Part("truncated", (spec.truncated,)))
    for name, x in spec.invariants:
        parts.append(Part(f"invariant '{name}'", (x,)))
    for name in type(spec).model_fields:  # code the IR may carry elsewhere (counted once: an upper bound stays one)
        if name not in _STEP_FIELDS:
            nodes = tuple(_bodies(getattr(spec, name)))
            if nodes:
                parts.append(Part(f"the spec's {name}", nodes))
    return parts


_STEP_FIELDS = {"reset", "actions", "box", "rules", "reward", "observation", "terminated", "truncated", "invariants"}
_STEP_FIELDS |= {"callables"}  # costed where they are called


def _bodies(value: object) -> Iterator[BaseModel]:
    """The outermost expressions and statements inside a part of the IR (its infos searched field by field)."""
    if isinstance(value, (ir._Expr, ir._Stmt)):
        yield value
    elif isinstance(value, tuple):
        if value and isinstance(value[0], (BaseModel, tuple)):  # not a tuple of values (constants, inits)
            for v in value:
                yield from _bodies(v)
    elif isinstance(value, BaseModel) and not isinstance(value, ir.Ty):
        for name in type(value).model_fields:
            yield from _bodies(getattr(value, name))


_FIELDS: dict[type, tuple[str, ...]] = {}


def _children(node: BaseModel) -> Iterator[BaseModel]:
    """The IR nodes directly inside `node` (expressions, statements, zone references, targets)."""
    cls = type(node)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(n for n in cls.model_fields if n not in ("ty", "span", "kind"))
    for name in names:
        yield from _nodes_in(getattr(node, name))


def _nodes_in(value: object) -> Iterator[BaseModel]:
    if isinstance(value, tuple):
        for v in value:
            yield from _nodes_in(v)
    elif isinstance(value, (ir._Expr, ir._Stmt, ir.ZoneRef, ir.Target)):
        yield value


def _callees(body: tuple[ir.Stmt, ...]) -> set[str]:
    """Names of the callables a body calls directly."""
    out: set[str] = set()
    todo: list[BaseModel] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ir.CallFn):
            out.add(node.fn)
        elif isinstance(node, ir.CallProc):
            out.add(node.proc)
        todo.extend(_children(node))
    return out


def _elements(ty: ir.Ty) -> int:
    return math.prod(ty.shape) if ty.shape else 0


def _count(n: int) -> str:
    return f"{n:,}" if n < _CAP else f"more than {_CAP:.0e}"


class Budget:
    """Costs of every node of a spec's IR, memoized by node and by callable."""

    def __init__(self, callables: tuple[ir.CallableInfo, ...], diags: Diagnostics):
        self.callables = {c.name: c for c in callables}
        self.diags = diags
        self.memo: dict[int, Cost] = {}
        self.fn: dict[str, Cost] = {}
        self.fn_calls: dict[str, int] = {}  # calls one call of a callable makes in all
        self.node_calls: dict[int, int] = {}
        self.too_long = False  # a loop over MAX_TRIPS was reported

    # ---- costs -----------------------------------------------------------------
    def cost_callables(self) -> None:
        """Cost every callable, callees first (an iterative walk: call chains may be thousands long)."""
        callees = {name: _callees(c.body) & set(self.callables) for name, c in self.callables.items()}
        done: set[str] = set()
        for root in self.callables:
            if root in done:
                continue
            done.add(root)
            path = [(root, iter(sorted(callees[root])))]
            while path:
                name, todo = path[-1]
                nxt = next((m for m in todo if m not in done), None)
                if nxt is None:
                    path.pop()
                    self.callable(name)
                else:
                    done.add(nxt)
                    path.append((nxt, iter(sorted(callees[nxt]))))

    def callable(self, name: str) -> Cost:
        if name not in self.fn:
            self.fn[name] = Cost(1, 1, 0, 1)  # placeholder against cycles (reported as E055)
            body = self.callables[name].body
            self.fn[name] = self.body(body)
            self.fn_calls[name] = min(sum(self.node_calls.get(id(s), 0) for s in body), _CAP)
        return self.fn[name]

    def body(self, nodes: tuple[BaseModel, ...]) -> Cost:
        costs = [self.cost(n) for n in nodes]
        return Cost(
            min(sum(c.work for c in costs), _CAP),
            max((c.depth for c in costs), default=0),
            max((c.calls for c in costs), default=0),
            min(sum(c.code for c in costs), _CAP),
        )

    def cost(self, node: BaseModel) -> Cost:
        """The cost of one node (recursive over one body's nesting, which the parser bounds)."""
        key = id(node)
        got = self.memo.get(key)
        if got is not None:
            return got
        inner = list(_children(node))
        kids = [self.cost(k) for k in inner]
        work = 1 + sum(c.work for c in kids)
        code = 1 + sum(c.code for c in kids)
        level = 2 if isinstance(node, (ir.ForS, ir.IfS, ir.Switch)) else 1  # a statement and its block, as parsed
        depth = level + max((c.depth for c in kids), default=0)
        calls = max((c.calls for c in kids), default=0)
        ncalls = sum(self.node_calls.get(id(k), 0) for k in inner)
        if isinstance(node, (ir.ForS, ir.Reduce)):
            trips = max(0, node.stop - node.start)
            if trips > MAX_TRIPS:
                what = "loop" if isinstance(node, ir.ForS) else "generator"
                self.diags.error(
                    node.span,
                    "E058",
                    f"this {what} runs {trips:,} times; a loop or generator runs at most {MAX_TRIPS:,} times (2^24)",
                )
                self.too_long = True
            work = 1 + max(trips, 1) * work  # the body and the step of each iteration (and the code, traced once)
            ncalls *= trips
        elif isinstance(node, ir.ReduceArray):
            work += _elements(node.x.ty)
        elif isinstance(node, ir.Read):
            work += _elements(node.ty)
        elif isinstance(node, ir.Assign):
            work += _elements(node.target.ty)
        elif isinstance(node, (ir.ZoneFind, ir.ZoneOp)):
            work += node.zone.capacity
        elif isinstance(node, (ir.CallFn, ir.CallProc)):
            name = node.fn if isinstance(node, ir.CallFn) else node.proc
            callee = self.callable(name)
            work += callee.work
            code += callee.code
            depth = max(depth, 1 + callee.depth)
            calls = max(calls, 1 + callee.calls)
            ncalls += 1 + self.fn_calls.get(name, 0)
        out = Cost(min(work, _CAP), depth, calls, min(code, _CAP))
        self.memo[key] = out
        if ncalls:
            self.node_calls[key] = min(ncalls, _CAP)
        return out

    # ---- walking down to a culprit --------------------------------------------
    def inside(self, node: BaseModel) -> list[BaseModel]:
        """The nodes a node runs: its children, and for a call the callee's body."""
        kids = list(_children(node))
        if isinstance(node, (ir.CallFn, ir.CallProc)):
            name = node.fn if isinstance(node, ir.CallFn) else node.proc
            kids += list(self.callables[name].body)
        return kids

    def chain(self, node: BaseModel) -> list[str]:
        """The names along the deepest call chain from `node`."""
        out: list[str] = []
        cur: BaseModel | None = node
        while cur is not None:
            if isinstance(cur, (ir.CallFn, ir.CallProc)):
                out.append(cur.fn if isinstance(cur, ir.CallFn) else cur.proc)
            kids = [k for k in self.inside(cur) if self.memo[id(k)].calls > 0]
            cur = max(kids, key=lambda k: self.memo[id(k)].calls, default=None)
        return out

    # ---- checks ------------------------------------------------------------------
    def check_depth(self, part: Part) -> None:
        """E003 where a body's calls nest too deeply, or nest its code too deeply once expanded."""
        if not part.nodes:
            return
        c = self.body(part.nodes)
        if c.calls <= MAX_CALL_DEPTH and c.depth <= MAX_DEPTH:
            return
        by = "calls" if c.calls > MAX_CALL_DEPTH else "depth"
        node: BaseModel = max(part.nodes, key=lambda n: getattr(self.memo[id(n)], by))
        while not isinstance(node, (ir.CallFn, ir.CallProc)):
            kids = list(_children(node))
            if not kids:
                break
            node = max(kids, key=lambda n: getattr(self.memo[id(n)], by))
        assert isinstance(node, (ir._Expr, ir._Stmt))
        names = self.chain(node)
        shown = " -> ".join(names if len(names) <= 6 else [*names[:3], "...", *names[-2:]])
        if by == "calls":
            msg = f"calls nest {c.calls:,} deep from here ({shown}); the limit is {MAX_CALL_DEPTH}"
        else:
            msg = (
                f"with the functions it calls ({shown}) expanded, the code here nests {c.depth:,} levels deep; "
                f"the limit is {MAX_DEPTH}: make the functions flatter (`let` steps) or call fewer levels deep"
            )
        self.diags.error(node.span, "E003", msg)

    def descend(self, part: Part, metric: str, limit: int) -> tuple[BaseModel | None, BaseModel | None]:
        """Walk the heaviest path of a part down; returns the innermost loop and the outermost call on it that are
        over `limit` on their own, once (None where there is none: the part is over because it runs many times, or
        because of several things together)."""

        def weight(n: BaseModel) -> int:
            c = self.memo[id(n)]
            return c.work if metric == "work" else c.code

        loop: BaseModel | None = None
        call: BaseModel | None = None
        node = max(part.nodes, key=weight, default=None)
        while node is not None and weight(node) > limit:
            if isinstance(node, (ir.ForS, ir.Reduce)):
                loop = node
            elif isinstance(node, (ir.CallFn, ir.CallProc)) and call is None:
                call = node
            node = max(self.inside(node), key=weight, default=None)
        return loop, call

    def report(self, part: Part, metric: str, what: str, tail: str, call: BaseModel | None) -> None:
        """E058 at `call` (a call that alone is over the limit) or else at the heaviest part of the body."""
        if isinstance(call, (ir.CallFn, ir.CallProc)):
            name = call.fn if isinstance(call, ir.CallFn) else call.proc
            n = self.fn_calls.get(name, 0)
            nested = f" ({_count(n)} nested calls)" if n else ""
            amount = getattr(self.memo[id(call)], metric)
            msg = f"this call of '{name}' expands to about {_count(amount)} {what}{nested}: {tail}"
            self.diags.error(call.span, "E058", msg)
            return
        times = f", run {part.times:,} times per step," if part.times > 1 and metric == "work" else ""
        amount = self.body(part.nodes).work * part.times if metric == "work" else self.body(part.nodes).code
        top = max(part.nodes, key=lambda n: getattr(self.memo[id(n)], metric))
        assert isinstance(top, (ir._Expr, ir._Stmt))
        self.diags.error(top.span, "E058", f"{part.label}{times} is about {_count(amount)} {what}: {tail}")

    def check_work(self, parts: list[Part]) -> int:
        """E058 where one step's work goes over MAX_WORK; returns the bound."""
        works = [min(self.body(p.nodes).work * p.times, _CAP) for p in parts]
        total = min(sum(works), _CAP)
        if total <= MAX_WORK or self.too_long or not parts:
            return total
        part = max(zip(parts, works), key=lambda pw: pw[1])[0]
        loop, call = self.descend(part, "work", MAX_WORK)
        tail = (
            f"one step is bounded by about {_count(total)} operations (loops multiplied out, calls expanded); "
            f"the budget is {MAX_WORK:,}"
        )
        if isinstance(loop, (ir.ForS, ir.Reduce)):
            trips = max(0, loop.stop - loop.start)
            what = "loop" if isinstance(loop, ir.ForS) else "generator"
            each = (self.memo[id(loop)].work - 1) // max(trips, 1)
            msg = f"this {what} runs {trips:,} times over a body of about {each:,} operations: {tail}"
            self.diags.error(loop.span, "E058", msg)
        else:
            self.report(part, "work", "operations", tail, call)
        return total

    def check_code(self, parts: list[Part]) -> None:
        """E058 where one step's code, calls expanded, goes over MAX_CODE."""
        codes = [self.body(p.nodes).code for p in parts]
        total = min(sum(codes), _CAP)
        if total <= MAX_CODE or not parts:
            return
        part = max(zip(parts, codes), key=lambda pc: pc[1])[0]
        _, call = self.descend(part, "code", MAX_CODE)
        tail = (
            f"the JAX backend inlines every call, and one step's code is about {_count(total)} IR nodes; "
            f"the limit is {MAX_CODE:,}"
        )
        self.report(part, "code", "IR nodes", tail, call)


def check_budget(spec: ir.SpecIR, diags: Diagnostics) -> Cost:
    """Check the static bounds of a spec's step: loop lengths, work and code size (E058), call depth and nesting
    (E003). Returns the bounds of one whole step."""
    b = Budget(spec.callables, diags)
    b.cost_callables()
    parts = [p for p in step_parts(spec) if p.nodes]
    costs = [b.body(p.nodes) for p in parts]
    for p in parts:
        b.check_depth(p)
    before = len(diags.items)
    work = b.check_work(parts)
    if len(diags.items) == before:
        b.check_code(parts)
    return Cost(
        work,
        max((c.depth for c in costs), default=0),
        max((c.calls for c in costs), default=0),
        min(sum(c.code for c in costs), _CAP),
    )


def step_bound(spec: ir.SpecIR) -> Cost:
    """The static bounds of one step of a checked spec (work, code size, nesting and call depth)."""
    return check_budget(spec, Diagnostics())
