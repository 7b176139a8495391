"""State-dependent visibility of state fields (`visible: EXPR`, `visible: {element: [...], when: EXPR}`).

A rule is a pure bool expression read in the current state, with `p` the observing player and the `element`
names bound to the leading indices of the field. It is checked like any other pure expression (E054 for side
effects, E040 for a non-bool, E030 with a did-you-mean for unknown names) and stored in the IR as
`FieldInfo.visible_rule`; only the no-leak check evaluates it (with the reference interpreter, envc.visibility).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from envc import ast, ir
from envc import document as d
from envc.check.body import Bail, BodyChecker
from envc.check.symbols import Context, LocalVar, StorageSym, name_problem
from envc.diagnostics import Diagnostics, did_you_mean
from envc.ir import BOOL, I32, DType
from envc.parse import Snippet, parse_body, parse_expr

if TYPE_CHECKING:
    from envc.check import Checker

LITERALS = ("all", "owner", "none")
Kind = Literal["all", "owner", "none", "rule"]


def visible_kind(v: object) -> Kind:
    """The IR `visible` of a declaration's `visible` value: a literal, or `rule` for an expression."""
    if v == "all":
        return "all"
    if v == "owner":
        return "owner"
    if v == "none":
        return "none"
    return "rule"


def element_dims(sym: StorageSym) -> tuple[int, ...]:
    """The dimensions `element` names may index: a zone's slots too, a record's outer dimensions only."""
    if sym.kind == "zone":
        return sym.outer + (sym.capacity,)
    if sym.kind == "record" or sym.ty is None:
        return sym.outer
    return sym.ty.shape


def check_visibility(c: Checker, fields: list[ir.FieldInfo]) -> list[ir.FieldInfo]:
    """Type every visibility rule of the state section; returns `fields` with their `visible_rule` set."""
    rules: dict[str, ir.VisibleRule] = {}
    for name, decl in c.doc.state.items():
        if isinstance(decl, str) or visible_kind(decl.visible) != "rule":
            continue
        sym = c.symbols.get(name)
        if not isinstance(sym, StorageSym) or sym.space != "state":
            continue  # the declaration had an error, already reported
        rule = _rule(c, name, decl.visible, sym)
        if rule is not None:
            rules[name] = rule
    out = []
    for f in fields:
        base = f.name if f.zone is not None else f.name.split(".")[0]
        if f.visible == "rule" and base in rules:
            f = f.model_copy(update={"visible_rule": rules[base]})
        out.append(f)
    return out


def _rule(c: Checker, name: str, v: str | d.VisibleDecl, sym: StorageSym) -> ir.VisibleRule | None:
    keys: tuple[object, ...] = ("state", name, "visible")
    dims = element_dims(sym)
    if isinstance(v, d.VisibleDecl):
        element, when, wkeys = v.element, v.when, keys + ("when",)
    else:
        element, when, wkeys = [], v, keys
    if len(element) > len(dims):
        c.diags.error(
            c.at(*keys, "element"),
            "E012",
            f"`element` names {len(element)} indices, but '{name}' has {len(dims)} dimension(s) {list(dims)}",
        )
        return None
    locals_ = {"p": LocalVar(I32, False, (0, c.doc.players))}
    ok = True
    for i, en in enumerate(element):
        at = c.at(*keys, "element", i)
        problem = name_problem(en, "element index")
        if problem is not None:
            c.diags.error(at, "E013", problem)
            ok = False
        elif en in locals_ or en in c.symbols:
            c.diags.error(at, "E031", f"'{en}' is already defined; pick another name")
            ok = False
        else:
            locals_[en] = LocalVar(I32, False, (0, dims[i]))
    if not ok:
        return None
    where = f"the visibility of '{name}'"
    span = c.at(*wkeys)
    if isinstance(when, bool):
        return ir.VisibleRule(
            element=tuple(element), when=ir.Lit(value=when, ty=BOOL, span=span), text=str(when).lower(), span=span
        )
    snip = c.snippet(wkeys)
    if snip is None:
        return None
    tree = _parse(c, snip, where)
    if tree is None:
        return None
    if isinstance(tree, ast.Name) and tree.id not in locals_ and tree.id not in c.symbols:
        if tree.id in c.env.broken:
            return None
        # `visible: self`, `visible: owners`: most likely a misspelt literal, not a rule
        bools = [n for n, s in c.symbols.items() if isinstance(s, StorageSym) and s.ty is not None and s.ty == BOOL]
        hint = did_you_mean(tree.id, [*LITERALS, *bools, *locals_])
        c.diags.error(
            tree.span,
            "E012",
            f"`visible` is `all`, `owner`, `none` or a bool expression; '{tree.id}' is not a known name{hint}",
        )
        return None
    bc = BodyChecker(c.env, Context(where=where, pure=True), locals_)
    try:
        x = bc.scalar(tree, "visibility rule")
    except Bail:
        return None
    if x.ty.dtype is not DType.BOOL or x.ty.enum is not None:
        c.diags.error(tree.span, "E040", f"{where} must be a bool expression, got {x.ty.show()}")
        return None
    return ir.VisibleRule(element=tuple(element), when=x, text=" ".join(snip.text.split()), span=span)


def _parse(c: Checker, snip: Snippet, where: str) -> ast.Expr | None:
    """The rule's expression; a statement (`shown[i] = true`) is E054: a rule reads the state, never writes it."""
    as_expr = Diagnostics()
    tree = parse_expr(snip, as_expr)
    if tree is not None:
        return tree
    stmts = parse_body(snip, Diagnostics())
    write = next((s for s in stmts or () if isinstance(s, ast.Assign)), None)
    if write is not None:
        c.diags.error(
            write.span,
            "E054",
            f"state cannot be changed in {where}; write a bool expression (compare with `==`)",
        )
        return None
    c.diags.items.extend(as_expr.items)
    return None


__all__ = ["check_visibility", "element_dims", "visible_kind"]
