"""The interface every site adapter implements."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from anyascii import anyascii
from bs4 import BeautifulSoup

from ..announced import announce
from ..extract import Icons, PageContent, RawTable, Section, extract
from ..fetch import Page

# First words (base forms) of headings that name something a player does: an action kind.
ACTION_VERBS = frozenset(
    "play attach attack evolve retreat use activate discard pass end move place put choose buy cast summon equip "
    "trade bet raise fold call check build roll flip promote switch mulligan declare block bid hit split surrender "
    "capture jump drop guess shoot tap sacrifice reveal recruit deploy exchange concede bluff resign".split()
)
# Words after the verb that make the heading about the game or the book, not an action ("Playing the Game",
# "Building a Deck", "Using this Rulebook", "Play Area", "Hit Points").
META_OBJECTS = frozenset(
    "game games deck decks book rulebook rules document guide manual area areas mat mats overview sequence order "
    "zone zones space basics summary example examples variant variants tips points format formats".split()
)
ARTICLES = frozenset("a an the your this these that our of".split())
# Things that happen on their own (rules): checks between turns, automatic steps of a turn.
RULE_WORDS = (
    r"checkup|between turns|knock(?:ed)?[ -]?outs?|special conditions?|upkeep|untap|cleanup|state-based|"
    r"triggered abilit(?:y|ies)|end(?:ing)? (?:of|step|phase)|end of (?:the )?turn|beginning of|"
    r"draw (?:step|phase|a card)"
)
RULE_RE = re.compile(rf"\b(?:{RULE_WORDS})\b", re.IGNORECASE)
# Automatic phases of a turn (checked before the verb test: "Discard Phase" is not the discard action) and steps
# (checked after it: "Declare Attackers Step" is an action).
PHASE_RE = re.compile(
    r"\b(?:beginning|ending|end|draw|discard|untap|refresh|income|production|scoring|cleanup) phase$", re.I
)
STEP_RE = re.compile(r"\bstep$", re.I)
# Last words that make a verb-first heading a noun phrase ("Play Cost", "Discard Pile", "Deploy Creatures Option").
NOUN_ENDINGS = frozenset("cost costs pile piles option options variant variants zone zones area".split())
# Enclosing sections that explain card text or terms: what they contain are effects, not turn actions.
GLOSSARY_RE = re.compile(
    r"\b(?:card text|glossary|keywords?|terms|definitions|index|faq|frequently asked|errata|appendix|examples?)\b",
    re.IGNORECASE,
)
NAME_COLUMNS = {"name", "card", "card name", "title"}
ACTION_RE = re.compile(r"^(?:" + "|".join(sorted(ACTION_VERBS)) + r")\b", re.IGNORECASE)  # kept for plug-ins


def verb_of(word: str) -> str | None:
    """The base form of a heading's first word if it is a player's verb ('Attacking' -> 'attack')."""
    w = anyascii(word).lower()
    forms = [w]
    if w.endswith("ing") and len(w) >= 5:
        stem = w[:-3]
        forms += [stem, stem + "e"] + ([stem[:-1]] if stem[-1] == stem[-2] else [])
    elif w.endswith("ies"):
        forms.append(w[:-3] + "y")
    elif w.endswith("es"):
        forms += [w[:-2], w[:-1]]
    elif w.endswith("s") and not w.endswith("ss"):
        forms.append(w[:-1])
    return next((f for f in forms if f in ACTION_VERBS), None)


class SiteAdapter:
    """Extraction for one site; subclasses override what differs from the generic behaviour.

    `symbols` maps the site's cost tokens as written ("W", "Fire") to the members they mean ("water", "fire");
    every table the adapter reads carries it (`RawTable.symbols`). `icons` says which elements are symbols.
    """

    name = "base"
    description = ""
    hosts: tuple[str, ...] = ()  # sites it is for ("scryfall.com" covers its subdomains); tried before layouts
    symbols: dict[str, str] = {}
    icons: Icons = Icons()

    def for_host(self, url: str) -> bool:
        """Whether the URL is on one of the adapter's `hosts`."""
        try:
            host = (urlsplit(url).hostname or "").lower()
        except ValueError:
            return False
        return any(host == h or host.endswith("." + h) for h in self.hosts)

    def matches(self, url: str, soup: BeautifulSoup) -> bool:
        """Whether this adapter knows the page (by host name or by a marker in the page)."""
        return False

    def matches_json(self, url: str, cards: list[dict[str, Any]]) -> bool:
        """Whether this adapter knows a JSON card list (by host name or by its fields)."""
        return False

    def extract(self, page: Page, soup: BeautifulSoup) -> PageContent:
        """Sections and tables of the page, each section classified."""
        content = extract(page, soup, self.icons)
        content.adapter = self.name
        for s in content.sections:
            s.kind = self.classify(s)
        content.sections = announce(content.sections, GLOSSARY_RE)
        for t in content.tables:
            t.is_cards = self.is_card_table(t)
        return self.finish(content)

    def extract_json(self, page: Page, cards: list[dict[str, Any]]) -> PageContent:
        """A JSON card list as one card table."""
        from ..jsoncards import card_table

        table, notes = card_table(page, cards)
        content = PageContent(page.url, "", tables=[table], notes=[*page.notes, *notes], adapter=self.name)
        return self.finish(content)

    def finish(self, content: PageContent) -> PageContent:
        """The adapter's symbols on every table; whether the page is a card list."""
        for t in content.tables:
            t.symbols = dict(self.symbols)
        content.card_list = any(t.is_cards for t in content.tables)
        return content

    def classify(self, section: Section) -> str:
        """'action' for a heading that starts with a player's verb, 'rule' for automatic steps, else 'module'.

        The heading's number is already stripped ("A-03 Retreat" -> "Retreat"); sections inside a glossary or
        card-text chapter explain effects and stay 'module'.
        """
        if section.level <= 1 or any(GLOSSARY_RE.search(p) for p in section.parents):
            return "module"
        title = section.title.strip()
        if RULE_RE.search(title) or PHASE_RE.search(title):
            return "rule"
        words = re.findall(r"[a-z]+", anyascii(title).lower())
        if words and verb_of(words[0]) and words[-1] not in NOUN_ENDINGS:
            rest = [w for w in words[1:] if w not in ARTICLES]
            if not rest or rest[0] not in META_OBJECTS:
                return "action"
        if STEP_RE.search(title):
            return "rule"
        return "module"

    def is_card_table(self, table: RawTable) -> bool:
        """A card list: a name column, at least 5 columns and 3 rows."""
        heads = {h.strip().lower() for h in table.headers}
        return bool(heads & NAME_COLUMNS) and len(table.headers) >= 5 and len(table.rows) >= 3
