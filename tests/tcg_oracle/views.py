"""What the outside sees: observations (docs/tcg-rules.md section 14) and the engine state (section 15)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .cards import DECK_SIZE, NTYPES, POSITIONS, PRIZES, CardPool
from .state import Cond, Creature, Game, Phase, Player, WinReason

BOARD_FEATURES = 12
TRANSIENT_FIELDS = ("pending", "pending_amount", "pending_status", "pending_target", "turn_ending", "advancing")


def board_features(game: Game, z: Creature) -> list[int]:
    """14.2: one position's 12 features; an empty position is all zeros."""
    if not z.occupied:
        return [0] * BOARD_FEATURES
    return [
        z.card,
        z.stack[0],
        z.stack[1],
        z.damage,
        *z.energy,
        int(z.poisoned),
        int(z.burned),
        int(z.cond),
        int(z.played == game.turn),
    ]


def observe(game: Game, p: int) -> dict[str, np.ndarray]:
    """14.1: the observation of player `p` (four arrays); side 0 is `p`, side 1 the opponent."""
    me, opp = game.players[p], game.players[1 - p]
    board = np.zeros((2, POSITIONS, BOARD_FEATURES), dtype=np.int16)
    for s in range(POSITIONS):
        board[0, s] = board_features(game, me.board[s])
    if game.phase != Phase.SETUP:  # 14.3: the opponent's board is hidden during setup
        for s in range(POSITIONS):
            board[1, s] = board_features(game, opp.board[s])
    if game.stadium == 0:  # 14.4 item 20
        owner = -1
    else:
        owner = 0 if game.stadium_owner == p else 1
    info = [
        int(game.phase),
        game.turn,
        int(game.turn_player == p),
        int(game.current_player == p),
        int(game.first_player == p),
        me.hand_size,
        len(me.deck),
        len(me.prizes),
        me.turns_taken,
        me.mulligans,
        opp.hand_size,
        len(opp.deck),
        len(opp.prizes),
        opp.turns_taken,
        opp.mulligans,
        game.energy_this_turn,
        game.supporters_this_turn,
        game.stadiums_this_turn,
        game.retreats_this_turn,
        game.stadium,
        owner,
    ]
    return {
        "my_hand": np.array(me.hand, dtype=np.int8),
        "boards": board,
        "discards": np.array([me.discard, opp.discard], dtype=np.int8),
        "info": np.array(info, dtype=np.int16),
    }


def engine_state(game: Game) -> dict[str, np.ndarray]:
    """15: the state under the names of `env.state_to_dict` (zones padded with 0 to their capacity)."""

    def padded(pile: list[int], capacity: int) -> list[int]:
        return pile + [0] * (capacity - len(pile))

    ps = game.players
    boards = [pl.board for pl in ps]
    return {
        "deck": np.array([padded(pl.deck, DECK_SIZE) for pl in ps]),
        "deck.count": np.array([len(pl.deck) for pl in ps]),
        "prizes": np.array([padded(pl.prizes, PRIZES) for pl in ps]),
        "prizes.count": np.array([len(pl.prizes) for pl in ps]),
        "hand": np.array([pl.hand for pl in ps]),
        "hand_size": np.array([pl.hand_size for pl in ps]),
        "discard": np.array([pl.discard for pl in ps]),
        "board.card": np.array([[z.card for z in b] for b in boards]),
        "board.stack": np.array([[z.stack for z in b] for b in boards]).reshape(2, POSITIONS, 3),
        "board.damage": np.array([[z.damage for z in b] for b in boards]),
        "board.energy": np.array([[z.energy for z in b] for b in boards]).reshape(2, POSITIONS, NTYPES),
        "board.poisoned": np.array([[z.poisoned for z in b] for b in boards]),
        "board.burned": np.array([[z.burned for z in b] for b in boards]),
        "board.cond": np.array([[int(z.cond) for z in b] for b in boards]),
        "board.played": np.array([[z.played for z in b] for b in boards]),
        "benched": np.array([sum(z.occupied for z in b[1:]) for b in boards]),
        "stadium": np.array(game.stadium),
        "stadium_owner": np.array(game.stadium_owner if game.stadium else -1),
        "phase": np.array(int(game.phase)),
        "turn": np.array(game.turn),
        "first_player": np.array(game.first_player),
        "turn_player": np.array(game.turn_player),
        "turns_taken": np.array([pl.turns_taken for pl in ps]),
        "mulligans": np.array([pl.mulligans for pl in ps]),
        "energy_this_turn": np.array(game.energy_this_turn),
        "supporters_this_turn": np.array(game.supporters_this_turn),
        "stadiums_this_turn": np.array(game.stadiums_this_turn),
        "retreats_this_turn": np.array(game.retreats_this_turn),
        "winner": np.array(game.winner),
        "win_reason": np.array(int(game.win_reason)),
        # 15: the spec's transient hand-offs within a step, "always none/0/false between steps"
        **{name: np.array(0) for name in TRANSIENT_FIELDS},
    }



def game_from_engine_state(
    d: Mapping[str, Any], deck_lists: tuple[int, int], max_turns: int, pool: CardPool
) -> Game:
    """The inverse of `engine_state`: a game from section 15's fields (plus `current_player` and `rewards`)."""

    def ints(name: str) -> list[Any]:
        return np.asarray(d[name]).tolist()  # type: ignore[no-any-return]

    players = []
    for p in (0, 1):
        deck_count, prize_count = ints("deck.count")[p], ints("prizes.count")[p]
        board = [
            Creature(
                card=ints("board.card")[p][s],
                stack=list(ints("board.stack")[p][s]),
                damage=ints("board.damage")[p][s],
                energy=list(ints("board.energy")[p][s]),
                poisoned=bool(ints("board.poisoned")[p][s]),
                burned=bool(ints("board.burned")[p][s]),
                cond=Cond(ints("board.cond")[p][s]),
                played=ints("board.played")[p][s],
            )
            for s in range(POSITIONS)
        ]
        players.append(
            Player(
                deck=ints("deck")[p][:deck_count],
                prizes=ints("prizes")[p][:prize_count],
                hand=list(ints("hand")[p]),
                hand_size=ints("hand_size")[p],
                discard=list(ints("discard")[p]),
                board=board,
                turns_taken=ints("turns_taken")[p],
                mulligans=ints("mulligans")[p],
            )
        )
    return Game(
        pool=pool,
        players=(players[0], players[1]),
        deck_lists=deck_lists,
        max_turns=max_turns,
        stadium=int(d["stadium"]),
        stadium_owner=int(d["stadium_owner"]),
        phase=Phase(int(d["phase"])),
        turn=int(d["turn"]),
        first_player=int(d["first_player"]),
        turn_player=int(d["turn_player"]),
        current_player=int(d["current_player"]),
        energy_this_turn=int(d["energy_this_turn"]),
        supporters_this_turn=int(d["supporters_this_turn"]),
        stadiums_this_turn=int(d["stadiums_this_turn"]),
        retreats_this_turn=int(d["retreats_this_turn"]),
        winner=int(d["winner"]),
        win_reason=WinReason(int(d["win_reason"])),
        rewards=[float(r) for r in np.asarray(d.get("rewards", [0.0, 0.0])).tolist()],
    )
