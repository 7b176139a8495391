"""Who may see what, in a given state: the `visible` declarations of a spec evaluated on a state dict.

`all`, `owner` and `none` are fixed; a rule (`visible: EXPR` or `{element: [...], when: EXPR}`) is evaluated by
the reference interpreter on any backend's `state_to_dict`, so the no-leak check works the same for every backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from envc import ir
from envc.interpret import Compiler, Frame, _typed, wrapper
from envc.ir import DType


class Visibility:
    """The elements of each field hidden from a player in a state (`hidden`), and why (`reason`)."""

    def __init__(self, spec: ir.SpecIR, params: Mapping[str, Any] | None = None, strict: bool = True):
        self.spec = spec
        self.params = {p.name: _typed(p.ty, p.default) for p in spec.params if not p.static}
        for k, v in (params or {}).items():
            ty = next((p.ty for p in spec.params if p.name == k and not p.static), None)
            if ty is not None:
                self.params[k] = wrapper(ty.dtype)(v)
        c = Compiler(spec, strict)
        c.compile_callables()
        self._rules = {
            f.name: (f.visible_rule, c.expr(f.visible_rule.when))
            for f in spec.fields
            if f.visible == "rule" and f.visible_rule is not None
        }
        self.fields = [f for f in spec.fields if f.visible != "all"]

    def _data(self, d: Mapping[str, Any]) -> dict[str, list[Any]]:
        data: dict[str, list[Any]] = {}
        for f in self.spec.fields:
            w = wrapper(f.ty.dtype)
            conv = float if f.ty.dtype.is_float else (bool if f.ty.dtype is DType.BOOL else int)
            data[f.name] = [w(conv(v)) for v in np.asarray(d[f.name]).reshape(-1).tolist()]
        return data

    def hidden(self, d: Mapping[str, Any], p: int) -> dict[str, np.ndarray]:
        """For each field with something hidden from player `p` in state `d`: a bool mask of the field's shape."""
        out: dict[str, np.ndarray] = {}
        data = self._data(d) if self._rules else {}
        for f in self.fields:
            shape = f.ty.shape
            mask = np.zeros(shape, np.bool_)
            if f.visible == "none":
                mask[...] = True
            elif f.visible == "owner":
                for q in range(self.spec.players):
                    if q != p:
                        mask[q] = True
            elif f.name in self._rules:
                rule, fn = self._rules[f.name]
                lead = shape[: len(rule.element)]
                fr = Frame(data, (0, 0), self.params)
                fr.loc["p"] = p
                seen = np.ones(lead, np.bool_)
                for idx in np.ndindex(*lead) if lead else [()]:
                    for name, i in zip(rule.element, idx, strict=True):
                        fr.loc[name] = i
                    seen[idx] = bool(fn(fr))
                mask[...] = ~seen.reshape(lead + (1,) * (len(shape) - len(lead)))
            if mask.any():
                out[f.name] = mask
        return out

    def reason(self, name: str, at: tuple[int, ...], p: int) -> str:
        """Why element `at` of field `name` is hidden from player `p`, e.g. "`round >= 1` is false"."""
        f = self.spec.field(name)
        if f.visible == "none":
            return "visible: none"
        if f.visible == "owner":
            return f"visible: owner, hidden from player {p}"
        rule = self._rules[name][0]
        bound = ", ".join(f"{n}={i}" for n, i in zip(rule.element, at, strict=False))
        return f"hidden from player {p}: `{rule.text}` is false" + (f" for {bound}" if bound else "")


def element_name(name: str, at: tuple[int, ...]) -> str:
    """`board`, `hand[0, 2]`."""
    return f"{name}[{', '.join(map(str, at))}]" if at else name
