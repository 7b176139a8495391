"""reStructuredText rulebooks (a `.rst` file, a `text/x-rst` URL, a raw `.rst` on a code host) rendered to HTML.

docutils renders them as Sphinx and GitHub do, with every directive that reads from outside the text turned
off: `.. include::`, `.. raw::` and the `:file:`/`:url:` options of `csv-table` would otherwise copy a file of
the machine running `envc scrape` (or fetch another URL) into the draft. Problems in the markup are not
reported and never stop the rendering; the page renders as far as docutils reads it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import docutils.core

from .fetch import Page, ScrapeError
from .text import cut_at_line, decode

SUFFIXES = (".rst", ".rest")
MIMES = frozenset({"text/x-rst", "text/prs.fallenstein.rst"})
# Characters rendered (the rest is left out, with a note): docutils takes ~20 s for 1M characters of list items;
# real reStructuredText rulebooks are a few KB.
MAX_RST_CHARS = 300_000
SAFE = {
    "file_insertion_enabled": False,  # include, csv-table :file:/:url:, raw :file:/:url:
    "raw_enabled": False,  # raw HTML passed through
    "_disable_config": True,  # no docutils.conf read from the working directory
    "report_level": 5,  # nothing printed
    "halt_level": 5,  # nothing stops the rendering
    "warning_stream": False,
    "embed_stylesheet": False,
    "stylesheet_path": "",
    "syntax_highlight": "none",
    "output_encoding": "unicode",
}


def is_rst(url: str, mime: str = "") -> bool:
    """Whether a page is reStructuredText: by its content type, or by its path's suffix when served as text."""
    if mime in MIMES:
        return True
    return mime in ("", "text/plain") and urlsplit(url).path.lower().endswith(SUFFIXES)


def rst_page(url: str, body: bytes, charset: str | None) -> Page:
    """The reStructuredText document as an HTML page (UTF-8)."""
    text, cut = cut_at_line(url, decode(body, charset), MAX_RST_CHARS, "reStructuredText")
    notes = [f"{url}: reStructuredText, rendered to HTML (docutils {docutils.__version__}; include and raw off)", *cut]
    try:
        html = docutils.core.publish_string(text, writer="html5", settings_overrides=SAFE)
    except Exception as e:  # docutils raises errors of many kinds on malformed input
        raise ScrapeError(f"{url}: cannot read the reStructuredText: {type(e).__name__}") from None
    page = html if isinstance(html, str) else html.decode("utf-8")
    return Page(url, page.encode("utf-8"), "utf-8", notes=tuple(notes))
