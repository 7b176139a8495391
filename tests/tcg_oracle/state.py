"""The game state of docs/tcg-rules.md section 4 as plain dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from .cards import NCARDS, NTYPES, POSITIONS, CardPool


class Phase(IntEnum):
    """4.7 `phase`."""

    SETUP = 0
    MAIN = 1
    PROMOTE = 2
    OVER = 3


class Cond(IntEnum):
    """4.5 `cond`: the three conditions that replace each other (10.2)."""

    NONE = 0
    ASLEEP = 1
    CONFUSED = 2
    PARALYZED = 3


class WinReason(IntEnum):
    """4.7 `win_reason`."""

    NONE = 0
    PRIZES = 1
    NO_CREATURES = 2
    DECK_OUT = 3
    DRAW = 4


@dataclass(slots=True)
class Creature:
    """One board position (4.5); `card == 0` is an empty position with every field zero."""

    card: int = 0
    stack: list[int] = field(default_factory=lambda: [0, 0, 0])
    damage: int = 0
    energy: list[int] = field(default_factory=lambda: [0] * NTYPES)
    poisoned: bool = False
    burned: bool = False
    cond: Cond = Cond.NONE
    played: int = 0

    @property
    def occupied(self) -> bool:
        return self.card != 0

    @property
    def energy_count(self) -> int:
        return sum(self.energy)

    @property
    def has_condition(self) -> bool:
        return self.poisoned or self.burned or self.cond != Cond.NONE

    def clear_conditions(self) -> None:
        """10.2: evolving, moving to the Bench and `cure` remove every special condition."""
        self.poisoned = False
        self.burned = False
        self.cond = Cond.NONE


def empty_board() -> list[Creature]:
    return [Creature() for _ in range(POSITIONS)]


@dataclass(slots=True)
class Player:
    """One player's zones (4.1 to 4.5) and counters (4.7)."""

    deck: list[int] = field(default_factory=list)  # 4.1: bottom to top, the top is the last card
    prizes: list[int] = field(default_factory=list)  # 4.2: bottom to top
    hand: list[int] = field(default_factory=lambda: [0] * NCARDS)  # 4.3: copies per card id
    hand_size: int = 0
    discard: list[int] = field(default_factory=lambda: [0] * NCARDS)  # 4.4: copies per card id
    board: list[Creature] = field(default_factory=empty_board)  # 4.5: 0 = Active, 1..5 = Bench
    turns_taken: int = 0
    mulligans: int = 0

    @property
    def active(self) -> Creature:
        return self.board[0]

    @property
    def has_creature_in_play(self) -> bool:
        return any(c.occupied for c in self.board)

    def add_to_hand(self, card: int) -> None:
        self.hand[card] += 1
        self.hand_size += 1

    def remove_from_hand(self, card: int) -> None:
        assert self.hand[card] > 0, f"card {card} is not in the hand"
        self.hand[card] -= 1
        self.hand_size -= 1

    def draw(self) -> None:
        """1.7: move the top card of the deck into the hand; nothing when the deck is empty."""
        if self.deck:
            self.add_to_hand(self.deck.pop())


@dataclass(slots=True)
class Game:
    """The whole state: both players, the stadium (4.6) and the turn state (4.7)."""

    pool: CardPool = field(repr=False)
    players: tuple[Player, Player]
    deck_lists: tuple[int, int]  # 2: `deck_p0`, `deck_p1`
    max_turns: int
    stadium: int = 0
    stadium_owner: int = -1
    phase: Phase = Phase.SETUP
    turn: int = 0
    first_player: int = 0
    turn_player: int = 0
    current_player: int = 0
    energy_this_turn: int = 0
    supporters_this_turn: int = 0
    stadiums_this_turn: int = 0
    retreats_this_turn: int = 0
    winner: int = -1
    win_reason: WinReason = WinReason.NONE
    rewards: list[float] = field(default_factory=lambda: [0.0, 0.0])

    @property
    def terminated(self) -> bool:
        """12.3."""
        return self.phase == Phase.OVER

    @property
    def truncated(self) -> bool:
        """12.3: cut once turn `max_turns + 1` has begun, unless the game is over."""
        return self.phase != Phase.OVER and self.turn > self.max_turns
