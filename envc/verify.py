"""Hierarchical verification of a backend against the reference interpreter (DESIGN.md levels L1-L3).

L1 properties on the backend's own reachable states; L2 one-step differential from injected states
(reference rollouts and fuzzed states); L3 whole episodes with matched keys and actions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from envc import ir, rng
from envc.calls import check_callables, free_slots_zero
from envc.diagnostics import SpecRuntimeError
from envc.interpret import ReferenceEnv
from envc.stats import compare_samples, far, parting_rank_test, twin_horizons
from envc.symmetry import swap_players, tell_apart
from envc.visibility import Visibility, element_name

ATOL, RTOL = 1e-6, 1e-5
_MEMO_CAP = 20_000  # answers kept per kind (injected states, steps, invariants), then that memo starts again
_Dict = dict[str, np.ndarray]


@dataclass
class Check:
    """The outcome of one property at one level (a plain dataclass of JSON-friendly values)."""

    level: str
    name: str
    cases: int = 0
    failures: list[str] = field(default_factory=list)
    failed: int = 0  # every failure recorded, not only the first few kept in `failures`
    unit: str = "cases"  # what `cases` and `failed` count (L3: episodes)
    figures: dict[str, float | int | None] = field(default_factory=dict)  # measured numbers, e.g. horizons

    @property
    def passed(self) -> bool:
        """No failure recorded."""
        return not self.failures and self.failed == 0

    def fail(self, message: str) -> None:
        """Record a failure (all are counted; the first few are kept)."""
        self.failed += 1
        if len(self.failures) < 5:
            self.failures.append(message)

    def case(self, message: str | None) -> None:
        """Score one case by `_one_step`'s answer: None passes, "" is not scored (last-bit float ties), else fails."""
        if message is None:
            self.cases += 1
        elif message:
            self.cases += 1
            self.fail(message)


def writers(spec: ir.SpecIR) -> dict[str, list[str]]:
    """For each storage field, `path:line` of the statements that write it (to point at the rule)."""
    out: dict[str, list[str]] = {}

    def add(name: str, span: Any) -> None:
        where = f"{span.path}:{span.line}"
        lst = out.setdefault(name, [])
        if where not in lst:
            lst.append(where)

    def walk(stmts: tuple[ir.Stmt, ...]) -> None:
        for s in stmts:
            if isinstance(s, ir.Assign) and s.target.space == "state":
                add(s.target.name, s.span)
            elif isinstance(s, ir.ZoneOp):
                add(s.zone.name, s.span)
                add(s.zone.name + ".count", s.span)
                if s.out is not None and s.out.space == "state":
                    add(s.out.name, s.span)
            elif isinstance(s, ir.IfS):
                walk(s.then)
                walk(s.orelse)
            elif isinstance(s, ir.Switch):
                for _, b in s.cases:
                    walk(b)
                walk(s.default)
            elif isinstance(s, ir.ForS):
                walk(s.body)

    walk(spec.reset)
    for a in spec.actions:
        walk(a.effect)
    for r in spec.rules:
        walk(r.body)
    for c in spec.callables:
        walk(c.body)
    if spec.box is not None:
        walk(spec.box.effect)
    return out


def diff(
    spec: ir.SpecIR, want: dict[str, np.ndarray], got: dict[str, np.ndarray], where: str, wrote: dict[str, list[str]]
) -> str | None:
    """The first differing field, with the spec lines that write it; None if equal."""
    for k, w in want.items():
        g = got.get(k)
        if g is None or np.shape(g) != np.shape(w):
            return f"{where}: field '{k}' missing or of another shape"
        w, g = np.asarray(w), np.asarray(g)
        if w.dtype.kind == "f":
            bad = np.argwhere(np.atleast_1d(far(g, w, RTOL, ATOL)))
        else:
            bad = np.argwhere(np.atleast_1d(np.asarray(g != w).reshape(np.shape(w))))
        if len(bad):
            at = tuple(int(i) for i in bad[0]) if len(bad) and np.ndim(w) else ()
            rule = ", ".join(wrote.get(k.split("observation.")[-1], [])[:3]) or "derived"
            wv = w[at] if at else w
            gv = g[at] if at else g
            return f"{where}: field '{k}'{list(at) if at else ''} reference {wv} backend {gv} (written at {rule})"
    return None


def fuzz_state(spec: ir.SpecIR, base: dict[str, np.ndarray], gen: np.random.Generator) -> dict[str, np.ndarray]:
    """A state with every field redrawn: small values mostly (index-like), zone counts within capacity."""
    d = {k: np.array(v, copy=True) for k, v in base.items()}
    enums = {e.name: len(e.members) for e in spec.enums}
    for f in spec.fields:
        shape = f.ty.shape
        if f.name == "step_count":
            d[f.name] = np.asarray(gen.integers(0, 50), np.int32)
            continue
        if f.name == "current_player":
            d[f.name] = np.asarray(gen.integers(0, spec.players), np.int32)
            continue
        if f.zone is not None and f.name.endswith(".count"):
            cap = spec.field(f.zone).ty.shape[-1]
            d[f.name] = gen.integers(0, cap + 1, size=shape).astype(np.int32)
            continue
        dt = f.ty.dtype
        v: np.ndarray
        if f.ty.enum is not None:
            v = gen.integers(0, enums[f.ty.enum], size=shape)
        elif dt is ir.DType.BOOL:
            v = gen.integers(0, 2, size=shape).astype(bool)
        elif dt.is_float:
            lo = f.low if f.low is not None else -1.0
            hi = f.high if f.high is not None else 1.0
            v = gen.uniform(lo, hi, size=shape)
        else:
            lo, hi = dt.int_range
            v = np.where(
                gen.random(size=shape) < 0.9,
                gen.integers(-1, 9, size=shape),
                gen.integers(lo, hi, size=shape, endpoint=True),
            )
        d[f.name] = np.asarray(v).astype(d[f.name].dtype)
    free_slots_zero(spec, d)
    d["rewards"] = np.zeros(spec.players, np.float32)
    d["terminated"] = np.asarray(False)
    d["truncated"] = np.asarray(False)
    return d


def _rollout(env: Any, key: rng.Key, gen: np.random.Generator, max_steps: int) -> Iterator[Any]:
    """States of one random-legal-action episode; it stops early where no action is legal (a spec bug)."""
    s = env.init(key)
    yield s
    for _ in range(max_steps):
        if bool(s.terminated) or bool(s.truncated) or _stuck(env.spec, s):
            return
        key, k = rng.split(key)
        s = env.step(s, _action(env.spec, np.asarray(s.legal_action_mask), gen), k)
        yield s


def _stuck(spec: ir.SpecIR, state: Any) -> bool:
    """A discrete spec's state with no legal action."""
    return spec.box is None and not np.any(np.asarray(state.legal_action_mask))


def _action(spec: ir.SpecIR, mask: np.ndarray, gen: np.random.Generator) -> Any:
    if spec.box is not None:
        return gen.uniform(spec.box.low, spec.box.high, spec.box.shape).astype(np.float32)
    return int(gen.choice(np.flatnonzero(mask)))


def _obs_parts(obs: Any) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in obs.items()} if isinstance(obs, dict) else {"": np.asarray(obs)}


def _with_hidden(
    spec: ir.SpecIR,
    d: dict[str, np.ndarray],
    source: dict[str, np.ndarray],
    p: int,
    masks: Mapping[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """`d` with every element player `p` cannot see taken from `source`: `masks` (field -> hidden elements, from
    `Visibility.hidden`) or, by default, the fixed declarations (`none` fields, other players' rows of `owner` ones)."""
    if masks is None:
        masks = Visibility(spec).hidden(d, p)
    out = {k: np.array(v, copy=True) for k, v in d.items()}
    for name, m in masks.items():
        out[name] = np.where(m, np.asarray(source[name]), out[name]).astype(out[name].dtype)
    return out


def _runtime_params(spec: ir.SpecIR, env: Any) -> dict[str, Any]:
    """The runtime params `env` runs with (a mapping or an object with one attribute per param), for the rules."""
    got = getattr(env, "params", None)
    out: dict[str, Any] = {}
    for prm in spec.params:
        if prm.static or got is None:
            continue
        v = got.get(prm.name) if isinstance(got, Mapping) else getattr(got, prm.name, None)
        if v is not None:
            out[prm.name] = np.asarray(v).item()
    return out


def _leak_blame(
    spec: ir.SpecIR,
    env: Any,
    vis: Visibility,
    d: dict[str, np.ndarray],
    source: dict[str, np.ndarray],
    masks: Mapping[str, np.ndarray],
    p: int,
    want: dict[str, np.ndarray],
) -> str:
    """The hidden field, and element where one alone does it, whose value changes player `p`'s observation."""

    def changes(part: Mapping[str, np.ndarray]) -> bool:
        try:
            got = _obs_parts(env.observe(env.state_from_dict(_with_hidden(spec, d, source, p, part)), p))
        except SpecRuntimeError:
            return False
        return any(not np.array_equal(w, got[n]) for n, w in want.items())

    for name, m in masks.items():
        if not changes({name: m}):
            continue
        differ = np.argwhere(m & np.asarray(np.asarray(source[name]) != np.asarray(d[name])).reshape(m.shape))
        for pos in differ[:64]:
            at = tuple(int(i) for i in pos)
            one = np.zeros_like(m)
            one[at] = True
            if changes({name: one}):
                return f"{element_name(name, at)} ({vis.reason(name, at, p)})"
        return f"{name} ({vis.reason(name, (), p)})"
    return "several hidden fields together"


def _moved_visibility(
    vis: Visibility, masks: Mapping[str, np.ndarray], d2: dict[str, np.ndarray], p: int
) -> str | None:
    """A visibility rule whose answer changed when only data hidden from `p` changed (so it reveals that data)."""
    try:
        again = vis.hidden(d2, p)
    except SpecRuntimeError:
        return None
    for f in vis.spec.fields:
        if f.visible != "rule" or f.visible_rule is None:
            continue
        none = np.zeros(f.ty.shape, np.bool_)
        a, b = masks.get(f.name, none), again.get(f.name, none)
        if not np.array_equal(a, b):
            at = tuple(int(i) for i in np.argwhere(a != b)[0])[: len(f.visible_rule.element)]
            return (
                f"the visibility of {element_name(f.name, at)} to player {p} (`{f.visible_rule.text}`) changes with "
                "data hidden from that player; a visibility rule may read only what the player sees"
            )
    return None


def level1(spec: ir.SpecIR, env: Any, episodes: int, seed: int, max_steps: int) -> list[Check]:
    """Properties on the backend's own reachable states."""
    inv, shapes, live, det, leak = (
        Check("L1", n)
        for n in (
            "invariants hold",
            "observation shapes and bounds",
            "legal action when not done",
            "determinism",
            "no hidden-information leak",
        )
    )
    gen = np.random.default_rng(seed)
    key = rng.key_from_seed(seed)
    obs_info = {o.name: o for o in spec.obs_fields}
    hidden = [f for f in spec.fields if f.visible != "all"]
    vis = Visibility(spec, _runtime_params(spec, env))
    dynamic = any(f.visible == "rule" for f in spec.fields)
    loose = Visibility(spec, _runtime_params(spec, env), strict=False) if dynamic else vis
    donors: list[dict[str, np.ndarray]] = []
    for ep in range(episodes):
        key, k = rng.split(key)
        for t, s in enumerate(_rollout(env, k, gen, max_steps)):
            where = f"episode {ep} step {t}"
            inv.cases += 1
            for name in env.invariants(s):
                inv.fail(f"{where}: invariant '{name}' is false")
            shapes.cases += 1
            for name, arr in _obs_parts(s.observation).items():
                o = obs_info[name] if name else spec.obs_fields[0]
                if arr.shape != o.ty.shape:
                    shapes.fail(f"{where}: observation '{o.name}' has shape {arr.shape}, declared {o.ty.shape}")
                low, high = o.declared()
                below = low is not None and bool(np.any(arr < low))
                if below or (high is not None and bool(np.any(arr > high))):
                    shapes.fail(f"{where}: observation '{o.name}' outside [{o.low}, {o.high}]")
            if spec.box is None and not (bool(s.terminated) or bool(s.truncated)):
                live.cases += 1
                if not np.any(np.asarray(s.legal_action_mask)):
                    live.fail(f"{where}: no legal action in a non-terminal state")
            if hidden and t % 3 == 0:
                d = env.state_to_dict(s)
                donors.append(d)
                for p in range(spec.players):
                    want = _obs_parts(env.observe(s, p))
                    try:
                        masks = vis.hidden(d, p)  # what p cannot see in this state
                    except SpecRuntimeError as e:
                        leak.fail(f"{where}: a visibility rule fails for player {p}: {e}")
                        masks = None
                    # what p cannot see, taken from another reachable state, then redrawn at random
                    other = donors[int(gen.integers(len(donors)))]
                    for source in (other, fuzz_state(spec, d, gen)):
                        if masks is None:
                            continue
                        d2 = _with_hidden(spec, d, source, p, masks)
                        try:
                            got = _obs_parts(env.observe(env.state_from_dict(d2), p))
                        except SpecRuntimeError:
                            continue  # a redrawn state may be unreachable; the strict reference rejects it
                        leak.cases += 1
                        for name, w in want.items():
                            if not np.array_equal(w, got[name]):
                                label = name or spec.obs_fields[0].name
                                if len(leak.failures) >= 5:  # only the first few are kept: count, skip the search
                                    leak.fail(f"{where}: player {p}'s observation '{label}' changes with hidden fields")
                                    break
                                blame = _leak_blame(spec, env, vis, d, source, masks, p, want)
                                leak.fail(
                                    f"{where}: player {p}'s observation '{label}' changes with hidden fields: {blame}"
                                )
                                break
                        if dynamic:
                            moved = _moved_visibility(loose, masks, d2, p)
                            if moved is not None:
                                leak.fail(f"{where}: {moved}")
        det.cases += 1
        a, b = env.init(k), env.init(k)
        if diff(spec, env.state_to_dict(a), env.state_to_dict(b), f"episode {ep} init", {}) is not None:
            det.fail(f"episode {ep}: init with the same key differs")
        if spec.box is None and not bool(a.terminated):
            act = _action(spec, np.asarray(a.legal_action_mask), gen)
            key, k2 = rng.split(key)
            m = diff(
                spec,
                env.state_to_dict(env.step(a, act, k2)),
                env.state_to_dict(env.step(b, act, k2)),
                f"episode {ep} step",
                {},
            )
            if m is not None:
                det.fail(f"same state, action and key give different results: {m}")
    if not hidden:
        leak.cases = 0
    return [inv, shapes, live, det, leak] + level1_contract(spec, env, episodes, seed, max_steps)


class _Loose(ReferenceEnv):
    """The loose reference of one spec, kept for the process with its answers about injected states: `envc mutate`
    runs the same suite (same seed, so the same injected states) on every mutant, and tcg's invariants alone take
    ~1,000 reference evaluations of ~40 ms per suite. Keys are the states' bytes, so equal states share answers.
    Kept for one spec at a time."""

    _last: list[_Loose] = []  # one spec at a time: its answers are all the memory this keeps

    @classmethod
    def of(cls, spec: ir.SpecIR) -> _Loose:
        """The loose reference of `spec`, with the answers it gave in this process if it was the last one asked."""
        if not (cls._last and cls._last[0].spec is spec):
            cls._last[:] = [cls(spec)]
        return cls._last[0]

    def __init__(self, spec: ir.SpecIR, strict: bool = False):
        super().__init__(spec, strict=strict)
        self._injected: dict[bytes, _Dict | SpecRuntimeError] = {}
        self._invariants: dict[bytes, list[str] | SpecRuntimeError] = {}
        self._steps: dict[bytes, tuple[_Dict, _Dict] | SpecRuntimeError] = {}
        self._minimal: dict[bytes, list[tuple[_Dict, Any, rng.Key]]] = {}
        self._calls: dict[bytes, list[np.ndarray] | SpecRuntimeError] = {}

    def injected_of(self, d: Mapping[str, Any]) -> _Dict:
        """`d` injected, as a dict (a copy; raises as `state_from_dict` does)."""
        return _copy(_remember(self._injected, _digest(d), lambda: self.state_to_dict(self.state_from_dict(d))))

    def invariants_of(self, d: Mapping[str, Any]) -> list[str]:
        """The invariants that fail on the injected state `d` (raises as `state_from_dict` does)."""
        return list(_remember(self._invariants, _digest(d), lambda: self.invariants(self.state_from_dict(d))))

    def step_of(self, d: Mapping[str, Any], act: Any, key: rng.Key) -> tuple[_Dict, _Dict]:
        """`d` injected, and the state after stepping it with `act` and `key`, as dicts (copies)."""

        def compute() -> tuple[_Dict, _Dict]:
            return self.injected_of(d), self.state_to_dict(self.step(self.state_from_dict(d), act, key))

        injected, stepped = _remember(self._steps, _digest(d, np.asarray(act), np.asarray(key)), compute)
        return _copy(injected), _copy(stepped)

    def call_of(self, name: str, d: Mapping[str, Any], args: list[Any], key: rng.Key) -> list[np.ndarray]:
        """`ReferenceEnv.call`, remembered (raises as it does)."""
        k = _digest(d, name.encode(), *(np.asarray(a) for a in args), np.asarray(key))
        return [np.array(x, copy=True) for x in _remember(self._calls, k, lambda: self.call(name, d, args, key))]

    def minimal_endings(
        self, pool: list[_Dict], base: _Dict, states: int, seed: int
    ) -> list[tuple[_Dict, Any, rng.Key]]:
        """States cut down to what ends the game, each with its legal move and key: a reached or fuzzed state whose
        move ends the episode, its elements put back to their initial values (whole fields, then halves of what is
        left, down to single elements, in a random order) wherever the step still ends it with the same rewards
        (the move still legal). What is left is one line of four or one decisive card: each window of a win test
        and each reason to end shows alone, where random play and fuzzing reach it only among others.
        `_minimal_budget(spec) * states` reference steps from a fixed seed (the same states every run; kept per
        pool, so a second run costs nothing)."""
        memo_key = _digest(np.asarray([states, seed]), *pool)
        if memo_key in self._minimal:
            return self._minimal[memo_key]
        spec = self.spec
        gen, key = np.random.default_rng(seed + 16), rng.key_from_seed(seed + 16)
        storage = [f.name for f in spec.fields if f.name not in ("current_player", "step_count")]
        found: list[tuple[_Dict, Any, rng.Key]] = []
        spent, budget = 0, _minimal_budget(spec) * states

        def ends(d: _Dict, act: Any, k: rng.Key) -> np.ndarray | None:
            """The rewards of a legal move `act` from `d` that ends the episode, else None."""
            s0 = self.state_from_dict(d)
            if spec.box is None and not bool(np.asarray(s0.legal_action_mask)[act]):
                return None
            s1 = self.step(s0, act, k)
            return np.asarray(s1.rewards) if s1.terminated else None

        for i in range(8 * states):
            if spent >= budget:
                break
            d = _copy(pool[i % len(pool)]) if i % 2 == 0 and pool else fuzz_state(spec, base, gen)
            try:
                mask = np.asarray(self.state_from_dict(d).legal_action_mask)
                if spec.box is None and not np.any(mask):
                    continue
                act = _action(spec, mask, gen)
                key, k = rng.split(key)
                rewards = ends(d, act, k)
            except SpecRuntimeError:
                continue
            spent += 1
            if rewards is None:
                continue
            # put back whole fields first, then halves of what is left of each, down to single elements: a field
            # the ending does not read costs one step, a line of four in 28 discs about twenty
            chunks = [[(n, at) for at in np.ndindex(np.shape(d[n])) if d[n][at] != base[n][at]] for n in storage]
            todo = [[c[j] for j in gen.permutation(len(c))] for c in chunks if c]
            while todo and spent < budget:
                chunk = todo.pop()
                trial = _copy(d)
                for n, at in chunk:
                    trial[n][at] = base[n][at]
                free_slots_zero(spec, trial)  # a zone's count put back frees its slots
                try:
                    now = ends(trial, act, k)
                except SpecRuntimeError:
                    now = None
                spent += 1
                if now is not None and _same(now, rewards):
                    d = trial
                elif len(chunk) > 1:
                    todo += [chunk[len(chunk) // 2 :], chunk[: len(chunk) // 2]]
            found.append((d, act, k))
        self._minimal = {memo_key: found}  # one pool at a time
        return found


def _minimal_budget(spec: ir.SpecIR) -> int:
    """Reference steps per L2 state for `minimal_endings`: MINIMAL_WORK IR nodes' worth (a step's cost grows with
    the spec's size), between 10 and 50 steps: connect four 49, tcg 10. Counted, not timed: the same states on
    every machine."""
    from envc.against import _step_parts  # envc.against imports this module

    size = sum(1 for _ in ir.nodes(_step_parts(spec)))
    return max(10, min(50, MINIMAL_WORK // max(1, size)))


def _remember(memo: dict[bytes, Any], k: bytes, compute: Callable[[], Any]) -> Any:
    """`compute()` once per key; a SpecRuntimeError is remembered and raised again."""
    if k not in memo:
        if len(memo) >= _MEMO_CAP:
            memo.clear()
        try:
            memo[k] = compute()
        except SpecRuntimeError as e:
            memo[k] = e
    got = memo[k]
    if isinstance(got, SpecRuntimeError):
        raise got
    return got


def _copy(d: _Dict) -> _Dict:
    return {n: np.array(v, copy=True) for n, v in d.items()}


def _digest(*parts: Any) -> bytes:
    """A key for states (dicts of arrays), actions and keys by their contents."""
    h = hashlib.blake2b(digest_size=20)
    for p in parts:
        items = sorted(p.items()) if isinstance(p, Mapping) else [("", p)]
        for name, v in items:
            a = np.ascontiguousarray(v)
            h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
            h.update(a.tobytes())
    return h.digest()


def level2(spec: ir.SpecIR, env: Any, states: int, seed: int) -> list[Check]:
    """One step from injected states: reference rollouts and fuzzed states, every field compared."""
    ref = _Loose.of(spec)
    wrote = writers(spec)
    gen = np.random.default_rng(seed + 1)
    key = rng.key_from_seed(seed + 1)
    from_rollouts, fuzzed = (
        Check("L2", "one step from reference-rollout states"),
        Check("L2", "one step from fuzzed states"),
    )
    base = ref.state_to_dict(ref.init(key))
    pool: list[dict[str, np.ndarray]] = []
    ends: list[dict[str, np.ndarray]] = []  # the episodes' finished states
    while len(pool) < states:
        key, k = rng.split(key)
        for s in _rollout(ref, k, gen, 200):
            if not (s.terminated or s.truncated):
                pool.append(ref.state_to_dict(s))
            else:
                ends.append(ref.state_to_dict(s))
    for check, source in (
        (from_rollouts, pool[:states]),
        (fuzzed, [fuzz_state(spec, base, gen) for _ in range(states)]),
    ):
        for i, d in enumerate(source):
            injected = ref.injected_of(d)
            mask = np.asarray(injected["legal_action_mask"])
            b0 = env.state_from_dict(d)
            check.cases += 1
            m = diff(spec, injected, env.state_to_dict(b0), f"state {i} (injected)", wrote)
            if m is not None:
                check.fail(m)
                continue
            key, k = rng.split(key)
            if spec.box is not None:
                act: Any = _action(spec, mask, gen)
            else:
                act = (
                    int(gen.integers(spec.num_actions))
                    if i % 4 == 3
                    else _action(spec, mask, gen)
                    if np.any(mask)
                    else 0
                )
            m = diff(
                spec,
                ref.step_of(d, act, k)[1],
                env.state_to_dict(env.step(b0, act, k)),
                f"state {i} action {act}",
                wrote,
            )
            if m is not None:
                check.fail(m)
    return [from_rollouts, fuzzed] + level2_contract(spec, env, ref, pool[:states], ends, base, states, seed)


@dataclass
class _Episode:
    """A reference episode: the key and action of each step and the states (`states[t]` after t steps)."""

    key: rng.Key
    keys: list[rng.Key] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    states: list[dict[str, np.ndarray]] = field(default_factory=list)
    stuck: bool = False  # it stopped at a non-terminal state with no legal action


_EPISODES: dict[bytes, tuple[_Episode, Mapping[str, Any]]] = {}  # of one spec at a time: `_EPISODES_OF`
_EPISODES_OF: list[ir.SpecIR] = []


def _recorded(
    ref: ReferenceEnv, setting: tuple[tuple[str, Any], ...], key: rng.Key, gen: np.random.Generator, max_steps: int
) -> _Episode:
    """`_record`, kept for the process per params, key and generator state (of the last spec only), with the
    generator left as the recording left it: `envc mutate` runs the same L3 episodes on every mutant."""
    if not (_EPISODES_OF and _EPISODES_OF[0] is ref.spec):
        _EPISODES.clear()
        _EPISODES_OF[:] = [ref.spec]
    k = _digest(np.frombuffer(repr((setting, max_steps, gen.bit_generator.state)).encode(), np.uint8), key)
    got = _EPISODES.get(k)
    if got is not None:
        gen.bit_generator.state = got[1]
        return got[0]
    ep = _record(ref, key, gen, max_steps)
    _EPISODES[k] = (ep, gen.bit_generator.state)
    return ep


def _record(ref: ReferenceEnv, key: rng.Key, gen: np.random.Generator, max_steps: int) -> _Episode:
    ep = _Episode(key)
    r = ref.init(key)
    ep.states.append(ref.state_to_dict(r))
    for _ in range(max_steps):
        if r.terminated or r.truncated:
            break
        if _stuck(ref.spec, r):
            ep.stuck = True
            break
        key, k = rng.split(key)
        act = _action(ref.spec, np.asarray(r.legal_action_mask), gen)
        r = ref.step(r, act, k)
        ep.keys.append(k)
        ep.actions.append(act)
        ep.states.append(ref.state_to_dict(r))
    return ep


def _return(states: list[dict[str, np.ndarray]]) -> float:
    """Player 0's return over the steps of an episode."""
    return float(sum(float(np.asarray(s["rewards"]).reshape(-1)[0]) for s in states[1:]))


def _backend_sample(
    envs: list[Any], episodes: int, seed: int, max_steps: int
) -> tuple[list[float], list[int]]:
    """Returns and lengths of the backend's own random-legal-action episodes (keys independent of L3's), episode
    e on `envs[e]` (the same runtime params as the reference's episode e)."""
    gen = np.random.default_rng(seed + 3)
    key = rng.key_from_seed(seed + 3)
    returns: list[float] = []
    lengths: list[int] = []
    for e in range(episodes):
        key, k = rng.split(key)
        total, n = 0.0, 0
        for t, s in enumerate(_rollout(envs[e], k, gen, max_steps)):
            if t:
                total += float(np.asarray(s.rewards).reshape(-1)[0])
            n = t
        returns.append(total)
        lengths.append(n)
    return returns, lengths


def level3(
    spec: ir.SpecIR, env: Any, episodes: int, seed: int, max_steps: int, alpha: float = 0.01, twins: int = 4
) -> list[Check]:
    """Whole episodes with matched keys and actions, honest for float dynamics (DESIGN.md).

    - lockstep: every step of every reference episode is also taken by the backend from the reference's own
      state (injected), and must match within the one-step tolerance (exactly for ints and bools);
    - free-running: the backend runs the episode on its own (same keys, same actions) and is compared at every
      step. Without float state it must match throughout. With float state it may part from the reference, but
      not sooner than the reference parts from itself: `twins` noise twins of the reference (its run from the
      same start with every float nudged one ulp up or down at random before every step, fixed seeds:
      `envc.stats.twin_horizons`) give, per episode, the reference's own divergence horizon, and the backend's
      parting step is ranked among theirs. Parting before every twin happens to a correct backend now and then
      (both are random), so the decision is `envc.stats.parting_rank_test` over the episodes at `alpha`: a
      backend whose ranks are improbably low for one more noise twin fails, and its failing episodes are those
      where it parted before every twin;
    - statistical (specs with float state): the distributions of episode return (player 0) and length, the
      reference's episodes against as many backend episodes with independent keys, by a two-sample KS test at
      `alpha` whose sample sizes and power are stated (`envc.stats.compare_samples`).

    `cases` and `failed` count episodes; each failing episode reports its first divergence.
    """
    from envc import coverage  # it imports this module

    # A reference measuring the suite's coverage in the backend's place takes the lockstep's steps again free
    # running (the same states, actions and keys), so its arms are the same: the lockstep is left to real backends.
    measuring = coverage.measuring()
    settings = param_sweep(spec, env, episodes, seed)
    refs: dict[tuple[tuple[str, Any], ...], tuple[ReferenceEnv, ReferenceEnv, Any]] = {}
    wrote = writers(spec)
    floats = [f.name for f in spec.fields if f.ty.dtype.is_float]
    gen = np.random.default_rng(seed + 2)
    key = rng.key_from_seed(seed + 2)
    lock = Check("L3", "", unit="episodes")
    free = Check("L3", "", unit="episodes")
    steps = 0
    horizons: list[int] = []  # the reference's own horizon, in the episodes where the backend parted
    parted_at: list[int] = []  # where the backend parted, in those episodes
    ranks: list[int] = []  # per episode: how many noise twins part from the reference no later than the backend
    first: list[str] = []  # the divergences where the backend parted before every twin
    ref_returns: list[float] = []
    ref_lengths: list[int] = []
    for e in range(episodes):
        key, k = rng.split(key)
        setting = settings[e]
        if setting not in refs:  # a nudged state may trip a strict check the run never meets: twins are loose
            p = dict(setting)
            backend = env.with_params(p) if p else env
            refs[setting] = (ReferenceEnv(spec, p), ReferenceEnv(spec, p, strict=False), backend)
        ref, twin_ref, env = refs[setting]
        ep = _recorded(ref, setting, k, gen, max_steps)
        n = len(ep.actions)
        steps += n
        ref_returns.append(_return(ep.states))
        ref_lengths.append(n)
        lock.cases += 1
        free.cases += 1
        m = None if measuring else diff(spec, ep.states[0], env.state_to_dict(env.init(k)), f"episode {e} init", wrote)
        for t in range(0 if measuring else n):
            if m is not None:
                break
            got = env.state_to_dict(env.step(env.state_from_dict(ep.states[t]), ep.actions[t], ep.keys[t]))
            m = diff(spec, ep.states[t + 1], got, f"episode {e} step {t + 1} (from the reference's state)", wrote)
        if m is None and ep.stuck:
            m = f"episode {e} step {n}: no legal action in a non-terminal state"
        if m is not None:
            lock.fail(m)

        # free running: where the backend parts from the reference (if it does), then how many of the
        # reference's own noise twins part from it by then (twins run only that far)
        b = env.init(k)
        m = diff(spec, ep.states[0], env.state_to_dict(b), f"episode {e} init (free running)", wrote)
        at = 0
        while m is None and at < n:
            b = env.step(b, ep.actions[at], ep.keys[at])
            at += 1
            m = diff(spec, ep.states[at], env.state_to_dict(b), f"episode {e} step {at} (free running)", wrote)
        if m is None:
            ranks.append(twins)  # never parted: last
            continue
        if at == 0 or not floats:
            free.fail(m)
            continue

        def twin_step(
            d: Mapping[str, np.ndarray], t: int, ep: _Episode = ep, twin_ref: ReferenceEnv = twin_ref
        ) -> dict[str, np.ndarray]:
            return twin_ref.state_to_dict(twin_ref.step(twin_ref.state_from_dict(d), ep.actions[t], ep.keys[t]))

        parted_at.append(at)
        found = twin_horizons(twin_step, ep.states[0], at, floats, twins=twins, seed=seed + e * twins, base=ep.states)
        hs = [h.step for h in found if h.step is not None]
        ranks.append(len(hs))
        if hs:
            horizons.append(min(hs))
        else:
            first.append(f"{m}; none of the reference's {twins} noise twins parts from it by then")
    env = refs[()][2] if () in refs else env
    swept = sum(1 for st in settings if st)
    under = f" ({swept} of them under other declared param values)" if swept else ""
    lock.name = f"lockstep: {episodes} episodes{under}, {steps} steps, each from the reference's state"
    test = parting_rank_test(ranks, twins, alpha)
    if floats and not test.passed:
        for msg in first:
            free.fail(msg)
        if not first:
            free.fail(
                f"the backend parts from the reference sooner than the reference's own twins do: {test.describe()}"
            )
    free.figures = {
        "episodes_parted": len(parted_at),
        "episodes_parted_first": len(first),
        "horizon_min": min(horizons) if horizons else None,
        "horizon_median": float(np.median(horizons)) if horizons else None,
        "horizon_max": max(horizons) if horizons else None,
        "rank_test_p": test.p_value if parted_at else None,
    }
    head = "free-running, same keys and actions: the backend"
    if not floats or not parted_at:
        exact = "" if floats else " exactly"
        bad = f"; it parts from the reference in {free.failed} of them" if free.failed else ""
        free.name = f"{head} matches{exact} at every step of {episodes} episodes{bad}"
    else:
        where = (
            f"; the reference's own 1-ulp noise twins part from it at step {min(horizons)} to {max(horizons)} "
            f"(median {np.median(horizons):g}) there"
            if horizons
            else ""
        )
        free.name = (
            f"{head} parts from the reference in {len(parted_at)} of {episodes} episodes{where}; {test.describe()}"
        )
    out = [lock, free]
    if floats and episodes:
        returns, lengths = _backend_sample([refs[st][2] for st in settings], episodes, seed, max_steps)
        for quantity, a, b in (("episode return", ref_returns, returns), ("episode length", ref_lengths, lengths)):
            c = compare_samples(quantity, a, b, alpha)
            check = Check("L3", f"statistical: {c.describe()}", cases=c.n_a + c.n_b, unit="episodes")
            check.figures = {
                "n_reference": c.n_a,
                "n_backend": c.n_b,
                "ks_statistic": c.statistic,
                "p_value": c.p_value,
                "alpha": c.alpha,
                "detectable_shift_sd": c.detectable if np.isfinite(c.detectable) else None,
            }
            if not c.passed:
                check.fail(f"{quantity}: the backend's distribution differs from the reference's: {c.describe()}")
            out.append(check)
    return out


def param_sweep(spec: ir.SpecIR, env: Any, episodes: int, seed: int) -> list[tuple[tuple[str, Any], ...]]:
    """Per L3 episode, the runtime params it runs with: the defaults in even episodes, and in odd ones each param
    that declares `values` drawn from them (an empty tuple means the defaults). Backends without `with_params`
    (an `--against` target) keep the defaults."""
    domains = [(p.name, p.values) for p in spec.params if p.values and not p.static]
    if not domains or not hasattr(env, "with_params"):
        return [()] * episodes
    gen = np.random.default_rng([seed, 7])  # its own stream: the episodes' actions stay as they were
    out: list[tuple[tuple[str, Any], ...]] = []
    for e in range(episodes):
        picks = tuple((name, vals[int(gen.integers(len(vals)))]) for name, vals in domains)
        default = all(v == next(p.default for p in spec.params if p.name == n) for n, v in picks)
        out.append(() if e % 2 == 0 or default else picks)
    return out


def verify(
    spec: ir.SpecIR,
    env: Any,
    levels: tuple[str, ...] = ("L1", "L2", "L3"),
    episodes: int = 100,
    states: int = 200,
    seed: int = 0,
    max_steps: int = 500,
    progress: Callable[[str], None] | None = None,
) -> list[Check]:
    """Run the requested levels; each returns its checks."""
    out: list[Check] = []
    for level in levels:
        if progress is not None:
            progress(level)
        if level == "L1":
            out += level1(spec, env, max(1, episodes // 5), seed, max_steps)
        elif level == "L2":
            out += level2(spec, env, states, seed)
        elif level == "L3":
            out += level3(spec, env, episodes, seed, max_steps)
        else:
            raise ValueError(f"unknown level {level!r} (L1, L2, L3)")
    from envc.coverage import coverage_checks  # arm coverage of the suite above, and steered states (issue #20)

    out += coverage_checks(spec, env, levels, episodes, states, seed, max_steps)
    return out


# ---- derived checks of the step's contract (spec-language 14.3) and of boundary values (issue #20) ------------

HUGE_ID = 2**31 - 1  # the largest id every backend accepts (an i32 action)
SWAPPED_MOVES = 8  # legal moves stepped from each state with the players swapped
MINIMAL_WORK = 15_000  # the minimal-ending check's reference work per L2 state, in IR nodes stepped
LEGAL_STATES = 50  # reached states per boundary value of a `legal:` comparison


def _legal_ids(kinds: np.ndarray, mask: np.ndarray, gen: np.random.Generator, most: int = 0) -> list[int]:
    """Legal ids in a random order: one of every action kind (`kinds`: each id's kind), then others up to `most`."""
    legal = gen.permutation(np.flatnonzero(mask))
    first = np.unique(kinds[legal], return_index=True)[1]
    rest = np.delete(legal, first)
    return [int(legal[j]) for j in first] + [int(a) for a in rest[: max(0, most - len(first))]]


def _bad_ids(spec: ir.SpecIR, mask: np.ndarray, gen: np.random.Generator) -> list[int]:
    """Action ids a step must treat as illegal: a masked-out id (if any), -1, `num_actions`, a huge one."""
    out = [-1, spec.num_actions, HUGE_ID]
    illegal = np.flatnonzero(~np.asarray(mask, np.bool_))
    if len(illegal):
        out.insert(0, int(gen.choice(illegal)))
    return out


def _outside_box(spec: ir.SpecIR, gen: np.random.Generator) -> list[np.ndarray]:
    """Continuous actions outside the box (14.5: passed as given, not clipped), and on its edges."""
    assert spec.box is not None
    lo, hi, shape = float(spec.box.low), float(spec.box.high), spec.box.shape
    width = hi - lo if np.isfinite(hi - lo) else 1.0
    vals = [lo - 1.0, hi + 1.0, lo - width, hi + width, lo, hi]
    out = [np.full(shape, v, np.float32) for v in vals]
    out.append(gen.choice(np.asarray(vals, np.float32), size=shape).astype(np.float32))
    return out


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


def _penalty_rewards(spec: ir.SpecIR, current_player: int) -> np.ndarray:
    """Rewards of an illegal action (14.3 step 3): the mover pays the penalty, every other player gets its share."""
    pen = np.float32(spec.illegal_action_penalty)
    out = np.full(spec.players, -pen * np.float32(spec.players - 1), np.float32)
    if 0 <= current_player < spec.players:
        out[current_player] = pen
    return out


def illegal_contract(
    spec: ir.SpecIR, before: Mapping[str, np.ndarray], after: Mapping[str, np.ndarray], where: str
) -> str | None:
    """How `after` (the step of a not-finished `before` with an illegal id) breaks 14.3 step 3; None if it holds."""
    for f in spec.fields:
        if f.name == "step_count":
            want = np.asarray(np.int64(before["step_count"]) + 1).astype(np.int32)  # wrapping i32
            if not _same(want, after["step_count"]):
                return f"{where}: step_count {after['step_count']}, expected {want} (one more)"
        elif not _same(before[f.name], after[f.name]):
            was, now = before[f.name], after[f.name]
            return f"{where}: field '{f.name}' changed ({was} -> {now}); an illegal action changes nothing"
    if not bool(after["terminated"]) or bool(after["truncated"]):
        return f"{where}: terminated {after['terminated']} truncated {after['truncated']}, expected true / false"
    want_r = _penalty_rewards(spec, int(before["current_player"]))
    if not _same(want_r, np.asarray(after["rewards"], np.float32)):
        return (
            f"{where}: rewards {after['rewards']}, expected {want_r} "
            f"(illegal_action_penalty {spec.illegal_action_penalty} for the mover)"
        )
    if not bool(np.all(after["legal_action_mask"])):
        return f"{where}: legal_action_mask of a terminated state is not all true"
    return None


def finished_contract(
    spec: ir.SpecIR, before: Mapping[str, np.ndarray], after: Mapping[str, np.ndarray], where: str
) -> str | None:
    """How `after` (a step of a terminated or truncated `before`) breaks 14.3 step 1; None if it holds."""
    for k, w in before.items():
        if k == "rewards":
            if np.any(np.asarray(after[k]) != 0):
                return f"{where}: rewards {after[k]}, expected zeros (a finished state pays nothing)"
        elif k not in after or not _same(w, after[k]):
            return f"{where}: '{k}' changed ({w} -> {after.get(k)}); a finished state stays as it is"
    return None


def _flagged(d: Mapping[str, np.ndarray], which: str) -> dict[str, np.ndarray]:
    """`d` marked terminated (`which` = "terminated") or truncated."""
    out = {k: np.array(v, copy=True) for k, v in d.items()}
    out["terminated"] = np.asarray(which == "terminated")
    out["truncated"] = np.asarray(which == "truncated")
    return out


def level1_contract(spec: ir.SpecIR, env: Any, episodes: int, seed: int, max_steps: int) -> list[Check]:
    """L1 properties of the step's bookkeeping on the backend's own states (14.3): illegal and out-of-range ids
    (discrete specs), and steps of finished states (each rollout's end, or its last state marked finished)."""
    illegal = Check("L1", "illegal and out-of-range action ids change only step_count, pay the penalty, end")
    finished = Check("L1", "a finished state stays as it is")
    gen = np.random.default_rng(seed + 11)
    key = rng.key_from_seed(seed + 11)
    for ep in range(episodes):
        key, k = rng.split(key)
        run = list(_rollout(env, k, gen, max_steps))
        live = [t for t, s in enumerate(run) if not (bool(s.terminated) or bool(s.truncated))]
        if spec.box is None:
            for t in sorted(gen.choice(live, size=min(2, len(live)), replace=False)) if live else []:
                s = run[int(t)]
                before = env.state_to_dict(s)
                for a in _bad_ids(spec, np.asarray(s.legal_action_mask), gen):
                    key, k2 = rng.split(key)
                    illegal.cases += 1
                    m = illegal_contract(
                        spec, before, env.state_to_dict(env.step(s, a, k2)), f"episode {ep} step {t} action {a}"
                    )
                    if m is not None:
                        illegal.fail(m)
        # the episode's end (if it ended) and its last live state marked terminated or truncated (alternately)
        ends = [(f"episode {ep} end", run[-1])] if not live or live[-1] != len(run) - 1 else []
        if live:
            flag = ("terminated", "truncated")[ep % 2]
            marked = env.state_from_dict(_flagged(env.state_to_dict(run[live[-1]]), flag))
            ends.append((f"episode {ep} step {live[-1]} marked {flag}", marked))
        for where, last in ends:
            before = env.state_to_dict(last)
            acts: list[Any] = (
                [_action(spec, np.ones(spec.num_actions, np.bool_), gen), -1, HUGE_ID]
                if spec.box is None
                else [_action(spec, np.zeros(0, np.bool_), gen)]
            )
            for a in acts:
                key, k2 = rng.split(key)
                finished.cases += 1
                m = finished_contract(spec, before, env.state_to_dict(env.step(last, a, k2)), f"{where}, action {a}")
                if m is not None:
                    finished.fail(m)
    return [illegal, finished] if spec.box is None else [finished]


def _one_step(
    spec: ir.SpecIR,
    ref: _Loose,
    env: Any,
    d: Mapping[str, np.ndarray],
    act: Any,
    key: rng.Key,
    where: str,
    wrote: dict[str, list[str]],
) -> tuple[str | None, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Inject `d` on both, compare, step both with `act` and `key`, compare (as L2 does): (first difference,
    the backend's injected state and its result, as dicts)."""
    injected, want = ref.step_of(d, act, key)
    b0 = env.state_from_dict(d)
    before = env.state_to_dict(b0)
    m = diff(spec, injected, before, f"{where} (injected)", wrote)
    if m is not None:
        return m, before, {}
    got = env.state_to_dict(env.step(b0, act, key))
    m = diff(spec, want, got, f"{where} action {act}", wrote)
    if m is not None and (_ill_conditioned(spec, want, got) or _within_twins(spec, ref, d, act, key, want, got)):
        m = ""  # not scored
    return m, before, got


def _within_twins(
    spec: ir.SpecIR,
    ref: ReferenceEnv,
    d: Mapping[str, np.ndarray],
    act: Any,
    key: rng.Key,
    want: Mapping[str, np.ndarray],
    got: Mapping[str, np.ndarray],
) -> bool:
    """The backend is as far from the reference as the reference is from itself when every float of the state
    is nudged one ulp (up, then down): a step so ill-conditioned there (an edge value of a chaotic system) that
    last-bit differences (14.3) grow beyond the one-step tolerance. Ints and bools must still match."""
    nudged = [f.name for f in spec.fields if f.ty.dtype.is_float]
    floats = [k for k, w in want.items() if np.asarray(w).dtype.kind == "f"]  # the fields and derived outputs
    if not nudged or any(not _same(w, got[k]) for k, w in want.items() if k not in floats):
        return False
    spread = {n: np.zeros(np.shape(want[n])) for n in floats}
    for way in (np.inf, -np.inf):
        twin = {k: np.array(v, copy=True) for k, v in d.items()}
        for n in nudged:
            twin[n] = np.nextafter(twin[n], np.asarray(way, twin[n].dtype))
        t = ref.state_to_dict(ref.step(ref.state_from_dict(twin), act, key))
        for n in floats:
            spread[n] = np.maximum(spread[n], np.abs(np.asarray(t[n], np.float64) - np.asarray(want[n], np.float64)))
    for n in floats:
        w, g = np.asarray(want[n], np.float64), np.asarray(got[n], np.float64)
        if not np.all((np.abs(g - w) <= 2 * spread[n] + ATOL + RTOL * np.abs(w)) | (np.isnan(g) & np.isnan(w))):
            return False
    return True


def _ill_conditioned(spec: ir.SpecIR, want: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray]) -> bool:
    """The backend's float fields after the step differ from the reference's in their last bits (within the
    tolerance: a transcendental function, a fused multiply-add, 14.3), so a comparison sitting on a boundary
    may honestly come out the other way. With bit-equal floats a differing outcome is a bug."""
    floats = [f.name for f in spec.fields if f.ty.dtype.is_float]
    if not floats or all(_same(want[n], got[n]) for n in floats):
        return False
    return all(not np.any(far(np.asarray(got[n]), np.asarray(want[n]), RTOL, ATOL)) for n in floats)


def _legality(spec: ir.SpecIR) -> list[Any]:
    """The IR that decides which moves are legal: every `legal:` condition and the callables it reaches."""
    from envc.intervals import _calls

    parts: list[Any] = [a.legal for a in spec.actions]
    by_name = {c.name: c for c in spec.callables}
    seen: set[str] = set()
    todo = _calls(tuple(parts))
    while todo:
        name = todo.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        parts.append(by_name[name].body)
        todo |= _calls(by_name[name].body)
    return parts


def _legal_at_boundaries(
    spec: ir.SpecIR, env: Any, ref: _Loose, pool: list[dict[str, np.ndarray]], wrote: dict[str, list[str]]
) -> Check:
    """The legal moves of reached states with an element a `legal:` condition compares (`deck.count[pl] > 0`) set
    to the constant and its neighbours: injected on both and compared, no step. Many states per constant (the
    step-by-step boundary check tries six): a move that needs a card in hand as well as an empty deck shows only
    where random play put that card in hand."""
    from envc.against import boundaries  # envc.against imports this module

    check = Check("L2", "legal moves at boundary values (constants compared in legal:, +-1)")
    info = {f.name: f for f in spec.fields}
    every = max(1, len(pool) // LEGAL_STATES)
    for (name, at), compared in sorted(boundaries(spec, _legality(spec)).items()):
        f = info.get(name)
        if f is None or f.ty.dtype is ir.DType.BOOL or f.ty.enum is not None:
            continue
        limited = _capacity(spec, f)
        for c in sorted(compared):
            if limited is not None and not 0 <= c <= (limited.high or 0):
                continue
            for j in range(0, len(pool), every):
                for v in _around(c, limited or f):
                    d = _copy(pool[j])
                    d[name][at] = v
                    free_slots_zero(spec, d)
                    try:
                        want = ref.injected_of(d)
                    except SpecRuntimeError:
                        continue
                    check.cases += 1
                    got = env.state_to_dict(env.state_from_dict(d))
                    what = f"reached state {j} with {element_name(name, at)} = {v!r} (injected)"
                    m = diff(spec, want, got, what, wrote)
                    if m is not None:
                        check.fail(m)
    return check


def _minimal_endings(
    spec: ir.SpecIR,
    env: Any,
    ref: _Loose,
    pool: list[dict[str, np.ndarray]],
    base: dict[str, np.ndarray],
    states: int,
    seed: int,
    wrote: dict[str, list[str]],
) -> Check:
    """One step from states cut down to what ends the game (`_Loose.minimal_endings`), compared as L2 does."""
    check = Check("L2", "one step from minimal states that end the game (each element decisive)")
    for i, (d, act, k) in enumerate(ref.minimal_endings(pool, base, states, seed)):
        check.case(_one_step(spec, ref, env, d, act, k, f"minimal ending state {i}", wrote)[0])
    return check


def _one_changed(
    spec: ir.SpecIR, pool: list[dict[str, np.ndarray]], gen: np.random.Generator, states: int = 16, cap: int = 600
) -> list[tuple[int, str, tuple[int, ...], Any]]:
    """(pool index, field, element, new value): every single-element change of up to `states` reached states
    (another enum member, the other bool, +-1, 0 and the declared bounds +-1 for integers, 0 and -x for floats;
    zone slots in use only, a zone count one more), `cap` of them drawn at random."""
    enums = {e.name: len(e.members) for e in spec.enums}
    out: list[tuple[int, str, tuple[int, ...], Any]] = []
    picks = sorted({int(i) for i in np.linspace(0, len(pool) - 1, min(states, len(pool)))}) if pool else []
    for src in picks:
        d = pool[src]
        for f in spec.fields:
            arr = np.asarray(d[f.name])
            for at in np.ndindex(arr.shape):
                x = arr[at].item()
                if f.zone is not None and f.name.endswith(".count"):
                    cap_z = spec.field(f.zone).ty.shape[-1]
                    vals: list[Any] = [x + 1] if x < cap_z else []
                elif f.zone is not None and at[-1] >= int(np.asarray(d[f.name + ".count"])[at[:-1]]):
                    continue  # a free slot stays zero
                elif f.ty.enum is not None:
                    vals = [m for m in range(enums[f.ty.enum]) if m != x]
                elif f.ty.dtype is ir.DType.BOOL:
                    vals = [not x]
                elif f.ty.dtype.is_float:
                    vals = [v for v in (0.0, -x) if v != x]
                elif f.name == "current_player":
                    vals = [p for p in range(spec.players) if p != x]
                else:  # +-1, 0, and the declared bounds and their neighbours (`board <= 17`)
                    lo, hi = f.ty.dtype.int_range
                    edges = [int(b) + k for b in (f.low, f.high) if b is not None for k in (-1, 0, 1)]
                    vals = [v for v in (x - 1, x + 1, 0, *edges) if v != x and lo <= v <= hi]
                out += [(src, f.name, tuple(int(i) for i in at), v) for v in dict.fromkeys(vals)]
    if len(out) > cap:
        out = [out[int(i)] for i in sorted(gen.choice(len(out), size=cap, replace=False))]
    return out


def _capacity(spec: ir.SpecIR, f: ir.FieldInfo) -> ir.FieldInfo | None:
    """A zone's count bounded by 0 and the zone's capacity (no state of the zone holds more), else None."""
    if f.zone is None or not f.name.endswith(".count"):
        return None
    return f.model_copy(update={"low": 0.0, "high": float(spec.field(f.zone).ty.shape[-1])})


def _around(c: float, f: ir.FieldInfo, k: int = 1) -> list[float]:
    """`c` in the field's dtype and the `k` values of that dtype on each side (ulps for floats, units for
    integers; a non-integral `c` gives the integers on both sides of it), within the declared bounds."""
    dt = f.ty.dtype
    vals: list[Any]
    if dt.is_float:
        t = np.float64 if dt is ir.DType.F64 else np.float32
        vals, up, down = [t(c)], t(c), t(c)
        for _ in range(k):
            up, down = np.nextafter(up, t(np.inf)), np.nextafter(down, t(-np.inf))
            vals += [up, down]
        lo, hi = float(np.finfo(t).min), float(np.finfo(t).max)
    else:
        base = float(np.floor(c))
        vals = [base + i for i in range(-k, k + 1)] if base == c else [base - i for i in range(k)]
        vals += [] if base == c else [base + 1 + i for i in range(k)]
        lo, hi = (float(x) for x in dt.int_range)
    if f.low is not None:
        lo = max(lo, float(f.low))
    if f.high is not None:
        hi = min(hi, float(f.high))
    # Subnormals (1 ulp from 0.0) are left out: XLA flushes them to zero where the reference keeps them, a
    # documented difference of the JAX backend (spec-language "Subnormal f32 values"), not a bug to find.
    tiny = float(np.finfo(np.float64 if dt is ir.DType.F64 else np.float32).tiny) if dt.is_float else 0.0
    return sorted(float(v) for v in dict.fromkeys(float(v) for v in vals)
                  if np.isfinite(v) and lo <= v <= hi and (v == 0.0 or abs(v) >= tiny))


def _land(
    spec: ir.SpecIR,
    ref: ReferenceEnv,
    d: dict[str, np.ndarray],
    name: str,
    at: tuple[int, ...],
    act: Any,
    key: rng.Key,
    c: float,
    moved: float,
    tries: int = 6,
) -> float:
    """A value of the float element `name[at]` before the step (`act`, `key`) that the step takes to `c` or
    next to it (`c` itself went to `moved`): secant iterations, since the step moves the element by a smooth
    amount that depends on it (`position += velocity` where the velocity depends on the position). `d` is
    left with the last value tried."""
    t = np.float64 if next(f for f in spec.fields if f.name == name).ty.dtype is ir.DType.F64 else np.float32
    v0, g0 = c, moved
    v1 = float(t(c - (moved - c)))
    for _ in range(tries):
        d[name][at] = v1
        try:
            g1 = float(ref.state_to_dict(ref.step(ref.state_from_dict(d), act, key))[name][at])
        except SpecRuntimeError:
            break
        if not np.isfinite(g1) or g1 == c or g1 == g0:
            break
        slope = (g1 - g0) / (v1 - v0) if v1 != v0 else 1.0
        if not 0.01 <= abs(slope) <= 100.0:
            break
        v0, g0, v1 = v1, g1, float(t(v1 - (g1 - c) / slope))
        if v1 == v0:
            break
    return v1


def level2_contract(
    spec: ir.SpecIR,
    env: Any,
    ref: _Loose,
    pool: list[dict[str, np.ndarray]],
    ends: list[dict[str, np.ndarray]],
    base: dict[str, np.ndarray],
    states: int,
    seed: int,
) -> list[Check]:
    """One step compared with the reference (as L2 does) where random play never goes: illegal and out-of-range
    ids (outside the box for a continuous action), steps after the end (episode ends, and reached and fuzzed
    states marked terminated or truncated), and boundary values (`envc.against.boundaries`: every constant a step
    compares a state element with, and its neighbours, injected into reached and fuzzed states)."""
    from envc.against import boundaries  # envc.against imports this module

    wrote = writers(spec)
    gen = np.random.default_rng(seed + 12)
    key = rng.key_from_seed(seed + 12)
    n = max(1, min(states, 50))
    box = spec.box is not None
    illegal = Check("L2", "actions outside the box" if box else "illegal and out-of-range action ids")
    finished = Check("L2", "one step from a finished state (terminated or truncated)")
    nobody = Check("L2", "one step with the player to move out of range (-1, num_players)")
    edges = Check("L2", "one step from boundary values (compared constants, +-1 ulp / +-1)")

    def injected(i: int) -> dict[str, np.ndarray]:
        return pool[i % len(pool)] if i % 2 == 0 and pool else fuzz_state(spec, base, gen)

    for i in range(n):
        d = injected(i)
        mask = np.asarray(ref.injected_of(d)["legal_action_mask"])
        for a in _outside_box(spec, gen)[i % 7 :: 7] if box else _bad_ids(spec, mask, gen):
            key, k = rng.split(key)
            m, before, got = _one_step(spec, ref, env, d, a, k, f"state {i}", wrote)
            if m is None and not box:
                m = illegal_contract(spec, before, got, f"state {i} action {a} (backend)")
            illegal.case(m)  # "": a last-bit float difference decides a comparison (box actions): not scored
    for i in range(n):
        d = ends[i % len(ends)] if i % 3 == 0 and ends else _flagged(injected(i), ("terminated", "truncated")[i % 2])
        a = _action(spec, np.ones(spec.num_actions, np.bool_), gen) if box or i % 2 else HUGE_ID
        key, k = rng.split(key)
        finished.cases += 1
        m, before, got = _one_step(spec, ref, env, d, a, k, f"finished state {i}", wrote)
        if m is None:
            m = finished_contract(spec, before, got, f"finished state {i} action {a} (backend)")
        if m:  # "" cannot happen here: a finished state computes nothing
            finished.fail(m)
    invariants = Check("L2", "the same invariants fail on injected states as on the reference")

    def same_invariants(d: dict[str, np.ndarray], what: str, check: Check | None = None) -> None:
        """One case of `check` (default: the invariants check): the names of the failing invariants of `d`,
        backend vs reference (skipped where the reference cannot evaluate them)."""
        check = check if check is not None else invariants
        try:
            want_inv = sorted(ref.invariants_of(d))
        except SpecRuntimeError:
            return
        check.cases += 1
        got_inv = sorted(env.invariants(env.state_from_dict(d)))
        if got_inv != want_inv:
            check.fail(f"{what}: the reference's invariants fail on {want_inv}, the backend's on {got_inv}")

    # 14.3's fallbacks where the player to move is no player (an injected state): reads indexed by it clamp,
    # writes are dropped, and an illegal id's penalty goes to nobody while the others still get their share.
    # Its own draws, so that the checks after it see the states they saw before it was added.
    gen_nobody, key_nobody = np.random.default_rng(seed + 14), rng.key_from_seed(seed + 14)
    kinds = np.repeat(np.arange(len(spec.actions)), [a.size for a in spec.actions])  # each id's action kind
    starts = [(f"reached state {j}", pool[j]) for j in range(len(pool))] + [
        (f"fuzzed state {j}", fuzz_state(spec, base, gen_nobody)) for j in range(n // 2)
    ]
    for i, (what, start) in enumerate(starts):
        d = {k2: np.array(x, copy=True) for k2, x in start.items()}
        d["current_player"] = np.asarray(-1 if i % 2 else spec.players, d["current_player"].dtype)
        try:
            mask = np.asarray(ref.injected_of(d)["legal_action_mask"])
        except SpecRuntimeError:
            continue
        ids: list[Any] = (
            _outside_box(spec, gen_nobody)[i % 7 :: 7] if box else _bad_ids(spec, mask, gen_nobody)[i % 4 :: 4]
        )
        if not box:  # a legal move of every kind: an attack whose effect lands on its own (no) player's side
            ids += _legal_ids(kinds, mask, gen_nobody)
        what = f"{what} with current_player = {int(d['current_player'])}"
        if spec.invariants:  # their reads indexed by the player clamp too
            same_invariants(d, what, nobody)
        for a in ids:
            key_nobody, k = rng.split(key_nobody)
            nobody.case(_one_step(spec, ref, env, d, a, k, what, wrote)[0])

    # reached states with players 0 and 1 exchanged (envc.symmetry): the other player's version of each, where a
    # backend indexing by the wrong player shows (random play reaches a rare event for one player only)
    swapped = Check("L2", "one step with the players swapped, or their storage told apart")
    gen_swap, key_swap = np.random.default_rng(seed + 15), rng.key_from_seed(seed + 15)
    for j, start in enumerate(pool if spec.players >= 2 else []):
        d = swap_players(spec, start) if j % 2 == 0 else tell_apart(spec, start)
        try:
            mask = np.asarray(ref.injected_of(d)["legal_action_mask"])
        except SpecRuntimeError:
            continue
        what = f"reached state {j} with " + (
            "players 0 and 1 swapped" if j % 2 == 0 else "player 0's storage one more where it equals player 1's"
        )
        if spec.invariants:
            same_invariants(d, what, swapped)
        ids = (
            [_action(spec, mask, gen_swap)] if box
            else _legal_ids(kinds, mask, gen_swap, SWAPPED_MOVES) + _bad_ids(spec, mask, gen_swap)[j % 4 :: 4]
        )
        for a in ids:
            key_swap, k = rng.split(key_swap)
            swapped.case(_one_step(spec, ref, env, d, a, k, what, wrote)[0])

    ending = _minimal_endings(spec, env, ref, pool, base, states, seed, wrote)
    # every function and procedure called alone, on inputs play never gives it (envc/calls.py)
    gen_calls = np.random.default_rng(seed + 16)
    alone = Check("L2", "functions and procedures called alone (drawn arguments, reached and fuzzed states)")

    def called_on(i: int) -> dict[str, np.ndarray]:
        return pool[i % len(pool)] if i % 2 == 0 and pool else fuzz_state(spec, base, gen_calls)

    alone.cases, failures = check_callables(spec, env, ref.call_of, called_on, seed)
    for m in failures:
        alone.fail(m)

    for i in range(2 * n if spec.invariants else 0):
        same_invariants(injected(i) if i % 4 else pool[i % len(pool)] if pool else fuzz_state(spec, base, gen),
                        f"injected state {i}")
    # reached states with one element changed (every element and value, sampled): a state that breaks a rule in
    # one place only, where a single conjunct of an invariant decides (fuzzed states break many at once)
    one = _one_changed(spec, pool, np.random.default_rng(seed + 13)) if spec.invariants else []
    for src, name, at, v in one:
        d = {k2: np.array(x, copy=True) for k2, x in pool[src].items()}
        d[name][at] = v
        same_invariants(d, f"reached state {src} with {element_name(name, at)} = {v!r}")
    # the invariants' own boundaries (`abs(x) < 1e6`): each compared element at the constant and +-1 ulp / +-1,
    # beyond the declared bounds too (an invariant is what rules such a state out), in reached and fuzzed states
    info = {f.name: f for f in spec.fields}
    j = 0
    for (name, at), consts in sorted(boundaries(spec, [spec.invariants]).items()) if spec.invariants else []:
        f = info.get(name)
        if f is None or f.ty.dtype is ir.DType.BOOL or f.ty.enum is not None:
            continue
        unbounded = _capacity(spec, f) or f.model_copy(update={"low": None, "high": None})
        for c in sorted(consts):
            for v in _around(c, unbounded):
                j += 1
                d = {k2: np.array(x, copy=True) for k2, x in injected(j).items()}
                d[name][at] = v
                same_invariants(d, f"{element_name(name, at)} = {v!r}")
    j = ties = 0  # ties: cases whose outcome differs only through last-bit float differences (not scored)
    bounds = {
        k2: sorted(v)
        for k2, v in sorted(boundaries(spec).items())
        if k2[0] in info and info[k2[0]].ty.dtype is not ir.DType.BOOL and info[k2[0]].ty.enum is None
    }
    for (name, at), compared in bounds.items():
        limited = _capacity(spec, info[name])
        f = limited or info[name]
        for c in compared:
            if limited is not None and not 0 <= c <= (limited.high or 0):
                continue
            for r in range(6):
                j += 1
                d = {k2: np.array(x, copy=True) for k2, x in injected(j).items()}
                if r >= 4 and f.ty.dtype.is_float:  # a corner: every other compared element at one of its
                    # constants too (`x >= goal and v >= 0` is decided by v only where x is at or past the goal)
                    for (n2, at2), cs in bounds.items():
                        if (n2, at2) != (name, at):
                            d[n2][at2] = cs[(j // 2) % len(cs)]
                d[name][at] = c
                try:
                    r0 = ref.state_from_dict(d)
                    act = (
                        _action(spec, np.asarray(r0.legal_action_mask), gen)
                        if box or np.any(r0.legal_action_mask)
                        else 0
                    )
                    key, k = rng.split(key)
                    moved = float(ref.state_to_dict(ref.step(r0, act, k))[name][at])
                except SpecRuntimeError:
                    continue
                # the element at c +- 1 before the step (a mask, a rule's `when`), and where the step lands it
                # at c +- 1 if it moves it by about as much from there (`x + tau * x_dot` against a threshold)
                values = _around(c, f)
                if np.isfinite(moved) and moved != c:
                    values += _around(_land(spec, ref, d, name, at, act, k, c, moved) if f.ty.dtype.is_float
                                      else c - (moved - c), f, 2)
                for v in dict.fromkeys(values):
                    d[name][at] = v
                    try:
                        if ref.invariants_of(d):
                            continue  # a state the spec rules out
                    except SpecRuntimeError:
                        continue
                    edges.cases += 1
                    m, _, _ = _one_step(spec, ref, env, d, act, k, f"{element_name(name, at)} = {v!r}", wrote)
                    if m is None and not box:  # an illegal id there too (`truncated` stays false, 14.3)
                        edges.cases += 1
                        m, _, _ = _one_step(spec, ref, env, d, -1, k, f"{element_name(name, at)} = {v!r}", wrote)
                    if m == "":
                        ties += 1
                    elif m is not None:
                        edges.fail(m)
    edges.figures = {"ill_conditioned": ties}
    edges.cases -= ties
    masks = _legal_at_boundaries(spec, env, ref, pool, wrote)
    checks = [illegal, finished, nobody] + ([swapped] if swapped.cases else []) + ([ending] if ending.cases else [])
    checks += [alone] if alone.cases else []
    checks += [invariants] if spec.invariants else []
    return checks + [c for c in (edges, masks) if c.cases]
