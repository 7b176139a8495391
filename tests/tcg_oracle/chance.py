"""Chance sources (docs/tcg-rules.md section 13): coin flips and whole-deck shuffles, nothing else."""

from __future__ import annotations

import random
from typing import Protocol


class Chance(Protocol):
    """Where the game's randomness comes from; `shuffle` takes and returns a deck bottom to top (4.1)."""

    def flip(self) -> bool: ...

    def shuffle(self, cards: list[int]) -> list[int]: ...


class RandomChance:
    """The default source: fair coins and uniform shuffles from `random.Random(seed)`."""

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)

    def flip(self) -> bool:
        return self.rng.random() < 0.5

    def shuffle(self, cards: list[int]) -> list[int]:
        out = list(cards)
        self.rng.shuffle(out)
        return out


class ChanceMismatch(AssertionError):
    """A scripted source was asked for a chance event it does not hold next (or left some unused)."""


class ScriptedChance:
    """Replays given outcomes in order: ("flip", heads) and ("shuffle", deck after shuffling, bottom to top).

    A shuffle must return a permutation of the cards it is given; `finish` checks every outcome was used.
    """

    def __init__(self, events: list[tuple[str, object]] | None = None) -> None:
        self.load(events or [])

    def load(self, events: list[tuple[str, object]]) -> None:
        self.events = list(events)
        self.used = 0

    def _next(self, kind: str, asked: str) -> object:
        if self.used >= len(self.events):
            raise ChanceMismatch(f"the game asked for a {asked} but the script has no more events "
                                 f"(it held {len(self.events)})")
        got_kind, value = self.events[self.used]
        if got_kind != kind:
            raise ChanceMismatch(f"the game asked for a {asked} but event #{self.used} is a {got_kind} ({value})")
        self.used += 1
        return value

    def flip(self) -> bool:
        value = self._next("flip", "coin flip")
        assert isinstance(value, bool)
        return value

    def shuffle(self, cards: list[int]) -> list[int]:
        value = self._next("shuffle", f"shuffle of {len(cards)} cards")
        assert isinstance(value, list)
        if sorted(value) != sorted(cards):
            raise ChanceMismatch(
                f"event #{self.used - 1}: the scripted shuffle holds {len(value)} cards {sorted(value)}, "
                f"the game shuffles {len(cards)} cards {sorted(cards)}"
            )
        return list(value)

    def finish(self) -> None:
        if self.used != len(self.events):
            rest = self.events[self.used:]
            raise ChanceMismatch(f"the game used {self.used} of {len(self.events)} chance events; unused: {rest}")
