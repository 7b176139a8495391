"""Equivalence of a surviving mutant on a small game's whole reachable state space.

For a spec whose reachable states the reference can list (finite chance, at most `max_states` states), every
state reachable from a reset by legal actions is found by breadth-first search on the reference interpreter,
with every chance outcome of every reset and step enumerated exactly: the interpreter's draws (`randint`,
`bernoulli`, `choice`, `shuffle`) are answered from a script instead of the key, and the scripts are walked
depth first. A continuous draw (`uniform`) or a box action makes the space infinite: no enumeration.

A survivor is then run on every (reachable state, action id) pair, the ids being every action, -1,
`num_actions` and 2**31 - 1, with one key per pair (a different one per state; 8 where the reference's step
draws randomness), plus
every player's observation and the invariants of every state and resets from many keys; identical outputs to
the unmutated backend's on all of them make it *equivalent on the reachable state space*. That is a complete
test of the inputs the game can produce, not a proof for every key, and it is reported apart from the proven
(identical-program) equivalents.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from envc import ir, rng
from envc.diagnostics import SpecRuntimeError
from envc.interpret import ReferenceEnv

HUGE_ID = 2**31 - 1
MAX_STATES = 50_000
MAX_OUTCOMES = 5040  # chance outcomes of one reset or step (7 cards shuffled)


class Infinite(Exception):
    """The spec's reachable space cannot be listed (continuous draws or actions, or over the bounds)."""


@dataclass
class Space:
    """The reachable states of a spec (as state dicts), with which (state, action) steps draw randomness."""

    spec: ir.SpecIR
    states: list[dict[str, np.ndarray]]
    random_steps: set[tuple[int, int]]  # (state index, action id) whose step draws randomness on the reference
    random_reset: bool
    outcomes: int  # chance outcomes enumerated, resets and steps together
    seconds: float
    originals: dict[str, list[str]] = field(default_factory=dict)  # backend -> digests of the original's outputs

    def describe(self) -> str:
        """One line: how the space was found."""
        return (
            f"{len(self.states)} reachable states, every chance outcome enumerated ({self.outcomes} in all), "
            f"found by BFS on the reference in {self.seconds:.1f} s"
        )


class _Script:
    """Answers the interpreter's draws from a script of choices; records the branching of each draw."""

    def __init__(self, script: list[int]):
        self.script = script
        self.taken: list[int] = []
        self.branching: list[int] = []

    def pick(self, n: int) -> int:
        """The next choice among `n` outcomes."""
        i = len(self.taken)
        v = self.script[i] if i < len(self.script) else 0
        self.taken.append(v)
        self.branching.append(n)
        return v


@contextlib.contextmanager
def _scripted(holder: list[_Script | None]) -> Iterator[None]:
    """While active, `envc.rng`'s scalar draws (as the interpreter calls them) read `holder[0]`'s script."""

    def randint_scalar(key: rng.Key, lo: int, hi: int) -> int:
        s = holder[0]
        assert s is not None
        n = int(hi) - int(lo)
        return int(lo) + (s.pick(n) if n > 1 else 0)

    def bernoulli_scalar(key: rng.Key, p: float) -> bool:
        s = holder[0]
        assert s is not None
        f = rng._f32(p)
        if f <= 0.0:
            return False
        if f >= 1.0:
            return True
        return bool(s.pick(2))

    def shuffle_order(key: rng.Key, capacity: int, count: int) -> list[int]:
        s = holder[0]
        assert s is not None
        n = math.factorial(count)
        if n > MAX_OUTCOMES:
            raise Infinite(f"a shuffle of {count} cards has {n} orders (more than {MAX_OUTCOMES})")
        k = s.pick(n) if n > 1 else 0
        head = list(next(itertools.islice(itertools.permutations(range(count)), k, None)))
        return head + list(range(count, capacity))

    def uniform_scalar(key: rng.Key, minval: float = 0.0, maxval: float = 1.0) -> float:
        raise Infinite("a continuous draw (uniform)")

    saved = {n: getattr(rng, n) for n in ("randint_scalar", "bernoulli_scalar", "shuffle_order", "uniform_scalar")}
    try:
        rng.randint_scalar = randint_scalar  # choice_mask draws through it too
        rng.bernoulli_scalar = bernoulli_scalar
        rng.shuffle_order = shuffle_order
        rng.uniform_scalar = uniform_scalar
        yield
    finally:
        for n, f in saved.items():
            setattr(rng, n, f)


def _outcomes(holder: list[_Script | None], run: Callable[[], Any]) -> list[Any]:
    """`run()` once for every combination of its draws' outcomes (depth first over the scripts)."""
    out: list[Any] = []
    todo: list[list[int]] = [[]]
    while todo:
        script = todo.pop()
        s = holder[0] = _Script(script)
        out.append(run())
        if len(out) > MAX_OUTCOMES:
            raise Infinite(f"more than {MAX_OUTCOMES} chance outcomes in one reset or step")
        for pos in range(len(script), len(s.taken)):
            for v in range(1, s.branching[pos]):
                todo.append(s.taken[:pos] + [v])
    return out


def _digest(d: dict[str, np.ndarray]) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for k in sorted(d):
        a = np.ascontiguousarray(d[k])
        h.update(k.encode())
        h.update(a.dtype.str.encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.digest()


def explore(spec: ir.SpecIR, max_states: int = MAX_STATES, seconds: float = 60.0) -> Space:
    """Every state reachable from a reset by legal actions, all chance outcomes enumerated. Raises `Infinite`."""
    if spec.box is not None:
        raise Infinite("a continuous action")
    t0 = time.perf_counter()
    ref = ReferenceEnv(spec)
    holder: list[_Script | None] = [None]
    key = rng.key_from_seed(0)
    seen: dict[bytes, int] = {}
    states: list[dict[str, np.ndarray]] = []
    random_steps: set[tuple[int, int]] = set()
    queue: deque[tuple[int, Any]] = deque()
    count = 0

    def add(s: Any) -> None:
        d = ref.state_to_dict(s)
        h = _digest(d)
        if h in seen:
            return
        if len(states) >= max_states:
            raise Infinite(f"more than {max_states} reachable states")
        seen[h] = len(states)
        states.append(d)
        queue.append((len(states) - 1, s))

    with _scripted(holder):
        try:
            inits = _outcomes(holder, lambda: ref.init(key))
        except SpecRuntimeError as e:
            raise Infinite(f"a reset fails on the reference: {e}") from None
        count += len(inits)
        for s in inits:
            add(s)
        while queue:
            if time.perf_counter() - t0 > seconds:
                raise Infinite(f"not listed within {seconds:.0f} s")
            i, s = queue.popleft()
            if s.terminated or s.truncated:
                continue
            for a in np.flatnonzero(np.asarray(s.legal_action_mask)):
                try:
                    nxt = _outcomes(holder, partial(ref.step, s, int(a), key))
                except SpecRuntimeError:
                    continue  # the reference reports a spec bug there: no state to add
                count += len(nxt)
                if len(nxt) > 1 or (holder[0] is not None and holder[0].taken):
                    random_steps.add((i, int(a)))
                for n in nxt:
                    add(n)
    return Space(spec, states, random_steps, len(inits) > 1, count, time.perf_counter() - t0)


def _value(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: np.asarray(v) for k, v in x.items()}
    return np.asarray(x)


class _Hasher:
    """A running digest of outputs; `mark()` closes one case's digest."""

    def __init__(self) -> None:
        self.h = hashlib.blake2b(digest_size=16)

    def add(self, x: Any) -> None:
        if isinstance(x, dict):
            for k in sorted(x):
                self.h.update(k.encode())
                self.add(x[k])
        elif isinstance(x, (list, tuple)):
            self.h.update(repr(x).encode())
        else:
            a = np.ascontiguousarray(np.asarray(x))
            self.h.update(a.dtype.str.encode() + str(a.shape).encode() + a.tobytes())

    def mark(self) -> str:
        out = self.h.hexdigest()
        self.h = hashlib.blake2b(digest_size=16)
        return out


def outputs(space: Space, env: Any, keys: int = 1, chance_keys: int = 8, resets: int = 64) -> Iterator[tuple[str, str]]:
    """(case, digest of the backend's outputs) for every case of the check, in a fixed order; a case that
    raises has the exception's type as its digest."""
    spec = space.spec
    ids = [-1, *range(spec.num_actions), spec.num_actions, HUGE_ID]
    h = _Hasher()

    def step(s: Any, a: int, k: rng.Key) -> dict[str, np.ndarray]:
        return dict(env.state_to_dict(env.step(s, a, k)))

    def case(name: str, f: Callable[..., Any], *args: Any) -> tuple[str, str]:
        try:
            h.add(f(*args))
            return name, h.mark()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # a Rust panic is a BaseException
            h.mark()
            return name, f"raised {type(e).__name__}"

    base = rng.key_from_seed(1)
    for r in range(resets if space.random_reset else 2):
        k = rng.fold_in(base, r)
        yield case(f"reset key {r}", lambda k: env.state_to_dict(env.init(k)), k)
    for i, d in enumerate(space.states):
        try:
            s = env.state_from_dict(d)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:
            yield f"state {i} (injected)", f"raised {type(e).__name__}"
            continue
        yield case(f"state {i} (injected)", env.state_to_dict, s)
        yield case(f"state {i} invariants", lambda s: sorted(env.invariants(s)), s)
        for p in range(spec.players):
            yield case(f"state {i} observation of player {p}", lambda s, p: _value(env.observe(s, p)), s, p)
        for a in ids:
            n = chance_keys if (i, a) in space.random_steps else keys
            for j in range(n):
                k = rng.fold_in(rng.fold_in(base, 1_000_003 + i), j)
                yield case(f"state {i} action {a} key {j}", step, s, a, k)


def original_outputs(space: Space, backend: str, env: Any) -> list[str]:
    """The unmutated backend's digests (computed once per backend)."""
    if backend not in space.originals:
        space.originals[backend] = [d for _, d in outputs(space, env)]
    return space.originals[backend]


def first_difference(space: Space, backend: str, env: Any) -> str | None:
    """The first case where `env` (a mutant) differs from the original's outputs, or None: equivalent."""
    want = space.originals[backend]
    n = 0
    for n, (name, got) in enumerate(outputs(space, env)):
        if n >= len(want) or got != want[n]:
            return name
    if n + 1 != len(want):
        return "a different number of cases"
    return None


def cases(space: Space) -> int:
    """How many cases the check runs (resets, injections, invariants, observations, steps)."""
    spec = space.spec
    ids = spec.num_actions + 3
    resets = 64 if space.random_reset else 2
    per_state = 2 + spec.players + ids
    return resets + len(space.states) * per_state + 7 * len(space.random_steps)
