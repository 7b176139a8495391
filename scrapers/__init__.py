"""`envc scrape`: rules pages and card lists -> a draft spec (constant tables + rule text to formalize).

Nothing read from a page is executed: pages are parsed as HTML, and the draft is written by a YAML emitter.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from .adapters import SiteAdapter, adapters, choose, register
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
    """Fetch (or read, with `from_files`) each page, follow card-list pagination, and build the draft."""
    from .extract import soup_of, trim_headings

    fetcher = fetcher or Fetcher()
    pages: list[PageContent] = []
    seen: set[str] = set()
    for start in urls:
        nxt: str | None = start
        while nxt is not None:
            if len(seen) >= max_pages:
                raise ScrapeError(f"more than {max_pages} pages (raise --max-pages to follow more)")
            page = _read_file(nxt, fetcher.max_bytes) if from_files else fetcher.fetch(nxt)
            seen.add(nxt)
            seen.add(page.url)
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
