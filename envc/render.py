"""Drawing a state from the spec's `render` section: text (boards, cards) and RGB images (shapes, or the text).

The render reads only `state_to_dict` arrays, which every backend gives alike, and evaluates the section's
expressions with the reference interpreter, so a state draws the same on every backend by construction.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from envc import ir
from envc.interpret import Compiler, Fn, Frame, _typed, wrapper
from envc.ir import DType, SpecIR

FONT_W, FONT_H = 6, 11  # Pillow's default bitmap font: cell size of the text drawn into images


class RenderError(ValueError):
    """The spec declares no render, or the state dict does not fit the spec."""


def _label(value: Any, ty: ir.Ty, fmt: str, names: tuple[str, ...], enums: Mapping[str, tuple[str, ...]]) -> str:
    if names and not isinstance(value, float) and 0 <= int(value) < len(names):
        return names[int(value)]
    if ty.enum is not None and 0 <= int(value) < len(enums[ty.enum]):
        return enums[ty.enum][int(value)]
    if ty.dtype is DType.BOOL:
        return "true" if value else "false"
    if fmt:
        return format(value, fmt)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


class Renderer:
    """`text(state_dict) -> str` and `rgb(state_dict) -> uint8 [H, W, 3]` for a spec with a `render` section."""

    def __init__(self, spec: SpecIR, params: Mapping[str, Any] | None = None):
        if spec.render is None:
            raise RenderError(f"spec '{spec.name}' declares no `render` section")
        self.spec = spec
        self.info: ir.RenderInfo = spec.render
        self.params = {p.name: _typed(p.ty, p.default) for p in spec.params if not p.static}
        for k, v in (params or {}).items():
            if k in self.params:
                ty = next(p.ty for p in spec.params if p.name == k)
                self.params[k] = wrapper(ty.dtype)(v)
        self.enums = {e.name: e.members for e in spec.enums}
        c = Compiler(spec, strict=False)
        c.compile_callables()
        info = self.info
        self._cell = c.expr(info.cell) if info.cell is not None else None
        self._lines = [(ln, c.expr(ln.when), [c.expr(f.expr) for f in ln.fields]) for ln in info.lines]
        self._world = [c.expr(x) for x in info.world]
        self._shapes: list[tuple[ir.RenderShape, Fn, list[Fn], Fn | None]] = [
            (s, c.expr(s.when), [c.expr(x) for x in s.coords], c.expr(s.width) if s.width is not None else None)
            for s in info.shapes
        ]

    @property
    def has_shapes(self) -> bool:
        """Does the spec draw shapes (a control task) rather than only text?"""
        return self.info.canvas is not None

    def _frame(self, state: Mapping[str, Any]) -> Frame:
        data: dict[str, list[Any]] = {}
        for f in self.spec.fields:
            if f.name not in state:
                raise RenderError(f"state dict lacks field '{f.name}'")
            arr = np.asarray(state[f.name])
            if arr.shape != f.ty.shape:
                raise RenderError(f"field '{f.name}' has shape {arr.shape}, expected {f.ty.shape}")
            w = wrapper(f.ty.dtype)
            conv = float if f.ty.dtype.is_float else (bool if f.ty.dtype is DType.BOOL else int)
            data[f.name] = [w(conv(v)) for v in arr.reshape(-1).tolist()]
        return Frame(data, (0, 0), self.params)

    # ---- text --------------------------------------------------------------
    def text(self, state: Mapping[str, Any]) -> str:
        """The text render: the grid, then the lines whose `when` holds (shapes specs: the lines, else a summary)."""
        fr = self._frame(state)
        out: list[str] = []
        info = self.info
        if info.grid is not None and self._cell is not None and info.cell is not None:
            symbols = dict(info.symbols)
            rows, cols = info.grid
            cells: list[list[str]] = []
            for r in range(rows):
                row = []
                for c in range(cols):
                    fr.loc = {"r": r, "c": c}
                    v = self._cell(fr)
                    row.append(symbols.get(int(v), _label(v, info.cell.ty, "", (), self.enums)))
                cells.append(row)
            width = max(len(s) for row in cells for s in row)
            out += [info.sep.join(s.ljust(width) for s in row).rstrip() for row in cells]
        fr.loc = {}
        for ln, when, fns in self._lines:
            if not when(fr):
                continue
            parts = [ln.texts[0]]
            for f, fn, tail in zip(ln.fields, fns, ln.texts[1:]):
                parts += [_label(fn(fr), f.expr.ty, f.fmt, f.names, self.enums), tail]
            out.append("".join(parts))
        if not out:  # a shapes-only spec: its scalar fields
            for fi in self.spec.fields:
                if not fi.ty.shape:
                    out.append(f"{fi.name} = {_label(fr.st[fi.name][0], fi.ty, '', (), self.enums)}")
        return "\n".join(out)

    # ---- images ------------------------------------------------------------
    def rgb(self, state: Mapping[str, Any]) -> np.ndarray:
        """An RGB image (uint8, [height, width, 3]): the shapes, or the text drawn in a monospace font."""
        try:
            from PIL import Image, ImageDraw
        except ImportError as e:  # pragma: no cover - Pillow comes with matplotlib
            raise RenderError("rgb rendering needs Pillow: pip install pillow") from e
        if not self.has_shapes:
            lines = self.text(state).split("\n")
            scale = 3
            w = (max(len(s) for s in lines) * FONT_W + 8) * scale
            h = (len(lines) * FONT_H + 8) * scale
            small = Image.new("RGB", (w // scale, h // scale), (255, 255, 255))
            ImageDraw.Draw(small).multiline_text((4, 4), "\n".join(lines), fill=(0, 0, 0), spacing=0)
            return np.asarray(small.resize((w, h), Image.Resampling.NEAREST), dtype=np.uint8).copy()
        assert self.info.canvas is not None
        img = Image.new("RGB", self.info.canvas, self.info.background)
        draw = ImageDraw.Draw(img)
        for kind, pts, color, lw in self.primitives(state):
            if kind == "line":
                draw.line(pts, fill=color, width=lw)
            elif kind == "ellipse":
                draw.ellipse([pts[0], pts[1]], fill=color)
            else:
                draw.polygon(pts, fill=color)
        return np.asarray(img, dtype=np.uint8).copy()

    def primitives(
        self, state: Mapping[str, Any]
    ) -> list[tuple[str, list[tuple[float, float]], tuple[int, int, int], int]]:
        """The shapes in pixels, in drawing order: (line | ellipse | polygon, points, color, line width).

        A line or curve is a polyline; an ellipse its bounding box's two corners; rects are polygons. Shapes with a
        non-finite coordinate are left out."""
        fr = self._frame(state)
        assert self.info.canvas is not None
        W, H = self.info.canvas
        x0, x1, y0, y1 = (float(f(fr)) for f in self._world)
        sx = W / (x1 - x0) if x1 != x0 else 1.0
        sy = H / (y1 - y0) if y1 != y0 else 1.0

        def px(x: float, y: float) -> tuple[float, float]:
            return (x - x0) * sx, H - (y - y0) * sy

        out: list[tuple[str, list[tuple[float, float]], tuple[int, int, int], int]] = []
        for s, when, fns, width_fn in self._shapes:
            fr.loc = {}
            if not when(fr):
                continue
            lw = max(1, round(float(width_fn(fr)))) if width_fn is not None else 1
            if s.shape == "curve":
                pts = []
                for i in range(s.samples):
                    fr.loc = {"t": i / (s.samples - 1)}
                    pts.append(px(float(fns[0](fr)), float(fns[1](fr))))
                if all(math.isfinite(v) for p in pts for v in p):
                    out.append(("line", pts, s.color, lw))
                continue
            v = [float(f(fr)) for f in fns]
            if not all(math.isfinite(x) for x in v):
                continue
            if s.shape == "line":
                out.append(("line", [px(v[0], v[1]), px(v[2], v[3])], s.color, lw))
            elif s.shape == "circle":
                cx, cy = px(v[0], v[1])
                rx, ry = abs(v[2] * sx), abs(v[2] * sy)
                out.append(("ellipse", [(cx - rx, cy - ry), (cx + rx, cy + ry)], s.color, 0))
            elif s.shape == "rect":
                hw, hh = abs(v[2]) / 2, abs(v[3]) / 2
                corners = [
                    (v[0] - hw, v[1] - hh),
                    (v[0] + hw, v[1] - hh),
                    (v[0] + hw, v[1] + hh),
                    (v[0] - hw, v[1] + hh),
                ]
                out.append(("polygon", [px(x, y) for x, y in corners], s.color, 0))
            else:
                out.append(("polygon", [px(v[i], v[i + 1]) for i in range(0, len(v), 2)], s.color, 0))
        return out

    def svg(self, state: Mapping[str, Any], dark: bool = False, scale: float = 1.0) -> str:
        """An SVG drawing of the state: the shapes, or the text in a monospace font (pgx's `to_svg`)."""
        fg, bg = ("white", "black") if dark else ("black", "white")
        if not self.has_shapes:
            lines = self.text(state).split("\n")
            size = 16.0 * scale
            w, h = int(max(map(len, lines)) * size * 0.62) + 8, int(len(lines) * size * 1.25) + 8
            spans = "".join(f'<tspan x="4" dy="{size * 1.25:g}">{html.escape(t)}</tspan>' for t in lines)
            return (
                f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}">'
                f'<rect width="100%" height="100%" fill="{bg}"/><text font-family="monospace" font-size="{size:g}" '
                f'fill="{fg}" xml:space="preserve">{spans}</text></svg>'
            )
        assert self.info.canvas is not None
        W, H = self.info.canvas
        parts = [f'<rect width="100%" height="100%" fill="{_hex(self.info.background)}"/>']
        for kind, pts, color, lw in self.primitives(state):
            c = _hex(color)
            if kind == "ellipse":
                (a, b), (e, f) = pts
                parts.append(
                    f'<ellipse cx="{(a + e) / 2:.2f}" cy="{(b + f) / 2:.2f}" rx="{(e - a) / 2:.2f}" '
                    f'ry="{(f - b) / 2:.2f}" fill="{c}"/>'
                )
            else:
                xy = " ".join(f"{x:.2f},{y:.2f}" for x, y in pts)
                if kind == "line":
                    parts.append(f'<polyline points="{xy}" fill="none" stroke="{c}" stroke-width="{lw}"/>')
                else:
                    parts.append(f'<polygon points="{xy}" fill="{c}"/>')
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * scale:g}" height="{H * scale:g}" '
            f'viewBox="0 0 {W} {H}">{"".join(parts)}</svg>'
        )


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def state_dict(env: Any, state: Any) -> dict[str, np.ndarray]:
    """`env.state_to_dict(state)` as numpy arrays (a JAX state's arrays are brought to the host)."""
    return {k: np.asarray(v) for k, v in env.state_to_dict(state).items()}


__all__ = ["RenderError", "Renderer", "state_dict"]
