"""Branch-arm coverage of a spec by the derived suite, and states steered toward the arms it misses.

An *arm* is one outcome of one decision of the spec, named by the decision's `path:line:col`:

- `if` / `elif`: then and else (an `if` without `else` still has its "else": nothing runs);
- `while cond max N`: the body runs (condition true), and the loop ends before the cap (condition false);
- `a if c else b` expressions: both sides;
- a rule's `when`: true (the body runs) and false;
- an action's `legal`: true (the action can be taken) and false (it is masked out);
- `match`: each `case`, and the default when the cases do not name every member.

Not arms: `for` loops (static bounds, so they always run their body), the guards the compiler adds for
`break`/`continue`, comprehension filters (`count(... if c)`), the operands of `and`/`or` (condition coverage, not
branch coverage), conditions that are literals (`when: true`), and the outputs' own expressions except `a if c else
b` inside them. Decisions in a function are counted once, whichever call reaches them.

Measuring: the reference interpreter records `(span, value)` of every decision while it was built with a set
(`ReferenceEnv(spec, arms=...)`; without one no probe is compiled). `measure` runs the whole suite
(`envc.verify.verify`, same levels, sizes and seed) with such a reference in the backend's place, so the arms are
those the reference takes on the suite's inputs: L1's rollouts, L2's injected states and their steps, L3's episodes.

Steering (`steer`): for each arm still missed, states the reference reached are mutated in the fields the arm's
condition reads (directly or through the locals it reads): values from the spec's comparison boundaries
(`envc.against.boundaries`, the constant and its neighbours) or redrawn as L2 fuzzes them; the reference steps
each candidate with every legal action (a sample where many). A candidate that takes a new arm is kept, and its
successors join the pool, so nested arms can be reached in turn. `coverage_checks` then steps every kept state on
the backend too and compares the results field by field as L2 does, so steered states add verification power.
Steering runs only when the suite has L2 (its states are L2's kind), from a fixed seed, and stops after 2000
candidates or 10 seconds, whichever comes first (only the time limit makes a result depend on the machine).

Pass/fail: `envc verify` reports coverage and never fails on it (a spec may have arms no state reaches, and that
is no fault of the backend); the unreached arms are named in the check's name. `coverage_checks(threshold=0.95)`
fails below that share and lists every unreached arm as a failure. Cost: the suite once more on the reference
(skipped for a spec without decisions), kept per spec and sizes, plus the steering.
"""

from __future__ import annotations

import contextvars
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from envc import ir, rng
from envc.diagnostics import Span, SpecRuntimeError
from envc.interpret import ReferenceEnv

if TYPE_CHECKING:
    from envc.verify import Check

_MEASURING: contextvars.ContextVar[bool] = contextvars.ContextVar("envc_coverage_measuring", default=False)
_MEMO: dict[tuple[Any, ...], tuple[ir.SpecIR, Coverage]] = {}  # measure_and_steer's results, by spec and sizes
_GUARD = re.compile(r"loop\d+__(break|skip|stop)$")  # flags of the compiler's loop desugaring (envc/check/loops.py)


@dataclass(frozen=True)
class Arm:
    """One outcome of one decision: `outcome` is True/False, a case's members, or None for a match's default."""

    span: Span  # the condition's (or match subject's) span
    kind: str  # if | elif | while | select | when | legal | case | default
    outcome: Any
    label: str  # what the arm is, e.g. "else" or "case Red"

    @property
    def where(self) -> str:
        """`path:line:col` of the decision."""
        return f"{self.span.path}:{self.span.line}:{self.span.col}"

    def describe(self) -> str:
        """`path:line:col kind `source`: label`."""
        text = _source(self.span)
        shown = f" `{text}`" if text else ""
        return f"{self.where} {self.kind}{shown}: {self.label}"


@dataclass
class Coverage:
    """The arms of a spec and those reached (by the suite, then by steering)."""

    arms: list[Arm]
    by_suite: set[Arm] = field(default_factory=set)
    by_steering: set[Arm] = field(default_factory=set)
    steered: list[tuple[dict[str, np.ndarray] | None, Any, rng.Key]] = field(
        default_factory=list
    )  # (state, action, key)
    seconds: float = 0.0

    @property
    def reached(self) -> set[Arm]:
        """Arms reached by either."""
        return self.by_suite | self.by_steering

    @property
    def unreached(self) -> list[Arm]:
        """Arms never reached, in spec order."""
        got = self.reached
        return [a for a in self.arms if a not in got]

    @property
    def ratio(self) -> float:
        """Reached / all (1.0 for a spec without decisions)."""
        return len(self.reached) / len(self.arms) if self.arms else 1.0


@cache
def _lines(path: str) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8") as f:
            return tuple(f.read().split("\n"))
    except OSError:
        return ()


def _source(span: Span) -> str:
    """The spec text of a span (its first line, shortened)."""
    lines = _lines(span.path)
    if not 0 < span.line <= len(lines):
        return ""
    ln = lines[span.line - 1]
    end = span.end_col - 1 if span.end_line == span.line else len(ln)
    text = ln[span.col - 1 : end].strip()
    return text if len(text) <= 60 else text[:57] + "..."


# ---- the arms of a spec ----------------------------------------------------------------------------------------
def _children(node: Any) -> Iterator[Any]:
    for v in node.__dict__.values():
        if isinstance(v, ir._Node):
            yield v
        elif isinstance(v, tuple):
            for x in v:
                if isinstance(x, ir._Node):
                    yield x
                elif isinstance(x, tuple):  # Switch.cases: ((members, body), ...)
                    for y in x:
                        if isinstance(y, tuple):
                            yield from (z for z in y if isinstance(z, ir._Node))


def _is_guard(s: ir.IfS) -> bool:
    c = s.cond
    return isinstance(c, ir.Unary) and c.op == "not" and isinstance(c.x, ir.Local) and bool(_GUARD.match(c.x.name))


def _is_while(s: ir.IfS) -> bool:
    o = s.orelse
    return (
        len(o) == 1
        and isinstance(o[0], ir.Assign)
        and o[0].target.space == "local"
        and o[0].target.name.endswith("__stop")
    )


def decisions(spec: ir.SpecIR) -> list[tuple[str, Any]]:
    """(context, node) for every decision: IfS, Switch, Select nodes; ("when", rule) and ("legal", action)."""
    out: list[tuple[str, Any]] = []
    seen: set[int] = set()

    def walk(node: Any, elif_of: ir.IfS | None = None) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, ir.IfS) and not _is_guard(node):
            out.append(("elif" if elif_of is not None else ("while" if _is_while(node) else "if"), node))
        elif isinstance(node, (ir.Switch, ir.Select)):
            out.append(("", node))
        if isinstance(node, ir.IfS):
            walk(node.cond)
            for s in node.then:
                walk(s)
            lone = node.orelse[0] if len(node.orelse) == 1 else None
            for s in node.orelse:  # `elif c:` is an IfS alone in the else, spanning from its condition
                walk(
                    s,
                    node if isinstance(lone, ir.IfS) and lone.span == lone.cond.span and not _is_guard(lone) else None,
                )
            return
        for c in _children(node):
            walk(c)

    for a in spec.actions:
        if not isinstance(a.legal, ir.Lit):
            out.append(("legal", a))
        walk(a.legal)
    for r in spec.rules:
        if not isinstance(r.when, ir.Lit):
            out.append(("when", r))
        walk(r.when)
    parts: list[Any] = [spec.reset, *(a.effect for a in spec.actions), *(r.body for r in spec.rules)]
    parts += [c.body for c in spec.callables]
    parts += [spec.box.effect if spec.box is not None else (), spec.reward, spec.terminated, spec.truncated]
    parts += [spec.observation, *(x for _, x in spec.invariants)]
    for p in parts:
        for n in p if isinstance(p, tuple) else (p,):
            walk(n)
    return out


def arms_of(spec: ir.SpecIR) -> list[Arm]:
    """Every arm of the spec, in source order."""
    out: list[Arm] = []
    members = {e.name: e.members for e in spec.enums}
    for ctx, n in decisions(spec):
        if ctx == "legal":
            sp = n.legal.span
            out += [
                Arm(sp, "legal", True, f"action {n.name} legal"),
                Arm(sp, "legal", False, f"action {n.name} illegal"),
            ]
        elif ctx == "when":
            sp = n.when.span
            out += [Arm(sp, "when", True, "rule runs"), Arm(sp, "when", False, "rule skipped")]
        elif isinstance(n, ir.IfS):
            sp = n.cond.span
            if ctx == "while":
                out += [Arm(sp, ctx, True, "body runs"), Arm(sp, ctx, False, "loop ends before its cap")]
            else:
                other = "elif" if len(n.orelse) == 1 and isinstance(n.orelse[0], ir.IfS) else "else"
                out += [Arm(sp, ctx, True, "then"), Arm(sp, ctx, False, other if n.orelse else "else (nothing)")]
        elif isinstance(n, ir.Select):
            sp = n.cond.span
            out += [Arm(sp, "select", True, "first value"), Arm(sp, "select", False, "else value")]
        elif isinstance(n, ir.Switch):
            sp = n.subject.span
            names = members.get(n.subject.ty.enum or "", ())
            named: set[int] = set()
            for ms, _ in n.cases:
                named.update(ms)
                label = " | ".join(names[m] if m < len(names) else str(m) for m in ms)
                out.append(Arm(sp, "case", frozenset(ms), f"case {label}"))
            if n.default or not names or len(named) < len(names):
                out.append(Arm(sp, "default", None, "default"))
    return sorted(dict.fromkeys(out), key=lambda a: (a.span.path, a.span.line, a.span.col))  # stable: True first


def reached(arms: list[Arm], hits: set[tuple[Span, Any]]) -> set[Arm]:
    """The arms that the recorded decisions `(span, value)` took."""
    values: dict[Span, set[Any]] = {}
    for sp, v in hits:
        values.setdefault(sp, set()).add(v)
    out: set[Arm] = set()
    cases: dict[Span, set[int]] = {}
    for a in arms:
        if a.kind == "case":
            cases.setdefault(a.span, set()).update(a.outcome)
    for a in arms:
        vs = values.get(a.span, set())
        if a.kind == "case":
            hit = any(v in a.outcome for v in vs)
        elif a.kind == "default":
            hit = any(v not in cases.get(a.span, set()) for v in vs)
        else:
            hit = any(bool(v) == a.outcome for v in vs)
        if hit:
            out.add(a)
    return out


# ---- measuring the suite ---------------------------------------------------------------------------------------
def measuring() -> bool:
    """Whether the suite is running with a reference in the backend's place (inside `measure`)."""
    return _MEASURING.get()


def measure(
    spec: ir.SpecIR,
    levels: tuple[str, ...] = ("L1", "L2", "L3"),
    episodes: int = 100,
    states: int = 200,
    seed: int = 0,
    max_steps: int = 500,
) -> tuple[list[Arm], set[Arm]]:
    """The spec's arms, and those the reference takes running the suite in the backend's place."""
    from envc.verify import verify

    arms = arms_of(spec)
    if not arms:
        return arms, set()
    hits: set[tuple[Span, Any]] = set()
    ref = ReferenceEnv(spec, strict=False, arms=hits)
    token = _MEASURING.set(True)
    try:
        verify(spec, ref, levels=levels, episodes=episodes, states=states, seed=seed, max_steps=max_steps)
    finally:
        _MEASURING.reset(token)
    return arms, reached(arms, hits)


# ---- steering toward the arms not reached ----------------------------------------------------------------------
def _reads(e: Any) -> tuple[set[str], set[str]]:
    """(state fields, locals) an IR subtree reads."""
    fields: set[str] = set()
    locs: set[str] = set()
    for n in ir.nodes(e):
        if isinstance(n, ir.Read) and n.space == "state":
            fields.add(n.name)
        elif isinstance(n, (ir.Read, ir.Local)) and getattr(n, "space", "local") == "local":
            locs.add(n.name)
        elif isinstance(n, ir.ZoneFind):
            fields.update({n.zone.name, n.zone.name + ".count"})
    return fields, locs


def _local_sources(spec: ir.SpecIR) -> dict[str, set[str]]:
    """Local name -> state fields its definitions read, transitively (one map for the whole spec: names may clash,
    which only widens what is mutated)."""
    direct: dict[str, tuple[set[str], set[str]]] = {}
    for n in ir.nodes(spec):
        name = n.name if isinstance(n, ir.LetS) else n.target.name if isinstance(n, ir.Assign) else None
        if name is None or (isinstance(n, ir.Assign) and n.target.space != "local"):
            continue
        f, loc = _reads(n.value)  # type: ignore[attr-defined]
        d = direct.setdefault(name, (set(), set()))
        d[0].update(f)
        d[1].update(loc)
    out: dict[str, set[str]] = {}
    for name in direct:
        fields: set[str] = set()
        todo, seen = [name], set()
        while todo:
            x = todo.pop()
            if x in seen or x not in direct:
                continue
            seen.add(x)
            fields |= direct[x][0]
            todo.extend(direct[x][1])
        out[name] = fields
    return out


def _targets(spec: ir.SpecIR, node: Any, sources: dict[str, set[str]]) -> set[str]:
    """The state fields that a decision's condition depends on."""
    cond = node.legal if isinstance(node, ir.ActionKind) else node.when if isinstance(node, ir.RuleInfo) else None
    if cond is None:
        cond = node.subject if isinstance(node, ir.Switch) else node.cond
    fields, locs = _reads(cond)
    for name in locs:
        fields |= sources.get(name, set())
    return fields


def _reset_spans(spec: ir.SpecIR) -> set[Span]:
    """Spans of the decisions the reset runs (in its body, or in the functions it calls)."""
    fns = {c.name: c for c in spec.callables}
    todo: list[Any] = list(spec.reset)
    seen: set[str] = set()
    out: set[Span] = set()
    while todo:
        for n in ir.nodes(todo.pop()):
            if isinstance(n, ir.IfS | ir.Select):
                out.add(n.cond.span)
            elif isinstance(n, ir.Switch):
                out.add(n.subject.span)
            name = n.fn if isinstance(n, ir.CallFn) else n.proc if isinstance(n, ir.CallProc) else None
            if name is not None and name not in seen and name in fns:
                seen.add(name)
                todo.extend(fns[name].body)
    return out


def _actions(spec: ir.SpecIR, r: Any, gen: np.random.Generator, most: int = 8) -> list[Any]:
    if spec.box is not None:
        lo, hi = np.asarray(spec.box.low, np.float32), np.asarray(spec.box.high, np.float32)
        shape = spec.box.shape
        return [np.broadcast_to(lo, shape).copy(), np.broadcast_to(hi, shape).copy()] + [
            gen.uniform(lo, hi, shape).astype(np.float32) for _ in range(2)
        ]
    legal = np.flatnonzero(np.asarray(r.legal_action_mask))
    if len(legal) > most:
        legal = gen.choice(legal, most, replace=False)
    return [int(a) for a in legal]


def steer(
    spec: ir.SpecIR,
    arms: list[Arm],
    have: set[Arm],
    seed: int = 0,
    budget_s: float = 10.0,
    max_candidates: int = 2000,
    pool_episodes: int = 10,
) -> tuple[set[Arm], list[tuple[dict[str, np.ndarray] | None, Any, rng.Key]]]:
    """Arms reached only by mutating reached states (see the module doc), and the (state, action, key) steps that
    reached each first ((None, None, key): a reset with that key, for the reset's own arms). Stops when every arm
    is reached, after `max_candidates` candidates or `budget_s` seconds."""
    from envc.against import _neighbours, boundaries
    from envc.verify import _rollout, fuzz_state

    hits: set[tuple[Span, Any]] = set()
    ref = ReferenceEnv(spec, strict=False, arms=hits)
    gen = np.random.default_rng(seed + 7)
    key = rng.key_from_seed(seed + 7)
    nodes: dict[Span, Any] = {}
    for ctx, n in decisions(spec):
        sp = (
            n.legal.span
            if ctx == "legal"
            else n.when.span
            if ctx == "when"
            else n.subject.span
            if isinstance(n, ir.Switch)
            else n.cond.span
        )
        nodes.setdefault(sp, n)
    sources = _local_sources(spec)
    at_reset = _reset_spans(spec)
    bounds = boundaries(spec)
    info = {f.name: f for f in spec.fields}
    pool: list[dict[str, np.ndarray]] = []
    for _ in range(pool_episodes):
        key, k = rng.split(key)
        pool += [ref.state_to_dict(s) for s in _rollout(ref, k, gen, 200) if not (s.terminated or s.truncated)]
    if not pool:
        return set(), []
    hits.clear()  # what counts is what the steered steps reach beyond the suite
    got: set[Arm] = set()
    found: list[tuple[dict[str, np.ndarray] | None, Any, rng.Key]] = []
    start = time.perf_counter()
    for _ in range(max_candidates):
        missing = [a for a in arms if a not in have and a not in got]
        if not missing or time.perf_counter() - start > budget_s:
            break
        arm = missing[int(gen.integers(len(missing)))]
        if arm.span in at_reset and gen.random() < 0.5:  # a reset's arm: only a fresh key can take it
            key, k = rng.split(key)
            before = len(hits)
            ref.init(k)
            if len(hits) > before and reached(arms, hits) - have - got:
                got |= reached(arms, hits) - have
                found.append((None, None, k))
            continue
        targets = sorted(_targets(spec, nodes[arm.span], sources) & set(info)) or sorted(info)
        base = pool[int(gen.integers(len(pool)))]
        d = {k2: np.array(v, copy=True) for k2, v in base.items()}
        fuzz = fuzz_state(spec, base, gen)
        for name in gen.permutation(targets)[: int(gen.integers(1, 4))]:
            name = str(name)
            edges = [(at, c) for (f, at), cs in bounds.items() if f == name for c in cs]
            if edges and gen.random() < 0.6:
                at, c = edges[int(gen.integers(len(edges)))]
                vals = _neighbours(c, d[name].dtype)
                d[name][at] = vals[int(gen.integers(len(vals)))]
            elif d[name].ndim and gen.random() < 0.5:  # one element redrawn
                at = tuple(int(gen.integers(s)) for s in d[name].shape)
                d[name][at] = np.asarray(fuzz[name])[at]
            else:
                d[name] = np.asarray(fuzz[name]).astype(d[name].dtype)
        for f in spec.fields:  # keep zones consistent: freed slots are zero
            if f.zone is not None and not f.name.endswith(".count"):
                cnt = np.minimum(np.maximum(d[f.name + ".count"], 0), f.ty.shape[-1])
                d[f.name + ".count"] = cnt.astype(d[f.name + ".count"].dtype)
                idx = np.arange(f.ty.shape[-1])
                d[f.name] = np.where(idx < cnt[..., None], d[f.name], 0).astype(d[f.name].dtype)
        d["terminated"], d["truncated"] = np.asarray(False), np.asarray(False)
        before = len(hits)
        r0 = ref.state_from_dict(d)
        new_state = len(hits) > before
        for act in _actions(spec, r0, gen):
            key, k = rng.split(key)
            before = len(hits)
            r1 = ref.step(r0, act, k)
            if len(hits) > before or new_state:
                now = reached(arms, hits) - have
                if now - got:
                    got |= now
                    found.append((d, act, k))
                    pool.append(d)
                    if not (r1.terminated or r1.truncated):
                        pool.append(ref.state_to_dict(r1))
                new_state = False
    return got, found


def measure_and_steer(
    spec: ir.SpecIR,
    levels: tuple[str, ...] = ("L1", "L2", "L3"),
    episodes: int = 100,
    states: int = 200,
    seed: int = 0,
    max_steps: int = 500,
    budget_s: float = 10.0,
) -> Coverage:
    """`measure`, then `steer` toward the arms the suite missed (when the suite has L2, where its states belong).

    The result depends on the spec and the suite's sizes only (not on a backend), so it is kept for the last few
    specs: `envc mutate` runs the suite on many mutants of one spec and pays for this once."""
    memo = (id(spec), levels, episodes, states, seed, max_steps, budget_s)
    kept = _MEMO.get(memo)
    if kept is not None and kept[0] is spec:
        return kept[1]
    t = time.perf_counter()
    arms, suite = measure(spec, levels, episodes, states, seed, max_steps)
    cov = Coverage(arms, by_suite=suite)
    if len(suite) < len(arms) and "L2" in levels:
        cov.by_steering, cov.steered = steer(spec, arms, suite, seed, budget_s)
    cov.seconds = time.perf_counter() - t
    if len(_MEMO) >= 8:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[memo] = (spec, cov)
    return cov


def coverage_checks(
    spec: ir.SpecIR,
    env: Any,
    levels: tuple[str, ...] = ("L1", "L2", "L3"),
    episodes: int = 100,
    states: int = 200,
    seed: int = 0,
    max_steps: int = 500,
    threshold: float = 0.0,
    budget_s: float = 10.0,
) -> list[Check]:
    """The arm coverage check, and the one-step comparison of the backend on the steered states.

    The coverage check fails only below `threshold` (a share, default 0: it reports and never fails, since a
    spec may have arms no state reaches); its name gives the figures and the first unreached arms, its failures
    (below the threshold) list them all. Returns [] inside `measure` (the suite run on the reference)."""
    from envc.verify import Check, diff, writers

    if _MEASURING.get() or not levels:
        return []
    cov = measure_and_steer(spec, levels, episodes, states, seed, max_steps, budget_s)
    if not cov.arms:  # a spec without decisions (pendulum): nothing to cover, no check
        return []
    level = levels[-1]
    n, got = len(cov.arms), len(cov.reached)
    missed = cov.unreached
    name = f"arm coverage {got} of {n} ({100 * cov.ratio:.1f}%)"
    if cov.by_steering:
        name += f", {len(cov.by_steering)} of them reached only by steered states"
    if missed:
        shown = "; ".join(a.describe() for a in missed[:5])
        name += f"; unreached: {shown}" + (f" and {len(missed) - 5} more" if len(missed) > 5 else "")
    check = Check(level, name, cases=n, unit="arms")
    check.figures = {
        "arms": n,
        "reached": got,
        "reached_by_suite": len(cov.by_suite),
        "reached_by_steering": len(cov.by_steering),
        "coverage": cov.ratio,
        "seconds": round(cov.seconds, 2),
    }
    if cov.ratio < threshold:
        for a in missed:
            check.fail(f"unreached arm {a.describe()}")
    out = [check]
    if cov.steered:
        ref = ReferenceEnv(spec, strict=False)
        wrote = writers(spec)
        step = Check("L2", "one step from coverage-steered states")
        for i, (d, act, k) in enumerate(cov.steered):
            if d is None:  # a reset's arm: the reset with that key
                step.cases += 1
                m = diff(
                    spec, ref.state_to_dict(ref.init(k)), env.state_to_dict(env.init(k)), f"steered reset {i}", wrote
                )
                if m is not None:
                    step.fail(m)
                continue
            r0 = ref.state_from_dict(d)
            try:
                b0 = env.state_from_dict(d)
                m = diff(spec, ref.state_to_dict(r0), env.state_to_dict(b0), f"steered state {i} (injected)", wrote)
                if m is None:
                    m = diff(
                        spec,
                        ref.state_to_dict(ref.step(r0, act, k)),
                        env.state_to_dict(env.step(b0, act, k)),
                        f"steered state {i} action {np.asarray(act).tolist()}",
                        wrote,
                    )
            except SpecRuntimeError:
                continue  # a strict reference as the backend rejects a state the game never reaches (as in L1)
            step.cases += 1
            if m is not None:
                step.fail(m)
        out.append(step)
    return out
