"""Checking of the `render` section: its expressions are typed like any other pure expression of the state."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from envc import document as d
from envc import ir
from envc.check.body import Bail, BodyChecker, plain_number
from envc.check.symbols import Context, LocalVar
from envc.ir import BOOL, F32, I32
from envc.load import YScalar, node_at
from envc.parse import Snippet, parse_expr

if TYPE_CHECKING:
    from envc.check import Checker

Path = tuple[object, ...]

# CSS's basic colors and a few more; other colors are written "#rrggbb"
COLORS: dict[str, tuple[int, int, int]] = {
    "black": (0, 0, 0),
    "white": (255, 255, 255),
    "gray": (128, 128, 128),
    "grey": (128, 128, 128),
    "lightgray": (211, 211, 211),
    "darkgray": (169, 169, 169),
    "red": (255, 0, 0),
    "darkred": (139, 0, 0),
    "green": (0, 128, 0),
    "lime": (0, 255, 0),
    "blue": (0, 0, 255),
    "navy": (0, 0, 128),
    "yellow": (255, 255, 0),
    "orange": (255, 165, 0),
    "purple": (128, 0, 128),
    "brown": (139, 69, 19),
    "tan": (202, 152, 101),
    "cyan": (0, 255, 255),
    "magenta": (255, 0, 255),
    "teal": (0, 128, 128),
    "olive": (128, 128, 0),
    "silver": (192, 192, 192),
}
_FIELD = re.compile(r"\{([^{}]*)\}")
_FORMAT = re.compile(r"[<>^]?[+\- ]?\d*(\.\d+)?[dfegs%]?")


def parse_color(text: str) -> tuple[int, int, int] | None:
    """(r, g, b) of a color name or `#rgb` / `#rrggbb`; None if it is neither."""
    t = text.strip().lower()
    if t in COLORS:
        return COLORS[t]
    if re.fullmatch(r"#[0-9a-f]{6}", t):
        return int(t[1:3], 16), int(t[3:5], 16), int(t[5:7], 16)
    if re.fullmatch(r"#[0-9a-f]{3}", t):
        return int(t[1] * 2, 16), int(t[2] * 2, 16), int(t[3] * 2, 16)
    return None


class RenderChecker:
    """Types the render section's expressions and builds its IR."""

    def __init__(self, ck: Checker, decl: d.RenderDecl):
        self.ck = ck
        self.decl = decl

    def typed(
        self, keys: Path, value: object, locals_: dict[str, LocalVar], what: str, snip: Snippet | None = None
    ) -> ir.Expr | None:
        """A scalar expression (any type) at `keys`, or the sub-snippet `snip` of it; None after an error."""
        span = self.ck.at(*keys)
        if isinstance(value, bool):
            return ir.Lit(value=value, ty=BOOL, span=span)
        if plain_number(value):
            return ir.Lit(value=float(value), ty=F32, span=span)
        if snip is None:
            snip = self.ck.snippet(keys)
            if snip is None:
                return None
        tree = parse_expr(snip, self.ck.diags)
        if tree is None:
            return None
        bc = BodyChecker(self.ck.env, Context(where=what, pure=True), locals_)
        try:
            return bc.scalar(tree, what)
        except Bail:
            return None

    def coerced(self, keys: Path, value: object, locals_: dict[str, LocalVar], want: ir.Ty, what: str) -> ir.Expr:
        """An expression converted to `want` (f32 coordinates, bool conditions)."""
        return self.ck.expr_at(keys, value, Context(where=what, pure=True), locals_, want)

    def color(self, keys: Path, text: str) -> tuple[int, int, int]:
        rgb = parse_color(text)
        if rgb is None:
            names = ", ".join(sorted(COLORS))
            self.ck.diags.error(self.ck.at(*keys), "E012", f"unknown color '{text}'; write #rrggbb or one of {names}")
            return (0, 0, 0)
        return rgb

    def line(
        self, keys: Path, text: str, names: dict[str, list[str]]
    ) -> tuple[tuple[str, ...], tuple[ir.RenderField, ...]]:
        """Split a format string into texts and typed `{EXPR}` fields, located inside the YAML scalar."""
        node = node_at(self.ck.root, keys)
        full = Snippet.of(node) if isinstance(node, YScalar) else None
        texts: list[str] = []
        fields: list[ir.RenderField] = []
        at = 0
        for m in _FIELD.finditer(text):
            texts.append(text[at : m.start()].replace("{{", "{").replace("}}", "}"))
            at = m.end()
            body, start = m.group(1), m.start(1)
            fmt, label = "", ""
            if "!" in body and re.fullmatch(r"[A-Za-z_]\w*", body.rsplit("!", 1)[1].strip()):
                body, label = body.rsplit("!", 1)[0], body.rsplit("!", 1)[1].strip()
            elif ":" in body and _FORMAT.fullmatch(body.rsplit(":", 1)[1].strip()):
                body, fmt = body.rsplit(":", 1)[0], body.rsplit(":", 1)[1].strip()
            sub = None
            if full is not None and "\n" not in text:
                where = tuple(full.pos(1, start + 1 + j) for j in range(len(body) + 1))
                sub = Snippet(body, full.path, where[0][0], where[0][1], 0, False, where=where)
            x = self.typed(keys, body, {}, "render line", sub) if sub is not None else None
            if label and label not in names:
                self.ck.diags.error(self.ck.at(*keys), "E030", f"unknown render names list '{label}'")
            if x is not None:
                fields.append(ir.RenderField(expr=x, fmt=fmt, names=tuple(names.get(label, ()))))
            else:
                fields.append(ir.RenderField(expr=ir.Lit(value=0, ty=I32, span=self.ck.at(*keys))))
        texts.append(text[at:].replace("{{", "{").replace("}}", "}"))
        return tuple(texts), tuple(fields)

    def text(self, info: dict[str, object]) -> None:
        t = self.decl.text
        if t is None:
            return
        base: Path = ("render", "text")
        if t.grid is not None:
            g = t.grid
            rows = self.ck.dim(g.rows, base + ("grid", "rows"))
            cols = self.ck.dim(g.cols, base + ("grid", "cols"))
            if rows is not None and cols is not None:
                info["grid"] = (rows, cols)
                locs = {"r": LocalVar(I32, False, (0, rows)), "c": LocalVar(I32, False, (0, cols))}
                cell = self.typed(base + ("grid", "cell"), g.cell, locs, "render grid cell")
                if cell is not None and (cell.ty.dtype.is_float):
                    self.ck.diags.error(
                        self.ck.at(*base, "grid", "cell"),
                        "E040",
                        f"a grid cell is an int, enum or bool, got {cell.ty.show()}",
                    )
                info["cell"] = cell
                members = self.ck.enum_members(cell.ty.enum) if cell is not None and cell.ty.enum else None
                symbols: list[tuple[int, str]] = []
                for k, v in g.symbols.items():
                    if re.fullmatch(r"-?\d+", k.strip()):
                        symbols.append((int(k), v))
                    elif members is not None and k in members:
                        symbols.append((members.index(k), v))
                    else:
                        what = f"a member of {cell.ty.enum}" if members is not None and cell is not None else "an int"
                        self.ck.diags.error(
                            self.ck.key_at(*base, "grid", "symbols", k), "E012", f"symbol key '{k}' is not {what}"
                        )
                info["symbols"] = tuple(symbols)
                info["sep"] = g.sep
        lines = []
        for i, item in enumerate(t.lines):
            decl = item if isinstance(item, d.TextLine) else d.TextLine(text=item)
            keys = base + ("lines", i) + (("text",) if isinstance(item, d.TextLine) else ())
            texts, fields = self.line(keys, decl.text, t.names)
            when_keys = base + ("lines", i, "when")
            when = (
                self.coerced(when_keys, decl.when, {}, BOOL, "render line `when`")
                if isinstance(item, d.TextLine) and decl.when is not True
                else ir.Lit(value=True, ty=BOOL, span=self.ck.at(*keys))
            )
            lines.append(ir.RenderLine(texts=texts, fields=fields, when=when))
        info["lines"] = tuple(lines)

    def shapes(self, info: dict[str, object]) -> None:
        s = self.decl.shapes
        if s is None:
            return
        base: Path = ("render", "shapes")
        info["canvas"] = (s.width, s.height)
        info["world"] = tuple(
            self.coerced(base + ("world", i), v, {}, F32, "render world") for i, v in enumerate(s.world)
        )
        info["background"] = self.color(base + ("background",), s.background)
        out = []
        tvar = {"t": LocalVar(F32, False)}
        for i, item in enumerate(s.items):
            keys = base + ("items", i)
            kinds = [k for k in ("line", "circle", "rect", "polygon", "curve") if getattr(item, k) is not None]
            if len(kinds) != 1:
                self.ck.diags.error(
                    self.ck.at(*keys), "E012", "a render item is exactly one of line, circle, rect, polygon, curve"
                )
                continue
            kind = kinds[0]
            sh = getattr(item, kind)
            k = keys + (kind,)
            locs = tvar if kind == "curve" else {}

            def f(sub: Path, v: object, locs: dict[str, LocalVar] = locs) -> ir.Expr:
                return self.coerced(k + sub, v, locs, F32, f"render {kind}")

            coords: list[ir.Expr]
            if isinstance(sh, d.LineShape):
                coords = [f(("start", j), v) for j, v in enumerate(sh.start)] + [
                    f(("end", j), v) for j, v in enumerate(sh.end)
                ]
            elif isinstance(sh, d.CircleShape):
                coords = [f(("center", j), v) for j, v in enumerate(sh.center)] + [f(("radius",), sh.radius)]
            elif isinstance(sh, d.RectShape):
                coords = [f(("center", j), v) for j, v in enumerate(sh.center)] + [
                    f(("size", j), v) for j, v in enumerate(sh.size)
                ]
            elif isinstance(sh, d.PolygonShape):
                coords = []
                for j, pt in enumerate(sh.points):
                    if len(pt) != 2:
                        self.ck.diags.error(self.ck.at(*k, "points", j), "E012", "a point is [x, y]")
                        continue
                    coords += [f(("points", j, 0), pt[0]), f(("points", j, 1), pt[1])]
            else:
                coords = [f(("x",), sh.x), f(("y",), sh.y)]
            width = f(("width",), sh.width) if isinstance(sh, (d.LineShape, d.CurveShape)) else None
            when = (
                self.coerced(keys + ("when",), item.when, {}, BOOL, "render item `when`")
                if item.when is not True
                else ir.Lit(value=True, ty=BOOL, span=self.ck.at(*keys))
            )
            out.append(
                ir.RenderShape(
                    shape=kind,
                    coords=tuple(coords),
                    width=width,
                    color=self.color(k + ("color",), sh.color),
                    samples=sh.samples if isinstance(sh, d.CurveShape) else 0,
                    when=when,
                )
            )
        info["shapes"] = tuple(out)


def check_render(ck: Checker) -> ir.RenderInfo | None:
    """The render section's IR (None when the spec declares none)."""
    decl = ck.doc.render
    if decl is None:
        return None
    if decl.text is None and decl.shapes is None:
        ck.diags.error(ck.key_at("render"), "E010", "a render section needs `text`, `shapes` or both")
        return None
    rc = RenderChecker(ck, decl)
    info: dict[str, object] = {}
    rc.text(info)
    rc.shapes(info)
    return ir.RenderInfo.model_validate(info)


__all__ = ["COLORS", "check_render", "parse_color"]
