"""What one request shows of the spec: the item's own element and what it calls in full, every other procedure
and function as its signature (name, params, returns, doc), long dispatch bodies as a one-line note, table rows
left out (the tables block carries the rows of the tables an item reads).

The model still sees every name it may call; it does not see bodies it does not need.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from typing import Any

from .items import WHOLE, Item, pending_names

CALLABLE = ("procedures", "functions")
LONG = 3000  # characters: a body longer than this is shown as a note unless it is the item's own
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_WORD = re.compile(r"[A-Za-z_]\w*")
_MATCH = re.compile(r"^\s*match\s+(.+?):\s*$", re.M)
_ARM = re.compile(r"^\s*case\s+", re.M)


def strings(value: Any) -> Iterator[str]:
    """Every string inside a spec value (code bodies, expressions, docs)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def _code(decl: Any) -> str:
    """The code of a declaration: its strings except the doc."""
    if isinstance(decl, dict):
        return "\n".join(s for k, v in decl.items() if k != "doc" for s in strings(v))
    return "\n".join(strings(decl))


def callables(spec: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every procedure and function: name -> (section, declaration)."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for section in CALLABLE:
        for name, decl in (spec.get(section) or {}).items():
            if isinstance(decl, dict):
                out[str(name)] = (section, decl)
    return out


def own_code(item: Item, spec: dict[str, Any], pending: list[Item]) -> str:
    """The code the item writes: its element, or for the module item everything that is no other item's stub
    (and no procedure or function; those count through their callers)."""
    if item.kind != "module":
        section = item.target.split(".")[0]
        if section == "rules":
            return "\n".join(_code(r) for r in spec.get("rules") or [] if isinstance(r, dict)
                             and r.get("name") == item.element)  # fmt: skip
        return _code((spec.get(section) or {}).get(item.element))
    stubs = pending_names([p for p in pending if p.name != item.name])
    parts = [_code(spec.get(k)) for k in (*WHOLE, "invariants") if k != "doc" and k in spec]
    parts += [_code(d) for n, d in (spec.get("actions") or {}).items() if n not in stubs["actions"]]
    parts += [_code(r) for r in spec.get("rules") or [] if isinstance(r, dict) and r.get("name") not in stubs["rules"]]
    return "\n".join(parts)


def called(code: str, spec: dict[str, Any]) -> set[str]:
    """The procedures and functions `code` calls, directly or through others."""
    decls = callables(spec)
    seen: set[str] = set()
    todo = [n for n in _CALL.findall(code) if n in decls]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo += [m for m in _CALL.findall(_code(decls[n][1])) if m in decls and m not in seen]
    return seen


def stub_doc(name: str) -> str:
    """The doc `envc scrape` gives an item's stub; a signature view leaves it out (it says nothing more)."""
    return f"placeholder until the todo item '{name}' is formalized"


def dispatch_note(name: str, body: str, decls: dict[str, Any], mine: str = "") -> str:
    """One line in place of a long body: that it exists, its size, what it dispatches on and what it calls."""
    lines = body.count("\n") + 1
    subjects = list(dict.fromkeys(m.strip() for m in _MATCH.findall(body)))
    calls = sorted({c for c in _CALL.findall(body) if c in decls and c != name})
    what = [f"{lines:,} lines"]
    if subjects:
        shown = ", ".join(subjects[:4]) + (f", ... ({len(subjects)} in all)" if len(subjects) > 4 else "")
        what.append(f"a `match` over {shown} with {len(_ARM.findall(body)):,} cases")
    if calls:
        more = ", ..." if len(calls) > 3 else ""
        what.append(f"calls {len(calls)} procedures/functions ({', '.join(calls[:3])}{more})")
    if mine:
        uses = [ln.strip() for ln in body.splitlines() if re.search(rf"\b{re.escape(mine)}\s*\(", ln)]
        if uses:
            what.append(f"calls `{mine}` as `{uses[0]}`" + (f" ({len(uses)} places)" if len(uses) > 1 else ""))
    return f"<body not shown: {'; '.join(what)}>"


def spec_view(
    spec: dict[str, Any], item: Item | None, pending: list[Item], where: str, read: Collection[str] = ()
) -> dict[str, Any]:
    """The spec as one request shows it (`item` None: the outline, which writes no code yet).

    Table rows are replaced by a note: "in the tables block" for the tables in `read`, `where` for the others.
    """
    out = {k: v for k, v in spec.items() if k != "todo"}
    decls = callables(spec)
    element = item.element if item is not None and item.kind in ("procedure", "function") else ""
    full = called(own_code(item, spec, pending), spec) if item is not None else set()
    if element:
        full.add(element)
    for section in CALLABLE:
        if not isinstance(spec.get(section), dict):
            continue
        shown: dict[str, Any] = {}
        for name, decl in spec[section].items():
            if not isinstance(decl, dict):
                shown[name] = decl
                continue
            body = decl.get("body")
            long = isinstance(body, str) and len(body) > LONG
            if name in full and (name == element or not long):
                shown[name] = decl
                continue
            sig = {k: decl[k] for k in ("doc", "params", "returns") if k in decl and decl[k] != stub_doc(str(name))}
            if long and isinstance(body, str):
                sig["body"] = dispatch_note(str(name), body, decls, element)
            shown[name] = sig
        out[section] = shown
    tables = {}
    for name, t in (spec.get("tables") or {}).items():
        if isinstance(t, dict) and isinstance(t.get("rows"), list):
            t = {**t, "rows": f"<{len(t['rows'])} rows, {'in the tables block' if name in read else where}>"}
        tables[name] = t
    if tables:
        out["tables"] = tables
    return out


def reads(item: Item, spec: dict[str, Any], pending: list[Item], text: str) -> list[str]:
    """The tables whose rows the item needs: all of them for the module, action and rule items (the game's moves
    and rules play with the card data); for a procedure or function, those its code (or the code it calls)
    names, and those its rule text points to (`[table NAME: ...]`, `tables.NAME`)."""
    tables = [n for n, t in (spec.get("tables") or {}).items() if isinstance(t, dict)]
    if item.kind in ("module", "action", "rule"):
        return tables
    decls = callables(spec)
    code = own_code(item, spec, pending)
    code += "\n".join(_code(decls[n][1]) for n in called(code, spec))
    words = set(_WORD.findall(code))
    return [n for n in tables if n in words or f"[table {n}" in text or f"tables.{n}" in text]
