"""`envc scrape`: rules pages and card lists -> a draft spec (constant tables + rule text to formalize).

Nothing read from a page is executed: pages are parsed as HTML (card data as JSON), and the draft is written
by a YAML emitter.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from .adapters import SiteAdapter, adapters, choose, choose_json, register
from .draft import Draft, TodoItem, build_draft
from .emit import dump
from .extract import PageContent, RawTable, Section
from .fetch import Fetcher, Page, ScrapeError, read_saved

__all__ = [
    "Draft",
    "Fetcher",
    "Page",
    "PageContent",
    "RawTable",
    "ScrapeError",
    "Section",
    "SiteAdapter",
    "TodoItem",
    "adapters",
    "build_draft",
    "choose",
    "choose_json",
    "dump",
    "read_saved",
    "register",
    "scrape",
]


def scrape(
    urls: list[str],
    *,
    from_files: bool = False,
    name: str | None = None,
    players: int = 2,
    adapter: str | None = None,
    fetcher: Fetcher | None = None,
    max_pages: int = 20,
) -> Draft:
    """Fetch (or read, with `from_files`) each page, follow card-list pagination, and build the draft.

    A page served as JSON (or a saved file named *.json) is card data: a list of card objects.
    """
    from .extract import soup_of, trim_headings
    from .jsoncards import merge_cards, parse_cards

    fetcher = fetcher or Fetcher()
    pages: list[PageContent] = []
    seen: set[str] = set()
    for start in urls:
        nxt: str | None = start
        paged: PageContent | None = None  # a paged JSON API's first page: later pages add rows to its table
        while nxt is not None:
            if len(seen) >= max_pages:
                raise ScrapeError(f"more than {max_pages} pages (raise --max-pages to follow more)")
            page = _read_file(nxt, fetcher.max_bytes) if from_files else fetcher.fetch(nxt)
            seen.add(nxt)
            seen.add(page.url)
            if page.is_json:
                data = parse_cards(page)
                content = choose_json(page.url, data.cards, adapter).extract_json(page, data.cards)
                content.title, content.next_url = data.title, data.next_url
                if paged is not None:
                    merge_cards(paged.tables[0], content.tables[0])
                    paged.notes += content.notes
                    paged.next_url = content.next_url
                    nxt = content.next_url if content.next_url not in seen else None
                    continue
                paged = content
            else:
                page = trim_headings(page)
                soup = soup_of(page)
                content = choose(page.url, soup, adapter).extract(page, soup)
            pages.append(content)
            nxt = content.next_url if content.card_list else None
            if nxt is not None and nxt in seen:
                nxt = None
    return build_draft(pages, name=name, players=players)


def _read_file(ref: str, max_bytes: int) -> Page:
    """A saved page by path or file:// URI (rel=next links between saved pages are file:// URIs)."""
    if ref.startswith("file:"):
        path = url2pathname(urlsplit(ref).path)
        return read_saved(path, max_bytes)
    return read_saved(str(Path(ref)), max_bytes)
