"""Verification of a spec against the original environment it claims to be: `envc verify SPEC --against TARGET`.

The original is an `envc.oracle.Oracle`; the spec runs on the reference interpreter (or a backend with the same
API). Levels (docs/oracle.md):

* L1 the original's own states (random legal actions) satisfy the spec's invariants, declared field bounds and
  observation shapes/bounds, and leave a legal action while not done;
* L2 one step from injected states (the original's and the spec's rollouts, states fuzzed inside the declared
  bounds, boundary values of the constants the spec compares fields with), every mapped field, reward,
  terminated, truncated (and mask, player, observation where the original reports them) compared;
* L3 (a) lockstep episodes re-synced from the original each step, (b) free-running episodes with the same
  actions, exact for discrete specs and compared up to the original's own divergence horizon for floats,
  (c) episode return and length distributions compared by a two-sample test (envc.stats).

Floats: the spec computes in f32, an original usually in float64. One step is compared with
|spec - original| <= TOL * (1 + |original|); a free run with FREE_TOL. A difference in a discrete outcome
(terminated, a wrapped angle, an int field) is a rounding at a threshold, counted as an *edge* and not failed,
when the spec's step from the same state with one float field moved by TOL (or 1 ulp) reproduces the original's
outcome. A field the boundary case put exactly on a constant, and that the original leaves there, is not moved:
both sides then see the same equality, so `<` for `<=` cannot hide behind rounding.

Chance: reset-time draws are carried over by injecting the original's reset state; step-time draws either by
KEY SEARCH (the first of KEY_TRIES keys whose spec step reproduces the original on every mapped field) when the
spec's step draws randomness, or by copying the `chance:` fields from the original after each step.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from envc import ir, rng
from envc.diagnostics import SpecRuntimeError
from envc.interpret import Compiler, Frame, ReferenceEnv, State
from envc.ir import NP_DTYPE
from envc.mathops import f32
from envc.oracle import Oracle, OracleError, Transition
from envc.verify import fuzz_state, writers

TOL = 2e-6  # one step: 32 f32 ulps at 1.0 (the largest measured on classic control: about 9, acrobot)
FREE_TOL = 1e-4  # free running, up to the horizon where the original's own 1-ulp nudge has grown to TOL
# pgx 2048's spawn (a 4 w.p. 0.1 on one of up to 15 empty cells): a miss per step of 2.5e-3 at 256 tries (a
# quarter of random episodes miss once), 2.9e-6 at 1024, 1.2e-9 at 2048 (measured: tests/test_oracle_2048.py)
KEY_TRIES = 2048
SENSITIVITY = 8  # a one-step float difference may reach this many times the original's own 1-ulp sensitivity
JUMP = 10  # a float quantity excused as an edge must jump by more than JUMP tolerances
MAX_EXAMPLES = 5
LEVELS = ("L1", "L2", "L3")
_CMP = frozenset({"<", "<=", ">", ">=", "==", "!="})


# ---- results ----------------------------------------------------------------------------------------------
@dataclass
class Divergence:
    """Where the spec and the original part: level, case, quantity, both values, the state and the spec lines."""

    level: str
    check: str
    where: str  # "episode 3 step 17", "state 12"
    quantity: str  # a field, or rewards / terminated / truncated / observation / legal_action_mask / ...
    index: tuple[int, ...]
    original: Any
    spec: Any
    action: Any
    injected: dict[str, Any] | None  # the state both stepped from (mapped fields), None: not injected
    written_at: list[str]
    note: str = ""

    def message(self) -> str:
        """One line: where, what, both values, the state and the spec lines."""
        at = f"{list(self.index)}" if self.index else ""
        lines = ", ".join(self.written_at[:3]) or "derived"
        text = (
            f"{self.where}, action {_show(self.action)}: {self.quantity}{at} original {_show(self.original)} "
            f"spec {_show(self.spec)} (written at {lines})"
        )
        if self.injected is not None:
            text += "; from state {" + ", ".join(f"{k}: {_show(v)}" for k, v in self.injected.items()) + "}"
        return text + (f"; {self.note}" if self.note else "")

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "level": self.level,
            "check": self.check,
            "where": self.where,
            "quantity": self.quantity,
            "index": list(self.index),
            "original": plain(self.original),
            "spec": plain(self.spec),
            "action": plain(self.action),
            "injected": None if self.injected is None else {k: plain(v) for k, v in self.injected.items()},
            "written_at": self.written_at,
            "note": self.note,
        }


@dataclass
class AgainstCheck:
    """One check at one level: cases run, cases failed (all counted), edges, the first divergence."""

    level: str
    name: str
    cases: int = 0
    failed: int = 0
    edges: int = 0
    widened: int = 0  # cases within the original's own sensitivity, beyond the plain tolerance
    notes: list[str] = field(default_factory=list)
    first: Divergence | None = None
    examples: list[str] = field(default_factory=list)
    stats: list[Any] = field(default_factory=list)  # envc.stats.SampleComparison (L3 c)

    @property
    def passed(self) -> bool:
        """No case failed."""
        return self.failed == 0

    def fail(self, div: Divergence | str) -> None:
        """Count one failing case; keep the first divergence and a few messages."""
        self.failed += 1
        if isinstance(div, Divergence) and self.first is None:
            self.first = div
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(div.message() if isinstance(div, Divergence) else div)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "level": self.level,
            "name": self.name,
            "cases": self.cases,
            "failed": self.failed,
            "edges": self.edges,
            "widened": self.widened,
            "passed": self.passed,
            "notes": self.notes,
            "first_divergence": None if self.first is None else self.first.to_json(),
            "failures": self.examples,
            "statistics": [_stat_json(s) for s in self.stats],
        }


@dataclass
class AgainstReport:
    """Everything `envc verify --against` reports."""

    spec: str
    path: str
    target: str
    conversions: list[dict[str, Any]]
    checks: list[AgainstCheck]
    seconds: float = 0.0
    key_searches: int = 0
    chance_tape: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every check passed."""
        return all(c.passed for c in self.checks)

    @property
    def first(self) -> Divergence | None:
        """The first divergence in level order."""
        return next((c.first for c in self.checks if c.first is not None), None)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "spec": self.spec,
            "path": self.path,
            "target": self.target,
            "passed": self.passed,
            "tolerance": {"one_step": TOL, "free_running": FREE_TOL},
            "conversions": self.conversions,
            "checks": [c.to_json() for c in self.checks],
            "first_divergence": None if self.first is None else self.first.to_json(),
            "key_searches": self.key_searches,
            "chance_tape": self.chance_tape[:1000],
            "seconds": round(self.seconds, 3),
        }


def plain(v: Any) -> Any:
    """numpy values (nested in dicts) as JSON-ready Python values; non-finite floats as text."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def _show(v: Any) -> str:
    v = plain(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, list) and len(v) > 12:
        return str(v[:12])[:-1] + ", ...]"
    return str(v)


def _stat_json(s: Any) -> dict[str, Any]:
    out = {k: plain(getattr(s, k, None)) for k in ("quantity", "n_a", "n_b", "statistic", "p_value", "alpha")}
    out.update(detectable=plain(getattr(s, "detectable", None)), passed=bool(getattr(s, "passed", False)))
    describe = getattr(s, "describe", None)
    out["describe"] = describe() if callable(describe) else str(s)
    return out


# ---- what the spec compares with constants -----------------------------------------------------------------
def _step_parts(spec: ir.SpecIR) -> list[Any]:
    """The IR a step runs (the reset excluded)."""
    parts: list[Any] = [spec.actions, spec.rules, spec.callables, spec.reward, spec.terminated, spec.truncated]
    parts += [spec.box, spec.invariants]
    return parts


def draws_in_step(spec: ir.SpecIR) -> bool:
    """Does a step of `spec` draw randomness (so that a key search can follow the original's chance)?"""
    for part in (spec.actions, spec.rules, spec.box):
        for n in ir.nodes(part):
            if isinstance(n, ir.Random) or (isinstance(n, ir.ZoneOp) and n.op == "shuffle"):
                return True
            if isinstance(n, (ir.Reduce, ir.ReduceArray)) and n.op == "choice":
                return True
            if isinstance(n, ir.CallProc) and any(c.name == n.proc and c.random for c in spec.callables):
                return True
    return False


def _const(spec: ir.SpecIR, e: Any) -> float | None:
    """The value of a constant expression as declared (a param's default, a literal, a constant's element)."""
    if isinstance(e, ir.Lit) and not isinstance(e.value, bool):
        return float(e.value)
    if isinstance(e, ir.Param):
        p = next((p for p in spec.params if p.name == e.name), None)
        return None if p is None or isinstance(p.default, bool) else float(p.default)
    if isinstance(e, ir.Unary) and e.op == "neg":
        v = _const(spec, e.x)
        return None if v is None else -v
    if isinstance(e, ir.Cast):
        return _const(spec, e.x)
    if isinstance(e, ir.Read) and e.space == "const":
        c = next((c for c in spec.consts if c.name == e.name), None)
        idx = [i.value for i in e.index if isinstance(i, ir.Lit)]
        if c is None or len(idx) != len(c.ty.shape) or isinstance(c.values[0], bool):
            return None
        flat = int(np.ravel_multi_index(tuple(int(i) for i in idx), c.ty.shape)) if idx else 0
        return float(c.values[flat])
    return None


FEW = 8  # a read whose index is not a literal stands for every element it can be, if there are at most this many


def _field_ref(spec: ir.SpecIR, e: Any) -> tuple[str, list[tuple[int, ...]], bool] | None:
    """(field, elements, under abs) for a read of one state element: the element of literal indices, or every
    element a computed index can reach when they are few (`deck.count[pl] > 0`: both players' counts)."""
    absolute = False
    if isinstance(e, ir.Math) and e.fn == "abs" and len(e.args) == 1:
        e, absolute = e.args[0], True
    if isinstance(e, ir.Cast):
        e = e.x
    if not isinstance(e, ir.Read) or e.space != "state" or e.ty.shape:
        return None
    axes = [range(int(i.value), int(i.value) + 1) if isinstance(i, ir.Lit) else None for i in e.index]
    shape = spec.field(e.name).ty.shape
    ranges = [r if r is not None else range(n) for r, n in zip(axes, shape)]
    if math.prod(len(r) for r in ranges) > (1 if all(r is not None for r in axes) else FEW):
        return None
    return e.name, list(itertools.product(*ranges)), absolute


def boundaries(spec: ir.SpecIR, parts: list[Any] | None = None) -> dict[tuple[str, tuple[int, ...]], set[float]]:
    """(field, element) -> the constants a step (or the IR `parts`, e.g. `[spec.invariants]`) compares it with
    (`x > x_threshold`, `abs(t) <= PI`)."""
    out: dict[tuple[str, tuple[int, ...]], set[float]] = {}
    for part in _step_parts(spec) if parts is None else parts:
        for n in ir.nodes(part):
            if not isinstance(n, ir.Binary) or n.op not in _CMP:
                continue
            for a, b in ((n.a, n.b), (n.b, n.a)):
                ref, c = _field_ref(spec, a), _const(spec, b)
                if ref is None or c is None or not math.isfinite(c):
                    continue
                name, elements, absolute = ref
                for at in elements:
                    out.setdefault((name, at), set()).update({c, -c} if absolute else {c})
    return out


def _is_float(dt: ir.DType) -> bool:
    return dt.value.startswith("f")


def _neighbours(c: float, dtype: np.dtype[Any]) -> list[float]:
    """Values at and around a constant: the constant itself (exact), and the spec dtype's values next to it."""
    if dtype.kind == "f":
        r = dtype.type(c)
        vals = [c, float(np.nextafter(r, dtype.type(-np.inf))), float(r), float(np.nextafter(r, dtype.type(np.inf)))]
    else:
        vals = [float(math.floor(c)) + d for d in (-2, -1, 0, 1)]
    return list(dict.fromkeys(vals))


# ---- the run -------------------------------------------------------------------------------------------------
@dataclass
class _Stepped:
    """One step taken by both from the same state."""

    spec: State
    tr: Transition
    orig: dict[str, np.ndarray]
    raw: dict[str, np.ndarray]
    key: rng.Key
    sync: str = ""  # "", "key", "injected", "no key"


class Against:
    """One verification of `spec` (on `env`, the reference interpreter by default) against `oracle`."""

    def __init__(self, spec: ir.SpecIR, oracle: Oracle, env: Any = None, seed: int = 0, max_steps: int = 1000):
        self.spec = spec
        self.oracle = oracle
        self.ref = ReferenceEnv(spec)
        self.env = env if env is not None else self.ref
        self.loose = ReferenceEnv(spec, strict=False)
        self.seed = seed
        self.max_steps = max_steps
        self.gen = np.random.default_rng(seed)
        self.wrote = writers(spec)
        self.info = {f.name: f for f in spec.fields}
        self._validate()
        self.fields = tuple(oracle.fields)
        self.chance = tuple(oracle.chance_fields)
        self.compared = tuple(f for f in self.fields if f not in self.chance)
        self.floats = tuple(f for f in self.compared if _is_float(self.info[f].ty.dtype))
        self.stochastic = draws_in_step(spec)
        self.bounds = boundaries(spec)
        for name, values in self.call("in thresholds()", oracle.thresholds).items():
            if name in self.info and not self.info[name].ty.shape:
                self.bounds.setdefault((name, ()), set()).update(float(v) for v in values)
        for prm in spec.params:  # a time limit the spec declares but forgot to compare with
            if prm.ty.dtype.is_int and not prm.static and not isinstance(prm.default, bool):
                self.bounds.setdefault(("step_count", ()), set()).add(float(prm.default))
        self.compare_obs = spec.oracle.observation if spec.oracle is not None else True
        c = Compiler(spec, strict=False)
        c.compile_callables()
        self._reward, self._term, self._trunc = c.expr(spec.reward), c.expr(spec.terminated), c.expr(spec.truncated)
        self.key_searches = 0
        self.tape: list[dict[str, Any]] = []
        self.pool: list[dict[str, np.ndarray]] = []  # the original's states (spec dicts), for L2
        self._check_observation()

    # ---- setup ---------------------------------------------------------------------------------------------
    def _validate(self) -> None:
        o, spec = self.oracle, self.spec
        unknown = [f for f in o.fields if f not in self.info]
        if unknown:
            raise OracleError(f"the oracle maps {unknown}, which are not state fields of spec '{spec.name}'")
        if not o.fields:
            raise OracleError("the oracle maps no spec field: nothing could be compared")
        loose = [f for f in o.chance_fields if f not in o.fields]
        if loose:
            raise OracleError(f"chance fields {loose} are not among the oracle's fields")
        if o.num_players != spec.players:
            raise OracleError(f"the original has {o.num_players} player(s), the spec {spec.players}")

    def call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Call the original; anything it raises becomes one OracleError line."""
        try:
            return fn(*args)
        except OracleError:
            raise
        except Exception as e:  # the original's own failure, reported as bad input
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            raise OracleError(f"the original raised {type(e).__name__} {what}: {text}".rstrip(": ")) from None

    def _orig_state(self, what: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        got = self.call(what, self.oracle.get_state)
        raw = self.call(what, self.oracle.raw_state)
        for f in self.fields:
            if f not in got:
                raise OracleError(f"the original's state lacks field '{f}' ({what})")
            want = self.info[f].ty.shape
            if np.shape(got[f]) != want:
                raise OracleError(
                    f"the original's field '{f}' has shape {list(np.shape(got[f]))}, the spec's {list(want)} ({what})"
                )
        return got, raw

    def _check_observation(self) -> None:
        tr = self.call("on reset", self.oracle.reset, self.seed)
        self._check_rewards(tr, "on reset")
        if not self.compare_obs or tr.observation is None:
            return
        mine = self.ref.init(rng.key_from_seed(self.seed)).observation
        theirs = tr.observation
        if isinstance(mine, dict) != isinstance(theirs, dict):
            raise OracleError(
                "the original's observation is "
                + ("a dict" if isinstance(theirs, dict) else f"an array of shape {list(np.shape(theirs))}")
                + f", the spec's {'has fields ' + ', '.join(mine) if isinstance(mine, dict) else 'is one array'}"
                + " (set `observation: false` in the oracle section to skip it)"
            )
        pairs = mine.items() if isinstance(mine, dict) else [("observation", mine)]
        for name, m in pairs:
            t = np.asarray(theirs[name] if isinstance(theirs, dict) else theirs)
            m = np.asarray(m)
            if t.shape != m.shape:
                raise OracleError(
                    f"the original's {name} has shape {list(t.shape)}, the spec's {list(m.shape)} "
                    "(set `observation: false` in the oracle section to skip it)"
                )
            if (t.dtype.kind == "f") != (m.dtype.kind == "f"):
                raise OracleError(f"the original's {name} is {t.dtype}, the spec's {m.dtype}")

    def _check_rewards(self, tr: Transition, what: str) -> None:
        if np.shape(tr.rewards) != (self.spec.players,):
            raise OracleError(
                f"the original reports rewards of shape {list(np.shape(tr.rewards))} {what}, "
                f"the spec has {self.spec.players} player(s)"
            )

    # ---- states ---------------------------------------------------------------------------------------------
    def inject(self, base: Mapping[str, np.ndarray], values: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """`base` (a spec state dict) with the mapped fields taken from `values`, in the spec's dtypes."""
        d = {k: np.array(v, copy=True) for k, v in base.items()}
        for f in self.fields:
            if f in values:
                d[f] = np.asarray(values[f]).astype(NP_DTYPE[self.info[f].ty.dtype])
        d["rewards"] = np.zeros(self.spec.players, np.float32)
        d["terminated"] = np.asarray(False)
        d["truncated"] = np.asarray(False)
        return d

    def mapped(self, d: Mapping[str, Any]) -> dict[str, Any]:
        """The mapped fields of a state, for the report."""
        return {f: d[f] for f in self.fields if f in d}

    def action(self, mask: np.ndarray | None) -> Any:
        """A random legal action (a random box action for continuous specs)."""
        box = self.spec.box
        if box is not None:
            return self.gen.uniform(box.low, box.high, box.shape).astype(np.float32)
        legal = np.flatnonzero(mask) if mask is not None else np.arange(self.spec.num_actions)
        return int(self.gen.choice(legal)) if len(legal) else 0

    def _outputs(self, d: Mapping[str, np.ndarray], action: Any) -> tuple[np.ndarray, bool, bool]:
        """rewards, terminated, truncated of the spec evaluated on the state `d` after `action`."""
        data = self.loose.state_from_dict(d).data
        if self.spec.box is not None:
            act: list[Any] = [f32(float(v)) for v in np.asarray(action, np.float32).reshape(-1)]
        else:
            act = [int(action)]
        fr = Frame(data, (0, 0), self.loose.params, None, act)
        rewards = np.zeros(self.spec.players, np.float32)
        for p in range(self.spec.players):
            fr.loc = {"p": p}
            rewards[p] = self._reward(fr)
        fr.loc = {}
        return rewards, bool(self._term(fr)), bool(self._trunc(fr))

    # ---- comparing ------------------------------------------------------------------------------------------
    def _diff(self, name: str, want: Any, got: Any, tol: float) -> tuple[tuple[int, ...], Any, Any] | None:
        w, g = np.asarray(want), np.asarray(got)
        if w.shape != g.shape:
            return (), w, g
        if w.dtype.kind == "f" or g.dtype.kind == "f":
            wf, gf = w.astype(np.float64), g.astype(np.float64)
            ok = (np.abs(gf - wf) <= tol * (1.0 + np.abs(wf))) | (np.isnan(wf) & np.isnan(gf))
        else:
            ok = np.asarray(w.astype(np.int64) == g.astype(np.int64))
        if bool(np.all(ok)):
            return None
        at = tuple(int(i) for i in np.argwhere(~ok)[0]) if w.ndim else ()
        return at, (w[at] if at else w), (g[at] if at else g)

    def todict(self, s: Any) -> dict[str, np.ndarray]:
        """A state of the reference interpreter or of the backend under test as a dict."""
        return self.loose.state_to_dict(s) if isinstance(s, State) else self.env.state_to_dict(s)  # type: ignore[no-any-return]

    def pairs(self, s: State, tr: Transition, orig: Mapping[str, np.ndarray]) -> list[tuple[str, Any, Any]]:
        """(quantity, the original's value, the spec's value) of everything compared after a step."""
        sd = self.todict(s)
        out: list[tuple[str, Any, Any]] = [(f, orig[f], sd[f]) for f in self.compared]
        out += [
            ("rewards", tr.rewards, sd["rewards"]),
            ("terminated", tr.terminated, sd["terminated"]),
            ("truncated", tr.truncated, sd["truncated"]),
        ]
        if not (tr.terminated or tr.truncated):
            out.append(("current_player", tr.current_player, s.current_player))
            if tr.legal_action_mask is not None and self.spec.box is None:
                out.append(("legal_action_mask", tr.legal_action_mask, sd["legal_action_mask"]))
        if self.compare_obs and tr.observation is not None:
            mine = s.observation
            if isinstance(mine, dict):
                out += [(f"observation.{k}", tr.observation[k], v) for k, v in mine.items()]
            else:
                out.append(("observation", tr.observation, mine))
        return out

    def mismatches(
        self, s: State, tr: Transition, orig: Mapping[str, np.ndarray], tol: float, only: set[str] | None = None
    ) -> list[tuple[str, tuple[int, ...], Any, Any]]:
        """Every quantity where the spec's state after a step differs from the original's report."""
        out = []
        for name, want, got in self.pairs(s, tr, orig):
            if only is not None and name not in only:
                continue
            d = self._diff(name, want, got, tol)
            if d is not None:
                out.append((name, *d))
        return out

    def written_at(self, quantity: str) -> list[str]:
        """The spec lines that decide `quantity`."""
        spec = self.spec

        def at(span: Any) -> str:
            return f"{span.path}:{span.line}"

        if quantity == "terminated":
            return [at(spec.terminated.span)]
        if quantity == "truncated":
            return [at(spec.truncated.span)]
        if quantity == "rewards":
            return [at(spec.reward.span)]
        if quantity.startswith("observation"):
            return list(dict.fromkeys(at(s.span) for s in spec.observation))[:3]
        if quantity == "legal_action_mask":
            return [at(a.legal.span) for a in spec.actions][:3]
        # a step's divergence: the lines of the step first, those of the reset after them
        reset = {f"{n.span.path}:{n.span.line}" for n in ir.nodes(spec.reset) if isinstance(n, ir.Assign)}
        return sorted(self.wrote.get(quantity, []), key=lambda w: w in reset)

    # ---- one step from a state ----------------------------------------------------------------------------
    def spec_step(
        self, env: Any, pre: State, action: Any, key: rng.Key, orig: Mapping[str, np.ndarray]
    ) -> tuple[State, rng.Key, str]:
        """The spec's step with the original's chance carried over (copied `chance:` fields, or a key search)."""
        s = env.step(pre, action, key)
        if self.chance:
            d = env.state_to_dict(s)
            for f in self.chance:
                d[f] = np.asarray(orig[f]).astype(d[f].dtype)
            rewards, term, trunc = self._outputs(d, action)
            d["rewards"], d["terminated"], d["truncated"] = rewards, np.asarray(term), np.asarray(trunc)
            return env.state_from_dict(d), key, "injected"
        if not self.stochastic or self._fields_match(env, s, orig):
            return s, key, ""
        for i in range(KEY_TRIES):
            k = rng.fold_in(key, i)
            s2 = env.step(pre, action, k)
            if self._fields_match(env, s2, orig):
                self.key_searches += 1
                return s2, k, "key"
        return s, key, "no key"

    def _fields_match(self, env: Any, s: State, orig: Mapping[str, np.ndarray]) -> bool:
        sd = env.state_to_dict(s)
        return all(self._diff(f, orig[f], sd[f], TOL) is None for f in self.compared)

    def both(
        self,
        spec_pre: Mapping[str, np.ndarray],
        orig_pre: Mapping[str, Any] | None,
        action: Any,
        key: rng.Key,
        what: str,
        env: Any = None,
    ) -> _Stepped:
        """Inject `spec_pre` into the spec and `orig_pre` into the original (None: it is already there), step."""
        env = env if env is not None else self.env
        if orig_pre is not None:
            self.call(what, self.oracle.set_state, {f: orig_pre[f] for f in self.fields})
        tr = self.call(what, self.oracle.step, action)
        self._check_rewards(tr, what)
        orig, raw = self._orig_state(what)
        pre = env.state_from_dict(spec_pre)
        s, k, sync = self.spec_step(env, pre, action, key, orig)
        return _Stepped(s, tr, orig, raw, k, sync)

    def explained(
        self,
        spec_pre: Mapping[str, np.ndarray],
        pinned: set[tuple[str, tuple[int, ...]]],
        st: _Stepped,
        action: Any,
        bad: set[str],
        tol: float,
        include_base: bool = False,
    ) -> bool:
        """Is the difference a rounding at a threshold: does the spec's step from `spec_pre` with one float field
        moved by `tol` (relative) or 1 ulp reproduce the original on every quantity that differed, by a jump (a
        float quantity moves by over JUMP times the tolerance: a small steady error is never excused), while every
        pinned field keeps its value after the step?"""
        if not self.floats:
            return False
        base = {name: np.asarray(got) for name, _, got in self.pairs(st.spec, st.tr, st.orig) if name in bad}
        base_sd = self.todict(st.spec)
        cands: list[dict[str, np.ndarray]] = [dict(spec_pre)] if include_base else []
        for f in self.floats:
            v = np.asarray(spec_pre[f])
            ft = v.dtype.type
            for at in list(np.ndindex(v.shape))[:16]:
                if (f, at) in pinned:
                    continue
                x = float(v[at])
                band = tol * (1.0 + abs(x))
                for moved in (x - band, x + band, np.nextafter(v[at], ft(-np.inf)), np.nextafter(v[at], ft(np.inf))):
                    d = dict(spec_pre)
                    nv = v.copy()
                    nv[at] = ft(moved)
                    d[f] = nv
                    cands.append(d)
        for d in cands:
            try:
                pre = self.loose.state_from_dict(d)
                s, _, _ = self.spec_step(self.loose, pre, action, st.key, st.orig)
            except SpecRuntimeError:
                continue
            if self.mismatches(s, st.tr, st.orig, tol, only=bad):
                continue
            sd = self.todict(s)
            if any(np.asarray(sd[f])[at] != np.asarray(base_sd[f])[at] for f, at in pinned):
                continue
            jumped = True
            for name, _, got in self.pairs(s, st.tr, st.orig):
                b = base.get(name)
                if b is not None and b.dtype.kind == "f":
                    g = np.asarray(got, np.float64)
                    jumped &= bool(np.any(np.abs(g - b) > JUMP * tol * (1.0 + np.abs(b))))
            if jumped:
                return True
        return False

    def judge(
        self,
        check: AgainstCheck,
        st: _Stepped,
        spec_pre: Mapping[str, np.ndarray],
        action: Any,
        where: str,
        tol: float = TOL,
        pinned: set[tuple[str, tuple[int, ...]]] | None = None,
        injected: Mapping[str, Any] | None = None,
        include_base: bool = False,
        orig_pre: Mapping[str, Any] | None = None,
    ) -> str:
        """Compare one step: "ok", "edge" (counted) or "fail" (recorded in `check`). With `orig_pre` (the state
        the original stepped from), a float difference beyond `tol` is measured against the original's own
        sensitivity there: its outputs from `orig_pre` with one float field moved 1 ulp (SENSITIVITY times the
        largest move is added to the tolerance of that step; an ill-conditioned step amplifies the spec's f32
        rounding as much as it amplifies a rounding of the input)."""
        bad = self.mismatches(st.spec, st.tr, st.orig, tol)
        if not bad:
            return "ok"
        if orig_pre is not None and any(b[0] in self._float_quantities(st) for b in bad):
            spread = self.spread(orig_pre, action, st, where)
            bad = [b for b in bad if not self._within(b[0], st, spread, tol)]
            if not bad:
                check.widened += 1
                return "ok"
        if self.explained(spec_pre, pinned or set(), st, action, {b[0] for b in bad}, tol, include_base):
            check.edges += 1
            return "edge"
        name, at, want, got = bad[0]
        note = ""
        if st.sync == "no key":
            note = f"no key among {KEY_TRIES} makes the spec's step reproduce the original's chance outcome"
        elif st.sync == "injected":
            note = "chance fields " + ", ".join(self.chance) + " copied from the original"
        check.fail(
            Divergence(
                level=check.level,
                check=check.name,
                where=where,
                quantity=name,
                index=at,
                original=want,
                spec=got,
                action=action,
                injected=dict(self.mapped(injected if injected is not None else spec_pre)),
                written_at=self.written_at(name),
                note=note,
            )
        )
        return "fail"

    def _float_quantities(self, st: _Stepped) -> dict[str, np.ndarray]:
        """The original's float-valued outputs of a step, by quantity name."""
        out = {f: np.asarray(st.orig[f]) for f in self.floats}
        out["rewards"] = np.asarray(st.tr.rewards)
        obs = st.tr.observation
        if self.compare_obs and obs is not None:
            parts = obs.items() if isinstance(obs, dict) else [("", obs)]
            for k, v in parts:
                if np.asarray(v).dtype.kind == "f":
                    out[f"observation.{k}" if k else "observation"] = np.asarray(v)
        return {k: v for k, v in out.items() if v.dtype.kind == "f"}

    def spread(self, orig_pre: Mapping[str, Any], action: Any, st: _Stepped, where: str) -> dict[str, np.ndarray]:
        """How far each float output of the original moves when one float field of `orig_pre` moves 1 ulp of the
        spec's dtype (the largest move over the fields and both directions)."""
        from envc.stats import nudge

        base = self._float_quantities(st)
        out = {k: np.zeros(np.shape(v)) for k, v in base.items()}
        start: dict[str, np.ndarray] = {
            f: np.asarray(orig_pre[f]).astype(NP_DTYPE[self.info[f].ty.dtype]) for f in self.fields
        }
        for f in self.floats:
            for direction in (1.0, -1.0):
                self.call(f"at {where} (nudged)", self.oracle.set_state, nudge(start, [f], direction))
                tr = self.call(f"at {where} (nudged)", self.oracle.step, action)
                orig, _ = self._orig_state(f"at {where} (nudged)")
                moved = self._float_quantities(_Stepped(st.spec, tr, orig, orig, st.key))
                for k, v in base.items():
                    if k in moved and np.shape(moved[k]) == np.shape(v):
                        out[k] = np.maximum(out[k], np.abs(moved[k].astype(np.float64) - v.astype(np.float64)))
        return out

    def _within(self, name: str, st: _Stepped, spread: Mapping[str, np.ndarray], tol: float) -> bool:
        if name not in spread:
            return False
        want = next(w for n, w, _ in self.pairs(st.spec, st.tr, st.orig) if n == name)
        got = next(g for n, _, g in self.pairs(st.spec, st.tr, st.orig) if n == name)
        w, g = np.asarray(want, np.float64), np.asarray(got, np.float64)
        return bool(np.all(np.abs(g - w) <= tol * (1.0 + np.abs(w)) + SENSITIVITY * spread[name]))

    def record_key(self, st: _Stepped, where: str) -> None:
        if st.sync == "key" and len(self.tape) < 10_000:
            self.tape.append({"where": where, "key": [int(st.key[0]), int(st.key[1])]})

    # ---- episodes of the original -------------------------------------------------------------------------
    def synced_start(self, seed: int, key: rng.Key) -> tuple[Transition, dict[str, np.ndarray]]:
        """The original's reset with `seed`, and the spec's state holding it (reset-time chance injected)."""
        tr = self.call(f"on reset(seed={seed})", self.oracle.reset, seed)
        orig, _ = self._orig_state(f"after reset(seed={seed})")
        base = self.env.state_to_dict(self.env.init(key))
        return tr, self.inject(base, orig)


# ---- levels -----------------------------------------------------------------------------------------------------
def level1(run: Against, episodes: int) -> list[AgainstCheck]:
    """The original's own states satisfy the spec's invariants and declared bounds; a legal action while not done."""
    spec = run.spec
    inv = AgainstCheck("L1", "invariants hold on the original's states")
    bounds = AgainstCheck("L1", "the original's states within the declared field bounds")
    obs = AgainstCheck("L1", "the original's observations: declared shapes and bounds")
    live = AgainstCheck("L1", "a legal action in every non-terminal state of the original")
    declared = [f for f in run.fields if run.info[f].low is not None or run.info[f].high is not None]
    obs_info = {o.name: o for o in spec.obs_fields}
    key = rng.key_from_seed(run.seed)
    for ep in range(episodes):
        key, k = rng.split(key)
        tr, d = run.synced_start(run.seed + ep, k)
        for t in range(run.max_steps + 1):
            where = f"episode {ep} step {t}"
            s = run.loose.state_from_dict(d)
            if not (tr.terminated or tr.truncated):
                run.pool.append(d)
            inv.cases += 1
            broken = run.ref.invariants(s)
            if broken:
                inv.fail(f"{where}: invariant '{broken[0]}' is false in the original's state {_mapped(run, d)}")
            if declared:
                bounds.cases += 1
                for f in declared:
                    fi = run.info[f]
                    v = np.asarray(d[f], np.float64)
                    lo = -np.inf if fi.low is None else float(np.float32(fi.low))
                    hi = np.inf if fi.high is None else float(np.float32(fi.high))
                    if bool(np.any(v < lo) or np.any(v > hi)):
                        at = f"{fi.span.path}:{fi.span.line}"
                        bounds.fail(f"{where}: field '{f}' = {_show(d[f])} outside [{fi.low}, {fi.high}] ({at})")
                        break
            obs.cases += 1
            theirs = tr.observation if tr.observation is not None else s.observation
            parts = theirs.items() if isinstance(theirs, dict) else [(spec.obs_fields[0].name, theirs)]
            for name, arr in parts:
                o = obs_info.get(name)
                a = np.asarray(arr)
                if o is None or a.shape != o.ty.shape:
                    obs.fail(f"{where}: observation '{name}' has shape {list(a.shape)}, declared "
                             f"{list(o.ty.shape) if o else 'nothing'}")  # fmt: skip
                    break
                low, high = o.declared()
                lo = -np.inf if low is None else np.float32(low).astype(np.float64)
                hi = np.inf if high is None else np.float32(high).astype(np.float64)
                if a.dtype.kind in "fiu" and bool(np.any(a < lo) or np.any(a > hi)):
                    obs.fail(f"{where}: observation '{name}' {_show(a)} outside [{o.low}, {o.high}]")
                    break
            done = tr.terminated or tr.truncated
            if spec.box is None and not done:
                live.cases += 1
                mask = tr.legal_action_mask if tr.legal_action_mask is not None else s.legal_action_mask
                if not np.any(mask):
                    live.fail(f"{where}: no legal action in the original's state {_mapped(run, d)}")
            if done or t == run.max_steps:
                break
            a = run.action(tr.legal_action_mask if tr.legal_action_mask is not None else s.legal_action_mask)
            tr = run.call(f"at {where}", run.oracle.step, a)
            orig, _ = run._orig_state(f"at {where}")
            key, k = rng.split(key)
            nxt = run.loose.state_to_dict(run.spec_step(run.loose, s, a, k, orig)[0])
            d = run.inject(nxt, orig)
            d["terminated"], d["truncated"] = np.asarray(tr.terminated), np.asarray(tr.truncated)
    out = [inv, obs, live]
    if declared:
        out.insert(1, bounds)
    return [c for c in out if c.cases or c is inv]


def _mapped(run: Against, d: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in run.mapped(d).items()) + "}"


def _fuzzed(run: Against, base: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`base` with its float fields, and its int fields with declared bounds, redrawn inside the declared bounds."""
    fz = fuzz_state(run.spec, base, run.gen)
    d = {k: np.array(v, copy=True) for k, v in base.items()}
    for f in run.fields:
        fi = run.info[f]
        if f in ("step_count", "current_player"):
            continue
        if _is_float(fi.ty.dtype):
            d[f] = fz[f]
        elif fi.ty.dtype.is_int and fi.low is not None and fi.high is not None:
            lo, hi = math.ceil(fi.low), math.floor(fi.high)
            d[f] = run.gen.integers(lo, hi, size=fi.ty.shape, endpoint=True).astype(d[f].dtype)
    return d


def _spec_pool(run: Against, n: int) -> list[dict[str, np.ndarray]]:
    """Non-terminal states of the spec's own random rollouts."""
    out: list[dict[str, np.ndarray]] = []
    key = rng.key_from_seed(run.seed + 7)
    for _ in range(max(1, n)):
        key, k = rng.split(key)
        s = run.ref.init(k)
        for _t in range(run.max_steps):
            if s.terminated or s.truncated:
                break
            out.append(run.ref.state_to_dict(s))
            key, k = rng.split(key)
            s = run.ref.step(s, run.action(s.legal_action_mask), k)
        if len(out) >= 4 * n:
            break
    run.gen.shuffle(out)  # type: ignore[arg-type]
    return out[:n]


def _actions_for(run: Against, d: Mapping[str, np.ndarray], many: bool) -> list[Any]:
    box = run.spec.box
    if box is not None:
        lo, hi = np.float32(box.low), np.float32(box.high)
        zero = np.clip(np.zeros(box.shape, np.float32), lo, hi)
        return [zero, run.action(None)] if many else [run.action(None)]
    mask = run.loose.state_from_dict(d).legal_action_mask
    legal = [int(a) for a in np.flatnonzero(mask)]
    if many and len(legal) <= 8:
        return legal
    return [run.action(mask)]


def level2(run: Against, states: int) -> list[AgainstCheck]:
    """One step from injected states, every mapped field and output compared."""
    from_orig = AgainstCheck("L2", "one step from the original's rollout states")
    from_spec = AgainstCheck("L2", "one step from the spec's rollout states")
    fuzzed = AgainstCheck("L2", "one step from states fuzzed inside the declared bounds")
    edge = AgainstCheck("L2", "one step from boundary values of the spec's constants")
    if len(run.pool) < states:
        level1(run, max(1, states // 20))
    orig_pool = list(run.pool)
    run.gen.shuffle(orig_pool)  # type: ignore[arg-type]
    spec_pool = _spec_pool(run, states)
    key = rng.key_from_seed(run.seed + 11)
    fuzz_pool = [_fuzzed(run, orig_pool[i % len(orig_pool)] if orig_pool else spec_pool[i]) for i in range(states)]
    skipped: dict[str, int] = {}
    for check, pool in ((from_orig, orig_pool[:states]), (from_spec, spec_pool), (fuzzed, fuzz_pool)):
        for i, d in enumerate(pool):
            if check is fuzzed:
                broken = run.loose.invariants(run.loose.state_from_dict(d))
                if broken:  # a fuzzed state outside the spec's declared domain: the spec makes no claim there
                    skipped[broken[0]] = skipped.get(broken[0], 0) + 1
                    continue
            for a in _actions_for(run, d, many=False):
                key, k = rng.split(key)
                check.cases += 1
                where = f"state {i}"
                try:
                    loose = check is fuzzed and run.env is run.ref  # a fuzzed state may be no reachable one
                    st = run.both(d, d, a, k, f"at L2 ({check.name}) {where}", env=run.loose if loose else None)
                except SpecRuntimeError as e:
                    check.fail(f"{where}: the spec raises on the injected state {_mapped(run, d)}: {e}")
                    continue
                run.record_key(st, where)
                run.judge(check, st, d, a, where, orig_pre=d)
    # boundary values: each compared field element at, and one value either side of, each constant it meets
    quiet = run.inject(run.env.state_to_dict(run.env.init(rng.key_from_seed(run.seed))), {})
    for f in run.floats:
        fi = run.info[f]
        lo = -np.inf if fi.low is None else fi.low
        hi = np.inf if fi.high is None else fi.high
        quiet[f] = np.clip(np.zeros(fi.ty.shape), lo, hi).astype(quiet[f].dtype)
    outside: dict[str, int] = {}
    bases = [("quiet state", quiet)] + [(f"original's state {j}", orig_pool[j]) for j in range(min(2, len(orig_pool)))]
    i = 0
    for (name, at), consts in sorted(run.bounds.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if name not in run.compared:
            continue
        dtype = np.dtype(NP_DTYPE[run.info[name].ty.dtype])
        if dtype.kind == "b":
            continue
        fi = run.info[name]
        lo_v = max(
            -math.inf if fi.low is None else fi.low, -math.inf if dtype.kind == "f" else fi.ty.dtype.int_range[0]
        )
        hi_v = min(
            math.inf if fi.high is None else fi.high, math.inf if dtype.kind == "f" else fi.ty.dtype.int_range[1]
        )
        members = next((len(e.members) for e in run.spec.enums if e.name == fi.ty.enum), None)
        if members is not None:  # an enum field holds member indices only
            lo_v, hi_v = max(lo_v, 0), min(hi_v, members - 1)
        for c in sorted(consts):
            for v in _neighbours(c, dtype):
                if not lo_v <= v <= hi_v and not (dtype.kind == "f" and lo_v <= float(dtype.type(v)) <= hi_v):
                    continue  # outside the declared bounds: a state the original need not accept
                for label, base in bases:
                    spec_pre = {k: np.array(x, copy=True) for k, x in base.items()}
                    orig_pre: dict[str, Any] = {f: np.array(spec_pre[f], copy=True) for f in run.fields}
                    if dtype.kind == "f":
                        orig_pre[name] = orig_pre[name].astype(np.float64)
                        orig_pre[name][at] = v  # exact: the constant as declared, at the original's precision
                        spec_pre[name][at] = dtype.type(v)
                    else:
                        orig_pre[name][at] = int(v)
                        spec_pre[name][at] = int(v)
                    broken = run.loose.invariants(run.loose.state_from_dict(spec_pre))
                    if broken:  # outside the spec's declared domain: no step of the spec starts there
                        outside[broken[0]] = outside.get(broken[0], 0) + 1
                        continue
                    for a in _actions_for(run, spec_pre, many=True):
                        key, k = rng.split(key)
                        edge.cases += 1
                        shown = repr(v) if dtype.kind == "f" else str(int(v))
                        where = f"boundary state {i} ({name}{list(at) if at else ''} = {shown} in the {label})"
                        i += 1
                        try:
                            st = run.both(spec_pre, orig_pre, a, k, f"at L2 {where}")
                        except SpecRuntimeError as e:
                            edge.fail(f"{where}: the spec raises: {e}")
                            continue
                        pinned: set[tuple[str, tuple[int, ...]]] = set()
                        if dtype.kind == "f" and float(np.asarray(st.raw[name])[at]) == v == c:
                            pinned.add((name, at))
                        run.judge(edge, st, spec_pre, a, where, pinned=pinned, injected=orig_pre, orig_pre=orig_pre)
    for inv, n in sorted(skipped.items()):
        fuzzed.notes.append(f"{n} fuzzed state(s) skipped: they break invariant '{inv}'")
    for inv, n in sorted(outside.items()):
        edge.notes.append(f"{n} boundary state(s) skipped: they break invariant '{inv}'")
    if edge.cases == 0 and not outside:
        edge.notes.append("the spec compares no mapped field with a constant")
    return [c for c in (from_orig, from_spec, fuzzed, edge) if c.cases or c is edge]


def lockstep(run: Against, episodes: int) -> AgainstCheck:
    """L3 (a): the original's episodes; before each step the spec is re-synced to the original's state."""
    check = AgainstCheck("L3", f"(a) {episodes} lockstep episodes, re-synced from the original every step")
    key = rng.key_from_seed(run.seed + 21)
    steps = 0
    for ep in range(episodes):
        key, k = rng.split(key)
        tr, d = run.synced_start(run.seed + 1000 + ep, k)
        check.cases += 1
        for t in range(run.max_steps):
            if tr.terminated or tr.truncated:
                break
            mask = tr.legal_action_mask if tr.legal_action_mask is not None else None
            if mask is None and run.spec.box is None:
                mask = run.loose.state_from_dict(d).legal_action_mask
            a = run.action(mask)
            key, k = rng.split(key)
            where = f"episode {ep} step {t + 1}"
            try:  # floats: the original too steps from the f32 state (its own is within half an ulp of it)
                st = run.both(d, d if run.floats else None, a, k, f"at L3 {where}")
            except SpecRuntimeError as e:
                check.fail(f"{where}: the spec raises on the original's state {_mapped(run, d)}: {e}")
                break
            steps += 1
            run.record_key(st, where)
            if run.judge(check, st, d, a, where, orig_pre=d if run.floats else None) == "fail":
                break
            tr = st.tr
            d = run.inject(run.env.state_to_dict(st.spec), st.orig)
    check.notes.append(f"{steps} steps compared")
    return check


def _own_horizon(
    run: Against,
    ep: int,
    start: Mapping[str, np.ndarray],
    actions: Sequence[Any],
    trace: Sequence[tuple[Transition, dict[str, np.ndarray]]],
) -> int | None:
    """The step at which the original's own 1-ulp twins part from its run beyond TOL (envc.stats.own_horizon:
    its start nudged up, down, and under 1-ulp noise before every step); None: they never do."""
    from envc.stats import own_horizon

    def outcome(tr: Transition, o: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {**o, "terminated": np.asarray(tr.terminated), "truncated": np.asarray(tr.truncated)}

    def step(state: Mapping[str, np.ndarray], t: int) -> dict[str, np.ndarray]:
        what = f"at L3 (b) episode {ep} (a 1-ulp twin)"
        run.call(what, run.oracle.set_state, {f: state[f] for f in run.fields})
        tr = run.call(what, run.oracle.step, actions[t])
        return outcome(tr, run._orig_state(what)[0])

    first = {**start, "terminated": np.asarray(False), "truncated": np.asarray(False)}
    base = [first] + [outcome(tr, o) for tr, o in trace]
    h = own_horizon(step, first, len(actions), run.floats, rtol=TOL, atol=TOL, base=base)
    return h.step


def free_running(run: Against, episodes: int) -> AgainstCheck:
    """L3 (b): the same actions without re-sync; floats compared up to the original's own divergence horizon."""
    check = AgainstCheck("L3", f"(b) {episodes} free-running episodes, same actions")
    key = rng.key_from_seed(run.seed + 31)
    horizons: list[int] = []  # where the original's 1-ulp twins parted from its own run
    whole = 0  # episodes where it never did
    steps = 0
    ended_at_edge = 0
    for ep in range(episodes):
        key, k = rng.split(key)
        tr0, d0 = run.synced_start(run.seed + 2000 + ep, k)
        start = {f: d0[f] for f in run.fields}
        # the original's episode from its (f32) start, recording the actions
        run.call("at L3 (b)", run.oracle.set_state, start)
        tr = tr0
        actions: list[Any] = []
        trace: list[tuple[Transition, dict[str, np.ndarray]]] = []
        s_mask = run.loose.state_from_dict(d0).legal_action_mask
        for _ in range(run.max_steps):
            if tr.terminated or tr.truncated:
                break
            mask = tr.legal_action_mask if tr.legal_action_mask is not None else s_mask
            a = run.action(mask if run.spec.box is None else None)
            tr = run.call(f"at L3 (b) episode {ep}", run.oracle.step, a)
            actions.append(a)
            trace.append((tr, run._orig_state(f"at L3 (b) episode {ep}")[0]))
        horizon = len(actions)
        if run.floats:
            parted = _own_horizon(run, ep, start, actions, trace)
            if parted is None:
                whole += 1
            else:
                horizon = parted - 1
                horizons.append(parted)
        check.cases += 1
        s = run.env.state_from_dict(d0)
        for t in range(horizon):
            a = actions[t]
            tr, o = trace[t]
            key, k = rng.split(key)
            where = f"episode {ep} step {t + 1}"
            try:
                s_next, used, sync = run.spec_step(run.env, s, a, k, o)
            except SpecRuntimeError as e:
                check.fail(f"{where}: the spec raises: {e}")
                break
            steps += 1
            st = _Stepped(s_next, tr, o, o, used, sync)
            # an edge is judged from the original's own state before the step (the spec's is within FREE_TOL)
            prev = run.inject(run.env.state_to_dict(s), trace[t - 1][1] if t else start)
            failed = check.failed
            verdict = run.judge(check, st, prev, a, where, tol=FREE_TOL if run.floats else TOL, injected=start,
                                include_base=True)  # fmt: skip
            if check.failed > failed and check.first is not None and check.first.where == where:
                check.first.note = (check.first.note + "; " if check.first.note else "") + (
                    f"free running from that start; the original's state before this step {_mapped(run, prev)}"
                )
            if verdict != "ok":
                ended_at_edge += verdict == "edge"
                break
            s = s_next
    check.notes.append(f"{steps} steps compared")
    if run.floats:
        h = np.asarray(horizons or [0])
        summary = (
            f"parted from its run in {len(horizons)} episode(s) (median step {int(np.median(h))}, "
            f"first {int(h.min())}), compared up to there"
            if horizons
            else "never parted from its run"
        )
        check.notes.append(
            f"the original's 1-ulp twins {summary}; {whole} episode(s) compared whole; tolerance {FREE_TOL:g}"
        )
    if ended_at_edge:
        check.notes.append(f"{ended_at_edge} episode(s) parted at a threshold within rounding (not failed)")
    return check


def statistical(run: Against, episodes: int, alpha: float) -> AgainstCheck:
    """L3 (c): episode return and length distributions of each side's own episodes, two-sample tests."""
    from envc.stats import compare_samples

    check = AgainstCheck("L3", f"(c) return and length distributions, {episodes} episodes each side")
    ret_o: list[list[float]] = [[] for _ in range(run.spec.players)]
    ret_s: list[list[float]] = [[] for _ in range(run.spec.players)]
    len_o: list[float] = []
    len_s: list[float] = []
    key = rng.key_from_seed(run.seed + 41)
    for ep in range(episodes):
        tr = run.call("at L3 (c)", run.oracle.reset, run.seed + 3000 + ep)
        total = np.zeros(run.spec.players)
        n = 0
        while not (tr.terminated or tr.truncated) and n < run.max_steps:
            tr = run.call("at L3 (c)", run.oracle.step, run.action(tr.legal_action_mask))
            total += np.asarray(tr.rewards, np.float64)
            n += 1
        for p in range(run.spec.players):
            ret_o[p].append(float(total[p]))
        len_o.append(n)
        key, k = rng.split(key)
        s = run.env.init(k)
        total = np.zeros(run.spec.players)
        n = 0
        while not (bool(s.terminated) or bool(s.truncated)) and n < run.max_steps:
            key, k = rng.split(key)
            s = run.env.step(s, run.action(np.asarray(s.legal_action_mask) if run.spec.box is None else None), k)
            total += np.asarray(s.rewards, np.float64)
            n += 1
        for p in range(run.spec.players):
            ret_s[p].append(float(total[p]))
        len_s.append(n)
    for p in range(run.spec.players):
        label = "episode return" + (f" (player {p})" if run.spec.players > 1 else "")
        check.stats.append(compare_samples(label, ret_o[p], ret_s[p], alpha))
    check.stats.append(compare_samples("episode length", len_o, len_s, alpha))
    check.cases = 2 * episodes
    for c in check.stats:
        check.notes.append(c.describe())
        if not c.passed:
            check.fail(f"{c.quantity}: the distributions differ: {c.describe()}")
    return check


def verify_against(
    spec: ir.SpecIR,
    oracle: Oracle,
    target: str = "",
    levels: Sequence[str] = LEVELS,
    episodes: int = 100,
    states: int = 200,
    stat_episodes: int = 200,
    seed: int = 0,
    max_steps: int = 1000,
    alpha: float = 0.01,
    env: Any = None,
    progress: Callable[[str], None] | None = None,
) -> AgainstReport:
    """Run the requested levels of `spec` (on `env`, default the reference interpreter) against `oracle`."""
    t0 = time.perf_counter()
    bad = [lv for lv in levels if lv not in LEVELS]
    if bad:
        raise ValueError(f"unknown level {bad[0]!r} (L1, L2, L3)")
    run = Against(spec, oracle, env=env, seed=seed, max_steps=max_steps)
    checks: list[AgainstCheck] = []
    for level in LEVELS:
        if level not in levels:
            continue
        if progress is not None:
            progress(level)
        if level == "L1":
            checks += level1(run, max(1, episodes // 5))
        elif level == "L2":
            checks += level2(run, states)
        else:
            checks.append(lockstep(run, episodes))
            checks.append(free_running(run, episodes))
            if stat_episodes > 0:
                if progress is not None:
                    progress("L3 (c)")
                checks.append(statistical(run, stat_episodes, alpha))
    conversions = [
        {"field": c.field, "source": c.source, "from": c.from_dtype, "to": c.to_dtype, "lossy": c.lossy}
        for c in oracle.conversions
    ]
    return AgainstReport(
        spec=spec.name,
        path=spec.path,
        target=target,
        conversions=conversions,
        checks=checks,
        seconds=time.perf_counter() - t0,
        key_searches=run.key_searches,
        chance_tape=run.tape,
    )
