"""The lane kernel: a spec's action effect and rules run on `LANES` states at once, so arithmetic vectorizes.

A spec qualifies when it has one discrete action kind whose effect, like every rule, never draws, reads and writes
only scalar state fields, calls no spec function and does f32 arithmetic (the physics of classic control). The
touched fields are gathered into `Lanes`, a struct of one array per field; every top-level statement becomes a
loop over the lanes; the written fields are scattered back. Each lane runs exactly the scalar operations of
`apply_action` then `apply_rules`, in order, and Rust never fuses or reassociates f32 operations, so results are
bit for bit those of the scalar path. The `sin` and `cos` calls of a top-level statement are computed first for
all lanes by the runtime's lane forms (`ops::sin_lanes`), whose polynomial vectorizes where a libm call per lane
would not, with each lane's bits those of `ops::sin`. The kernel has a baseline and an AVX2 build
(`rt::simd_dispatch!`), both out of line: inlined into the batch loop, LLVM's SLP vectorizer no longer sees the
lane arrays as whole vectors.

A spec whose every field is scalar, with one player and a reward, ends and observation of fields alone, is also
packed: the batch stores its states `LANES` to a `Lanes` (struct of arrays, no gather or scatter). `step_pack` counts
the step and runs the kernel on every lane in place, the runtime gives the rare lanes that act illegally their state
back (step counted) and restarts the lanes that ended, and `pack_rows` computes every lane's reward, ends and
observation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envc import ir
from envc.f64 import uses_f64
from envc.ir import DType
from envc.lower_rust.emit import RUST, Analysis, Ctx, Emitter, paren
from envc.lower_rust.names import Names


@dataclass(frozen=True)
class LanePlan:
    """What the lane kernel covers: the action kind, the rules, and the fields read and written."""

    kind: ir.ActionKind
    rules: tuple[ir.RuleInfo, ...]
    fields: tuple[ir.FieldInfo, ...]  # read or written: gathered into the lanes
    writes: tuple[ir.FieldInfo, ...]  # scattered back


def plan(spec: ir.SpecIR, an: Analysis) -> LanePlan | None:
    """The lane kernel of `spec`, or None when it does not qualify."""
    if spec.box is not None or len(spec.actions) != 1 or uses_f64(spec):  # the kernel's lanes are f32 (or ints)
        return None
    kind = spec.actions[0]
    code = (kind.effect, *(r.when for r in spec.rules), *(r.body for r in spec.rules))
    if an.draws(code):
        return None
    scalar = {f.name: f for f in spec.fields if not f.ty.shape}
    lets: dict[str, DType | None] = {p.name: None for p in kind.params}  # params (None) are read-only arrays
    top = kind.effect + tuple(s for r in spec.rules if always(r) for s in r.body)
    nested = tuple(ir.IfS(cond=r.when, then=r.body, span=r.when.span) for r in spec.rules if not always(r))
    if not all(_stmt(s, scalar, lets, True) for s in top + nested):
        return None
    if not _arith(code):
        return None
    writes = _fields(code, scalar, ir.Target)
    if not writes:
        return None
    order = [f for f in spec.fields if f.name in writes | _fields(code, scalar, ir.Read)]
    return LanePlan(kind, spec.rules, tuple(order), tuple(f for f in order if f.name in writes))


def packed(spec: ir.SpecIR, p: LanePlan | None) -> bool:
    """Whether the batch keeps the states packed in lanes and runs whole steps there (`step_pack`): it needs a
    kernel, scalar fields only, one player whose `current_player` no code changes, and a reward, ends and
    observation (element assignments) that read fields and params only."""
    if p is None or spec.players != 1 or any(f.ty.shape for f in spec.fields):
        return False
    scalar = {f.name: f for f in spec.fields}
    ends = (spec.reward, spec.terminated, spec.truncated)
    if not all(_expr(e, scalar) and not _has_local(e) for e in ends):
        return False
    for s in spec.observation:
        if not (
            isinstance(s, ir.Assign)
            and s.target.space == "obs"
            and not s.target.ty.shape
            and all(isinstance(i, ir.Lit) for i in s.target.index)
            and _expr(s.value, scalar)
            and not _has_local(s.value)
        ):
            return False
    code = (spec.reset, *(a.effect for a in spec.actions), *(r.body for r in spec.rules))
    return "current_player" not in _fields(code + tuple(c.body for c in spec.callables), scalar, ir.Target)


def _has_local(node: object) -> bool:
    if isinstance(node, tuple):
        return any(_has_local(x) for x in node)
    if isinstance(node, ir.Local):
        return True
    if not isinstance(node, (ir._Expr, ir._Stmt, ir.Target)):
        return False
    return any(_has_local(getattr(node, k)) for k in type(node).model_fields if k not in ("ty", "span"))


def always(r: ir.RuleInfo) -> bool:
    """Does rule `r` fire on every step (`when: true`)?"""
    return isinstance(r.when, ir.Lit) and r.when.value is True


def _expr(e: ir.Expr, scalar: dict[str, ir.FieldInfo]) -> bool:
    if isinstance(e, (ir.Lit, ir.Param, ir.Local)):
        return True
    if isinstance(e, ir.Read):
        if e.space == "state":
            return e.name in scalar and not e.index
        return e.space == "const" and all(_expr(i, scalar) for i in e.index)
    if isinstance(e, ir.Unary):
        return _expr(e.x, scalar)
    if isinstance(e, ir.Binary):
        return _expr(e.a, scalar) and _expr(e.b, scalar)
    if isinstance(e, ir.Cast):
        return _expr(e.x, scalar)
    if isinstance(e, ir.Select):
        return _expr(e.cond, scalar) and _expr(e.a, scalar) and _expr(e.b, scalar)
    if isinstance(e, ir.Math):
        return all(_expr(a, scalar) for a in e.args)
    return False  # reductions, draws, calls and zone searches stay on the scalar path


def _stmt(s: ir.Stmt, scalar: dict[str, ir.FieldInfo], lets: dict[str, DType | None], top: bool) -> bool:
    """Whether `s` has a lane form; `lets` (locals declared at the top, with their types) grows as it goes."""
    if isinstance(s, ir.LetS):
        # A `let` is a lane array, so only at the top level; a re-`let` must keep the array's type and may not
        # shadow an action parameter.
        if not top or s.value.ty.shape or lets.get(s.name, s.value.ty.dtype) is not s.value.ty.dtype:
            return False
        ok = _expr(s.value, scalar)
        lets[s.name] = s.value.ty.dtype
        return ok
    if isinstance(s, ir.Assign):
        t = s.target
        if t.index or t.ty.shape:
            return False
        if t.space == "local":
            return lets.get(t.name) is not None and _expr(s.value, scalar)
        return t.space == "state" and t.name in scalar and _expr(s.value, scalar)
    if isinstance(s, ir.IfS):
        return _expr(s.cond, scalar) and all(_stmt(x, scalar, lets, False) for x in s.then + s.orelse)
    return False


def _arith(node: object) -> bool:
    """Does this code do f32 arithmetic (what lanes speed up)?"""
    if isinstance(node, tuple):
        return any(_arith(x) for x in node)
    if isinstance(node, ir.Binary) and node.ty.dtype is DType.F32 and node.op in ("+", "-", "*", "/"):
        return True
    if not isinstance(node, (ir._Expr, ir._Stmt, ir.Target)):
        return False
    return any(_arith(getattr(node, k)) for k in type(node).model_fields if k not in ("ty", "span"))


def _fields(node: object, scalar: dict[str, ir.FieldInfo], cls: type) -> set[str]:
    """The state fields this code reads (`cls` Read) or writes (`cls` Target)."""
    if isinstance(node, tuple):
        return set().union(*(_fields(x, scalar, cls) for x in node)) if node else set()
    out: set[str] = set()
    if isinstance(node, cls) and node.space == "state" and node.name in scalar:  # type: ignore[attr-defined]
        out.add(node.name)  # type: ignore[attr-defined]
    if isinstance(node, (ir._Expr, ir._Stmt, ir.Target)):
        for k in type(node).model_fields:
            if k not in ("ty", "span"):
                out |= _fields(getattr(node, k), scalar, cls)
    return out


# Math functions with a whole-lanes form in the runtime (`ops::sin_lanes`): the same bits as one lane at a time.
LANE_MATH = ("sin", "cos")


def _lane_math(node: object) -> list[ir.Math]:
    """The f32 calls of `LANE_MATH` functions in `node`, innermost first."""
    if isinstance(node, tuple):
        return [m for x in node for m in _lane_math(x)]
    if not isinstance(node, ir._Expr):
        return []
    found = [m for k in type(node).model_fields if k not in ("ty", "span") for m in _lane_math(getattr(node, k))]
    if isinstance(node, ir.Math) and node.fn in LANE_MATH and node.args[0].ty.dtype is DType.F32:
        found.append(node)
    return found


def rebound(stmts: tuple[ir.Stmt, ...]) -> set[str]:
    """The locals that these statements bind or assign more than once (their lane arrays stay mutable)."""
    seen: set[str] = set()
    twice: set[str] = set()

    def visit(ss: tuple[ir.Stmt, ...]) -> None:
        for s in ss:
            name = s.name if isinstance(s, ir.LetS) else None
            if isinstance(s, ir.Assign) and s.target.space == "local":
                name = s.target.name
            if name is not None:
                (twice if name in seen else seen).add(name)
            if isinstance(s, ir.IfS):
                visit(s.then + s.orelse)

    visit(stmts)
    return twice


class LaneEmitter(Emitter):
    """Emits the kernel body: state fields are `ln.<field>[l]`, top-level locals lane arrays `<local>[l]`."""

    def __init__(
        self,
        spec: ir.SpecIR,
        names: Names,
        analysis: Analysis,
        params: tuple[str, ...],
        rebound: set[str] | None = None,
    ):
        super().__init__(spec, names, analysis)
        self.lanes: set[str] = set(params)
        self.math: dict[int, str] = {}  # a hoisted call (by id) -> the lane array of its results
        self.rebound = rebound or set()  # locals the kernel binds or assigns more than once (see `rebound`)

    def local(self, name: str) -> str:
        ident = super().local(name)
        return f"{ident}[l]" if name in self.lanes else ident

    def storage(self, space: str, name: str) -> str:
        if space == "state":
            return f"ln.{self.field(name)}[l]"
        if space == "obs":
            return f"rows.obs[l].{self.names.obs(name)}"
        return super().storage(space, name)

    def x_binary(self, e: ir.Binary, ctx: Ctx) -> str:
        if e.op in ("and", "or"):  # lane code is pure and total: both sides, no branch, so the loop vectorizes
            return f"{paren(self.expr(e.a, ctx))} {'&' if e.op == 'and' else '|'} {paren(self.expr(e.b, ctx))}"
        return super().x_binary(e, ctx)

    def x_math(self, e: ir.Math, ctx: Ctx) -> str:
        name = self.math.get(id(e))
        return f"{name}[l]" if name else super().x_math(e, ctx)

    def lane_call(self, m: ir.Math, ctx: Ctx) -> str:
        """The runtime's lane form of call `m` (whose polynomial vectorizes, where a call per lane would not),
        its argument first gathered into a lane array unless it is one."""
        arg = self.expr(m.args[0], ctx)
        whole = re.fullmatch(r"((?:ln\.)?\w+)\[l\]", arg)
        if whole:
            return f"ops::{m.fn}_lanes(&{whole.group(1)})"
        name = self.fresh("arg")
        self.line(f"let mut {name}: [f32; LANES] = [0.0; LANES];")
        self.line("for l in 0..LANES {")
        self.line(f"    {name}[l] = {arg};")
        self.line("}")
        return f"ops::{m.fn}_lanes(&{name})"

    def top(self, s: ir.Stmt, ctx: Ctx) -> None:
        """One top-level statement, run over every lane; its `LANE_MATH` calls first, for all lanes at once."""
        self.math.clear()
        calls = _lane_math(s.value) if isinstance(s, (ir.LetS, ir.Assign)) else []
        # `let y = sin(x)` of a new local bound once: the lane form's result is the local's array.
        direct = (
            isinstance(s, ir.LetS)
            and bool(calls)
            and calls[-1] is s.value
            and s.name not in self.lanes
            and s.name not in self.rebound
        )
        for m in calls[:-1] if direct else calls:
            call = self.lane_call(m, ctx)
            name = self.fresh(m.fn)
            self.line(f"let {name} = {call};")
            self.math[id(m)] = name
        if direct:
            assert isinstance(s, ir.LetS) and isinstance(s.value, ir.Math)
            self.line(f"let {super().local(s.name)} = {self.lane_call(s.value, ctx)};")
            self.lanes.add(s.name)
            return
        if isinstance(s, ir.LetS):
            value = self.expr(s.value, ctx)
            if s.name not in self.lanes:
                ident = super().local(s.name)
                ty = RUST[s.value.ty.dtype]
                self.line(f"let mut {ident}: [{ty}; LANES] = [Default::default(); LANES];")
                self.lanes.add(s.name)
            self.line("for l in 0..LANES {")
            with self.indented():
                self.line(f"{self.local(s.name)} = {value};")
            self.line("}")
            return
        self.line("for l in 0..LANES {")
        with self.indented():
            getattr(self, "s_" + s.kind)(s, ctx)
        self.line("}")
