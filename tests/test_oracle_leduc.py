"""docs/examples/leduc_holdem.yaml against pgx's leduc_holdem (an implementation nobody here wrote).

As for Kuhn poker in test_oracle_pgx.py: pgx's deal and first player are injected into the envc state, both
take the same uniformly random legal actions, and at the start and after every step we compare the legal
mask, current player, rewards, terminated, step count, the stored observation and `observe` of every player.
The spec declares the public card `visible: "round >= 1"`; the no-leak check runs on the same spec.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc.verify import verify

jax = pytest.importorskip("jax")
pgx = pytest.importorskip("pgx")
jnp = jax.numpy

SPEC = Path(__file__).resolve().parent.parent / "docs" / "examples" / "leduc_holdem.yaml"
CALL, RAISE, FOLD = 0, 1, 2

pytestmark = pytest.mark.filterwarnings("ignore:.*player_id.*:DeprecationWarning")


class Oracle:
    """pgx's leduc_holdem with jitted init/step/observe."""

    def __init__(self) -> None:
        self.env = pgx.make("leduc_holdem")
        self.init = jax.jit(self.env.init)
        self.step = jax.jit(self.env.step)
        self.observe = jax.jit(self.env.observe)
        self.observe_current = jax.jit(lambda s: self.env.observe(s))


@pytest.fixture(scope="module")
def env() -> Any:
    return envc.build(str(SPEC))


@pytest.fixture(scope="module")
def oracle() -> Oracle:
    return Oracle()


def start(env: Any, oracle: Oracle, cards: tuple[int, int, int], first: int) -> tuple[Any, Any]:
    """Both games at the start of a hand with this deal (player 0, player 1, public) and first player."""
    theirs = oracle.init(jax.random.PRNGKey(0))
    theirs = theirs.replace(
        current_player=jnp.int32(first), _first_player=jnp.int32(first), _cards=jnp.int32(list(cards))
    )
    theirs = theirs.replace(observation=oracle.observe_current(theirs))
    d = env.state_to_dict(env.init((0, 0)))
    d["current_player"] = np.int32(first)
    d["first_player"] = np.int32(first)
    d["hand"] = np.array(cards[:2], np.int8)
    d["board"] = np.int8(cards[2])
    rest = [0, 0, 1, 1, 2, 2]
    for c in cards:
        rest.remove(c)
    d["deck"] = np.array(rest + [0, 0, 0], np.int8)
    d["deck.count"] = np.int32(3)
    ours = env.state_from_dict(d)
    assert env.invariants(ours) == []
    return ours, theirs


def assert_same(env: Any, ours: Any, oracle: Oracle, theirs: Any, where: str) -> None:
    t = jax.device_get(theirs)
    assert ours.current_player == int(t.current_player), f"{where}: current_player"
    assert ours.terminated == bool(t.terminated), f"{where}: terminated"
    assert ours.step_count == int(t._step_count), f"{where}: step count"
    for label, a, b in (
        ("legal_action_mask", ours.legal_action_mask, t.legal_action_mask),
        ("rewards", ours.rewards, t.rewards),
        ("observation", ours.observation, t.observation),
    ):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.shape, a.dtype) == (b.shape, b.dtype), f"{where}: {label} {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        assert np.array_equal(a, b), f"{where}: {label}\nenvc {a.tolist()}\npgx  {b.tolist()}"
    for p in range(2):
        a, b = env.observe(ours, p), np.asarray(oracle.observe(theirs, p))
        assert np.array_equal(a, b), f"{where}: observe(player {p})\nenvc {a.tolist()}\npgx  {b.tolist()}"
    assert env.invariants(ours) == [], where


def play(
    env: Any, oracle: Oracle, ours: Any, theirs: Any, gen: np.random.Generator, where: str
) -> tuple[list[int], Any]:
    actions: list[int] = []
    assert_same(env, ours, oracle, theirs, f"{where} start")
    while not bool(theirs.terminated):
        a = int(gen.choice(np.flatnonzero(np.asarray(theirs.legal_action_mask))))
        actions.append(a)
        ours = env.step(ours, a)
        theirs = oracle.step(theirs, jnp.int32(a))
        assert_same(env, ours, oracle, theirs, f"{where} after {actions}")
    return actions, ours


def test_leduc_lints_clean() -> None:
    spec, diags = envc.lint(str(SPEC))
    assert spec is not None and [d.format() for d in diags] == []
    assert spec.field("board").visible == "rule" and spec.field("board").visible_rule is not None
    assert spec.num_actions == 3 and spec.players == 2


def test_leduc_matches_pgx(env: Any, oracle: Oracle) -> None:
    gen = np.random.default_rng(11)
    deals: Counter[tuple[int, int, int]] = Counter()
    ends: Counter[str] = Counter()
    lengths: Counter[int] = Counter()
    for g in range(250):
        pool = [0, 0, 1, 1, 2, 2]
        order = gen.permutation(6)
        cards = (pool[order[0]], pool[order[1]], pool[order[2]])
        first = int(gen.integers(2))
        ours, theirs = start(env, oracle, cards, first)
        moves, last = play(env, oracle, ours, theirs, gen, f"hand {g} cards {cards} first {first}")
        deals[cards] += 1
        lengths[len(moves)] += 1
        rewards = tuple(float(r) for r in last.rewards)
        ends["fold" if moves[-1] == FOLD else "draw" if rewards == (0.0, 0.0) else "showdown"] += 1
    # the hands were varied: many deals, folds, draws and showdowns, short and long betting
    assert len(deals) >= 20
    assert min(ends["fold"], ends["draw"], ends["showdown"]) >= 5, ends
    assert len(lengths) >= 6, lengths


def test_leduc_reset_deals_like_pgx(env: Any) -> None:
    """envc's own reset deals two of each card and picks the first player at random."""
    seen: Counter[tuple[int, ...]] = Counter()
    for seed in range(300):
        s = env.init((seed, 3))
        d = env.state_to_dict(s)
        cards = sorted([*d["hand"].tolist(), int(d["board"]), *d["deck"][: int(d["deck.count"])].tolist()])
        assert cards == [0, 0, 1, 1, 2, 2]
        assert s.current_player == int(d["first_player"]) and env.invariants(s) == []
        seen[(s.current_player, *d["hand"].tolist(), int(d["board"]))] += 1
    assert {k[0] for k in seen} == {0, 1} and len(seen) >= 30


def test_leduc_has_no_leak(env: Any) -> None:
    """The public card is hidden in round 0 and visible from round 1; pgx's observation respects that."""
    checks = {c.name: c for c in verify(env.spec, env, levels=("L1",), episodes=150)}
    assert all(c.passed for c in checks.values()), [c.failures for c in checks.values()]
    assert checks["no hidden-information leak"].cases > 100
