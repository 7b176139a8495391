"""The interface every site adapter implements."""

from __future__ import annotations

import re

from bs4 import BeautifulSoup

from ..extract import PageContent, RawTable, Section, extract
from ..fetch import Page

# Headings that name something a player does (an action kind) or something that happens on its own (a rule).
ACTION_WORDS = (
    "play|attach|attack|evolve|retreat|use|activate|discard|pass|end|move|place|put|choose|buy|cast|summon|"
    "equip|trade|bet|raise|fold|call|check|build|roll|flip|promote|switch|mulligan"
)
RULE_WORDS = r"checkup|between turns|knock(?:ed)?[ -]?outs?|special conditions?|upkeep|cleanup|end of (?:the )?turn"
ACTION_RE = re.compile(rf"^(?:{ACTION_WORDS})\b", re.IGNORECASE)
RULE_RE = re.compile(rf"\b(?:{RULE_WORDS})\b", re.IGNORECASE)
NAME_COLUMNS = {"name", "card", "card name", "title"}


class SiteAdapter:
    """Extraction for one site; subclasses override what differs from the generic behaviour."""

    name = "base"
    description = ""

    def matches(self, url: str, soup: BeautifulSoup) -> bool:
        """Whether this adapter knows the page (by host name or by a marker in the page)."""
        return False

    def extract(self, page: Page, soup: BeautifulSoup) -> PageContent:
        """Sections and tables of the page, each section classified."""
        content = extract(page, soup)
        content.adapter = self.name
        for s in content.sections:
            s.kind = self.classify(s)
        for t in content.tables:
            t.is_cards = self.is_card_table(t)
        content.card_list = any(t.is_cards for t in content.tables)
        return content

    def classify(self, section: Section) -> str:
        """'action' for a heading that starts with a player's verb, 'rule' for automatic steps, else 'module'."""
        if section.level <= 1:
            return "module"
        if ACTION_RE.search(section.title):
            return "action"
        if RULE_RE.search(section.title):
            return "rule"
        return "module"

    def is_card_table(self, table: RawTable) -> bool:
        """A card list: a name column, at least 5 columns and 3 rows."""
        heads = {h.strip().lower() for h in table.headers}
        return bool(heads & NAME_COLUMNS) and len(table.headers) >= 5 and len(table.rows) >= 3
