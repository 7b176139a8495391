"""The reference interpreter: the oracle every backend must match bit for bit.

IR nodes are compiled once into Python closures; values are Python ints/floats wrapped or rounded to their
dtype after every operation (ints wrap two's complement, f32 is rounded after each op, and literals, params,
inits and constants are brought to their type up front). Spec bugs (division by zero, index out of range,
full/empty zones) raise SpecRuntimeError at the rule's location when `strict`; otherwise the documented
fallbacks apply (reads clamp, writes drop, x // 0 == x % 0 == 0, full push and empty pop do nothing and yield 0).
The edge values of casts, f32 `//` and `%` and reductions are defined in docs/spec-language.md (6.4, 6.6, 11).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from envc import f64, ir, mathops, rng
from envc.diagnostics import Span, SpecRuntimeError
from envc.inputs import checked_action, checked_params, checked_state
from envc.ir import NP_DTYPE, DType, Ty
from envc.mathops import f32

Value = Any
Fn = Callable[["Frame"], Value]
Op = Callable[["Frame"], None]

def wrapper(dtype: DType) -> Callable[[Any], Any]:
    """The function that brings a Python value into `dtype`."""
    if dtype is DType.F32:
        return f32
    if dtype is DType.F64:
        return float
    if dtype is DType.BOOL:
        return bool
    bits = dtype.bits
    mask = (1 << bits) - 1
    if not dtype.signed:
        return lambda v: v & mask
    half = 1 << (bits - 1)
    return lambda v: ((v + half) & mask) - half


FLT_MIN = 2.0**-126  # the smallest normal f32


def ftz(x: float) -> float:
    """`x`, or a zero of its sign when `x` is subnormal (how f32 `//` and `%` see operands and results)."""
    return math.copysign(0.0, x) if 0 < abs(x) < FLT_MIN else x


def float_to_int(x: float, dtype: DType) -> int:
    """Truncate toward zero, saturate at the type's range, NaN -> 0."""
    if math.isnan(x):
        return 0
    lo, hi = dtype.int_range
    if x >= hi:
        return hi
    if x <= lo:
        return lo
    return int(x)


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    acc = 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


@dataclass(frozen=True)
class ChanceEvent:
    """One random outcome of a step or reset, in execution order (see `ReferenceEnv.chance_log`)."""

    kind: str  # uniform | randint | bernoulli | choice | shuffle
    value: Any  # the draw; for `choice` the chosen position; for `shuffle` the zone's live cards afterwards
    span: Span
    zone: str | None = None  # shuffle: the zone's storage name
    index: tuple[int, ...] = ()  # shuffle: the zone's leading indices (e.g. the player)


class Frame:
    """Execution context: state storage, locals, the randomness key of this scope, obs and action buffers."""

    __slots__ = ("act", "key", "loc", "obs", "params", "st")

    def __init__(
        self,
        st: dict[str, list[Any]],
        key: rng.Key,
        params: Mapping[str, Any],
        obs: dict[str, list[Any]] | None = None,
        act: list[float] | None = None,
    ):
        self.st = st
        self.loc: dict[str, Any] = {}
        self.key = key
        self.obs = obs if obs is not None else {}
        self.act = act if act is not None else []
        self.params = params

    def child(self, key: rng.Key) -> Frame:
        """A frame for a callee: same storage, fresh locals."""
        return Frame(self.st, key, self.params, self.obs, self.act)


class Compiler:
    """Compiles IR expressions and statements into closures."""

    def __init__(self, spec: ir.SpecIR, strict: bool):
        self.spec = spec
        self.strict = strict
        self.shapes: dict[tuple[str, str], tuple[int, ...]] = {}
        for f in spec.fields:
            self.shapes[("state", f.name)] = f.ty.shape
        for c in spec.consts:
            self.shapes[("const", c.name)] = c.ty.shape
        for o in spec.obs_fields:
            self.shapes[("obs", o.name)] = o.ty.shape
        # the continuous action's values, or the discrete action id (a scalar) that the outputs read
        self.shapes[("action", "action")] = spec.box.shape if spec.box is not None else ()
        self.consts = {c.name: [_typed(c.ty, v) for v in c.values] for c in spec.consts}
        self.callables: dict[str, ir.CallableInfo] = {c.name: c for c in spec.callables}
        self.compiled_fns: dict[str, Callable[[Frame, list[Any]], Any]] = {}
        self.chance: list[ChanceEvent] | None = None
        self.arms: set[tuple[Span, Any]] | None = None  # set before compiling: decisions record here (coverage)

    def record(self, kind: str, value: Any, span: Span, zone: str | None = None, index: tuple[int, ...] = ()) -> Any:
        """Append a chance event when logging is on; returns `value`."""
        if self.chance is not None:
            self.chance.append(ChanceEvent(kind, value, span, zone, index))
        return value

    def decision(self, e: ir.Expr) -> Fn:
        """`expr(e)` for a condition or switch subject; adds (span, value) to `arms` if set (envc/coverage.py)."""
        f, arms = self.expr(e), self.arms
        if arms is None or e.ty.shape:
            return f
        sp = e.span

        def probe(fr: Frame) -> Any:
            v = f(fr)
            arms.add((sp, v))
            return v

        return probe

    # ---- errors ------------------------------------------------------
    def fail(self, span: Span, msg: str) -> None:
        if self.strict:
            raise SpecRuntimeError(span, msg)

    # ---- storage access -----------------------------------------------
    def _getter(self, space: str, name: str) -> Callable[[Frame], list[Any]]:
        if space == "state":
            return lambda fr: fr.st[name]
        if space == "obs":
            return lambda fr: fr.obs[name]
        if space == "action":
            return lambda fr: fr.act
        if space == "local":  # an array local (a flat list)
            return lambda fr: fr.loc[name]
        data = self.consts[name]
        return lambda fr: data

    def _offset(
        self, space: str, name: str, index: Sequence[ir.Expr], span: Span, write: bool = False
    ) -> tuple[Fn, int]:
        """The flat offset of the leading `index` and the size of what remains; bad reads clamp, bad writes give -1."""
        shape = self.shapes[(space, name)]
        strides = _strides(shape)
        k = len(index)
        rest = math.prod(shape[k:])
        if k == 0:
            return (lambda fr: 0), rest
        parts = [(self.expr(i), shape[j], strides[j]) for j, i in enumerate(index)]
        fail = self.fail
        label = name

        def offset(fr: Frame) -> int:
            off = 0
            for f, dim, stride in parts:
                v = f(fr)
                if v < 0 or v >= dim:
                    fail(span, f"index {v} out of range for '{label}' (size {dim})")
                    if write:
                        return -1
                    v = 0 if v < 0 else dim - 1
                off += v * stride
            return off

        if len(parts) == 1:
            f0, dim0, stride0 = parts[0]

            def offset1(fr: Frame) -> int:
                v = f0(fr)
                if v < 0 or v >= dim0:
                    fail(span, f"index {v} out of range for '{label}' (size {dim0})")
                    if write:
                        return -1
                    v = 0 if v < 0 else dim0 - 1
                return v * stride0  # type: ignore[no-any-return]

            return offset1, rest
        return offset, rest

    # ---- expressions ---------------------------------------------------
    def expr(self, e: ir.Expr) -> Fn:
        return getattr(self, "x_" + e.kind)(e)  # type: ignore[no-any-return]

    def x_lit(self, e: ir.Lit) -> Fn:
        v = e.value if e.ty.dtype is DType.BOOL else wrapper(e.ty.dtype)(e.value)  # f32 literals round to f32
        return lambda fr: v

    def x_param(self, e: ir.Param) -> Fn:
        n = e.name
        return lambda fr: fr.params[n]

    def x_local(self, e: ir.Local) -> Fn:
        n = e.name
        return lambda fr: fr.loc[n]

    def x_read(self, e: ir.Read) -> Fn:
        if e.space == "local":
            self.shapes[("local", e.name)] = e.dims
        get = self._getter(e.space, e.name)
        off, rest = self._offset(e.space, e.name, e.index, e.span)
        if e.ty.shape:
            return lambda fr: get(fr)[off(fr) : off(fr) + rest]
        if not e.index:
            return lambda fr: get(fr)[0]
        return lambda fr: get(fr)[off(fr)]

    def x_unary(self, e: ir.Unary) -> Fn:
        x = self.expr(e.x)
        if e.op == "not":
            return lambda fr: not x(fr)
        w = wrapper(e.ty.dtype)
        return lambda fr: w(-x(fr))

    def x_binary(self, e: ir.Binary) -> Fn:
        if e.ty.shape:
            return self.elementwise(e)
        a, b = self.expr(e.a), self.expr(e.b)
        op = e.op
        if op == "and":
            return lambda fr: a(fr) and b(fr)
        if op == "or":
            return lambda fr: a(fr) or b(fr)
        cmp: dict[str, Callable[[Any, Any], bool]] = {
            "==": lambda x, y: x == y,
            "!=": lambda x, y: x != y,
            "<": lambda x, y: x < y,
            "<=": lambda x, y: x <= y,
            ">": lambda x, y: x > y,
            ">=": lambda x, y: x >= y,
        }
        if op in cmp:
            if op == "==":
                return lambda fr: a(fr) == b(fr)
            if op == "<":
                return lambda fr: a(fr) < b(fr)
            c = cmp[op]
            return lambda fr: c(a(fr), b(fr))
        dt = e.ty.dtype
        if dt is DType.BOOL:
            bop: Callable[[Any, Any], Any] = {
                "&": lambda x, y: x and y,
                "|": lambda x, y: x or y,
                "^": lambda x, y: x != y,
            }[op]
            return lambda fr: bop(a(fr), b(fr))
        w = wrapper(dt)
        span = e.span
        if dt is DType.F64:  # IEEE binary64: Python's float operations, one rounding each (envc/f64.py)
            f64op: Callable[[float, float], float] = {
                "+": lambda x, y: x + y,
                "-": lambda x, y: x - y,
                "*": lambda x, y: x * y,
                "/": f64.div64,
                "//": f64.floor_div64,
                "%": f64.floor_mod64,
            }[op]
            return lambda fr: f64op(a(fr), b(fr))
        if dt is DType.F32:
            if op == "+":
                return lambda fr: f32(a(fr) + b(fr))
            if op == "-":
                return lambda fr: f32(a(fr) - b(fr))
            if op == "*":
                return lambda fr: f32(a(fr) * b(fr))
            if op == "/":
                return lambda fr: _fdiv(a(fr), b(fr))
            if op == "//":
                return lambda fr: _ffloordiv(a(fr), b(fr))
            if op == "%":
                return lambda fr: _fmod(a(fr), b(fr))
        if op == "+":
            return lambda fr: w(a(fr) + b(fr))
        if op == "-":
            return lambda fr: w(a(fr) - b(fr))
        if op == "*":
            return lambda fr: w(a(fr) * b(fr))
        if op in ("//", "%"):
            fail = self.fail
            floor = op == "//"

            def divmod_(fr: Frame) -> int:
                x, y = a(fr), b(fr)
                if y == 0:
                    fail(span, "integer division by zero")
                    return 0
                return w(x // y if floor else x % y)  # type: ignore[no-any-return]

            return divmod_
        iop: Callable[[Any, Any], Any] = {"&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y}[op]
        return lambda fr: w(iop(a(fr), b(fr)))

    def elementwise(self, e: ir.Binary) -> Fn:
        """An array-valued + - * / // %: the scalar operation on each element (a scalar operand broadcasts)."""
        a, b = self.expr(e.a), self.expr(e.b)
        ea = ir.Local(name="__ea__", ty=e.a.ty.scalar(), span=e.a.span)
        eb = ir.Local(name="__eb__", ty=e.b.ty.scalar(), span=e.b.span)
        one = self.x_binary(e.model_copy(update={"a": ea, "b": eb, "ty": e.ty.scalar()}))
        n = math.prod(e.ty.shape)
        arr_a, arr_b = bool(e.a.ty.shape), bool(e.b.ty.shape)

        def run(fr: Frame) -> list[Any]:
            av, bv = a(fr), b(fr)
            saved = fr.loc
            fr.loc = {}
            try:
                out = []
                for i in range(n):
                    fr.loc["__ea__"] = av[i] if arr_a else av
                    fr.loc["__eb__"] = bv[i] if arr_b else bv
                    out.append(one(fr))
            finally:
                fr.loc = saved
            return out

        return run

    def x_cast(self, e: ir.Cast) -> Fn:
        x = self.expr(e.x)
        src, dst = e.x.ty.dtype, e.ty.dtype
        if dst is DType.BOOL:
            return lambda fr: x(fr) != 0
        if dst is DType.F32:
            return lambda fr: f32(float(x(fr)))
        if dst is DType.F64:
            return lambda fr: float(x(fr))
        if src.is_float:
            return lambda fr: float_to_int(x(fr), dst)
        if e.ty.enum is not None:
            n = len(next(en.members for en in self.spec.enums if en.name == e.ty.enum))
            fail, span, name = self.fail, e.span, e.ty.enum

            def to_enum(fr: Frame) -> int:
                v = int(x(fr))
                if not 0 <= v < n:
                    fail(span, f"{v} is not a member index of {name} (0..{n - 1})")
                    return 0
                return v

            return to_enum
        w = wrapper(dst)
        return lambda fr: w(int(x(fr)))

    def x_select(self, e: ir.Select) -> Fn:
        c, a, b = self.decision(e.cond), self.expr(e.a), self.expr(e.b)
        return lambda fr: a(fr) if c(fr) else b(fr)

    def x_math(self, e: ir.Math) -> Fn:
        args = [self.expr(a) for a in e.args]
        fn = e.fn
        if fn in mathops.FNS:  # `**`, shifts, `~` and the builtins of language 1.1
            d, fail, span = e.ty.dtype, self.fail, e.span
            bits = d.bits if d.is_int else None
            return mathops.reference_math(
                fn,
                args,
                bits,
                bits is not None and d.signed,
                lambda n: fail(span, f"negative shift count {n}"),
                float if d is DType.F64 else f32,
            )
        w = wrapper(e.ty.dtype)
        if fn == "abs":
            a0 = args[0]
            return lambda fr: w(abs(a0(fr)))
        if fn in ("min", "max"):
            a0, a1 = args
            m = min if fn == "min" else max
            if e.ty.dtype.is_float:
                return lambda fr: _fminmax(fn == "min", a0(fr), a1(fr))
            return lambda fr: m(a0(fr), a1(fr))
        if fn == "clip":
            a0, a1, a2 = args
            if e.ty.dtype.is_float:
                return lambda fr: _fminmax(True, _fminmax(False, a0(fr), a1(fr)), a2(fr))
            return lambda fr: min(max(a0(fr), a1(fr)), a2(fr))
        if fn == "atan2":
            a0, a1 = args
            return lambda fr: w(math.atan2(a0(fr), a1(fr)))
        f = _MATH[fn]
        a0 = args[0]
        return lambda fr: w(f(a0(fr)))  # f32: the f64 result rounded once; f64: as it is

    def _reducer(
        self, op: str, ty: Ty, elt_ty: Ty, span: Span, site: int, start: int = 0
    ) -> Callable[[Frame, list[Any], list[Any]], Any]:
        """Reduce a list of values (with their positions; `start`: the first candidate) to one result."""
        w = wrapper(ty.dtype)
        fail = self.fail
        record = self.record
        if op == "sum":
            if ty.dtype is DType.F32:

                def fsum(fr: Frame, vals: list[Any], pos: list[Any]) -> float:
                    acc = 0.0
                    for v in vals:
                        acc = f32(acc + v)
                    return acc

                return fsum
            if ty.dtype is DType.F64:

                def dsum(fr: Frame, vals: list[Any], pos: list[Any]) -> float:
                    acc = 0.0
                    for v in vals:
                        acc = acc + v  # in order, one rounding per addition (not math.fsum)
                    return acc

                return dsum
            return lambda fr, vals, pos: w(sum(vals))
        if op == "any":
            return lambda fr, vals, pos: any(vals)
        if op == "all":
            return lambda fr, vals, pos: all(vals)
        if op == "count":
            return lambda fr, vals, pos: sum(1 for v in vals if v)
        if op in ("min", "max", "argmin", "argmax"):
            f = elt_ty.dtype.is_float
            if f:
                empty: Any = math.inf if op == "min" else -math.inf
            else:
                empty = elt_ty.dtype.int_range[1 if op == "min" else 0] if elt_ty.enum is None else 0
            lt = _flt if f else (lambda x, y: x < y)
            better: Callable[[Any, Any], bool] = lt if op in ("min", "argmin") else (lambda x, y: lt(y, x))

            def best_of(vals: list[Any], pos: list[Any]) -> tuple[Any, Any]:
                """(position, value) of the first NaN, else of the first best value; (-1, empty) for none."""
                bp, bv, have = -1, empty, False
                for v, p in zip(vals, pos):
                    if not have or (bv == bv and (v != v or better(v, bv))):
                        bp, bv, have = p, v, True
                return bp, bv

            if op in ("min", "max"):
                return lambda fr, vals, pos: best_of(vals, pos)[1]
            return lambda fr, vals, pos: best_of(vals, pos)[0]

        def choice(fr: Frame, vals: list[Any], pos: list[Any]) -> int:
            mask = [bool(v) for v in vals]
            if not any(mask):
                fail(span, "choice(...) from an empty mask")
                return start
            i = rng.choice_mask(rng.fold_in(fr.key, site), mask)
            return int(record("choice", pos[i], span))

        return choice

    def x_reduce(self, e: ir.Reduce) -> Fn:
        elt = self.expr(e.elt)
        bound, rest = self._leading_bound(e)
        cond = self.expr(rest) if rest is not None else None
        var, lo, hi = e.var, e.start, e.stop
        choice = e.op == "choice"

        def stop(fr: Frame) -> int:
            """Where the loop ends: `hi`, or sooner when the condition starts with `var < bound`."""
            return hi if bound is None or lo >= hi else max(lo, min(hi, int(bound(fr))))

        if e.op == "count" and e.elt.ty.dtype is DType.BOOL:  # the commonest reduction, counted as it goes

            def count(fr: Frame) -> int:
                n = 0
                loc = fr.loc
                for i in range(lo, hi if bound is None else stop(fr)):
                    loc[var] = i
                    if (cond is None or cond(fr)) and elt(fr):
                        n += 1
                return n

            scan = self._count_scan(e, stop, count) if rest is None else None
            return count if scan is None else scan
        red = self._reducer(e.op, e.ty, e.elt.ty, e.span, e.site, e.start)

        def run(fr: Frame) -> Any:
            vals: list[Any] = []
            pos: list[int] = []
            loc = fr.loc
            for i in range(lo, hi if bound is None else stop(fr)):
                loc[var] = i
                if cond is None or cond(fr):
                    vals.append(elt(fr))
                    pos.append(i)
                elif choice:
                    vals.append(False)
                    pos.append(i)
            return red(fr, vals, pos)

        return run

    def _leading_bound(self, e: ir.Reduce) -> tuple[Fn | None, ir.Expr | None]:
        """(bound, rest of the condition) where `e.cond` is `var < x`, `var <= x`, or one of them `and rest`, with x
        the same at every step (no draw, call or reduction in it, nothing it reads bound by the loop): the loop then
        stops at x instead of testing each step (`count(deck[p, i] == c for i in range(60) if i < deck[p].count)`).
        x is evaluated once, before the first step, as the condition was at the first step: the same value, the
        same arms taken and the same error (strict) when it has one."""
        cond = e.cond
        if cond is None or e.op == "choice":  # choice keeps the filtered positions (as False)
            return None, cond
        first, rest = (cond.a, cond.b) if isinstance(cond, ir.Binary) and cond.op == "and" else (cond, None)
        if not (isinstance(first, ir.Binary) and first.op in ("<", "<=") and self._is_loop_var(first.a, e)):
            return None, cond
        bound_here = {e.var} | {n.var for n in ir.nodes((e.elt, cond)) if isinstance(n, ir.Reduce)}
        for n in ir.nodes(first.b):
            if isinstance(n, (ir.Random, ir.CallFn, ir.Reduce, ir.ReduceArray)):
                return None, cond
            if isinstance(n, (ir.Local, ir.Read)) and getattr(n, "space", "local") == "local" and n.name in bound_here:
                return None, cond
        x = self.expr(first.b)
        bound: Fn = x if first.op == "<" else (lambda fr: x(fr) + 1)
        return bound, rest

    def _count_scan(self, e: ir.Reduce, stop: Callable[[Frame], int], slow: Fn) -> Fn | None:
        """`count(a[..., i, ...] == x for i in range(lo, hi))` (or `!=`, the condition already a leading bound) as
        one `list.count` over the slots the loop reads, where a is an integer state field or constant table
        indexed by the loop variable in one place, and x and the other indices are the same at every step (no
        draw, call or reduction; nothing the loop binds). The first step's read and x are evaluated as the loop
        would evaluate them (same order, same strict-mode error). The checker keeps the range inside the axis
        (E053); IR built past it runs the loop, with its clamped reads and its error."""
        cmp = e.elt
        if not (isinstance(cmp, ir.Binary) and cmp.op in ("==", "!=") and not cmp.ty.shape):
            return None
        bound_here = {e.var} | {n.var for n in ir.nodes(e.elt) if isinstance(n, ir.Reduce)}

        def table_read(x: ir.Expr) -> tuple[ir.Read, int] | None:
            """(the read, the index position of the loop variable) under widening integer casts."""
            while isinstance(x, ir.Cast) and x.ty.enum is None and x.ty.dtype.is_int and x.x.ty.dtype.is_int:
                (lo_d, hi_d), (lo_s, hi_s) = x.ty.dtype.int_range, x.x.ty.dtype.int_range
                if not (lo_d <= lo_s and hi_s <= hi_d):
                    return None
                x = x.x
            if not (isinstance(x, ir.Read) and x.space in ("state", "const") and x.index and not x.ty.shape):
                return None
            if not x.ty.dtype.is_int or x.ty.dtype is DType.BOOL:
                return None
            at = [j for j, i in enumerate(x.index) if self._is_loop_var(i, e)]
            others = [i for j, i in enumerate(x.index) if j not in at]
            if len(at) != 1 or not all(self._same_each_step(i, bound_here) for i in others):
                return None
            return x, at[0]

        found = table_read(cmp.a)
        read_first = found is not None
        if found is None:
            found = table_read(cmp.b)
        want_e = cmp.b if read_first else cmp.a
        if found is None or want_e.ty.shape or not want_e.ty.dtype.is_int or want_e.ty.dtype is DType.BOOL:
            return None
        if not self._same_each_step(want_e, bound_here):
            return None
        read, axis = found
        get = self._getter(read.space, read.name)
        off, _ = self._offset(read.space, read.name, read.index, read.span)
        dims = self.shapes[(read.space, read.name)]
        dim, step = dims[axis], _strides(dims)[axis]
        want = self.expr(want_e)
        var, lo = e.var, e.start
        equal = cmp.op == "=="

        def count(fr: Frame) -> Any:
            end = stop(fr)
            if end <= lo:
                return 0
            if lo < 0 or end > dim:
                return slow(fr)
            fr.loc[var] = lo
            if read_first:
                first = off(fr)
                x = want(fr)
            else:
                x = want(fr)
                first = off(fr)
            n = get(fr)[first : first + (end - lo - 1) * step + 1 : step].count(x)
            return n if equal else end - lo - n

        return count

    @staticmethod
    def _same_each_step(x: ir.Expr, bound_here: set[str]) -> bool:
        """Whether `x` has the same value at every step of a loop binding `bound_here`: plain reads, locals,
        parameters, literals, casts and operators only (no draw, call, reduction or choice), none bound by it."""
        plain = (ir.Lit, ir.Local, ir.Param, ir.Read, ir.Cast, ir.Unary, ir.Binary)
        for n in ir.nodes(x):
            if not isinstance(n, ir._Expr):
                continue
            if not isinstance(n, plain) or (isinstance(n, ir.Binary) and n.ty.shape):
                return False
            if isinstance(n, (ir.Local, ir.Read)) and getattr(n, "space", "local") == "local" and n.name in bound_here:
                return False
        return True

    @staticmethod
    def _is_loop_var(a: ir.Expr, e: ir.Reduce) -> bool:
        """Whether `a` is the loop variable itself (or a cast to an integer type that holds every value of it)."""
        if isinstance(a, ir.Local):
            return a.name == e.var
        if isinstance(a, ir.Cast) and a.ty.dtype.is_int and not a.ty.shape:
            low, high = a.ty.dtype.int_range
            return low <= e.start and e.stop - 1 <= high and Compiler._is_loop_var(a.x, e)
        return False

    def x_reduce_array(self, e: ir.ReduceArray) -> Fn:
        x = self.expr(e.x)
        red = self._reducer(e.op, e.ty, e.x.ty, e.span, e.site)
        return lambda fr: red(fr, x(fr), list(range(math.prod(e.x.ty.shape))))

    def x_random(self, e: ir.Random) -> Fn:
        args = [self.expr(a) for a in e.args]
        site, span, rec = e.site, e.span, self.record
        if e.dist == "uniform":
            lo, hi = args
            return lambda fr: rec("uniform", rng.uniform_scalar(rng.fold_in(fr.key, site), lo(fr), hi(fr)), span)
        if e.dist == "randint":
            lo, hi = args
            return lambda fr: rec("randint", rng.randint_scalar(rng.fold_in(fr.key, site), lo(fr), hi(fr)), span)
        p = args[0]
        return lambda fr: rec("bernoulli", rng.bernoulli_scalar(rng.fold_in(fr.key, site), p(fr)), span)

    def x_call_fn(self, e: ir.CallFn) -> Fn:
        args = [self.expr(a) for a in e.args]
        name = e.fn
        fns = self.compiled_fns

        def call(fr: Frame) -> Any:
            return fns[name](fr, [a(fr) for a in args])

        return call

    def x_zone_find(self, e: ir.ZoneFind) -> Fn:
        base, cnt = self.zone(e.zone)
        v = self.expr(e.value)
        z = e.zone.name
        zc = z + ".count"
        find_index = e.op == "index_of"

        def find(fr: Frame) -> Any:
            b, c = base(fr), cnt(fr)
            n = fr.st[zc][c]
            data = fr.st[z]
            want = v(fr)
            for i in range(n):
                if data[b + i] == want:
                    return i if find_index else True
            return -1 if find_index else False

        return find

    def zone(self, z: ir.ZoneRef, write: bool = False) -> tuple[Fn, Fn]:
        """Closures for the flat offset of the zone's first slot and of its count (-1 for a bad write)."""
        off, _ = self._offset("state", z.name + ".count", z.index, z.span, write)
        cap = z.capacity
        return (lambda fr: off(fr) * cap), off

    # ---- array literals, elementwise maps, several values (language 1.1) -----------------------------------
    def x_array(self, e: ir.ArrayLit) -> Fn:
        """`[a, b, c]`: the items' values one after the other (rows flattened, row-major)."""
        items = [self.expr(x) for x in e.items]
        if e.ty.shape[1:]:
            return lambda fr: [v for item in items for v in item(fr)]
        return lambda fr: [item(fr) for item in items]

    def x_map(self, e: ir.Map) -> Fn:
        """The scalar `body` at each position, its locals bound to the arrays' elements there (scalars: as they are)."""
        args = [self.expr(a) for a in e.args]
        body = self.expr(e.body)
        arrays = [bool(a.ty.shape) for a in e.args]
        names = e.names
        n = math.prod(e.ty.shape)

        def run(fr: Frame) -> list[Any]:
            vals = [a(fr) for a in args]
            saved = fr.loc
            fr.loc = {}
            try:
                out = []
                for i in range(n):
                    for name, v, array in zip(names, vals, arrays):
                        fr.loc[name] = v[i] if array else v
                    out.append(body(fr))
            finally:
                fr.loc = saved
            return out

        return run

    def x_values(self, e: ir.Values) -> Fn:
        """`return a, b`: a tuple of the values."""
        items = [self.expr(x) for x in e.items]
        return lambda fr: tuple(item(fr) for item in items)

    def s_unpack(self, s: ir.Unpack) -> Op:
        """`x, v = f(...)`: each value of the call into its local (of the value's type)."""
        call = self.expr(s.value)
        puts = [self.store(t) for t in s.targets]

        def unpack(fr: Frame) -> None:
            for put, v in zip(puts, call(fr)):
                put(fr, v)

        return unpack

    # ---- statements ----------------------------------------------------
    def block(self, stmts: Sequence[ir.Stmt]) -> Op:
        ops = [self.stmt(s) for s in stmts]
        if len(ops) == 1:
            return ops[0]

        def run(fr: Frame) -> None:
            for op in ops:
                op(fr)

        return run

    def stmt(self, s: ir.Stmt) -> Op:
        return getattr(self, "s_" + s.kind)(s)  # type: ignore[no-any-return]

    def s_let(self, s: ir.LetS) -> Op:
        v = self.expr(s.value)
        n = s.name

        def let(fr: Frame) -> None:
            fr.loc[n] = v(fr)

        return let

    def store(self, t: ir.Target) -> Callable[[Frame, Any], None]:
        """A closure that writes a value (scalar, or array for array targets) to target `t`."""
        if t.space == "local" and t.index:  # `y[i] = v` on an array local: a new list (no aliasing)
            self.shapes[("local", t.name)] = t.dims
            off_l, rest_l = self._offset("local", t.name, t.index, t.span, write=True)
            nl = t.name

            def set_elem(fr: Frame, v: Any) -> None:
                o = off_l(fr)
                if o >= 0:
                    new = list(fr.loc[nl])
                    new[o : o + rest_l] = v if isinstance(v, list) else [v] * rest_l
                    fr.loc[nl] = new

            return set_elem
        if t.space == "local":
            n = t.name

            def set_local(fr: Frame, v: Any) -> None:
                fr.loc[n] = v

            return set_local
        get = self._getter(t.space, t.name)
        off, rest = self._offset(t.space, t.name, t.index, t.span, write=True)
        if not t.ty.shape:

            def set_one(fr: Frame, v: Any) -> None:
                o = off(fr)
                if o >= 0:
                    get(fr)[o] = v

            return set_one

        def set_many(fr: Frame, v: Any) -> None:
            o = off(fr)
            if o < 0:
                return
            get(fr)[o : o + rest] = v if isinstance(v, list) else [v] * rest

        return set_many

    def s_assign(self, s: ir.Assign) -> Op:
        v = self.expr(s.value)
        put = self.store(s.target)
        return lambda fr: put(fr, v(fr))

    def s_if(self, s: ir.IfS) -> Op:
        c = self.decision(s.cond)
        then = self.block(s.then)
        orelse = self.block(s.orelse) if s.orelse else None

        def if_(fr: Frame) -> None:
            if c(fr):
                then(fr)
            elif orelse is not None:
                orelse(fr)

        return if_

    def s_switch(self, s: ir.Switch) -> Op:
        subj = self.decision(s.subject)
        table: dict[int, Op] = {}
        for members, body in s.cases:
            op = self.block(body)
            for m in members:
                table[m] = op
        default = self.block(s.default)

        def switch(fr: Frame) -> None:
            table.get(subj(fr), default)(fr)

        return switch

    def s_for(self, s: ir.ForS) -> Op:
        body = self.block(s.body)
        var, lo, hi, lid = s.var, s.start, s.stop, s.loop_id
        if not s.random:

            def loop(fr: Frame) -> None:
                loc = fr.loc
                for i in range(lo, hi):
                    loc[var] = i
                    body(fr)

            return loop

        def rloop(fr: Frame) -> None:
            outer = fr.key
            base = rng.fold_in(outer, lid)
            for i in range(lo, hi):
                fr.loc[var] = i
                fr.key = rng.fold_in(base, i)
                body(fr)
            fr.key = outer

        return rloop

    def s_zone_op(self, s: ir.ZoneOp) -> Op:
        base, cnt = self.zone(s.zone, write=True)
        z, zc, cap = s.zone.name, s.zone.name + ".count", s.zone.capacity
        fail, span, op = self.fail, s.span, s.op
        idx = self.expr(s.index) if s.index is not None else None
        val = self.expr(s.value) if s.value is not None else None
        out = self.store(s.out) if s.out is not None else None
        if s.out is not None and s.out.ty.dtype != s.zone.elem.dtype:
            put, conv = out, wrapper(s.out.ty.dtype)
            out = lambda fr, v: put(fr, conv(v)) if put is not None else None
        site = s.site
        record = self.record
        compiler = self
        zidx = [self.expr(i) for i in s.zone.index]

        def zop(fr: Frame) -> None:
            b, co = base(fr), cnt(fr)
            if co < 0:
                if out is not None:
                    out(fr, 0)
                return
            data, counts = fr.st[z], fr.st[zc]
            n = counts[co]
            if op == "push":
                assert val is not None
                v = val(fr)
                if n >= cap:
                    fail(span, f"push onto full zone '{z}' (capacity {cap})")
                    return
                data[b + n] = v
                counts[co] = n + 1
            elif op == "insert":
                assert val is not None and idx is not None
                i, v = idx(fr), val(fr)
                if n >= cap or not 0 <= i <= n:
                    fail(span, f"insert at {i} into zone '{z}' holding {n} of {cap}")
                    return
                data[b + i + 1 : b + n + 1] = data[b + i : b + n]
                data[b + i] = v
                counts[co] = n + 1
            elif op == "pop":
                got = 0
                if n == 0:
                    fail(span, f"pop from empty zone '{z}'")
                else:
                    got = data[b + n - 1]
                    data[b + n - 1] = 0
                    counts[co] = n - 1
                if out is not None:
                    out(fr, got)
            elif op == "remove_at":
                assert idx is not None
                i = idx(fr)
                got = 0
                if not 0 <= i < n:
                    fail(span, f"remove_at {i} from zone '{z}' holding {n}")
                else:
                    got = data[b + i]
                    data[b + i : b + n - 1] = data[b + i + 1 : b + n]
                    data[b + n - 1] = 0
                    counts[co] = n - 1
                if out is not None:
                    out(fr, got)
            elif op == "clear":
                data[b : b + cap] = [0] * cap
                counts[co] = 0
            else:  # shuffle
                order = rng.shuffle_order(rng.fold_in(fr.key, site), cap, n)
                old = data[b : b + cap]
                data[b : b + cap] = [old[o] for o in order]
                if compiler.chance is not None:
                    where = tuple(int(i(fr)) for i in zidx)
                    record("shuffle", tuple(data[b : b + n]), span, z, where)

        return zop

    def s_call_proc(self, s: ir.CallProc) -> Op:
        args = [self.expr(a) for a in s.args]
        proc = self.callables[s.proc]
        names = [n for n, _ in proc.params]
        site = s.site
        fns = self.compiled_fns
        pname = s.proc
        random = proc.random

        def call(fr: Frame) -> None:
            sub = fr.child(rng.fold_in(fr.key, site) if random else fr.key)
            sub.loc = dict(zip(names, [a(fr) for a in args]))
            fns[pname](sub, [])

        return call

    def s_return(self, s: ir.ReturnS) -> Op:
        raise AssertionError("return is compiled by the function compiler")

    def s_check(self, s: ir.CheckS) -> Op:
        """A spec bug only the reference reports (a `while` loop's cap); the fallback does nothing."""
        if not self.strict:
            return lambda fr: None
        cond, fail, span, message = self.expr(s.cond), self.fail, s.span, s.message
        lid, at = s.loop_id, s.iteration

        def check(fr: Frame) -> None:
            outer = fr.key
            if lid is not None:
                fr.key = rng.fold_in(rng.fold_in(outer, lid), at)
            try:
                if cond(fr):
                    fail(span, message)
            finally:
                fr.key = outer

        return check

    def compile_callables(self) -> None:
        for c in self.spec.callables:
            names = [n for n, _ in c.params]
            if c.returns is not None:
                body = self.block(c.body[:-1])
                last = c.body[-1]
                assert isinstance(last, ir.ReturnS)
                result = self.expr(last.value)

                def fn(
                    fr: Frame, args: list[Any], body: Op = body, result: Fn = result, names: list[str] = names
                ) -> Any:
                    sub = fr.child(fr.key)
                    sub.loc = dict(zip(names, args))
                    body(sub)
                    return result(sub)

                self.compiled_fns[c.name] = fn
            else:
                pbody = self.block(c.body)

                def proc(fr: Frame, args: list[Any], pbody: Op = pbody) -> None:
                    pbody(fr)

                self.compiled_fns[c.name] = proc


_MATH: dict[str, Callable[[float], float]] = {
    "sqrt": lambda x: math.sqrt(x) if x >= 0 else (x if math.isnan(x) else math.nan),
    "sin": lambda x: math.sin(x) if math.isfinite(x) else math.nan,
    "cos": lambda x: math.cos(x) if math.isfinite(x) else math.nan,
    "tan": lambda x: math.tan(x) if math.isfinite(x) else math.nan,
    "exp": lambda x: math.exp(x) if x < 710 else (math.inf if x == x else x),  # exp(NaN) is NaN
    "log": lambda x: math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan),
    "tanh": math.tanh,
    "floor": lambda x: math.copysign(float(math.floor(x)), x) if math.isfinite(x) else x,  # IEEE: floor(-0.0) == -0.0
    "ceil": lambda x: math.copysign(float(math.ceil(x)), x) if math.isfinite(x) else x,  # ceil(-0.5) == -0.0
}


def _fdiv(x: float, y: float) -> float:
    if y == 0:
        if x == 0 or math.isnan(x):
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return f32(x / y)


def _ffloordiv(x: float, y: float) -> float:
    """f32 `x // y`: the IEEE floor of the rounded quotient; subnormal operands and quotient count as zeros."""
    return _MATH["floor"](ftz(_fdiv(ftz(x), ftz(y))))


def _fmod(x: float, y: float) -> float:
    """f32 `x % y`: Python's float modulo (fmod, then the divisor's sign) on f32 values, rounded once; subnormal
    operands and results count as zeros; NaN for a zero divisor, an infinite `x` or a NaN."""
    x, y = ftz(x), ftz(y)
    if y == 0 or not math.isfinite(x) or math.isnan(y):
        return math.nan
    r = ftz(math.fmod(x, y))  # exact
    if r == 0:
        return math.copysign(0.0, y)
    if (r < 0) != (y < 0):
        return ftz(f32(r + y))
    return r


def _flt(x: float, y: float) -> bool:
    """`x < y` with -0.0 before +0.0 (the order of f32 `min`/`max`, IEEE 754-2019 minimum/maximum)."""
    return x < y or (x == y and math.copysign(1.0, x) < math.copysign(1.0, y))


def _fminmax(smaller: bool, x: float, y: float) -> float:
    """Two-argument f32 `min` (`smaller`) or `max`: NaN if either is NaN, and -0.0 < +0.0."""
    if math.isnan(x) or math.isnan(y):
        return math.nan
    return (x if _flt(x, y) else y) if smaller else (y if _flt(x, y) else x)


@dataclass(frozen=True)
class State:
    """A pgx-style environment state; `data` holds every storage array of the spec (flat, row-major)."""

    current_player: int
    observation: Any
    rewards: np.ndarray
    terminated: bool
    truncated: bool
    legal_action_mask: np.ndarray
    step_count: int
    data: dict[str, list[Any]] = field(repr=False)


def _runtime_params(spec: ir.SpecIR, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The runtime params: the defaults, with `params` (typed as declared) over them."""
    out = {p.name: _typed(p.ty, p.default) for p in spec.params if not p.static}
    for k, v in checked_params(spec, params).items():
        ty = next(p.ty for p in spec.params if p.name == k)
        out[k] = wrapper(ty.dtype)(v)
    return out


class ReferenceEnv:
    """The reference interpreter of a spec with the envc runtime API (init/step/state_to_dict/...)."""

    backend = "reference"

    def __init__(
        self,
        spec: ir.SpecIR,
        params: Mapping[str, Any] | None = None,
        strict: bool = True,
        arms: set[tuple[Span, Any]] | None = None,
    ):
        self.spec = spec
        self.params = _runtime_params(spec, params)
        self.num_players = spec.players
        self.num_actions = spec.num_actions
        c = Compiler(spec, strict)
        c.arms = arms  # the decisions taken (envc/coverage.py); None compiles no probe at all
        c.compile_callables()
        self._c = c
        self._reset = c.block(spec.reset)
        self._effects = [c.block(a.effect) for a in spec.actions]
        self._legal = [c.decision(a.legal) for a in spec.actions]
        self._box = c.block(spec.box.effect) if spec.box is not None else None
        self._rules = [(c.decision(r.when), c.block(r.body)) for r in spec.rules]
        self._reward = c.expr(spec.reward)
        self._term = c.expr(spec.terminated)
        self._trunc = c.expr(spec.truncated)
        self._obs = c.block(spec.observation)
        self._inv = [(n, c.expr(x)) for n, x in spec.invariants]
        self._decode: list[tuple[int, list[tuple[str, int, int]]]] = []
        for kind, a in enumerate(spec.actions):
            for local in range(a.size):
                vals: list[tuple[str, int, int]] = []
                rem = local
                for p in reversed(a.params):
                    size = p.stop - p.start
                    vals.append((p.name, p.start + rem % size, size))
                    rem //= size
                self._decode.append((kind, list(reversed(vals))))
        self._field_info = {f.name: f for f in spec.fields}
        self._zero_key = (0, 0)
        # what the outputs read as `action` when no action was applied (section 14): zeros, or the id -1
        self._no_action: list[Any] = [0.0] * math.prod(spec.box.shape) if spec.box is not None else [-1]

    @property
    def chance_log(self) -> list[ChanceEvent] | None:
        """Every random outcome of init/step in order while a list is set (None: not recording)."""
        return self._c.chance

    @chance_log.setter
    def chance_log(self, events: list[ChanceEvent] | None) -> None:
        self._c.chance = events

    # ---- derived parts ---------------------------------------------------
    def _frame(self, data: dict[str, list[Any]], key: rng.Key) -> Frame:
        return Frame(data, key, self.params)

    def observe(self, state: State, player: int) -> Any:
        """The observation of `player` in `state` alone: it reads no action (`action` is zeros, or -1)."""
        return self._observe(state.data, player)

    def _observe(self, data: dict[str, list[Any]], player: int, act: list[Any] | None = None) -> Any:
        obs = {o.name: [_zero_of(o.ty)] * math.prod(o.ty.shape) for o in self.spec.obs_fields}
        fr = Frame(data, self._zero_key, self.params, obs, self._no_action if act is None else act)
        fr.loc["p"] = player
        self._obs(fr)
        arrays: dict[str, np.ndarray] = {
            o.name: np.array(obs[o.name], dtype=NP_DTYPE[o.ty.dtype]).reshape(o.ty.shape) for o in self.spec.obs_fields
        }
        if len(arrays) == 1:
            return next(iter(arrays.values()))
        return arrays

    def _mask(self, data: dict[str, list[Any]]) -> np.ndarray:
        fr = self._frame(data, self._zero_key)
        out = np.zeros(self.num_actions, dtype=np.bool_)
        for a_id, (k, vals) in enumerate(self._decode):
            for n, v, _ in vals:
                fr.loc[n] = v
            out[a_id] = bool(self._legal[k](fr))
        return out

    def _finish(
        self, data: dict[str, list[Any]], rewards: np.ndarray, term: bool, trunc: bool, act: list[Any] | None = None
    ) -> State:
        """The state with its outputs; the observation reads `act`, the action applied (None: none)."""
        mask = np.ones(self.num_actions, dtype=np.bool_) if (term or trunc) else self._mask(data)
        cp = data["current_player"][0]
        return State(
            current_player=cp,
            observation=self._observe(data, cp, act),
            rewards=rewards,
            terminated=term,
            truncated=trunc,
            legal_action_mask=mask,
            step_count=data["step_count"][0],
            data=data,
        )

    # ---- API ---------------------------------------------------------------
    def with_params(self, params: Mapping[str, Any]) -> ReferenceEnv:
        """The same compiled interpreter with other runtime params."""
        other = copy.copy(self)
        other.params = _runtime_params(self.spec, params)
        return other

    def init(self, key: Any) -> State:
        """A fresh episode: field inits, then the reset body keyed by `key` (None: the zero key, as `step`)."""
        data = {f.name: [_typed(f.ty, v) for v in f.init] for f in self.spec.fields}
        self._reset(self._frame(data, rng.as_key(key) if key is not None else self._zero_key))
        return self._finish(data, np.zeros(self.num_players, np.float32), False, False)

    def step(self, state: State, action: Any, key: Any = None) -> State:
        """One transition: action effect, automatic rules, then rewards and termination."""
        action = checked_action(self.spec, action)
        if state.terminated or state.truncated:
            return replace(state, rewards=np.zeros(self.num_players, np.float32))
        k = rng.as_key(key) if key is not None else self._zero_key
        data = {n: v.copy() for n, v in state.data.items()}
        data["step_count"][0] = wrapper(DType.I32)(data["step_count"][0] + 1)
        fr = self._frame(data, k)
        if self._box is not None:
            fr.act = [f32(float(v)) for v in action.reshape(-1)]
            self._box(fr)
        else:
            a = action
            if not (0 <= a < self.num_actions) or not state.legal_action_mask[a]:
                pen = self.spec.illegal_action_penalty
                rewards = np.full(self.num_players, -pen * (self.num_players - 1), np.float32)
                if 0 <= state.current_player < self.num_players:  # out of range (an injected state): nobody
                    rewards[state.current_player] = pen
                return self._finish(data, rewards, True, False)
            kind, vals = self._decode[a]
            for n, v, _ in vals:
                fr.loc[n] = v
            fr.act = [a]  # the id that reward, terminated, truncated and the observation read
            self._effects[kind](fr)
        for when, body in self._rules:
            fr.loc = {}
            if when(fr):
                body(fr)
        fr.loc = {}
        rewards = np.zeros(self.num_players, np.float32)
        for p in range(self.num_players):
            fr.loc["p"] = p
            rewards[p] = self._reward(fr)
        return self._finish(data, rewards, bool(self._term(fr)), bool(self._trunc(fr)), fr.act)

    def invariants(self, state: State) -> list[str]:
        """Names of the declared invariants that `state` violates."""
        fr = self._frame(state.data, self._zero_key)
        return [n for n, f in self._inv if not f(fr)]

    def state_to_dict(self, state: State) -> dict[str, np.ndarray]:
        """Every field as a numpy array, plus rewards/terminated/truncated/legal_action_mask/observation."""
        out: dict[str, np.ndarray] = {}
        for f in self.spec.fields:
            out[f.name] = np.array(state.data[f.name], dtype=NP_DTYPE[f.ty.dtype]).reshape(f.ty.shape)
        out["rewards"] = np.asarray(state.rewards, np.float32)
        out["terminated"] = np.asarray(state.terminated, np.bool_)
        out["truncated"] = np.asarray(state.truncated, np.bool_)
        out["legal_action_mask"] = np.asarray(state.legal_action_mask)
        obs = state.observation
        if isinstance(obs, dict):
            for k, v in obs.items():
                out[f"observation.{k}"] = v
        else:
            out["observation"] = obs
        return out

    def state_from_dict(self, d: Mapping[str, Any]) -> State:
        """Build a state from `state_to_dict`-style arrays; mask and observation are recomputed."""
        d = checked_state(self.spec, d)
        data: dict[str, list[Any]] = {}
        for f in self.spec.fields:
            arr = d[f.name]
            w = wrapper(f.ty.dtype)
            conv = float if f.ty.dtype.is_float else (bool if f.ty.dtype is DType.BOOL else int)
            data[f.name] = [w(conv(v)) for v in arr.reshape(-1).tolist()]
        rewards = np.asarray(d.get("rewards", np.zeros(self.num_players)), np.float32)
        return self._finish(data, rewards, bool(d.get("terminated", False)), bool(d.get("truncated", False)))

    def call(self, name: str, d: Mapping[str, Any], args: Sequence[Any], key: rng.Key) -> list[np.ndarray]:
        """Spec function or procedure `name` called alone on the state `d` with `args`: a function's results (one
        array each), or a procedure's state afterwards (one array per field, in the spec's order)."""
        c = self._c.callables[name]
        data = {k: list(v) for k, v in self.state_from_dict(d).data.items()}
        typed = []
        for a, (_, ty) in zip(args, c.params):
            conv = float if ty.dtype.is_float else (bool if ty.dtype is DType.BOOL else int)
            flat = [_typed(ty, conv(v)) for v in np.asarray(a).reshape(-1).tolist()]
            typed.append(flat if ty.shape else flat[0])
        fr = self._frame(data, key)
        fn = self._c.compiled_fns[name]
        if c.returns is None:
            sub = fr.child(key)
            sub.loc = {n: v for (n, _), v in zip(c.params, typed)}
            fn(sub, [])
            return [np.array(data[f.name], NP_DTYPE[f.ty.dtype]).reshape(f.ty.shape) for f in self.spec.fields]
        out = fn(fr, typed)
        types = c.results or (c.returns,)
        values = out if c.results else (out,)
        return [np.array(v, NP_DTYPE[t.dtype]).reshape(t.shape) for v, t in zip(values, types)]


def _typed(ty: Ty, v: Any) -> Any:
    """A declared value (param default, init, constant) in its type: f32 rounded, ints wrapped."""
    return v if ty.dtype is DType.BOOL else wrapper(ty.dtype)(v)


def _zero_of(ty: Ty) -> Any:
    if ty.dtype is DType.BOOL:
        return False
    return 0.0 if ty.dtype.is_float else 0


class GymnaxLike:
    """A gymnax-style single-agent wrapper around an env: reset/step with same-step auto-reset."""

    def __init__(self, env: ReferenceEnv):
        if env.num_players != 1:
            raise ValueError("the gymnax wrapper is for single-agent specs")
        self.env = env

    @property
    def default_params(self) -> dict[str, Any]:
        """Runtime params of the spec."""
        return dict(self.env.params)

    def reset(self, key: Any, params: Any = None) -> tuple[Any, State]:
        """(obs, state) of a new episode."""
        s = self.env.init(key)
        return s.observation, s

    def step(
        self, key: Any, state: State, action: Any, params: Any = None
    ) -> tuple[Any, State, float, bool, bool, dict[str, Any]]:
        """gymnax 1.x `step`: (obs, state, reward, terminated, truncated, info), resetting on done."""
        key_step, key_reset = rng.split(rng.as_key(key))
        s = self.env.step(state, action, key_step)
        info = {"final_observation": s.observation}
        reward = float(s.rewards[0])
        if s.terminated or s.truncated:
            r = self.env.init(key_reset)
            return r.observation, r, reward, s.terminated, s.truncated, info
        return s.observation, s, reward, s.terminated, s.truncated, info
