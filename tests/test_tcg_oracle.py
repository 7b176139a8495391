"""The TCG proof (issue 5): an independent Python implementation of docs/tcg-rules.md (tests/tcg_oracle) and
the reference interpreter of specs/tcg.yaml play the same random games with the same shuffles and coin flips
and agree at every step; plus the oracle's own unit tests on hand-built situations from the rules document."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tcg_oracle import (
    ACTIONS,
    NUM_ACTIONS,
    ChanceMismatch,
    Cond,
    Creature,
    Game,
    IllegalAction,
    Phase,
    RandomChance,
    ScriptedChance,
    WinReason,
    engine_state,
    game_from_engine_state,
    is_legal,
    legal_mask,
    new_game,
    observe,
    step,
)
from tcg_oracle.cards import FIRST_ENERGY, MAX_COINS, MAX_COPIES, MAX_DRAW, MAX_TURNS, NCARDS, Effect, Kind, load_pool
from tcg_oracle.layout import ActionKind
from tcg_oracle.state import Player

import envc
from envc import rng
from envc.interpret import ChanceEvent

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "tcg.yaml"

GAMES = 500
CHUNKS = 20
# Each chunk plays one pair of preset decks (2. `deck_p0`, `deck_p1`), so all four decks are exercised. The
# reference keeps its spec's default `max_turns`; the oracle gets the doc's (2.), so a drift shows up as a
# disagreement.
DECK_PAIRS = [(0, 1), (1, 0), (2, 3), (3, 2), (0, 2), (1, 3), (2, 0), (3, 1), (0, 3), (1, 2)]

# The doc section that decides each compared field (a hint in failure messages; the log gives the verdict).
RULE_OF_FIELD = {
    "current_player": "4.8, 7.3, 11.4",
    "legal_action_mask": "7.1-7.11, 9.2",
    "rewards": "12.2",
    "terminated": "12.3",
    "truncated": "12.3",
    "obs.my_hand": "14.1",
    "obs.boards": "14.2, 14.3",
    "obs.discards": "14.1",
    "obs.info": "14.4",
    "chance": "13",
    "action": "7.1-7.11 (the oracle refused an action the reference took)",
}

OBS_FIELDS = ("my_hand", "boards", "discards", "info")  # 14.1
ENGINE_FIELDS = tuple(engine_state(new_game(RandomChance(0))).keys())  # 15


# --------------------------------------------------------------------------------------------------------
# The harness


@cache
def reference_spec() -> Any:
    return envc.load(SPEC)


@cache
def reference_env(deck_p0: int, deck_p1: int) -> Any:
    return envc.build(reference_spec(), params={"deck_p0": deck_p0, "deck_p1": deck_p1})


def script_of(events: list[ChanceEvent]) -> list[tuple[str, object]]:
    """The reference's chance log as the oracle's script; any kind but a coin flip or a deck shuffle is a bug."""
    out: list[tuple[str, object]] = []
    for ev in events:
        if ev.kind == "bernoulli":
            out.append(("flip", bool(ev.value)))
        elif ev.kind == "shuffle":
            if ev.zone != "deck" or len(ev.index) != 1:
                raise ChanceMismatch(f"13: a shuffle is always of a player's deck, the reference shuffled {ev}")
            out.append(("shuffle", [int(c) for c in ev.value]))
        else:
            raise ChanceMismatch(f"13: only coin flips and shuffles are chance events, the reference drew {ev}")
    return out


@dataclass
class Disagreement:
    """The first place one game's two implementations differ."""

    seed: int
    decks: tuple[int, int]
    step: int
    action: str
    field: str
    detail: str

    def __str__(self) -> str:
        rule = RULE_OF_FIELD.get(self.field.split("[")[0].split("(")[0], "15 (engine state)")
        return (
            f"seed {self.seed} decks {self.decks} step {self.step} after action {self.action}: "
            f"{self.field}: {self.detail} (rule {rule})"
        )


def first_difference(name: str, ref: Any, ours: Any) -> tuple[str, str] | None:
    """None when equal, else (field with index, "reference X, oracle Y")."""
    a = np.asarray(ref)
    b = np.asarray(ours)
    if a.shape == b.shape and np.array_equal(a, b):
        return None
    if a.shape != b.shape:
        return name, f"shape: reference {a.shape}, oracle {b.shape}"
    diff = np.argwhere(a != b)
    if len(diff) == 0:
        return None
    idx = tuple(int(i) for i in diff[0])
    return f"{name}{list(idx)}", f"reference {a[idx]!r}, oracle {b[idx]!r} ({len(diff)} values differ)"


def reference_observation(env: Any, s: Any, p: int) -> dict[str, Any]:
    """Player `p`'s observation on the reference (the state carries the current player's already)."""
    return dict(s.observation) if p == int(s.current_player) else dict(env.observe(s, p))


def compare(env: Any, s: Any, game: Game) -> tuple[str, str] | None:
    """Everything both implementations expose after init or a step, in a fixed order."""
    checks: list[tuple[str, Any, Any]] = [
        ("current_player", int(s.current_player), game.current_player),
        ("rewards", np.asarray(s.rewards, dtype=np.float32), np.asarray(game.rewards, dtype=np.float32)),
        ("terminated", bool(s.terminated), game.terminated),
        ("truncated", bool(s.truncated), game.truncated),
        ("legal_action_mask", np.asarray(s.legal_action_mask, dtype=bool), np.asarray(legal_mask(game))),
    ]
    ref_state = env.state_to_dict(s)
    our_state = engine_state(game)
    for name in ENGINE_FIELDS:
        if name not in ref_state:
            return name, "the reference's state_to_dict has no such field"
        checks.append((name, ref_state[name], our_state[name]))
    for p in (0, 1):
        ref_obs = reference_observation(env, s, p)
        our_obs = observe(game, p)
        for name in OBS_FIELDS:
            if name not in ref_obs:
                return f"obs.{name}", f"player {p}: the reference's observation lacks it (has {sorted(ref_obs)})"
            checks.append((f"obs.{name}(player {p})", ref_obs[name], our_obs[name]))
    for name, ref, ours in checks:
        found = first_difference(name, ref, ours)
        if found:
            return found
    return None


# Two random legal policies: uniform, and one that prefers attacking and building up (attack x20, attach and
# evolve x4, play_basic x2, end_turn x0.5, retreat x0.3), so knock-outs, prizes and promotions are common
# (uniform play mostly ends by deck-out or truncation).
KIND_WEIGHT = {
    ActionKind.ATTACK: 20.0,
    ActionKind.ATTACH: 4.0,
    ActionKind.EVOLVE: 4.0,
    ActionKind.PLAY_BASIC: 2.0,
    ActionKind.END_TURN: 0.5,
    ActionKind.RETREAT: 0.3,
}
POLICY_WEIGHTS = {
    "uniform": np.ones(NUM_ACTIONS),
    "attacker": np.array([KIND_WEIGHT.get(a.kind, 1.0) for a in ACTIONS]),
}


def choose(actions: np.random.Generator, mask: np.ndarray, policy: str) -> int:
    """A random legal action, weighted by the policy."""
    w = POLICY_WEIGHTS[policy] * mask
    return int(actions.choice(NUM_ACTIONS, p=w / w.sum()))


def play_and_compare(
    seed: int, deck_p0: int, deck_p1: int, policy: str = "uniform"
) -> tuple[Disagreement | None, int]:
    """One random game on both implementations; the first disagreement (or None) and the steps played."""
    env = reference_env(deck_p0, deck_p1)
    decks = (deck_p0, deck_p1)
    actions = np.random.default_rng(seed)
    key = rng.key_from_seed(seed)
    key, sub = rng.split(key)
    chance = ScriptedChance()

    def replay(events: list[ChanceEvent], run: Any, at: int, action: str) -> Disagreement | None:
        try:
            chance.load(script_of(events))
            run()
            chance.finish()
        except (ChanceMismatch, IllegalAction) as e:
            field = "chance" if isinstance(e, ChanceMismatch) else "action"
            return Disagreement(seed, decks, at, action, field, str(e))
        return None

    env.chance_log = []
    s = env.init(sub)
    holder: list[Game] = []
    failed = replay(
        env.chance_log, lambda: holder.append(new_game(chance, deck_p0, deck_p1, MAX_TURNS)), 0, "init"
    )
    if failed:
        return failed, 0
    game = holder[0]
    found = compare(env, s, game)
    if found:
        return Disagreement(seed, decks, 0, "init", *found), 0
    n = 0
    while not (bool(s.terminated) or bool(s.truncated)):
        a = choose(actions, np.asarray(s.legal_action_mask), policy)
        key, sub = rng.split(key)
        env.chance_log = []
        s = env.step(s, a, sub)
        n += 1
        failed = replay(env.chance_log, lambda a=a: step(game, a, chance), n, str(ACTIONS[a]))
        if failed:
            return failed, n
        found = compare(env, s, game)
        if found:
            return Disagreement(seed, decks, n, str(ACTIONS[a]), *found), n
    return None, n


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_oracle_and_reference_agree_on_random_games(chunk: int) -> None:
    """>= 500 games in all (GAMES over CHUNKS chunks): the same random legal actions, shuffles and flips; chunks
    alternate between the two policies and go through the preset deck pairs."""
    deck_p0, deck_p1 = DECK_PAIRS[(chunk // 2) % len(DECK_PAIRS)]
    policy = ("uniform", "attacker")[chunk % 2]
    per_chunk = GAMES // CHUNKS
    disagreements = []
    for seed in range(chunk * per_chunk, (chunk + 1) * per_chunk):
        found, _ = play_and_compare(seed, deck_p0, deck_p1, policy)
        if found:
            disagreements.append(found)
    assert not disagreements, f"{len(disagreements)} of {per_chunk} games disagree:\n" + "\n".join(
        str(d) for d in disagreements
    )


# --------------------------------------------------------------------------------------------------------
# The oracle's own unit tests: hand-built situations from docs/tcg-rules.md

POOL = load_pool()
ID = {card.name: card.id for card in POOL.cards}
ATTACK_ID = {attack.name: attack.id for attack in POOL.attacks}


def action_id(kind: ActionKind, card: int = 0, target: int = 0, slot: int = 0) -> int:
    (found,) = [a.id for a in ACTIONS if (a.kind, a.card, a.target, a.slot) == (kind, card, target, slot)]
    return found


def creature(name: str, **fields: Any) -> Creature:
    c = ID[name]
    stack = fields.pop("stack", [c, 0, 0])
    return Creature(card=c, stack=stack, **fields)


def midgame(
    active0: str,
    active1: str,
    *,
    pool: Any = POOL,
    turn: int = 3,
    turn_player: int = 0,
    deck: tuple[list[int], list[int]] = ([60] * 10, [61] * 10),
    prizes: tuple[int, int] = (3, 3),
) -> Game:
    """A main-phase state (not card-conserving): the given Actives, decks of energy, prizes of energy."""
    players = tuple(
        Player(deck=list(deck[p]), prizes=[60 + p] * prizes[p], turns_taken=2) for p in (0, 1)
    )
    game = Game(pool=pool, players=(players[0], players[1]), deck_lists=(0, 1), max_turns=MAX_TURNS)
    game.players[0].board[0] = creature(active0)
    game.players[1].board[0] = creature(active1)
    game.phase = Phase.MAIN
    game.turn = turn
    game.first_player = 0
    game.turn_player = game.current_player = turn_player
    return game


def with_attack(pool: Any, attack_name: str, **changes: Any) -> Any:
    """The pool with one attack's row changed."""
    from dataclasses import replace

    attacks = list(pool.attacks)
    k = ATTACK_ID[attack_name]
    attacks[k] = replace(attacks[k], **changes)
    return replace(pool, attacks=tuple(attacks))


def with_card(pool: Any, name: str, **changes: Any) -> Any:
    from dataclasses import replace

    cards = list(pool.cards)
    cards[ID[name]] = replace(cards[ID[name]], **changes)
    return replace(pool, cards=tuple(cards))


def slot_of(name: str, attack_name: str) -> int:
    return POOL.cards[ID[name]].attacks.index(ATTACK_ID[attack_name])


def test_action_layout_follows_the_formulas_of_7_1() -> None:
    assert NUM_ACTIONS == 296
    assert action_id(ActionKind.SETUP_ACTIVE, card=7) == 7 - 1
    assert action_id(ActionKind.SETUP_DONE) == 24
    assert action_id(ActionKind.PLAY_BASIC, card=24) == 25 + 23
    assert action_id(ActionKind.EVOLVE, card=30, target=4) == 49 + (30 - 25) * 6 + 4
    assert action_id(ActionKind.ATTACH, card=62, target=5) == 169 + 2 * 6 + 5
    assert action_id(ActionKind.PLAY_TRAINER, card=59, target=0) == 193 + 14 * 6
    assert action_id(ActionKind.RETREAT, target=1) == 283
    assert action_id(ActionKind.ATTACK, slot=1) == 289
    assert action_id(ActionKind.END_TURN) == 290
    assert action_id(ActionKind.PROMOTE, target=5) == 295


def test_data_files_follow_the_data_rules_of_3_5() -> None:
    kinds = [Kind.NONE] + [Kind.BASIC] * 24 + [Kind.STAGE1] * 12 + [Kind.STAGE2] * 8 + [Kind.ITEM] * 8
    kinds += [Kind.SUPPORTER] * 4 + [Kind.STADIUM] * 3 + [Kind.ENERGY] * 4
    assert [c.kind for c in POOL.cards] == kinds
    for c in POOL.cards:
        if c.kind == Kind.STAGE1:
            assert POOL.cards[c.evolves_from].kind == Kind.BASIC
        if c.kind == Kind.STAGE2:
            assert POOL.cards[c.evolves_from].kind == Kind.STAGE1
        if c.is_creature:
            assert c.hp > 0 and c.attacks[0] != 0
        if c.effect in (Effect.DRAW, Effect.DRAW_TO):
            assert c.amount <= MAX_DRAW
    for k in POOL.attacks:
        assert (1 <= k.n <= MAX_COINS) if k.effect == Effect.COIN_BONUS else k.n == 0, k
        if k.effect in (Effect.DRAW, Effect.DRAW_TO):
            assert k.amount <= MAX_DRAW
    for d, deck in enumerate(POOL.decks):
        assert sum(deck) == 60 and max(deck) <= MAX_COPIES, d


def test_setup_builds_shuffles_mulligans_and_deals_prizes_in_the_documented_order() -> None:
    deck0 = [c for c in range(1, NCARDS) for _ in range(POOL.decks[0][c])]  # 5.2 step 1: lowest id at the bottom
    no_basic_on_top = [c for c in deck0 if POOL.cards[c].kind == Kind.BASIC] + [
        c for c in deck0 if POOL.cards[c].kind != Kind.BASIC
    ]
    deck1 = [c for c in range(1, NCARDS) for _ in range(POOL.decks[1][c])]
    deck1 = sorted(deck1, key=lambda c: POOL.cards[c].kind == Kind.BASIC)  # stable: the Basics go on top
    chance = ScriptedChance(
        [("flip", False)]  # 5.1: tails, player 1 goes first
        + [("shuffle", no_basic_on_top)] * 4  # player 0: the first shuffle and three mulligans
        + [("shuffle", deck1)]  # player 1: Basics on top, no mulligan
    )
    game = new_game(chance)
    chance.finish()
    p0, p1 = game.players
    assert game.first_player == 1 and game.turn_player == game.current_player == 1
    assert game.phase == Phase.SETUP and game.turn == 0
    assert p0.mulligans == 3
    # 5.2 step 5: after MAX_MULLIGANS the topmost Basic joins the 7 drawn cards
    topmost_basic = max(i for i, c in enumerate(no_basic_on_top) if POOL.cards[c].kind == Kind.BASIC)
    expected_hand = sorted(no_basic_on_top[-7:] + [no_basic_on_top[topmost_basic]])
    rest = no_basic_on_top[:-7]
    del rest[topmost_basic]
    # 5.3: the next six from the top, the first taken at the bottom of the prize pile
    assert p0.prizes == rest[::-1][:6]
    hand0 = [c for c in range(NCARDS) for _ in range(p0.hand[c])]
    assert hand0 == expected_hand and p0.hand_size == 8
    # 5.4: player 1 draws 3 extra cards for player 0's 3 mulligans, from the top after the prizes
    assert p1.mulligans == 0
    assert p1.hand_size == 7 + 3
    assert [c for c in range(NCARDS) for _ in range(p1.hand[c])] == sorted(deck1[-7:] + deck1[-16:-13])
    assert p1.prizes == deck1[-13:-7][::-1]
    assert len(p1.deck) == 60 - 10 - 6


def test_checkup_order_and_paralysis_lasting_through_its_owners_turn() -> None:
    # 10.3: turn player (0) first: poison, burn + flip, sleep flip; then the opponent; paralysis only for q == tp
    pool = with_card(with_card(POOL, "Cindercub", hp=500), "Puddlepup", hp=500)
    game = midgame("Cindercub", "Puddlepup", pool=pool)
    a0, a1 = game.players[0].active, game.players[1].active
    a0.poisoned, a0.burned, a0.cond = True, True, Cond.ASLEEP
    a1.burned, a1.cond = True, Cond.PARALYZED
    chance = ScriptedChance([("flip", True), ("flip", False), ("flip", False)])
    step(game, action_id(ActionKind.END_TURN), chance)
    chance.finish()
    assert (a0.damage, a0.burned, a0.cond) == (30, False, Cond.ASLEEP)  # burn cured (heads), still asleep (tails)
    assert (a1.damage, a1.burned, a1.cond) == (20, True, Cond.PARALYZED)  # the opponent's paralysis stays
    assert game.turn == 4 and game.turn_player == 1
    # at the end of player 1's own turn the paralysis ends; player 0 (now the opponent) flips for sleep
    chance.load([("flip", True), ("flip", True)])  # player 1's burn, then player 0's sleep
    step(game, action_id(ActionKind.END_TURN), chance)
    chance.finish()
    assert a1.cond == Cond.NONE and a1.damage == 40 and not a1.burned
    assert a0.cond == Cond.NONE and a0.damage == 40


def test_damage_order_of_operations_stadium_weakness_resistance() -> None:
    # 8.3: (30 + 10 Volcano Forge) * 2 weakness - 30 resistance = 50; any other order gives another number
    pool = with_attack(POOL, "Scratch", damage=30, effect=Effect.NONE, amount=0, cost=(0, 0, 0, 0, 0))
    pool = with_card(pool, "Sproutkin", resistance=pool.cards[ID["Cindercub"]].etype, hp=500)
    assert pool.cards[ID["Sproutkin"]].weakness == pool.cards[ID["Cindercub"]].etype == pool.cards[
        ID["Volcano Forge"]
    ].etype
    game = midgame("Cindercub", "Sproutkin", pool=pool)
    game.stadium, game.stadium_owner = ID["Volcano Forge"], 1
    step(game, action_id(ActionKind.ATTACK, slot=slot_of("Cindercub", "Scratch")), ScriptedChance())
    assert game.players[1].active.damage == 50
    # resistance floors at 0: 10 * 2 - 30 (no stadium); a 0-damage attack gets neither stadium nor weakness
    for dmg, stadium, expected in [(10, 0, 0), (0, ID["Volcano Forge"], 0), (20, ID["Tidal Grotto"], 10)]:
        game = midgame("Cindercub", "Sproutkin", pool=with_attack(pool, "Scratch", damage=dmg))
        game.stadium, game.stadium_owner = stadium, 0 if stadium else -1
        step(game, action_id(ActionKind.ATTACK, slot=slot_of("Cindercub", "Scratch")), ScriptedChance())
        assert game.players[1].active.damage == expected


def test_knock_out_discards_the_stack_and_energy_gives_a_prize_and_the_loser_promotes() -> None:
    pool = with_attack(POOL, "Scratch", damage=200, effect=Effect.NONE, cost=(0, 0, 0, 0, 0))
    game = midgame("Cindercub", "Brookhound", pool=pool)
    defender = game.players[1].board[0]
    defender.stack = [ID["Puddlepup"], ID["Brookhound"], 0]
    defender.energy = [0, 2, 0, 0]
    game.players[1].board[3] = creature("Drizzlet")
    game.players[0].prizes = [ID["Sparkit"], 60, ID["Cindercub"]]  # top: Cindercub
    hand_before = game.players[0].hand_size
    step(game, action_id(ActionKind.ATTACK, slot=0), ScriptedChance())
    p0, p1 = game.players
    assert not p1.active.occupied
    assert p1.discard[ID["Puddlepup"]] == p1.discard[ID["Brookhound"]] == 1 and p1.discard[61] == 2
    assert p0.prizes == [ID["Sparkit"], 60] and p0.hand[ID["Cindercub"]] == 1 and p0.hand_size == hand_before + 1
    # 11.4: the defender's owner promotes; then the next turn begins for them
    assert game.phase == Phase.PROMOTE and game.current_player == 1 and game.turn == 3
    assert legal_mask(game) == [a.kind == ActionKind.PROMOTE and a.target == 3 for a in ACTIONS]
    step(game, action_id(ActionKind.PROMOTE, target=3), ScriptedChance())
    assert p1.active.card == ID["Drizzlet"] and not p1.board[3].occupied
    assert game.phase == Phase.MAIN and game.turn == 4 and game.turn_player == game.current_player == 1


def test_last_prize_wins_and_both_players_winning_is_a_draw() -> None:
    pool = with_attack(POOL, "Scratch", damage=200, effect=Effect.NONE, cost=(0, 0, 0, 0, 0))
    game = midgame("Cindercub", "Puddlepup", pool=pool, prizes=(1, 3))
    game.players[1].board[2] = creature("Drizzlet")
    step(game, action_id(ActionKind.ATTACK, slot=0), ScriptedChance())
    assert (game.phase, game.winner, game.win_reason) == (Phase.OVER, 0, WinReason.PRIZES)
    assert game.rewards == [1.0, -1.0] and game.terminated and all(legal_mask(game))
    with pytest.raises(IllegalAction):
        step(game, 0, ScriptedChance())
    # the opponent's last creature: no_creatures
    game = midgame("Cindercub", "Puddlepup", pool=pool, prizes=(3, 3))
    step(game, action_id(ActionKind.ATTACK, slot=0), ScriptedChance())
    assert (game.winner, game.win_reason, game.rewards) == (0, WinReason.NO_CREATURES, [1.0, -1.0])
    # recoil knocks out the attacker too, and neither has a Bench: both have won, a draw (11.3)
    pool = with_attack(pool, "Scratch", effect=Effect.RECOIL, amount=500)
    game = midgame("Cindercub", "Puddlepup", pool=pool)
    step(game, action_id(ActionKind.ATTACK, slot=0), ScriptedChance())
    assert (game.winner, game.win_reason, game.rewards) == (-1, WinReason.DRAW, [0.0, 0.0])


def test_confused_attacker_hurts_itself_on_tails_and_flips_nothing_else() -> None:
    pool = with_attack(POOL, "Scratch", effect=Effect.COIN_BONUS, n=3, amount=10, cost=(0, 0, 0, 0, 0))
    game = midgame("Cindercub", "Puddlepup", pool=pool)
    game.players[0].active.cond = Cond.CONFUSED
    chance = ScriptedChance([("flip", False)])
    step(game, action_id(ActionKind.ATTACK, slot=0), chance)
    chance.finish()  # 13: tails ends the attack, no coin_bonus flips; no checkup flips either
    assert game.players[0].active.damage == 30 and game.players[1].active.damage == 0
    # heads: the attack goes on with its three coin_bonus flips
    game = midgame("Cindercub", "Puddlepup", pool=pool)
    game.players[0].active.cond = Cond.CONFUSED
    chance = ScriptedChance([("flip", True), ("flip", True), ("flip", False), ("flip", True)])
    step(game, action_id(ActionKind.ATTACK, slot=0), chance)
    chance.finish()
    base = pool.attacks[ATTACK_ID["Scratch"]].damage
    assert game.players[0].active.damage == 0 and game.players[1].active.damage == base + 20


def test_deck_out_at_the_start_of_a_turn_loses() -> None:
    game = midgame("Cindercub", "Puddlepup", deck=([60], []))
    step(game, action_id(ActionKind.END_TURN), ScriptedChance())
    assert (game.phase, game.winner, game.win_reason, game.turn) == (Phase.OVER, 0, WinReason.DECK_OUT, 4)
    assert game.rewards == [1.0, -1.0] and game.players[1].turns_taken == 3


def test_retreat_pays_the_discounted_cost_in_type_order_and_clears_conditions() -> None:
    pool = with_card(POOL, "Magmadillo", retreat=2)
    game = midgame("Magmadillo", "Puddlepup", pool=pool)
    me = game.players[0]
    me.active.stack = [ID["Emberlizard"], ID["Magmadillo"], 0]
    me.active.energy = [1, 1, 0, 1]
    me.active.poisoned, me.active.cond = True, Cond.CONFUSED
    me.board[2] = creature("Sparkit")
    game.stadium, game.stadium_owner = ID["Windy Plateau"], 1  # stadium_retreat: cost 2 - 1 = 1
    assert pool.cards[ID["Windy Plateau"]].effect == Effect.STADIUM_RETREAT
    discount = pool.cards[ID["Windy Plateau"]].amount
    step(game, action_id(ActionKind.RETREAT, target=2), ScriptedChance())
    moved = me.board[2]
    assert moved.card == ID["Magmadillo"] and not moved.poisoned and moved.cond == Cond.NONE
    assert sum(moved.energy) == 3 - (2 - discount) and me.discard[60] == 2 - discount  # fire goes first (8.5)
    assert me.active.card == ID["Sparkit"] and game.retreats_this_turn == 1
    assert not is_legal(game, ACTIONS[action_id(ActionKind.RETREAT, target=2)])  # once per turn


def test_evolution_waits_a_turn_and_never_happens_on_a_first_turn() -> None:
    game = midgame("Puddlepup", "Cindercub")
    me = game.players[0]
    me.add_to_hand(ID["Brookhound"])
    evolve = ACTIONS[action_id(ActionKind.EVOLVE, card=ID["Brookhound"], target=0)]
    assert is_legal(game, evolve)
    me.active.played = game.turn  # put into play this turn
    assert not is_legal(game, evolve)
    me.active.played = 0
    me.turns_taken = 1  # the player's first turn
    assert not is_legal(game, evolve)
    me.turns_taken = 2
    me.active.cond, me.active.burned = Cond.ASLEEP, True
    step(game, evolve.id, ScriptedChance())
    assert me.active.card == ID["Brookhound"] and me.active.stack == [ID["Puddlepup"], ID["Brookhound"], 0]
    assert me.active.cond == Cond.NONE and not me.active.burned and me.active.played == game.turn


def test_trainers_draw_to_search_and_stadium_rules() -> None:
    game = midgame("Puddlepup", "Cindercub", deck=([ID["Sparkit"], 61, ID["Puddlepup"], 62, 60], [60] * 5))
    me = game.players[0]
    for c in (ID["Quartermaster"], ID["Lure Net"], ID["Volcano Forge"], 60, 60):
        me.add_to_hand(c)
    amount = POOL.cards[ID["Quartermaster"]].amount
    draw_to = ACTIONS[action_id(ActionKind.PLAY_TRAINER, card=ID["Quartermaster"])]
    assert me.hand_size - 1 < amount and is_legal(game, draw_to)
    assert not is_legal(game, ACTIONS[draw_to.id + 1])  # 9.2: t must be 0
    # search_basic: the topmost Basic (Puddlepup, two below the top) leaves the deck, then a shuffle, always
    chance = ScriptedChance([("shuffle", [60, 62, 61, ID["Sparkit"]])])
    step(game, action_id(ActionKind.PLAY_TRAINER, card=ID["Lure Net"]), chance)
    chance.finish()
    assert me.hand[ID["Puddlepup"]] == 1 and me.deck == [60, 62, 61, ID["Sparkit"]] and me.discard[ID["Lure Net"]] == 1
    # draw_to draws until the hand holds `amount` cards
    step(game, draw_to.id, ScriptedChance())
    assert me.hand_size == min(amount, 5 + 4) and game.supporters_this_turn == 1
    # a stadium: one per turn, not the one already in play; the old one goes to its owner's discard pile
    game.stadium, game.stadium_owner = ID["Tidal Grotto"], 1
    step(game, action_id(ActionKind.PLAY_TRAINER, card=ID["Volcano Forge"]), ScriptedChance())
    assert (game.stadium, game.stadium_owner, game.stadiums_this_turn) == (ID["Volcano Forge"], 0, 1)
    assert game.players[1].discard[ID["Tidal Grotto"]] == 1


def test_truncation_once_turn_max_turns_plus_one_has_begun() -> None:
    game = midgame("Cindercub", "Puddlepup", turn=MAX_TURNS)
    assert not game.truncated
    step(game, action_id(ActionKind.END_TURN), ScriptedChance())
    assert game.turn == MAX_TURNS + 1 and game.truncated and not game.terminated and game.rewards == [0.0, 0.0]
    assert all(legal_mask(game))


def test_random_games_keep_the_invariants_of_15() -> None:
    """Card conservation, hand sizes, no waiting knock-outs, well-formed positions, in 30 random games."""
    actions = np.random.default_rng(0)
    for seed in range(30):
        chance = RandomChance(seed)
        game = new_game(chance, seed % 4, (seed // 4) % 4)
        while not (game.terminated or game.truncated):
            _check_invariants(game)
            step(game, int(actions.choice(np.flatnonzero(legal_mask(game)))), chance)
        _check_invariants(game)


def _check_invariants(game: Game) -> None:
    for p, pl in enumerate(game.players):
        counts = [0] * NCARDS
        for c in pl.deck + pl.prizes:
            counts[c] += 1
        for c in range(NCARDS):
            counts[c] += pl.hand[c] + pl.discard[c]
        for z in pl.board:
            for c in z.stack:
                counts[c] += 1 if c else 0
            for t in range(4):
                counts[FIRST_ENERGY + t] += z.energy[t]
        if game.stadium and game.stadium_owner == p:
            counts[game.stadium] += 1
        assert counts[1:] == list(POOL.decks[game.deck_lists[p]][1:])
        assert pl.hand_size == sum(pl.hand)
        for s, z in enumerate(pl.board):
            if not z.occupied:
                assert z == Creature()
                continue
            assert z.card == max(z.stack[i] for i in range(3) if z.stack[i]) or z.card == [c for c in z.stack if c][-1]
            if game.phase != Phase.SETUP:
                assert z.damage < POOL.cards[z.card].hp
            if s > 0:
                assert not z.has_condition
    if game.phase == Phase.MAIN:
        assert game.current_player == game.turn_player
        assert all(pl.active.occupied for pl in game.players)


# --------------------------------------------------------------------------------------------------------
# Situations random play rarely reaches: built from a reference mid-game state (cards moved between zones, so
# every card stays accounted for), injected into both implementations, then played on with random actions.


class Board:
    """Edits a `state_to_dict` dict the way a player would move cards: every card comes from some zone."""

    def __init__(self, d: dict[str, np.ndarray]):
        self.d = {k: np.array(v) for k, v in d.items()}

    def free_count(self, p: int, card: int) -> int:
        """Copies of `card` player `p` has outside play (deck, prizes, discard pile, hand)."""
        d = self.d
        piles = sum(d[z][p][: int(d[f"{z}.count"][p])].tolist().count(card) for z in ("deck", "prizes"))
        return int(piles + d["discard"][p][card] + d["hand"][p][card])

    def free(self, p: int, card: int) -> bool:
        return self.free_count(p, card) > 0

    def free_basic(self, p: int, decks: tuple[int, int]) -> int:
        """A Basic of player `p`'s deck list with a copy outside play."""
        return next(c for c in range(1, 25) if POOL.decks[decks[p]][c] and self.free(p, c))

    def take(self, p: int, card: int) -> None:
        """Remove one `card` of player `p` from the deck, the discard pile, the hand or the prizes."""
        d = self.d
        for zone in ("deck", "prizes"):
            n = int(d[f"{zone}.count"][p])
            where = [i for i in range(n) if d[zone][p][i] == card]
            if where:
                rest = [int(c) for i, c in enumerate(d[zone][p][:n]) if i != where[-1]]
                d[zone][p] = rest + [0] * (len(d[zone][p]) - len(rest))
                d[f"{zone}.count"][p] = n - 1
                return
        for zone in ("discard", "hand"):
            if d[zone][p][card] > 0:
                d[zone][p][card] -= 1
                if zone == "hand":
                    d["hand_size"][p] -= 1
                return
        raise LookupError(f"player {p} has no free card {card}")

    def clear(self, p: int, s: int) -> None:
        """The creature at position `s` and its energy go to the discard pile."""
        d = self.d
        for c in d["board.stack"][p][s]:
            if c:
                d["discard"][p][c] += 1
        for t in range(4):
            d["discard"][p][FIRST_ENERGY + t] += d["board.energy"][p][s][t]
        for name in ("board.card", "board.damage", "board.poisoned", "board.burned", "board.cond", "board.played"):
            d[name][p][s] = 0
        d["board.stack"][p][s] = 0
        d["board.energy"][p][s] = 0
        self._count_bench(p)

    def put(self, p: int, s: int, stack: list[int], energy: tuple[int, ...] = (0, 0, 0, 0), **fields: int) -> None:
        self.clear(p, s)
        d = self.d
        for c in stack:
            self.take(p, c)
        for t, n in enumerate(energy):
            for _ in range(n):
                self.take(p, FIRST_ENERGY + t)
        d["board.card"][p][s] = stack[-1]
        d["board.stack"][p][s] = [*stack, 0, 0, 0][:3]
        d["board.energy"][p][s] = energy
        for name, value in fields.items():
            d[f"board.{name}"][p][s] = value
        self._count_bench(p)

    def _count_bench(self, p: int) -> None:
        """The spec's maintained Bench count (doc 15 `benched`) follows the board."""
        self.d["benched"][p] = int(np.count_nonzero(self.d["board.card"][p][1:]))

    def to_hand(self, p: int, card: int) -> None:
        self.take(p, card)
        self.d["hand"][p][card] += 1
        self.d["hand_size"][p] += 1

    def take_prizes(self, p: int, left: int) -> None:
        """Prize cards go into the hand until `left` remain (as if taken)."""
        while int(self.d["prizes.count"][p]) > left:
            self.to_hand(p, int(self.d["prizes"][p][int(self.d["prizes.count"][p]) - 1]))


def reference_midgame(deck_p0: int, deck_p1: int, seed: int = 0) -> tuple[Any, dict[str, np.ndarray]]:
    """A reference state in `main` at turn >= 4 reached by random play (retried with the next seed if a game ends)."""
    env = reference_env(deck_p0, deck_p1)
    for attempt in range(seed, seed + 50):
        actions = np.random.default_rng(attempt)
        s = env.init(rng.key_from_seed(attempt))
        key = rng.key_from_seed(attempt + 10_000)
        while not (s.terminated or s.truncated):
            d = env.state_to_dict(s)
            if int(d["phase"]) == Phase.MAIN and int(d["turn"]) >= 4:
                return env, d
            key, sub = rng.split(key)
            s = env.step(s, int(actions.choice(np.flatnonzero(np.asarray(s.legal_action_mask)))), sub)
    raise AssertionError("no random game reached turn 4")


def play_injected(
    env: Any, d: dict[str, np.ndarray], decks: tuple[int, int], first: int, seed: int, extra_steps: int = 40
) -> Game:
    """Inject `d` into both implementations, take action `first`, then random actions; compare after each step.
    Returns the oracle's game right after `first`."""
    s = env.state_from_dict(d)
    game = game_from_engine_state(env.state_to_dict(s), decks, MAX_TURNS, POOL)
    chance = ScriptedChance()
    found = compare(env, s, game)
    assert not found, f"after injection: {found}"
    assert bool(s.legal_action_mask[first]), f"{ACTIONS[first]} is not legal on the reference"
    actions = np.random.default_rng(seed)
    key = rng.key_from_seed(seed)
    after_first: Game | None = None
    a = first
    for n in range(extra_steps + 1):
        key, sub = rng.split(key)
        env.chance_log = []
        s = env.step(s, a, sub)
        chance.load(script_of(env.chance_log))
        step(game, a, chance)
        chance.finish()
        found = compare(env, s, game)
        assert not found, f"step {n + 1} after {ACTIONS[a]}: {found}"
        if after_first is None:
            after_first = engine_copy(game)
        if s.terminated or s.truncated:
            break
        a = int(actions.choice(np.flatnonzero(np.asarray(s.legal_action_mask))))
    assert after_first is not None
    return after_first


def engine_copy(game: Game) -> Game:
    return game_from_engine_state({**engine_state(game), "current_player": game.current_player,
                                   "rewards": game.rewards}, game.deck_lists, game.max_turns, game.pool)


def _poisoned_actives(b: Board, benches: bool) -> None:
    """Both Actives poisoned, 10 HP from a knock-out; Benches cleared unless `benches`."""
    for p in (0, 1):
        card = int(b.d["board.card"][p][0])
        b.d["board.poisoned"][p][0] = 1
        b.d["board.damage"][p][0] = POOL.cards[card].hp - 10
        if not benches:
            for s in range(1, 6):
                b.clear(p, s)


def test_injected_double_knock_out_without_benches_is_a_draw() -> None:
    env, d = reference_midgame(0, 1)
    b = Board(d)
    _poisoned_actives(b, benches=False)
    game = play_injected(env, b.d, (0, 1), action_id(ActionKind.END_TURN), seed=1)
    assert (game.phase, game.winner, game.win_reason) == (Phase.OVER, -1, WinReason.DRAW)  # 11.3


def test_injected_double_knock_out_with_benches_the_turn_player_promotes_first() -> None:
    env, d = reference_midgame(1, 0)
    b = Board(d)
    for p in (0, 1):
        if not any(b.d["board.card"][p][1:]):
            b.put(p, 1, [b.free_basic(p, (1, 0))])
    _poisoned_actives(b, benches=True)
    tp = int(d["turn_player"])
    game = play_injected(env, b.d, (1, 0), action_id(ActionKind.END_TURN), seed=2)
    assert (game.phase, game.current_player) == (Phase.PROMOTE, tp)  # 11.4 step 1


def test_injected_last_prizes_taken_by_both_players_at_once_is_a_draw() -> None:
    env, d = reference_midgame(2, 3)
    b = Board(d)
    _poisoned_actives(b, benches=True)
    for p in (0, 1):
        if not any(b.d["board.card"][p][1:]):
            b.put(p, 1, [b.free_basic(p, (2, 3))])
        b.take_prizes(p, 1)
    game = play_injected(env, b.d, (2, 3), action_id(ActionKind.END_TURN), seed=3)
    assert (game.winner, game.win_reason) == (-1, WinReason.DRAW)


def test_injected_bench_damage_knocks_out_several_and_the_prizes_run_out() -> None:
    env, d = reference_midgame(0, 1)
    b = Board(d)
    p = int(d["turn_player"])
    decks = (0, 1)
    b.clear(p, 0)  # frees the Active's cards
    attacker = next(
        c
        for c in range(37, 45)
        if any(POOL.attacks[k].effect == Effect.BENCH_DAMAGE for k in POOL.cards[c].attacks)
        and all(b.free(p, x) for x in evolution_line(c))
    )
    slot = next(i for i, k in enumerate(POOL.cards[attacker].attacks) if POOL.attacks[k].effect == Effect.BENCH_DAMAGE)
    cost = POOL.attacks[POOL.cards[attacker].attacks[slot]].cost
    energy = [cost[t] for t in range(4)]
    energy[POOL.cards[attacker].etype] += cost[4]
    b.put(p, 0, evolution_line(attacker), tuple(energy), played=1)
    amount = POOL.attacks[POOL.cards[attacker].attacks[slot]].amount
    q = 1 - p
    for s in (2, 4):
        b.clear(q, s)
        c = b.free_basic(q, decks)
        b.put(q, s, [c], damage=POOL.cards[c].hp - amount)
    b.take_prizes(p, 1)
    b.d["board.cond"][p][0] = 0
    game = play_injected(env, b.d, decks, action_id(ActionKind.ATTACK, slot=slot), seed=4)
    assert (game.winner, game.win_reason) == (p, WinReason.PRIZES)


def test_injected_stadium_already_in_play_cannot_be_played() -> None:
    decks = (0, 3)  # both presets hold Volcano Forge
    env, d = reference_midgame(*decks)
    b = Board(d)
    p = int(d["turn_player"])
    forge = ID["Volcano Forge"]
    for owner in (0, 1):  # free both copies (from play, a hand, prizes or deck) and give them out
        if int(b.d["stadium"]) == forge and int(b.d["stadium_owner"]) == owner:
            b.d["stadium"], b.d["stadium_owner"] = np.array(0), np.array(-1)
            b.d["discard"][owner][forge] += 1
    b.to_hand(p, forge)
    b.take(1 - p, forge)
    b.d["stadium"], b.d["stadium_owner"], b.d["stadiums_this_turn"] = np.array(forge), np.array(1 - p), np.array(0)
    s = env.state_from_dict(b.d)
    game = game_from_engine_state(env.state_to_dict(s), decks, MAX_TURNS, POOL)
    assert not legal_mask(game)[action_id(ActionKind.PLAY_TRAINER, card=forge)]  # 7.10: not the one in play
    assert compare(env, s, game) is None
    play_injected(env, b.d, decks, action_id(ActionKind.END_TURN), seed=5)


def evolution_line(c: int) -> list[int]:
    """The stack of a creature whose top card is `c`: [Basic, Stage 1, Stage 2] up to `c`."""
    line = [c]
    while POOL.cards[line[0]].evolves_from:
        line.insert(0, POOL.cards[line[0]].evolves_from)
    return line


def test_injected_retreat_with_the_windy_plateau_discount() -> None:
    """7.7: cost = max(0, retreat - stadium amount); the Active holds exactly the discounted cost in energy."""
    decks = (2, 1)  # preset 2 holds Windy Plateau
    env, d = reference_midgame(*decks)
    b = Board(d)
    plateau = ID["Windy Plateau"]
    owner = 0
    if int(b.d["stadium"]):
        b.d["discard"][int(b.d["stadium_owner"])][int(b.d["stadium"])] += 1
    b.take(owner, plateau)
    b.d["stadium"], b.d["stadium_owner"] = np.array(plateau), np.array(owner)
    p = int(d["turn_player"])
    discount = POOL.cards[plateau].amount
    b.clear(p, 0)
    heavy = next(
        c for c in range(1, 45) if POOL.cards[c].retreat > discount and all(b.free(p, x) for x in evolution_line(c))
    )
    cost = POOL.cards[heavy].retreat - discount
    etype = next(t for t in range(4) if b.free_count(p, FIRST_ENERGY + t) >= cost)
    energy = tuple(cost if t == etype else 0 for t in range(4))
    b.put(p, 0, evolution_line(heavy), energy, played=1)
    if not any(b.d["board.card"][p][1:]):
        b.put(p, 1, [b.free_basic(p, decks)])
    b.d["retreats_this_turn"] = np.array(0)
    target = next(s for s in range(1, 6) if b.d["board.card"][p][s])
    game = play_injected(env, b.d, decks, action_id(ActionKind.RETREAT, target=target), seed=8)
    assert game.players[p].board[target].card == heavy and sum(game.players[p].board[target].energy) == 0


def test_injected_deck_out_and_truncation() -> None:
    env, d = reference_midgame(3, 1)
    b = Board(d)
    nxt = 1 - int(d["turn_player"])
    while int(b.d["deck.count"][nxt]):
        b.to_hand(nxt, int(b.d["deck"][nxt][int(b.d["deck.count"][nxt]) - 1]))
    game = play_injected(env, b.d, (3, 1), action_id(ActionKind.END_TURN), seed=6)
    assert (game.winner, game.win_reason) == (1 - nxt, WinReason.DECK_OUT)
    b = Board(d)
    b.d["turn"] = np.array(MAX_TURNS)
    game = play_injected(env, b.d, (3, 1), action_id(ActionKind.END_TURN), seed=7)
    assert game.truncated or game.terminated


# Seeds whose init reaches the mulligan fallback on the current spec (decks 0 and 1); when the spec's use of its
# random keys changes they stop working, and the test scans for a new one (about 1 seed in 4000, 3 ms each).
FALLBACK_SEEDS = [4251, 7058]


def reaches_fallback(env: Any, seed: int) -> bool:
    d = env.state_to_dict(env.init(rng.split(rng.key_from_seed(seed))[1]))
    return any((int(d["mulligans"][p]), int(d["hand_size"][p])) == (3, 8) for p in (0, 1))


def test_mulligan_fallback_game_agrees() -> None:
    """5.2 step 5 (three mulligans, still no Basic: the topmost Basic joins the hand, 8 cards) is rare in random
    seeds; a game that reaches it on the reference must agree from init to its end."""
    env = reference_env(0, 1)
    candidates = [*FALLBACK_SEEDS, *(s for s in range(100_000, 130_000) if s not in FALLBACK_SEEDS)]
    seed = next((s for s in candidates if reaches_fallback(env, s)), None)
    assert seed is not None, "no seed reaches the mulligan fallback: is 5.2 step 5 still reachable?"
    found, _ = play_and_compare(seed, 0, 1)
    assert found is None, str(found)


def test_bench_runs_and_reports_the_median() -> None:
    from tcg_oracle.bench import benchmark

    result = benchmark(n_steps=300, runs=3)
    rates = result["steps_per_s_runs"]
    assert isinstance(rates, list) and len(rates) == 3 and all(r > 0 for r in rates)
    assert result["steps_per_s_median"] == sorted(rates)[1]


def test_injected_checkup_flips_both_players_in_order() -> None:
    """10.3/13: both Actives Burned and Asleep: four flips (turn player's burn, sleep, then the opponent's); over
    eight step keys some flips differ between the players, so the order is pinned."""
    env, d = reference_midgame(0, 1)
    b = Board(d)
    for p in (0, 1):
        b.d["board.burned"][p][0] = 1
        b.d["board.cond"][p][0] = int(Cond.ASLEEP)
        b.d["board.damage"][p][0] = 0
    flips = set()
    for seed in range(8):
        env.chance_log = []
        play_injected(env, b.d, (0, 1), action_id(ActionKind.END_TURN), seed=seed, extra_steps=0)
        flips.add(tuple(bool(e.value) for e in env.chance_log if e.kind == "bernoulli"))
    assert any(len(f) == 4 and f[:2] != f[2:] for f in flips), flips


def test_reference_shuffle_events_list_the_deck_bottom_to_top() -> None:
    """The chance log's shuffle value is the deck in slot order; 4.1/5.2/5.3 say slot 0 is the bottom: the hand is
    the top seven cards and the prize pile the next six, the first taken at its bottom."""
    env = reference_env(0, 1)
    checked = 0
    for seed in range(10):
        env.chance_log = []
        d = env.state_to_dict(env.init(rng.key_from_seed(seed)))
        first0 = next(e for e in env.chance_log if e.kind == "shuffle" and e.index == (0,))
        if int(d["mulligans"][0]) or int(d["mulligans"][1]):
            continue
        deck = [int(c) for c in first0.value]
        assert sorted(deck[-7:]) == [c for c in range(NCARDS) for _ in range(int(d["hand"][0][c]))]
        assert [int(c) for c in d["prizes"][0]] == deck[-8:-14:-1]
        assert [int(c) for c in d["deck"][0][: int(d["deck.count"][0])]] == deck[:-13]
        checked += 1
    assert checked >= 3
