"""Comparison flips that spec-language 14.3's float semantics cannot tell from the original.

The transcendental functions (`sin cos tan exp log ...`) may differ from the reference in the last bit on every
compiled backend (Rust calls its platform's libm, XLA its own approximations), so a comparison of a value
computed through one of them may honestly come out either way where both sides are equal: `-cos(t1) -
cos(t1 + t2) > 1.0` at exactly 1.0 is `true` on a backend whose `cos` is one ulp lower. A mutant that turns
that `>` into `>=` differs from the original only there, so it behaves as a conforming backend may, and no
test can tell it apart without failing honest backends. Such survivors are counted apart ("within the float
tolerance"), not as proven equivalents, and the strict kill rate counts them as survivors.

Which values carry a transcendental's last bit: the step's IR run abstractly in statement order through its
locals (lets, assignments, calls with their arguments' taint, returns, unpacks); both arms of a branch are
joined, so a value tainted on one path counts as tainted. State fields never carry it (see `_Flow`).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from envc import ir
from envc.diagnostics import Span

TOLERANCE = "equivalent within the float tolerance"
TRANSCENDENTAL = {"sin", "cos", "tan", "exp", "log", "tanh", "atan2", "asin", "acos", "atan", "sinh", "cosh",
                  "log1p", "expm1", "hypot", "pow"}  # fmt: skip
_FLIPS = {"<": ("<", ">"), "<=": ("<=", ">="), ">": (">", "<"), ">=": (">=", "<=")}  # a side may be written first


class _Flow:
    """The step run abstractly: which locals hold a value that carries a transcendental's last bit, in statement
    order, recording every ordering comparison with such an operand. A state field does not carry it: the suite
    compares every field bit for bit, so a comparison of one (mountain car's `position >= goal_position`) is
    decided by bits the suite sees, and a flip there is a real difference."""

    def __init__(self, spec: ir.SpecIR) -> None:
        self.callables = {c.name: c for c in spec.callables}
        self.found: set[tuple[str, int, str]] = set()
        self.memo: dict[tuple[str, tuple[bool, ...]], bool] = {}

    def expr(self, e: Any, env: set[str]) -> bool:
        """Does `e` carry a transcendental's result? (Runs the functions it calls; records comparisons.)"""
        if isinstance(e, ir.Local):
            return e.name in env
        if isinstance(e, ir.CallFn):
            return self.call(e.fn, tuple(self.expr(a, env) for a in e.args))
        if isinstance(e, ir.Reduce):
            return any([self.expr(x, env - {e.var}) for x in (e.elt, e.cond) if x is not None])
        if isinstance(e, ir.Map):
            args = [self.expr(a, env) for a in e.args]
            return self.expr(e.body, (env - set(e.names)) | {n for n, t in zip(e.names, args) if t})
        children = [x for v in e.__dict__.values() for x in (v if isinstance(v, tuple) else (v,))]
        taints = [self.expr(x, env) for x in children if isinstance(x, ir._Expr)]
        if isinstance(e, ir.Read) and e.space == "local":
            taints.append(e.name in env)
        if isinstance(e, ir.Binary) and e.op in _FLIPS and any(taints):
            self.found.add((e.span.path, e.span.line, e.op))
        return any(taints) or (isinstance(e, ir.Math) and e.fn in TRANSCENDENTAL)

    def call(self, name: str, args: tuple[bool, ...]) -> bool:
        """Does a call with these argument taints return a tainted value?"""
        c = self.callables.get(name)
        if c is None:
            return any(args)
        if (name, args) not in self.memo:
            self.memo[(name, args)] = False  # a guard: specs do not recurse
            self.memo[(name, args)] = self.stmts(c.body, {p for (p, _), t in zip(c.params, args) if t})[1]
        return self.memo[(name, args)]

    def stmts(self, body: Any, env: set[str]) -> tuple[set[str], bool]:
        """(the locals tainted after `body`, whether a `return` in it returns a tainted value)."""
        returns = False
        for s in body:
            env, r = self.stmt(s, env)
            returns |= r
        return env, returns

    def stmt(self, s: Any, env: set[str]) -> tuple[set[str], bool]:
        env = set(env)
        if isinstance(s, ir.LetS):
            env = (env | {s.name}) if self.expr(s.value, env) else (env - {s.name})
        elif isinstance(s, (ir.Assign, ir.Unpack)):
            t = self.expr(s.value, env)
            for tg in (s.target,) if isinstance(s, ir.Assign) else s.targets:
                t_i = any([self.expr(i, env) for i in tg.index]) or t
                if tg.space == "local" and t_i:
                    env.add(tg.name)
                elif tg.space == "local" and not tg.index:
                    env.discard(tg.name)  # a whole local overwritten with an exact value
        elif isinstance(s, ir.IfS):
            self.expr(s.cond, env)
            (e1, r1), (e2, r2) = self.stmts(s.then, env), self.stmts(s.orelse, env)
            return e1 | e2, r1 or r2
        elif isinstance(s, ir.Switch):
            self.expr(s.subject, env)
            outs = [self.stmts(b, env) for _, b in s.cases] + [self.stmts(s.default, env)]
            return set().union(*(o[0] for o in outs)), any(o[1] for o in outs)
        elif isinstance(s, ir.ForS):
            returns = False
            for _ in range(3):  # taint carried from one iteration to the next
                e1, r = self.stmts(s.body, env - {s.var})
                returns |= r
                if e1 <= env:
                    break
                env |= e1
            return env, returns
        elif isinstance(s, ir.ZoneOp):
            for x in (s.index, s.value):
                if x is not None:
                    self.expr(x, env)
            if s.out is not None and s.out.space == "local":
                env.discard(s.out.name)  # a zone holds stored (exact) values
        elif isinstance(s, ir.CallProc):
            self.call(s.proc, tuple(self.expr(a, env) for a in s.args))
        elif isinstance(s, ir.ReturnS):
            return env, self.expr(s.value, env)
        elif isinstance(s, ir.CheckS):
            pass  # the reference's own checks: no backend code to mutate
        return env, False


@cache
def _tainted_comparisons(spec: ir.SpecIR) -> frozenset[tuple[str, int, str]]:
    """(path, line, op) of every ordering comparison a step makes with an operand that carries a transcendental
    (effects, rules, reward, termination, observation)."""
    flow = _Flow(spec)
    for a in spec.actions:
        flow.expr(a.legal, set())
        flow.stmts(a.effect, set())
    for body in (spec.box.effect if spec.box is not None else (), spec.observation):
        flow.stmts(body, set())
    for r in spec.rules:
        flow.expr(r.when, set())
        flow.stmts(r.body, set())
    for e in (spec.reward, spec.terminated, spec.truncated):
        flow.expr(e, set())
    return frozenset(flow.found)


def within_tolerance(spec: ir.SpecIR, span: Span | None, before: str, after: str) -> str | None:
    """Why a comparison flip (`>` -> `>=` at the generated line lowered from `span`) is within the float
    tolerance, or None: the spec line compares a value computed through a transcendental function."""
    if span is None or {before, after} not in ({"<", "<="}, {">", ">="}):
        return None
    found = {op for path, line, op in _tainted_comparisons(spec) if path == span.path and line == span.line}
    if not found & set(_FLIPS[before]):
        return None
    return (f"{TOLERANCE} (spec-language 14.3): the comparison at {span.path}:{span.line} reads a value computed "
            "through a transcendental function, whose last bit may differ on any backend, so where its sides are "
            "equal either outcome conforms")  # fmt: skip
