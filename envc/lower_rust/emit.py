"""IR -> Rust source: one Rust function per generated function, statements as Rust statements.

Values keep their spec types (`i8` .. `f32`, enums as `i8` member indices); integers wrap with `wrapping_*`
and floor-divide with `envc_runtime::ops::Int`; reads clamp their indices and writes out of range are dropped
(`ops::ix`, `ops::wx`) unless the index is statically in range. Reductions become iterator chains; `any`, `all`
and `count` over a cheap, draw-free body (`Analysis.cost` under `BRANCHLESS_COST`) are folded without early
exits, since bodies have no side effects and a data-dependent exit costs more in mispredicted branches than
the work it skips (connect four's win check: 40% more steps/s). Every identifier of a spec name comes from
`names.Names`; the code's own temporaries are `__<word><n>` (`Emitter.fresh`), which no spec name becomes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from envc import ir, mathops
from envc.intervals import assigned_locals, fixed_ranges, interval, keep_let
from envc.ir import DType, Ty
from envc.lower_rust import mathops as rust_mathops
from envc.lower_rust.names import Names, comment_lines

RUST = {
    DType.BOOL: "bool",
    DType.I8: "i8",
    DType.I16: "i16",
    DType.I32: "i32",
    DType.U32: "u32",
    DType.F32: "f32",
    DType.F64: "f64",
}
ARRAY_KIND = {
    DType.BOOL: "Bool",
    DType.I8: "I8",
    DType.I16: "I16",
    DType.I32: "I32",
    DType.U32: "U32",
    DType.F32: "F32",
    DType.F64: "F64",
}


def f32_literal(v: float) -> str:
    """A Rust f32 literal (the value rounded to f32; beyond f32's range, an infinity)."""
    with np.errstate(over="ignore"):
        x = np.float32(v)
    if math.isnan(x):
        return "f32::NAN"
    if math.isinf(x):
        return "f32::INFINITY" if x > 0 else "f32::NEG_INFINITY"
    text = str(x)
    if not any(c in text for c in ".e"):
        text += ".0"
    return f"{text}f32"


def f64_literal(v: float) -> str:
    """A Rust f64 literal (the shortest text that reads back as the same double)."""
    if math.isnan(v):
        return "f64::NAN"
    if math.isinf(v):
        return "f64::INFINITY" if v > 0 else "f64::NEG_INFINITY"
    text = repr(float(v))
    if not any(c in text for c in ".e"):
        text += ".0"
    return f"{text}f64"


# f64 math functions of one argument: std methods (the f32 ones go through `ops`, for sin and cos's polynomial).
F64_METHOD = {"sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp", "log": "ln", "tanh": "tanh"}
F64_METHOD |= {"floor": "floor", "ceil": "ceil"}


def int_literal(v: int, dtype: DType) -> str:
    """A typed Rust integer literal (the type's MIN as a path: `-128i8` does not lex as one token)."""
    lo, hi = dtype.int_range
    v = (v - lo) % (hi - lo + 1) + lo
    if v == lo and lo < 0:
        return f"{RUST[dtype]}::MIN"
    return f"{v}{RUST[dtype]}"


def is_atomic(code: str) -> bool:
    """Can `code` be an operand or a method receiver without parentheses?"""
    if not code or code[0] in "-!&*":
        return False
    depth = 0
    for ch in code:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and (ch == " " or ch in "+-*/%^|<>=?,"):
            return False
    return True


def _shape_key(e: ir.Expr) -> str:
    """An expression without its source positions: two spellings of the same index compare equal."""

    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k != "span"}
        return [strip(v) for v in x] if isinstance(x, list) else x

    return json.dumps(strip(e.model_dump(mode="json")), sort_keys=True)


def paren(code: str) -> str:
    """`code`, parenthesized unless atomic."""
    return code if is_atomic(code) else f"({code})"


def strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of `shape`."""
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


def conv(code: str, src: Ty, dst: Ty, enums: dict[str, int]) -> str:
    """Convert a value of type `src` to `dst` with the language's cast rules (6.6)."""
    if src.dtype == dst.dtype and src.enum == dst.enum:
        return code
    if dst.dtype is DType.BOOL:
        if src.dtype is DType.BOOL:
            return code
        zero = "0.0" if src.dtype.is_float else "0"
        return f"{paren(code)} != {zero}"
    if dst.enum is not None:
        if src.dtype is DType.BOOL:
            code = f"{paren(code)} as i32"
        n = enums[dst.enum]
        return f"ops::to_enum({code}, {n})" if n <= 127 else f"ops::to_enum16({code}, {n})"  # i8 / i16 storage
    if src.dtype is DType.BOOL:
        return f"{paren(code)} as u8 as {RUST[dst.dtype]}"
    if src.dtype == dst.dtype:
        return code
    return f"{paren(code)} as {RUST[dst.dtype]}"


# f64 `//` and `%` (rust_runtime/src/f64x.rs).
F64_DIVMOD = ("rt::f64x::floor_div", "rt::f64x::floor_mod")

# Reductions whose whole evaluation costs at most this (in `Analysis.cost` units) are folded branch-free.
BRANCHLESS_COST = 512.0


@dataclass
class Ctx:
    """What a body can see: the key variable (None: no randomness), known local ranges, obs and action."""

    key: str | None = None
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    obs: bool = False
    action: bool = False
    checked: frozenset[tuple[str, int]] = frozenset()  # (index expression, dim) a surrounding write guard checked

    def with_range(self, name: str, lo: int, hi: int) -> Ctx:
        """A copy knowing that local `name` lies in [lo, hi)."""
        return replace(self, ranges={**self.ranges, name: (lo, hi)})


class Analysis:
    """Facts about code, through the callables it calls: does it draw, read runtime params, read the state?"""

    def __init__(self, spec: ir.SpecIR):
        self.spec = spec
        self.callables = {c.name: c for c in spec.callables}
        self._memo: dict[tuple[str, str], bool] = {}
        self._cost: dict[str, float] = {}

    def _direct(self, node: object, what: str) -> bool:
        if what == "draws":
            return (
                isinstance(node, ir.Random)
                or (isinstance(node, ir.ZoneOp) and node.op == "shuffle")
                or (isinstance(node, (ir.Reduce, ir.ReduceArray)) and node.op == "choice")
            )
        if what == "params":
            return isinstance(node, ir.Param)
        if what == "action":
            return isinstance(node, ir.Read) and node.space == "action"
        return (isinstance(node, ir.Read) and node.space == "state") or isinstance(node, (ir.ZoneFind, ir.ZoneOp))

    def uses(self, node: object, what: str) -> bool:
        """`what` is draws, params, state or action (reads the action just taken)."""
        if isinstance(node, tuple):
            return any(self.uses(x, what) for x in node)
        if self._direct(node, what):
            return True
        if isinstance(node, (ir.CallProc, ir.CallFn)):
            if what in ("params", "state"):
                return True  # every callee takes the state and the params
            name = node.proc if isinstance(node, ir.CallProc) else node.fn
            k = (name, what)
            if k not in self._memo:
                self._memo[k] = False  # no recursion in specs; keeps this total
                self._memo[k] = self.uses(self.callables[name].body, what)
            if self._memo[k]:
                return True
        if isinstance(node, ir.Target) and node.space == "state" and what == "state":
            return True  # a state write; for params and draws its indices are searched below (`a[g(i)] = 1`)
        if not isinstance(node, (ir._Expr, ir._Stmt, ir.ZoneRef, ir.Target)):
            return False
        return any(self.uses(getattr(node, k), what) for k in type(node).model_fields if k not in ("ty", "span"))

    def draws(self, node: object) -> bool:
        """Does this code draw randomness (directly or in a called procedure)?"""
        return self.uses(node, "draws")

    def cost(self, node: object) -> float:
        """A rough count of the operations evaluating this code takes, called functions included; infinite for
        code that loops over zones, writes, draws or calls procedures."""
        if isinstance(node, tuple):
            return sum(self.cost(x) for x in node)
        if node is None:
            return 0.0
        if isinstance(node, ir.Reduce):
            if node.op == "choice":
                return math.inf
            return max(node.stop - node.start, 0) * (1 + self.cost(node.elt) + self.cost(node.cond))
        if isinstance(node, ir.ReduceArray):
            return math.inf if node.op == "choice" else 1 + self.cost(node.x) + math.prod(node.x.ty.shape)
        if isinstance(node, ir.CallFn):
            if node.fn not in self._cost:
                self._cost[node.fn] = math.inf  # no recursion in specs; keeps this total
                self._cost[node.fn] = self.cost(self.callables[node.fn].body)
            return 1 + self.cost(node.args) + self._cost[node.fn]
        if isinstance(node, (ir.LetS, ir.ReturnS)):
            return self.cost(node.value)
        if isinstance(node, ir.IfS):
            return self.cost(node.cond) + self.cost(node.then) + self.cost(node.orelse)
        if isinstance(node, (ir.Random, ir.ZoneFind, ir._Stmt)):
            return math.inf
        if isinstance(node, ir.Read):
            return 2 + self.cost(node.index)
        if isinstance(node, ir._Expr):
            return 1 + sum(self.cost(getattr(node, k)) for k in type(node).model_fields if k not in ("ty", "span"))
        return 0.0

    @staticmethod
    def mentions(node: object, names: set[str]) -> set[str]:
        """Which of the locals `names` does this code read?"""
        if isinstance(node, tuple):
            out: set[str] = set()
            for x in node:
                out |= Analysis.mentions(x, names)
            return out
        if isinstance(node, ir.Local):
            return {node.name} & names
        if not isinstance(node, (ir._Expr, ir._Stmt, ir.ZoneRef, ir.Target)):
            return set()
        out = {node.name} & names if isinstance(node, ir.Read) and node.space == "local" else set()  # `y[i]`
        for k in type(node).model_fields:
            if k not in ("ty", "span"):
                out |= Analysis.mentions(getattr(node, k), names)
        return out


def _uniform_draws(e: object) -> list[ir.Random]:
    """The `uniform` draws of an expression evaluated with its function's key (not inside reductions or calls)."""
    if isinstance(e, ir.Random):
        return [e] if e.dist == "uniform" else []
    if isinstance(e, (ir.Reduce, ir.ReduceArray, ir.CallFn, ir.ZoneFind)) or not isinstance(e, ir._Expr):
        return []
    return [d for k in type(e).model_fields if k not in ("ty", "span") for d in _uniform_draws(getattr(e, k))]


class Emitter:
    """Emits the body of one generated function."""

    def __init__(self, spec: ir.SpecIR, names: Names, analysis: Analysis):
        self.spec = spec
        self.names = names
        self.an = analysis
        self.consts = fixed_ranges(spec)
        self.lines: list[str] = []
        self.depth = 1
        self.tmp = 0
        self.shapes: dict[tuple[str, str], tuple[int, ...]] = {}
        for f in spec.fields:
            self.shapes[("state", f.name)] = f.ty.shape
        for c in spec.consts:
            self.shapes[("const", c.name)] = c.ty.shape
        for o in spec.obs_fields:
            self.shapes[("obs", o.name)] = o.ty.shape
        # the continuous action's values, or the discrete action id (a scalar) in the outputs
        self.shapes[("action", "action")] = spec.box.shape if spec.box is not None else ()
        self.enums = {e.name: len(e.members) for e in spec.enums}
        self.enum_info = {e.name: e for e in spec.enums}
        self.callables = analysis.callables
        self.hoisted: dict[int, str] = {}  # draw site -> the bits derived up front (`hoist_draws`)

    # ---- output --------------------------------------------------------
    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def comment(self, text: str) -> None:
        """`text` (spec text allowed) as `//` comment lines."""
        for line in comment_lines(text):
            self.line(line)

    @contextmanager
    def indented(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def fresh(self, base: str = "t") -> str:
        """A new temporary: `__` + word + number, which no spec name's identifier is (see `names`)."""
        self.tmp += 1
        return f"__{base}{self.tmp}"

    # ---- names ---------------------------------------------------------
    def local(self, name: str) -> str:
        return self.names.local(name)

    def field(self, name: str) -> str:
        return self.names.field(name)

    def storage(self, space: str, name: str) -> str:
        """The Rust place of a whole storage array (or scalar)."""
        if space == "state":
            return f"st.{self.field(name)}"
        if space == "obs":
            return f"obs.{self.names.obs(name)}"
        if space == "action":
            return "action"
        return self.names.const(name)

    def cn(self, name: str) -> str:
        """A callable's function name."""
        return self.names.fn(name)

    # ---- literals ------------------------------------------------------
    def literal(self, value: bool | int | float, ty: Ty) -> str:
        if ty.dtype is DType.BOOL:
            return "true" if value else "false"
        if ty.dtype is DType.F32:
            return f32_literal(float(value))
        if ty.dtype is DType.F64:
            return f64_literal(float(value))
        v = int(value)
        if ty.enum is not None:
            info = self.enum_info[ty.enum]
            if 0 <= v < len(info.members):
                return f"{self.names.enum(ty.enum)}::{self.names.member(ty.enum, info.members[v])}"
        return int_literal(v, ty.dtype)

    # ---- indices -------------------------------------------------------
    def static_value(self, e: ir.Expr, ctx: Ctx) -> int | None:
        """The index's value where it has one (a literal, an unrolled loop's variable, `1 - 1`)."""
        iv = interval(e, ctx.ranges, self.consts)
        return iv[0] if iv is not None and iv[1] - iv[0] == 1 else None

    def in_range(self, e: ir.Expr, dim: int, ctx: Ctx) -> bool:
        """Can the index never leave [0, dim) (so it needs no clamp or guard)? Also inside a write's guard of the
        same index: `x[i] += v` reads `x[i]` only where the write checked `i`."""
        if ctx.checked and (_shape_key(e), dim) in ctx.checked:
            return True
        iv = interval(e, ctx.ranges, self.consts)
        return iv is not None and 0 <= iv[0] and iv[1] <= dim

    def read_offset(self, idx: tuple[ir.Expr, ...], shape: tuple[int, ...], ctx: Ctx) -> str:
        """The flat offset of the leading indices `idx` (each clamped into its dimension)."""
        const = 0
        terms = []
        for e, dim, stride in zip(idx, shape, strides(shape)):
            v = self.static_value(e, ctx)
            if v is not None:
                const += min(max(v, 0), dim - 1) * stride
                continue
            code = (
                f"{paren(self.expr(e, ctx))} as usize"
                if self.in_range(e, dim, ctx)
                else f"ops::ix({self.expr(e, ctx)}, {dim})"
            )
            terms.append(code if stride == 1 else f"{paren(code)} * {stride}")
        if const or not terms:
            terms.append(str(const))
        return " + ".join(terms)

    def write_offset(
        self, idx: tuple[ir.Expr, ...], shape: tuple[int, ...], ctx: Ctx
    ) -> tuple[list[tuple[str, str]], str] | None:
        """(checks, offset): every (binding, `ops::wx(...)`) check must be Some; None if never in range."""
        const = 0
        terms, checks = [], []
        for e, dim, stride in zip(idx, shape, strides(shape)):
            v = self.static_value(e, ctx)
            if v is not None:
                if not 0 <= v < dim:
                    return None
                const += v * stride
                continue
            if self.in_range(e, dim, ctx):
                code = f"{paren(self.expr(e, ctx))} as usize"
            else:
                code = self.fresh("i")
                checks.append((code, f"ops::wx({self.expr(e, ctx)}, {dim})"))
            terms.append(code if stride == 1 else f"{code} * {stride}")
        if const or not terms:
            terms.append(str(const))
        return checks, " + ".join(terms)

    @contextmanager
    def guarded(self, checks: list[tuple[str, str]]) -> Iterator[None]:
        """Run the body only when every checked index is in range."""
        if not checks:
            yield
            return
        if len(checks) == 1:
            self.line(f"if let Some({checks[0][0]}) = {checks[0][1]} {{")
        else:
            binds = ", ".join(f"Some({b})" for b, _ in checks)
            self.line(f"if let ({binds}) = ({', '.join(c for _, c in checks)}) {{")
        with self.indented():
            yield
        self.line("}")

    # ---- expressions ---------------------------------------------------
    def expr(self, e: ir.Expr, ctx: Ctx) -> str:
        return getattr(self, "x_" + e.kind)(e, ctx)  # type: ignore[no-any-return]

    def typed(self, e: ir.Expr, ty: Ty, ctx: Ctx) -> str:
        """`e` converted to `ty`."""
        return conv(self.expr(e, ctx), e.ty, ty, self.enums)

    def x_lit(self, e: ir.Lit, ctx: Ctx) -> str:
        return self.literal(e.value, e.ty)

    def x_param(self, e: ir.Param, ctx: Ctx) -> str:
        return f"prm.{self.names.param(e.name)}"

    def x_local(self, e: ir.Local, ctx: Ctx) -> str:
        return self.local(e.name)

    def x_read(self, e: ir.Read, ctx: Ctx) -> str:
        if e.space == "local":  # an element or row of an array local `[T; N]`
            base, off = self.local(e.name), self.read_offset(e.index, e.dims, ctx)
            if e.ty.shape:
                n = math.prod(e.ty.shape)
                return f"ops::row::<{RUST[e.ty.dtype]}, {n}>(&{base}, {off})"
            return f"{base}[{off}]"
        shape = self.shapes[(e.space, e.name)]
        base = self.storage(e.space, e.name)
        if e.ty.shape:  # a value `[T; N]` (an array local's initializer, an elementwise operand)
            n = math.prod(e.ty.shape)
            off = self.read_offset(e.index, shape, ctx)
            return f"ops::row::<{RUST[e.ty.dtype]}, {n}>(&{base}, {off})"
        if not shape:
            return base
        return f"{base}[{self.read_offset(e.index, shape, ctx)}]"

    def slice_of(self, e: ir.Expr, ctx: Ctx) -> tuple[str, str, int]:
        """An array-valued read as (storage, offset, length); other array values as ((a `[T; N]`), 0, N)."""
        if not isinstance(e, ir.Read) or e.space == "local":  # array locals and elementwise results
            return f"({self.expr(e, ctx)})", "0", math.prod(e.ty.shape)
        shape = self.shapes[(e.space, e.name)]
        n = math.prod(shape[len(e.index) :])
        return self.storage(e.space, e.name), self.read_offset(e.index, shape, ctx), n

    def x_unary(self, e: ir.Unary, ctx: Ctx) -> str:
        x = self.expr(e.x, ctx)
        if e.op == "not":
            return f"!{paren(x)}"
        if e.ty.dtype.is_float:
            return f"-{paren(x)}"
        return f"{paren(x)}.wrapping_neg()"

    def elementwise(self, e: ir.Binary, ctx: Ctx) -> str:
        """An array-valued + - * / // % as a `[T; N]` built element by element (a scalar operand broadcasts)."""
        a, b = self.fresh("ea"), self.fresh("eb")
        k = self.fresh("k")
        ea = f"{a}[{k}]" if e.a.ty.shape else a
        eb = f"{b}[{k}]" if e.b.ty.shape else b
        dt, op = e.ty.dtype, e.op
        if dt.is_float:
            div, mod = ("ops::f32_floor_div", "ops::f32_floor_mod") if dt is DType.F32 else F64_DIVMOD
            one = {"//": f"{div}({ea}, {eb})", "%": f"{mod}({ea}, {eb})"}.get(op, f"{ea} {op} {eb}")
        else:
            method = {"+": "wrapping_add", "-": "wrapping_sub", "*": "wrapping_mul", "//": "floor_div"}.get(
                op, "floor_mod"
            )
            one = f"{ea}.{method}({eb})"
        n = math.prod(e.ty.shape)
        return (
            f"{{ let {a} = {self.expr(e.a, ctx)}; let {b} = {self.expr(e.b, ctx)}; "
            f"std::array::from_fn::<{RUST[dt]}, {n}, _>(|{k}| {one}) }}"
        )

    def x_binary(self, e: ir.Binary, ctx: Ctx) -> str:
        if e.ty.shape:
            return self.elementwise(e, ctx)
        a, b = self.expr(e.a, ctx), self.expr(e.b, ctx)
        op = e.op
        if op in ("and", "or"):
            return f"{paren(a)} {'&&' if op == 'and' else '||'} {paren(b)}"
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return f"{paren(a)} {op} {paren(b)}"
        dt = e.ty.dtype
        if dt is DType.BOOL or op in ("&", "|", "^"):
            return f"{paren(a)} {op} {paren(b)}"
        if dt.is_float:
            div, mod = ("ops::f32_floor_div", "ops::f32_floor_mod") if dt is DType.F32 else F64_DIVMOD
            if op == "//":
                return f"{div}({a}, {b})"
            if op == "%":
                return f"{mod}({a}, {b})"
            return f"{paren(a)} {op} {paren(b)}"
        method = {"+": "wrapping_add", "-": "wrapping_sub", "*": "wrapping_mul", "//": "floor_div", "%": "floor_mod"}[
            op
        ]
        return f"{paren(a)}.{method}({b})"

    def x_cast(self, e: ir.Cast, ctx: Ctx) -> str:
        return self.typed(e.x, e.ty, ctx)

    def x_select(self, e: ir.Select, ctx: Ctx) -> str:
        return f"if {self.expr(e.cond, ctx)} {{ {self.expr(e.a, ctx)} }} else {{ {self.expr(e.b, ctx)} }}"

    def x_math(self, e: ir.Math, ctx: Ctx) -> str:
        if e.fn in mathops.FNS:  # `**`, shifts, `~` and the builtins of language 1.1
            return rust_mathops.emit(self, e, ctx)
        args = [self.typed(a, e.ty if e.fn in ("abs", "min", "max", "clip") else a.ty, ctx) for a in e.args]
        f32 = e.ty.dtype.is_float  # (f32 or f64)
        if e.ty.dtype is DType.F64 and e.fn in ("min", "max", "clip"):
            lo, hi = "rt::f64x::fmax", "rt::f64x::fmin"
            if e.fn == "clip":
                return f"{hi}({lo}({args[0]}, {args[1]}), {args[2]})"
            return f"{hi if e.fn == 'min' else lo}({args[0]}, {args[1]})"
        if e.ty.dtype is DType.F64 and e.fn in F64_METHOD:
            return f"{paren(args[0])}.{F64_METHOD[e.fn]}()"
        if e.ty.dtype is DType.F64 and e.fn == "atan2":
            return f"{paren(args[0])}.atan2({args[1]})"
        if e.fn == "abs":
            if f32:
                return f"{paren(args[0])}.abs()"
            return args[0] if e.ty.dtype is DType.U32 else f"{paren(args[0])}.wrapping_abs()"
        if e.fn in ("min", "max"):
            fn = ("f" if f32 else "i") + e.fn
            return f"ops::{fn}({args[0]}, {args[1]})"
        if e.fn == "clip":
            lo, hi = ("ops::fmax", "ops::fmin") if f32 else ("ops::imax", "ops::imin")
            return f"{hi}({lo}({args[0]}, {args[1]}), {args[2]})"
        return f"ops::{e.fn}({', '.join(args)})"

    def key_of(self, site: int, ctx: Ctx) -> str:
        if ctx.key is None:
            raise ValueError("a draw outside a keyed context (the checker should have rejected it)")
        return f"rng::fold_in({ctx.key}, {site})"

    def x_random(self, e: ir.Random, ctx: Ctx) -> str:
        k = self.key_of(e.site, ctx)
        if e.dist == "uniform":
            lo, hi = (self.typed(a, ir.F32, ctx) for a in e.args)
            if e.site in self.hoisted:
                return f"rng::uniform_from({self.hoisted[e.site]}, {lo}, {hi})"
            return f"rng::uniform({k}, {lo}, {hi})"
        if e.dist == "randint":
            lo, hi = (f"i64::from({self.expr(a, ctx)})" for a in e.args)
            return f"rng::randint({k}, {lo}, {hi})"
        return f"rng::bernoulli({k}, {self.typed(e.args[0], ir.F32, ctx)})"

    def call_args(self, c: ir.CallableInfo, args: tuple[ir.Expr, ...], ctx: Ctx) -> list[str]:
        return [self.typed(a, ty, ctx) for (_, ty), a in zip(c.params, args)]

    def x_call_fn(self, e: ir.CallFn, ctx: Ctx) -> str:
        c = self.callables[e.fn]
        return f"{self.cn(e.fn)}({', '.join(['st', 'prm', *self.call_args(c, e.args, ctx)])})"

    def x_zone_find(self, e: ir.ZoneFind, ctx: Ctx) -> str:
        row, count = self.zone_read(e.zone, ctx)
        v = self.typed(e.value, e.zone.elem, ctx)
        return f"zone::{e.op}({row}, {count}, {v})"

    def zone_read(self, z: ir.ZoneRef, ctx: Ctx) -> tuple[str, str]:
        data, cnt = self.storage("state", z.name), self.storage("state", z.name + ".count")
        outer = self.shapes[("state", z.name + ".count")]
        if not outer:
            return f"&{data}", cnt
        off = self.read_offset(z.index, outer, ctx)
        if is_atomic(off) and off.isdigit():
            start = int(off) * z.capacity
            return f"&{data}[{start}..{start + z.capacity}]", f"{cnt}[{off}]"
        return f"zone::row(&{data}, {off}, {z.capacity})", f"{cnt}[{off}]"

    # ---- reductions ----------------------------------------------------
    def x_reduce(self, e: ir.Reduce, ctx: Ctx) -> str:
        inner = ctx.with_range(e.var, e.start, e.stop)
        v = self.loop_var(e.var, (e.elt, e.cond))
        rng_ = f"({e.start}..{e.stop}i32)" if e.start < e.stop else "(0..0i32)"
        elt = self.expr(e.elt, inner)
        cond = self.expr(e.cond, inner) if e.cond is not None else None
        op = e.op
        if op == "choice":
            mask = elt if cond is None else f"{paren(cond)} && {paren(elt)}"
            k = self.key_of(e.site, ctx)
            first = e.start  # no true entry (an empty range included): the range start (section 18)
            return f"{first}i32 + rng::choice_mask({k}, {rng_}.map(|{v}| {mask})) as i32"
        if op in ("any", "all", "count") and self.an.cost(e) <= BRANCHLESS_COST:
            acc = self.fresh("acc")
            if op == "all":
                ok = paren(elt) if cond is None else f"(!{paren(cond)} | {paren(elt)})"
                return f"{rng_}.fold(true, |{acc}, {v}| {acc} & {ok})"
            hit = paren(elt) if cond is None else f"({paren(cond)} & {paren(elt)})"
            if op == "any":
                return f"{rng_}.fold(false, |{acc}, {v}| {acc} | {hit})"
            return f"{rng_}.fold(0i32, |{acc}, {v}| {acc} + {hit} as i32)"
        it = f"{rng_}.filter(|&{v}| {cond})" if cond is not None else rng_
        if op == "any":
            return f"{it}.any(|{v}| {elt})"
        if op == "all":
            return f"{it}.all(|{v}| {elt})"
        if op == "count":
            return f"{it}.filter(|&{v}| {elt}).count() as i32"
        if op == "sum":
            acc = self.fresh("acc")
            zero = f"0.0{RUST[e.ty.dtype]}" if e.ty.dtype.is_float else f"0{RUST[e.ty.dtype]}"
            add = f"{acc} + {paren(conv(elt, e.elt.ty, e.ty, self.enums))}"
            if not e.ty.dtype.is_float:
                add = f"{acc}.wrapping_add({conv(elt, e.elt.ty, e.ty, self.enums)})"
            return f"{it}.fold({zero}, |{acc}, {v}| {add})"
        if op in ("min", "max"):
            return f"ops::{op}_of({it}.map(|{v}| {elt}), {self.empty_value(op, e.elt.ty)})"
        return f"ops::{op}_of({it}.map(|{v}| ({v}, {elt})))"

    def empty_value(self, op: str, ty: Ty) -> str:
        if ty.dtype.is_float:
            t = RUST[ty.dtype]
            return f"{t}::INFINITY" if op == "min" else f"{t}::NEG_INFINITY"
        if ty.enum is not None:
            return "0i8"
        lo, hi = ty.dtype.int_range
        return int_literal(hi if op == "min" else lo, ty.dtype)

    def x_reduce_array(self, e: ir.ReduceArray, ctx: Ctx) -> str:
        base, off, n = self.slice_of(e.x, ctx)
        sl = f"{base}[{off}..{off} + {n}]" if off != "0" else f"{base}[..{n}]"
        it = f"{sl}.iter().copied()"
        op = e.op
        if op == "choice":
            return f"rng::choice_mask({self.key_of(e.site, ctx)}, {it}) as i32"
        if op == "any":
            return f"{it}.fold(false, |a, x| a | x)"
        if op == "all":
            return f"{it}.fold(true, |a, x| a & x)"
        if op == "count":
            return f"{it}.fold(0i32, |a, x| a + x as i32)"
        if op == "sum":
            acc = self.fresh("acc")
            if e.ty.dtype.is_float:
                return f"{it}.fold(0.0{RUST[e.ty.dtype]}, |{acc}, x| {acc} + x)"
            x = conv("x", e.x.ty.scalar(), e.ty, self.enums)
            return f"{it}.fold(0{RUST[e.ty.dtype]}, |{acc}, x| {acc}.wrapping_add({x}))"
        if op in ("min", "max"):
            return f"ops::{op}_of({it}, {self.empty_value(op, e.x.ty.scalar())})"
        return f"ops::{op}_of({it}.enumerate().map(|(i, x)| (i as i32, x)))"

    # ---- statements ----------------------------------------------------
    def hoist_draws(self, stmts: tuple[ir.Stmt, ...], ctx: Ctx) -> None:
        """Derive the bits of the `uniform` draws in top-level `let`s and assignments up front, in one loop over
        their sites that vectorizes: threefry is most of a restart's cost, and the draws' keys depend only on
        the body's key and their sites. Bodies with fewer than two such draws are left alone."""
        sites = [d.site for s in stmts if isinstance(s, (ir.LetS, ir.Assign)) for d in _uniform_draws(s.value)]
        if len(sites) < 2 or ctx.key is None:
            return
        at = self.fresh("sites")
        draws = self.fresh("draws")
        self.line(f"let {at}: [u32; {len(sites)}] = [{', '.join(f'{x}u32' for x in sites)}];")
        self.line(f"let mut {draws} = [0u32; {len(sites)}];")
        self.line(f"for i in 0..{len(sites)} {{")
        self.line(f"    {draws}[i] = rng::site_bits(rng::fold_in({ctx.key}, {at}[i]));")
        self.line("}")
        self.hoisted = {x: f"{draws}[{i}]" for i, x in enumerate(sites)}

    def block(self, stmts: tuple[ir.Stmt, ...], ctx: Ctx) -> None:
        ctx = replace(ctx, ranges=dict(ctx.ranges))  # the block's lets add their ranges to this copy
        skip = False
        unpacked = 0  # statements already emitted as part of `let (x, v) = f(...)`
        for i, s in enumerate(stmts):
            if unpacked:
                unpacked -= 1
                continue
            if skip:
                skip = False
                continue
            unpacked = self.let_unpack(stmts, i, ctx)
            if unpacked:
                for t in stmts[i : i + unpacked + 1]:
                    if isinstance(t, ir.LetS):
                        ctx.ranges.pop(t.name, None)
                continue
            nxt = stmts[i + 1] if i + 1 < len(stmts) else None
            if (
                isinstance(s, ir.LetS)
                and isinstance(nxt, ir.ZoneOp)
                and nxt.out is not None
                and nxt.out.space == "local"
                and nxt.out.name == s.name
                and not Analysis.mentions((nxt.zone, nxt.index), {s.name})
            ):
                # `let c = pop(z)`: the IR declares `c` first, then takes the element into it
                got = self.zone_op(nxt, ctx)
                mut = "mut " if s.name in assigned_locals(stmts[i + 2 :]) else ""
                value = conv(got, nxt.zone.elem.scalar(), s.value.ty, self.enums)
                self.line(f"let {mut}{self.local(s.name)}: {RUST[s.value.ty.dtype]} = {value};")
                ctx.ranges.pop(s.name, None)
                skip = True
            elif isinstance(s, ir.LetS):
                self.s_let(s, ctx, mutable=s.name in assigned_locals(stmts[i + 1 :]))
                keep_let(ctx.ranges, s, stmts[i + 1 :], self.consts)  # `let c = LINE[d, i, j]` keeps 0..15
            else:
                getattr(self, "s_" + s.kind)(s, ctx)

    def let_unpack(self, stmts: tuple[ir.Stmt, ...], i: int, ctx: Ctx) -> int:
        """`let x, v = f(...)` (the IR declares `x` and `v`, then unpacks the call into them) as one Rust `let` of a
        tuple, when `stmts[i:]` starts so; returns how many statements after `stmts[i]` that took (0: none)."""
        m = 0
        while i + m < len(stmts) and isinstance(stmts[i + m], ir.LetS):
            m += 1
        unpack = stmts[i + m] if i + m < len(stmts) else None
        if not isinstance(unpack, ir.Unpack) or m != len(unpack.targets):
            return 0
        lets = stmts[i : i + m]
        if [s.name for s in lets if isinstance(s, ir.LetS)] != [t.name for t in unpack.targets]:
            return 0
        later = assigned_locals(stmts[i + m + 1 :])
        names = ", ".join(f"{'mut ' if t.name in later else ''}{self.local(t.name)}" for t in unpack.targets)
        types = ", ".join(self.value_ty(t.ty) for t in unpack.targets)
        self.line(f"let ({names}): ({types}) = {self.expr(unpack.value, ctx)};")
        return m

    def value_ty(self, t: Ty) -> str:
        """The Rust type of a value: `[T; N]` for an array of static shape."""
        return f"[{RUST[t.dtype]}; {math.prod(t.shape)}]" if t.shape else RUST[t.dtype]

    def s_unpack(self, s: ir.Unpack, ctx: Ctx) -> None:
        """`x, v = f(...)`: the returned tuple, each value into its local (of the value's type)."""
        tmps = [self.fresh("v") for _ in s.targets]
        self.line(f"let ({', '.join(tmps)}) = {self.expr(s.value, ctx)};")
        for t, tmp in zip(s.targets, tmps):
            self.line(f"{self.local(t.name)} = {tmp};")

    # ---- array literals, elementwise maps, several values (language 1.1) -----------------------------------
    def x_array(self, e: ir.ArrayLit, ctx: Ctx) -> str:
        """`[a, b, c]`: a `[T; N]`; rows (each a `[T; M]`) copied one after the other."""
        items = [self.expr(x, ctx) for x in e.items]
        if len(e.ty.shape) == 1:
            return f"[{', '.join(items)}]"
        m, n = math.prod(e.ty.shape[1:]), math.prod(e.ty.shape)
        out = self.fresh("rows")
        zero = self.literal(False if e.ty.dtype is DType.BOOL else 0, e.ty.scalar())
        rows = " ".join(f"{out}[{k * m}..{(k + 1) * m}].copy_from_slice(&({item}));" for k, item in enumerate(items))
        return f"{{ let mut {out}: [{RUST[e.ty.dtype]}; {n}] = [{zero}; {n}]; {rows} {out} }}"

    def x_map(self, e: ir.Map, ctx: Ctx) -> str:
        """The scalar body at each position (`std::array::from_fn`), its locals bound to the arrays' elements there."""
        k = self.fresh("k")
        binds, elems = [], []
        for name, a in zip(e.names, e.args):
            tmp = self.fresh("m")
            binds.append(f"let {tmp} = {self.expr(a, ctx)}; ")
            elem = f"{tmp}[{k}]" if a.ty.shape else tmp
            elems.append(f"let {self.local(name)}: {RUST[a.ty.dtype]} = {elem}; ")
        body = self.expr(e.body, ctx)
        n = math.prod(e.ty.shape)
        each = f"std::array::from_fn::<{RUST[e.ty.dtype]}, {n}, _>(|{k}| {{ {''.join(elems)}{body} }})"
        return f"{{ {''.join(binds)}{each} }}"

    def x_values(self, e: ir.Values, ctx: Ctx) -> str:
        """`return a, b`: a tuple."""
        return f"({', '.join(self.expr(x, ctx) for x in e.items)})"

    def s_let(self, s: ir.LetS, ctx: Ctx, mutable: bool = True) -> None:
        mut = "mut " if mutable else ""
        if s.value.ty.shape:  # an array local: a `[T; N]` value (row-major, flat)
            ty = f"[{RUST[s.value.ty.dtype]}; {math.prod(s.value.ty.shape)}]"
            self.line(f"let {mut}{self.local(s.name)}: {ty} = {self.expr(s.value, ctx)};")
            return
        self.line(f"let {mut}{self.local(s.name)}: {RUST[s.value.ty.dtype]} = {self.expr(s.value, ctx)};")

    def store(self, t: ir.Target, value: str | ir.Expr, value_ty: Ty, ctx: Ctx) -> None:
        """Write a scalar `value` (code, or an expression emitted inside the write's guard, where the indices it
        checked are known in range) of `value_ty` to target `t`; an array target is filled."""

        def inside(dims: tuple[int, ...] = ()) -> str:
            """The value's code; `dims`: those of the indices a guard around it checks."""
            if isinstance(value, str):
                return conv(value, value_ty, t.ty.scalar(), self.enums)
            known = {(_shape_key(e), d) for e, d in zip(t.index, dims) if self._checked(e, d, ctx)}
            inner = replace(ctx, checked=ctx.checked | known) if known else ctx
            return conv(self.expr(value, inner), value_ty, t.ty.scalar(), self.enums)

        if t.space == "local" and t.index:  # an element of an array local
            where = self.write_offset(t.index, t.dims, ctx)
            if where is None:
                self.line("// an index that is never in range: the write is dropped")
                return
            checks, off = where
            v = inside(t.dims)
            with self.guarded(checks):
                self.line(f"{self.local(t.name)}[{off}] = {v};")
            return
        if t.space == "local":
            self.line(f"{self.local(t.name)} = {inside()};")
            return
        shape = self.shapes[(t.space, t.name)]
        place = self.storage(t.space, t.name)
        if not shape:
            self.line(f"{place} = {inside()};")
            return
        rest = math.prod(shape[len(t.index) :])
        where = self.write_offset(t.index, shape, ctx)
        if where is None:
            self.line("// an index that is never in range: the write is dropped")
            return
        checks, off = where
        v = inside(shape)
        with self.guarded(checks):
            if t.ty.shape:
                self.line(
                    f"{place}[{off}..{off} + {rest}].fill({v});" if off != "0" else f"{place}[..{rest}].fill({v});"
                )
            else:
                self.line(f"{place}[{off}] = {v};")

    def s_assign(self, s: ir.Assign, ctx: Ctx) -> None:
        t = s.target
        if t.ty.shape and s.value.ty.shape and t.space == "local" and not t.index:
            self.line(f"{self.local(t.name)} = {self.expr(s.value, ctx)};")  # a whole array local
            return
        if t.ty.shape and s.value.ty.shape and (t.space == "local" or not isinstance(s.value, ir.Read)):
            n = math.prod(t.ty.shape)
            tmp = self.fresh("row")
            self.line(f"let {tmp}: [{RUST[t.ty.dtype]}; {n}] = {self.expr(s.value, ctx)};")
            dims = t.dims if t.space == "local" else self.shapes[(t.space, t.name)]
            where = self.write_offset(t.index, dims, ctx)
            if where is None:
                self.line("// an index that is never in range: the write is dropped")
                return
            checks, toff = where
            place = self.local(t.name) if t.space == "local" else self.storage(t.space, t.name)
            with self.guarded(checks):
                self.line(f"{place}[{toff}..{toff} + {n}].copy_from_slice(&{tmp});")
            return
        if t.ty.shape and s.value.ty.shape:
            base, off, n = self.slice_of(s.value, ctx)
            tmp = self.fresh("row")
            self.line(f"let {tmp}: [{RUST[t.ty.dtype]}; {n}] = ops::row(&{base}, {off});")
            shape = self.shapes[(t.space, t.name)]
            where = self.write_offset(t.index, shape, ctx)
            if where is None:
                self.line("// an index that is never in range: the write is dropped")
                return
            checks, toff = where
            place = self.storage(t.space, t.name)
            with self.guarded(checks):
                self.line(f"{place}[{toff}..{toff} + {n}].copy_from_slice(&{tmp});")
            return
        self.store(t, s.value, s.value.ty, ctx)

    def _checked(self, e: ir.Expr, dim: int, ctx: Ctx) -> bool:
        """Does a write guard check index `e` (neither static nor known in range)?"""
        return self.static_value(e, ctx) is None and not self.in_range(e, dim, ctx)

    def s_if(self, s: ir.IfS, ctx: Ctx, chained: bool = False) -> None:
        head = f"if {self.expr(s.cond, ctx)} {{"
        if chained:
            self.lines[-1] = self.lines[-1] + " else " + head
        else:
            self.line(head)
        with self.indented():
            self.block(s.then, ctx)
        if len(s.orelse) == 1 and isinstance(s.orelse[0], ir.IfS):
            self.line("}")
            self.s_if(s.orelse[0], ctx, chained=True)
            return
        if s.orelse:
            self.line("} else {")
            with self.indented():
                self.block(s.orelse, ctx)
        self.line("}")

    def s_switch(self, s: ir.Switch, ctx: Ctx) -> None:
        self.line(f"match {self.expr(s.subject, ctx)} {{")
        with self.indented():
            covered = set()
            for members, body in s.cases:
                members = tuple(m for m in members if m not in covered)
                if not members:
                    continue
                covered |= set(members)
                pats = " | ".join(self.literal(m, s.subject.ty.scalar()) for m in members)
                self.line(f"{pats} => {{")
                with self.indented():
                    self.block(body, ctx)
                self.line("}")
            self.line("_ => {")
            with self.indented():
                self.block(s.default, ctx)
            self.line("}")
        self.line("}")

    def loop_var(self, name: str, body: object) -> str:
        """The Rust name of a loop or generator variable (`_`-prefixed when the body never reads it)."""
        return self.local(name) if Analysis.mentions(body, {name}) else "_" + self.local(name)

    def s_for(self, s: ir.ForS, ctx: Ctx) -> None:
        if s.stop <= s.start:
            return
        v = self.loop_var(s.var, s.body) if not s.random else self.local(s.var)
        inner = ctx.with_range(s.var, s.start, s.stop)
        if s.random and ctx.key is not None:
            base = self.fresh("loop_key")
            self.line(f"let {base} = rng::fold_in({ctx.key}, {s.loop_id});")
            self.line(f"for {v} in {s.start}..{s.stop}i32 {{")
            with self.indented():
                self.line(f"let key = rng::fold_in({base}, {v} as u32);")
                self.block(s.body, Ctx("key", inner.ranges, inner.obs, inner.action))
            self.line("}")
            return
        self.line(f"for {v} in {s.start}..{s.stop}i32 {{")
        with self.indented():
            self.block(s.body, inner)
        self.line("}")

    def zone_place(self, z: ir.ZoneRef, ctx: Ctx) -> tuple[list[tuple[str, str]], str, str] | None:
        """(checks, row, count) places of a zone that is written; None if its index is never in range."""
        data, cnt = self.storage("state", z.name), self.storage("state", z.name + ".count")
        outer = self.shapes[("state", z.name + ".count")]
        if not outer:
            return [], f"&mut {data}", f"&mut {cnt}"
        where = self.write_offset(z.index, outer, ctx)
        if where is None:
            return None
        checks, off = where
        if off.isdigit():
            start = int(off) * z.capacity
            return checks, f"&mut {data}[{start}..{start + z.capacity}]", f"&mut {cnt}[{off}]"
        at = paren(off)
        return checks, f"&mut {data}[{at} * {z.capacity}..({at} + 1) * {z.capacity}]", f"&mut {cnt}[{off}]"

    def s_zone_op(self, s: ir.ZoneOp, ctx: Ctx) -> None:
        got = self.zone_op(s, ctx)
        if s.out is not None:
            self.store(s.out, got, s.zone.elem.scalar(), ctx)

    def zone_op(self, s: ir.ZoneOp, ctx: Ctx) -> str:
        """Emit a zone statement; returns the variable holding the element taken out (for pop/remove_at)."""
        z = s.zone
        elem = RUST[z.elem.dtype]
        value = index = None
        if s.value is not None:
            value = self.fresh("v")
            self.line(f"let {value}: {elem} = {self.typed(s.value, z.elem, ctx)};")
        if s.index is not None:
            index = self.fresh("at")
            self.line(f"let {index} = i64::from({self.expr(s.index, ctx)});")
        place = self.zone_place(z, ctx)
        got = self.fresh("got") if s.out is not None else None
        if place is None:
            self.line("// a zone index that is never in range: nothing happens")
            return f"0{elem}"
        checks, row, count = place
        op = s.op
        if op == "push":
            call = f"zone::push({row}, {count}, {value})"
        elif op == "insert":
            call = f"zone::insert({row}, {count}, {index}, {value})"
        elif op == "pop":
            call = f"zone::pop({row}, {count})"
        elif op == "remove_at":
            call = f"zone::remove_at({row}, {count}, {index})"
        elif op == "clear":
            call = f"zone::clear({row}, {count})"
        else:
            key = self.key_of(s.site, ctx)
            call = f"rng::shuffle::<{elem}, {z.capacity}>({key}, {row}, {count.removeprefix('&mut ')})"
        if got is None:
            with self.guarded(checks):
                self.line(f"{call};")
            return ""
        if checks:
            somes = (
                f"Some({checks[0][0]})" if len(checks) == 1 else "(" + ", ".join(f"Some({b})" for b, _ in checks) + ")"
            )
            tests = checks[0][1] if len(checks) == 1 else "(" + ", ".join(c for _, c in checks) + ")"
            self.line(f"let {got}: {elem} = match {tests} {{")
            with self.indented():
                self.line(f"{somes} => {call},")
                self.line(f"_ => 0{elem},")
            self.line("};")
        else:
            self.line(f"let {got}: {elem} = {call};")
        return got

    def s_call_proc(self, s: ir.CallProc, ctx: Ctx) -> None:
        proc = self.callables[s.proc]
        args = ["st", "prm"]
        if self.an.draws(proc.body):
            if ctx.key is None:
                raise ValueError(f"procedure '{s.proc}' draws outside a keyed context")
            args.append(f"rng::fold_in({ctx.key}, {s.site})" if proc.random else ctx.key)
        args += self.call_args(proc, s.args, ctx)
        self.line(f"{self.cn(s.proc)}({', '.join(args)});")

    def s_return(self, s: ir.ReturnS, ctx: Ctx) -> None:
        raise AssertionError("a function's return is emitted by its caller")

    def s_check(self, s: ir.CheckS, ctx: Ctx) -> None:
        """A spec bug only the reference reports: the fallback (a `while` loop stops at its cap) is to do nothing."""
