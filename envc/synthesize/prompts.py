"""Prompts built from jinja2 templates (envc/templates/prompts): a cached prefix shared by every call (the
role, the language reference, example specs; then the rules text and the draft), and per-item requests."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2

from envc.scrapers.emit import dump

from .items import Item, contract, elide_rows

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

    def source(self, name: str, sources: list[str], items: list[Item], module: str, draft: dict[str, Any]) -> str:
        """Every item's rule text and the draft as scraped (the second cached block)."""
        shown = {k: v for k, v in draft.items() if k != "todo"}
        return self.render("source.md.j2", name=name, sources=sources, items=items, module=module, draft=dump(shown))

    def item(
        self, item: Item, spec: dict[str, Any], pending: list[Item], path: str, episodes: int, max_steps: int
    ) -> str:
        """The request for one item."""
        later = [p.name for p in pending if p.name != item.name]
        return self.render(
            "item.md.j2",
            item=item,
            contract=contract(item, spec, pending),
            current=dump(elide_rows(spec)),
            path=path,
            episodes=episodes,
            max_steps=max_steps,
            pending=later,
        )

    def repair(self, item: Item, problems: list[Any], attempt: int, max_attempts: int) -> str:
        """What failed, located, for the next attempt."""
        return self.render("repair.md.j2", item=item, problems=problems, attempt=attempt, max_attempts=max_attempts)
