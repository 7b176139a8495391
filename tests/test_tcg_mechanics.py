"""A compact Pokemon-style TCG (tests/specs/tcg_mechanics.yaml) on the reference interpreter.

Random legal games check the invariants, the legal mask and the rewards at every step and must end by every
win condition and by the turn limit; injected states (env.state_from_dict) check single rules: weakness and
resistance, one energy attachment per turn, evolution timing, knock-outs and prizes, the checkup, ...
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc import rng

SPEC = Path(__file__).resolve().parent / "specs" / "tcg_mechanics.yaml"
GAMES = 200
SHORT_LIMIT = 12  # every SHORT_EVERY-th random game runs with max_turns=12 so that the turn limit is reached
SHORT_EVERY = 8

# card ids (rows of tests/specs/tcg_cards.csv)
CHARMITE, BLAZARD, EMBERPUP, BUBBLETOAD, TORRENTOAD, TIDALISK, SPROUTLE, THORNIX, SNORLUMP = range(1, 10)
QUICK_DRAW, FIELD_NURSE, FIRE_E, WATER_E, GRASS_E = range(10, 15)
FIRE, WATER, GRASS = 0, 1, 2
REASONS = next(e.members for e in envc.load(str(SPEC)).enums if e.name == "WinReason")  # none, prizes, ...
COND_NONE, ASLEEP, PARALYZED = 0, 1, 2  # members of Cond

_envs: dict[int, Any] = {}


def get_env(max_turns: int | None = None) -> Any:
    """One env per max_turns value, built once per process."""
    k = max_turns or 0
    if k not in _envs:
        _envs[k] = envc.build(str(SPEC), params={"max_turns": max_turns} if max_turns else None)
    return _envs[k]


def action_id(env: Any, kind: str, **params: int) -> int:
    """Flat action id of `kind` with its parameters (row-major, as the compiler numbers them)."""
    a = next(a for a in env.spec.actions if a.name == kind)
    local = 0
    for p in a.params:
        local = local * (p.stop - p.start) + (params[p.name] - p.start)
    return int(a.offset + local)


def legal(env: Any, s: Any, kind: str, **params: int) -> bool:
    return bool(s.legal_action_mask[action_id(env, kind, **params)])


def kind_legal(env: Any, s: Any, kind: str) -> bool:
    a = next(a for a in env.spec.actions if a.name == kind)
    return bool(s.legal_action_mask[a.offset : a.offset + a.size].any())


# ---- random games --------------------------------------------------------------------------------------------

WEIGHTS = {"attack": 3.0, "end_turn": 0.2}


def play_game(g: int) -> tuple[str, int, int]:
    """Play one random legal game, checking every step; returns (how it ended, steps, mulligans).

    The policy picks a legal action kind at random (attacks weighted up, end_turn down, so that games reach
    knock-outs instead of always decking out), then a legal action of that kind uniformly.
    """
    env = get_env(SHORT_LIMIT if g % SHORT_EVERY == 0 else None)
    kinds = [(a.name, a.offset, a.size) for a in env.spec.actions]
    gen = np.random.default_rng(g)
    s = env.init(rng.key_from_seed(g))
    key = rng.key_from_seed(10_000 + g)
    steps = 0
    while True:
        assert env.invariants(s) == [], (g, steps, env.invariants(s))
        if s.terminated or s.truncated:
            break
        mask = s.legal_action_mask
        assert mask.any(), (g, steps)
        avail = [(n, o, k) for n, o, k in kinds if mask[o : o + k].any()]
        w = np.array([WEIGHTS.get(n, 1.0) for n, _, _ in avail])
        _, o, k = avail[gen.choice(len(avail), p=w / w.sum())]
        a = o + int(gen.choice(np.flatnonzero(mask[o : o + k])))
        key, sub = rng.split(key)
        s = env.step(s, a, sub)
        steps += 1
        if not (s.terminated or s.truncated):
            assert not s.rewards.any(), (g, steps, s.rewards)
    d = env.state_to_dict(s)
    assert s.rewards.sum() == 0
    if s.truncated:
        assert not s.terminated and not s.rewards.any() and int(d["turn"]) > int(env.params["max_turns"])
        return "truncated", steps, int(d["mulligans"].sum())
    reason = REASONS[int(d["win_reason"])]
    w_ = int(d["winner"])
    if reason == "tie":
        assert w_ == -1 and not s.rewards.any()
    else:
        assert s.rewards[w_] == 1.0 and s.rewards[1 - w_] == -1.0
        loser = 1 - w_
        if reason == "prizes":
            assert d["prizes.count"][w_] == 0
        elif reason == "no_creatures":
            assert (d["board.card"][loser] == 0).all()
        else:
            assert d["deck.count"][loser] == 0 and int(d["turn_player"]) == loser
    return reason, steps, int(d["mulligans"].sum())


def test_lint_is_clean() -> None:
    spec, diags = envc.lint(str(SPEC))
    assert spec is not None and [x.format() for x in diags] == []


def test_card_data_and_deck_lists() -> None:
    env = get_env()
    consts = {c.name: np.array(c.values).reshape(c.ty.shape) for c in env.spec.consts}
    kinds = consts["cards.kind"].tolist()
    creatures = [i for i, k in enumerate(kinds) if k in (1, 2)]
    assert len(creatures) >= 8 and {int(consts["cards.etype"][i]) for i in creatures} >= {FIRE, WATER, GRASS}
    assert kinds.count(3) >= 1 and kinds.count(4) >= 1 and kinds.count(5) >= 2  # item, supporter, energies
    assert consts["cards.evolves_from"][BLAZARD] == CHARMITE and kinds[BLAZARD] == 2
    copies = consts["decklist.copies"]
    assert (copies.sum(axis=0) == 20).all()  # DECK_SIZE
    assert copies.max() <= 6  # MAX_COPIES bounds the deck-building loop


def test_random_games() -> None:
    # serial: pytest-xdist already spreads tests over the cores, and forking a process that has imported
    # JAX (another test in the same worker may have) can deadlock
    results = [play_game(g) for g in range(GAMES)]
    ends = Counter(r for r, _, _ in results)
    for how in ("prizes", "no_creatures", "deck_out", "truncated"):
        assert ends[how] >= 1, ends
    assert sum(m for _, _, m in results) >= 1  # some opening hand had no Basic and was redrawn


# ---- injected states -----------------------------------------------------------------------------------------


def base(env: Any, current: int = 0, turn: int = 5) -> dict[str, np.ndarray]:
    """A main-phase state of player `current`: empty boards, hands and discards, full decks and prizes."""
    d = {k: np.array(v, copy=True) for k, v in env.state_to_dict(env.init(rng.key_from_seed(0))).items()}
    for k in list(d):
        if k.startswith("board."):
            d[k][...] = 0
    for z in ("hand", "discard"):
        d[z][...] = 0
        d[f"{z}.count"][...] = 0
    d["deck"][:, :12] = FIRE_E
    d["deck.count"][:] = 12
    d["prizes"][:, :3] = GRASS_E
    d["prizes.count"][:] = 3
    d.update(current_player=np.int32(current), turn_player=np.int32(current), turn=np.int16(turn))
    d["turns_taken"][:] = [turn // 2 + 1, turn // 2] if current == 0 else [turn // 2, turn // 2 + 1]
    for f in ("energy_attached", "supporter_played", "retreated", "turn_over", "handoff", "game_over"):
        d[f] = np.bool_(False)
    d["winner"] = np.int8(-1)
    d["win_reason"] = np.int8(0)
    return d


def put(
    d: dict[str, np.ndarray],
    p: int,
    s: int,
    card: int,
    energy: tuple[int, int, int] = (0, 0, 0),
    damage: int = 0,
    played: int = 1,
    under: int = 0,
) -> None:
    d["board.card"][p, s] = card
    d["board.under"][p, s] = under
    d["board.energy"][p, s] = energy
    d["board.damage"][p, s] = damage
    d["board.played"][p, s] = played


def give(d: dict[str, np.ndarray], p: int, *cards: int) -> None:
    n = int(d["hand.count"][p])
    d["hand"][p, n : n + len(cards)] = cards
    d["hand.count"][p] = n + len(cards)


def after(env: Any, d: dict[str, np.ndarray], *actions: tuple[str, dict[str, int]], seed: int = 3) -> Any:
    s = env.state_from_dict(d)
    for i, (kind, params) in enumerate(actions):
        assert legal(env, s, kind, **params), (kind, params)
        s = env.step(s, action_id(env, kind, **params), rng.key_from_seed(seed + i))
    return s


@pytest.mark.parametrize(
    "attacker, energy, i, defender, expected",
    [
        (CHARMITE, (1, 0, 0), 0, SNORLUMP, 20),  # fire on water-type without fire weakness: base damage
        (CHARMITE, (1, 0, 0), 0, SPROUTLE, 40),  # grass is weak to fire: x2
        (CHARMITE, (1, 0, 0), 0, BUBBLETOAD, 0),  # Bubbletoad resists fire: 20 - 30 -> 0
        (SPROUTLE, (0, 1, 1), 1, TORRENTOAD, 60),  # grass + colorless paid with water; weakness x2
        (BLAZARD, (3, 0, 0), 1, TORRENTOAD, 40),  # 70 - 30 resistance
    ],
)
def test_weakness_and_resistance(
    attacker: int, energy: tuple[int, int, int], i: int, defender: int, expected: int
) -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, attacker, energy, under=CHARMITE if attacker == BLAZARD else 0)
    put(d, 1, 0, defender)
    s = after(env, d, ("attack", {"i": i}))
    out = env.state_to_dict(s)
    assert out["board.damage"][1, 0] == expected
    assert int(out["turn_player"]) == 1 and int(out["turn"]) == 6 and out["hand.count"][1] == 1  # P1 drew


def test_attack_costs_and_first_turn() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, SPROUTLE, (0, 1, 0))  # a water energy pays colorless but not the grass cost
    put(d, 1, 0, SNORLUMP)
    s = env.state_from_dict(d)
    assert not legal(env, s, "attack", i=0) and not legal(env, s, "attack", i=1)
    d["board.energy"][0, 0] = (0, 0, 1)
    s = env.state_from_dict(d)
    assert legal(env, s, "attack", i=0) and not legal(env, s, "attack", i=1)  # atk 1 also needs a colorless
    d["turn"], d["turns_taken"][:] = np.int16(1), [1, 0]  # the first player's first turn: no attack
    assert not kind_legal(env, env.state_from_dict(d), "attack")


def test_energy_attaches_once_per_turn() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, CHARMITE)
    put(d, 0, 1, EMBERPUP)
    put(d, 1, 0, SNORLUMP)
    give(d, 0, FIRE_E, GRASS_E, SPROUTLE)
    s = env.state_from_dict(d)
    assert legal(env, s, "attach", hand_slot=0, target=0) and legal(env, s, "attach", hand_slot=1, target=1)
    assert not legal(env, s, "attach", hand_slot=2, target=0)  # not an energy card
    assert not legal(env, s, "attach", hand_slot=0, target=2)  # no creature there
    s = after(env, d, ("attach", {"hand_slot": 1, "target": 1}))
    out = env.state_to_dict(s)
    assert out["board.energy"][0, 1].tolist() == [0, 0, 1] and out["hand"][0, :2].tolist() == [FIRE_E, SPROUTLE]
    assert not kind_legal(env, s, "attach") and kind_legal(env, s, "play_basic")
    # the flag resets at the start of the player's next turn
    s = env.step(s, action_id(env, "end_turn"), rng.key_from_seed(5))
    s = env.step(s, action_id(env, "end_turn"), rng.key_from_seed(6))
    assert s.current_player == 0 and kind_legal(env, s, "attach")


def test_evolution_timing() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, CHARMITE, played=4, damage=30)
    put(d, 1, 0, SNORLUMP)
    give(d, 0, BLAZARD, CHARMITE, TORRENTOAD)
    s = env.state_from_dict(d)
    assert legal(env, s, "evolve", hand_slot=0, target=0)
    assert not legal(env, s, "evolve", hand_slot=2, target=0)  # Torrentoad evolves from Bubbletoad
    assert not legal(env, s, "evolve", hand_slot=0, target=1)  # empty bench spot
    # a Basic played this turn cannot evolve this turn
    s = after(env, d, ("play_basic", {"hand_slot": 1, "bench_slot": 1}))
    assert not legal(env, s, "evolve", hand_slot=0, target=1) and legal(env, s, "evolve", hand_slot=0, target=0)
    # evolving keeps the damage, clears conditions and puts the Basic under the Stage 1
    d["board.poisoned"][0, 0] = True
    d["board.cond"][0, 0] = ASLEEP
    out = env.state_to_dict(after(env, d, ("evolve", {"hand_slot": 0, "target": 0})))
    assert (out["board.card"][0, 0], out["board.under"][0, 0], out["board.damage"][0, 0]) == (BLAZARD, CHARMITE, 30)
    assert not out["board.poisoned"][0, 0] and out["board.cond"][0, 0] == COND_NONE
    assert out["board.played"][0, 0] == 5
    # not on a player's first turn (the second player's turn 2), even for a creature from the setup
    d = base(env, current=1, turn=2)
    d["turns_taken"][:] = [1, 1]
    put(d, 0, 0, SNORLUMP)
    put(d, 1, 0, CHARMITE, played=0)
    give(d, 1, BLAZARD)
    assert not legal(env, env.state_from_dict(d), "evolve", hand_slot=0, target=0)
    d["turns_taken"][:] = [2, 2]
    d["turn"] = np.int16(4)
    assert legal(env, env.state_from_dict(d), "evolve", hand_slot=0, target=0)


def test_knock_out_gives_a_prize_and_forces_promotion() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, CHARMITE, (1, 0, 0))
    put(d, 1, 0, BLAZARD, (2, 0, 1), damage=70, under=CHARMITE)
    put(d, 1, 2, TIDALISK)
    s = after(env, d, ("attack", {"i": 0}))
    out = env.state_to_dict(s)
    assert out["prizes.count"].tolist() == [2, 3] and out["hand.count"][0] == 1 and out["hand"][0, 0] == GRASS_E
    pile = sorted(out["discard"][1, : out["discard.count"][1]].tolist())
    assert pile == sorted([BLAZARD, CHARMITE, FIRE_E, FIRE_E, GRASS_E])  # the creature with everything attached
    assert out["board.card"][1, 0] == 0 and not s.terminated
    # the defender must promote before its turn starts
    assert s.current_player == 1 and np.flatnonzero(s.legal_action_mask).tolist() == [
        action_id(env, "promote", bench_slot=2)
    ]
    assert env.invariants(s) == ["cards_conserved"]  # injected boards do not match the deck lists
    s = env.step(s, action_id(env, "promote", bench_slot=2), rng.key_from_seed(9))
    out = env.state_to_dict(s)
    assert out["board.card"][1, 0] == TIDALISK and int(out["turn_player"]) == 1 and out["hand.count"][1] == 1


@pytest.mark.parametrize("prizes_left, bench", [(1, True), (2, False)])
def test_knock_out_wins(prizes_left: int, bench: bool) -> None:
    env = get_env()
    d = base(env)
    d["prizes.count"][0] = prizes_left
    put(d, 0, 0, THORNIX, (0, 0, 3))
    put(d, 1, 0, EMBERPUP, damage=20)
    if bench:
        put(d, 1, 3, SNORLUMP)
    s = after(env, d, ("attack", {"i": 1}))
    out = env.state_to_dict(s)
    assert s.terminated and s.rewards.tolist() == [1.0, -1.0] and int(out["winner"]) == 0
    assert REASONS[int(out["win_reason"])] == ("prizes" if bench else "no_creatures")


def test_deck_out_loses_at_turn_start_and_turn_limit_truncates() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, CHARMITE)
    put(d, 1, 0, SNORLUMP)
    d["deck.count"][1] = 0
    s = after(env, d, ("end_turn", {}))
    assert s.terminated and s.rewards.tolist() == [1.0, -1.0]
    assert REASONS[int(env.state_to_dict(s)["win_reason"])] == "deck_out"
    short = get_env(5)
    d = base(short, turn=5)
    put(d, 0, 0, CHARMITE)
    put(d, 1, 0, SNORLUMP)
    s = after(short, d, ("end_turn", {}))
    assert s.truncated and not s.terminated and not s.rewards.any()


def test_checkup_poison_sleep_paralysis() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, SPROUTLE, (0, 0, 1))
    put(d, 1, 0, EMBERPUP)
    s = after(env, d, ("attack", {"i": 0}))  # 10 damage and poison, then the checkup adds 10
    out = env.state_to_dict(s)
    assert out["board.damage"][1, 0] == 20 and out["board.poisoned"][1, 0]
    # paralysis stops attacks and retreats for the owner's turn, then ends in the checkup after that turn
    d = base(env, current=1, turn=6)
    put(d, 0, 0, CHARMITE)
    put(d, 1, 0, BUBBLETOAD, (0, 2, 0))
    put(d, 1, 1, TIDALISK)
    d["board.cond"][1, 0] = PARALYZED
    s = env.state_from_dict(d)
    assert not kind_legal(env, s, "attack") and not kind_legal(env, s, "retreat") and kind_legal(env, s, "end_turn")
    s = env.step(s, action_id(env, "end_turn"), rng.key_from_seed(1))
    assert env.state_to_dict(s)["board.cond"][1, 0] == COND_NONE
    # sleep: a coin at each checkup; over many keys both outcomes occur
    d = base(env)
    put(d, 0, 0, CHARMITE)
    put(d, 1, 0, SNORLUMP)
    d["board.cond"][1, 0] = ASLEEP
    woke = Counter(
        int(env.state_to_dict(after(env, d, ("end_turn", {}), seed=k))["board.cond"][1, 0]) for k in range(16)
    )
    assert set(woke) == {COND_NONE, ASLEEP}


def test_retreat_trainers_and_supporter_limit() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, THORNIX, (1, 0, 2))  # retreat cost 2: discards the fire, then a grass
    put(d, 0, 2, CHARMITE)
    put(d, 1, 0, SNORLUMP)
    give(d, 0, QUICK_DRAW, FIELD_NURSE, FIELD_NURSE)
    d["board.damage"][0, 0] = 40
    d["board.poisoned"][0, 0] = True
    s = after(env, d, ("retreat", {"bench_slot": 2}))
    out = env.state_to_dict(s)
    assert out["board.card"][0].tolist()[:3] == [CHARMITE, 0, THORNIX]
    assert out["board.energy"][0, 2].tolist() == [0, 0, 1] and not out["board.poisoned"][0, 2]
    assert sorted(out["discard"][0, :2].tolist()) == [FIRE_E, GRASS_E] and not kind_legal(env, s, "retreat")
    # the item draws 2; one supporter per turn heals the Active by 30
    d["board.damage"][0, 0] = 40
    s = after(env, d, ("play_trainer", {"hand_slot": 0}), ("play_trainer", {"hand_slot": 0}))
    out = env.state_to_dict(s)
    assert out["hand.count"][0] == 3 and out["deck.count"][0] == 10 and out["board.damage"][0, 0] == 10
    assert out["hand"][0, 0] == FIELD_NURSE and not legal(env, s, "play_trainer", hand_slot=0)


def test_observation_hides_decks_prizes_and_the_opponents_hand() -> None:
    env = envc.build(str(SPEC), strict=False)
    hidden = {f.name for f in env.spec.fields if f.visible == "none"}
    gen = np.random.default_rng(1)
    s = env.init(rng.key_from_seed(7))
    for step in range(40):
        if s.terminated or s.truncated:
            break
        d = env.state_to_dict(s)
        for p in range(2):
            want = env.observe(s, p)
            d2 = {k: np.array(v, copy=True) for k, v in d.items()}
            for name in hidden:
                d2[name][...] = gen.integers(0, 15, size=d2[name].shape)
            d2["hand"][1 - p] = gen.integers(0, 15, size=d2["hand"][1 - p].shape)
            got = env.observe(env.state_from_dict(d2), p)
            for k in want:
                np.testing.assert_array_equal(got[k], want[k], err_msg=f"{k} leaks to player {p}")
        s = env.step(s, int(gen.choice(np.flatnonzero(s.legal_action_mask))), rng.key_from_seed(100 + step))
