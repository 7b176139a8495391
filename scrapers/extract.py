"""Generic HTML extraction: headings -> rule sections (text + source anchor), <table> -> raw tables.

The walk is iterative (hostile pages nest thousands of levels deep) and only reads text: nothing from the page
is ever evaluated.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import quote, urldefrag, urljoin, urlsplit

from anyascii import anyascii
from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning
from bs4.element import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

from .fetch import Page, ScrapeError

HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
SKIP = {"script", "style", "noscript", "template", "svg", "iframe", "form", "nav", "footer", "button", "select"}
BLOCKS = {"p", "dt", "dd", "pre", "figcaption", "address"}
# Block content a broken page can leave inside a heading (an unclosed <h2> swallows what follows)
INSIDE_HEADING = frozenset({"p", "ul", "ol", "table", "div", "section", "dl", "pre", "blockquote", *HEADINGS})
NESTED = frozenset({"ul", "ol", "table", "dl", *HEADINGS})  # walked on their own when inside a text block
MAX_ROWS, MAX_COLS, MAX_TABLES, MAX_SPAN = 10_000, 100, 200, 1000
# Per page: headings read (the rest of the page is left out, with a note), characters kept of one section's
# text, of a heading and of a table cell (longer ones are cut, with a note). They keep a hostile page's draft
# small enough to lint; real rules pages stay far below them.
MAX_SECTIONS, MAX_SECTION_CHARS, MAX_TITLE_CHARS, MAX_CELL_CHARS = 500, 20_000, 200, 2_000


@dataclass
class Section:
    """A heading and the text under it (up to the next heading), with where it came from.

    `level` is the outline level: 1 for the page's title, 2 and deeper for its sections (on a page whose
    sections are all <h1>, those are level 2). `number` is the heading's numbering as written ("508",
    "A-03", "4.2.1", "VII", "Chapter 1"; "" if none) and `title` the heading without it.
    """

    title: str
    level: int
    source: str
    text: str = ""
    tables: list[str] = field(default_factory=list)
    kind: str = "module"  # what it becomes: "module" (the game itself), "action" or "rule" (set by the adapter)
    number: str = ""
    parents: list[str] = field(default_factory=list)  # titles of the enclosing sections, outermost first


@dataclass
class RawTable:
    """An HTML table as text cells; `headers` are the column titles as written."""

    name: str
    headers: list[str]
    rows: list[list[str]]
    source: str
    section: str = ""
    caption: str = ""
    is_cards: bool = False  # a card list (set by the site adapter)
    cut_cells: int = 0  # cells longer than MAX_CELL_CHARS, cut
    symbols: dict[str, str] = field(default_factory=dict)  # cost token as written ("W", "Fire") -> member name


@dataclass(frozen=True)
class Icons:
    """Which inline elements stand for a symbol (an energy or mana icon) and are written as a brace token.

    A small <img> with a short alt text (or title) becomes "{alt}"; with `abbr`, <abbr title="Fire"> becomes
    "{Fire}"; an element with a class matching `classes` becomes "{group 1}" (`energy-(\\w+)`: "energy-fire"
    -> "{fire}"). Large images (card pictures) are left out of table cells.
    """

    images: bool = True
    abbr: bool = False
    classes: re.Pattern[str] | None = None


PLAIN = Icons(images=False)
MAX_ICON_WORDS, MAX_ICON_CHARS, MAX_ICON_PX = 3, 30, 64


@dataclass
class PageContent:
    """What one page contributes to a draft."""

    url: str
    title: str
    sections: list[Section] = field(default_factory=list)
    tables: list[RawTable] = field(default_factory=list)
    next_url: str | None = None
    card_list: bool = False
    adapter: str = "generic"
    notes: list[str] = field(default_factory=list)  # what was left out or cut, one line each


MAX_HEADING_TAGS = 20_000  # beyond any rules page; a card gallery with a heading per card stops at MAX_ROWS
_HEADING_TAG = re.compile(rb"<h[1-6][\s/>]", re.IGNORECASE)


def trim_headings(page: Page) -> Page:
    """The page cut before its (MAX_HEADING_TAGS+1)-th heading tag, with a note; unchanged if it has fewer.

    Parsing costs tens of microseconds per element, and extraction stops after MAX_SECTIONS headings anyway,
    so a page of 100,000 headings is cut before it is parsed.
    """
    m = next(itertools.islice(_HEADING_TAG.finditer(page.body), MAX_HEADING_TAGS, None), None)
    if m is None:
        return page
    note = f"{page.url}: more than {MAX_HEADING_TAGS:,} heading tags; the page was read up to byte {m.start():,}"
    return dataclasses.replace(page, body=page.body[: m.start()], notes=(*page.notes, note))


def soup_of(page: Page) -> BeautifulSoup:
    """Parse as a browser does (html5lib implements the WHATWG algorithm, so broken markup gets the same tree).

    html5lib's time grows with the square of the nesting depth, so a page nested deeper than MAX_DEPTH (no
    real rules page is) is parsed with the standard library's linear parser instead.
    """
    parser = "html5lib" if nesting_depth(page.body) <= MAX_DEPTH else "html.parser"
    try:
        with warnings.catch_warnings():  # "<?xml ...?><!DOCTYPE html>" pages: bs4 would advise lxml on stderr
            warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
            return BeautifulSoup(page.body, parser, from_encoding=page.charset)
    except Exception as e:  # parsers raise on a few pathological inputs (e.g. bad declarations)
        raise ScrapeError(f"{page.url}: cannot parse the HTML: {e}") from None


MAX_DEPTH = 400
_TAG = re.compile(rb"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>")
# Elements whose end tag is optional or absent: they do not count towards nesting.
_OPEN_ENDED = {
    b"p", b"li", b"dt", b"dd", b"tr", b"td", b"th", b"thead", b"tbody", b"tfoot", b"option", b"optgroup",
    b"colgroup", b"caption", b"rb", b"rt", b"rp", b"html", b"head", b"body", b"br", b"img", b"hr", b"meta",
    b"link", b"input", b"area", b"base", b"col", b"embed", b"source", b"track", b"wbr", b"param",
}  # fmt: skip


def nesting_depth(body: bytes) -> int:
    """An estimate of how deep the markup nests (open minus closed tags that need an end tag), linear time."""
    depth = deepest = 0
    for m in _TAG.finditer(body):
        name = m.group(2).lower()
        if name in _OPEN_ENDED or m.group(3):
            continue
        depth = max(depth - 1, 0) if m.group(1) else depth + 1
        deepest = max(deepest, depth)
    return deepest


def text_of(el: Tag, exclude: frozenset[str] = frozenset(), icons: Icons = PLAIN, pictures: bool = True) -> str:
    """The visible text of an element: <br> as a line break, whitespace folded, symbols (per `icons`) as
    brace tokens ("{Fire}{Fire}"), other images by their alt text (left out unless `pictures`).

    Subtrees named in `exclude` (and scripts, styles, ...) are left out; the walk is iterative.
    """
    parts: list[str] = []
    stack: list[Iterator[object]] = [iter(list(el.children))]
    boundary = False  # an element began or ended since the last text
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            boundary = True
        elif isinstance(node, Tag):
            boundary = True
            if node.name in SKIP or node.name in exclude:
                continue
            token = icon_token(node, icons)
            if token is not None:
                if token:
                    parts.append("{" + token + "}")
                continue
            if node.name == "img":
                alt = node.get("alt")
                if alt and pictures:
                    parts.append(f" {alt} ")
            elif node.name == "br":
                parts.append("\n")
            elif node.name in ("td", "th", "li", "p", "div", "dt", "dd"):
                parts.append(" ")
            stack.append(iter(list(node.children)))
        elif _is_text(node):
            piece = " ".join(str(node).split("\n"))  # source line breaks are not text; <br> is
            if boundary and parts and parts[-1][-1:] in (".", ")", ":", ";") and piece[:1].isalnum():
                parts.append(" ")  # "<a>5.2.1.</a><span>An action" -> "5.2.1. An action"
            if piece:
                parts.append(piece)
                boundary = False
    text = clean("".join(parts))
    return _TOKEN_GAP.sub("}{", text) if icons.images or icons.abbr or icons.classes else text


_TOKEN_GAP = re.compile(r"\}[ \t]+\{")
_TOKEN_TRIM = "{}[]():;,. \t\n"


def icon_token(node: Tag, icons: Icons) -> str | None:
    """The symbol an element stands for ("" for a nameless one), or None if it is not a symbol."""
    if icons.classes is not None:
        for c in node.get_attribute_list("class"):
            m = icons.classes.fullmatch(str(c or ""))
            if m:
                return _token(m.group(1) if m.groups() else m.group(0))
    if icons.abbr and node.name == "abbr" and node.get("title"):
        return _token(str(node["title"]))
    if icons.images and node.name == "img":
        alt = str(node.get("alt") or node.get("title") or "")
        if not alt.strip() or len(alt) > MAX_ICON_CHARS or len(alt.split()) > MAX_ICON_WORDS:
            return None
        for dim in ("width", "height"):
            size = re.match(r"\s*(\d+)", str(node.get(dim) or ""))
            if size and int(size.group(1)) > MAX_ICON_PX:
                return None
        return _token(alt)
    return None


def _token(text: str) -> str:
    """A symbol's name as written, without the brackets or braces some sites put in alt texts ("{R}")."""
    return " ".join(text.replace("{", " ").replace("}", " ").split()).strip(_TOKEN_TRIM)


def clean(text: str) -> str:
    """Fold runs of spaces, keep single line breaks, drop control characters."""
    text = "".join(ch if ch in "\n\t" or ch.isprintable() else " " if ch.isspace() else "" for ch in text)
    lines = [" ".join(line.split()) for line in text.split("\n")]
    return "\n".join(line for line in lines if line)


def extract(page: Page, soup: BeautifulSoup, icons: Icons = Icons()) -> PageContent:
    """Sections and tables of a page, in document order (`icons`: which elements are symbols)."""
    title_tag = soup.find("title")
    root = soup.find("main") or soup.find(None, {"role": "main"}) or soup.find("article") or soup.body or soup
    assert isinstance(root, Tag)
    tags = root.find_all(list(HEADINGS), limit=MAX_SECTIONS)
    heads = [(h.name, _cut_title(text_of(h, INSIDE_HEADING))) for h in tags]
    # A page whose sections are all <h1>: they are sections (level 2), the page's title is its <title>.
    shift = 1 if sum(n == "h1" for n, _ in heads) > 1 else 0
    numbered = sum(1 for _, t in heads if split_number(t)[0])
    numbered_doc = numbered >= 3 and 3 * numbered >= len(heads)
    h1 = root.find("h1")
    title = text_of(title_tag) if shift and isinstance(title_tag, Tag) else ""
    if not title:
        title = text_of(h1) if isinstance(h1, Tag) else text_of(title_tag) if isinstance(title_tag, Tag) else ""
    title = _cut_title(title)
    out = PageContent(url=page.url, title=title, next_url=_next_link(soup, page.url), notes=list(page.notes))
    base = urldefrag(page.url).url
    current = Section(title or "Introduction", 1, base)
    buf: list[str] = []
    loose: list[str] = []
    outline: list[Section] = []  # the enclosing sections of the current one
    last_numbered = 0  # level of the latest numbered heading (numbered pages)
    untitled = False  # the current heading is a bare number ("A-0 3"): its title is the next text's first line

    def flush_loose() -> None:
        t = clean(" ".join(loose).replace("\n", " "))
        if t:
            buf.append(t)
        loose.clear()

    cut: list[str] = []

    def flush_section() -> None:
        flush_loose()
        text = "\n\n".join(buf).strip()
        buf.clear()
        if len(text) > MAX_SECTION_CHARS:
            cut.append(current.title)
            text = text[:MAX_SECTION_CHARS].rstrip() + f"\n\n[... {len(text) - MAX_SECTION_CHARS:,} characters cut]"
        current.text = text
        out.sections.append(current)

    for node, depth in _walk(root):
        if isinstance(node, NavigableString):
            loose.append(str(node))
            continue
        name = node.name
        if name in HEADINGS:
            heading = _cut_title(text_of(node, INSIDE_HEADING))
            number, words = split_number(heading)
            if _is_credit(node):
                continue
            if is_sentence(words) or _is_aside(node):  # a step line set as a heading, a note box's title
                flush_loose()
                buf.append(heading)
                continue
            if len(out.sections) + 1 >= MAX_SECTIONS:
                out.notes.append(
                    f"{page.url}: more than {MAX_SECTIONS} headings; the page was read up to the heading "
                    f"'{heading[:60]}' (the rest is not in the draft)"
                )
                break
            flush_section()
            level = HEADINGS[name] + shift
            if numbered_doc and not number and last_numbered and level <= last_numbered:
                level = last_numbered + 1  # an unnumbered heading inside a numbered section is part of it
            if number:
                last_numbered = level
            while outline and outline[-1].level >= level:
                outline.pop()
            current = Section(
                words or number or heading,
                level,
                _anchor_url(base, node, heading),
                number=number,
                parents=[s.title for s in outline if s.level > 1],
            )
            outline.append(current)
            untitled = bool(number) and not words
        elif name == "table":
            flush_loose()
            untitled = False
            if len(out.tables) >= MAX_TABLES:
                raise ScrapeError(f"{page.url}: more than {MAX_TABLES} tables")
            table = read_table(node, current, base, {t.name for t in out.tables}, icons)
            if table is not None:
                out.tables.append(table)
                current.tables.append(table.name)
                buf.append(render_table(table))
        elif name in BLOCKS:
            flush_loose()
            t = text_of(node, NESTED, icons)
            if untitled and t:
                untitled = False
                first = _first_line(node)
                if first and t.startswith(first) and _is_title(first):
                    current.title = first
                    t = t[len(first) :].lstrip(" ◆•·:–—-")
            if t:
                buf.append(t)
        elif name == "li":
            flush_loose()
            t = text_of(node, NESTED, icons)
            if t:
                item = "  " * depth + "- " + t.replace("\n", " ")
                if buf and buf[-1].lstrip().startswith("- "):
                    buf[-1] += "\n" + item  # consecutive list items stay one block
                else:
                    buf.append(item)
        elif name == "br":
            flush_loose()
    flush_section()
    running = _drop_running(out.sections)
    if running:
        out.notes.append(f"{page.url}: a running header or footer dropped from the text ({running} times)")
    out.sections = _drop_empty(_dedupe(out.sections))
    if cut:
        out.notes.append(
            f"{page.url}: {len(cut)} section(s) longer than {MAX_SECTION_CHARS:,} characters were cut "
            f"(first: '{cut[0][:60]}')"
        )
    cells = sum(t.cut_cells for t in out.tables)
    if cells:
        out.notes.append(f"{page.url}: {cells} table cell(s) longer than {MAX_CELL_CHARS:,} characters were cut")
    return out


CREDITS = frozenset({"author", "editor", "othercredit", "corpauthor", "collab"})  # DocBook title pages
ASIDES = frozenset({"note", "tip", "warning", "important", "caution", "sidebar", "admonition"})


def _is_credit(heading: Tag) -> bool:
    """A heading that names a person (an author on a DocBook title page), not a section."""
    return bool(CREDITS & set(heading.get_attribute_list("class")))


def _is_aside(heading: Tag) -> bool:
    """The title of a note box ("Note", "Tip"): part of the text around it, not a section."""
    parent = heading.parent
    return isinstance(parent, Tag) and bool(ASIDES & set(parent.get_attribute_list("class")))


def _cut_title(text: str) -> str:
    return text if len(text) <= MAX_TITLE_CHARS else text[: MAX_TITLE_CHARS - 3].rstrip() + "..."


RUNNING = 5  # a short line seen this many times (or more) on one page is a running header or footer


def running_key(line: str) -> str | None:
    """The line with its numbers blanked ("Page 12 of 40" and "Page 13 of 40" are one footer), if it could be a
    running header or footer: short but of three words or more (a table cell's "Tie" is not), not ending like a
    sentence."""
    t = line.strip()
    if not 0 < len(t) <= 80 or len(t.split()) < 3 or t.endswith((".", "!", "?", ":")):
        return None
    return re.sub(r"\d+", "#", t)


def _drop_running(sections: list[Section]) -> int:
    """Drop paragraphs that repeat on the page (a PDF transcription's page header); how many were dropped."""
    seen = Counter(k for s in sections for p in s.text.split("\n\n") if (k := running_key(p)) is not None)
    running = {k for k, n in seen.items() if n >= RUNNING}
    dropped = 0
    for s in sections:
        parts = s.text.split("\n\n")
        kept = [p for p in parts if running_key(p) not in running]
        if len(kept) != len(parts):
            dropped += len(parts) - len(kept)
            s.text = "\n\n".join(kept)
    return dropped


def _dedupe(sections: list[Section]) -> list[Section]:
    """One section per distinctive number ("A-03", "508", "4.2.1"): a table of contents repeats the headings
    of the body; the one with the most text is kept."""
    best: dict[str, Section] = {}
    for s in sections:
        if len(s.number) >= 3 and any(c.isdigit() for c in s.number):
            key = s.number.lower()
            if key not in best or len(s.text) > len(best[key].text):
                best[key] = s
    keep = {id(s) for s in best.values()}
    return [s for s in sections if id(s) in keep or not (len(s.number) >= 3 and any(c.isdigit() for c in s.number))]


def _drop_empty(sections: list[Section]) -> list[Section]:
    """Sections with text or tables, and the empty ones that enclose such a section (a chapter heading);
    empty leaves (a table of contents made of headings, the page title) are dropped."""
    kept: list[Section] = []
    below = 0  # level of the next kept section
    for s in reversed(sections):
        if s.text or s.tables or (s.level > 1 and below > s.level):
            kept.append(s)
            below = s.level
    return kept[::-1]


def _first_line(node: Tag, limit: int = 200) -> str:
    """The first line of an element's source text (a PDF converter's paragraph starts with its title line)."""
    got: list[str] = []
    size = 0
    for piece in node.strings:
        head, nl, _ = str(piece).partition("\n")
        got.append(head)
        size += len(head)
        if (nl and "".join(got).strip()) or size > limit:
            break
    return clean("".join(got))[:limit]


def _is_title(line: str) -> bool:
    """A short line that reads as a heading, not a sentence."""
    return 0 < len(line) <= 80 and any(c.isalpha() for c in line) and not line.rstrip().endswith((".", ","))


_ROMAN = r"(?=[MDCLXVI])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"
_NUMBER = (
    r"(?:(?i:chapter|section|part|article|appendix|rule|step|phase)\s+|§\s*)[A-Z0-9]{1,4}(?:[.-]\d+)*"
    r"|\d{1,3}(?:\.\d+)*[a-z]?"  # 508, 4.2.1, 100.1a
    r"|[A-Z]{1,3}-?\d+(?:[.-]\d+)*"  # A-03, B12
    rf"|(?:{_ROMAN}|(?i:{_ROMAN}))(?=[.)])"  # VII. iv)
    r"|[A-Za-z](?=[.)])"  # A. b)
    r"|\((?:\d{1,3}|[A-Za-z]|[ivxlc]{1,5})\)"  # (a) (1) (iv)
)
NUMBER_RE = re.compile(rf"^(?P<number>{_NUMBER})(?:[.)]?\s*[:–—-]\s*|[.)]\s*|\s+)(?P<title>[^\W\d].*|\W.*[^\W\d].*)$")
# A heading that is only a number, as PDF converters leave them ("A-0 3", "12.", "VII.")
NUMBER_ONLY_RE = re.compile(rf"^(?:[A-Z]{{1,3}}-?)?\d[\d .-]*\.?$|^{_ROMAN}\.$")


def split_number(heading: str) -> tuple[str, str]:
    """('508', 'Declare Attackers Step') from '508. Declare Attackers Step'; ('', heading) if unnumbered;
    (number, '') for a heading that is only a number."""
    text = heading.strip()
    m = NUMBER_RE.match(text)
    if m:
        return m.group("number").strip("()"), m.group("title").strip()
    if NUMBER_ONLY_RE.match(text):
        return "".join(text.split()).rstrip("."), ""
    return "", text


def is_sentence(title: str) -> bool:
    """A heading that is really a sentence or step line (PDF conversions): it ends like one, or is long."""
    words = title.split()
    end = title.rstrip()
    return end.endswith(":") or (end.endswith(".") and not end.endswith("...") and len(words) >= 3) or len(words) > 14


def _walk(root: Tag) -> Iterator[tuple[Tag | NavigableString, int]]:
    """Pre-order walk without recursion; headings, tables, text blocks and list items end their subtree
    (an item's nested lists are walked one level deeper)."""
    stack: list[tuple[Iterator[object], int]] = [(iter(list(root.children)), 0)]
    while stack:
        it, depth = stack[-1]
        node = next(it, None)
        if node is None:
            stack.pop()
            continue
        if isinstance(node, Tag):
            if node.name in SKIP:
                continue
            yield node, depth
            if node.name in HEADINGS:
                stack.append((iter(_outermost(node, INSIDE_HEADING)), depth))
                continue
            if node.name == "table":
                continue
            if node.name in BLOCKS or node.name == "li":
                stack.append((iter(_outermost(node, NESTED)), depth + (node.name == "li")))
                continue
            stack.append((iter(list(node.children)), depth))
        elif _is_text(node):
            assert isinstance(node, NavigableString)
            yield node, depth


def _outermost(node: Tag, names: frozenset[str]) -> list[Tag]:
    """Descendants named in `names` that are not inside another such descendant, in document order."""
    out: list[Tag] = []
    stack: list[Iterator[object]] = [iter(list(node.children))]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
        elif isinstance(child, Tag) and child.name not in SKIP:
            if child.name in names:
                out.append(child)
            else:
                stack.append(iter(list(child.children)))
    return out


def _is_text(node: object) -> bool:
    return isinstance(node, NavigableString) and not isinstance(
        node, (Comment, Declaration, Doctype, ProcessingInstruction)
    )


def _anchor_url(base: str, heading: Tag, title: str) -> str:
    """The heading's own id, an anchor inside it, or its section's id; else a text fragment (#:~:text=)."""
    ident = heading.get("id")
    if not ident:
        a = heading.find(lambda t: t.name == "a" and bool(t.get("id") or t.get("name")))
        if isinstance(a, Tag):
            ident = a.get("id") or a.get("name")
    if not ident:
        parent = heading.parent
        first = parent.find(True) if isinstance(parent, Tag) else None
        if isinstance(parent, Tag) and first is heading and parent.name in ("section", "div", "article"):
            ident = parent.get("id")
    if isinstance(ident, list):
        ident = ident[0] if ident else None
    if ident:
        return f"{base}#{quote(str(ident), safe='-._~')}"
    return f"{base}#:~:text={quote(title[:80], safe='')}" if title else base


def _next_link(soup: BeautifulSoup, url: str) -> str | None:
    """The first rel=next link of the same kind as the page (http(s) from the web, file: from saved pages);
    invalid and other links are passed over."""
    web = {"http", "https"}
    own = urlsplit(url).scheme
    for tag in soup.find_all(["link", "a"]):
        raw: object = tag.get("rel") or []
        rel = raw.split() if isinstance(raw, str) else [str(r) for r in raw] if isinstance(raw, list) else []
        if "next" in [r.lower() for r in rel] and tag.get("href"):
            try:
                nxt = urldefrag(urljoin(url, str(tag["href"]))).url
                scheme = urlsplit(nxt).scheme
            except ValueError:
                continue
            if scheme == own or (scheme in web and own in web):
                return nxt
    return None


def read_table(tbl: Tag, section: Section, base: str, taken: set[str], icons: Icons = Icons()) -> RawTable | None:
    """Header and rows of a table (colspan/rowspan spread out); None for an empty or layout-only table.

    The header is the <thead>, else a first row of <th>, else a first row of <td> that reads as one (bold
    labels, or labels above numbers, or known column names).
    """
    trs: list[Tag] = []
    head_rows: list[Tag] = []
    for child in tbl.children:
        if not isinstance(child, Tag):
            continue
        if child.name == "tr":
            trs.append(child)
        elif child.name in ("thead", "tbody", "tfoot"):
            part = [r for r in child.children if isinstance(r, Tag) and r.name == "tr"]
            (head_rows if child.name == "thead" else trs).extend(part)
    cut: list[int] = [0]
    grid = _grid(head_rows + trs, cut, icons)
    if not grid:
        return None
    n_head = len(head_rows)
    if n_head == 0 and trs:
        first = _cells(trs[0])
        if first and (all(c.name == "th" for c in first) or _reads_as_header(first, grid[0], grid[1:])):
            n_head = 1
    headers = grid[n_head - 1] if n_head else [f"column {i + 1}" for i in range(len(grid[0]))]
    rows = [r for r in grid[n_head:] if any(c.strip() for c in r)]
    if not rows:
        return None
    if len(rows) > MAX_ROWS:
        raise ScrapeError(f"{base}: a table has {len(rows):,} rows, more than the limit of {MAX_ROWS:,}")
    cap_tag = tbl.find("caption")
    caption = text_of(cap_tag) if isinstance(cap_tag, Tag) else ""
    ident = tbl.get("id")
    stem = caption or (str(ident) if ident else "") or section.title or "table"
    name = _unique(slug(stem) or "table", taken)
    source = f"{base}#{quote(str(ident), safe='-._~')}" if ident else section.source
    return RawTable(name, headers, rows, source, section.title, caption, cut_cells=cut[0])


def _cells(tr: Tag) -> list[Tag]:
    return [c for c in tr.children if isinstance(c, Tag) and c.name in ("td", "th")]


HEADER_WORDS = frozenset(
    "name card title type hp cost rarity set number no. # id attack attacks damage text effect "
    "power toughness weakness resistance retreat stage category class level health mana cost subtype".split()
    + ["card name", "mana cost", "card type", "retreat cost", "evolves from"]
)
_NUMERIC = re.compile(r"^[+-]?\d[\d,.]*\s*[+×x*]?$|^(?:\{[^{}]{1,20}\})+$")


def _reads_as_header(cells: list[Tag], first: list[str], rest: list[list[str]]) -> bool:
    """Whether a first row of <td> cells is the table's header."""
    labels = [c.strip() for c in first]
    if not rest or not labels or sum(1 for c in labels if c) < max(1, len(labels) - 1):
        return False
    if any(_NUMERIC.match(c) or len(c) > 40 or len(c.split()) > 5 for c in labels if c):
        return False
    if all(_bold(c) for c in cells if c.get_text(strip=True)):
        return True
    for j, label in enumerate(labels):
        below = [r[j].strip() for r in rest if j < len(r) and r[j].strip()]
        if label and len(below) >= 2 and sum(bool(_NUMERIC.match(v)) for v in below) >= 0.8 * len(below):
            return True  # a label above a column of numbers
        if label.lower().rstrip(":") in HEADER_WORDS and label not in below:
            return True
    return False


def _bold(cell: Tag) -> bool:
    """A cell whose text is all inside <b>/<strong> (or styled bold)."""
    if "bold" in str(cell.get("style") or "").replace(" ", "").lower():
        return True
    strong = "".join(b.get_text() for b in cell.find_all(["b", "strong"]))
    return bool(strong.strip()) and "".join(strong.split()) == "".join(cell.get_text().split())


def _grid(trs: list[Tag], cut: list[int], icons: Icons = Icons()) -> list[list[str]]:
    """Rows of cell texts with colspan and rowspan spread out, padded to the widest row; cells longer than
    MAX_CELL_CHARS are cut (counted in `cut[0]`)."""
    grid: list[list[str]] = []
    carry: dict[int, tuple[int, str]] = {}  # column -> (rows left, text) from a rowspan above
    for tr in trs:
        row: list[str] = []
        cells = iter(_cells(tr))
        col = 0
        while True:
            if col in carry:
                left, text = carry[col]
                row.append(text)
                if left <= 1:
                    del carry[col]
                else:
                    carry[col] = (left - 1, text)
                col += 1
                continue
            cell = next(cells, None)
            if cell is None:
                break
            text = text_of(cell, icons=icons, pictures=False).replace("\n", " ")
            if len(text) > MAX_CELL_CHARS:
                cut[0] += 1
                text = text[: MAX_CELL_CHARS - 3].rstrip() + "..."
            span = _span(cell.get("colspan"))
            down = _span(cell.get("rowspan"))
            for k in range(span):  # a spanned cell's text belongs to its first column; the others are empty
                if down > 1:
                    carry[col] = (down - 1, text if k == 0 else "")
                row.append(text if k == 0 else "")
                col += 1
            if len(row) > MAX_COLS:
                raise ScrapeError(f"a table has more than {MAX_COLS} columns")
        while carry and max(carry) >= col:  # rowspans continuing past the last cell of this row
            if col in carry:
                left, text = carry[col]
                row.append(text)
                carry[col] = (left - 1, text)
                if left <= 1:
                    del carry[col]
            else:
                row.append("")
            col += 1
        if row:
            grid.append(row)
    width = max((len(r) for r in grid), default=0)
    return [r + [""] * (width - len(r)) for r in grid]


def _span(v: object) -> int:
    try:
        n = int(str(v).strip()) if v is not None else 1
    except ValueError:
        return 1
    return min(max(n, 1), MAX_SPAN)


def render_table(t: RawTable, limit: int = 40) -> str:
    """A table as pipe-separated text lines (for the rule text the model reads)."""
    lines = [f"[table {t.name}]", " | ".join(t.headers)]
    lines += [" | ".join(r) for r in t.rows[:limit]]
    if len(t.rows) > limit:
        lines.append(f"... ({len(t.rows) - limit} more rows)")
    return "\n".join(lines)


STOPWORDS = {
    "a",
    "an",
    "the",
    "of",
    "to",
    "your",
    "onto",
    "on",
    "into",
    "in",
    "and",
    "or",
    "for",
    "with",
    "one",
    "is",
    "if",
    "this",
    "that",
    "does",
    "now",
    "are",
    "be",
    "from",
    "its",
    "it",
    "their",
    "you",
    "may",
}


def slug(text: str, max_words: int = 5, drop_stopwords: bool = True) -> str:
    """A lower_snake identifier from free text, transliterated to ASCII ("Pokémon" -> "pokemon")."""
    words = re.findall(r"[a-z0-9]+", anyascii(text).lower().replace("'", ""))
    if drop_stopwords and len([w for w in words if w not in STOPWORDS]) > 0:
        words = [w for w in words if w not in STOPWORDS]
    out = "_".join(words[:max_words])
    if out and out[0].isdigit():
        out = "n_" + out
    return out


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name}_{i}" in taken:
        i += 1
    return f"{name}_{i}"
