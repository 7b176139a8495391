"""EmberDB card galleries: cards laid out as <article class="card"> blocks instead of a table."""

from __future__ import annotations

from urllib.parse import urldefrag

from bs4 import BeautifulSoup
from bs4.element import Tag

from ..extract import MAX_COLS, MAX_ROWS, PageContent, RawTable, text_of
from ..fetch import Page, ScrapeError
from .base import SiteAdapter
from .games import POKEMON_SYMBOLS


class EmberDB(SiteAdapter):
    """Pages made by EmberDB (generator tag `EmberDB`): its cost symbols are the Pokémon TCG's ({G}, {R}, ...)."""

    name = "emberdb"
    description = "EmberDB card-database pages (tables; cost symbols {G}{R}{W}{C} as on Pokémon cards)"
    symbols = POKEMON_SYMBOLS

    def matches(self, url: str, soup: BeautifulSoup) -> bool:
        """A page with EmberDB's generator tag."""
        gen = soup.find("meta", attrs={"name": "generator"})
        content = str(gen.get("content", "")) if isinstance(gen, Tag) else ""
        return content.startswith("EmberDB")


class EmberDBGallery(EmberDB):
    """Recognized by the generator tag `EmberDB` and a `.card-grid`; each card becomes one row."""

    name = "emberdb-gallery"
    description = "EmberDB card gallery pages (article.card blocks with dl stats and .attack blocks)"

    def matches(self, url: str, soup: BeautifulSoup) -> bool:
        """An EmberDB page with a card grid."""
        return super().matches(url, soup) and soup.find(class_="card-grid") is not None

    def extract(self, page: Page, soup: BeautifulSoup) -> PageContent:
        """The generic extraction of the page text, plus one table built from the card blocks."""
        grid = soup.find(class_="card-grid")
        if isinstance(grid, Tag):
            grid.extract()  # its text is the table, not rule text
        content = super().extract(page, soup)
        if isinstance(grid, Tag):
            table = self._cards(grid, urldefrag(page.url).url)
            if table is not None:
                content.tables.append(table)
        return self.finish(content)

    def _cards(self, grid: Tag, base: str) -> RawTable | None:
        cards: list[dict[str, str]] = []
        stats: list[str] = []
        most = 0
        for art in grid.find_all("article", class_="card"):
            if len(cards) >= MAX_ROWS:
                raise ScrapeError(f"{base}: the card gallery has more than the limit of {MAX_ROWS:,} cards")
            row: dict[str, str] = {"Name": text_of(art.find(class_="card-name") or art, icons=self.icons)}
            dl = art.find("dl")
            if isinstance(dl, Tag):
                for dt in dl.find_all("dt"):
                    dd = dt.find_next_sibling("dd")
                    label = text_of(dt)
                    if label not in stats:
                        stats.append(label)
                    row[label] = text_of(dd, icons=self.icons) if isinstance(dd, Tag) else ""
            attacks = art.find_all(class_="attack")
            most = max(most, len(attacks))
            for i, atk in enumerate(attacks, start=1):
                for part, cls in (("Attack", "attack-name"), ("Cost", "attack-cost"), ("Damage", "attack-damage")):
                    el = atk.find(class_=cls)
                    row[f"{part} {i}"] = text_of(el, icons=self.icons) if isinstance(el, Tag) else ""
                el = atk.find(class_="attack-text")
                row[f"Text {i}"] = text_of(el, icons=self.icons) if isinstance(el, Tag) else ""
            cards.append(row)
        if not cards:
            return None
        headers = ["Name", *stats]
        for i in range(1, most + 1):
            headers += [f"Attack {i}", f"Cost {i}", f"Damage {i}", f"Text {i}"]
        if len(headers) > MAX_COLS:
            raise ScrapeError(f"{base}: the card gallery has {len(headers)} columns, more than the limit of {MAX_COLS}")
        rows = [[c.get(h, "") for h in headers] for c in cards]
        return RawTable("card_gallery", headers, rows, f"{base}#card-grid", "Cards", is_cards=True)
