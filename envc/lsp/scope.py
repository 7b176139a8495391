"""What is in scope at a cursor inside rule code: locals declared above it, and the expression left of a dot.

This works on the text, not on a parse tree, so it also answers inside half-typed code that does not parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from envc.parse import Snippet

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LET = re.compile(r"let\s+([A-Za-z_][A-Za-z0-9_]*)")
_LET_MORE = re.compile(r"\s*,\s*([A-Za-z_][A-Za-z0-9_]*)")  # `let x, v = f(...)`: the names after the first
_FOR_STMT = re.compile(r"for\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b")
_FOR_GEN = re.compile(r"\bfor\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b")
_HEADER = re.compile(r"(if|elif|else|for|match|case)\b")


@dataclass
class Local:
    """A local visible at the cursor: its name, kind and snippet position (1-based line, col)."""

    name: str
    kind: str  # let | loop | generator
    line: int
    col: int


def snippet_position(snip: Snippet, line: int, col: int) -> tuple[int, int] | None:
    """The snippet (line, col) of file position line:col (1-based), or None if it is not inside the snippet."""
    text = snip.text
    best: tuple[int, int, int] | None = None  # (file col, snippet line, snippet col) on the cursor's line
    sl, sc = 1, 1
    for ch in text + "\n":
        fl, fc = snip.pos(sl, sc)
        if fl == line:
            if fc == col:
                return sl, sc
            if fc < col and (best is None or fc > best[0]):
                best = (fc, sl, sc)
        if ch == "\n":
            sl, sc = sl + 1, 1
        else:
            sc += 1
    if best is None:
        # the cursor is in the indentation of a block scalar line, left of the code
        first = [(sl_, 1) for sl_ in range(1, text.count("\n") + 2) if snip.pos(sl_, 1)[0] == line]
        return first[0] if first else None
    return best[1], best[2]


def _strip_comment(line: str) -> str:
    return line.split("#", 1)[0]


def _indent(line: str) -> int:
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip(" "))


def _depth(code: str, depth: int) -> int:
    for ch in code:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
    return depth


@dataclass
class _Block:
    indent: int
    names: dict[str, Local] = field(default_factory=dict)


def locals_at(text: str, line: int, col: int) -> dict[str, Local]:
    """Locals of a rule body visible at snippet position line:col: `let`s above it in enclosing blocks, the
    variables of enclosing `for` loops, and generator variables of the statement it is in."""
    lines = text.split("\n")
    line = max(1, min(line, len(lines)))
    blocks = [_Block(-1)]
    pending: tuple[int, dict[str, Local]] | None = None  # a header line's indent and the names its body gets

    def enter(ind: int) -> None:
        nonlocal pending
        if pending is not None:
            if ind > pending[0]:
                blocks.append(_Block(ind, pending[1]))
            pending = None
        while len(blocks) > 1 and blocks[-1].indent > ind:
            blocks.pop()

    depth = 0  # open brackets carried over from earlier lines
    start = 0  # first line of the statement containing the cursor
    for i, raw in enumerate(lines[: line - 1]):
        code = _strip_comment(raw)
        if depth == 0:
            if not code.strip():
                continue
            start = i
            enter(_indent(code))
            stripped = code.strip()
            lead = len(code) - len(code.lstrip())
            m = _LET.match(stripped)
            while m:
                blocks[-1].names[m.group(1)] = Local(m.group(1), "let", i + 1, lead + m.start(1) + 1)
                m = _LET_MORE.match(stripped, m.end())
            m = _FOR_STMT.match(stripped)
            if m and stripped.endswith(":"):
                pending = (_indent(code), {m.group(1): Local(m.group(1), "loop", i + 1, lead + m.start(1) + 1)})
            elif _HEADER.match(stripped) and stripped.endswith(":"):
                pending = (_indent(code), {})
        depth = _depth(code, depth)
    if depth == 0:
        start = line - 1
        cur = _strip_comment(lines[line - 1])
        enter(_indent(cur if cur.strip() else cur[: col - 1]))
    out: dict[str, Local] = {}
    for b in blocks:
        out.update(b.names)
    # generator variables anywhere in the statement around the cursor (its first line to its last)
    end = line - 1
    d = 0
    for j in range(start, len(lines)):
        d = _depth(_strip_comment(lines[j]), d)
        end = j
        if j >= line - 1 and d == 0:
            break
    for j in range(start, end + 1):
        code = _strip_comment(lines[j])
        lead = len(code) - len(code.lstrip())
        for m in _FOR_GEN.finditer(code):
            if m.start() == lead and code.rstrip().endswith(":"):
                continue  # a `for` statement: its variable is in scope in its body only
            out.setdefault(m.group(1), Local(m.group(1), "generator", j + 1, m.start(1) + 1))
    return out


@dataclass
class Chain:
    """The expression left of a `.`: its first name and what follows it (`[]` for an index, `.x` for a part)."""

    root: str
    steps: list[str]


def chain_before(text: str, end: int) -> Chain | None:
    """The chain of `root[...].part[...]` ending just before `text[end]` (a `.`), or None."""
    i = end
    steps: list[str] = []
    while i > 0:
        ch = text[i - 1]
        if ch in ")]":
            close = {")": "(", "]": "["}[ch]
            depth = 0
            j = i - 1
            while j >= 0:
                if text[j] == ch:
                    depth += 1
                elif text[j] == close:
                    depth -= 1
                    if depth == 0:
                        break
                j -= 1
            if j < 0 or ch == ")":
                return None  # unbalanced, or a call result: nothing to complete
            steps.append("[]")
            i = j
            continue
        m = re.search(r"[A-Za-z_][A-Za-z0-9_]*$", text[:i])
        if m is None:
            return None
        word = m.group()
        i = m.start()
        if i > 0 and text[i - 1] == "." and (i < 2 or not text[i - 2].isdigit()):
            steps.append("." + word)
            i -= 1
            continue
        steps.reverse()
        if word[0].isdigit():
            return None
        return Chain(word, steps)
    return None


def word_at(text: str, col: int) -> tuple[int, int] | None:
    """The [start, end) columns (0-based) of the identifier at or just left of 0-based column `col`."""
    for m in _WORD.finditer(text):
        if m.start() <= col <= m.end():
            if m.start() > 0 and text[m.start() - 1].isdigit():
                continue
            return m.start(), m.end()
    return None
