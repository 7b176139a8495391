"""Card data as JSON (a file or a URL served as application/json) -> one card table, laid out as a card list
written by hand would be: nested fields become columns ("Attack 1 Cost", "Weakness Type").

Accepted: a list of card objects, or an object holding one under "data" or "cards" (also {"data": {"cards":
[...]}}). Numbers are kept as written. The limits are those of HTML tables (rows, columns, cell length) plus a
nesting depth checked before parsing.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

from .extract import MAX_CELL_CHARS, MAX_COLS, MAX_ROWS, RawTable
from .fetch import Page, ScrapeError

MAX_JSON_DEPTH = 20  # a card list nests about 5 deep (list, card, attacks, attack, cost)
MAX_NUMBERED = 4  # a list of objects longer than this on some card (rulings, legalities) becomes one text column
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")  # inline markup in card text ("<strong>")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_URL = re.compile(r"^https?://\S+$")


@dataclass
class CardData:
    """The card objects of a JSON document, its name (if it gives one) and the next page of a paged API."""

    cards: list[dict[str, Any]]
    title: str = ""
    next_url: str | None = None


def json_depth(body: bytes) -> int:
    """How deep arrays and objects nest (strings skipped), in linear time and without parsing."""
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKET)
    return max(itertools.accumulate(1 if b in b"[{" else -1 for b in brackets), default=0)


def parse_cards(page: Page) -> CardData:
    """The card objects of a JSON page; ScrapeError for JSON that is not a card list."""
    depth = json_depth(page.body)
    if depth > MAX_JSON_DEPTH:
        raise ScrapeError(f"{page.url}: the JSON nests {depth:,} levels deep, more than the limit of {MAX_JSON_DEPTH}")
    try:  # numbers stay text as written (no float rounding, no cost for a 100,000-digit number)
        doc = json.loads(page.body, parse_int=str, parse_float=str, parse_constant=str)
    except json.JSONDecodeError as e:
        raise ScrapeError(f"{page.url}: not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise ScrapeError(f"{page.url}: not valid JSON: {e}") from None
    title = ""
    next_url = None
    cards: Any = doc
    for _ in range(2):  # {"data": [...]}, {"cards": [...]}, {"data": {"cards": [...], "name": ...}}
        if not isinstance(cards, dict):
            break
        if isinstance(cards.get("name"), str):
            title = cards["name"]
        if cards.get("has_more") is True and isinstance(cards.get("next_page"), str):
            next_url = _next(page.url, cards["next_page"])
        cards = cards.get("data", cards.get("cards"))
    what = _what(doc)
    if not isinstance(cards, list):
        raise ScrapeError(
            f"{page.url}: not a card list: expected a JSON list of card objects, or an object with a "
            f'"data" or "cards" list (got {what})'
        )
    if not cards:
        raise ScrapeError(f"{page.url}: the JSON card list is empty")
    for i, c in enumerate(cards):
        if not isinstance(c, dict):
            raise ScrapeError(f"{page.url}: not a card list: item {i + 1} is {_what(c)}, not a card object")
    if len(cards) > MAX_ROWS:
        raise ScrapeError(f"{page.url}: the card list has {len(cards):,} cards, more than the limit of {MAX_ROWS:,}")
    return CardData(cards, title, next_url)


def card_table(page: Page, cards: list[dict[str, Any]]) -> tuple[RawTable, list[str]]:
    """One card table (a column per flattened field, in first-seen order; a row per card) and notes on what
    was left out or cut."""
    base = urldefrag(page.url).url
    most: dict[str, int] = {}  # list-of-objects fields: most entries on one card
    for c in cards:
        for k, v in c.items():
            if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                most[k] = max(most.get(k, 0), len(v))
    rows: list[dict[str, str]] = []
    columns: dict[str, None] = {}
    dropped: dict[str, None] = {}
    for c in cards:
        row: dict[str, str] = {}
        for k, v in c.items():
            _put(row, _label(k), k, v, 0, most.get(k, 0), dropped)
        rows.append(row)
        columns.update(dict.fromkeys(row))
        if len(columns) > 4 * MAX_COLS:  # no need to read further: over the limit even without links
            raise ScrapeError(f"{page.url}: the cards have more than {4 * MAX_COLS} fields (the limit is {MAX_COLS})")
    urls = [h for h in columns if all(not r.get(h) or _URL.match(r[h]) for r in rows) and any(r.get(h) for r in rows)]
    headers = [h for h in columns if h not in urls]
    if len(headers) > MAX_COLS:
        raise ScrapeError(f"{page.url}: the cards have {len(headers)} fields, more than the limit of {MAX_COLS}")
    if not headers:
        raise ScrapeError(f"{page.url}: not a card list: the objects have no fields")
    cut = 0
    grid: list[list[str]] = []
    for r in rows:
        line = []
        for h in headers:
            text = " ".join(r.get(h, "").split())
            if len(text) > MAX_CELL_CHARS:
                cut += 1
                text = text[: MAX_CELL_CHARS - 3].rstrip() + "..."
            line.append(text)
        grid.append(line)
    table = RawTable("cards", headers, grid, base, "Cards", is_cards=True, cut_cells=cut)
    notes = []
    if dropped:
        notes.append(f"fields nested deeper than two levels were left out ({', '.join(list(dropped)[:5])})")
    if urls:
        notes.append(f"link-only fields were left out ({', '.join(urls[:5])})")
    if cut:
        notes.append(f"{cut} field(s) longer than {MAX_CELL_CHARS:,} characters were cut")
    return table, [f"{page.url}: {n}" for n in notes]


def merge_cards(into: RawTable, more: RawTable) -> None:
    """Add the rows of a later page of the same card list (its columns joined to the first page's)."""
    headers = into.headers + [h for h in more.headers if h not in into.headers]
    if len(headers) > MAX_COLS:
        raise ScrapeError(f"{into.source}: the pages' cards have {len(headers)} fields (the limit is {MAX_COLS})")
    pad = [""] * (len(headers) - len(into.headers))
    into.rows = [r + pad for r in into.rows]
    at = {h: j for j, h in enumerate(more.headers)}
    into.rows += [[r[at[h]] if h in at else "" for h in headers] for r in more.rows]
    into.headers = headers
    into.cut_cells += more.cut_cells


def _put(row: dict[str, str], label: str, key: str, v: Any, depth: int, most: int, dropped: dict[str, None]) -> None:
    """Flatten one field into `row`: scalars as text, lists of scalars joined (costs as brace tokens), lists of
    objects numbered ("Attack 1 Name"; no number when no card has two), objects by their fields."""
    if v is None:
        return
    if isinstance(v, (str, bool)) or not isinstance(v, (list, dict)):
        row[label] = _scalar(v)
    elif isinstance(v, dict):
        if depth >= 1:
            dropped[label] = None
            return
        for k2, v2 in v.items():
            _put(row, f"{label} {_label(k2)}", k2, v2, depth + 1, 0, dropped)
    elif not v:
        return
    elif all(not isinstance(x, (list, dict)) for x in v):
        items = [_scalar(x) for x in v if x is not None]
        if _is_cost(key, items):
            row[label] = "".join("{" + x.strip("{} ") + "}" for x in items)
        else:
            row[label] = ", ".join(items)
    elif all(isinstance(x, dict) for x in v) and depth == 0 and most > MAX_NUMBERED:
        entries = (": ".join(_scalar(x) for x in obj.values() if not isinstance(x, (list, dict))) for obj in v)
        row[label] = "; ".join(e for e in entries if e)
    elif all(isinstance(x, dict) for x in v) and depth == 0:
        one = _singular(label)
        for i, obj in enumerate(v, start=1):
            prefix = f"{one} {i}" if most > 1 else one
            for k2, v2 in obj.items():
                _put(row, f"{prefix} {_label(k2)}", k2, v2, depth + 1, 0, dropped)
    else:
        dropped[label] = None


def _scalar(v: Any) -> str:
    """A scalar as a card list shows it: booleans as true/false, markup stripped from text."""
    if isinstance(v, bool):
        return "true" if v else "false"
    text = str(v)
    return _TAG.sub("", text) if "<" in text else text


def _is_cost(key: str, items: list[str]) -> bool:
    """A list of symbol names paying for something ("cost": ["Fire", "Colorless"])."""
    return (
        "cost" in key.lower()
        and bool(items)
        and all(0 < len(x) <= 20 and len(x.split()) <= 2 and not any(c in x for c in ",.;") for x in items)
    )


def _label(key: str) -> str:
    """A column title from a field name: 'evolvesFrom' -> 'Evolves From', 'hp' -> 'HP', 'flavor_text' ->
    'Flavor Text'."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(key)).replace("_", " ").replace("-", " ")
    words = text.split() or ["Field"]
    if len(words) == 1 and len(words[0]) <= 2:
        return words[0].upper()
    return " ".join(w if w.isupper() else w[:1].upper() + w[1:] for w in words)


def _singular(label: str) -> str:
    """'Attacks' -> 'Attack', 'Abilities' -> 'Ability', 'Weaknesses' -> 'Weakness' (last word only)."""
    head, _, last = label.rpartition(" ")
    low = last.lower()
    if low.endswith("ies") and len(low) > 4:
        last = last[:-3] + "y"
    elif low.endswith(("sses", "shes", "ches", "xes")):
        last = last[:-2]
    elif low.endswith("s") and not low.endswith("ss"):
        last = last[:-1]
    return f"{head} {last}".strip()


def _what(v: Any) -> str:
    if isinstance(v, dict):
        keys = ", ".join(f'"{k}"' for k in list(v)[:5])
        return f"an object with keys {keys}" if keys else "an empty object"
    if isinstance(v, list):
        return f"a list of {len(v):,} items"
    return {str: "a string", bool: "a boolean"}.get(type(v), "a number" if v is not None else "null")


def _next(url: str, target: str) -> str | None:
    """The next page of a paged JSON API, if it is an http(s) URL (a file's next page is never followed)."""
    try:
        nxt = urljoin(url, target)
        return nxt if urlsplit(nxt).scheme in ("http", "https") and urlsplit(url).scheme in ("http", "https") else None
    except ValueError:
        return None
