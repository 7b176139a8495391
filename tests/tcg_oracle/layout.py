"""The flat action space of docs/tcg-rules.md 7.1: 296 ids, kinds in order, parameters row-major."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from .cards import FIRST_BASIC, FIRST_ENERGY, FIRST_STAGE1, FIRST_TRAINER, NCARDS, POSITIONS


class ActionKind(IntEnum):
    """7.1 action kinds, in layout order."""

    SETUP_ACTIVE = 0
    SETUP_DONE = 1
    PLAY_BASIC = 2
    EVOLVE = 3
    ATTACH = 4
    PLAY_TRAINER = 5
    RETREAT = 6
    ATTACK = 7
    END_TURN = 8
    PROMOTE = 9


@dataclass(frozen=True)
class Action:
    """A decoded action: `card` is the card/energy parameter, `target` a position, `slot` an attack slot."""

    id: int
    kind: ActionKind
    card: int = 0
    target: int = 0
    slot: int = 0

    def __str__(self) -> str:
        name = self.kind.name.lower()
        args = {
            ActionKind.SETUP_ACTIVE: f"c={self.card}",
            ActionKind.PLAY_BASIC: f"c={self.card}",
            ActionKind.EVOLVE: f"c={self.card}, t={self.target}",
            ActionKind.ATTACH: f"e={self.card}, t={self.target}",
            ActionKind.PLAY_TRAINER: f"c={self.card}, t={self.target}",
            ActionKind.RETREAT: f"t={self.target}",
            ActionKind.ATTACK: f"i={self.slot}",
            ActionKind.PROMOTE: f"t={self.target}",
        }.get(self.kind, "")
        return f"{self.id} {name}({args})"


def _build() -> tuple[Action, ...]:
    out: list[Action] = []

    def add(kind: ActionKind, **params: int) -> None:
        out.append(Action(len(out), kind, **params))

    for c in range(FIRST_BASIC, FIRST_STAGE1):  # setup_active: c in [1, 25)
        add(ActionKind.SETUP_ACTIVE, card=c)
    add(ActionKind.SETUP_DONE)
    for c in range(FIRST_BASIC, FIRST_STAGE1):  # play_basic: c in [1, 25)
        add(ActionKind.PLAY_BASIC, card=c)
    for c in range(FIRST_STAGE1, FIRST_TRAINER):  # evolve: c in [25, 45), t in [0, 6)
        for t in range(POSITIONS):
            add(ActionKind.EVOLVE, card=c, target=t)
    for e in range(FIRST_ENERGY, NCARDS):  # attach: e in [60, 64), t in [0, 6)
        for t in range(POSITIONS):
            add(ActionKind.ATTACH, card=e, target=t)
    for c in range(FIRST_TRAINER, FIRST_ENERGY):  # play_trainer: c in [45, 60), t in [0, 6)
        for t in range(POSITIONS):
            add(ActionKind.PLAY_TRAINER, card=c, target=t)
    for t in range(1, POSITIONS):  # retreat: t in [1, 6)
        add(ActionKind.RETREAT, target=t)
    for i in range(2):  # attack: i in [0, 2)
        add(ActionKind.ATTACK, slot=i)
    add(ActionKind.END_TURN)
    for t in range(1, POSITIONS):  # promote: t in [1, 6)
        add(ActionKind.PROMOTE, target=t)
    return tuple(out)


ACTIONS: tuple[Action, ...] = _build()
NUM_ACTIONS = len(ACTIONS)
ACTIONS_BY_KIND: dict[ActionKind, tuple[Action, ...]] = {
    kind: tuple(a for a in ACTIONS if a.kind == kind) for kind in ActionKind
}
OFFSETS: dict[ActionKind, int] = {kind: acts[0].id for kind, acts in ACTIONS_BY_KIND.items()}

assert NUM_ACTIONS == 296, NUM_ACTIONS
