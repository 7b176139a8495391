"""specs/{tic_tac_toe,connect_four,kuhn_poker}.yaml against pgx 2.x (implementations nobody here wrote).

Each game is played in lockstep in pgx (jitted) and in the envc reference interpreter: pgx's random start
(first player, and for Kuhn poker the deal) is injected into the envc state, both take the same uniformly
random legal actions, and after every step (and at the start) we compare legal_action_mask, current_player,
rewards, terminated, step count, the observation of the player to move, and `observe` for every player.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc

jax = pytest.importorskip("jax")
pgx = pytest.importorskip("pgx")
jnp = jax.numpy

SPECS = Path(__file__).resolve().parent.parent / "specs"
GAMES = ("tic_tac_toe", "connect_four", "kuhn_poker")

# pgx 2.6 deprecates (but still honours) observe(state, player_id); we use it to check every player's view.
pytestmark = pytest.mark.filterwarnings("ignore:.*player_id.*:DeprecationWarning")


class Oracle:
    """A pgx env with jitted init/step/observe (un-jitted pgx takes ~0.2 s per call)."""

    def __init__(self, env_id: str):
        self.env = pgx.make(env_id)
        self.init = jax.jit(self.env.init)
        self.step = jax.jit(self.env.step)
        self.observe = jax.jit(self.env.observe)  # (state, player_id)
        self.observe_current = jax.jit(lambda s: self.env.observe(s))  # what init/step store


@pytest.fixture(scope="module", params=GAMES)
def game(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def build(name: str) -> Any:
    return envc.build(str(SPECS / f"{name}.yaml"))


def assert_same(ours: Any, env: Any, theirs: Any, oracle: Oracle, where: str) -> None:
    """Compare an envc state with a pgx state (nothing here is compared with itself)."""
    t = jax.device_get(theirs)
    assert ours.current_player == int(t.current_player), f"{where}: current_player"
    assert ours.terminated == bool(t.terminated), f"{where}: terminated"
    assert ours.truncated == bool(t.truncated), f"{where}: truncated"
    assert ours.step_count == int(t._step_count), f"{where}: step count"
    for label, a, b in (
        ("legal_action_mask", ours.legal_action_mask, t.legal_action_mask),
        ("rewards", ours.rewards, t.rewards),
        ("observation", ours.observation, t.observation),
    ):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.shape, a.dtype) == (b.shape, b.dtype), (
            f"{where}: {label} is {a.dtype}{a.shape}, pgx {b.dtype}{b.shape}"
        )
        assert np.array_equal(a, b), f"{where}: {label}\nenvc {a.tolist()}\npgx  {b.tolist()}"
    for p in range(env.num_players):
        a, b = env.observe(ours, p), np.asarray(oracle.observe(theirs, p))
        assert a.dtype == b.dtype and np.array_equal(a, b), f"{where}: observe(player {p})"


def play(
    env: Any,
    oracle: Oracle,
    ours: Any,
    theirs: Any,
    gen: np.random.Generator,
    script: list[int] | None = None,
    where: str = "",
) -> tuple[list[int], np.ndarray]:
    """Play both to the end with the same actions (scripted, else uniform over the legal ones).

    Returns the actions and pgx's final rewards."""
    actions: list[int] = []
    assert_same(ours, env, theirs, oracle, f"{where} start")
    while not bool(theirs.terminated):
        legal = np.flatnonzero(np.asarray(theirs.legal_action_mask))
        a = int(script[len(actions)]) if script is not None else int(gen.choice(legal))
        assert a in legal, f"{where}: scripted action {a} is illegal after {actions}"
        actions.append(a)
        ours = env.step(ours, a)
        theirs = oracle.step(theirs, jnp.int32(a))
        assert_same(ours, env, theirs, oracle, f"{where} after actions {actions}")
    assert script is None or len(actions) == len(script), f"{where}: ended after {actions}"
    return actions, np.asarray(theirs.rewards)


# ---- the specs themselves ------------------------------------------------------------------------------


def test_specs_lint_clean(game: str) -> None:
    spec, diags = envc.lint(str(SPECS / f"{game}.yaml"))
    assert spec is not None and [d.format() for d in diags] == []


def test_sizes_match(game: str) -> None:
    env, oracle = build(game), pgx.make(game)
    assert env.num_actions == oracle.num_actions
    assert env.num_players == oracle.num_players


def test_reset_deals_every_start(game: str) -> None:
    """envc's own reset (not pgx's) picks the first player, and for Kuhn the deal, at random."""
    env = build(game)
    starts: Counter[tuple[int, ...]] = Counter()
    for seed in range(240):
        s = env.init((seed, 7))
        assert not s.terminated and env.invariants(s) == []
        d = env.state_to_dict(s)
        cards = tuple(d["card"].tolist()) if game == "kuhn_poker" else ()
        starts[(s.current_player, *cards)] += 1
    want = (
        {(p, *c) for p in (0, 1) for c in itertools.permutations(range(3), 2)} if game == "kuhn_poker" else {(0,), (1,)}
    )
    assert set(starts) == want
    assert min(starts.values()) >= 240 // len(want) // 2


# ---- board games: pgx's random first player, random legal play ------------------------------------------


@pytest.mark.parametrize(("name", "games"), [("tic_tac_toe", 300), ("connect_four", 200)])
def test_board_game_matches_pgx(name: str, games: int) -> None:
    env, oracle = build(name), Oracle(name)
    gen = np.random.default_rng(2024)
    first: Counter[int] = Counter()
    outcomes: Counter[tuple[float, ...]] = Counter()
    lengths: Counter[int] = Counter()
    for g in range(games):
        theirs = oracle.init(jax.random.PRNGKey(g))
        d = env.state_to_dict(env.init((0, g)))
        d["current_player"] = np.int32(theirs.current_player)  # the only random part of pgx's start
        ours = env.state_from_dict(d)
        first[ours.current_player] += 1
        moves, rewards = play(env, oracle, ours, theirs, gen, where=f"{name} game {g}")
        lengths[len(moves)] += 1
        outcomes[tuple(rewards.tolist())] += 1
    # the games were varied: both players started, both won, and (tic-tac-toe) some were drawn
    assert first[0] > games // 4 and first[1] > games // 4
    assert outcomes[(1.0, -1.0)] > 0 and outcomes[(-1.0, 1.0)] > 0
    if name == "tic_tac_toe":
        assert outcomes[(0.0, 0.0)] > 0 and lengths[9] > 0
    assert len(lengths) >= 5


# ---- Kuhn poker: the deal and first player injected into both, every betting sequence -------------------

BET, PASS = 0, 1
SEQUENCES = ([PASS, PASS], [BET, PASS], [BET, BET], [PASS, BET, PASS], [PASS, BET, BET])


def kuhn_start(env: Any, oracle: Oracle, cards: tuple[int, int], first: int) -> tuple[Any, Any]:
    """Both envs at the start of a hand with this deal and first player."""
    theirs = oracle.init(jax.random.PRNGKey(0))
    theirs = theirs.replace(current_player=jnp.int32(first), _cards=jnp.int32(cards))
    theirs = theirs.replace(observation=oracle.observe_current(theirs))
    d = env.state_to_dict(env.init((0, 0)))
    d["current_player"] = np.int32(first)
    d["card"] = np.array(cards, np.int8)
    # the undealt card stays in the deck (a zone: slot 0 holds it, count 1)
    d["deck"] = np.array([3 - sum(cards), 0, 0], np.int8)
    d["deck.count"] = np.int32(1)
    ours = env.state_from_dict(d)
    assert env.invariants(ours) == []
    return ours, theirs


def test_kuhn_poker_matches_pgx() -> None:
    env, oracle = build("kuhn_poker"), Oracle("kuhn_poker")
    gen = np.random.default_rng(7)
    deals = list(itertools.permutations(range(3), 2))
    seen: Counter[tuple[int, ...]] = Counter()
    games = 0
    # every deal x first player x betting sequence once (60 hands) ...
    for cards, first, script in itertools.product(deals, (0, 1), SEQUENCES):
        ours, theirs = kuhn_start(env, oracle, cards, first)
        moves, _ = play(env, oracle, ours, theirs, gen, script=list(script), where=f"kuhn cards {cards} first {first}")
        seen[tuple(moves)] += 1
        games += 1
    # ... then 240 hands with a random deal and first player and random actions
    for g in range(240):
        cards = deals[int(gen.integers(len(deals)))]
        first = int(gen.integers(2))
        ours, theirs = kuhn_start(env, oracle, cards, first)
        moves, _ = play(env, oracle, ours, theirs, gen, where=f"kuhn random hand {g} cards {cards} first {first}")
        seen[tuple(moves)] += 1
        games += 1
    assert games == 300
    assert set(seen) == {tuple(s) for s in SEQUENCES}
    assert min(seen.values()) >= 12 + 10
