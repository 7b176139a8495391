"""Single-point mutation operators on generated Python (the JAX package's `env.py`), over its `ast`.

A `Site` names one node (its position in `ast.walk` order, stable for a deep copy of the same tree) and one
operator; `apply` makes the change in place on a copy. The operators are those of issue #20: arithmetic swap
(+ -, * /), comparison flip (< <=, > >=, == !=), and/or swap, `jnp.where` branch swap, integer constant +1,
dropped negation / `not`, dropped statement (a write replaced by the value before it), dropped branch (a
`jnp.where` that always takes one arm) and swapped array indices.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass

from envc.mutate import oob

ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
BITS = {ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd}
LOGIC_CALLS = {"logical_and": "logical_or", "logical_or": "logical_and"}
SYMBOL = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
    ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.BitAnd: "&", ast.BitOr: "|", ast.And: "and", ast.Or: "or",
}  # fmt: skip
_SSA = re.compile(r"^(.*)_(\d+)$")


@dataclass(frozen=True)
class Site:
    """One mutation: operator `op` at node `index` (in `ast.walk` order) of the module."""

    index: int
    op: str
    line: int
    col: int
    function: str
    before: str
    after: str
    replacement: str = ""  # for dropped statements: the name whose value is kept
    equivalent: str = ""  # why the change cannot alter behaviour, when that is known from the code alone

    def describe(self) -> str:
        """`before -> after`, short."""
        return f"{self.before} -> {self.after}"


def call_name(node: ast.AST) -> str | None:
    """`logical_and` for `jnp.logical_and(...)`, `where` for `jnp.where(...)`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        base = node.func.value
        if isinstance(base, ast.Name) and base.id == "jnp":
            return node.func.attr
    return None


def _short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _skip(node: ast.AST) -> bool:
    """Parts of the module that are not code to mutate: imports, docstrings, string constants."""
    return isinstance(node, (ast.Import, ast.ImportFrom))


def functions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(qualified name, node) of every top-level statement, functions and class members by name."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield stmt.name, stmt
        elif isinstance(stmt, ast.ClassDef):
            for m in stmt.body:
                name = m.name if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) else "<body>"
                yield f"{stmt.name}.{name}", m
        elif not _skip(stmt):
            yield "<module>", stmt


def _bound_before(fn: ast.AST) -> dict[int, set[str]]:
    """For each assignment statement (by id) of a function, the plain names bound before it in that function."""
    out: dict[int, set[str]] = {}
    seen: set[str] = set()
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        seen |= {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    stmts = [n for n in ast.walk(fn) if isinstance(n, ast.stmt)]
    for s in sorted(stmts, key=lambda n: (n.lineno, n.col_offset)):
        if isinstance(s, ast.Assign):
            out[id(s)] = set(seen)
            for t in s.targets:
                seen |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(s, (ast.FunctionDef, ast.For)) and s is not fn:
            seen |= {n.id for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return out


def _annotations(tree: ast.Module) -> set[int]:
    """Ids of the nodes inside type annotations (never evaluated: `from __future__ import annotations`)."""
    roots: list[ast.AST] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.arg) and n.annotation is not None:
            roots.append(n.annotation)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            roots.append(n.returns)
        elif isinstance(n, ast.AnnAssign):
            roots.append(n.annotation)
    return {id(x) for r in roots for x in ast.walk(r)}


def sites(tree: ast.Module, shapes: dict[str, tuple[int, ...]]) -> list[Site]:
    """Every mutation site of `tree`; `shapes` maps the State fields' Python names to their shapes (a first
    write falls back to `state.NAME`; with them JAX's out-of-range rules prove some index mutants equivalent)."""
    fields = set(shapes)
    order = {id(n): i for i, n in enumerate(ast.walk(tree))}
    types = _annotations(tree)
    clamped = oob.same_elements(tree, shapes)
    out: list[Site] = []

    def add(node: ast.AST, op: str, fn: str, before: str, after: str, replacement: str = "") -> None:
        same = clamped.get(id(node), "") if op in ("constant", "arith") else ""
        out.append(
            Site(order[id(node)], op, getattr(node, "lineno", 0), getattr(node, "col_offset", 0), fn, before, after,
                 replacement, same)
        )  # fmt: skip

    for fn, top in functions(tree):
        bound = _bound_before(top)
        for node in ast.walk(top):
            if id(node) in types:
                continue
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # docstrings
            if isinstance(node, ast.BinOp):
                if type(node.op) in ARITH:
                    new = ARITH[type(node.op)]
                    add(node, "arith", fn, SYMBOL[type(node.op)], SYMBOL[new])
                elif type(node.op) in BITS:
                    add(node, "and_or", fn, SYMBOL[type(node.op)], SYMBOL[BITS[type(node.op)]])
            elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE:
                add(node, "compare", fn, SYMBOL[type(node.ops[0])], SYMBOL[COMPARE[type(node.ops[0])]])
            elif isinstance(node, ast.BoolOp):
                add(node, "and_or", fn, SYMBOL[type(node.op)], "or" if isinstance(node.op, ast.And) else "and")
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not, ast.Invert)):
                if not isinstance(node.operand, ast.Constant) or isinstance(node.op, ast.Not):
                    add(node, "negation", fn, _short(node), _short(node.operand))
                elif isinstance(node.operand.value, (int, float)) and node.operand.value != 0:
                    add(node, "negation", fn, _short(node), _short(node.operand))
            elif isinstance(node, ast.Constant) and type(node.value) is int:
                add(node, "constant", fn, repr(node.value), repr(node.value + 1))
            elif isinstance(node, ast.Call):
                name = call_name(node)
                if name in LOGIC_CALLS:
                    add(node, "and_or", fn, f"jnp.{name}", f"jnp.{LOGIC_CALLS[name]}")
                elif name == "logical_not" and len(node.args) == 1:
                    add(node, "negation", fn, _short(node), _short(node.args[0]))
                elif name == "where" and len(node.args) == 3 and not node.keywords:
                    a, b = (ast.unparse(x) for x in node.args[1:])
                    if a != b:
                        add(node, "where_swap", fn, f"where(c, {_short(node.args[1], 25)}, ...)", "arms swapped")
                        add(node, "branch_drop", fn, _short(node), f"{_short(node.args[2])} (then-arm dropped)")
                        add(node, "branch_drop", fn, _short(node), f"{_short(node.args[1])} (else-arm dropped)")
            elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) >= 2:
                a, b = (ast.unparse(x) for x in node.slice.elts[:2])
                if a != b and not any(isinstance(e, ast.Slice) for e in node.slice.elts[:2]):
                    add(node, "index_swap", fn, f"[{a}, {b}]", f"[{b}, {a}]")
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and id(node) in bound:
                t = node.targets[0]
                if not isinstance(t, ast.Name):
                    continue
                before = bound[id(node)]
                m = _SSA.match(t.id)
                prev = f"{m.group(1)}_{int(m.group(2)) - 1}" if m else None
                if prev is not None and prev in before:
                    add(node, "stmt_drop", fn, _short(node), f"{t.id} = {prev}", prev)
                elif m and m.group(2) == "1" and m.group(1) in fields and "state" in before:
                    add(node, "stmt_drop", fn, _short(node), f"{t.id} = state.{m.group(1)}", f"state.{m.group(1)}")
                elif t.id in before:
                    add(node, "stmt_drop", fn, _short(node), f"(statement `{_short(node, 40)}` dropped)", t.id)
    return out


def apply(tree: ast.Module, site: Site) -> ast.Module:
    """A copy of `tree` with `site`'s mutation made."""
    new = copy.deepcopy(tree)
    nodes = list(ast.walk(new))
    node = nodes[site.index]
    parents = {id(c): p for p in nodes for c in ast.iter_child_nodes(p)}
    if site.op == "arith" and isinstance(node, ast.BinOp):
        node.op = ARITH[type(node.op)]()
    elif site.op == "and_or" and isinstance(node, ast.BinOp):
        node.op = BITS[type(node.op)]()
    elif site.op == "and_or" and isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif site.op == "and_or" and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node.func.attr = LOGIC_CALLS[node.func.attr]
    elif site.op == "compare" and isinstance(node, ast.Compare):
        node.ops = [COMPARE[type(node.ops[0])]()]
    elif site.op == "constant" and isinstance(node, ast.Constant) and type(node.value) is int:
        node.value = int(node.value) + 1
    elif site.op == "negation":
        inner = node.operand if isinstance(node, ast.UnaryOp) else node.args[0]  # type: ignore[attr-defined]
        _replace(parents[id(node)], node, inner)
    elif site.op == "where_swap" and isinstance(node, ast.Call):
        node.args[1], node.args[2] = node.args[2], node.args[1]
    elif site.op == "branch_drop" and isinstance(node, ast.Call):
        _replace(parents[id(node)], node, node.args[1] if "else-arm" in site.after else node.args[2])
    elif site.op == "index_swap" and isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
        e = node.slice.elts
        e[0], e[1] = e[1], e[0]
    elif site.op == "stmt_drop" and isinstance(node, ast.Assign):
        target = node.targets[0]
        assert isinstance(target, ast.Name)
        if site.replacement == target.id:
            _replace(parents[id(node)], node, ast.Pass())
        else:
            node.value = ast.parse(site.replacement, mode="eval").body
    else:
        raise ValueError(f"site {site} does not fit its node {ast.dump(node)[:80]}")
    return ast.fix_missing_locations(new)


def _replace(parent: ast.AST, old: ast.AST, new: ast.AST) -> None:
    """Put `new` where `old` is among `parent`'s fields (a location copied so line numbers stay)."""
    ast.copy_location(new, old)
    for name, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, name, new)
            return
        if isinstance(value, list):
            for i, v in enumerate(value):
                if v is old:
                    value[i] = new
                    return
    raise ValueError("node not found under its parent")
