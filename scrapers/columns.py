"""Raw table cells -> typed constant-table columns.

Column titles become identifiers; numbers become sized ints or f32; costs written as brace tokens ("{G}{C}{C}",
"{Fire}{Fire}", "{2}{U}") become per-symbol counts (a site adapter's `symbols` say what each token means;
digits are generic amounts); short repeated labels become enums; long text stays documentation (`str`).
A column's type is what at least 90% of its non-empty cells are: the rest (a "?" among damage numbers) take
the column's default and are reported in the draft's notes. Type cells with an amount ("Water ×2",
"Fighting -30") keep it in columns of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from envc.check.symbols import RESERVED

from .extract import RawTable, slug

EMPTY = {"", "-", "–", "—", "n/a", "na", "none", "—/—", "×", "∅"}
INT_RE = re.compile(r"^([+-]?\d{1,9})\s*([+×x*-]?)$")
MUL_RE = re.compile(r"^[×x*]\s*(\d{1,9})$")  # "×2": a multiplier
FLOAT_RE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+)$")
TOKEN = r"\{[^{}\s][^{}]{0,23}\}"
COST_RE = re.compile(rf"^(\s*{TOKEN}\s*)+$")
SYMBOL_RE = re.compile(r"\{([^{}]+)\}")
AMOUNT_RE = re.compile(r"^(.*?)\s*(?:([×x*])\s*(\d{1,4})|([+-−])\s*(\d{1,4}))$")
BOOLS = {"yes": True, "no": False, "true": True, "false": False, "y": True, "n": False, "✓": True, "✗": False}
GENERIC = "generic"  # the member a digit inside braces ("{2}") counts towards
MAJORITY = 0.9  # share of non-empty cells that decides a column's type
MAX_OUTLIERS_SHOWN = 5

# Energy type names as printed on cards (words, not symbols: symbols come from the site adapter), in the order
# members are declared; `colorless` goes last with the generic amounts.
ENERGY_ORDER = [
    "grass", "fire", "water", "lightning", "psychic", "fighting", "darkness", "metal", "fairy", "dragon", "colorless",
]  # fmt: skip
ANY_AMOUNT = ("colorless", GENERIC)


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
    counts: bool = False  # a cost: one count per Energy member


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
    symbols: dict[str, str] = field(default_factory=dict)

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
    name = slug(text, max_words=6, drop_stopwords=False)[:48].rstrip("_") or fallback
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
    return "i16" if -(2**15) <= lo and hi < 2**15 else "i32"


def symbol_member(token: str, symbols: dict[str, str]) -> str:
    """The member a cost token means: the site's symbol map (as written, else ignoring case), else the token
    itself as an identifier ("Fire" -> "fire", "W" -> "w"); digits are generic amounts."""
    t = token.strip()
    if t in symbols:
        return symbols[t]
    low = {k.lower(): v for k, v in symbols.items()}
    if t.lower() in low:
        return low[t.lower()]
    if t.isdigit():
        return GENERIC
    name = slug(t, max_words=3, drop_stopwords=False)
    return re.sub(r"_energy$", "", name) or "symbol"


def cost_counts(cell: str, symbols: dict[str, str] | None = None) -> dict[str, int] | None:
    """'{G}{C}{C}' -> {'g': 1, 'c': 2} (with symbols G -> grass, C -> colorless: {'grass': 1, 'colorless': 2});
    '{2}{U}' -> {'generic': 2, 'u': 1}; None if the cell is not a cost."""
    if is_empty(cell) or cell.strip() == "0":
        return {}
    if not COST_RE.match(cell):
        return None
    out: dict[str, int] = {}
    for sym in SYMBOL_RE.findall(cell):
        name = symbol_member(sym, symbols or {})
        out[name] = out.get(name, 0) + (int(sym) if sym.strip().isdigit() else 1)
    return out


def split_amount(cell: str) -> tuple[str, int, int]:
    """'Water ×2' -> ('Water', 2, 0); 'Fighting -30' -> ('Fighting', 0, -30); 'Fire' -> ('Fire', 0, 0)."""
    m = AMOUNT_RE.match(cell.strip())
    if m is None or not m.group(1):
        return cell.strip(), 0, 0
    if m.group(3):
        return m.group(1), int(m.group(3)), 0
    sign = -1 if m.group(4) in "-−" else 1
    return m.group(1), 0, sign * int(m.group(5))


def energy_name(cell: str, symbols: dict[str, str] | None = None, known: set[str] | None = None) -> str | None:
    """'Fire', 'fire energy', '{Fire}', 'Fire ×2' -> 'fire'; '{R}' -> what the symbols say R is; None if the
    cell names no energy type (a type name of ENERGY_ORDER, or a member `known` from the costs)."""
    text = split_amount(cell)[0]
    m = re.fullmatch(rf"({TOKEN})+", text.replace(" ", ""))
    if m:
        names = {symbol_member(t, symbols or {}) for t in SYMBOL_RE.findall(text)}
        if len(names) != 1:
            return None
        name = names.pop()
    else:
        name = re.sub(r"_energy$", "", slug(text, max_words=3, drop_stopwords=False))
    return name if name in ENERGY_ORDER or name in (known or set()) else None


@dataclass
class Energy:
    """The energy types a draft uses, shared by every table (one `Energy` enum)."""

    used: dict[str, None] = field(default_factory=dict)  # members in order of first appearance
    needs_none: bool = False

    def add(self, name: str) -> None:
        """Note a member."""
        self.used.setdefault(name, None)

    @property
    def members(self) -> list[str]:
        """Known type names in canonical order, then other symbols as met, then the any-energy amounts
        (colorless, generic), `none` last (so costs index members)."""
        known = [e for e in ENERGY_ORDER if e in self.used and e not in ANY_AMOUNT]
        other = [e for e in self.used if e not in ENERGY_ORDER and e not in ANY_AMOUNT]
        out = known + other + [e for e in ANY_AMOUNT if e in self.used]
        return out + (["none"] if self.needs_none else [])

    @property
    def cost_width(self) -> int:
        """Entries of a cost array: one per member except `none`."""
        return len([m for m in self.members if m != "none"])


@dataclass
class Kind:
    """What a raw column holds (cost, int, float, bool, energy or text) and the rows that do not fit."""

    name: str
    outliers: list[int] = field(default_factory=list)


def _fits(kind: str, c: str, symbols: dict[str, str], known: set[str]) -> bool:
    if kind == "cost":
        return bool(COST_RE.match(c)) and cost_counts(c, symbols) is not None
    if kind == "int":
        return bool(INT_RE.match(c.replace(",", "")) or MUL_RE.match(c))
    if kind == "float":
        return bool(FLOAT_RE.match(c) or INT_RE.match(c))
    if kind == "bool":
        return c.lower() in BOOLS
    return energy_name(c, symbols, known) is not None


def _costly(title: str, cells: list[str]) -> bool:
    """Brace tokens are a cost when the title says so or some cell has several tokens or an amount; a column
    of single symbols ("{Fire}") is a type."""
    if COST_TITLE.search(title):
        return True
    return any(len(SYMBOL_RE.findall(c)) > 1 or re.search(r"\{\s*\d+\s*\}", c) for c in cells)


COST_TITLE = re.compile(r"\b(?:cost|costs|retreat|mana|price|upkeep)\b", re.I)


def column_kind(
    cells: list[str], symbols: dict[str, str] | None = None, known: set[str] | None = None, title: str = ""
) -> Kind:
    """The kind that at least 90% of the non-empty cells have (one short outlier allowed from 4 cells on)."""
    symbols, known = symbols or {}, known or set()
    full = [(i, c.strip()) for i, c in enumerate(cells) if not is_empty(c)]
    if not full:
        return Kind("text")
    allowed = max(int(len(full) * (1 - MAJORITY) + 1e-9), 1 if len(full) >= 4 else 0)
    for kind in ("cost", "int", "float", "bool", "energy"):
        if kind == "cost" and not _costly(title, [c for _, c in full]):
            continue
        bad = [i for i, c in full if not _fits(kind, c, symbols, known)]
        if len(bad) > allowed or (kind == "float" and not any(FLOAT_RE.match(c) for _, c in full)):
            continue
        if all(len(cells[i].strip()) <= 16 and len(cells[i].split()) <= 2 for i in bad):
            return Kind(kind, bad)
    return Kind("text")


def scan_energy(tables: list[RawTable], energy: Energy) -> None:
    """First pass: which energy types the pages use (cost symbols, then type-name columns)."""
    kinds: list[tuple[RawTable, int, Kind]] = []
    for t in tables:
        symbols = getattr(t, "symbols", {}) or {}
        for j in range(len(t.headers)):
            cells = [r[j] for r in t.rows]
            kind = column_kind(cells, symbols, title=t.headers[j])
            kinds.append((t, j, kind))
            if kind.name == "cost":
                for i, c in enumerate(cells):
                    if i not in kind.outliers:
                        for name in cost_counts(c, symbols) or {}:
                            energy.add(name)
    known = set(energy.used)
    for t, j, _ in kinds:
        symbols = getattr(t, "symbols", {}) or {}
        cells = [r[j] for r in t.rows]
        kind = column_kind(cells, symbols, known, t.headers[j])
        if kind.name == "energy":
            for i, c in enumerate(cells):
                if i not in kind.outliers and (e := energy_name(c, symbols, known)):
                    energy.add(e)
            if any(is_empty(c) for c in cells) or kind.outliers:
                energy.needs_none = True


EVOLVES_RE = re.compile(r"\b(?:evolves?\s*from|prior\s+stage|previous\s+stage|pre-?evolution|evolves?)\b", re.I)


@dataclass
class Context:
    """What typing a table needs besides its cells."""

    energy: Energy
    enums: dict[str, Enum]
    taken_types: set[str]
    notes: list[str] = field(default_factory=list)
    row_labels: list[str] = field(default_factory=list)  # shown in notes (card names), else row numbers
    card_names: dict[str, int] = field(default_factory=dict)  # lowercased name -> card id, for links


def type_table(raw: RawTable, ctx: Context, name_col: int | None = None) -> TypedTable:
    """Type every column of a raw table; new enums are added to `ctx.enums` (shared across tables).

    `name_col` is the card-name column of a card list: it stays text, and columns naming its cards (evolves
    from) get card ids."""
    taken: set[str] = set()
    cols: list[Column] = []
    symbols = getattr(raw, "symbols", {}) or {}
    table = TypedTable(raw.name, cols, raw.source, doc=raw.caption or raw.section, symbols=dict(symbols))
    for j, title in enumerate(raw.headers):
        cells = [r[j].strip() for r in raw.rows]
        name = ident(title, taken, f"column_{j + 1}")
        if j == name_col:
            cols.append(Column(name, title, "str", cells, default="", doc=f"column '{title}'" if title else ""))
            continue
        kind = column_kind(cells, symbols, set(ctx.energy.used), title)
        if name.endswith("_") and kind.name == "energy":  # 'Type' of a card: its energy type
            name = ident("energy " + title, taken, f"column_{j + 1}")
        if ctx.card_names and kind.name == "text" and _is_link(title, cells, ctx.card_names):
            cols += _link(raw.name, name, title, cells, ctx, taken)
            continue
        cols += _type_column(raw.name, name, title, cells, kind, symbols, ctx, taken)
    return table


def _is_link(title: str, cells: list[str], names: dict[str, int]) -> bool:
    """A column of card names of the same list: titled so ('Evolves from') with some match, or all matching."""
    full = [c.lower() for c in cells if not is_empty(c)]
    hits = sum(c in names for c in full)
    if not full or hits == 0:
        return False
    return bool(EVOLVES_RE.search(title)) or hits == len(full)


def _link(table: str, name: str, title: str, cells: list[str], ctx: Context, taken: set[str]) -> list[Column]:
    """The names as written and their card ids (0 = none); names not in the list are reported."""
    ids = [ctx.card_names.get(c.lower(), 0) if not is_empty(c) else 0 for c in cells]
    missing = [(r, c) for r, c in enumerate(cells) if not is_empty(c) and c.lower() not in ctx.card_names]
    if missing:
        shown = ", ".join(f"{_row(ctx, r)} '{c}'" for r, c in missing[:MAX_OUTLIERS_SHOWN])
        more = f" and {len(missing) - MAX_OUTLIERS_SHOWN} more" if len(missing) > MAX_OUTLIERS_SHOWN else ""
        ctx.notes.append(
            f"table {table}, column '{title}': {len(missing)} name(s) are not cards of the list and got card id 0: "
            f"{shown}{more}"
        )
    id_name = ident(f"{name}_id", taken, "card_id")
    return [
        Column(name, title, "str", cells, default="", doc=f"column '{title}'"),
        Column(id_name, id_name, "i16", ids, default=0, doc=f"card id (row of table cards) of '{title}', 0 = none"),
    ]


def _row(ctx: Context, r: int) -> str:
    label = ctx.row_labels[r] if r < len(ctx.row_labels) else ""
    return f"row {r} ({label})" if label else f"row {r}"


def _report(table: str, title: str, ty: str, default: Any, cells: list[str], rows: list[int], ctx: Context) -> None:
    if not rows:
        return
    shown = ", ".join(f"{_row(ctx, r)} '{cells[r]}'" for r in rows[:MAX_OUTLIERS_SHOWN])
    more = f" and {len(rows) - MAX_OUTLIERS_SHOWN} more" if len(rows) > MAX_OUTLIERS_SHOWN else ""
    ctx.notes.append(
        f"table {table}, column '{title}': {len(rows)} cell(s) are not {ty} like the rest and were read as "
        f"{default!r}: {shown}{more}"
    )


def _type_column(
    table: str,
    name: str,
    title: str,
    cells: list[str],
    kind: Kind,
    symbols: dict[str, str],
    ctx: Context,
    taken: set[str],
) -> list[Column]:
    doc = f"column '{title}'" if title else ""  # merged columns list these
    bad = set(kind.outliers)
    if kind.name == "cost":
        order = [m for m in ctx.energy.members if m != "none"]
        width = len(order)
        costs = []
        for r, c in enumerate(cells):
            counts = {} if r in bad else cost_counts(c, symbols) or {}
            costs.append([counts.get(m, 0) for m in order])
        _report(table, title, "a cost", 0, cells, kind.outliers, ctx)
        doc = f"{doc}: count per symbol ({', '.join(order)})"
        return [Column(name, title, "i8", costs, [width], [0] * width, doc, counts=True)]
    if kind.name == "int":
        nums: list[int] = []
        suffixed = False
        for r, c in enumerate(cells):
            m = INT_RE.match(c.replace(",", ""))
            mul = MUL_RE.match(c)
            if r in bad or (m is None and mul is None):
                nums.append(0)
                continue
            if m is not None:
                nums.append(int(m.group(1)))
                suffixed |= bool(m.group(2))
            else:
                assert mul is not None
                nums.append(int(mul.group(1)))
                suffixed = True
        note = "; values such as '30+', '20×' or '×2' were read as their number (the text says the rest)"
        note = note if suffixed else ""
        _report(table, title, "numbers", 0, cells, kind.outliers, ctx)
        return [Column(name, title, int_type(min(nums), max(nums)), nums, default=0, doc=doc + note)]
    if kind.name == "float":
        vals = [float(c) if not is_empty(c) and r not in bad else 0.0 for r, c in enumerate(cells)]
        _report(table, title, "numbers", 0.0, cells, kind.outliers, ctx)
        return [Column(name, title, "f32", vals, default=0.0, doc=doc)]
    if kind.name == "bool":
        _report(table, title, "yes/no", False, cells, kind.outliers, ctx)
        return [Column(name, title, "bool", [BOOLS.get(c.lower(), False) for c in cells], default=False, doc=doc)]
    if kind.name == "energy":
        return _energy_column(table, name, title, cells, kind, symbols, ctx, taken)
    full = [c for c in cells if not is_empty(c)]
    distinct = list(dict.fromkeys(full))
    labels_ok = all(len(c) <= 32 and len(c.split()) <= 4 for c in distinct)
    if distinct and labels_ok and len(distinct) <= 24 and (2 * len(distinct) <= len(full) or len(distinct) < len(full)):
        enum = _enum_for(name, distinct, len(full) < len(cells), ctx.enums, ctx.taken_types, doc)
        values = [enum.labels[c] if not is_empty(c) else "none" for c in cells]
        default = "none" if "none" in values else None
        return [Column(name, title, enum.name, values, default=default, doc=doc)]
    return [Column(name, title, "str", cells, default="", doc=doc)]


def _energy_column(
    table: str,
    name: str,
    title: str,
    cells: list[str],
    kind: Kind,
    symbols: dict[str, str],
    ctx: Context,
    taken: set[str],
) -> list[Column]:
    """An Energy column; amounts written beside the type ('×2', '-30') go to `<name>_factor` / `<name>_amount`."""
    known = set(ctx.energy.used)
    bad = set(kind.outliers)
    values, factors, amounts = [], [], []
    for r, c in enumerate(cells):
        e = None if r in bad else energy_name(c, symbols, known)
        _, factor, amount = split_amount(c) if e else ("", 0, 0)
        values.append(e or "none")
        factors.append(factor)
        amounts.append(amount)
    _report(table, title, "energy types", "none", cells, kind.outliers, ctx)
    doc = f"column '{title}'"
    out = [Column(name, title, "Energy", values, default="none" if "none" in values else None, doc=doc)]
    if any(factors):
        n = ident(f"{name}_factor", taken, "factor")
        out.append(Column(n, n, "i16", factors, default=0, doc=f"multiplier written in '{title}' (×2 -> 2), 0 if none"))
    if any(amounts):
        n = ident(f"{name}_amount", taken, "amount")
        out.append(Column(n, n, "i16", amounts, default=0, doc=f"amount written in '{title}' (-30 -> -30), 0 if none"))
    return out


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


NUMBERED = re.compile(r"^(.*[a-z])_?(\d+)$")


def merge_numbered(table: TypedTable) -> dict[str, tuple[str, int]]:
    """Columns base_1..base_n of one type (not text) become one array column `base` of shape [n, ...];
    returns where each merged column went (old name -> (array column, index))."""
    groups: dict[str, list[tuple[int, Column]]] = {}
    for c in table.columns:
        m = NUMBERED.match(c.name)
        if m and c.type != "str":
            groups.setdefault(m.group(1), []).append((int(m.group(2)), c))
    names = {c.name for c in table.columns}
    moved: dict[str, tuple[str, int]] = {}
    for base, members in groups.items():
        members.sort(key=lambda x: x[0])
        nums = [n for n, _ in members]
        cols = [c for _, c in members]
        if len(cols) < 2 or nums != list(range(nums[0], nums[0] + len(nums))):
            continue
        if len({(c.type, tuple(c.shape)) for c in cols}) != 1 or (base in names and base not in {c.name for c in cols}):
            continue
        values = [[c.values[r] for c in cols] for r in range(table.n_rows)]
        default = [c.default for c in cols] if all(c.default is not None for c in cols) else None
        titles = ", ".join(c.title for c in cols)
        shape = [len(cols), *cols[0].shape]
        merged = Column(
            base, base, cols[0].type, values, shape, default, f"{titles}; index i is number i+1", cols[0].counts
        )
        first = table.columns.index(cols[0])
        table.columns = [c for c in table.columns if c not in cols]
        table.columns.insert(first, merged)
        moved.update({c.name: (base, i) for i, c in enumerate(cols)})
    return moved
