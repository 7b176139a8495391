"""Pass 1: read a spec file into a YAML node tree that keeps source positions."""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import yaml

from envc.diagnostics import Diagnostics, Span

MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 48
MAX_NODES = 500_000
MAX_NUMBER = 1000  # characters in one YAML number (int() of a long one is slow, and past 4,300 digits an error)

try:
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader


@dataclass
class YNode:
    """A YAML node with its span in the file."""

    span: Span


@dataclass
class YScalar(YNode):
    """A scalar; `value` is already typed (str, int, float, bool, None)."""

    value: object
    style: str | None = None
    text: str = ""
    indent: int = 0
    source: str | None = None  # the text as written, for folded, multi-line plain and changed quoted scalars


@dataclass
class YMap(YNode):
    """A mapping with scalar keys, in file order."""

    items: list[tuple[YScalar, YNode]] = field(default_factory=list)
    # key -> position of its first item, built on the first lookup (a linear scan per lookup made checking a spec
    # with 8,000 functions take 40 s); rebuilt if items were added since
    _index: dict[object, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    _indexed: int = field(default=-1, init=False, repr=False, compare=False)

    def _find(self, key: object) -> tuple[YScalar, YNode] | None:
        if self._indexed != len(self.items):
            self._index = {}
            for i, (k, _) in enumerate(self.items):
                self._index.setdefault(k.value, i)
            self._indexed = len(self.items)
        at = self._index.get(key)
        return None if at is None else self.items[at]

    def get(self, key: str) -> YNode | None:
        """The value node for `key`, if present."""
        item = self._find(key)
        return None if item is None else item[1]

    def key_node(self, key: str) -> YScalar | None:
        """The key node for `key`, if present."""
        item = self._find(key)
        return None if item is None else item[0]


@dataclass
class YSeq(YNode):
    """A sequence."""

    items: list[YNode] = field(default_factory=list)


YAny = Union[YScalar, YMap, YSeq]


def to_python(node: YNode) -> object:
    """Plain Python data for a node (dict/list/scalars)."""
    if isinstance(node, YScalar):
        return node.value
    if isinstance(node, YSeq):
        return [to_python(n) for n in node.items]
    assert isinstance(node, YMap)
    return {k.value: to_python(v) for k, v in node.items}


def node_at(root: YNode, path: tuple[object, ...]) -> YNode:
    """The deepest node along `path` (keys and indices), for locating errors."""
    node = root
    for step in path:
        nxt: YNode | None = None
        if isinstance(node, YMap):
            nxt = node.get(str(step)) if not isinstance(step, int) else None
            if nxt is None:
                for k, v in node.items:
                    if k.value == step:
                        nxt = v
        elif isinstance(node, YSeq) and isinstance(step, int) and 0 <= step < len(node.items):
            nxt = node.items[step]
        if nxt is not None:  # steps that are not in the tree (union tags) are skipped
            node = nxt
    return node


def key_span(root: YNode, path: tuple[object, ...]) -> YNode:
    """The key node of the last step of `path` if it names a mapping key, else the node at `path`."""
    parent = node_at(root, path[:-1])
    if isinstance(parent, YMap) and path:
        k = parent.key_node(str(path[-1]))
        if k is not None:
            return k
    return node_at(root, path)


_SCALAR_TAGS: dict[str, Callable[[str], object]] = {
    "tag:yaml.org,2002:null": lambda s: None,
    "tag:yaml.org,2002:bool": lambda s: s.lower() in ("true", "yes", "on"),
}


class _BadScalar(Exception):
    """A plain scalar YAML reads as a number that is not one (`0x_`) or is too long to convert."""


def _scalar_value(node: yaml.ScalarNode) -> object:
    """The typed value of an untagged scalar (the tag is the one YAML 1.1 resolved for it)."""
    tag = node.tag
    text: str = node.value
    if tag in _SCALAR_TAGS:
        return _SCALAR_TAGS[tag](text)
    if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float"):
        return text  # str, and the ones envc has no use for (timestamps, `=`, `<<`) as their text
    if len(text) > MAX_NUMBER:
        raise _BadScalar(f"a number of {len(text):,} characters; a number is at most {MAX_NUMBER} characters")
    try:
        if tag == "tag:yaml.org,2002:float":
            return float(_CONSTRUCTOR.construct_yaml_float(node))  # type: ignore[no-untyped-call]
        if text.isdigit() and (text[0] != "0" or len(text) == 1):  # the common case (0-prefixed is octal in YAML 1.1)
            return int(text)
        return int(_CONSTRUCTOR.construct_yaml_int(node))  # type: ignore[no-untyped-call]
    except (ValueError, OverflowError):  # YAML 1.1's patterns admit "0b_", "0x_"
        raise _BadScalar(
            f"YAML reads '{_short(text)}' as a number, but it is not one; quote it if it is text"
        ) from None


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


_CONSTRUCTOR = yaml.constructor.SafeConstructor()  # stateless for scalars; one for all (making one per value was slow)


class _TooBig(Exception):
    pass


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _require_regular(mode: int, path: str | Path) -> None:
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "a special file")
        code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
        raise OSError(code, f"it is {kind}, not a regular file", os.fspath(path))


def read_at_most(path: str | Path, limit: int) -> bytes:
    """The first `limit` bytes of a regular file. OSError if it cannot be read, and for anything but a regular
    file (a folder, a named pipe, a device, a socket), refused before it is opened: opening a pipe waits for a
    writer, and reading a device may never end."""
    if "\x00" in os.fspath(path):  # os.stat would raise ValueError, not OSError
        raise OSError(errno.EINVAL, "the file name contains a NUL character", os.fspath(path))
    _require_regular(os.stat(path).st_mode, path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    with open(fd, "rb") as f:
        _require_regular(os.fstat(fd).st_mode, path)  # the path may name something else since the stat
        return f.read(limit)


def load_yaml(path: str, diags: Diagnostics, text: str | None = None) -> tuple[YNode | None, str]:
    """Read and compose `path`; on failure record one clear diagnostic and return None."""
    here = Span.point(path, 1, 1)
    if text is None:
        try:
            raw = read_at_most(path, MAX_BYTES + 1)  # a bounded read: /dev/zero or a pipe cannot hang us
        except OSError as e:
            diags.error(here, "E001", f"cannot read spec: {e.strerror or e}")
            return None, ""
        if len(raw) > MAX_BYTES:
            diags.error(here, "E001", f"spec is larger than {MAX_BYTES} bytes (the limit)")
            return None, ""
        if b"\x00" in raw:
            diags.error(here, "E001", "spec looks like a binary file (it contains NUL bytes)")
            return None, ""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line = raw[: e.start].count(b"\n") + 1
            col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
            diags.error(Span.point(path, line, col), "E001", "spec is not valid UTF-8")
            return None, ""
    elif len(text) > MAX_BYTES:
        diags.error(here, "E001", f"spec is {len(text)} characters; the limit is {MAX_BYTES}")
        return None, ""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        diags.error(here, "E010", "spec is empty")
        return None, text
    tree, ok = compose_text(path, text, diags)
    if ok and tree is None:
        diags.error(here, "E010", "spec is empty")
    return tree, text


def compose_text(path: str, text: str, diags: Diagnostics, max_nodes: int = MAX_NODES) -> tuple[YNode | None, bool]:
    """Compose YAML text (a spec or a data file) into nodes with positions; (None, False) after a diagnostic,
    (None, True) for an empty document."""
    here = Span.point(path, 1, 1)
    bad = _BAD_CHAR.search(text)
    if bad is not None:
        diags.error(_char_span(path, text, bad.start()), "E002", _bad_char_message(bad.group()))
        return None, False
    too_deep = _nesting_problem(text)
    if too_deep is not None:
        diags.error(Span.point(path, *too_deep), "E003", f"YAML nesting is deeper than {MAX_DEPTH} levels")
        return None, False
    if len(text) > 2 * max_nodes:  # could hold too many nodes: count parser events, stopping at the limit
        where = _too_many_nodes(text, max_nodes)
        if where is not None:
            diags.error(Span.point(path, *where), "E003", _too_many(max_nodes))
            return None, False
    try:
        composed = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as e:
        span, message = _syntax_error(path, text, e)
        diags.error(span, "E002", message)
        return None, False
    except yaml.reader.ReaderError as e:  # pragma: no cover - _BAD_CHAR finds these first
        span = _char_span(path, text, e.position) if isinstance(e.position, int) else here
        diags.error(span, "E002", _bad_char_message(chr(e.character) if isinstance(e.character, int) else "?"))
        return None, False
    except yaml.YAMLError as e:
        diags.error(here, "E002", f"YAML error: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        return None, False
    except RecursionError:
        diags.error(here, "E003", f"YAML nesting is too deep (limit {MAX_DEPTH})")
        return None, False
    if composed is None:
        return None, True
    walk = _Walk(path, text.split("\n"), diags, max_nodes)
    try:
        tree = _convert(composed, walk, 0)
    except _TooBig:
        return None, False
    return (None, False) if walk.failed else (tree, True)


def _too_many(limit: int) -> str:
    return f"the file has more than {limit:,} YAML nodes (values)"


def _too_many_nodes(text: str, limit: int) -> tuple[int, int] | None:
    """Where the node after the first `limit` starts, if there is one (composing all of them first took seconds)."""
    nodes = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent, yaml.AliasEvent)
    n = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, nodes):
                n += 1
                if n > limit:
                    mark = event.start_mark
                    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    except yaml.YAMLError:
        pass  # composing reports it, located
    return None


# Characters YAML does not allow in a stream (YAML 1.1, 5.1): C0 controls other than tab and line breaks, DEL,
# C1 controls, surrogates and U+FFFE/U+FFFF (libyaml rejects them without a position); and the line breaks of
# YAML 1.1 that editors and our positions do not count as line breaks: NEL, U+2028, U+2029, a CR without LF.
_BAD_CHAR = re.compile("[^\t\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|\r(?!\n)")


def _char_span(path: str, text: str, offset: int) -> Span:
    """The one-character span of `text[offset]`."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Span.point(path, line, col)


def _bad_char_message(ch: str) -> str:
    if ch == "\r":
        return "a carriage return without a line feed is a line break to YAML but not to editors; use \\n line ends"
    if ch in "\x85\u2028\u2029":
        return f"U+{ord(ch):04X} is a line break to YAML but not to editors; replace it with a normal line break"
    name = f"U+{ord(ch):04X}" if len(ch) == 1 else repr(ch)
    kind = "control character" if len(ch) == 1 and (ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0) else "character"
    return (
        f"{kind} {name} is not allowed in a YAML file; delete it "
        "(inside a double-quoted string it can be written as an escape such as \\x1b)"
    )


def _syntax_error(path: str, text: str, e: yaml.MarkedYAMLError) -> tuple[Span, str]:
    """Where a libyaml error is and what to say about it."""
    lines = text.split("\n")
    mark = e.problem_mark or e.context_mark
    problem = e.problem or e.context or "syntax error"
    if e.context == "while scanning a simple key" and e.context_mark is not None:
        # the problem mark is wherever libyaml gave up looking for the ':' (often the next key, or past the end);
        # the key without its colon is at the context mark
        mark = e.context_mark
        problem = "could not find the ':' after this key (or is the line meant to be indented under the key above?)"
    elif problem == "mapping values are not allowed in this context":
        problem = "a ': ' is not allowed here; quote text that contains ': '"
    if mark is None:
        return Span.point(path, 1, 1), f"YAML syntax error: {problem}"
    line, col = mark.line + 1, mark.column + 1
    while line > 1 and (line > len(lines) or (not lines[line - 1].strip() and col == 1)):
        line -= 1  # a mark past the last line (no final newline) or on a trailing blank line
        col = len(lines[line - 1]) + 1 if line <= len(lines) else 1
    if line <= len(lines):
        col = min(col, len(lines[line - 1]) + 1)
        if lines[line - 1][col - 1 : col] == "\t":
            problem = "a tab character here; YAML is indented with spaces only"
    return Span.point(path, line, col), f"YAML syntax error: {problem}"


_LEAD = re.compile(r"[ ]*(?:[-?:](?:[ \t]+|$))*")


def _nesting_problem(text: str) -> tuple[int, int] | None:
    """Where flow brackets or indentation nest too deep (checked before libyaml recurses)."""
    depth = 0
    for lineno, line in enumerate(text.split("\n"), 1):
        # indentation plus compact nesting on one line ("- - - x", "? - x"): libyaml's composer recurses once per
        # level in C, and 100,000 "- " on one line overflowed the C stack (a segfault, not an exception)
        if _LEAD.match(line).end() > 4 * MAX_DEPTH:  # type: ignore[union-attr]
            return lineno, 1
        if depth == 0 and "[" not in line and "{" not in line:
            continue
        quote, prev, skip = "", "", False  # prev: the last character outside quotes that is not a space
        for col, ch in enumerate(line, 1):
            if skip:
                skip = False
            elif quote:
                if quote == '"' and ch == "\\":
                    skip = True  # an escape: the next character does not close the string
                elif ch == quote and quote == "'" and line[col : col + 1] == "'":
                    skip = True  # '' is a quote inside a single-quoted string
                elif ch == quote:
                    quote, prev = "", ch
            elif ch in "'\"" and prev in ("", "[", "{", ",", ":", "-", "?"):
                quote = ch  # a quote opens a string only where a scalar starts (`Professor's` is plain text)
            elif ch == "#" and (col == 1 or line[col - 2] in " \t"):
                break
            elif ch in "[{":
                depth += 1
                if depth > MAX_DEPTH:
                    return lineno, col
            elif ch in "]}":
                depth = max(0, depth - 1)
            if not quote and ch not in " \t" and not skip:
                prev = ch if ch not in "'\"" else prev
    return None


def _span(path: str, node: yaml.Node) -> Span:
    s, e = node.start_mark, node.end_mark
    return Span(path, s.line + 1, s.column + 1, e.line + 1, e.column + 1)


def _block_indent(lines: list[str], header_line: int) -> int:
    for ln in lines[header_line + 1 :]:
        if ln.strip():
            return len(ln) - len(ln.lstrip(" "))
    return 0


@dataclass
class _Walk:
    """What converting one composed document needs and finds."""

    path: str
    lines: list[str]
    diags: Diagnostics
    max_nodes: int
    count: int = 0
    seen: set[int] = field(default_factory=set)
    failed: bool = False  # an error that leaves the tree unusable (an explicit tag, a bad number) was reported
    tagged: set[tuple[int, int]] = field(default_factory=set)  # where tags were reported (once per place)


_NO_ANCHORS = "YAML anchors and aliases are not supported; write the value out"
_TAG = re.compile(r"!<[^>\s]*>|![^\s,\[\]{}]*")  # a verbatim tag `!<...>` may hold commas


def _properties(node: yaml.Node, walk: _Walk) -> None:
    """Reject YAML node properties: anchors (the start of alias bombs) and explicit tags (`!!int "two"`,
    `!!binary`, `!custom`, `!`), which would change what a value means or how it is built."""
    s, e = node.start_mark, node.end_mark
    if s.index == e.index or s.line >= len(walk.lines):
        return  # an empty node without properties
    line = walk.lines[s.line]
    if line[s.column : s.column + 1] not in ("&", "!"):
        return  # no properties: a node starts at them, and a plain scalar cannot start with either character
    head = line[s.column : s.column + 200]
    if head.startswith("&"):
        walk.diags.error(_span(walk.path, node), "E003", _NO_ANCHORS)
        raise _TooBig
    tag = _TAG.match(head)
    if tag is not None and (s.line, s.column) not in walk.tagged:
        walk.tagged.add((s.line, s.column))
        walk.failed = True
        walk.diags.error(
            Span.point(walk.path, s.line + 1, s.column + 1),
            "E003",
            f"YAML tag '{_short(tag.group())}' is not supported (specs take no explicit tags); "
            "write the value without it, quoted if it is text",
        )


def _convert(node: yaml.Node, walk: _Walk, depth: int) -> YNode:
    walk.count += 1
    path, lines, diags = walk.path, walk.lines, walk.diags
    span = _span(path, node)
    if walk.count > walk.max_nodes:
        diags.error(span, "E003", _too_many(walk.max_nodes))
        raise _TooBig
    if depth > MAX_DEPTH:
        diags.error(span, "E003", f"YAML nesting is deeper than {MAX_DEPTH} levels")
        raise _TooBig
    if id(node) in walk.seen:
        diags.error(span, "E003", _NO_ANCHORS)
        raise _TooBig
    walk.seen.add(id(node))
    _properties(node, walk)
    if isinstance(node, yaml.ScalarNode):
        indent = _block_indent(lines, node.start_mark.line) if node.style in ("|", ">") else 0
        s, e = node.start_mark, node.end_mark
        source = None
        if node.style == ">":
            last = e.line + 1 if e.column > 0 else e.line
            source = "\n".join(ln[indent:] for ln in lines[s.line + 1 : last])
        elif not node.style and e.line > s.line:
            body = lines[s.line : e.line + 1]
            body[-1] = body[-1][: e.column]
            body[0] = body[0][s.column :]
            source = "\n".join(body)
        elif node.style in ("'", '"'):  # the text between the quotes, when escapes or folding changed it
            body = lines[s.line : e.line + 1]
            body[-1] = body[-1][: max(e.column - 1, 0)]
            body[0] = body[0][s.column + 1 :]
            raw = "\n".join(body)
            source = raw if raw != node.value else None
        value: object = node.value
        if (s.line, s.column) not in walk.tagged:  # a tagged scalar is kept as its text
            try:
                value = _scalar_value(node)
            except _BadScalar as bad:
                diags.error(span, "E012", str(bad))
                walk.failed = True
        return YScalar(span, value, node.style, node.value, indent, source)
    if isinstance(node, yaml.SequenceNode):
        return YSeq(span, [_convert(n, walk, depth + 1) for n in node.value])
    assert isinstance(node, yaml.MappingNode)
    out = YMap(span)
    keys: dict[object, YScalar] = {}
    for k, v in node.value:
        kn = _convert(k, walk, depth + 1)
        if not isinstance(kn, YScalar):
            diags.error(kn.span, "E012", "mapping keys must be plain scalars")
            raise _TooBig
        if isinstance(kn.value, bool):  # YAML 1.1: on/off/yes/no are booleans
            msg = f"key '{kn.text}' is read by YAML as the boolean {str(kn.value).lower()}; quote it: \"{kn.text}\""
            diags.error(kn.span, "E012", msg)
        if not isinstance(kn.value, str):
            kn.value = kn.text  # keys are names: 1 or ~ as a key is then "not an identifier" or "unknown key"
        if kn.value in keys:
            first = keys[kn.value].span
            diags.error(kn.span, "E031", f"duplicate key '{kn.value}' (first at line {first.line})")
            continue
        keys[kn.value] = kn
        out.items.append((kn, _convert(v, walk, depth + 1)))
    return out
