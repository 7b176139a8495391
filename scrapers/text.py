"""Plain-text rulebooks (a comprehensive-rules `.txt`, a `text/plain` URL) read as headings and paragraphs.

The text becomes a small HTML page that the generic extraction reads like any other: a one-line block that
reads as a title becomes a heading, other blocks paragraphs (their hard-wrapped lines joined), and a block of
short title lines (a table of contents) a list. Heading levels come from the numbering: each numbering style
("1." chapters, "100." rules, "5.2" subsections, "A-03" lettered ones, unnumbered titles) gets the next level the
first time it appears, as a reader would infer the outline. Lines that repeat on many pages (a PDF's running
header or footer) are dropped.
"""

from __future__ import annotations

import html
import re
from collections import Counter

from .extract import RUNNING, is_sentence, running_key, split_number

_TITLE_MAX = 80
WRAP = 100  # lines longer than this are not hard-wrapped: each is a paragraph
_SENTENCE_END = re.compile(r"\b[a-z]{3,}[.!?] +[(\"A-Z]")  # "attacked. (See", not "Team vs. Team"
# Words that title case leaves in lower case ("End of the Game", "Playing a Card").
MINOR_WORDS = frozenset("a an the and or nor but of in on at to for by from with as vs".split())
BULLETS = ("- ", "* ", "\u2022", "\u2013 ", "\u25cf")


def looks_like_text(body: bytes) -> bool:
    """Readable text: decodes as UTF-8 (or is mostly printable Latin-1) and holds no NUL bytes."""
    sample = body[:4096]
    if b"\x00" in sample or not sample.strip():
        return False
    try:
        sample.decode("utf-8")
        return True
    except UnicodeDecodeError as e:
        if e.start >= len(sample) - 4:  # a character cut by the sample's end
            return True
    printable = sum(32 <= b < 127 or b in b"\t\r\n" or b >= 160 for b in sample)
    return printable >= 0.95 * len(sample)


def decode(body: bytes, charset: str | None = None) -> str:
    """The text of `body`: its declared charset, else UTF-8 (a BOM dropped), else Latin-1."""
    for enc in (charset, "utf-8-sig"):
        if enc:
            try:
                return body.decode(enc)
            except (UnicodeDecodeError, LookupError):
                pass
    return body.decode("latin-1")


def cut_at_line(url: str, text: str, limit: int, what: str) -> tuple[str, list[str]]:
    """The text up to `limit` characters, ended at a line, and a note when some of it was left out."""
    if len(text) <= limit:
        return text, []
    cut = text.rfind("\n", 0, limit) + 1 or limit
    return text[:cut], [f"{url}: more than {limit:,} characters of {what}; read up to character {cut:,}"]


def _style(number: str) -> str:
    """The numbering style of a heading number: "d1" (5), "d3" (508), "d.d" (4.2), "A-d" (A-03), "" none."""
    if not number:
        return ""
    shape = re.sub(r"\d+", "d", re.sub(r"[A-Za-z]+", "A", number))
    if shape == "d":
        return f"d{len(number)}"
    return shape


def _is_heading(line: str) -> bool:
    """A line that reads as a heading: short, not a sentence, with a letter in its title."""
    number, title = split_number(line)
    if not line or len(line) > _TITLE_MAX or not any(c.isalpha() for c in (title or number)):
        return False
    bare = title.rstrip(" \"')\u201d\u2019")
    if is_sentence(title) or line.rstrip().endswith((",", ";")) or _SENTENCE_END.search(title):
        return False
    if bare.endswith((".", "!", "?")) and len(title.split()) >= 3:  # `The term dies means "..."`
        return False
    if number:
        return True
    words = title.split()
    if len(words) > 8 or not words[0][:1].isupper():
        return False
    return title.isupper() or all(w[:1].isupper() or not w[:1].isalpha() or w in MINOR_WORDS for w in words)


def to_html(text: str) -> bytes:
    """An HTML page with the text's headings, paragraphs and contents lists; a first block of one line is its
    title."""
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    counts = Counter(k for ln in lines if (k := running_key(ln)) is not None)
    running = {k for k, n in counts.items() if n >= RUNNING}
    blocks: list[list[str]] = [[]]
    for ln in lines:
        s = ln.strip()
        if not s:
            if blocks[-1]:
                blocks.append([])
        elif split_number(s)[0] or running_key(s) not in running:
            blocks[-1].append(s)
    blocks = [b for b in blocks if b]
    levels: dict[str, int] = {"": 2}  # unnumbered titles are top-level; numbering styles nest in order seen
    out: list[str] = []
    title = blocks[0][0] if blocks and len(blocks[0]) == 1 else ""
    for n, block in enumerate(blocks):
        if n == 0 and title:
            out.append(f"<h1>{html.escape(title)}</h1>")
        elif len(block) == 1 and _is_heading(block[0]):
            out.append(_heading(block[0], levels, n))
        elif len(block) > 1 and all(_is_heading(b) and split_number(b)[0] for b in block):
            out.append("<ul>" + "".join(f"<li>{html.escape(b)}</li>" for b in block) + "</ul>")  # contents
        elif len(block) > 1 and _is_heading(block[0]) and split_number(block[0])[0] and is_sentence(block[1]):
            out.append(_heading(block[0], levels, n))  # a numbered title line right above its text
            out.extend(f"<p>{html.escape(' '.join(p))}</p>" for p in paragraphs(block[1:]))
        else:
            out.extend(_blocks(paragraphs(block)))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title></head>\n<body>\n" + "\n".join(out) + "\n</body></html>\n"
    ).encode("utf-8")


def paragraphs(block: list[str]) -> list[list[str]]:
    """The paragraphs of a block of lines: hard-wrapped lines are joined; a line that starts with a rule number,
    a bullet or "Example", or follows a line that ends a sentence well short of the wrap width, starts anew.
    Lines longer than any wrap width (WRAP) are a paragraph each."""
    width = max(len(b) for b in block)
    out: list[list[str]] = []
    for line in block:
        prev = out[-1][-1] if out else ""
        fresh = (
            not out
            or width > WRAP
            or bool(split_number(line)[0])
            or line.startswith(BULLETS)
            or line.startswith("Example")
            or (prev.rstrip(" \"')").endswith((".", "!", "?", ":")) and len(prev) < 0.75 * width)
        )
        if fresh:
            out.append([line])
        else:
            out[-1].append(line)
    return out


def _blocks(paras: list[list[str]]) -> list[str]:
    """Paragraphs as HTML; a run of bulleted ones is one list, as the page's author laid it out."""
    out: list[str] = []
    items: list[str] = []
    for p in paras:
        text = " ".join(p)
        if text.startswith(BULLETS):
            items.append(f"<li>{html.escape(text[1:].lstrip(' -*'))}</li>")
            continue
        if items:
            out.append("<ul>" + "".join(items) + "</ul>")
            items = []
        out.append(f"<p>{html.escape(text)}</p>")
    if items:
        out.append("<ul>" + "".join(items) + "</ul>")
    return out


def _heading(line: str, levels: dict[str, int], n: int) -> str:
    style = _style(split_number(line)[0])
    level = levels.setdefault(style, min(6, 1 + len(levels)))
    return f'<h{level} id="s{n}">{html.escape(line)}</h{level}>'
