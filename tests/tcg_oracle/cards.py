"""The card pool of docs/tcg-rules.md section 3, read from the authoritative CSV files."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

SPECS = Path(__file__).resolve().parents[2] / "specs"

# 2. Parameters and constants
DECK_SIZE = 60
PRIZES = 6
HAND_SIZE = 7
BENCH_SIZE = 5
POSITIONS = BENCH_SIZE + 1
MAX_MULLIGANS = 3
MAX_TURNS = 68  # runtime param default
NCARDS = 64
POISON_DAMAGE = 10
BURN_DAMAGE = 20
CONFUSION_DAMAGE = 30
WEAKNESS_FACTOR = 2
RESISTANCE = 30
MAX_DRAW = 8
MAX_COINS = 3
MAX_COPIES = 12

# 3.1 id ranges
FIRST_BASIC = 1
FIRST_STAGE1 = 25
FIRST_STAGE2 = 37
FIRST_TRAINER = 45
FIRST_ENERGY = 60
NTYPES = 4  # 1.5: fire, water, grass, lightning
COLORLESS = 4


class Kind(IntEnum):
    """3.2 `kind`."""

    NONE = 0
    BASIC = 1
    STAGE1 = 2
    STAGE2 = 3
    ITEM = 4
    SUPPORTER = 5
    STADIUM = 6
    ENERGY = 7


class EType(IntEnum):
    """1.5 energy types in type order; NONE for "no type"."""

    FIRE = 0
    WATER = 1
    GRASS = 2
    LIGHTNING = 3
    NONE = 4


class Effect(IntEnum):
    """3.5 effect kinds, in enum order."""

    NONE = 0
    COIN_BONUS = 1
    COIN_OR_FAIL = 2
    ENERGY_BONUS = 3
    INFLICT = 4
    COIN_INFLICT = 5
    DRAW = 6
    DRAW_TO = 7
    HEAL = 8
    RECOIL = 9
    BENCH_DAMAGE = 10
    DISCARD_OWN_ENERGY = 11
    DISCARD_OPP_ENERGY = 12
    SWITCH = 13
    GUST = 14
    SEARCH_BASIC = 15
    SEARCH_ENERGY = 16
    CURE = 17
    RETRIEVE_ENERGY = 18
    STADIUM_RETREAT = 19
    STADIUM_BOOST = 20


class Status(IntEnum):
    """3.3 `status` of an inflict/coin_inflict attack."""

    NONE = 0
    ASLEEP = 1
    BURNED = 2
    CONFUSED = 3
    PARALYZED = 4
    POISONED = 5


CREATURE_KINDS = (Kind.BASIC, Kind.STAGE1, Kind.STAGE2)
TRAINER_KINDS = (Kind.ITEM, Kind.SUPPORTER, Kind.STADIUM)


@dataclass(frozen=True)
class Card:
    """One row of tcg_cards.csv (3.2)."""

    id: int
    name: str
    kind: Kind
    etype: EType
    hp: int
    evolves_from: int
    weakness: EType
    resistance: EType
    retreat: int
    attacks: tuple[int, int]
    effect: Effect
    amount: int

    @property
    def is_creature(self) -> bool:
        return self.kind in CREATURE_KINDS


@dataclass(frozen=True)
class Attack:
    """One row of tcg_attacks.csv (3.3); `cost` is (fire, water, grass, lightning, colorless)."""

    id: int
    name: str
    cost: tuple[int, int, int, int, int]
    damage: int
    effect: Effect
    amount: int
    n: int
    status: Status


@dataclass(frozen=True)
class CardPool:
    """The three data files: cards by id, attacks by id, preset deck lists (`copies[d][c]`)."""

    cards: tuple[Card, ...]
    attacks: tuple[Attack, ...]
    decks: tuple[tuple[int, ...], ...]


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(";"))


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    for i, row in enumerate(rows):
        key = "card" if "card" in row else "id"
        if int(row[key]) != i:
            raise ValueError(f"{path.name}: row {i} has {key} {row[key]} (3.2: the id equals the row index)")
    return rows


def load_pool(specs: Path = SPECS) -> CardPool:
    """Read specs/tcg_cards.csv, tcg_attacks.csv and tcg_decks.csv."""
    cards = tuple(
        Card(
            id=int(r["id"]),
            name=r["name"],
            kind=Kind[r["kind"].upper()],
            etype=EType[r["etype"].upper()],
            hp=int(r["hp"]),
            evolves_from=int(r["evolves_from"]),
            weakness=EType[r["weakness"].upper()],
            resistance=EType[r["resistance"].upper()],
            retreat=int(r["retreat"]),
            attacks=(_ints(r["attacks"])[0], _ints(r["attacks"])[1]),
            effect=Effect[r["effect"].upper()],
            amount=int(r["amount"]),
        )
        for r in _rows(specs / "tcg_cards.csv")
    )
    attacks = []
    for r in _rows(specs / "tcg_attacks.csv"):
        f, w, g, li, c = _ints(r["cost"])
        attacks.append(
            Attack(
                id=int(r["id"]),
                name=r["name"],
                cost=(f, w, g, li, c),
                damage=int(r["damage"]),
                effect=Effect[r["effect"].upper()],
                amount=int(r["amount"]),
                n=int(r["n"]),
                status=Status[r["status"].upper()],
            )
        )
    copies = [_ints(r["copies"]) for r in _rows(specs / "tcg_decks.csv")]
    decks = tuple(tuple(row[d] for row in copies) for d in range(len(copies[0])))
    if len(cards) != NCARDS or len(copies) != NCARDS:
        raise ValueError(f"expected {NCARDS} card rows (2. NCARDS)")
    return CardPool(cards=cards, attacks=tuple(attacks), decks=decks)
