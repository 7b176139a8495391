"""Rule text by section: the sections of a draft's todo items, table rows left to the draft, token estimates,
and the cut that keeps a request within its token budget.

Token counts are estimates: characters / 3.5, rounded up. Anthropic's tokenizer is not available offline (the
SDK's count_tokens endpoint is a network call) and OpenAI-compatible servers each have their own; English prose
runs near 4 characters a token and YAML or code nearer 3, so 3.5 errs on the high side for rule text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

from .items import Item

CHARS_PER_TOKEN = 3.5
_HEADING = re.compile(r"^## (.+)$", re.M)
_SOURCE = re.compile(r"\A\(source: (\S+)\)\n?")
_TABLE = re.compile(r"^\[table (\w+)\]\n(?:.+\n?)*", re.M)


def tokens(text: str) -> int:
    """Estimated tokens of `text` (characters / 3.5, rounded up)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Section:
    """One section of rule text: `id` (s1, s2, ... in draft order), its heading, URL, body and todo item."""

    id: str
    title: str
    url: str
    body: str
    item: str
    headed: bool = True  # under a `## ` heading of the rules page (False: an item's own text, e.g. a card effect)
    cut: int = 0  # characters of the body left out to fit a request
    part: str = ""  # "2 of 3" when a section too long for one request is sent in consecutive parts
    after: tuple[str, int] = ("", 0)  # the sections left out after this one: (first..last ids, their characters)

    def render(self) -> str:
        """The section as the model reads it."""
        note = f"\n[... {self.cut:,} more characters of this section not shown]" if self.cut else ""
        if self.after[0]:
            note += f"\n[... sections {self.after[0]} not shown: {self.after[1]:,} characters; too many to list here]"
        body = re.sub(r"</(section)", r"&lt;/\1", self.body, flags=re.I)  # page text cannot close the tag
        part = f' part="{self.part}"' if self.part else ""
        return (f'<section id="{self.id}"{part} title="{_attr(self.title)}" url="{_attr(self.url)}">\n{body}{note}'
                "\n</section>")  # fmt: skip


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def elide_tables(text: str, tables: dict[str, Any]) -> str:
    """`[table NAME]` blocks whose rows are a draft table replaced by a pointer to it (rows are sent once)."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        t = tables.get(name)
        if not isinstance(t, dict) or not isinstance(t.get("rows"), list):
            return m.group(0)
        end = "\n" if m.group(0).endswith("\n") else ""
        return f"[table {name}: {len(t['rows'])} rows, in `tables.{name}` of the spec]{end}"

    return _TABLE.sub(sub, text)


def sections_of(items: list[Item], tables: dict[str, Any]) -> list[Section]:
    """Every item's text split at its `## ` headings (text before the first one is a section of its own)."""
    out: list[Section] = []
    for item in items:
        text = item.text.strip()
        starts = [m.start() for m in _HEADING.finditer(text)]
        if not starts or starts[0] > 0:
            starts = [0, *starts]
        for a, b in zip(starts, [*starts[1:], len(text)], strict=True):
            chunk = text[a:b].strip()
            m = _HEADING.match(chunk)
            title, body = (m.group(1).strip(), chunk[m.end() :].lstrip("\n")) if m else (item.name, chunk)
            url = item.source
            s = _SOURCE.match(body)
            if s:
                url, body = s.group(1), body[s.end() :].lstrip("\n")
            body = elide_tables(body, tables).strip()
            if body or m:
                out.append(Section(f"s{len(out) + 1}", title, url, body, item.name, m is not None))
    return out


def fit(sections: list[Section], budget: int) -> list[Section]:
    """The sections within `budget` tokens: short ones whole, the longest cut to one common length.

    Water-filling: the largest cap c with sum(min(len, c)) within the budget; a cut section says how much is
    left out. When the headings alone would take more than half the budget (hundreds of sections), only the
    first sections whose headings fit in that half are sent, the last of them saying which were left out.
    """
    overhead = [len(replace(s, body="", cut=10**9).render()) for s in sections]
    total = int(budget * CHARS_PER_TOKEN)
    if sum(overhead) > total // 2 and len(sections) > 1:
        used, keep = 0, 0
        while keep < len(overhead) and used + overhead[keep] <= total // 2:
            used += overhead[keep]
            keep += 1
        keep = max(keep, 1)
        rest = sections[keep:]
        note = (f"{rest[0].id}..{rest[-1].id}", sum(len(x.body) for x in rest))
        sections = [*sections[: keep - 1], replace(sections[keep - 1], after=note)]
        overhead = [len(replace(s, body="", cut=10**9).render()) for s in sections]
    room = total - sum(overhead)
    lengths = [len(s.body) for s in sections]
    if sum(lengths) <= room:
        return list(sections)
    cap = _cap(lengths, max(room, 0))
    return [s if len(s.body) <= cap else replace(s, body=_cut(s.body, cap), cut=len(s.body) - len(_cut(s.body, cap)))
            for s in sections]  # fmt: skip


def _cap(lengths: list[int], room: int) -> int:
    lo, hi = 0, max(lengths, default=0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(n, mid) for n in lengths) <= room:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cut(body: str, cap: int) -> str:
    """The body cut to at most `cap` characters, at a line or word boundary when one is near."""
    if len(body) <= cap:
        return body
    head = body[:cap]
    for sep in ("\n", " "):
        i = head.rfind(sep)
        if i >= cap * 0.8:
            return head[:i].rstrip()
    return head.rstrip()


def split(section: Section, room: int) -> list[Section]:
    """The section in consecutive parts whose rendered text is within `room` characters each (cut at line or
    word boundaries; nothing left out). A section that fits is returned as it is."""
    if len(section.render()) <= room:
        return [section]
    cap = max(room - len(replace(section, body="", part="99 of 99").render()), 200)
    pieces, rest = [], section.body
    while rest:
        piece = (_cut(rest, cap) if len(rest) > cap else rest) or rest[:cap]
        pieces.append(piece)
        rest = rest[len(piece) :].lstrip()
    label = f"{section.part}, " if section.part else ""  # a part split again (the outline so far grew)
    return [replace(section, body=p, part=f"{label}{i} of {len(pieces)}") for i, p in enumerate(pieces, 1)]


def chunk(sections: list[Section], room: int) -> list[list[Section]]:
    """Consecutive sections grouped into requests of at most `room` tokens of section text each, in order; a
    section longer than that is sent in parts (every character of rule text is in exactly one chunk)."""
    limit = int(room * CHARS_PER_TOKEN)
    out: list[list[Section]] = []
    size = 0
    for piece in (p for s in sections for p in split(s, limit)):
        n = len(piece.render()) + 2  # the blank line between sections
        if out and size + n <= limit:
            out[-1].append(piece)
            size += n
        else:
            out.append([piece])
            size = n
    return out


def repeated(blocks: list[str], sections: list[Section], tables: dict[str, Any]) -> list[str]:
    """What one request carries twice: a rules-page section in two blocks (or twice in one), or table rows that
    are both in the tables block and in the rule text. Empty when nothing is repeated. (A card effect's own
    text is also a cell of its card's row: one sentence, not checked.)"""
    problems = []
    joined = "\n".join(blocks)
    for s in (s for s in sections if s.headed and len(s.body.strip()) >= 40):
        n = joined.count(s.body.strip())
        if n > 1:
            problems.append(f"section {s.id} ({s.title}) is sent {n} times")
    for name, t in tables.items():
        if isinstance(t, dict) and joined.count(f"[table {name}]\n") and any("rows:" in b for b in blocks):
            problems.append(f"the rows of table {name} are in the rule text and in the tables block")
    return problems
