"""Markdown rulebooks (a `.md` file, a `text/markdown` URL, a raw `.md` on a code host) rendered to HTML.

Many public rulebooks are Markdown files in a repository. markdown-it-py renders them as CommonMark with tables
(a card list written as a pipe table becomes an HTML table); a YAML front matter block is read for the page's
title and dropped from the text. The extraction then reads the page like any other.
"""

from __future__ import annotations

import html
from urllib.parse import urlsplit

import yaml
from markdown_it import MarkdownIt

from .fetch import Page, ScrapeError
from .text import cut_at_line, decode

SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")
MIMES = frozenset({"text/markdown", "text/x-markdown"})
FRONT_MATTER_MAX = 8192  # characters of a leading `---` block read as front matter
# Characters of Markdown rendered (the rest is left out, with a note). Rendering is linear but slow on hostile
# text (5 MB of "[" took 43 s on a loaded 2-vCPU host); real Markdown rulebooks are 2-30 KB, a long
# comprehensive rules text ~1 MB.
MAX_MARKDOWN_CHARS = 1_000_000


def is_markdown(url: str, mime: str = "") -> bool:
    """Whether a page is Markdown: by its content type, or by the suffix of its path (raw files are text/plain)."""
    if mime in MIMES:
        return True
    return mime in ("", "text/plain") and urlsplit(url).path.lower().endswith(SUFFIXES)


def front_matter(text: str) -> tuple[dict[str, object], str]:
    """A leading YAML block between `---` lines (as static-site generators write it) and the text after it."""
    first, _, after = text.partition("\n")
    if first.strip() != "---":
        return {}, text
    end = after.find("\n---", 0, FRONT_MATTER_MAX)
    if end < 0:
        return {}, text
    try:
        meta = yaml.safe_load(after[:end])
    except yaml.YAMLError:
        return {}, text
    rest = after[end + 4 :].partition("\n")[2]
    return (meta if isinstance(meta, dict) else {}), rest


def markdown_page(url: str, body: bytes, charset: str | None) -> Page:
    """The Markdown file as an HTML page (UTF-8), titled by its front matter's `title` if it has one."""
    meta, text = front_matter(decode(body, charset))
    text, cut = cut_at_line(url, text, MAX_MARKDOWN_CHARS, "Markdown")
    notes = [f"{url}: Markdown, rendered to HTML (CommonMark with tables)", *cut]
    renderer = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    try:
        rendered = renderer.render(text)
    except RecursionError:
        raise ScrapeError(f"{url}: the Markdown is nested too deeply to read") from None
    title = meta.get("title")
    head = f"<title>{html.escape(title)}</title>" if isinstance(title, str) else ""
    page = f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">{head}</head>\n<body>\n{rendered}</body></html>\n'
    return Page(url, page.encode("utf-8"), "utf-8", notes=tuple(notes))
