"""The flagship TCG (specs/tcg.yaml, rules in docs/tcg-rules.md) on the reference interpreter.

Random legal games check the declared invariants, card conservation, the legal mask and the rewards at every
step and must end by every win condition and by the turn limit; the card data is checked against the data rules
of the rules document; injected states (env.state_from_dict) check single rules against the document: damage
order of operations, knock-outs and prizes, promotion, evolution and retreat legality, the checkup and the order
of its coin flips (read from the interpreter's chance log), setup and mulligans.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc import rng

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "tcg.yaml"
ID = {row["name"]: int(row["id"]) for row in csv.DictReader(open(ROOT / "specs" / "tcg_cards.csv"))}
FIRE_E, WATER_E, GRASS_E, LIGHTNING_E = 60, 61, 62, 63
SETUP, MAIN, PROMOTE, OVER = range(4)  # Phase
NONE, ASLEEP, CONFUSED, PARALYZED = range(4)  # Cond
REASONS = ["none", "prizes", "no_creatures", "deck_out", "draw"]  # WinReason
# rules 7.1: (kind, offset, size)
LAYOUT = [
    ("setup_active", 0, 24),
    ("setup_done", 24, 1),
    ("play_basic", 25, 24),
    ("evolve", 49, 120),
    ("attach", 169, 24),
    ("play_trainer", 193, 90),
    ("retreat", 283, 5),
    ("attack", 288, 2),
    ("end_turn", 290, 1),
    ("promote", 291, 5),
]

_envs: dict[int, Any] = {}


def get_env(max_turns: int | None = None) -> Any:
    k = max_turns or 0
    if k not in _envs:
        _envs[k] = envc.build(str(SPEC), params={"max_turns": max_turns} if max_turns else None)
    return _envs[k]


def consts(env: Any) -> dict[str, np.ndarray]:
    return {c.name: np.array(c.values).reshape(c.ty.shape) for c in env.spec.consts}


def action_id(env: Any, kind: str, **params: int) -> int:
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


def act(env: Any, s: Any, kind: str, seed: int = 7, **params: int) -> Any:
    assert legal(env, s, kind, **params), (kind, params)
    return env.step(s, action_id(env, kind, **params), rng.key_from_seed(seed))


def coins(env: Any, s: Any, kind: str, **params: int) -> tuple[Any, list[bool]]:
    """Take the action with logging on; returns the state and the coin flips, in order."""
    env.chance_log = []
    try:
        out = act(env, s, kind, **params)
        return out, [bool(e.value) for e in env.chance_log if e.kind == "bernoulli"]
    finally:
        env.chance_log = None


def with_coins(env: Any, s: Any, kind: str, want: list[bool], **params: int) -> Any:
    """Take the action with the first key whose coin flips are `want` (found by replaying keys)."""
    env.chance_log = []
    try:
        for seed in range(400):
            env.chance_log.clear()
            out = env.step(s, action_id(env, kind, **params), rng.key_from_seed(seed))
            if [bool(e.value) for e in env.chance_log if e.kind == "bernoulli"] == want:
                return out
    finally:
        env.chance_log = None
    raise AssertionError(f"no key gives the flips {want}")


# ---- data ------------------------------------------------------------------------------------------------------


def test_lint_is_clean() -> None:
    spec, diags = envc.lint(str(SPEC))
    assert spec is not None and [x.format() for x in diags] == []


def test_card_data_follows_the_data_rules() -> None:
    """Rules 3.1-3.5: id ranges, evolution lines, attacks, trainer effects, bounds the loops rely on."""
    env = get_env()
    c = consts(env)
    enum = {e.name: list(e.members) for e in env.spec.enums}
    kinds = [enum["Kind"][k] for k in c["cards.kind"]]
    eff = enum["Effect"]
    params = {p.name: p.default for p in env.spec.params}
    n = len(kinds)
    assert n == int(c["NCARDS"]) if "NCARDS" in c else n == 64
    assert c["cards.id"].tolist() == list(range(n)) and c["attacks.id"].tolist() == list(range(len(c["attacks.id"])))
    ranges = {"basic": (1, 25), "stage1": (25, 37), "stage2": (37, 45), "energy": (60, 64)}
    for kind, (lo, hi) in ranges.items():
        assert [i for i, k in enumerate(kinds) if k == kind] == list(range(lo, hi)), kind
    assert {kinds[i] for i in range(45, 60)} == {"item", "supporter", "stadium"}
    assert kinds[45:60] == sorted(kinds[45:60], key=["item", "supporter", "stadium"].index)
    creatures = [i for i, k in enumerate(kinds) if k in ("basic", "stage1", "stage2")]
    trainers = [i for i, k in enumerate(kinds) if k in ("item", "supporter", "stadium")]
    assert len(creatures) >= 40 and len(trainers) >= 12 and "stadium" in kinds and "supporter" in kinds
    assert {int(c["cards.etype"][i]) for i in creatures} == {0, 1, 2, 3}  # four energy types
    for i in range(60, 64):
        assert int(c["cards.etype"][i]) == i - 60
    prev = {"stage1": "basic", "stage2": "stage1"}
    for i in creatures:
        assert c["cards.hp"][i] > 0 and c["cards.attacks"][i][0] != 0, i
        assert int(c["cards.etype"][i]) < 4
        if kinds[i] in prev:
            base = int(c["cards.evolves_from"][i])
            assert kinds[base] == prev[kinds[i]] and c["cards.etype"][base] == c["cards.etype"][i], i
        else:
            assert c["cards.evolves_from"][i] == 0
    assert sum(kinds[i] == "stage2" for i in creatures) >= 4
    attack_ok = {"none", "coin_bonus", "coin_or_fail", "energy_bonus", "inflict", "coin_inflict", "draw", "heal",
                 "recoil", "bench_damage", "discard_own_energy", "discard_opp_energy"}  # fmt: skip
    trainer_ok = {"draw", "draw_to", "heal", "switch", "gust", "search_basic", "search_energy", "cure",
                  "retrieve_energy", "discard_opp_energy"}  # fmt: skip
    for k in range(1, len(c["attacks.id"])):
        e = eff[c["attacks.effect"][k]]
        assert e in attack_ok, k
        assert (e in ("inflict", "coin_inflict")) == (c["attacks.status"][k] != 0), k
        assert (e == "coin_bonus") == (c["attacks.n"][k] > 0) and c["attacks.n"][k] <= 3, k  # MAX_COINS
        assert 0 < c["attacks.cost"][k].sum() <= 3 and c["attacks.damage"][k] >= 0, k
        if e == "draw":
            assert c["attacks.amount"][k] <= 8  # MAX_DRAW
    for i in trainers:
        e = eff[c["cards.effect"][i]]
        assert (e in trainer_ok) if kinds[i] != "stadium" else e in ("stadium_retreat", "stadium_boost"), i
        if e in ("draw", "draw_to"):
            assert 0 < c["cards.amount"][i] <= 8
    used = {int(a) for i in creatures for a in c["cards.attacks"][i] if a}
    assert used == set(range(1, len(c["attacks.id"])))  # every attack belongs to a creature
    # preset decks: 60 cards, a Basic, at most MAX_COPIES of a card (bounds the deck-building loop)
    copies = c["decks.copies"]
    assert c["decks.card"].tolist() == list(range(n)) and copies.shape[1] >= 2
    assert (copies.sum(axis=0) == params["DECK_SIZE"]).all() and copies.max() <= 12
    assert (copies[1:25].sum(axis=0) >= 1).all() and (copies[0] == 0).all()
    for d in range(copies.shape[1]):
        for i in creatures:
            if copies[i, d] and kinds[i] != "basic":  # every evolution has its base in the deck
                assert copies[int(c["cards.evolves_from"][i]), d] > 0, (d, i)
    assert params["BENCH_SIZE"] + 1 == 6  # POSITIONS (a constant, since a shape cannot be an expression)


def test_action_layout_matches_the_rules() -> None:
    env = get_env()
    assert [(a.name, a.offset, a.size) for a in env.spec.actions] == LAYOUT
    assert env.num_actions == 296
    assert action_id(env, "evolve", c=26, t=4) == 49 + 1 * 6 + 4
    assert action_id(env, "play_trainer", c=59, t=5) == 193 + 14 * 6 + 5
    assert action_id(env, "promote", t=5) == 295


# ---- random games ----------------------------------------------------------------------------------------------


def conserved(env: Any, d: dict[str, np.ndarray]) -> bool:
    """Rules 15, card conservation, computed independently of the spec's own invariant."""
    copies = consts(env)["decks.copies"]
    for q in range(2):
        have = np.zeros(64, np.int64)
        np.add.at(have, d["deck"][q, : d["deck.count"][q]].astype(np.int64), 1)
        np.add.at(have, d["prizes"][q, : d["prizes.count"][q]].astype(np.int64), 1)
        have += d["hand"][q] + d["discard"][q]
        np.add.at(have, d["board.stack"][q].ravel().astype(np.int64), 1)
        have[60:64] += d["board.energy"][q].sum(axis=0)
        if d["stadium"] != 0 and d["stadium_owner"] == q:
            have[int(d["stadium"])] += 1
        have[0] = 0
        if not (have == copies[:, env.params[f"deck_p{q}"]]).all():
            return False
    return True


def play_game(g: int, every: int) -> tuple[str, int]:
    """One uniformly random legal game (the `envc run` policy); declared invariants every `every` steps."""
    env = get_env()
    gen = np.random.default_rng(g)
    s = env.init(rng.key_from_seed(g))
    key = rng.key_from_seed(100_000 + g)
    steps = 0
    while True:
        d = env.state_to_dict(s)
        if steps % every == 0 or s.terminated or s.truncated:
            assert env.invariants(s) == [], (g, steps, env.invariants(s))
        assert conserved(env, d), (g, steps)
        if s.terminated or s.truncated:
            break
        mask = s.legal_action_mask
        assert mask.any(), (g, steps)
        key, sub = rng.split(key)
        s = env.step(s, int(gen.choice(np.flatnonzero(mask))), sub)
        steps += 1
        if not (s.terminated or s.truncated):
            assert not s.rewards.any(), (g, steps)
    assert s.rewards.sum() == 0
    if s.truncated:
        assert not s.rewards.any() and int(d["turn"]) == env.params["max_turns"] + 1 and d["phase"] == MAIN
        return "truncated", steps
    reason = REASONS[int(d["win_reason"])]
    w = int(d["winner"])
    assert d["phase"] == OVER
    if reason == "draw":
        assert w == -1 and not s.rewards.any()
    else:
        assert s.rewards[w] == 1.0 and s.rewards[1 - w] == -1.0
        if reason == "prizes":
            assert d["prizes.count"][w] == 0
        elif reason == "no_creatures":
            assert (d["board.card"][1 - w] == 0).all() and d["prizes.count"][w] > 0
        else:
            assert d["deck.count"][1 - w] == 0 and int(d["turn_player"]) == 1 - w
    return reason, steps


CHUNKS, PER_CHUNK = 4, 16
_results: dict[int, list[tuple[str, int]]] = {}


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_games(chunk: int) -> None:
    # full invariant checks (slow in the interpreter) on every step of the first game of each chunk
    _results[chunk] = [
        play_game(g, 1 if i == 0 else 25) for i, g in enumerate(range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK))
    ]


def test_random_games_end_every_way() -> None:
    """Across 64 random games (seeds fixed): every win condition and truncation (rules 12)."""
    ends: Counter[str] = Counter()
    for g in range(CHUNKS * PER_CHUNK):
        chunk = g // PER_CHUNK
        if chunk not in _results:  # another worker played it
            _results[chunk] = [play_game(h, 10**9) for h in range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK)]
        ends[_results[chunk][g % PER_CHUNK][0]] += 1
    for how in ("prizes", "no_creatures", "deck_out", "truncated"):
        assert ends[how] >= 2, ends


# ---- injected states -------------------------------------------------------------------------------------------


def base(env: Any, turn: int = 5, current: int = 0) -> dict[str, np.ndarray]:
    """A main-phase state of player `current`: empty boards, hands and discard piles; real decks and prizes."""
    d = {k: np.array(v, copy=True) for k, v in env.state_to_dict(env.init(rng.key_from_seed(0))).items()}
    for k in list(d):
        if k.startswith("board."):
            d[k][...] = 0
    for k in ("hand", "hand_size", "discard", "mulligans", "benched"):
        d[k][...] = 0
    d.update(
        phase=np.int8(MAIN),
        turn=np.int16(turn),
        first_player=np.int8(current if turn % 2 else 1 - current),
        turn_player=np.int8(current),
        current_player=np.int32(current),
    )
    d["turns_taken"][current] = (turn + 1) // 2
    d["turns_taken"][1 - current] = turn // 2
    return d


def put(
    d: dict[str, np.ndarray],
    p: int,
    s: int,
    *stack: int,
    energy: tuple[int, ...] = (0, 0, 0, 0),
    damage: int = 0,
    played: int = 1,
    cond: int = NONE,
    poisoned: bool = False,
    burned: bool = False,
) -> None:
    """Put a creature (its evolution stack, Basic first) at position s of player p."""
    d["board.card"][p, s] = stack[-1]
    d["board.stack"][p, s] = list(stack) + [0] * (3 - len(stack))
    d["board.energy"][p, s] = energy
    d["board.damage"][p, s] = damage
    d["board.played"][p, s] = played
    d["board.cond"][p, s] = cond
    d["board.poisoned"][p, s] = poisoned
    d["board.burned"][p, s] = burned
    d["benched"][p] = (d["board.card"][p, 1:] != 0).sum()


def give(d: dict[str, np.ndarray], p: int, *cards: int) -> None:
    for c in cards:
        d["hand"][p, c] += 1
        d["hand_size"][p] += 1


def out(env: Any, s: Any) -> dict[str, np.ndarray]:
    return env.state_to_dict(s)


@pytest.mark.parametrize(
    "attacker, energy, i, defender, stadium, expected",
    [
        ("Cindercub", (0, 0, 0, 1), 0, "Puddlepup", 0, 10),  # fire vs water: base damage (colorless by lightning)
        ("Cindercub", (1, 0, 0, 0), 0, "Sproutkin", 0, 20),  # grass is weak to fire: x2
        ("Zaplet", (0, 0, 0, 1), 0, "Puddlepup", 0, 20),  # water is weak to lightning
        ("Cindercub", (1, 0, 0, 1), 1, "Coralcrab", 0, 0),  # Coralcrab resists fire: 30 - 30
        ("Sproutkin", (0, 0, 1, 0), 0, "Kilnkong", 0, 0),  # resistance floors at 0: 10 - 30
        ("Cindercub", (1, 0, 0, 0), 0, "Sproutkin", ID["Volcano Forge"], 40),  # (10 + 10) x 2: stadium first
        ("Cindercub", (1, 0, 0, 0), 0, "Coralcrab", ID["Volcano Forge"], 0),  # 10 + 10 - 30
        ("Puddlepup", (0, 1, 0, 0), 0, "Sproutkin", ID["Volcano Forge"], 10),  # the boost is for fire only
        ("Puddlepup", (0, 1, 0, 0), 0, "Cindercub", ID["Tidal Grotto"], 40),  # (10 + 10) x 2
    ],
)
def test_damage_order_of_operations(
    attacker: str, energy: tuple[int, ...], i: int, defender: str, stadium: int, expected: int
) -> None:
    """Rules 8.3: stadium boost, then weakness x2, then resistance -30 floored at 0."""
    env = get_env()
    d = base(env)
    put(d, 0, 0, ID[attacker], energy=energy)
    put(d, 1, 0, ID[defender])
    put(d, 1, 1, ID["Budlet"])
    d["stadium"], d["stadium_owner"] = np.int8(stadium), np.int8(1 if stadium else -1)
    s, flips = coins(env, env.state_from_dict(d), "attack", i=i)
    o = out(env, s)
    assert o["board.damage"][1, 0] == expected and flips == []
    assert o["turn_player"] == 1 and o["turn"] == 6 and o["hand_size"][1] == 1  # the next turn began with a draw


def test_attack_costs_and_first_turn() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, ID["Cindercub"], energy=(0, 1, 0, 0))  # water pays Scratch's colorless, not Ember's fire
    put(d, 1, 0, ID["Puddlepup"])
    s = env.state_from_dict(d)
    assert legal(env, s, "attack", i=0) and not legal(env, s, "attack", i=1)
    d["board.energy"][0, 0] = (1, 0, 0, 0)  # one fire: Ember needs fire + 1 more
    assert not legal(env, env.state_from_dict(d), "attack", i=1)
    d["board.energy"][0, 0] = (2, 0, 0, 0)
    assert legal(env, env.state_from_dict(d), "attack", i=1)
    put(d, 0, 0, ID["Drizzlet"], energy=(5, 5, 5, 5))  # slot 1 holds no attack
    assert not legal(env, env.state_from_dict(d), "attack", i=1)
    d2 = base(env, turn=1)  # the first player's first turn: no attack
    put(d2, 0, 0, ID["Cindercub"], energy=(2, 0, 0, 0))
    put(d2, 1, 0, ID["Puddlepup"])
    assert not kind_legal(env, env.state_from_dict(d2), "attack")
    for cond in (ASLEEP, PARALYZED):
        d["board.cond"][0, 0] = cond
        assert not kind_legal(env, env.state_from_dict(d), "attack")


def test_knockout_prize_and_promotion() -> None:
    """Rules 11: the creature and its attached cards are discarded, the attacker takes the top prize, the
    defender promotes, then the defender's turn begins."""
    env = get_env()
    d = base(env)
    put(d, 0, 0, ID["Puddlepup"], energy=(0, 1, 0, 1))
    put(d, 1, 0, ID["Sparkit"], ID["Flarefox"], energy=(2, 0, 0, 1), damage=40)  # 60 HP
    put(d, 1, 3, ID["Ashmoth"])
    put(d, 1, 5, ID["Smolderbug"])
    top_prize = int(d["prizes"][0, d["prizes.count"][0] - 1])
    s = act(env, env.state_from_dict(d), "attack", i=1)  # Water Gun 30 x 2 (weakness) >= 20 left
    o = out(env, s)
    assert (o["board.card"][1, 0], o["board.energy"][1, 0].sum(), o["board.damage"][1, 0]) == (0, 0, 0)
    assert o["discard"][1, ID["Sparkit"]] == 1 and o["discard"][1, ID["Flarefox"]] == 1
    assert o["discard"][1, FIRE_E] == 2 and o["discard"][1, LIGHTNING_E] == 1
    assert o["prizes.count"][0] == d["prizes.count"][0] - 1 and o["hand"][0, top_prize] == 1
    assert o["phase"] == PROMOTE and o["current_player"] == 1 and o["turn"] == 5
    assert kind_legal(env, s, "promote") and not legal(env, s, "promote", t=1) and not kind_legal(env, s, "end_turn")
    s = act(env, s, "promote", t=5)
    o = out(env, s)
    assert o["board.card"][1, 0] == ID["Smolderbug"] and o["board.card"][1, 5] == 0 and o["board.card"][1, 3] != 0
    assert o["phase"] == MAIN and o["turn"] == 6 and o["current_player"] == 1 and o["turn_player"] == 1


def test_last_prize_wins_and_both_winning_is_a_draw() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, ID["Puddlepup"], energy=(0, 2, 0, 0))
    put(d, 0, 1, ID["Drizzlet"])
    put(d, 1, 0, ID["Cindercub"], damage=40)
    put(d, 1, 1, ID["Ashmoth"])
    d["prizes.count"][0] = 1
    d["prizes"][0, 1:] = 0
    s = act(env, env.state_from_dict(d), "attack", i=0)
    o = out(env, s)
    assert s.terminated and REASONS[int(o["win_reason"])] == "prizes" and o["winner"] == 0
    assert s.rewards.tolist() == [1.0, -1.0]
    # Heavy Slam: 60 to the defender, 20 recoil; both Actives are knocked out and neither has a Bench
    d = base(env)
    put(d, 0, 0, ID["Kilnkong"], energy=(2, 0, 0, 0), damage=60)
    put(d, 1, 0, ID["Emberlizard"])
    s = act(env, env.state_from_dict(d), "attack", i=1)
    o = out(env, s)
    assert s.terminated and REASONS[int(o["win_reason"])] == "draw" and o["winner"] == -1
    assert s.rewards.tolist() == [0.0, 0.0] and (o["board.card"] == 0).all()
    # the same with a Benched creature left for the attacker: the attacker wins by no creatures
    put(d, 0, 2, ID["Sparkit"])
    s = act(env, env.state_from_dict(d), "attack", i=1)
    o = out(env, s)
    assert REASONS[int(o["win_reason"])] == "no_creatures" and o["winner"] == 0 and s.rewards.tolist() == [1.0, -1.0]


def test_deck_out_and_truncation() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, ID["Puddlepup"])
    put(d, 1, 0, ID["Cindercub"])
    d["deck"][1] = 0
    d["deck.count"][1] = 0
    s = act(env, env.state_from_dict(d), "end_turn")
    o = out(env, s)
    assert s.terminated and REASONS[int(o["win_reason"])] == "deck_out" and o["winner"] == 0
    assert o["turn_player"] == 1 and o["turn"] == 6 and s.rewards.tolist() == [1.0, -1.0]
    assert s.legal_action_mask.all()  # framework convention at the end
    # the turn limit: the step that begins turn max_turns + 1 is truncated, after its draw
    env3 = get_env(max_turns=5)
    d = base(env3)
    put(d, 0, 0, ID["Puddlepup"])
    put(d, 1, 0, ID["Cindercub"])
    s = act(env3, env3.state_from_dict(d), "end_turn")
    o = out(env3, s)
    assert s.truncated and not s.terminated and o["turn"] == 6 and o["hand_size"][1] == 1 and not s.rewards.any()


def test_evolution_legality() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, ID["Cindercub"], damage=30, played=4, cond=ASLEEP, poisoned=True, burned=True)
    put(d, 0, 1, ID["Sparkit"], played=5)  # came into play this turn
    put(d, 0, 2, ID["Sparkit"], ID["Flarefox"], played=3)
    put(d, 1, 0, ID["Puddlepup"])
    give(d, 0, ID["Blazebear"], ID["Flarefox"], ID["Pyrovixen"], ID["Infernursa"])
    s = env.state_from_dict(d)
    assert legal(env, s, "evolve", c=ID["Blazebear"], t=0)
    assert not legal(env, s, "evolve", c=ID["Flarefox"], t=1)  # played this turn
    assert not legal(env, s, "evolve", c=ID["Flarefox"], t=0)  # wrong base
    assert legal(env, s, "evolve", c=ID["Pyrovixen"], t=2)  # Stage 2 onto its Stage 1
    assert not legal(env, s, "evolve", c=ID["Infernursa"], t=0)  # not onto a Basic
    assert not legal(env, s, "evolve", c=ID["Blazebear"], t=3)  # empty position
    o = out(env, act(env, s, "evolve", c=ID["Blazebear"], t=0))
    assert o["board.card"][0, 0] == ID["Blazebear"]
    assert o["board.stack"][0, 0].tolist() == [ID["Cindercub"], ID["Blazebear"], 0]
    assert o["board.damage"][0, 0] == 30 and o["board.played"][0, 0] == 5 and o["hand"][0, ID["Blazebear"]] == 0
    assert (o["board.cond"][0, 0], o["board.poisoned"][0, 0], o["board.burned"][0, 0]) == (NONE, False, False)
    s2 = act(env, act(env, s, "evolve", c=ID["Pyrovixen"], t=2), "evolve", c=ID["Blazebear"], t=0)
    assert not legal(env, s2, "evolve", c=ID["Infernursa"], t=0)  # evolved this turn
    o = out(env, s2)
    assert o["board.stack"][0, 2].tolist() == [ID["Sparkit"], ID["Flarefox"], ID["Pyrovixen"]]
    # nobody evolves on their first turn: turn 2 is the second player's first turn
    d = base(env, turn=2)
    put(d, 0, 0, ID["Cindercub"], played=0)
    put(d, 1, 0, ID["Puddlepup"])
    give(d, 0, ID["Blazebear"])
    assert not kind_legal(env, env.state_from_dict(d), "evolve")


def test_retreat_cost_and_conditions() -> None:
    """Rules 7.7: cost energy discarded in type order; Asleep/Paralyzed cannot retreat; Windy Plateau."""
    env = get_env()
    d = base(env)
    put(d, 0, 0, ID["Magmadillo"], energy=(0, 1, 2, 1), damage=20, cond=CONFUSED, poisoned=True)  # retreat 2
    put(d, 0, 4, ID["Cindercub"], energy=(1, 0, 0, 0))
    put(d, 1, 0, ID["Puddlepup"])
    s = env.state_from_dict(d)
    assert legal(env, s, "retreat", t=4) and not legal(env, s, "retreat", t=1)
    o = out(env, act(env, s, "retreat", t=4))
    assert o["board.card"][0, 0] == ID["Cindercub"] and o["board.card"][0, 4] == ID["Magmadillo"]
    assert o["board.energy"][0, 4].tolist() == [0, 0, 1, 1]  # cost 2: water, then one grass (type order)
    assert o["discard"][0, WATER_E] == 1 and o["discard"][0, GRASS_E] == 1
    assert o["board.damage"][0, 4] == 20 and not o["board.poisoned"][0, 4] and o["board.cond"][0, 4] == NONE
    assert o["retreats_this_turn"] == 1
    s2 = env.state_from_dict(o)
    assert not kind_legal(env, s2, "retreat")  # once per turn
    d["board.energy"][0, 0] = (0, 0, 0, 1)
    assert not kind_legal(env, env.state_from_dict(d), "retreat")  # 1 energy < 2
    d["stadium"], d["stadium_owner"] = np.int8(ID["Windy Plateau"]), np.int8(1)
    o = out(env, act(env, env.state_from_dict(d), "retreat", t=4))
    assert o["board.energy"][0, 4].tolist() == [0, 0, 0, 0] and o["discard"][0, LIGHTNING_E] == 1  # cost 2 - 1
    for cond in (ASLEEP, PARALYZED):
        d["board.cond"][0, 0] = cond
        assert not kind_legal(env, env.state_from_dict(d), "retreat")


def test_checkup_order_and_coins() -> None:
    """Rules 10.3: turn player's Active first (poison, burn + flip, sleep flip, paralysis ends), then the
    opponent's; knock-outs after the whole checkup."""
    env = get_env()
    d = base(env)
    put(d, 0, 0, ID["Kilnkong"], cond=ASLEEP, poisoned=True, burned=True)
    put(d, 0, 1, ID["Sparkit"])
    put(d, 1, 0, ID["Coralcrab"], cond=ASLEEP, burned=True)
    put(d, 1, 2, ID["Budlet"])
    s = env.state_from_dict(d)
    for want in ([True, False, False, True], [False, True, True, False]):
        o = out(env, with_coins(env, s, "end_turn", want))
        assert o["board.damage"][0, 0] == 30 and o["board.damage"][1, 0] == 20
        assert o["board.burned"][0, 0] == (not want[0]) and (o["board.cond"][0, 0] == NONE) == want[1]
        assert o["board.burned"][1, 0] == (not want[2]) and (o["board.cond"][1, 0] == NONE) == want[3]
        assert o["board.poisoned"][0, 0] and o["turn_player"] == 1
    # paralysis ends at the checkup after its owner's turn only
    put(d, 0, 0, ID["Kilnkong"], cond=PARALYZED)
    put(d, 1, 0, ID["Coralcrab"], cond=PARALYZED)
    o, flips = coins(env, env.state_from_dict(d), "end_turn")
    assert flips == []
    o = out(env, o)
    assert o["board.cond"][0, 0] == NONE and o["board.cond"][1, 0] == PARALYZED
    # a checkup knock-out: poison finishes the opponent's Active; it promotes before its turn begins
    put(d, 0, 0, ID["Kilnkong"])
    put(d, 1, 0, ID["Coralcrab"], damage=50, poisoned=True)
    s, flips = coins(env, env.state_from_dict(d), "end_turn")
    o = out(env, s)
    assert flips == [] and o["board.card"][1, 0] == 0 and o["phase"] == PROMOTE and o["current_player"] == 1
    assert o["prizes.count"][0] == d["prizes.count"][0] - 1


def test_confusion_flips_before_the_attack() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, ID["Sparkit"], ID["Flarefox"], energy=(2, 0, 0, 0), cond=CONFUSED)  # Fox Fire: 20 + 20/heads x2
    put(d, 1, 0, ID["Kilnkong"])
    s = env.state_from_dict(d)
    o = out(env, with_coins(env, s, "attack", [False], i=0))  # tails: 30 to itself, no attack coins
    assert o["board.damage"][0, 0] == 30 and o["board.damage"][1, 0] == 0 and o["turn_player"] == 1
    o = out(env, with_coins(env, s, "attack", [True, True, False], i=0))
    assert o["board.damage"][0, 0] == 0 and o["board.damage"][1, 0] == 40
    # coin_inflict flips after the damage; Static Jolt paralyzes on heads
    put(d, 0, 0, ID["Zaplet"], energy=(0, 0, 0, 2))
    put(d, 1, 0, ID["Puddlepup"], damage=0)
    o = out(env, with_coins(env, env.state_from_dict(d), "attack", [True], i=1))
    assert o["board.cond"][1, 0] == PARALYZED and o["board.damage"][1, 0] == 40


def test_trainers() -> None:
    """Rules 9: one supporter per turn, targets, the stadium slot, search and its shuffle."""
    env = get_env()
    d = base(env)
    put(d, 0, 0, ID["Cindercub"], damage=20, cond=ASLEEP)
    put(d, 0, 2, ID["Sparkit"], energy=(1, 0, 0, 0))
    put(d, 1, 0, ID["Puddlepup"], energy=(0, 1, 1, 0))
    put(d, 1, 4, ID["Drizzlet"])
    give(d, 0, ID["Field Medic"], ID["Scholar's Notes"], ID["Swap Whistle"], ID["Rival's Challenge"],
         ID["Static Shears"], ID["Lure Net"], ID["Volcano Forge"], ID["Clear Tonic"])  # fmt: skip
    s = env.state_from_dict(d)
    targets = {
        name: [t for t in range(6) if legal(env, s, "play_trainer", c=ID[name], t=t)]
        for name in ("Field Medic", "Swap Whistle", "Rival's Challenge", "Scholar's Notes", "Static Shears")
    }
    # heal: a damaged own creature; switch: an own Benched one; gust: an opponent's Benched one; else t = 0
    assert targets == {
        "Field Medic": [0],
        "Swap Whistle": [2],
        "Rival's Challenge": [4],
        "Scholar's Notes": [0],
        "Static Shears": [0],
    }
    s = act(env, s, "play_trainer", c=ID["Field Medic"], t=0)
    o = out(env, s)
    assert o["board.damage"][0, 0] == 0 and o["supporters_this_turn"] == 1 and o["discard"][0, ID["Field Medic"]] == 1
    assert not legal(env, s, "play_trainer", c=ID["Scholar's Notes"], t=0)
    assert not legal(env, s, "play_trainer", c=ID["Rival's Challenge"], t=4)  # one supporter per turn
    s = act(env, s, "play_trainer", c=ID["Static Shears"], t=0)
    assert out(env, s)["board.energy"][1, 0].tolist() == [0, 0, 1, 0]  # water goes first (type order)
    s = act(env, s, "play_trainer", c=ID["Clear Tonic"], t=0)
    assert out(env, s)["board.cond"][0, 0] == NONE
    s = act(env, s, "play_trainer", c=ID["Swap Whistle"], t=2)
    o = out(env, s)
    assert o["board.card"][0, 0] == ID["Sparkit"] and o["board.card"][0, 2] == ID["Cindercub"]
    s = act(env, s, "play_trainer", c=ID["Volcano Forge"], t=0)
    o = out(env, s)
    assert o["stadium"] == ID["Volcano Forge"] and o["stadium_owner"] == 0 and o["stadiums_this_turn"] == 1
    deck_before = d["deck"][0, : d["deck.count"][0]].tolist()
    env.chance_log = []
    try:
        s = act(env, s, "play_trainer", c=ID["Lure Net"], t=0)
        log = list(env.chance_log)
    finally:
        env.chance_log = None
    o = out(env, s)
    basics = [i for i, c in enumerate(deck_before) if 1 <= c < 25]
    taken = deck_before[basics[-1]] if basics else 0
    rest = deck_before[: basics[-1]] + deck_before[basics[-1] + 1 :] if basics else deck_before
    assert [(e.kind, e.zone, e.index) for e in log] == [("shuffle", "deck", (0,))]
    assert sorted(log[0].value) == sorted(rest) and o["deck"][0, : o["deck.count"][0]].tolist() == list(log[0].value)
    assert o["hand"][0, taken] == (1 if taken else 0)


def test_setup_and_hidden_boards() -> None:
    """Rules 5: the first chance event is the first-player coin, then each deck's shuffle; setup actions;
    the opponent's board is hidden while setting up."""
    env = get_env()
    for seed in range(6):
        env.chance_log = []
        try:
            s = env.init(rng.key_from_seed(seed))
            log = list(env.chance_log)
        finally:
            env.chance_log = None
        o = out(env, s)
        assert log[0].kind == "bernoulli" and int(o["first_player"]) == (0 if log[0].value else 1)
        shuffles = [(e.zone, e.index) for e in log[1:]]
        m0, m1 = int(o["mulligans"][0]), int(o["mulligans"][1])
        assert shuffles == [("deck", (0,))] * (1 + m0) + [("deck", (1,))] * (1 + m1)
        assert o["phase"] == SETUP and o["current_player"] == o["first_player"] and o["turn"] == 0
        for q in range(2):
            assert o["hand_size"][q] == 7 + max(0, int(o["mulligans"][1 - q]) - int(o["mulligans"][q]))
            assert o["prizes.count"][q] == 6 and o["deck.count"][q] == 60 - 6 - o["hand_size"][q]
            assert o["hand"][q, 1:25].sum() >= 1
        assert env.invariants(s) == []
        # the first player sets up: an Active, a Benched Basic, done; then the second player
        first = int(o["first_player"])
        basics = [c for c in range(1, 25) if o["hand"][first, c] > 0]
        assert not kind_legal(env, s, "play_basic") and not kind_legal(env, s, "setup_done")
        s = act(env, s, "setup_active", c=basics[0])
        assert s.current_player == first and not kind_legal(env, s, "setup_active")
        s = act(env, s, "setup_done")
        assert s.current_player == 1 - first
        assert (env.observe(s, 1 - first)["boards"][1] == 0).all()  # hidden from the second player
        assert env.observe(s, first)["boards"][0, 0, 0] == basics[0]
        basics2 = [c for c in range(1, 25) if o["hand"][1 - first, c] > 0]
        s = act(env, s, "setup_active", c=basics2[-1])
        s = act(env, s, "setup_done")
        o2 = out(env, s)
        assert o2["phase"] == MAIN and o2["turn"] == 1 and s.current_player == first
        assert o2["hand_size"][first] == o["hand_size"][first]  # drew one, played one
        assert env.observe(s, 1 - first)["boards"][1, 0, 0] == basics[0]  # revealed once the game starts
        assert env.invariants(s) == []


def test_observation_layout() -> None:
    env = get_env()
    d = base(env)
    put(d, 0, 0, ID["Sparkit"], ID["Flarefox"], energy=(2, 0, 1, 0), damage=10, played=5, cond=CONFUSED, burned=True)
    put(d, 1, 3, ID["Drizzlet"])
    put(d, 1, 0, ID["Puddlepup"], poisoned=True)
    give(d, 0, FIRE_E, FIRE_E, ID["Lure Net"])
    give(d, 1, WATER_E)
    d["discard"][1, ID["Scout Goggles"]] = 2
    d["stadium"], d["stadium_owner"] = np.int8(ID["Tidal Grotto"]), np.int8(1)
    s = env.state_from_dict(d)
    ob = env.observe(s, 0)
    shapes = {k: v.shape for k, v in ob.items()}
    assert shapes == {"my_hand": (64,), "boards": (2, 6, 12), "discards": (2, 64), "info": (21,)}
    assert ob["my_hand"][FIRE_E] == 2 and ob["my_hand"].sum() == 3
    card, basic, stage1 = ID["Flarefox"], ID["Sparkit"], ID["Flarefox"]
    assert ob["boards"][0, 0].tolist() == [card, basic, stage1, 10, 2, 0, 1, 0, 0, 1, CONFUSED, 1]
    assert ob["boards"][1, 0, 8] == 1 and ob["boards"][1, 3, 0] == ID["Drizzlet"] and ob["boards"][1, 3, 11] == 0
    assert ob["discards"][1, ID["Scout Goggles"]] == 2
    info = ob["info"].tolist()
    assert info[:5] == [MAIN, 5, 1, 1, d["first_player"] == 0] and info[5] == 3 and info[10] == 1
    assert info[6] == d["deck.count"][0] and info[12] == d["prizes.count"][1] and info[19:] == [ID["Tidal Grotto"], 1]
    ob1 = env.observe(s, 1)
    assert ob1["my_hand"].sum() == 1 and ob1["boards"][1, 0, 0] == ID["Flarefox"] and ob1["info"][20] == 0
    assert ob1["info"][2] == 0 and ob1["info"][5] == 1 and ob1["info"][10] == 3


def test_more_effects() -> None:
    """Rules 8.4 and 9.3: bench damage, discarding the attacker's energy, recoil, gust, draw_to, retrieve."""
    env = get_env()
    d = base(env)
    put(d, 0, 0, ID["Cindercub"], ID["Blazebear"], ID["Infernursa"], energy=(3, 0, 0, 1))  # Heat Wave: 40 + 20 bench
    put(d, 1, 0, ID["Puddlepup"])
    put(d, 1, 2, ID["Drizzlet"], damage=30)
    put(d, 1, 5, ID["Budlet"])
    o = out(env, act(env, env.state_from_dict(d), "attack", i=0))
    assert o["board.damage"][1, 0] == 40 and o["board.damage"][1, 5] == 20  # no weakness on the Bench
    assert o["board.card"][1, 2] == 0 and o["prizes.count"][0] == d["prizes.count"][0] - 1  # Drizzlet: 50 >= 40
    o = out(env, act(env, env.state_from_dict(d), "attack", i=1))  # Inferno Blast 110, discard 2 (fire first)
    assert o["board.energy"][0, 0].tolist() == [1, 0, 0, 1] and o["discard"][0, FIRE_E] == 2
    # gust: the opponent's Active loses its conditions and goes to the Bench
    d = base(env)
    put(d, 0, 0, ID["Puddlepup"])
    put(d, 1, 0, ID["Cindercub"], cond=ASLEEP, poisoned=True, damage=10)
    put(d, 1, 3, ID["Budlet"])
    give(d, 0, ID["Rival's Challenge"], ID["Quartermaster"], ID["Recycler"], ID["Scout Goggles"])
    d["discard"][0, WATER_E], d["discard"][0, GRASS_E] = 1, 3
    s = act(env, env.state_from_dict(d), "play_trainer", c=ID["Rival's Challenge"], t=3)
    o = out(env, s)
    assert o["board.card"][1, 0] == ID["Budlet"] and o["board.card"][1, 3] == ID["Cindercub"]
    assert (o["board.cond"][1, 3], o["board.poisoned"][1, 3], o["board.damage"][1, 3]) == (NONE, False, 10)
    s = act(env, s, "play_trainer", c=ID["Recycler"], t=0)  # 2 energy cards, water first
    o = out(env, s)
    assert o["hand"][0, WATER_E] == 1 and o["hand"][0, GRASS_E] == 1 and o["discard"][0, GRASS_E] == 2
    assert o["hand_size"][0] == 4  # Quartermaster, Scout Goggles and the two energy cards
    assert not legal(env, s, "play_trainer", c=ID["Quartermaster"], t=0)  # one supporter per turn
    d["supporters_this_turn"] = np.int8(0)
    s = act(env, env.state_from_dict(d), "play_trainer", c=ID["Quartermaster"], t=0)  # draw until 6 in hand
    o = out(env, s)
    assert o["hand_size"][0] == 6 and o["deck.count"][0] == d["deck.count"][0] - 3
    drawn = d["deck"][0, d["deck.count"][0] - 3 : d["deck.count"][0]]
    assert all(o["hand"][0, c] >= 1 for c in drawn)


def reconstruct_setup(log: list[Any]) -> dict[str, Any]:
    """Rules 5.2-5.4 replayed by hand from the logged shuffles: hands, prizes and decks of both players."""
    last = {q: [e for e in log if e.kind == "shuffle" and e.index == (q,)] for q in range(2)}
    mull = {q: len(last[q]) - 1 for q in range(2)}
    decks, hands, prizes = {}, {}, {}
    for q in range(2):
        deck = [int(c) for c in last[q][-1].value]  # bottom to top, after the last shuffle
        hand, deck = deck[-7:], deck[:-7]
        if not any(1 <= c < 25 for c in hand):  # rules 5.2.5: the topmost Basic joins the hand
            i = max(i for i, c in enumerate(deck) if 1 <= c < 25)
            hand.append(deck.pop(i))
        decks[q], hands[q] = deck, hand
    for q in range(2):
        prizes[q] = [decks[q].pop() for _ in range(6)]  # the first card taken is at the bottom
    for q in range(2):
        for _ in range(max(0, mull[1 - q] - mull[q])):
            hands[q].append(decks[q].pop())
    return {"deck": decks, "hand": hands, "prizes": prizes, "mulligans": mull}


def few_basics_env(tmp: Path) -> Any:
    """The same spec with preset deck 0 rewritten to hold a single Basic (1 Cindercub, 12 of each energy card,
    11 trainers), so that mulligans and the fallback of rules 5.2.5 are common."""
    for f in ("tcg.yaml", "tcg_cards.csv", "tcg_attacks.csv"):
        (tmp / f).write_text((ROOT / "specs" / f).read_text())
    rows = list(csv.DictReader(open(ROOT / "specs" / "tcg_decks.csv")))
    lonely = {ID["Cindercub"]: 1, **{e: 12 for e in range(60, 64)}, **{c: 1 for c in range(45, 56)}}
    for r in rows:
        k = r["copies"].split(";")
        k[0] = str(lonely.get(int(r["card"]), 0))
        r["copies"] = ";".join(k)
    with open(tmp / "tcg_decks.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return envc.build(str(tmp / "tcg.yaml"))


def test_setup_follows_the_rules(tmp_path: Path) -> None:
    """Rules 5.2-5.4, replayed from the logged shuffles; deck 0 with one Basic exercises mulligans and the
    fallback, the extra cards of the opponent (and the regular presets the no-mulligan path)."""
    seen: Counter[str] = Counter()
    for env in (get_env(), few_basics_env(tmp_path)):
        for seed in range(12):
            env.chance_log = []
            try:
                s = env.init(rng.key_from_seed(seed))
                log = list(env.chance_log)
            finally:
                env.chance_log = None
            o = out(env, s)
            want = reconstruct_setup(log)
            for q in range(2):
                assert o["mulligans"][q] == want["mulligans"][q]
                assert o["deck"][q, : o["deck.count"][q]].tolist() == want["deck"][q]
                assert o["prizes"][q, : o["prizes.count"][q]].tolist() == want["prizes"][q]
                assert o["hand"][q].tolist() == np.bincount(want["hand"][q], minlength=64).tolist()
                assert o["hand_size"][q] == len(want["hand"][q])
            m0 = want["mulligans"][0]
            seen["fallback" if o["hand_size"][0] == 8 + max(0, want["mulligans"][1] - m0) else f"m{m0}"] += 1
            assert env.invariants(s) == []
    assert seen["fallback"] >= 2 and seen["m0"] >= 2 and seen["m1"] + seen["m2"] + seen["m3"] >= 1, seen
