"""Index mutants that JAX's out-of-range rules make equivalent, from the generated code alone.

JAX gathers (`x[i]`) clamp an out-of-range index to the nearest element; `.at[i].set/add(..., mode="drop")`
drops an out-of-range write and `.at[i].get(mode="fill")` reads its fill value for any out-of-range `i`
(`tests/test_mutate.py` checks both on the installed JAX). So on an axis of length `n`:

- reading `x[n - 1]` as `x[n]` reads the same element;
- `clamp_index(i, n)` -> `clamp_index(i, n + 1)` (a clip to `0..n`) as a gather index reads the same element;
- `jnp.clip(i, lo, n - 1)` with its bound raised (`n - 1` -> `n + 1`, `n - 1` -> `n`) likewise;
- `drop_index(i, n)` -> `drop_index(i, n + 1)` (`n` kept, or `n + 1` for the other out-of-range values) as the
  index of drop-mode writes and fill-mode reads only: every value it adds is out of range, and all of them act
  the same.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

Shape = tuple[int, ...]
_MODES = {"drop", "fill"}


def same_elements(tree: ast.Module, shapes: dict[str, Shape]) -> dict[int, str]:
    """Why a mutant is equivalent, by the id of the node its site changes (a constant +1, a `-` made `+`)."""
    consts, shapes = _module(tree, shapes)
    out = _last_index_reads(tree, shapes)
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            out.update(_Function(fn, shapes, consts).proofs())
    return out


def function_view(tree: ast.Module, fn: ast.FunctionDef, shapes: dict[str, Shape]) -> _Function:
    """One function's locals, index uses and the shapes its arrays are known to have (for `envc.mutate.proofs`)."""
    consts, shapes = _module(tree, shapes)
    return _Function(fn, shapes, consts)


def _module(tree: ast.Module, shapes: dict[str, Shape]) -> tuple[dict[str, int], dict[str, Shape]]:
    """The module's integer constants, and `shapes` (state fields) with the mask's and the tables' added."""
    consts = {t.id: s.value.value for s in tree.body if isinstance(s, ast.Assign)
              for t in s.targets if isinstance(t, ast.Name)
              and isinstance(s.value, ast.Constant) and type(s.value.value) is int}  # fmt: skip
    if "NUM_ACTIONS" in consts:
        shapes = {**shapes, "legal_action_mask": (consts["NUM_ACTIONS"],)}
    return consts, {**shapes, **_tables(tree)}


def _tables(tree: ast.Module) -> dict[str, Shape]:
    """`C.name` -> shape for the constant tables of class `C` (`name = jnp.asarray(np.array([...]).reshape((64,)))`)."""
    out: dict[str, Shape] = {}
    body = next((c.body for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "C"), [])
    for stmt in body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        calls = [n for n in ast.walk(stmt.value) if isinstance(n, ast.Call) and _name(n) == "reshape"]
        dims = calls[0].args[0] if len(calls) == 1 and len(calls[0].args) == 1 else None
        elts = dims.elts if isinstance(dims, ast.Tuple) else []
        sizes = [d.value for d in elts if isinstance(d, ast.Constant) and type(d.value) is int]
        if elts and len(sizes) == len(elts):
            out[f"C.{stmt.targets[0].id}"] = tuple(sizes)
    return out


def _name(call: ast.Call) -> str:
    """`reshape` for `x.reshape(...)`, `clamp_index` for `clamp_index(...)`."""
    return call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")


def _last_index_reads(tree: ast.Module, shapes: dict[str, Shape]) -> dict[int, str]:
    """Integer constants that index the last element of an axis of a state field read (`state.board[2, 0]` on a
    3-row board): +1 reads the same element."""
    out: dict[int, str] = {}
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Attribute)):
            continue
        if not (isinstance(n.value.value, ast.Name) and n.value.value.id == "state" and n.value.attr in shapes):
            continue
        shape = shapes[n.value.attr]
        elts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
        for axis, e in enumerate(elts[: len(shape)]):
            if isinstance(e, ast.Constant) and type(e.value) is int and e.value == shape[axis] - 1:
                out[id(e)] = (
                    f"clamped index: {e.value} -> {e.value + 1} on axis {axis} of state.{n.value.attr} "
                    f"(length {shape[axis]}) reads the same element"
                )
    return out


class _Function:
    """The index uses of one generated function, with the shapes of its arrays where the code shows them."""

    def __init__(self, fn: ast.FunctionDef, shapes: dict[str, Shape], consts: dict[str, int]):
        self.fn, self.shapes, self.consts = fn, shapes, consts
        self.parents = {id(c): p for p in ast.walk(fn) for c in ast.iter_child_nodes(p)}
        self.defs: dict[str, list[ast.expr]] = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                self.defs.setdefault(n.targets[0].id, []).append(n.value)
        self.uses: dict[str, list[ast.Name]] = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                self.uses.setdefault(n.id, []).append(n)

    def shape(self, e: ast.expr, depth: int = 0) -> Shape | None:
        """The shape of a state field or of a local that is a whole copy of one (a write, a `where` of copies)."""
        if depth > 50:
            return None
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id in ("state", "C"):
            return self.shapes.get(e.attr if e.value.id == "state" else f"C.{e.attr}")
        if isinstance(e, ast.Name):
            values = self.defs.get(e.id, [])
            found = {self.shape(v, depth + 1) for v in values}
            return found.pop() if len(values) == 1 and len(found) == 1 else None
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute):
            if e.func.attr == "where" and len(e.args) == 3:
                a, b = self.shape(e.args[1], depth + 1), self.shape(e.args[2], depth + 1)
                return a if a is not None and a == b else None
            base = e.func.value  # `x.at[i].set(v, mode=...)`: the shape of x; `x.at[i, j].get(...)`: x[i, j]'s
            if isinstance(base, ast.Subscript) and isinstance(base.value, ast.Attribute) and base.value.attr == "at":
                whole = self.shape(base.value.value, depth + 1)
                if e.func.attr != "get" or whole is None:
                    return whole
                index = base.slice
                if isinstance(index, ast.Name) and len(self.defs.get(index.id, [])) == 1:
                    index = self.defs[index.id][0]  # `at_1 = (q_1,)`
                k = len(index.elts) if isinstance(index, ast.Tuple) else 1
                return whole[k:] if not any(isinstance(x, ast.Slice) for x in ast.walk(index)) else None
        return None

    def value(self, e: ast.expr) -> int | None:
        """An integer the code states: a literal, a module constant, or one of them minus or plus a literal."""
        if isinstance(e, ast.Constant) and type(e.value) is int:
            return int(e.value)
        if isinstance(e, ast.Name):
            return self.consts.get(e.id)
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
            a, b = self.value(e.left), self.value(e.right)
            if a is not None and b is not None:
                return a + b if isinstance(e.op, ast.Add) else a - b
        return None

    def positions(self, e: ast.expr) -> Iterator[tuple[str, ast.Subscript | None, int]]:
        """Where index expression `e` is used: ("gather" | "at", the subscript, the axis); ("other", ...) if
        anywhere else. Follows a tuple of indices bound to a local (`at_1 = (drop_index(pl_1, 2),)`)."""
        parent = self.parents.get(id(e))
        axis = 0
        if isinstance(parent, ast.Tuple) and isinstance(self.parents.get(id(parent)), ast.Subscript):
            axis = parent.elts.index(e)
            if any(isinstance(x, ast.Constant) and x.value in (None, Ellipsis) for x in parent.elts[:axis]):
                yield "other", None, 0  # a new axis or `...` before it: the axis is not its position
                return
            e, parent = parent, self.parents[id(parent)]
        elif isinstance(parent, ast.Tuple) and isinstance(self.parents.get(id(parent)), ast.Assign):
            assign = self.parents[id(parent)]
            target = assign.targets[0] if isinstance(assign, ast.Assign) and len(assign.targets) == 1 else None
            if not isinstance(target, ast.Name) or len(self.defs.get(target.id, [])) != 1:
                yield "other", None, 0
                return
            for use in self.uses.get(target.id, []):
                for kind, sub, k in self.positions(use):
                    yield kind, sub, k + parent.elts.index(e)
            return
        if not (isinstance(parent, ast.Subscript) and parent.slice is e):
            yield "other", None, 0
            return
        if isinstance(parent.value, ast.Attribute) and parent.value.attr == "at":
            yield "at", parent, axis
        elif isinstance(parent.ctx, ast.Load):
            yield "gather", parent, axis
        else:
            yield "other", parent, axis

    def length(self, sub: ast.Subscript | None, axis: int, at: bool) -> int | None:
        """The length of `sub`'s array along `axis` (None: not known)."""
        if sub is None:
            return None
        arr = sub.value.value if at and isinstance(sub.value, ast.Attribute) else sub.value
        shape = self.shape(arr)
        return shape[axis] if shape is not None and axis < len(shape) else None

    def drop_or_fill(self, sub: ast.Subscript | None) -> bool:
        """`x.at[...]` followed by a write in mode "drop" or a read in mode "fill"."""
        method = self.parents.get(id(sub)) if sub is not None else None
        call = self.parents.get(id(method))
        if not (isinstance(method, ast.Attribute) and isinstance(call, ast.Call) and call.func is method):
            return False
        mode = next((k.value for k in call.keywords if k.arg == "mode"), None)
        if not (isinstance(mode, ast.Constant) and mode.value in _MODES):
            return False
        return mode.value == "fill" if method.attr == "get" else True

    def proofs(self) -> Iterator[tuple[int, str]]:
        yield from self._sentinels()
        for call in ast.walk(self.fn):
            if not isinstance(call, ast.Call):
                continue
            name = _name(call)
            if name in ("clamp_index", "drop_index") and len(call.args) == 2:
                bound = call.args[1]
                if not (isinstance(bound, ast.Constant) and type(bound.value) is int):
                    continue
                n, uses = int(bound.value), list(self.positions(call))
                if name == "clamp_index":
                    ok = all(k == "gather" and self.length(s, a, False) == n for k, s, a in uses)
                    why = f"clamp_index(i, {n}) -> clamp_index(i, {n + 1}) gathers from an axis of length {n}"
                else:
                    ok = all(k == "at" and self.drop_or_fill(s) and self.length(s, a, True) == n for k, s, a in uses)
                    why = f"drop_index(i, {n}) -> drop_index(i, {n + 1}) indexes drop writes and fill reads of an axis of length {n}"  # noqa: E501
                if uses and ok:
                    yield id(bound), f"proven: {why}: JAX treats every out-of-range index there alike"
            elif name == "clip" and len(call.args) == 3:
                yield from self._clip(call)

    def _sentinels(self) -> Iterator[tuple[int, str]]:
        """A literal index already out of range in a drop write or fill read (a zone's sentinel `where(ok, n - 1,
        60)` on 60 slots): one more is out of range too."""
        for sub in ast.walk(self.fn):
            if not (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Attribute) and sub.value.attr == "at"):
                continue
            if not self.drop_or_fill(sub):
                continue
            elts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
            for axis, e in enumerate(elts):
                arms = e.args[1:] if isinstance(e, ast.Call) and _name(e) == "where" else [e]
                n = self.length(sub, axis, True)
                for arm in arms:
                    while isinstance(arm, ast.Call) and len(arm.args) == 1:  # `jnp.int32(60)`
                        arm = arm.args[0]
                    if n is not None and isinstance(arm, ast.Constant) and type(arm.value) is int and arm.value >= n:
                        yield id(arm), f"proven: index {arm.value} -> {arm.value + 1} on an axis of length {n} is " \
                                       "out of range either way, in a drop write or fill read"

    def _clip(self, call: ast.Call) -> Iterator[tuple[int, str]]:
        """`jnp.clip(i, lo, n - 1)` as a gather index, its upper bound raised by the mutant."""
        hi, uses = call.args[2], list(self.positions(call))
        lengths = {self.length(s, a, False) for k, s, a in uses if k == "gather"}
        if not uses or any(k != "gather" for k, _, _ in uses) or len(lengths) != 1:
            return
        n, top = lengths.pop(), self.value(hi)
        if n is None or top != n - 1:
            return
        why = f"proven: the clip's bound {ast.unparse(hi)} raised gathers from an axis of length {n}, which clamps"
        if isinstance(hi, ast.Constant):
            yield id(hi), why  # `n - 1` -> `n`
        elif isinstance(hi, ast.BinOp) and isinstance(hi.op, ast.Sub) and (self.value(hi.right) or 0) >= 0:
            yield id(hi), why  # `n - 1` -> `n + 1`; the literal's own +1 lowers the bound and is not proven
