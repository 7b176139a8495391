"""The rules of docs/tcg-rules.md, one function per section: setup (5), turns (6), actions (7), attacks (8),
trainers (9), the checkup (10), knock-outs and promotion (11), the end of the game (12)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from .cards import (
    BURN_DAMAGE,
    CONFUSION_DAMAGE,
    FIRST_ENERGY,
    HAND_SIZE,
    MAX_MULLIGANS,
    MAX_TURNS,
    NCARDS,
    NTYPES,
    POISON_DAMAGE,
    POSITIONS,
    PRIZES,
    RESISTANCE,
    WEAKNESS_FACTOR,
    Attack,
    Card,
    CardPool,
    Effect,
    Kind,
    Status,
    load_pool,
)
from .chance import Chance
from .layout import ACTIONS, ACTIONS_BY_KIND, NUM_ACTIONS, Action, ActionKind
from .state import Cond, Creature, Game, Phase, Player, WinReason


class IllegalAction(ValueError):
    """An action the legal mask forbids, or any action once the game is over."""


@cache
def default_pool() -> CardPool:
    return load_pool()


# ---------------------------------------------------------------------------------------------------------
# 5. Setup


def new_game(
    chance: Chance, deck_p0: int = 0, deck_p1: int = 1, max_turns: int = MAX_TURNS, pool: CardPool | None = None
) -> Game:
    """`init`: 5.1 to 5.4; the returned state waits for the first player's setup actions (5.5)."""
    game = Game(pool=pool or default_pool(), players=(Player(), Player()), deck_lists=(deck_p0, deck_p1),
                max_turns=max_turns)
    # 5.1: the first chance event of a game; heads: player 0 goes first
    game.first_player = 0 if chance.flip() else 1
    # 5.2: all of it for player 0, then all of it for player 1
    for p in (0, 1):
        deal_opening_hand(game, p, chance)
    # 5.3
    for p in (0, 1):
        take_prizes(game.players[p])
    # 5.4: mulligans do not change here, so the amounts can be read as we go
    for p in (0, 1):
        extra = max(0, game.players[1 - p].mulligans - game.players[p].mulligans)
        for _ in range(extra):
            game.players[p].draw()
    game.phase = Phase.SETUP
    game.turn = 0
    game.turn_player = game.current_player = game.first_player
    return game


def build_deck(pool: CardPool, deck_list: int) -> list[int]:
    """5.2 step 1: copies of each card id in increasing order, each put on top (the lowest id at the bottom)."""
    deck: list[int] = []
    for c in range(1, NCARDS):
        deck.extend([c] * pool.decks[deck_list][c])
    return deck


def is_basic(pool: CardPool, c: int) -> bool:
    return pool.cards[c].kind == Kind.BASIC


def hand_has_basic(game: Game, player: Player) -> bool:
    return any(n > 0 and is_basic(game.pool, c) for c, n in enumerate(player.hand))


def deal_opening_hand(game: Game, p: int, chance: Chance) -> None:
    """5.2 steps 1 to 5 for player `p`."""
    player = game.players[p]
    player.deck = chance.shuffle(build_deck(game.pool, game.deck_lists[p]))  # steps 1, 2
    for _ in range(HAND_SIZE):  # step 3
        player.draw()
    # step 4: mulligans
    while not hand_has_basic(game, player) and player.mulligans < MAX_MULLIGANS:
        player.mulligans += 1
        for c in range(NCARDS):
            player.deck.extend([c] * player.hand[c])
            player.hand[c] = 0
        player.hand_size = 0
        player.deck = chance.shuffle(player.deck)
        for _ in range(HAND_SIZE):
            player.draw()
    # step 5: fallback, the topmost Basic of the deck goes into the hand (no shuffle)
    if not hand_has_basic(game, player):
        take_topmost(game, player, lambda card: card.kind == Kind.BASIC)


def take_topmost(game: Game, player: Player, wanted: Callable[[Card], bool]) -> bool:
    """Move the card closest to the top of the deck with `wanted(card)` into the hand (4.1); False if none."""
    for i in range(len(player.deck) - 1, -1, -1):
        if wanted(game.pool.cards[player.deck[i]]):
            player.add_to_hand(player.deck.pop(i))
            return True
    return False


def take_prizes(player: Player) -> None:
    """5.3: the top `PRIZES` cards, one by one, each onto the top of the prize pile."""
    for _ in range(PRIZES):
        player.prizes.append(player.deck.pop())


def put_into_play(game: Game, c: int) -> Creature:
    """7.2, 7.4: a Basic card becomes a creature: `card = stack[0] = c`, `played = turn`, everything else 0."""
    return Creature(card=c, stack=[c, 0, 0], played=game.turn)


# ---------------------------------------------------------------------------------------------------------
# 6. Turn structure


def begin_turn(game: Game, q: int) -> None:
    """6.1: the start of a turn for player `q`."""
    game.turn += 1  # step 1
    game.turn_player = q
    game.current_player = q
    game.phase = Phase.MAIN
    game.players[q].turns_taken += 1
    game.energy_this_turn = game.supporters_this_turn = game.stadiums_this_turn = game.retreats_this_turn = 0
    if not game.players[q].deck:  # step 2: deck-out (12.1 item 3)
        end_game(game, 1 - q, WinReason.DECK_OUT)
        return
    game.players[q].draw()  # step 3


def end_of_turn(game: Game, chance: Chance) -> None:
    """6.3: after an attack resolved or after `end_turn`."""
    knockout_check(game)  # step 1
    if win_check(game):
        return
    checkup(game, chance)  # step 2
    knockout_check(game)  # step 3
    if win_check(game):
        return
    advance(game)  # step 4


# ---------------------------------------------------------------------------------------------------------
# 7. Actions: legality


def own(game: Game) -> Player:
    return game.players[game.current_player]


def opponent(game: Game) -> Player:
    return game.players[1 - game.current_player]


def retreat_cost(game: Game, active: Creature) -> int:
    """7.7: the printed cost less a `stadium_retreat` stadium's amount, not below 0."""
    stadium = game.pool.cards[game.stadium]
    discount = stadium.amount if stadium.effect == Effect.STADIUM_RETREAT else 0
    return max(0, game.pool.cards[active.card].retreat - discount)


def can_pay(creature: Creature, attack: Attack) -> bool:
    """8.1: each typed cost from its own type, the total (colorless included) from all energy."""
    return all(creature.energy[t] >= attack.cost[t] for t in range(NTYPES)) and creature.energy_count >= sum(
        attack.cost
    )


def can_setup_active(game: Game, c: int) -> bool:
    """7.2."""
    me = own(game)
    return game.phase == Phase.SETUP and not me.active.occupied and me.hand[c] >= 1


def can_setup_done(game: Game) -> bool:
    """7.3."""
    return game.phase == Phase.SETUP and own(game).active.occupied


def can_play_basic(game: Game, c: int) -> bool:
    """7.4."""
    me = own(game)
    phase_ok = game.phase == Phase.MAIN or (game.phase == Phase.SETUP and me.active.occupied)
    return phase_ok and me.hand[c] >= 1 and any(not me.board[s].occupied for s in range(1, POSITIONS))


def can_evolve(game: Game, c: int, t: int) -> bool:
    """7.5."""
    me = own(game)
    target = me.board[t]
    return (
        game.phase == Phase.MAIN
        and me.turns_taken >= 2
        and me.hand[c] >= 1
        and target.occupied
        and target.card == game.pool.cards[c].evolves_from
        and target.played != game.turn
    )


def can_attach(game: Game, e: int, t: int) -> bool:
    """7.6."""
    me = own(game)
    return game.phase == Phase.MAIN and game.energy_this_turn == 0 and me.hand[e] >= 1 and me.board[t].occupied


def can_retreat(game: Game, t: int) -> bool:
    """7.7."""
    me = own(game)
    active = me.active
    return (
        game.phase == Phase.MAIN
        and game.retreats_this_turn == 0
        and active.cond not in (Cond.ASLEEP, Cond.PARALYZED)
        and me.board[t].occupied
        and active.energy_count >= retreat_cost(game, active)
    )


def can_attack(game: Game, i: int) -> bool:
    """7.8."""
    if game.phase != Phase.MAIN or game.turn < 2:
        return False
    active = own(game).active
    k = game.pool.cards[active.card].attacks[i]
    return k != 0 and active.cond not in (Cond.ASLEEP, Cond.PARALYZED) and can_pay(active, game.pool.attacks[k])


def can_end_turn(game: Game) -> bool:
    """7.9."""
    return game.phase == Phase.MAIN


def can_play_trainer(game: Game, c: int, t: int) -> bool:
    """7.10: phase, the card in hand, the card-kind condition, then 9.2's target and playability."""
    me = own(game)
    if game.phase != Phase.MAIN or me.hand[c] < 1:
        return False
    card = game.pool.cards[c]
    if card.kind == Kind.SUPPORTER and game.supporters_this_turn != 0:
        return False
    if card.kind == Kind.STADIUM and (game.stadiums_this_turn != 0 or game.stadium == c):
        return False
    return trainer_target_ok(game, card, t)


def trainer_target_ok(game: Game, card: Card, t: int) -> bool:
    """9.2: legal `t` and the extra condition of each trainer effect."""
    me, opp = own(game), opponent(game)
    hs = me.hand_size  # before the card is played
    effect = card.effect
    if effect == Effect.DRAW:
        return t == 0 and bool(me.deck)
    if effect == Effect.DRAW_TO:
        return t == 0 and bool(me.deck) and hs - 1 < card.amount
    if effect == Effect.HEAL:
        return me.board[t].occupied and me.board[t].damage > 0
    if effect == Effect.SWITCH:
        return t >= 1 and me.board[t].occupied
    if effect == Effect.GUST:
        return t >= 1 and opp.board[t].occupied
    if effect in (Effect.SEARCH_BASIC, Effect.SEARCH_ENERGY):
        return t == 0 and bool(me.deck)
    if effect == Effect.CURE:
        return t == 0 and me.active.has_condition
    if effect == Effect.RETRIEVE_ENERGY:
        return t == 0 and sum(me.discard[FIRST_ENERGY + e] for e in range(NTYPES)) >= 1
    if effect == Effect.DISCARD_OPP_ENERGY:
        return t == 0 and opp.active.energy_count >= 1
    if effect in (Effect.STADIUM_RETREAT, Effect.STADIUM_BOOST):
        return t == 0
    return False  # any other effect: never legal


def can_promote(game: Game, t: int) -> bool:
    """7.11."""
    me = own(game)
    return game.phase == Phase.PROMOTE and not me.active.occupied and me.board[t].occupied


def is_legal(game: Game, action: Action) -> bool:
    """The legality condition of `action` (7.2 to 7.11); every action is legal once the game is over (7.1)."""
    if game.phase == Phase.OVER:
        return True
    kind = action.kind
    if kind == ActionKind.SETUP_ACTIVE:
        return can_setup_active(game, action.card)
    if kind == ActionKind.SETUP_DONE:
        return can_setup_done(game)
    if kind == ActionKind.PLAY_BASIC:
        return can_play_basic(game, action.card)
    if kind == ActionKind.EVOLVE:
        return can_evolve(game, action.card, action.target)
    if kind == ActionKind.ATTACH:
        return can_attach(game, action.card, action.target)
    if kind == ActionKind.PLAY_TRAINER:
        return can_play_trainer(game, action.card, action.target)
    if kind == ActionKind.RETREAT:
        return can_retreat(game, action.target)
    if kind == ActionKind.ATTACK:
        return can_attack(game, action.slot)
    if kind == ActionKind.END_TURN:
        return can_end_turn(game)
    return can_promote(game, action.target)


# Which kinds can be legal in each phase (each predicate above requires its phase); the mask skips the rest.
KINDS_BY_PHASE: dict[Phase, tuple[ActionKind, ...]] = {
    Phase.SETUP: (ActionKind.SETUP_ACTIVE, ActionKind.SETUP_DONE, ActionKind.PLAY_BASIC),
    Phase.MAIN: (
        ActionKind.PLAY_BASIC,
        ActionKind.EVOLVE,
        ActionKind.ATTACH,
        ActionKind.PLAY_TRAINER,
        ActionKind.RETREAT,
        ActionKind.ATTACK,
        ActionKind.END_TURN,
    ),
    Phase.PROMOTE: (ActionKind.PROMOTE,),
}


def legal_mask(game: Game) -> list[bool]:
    """The legal action mask (7.1): `is_legal` for every id, skipping kinds of other phases and cards not in hand
    (every kind with a card parameter requires the card in the hand). Once the episode has ended, whether the game
    is over or truncated (12.3), every action is reported legal (7.1; the step protocol of envc's language,
    docs/spec-language.md 14.3 step 8, says the same for truncation, which 7.1 does not mention)."""
    if game.phase == Phase.OVER or game.truncated:
        return [True] * NUM_ACTIONS
    mask = [False] * NUM_ACTIONS
    hand = own(game).hand
    for kind in KINDS_BY_PHASE[game.phase]:
        for action in ACTIONS_BY_KIND[kind]:
            if action.card and hand[action.card] == 0:
                continue
            mask[action.id] = is_legal(game, action)
    return mask


# ---------------------------------------------------------------------------------------------------------
# 7. Actions: effects


def step(game: Game, action_id: int, chance: Chance) -> None:
    """One environment step: the action's effect with everything it triggers; `game.rewards` is this step's."""
    if game.phase == Phase.OVER:
        raise IllegalAction(f"action {action_id}: the game is over")
    action = ACTIONS[action_id]
    if not is_legal(game, action):
        raise IllegalAction(f"action {action} is not legal")
    game.rewards = [0.0, 0.0]  # 12.2: only the step that ends the game pays
    kind = action.kind
    if kind == ActionKind.SETUP_ACTIVE:
        setup_active(game, action.card)
    elif kind == ActionKind.SETUP_DONE:
        setup_done(game)
    elif kind == ActionKind.PLAY_BASIC:
        play_basic(game, action.card)
    elif kind == ActionKind.EVOLVE:
        evolve(game, action.card, action.target)
    elif kind == ActionKind.ATTACH:
        attach(game, action.card, action.target)
    elif kind == ActionKind.PLAY_TRAINER:
        play_trainer(game, action.card, action.target, chance)
    elif kind == ActionKind.RETREAT:
        retreat(game, action.target)
    elif kind == ActionKind.ATTACK:
        attack(game, action.slot, chance)
    elif kind == ActionKind.END_TURN:
        end_of_turn(game, chance)  # 7.9
    else:
        promote(game, action.target)


def setup_active(game: Game, c: int) -> None:
    """7.2."""
    me = own(game)
    me.remove_from_hand(c)
    me.board[0] = put_into_play(game, c)


def setup_done(game: Game) -> None:
    """7.3: the second player sets up next, or the first turn begins."""
    if game.current_player == game.first_player:
        game.current_player = 1 - game.first_player
    else:
        begin_turn(game, game.first_player)


def play_basic(game: Game, c: int) -> None:
    """7.4: onto the lowest-numbered empty Bench position."""
    me = own(game)
    s = next(s for s in range(1, POSITIONS) if not me.board[s].occupied)
    me.remove_from_hand(c)
    me.board[s] = put_into_play(game, c)


def evolve(game: Game, c: int, t: int) -> None:
    """7.5: damage and energy stay; conditions go (10.2)."""
    me = own(game)
    me.remove_from_hand(c)
    target = me.board[t]
    target.card = c
    target.stack[1 if game.pool.cards[c].kind == Kind.STAGE1 else 2] = c
    target.played = game.turn
    target.clear_conditions()


def attach(game: Game, e: int, t: int) -> None:
    """7.6."""
    me = own(game)
    me.remove_from_hand(e)
    me.board[t].energy[e - FIRST_ENERGY] += 1
    game.energy_this_turn = 1


def retreat(game: Game, t: int) -> None:
    """7.7."""
    me = own(game)
    discard_energy(me, me.active, retreat_cost(game, me.active))
    me.active.clear_conditions()
    swap(me, t)
    game.retreats_this_turn = 1


def swap(player: Player, t: int) -> None:
    """9.3 (a swap): positions 0 and `t` exchange every field."""
    player.board[0], player.board[t] = player.board[t], player.board[0]


def promote(game: Game, t: int) -> None:
    """7.11: the creature at `t` becomes Active, then advance (11.4)."""
    me = own(game)
    me.board[0] = me.board[t]
    me.board[t] = Creature()
    advance(game)


# ---------------------------------------------------------------------------------------------------------
# 8. Attacks


def attack(game: Game, i: int, chance: Chance) -> None:
    """7.8: the attack resolves (8.2), then the turn ends (8.2 step 6, 6.3)."""
    resolve_attack(game, i, chance)
    end_of_turn(game, chance)


def resolve_attack(game: Game, i: int, chance: Chance) -> None:
    """8.2 steps 1 to 5."""
    p = game.current_player
    me, opp = game.players[p], game.players[1 - p]
    attacker, defender = me.active, opp.active
    x = game.pool.cards[attacker.card]
    y = game.pool.cards[defender.card]
    k = game.pool.attacks[x.attacks[i]]
    # step 1: confusion
    if attacker.cond == Cond.CONFUSED and not chance.flip():
        attacker.damage += CONFUSION_DAMAGE  # no weakness, resistance or stadium
        return
    # step 2: damage modifiers
    if k.effect == Effect.COIN_BONUS:
        heads = sum(1 for _ in range(k.n) if chance.flip())
        dmg = k.damage + k.amount * heads
    elif k.effect == Effect.COIN_OR_FAIL:
        if not chance.flip():
            return
        dmg = k.damage
    elif k.effect == Effect.ENERGY_BONUS:
        dmg = k.damage + k.amount * attacker.energy_count
    else:
        dmg = k.damage
    # step 3
    defender.damage += final_damage(game, x, y, dmg)
    # step 4
    attack_effect(game, p, k, chance)


def final_damage(game: Game, x: Card, y: Card, dmg: int) -> int:
    """8.3: stadium, then weakness, then resistance."""
    stadium = game.pool.cards[game.stadium]
    if dmg > 0 and stadium.effect == Effect.STADIUM_BOOST and stadium.etype == x.etype:  # step 1
        dmg += stadium.amount
    if dmg > 0 and y.weakness == x.etype:  # step 2
        dmg *= WEAKNESS_FACTOR
    if y.resistance == x.etype:  # step 3
        dmg = max(0, dmg - RESISTANCE)
    return dmg


def attack_effect(game: Game, p: int, k: Attack, chance: Chance) -> None:
    """8.4: the attack's effect after the damage (even 0 damage, even past the defender's HP)."""
    me, opp = game.players[p], game.players[1 - p]
    attacker, defender = me.active, opp.active
    effect = k.effect
    if effect == Effect.INFLICT:
        give_condition(defender, k.status)
    elif effect == Effect.COIN_INFLICT:
        if chance.flip():
            give_condition(defender, k.status)
    elif effect == Effect.DRAW:
        for _ in range(k.amount):
            me.draw()
    elif effect == Effect.HEAL:
        attacker.damage = max(0, attacker.damage - k.amount)
    elif effect == Effect.RECOIL:
        attacker.damage += k.amount
    elif effect == Effect.BENCH_DAMAGE:
        for s in range(1, POSITIONS):
            if opp.board[s].occupied:
                opp.board[s].damage += k.amount
    elif effect == Effect.DISCARD_OWN_ENERGY:
        discard_energy(me, attacker, k.amount)
    elif effect == Effect.DISCARD_OPP_ENERGY:
        discard_energy(opp, defender, k.amount)


def discard_energy(owner: Player, creature: Creature, n: int) -> None:
    """8.5: in type order, to the owner's discard pile; all of them when there are fewer than `n`."""
    for t in range(NTYPES):
        k = min(n, creature.energy[t])
        creature.energy[t] -= k
        owner.discard[FIRST_ENERGY + t] += k
        n -= k


def give_condition(creature: Creature, status: Status) -> None:
    """10.2: Asleep, Confused and Paralyzed replace each other; Poisoned and Burned are markers."""
    if status == Status.POISONED:
        creature.poisoned = True
    elif status == Status.BURNED:
        creature.burned = True
    elif status == Status.ASLEEP:
        creature.cond = Cond.ASLEEP
    elif status == Status.CONFUSED:
        creature.cond = Cond.CONFUSED
    elif status == Status.PARALYZED:
        creature.cond = Cond.PARALYZED


# ---------------------------------------------------------------------------------------------------------
# 9. Trainer cards


def play_trainer(game: Game, c: int, t: int, chance: Chance) -> None:
    """9.1."""
    p = game.current_player
    me = game.players[p]
    card = game.pool.cards[c]
    me.remove_from_hand(c)  # step 1
    if card.kind == Kind.ITEM:  # step 2
        me.discard[c] += 1
    elif card.kind == Kind.SUPPORTER:
        me.discard[c] += 1
        game.supporters_this_turn = 1
    else:
        if game.stadium:
            game.players[game.stadium_owner].discard[game.stadium] += 1
        game.stadium = c
        game.stadium_owner = p
        game.stadiums_this_turn = 1
    trainer_effect(game, card, t, chance)  # step 3


def trainer_effect(game: Game, card: Card, t: int, chance: Chance) -> None:
    """9.3."""
    me, opp = own(game), opponent(game)
    effect, amount = card.effect, card.amount
    if effect == Effect.DRAW:
        for _ in range(amount):
            me.draw()
    elif effect == Effect.DRAW_TO:
        while me.hand_size < amount and me.deck:
            me.draw()
    elif effect == Effect.HEAL:
        me.board[t].damage = max(0, me.board[t].damage - amount)
    elif effect == Effect.SWITCH:
        me.active.clear_conditions()
        swap(me, t)
    elif effect == Effect.GUST:
        opp.active.clear_conditions()
        swap(opp, t)
    elif effect in (Effect.SEARCH_BASIC, Effect.SEARCH_ENERGY):
        wanted = Kind.BASIC if effect == Effect.SEARCH_BASIC else Kind.ENERGY
        take_topmost(game, me, lambda found: found.kind == wanted)
        me.deck = chance.shuffle(me.deck)  # always, even when nothing was found
    elif effect == Effect.CURE:
        me.active.clear_conditions()
    elif effect == Effect.RETRIEVE_ENERGY:
        r = amount
        for e in range(NTYPES):
            k = min(r, me.discard[FIRST_ENERGY + e])
            me.discard[FIRST_ENERGY + e] -= k
            me.hand[FIRST_ENERGY + e] += k
            me.hand_size += k
            r -= k
    elif effect == Effect.DISCARD_OPP_ENERGY:
        discard_energy(opp, opp.active, amount)
    # stadium_retreat, stadium_boost: nothing when played (they act in 7.7 and 8.3)


# ---------------------------------------------------------------------------------------------------------
# 10. The checkup


def checkup(game: Game, chance: Chance) -> None:
    """10.3: the turn player, then the opponent; an empty Active spot is skipped."""
    for q in (game.turn_player, 1 - game.turn_player):
        z = game.players[q].active
        if not z.occupied:
            continue
        if z.poisoned:  # step 1
            z.damage += POISON_DAMAGE
        if z.burned:  # step 2
            z.damage += BURN_DAMAGE
            if chance.flip():
                z.burned = False
        if z.cond == Cond.ASLEEP and chance.flip():  # step 3
            z.cond = Cond.NONE
        if z.cond == Cond.PARALYZED and q == game.turn_player:  # step 4
            z.cond = Cond.NONE


# ---------------------------------------------------------------------------------------------------------
# 11. Knock-outs, prizes and promotion


def knockout_check(game: Game) -> None:
    """11.1: player 0 then 1, positions 0..5."""
    for q in (0, 1):
        player = game.players[q]
        for s in range(POSITIONS):
            z = player.board[s]
            if not z.occupied or z.damage < game.pool.cards[z.card].hp:
                continue
            for c in z.stack:  # step 1
                if c:
                    player.discard[c] += 1
            for t in range(NTYPES):
                player.discard[FIRST_ENERGY + t] += z.energy[t]
            player.board[s] = Creature()  # step 2
            taker = game.players[1 - q]  # step 3
            if taker.prizes:
                taker.add_to_hand(taker.prizes.pop())


def win_check(game: Game) -> bool:
    """11.3; True when the game is over."""
    won = [not game.players[q].prizes or not game.players[1 - q].has_creature_in_play for q in (0, 1)]
    if won[0] and won[1]:
        end_game(game, -1, WinReason.DRAW)
    elif won[0] or won[1]:
        q = 0 if won[0] else 1
        end_game(game, q, WinReason.NO_CREATURES if game.players[q].prizes else WinReason.PRIZES)
    return game.phase == Phase.OVER


def advance(game: Game) -> None:
    """11.4: promotion first (the turn player first), then the next turn."""
    tp = game.turn_player
    if not game.players[tp].active.occupied:
        game.phase = Phase.PROMOTE
        game.current_player = tp
    elif not game.players[1 - tp].active.occupied:
        game.phase = Phase.PROMOTE
        game.current_player = 1 - tp
    else:
        begin_turn(game, 1 - tp)


# ---------------------------------------------------------------------------------------------------------
# 12. End of the game


def end_game(game: Game, winner: int, reason: WinReason) -> None:
    """11.3, 12.1, 12.2: `phase = over`; +1 to the winner, -1 to the loser, 0 to both for a draw."""
    game.phase = Phase.OVER
    game.winner = winner
    game.win_reason = reason
    if winner >= 0:
        game.rewards = [0.0, 0.0]
        game.rewards[winner] = 1.0
        game.rewards[1 - winner] = -1.0



