"""The oracle protocol: any environment wrapped so that `envc verify --against` can compare a spec with it.

An oracle is the user's original environment seen through the spec's eyes: its state is read and written in
the spec's field names and dtypes, it steps one action at a time, and it reports what the spec's step reports
(legal action mask, current player, per-player rewards, terminated, truncated, observation). Adapters:
`gymnasium:ENV_ID`, `pgx:ENV_ID` and `MODULE:FACTORY` (a user's own class); see docs/oracle.md.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class OracleError(Exception):
    """A target that cannot be used as an oracle (unknown, fails to import, raises, mismatches the spec)."""


@dataclass(frozen=True)
class Transition:
    """What the original reports after a reset or a step, in the spec's terms."""

    rewards: np.ndarray  # f32[num_players]
    terminated: bool
    truncated: bool
    current_player: int = 0
    legal_action_mask: np.ndarray | None = None  # bool[num_actions]; None: the original has no mask
    observation: Any = None  # the player to move's observation; None: not compared


@dataclass(frozen=True)
class Conversion:
    """How one spec field is read from the original: its path there and the dtype change, if any."""

    field: str
    source: str  # e.g. "state[2]" or "_x.board"
    from_dtype: str  # the original's dtype, e.g. "float64"
    to_dtype: str  # the spec's dtype, e.g. "float32"

    @property
    def lossy(self) -> bool:
        """The original's values do not all survive the conversion (float64 -> f32 rounds)."""
        return np.dtype(self.from_dtype).itemsize > np.dtype(self.to_dtype).itemsize


@dataclass
class Oracle(ABC):
    """One instance of the original environment, driven step by step.

    `fields` lists the spec fields this oracle reads and writes (a subset of the spec's state; the rest, e.g.
    bookkeeping the original keeps implicitly, is not compared). `chance_fields` lists the fields the original
    fills from its own randomness during a step (a spawned tile, a dealt card): after each step those are
    copied from the original into the spec's state (state injection), so both continue from one situation.
    """

    fields: tuple[str, ...]
    chance_fields: tuple[str, ...] = ()
    conversions: tuple[Conversion, ...] = field(default=())
    num_players: int = 1

    @abstractmethod
    def reset(self, seed: int) -> Transition:
        """Start an episode from the original's own reset with `seed`."""

    @abstractmethod
    def get_state(self) -> dict[str, np.ndarray]:
        """The original's current state as spec fields (spec dtypes: the conversions are applied)."""

    def raw_state(self) -> dict[str, np.ndarray]:
        """The original's current state as spec fields in the original's own dtypes (no rounding), so that a
        value can be seen to equal a spec constant exactly; by default `get_state()`."""
        return self.get_state()

    @abstractmethod
    def set_state(self, values: Mapping[str, np.ndarray]) -> None:
        """Overwrite the original's state with spec field values (the inverse conversion). Values may come at a
        higher precision than the spec's dtype (a float64 boundary value such as 2.4 where the spec holds f32):
        an adapter stores them at the original's own precision."""

    def thresholds(self) -> dict[str, list[float]]:
        """Values the original compares scalar fields with, as spec field -> values (e.g. its time limit for
        `step_count`): the L2 boundary cases start from states at and next to them, besides the spec's own
        constants, so that a comparison the spec lacks (a forgotten truncation) is found too. By default none."""
        return {}

    @abstractmethod
    def status(self) -> Transition:
        """The current situation without stepping (mask, player, observation; rewards of the last step)."""

    @abstractmethod
    def step(self, action: Any) -> Transition:
        """Take one action (an int for discrete specs, an f32 array for box actions)."""

    def observe(self, player: int) -> Any:
        """The observation of any player in the current state, for games of hidden information (compared with the
        spec's `observe(state, player)`); None by default: the original reports only the mover's, in `status`."""
        return None

    def close(self) -> None:  # noqa: B027 - optional: most originals hold nothing to release
        """Release the original's resources."""
