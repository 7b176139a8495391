"""Extracted pages -> a draft spec: constant tables from the data, a `todo` list of rule text to formalize.

The draft is a valid, playable spec: placeholders (`draft_*`) stand in for the game state until the `game`
todo item is formalized, and every action, rule and card effect named by the rules has a stub (an action
that is never legal, a rule that never fires, a procedure that does nothing) whose code `envc synthesize`
writes from the todo text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from envc.check.symbols import RESERVED

from .columns import Column, Energy, Enum, TypedTable, effect_enum, ident, merge_numbered, scan_energy, type_table
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
MAX_MODULE_CHARS = 200_000
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
    cards_raw, other_raw = _split_cards(pages)
    names = {"cards", "apply_effect", DRAFT_FIELD, DRAFT_OBS}
    for raw in other_raw:  # table names: unique across pages, never a reserved word
        raw.name = ident(raw.name + ("_table" if raw.name in RESERVED else ""), names, "table")
    energy = Energy()
    scan_energy(([cards_raw] if cards_raw else []) + other_raw, energy)
    taken_types = set(RESERVED) | {t.name for t in other_raw} | {"cards", "Energy"}
    enums: dict[str, Enum] = {}
    tables: dict[str, TypedTable] = {}
    effects: Enum | None = None
    effect_uses: dict[str, list[str]] = {}
    notes = [n for p in pages for n in p.notes]
    if cards_raw is not None:
        cards = type_table(cards_raw, energy, enums, taken_types)
        cards.name = "cards"
        cards.doc = f"Card list (row 0 is '{NO_CARD}', so card id 0 means an empty slot)"
        effects, effect_uses = _effects(cards, taken_types, notes)
        merge_numbered(cards)
        tables["cards"] = cards
    for raw in other_raw:
        t = type_table(raw, energy, enums, taken_types)
        if all(c.type == "str" for c in t.columns):
            continue  # text only: it stays in its section's text
        if "cards" in tables:
            _link_cards(t, tables["cards"])
        merge_numbered(t)
        tables[t.name] = t
    if any(c.type == "Energy" or c.name.startswith("cost") for t in tables.values() for c in t.columns):
        enums = {"Energy": Enum("Energy", energy.members, "energy types (costs are counted per member)"), **enums}
    if effects is not None:
        enums[effects.name] = effects

    title = next((p.title for p in rules_pages if p.title), "") or "game"
    spec_name = name or _spec_name(title)
    todo = _todo(rules_pages, effects, effect_uses, tables, notes)
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
        procedures["apply_effect"] = {
            "doc": f"Runs the card effect `kind` for player pl (one case per {effects.name} member)",
            "params": Flow(pl="i32", kind=effects.name),
            "body": _dispatch(effects),
        }
        for m in effects.members[1:]:
            procedures[f"effect_{m}"] = {
                "doc": f"placeholder until the todo item 'effect_{m}' is formalized",
                "params": Flow(pl="i32"),
                "body": "pass",
            }
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
    return RawTable("cards", first.headers, rows, first.source, first.section, first.caption, True), others


def _name_column(headers: list[str]) -> int:
    low = [h.strip().lower() for h in headers]
    for key in ("name", "card name", "card", "title"):
        if key in low:
            return low.index(key)
    return 0


def _effects(cards: TypedTable, taken_types: set[str], notes: list[str]) -> tuple[Enum | None, dict[str, list[str]]]:
    """Effect text columns of the card table get an enum column beside them (one member per distinct text)."""
    text_cols = [c for c in cards.columns if c.type == "str" and _is_effect_text(c)]
    if not text_cols:
        return None, {}
    texts = [v for c in text_cols for v in c.values if v.strip()]
    distinct = len(set(texts))
    if distinct > MAX_EFFECTS:
        notes.append(
            f"the cards have {distinct:,} distinct effect texts, more than {MAX_EFFECTS}: they stay text "
            "columns, with no Effect enum or effect_* items"
        )
        return None, {}
    enum = effect_enum(texts, taken_types)
    names = {c.name for c in cards.columns}
    name_col = cards.columns[_name_column([c.title for c in cards.columns])]
    uses: dict[str, list[str]] = {}
    for c in text_cols:
        m = re.match(r"^(.*[a-z])_?(\d+)$", c.name)
        new = f"effect_{m.group(2)}" if m else "effect"
        if new in names:
            new = f"{c.name}_effect"
        names.add(new)
        values = [enum.labels[v] if v.strip() else "none" for v in c.values]
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
        for r, v in enumerate(c.values):
            if v.strip():
                label = str(name_col.values[r]) + (f" ({attack.values[r]})" if attack is not None else "")
                uses.setdefault(enum.labels[v], []).append(label)
        col = Column(new, f"effect of '{c.title}'", enum.name, values, default="none", doc=f"effect of '{c.title}'")
        cards.columns.insert(cards.columns.index(c) + 1, col)
    return enum, uses


def _is_effect_text(c: Column) -> bool:
    full = [v for v in c.values if v.strip()]
    return bool(full) and any(len(v.split()) >= 4 or v.rstrip().endswith(".") for v in full)


def _link_cards(t: TypedTable, cards: TypedTable) -> None:
    """A column of card names gets a `<name>_id` column holding each card's row in `cards`."""
    name_col = cards.columns[_name_column([c.title for c in cards.columns])]
    ids = {str(v).strip().lower(): i for i, v in enumerate(name_col.values) if i > 0}
    taken = {c.name for c in t.columns}
    for c in list(t.columns):
        if c.type != "str":
            continue
        full = [v.strip().lower() for v in c.values if v.strip()]
        if full and all(v in ids for v in full):
            new = ident(f"{c.name}_id", taken, "card_id")
            values = [ids.get(v.strip().lower(), 0) for v in c.values]
            col = Column(new, new, "i16", values, default=0, doc=f"row of '{c.title}' in table cards")
            t.columns.insert(t.columns.index(c) + 1, col)


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


def _dispatch(effects: Enum) -> str:
    lines = ["match kind:"]
    for m in effects.members[1:]:
        lines += [f"  case {m}:", f"    effect_{m}(pl)"]
    lines += ["  case none:", "    pass"]
    return "\n".join(lines) + "\n"


def _spec_name(title: str) -> str:
    head = re.split(r"\s+[—|:–-]\s+|[—|:]", title)[0]
    name = slug(head, max_words=4, drop_stopwords=False) or "game"
    return name + "_" if name in RESERVED else name


def _section_text(s: Section, with_source: bool = True) -> str:
    source = f"\n(source: {s.source})" if with_source else ""
    return f"## {s.title}{source}\n\n{s.text}".rstrip()


def _todo(
    pages: list[PageContent],
    effects: Enum | None,
    uses: dict[str, list[str]],
    tables: dict[str, TypedTable],
    notes: list[str],
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
        for text, m in effects.labels.items():
            users = uses.get(m, [])
            used = ", ".join(users[:MAX_USED_BY]) + (
                f" and {len(users) - MAX_USED_BY} more" if len(users) > MAX_USED_BY else ""
            )
            body = f"{text}\n\nUsed by: {used}" if used else text
            items.append(TodoItem(f"effect_{m}", f"procedures.effect_{m}", source, body))
    return items
