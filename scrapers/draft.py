"""Extracted pages -> a draft spec: constant tables from the data, a `todo` list of rule text to formalize.

The draft is a valid, playable spec: placeholders (`draft_*`) stand in for the game state until the `game`
todo item is formalized, and every action, rule and card effect named by the rules has a stub (an action
that is never legal, a rule that never fires, a procedure that does nothing) whose code `envc synthesize`
writes from the todo text.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from envc.check.symbols import RESERVED

from .columns import (
    Column,
    Context,
    Energy,
    Enum,
    TypedTable,
    energy_name,
    ident,
    int_type,
    merge_numbered,
    scan_energy,
    type_table,
)
from .effects import EffectKind, Templates, templatize
from .emit import Flow, FlowList, dump
from .extract import PageContent, RawTable, Section, slug
from .fetch import ScrapeError

DRAFT_FIELD = "draft_turn"
DRAFT_ACTION = "draft_pass"
DRAFT_OBS = "draft_seen"
MODULE = "game"
NO_CARD = "(no card)"
HEADER = (
    "Draft spec written by `envc scrape`. The tables are data from the pages; the `todo` section lists the\n"
    "rule text still to formalize (run `envc synthesize` on this file, or write the code by hand).\n"
    "Names starting with draft_ are placeholders that the 'game' item replaces."
)
# Bounds that keep every draft within what `envc lint` reads (4 MiB, 500,000 YAML nodes) and what a model
# can be given: the `game` item's text, the action/rule items and their text in all, distinct card effects
# (more and the effect column stays plain text) and the names listed under each effect. Items past a bound
# are left out with a note; a draft still too large (table data) is an error.
MAX_MODULE_CHARS = 1_000_000  # whole comprehensive rules (MTG: ~640K); `envc synthesize` chunks it by section
MAX_ITEMS, MAX_ITEMS_CHARS = 1_000, 1_000_000
MAX_EFFECTS, MAX_USED_BY = 500, 20
MAX_DRAFT_BYTES, MAX_DRAFT_NODES = 3 * 1024 * 1024, 400_000


@dataclass
class TodoItem:
    """Rule text waiting to become spec code."""

    name: str
    target: str
    source: str
    text: str

    def to_yaml(self) -> dict[str, Any]:
        """The `todo` entry."""
        return {"name": self.name, "target": self.target, "source": self.source, "text": self.text}


@dataclass
class Draft:
    """A draft spec document and what it was made from."""

    doc: dict[str, Any]
    todo: list[TodoItem]
    tables: dict[str, TypedTable] = field(default_factory=dict)
    enums: dict[str, Enum] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the bounds left out, one line each

    def yaml(self) -> str:
        """The draft as YAML text; ScrapeError when it is larger than a spec may be."""
        header = HEADER + "".join(f"\nNote: {n}" for n in self.notes)
        text = dump(self.doc, header)
        size = len(text.encode("utf-8"))
        if size > MAX_DRAFT_BYTES:
            raise ScrapeError(
                f"the draft would be {size:,} bytes, more than the limit of {MAX_DRAFT_BYTES:,} "
                f"({_biggest(self)}); scrape fewer pages"
            )
        return text


def build_draft(pages: list[PageContent], name: str | None = None, players: int = 2) -> Draft:
    """Assemble the draft from extracted pages (the first one is the rules page)."""
    if not pages:
        raise ValueError("no pages")
    rules_pages = [p for p in pages if not p.card_list] or pages[:1]
    for p in pages:
        legend = symbol_legend(p)
        for raw_table in p.tables:
            if legend and not getattr(raw_table, "symbols", None):
                raw_table.symbols = dict(legend)
    cards_raw, other_raw = _split_cards(pages)
    names = {"cards", "apply_effect", DRAFT_FIELD, DRAFT_OBS}
    for raw in other_raw:  # table names: unique across pages, never a reserved word
        raw.name = ident(raw.name + ("_table" if raw.name in RESERVED else ""), names, "table")
    energy = Energy()
    scan_energy(([cards_raw] if cards_raw else []) + other_raw, energy)
    taken_types = set(RESERVED) | {t.name for t in other_raw} | {"cards", "Energy"}
    enums: dict[str, Enum] = {}
    tables: dict[str, TypedTable] = {}
    effects: Effects | None = None
    notes = [n for p in pages for n in p.notes]
    card_names: dict[str, int] = {}
    if cards_raw is not None:
        name_j = _name_column(cards_raw.headers)
        labels = [r[name_j].strip() for r in cards_raw.rows]
        for i, n in enumerate(labels[1:], start=1):
            card_names.setdefault(n.lower(), i)
        ctx = Context(energy, enums, taken_types, notes, labels, card_names)
        cards = type_table(cards_raw, ctx, name_j)
        cards.name = "cards"
        cards.doc = f"Card list (row 0 is '{NO_CARD}', so card id 0 means an empty slot)"
        avoid = set(RESERVED) | names | {t.name for t in other_raw} | {MODULE, DRAFT_ACTION}
        effects = _effects(cards, name_j, ctx, avoid)
        moved = merge_numbered(cards)
        if effects is not None:
            effects.moved = moved
        tables["cards"] = cards
    for raw in other_raw:
        t = type_table(raw, Context(energy, enums, taken_types, notes, card_names=card_names))
        if all(c.type == "str" for c in t.columns):
            continue  # text only: it stays in its section's text
        merge_numbered(t)
        tables[t.name] = t
    if energy.members and any(c.type == "Energy" or c.counts for t in tables.values() for c in t.columns):
        enums = {"Energy": Enum("Energy", energy.members, "energy types (costs are counted per member)"), **enums}
    if effects is not None:
        enums[effects.enum.name] = effects.enum
        if effects.words is not None:
            enums[effects.words.name] = effects.words

    title = next((p.title for p in rules_pages if p.title), "") or "game"
    spec_name = name or _spec_name(title)
    todo = _todo(rules_pages, effects, tables, notes)
    doc: dict[str, Any] = {
        "name": spec_name,
        "doc": f"Draft of '{title}' from {', '.join(dict.fromkeys(p.url for p in pages))}",
        "version": "0.1",
        "players": players,
        "todo": [t.to_yaml() for t in todo],
    }
    if enums:
        doc["types"] = {
            e.name: Flow(enum=FlowList(e.members), doc=e.doc) if e.doc else Flow(enum=FlowList(e.members))
            for e in enums.values()
        }
    if tables:
        doc["tables"] = {t.name: _table_yaml(t) for t in tables.values()}
    doc["state"] = {DRAFT_FIELD: Flow(type="i32", doc="placeholder until the todo item 'game' declares the state")}
    actions: dict[str, Any] = {
        DRAFT_ACTION: {
            "doc": "placeholder so the draft can be played, until the last action item is formalized",
            "effect": f"{DRAFT_FIELD} += 1",
        }
    }
    rules: list[Any] = []
    procedures: dict[str, Any] = {}
    for item in todo:
        kind, _, target = item.target.partition(".")
        stub = f"placeholder until the todo item '{item.name}' is formalized"
        if kind == "actions":
            actions[target] = {"doc": stub, "legal": False}
        elif kind == "rules":
            rules.append({"name": target, "doc": stub, "when": False, "body": "pass"})
    if effects is not None:
        procedures.update(_procedures(effects))
    doc["actions"] = actions
    if procedures:
        doc["procedures"] = procedures
    if rules:
        doc["rules"] = rules
    doc["truncated"] = f"{DRAFT_FIELD} >= 10"
    doc["observation"] = {
        "doc": "placeholder until the todo item 'game' declares the observation",
        "fields": Flow({DRAFT_OBS: "i32"}),
        "body": f"{DRAFT_OBS} = {DRAFT_FIELD}",
    }
    draft = Draft(doc, todo, tables, enums, list(dict.fromkeys(p.url for p in pages)), notes)
    nodes, chars = _measure(doc)
    if nodes > MAX_DRAFT_NODES:
        raise ScrapeError(
            f"the draft would have {nodes:,} YAML values, more than the limit of {MAX_DRAFT_NODES:,} "
            f"({_biggest(draft)}); scrape fewer pages"
        )
    if chars > MAX_DRAFT_BYTES:  # checked again on the YAML text; this spares dumping a huge document
        raise ScrapeError(
            f"the draft would be more than {chars:,} bytes, more than the limit of {MAX_DRAFT_BYTES:,} "
            f"({_biggest(draft)}); scrape fewer pages"
        )
    return draft


def _measure(doc: Any) -> tuple[int, int]:
    """YAML nodes (scalars, keys, collections) and characters of text of a document, without recursion."""
    nodes = chars = 0
    stack = [doc]
    while stack:
        v = stack.pop()
        nodes += 1
        if isinstance(v, dict):
            nodes += len(v)
            chars += sum(len(k) for k in v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str):
            chars += len(v)
    return nodes, chars


def _biggest(draft: Draft) -> str:
    rows = sum(t.n_rows for t in draft.tables.values())
    chars = sum(len(t.text) for t in draft.todo)
    return f"{rows:,} table rows, {chars:,} characters of rule text"


def _split_cards(pages: list[PageContent]) -> tuple[RawTable | None, list[RawTable]]:
    """The card table (card lists with one header, pages concatenated, row 0 = no card) and the other tables."""
    groups: dict[tuple[str, ...], list[RawTable]] = {}
    others: list[RawTable] = []
    for p in pages:
        for t in p.tables:
            if t.is_cards:
                groups.setdefault(tuple(t.headers), []).append(t)
            else:
                others.append(t)
    if not groups:
        return None, others
    best = max(groups.values(), key=lambda ts: sum(len(t.rows) for t in ts))
    for ts in groups.values():
        if ts is not best:
            others.extend(ts)
    first = best[0]
    name_col = _name_column(first.headers)
    blank = [NO_CARD if j == name_col else "" for j in range(len(first.headers))]
    rows = [blank] + [r for t in best for r in t.rows]
    table = RawTable("cards", first.headers, rows, first.source, first.section, first.caption, True)
    table.symbols = {k: v for t in best for k, v in (getattr(t, "symbols", None) or {}).items()}
    return table, others


def _name_column(headers: list[str]) -> int:
    low = [h.strip().lower() for h in headers]
    for key in ("name", "card name", "card", "title"):
        if key in low:
            return low.index(key)
    return 0


LEGEND_RE = re.compile(r"\{([^{}\s]{1,6})\}\s*[:=–-]?\s*([A-Z][A-Za-z]{1,20})\b")


def symbol_legend(page: PageContent) -> dict[str, str]:
    """What the page itself says its symbols mean: a line with two or more '{R} Fire' pairs ("Energy symbols:
    {R} Fire, {W} Water, ..."); used for tables whose site adapter gives no symbol map."""
    out: dict[str, str] = {}
    for s in page.sections:
        for line in s.text.splitlines():
            if line.startswith("[table ") or "|" in line:
                continue
            pairs = LEGEND_RE.findall(line)
            if len(pairs) >= 2:
                for token, word in pairs:
                    out.setdefault(token, slug(word, max_words=1, drop_stopwords=False) or token.lower())
    return out


@dataclass
class Slot:
    """One effect text column of the card table and the columns that hold its kind and arguments."""

    title: str
    effect: str
    args: str | None = None
    energy: str | None = None
    card: str | None = None
    word: str | None = None


@dataclass
class Effects:
    """The effect kinds of a card table, and where each card's kinds and arguments are."""

    enum: Enum
    words: Enum | None
    templates: Templates
    slots: list[Slot]
    uses: dict[str, list[str]]  # kind -> "Card (Attack) [damage=10]" labels
    moved: dict[str, tuple[str, int]] = field(default_factory=dict)  # column -> (merged array column, index)


def _effects(cards: TypedTable, name_j: int, ctx: Context, avoid: set[str]) -> Effects | None:
    """Effect text columns of the card table get columns beside them: the effect kind (a template) and its
    arguments (numbers, energy types, card ids, words)."""
    name_col = cards.columns[_column_index(cards, name_j)]
    linked = {c.name for c in cards.columns if c.name.endswith("_id")}
    text_cols = [
        c
        for c in cards.columns
        if c.type == "str"
        and c is not name_col
        and f"{c.name}_id" not in linked
        and _is_effect_text(c)
        and not _unique_short(c)
    ]
    text_cols = _drop_copies(text_cols)
    if not text_cols:
        return None
    names = [str(v) for v in name_col.values]
    items = [(str(v), names[r]) for c in text_cols for r, v in enumerate(c.values) if r > 0 and str(v).strip()]
    known = set(ctx.energy.used)

    def energy_of(word: str) -> str | None:
        return energy_name(word, cards.symbols, known) if word.strip() else None

    tpl = templatize(items, energy_of, lambda w: w.lower() in ctx.card_names, avoid)
    if len(tpl.kinds) > MAX_EFFECTS:
        ctx.notes.append(
            f"the cards have {len(tpl.kinds):,} kinds of effect text, more than {MAX_EFFECTS}: they stay text "
            "columns, with no Effect enum or effect_* items"
        )
        return None
    enum = Enum(_type_name("Effect", ctx.taken_types), ["none", *tpl.kinds], EFFECT_DOC)
    kinds = list(tpl.kinds.values())
    width = {k: max((len(e.words(k)) if k != "int" else len(e.numbers) for e in kinds), default=0) for k in ARG_KINDS}
    words = _word_enum(tpl, ctx.taken_types)
    if width["energy"]:
        ctx.energy.needs_none = True
    numbers = [n for u in tpl.uses.values() for n in u.numbers]
    num_type = int_type(min(numbers, default=0), max(numbers, default=0))
    taken = {c.name for c in cards.columns}
    slots: list[Slot] = []
    uses: dict[str, list[str]] = {}
    for c in text_cols:
        m = re.match(r"^(.*[a-z])_?(\d+)$", c.name)
        stem, suffix = (m.group(1), f"_{m.group(2)}") if m else (c.name.rstrip("_"), "")
        new: dict[str, Column] = {}
        slot = Slot(c.title, ident(f"{stem}_kind{suffix}", taken, "effect_kind"))
        rows: list[tuple[str, dict[str, list[Any]]]] = []
        for r, v in enumerate(c.values):
            text = str(v)
            use = tpl.uses.get((text, names[r])) if r > 0 and text.strip() else None
            if use is None:
                rows.append(("none", {}))
                continue
            rows.append((use.kind, _arg_values(tpl.kinds[use.kind], use.numbers, use.words, energy_of, ctx, words)))
            uses.setdefault(use.kind, []).append(_use_label(cards, c, r, names[r], tpl.kinds[use.kind], rows[-1][1]))
        new[slot.effect] = Column(
            slot.effect, f"effect of '{c.title}'", enum.name, [k for k, _ in rows], default="none",
            doc=f"effect kind of '{c.title}' (its arguments are in the {stem}_* columns beside it)",
        )  # fmt: skip
        for kind, ty, pad in (
            ("int", num_type, 0),
            ("energy", "Energy", "none"),
            ("card", "i16", 0),
            ("word", "", "none"),
        ):
            n = width[kind]
            if not n:
                continue
            col = ident(f"{stem}_{ARG_COLUMN[kind]}{suffix}", taken, ARG_COLUMN[kind])
            setattr(slot, ARG_ATTR[kind], col)
            ty = ty or (words.name if words else "i16")
            values = [(a.get(kind, []) + [pad] * n)[:n] for _, a in rows]
            doc = f"{ARG_DOC[kind]} of the effect of '{c.title}', in the order of its template, {pad} past them"
            new[col] = Column(col, col, ty, values, [n], [pad] * n, doc)
        at = cards.columns.index(c) + 1
        cards.columns[at:at] = list(new.values())
        slots.append(slot)
    return Effects(enum, words, tpl, slots, uses)


EFFECT_DOC = "card effect kinds (templates; each member is formalized by its effect_* procedure)"
ARG_KINDS = ("int", "energy", "card", "word")
ARG_COLUMN = {"int": "args", "energy": "energy", "card": "card", "word": "word"}
ARG_ATTR = {"int": "args", "energy": "energy", "card": "card", "word": "word"}
ARG_DOC = {"int": "numbers", "energy": "energy types", "card": "card ids", "word": "words"}
ARG_TYPE = {"int": "i32", "energy": "Energy", "card": "i32", "choice": "i32"}


def _column_index(t: TypedTable, raw_index: int) -> int:
    """The typed column of a raw column (typing adds columns beside some: card ids, amounts)."""
    names = [c.name for c in t.columns if not c.name.endswith(("_id", "_factor", "_amount"))]
    target = names[raw_index] if raw_index < len(names) else t.columns[0].name
    return next(i for i, c in enumerate(t.columns) if c.name == target)


def _type_name(base: str, taken: set[str]) -> str:
    name, i = base, 2
    while name in taken:
        name, i = f"{base}{i}", i + 1
    taken.add(name)
    return name


def _word_enum(tpl: Templates, taken_types: set[str]) -> Enum | None:
    """One enum of the words that word arguments take ("Paralyzed" -> paralyzed), `none` first."""
    positions = {
        k: [i for i, a in enumerate(e.args) if a.kind in ("energy", "card", "word")] for k, e in tpl.kinds.items()
    }
    labels: list[str] = []
    for use in tpl.uses.values():
        kind = tpl.kinds[use.kind]
        for j, i in enumerate(positions[use.kind]):
            if kind.args[i].kind == "word":
                labels.append(use.words[j])
    if not labels:
        return None
    taken = {"none"}
    mapping = {w: ident(w.strip("{}"), taken, "word") for w in sorted(set(labels))}  # the same draft every run
    name = _type_name("EffectWord", taken_types)
    return Enum(name, ["none", *mapping.values()], "words that effect templates take as arguments", mapping)


def _arg_values(
    kind: EffectKind,
    numbers: list[int],
    words: list[str],
    energy_of: Any,
    ctx: Context,
    word_enum: Enum | None,
) -> dict[str, list[Any]]:
    """A use's argument values per argument kind, in template order."""
    out: dict[str, list[Any]] = {"int": list(numbers)}
    it = iter(words)
    for a in kind.args:
        if a.kind == "energy":
            out.setdefault("energy", []).append(energy_of(next(it)) or "none")
        elif a.kind == "card":
            out.setdefault("card", []).append(ctx.card_names.get(next(it).lower(), 0))
        elif a.kind == "word":
            w = next(it)
            out.setdefault("word", []).append(word_enum.labels[w] if word_enum else "none")
    return out


def _use_label(cards: TypedTable, c: Column, r: int, name: str, kind: EffectKind, values: dict[str, list[Any]]) -> str:
    """'Card (Attack) [damage=10]': who uses an effect kind, with which arguments."""
    m = re.match(r"^(.*[a-z])_?(\d+)$", c.name)
    attack = next(
        (
            a
            for a in cards.columns
            if m
            and a.type == "str"
            and a.name != c.name
            and a.name.endswith(f"_{m.group(2)}")
            and not _is_effect_text(a)
        ),
        None,
    )
    label = name + (f" ({attack.values[r]})" if attack is not None and str(attack.values[r]).strip() else "")
    counters: dict[str, int] = {}
    shown = []
    for a in kind.args:
        if a.kind == "choice":
            continue
        i = counters.get(a.kind, 0)
        counters[a.kind] = i + 1
        vals = values.get(a.kind, [])
        if i < len(vals):
            shown.append(f"{a.name}={vals[i]}")
    return label + (f" [{', '.join(shown)}]" if shown else "")


# Long text that is not rules: flavor, credits, rulings, legality and printing lists, an old printed wording
NOT_EFFECTS = re.compile(
    r"flavou?r|artist|illustrat|lore|quote|description|set name|series|author|ruling|legal|printing|foreign|"
    r"original|printed|notes?\b",
    re.I,
)


def _is_effect_text(c: Column) -> bool:
    """Rules text: most cells are sentences (ending in a period, or 4+ words with one inside); not flavor text,
    credits or lists."""
    full = [v.strip() for v in c.values if v.strip()]
    sentences = sum(
        (v.endswith((".", "!", ")")) and len(v.split()) >= 2) or (len(v.split()) >= 4 and ". " in v) for v in full
    )
    return bool(full) and 2 * sentences >= len(full) and not NOT_EFFECTS.search(c.title)


def _plain(text: str) -> str:
    return " ".join(re.sub(r"<[^>]*>|[^a-z0-9]+", " ", text.lower()).split())


def _drop_copies(cols: list[Column]) -> list[Column]:
    """Of text columns that say the same (one with markup or symbols, one without: 'text', 'stripped text'),
    the one with the most symbols and markup stays effect text."""
    marks = {id(c): sum(str(v).count("[") + str(v).count("{") + str(v).count("<") for v in c.values) for c in cols}
    kept: list[Column] = []
    for c in sorted(cols, key=lambda c: -marks[id(c)]):
        if not any(_same_text(c, k) for k in kept):
            kept.append(c)
    return [c for c in cols if any(c is k for k in kept)]


def _same_text(a: Column, b: Column) -> bool:
    pairs = [(_plain(str(x)), _plain(str(y))) for x, y in zip(a.values, b.values) if str(x).strip() or str(y).strip()]
    close = sum(x == y or difflib.SequenceMatcher(None, x, y).ratio() >= 0.8 for x, y in pairs)
    return bool(pairs) and close >= 0.9 * len(pairs)


def _unique_short(c: Column) -> bool:
    """Cells unique per row and short (names, titles): never effect text."""
    full = [v.strip() for v in c.values if v.strip()]
    short = all(len(v) <= 40 and len(v.split()) <= 5 and not v.endswith(".") for v in full)
    return len(full) >= 2 and len(set(full)) == len(full) and short


def _table_yaml(t: TypedTable) -> dict[str, Any]:
    cols: dict[str, Any] = {}
    for c in t.columns:
        if c.type == "str" and not c.shape:
            cols[c.name] = "str"
            continue
        decl = Flow(type=c.type)
        if c.shape:
            decl["shape"] = FlowList(c.shape)
        if c.default is not None:
            decl["default"] = FlowList(c.default) if isinstance(c.default, list) else c.default
        if c.doc:
            decl["doc"] = c.doc
        cols[c.name] = decl
    rows = []
    for r in range(t.n_rows):
        row = Flow()
        for c in t.columns:
            v = c.values[r]
            if c.type == "str" and not str(v).strip():
                continue
            row[c.name] = _flow_value(v)
        rows.append(row)
    out: dict[str, Any] = {}
    if t.doc:
        out["doc"] = f"{t.doc} (source: {t.source})"
    else:
        out["doc"] = f"source: {t.source}"
    out["columns"] = cols
    out["rows"] = rows
    return out


def _flow_value(v: Any) -> Any:
    if isinstance(v, list):
        return FlowList(_flow_value(x) for x in v)
    return v


def _procedures(fx: Effects) -> dict[str, Any]:
    """`apply_effect` (runs the effect of card c's text column `slot`) and one stub per effect kind."""

    def ref(col: str, slot: int, generic: bool, k: int | None = None) -> str:
        if col in fx.moved:
            base, i = fx.moved[col]
            idx = ["slot" if generic else str(i)] + ([str(k)] if k is not None else [])
        else:
            base, idx = col, [str(k)] if k is not None else []
        return f"cards[c].{base}" + (f"[{', '.join(idx)}]" if idx else "")

    merged = [fx.moved.get(s.effect) for s in fx.slots]
    generic = len(fx.slots) > 1 and all(m is not None for m in merged) and len({m[0] for m in merged if m}) == 1
    generic = generic and [m[1] for m in merged if m] == list(range(len(fx.slots)))

    def match(slot: int, s: Slot, indent: str) -> list[str]:
        lines = [f"{indent}match {ref(s.effect, slot, generic)}:"]
        for name, kind in fx.templates.kinds.items():
            counters: dict[str, int] = {}
            args = ["pl"]
            for a in kind.args:
                if a.kind == "choice":
                    args.append("choice")
                    continue
                k = counters.get(a.kind, 0)
                counters[a.kind] = k + 1
                col = getattr(s, ARG_ATTR[a.kind])
                v = ref(col, slot, generic, k)
                args.append(f"i32({v})" if a.kind in ("int", "card") else v)
            lines += [f"{indent}  case {name}:", f"{indent}    effect_{name}({', '.join(args)})"]
        return lines + [f"{indent}  case none:", f"{indent}    pass"]

    if len(fx.slots) == 1 or generic:
        body = match(0, fx.slots[0], "")
    else:
        body = []
        for i, s in enumerate(fx.slots):
            body += [f"{'if' if i == 0 else 'elif'} slot == {i}:", *match(i, s, "  ")]
    params = Flow(pl="i32", c="i32")
    if len(fx.slots) > 1:
        params["slot"] = "i32"
    params["choice"] = "i32"
    texts = ", ".join(f"{i}: '{s.title}'" for i, s in enumerate(fx.slots))
    what = f"text number slot ({texts})" if len(fx.slots) > 1 else f"'{fx.slots[0].title}'"
    out: dict[str, Any] = {
        "apply_effect": {
            "doc": f"Runs the effect of card c's {what} for player pl; choice is what the player picked",
            "params": params,
            "body": "\n".join(body) + "\n",
        }
    }
    for name, kind in fx.templates.kinds.items():
        p = Flow(pl="i32")
        for a in kind.args:
            p[a.name] = fx.words.name if a.kind == "word" and fx.words else ARG_TYPE.get(a.kind, "i32")
        out[f"effect_{name}"] = {
            "doc": f"placeholder until the todo item 'effect_{name}' is formalized",
            "params": p,
            "body": "pass",
        }
    return out


def _spec_name(title: str) -> str:
    head = re.split(r"\s+[—|:–-]\s+|[—|:]", title)[0]
    name = slug(head, max_words=4, drop_stopwords=False) or "game"
    return name + "_" if name in RESERVED else name


def _section_text(s: Section, with_source: bool = True) -> str:
    source = f"\n(source: {s.source})" if with_source else ""
    return f"## {s.title}{source}\n\n{s.text}".rstrip()


def _todo(
    pages: list[PageContent], effects: Effects | None, tables: dict[str, TypedTable], notes: list[str]
) -> list[TodoItem]:
    sections = [s for p in pages for s in p.sections]
    module = [s for s in sections if s.kind == "module"]
    names = {MODULE, DRAFT_ACTION}
    game = "\n\n".join(_section_text(s) for s in module) or "(the rules page has no general sections)"
    if len(game) > MAX_MODULE_CHARS:
        notes.append(f"the general rule text is {len(game):,} characters; the first {MAX_MODULE_CHARS:,} were kept")
        game = game[:MAX_MODULE_CHARS].rstrip() + f"\n\n[... {len(game) - MAX_MODULE_CHARS:,} characters cut]"
    items = [TodoItem(MODULE, "module", pages[0].url, game)]
    chars = 0
    left_out: list[str] = []
    for s in sections:
        if s.kind not in ("action", "rule"):
            continue
        text = _section_text(s, with_source=False)
        if len(items) > MAX_ITEMS or chars + len(text) > MAX_ITEMS_CHARS:
            left_out.append(s.title)
            continue
        chars += len(text)
        n = ident(slug(s.title, max_words=3), names, s.kind)
        items.append(TodoItem(n, f"{s.kind}s.{n}", s.source, text))
    if left_out:
        notes.append(
            f"{len(left_out)} action/rule section(s) past {MAX_ITEMS:,} items or {MAX_ITEMS_CHARS:,} characters "
            f"were left out (first: '{left_out[0][:60]}')"
        )
    if effects is not None:
        source = tables["cards"].source if "cards" in tables else pages[0].url
        for name, kind in effects.templates.kinds.items():
            items.append(TodoItem(f"effect_{name}", f"procedures.effect_{name}", source, _effect_text(kind, effects)))
    return items


def _effect_text(kind: EffectKind, fx: Effects) -> str:
    """The todo text of an effect kind: its template, what its arguments are, its texts and its cards."""
    parts = [kind.template]
    args = []
    for a in kind.args:
        if a.kind == "int":
            args.append(f"{a.name} (i32): the number written there")
        elif a.kind == "energy":
            args.append(f"{a.name} (Energy): the energy type written there")
        elif a.kind == "card":
            args.append(f"{a.name} (i32): the card id of the card named there")
        elif a.kind == "word":
            args.append(f"{a.name} ({fx.words.name if fx.words else 'i32'}): the word written there")
        else:
            args.append("choice (i32): what the player picks (a card id, a position, an option), given by the action")
    if args:
        parts.append("Arguments: " + "; ".join(args) + ".")
    if "~" in kind.template:
        parts.append("`~` stands for the name of the card itself.")
    if kind.template not in kind.texts:
        parts.append("Texts: " + " | ".join(kind.texts) + (" | ..." if kind.n_texts > len(kind.texts) else ""))
    users = fx.uses.get(kind.name, [])
    if users:
        more = f" and {len(users) - MAX_USED_BY} more" if len(users) > MAX_USED_BY else ""
        parts.append("Used by: " + ", ".join(users[:MAX_USED_BY]) + more)
    return "\n\n".join(parts)
