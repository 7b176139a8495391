"""Hover, completion and go-to-definition on one spec text (pure functions; the server only converts positions).

Positions here are 0-based lines and 0-based columns counted in characters, like envc's own spans minus one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from envc import ir
from envc.check.symbols import KEYWORDS
from envc.diagnostics import Diagnostics, Span
from envc.ir import SpecIR
from envc.load import YScalar, load_yaml
from envc.lsp.builtins import BUILTINS, CONSTANTS, SPECIAL
from envc.lsp.index import CodeSite, Decl, Index, build_index
from envc.lsp.scope import Chain, chain_before, locals_at, snippet_position, word_at
from envc.parse import Snippet
from envc.schema import spec_schema


@dataclass
class Outline:
    """The YAML tree and index of one text (cheap: no rule body is parsed or checked)."""

    path: str
    text: str
    index: Index
    ok: bool  # the YAML composed; otherwise `index` is the last one that did (positions may be stale)
    lines: list[str] = field(default_factory=list)
    spec: SpecIR | None = None  # the IR of this text, when it checked clean
    _let_types: dict[tuple[int, str], str] | None = None

    def let_type(self, line: int, name: str) -> str | None:
        """The type of the `let` of `name` on file line `line`, when the IR is known (walked on first use)."""
        if self.spec is None:
            return None
        if self._let_types is None:
            self._let_types = _let_types(self.spec)
        return self._let_types.get((line, name))

    @staticmethod
    def of(path: str, text: str, previous: Outline | None = None, spec: SpecIR | None = None) -> Outline:
        """The outline of `text`; when its YAML does not compose, the previous outline's index is kept. `spec`,
        the IR of this same text when it checked clean, gives the types of `let` locals."""
        try:
            root, _ = load_yaml(path, Diagnostics(), text)
            index = build_index(root)
        except Exception:  # an outline is a convenience: no text may take the server down
            root, index = None, Index()
        ok = root is not None
        if not ok and previous is not None:
            index = previous.index
        return Outline(path, text, index, ok, text.split("\n"), spec)


def _let_types(spec: SpecIR) -> dict[tuple[int, str], str]:
    """The type of every `let` in a spec's IR, by the line of its statement and its name."""
    out: dict[tuple[int, str], str] = {}
    todo: list[object] = [spec]
    while todo:
        node = todo.pop()
        if isinstance(node, ir.LetS):
            out[(node.span.line, node.name)] = node.value.ty.show()
        if isinstance(node, BaseModel):
            todo.extend(getattr(node, name) for name in type(node).model_fields)
        elif isinstance(node, (tuple, list)):
            todo.extend(node)
    return out


@dataclass
class Item:
    """A completion candidate."""

    label: str
    kind: str  # variable field enum member function keyword constant struct property module
    detail: str = ""
    doc: str = ""


@dataclass
class Target:
    """Where a name is declared: a span in this spec, or a whole file (a table's data file)."""

    span: Span | None = None
    file: str | None = None


# ---- resolving the name under the cursor --------------------------------


@dataclass
class _Cursor:
    site: CodeSite | None
    snip: Snippet | None
    spos: tuple[int, int] | None  # snippet line, col (1-based)


def _cursor(o: Outline, line: int, col: int) -> _Cursor:
    site = o.index.site_at(line + 1, col + 1) if o.ok else None
    if site is None:
        return _Cursor(None, None, None)
    snip = Snippet.of(site.node)
    return _Cursor(site, snip, snippet_position(snip, line + 1, col + 1))


def _locals(o: Outline, cur: _Cursor) -> dict[str, Decl]:
    """Locals at the cursor as declarations (with file spans)."""
    site, snip = cur.site, cur.snip
    if site is None or snip is None:
        return {}
    out = dict(site.locals)
    if cur.spos is not None:
        for name, loc in locals_at(snip.text, *cur.spos).items():
            fl, fc = snip.pos(loc.line, loc.col)
            span = Span(o.path, fl, fc, fl, fc + len(name))
            what = {"let": "let", "loop": "loop variable", "generator": "generator variable"}[loc.kind]
            ty = "i32" if loc.kind != "let" else o.let_type(fl, name)
            typ = f": {ty}" if ty else ""
            out[name] = Decl(name, "local", span, f"{what} {name}{typ}")
    return out


def _globals(o: Outline, site: CodeSite | None) -> dict[str, Decl]:
    g = dict(o.index.globals)
    if site is not None and site.obs:
        g.update(o.index.obs)
    if site is not None and site.action:
        if any(s.where == "continuous action effect" for s in o.index.sites):
            g["action"] = Decl(
                "action", "state", None, "action: f32 array (read-only)", "The continuous action (zeros: none)."
            )
        else:
            g["action"] = Decl(
                "action", "state", None, "action: i32 (read-only)", "The id of the action just taken (-1: none)."
            )
    return g


def _lookup(o: Outline, cur: _Cursor, name: str) -> Decl | None:
    """A bare name as the checker resolves it: locals, then globals, then builtin names."""
    for table in (_locals(o, cur), _globals(o, cur.site)):
        if name in table:
            return table[name]
    if name in SPECIAL:
        sig, doc = SPECIAL[name]
        return Decl(name, "state" if name != "num_players" else "const", None, sig, doc)
    if name in CONSTANTS:
        sig, doc = CONSTANTS[name]
        return Decl(name, "const", None, sig, doc)
    if name in BUILTINS:
        b = BUILTINS[name]
        return Decl(name, "builtin", None, b.signature, b.doc)
    if name in o.index.records:
        return o.index.records[name]
    return None


def _members(o: Outline, decl: Decl | None, chain: Chain) -> dict[str, Decl]:
    """What may follow `chain.` when its root is `decl`."""
    if decl is None or any(s.startswith(".") for s in chain.steps):
        return {}
    if decl.kind == "enum" and not chain.steps:
        return decl.members
    if decl.kind in ("table", "zone"):
        return decl.members
    if decl.kind == "state" and decl.type_name in o.index.records:
        return o.index.records[decl.type_name].members
    return {}


def _resolve(o: Outline, line: int, col: int) -> tuple[Decl | None, tuple[int, int] | None]:
    """The declaration of the name at 0-based line:col and the name's [start, end) columns."""
    if not 0 <= line < len(o.lines):
        return None, None
    text = o.lines[line]
    where = word_at(text, col)
    if where is None:
        return None, None
    start, end = where
    name = text[start:end]
    cur = _cursor(o, line, start)
    if cur.site is None and o.ok:
        return _resolve_yaml(o, line, start, name), where
    if name in KEYWORDS:
        return None, where
    if start > 0 and text[start - 1] == ".":
        chain = chain_before(text, start - 1)
        if chain is None:
            return None, where
        base = _lookup(o, cur, chain.root)
        return _members(o, base, chain).get(name), where
    return _lookup(o, cur, name), where


def _resolve_yaml(o: Outline, line: int, col: int, name: str) -> Decl | None:
    """A name outside rule code: a declaration's own key, or a scalar that is exactly a declared name (a type,
    a static size)."""
    ix = o.index
    for key, path in ix.keys:
        s = key.span
        if s.line == line + 1 and s.col <= col + 1 < s.end_col + 1:
            return _decl_of_key(ix, key, path)
    node = _scalar_at(ix, line + 1, col + 1)
    if node is None or not isinstance(node.value, str) or node.value.strip() != name:
        return None
    for table in (ix.globals, ix.records):
        if name in table:
            return table[name]
    return None


def _decl_of_key(ix: Index, key: YScalar, path: tuple[object, ...]) -> Decl | None:
    name = key.value if isinstance(key.value, str) else key.text
    pools: list[dict[str, Decl]] = []
    if len(path) == 1:
        pools = [ix.globals, ix.records, ix.actions]
    elif path[:1] == ("observation",) and path[1:] == ("fields",):
        pools = [ix.obs]
    elif len(path) == 3 and path[0] in ("tables",) and path[2] == "columns":
        pools = [ix.globals[str(path[1])].members] if str(path[1]) in ix.globals else []
    elif len(path) == 3 and path[0] == "types" and path[2] == "record":
        pools = [ix.records[str(path[1])].members] if str(path[1]) in ix.records else []
    elif len(path) == 3 and path[0] in ("functions", "procedures") and path[2] == "params":
        pools = [ix.globals[str(path[1])].members] if str(path[1]) in ix.globals else []
    elif len(path) == 3 and path[0] == "actions" and path[2] == "params":
        pools = [ix.actions[str(path[1])].members] if str(path[1]) in ix.actions else []
    for pool in pools:
        d = pool.get(name)
        if d is not None and d.span == key.span:
            return d
    return None


def _scalar_at(ix: Index, line: int, col: int) -> YScalar | None:
    from envc.load import YMap, YSeq

    stack = [ix.root] if ix.root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, YScalar):
            s = node.span
            if (s.line, s.col) <= (line, col) < (s.end_line, s.end_col):
                return node
        elif isinstance(node, YMap):
            stack.extend(v for _, v in node.items)
        elif isinstance(node, YSeq):
            stack.extend(node.items)
    return None


# ---- hover ------------------------------------------------------------------


def hover(o: Outline, line: int, col: int) -> tuple[str, tuple[int, int, int]] | None:
    """Markdown for the name at 0-based line:col, and its range (line, start col, end col)."""
    decl, where = _resolve(o, line, col)
    if decl is None or where is None:
        return None
    text = f"```\n{decl.signature}\n```"
    if decl.doc:
        text += f"\n\n{decl.doc}"
    return text, (line, where[0], where[1])


# ---- go to definition -------------------------------------------------------


def definition(o: Outline, line: int, col: int) -> Target | None:
    """Where the name at 0-based line:col is declared."""
    decl, _ = _resolve(o, line, col)
    if decl is not None:
        return Target(span=decl.span) if decl.span is not None else None
    if o.ok and 0 <= line < len(o.lines):
        node = _scalar_at(o.index, line + 1, col + 1)
        if node is not None and isinstance(node.value, str) and _is_file_value(o, node):
            target = (Path(o.path).parent / node.value).resolve()
            return Target(file=str(target)) if target.is_file() else None
    return None


def _is_file_value(o: Outline, node: YScalar) -> bool:
    from envc.load import YMap

    for section in ("tables", "constants"):
        sec = o.index.root.get(section) if isinstance(o.index.root, YMap) else None
        if isinstance(sec, YMap):
            for _, decl in sec.items:
                if isinstance(decl, YMap) and decl.get("file") is node:
                    return True
    return False


# ---- completion -------------------------------------------------------------

_KIND = {
    "param": "constant",
    "const": "constant",
    "enum": "enum",
    "record": "struct",
    "table": "struct",
    "state": "field",
    "zone": "field",
    "obs": "field",
    "function": "function",
    "procedure": "function",
    "member": "member",
    "column": "field",
    "field": "field",
    "local": "variable",
    "builtin": "function",
}


def _item(d: Decl) -> Item:
    return Item(d.name, _KIND.get(d.kind, "variable"), d.signature, d.doc)


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return spec_schema()


def _schema_keys(path: list[str | int]) -> dict[str, str]:
    """Keys (and their descriptions) of the mapping at `path` in a spec, from the JSON Schema."""
    root = _schema()
    defs = root.get("$defs", {})

    def expand(node: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        todo = [node]
        while todo:
            n = todo.pop()
            if "$ref" in n:
                todo.append(defs.get(n["$ref"].rsplit("/", 1)[-1], {}))
            for key in ("anyOf", "oneOf"):
                todo.extend(n.get(key, []))
            out.append(n)
        return out

    nodes = expand(root)
    for step in path:
        nxt: list[dict[str, Any]] = []
        for n in nodes:
            if isinstance(step, int):
                if isinstance(n.get("items"), dict):
                    nxt += expand(n["items"])
            elif step in n.get("properties", {}):
                nxt += expand(n["properties"][step])
            elif isinstance(n.get("additionalProperties"), dict):
                nxt += expand(n["additionalProperties"])
        nodes = nxt
    keys: dict[str, str] = {}
    for n in nodes:
        for k, v in n.get("properties", {}).items():
            keys.setdefault(k, str(v.get("description", "")))
    return keys


_KEY_LINE = re.compile(r"(-[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*:(?:[ \t]|$)")


def key_path(lines: list[str], line: int, indent: int, dash: int | None = None) -> list[str | int] | None:
    """The mapping path of a key typed at column `indent` of 0-based `line` (`dash`: the column of a `- ` before
    it on that line), read from the indentation of the lines above, so it works while the YAML is broken; None
    where it cannot be told."""
    path: list[str | int] = [] if dash is None else [0]
    target = indent if dash is None else dash
    after_list = dash is not None  # the parent of a list is at the list's own indentation or left of it
    for raw in reversed(lines[:line]):
        if target == 0 and not after_list:
            break
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        i0 = len(raw) - len(raw.lstrip(" "))
        m = _KEY_LINE.match(s)
        dash = s.startswith("-")
        if dash:
            key_col = i0 + (len(m.group(1)) if m and m.group(1) else len(s) - len(s[1:].lstrip()))
            if key_col < target and m is not None:
                path[:0] = [0, m.group(2)]
            elif key_col == target or (key_col > target and i0 < target):
                path[:0] = [0]
            else:
                continue
            target, after_list = i0, True
            continue
        if i0 < target or (after_list and i0 <= target):
            if m is None:
                return None
            path.insert(0, m.group(2))
            target, after_list = i0, False
    return path if target == 0 else None


def _sibling_keys(lines: list[str], line: int, indent: int) -> set[str]:
    """Keys already in the block mapping that 0-based `line` is part of (the lines around it at `indent`)."""
    out: set[str] = set()
    for step in (-1, 1):
        j = line + step
        while 0 <= j < len(lines):
            raw = lines[j]
            s = raw.strip()
            j += step
            if not s or s.startswith("#"):
                continue
            i0 = len(raw) - len(raw.lstrip(" "))
            if i0 < indent:
                break
            m = _KEY_LINE.match(s)
            if i0 == indent and m is not None and not m.group(1):
                out.add(m.group(2))
    return out


_VALUE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[ \t]*:[ \t]")
_TYPE_VALUE = re.compile(r"\b(type|zone|returns)[ \t]*:[ \t]*[A-Za-z0-9_]*$")
_SIZE_VALUE = re.compile(r"\b(shape|capacity|range)[ \t]*:[ \t]*(\[[^\]#]*)?[A-Za-z0-9_]*$")
DTYPES = ("bool", "i8", "i16", "i32", "u32", "f32", "f64")


def _yaml_items(o: Outline, line: int, before: str) -> list[Item]:
    """Completion outside rule code: keys of the mapping being typed, type names, static sizes."""
    m = re.fullmatch(r"([ ]*)(-[ ]+)?[A-Za-z_]*", before)
    if m is not None:
        indent = len(m.group(1)) + (len(m.group(2)) if m.group(2) else 0)
        path = key_path(o.lines, line, indent, len(m.group(1)) if m.group(2) else None)
        if path is None:
            return []
        keys = _schema_keys(path)
        present = _sibling_keys(o.lines, line, indent) - {before.strip(" -")}
        kind = "module" if not path else "property"
        return [Item(k, kind, "section" if not path else "key", doc) for k, doc in keys.items() if k not in present]
    ix = o.index
    if _SIZE_VALUE.search(before):
        static = [d for d in ix.globals.values() if d.kind == "const" and "[" not in d.signature.split("=")[0]]
        static += [d for d in ix.globals.values() if d.kind == "param" and d.signature.endswith("(static)")]
        return [_item(d) for d in static]
    if _TYPE_VALUE.search(before):
        items = [Item(t, "keyword", "scalar type") for t in DTYPES]
        items += [_item(d) for d in ix.globals.values() if d.kind == "enum"]
        items += [_item(d) for d in ix.records.values()]
        return items
    return []


def complete(o: Outline, line: int, col: int) -> list[Item]:
    """Completion candidates at 0-based line:col."""
    if not 0 <= line < len(o.lines):
        return []
    text = o.lines[line]
    before = text[:col]
    cur = _cursor(o, line, col)
    if cur.site is None:
        items = _yaml_items(o, line, before)
        if o.ok or items or not (before.startswith((" ", "\t")) or _VALUE.match(before)):
            return items
        # the YAML does not compose (half-typed): an indented line or a value is taken for code, with the last
        # index that composed
    m = re.search(r"\.([A-Za-z_][A-Za-z0-9_]*)?$", before)
    if m is not None:
        chain = chain_before(before, m.start())
        if chain is None:
            return []
        base = _lookup(o, cur, chain.root)
        return [_item(d) for d in _members(o, base, chain).values()]
    if re.search(r"[0-9]$", before) and not re.search(r"[A-Za-z_][A-Za-z0-9_]*$", before):
        return []  # a number
    pure = cur.site.pure if cur.site is not None else False
    body = cur.site.mode != "expr" if cur.site is not None else True
    out: dict[str, Item] = {}
    for d in _locals(o, cur).values():
        out.setdefault(d.name, _item(d))
    for d in _globals(o, cur.site).values():
        if d.kind == "procedure" and (pure or not body):
            continue
        out.setdefault(d.name, _item(d))
    for name, (sig, doc) in SPECIAL.items():
        out.setdefault(name, Item(name, "field" if name != "num_players" else "constant", sig, doc))
    for name, (sig, doc) in CONSTANTS.items():
        out.setdefault(name, Item(name, "constant", sig, doc))
    for name, b in BUILTINS.items():
        if pure and not b.pure:
            continue
        out.setdefault(name, Item(name, "function", b.signature, b.doc))
    words = sorted(KEYWORDS) if body else ["and", "or", "not", "if", "then", "else", "for", "in", "true", "false"]
    for kw in words:
        out.setdefault(kw, Item(kw, "keyword"))
    return list(out.values())
