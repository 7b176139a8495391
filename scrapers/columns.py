"""Raw table cells -> typed constant-table columns.

Column titles become identifiers; numbers become sized ints or f32; energy costs ("{G}{C}{C}") become
per-type counts; short repeated labels become enums; long text stays documentation (`str`), and in a card
table each distinct effect text becomes a member of an `Effect` enum, to be formalized by `envc synthesize`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from envc.check.symbols import RESERVED

from .extract import RawTable, slug

EMPTY = {"", "-", "–", "—", "n/a", "na", "none", "—/—", "×", "∅"}
INT_RE = re.compile(r"^([+-]?\d{1,9})\s*([+×x*-]?)$")
FLOAT_RE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+)$")
COST_RE = re.compile(r"^(\s*\{[A-Za-z]\}\s*)+$")
SYMBOL_RE = re.compile(r"\{([A-Za-z])\}")
WEAK_RE = re.compile(r"^(.*?)\s*(?:[×x*]\s*\d+|[+-]\s*\d+)?$")
BOOLS = {"yes": True, "no": False, "true": True, "false": False, "y": True, "n": False, "✓": True, "✗": False}

# Energy symbols as printed on cards (the Pokemon TCG convention), in the order members are declared.
ENERGY_SYMBOLS = {
    "G": "grass",
    "R": "fire",
    "W": "water",
    "L": "lightning",
    "P": "psychic",
    "F": "fighting",
    "D": "darkness",
    "M": "metal",
    "Y": "fairy",
    "N": "dragon",
    "C": "colorless",
}
ENERGY_ORDER = list(ENERGY_SYMBOLS.values())


@dataclass
class Column:
    """A typed column: `type` is str, bool, a sized int, f32 or an enum name; values are one per row."""

    name: str
    title: str
    type: str
    values: list[Any]
    shape: list[int] = field(default_factory=list)
    default: Any = None
    doc: str = ""


@dataclass
class Enum:
    """An enum inferred from a column's labels; `labels` maps each label as written to its member."""

    name: str
    members: list[str]
    doc: str = ""
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class TypedTable:
    """A constant table ready for the draft."""

    name: str
    columns: list[Column]
    source: str
    doc: str = ""

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return len(self.columns[0].values) if self.columns else 0

    def column(self, name: str) -> Column | None:
        """The column called `name`, if any."""
        return next((c for c in self.columns if c.name == name), None)


def ident(title: str, taken: set[str], fallback: str) -> str:
    """A column/enum-member identifier from a title: lower_snake, not reserved, unique in `taken`."""
    text = title.replace("#", " number ").replace("%", " percent ")
    name = slug(text, max_words=6, drop_stopwords=False) or fallback
    if name in RESERVED:
        name += "_"
    out, i = name, 2
    while out in taken:
        out, i = f"{name.rstrip('_')}_{i}", i + 1
    taken.add(out)
    return out


def camel(name: str) -> str:
    """An enum type name from a column identifier."""
    return "".join(w.capitalize() for w in name.split("_") if w) or "Kind"


def is_empty(cell: str) -> bool:
    """A cell that means 'nothing here'."""
    return cell.strip().lower() in EMPTY


def int_type(lo: int, hi: int) -> str:
    """The smallest signed type holding [lo, hi], at least i16 (game code adds damage to these)."""
    for name, bits in (("i16", 16),):
        if -(2 ** (bits - 1)) <= lo and hi < 2 ** (bits - 1):
            return name
    return "i32"


def energy_name(cell: str) -> str | None:
    """'Fire', 'fire energy', '{R}', 'Fire ×2' -> 'fire'; None if the cell names no energy type."""
    s = WEAK_RE.match(cell.strip())
    text = (s.group(1) if s else cell).strip()
    m = re.fullmatch(r"\{([A-Za-z])\}", text)
    if m:
        return ENERGY_SYMBOLS.get(m.group(1).upper())
    low = re.sub(r"\s+energy$", "", text.lower()).strip()
    return low if low in ENERGY_ORDER else None


def cost_counts(cell: str) -> dict[str, int] | None:
    """'{G}{C}{C}' -> {'grass': 1, 'colorless': 2}; None if the cell is not a cost."""
    if is_empty(cell) or cell.strip() == "0":
        return {}
    if not COST_RE.match(cell):
        return None
    out: dict[str, int] = {}
    for sym in SYMBOL_RE.findall(cell):
        name = ENERGY_SYMBOLS.get(sym.upper())
        if name is None:
            return None
        out[name] = out.get(name, 0) + 1
    return out


@dataclass
class Energy:
    """The energy types a draft uses, shared by every table (one `Energy` enum)."""

    used: set[str] = field(default_factory=set)
    needs_none: bool = False

    @property
    def members(self) -> list[str]:
        """Declared types in the canonical order, `colorless` after them, `none` last (so costs index members)."""
        out = [e for e in ENERGY_ORDER if e in self.used]
        return out + (["none"] if self.needs_none else [])

    @property
    def cost_width(self) -> int:
        """Entries of a cost array: one per member except `none`."""
        return len([m for m in self.members if m != "none"])


def _kind(cells: list[str]) -> str:
    """What a raw column holds: cost, int, float, bool, energy, or text."""
    full = [c.strip() for c in cells if not is_empty(c)]
    if not full:
        return "text"
    if all(COST_RE.match(c) for c in full) and all(cost_counts(c) is not None for c in full):
        return "cost"
    if all(INT_RE.match(c.replace(",", "")) for c in full):
        return "int"
    if all(FLOAT_RE.match(c) for c in full):
        return "float"
    if all(c.lower() in BOOLS for c in full):
        return "bool"
    if all(energy_name(c) for c in full):
        return "energy"
    return "text"


def scan_energy(tables: list[RawTable], energy: Energy) -> None:
    """First pass: which energy types the pages use (cost symbols and type-name columns)."""
    for t in tables:
        for j in range(len(t.headers)):
            cells = [r[j] for r in t.rows]
            kind = _kind(cells)
            if kind == "cost":
                for c in cells:
                    energy.used.update((cost_counts(c) or {}).keys())
            elif kind == "energy":
                energy.used.update(e for c in cells if (e := energy_name(c)))
                if any(is_empty(c) for c in cells):
                    energy.needs_none = True


def type_table(raw: RawTable, energy: Energy, enums: dict[str, Enum], taken_types: set[str]) -> TypedTable:
    """Type every column of a raw table; new enums are added to `enums` (shared across tables)."""
    taken: set[str] = set()
    cols: list[Column] = []
    for j, title in enumerate(raw.headers):
        cells = [r[j].strip() for r in raw.rows]
        name = ident(title, taken, f"column_{j + 1}")
        if name.endswith("_") and _kind(cells) == "energy":  # 'Type' of a card: its energy type
            name = ident("energy " + title, taken, f"column_{j + 1}")
        cols.append(_type_column(name, title, cells, energy, enums, taken_types))
    return TypedTable(raw.name, cols, raw.source, doc=raw.caption or raw.section)


def _type_column(
    name: str, title: str, cells: list[str], energy: Energy, enums: dict[str, Enum], taken_types: set[str]
) -> Column:
    kind = _kind(cells)
    doc = f"column '{title}'" if title else ""  # merged columns list these
    if kind == "cost":
        width = energy.cost_width
        order = [m for m in energy.members if m != "none"]
        costs = []
        for c in cells:
            counts = cost_counts(c) or {}
            costs.append([counts.get(m, 0) for m in order])
        return Column(name, title, "i8", costs, [width], [0] * width, f"{doc}: energy per type ({', '.join(order)})")
    if kind == "int":
        nums: list[int] = []
        suffixed = False
        for c in cells:
            m = INT_RE.match(c.replace(",", ""))
            if m is None:
                nums.append(0)
                continue
            nums.append(int(m.group(1)))
            suffixed |= bool(m.group(2))
        note = "; values such as '30+' or '20×' were read as their number (the text says the rest)" if suffixed else ""
        ty = int_type(min(nums), max(nums))
        return Column(name, title, ty, nums, default=0, doc=doc + note)
    if kind == "float":
        return Column(name, title, "f32", [float(c) if not is_empty(c) else 0.0 for c in cells], default=0.0, doc=doc)
    if kind == "bool":
        return Column(name, title, "bool", [BOOLS.get(c.lower(), False) for c in cells], default=False, doc=doc)
    if kind == "energy":
        values = [energy_name(c) or "none" for c in cells]
        default = "none" if "none" in values else None
        return Column(name, title, "Energy", values, default=default, doc=doc)
    full = [c for c in cells if not is_empty(c)]
    distinct = list(dict.fromkeys(full))
    labels_ok = all(len(c) <= 32 and len(c.split()) <= 4 for c in distinct)
    if distinct and labels_ok and len(distinct) <= 24 and (2 * len(distinct) <= len(full) or len(distinct) < len(full)):
        enum = _enum_for(name, distinct, len(full) < len(cells), enums, taken_types, doc)
        values = [enum.labels[c] if not is_empty(c) else "none" for c in cells]
        default = "none" if "none" in values else None
        return Column(name, title, enum.name, values, default=default, doc=doc)
    return Column(name, title, "str", cells, default="", doc=doc)


def _enum_for(
    col: str, labels: list[str], has_empty: bool, enums: dict[str, Enum], taken_types: set[str], doc: str
) -> Enum:
    """Reuse an enum with the same labels, else declare one named after the column."""
    for e in enums.values():
        if set(labels) <= set(e.labels) and (not has_empty or "none" in e.members):
            return e
    taken: set[str] = set()
    members: list[str] = []
    mapping: dict[str, str] = {}
    if has_empty:
        members.append(ident("none", taken, "none"))
    for label in labels:
        m = ident(label, taken, "member")
        members.append(m)
        mapping[label] = m
    base = camel(col)
    name, i = base, 2
    while name in taken_types or name in enums:
        name, i = f"{base}{i}", i + 1
    taken_types.add(name)
    e = Enum(name, members, f"labels of {doc}" if doc else "", mapping)
    enums[name] = e
    return e


def effect_enum(texts: list[str], taken_types: set[str]) -> Enum:
    """One member per distinct effect text (`none` first); member names come from the text's first words."""
    taken = {"none"}
    members = ["none"]
    mapping: dict[str, str] = {}
    for t in dict.fromkeys(texts):
        m = ident(slug(t.replace("'", ""), max_words=6), taken, "effect")
        members.append(m)
        mapping[t] = m
    name, i = "Effect", 2
    while name in taken_types:
        name, i = f"Effect{i}", i + 1
    taken_types.add(name)
    return Enum(name, members, "card effect texts (each member is formalized by its effect_* procedure)", mapping)


NUMBERED = re.compile(r"^(.*[a-z])_?(\d+)$")


def merge_numbered(table: TypedTable) -> None:
    """Columns base_1..base_n of one type (not text) become one array column `base` of shape [n, ...]."""
    groups: dict[str, list[tuple[int, Column]]] = {}
    for c in table.columns:
        m = NUMBERED.match(c.name)
        if m and c.type != "str":
            groups.setdefault(m.group(1), []).append((int(m.group(2)), c))
    names = {c.name for c in table.columns}
    for base, members in groups.items():
        members.sort(key=lambda x: x[0])
        nums = [n for n, _ in members]
        cols = [c for _, c in members]
        if len(cols) < 2 or nums != list(range(nums[0], nums[0] + len(nums))):
            continue
        if len({(c.type, tuple(c.shape)) for c in cols}) != 1 or (base in names and base not in {c.name for c in cols}):
            continue
        ty = cols[0].type
        if ty.startswith("i"):
            ty = max((c.type for c in cols), key=lambda t: int(t[1:]))
        values = [[c.values[r] for c in cols] for r in range(table.n_rows)]
        default = [c.default for c in cols] if all(c.default is not None for c in cols) else None
        titles = ", ".join(c.title for c in cols)
        shape = [len(cols), *cols[0].shape]
        merged = Column(base, base, ty, values, shape, default, f"{titles}; index i is number i+1")
        first = table.columns.index(cols[0])
        table.columns = [c for c in table.columns if c not in cols]
        table.columns.insert(first, merged)
