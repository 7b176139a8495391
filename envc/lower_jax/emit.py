"""IR -> JAX source: straight-line SSA code, branches predicated with jnp.where, small loops unrolled.

Every storage field and local lives in a Python variable; each write makes a new version (`board_3`), so
the generated functions read like hand-written pgx code and trace to branchless jaxprs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from envc import ir, mathops
from envc.intervals import fixed_ranges, interval, keep_let
from envc.ir import DType, Ty
from envc.lower_jax import mathops as jax_mathops
from envc.lower_jax.names import PyNames
from envc.mathops import f32

JNP = {
    DType.BOOL: "jnp.bool_",
    DType.I8: "jnp.int8",
    DType.I16: "jnp.int16",
    DType.I32: "jnp.int32",
    DType.U32: "jnp.uint32",
    DType.F32: "jnp.float32",
    DType.F64: "jnp.float64",  # only in packages that run with x64 (envc/f64.py)
}
UNROLL = 16  # loops with at most this many iterations may be unrolled; longer ones use lax.fori_loop
UNROLL_BUDGET = 400  # ... and only while iterations x body size (IR nodes) stays within this, to bound compile time


def ident(name: str) -> str:
    """Python identifier of a storage name (`bench.damage` -> `bench__damage`)."""
    return name.replace(".", "__")


def literal(value: bool | int | float, ty: Ty) -> str:
    """A typed JAX scalar literal (the value rounded to f32, or wrapped into its integer type, as the reference)."""
    if ty.dtype is DType.BOOL:
        return "True" if value else "False"
    if ty.dtype is DType.F32:
        v = f32(float(value))
        if math.isnan(v):
            return "jnp.float32(jnp.nan)"
        if math.isinf(v):
            return f"jnp.float32({'-' if v < 0 else ''}jnp.inf)"
        if v == 0 and math.copysign(1.0, v) > 0:
            # XLA simplifies `x + c` to `x` for a constant c == +0.0, which is wrong for x == -0.0 (IEEE: +0.0);
            # the barrier keeps every +0.0 that comes from a literal out of its reach
            return "jax.lax.optimization_barrier(jnp.float32(0.0))"
        return f"jnp.float32({v!r})"
    if ty.dtype is DType.F64:
        v = float(value)
        if math.isnan(v) or math.isinf(v):
            return f"jnp.float64({'-' if v < 0 else ''}jnp.{'nan' if math.isnan(v) else 'inf'})"
        if v == 0 and math.copysign(1.0, v) > 0:
            return "jax.lax.optimization_barrier(jnp.float64(0.0))"  # as for f32
        return f"jnp.float64({v!r})"
    lo, hi = ty.dtype.int_range
    return f"{JNP[ty.dtype]}({(int(value) - lo) % (hi - lo + 1) + lo})"


@dataclass
class Scope:
    """Current Python variable of each field/local, and the randomness key variable."""

    vars: dict[str, str]
    key: str
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)

    def copy(self) -> Scope:
        return Scope(dict(self.vars), self.key, dict(self.ranges))


class Emitter:
    """Emits the body of one generated function."""

    def __init__(self, spec: ir.SpecIR, names: dict[str, int] | None = None, py: PyNames | None = None):
        self.spec = spec
        self.consts = fixed_ranges(spec)
        self.py = py if py is not None else PyNames(spec)
        self.lines: list[str] = []
        self.depth = 1
        self.counter = names if names is not None else {}
        self.shapes: dict[tuple[str, str], tuple[int, ...]] = {}
        for f in spec.fields:
            self.shapes[("state", f.name)] = f.ty.shape
        for c in spec.consts:
            self.shapes[("const", c.name)] = c.ty.shape
        for o in spec.obs_fields:
            self.shapes[("obs", o.name)] = o.ty.shape
        # the continuous action's values, or the discrete action id (a scalar) in the outputs
        self.shapes[("action", "action")] = spec.box.shape if spec.box is not None else ()
        self.callables = {c.name: c for c in spec.callables}
        self.enums = {e.name: len(e.members) for e in spec.enums}
        self.sizes: dict[str, int] = {}
        self._touched: dict[str, set[str]] = {}

    # ---- code size -----------------------------------------------------
    def size(self, node: object) -> int:
        """IR nodes this emits (calls count their inlined bodies, loops their unrolled copies)."""
        if isinstance(node, tuple):
            return sum(self.size(x) for x in node)
        if not isinstance(node, (ir._Expr, ir._Stmt, ir.ZoneRef, ir.Target)):
            return 0
        if isinstance(node, ir.ForS):
            body = self.size(node.body)
            n = node.stop - node.start  # as in unrolls(), without sizing the body again (exponential in nesting)
            return 1 + (body * n if n <= UNROLL and n * body <= UNROLL_BUDGET else body)
        n = 1
        if isinstance(node, (ir.CallFn, ir.CallProc)):
            name = node.fn if isinstance(node, ir.CallFn) else node.proc
            if name not in self.sizes:
                self.sizes[name] = 0  # no recursion in specs, but keep this total
                self.sizes[name] = self.size(self.callables[name].body)
            n += self.sizes[name]
        for f in type(node).model_fields:
            if f not in ("ty", "span"):
                n += self.size(getattr(node, f))
        return n

    def unrolls(self, s: ir.ForS) -> bool:
        """Unroll a static loop when it is short and its unrolled code stays small."""
        n = s.stop - s.start
        return n <= UNROLL and n * self.size(s.body) <= UNROLL_BUDGET

    # ---- output --------------------------------------------------------
    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    @contextmanager
    def indented(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def fresh(self, base: str) -> str:
        base = ident(base)
        n = self.counter.get(base, 0) + 1
        self.counter[base] = n
        return f"{base}_{n}"

    def bind(self, base: str, value: str) -> str:
        name = self.fresh(base)
        self.line(f"{name} = {value}")
        return name

    def var(self, sc: Scope, space: str, name: str) -> str:
        if space == "const":
            return f"C.{self.py.const(name)}"
        if space == "action":
            return sc.vars["action"]
        return sc.vars[f"{space}:{name}"]

    # ---- indices -------------------------------------------------------
    def static_index(self, e: ir.Expr, sc: Scope) -> tuple[int, int] | None:
        """The values an index can take ([lo, hi)), where they are known (envc.intervals)."""
        return interval(e, sc.ranges, self.consts)

    def in_range(self, e: ir.Expr, n: int, sc: Scope) -> bool:
        """Can the index never leave [0, n) (so it needs no clamp or guard)?"""
        rng = self.static_index(e, sc)
        return rng is not None and 0 <= rng[0] and rng[1] <= n

    def read_index(self, idx: tuple[ir.Expr, ...], dims: tuple[int, ...], sc: Scope) -> str:
        parts = []
        for e, n in zip(idx, dims):
            rng = self.static_index(e, sc)
            if rng is not None and rng[1] - rng[0] == 1 and 0 <= rng[0] < n:
                parts.append(str(rng[0]))  # a Python int: a static slice, no gather
                continue
            x = self.expr(e, sc)
            parts.append(x if self.in_range(e, n, sc) else f"clamp_index({x}, {n})")
        return ", ".join(parts)

    def write_index(self, idx: tuple[ir.Expr, ...], dims: tuple[int, ...], sc: Scope) -> tuple[str, bool]:
        parts = []
        guarded = False
        for e, n in zip(idx, dims):
            rng = self.static_index(e, sc)
            if rng is not None and rng[1] - rng[0] == 1 and 0 <= rng[0] < n:
                parts.append(str(rng[0]))
                continue
            x = self.expr(e, sc)
            if self.in_range(e, n, sc):
                parts.append(x)
            else:
                parts.append(f"drop_index({x}, {n})")
                guarded = True
        return ", ".join(parts), guarded

    # ---- expressions ---------------------------------------------------
    def expr(self, e: ir.Expr, sc: Scope) -> str:
        return getattr(self, "x_" + e.kind)(e, sc)  # type: ignore[no-any-return]

    def x_lit(self, e: ir.Lit, sc: Scope) -> str:
        return literal(e.value, e.ty)

    def x_param(self, e: ir.Param, sc: Scope) -> str:
        return f"params.{self.py.param(e.name)}"

    def x_local(self, e: ir.Local, sc: Scope) -> str:
        return sc.vars[f"local:{e.name}"]

    def x_read(self, e: ir.Read, sc: Scope) -> str:
        base = self.var(sc, e.space, e.name)
        if not e.index:
            return base
        dims = e.dims if e.space == "local" else self.shapes[(e.space, e.name)]
        return f"{base}[{self.read_index(e.index, dims, sc)}]"

    def x_unary(self, e: ir.Unary, sc: Scope) -> str:
        x = self.expr(e.x, sc)
        return f"jnp.logical_not({x})" if e.op == "not" else f"(-{x})"

    def x_binary(self, e: ir.Binary, sc: Scope) -> str:
        a, b = self.expr(e.a, sc), self.expr(e.b, sc)
        op = e.op
        if op == "and":
            return f"jnp.logical_and({a}, {b})"
        if op == "or":
            return f"jnp.logical_or({a}, {b})"
        if op in ("//", "%"):  # ints and f32: the runtime's edge values (zero divisors, signed zeros, subnormals)
            fn = "floor_div" if op == "//" else "floor_mod"
            return f"{fn}({a}, {b})"
        if op == "/":
            return f"({a} / {b})"
        return f"({a} {op} {b})"

    def x_cast(self, e: ir.Cast, sc: Scope) -> str:
        x = self.expr(e.x, sc)
        src, dst = e.x.ty.dtype, e.ty.dtype
        if dst is DType.BOOL:
            return f"({x} != 0)"
        if e.ty.enum is not None:
            return f"to_enum({x}, {self.enums[e.ty.enum]})"
        if src.is_float and not dst.is_float:
            return f"float_to_int({x}, {JNP[dst]})"
        if dst.is_float and isinstance(e.x, ir.Lit):  # `f32(0)` is a literal +0.0 (see `literal`)
            v = float(e.x.value)
            return literal(f32(v) if src is DType.F32 else v, e.ty)  # an f32 literal widened keeps its f32 value
        return f"jnp.asarray({x}).astype({JNP[dst]})"

    def x_select(self, e: ir.Select, sc: Scope) -> str:
        return f"jnp.where({self.expr(e.cond, sc)}, {self.expr(e.a, sc)}, {self.expr(e.b, sc)})"

    def x_math(self, e: ir.Math, sc: Scope) -> str:
        if e.fn in mathops.FNS:  # `**`, shifts, `~` and the builtins of language 1.1
            return jax_mathops.emit(self, e, sc)
        args = [self.expr(a, sc) for a in e.args]
        fn = {"min": "jnp.minimum", "max": "jnp.maximum", "abs": "jnp.abs", "atan2": "jnp.arctan2"}.get(e.fn)
        if e.fn == "clip":
            return f"jnp.minimum(jnp.maximum({args[0]}, {args[1]}), {args[2]})"
        return f"{fn or 'jnp.' + e.fn}({', '.join(args)})"

    def _reduce(
        self, op: str, ty: Ty, elt_ty: Ty, vals: str, cond: str | None, pos: str, n: int, site: int, sc: Scope
    ) -> str:
        """Reduce the `n` values `vals` (kept where `cond`, at positions `pos`) with the semantics of section 11."""
        if op == "choice":
            mask = vals if cond is None else f"jnp.logical_and({vals}, {cond})"
            return f"{pos}[choice_index(jax.random.fold_in({sc.key}, {site}), {mask})]"
        if op in ("argmax", "argmin"):
            return f"{op}_where({vals}, {cond or 'None'}, {pos})"
        if ty.dtype.is_float and op == "sum":
            # from +0.0, in order, rounding after each addition (XLA's reductions reassociate); the running sum
            # is never -0.0, so adding 0.0 for a value filtered out changes nothing
            zero = literal(0.0, ty)
            v = self.bind("values", f"jnp.where({cond}, {vals}, {zero})" if cond is not None else vals)
            if n <= UNROLL:
                acc = zero
                for i in range(n):
                    acc = f"({acc} + {v}[{i}])"
                return acc
            return f"jax.lax.fori_loop(0, {n}, lambda i_, a_: a_ + {v}[i_], {zero})"
        where = f", where={cond}" if cond is not None else ""
        if op == "sum":
            return f"jnp.sum({vals}, dtype={JNP[ty.dtype]}{where})"
        if op == "any":
            return f"jnp.any({vals}{where})"
        if op == "all":
            return f"jnp.all({vals}{where})"
        if op == "count":
            return f"jnp.sum({vals}, dtype=jnp.int32{where})"
        # XLA's min/max are IEEE 754-2019 minimum/maximum: NaN wins, -0.0 is below +0.0 (as section 11)
        empty = self.empty_value(op, elt_ty)
        return f"jnp.{op}({vals}{where}, initial={JNP[elt_ty.dtype]}({empty}))"

    def empty_value(self, op: str, ty: Ty) -> str:
        if ty.dtype.is_float:
            return "jnp.inf" if op == "min" else "-jnp.inf"
        if ty.enum is not None:
            return "0"
        lo, hi = ty.dtype.int_range
        return str(hi if op == "min" else lo)

    def x_reduce(self, e: ir.Reduce, sc: Scope) -> str:
        n = e.stop - e.start
        if n <= 0:  # an empty range evaluates nothing: the documented results of an empty reduction (section 11)
            if e.op in ("min", "max"):
                return f"{JNP[e.elt.ty.dtype]}({self.empty_value(e.op, e.elt.ty)})"
            return {
                "sum": literal(0, e.ty),
                "count": "jnp.int32(0)",
                "any": "jnp.bool_(False)",
                "all": "jnp.bool_(True)",
                "argmax": "jnp.int32(-1)",
                "argmin": "jnp.int32(-1)",
                "choice": f"jnp.int32({e.start})",
            }[e.op]
        if 0 < n <= UNROLL and n * (self.size(e.elt) + self.size(e.cond)) <= UNROLL_BUDGET:
            return self.reduce_unrolled(e, sc)
        inner = sc.copy()
        iv = self.fresh(e.var)
        inner.vars[f"local:{e.var}"] = iv
        inner.ranges[e.var] = (e.start, e.stop)
        sub = Emitter(self.spec, self.counter, self.py)
        sub.depth = self.depth + 1
        elt = sub.expr(e.elt, inner)
        cond = sub.expr(e.cond, inner) if e.cond is not None else None
        fname = self.fresh("element")
        self.line(f"def {fname}({iv}):")
        for ln in sub.lines:
            self.lines.append(ln)
        vals = self.fresh("values")
        with self.indented():
            self.line(f"return {elt}, {cond}" if cond is not None else f"return {elt}")
        if cond is not None:
            conds = self.fresh("keep")
            self.line(f"{vals}, {conds} = jax.vmap({fname})(jnp.arange({e.start}, {e.stop}, dtype=jnp.int32))")
        else:
            self.line(f"{vals} = jax.vmap({fname})(jnp.arange({e.start}, {e.stop}, dtype=jnp.int32))")
        pos = f"jnp.arange({e.start}, {e.stop}, dtype=jnp.int32)"
        return self._reduce(e.op, e.ty, e.elt.ty, vals, conds if cond is not None else None, pos, n, e.site, sc)

    def reduce_unrolled(self, e: ir.Reduce, sc: Scope) -> str:
        """A short reduction with the loop variable a constant in each element, so every index is static."""
        elts, conds = [], []
        for i in range(e.start, e.stop):
            inner = sc.copy()
            inner.vars[f"local:{e.var}"] = f"jnp.int32({i})"
            inner.ranges[e.var] = (i, i + 1)
            elts.append(self.expr(e.elt, inner))
            if e.cond is not None:
                conds.append(self.expr(e.cond, inner))
        vals = self.bind("values", f"jnp.stack([{', '.join(elts)}])")
        keep = self.bind("keep", f"jnp.stack([{', '.join(conds)}])") if conds else None
        pos = f"jnp.arange({e.start}, {e.stop}, dtype=jnp.int32)"
        return self._reduce(e.op, e.ty, e.elt.ty, vals, keep, pos, e.stop - e.start, e.site, sc)

    def x_reduce_array(self, e: ir.ReduceArray, sc: Scope) -> str:
        x = self.expr(e.x, sc)
        n = math.prod(e.x.ty.shape)
        vals = self.bind("values", f"jnp.ravel({x})")
        return self._reduce(e.op, e.ty, e.x.ty, vals, None, f"jnp.arange({n}, dtype=jnp.int32)", n, e.site, sc)

    def x_random(self, e: ir.Random, sc: Scope) -> str:
        k = f"jax.random.fold_in({sc.key}, {e.site})"
        args = [self.expr(a, sc) for a in e.args]
        if e.dist == "uniform":
            return f"site_uniform({k}, {args[0]}, {args[1]})"
        if e.dist == "randint":
            return f"site_randint({k}, {args[0]}, {args[1]})"
        return f"site_bernoulli({k}, {args[0]})"

    # ---- calls: each callable is one generated function, so code grows linearly with the spec ------------
    def touched(self, name: str) -> set[str]:
        """State fields a callable reads or writes, directly or through its calls."""
        if name not in self._touched:
            self._touched[name] = set()  # specs have no recursion; this only stops a cycle
            self._touched[name] = self._storage(self.callables[name].body)
        return self._touched[name]

    def _storage(self, node: object) -> set[str]:
        out: set[str] = set()
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, tuple):
                stack.extend(n)
                continue
            if isinstance(n, (ir.Read, ir.Target)) and n.space == "state":
                out.add(n.name)
            elif isinstance(n, ir.ZoneRef):
                out |= {n.name, n.name + ".count"}
            elif isinstance(n, (ir.CallFn, ir.CallProc)):
                out |= self.touched(n.fn if isinstance(n, ir.CallFn) else n.proc)
            if isinstance(n, (ir._Expr, ir._Stmt, ir.Target, ir.ZoneRef)):
                stack.extend(getattr(n, f) for f in type(n).model_fields if f not in ("ty", "span"))
        return out

    def call_state(self, name: str, sc: Scope) -> str:
        """The current state as the callee sees it: the fields it touches at their current values."""
        changed = [
            f"{self.py.field(f)}={sc.vars[f'state:{f}']}"
            for f in sorted(self.touched(name))
            if sc.vars[f"state:{f}"] != f"state.{self.py.field(f)}"
        ]
        return f"state.replace({', '.join(changed)})" if changed else "state"

    def x_call_fn(self, e: ir.CallFn, sc: Scope) -> str:
        args = ", ".join([self.call_state(e.fn, sc), "params", *(self.expr(a, sc) for a in e.args)])
        return self.bind(f"{e.fn}_result", f"{self.py.glob('call', e.fn)}({args})")

    def x_zone_find(self, e: ir.ZoneFind, sc: Scope) -> str:
        row, count = self.zone_row(e.zone, sc)
        v = self.expr(e.value, sc)
        hits = f"jnp.logical_and({row} == {v}, jnp.arange({e.zone.capacity}) < {count})"
        if e.op == "contains":
            return f"jnp.any({hits})"
        return f"jnp.where(jnp.any({hits}), first_true({hits}), jnp.int32(-1))"

    def zone_row(self, z: ir.ZoneRef, sc: Scope) -> tuple[str, str]:
        data = self.var(sc, "state", z.name)
        cnt = self.var(sc, "state", z.name + ".count")
        if not z.index:
            return data, cnt
        outer = self.shapes[("state", z.name + ".count")]
        idx = self.bind("at", f"({self.read_index(z.index, outer, sc)},)")
        return f"{data}[{idx}]", f"{cnt}[{idx}]"

    # ---- array literals, elementwise maps, several values (language 1.1) -----------------------------------
    def x_array(self, e: ir.ArrayLit, sc: Scope) -> str:
        """`[a, b, c]`: the items stacked along a new first axis."""
        items = ", ".join(self.expr(x, sc) for x in e.items)
        return f"jnp.stack([{items}]).astype({JNP[e.ty.dtype]})"

    def x_map(self, e: ir.Map, sc: Scope) -> str:
        """The scalar body over whole arrays: its operations are elementwise and broadcast a scalar operand."""
        inner = sc.copy()
        for name, a in zip(e.names, e.args):
            inner.vars[f"local:{name}"] = self.bind("element", self.expr(a, sc))
        return f"jnp.broadcast_to({self.expr(e.body, inner)}, {e.ty.shape})"

    def x_values(self, e: ir.Values, sc: Scope) -> str:
        """`return a, b`: a tuple."""
        return f"({', '.join(self.expr(x, sc) for x in e.items)},)"

    def s_unpack(self, s: ir.Unpack, sc: Scope) -> None:
        """`x, v = f(...)`: each value of the returned tuple into its local."""
        got = self.expr(s.value, sc)
        for k, t in enumerate(s.targets):
            self.write(t, f"{got}[{k}]", sc)

    # ---- statements ----------------------------------------------------
    def block(self, stmts: tuple[ir.Stmt, ...], sc: Scope) -> None:
        for i, s in enumerate(stmts):
            getattr(self, "s_" + s.kind)(s, sc)
            if isinstance(s, ir.LetS):  # a local never assigned again keeps its value's range
                keep_let(sc.ranges, s, stmts[i + 1 :], self.consts)

    def s_let(self, s: ir.LetS, sc: Scope) -> None:
        value = self.expr(s.value, sc)
        if s.value.ty.shape:  # an array local: a jnp array (constants are numpy arrays)
            value = f"jnp.asarray({value})"
        sc.vars[f"local:{s.name}"] = self.bind(s.name, value)

    def write(self, t: ir.Target, value: str, sc: Scope) -> None:
        if t.space == "local" and t.index:  # an element (or row) of an array local
            idx, guarded = self.write_index(t.index, t.dims, sc)
            mode = ', mode="drop"' if guarded else ""
            cur = sc.vars[f"local:{t.name}"]
            sc.vars[f"local:{t.name}"] = self.bind(t.name, f"{cur}.at[{idx}].set({value}{mode})")
            return
        if t.space == "local":
            sc.vars[f"local:{t.name}"] = self.bind(t.name, value)
            return
        key = f"{t.space}:{t.name}"
        cur = sc.vars[key]
        dims = self.shapes[(t.space, t.name)]
        if not t.index:
            shape = dims
            new = f"jnp.broadcast_to({value}, {shape}).astype({cur}.dtype)" if shape else value
            sc.vars[key] = self.bind(t.name, new)
            return
        idx, guarded = self.write_index(t.index, dims, sc)
        mode = ', mode="drop"' if guarded else ""
        sc.vars[key] = self.bind(t.name, f"{cur}.at[{idx}].set({value}{mode})")

    def s_assign(self, s: ir.Assign, sc: Scope) -> None:
        self.write(s.target, self.expr(s.value, sc), sc)

    def merge(self, cond: str, sc: Scope, a: Scope, b: Scope) -> None:
        for k in sc.vars:
            va, vb = a.vars[k], b.vars[k]
            if va != vb:
                sc.vars[k] = self.bind(k.split(":", 1)[1], f"jnp.where({cond}, {va}, {vb})")
            elif va != sc.vars[k]:
                sc.vars[k] = va

    def s_if(self, s: ir.IfS, sc: Scope) -> None:
        cond = self.bind("cond", self.expr(s.cond, sc))
        a, b = sc.copy(), sc.copy()
        self.block(s.then, a)
        self.block(s.orelse, b)
        self.merge(cond, sc, a, b)

    def s_switch(self, s: ir.Switch, sc: Scope) -> None:
        subj = self.bind("subject", self.expr(s.subject, sc))
        key = f"__{subj}__"
        chain: ir.Stmt | None = None
        orelse: tuple[ir.Stmt, ...] = s.default
        for members, body in reversed(s.cases):
            conds = [
                ir.Binary(
                    op="==",
                    a=ir.Local(name=key, ty=s.subject.ty, span=s.span),
                    b=ir.Lit(value=m, ty=s.subject.ty, span=s.span),
                    ty=ir.BOOL,
                    span=s.span,
                )
                for m in members
            ]
            if not conds:
                continue
            c: ir.Expr = conds[0]
            for more in conds[1:]:
                c = ir.Binary(op="or", a=c, b=more, ty=ir.BOOL, span=s.span)
            chain = ir.IfS(cond=c, then=body, orelse=orelse, span=s.span)
            orelse = (chain,)
        sc.vars[f"local:{key}"] = subj
        self.block(orelse, sc)
        del sc.vars[f"local:{key}"]

    def s_for(self, s: ir.ForS, sc: Scope) -> None:
        n = s.stop - s.start
        if n <= 0:
            return
        nest = self.vector_nest(s)
        if nest is not None:
            self.vectorize(nest, sc)
            return
        loop_key = self.bind("loop_key", f"jax.random.fold_in({sc.key}, {s.loop_id})") if s.random else sc.key
        if self.unrolls(s):
            outer_key = sc.key
            for i in range(s.start, s.stop):
                sc.vars[f"local:{s.var}"] = f"jnp.int32({i})"
                sc.ranges[s.var] = (i, i + 1)
                if s.random:
                    sc.key = self.bind("key", f"jax.random.fold_in({loop_key}, {i})")
                self.block(s.body, sc)
            sc.key = outer_key
            del sc.vars[f"local:{s.var}"]
            sc.ranges.pop(s.var, None)
            return
        carried = sorted(k for k in self.written(s.body, sc) if k in sc.vars)
        fname = self.fresh("loop_body")
        iv = self.fresh(s.var)
        inner = sc.copy()
        inner.vars[f"local:{s.var}"] = iv
        inner.ranges[s.var] = (s.start, s.stop)
        carry_in = [self.fresh(k.split(":", 1)[1]) for k in carried]
        self.line(f"def {fname}({iv}, carry):")
        with self.indented():
            self.line(f"{', '.join(carry_in)}{',' if len(carry_in) == 1 else ''} = carry" if carried else "del carry")
            for k, v in zip(carried, carry_in):
                inner.vars[k] = v
            if s.random:
                inner.key = self.bind("key", f"jax.random.fold_in({loop_key}, {iv})")
            self.block(s.body, inner)
            outs = [inner.vars[k] for k in carried]
            self.line(f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        init = f"({', '.join(sc.vars[k] for k in carried)}{',' if len(carried) == 1 else ''})"
        if carried:
            results = [self.fresh(k.split(":", 1)[1]) for k in carried]
            self.line(
                f"{', '.join(results)}{',' if len(results) == 1 else ''} = "
                f"jax.lax.fori_loop({s.start}, {s.stop}, {fname}, {init})"
            )
            for k, v in zip(carried, results):
                sc.vars[k] = v

    # ---- loop vectorization ---------------------------------------------
    def vector_nest(self, s: ir.ForS) -> tuple[list[ir.ForS], tuple[ir.Stmt, ...]] | None:
        """The loops and leaf body of a nest whose iterations are independent element writes, else None.

        Such a nest (every statement a `let` or a scalar write to state/obs, every write indexed by all the
        loop variables, each bare and in range, at the same positions for one storage, and nothing reads
        what the nest writes) is computed for all iterations at once with `jax.vmap`.
        """
        loops = [s]
        body = s.body
        while len(body) == 1 and isinstance(body[0], ir.ForS):
            loops.append(body[0])
            body = body[0].body
        if any(lp.random for lp in loops) or math.prod(lp.stop - lp.start for lp in loops) < 4:
            return None
        names = [lp.var for lp in loops]
        if len(set(names)) != len(names):
            return None
        written: dict[str, tuple[int, ...]] = {}
        for st in body:
            if isinstance(st, ir.LetS):
                continue
            if not isinstance(st, ir.Assign) or st.target.space == "local" or st.target.ty.shape:
                return None
            t = st.target
            dims = self.shapes[(t.space, t.name)]
            where: dict[str, int] = {}
            for pos, (i, dim) in enumerate(zip(t.index, dims)):
                if isinstance(i, ir.Local) and i.name in names:
                    lp = loops[names.index(i.name)]
                    if i.name in where or lp.start < 0 or lp.stop > dim:
                        return None
                    where[i.name] = pos
                elif self.mentions(i, set(names)):
                    return None
            if len(where) != len(names):
                return None
            layout = tuple(where[n] for n in names)
            key = f"{t.space}:{t.name}"
            if written.setdefault(key, layout) != layout:
                return None
        if any(self.reads_any(st, set(written)) for st in body):
            return None
        return loops, body

    def mentions(self, node: object, names: set[str]) -> bool:
        """Does an expression use any of the locals `names`?"""
        if isinstance(node, tuple):
            return any(self.mentions(x, names) for x in node)
        if isinstance(node, ir.Local):
            return node.name in names
        if not isinstance(node, (ir._Expr, ir._Stmt, ir.Target, ir.ZoneRef)):
            return False
        return any(self.mentions(getattr(node, f), names) for f in type(node).model_fields if f not in ("ty", "span"))

    def reads_any(self, node: object, keys: set[str]) -> bool:
        """Does this code read (directly or in called functions) storage in `keys`, draw, or call a procedure?"""
        if isinstance(node, tuple):
            return any(self.reads_any(x, keys) for x in node)
        if isinstance(node, (ir.Random, ir.CallProc, ir.ZoneOp, ir.ZoneFind)):
            return True
        if isinstance(node, ir.Reduce) and node.op == "choice":
            return True
        if isinstance(node, ir.Read) and f"{node.space}:{node.name}" in keys:
            return True
        if isinstance(node, ir.CallFn) and self.reads_any(self.callables[node.fn].body, keys):
            return True
        if not isinstance(node, (ir._Expr, ir._Stmt, ir.Target)):
            return False
        return any(self.reads_any(getattr(node, f), keys) for f in type(node).model_fields if f not in ("ty", "span"))

    def vectorize(self, nest: tuple[list[ir.ForS], tuple[ir.Stmt, ...]], sc: Scope) -> None:
        """Emit a vector nest as one vmapped element function and one slice write per assignment."""
        loops, body = nest
        fname = self.fresh("cells")
        ivs = [self.fresh(lp.var) for lp in loops]
        inner = sc.copy()
        for lp, iv in zip(loops, ivs):
            inner.vars[f"local:{lp.var}"] = iv
            inner.ranges[lp.var] = (lp.start, lp.stop)
        writes = [st for st in body if isinstance(st, ir.Assign)]
        by_var = {lp.var: j for j, lp in enumerate(loops)}

        def nest_index(i: ir.Expr) -> int | None:
            return by_var.get(i.name) if isinstance(i, ir.Local) else None

        # loop variables index as slices; the other positions are loop-invariant, indexed in the enclosing scope
        fixed = []
        for st in writes:
            dims = self.shapes[(st.target.space, st.target.name)]
            parts = []
            for i, dim in zip(st.target.index, dims):
                j = nest_index(i)
                if j is None:
                    parts.append(self.write_index((i,), (dim,), sc)[0])
                else:
                    parts.append(f"{loops[j].start}:{loops[j].stop}")
            fixed.append(", ".join(parts))
        sub = Emitter(self.spec, self.counter, self.py)
        sub.depth = self.depth + 1
        sub.sizes = self.sizes
        outs = []
        for stmt in body:
            if isinstance(stmt, ir.LetS):
                sub.s_let(stmt, inner)
            else:
                assert isinstance(stmt, ir.Assign)
                outs.append(sub.expr(stmt.value, inner))
        self.line(f"def {fname}({', '.join(ivs)}):")
        self.lines.extend(sub.lines)
        with self.indented():
            self.line(f"return ({', '.join(outs)},)")
        mapped = fname
        for k in reversed(range(len(loops))):
            in_axes = ", ".join("0" if j == k else "None" for j in range(len(loops)))
            mapped = f"jax.vmap({mapped}, in_axes=({in_axes},))"
        ranges = ", ".join(f"jnp.arange({lp.start}, {lp.stop}, dtype=jnp.int32)" for lp in loops)
        vals = [self.fresh("cell_values") for _ in writes]
        self.line(f"{', '.join(vals)}, = {mapped}({ranges})")
        for st, idx, v in zip(writes, fixed, vals):
            t = st.target
            # the written block's axes follow the index positions; the values' axes follow the loop nest
            axes = [j for j in map(nest_index, t.index) if j is not None]
            value = v if axes == sorted(axes) else f"jnp.transpose({v}, {tuple(axes)})"
            key = f"{t.space}:{t.name}"
            mode = ', mode="drop"' if "drop_index" in idx else ""
            sc.vars[key] = self.bind(t.name, f"{sc.vars[key]}.at[{idx}].set({value}{mode})")

    def written(self, stmts: tuple[ir.Stmt, ...], sc: Scope) -> set[str]:
        """Variables (scope keys) a statement list may write."""
        out: set[str] = set()
        for s in stmts:
            if isinstance(s, ir.Assign):
                out.add(f"{s.target.space}:{s.target.name}")
            elif isinstance(s, ir.LetS):
                out.add(f"local:{s.name}")
            elif isinstance(s, ir.IfS):
                out |= self.written(s.then, sc) | self.written(s.orelse, sc)
            elif isinstance(s, ir.Switch):
                for _, b in s.cases:
                    out |= self.written(b, sc)
                out |= self.written(s.default, sc)
            elif isinstance(s, ir.ForS):
                out |= self.written(s.body, sc)
            elif isinstance(s, ir.ZoneOp):
                out |= {f"state:{s.zone.name}", f"state:{s.zone.name}.count"}
                if s.out is not None:
                    out.add(f"{s.out.space}:{s.out.name}")
            elif isinstance(s, ir.CallProc):
                out |= {k for k in self.written(self.callables[s.proc].body, sc) if not k.startswith("local:")}
            elif isinstance(s, ir.Unpack):
                out |= {f"{t.space}:{t.name}" for t in s.targets}
        return out

    def s_zone_op(self, s: ir.ZoneOp, sc: Scope) -> None:
        z = s.zone
        dk, ck = f"state:{z.name}", f"state:{z.name}.count"
        data, cnt = sc.vars[dk], sc.vars[ck]
        cap = z.capacity
        outer = self.shapes[("state", z.name + ".count")]
        if z.index:
            idx, _ = self.write_index(z.index, outer, sc)
            at = self.bind("at", f"({idx},)")
            row = self.bind("row", f"{data}.at[{at}].get(mode='fill', fill_value=0)")
            n = self.bind("n", f"{cnt}.at[{at}].get(mode='fill', fill_value={cap})")
        else:
            at, row, n = "()", data, cnt
        value = self.expr(s.value, sc) if s.value is not None else None
        index = self.expr(s.index, sc) if s.index is not None else None
        op = s.op
        if op == "push":
            ok = self.bind("ok", f"{n} < {cap}")
            new_row = f"{row}.at[jnp.where({ok}, {n}, {cap})].set({value}, mode='drop')"
            new_n = f"{n} + {ok}.astype(jnp.int32)"
        elif op == "pop":
            ok = self.bind("ok", f"{n} > 0")
            got = self.bind("popped", f"jnp.where({ok}, {row}[clamp_index({n} - 1, {cap})], 0).astype({row}.dtype)")
            new_row = f"{row}.at[jnp.where({ok}, {n} - 1, {cap})].set(0, mode='drop')"
            new_n = f"{n} - {ok}.astype(jnp.int32)"
        elif op == "insert":
            ok = self.bind("ok", f"({n} < {cap}) & ({index} >= 0) & ({index} <= {n})")
            new_row = f"jnp.where({ok}, zone_insert({row}, {index}, {value}), {row})"
            new_n = f"{n} + {ok}.astype(jnp.int32)"
        elif op == "remove_at":
            ok = self.bind("ok", f"({index} >= 0) & ({index} < {n})")
            assert s.index is not None
            at_slot = index if self.in_range(s.index, cap, sc) else f"clamp_index({index}, {cap})"
            got = self.bind("removed", f"jnp.where({ok}, {row}[{at_slot}], 0).astype({row}.dtype)")
            new_row = f"jnp.where({ok}, zone_remove({row}, {index}), {row})"
            new_n = f"{n} - {ok}.astype(jnp.int32)"
        elif op == "clear":
            new_row, new_n = f"jnp.zeros_like({row})", "jnp.int32(0)"
        else:
            k = f"jax.random.fold_in({sc.key}, {s.site})"
            new_row, new_n = f"{row}[shuffle_order({k}, {cap}, {n})]", n
        r2 = self.bind("row", new_row)
        n2 = self.bind("n", new_n)
        if z.index:
            sc.vars[dk] = self.bind(z.name, f"{data}.at[{at}].set({r2}, mode='drop')")
            sc.vars[ck] = self.bind(z.name + ".count", f"{cnt}.at[{at}].set({n2}, mode='drop')")
        else:
            sc.vars[dk], sc.vars[ck] = r2, n2
        if s.out is not None and op in ("pop", "remove_at"):
            conv = f"{got}.astype({JNP[s.out.ty.dtype]})" if s.out.ty.dtype != z.elem.dtype else got
            self.write(s.out, conv, sc)

    def s_call_proc(self, s: ir.CallProc, sc: Scope) -> None:
        proc = self.callables[s.proc]
        key = self.bind("key", f"jax.random.fold_in({sc.key}, {s.site})") if proc.random else sc.key
        args = ", ".join([self.call_state(s.proc, sc), key, "params", *(self.expr(a, sc) for a in s.args)])
        out = self.bind(f"{s.proc}_state", f"{self.py.glob('call', s.proc)}({args})")
        for k in self.written(proc.body, sc):
            if k.startswith("state:"):
                sc.vars[k] = f"{out}.{self.py.field(k[6:])}"

    def s_return(self, s: ir.ReturnS, sc: Scope) -> None:
        raise AssertionError("a function's return is emitted by its generated function")

    def s_check(self, s: ir.CheckS, sc: Scope) -> None:
        """A spec bug only the reference reports: the fallback (a `while` loop stops at its cap) is to do nothing."""
