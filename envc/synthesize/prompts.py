"""Prompts built from jinja2 templates (envc/templates/prompts): a cached prefix shared by every call (the
role, the language reference, example specs; then the game's constant tables), the outline request, and
per-item requests that carry only the rule sections the item needs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2

from envc.scrapers.draft import MODULE
from envc.scrapers.emit import dump

from .chunks import Section, tokens
from .items import Item, contract
from .view import spec_view, stub_doc

EXAMPLES = ("examples/high_card.yaml", "examples/tcg_mechanics.yaml", "examples/tcg_cards.csv")
# Sections of the language reference that are about the Python API and the CLI, not about writing specs.
_DROP = re.compile(r"^## (20|21)\. .*?(?=^## |\Z)", re.S | re.M)
CACHE = {"type": "ephemeral"}


@dataclass(frozen=True)
class Example:
    """An example spec shown to the model."""

    path: str
    text: str


def _templates() -> Any:
    return files("envc").joinpath("templates", "prompts")


def reference() -> str:
    """The language reference (docs/spec-language.md as shipped with envc), without the API/CLI chapters."""
    return _DROP.sub("", _templates().joinpath("spec-language.md").read_text("utf-8")).strip()


def default_examples() -> list[Example]:
    """The example specs shipped with envc: zones and hidden information, and the mini TCG."""
    root = _templates()
    return [Example(p.split("/")[-1], root.joinpath(*p.split("/")).read_text("utf-8")) for p in EXAMPLES]


def read_examples(paths: list[str]) -> list[Example]:
    """Extra examples given on the command line."""
    return [Example(Path(p).name, Path(p).read_text("utf-8")) for p in paths]


class Prompts:
    """Renders the system prompt, the shared source block, item requests and repair requests."""

    def __init__(self, examples: list[Example]) -> None:
        loader = jinja2.FunctionLoader(lambda name: _templates().joinpath(name).read_text("utf-8"))
        self.env = jinja2.Environment(
            loader=loader, undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
        )
        self.examples = examples

    def render(self, template: str, **kw: Any) -> str:
        """One template."""
        return self.env.get_template(template).render(**kw).strip()

    def system(self) -> list[dict[str, Any]]:
        """The role, the language reference and the examples: one cached block."""
        text = self.render("system.md.j2", reference=reference(), examples=self.examples)
        return [{"type": "text", "text": text, "cache_control": CACHE}]

    def context(self, name: str, sources: list[str], tables: dict[str, Any], budget: int, unread: int = 0) -> str:
        """The block item requests share: the game and the rows of the tables they read (within `budget` tokens:
        past it, each table shows its first rows and says how many are left out); `unread`: how many tables the
        item does not read (their columns are in the spec)."""
        shown = tables_text(tables, budget)
        return self.render("context.md.j2", name=name, sources=sources, tables=shown, unread=unread)

    def outline(
        self, name: str, sources: list[str], sections: list[Section], draft: dict[str, Any], items: list[Item],
        part: int = 1, parts: int = 1, last: str = "", so_far: str = "",
    ) -> str:  # fmt: skip
        """One outline request: its rule sections (all of them, or part `part` of `parts` consecutive chunks),
        the outline of the earlier parts, the draft as signatures without table rows or todo, the todo items."""
        span = f"{sections[0].id} to {sections[-1].id}" if sections else "s1 to s1"
        procs = draft.get("procedures") or {}
        stubs = [i.name for i in items if i.kind == "procedure" and i.element == i.name
                 and isinstance(procs.get(i.name), dict) and procs[i.name].get("doc") == stub_doc(i.name)]  # fmt: skip
        listed = [i for i in items if i.name not in set(stubs)]
        return self.render(
            "outline.md.j2", name=name, sources=sources, sections=sections,
            draft=dump(spec_view(draft, None, items, "not shown")), listed=listed, stubs=stubs, module=MODULE,
            part=part, parts=parts, span=span, last=last, so_far=so_far,
        )  # fmt: skip

    def item(
        self, item: Item, sections: list[Section], spec: dict[str, Any], pending: list[Item], path: str,
        episodes: int, max_steps: int, read: list[str] | None = None, current: str | None = None,
    ) -> str:  # fmt: skip
        """The request for one item: its rule sections, contract, the current spec (as the item needs it: see
        view.py; `read`: the tables whose rows are in the tables block, default all; `current`: that view,
        when already rendered) and the tests."""
        later = [p.name for p in pending if p.name != item.name]
        return self.render(
            "item.md.j2",
            item=item,
            sections=sections,
            contract=contract(item, spec, pending),
            current=current if current is not None else self.current(spec, item, pending, read),
            path=path,
            episodes=episodes,
            max_steps=max_steps,
            pending=later,
        )

    def current(self, spec: dict[str, Any], item: Item, pending: list[Item], read: list[str] | None = None) -> str:
        """The current spec as `item` needs it (view.py), as YAML."""
        tables = list(spec.get("tables") or {}) if read is None else read
        return dump(spec_view(spec, item, pending, "not needed by this item, not shown", tables))

    def repair(self, name: str, problems: list[Any], attempt: int, max_attempts: int) -> str:
        """What failed, located, for the next attempt (`name`: the item, or `outline`)."""
        return self.render("repair.md.j2", name=name, problems=problems, attempt=attempt, max_attempts=max_attempts)


def tables_text(tables: dict[str, Any], budget: int) -> str:
    """The tables as YAML, all rows if they fit in `budget` tokens, else the same first rows of each table."""
    if not tables:
        return ""
    full = dump({"tables": tables})
    if tokens(full) <= budget:
        return full
    longest = max((len(t["rows"]) for t in tables.values() if isinstance(t, dict) and isinstance(t.get("rows"), list)),
                  default=0)  # fmt: skip
    lo, hi = 0, longest
    while lo < hi:  # the most rows per table that fit
        mid = (lo + hi + 1) // 2
        if tokens(_head(tables, mid)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return _head(tables, lo)


def _head(tables: dict[str, Any], n: int) -> str:
    out = {}
    notes = []
    for name, t in tables.items():
        if isinstance(t, dict) and isinstance(t.get("rows"), list) and len(t["rows"]) > n:
            notes.append(f"# tables.{name}: the first {n} of its {len(t['rows'])} rows are shown")
            t = {**t, "rows": t["rows"][:n]}
        out[name] = t
    return "\n".join(notes) + ("\n" if notes else "") + dump({"tables": out})
