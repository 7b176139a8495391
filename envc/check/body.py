"""Typing of rule bodies: AST expressions and statements -> typed IR."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeGuard

from envc import ast, ir
from envc.check import loops, mathops, values
from envc.check.action import misplaced as action_misplaced
from envc.check.symbols import (
    CallableSym,
    ConstSym,
    Context,
    EnumSym,
    LocalVar,
    ParamSym,
    StorageSym,
    Symbol,
    name_problem,
)
from envc.diagnostics import Diagnostics, Span, did_you_mean
from envc.f64 import CONSTANTS64, div64
from envc.ir import BOOL, F32, F64, I32, DType, Ty
from envc.mathops import f32

REDUCTIONS = {"sum", "any", "all", "count", "min", "max", "argmax", "argmin", "choice"}
MATH1 = {"sqrt", "sin", "cos", "tan", "exp", "log", "tanh", "floor", "ceil"}
MATH = MATH1 | {"abs", "min", "max", "clip", "atan2"}
CASTS = {"i8", "i16", "i32", "u32", "f32", "f64", "bool", "int", "float"}
ZONE_STMTS = {"push", "insert", "pop", "remove_at", "clear", "shuffle"}
ZONE_EXPRS = {"count", "len", "top", "contains", "index_of", "capacity"}
RANDOM = {"uniform", "randint", "bernoulli", "coin"}
BUILTINS = sorted(
    REDUCTIONS | MATH | CASTS | ZONE_STMTS | ZONE_EXPRS | RANDOM | mathops.BUILTIN_FNS | {"range", "select"}
)


class Bail(Exception):
    """Abandon the current expression (a diagnostic was recorded)."""


@dataclass
class PRef:
    """A partially resolved storage reference (indices so far)."""

    sym: StorageSym
    index: list[ir.Expr]
    part: str | None = None
    span: Span | None = None

    def dims(self) -> tuple[int, ...]:
        """All dims of the selected array (outer + element/part dims)."""
        s = self.sym
        if s.kind == "zone":
            return s.outer + (s.capacity,)
        if s.kind in ("record", "table"):
            assert self.part is not None
            return s.outer + s.parts[self.part].shape
        assert s.ty is not None
        return s.ty.shape

    def storage(self) -> str:
        """Dotted storage name."""
        return f"{self.sym.name}.{self.part}" if self.part else self.sym.name

    def elem(self) -> Ty:
        """Scalar element type."""
        s = self.sym
        if s.kind in ("record", "table"):
            assert self.part is not None
            return s.parts[self.part].scalar()
        assert s.ty is not None
        return s.ty.scalar()


@dataclass
class Env:
    """Everything a body checker needs from the declarations pass."""

    symbols: dict[str, Symbol]
    diags: Diagnostics
    players: int
    next_site: Callable[[], int]
    calls: dict[str, set[str]] = field(default_factory=dict)
    random_callables: set[str] = field(default_factory=set)
    broken: set[str] = field(default_factory=set)  # declared names whose declaration had an error


def _lit(value: bool | int | float, ty: Ty, span: Span) -> ir.Lit:
    return ir.Lit(value=value, ty=ty, span=span)


def plain_number(value: object) -> TypeGuard[int | float]:
    """A YAML number the checker takes as a literal as it is: a float, or an int a literal may hold (a larger int
    goes through the parser, which reports its E040)."""
    return isinstance(value, float) or (
        isinstance(value, int) and not isinstance(value, bool) and mathops.literal_fits(value)
    )


class BodyChecker:
    """Checks one body (or expression) in a context, with a chain of local scopes."""

    def __init__(self, env: Env, ctx: Context, locals_: dict[str, LocalVar] | None = None):
        self.env = env
        self.ctx = ctx
        self.scopes: list[dict[str, LocalVar]] = [dict(locals_ or {})]
        self.weak: dict[int, ir.Expr] = {}  # untyped int literals, kept alive so ids stay unique
        self.weak_shifts: dict[int, ir.Expr] = {}  # `1 << i`: shifts of an untyped literal (mathops.adapt)
        self.weak_float: dict[int, tuple[ir.Expr, float]] = {}  # float literals and `pi`...: their exact values
        self.uses_random = False
        self.in_generator = 0
        self.broken_locals: set[str] = set()  # `let` names whose value had an error
        self.loops: list[loops.LoopFrame] = []  # the loops around the statement being checked (break/continue)
        self.loop_count = 0  # names of the loop flags (envc/check/loops.py)
        self.array_items: dict[int, tuple[ir.Expr, tuple[ir.Expr, ...]]] = {}  # array literals as written (values)
        self.unpacks = 0  # names of the locals `x, v = f(...)` unpacks into (envc/check/values.py)

    def is_weak(self, x: ir.Expr) -> bool:
        """Is `x` an int literal whose type adapts to the other operand?"""
        return self.weak.get(id(x)) is x

    def float_literal(self, lit: ir.Lit, exact: float) -> ir.Lit:
        """Mark the f32 literal `lit` as written in the source: where an f64 is expected it becomes `exact` (6.3)."""
        self.weak_float[id(lit)] = (lit, exact)
        return lit

    def exact_float(self, x: ir.Expr) -> float | None:
        """The source value of a float literal or math constant (before rounding to f32), else None."""
        got = self.weak_float.get(id(x))
        return got[1] if got is not None and got[0] is x else None

    def fold_float_literals(self, op: str, a: ir.Expr, b: ir.Expr, span: Span) -> ir.Lit | None:
        """`+ - * /` of two literals, one of them a float (`pi / 2.0`, `1.0 / 3`): one float literal computed both
        ways, in f32 (its value: what the f32 operation gives) and in f64 (its exact value, used where an f64 is
        expected), so a constant expression adapts as a single literal does (6.3). None for anything else."""
        if op not in ("+", "-", "*", "/") or not (isinstance(a, ir.Lit) and isinstance(b, ir.Lit)):
            return None
        xa, xb = self.exact_float(a), self.exact_float(b)
        if xa is None and xb is None:
            return None
        if (xa is None and not self.is_weak(a)) or (xb is None and not self.is_weak(b)):
            return None
        da = float(a.value) if xa is None else xa
        db = float(b.value) if xb is None else xb
        fa = f32(float(a.value))
        fb = f32(float(b.value))
        if op == "/":
            v32, v64 = f32(div64(fa, fb)), div64(da, db)
        else:
            fn: Callable[[float, float], float] = {
                "+": lambda x, y: x + y,
                "-": lambda x, y: x - y,
                "*": lambda x, y: x * y,
            }[op]
            v32, v64 = f32(fn(fa, fb)), fn(da, db)
        return self.float_literal(_lit(v32, F32, span), v64)

    @staticmethod
    def float_ty(*xs: ir.Expr) -> Ty:
        """The float type of an operation on `xs`: f64 if any of them is f64, else f32 (6.4)."""
        return F64 if any(x.ty.dtype is DType.F64 for x in xs) else F32

    # ---- diagnostics -------------------------------------------------
    def err(self, span: Span, code: str, msg: str) -> Bail:
        self.env.diags.error(span, code, msg)
        return Bail()

    # ---- scopes ------------------------------------------------------
    def lookup_local(self, name: str) -> LocalVar | None:
        for sc in reversed(self.scopes):
            if name in sc:
                return sc[name]
        return None

    def names_in_scope(self) -> list[str]:
        out = list(self.env.symbols) + BUILTINS + list(mathops.CONSTANT_NAMES) + ["num_players"]
        for sc in self.scopes:
            out += list(sc)
        return out

    def declare(self, name: str, var: LocalVar, span: Span, what: str) -> None:
        problem = name_problem(name, what)
        if problem is not None:
            raise self.err(span, "E013", problem)
        if self.lookup_local(name) is not None or name in self.env.symbols:
            raise self.err(span, "E031", f"'{name}' is already defined; pick another name")
        self.scopes[-1][name] = var

    # ---- expressions -------------------------------------------------
    def expr(self, e: ast.Expr) -> ir.Expr:
        r = self.ref(e)
        if isinstance(r, PRef):
            return self.finish(r, e.span)
        if isinstance(r, EnumSym):
            raise self.err(e.span, "E040", f"'{r.name}' is an enum type, not a value; write {r.name}.{r.members[0]}")
        return r

    def scalar(self, e: ast.Expr, what: str = "value") -> ir.Expr:
        x = self.expr(e)
        if x.ty.shape:
            raise self.err(e.span, "E041", f"expected a scalar {what}, got an array {x.ty.show()}; index it")
        return x

    def bool_expr(self, e: ast.Expr, what: str = "condition") -> ir.Expr:
        x = self.scalar(e, what)
        if x.ty.dtype is not DType.BOOL:
            raise self.err(e.span, "E040", f"{what} must be bool, got {x.ty.show()}")
        return x

    def checked(self, fn: Callable[[], ir.Expr], span: Span) -> ir.Expr:
        """Run `fn`, turning a Bail into a typed placeholder so checking can go on."""
        try:
            return fn()
        except Bail:
            return _lit(False, BOOL, span)

    def finish(self, r: PRef, span: Span) -> ir.Expr:
        s = r.sym
        if s.kind in ("record", "table") and r.part is None:
            parts = ", ".join(s.parts)
            raise self.err(span, "E041", f"'{s.name}' has fields ({parts}); select one with .field")
        dims = r.dims()
        rest = dims[len(r.index) :]
        ty = Ty(dtype=r.elem().dtype, shape=rest, enum=r.elem().enum)
        return ir.Read(space=s.space, name=r.storage(), index=tuple(r.index), ty=ty, span=span)  # type: ignore[arg-type]

    def ref(self, e: ast.Expr) -> ir.Expr | PRef | EnumSym:
        if isinstance(e, ast.Name):
            return self.name(e)
        if isinstance(e, ast.Index):
            base = self.ref(e.base)
            if (
                isinstance(base, (ir.Local, ir.Read))
                and base.ty.shape
                and (isinstance(base, ir.Local) or base.space == "local")
            ):
                return self.index_local(base, e)
            if not isinstance(base, PRef):
                what = "an enum type" if isinstance(base, EnumSym) else f"a {base.ty.show()} value"
                raise self.err(e.span, "E041", f"cannot index {what}")
            return self.index(base, e)
        if isinstance(e, ast.Attr):
            prefixed = mathops.module_attr(self, e)  # `math.pi`, `np.inf`
            if prefixed is not None:
                raise prefixed
            base = self.ref(e.base)
            return self.attr(base, e)
        return self.value(e)

    def name(self, e: ast.Name) -> ir.Expr | PRef | EnumSym:
        n = e.id
        var = self.lookup_local(n)
        if var is not None:
            return ir.Local(name=n, ty=var.ty, span=e.span)
        if n == "num_players":
            return _lit(self.env.players, I32, e.span)
        sym = self.env.symbols.get(n)
        if sym is None:
            if n in self.env.broken or n in self.broken_locals:
                raise Bail()  # its declaration was already reported
            const = mathops.constant(n, e.span)  # pi, tau, e, inf: shadowed by any declaration
            if const is not None:
                return self.float_literal(const, CONSTANTS64[n])
            if n in ("break", "continue"):
                raise self.err(e.span, "E020", loops.misused(n))
            hint = did_you_mean(n, self.names_in_scope())
            raise self.err(e.span, "E030", f"unknown name '{n}'{hint}")
        if isinstance(sym, StorageSym):
            if sym.space == "obs" and not self.ctx.obs:
                raise self.err(e.span, "E030", f"observation field '{n}' can only be used in the observation body")
            misplaced = action_misplaced(sym, self.ctx.where) if sym.space == "action" else None
            if misplaced is not None:
                raise self.err(e.span, "E030", misplaced)
            return PRef(sym, [], span=e.span)
        if isinstance(sym, ParamSym):
            return ir.Param(name=n, ty=sym.ty, span=e.span)
        if isinstance(sym, ConstSym):
            lit = _lit(sym.value, sym.ty, e.span)
            return lit
        if isinstance(sym, EnumSym):
            return sym
        raise self.err(e.span, "E040", f"'{n}' is a function or procedure; call it with ()")

    def index_value(self, e: ast.Expr) -> ir.Expr:
        x = self.scalar(e, "index")
        if not (x.ty.dtype.is_int or x.ty.enum):
            raise self.err(e.span, "E040", f"index must be an integer or enum, got {x.ty.show()}")
        return x

    def static_range(self, x: ir.Expr) -> tuple[int, int] | None:
        if isinstance(x, ir.Lit) and isinstance(x.value, int) and not isinstance(x.value, bool):
            return x.value, x.value + 1
        if isinstance(x, ir.Local):
            var = self.lookup_local(x.name)
            if var is not None and var.range is not None:
                return var.range
        return None

    def index(self, base: PRef, e: ast.Index) -> PRef:
        if base.sym.kind in ("record", "table") and base.part is None:
            dims = base.sym.outer
        else:
            dims = base.dims()
        out = list(base.index)
        for idx_ast in e.indices:
            k = len(out)
            if k >= len(dims):
                raise self.err(e.span, "E041", f"too many indices for '{base.storage()}' (shape {list(dims)})")
            x = self.index_value(idx_ast)
            rng = self.static_range(x)
            if rng is not None and (rng[0] < 0 or rng[1] > dims[k]):
                lo, hi = rng
                shown = f"{lo}" if hi == lo + 1 else f"{lo}..{hi - 1}"
                code = "E053"
                raise self.err(
                    idx_ast.span,
                    code,
                    f"index {shown} is out of range for dimension {k} of '{base.storage()}' (size {dims[k]})",
                )
            out.append(x)
        return PRef(base.sym, out, base.part, base.span)

    def index_local(self, base: ir.Local | ir.Read, e: ast.Index) -> ir.Read:
        """`y[i]` on an array local: a read of its element (or row) as a `local` space Read."""
        out = list(base.index) if isinstance(base, ir.Read) else []
        var = self.lookup_local(base.name)
        dims = var.ty.shape if var is not None else base.ty.shape
        for idx_ast in e.indices:
            k = len(out)
            if k >= len(dims):
                raise self.err(e.span, "E041", f"too many indices for '{base.name}' (shape {list(dims)})")
            x = self.index_value(idx_ast)
            rng = self.static_range(x)
            if rng is not None and (rng[0] < 0 or rng[1] > dims[k]):
                lo, hi = rng
                shown = f"{lo}" if hi == lo + 1 else f"{lo}..{hi - 1}"
                msg = f"index {shown} is out of range for dimension {k} of '{base.name}' (size {dims[k]})"
                raise self.err(idx_ast.span, "E053", msg)
            out.append(x)
        ty = Ty(dtype=base.ty.dtype, shape=dims[len(out) :], enum=base.ty.enum)
        return ir.Read(space="local", name=base.name, index=tuple(out), ty=ty, dims=dims, span=e.span)

    def elementwise(self, e: ast.Binary, a: ir.Expr, b: ir.Expr) -> ir.Expr:
        """`y + dt * k`: + - * / // % between arrays of one static shape, or an array and a scalar."""
        op = e.op
        if op in values.LIFTED_OPS:  # comparisons, bitwise operators: element by element (envc/check/values.py)
            return values.lift(self, e, [a, b])
        if op not in ("+", "-", "*", "/", "//", "%"):
            raise self.err(e.span, "E041", f"'{op}' works on scalars only; index the array (arrays take + - * / // %)")
        if a.ty.shape and b.ty.shape and a.ty.shape != b.ty.shape:
            raise self.err(
                e.span,
                "E041",
                f"shape mismatch in '{op}': {list(a.ty.shape)} and {list(b.ty.shape)}; "
                "elementwise operands need the same shape (or one scalar)",
            )
        self.numeric(a, e.a.span, op)
        self.numeric(b, e.b.span, op)
        shape = a.ty.shape or b.ty.shape
        pa = a if not a.ty.shape else values.element(self, a, "__ea__")
        pb = b if not b.ty.shape else values.element(self, b, "__eb__")
        if op == "/":
            ty = self.float_ty(a, b)
        else:
            _, _, ty = self.unify(pa, pb, e.span, f"operands of '{op}'")
        out = []
        for x, px in ((a, pa), (b, pb)):
            if x.ty.shape:
                if x.ty.dtype is DType.F32 and ty.dtype is DType.F64 and not (a.ty.shape and b.ty.shape):
                    raise self.err(
                        x.span,
                        "E040",
                        f"operands of '{op}': an f32 array and an f64 scalar do not mix (arrays are not converted); "
                        "convert the scalar with f32(...)",
                    )
                if x.ty.scalar() != ty.scalar():
                    lit = values.adapt(self, x, Ty(dtype=ty.dtype, shape=x.ty.shape), x.span, f"operands of '{op}'")
                    if lit is not None:  # an array literal: its elements convert as literals and scalars do
                        out.append(lit)
                        continue
                    raise self.err(
                        x.span,
                        "E040",
                        f"operands of '{op}': array of {x.ty.scalar().show()} and {ty.show()} do not mix; "
                        f"arrays are not converted implicitly: convert it with {ty.show()}(...), element by element",
                    )
                out.append(x)
            else:
                out.append(self.cast(px, ty.scalar()))
        return ir.Binary(op=op, a=out[0], b=out[1], ty=Ty(dtype=ty.dtype, shape=shape), span=e.span)

    def attr(self, base: ir.Expr | PRef | EnumSym, e: ast.Attr) -> ir.Expr | PRef:
        if isinstance(base, EnumSym):
            if e.name not in base.members:
                hint = did_you_mean(e.name, list(base.members))
                raise self.err(e.span, "E030", f"enum {base.name} has no member '{e.name}'{hint}")
            return _lit(base.members.index(e.name), base.ty, e.span)
        if isinstance(base, PRef):
            s = base.sym
            if s.kind in ("record", "table") and base.part is None:
                if e.name not in s.parts:
                    hint = did_you_mean(e.name, list(s.parts))
                    raise self.err(e.span, "E030", f"'{s.name}' has no field '{e.name}'{hint}")
                if len(base.index) > len(s.outer):
                    raise self.err(e.span, "E041", f"too many indices before .{e.name}")
                return PRef(s, base.index, e.name, base.span)
            if s.kind == "zone" and e.name == "count":
                return self.zone_count(self.zone_of(base, e.span), e.span)
        raise self.err(e.span, "E030", f"no attribute '{e.name}' here")

    # zones
    def zone_of(self, r: ir.Expr | PRef | EnumSym, span: Span) -> ir.ZoneRef:
        if not isinstance(r, PRef) or r.sym.kind != "zone":
            raise self.err(span, "E040", "expected a zone")
        if len(r.index) != len(r.sym.outer):
            raise self.err(
                span, "E041", f"zone '{r.sym.name}' needs {len(r.sym.outer)} leading index(es) to select one zone"
            )
        assert r.sym.ty is not None
        return ir.ZoneRef(name=r.sym.name, index=tuple(r.index), capacity=r.sym.capacity, elem=r.sym.ty, span=span)

    def zone_count(self, z: ir.ZoneRef, span: Span) -> ir.Expr:
        return ir.Read(space="state", name=f"{z.name}.count", index=z.index, ty=I32, span=span)

    def zone_arg(self, e: ast.Expr) -> ir.ZoneRef:
        return self.zone_of(self.ref(e), e.span)

    # values
    def value(self, e: ast.Expr) -> ir.Expr:
        if isinstance(e, ast.Checked):  # an operand typed already (envc/check/values.py)
            return e.x  # type: ignore[no-any-return]
        if isinstance(e, ast.ArrayLit):
            return values.array_lit(self, e)
        if isinstance(e, ast.Tuple):
            raise values.misplaced(self, e)
        if isinstance(e, ast.Num):
            if isinstance(e.value, float):
                return self.float_literal(_lit(e.value, F32, e.span), e.value)
            lit = _lit(e.value, I32, e.span)
            if not mathops.literal_fits(e.value):
                raise self.err(e.span, "E040", f"integer literal {e.value} does not fit in 32 bits")
            self.weak[id(lit)] = lit
            return lit
        if isinstance(e, ast.BoolLit):
            return _lit(e.value, BOOL, e.span)
        if isinstance(e, ast.Unary):
            lifted, e = values.operands(self, e)  # `-y`, `not m`, `~b` on arrays: element by element
            if lifted is not None:
                return lifted
            if e.op == "not":
                x = self.bool_expr(e.x, "operand of 'not'")
                return ir.Unary(op="not", x=x, ty=BOOL, span=e.span)
            if e.op == "~":
                return mathops.invert(self, e)
            x = self.expr(e.x)
            if x.ty.shape:
                raise self.err(e.span, "E041", "unary '-' works on scalars only; for an array write -1 * (...)")
            self.numeric(x, e.x.span, "-")
            if isinstance(x, ir.Lit) and not isinstance(x.value, bool):
                lit = _lit(-x.value, x.ty, e.span)
                if self.is_weak(x):
                    self.weak[id(lit)] = lit
                exact = self.exact_float(x)
                return lit if exact is None else self.float_literal(lit, -exact)
            return ir.Unary(op="neg", x=x, ty=x.ty, span=e.span)
        if isinstance(e, ast.Binary):
            return self.binary(e)
        if isinstance(e, ast.IfExpr):
            lifted, e = values.operands(self, e)  # an array condition or branch: element by element
            if lifted is not None:
                return lifted
            c = self.bool_expr(e.cond)
            a, b = self.scalar(e.a), self.scalar(e.b)
            a, b, ty = self.unify(a, b, e.span, "if/else branches")
            return ir.Select(cond=c, a=a, b=b, ty=ty, span=e.span)
        if isinstance(e, ast.Call):
            return self.call(e)
        if isinstance(e, ast.GenCall):
            return self.gen_call(e)
        raise self.err(e.span, "E020", "unsupported expression")

    def numeric(self, x: ir.Expr, span: Span, op: str) -> None:
        if x.ty.dtype is DType.BOOL or x.ty.enum is not None:
            raise self.err(span, "E040", f"operator '{op}' needs numbers, got {x.ty.show()}")

    def fit(self, x: ir.Expr, ty: Ty, span: Span) -> ir.Expr:
        """Convert a weak int literal to `ty`."""
        assert isinstance(x, ir.Lit)
        v = x.value
        if ty.dtype.is_float:
            return _lit(float(v), ty.scalar(), x.span)
        lo, hi = ty.dtype.int_range
        assert isinstance(v, int)
        if not lo <= v <= hi:
            raise self.err(span, "E040", f"literal {v} does not fit in {ty.dtype.value}")
        return _lit(v, ty.scalar(), x.span)

    def cast(self, x: ir.Expr, ty: Ty) -> ir.Expr:
        if x.ty == ty:
            return x
        if isinstance(x, ir.Lit) and self.is_weak(x):
            return self.fit(x, ty, x.span)
        exact = self.exact_float(x) if ty.dtype is DType.F64 else None
        if exact is not None:  # a float literal where an f64 is expected: its source value (6.3)
            return _lit(exact, ty.scalar(), x.span)
        return ir.Cast(x=x, ty=ty, span=x.span)

    def unify(self, a: ir.Expr, b: ir.Expr, span: Span, what: str) -> tuple[ir.Expr, ir.Expr, Ty]:
        if self.weak_shifts:
            a, b = mathops.adapt(self, a, b, span)
        ta, tb = a.ty, b.ty
        wa, wb = self.is_weak(a), self.is_weak(b)
        if ta.enum or tb.enum or ta.dtype is DType.BOOL or tb.dtype is DType.BOOL:
            if ta == tb:
                return a, b, ta
            raise self.err(span, "E040", f"{what}: {ta.show()} and {tb.show()} do not mix")
        if wa and wb:
            return a, b, ta
        if wa:
            return self.fit(a, tb, span), b, tb.scalar()
        if wb:
            return a, self.fit(b, ta, span), ta.scalar()
        if ta.dtype is DType.F64 or tb.dtype is DType.F64:  # f64 with f32 or an int: f64 (exact widening)
            return self.cast(a, F64), self.cast(b, F64), F64
        if ta.dtype is DType.F32 or tb.dtype is DType.F32:
            return self.cast(a, F32), self.cast(b, F32), F32
        if ta.dtype == tb.dtype:
            return a, b, ta.scalar()
        if ta.dtype.signed != tb.dtype.signed:
            raise self.err(span, "E040", f"{what}: {ta.show()} and {tb.show()} mix signed and unsigned; cast one")
        wide = ta if ta.dtype.bits >= tb.dtype.bits else tb
        return self.cast(a, wide.scalar()), self.cast(b, wide.scalar()), wide.scalar()

    def binary(self, e: ast.Binary) -> ir.Expr:
        op = e.op
        if op in ("**", "<<", ">>", "and", "or"):
            lifted, e = values.operands(self, e)  # on arrays: element by element
            if lifted is not None:
                return lifted
        if op == "**":
            return mathops.power(self, e.a, e.b, e.span)
        if op in ("<<", ">>"):
            return mathops.shift(self, e)
        if op in ("and", "or"):
            a = self.bool_expr(e.a, f"operand of '{op}'")
            b = self.bool_expr(e.b, f"operand of '{op}'")
            return ir.Binary(op=op, a=a, b=b, ty=BOOL, span=e.span)
        xa, xb = self.expr(e.a), self.expr(e.b)
        if xa.ty.shape or xb.ty.shape:
            return self.elementwise(e, xa, xb)
        a, b = xa, xb
        if op in ("==", "!=", "<", "<=", ">", ">="):
            if op not in ("==", "!=") and (a.ty.enum or a.ty.dtype is DType.BOOL):
                raise self.err(e.span, "E040", f"'{op}' needs numbers, got {a.ty.show()}")
            a, b, _ = self.unify(a, b, e.span, f"operands of '{op}'")
            return ir.Binary(op=op, a=a, b=b, ty=BOOL, span=e.span)
        if op in ("&", "|", "^"):
            if a.ty.dtype is DType.BOOL and b.ty.dtype is DType.BOOL:
                return ir.Binary(op=op, a=a, b=b, ty=BOOL, span=e.span)
            if a.ty.dtype.is_float or b.ty.dtype.is_float:
                if op == "^":
                    raise mathops.xor_error(self, e)
                raise self.err(e.span, "E040", f"'{op}' needs integers or bools")
        self.numeric(a, e.a.span, op)
        self.numeric(b, e.b.span, op)
        constant = self.fold_float_literals(op, a, b, e.span)
        if constant is not None:  # `pi / 2.0`: a literal that adapts as a whole (6.3)
            return constant
        if op == "/":
            ft = self.float_ty(a, b)
            a, b = self.cast(a, ft), self.cast(b, ft)
            return ir.Binary(op="/", a=a, b=b, ty=ft, span=e.span)
        weak = self.is_weak(a) and self.is_weak(b)
        a, b, ty = self.unify(a, b, e.span, f"operands of '{op}'")
        if ty.dtype.is_float and op in ("&", "|", "^"):
            raise self.err(e.span, "E040", f"'{op}' needs integers")
        if isinstance(a, ir.Lit) and isinstance(b, ir.Lit) and ty.dtype.is_int:
            folded = _fold(op, a.value, b.value)
            if folded is not None:  # static arithmetic stays static (e.g. range(columns - 3))
                lo, hi = ty.dtype.int_range
                lit = _lit((folded - lo) % (hi - lo + 1) + lo, ty, e.span)
                if weak:
                    self.weak[id(lit)] = lit
                return lit
        return ir.Binary(op=op, a=a, b=b, ty=ty, span=e.span)

    def coerce(self, x: ir.Expr, ty: Ty, span: Span, what: str) -> ir.Expr:
        """Assignment compatibility: ints convert to any int (wrapping) or f32; otherwise types must match."""
        if x.ty.shape and x.ty.shape != ty.shape:
            raise self.err(span, "E041", f"{what}: shape {list(x.ty.shape)} does not match {list(ty.shape)}")
        lit = values.adapt(self, x, ty, span, what) if isinstance(x, ir.ArrayLit) else None
        if lit is not None:  # an array literal takes the target's element type, element by element (6.5)
            return lit
        tgt = ty.scalar()
        src = x.ty.scalar()
        if src == tgt:
            return x
        if tgt.enum or src.enum or tgt.dtype is DType.BOOL or src.dtype is DType.BOOL:
            raise self.err(span, "E040", f"{what}: expected {tgt.show()}, got {src.show()}")
        if (tgt.dtype.is_int and src.dtype.is_float) or (tgt.dtype is DType.F32 and src.dtype is DType.F64):
            raise self.err(
                span, "E040", f"{what}: expected {tgt.show()}, got {src.show()}; convert with {tgt.show()}(...)"
            )
        if x.ty.shape:
            raise self.err(span, "E040", f"{what}: array of {src.show()} cannot be stored as {tgt.show()}")
        return self.cast(x, tgt)

    # calls
    def call(self, e: ast.Call) -> ir.Expr:
        f, args = e.func, e.args
        if "." in f:  # `np.clip(...)`
            raise mathops.prefix_error(self, f, e.func_span, True)
        sym = self.env.symbols.get(f)
        if isinstance(sym, CallableSym):
            if sym.returns is None:
                raise self.err(e.span, "E040", f"procedure '{f}' returns nothing; call it as a statement")
            if sym.results:
                raise values.several(self, e, sym)
            return ir.CallFn(fn=f, args=self.call_args(sym, e), ty=sym.returns, span=e.span)
        reduction = f in ("min", "max") and len(args) == 1
        if sym is None and (f in CASTS or f in mathops.BUILTIN_FNS or (f in MATH and not reduction)):
            lifted, e = values.operands(self, e)  # math builtins and casts on arrays: element by element
            if lifted is not None:
                return lifted
            args = e.args
        if f in CASTS or (isinstance(sym, EnumSym) and len(args) == 1):
            self.arity(e, 1)
            x = self.scalar(args[0])
            if isinstance(sym, EnumSym):
                if not x.ty.dtype.is_int:
                    raise self.err(e.span, "E040", f"{f}(...) needs an integer")
                return ir.Cast(x=x, ty=sym.ty, span=e.span)
            name = {"int": "i32", "float": "f32"}.get(f, f)
            ty = Ty(dtype=DType(name))
            if isinstance(x, ir.Lit) and self.is_weak(x) and ty.dtype.is_int:
                assert isinstance(x.value, int)
                lo, hi = ty.dtype.int_range
                return _lit((x.value - lo) % (hi - lo + 1) + lo, ty, e.span)  # explicit casts wrap
            exact = self.exact_float(x) if ty.dtype.is_float else None
            if exact is not None:  # `f64(0.1)`: the literal's source value; `f32(0.1)`: its f32 value, typed
                assert isinstance(x, ir.Lit)
                return _lit(exact if ty.dtype is DType.F64 else x.value, ty, e.span)
            return x if x.ty == ty else ir.Cast(x=x, ty=ty, span=e.span)
        if f in mathops.BUILTIN_FNS:
            return mathops.builtin(self, e)
        if f in MATH and not (f in ("min", "max") and len(args) == 1):
            return self.math(e)
        if f in REDUCTIONS:
            self.arity(e, 1)
            r = self.ref(args[0])
            if f == "count" and isinstance(r, PRef) and r.sym.kind == "zone":
                return self.zone_count(self.zone_of(r, args[0].span), e.span)
            x = self.finish(r, args[0].span) if isinstance(r, PRef) else self.expr(args[0])
            if not x.ty.shape:
                raise self.err(args[0].span, "E041", f"{f}(...) needs an array or a generator")
            return self.reduce_ty(f, x, e.span, array=True)
        if f in RANDOM:
            return self.random(e)
        if f in ("count", "len", "top", "contains", "index_of", "capacity"):
            if f == "len" and args:
                r = self.ref(args[0])
                if isinstance(r, PRef) and r.sym.kind != "zone":
                    dims = r.dims() if r.sym.kind not in ("record", "table") or r.part else r.sym.outer
                    if len(r.index) >= len(dims):
                        raise self.err(e.span, "E041", "len(...) of a scalar")
                    return _lit(dims[len(r.index)], I32, e.span)
                if isinstance(r, ir._Expr) and r.ty.shape:  # an array value: a local, a row of one, a result
                    return _lit(r.ty.shape[0], I32, e.span)
            self.arity(e, 2 if f in ("contains", "index_of") else 1)
            z = self.zone_arg(args[0])
            if f == "capacity":
                return _lit(z.capacity, I32, e.span)
            if f in ("count", "len"):
                return self.zone_count(z, e.span)
            if f == "top":
                cnt = self.zone_count(z, e.span)
                last = ir.Binary(op="-", a=cnt, b=_lit(1, I32, e.span), ty=I32, span=e.span)
                return ir.Read(space="state", name=z.name, index=z.index + (last,), ty=z.elem, span=e.span)
            v = self.coerce(self.scalar(args[1]), z.elem, args[1].span, f"{f} value")
            ty = BOOL if f == "contains" else I32
            return ir.ZoneFind(op=f, zone=z, value=v, ty=ty, span=e.span)  # type: ignore[arg-type]
        if f == "select":
            self.arity(e, 3)
            return self.value(ast.IfExpr(args[0], args[1], args[2], e.span))
        if f in ZONE_STMTS:
            raise self.err(e.span, "E054", f"{f}(...) changes a zone; use it as a statement (or `let x = {f}(...)`)")
        if f == "range":
            raise self.err(e.span, "E020", "range(...) can only follow `for ... in` or `... for v in`")
        if sym is None:
            if f in self.env.broken:
                raise Bail()
            hint = did_you_mean(f, self.names_in_scope())
            raise self.err(e.func_span, "E030", f"unknown function '{f}'{mathops.alias_hint(f) or hint}")
        raise self.err(e.func_span, "E040", f"'{f}' is not callable")

    def arity(self, e: ast.Call, n: int) -> None:
        if len(e.args) != n:
            raise self.err(e.span, "E042", f"{e.func}(...) takes {n} argument(s), got {len(e.args)}")

    def call_args(self, sym: CallableSym, e: ast.Call) -> tuple[ir.Expr, ...]:
        if len(e.args) != len(sym.params):
            raise self.err(e.span, "E042", f"'{sym.name}' takes {len(sym.params)} argument(s), got {len(e.args)}")
        if self.ctx.caller is not None:
            self.env.calls.setdefault(self.ctx.caller, set()).add(sym.name)
        return tuple(self.shaped(a, ty, f"argument '{pn}' of {sym.name}") for (pn, ty), a in zip(sym.params, e.args))

    def shaped(self, e: ast.Expr, ty: Ty, what: str) -> ir.Expr:
        """`e` as a value of `ty`, which may be an array of static shape (function arguments and results)."""
        if not ty.shape:
            return self.coerce(self.scalar(e), ty, e.span, what)
        x = self.expr(e)
        if x.ty.shape != ty.shape:
            raise self.err(e.span, "E041", f"{what}: expected an array {ty.show()}, got {x.ty.show()}")
        return self.coerce(x, ty, e.span, what)

    def math(self, e: ast.Call) -> ir.Expr:
        f, args = e.func, e.args
        n = {"min": 2, "max": 2, "clip": 3, "atan2": 2, "abs": 1}.get(f, 1)
        self.arity(e, n)
        xs = [self.scalar(a) for a in args]
        for x, arg in zip(xs, args):
            self.numeric(x, arg.span, f)
        if f in MATH1 or f == "atan2":
            ft = self.float_ty(*xs)
            xs = [self.cast(x, ft) for x in xs]
            return ir.Math(fn=f, args=tuple(xs), ty=ft, span=e.span)
        if f == "abs":
            return ir.Math(fn=f, args=(xs[0],), ty=xs[0].ty, span=e.span)
        a, b, ty = self.unify(xs[0], xs[1], e.span, f"arguments of {f}")
        if f == "clip":
            a, c, ty = self.unify(a, xs[2], e.span, "arguments of clip")
            b = self.cast(b, ty)
            return ir.Math(fn=f, args=(a, b, c), ty=ty, span=e.span)
        return ir.Math(fn=f, args=(a, b), ty=ty, span=e.span)

    def reduce_ty(
        self,
        op: str,
        x: ir.Expr,
        span: Span,
        array: bool,
        var: str = "",
        start: int = 0,
        stop: int = 0,
        cond: ir.Expr | None = None,
    ) -> ir.Expr:
        t = x.ty.scalar()
        if op in ("any", "all", "count", "choice"):
            if t.dtype is not DType.BOOL:
                raise self.err(span, "E040", f"{op}(...) needs bool elements, got {t.show()}")
            ty = BOOL if op in ("any", "all") else I32
        elif op == "sum":
            self.numeric(x, span, "sum")
            ty = t if t.dtype.is_float else (t if t.dtype in (DType.I32, DType.U32) else I32)
        elif op in ("argmax", "argmin"):
            self.numeric(x, span, op)
            ty = I32
        else:
            if t.dtype is DType.BOOL:
                raise self.err(span, "E040", f"{op}(...) needs numbers")
            ty = t
        site = -1
        if op == "choice":
            site = self.random_site(span)
        if array:
            return ir.ReduceArray(op=op, x=x, ty=ty, span=span, site=site)  # type: ignore[arg-type]
        return ir.Reduce(
            op=op,
            var=var,
            start=start,
            stop=stop,
            elt=x,
            cond=cond,
            ty=ty,
            span=span,  # type: ignore[arg-type]
            site=site,
        )

    def static_int(self, e: ast.Expr, use: loops.Bound | None = None) -> int:
        x = self.scalar(e, "bound")
        if isinstance(x, ir.Lit) and isinstance(x.value, int) and not isinstance(x.value, bool):
            if not -(2**31) <= x.value < 2**31:  # the loop variable is an i32
                raise self.err(e.span, "E040", f"loop bound {x.value} does not fit in i32")
            return x.value
        if use is not None and x.ty.dtype.is_int:
            raise loops.not_static(self, e, x, use)  # the static-bound-plus-`if` pattern to use instead
        raise self.err(e.span, "E051", "bound must be static: a literal, a static param or constant, or num_players")

    def range_of(self, it: ast.Expr, var: str = "i", gen: ast.GenCall | None = None) -> tuple[int, int]:
        if not (isinstance(it, ast.Call) and it.func == "range" and 1 <= len(it.args) <= 2):
            raise self.err(it.span, "E020", "loops go over range(stop) or range(start, stop)")
        use = loops.Bound("generator" if gen else "for", var, it.args, gen)
        if len(it.args) == 1:
            return 0, self.static_int(it.args[0], use)
        return self.static_int(it.args[0], use), self.static_int(it.args[1], use)

    def gen_call(self, e: ast.GenCall) -> ir.Expr:
        if "." in e.func:  # `np.sum(... for ...)`
            raise mathops.prefix_error(self, e.func, e.func_span, True)
        if e.func not in REDUCTIONS:
            raise self.err(e.func_span, "E030", f"'{e.func}' cannot take a generator; use one of {sorted(REDUCTIONS)}")
        start, stop = self.range_of(e.iter, e.var, e)
        self.scopes.append({})
        self.in_generator += 1
        try:
            self.declare(e.var, LocalVar(I32, False, (start, stop)), e.span, "generator variable")
            elt = self.scalar(e.elt, "element")
            cond = self.bool_expr(e.cond, "filter") if e.cond is not None else None
        finally:
            self.scopes.pop()
            self.in_generator -= 1
        return self.reduce_ty(e.func, elt, e.span, False, e.var, start, stop, cond)

    def random_site(self, span: Span) -> int:
        if self.ctx.pure:
            raise self.err(span, "E054", f"randomness is not allowed in {self.ctx.where}")
        if self.in_generator:
            raise self.err(span, "E054", "randomness inside a generator would repeat per element; use a for loop")
        self.uses_random = True
        return self.env.next_site()

    def random(self, e: ast.Call) -> ir.Expr:
        f = e.func
        if f == "coin":
            self.arity(e, 0)
            return ir.Random(
                dist="bernoulli", args=(_lit(0.5, F32, e.span),), ty=BOOL, span=e.span, site=self.random_site(e.span)
            )
        if f == "bernoulli":
            self.arity(e, 1)
            p = self.coerce(self.scalar(e.args[0]), F32, e.args[0].span, "bernoulli probability")
            return ir.Random(dist="bernoulli", args=(p,), ty=BOOL, span=e.span, site=self.random_site(e.span))
        self.arity(e, 2)
        ty = F32 if f == "uniform" else I32
        args = tuple(self.coerce(self.scalar(a), ty, a.span, f"{f} bound") for a in e.args)
        return ir.Random(dist=f, args=args, ty=ty, span=e.span, site=self.random_site(e.span))  # type: ignore[arg-type]

    # ---- statements --------------------------------------------------
    def block(self, stmts: tuple[ast.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        self.scopes.append({})
        out = loops.Segments(self)  # what follows a `break`/`continue` is guarded
        try:
            for s in stmts:
                out.before()
                try:
                    out.add(self.stmt(s))
                except Bail:
                    out.add([])
        finally:
            self.scopes.pop()
        return out.finish()

    def stmt(self, s: ast.Stmt) -> list[ir.Stmt]:
        if isinstance(s, ast.Pass):
            return []
        if isinstance(s, ast.Let):
            return self.let(s)
        if isinstance(s, ast.Assign):
            return self.assign(s)
        if isinstance(s, ast.ExprStmt):
            return self.call_stmt(s.expr, s.span)
        if isinstance(s, ast.Return):
            if self.ctx.returns is None:
                raise self.err(
                    s.span,
                    "E056",
                    f"`return` is only allowed in functions, not in {self.ctx.where}: there is no early exit; put the "
                    "rest under `if ...:`/`else:` (in a loop, `break` or `continue`)",
                )
            if self.ctx.results or isinstance(s.value, ast.Tuple):
                return values.ret(self, s)  # `return a, b` (envc/check/values.py)
            v = self.shaped(s.value, self.ctx.returns, "return value")
            return [ir.ReturnS(value=v, span=s.span)]
        if isinstance(s, ast.LetMany):
            return values.let_many(self, s)
        if isinstance(s, ast.AssignMany):
            return values.assign_many(self, s)
        if isinstance(s, ast.If):
            return [self.if_stmt(list(s.branches), s.orelse, s.span)]
        if isinstance(s, ast.For):
            return loops.for_stmt(self, s)
        if isinstance(s, ast.While):
            return loops.while_stmt(self, s)
        if isinstance(s, (ast.Break, ast.Continue)):
            return loops.exit_stmt(self, s)
        if isinstance(s, ast.Match):
            return [self.match(s)]
        raise self.err(s.span, "E020", "unsupported statement")

    def if_stmt(
        self, branches: list[tuple[ast.Expr, tuple[ast.Stmt, ...]]], orelse: tuple[ast.Stmt, ...], span: Span
    ) -> ir.Stmt:
        cond_ast, body_ast = branches[0]
        cond = self.checked(lambda: self.bool_expr(cond_ast), cond_ast.span)
        then = self.block(body_ast)
        if len(branches) > 1:
            rest: tuple[ir.Stmt, ...] = (self.if_stmt(branches[1:], orelse, branches[1][0].span),)
        else:
            rest = self.block(orelse)
        return ir.IfS(cond=cond, then=then, orelse=rest, span=span)

    def match(self, s: ast.Match) -> ir.Stmt:
        subj = self.scalar(s.subject, "match subject")
        if subj.ty.enum is None:
            raise self.err(s.subject.span, "E040", f"match needs an enum value, got {subj.ty.show()}")
        sym = self.env.symbols[subj.ty.enum]
        assert isinstance(sym, EnumSym)
        cases: list[tuple[tuple[int, ...], tuple[ir.Stmt, ...]]] = []
        default: tuple[ir.Stmt, ...] = ()
        seen: set[int] = set()
        has_default = False
        for c in s.cases:
            if c.names == ("_",):
                has_default = True
                default = self.block(c.body)
                continue
            idx: list[int] = []
            for n in c.names:
                if n not in sym.members:
                    hint = did_you_mean(n, list(sym.members))
                    self.env.diags.error(c.span, "E057", f"'{n}' is not a member of {sym.name}{hint}")
                    continue
                i = sym.members.index(n)
                if i in seen:
                    self.env.diags.error(c.span, "E031", f"case '{n}' appears twice")
                seen.add(i)
                idx.append(i)
            cases.append((tuple(idx), self.block(c.body)))
        missing = [m for i, m in enumerate(sym.members) if i not in seen]
        if missing and not has_default:
            self.env.diags.error(
                s.span, "E057", f"match on {sym.name} does not cover {', '.join(missing)}; add them or `case _:`"
            )
        return ir.Switch(subject=subj, cases=tuple(cases), default=default, span=s.span)

    def let(self, s: ast.Let) -> list[ir.Stmt]:
        try:
            return self._let(s)
        except Bail:
            if self.lookup_local(s.name) is None and s.name not in self.env.symbols:
                self.broken_locals.add(s.name)  # later uses are not "unknown names"
            raise

    def _let(self, s: ast.Let) -> list[ir.Stmt]:
        declared = self.type_named(s.type_name, s.span) if s.type_name else None
        if isinstance(s.value, ast.Call) and s.value.func in ("pop", "remove_at"):
            z = self.zone_arg(s.value.args[0]) if s.value.args else None
            if z is None:
                raise self.err(s.span, "E042", f"{s.value.func}(...) needs a zone")
            ty = declared or z.elem
            self.declare(s.name, LocalVar(ty, True), s.span, "local")
            tgt = ir.Target(space="local", name=s.name, ty=ty, span=s.span)
            init = ir.LetS(name=s.name, value=_lit(False if ty.dtype is DType.BOOL else 0, ty, s.span), span=s.span)
            return [init, self.zone_take(s.value, tgt)]
        v = self.expr(s.value)
        if declared is not None:
            v = self.coerce(v, declared, s.value.span, f"value of '{s.name}'")
        elif self.is_weak(v):
            v = self.fit(v, I32, s.span)
        self.declare(s.name, LocalVar(v.ty, True), s.span, "local")
        return [ir.LetS(name=s.name, value=v, span=s.span)]

    def type_named(self, name: str, span: Span) -> Ty:
        if name in ("bool", "i8", "i16", "i32", "u32", "f32", "f64"):
            return Ty(dtype=DType(name))
        sym = self.env.symbols.get(name)
        if isinstance(sym, EnumSym):
            return sym.ty
        if name in self.env.broken:
            raise Bail()
        raise self.err(span, "E030", f"unknown type '{name}'")

    def target(self, e: ast.Expr) -> ir.Target:
        if isinstance(e, ast.Name):
            var = self.lookup_local(e.id)
            if var is not None:
                if not var.mutable:
                    raise self.err(e.span, "E050", f"'{e.id}' is read-only (a loop variable or parameter)")
                return ir.Target(space="local", name=e.id, ty=var.ty, span=e.span)
        r = self.ref(e)
        if isinstance(r, ir.Read) and r.space == "local":  # `y[i] = v` on an array local
            var = self.lookup_local(r.name)
            if var is not None and not var.mutable:
                raise self.err(e.span, "E050", f"'{r.name}' is read-only (a parameter)")
            return ir.Target(space="local", name=r.name, index=r.index, ty=r.ty, dims=r.dims, span=e.span)
        if isinstance(r, PRef):
            s = r.sym
            if s.space == "const":
                raise self.err(e.span, "E050", f"'{s.name}' is a constant and cannot be assigned")
            if not s.writable:
                raise self.err(e.span, "E050", f"'{s.name}' is read-only")
            if s.space == "state" and self.ctx.pure:
                raise self.err(e.span, "E054", f"state cannot be changed in {self.ctx.where}")
            if s.space == "action":
                raise self.err(e.span, "E050", "'action' is read-only")
            if s.kind == "zone":
                raise self.err(e.span, "E043", "a zone changes only through push/insert/pop/remove_at/clear/shuffle")
            x = self.finish(r, e.span)
            assert isinstance(x, ir.Read)
            return ir.Target(space=s.space, name=x.name, index=x.index, ty=x.ty, span=e.span)  # type: ignore[arg-type]
        if isinstance(r, ir.Param):
            raise self.err(e.span, "E050", f"'{r.name}' is a parameter and cannot be assigned")
        if isinstance(r, ir.Lit) and isinstance(e, ast.Name):
            raise self.err(e.span, "E050", f"'{e.id}' is a constant and cannot be assigned")
        raise self.err(e.span, "E043", "cannot assign to this")

    def assign(self, s: ast.Assign) -> list[ir.Stmt]:
        if isinstance(s.target, ast.Name) and s.target.id == "step_count":
            raise self.err(s.target.span, "E050", "'step_count' is maintained by the runtime and is read-only")
        tgt = self.target(s.target)
        if s.op == "=" and isinstance(s.value, ast.Call) and s.value.func in ("pop", "remove_at"):
            return [self.zone_take(s.value, tgt)]
        v = self.expr(s.value)
        if s.op != "=":
            op = s.op[:-1]
            cur = (
                ir.Read(space=tgt.space, name=tgt.name, index=tgt.index, ty=tgt.ty, dims=tgt.dims, span=tgt.span)
                if tgt.space != "local" or tgt.index
                else ir.Local(name=tgt.name, ty=tgt.ty, span=tgt.span)
            )
            if tgt.ty.shape and tgt.space != "local":
                raise self.err(s.span, "E041", f"'{s.op}' needs a scalar target")
            if v.ty.shape and not tgt.ty.shape:
                raise self.err(s.value.span, "E041", "expected a scalar value")
            fake = ast.Binary(op, ast.Name("__lhs__", tgt.span), s.value, s.span)
            self.scopes.append({"__lhs__": LocalVar(tgt.ty, False)})
            try:
                combined = self.binary(fake)
            finally:
                self.scopes.pop()
            v = _substitute_lhs(combined, cur)
        if tgt.ty.shape and not v.ty.shape and tgt.space == "local":
            raise self.err(
                s.value.span,
                "E041",
                f"'{tgt.name}' is an array {tgt.ty.show()}; assign an array of that shape, or one element with "
                f"{tgt.name}[i] = ...",
            )
        if tgt.ty.shape and not v.ty.shape:
            v = self.coerce(v, tgt.ty.scalar(), s.value.span, "assigned value")
        else:
            v = self.coerce(v, tgt.ty, s.value.span, "assigned value")
        return [ir.Assign(target=tgt, value=v, span=s.span)]

    def zone_take(self, c: ast.Call, out: ir.Target | None) -> ir.Stmt:
        self.check_effects(c.span, c.func)
        if out is not None and c.args:
            z = self.zone_arg(c.args[0])
            self.coerce(ir.Local(name="__elem__", ty=z.elem, span=c.span), out.ty, c.span, f"result of {c.func}")
        if c.func == "pop":
            self.arity(c, 1)
            z = self.zone_arg(c.args[0])
            return ir.ZoneOp(op="pop", zone=z, out=out, span=c.span)
        self.arity(c, 2)
        z = self.zone_arg(c.args[0])
        i = self.index_value(c.args[1])
        return ir.ZoneOp(op="remove_at", zone=z, index=i, out=out, span=c.span)

    def check_effects(self, span: Span, what: str) -> None:
        if self.ctx.pure:
            raise self.err(span, "E054", f"{what}(...) changes state, which is not allowed in {self.ctx.where}")

    def call_stmt(self, e: ast.Expr, span: Span) -> list[ir.Stmt]:
        if not isinstance(e, ast.Call):
            raise self.err(span, "E020", "this expression does nothing; only calls can stand alone")
        f = e.func
        if "." in f:  # `np.random.shuffle(deck)`
            raise mathops.prefix_error(self, f, e.func_span, True)
        sym = self.env.symbols.get(f)
        if isinstance(sym, CallableSym):
            if sym.returns is not None:
                raise self.err(span, "E040", f"the result of function '{f}' is unused")
            self.check_effects(span, f)
            args = self.call_args(sym, e)
            return [ir.CallProc(proc=f, args=args, site=self.env.next_site(), span=span)]
        if f in ("pop", "remove_at"):
            return [self.zone_take(e, None)]
        if f in ("push", "insert", "clear", "shuffle"):
            self.check_effects(span, f)
            n = {"push": 2, "insert": 3, "clear": 1, "shuffle": 1}[f]
            self.arity(e, n)
            z = self.zone_arg(e.args[0])
            index = self.index_value(e.args[1]) if f == "insert" else None
            value = None
            if f in ("push", "insert"):
                va = e.args[-1]
                value = self.coerce(self.scalar(va), z.elem, va.span, f"{f} value")
            site = self.random_site(span) if f == "shuffle" else -1
            return [ir.ZoneOp(op=f, zone=z, index=index, value=value, site=site, span=span)]  # type: ignore[arg-type]
        if sym is None and f not in BUILTINS:
            if f in self.env.broken:
                raise Bail()
            hint = did_you_mean(f, self.names_in_scope())
            raise self.err(e.func_span, "E030", f"unknown procedure '{f}'{hint}")
        raise self.err(span, "E040", f"the result of {f}(...) is unused")


def _fold(op: str, a: object, b: object) -> int | None:
    if not (isinstance(a, int) and isinstance(b, int)):
        return None
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    elif op == "//" and b != 0:
        r = a // b
    elif op == "%" and b != 0:
        r = a % b
    else:
        return None
    return r


def _substitute_lhs(x: ir.Expr, cur: ir.Expr) -> ir.Expr:
    """Replace the placeholder local `__lhs__` in an augmented assignment by the target's current value."""
    if isinstance(x, ir.Local) and x.name == "__lhs__":
        return cur
    if isinstance(x, ir.Cast):
        return x.model_copy(update={"x": _substitute_lhs(x.x, cur)})
    if isinstance(x, ir.Binary):
        return x.model_copy(update={"a": _substitute_lhs(x.a, cur), "b": _substitute_lhs(x.b, cur)})
    if isinstance(x, ir.Math):  # `x **= 2`, `x <<= n`
        return x.model_copy(update={"args": tuple(_substitute_lhs(a, cur) for a in x.args)})
    return x
