"""Equivalence of two jaxprs, proven with z3: the original's and a mutant's trace of one generated function.

Every array element becomes a z3 term: integers and bools exactly (bit-vectors of their width, XLA's wrapping,
shifts, gather/scatter bounds rules), floats as opaque bit patterns whose operations are uninterpreted functions
(equal inputs give equal outputs, nothing more), and so is every primitive not modelled here (random bits, sort,
transcendentals). A proof therefore never rests on a float identity or on what a random draw is: it holds for
every key. Loops with a known trip count are unrolled; a `while` whose trip count depends on data is one
uninterpreted function of its inputs, keyed by its code. `equal` first compares the two programs equation by
equation and, where they differ only inside loop bodies or calls, proves those bodies equal for every input;
only then does it ask z3 about the whole function, under the stated assumptions on its inputs.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

BOUNDED = "equivalent within the declared bounds"  # the reason's prefix when the proof assumes them
UNROLL = 4096  # most loop iterations unrolled in one proof (a scan's length, a while's rounds)
ELEMENTS = 200_000  # most array elements built in one proof: beyond it, no proof
CANDIDATES = 4096  # most index combinations one gather or scatter element is chosen among


class Unsupported(Exception):
    """The function is beyond this encoding (too large, or a construct it does not model)."""


@dataclass
class Arr:
    """An array of z3 terms: `dtype` the numpy dtype name ('bool', 'int32', 'float32', or 'key' for PRNG keys)."""

    terms: np.ndarray
    dtype: str


def _z3() -> Any:
    import z3

    return z3


def _width(dtype: str) -> int:
    if dtype == "key":
        return 64
    return int(np.dtype(dtype).itemsize * 8)


def _kind(dtype: str) -> str:
    """'b' bool, 'i' signed, 'u' unsigned, 'f' float (opaque), 'k' key (opaque)."""
    if dtype == "key":
        return "k"
    k = np.dtype(dtype).kind
    return {"b": "b", "i": "i", "u": "u"}.get(k, "f")


def _dtype_of(aval: Any) -> str:
    import jax

    if jax.dtypes.issubdtype(aval.dtype, jax.dtypes.prng_key):  # type: ignore[attr-defined]
        return "key"
    return str(np.dtype(aval.dtype))


def _sort(dtype: str) -> Any:
    z3 = _z3()
    return z3.BoolSort() if dtype == "bool" else z3.BitVecSort(_width(dtype))


def _const(value: Any, dtype: str) -> Any:
    z3 = _z3()
    if dtype == "bool":
        return z3.BoolVal(bool(value))
    if _kind(dtype) == "f":
        raw = np.asarray(value, dtype).view(f"uint{_width(dtype)}")
        return z3.BitVecVal(int(raw), _width(dtype))
    return z3.BitVecVal(int(value) % (1 << _width(dtype)), _width(dtype))


class Encoder:
    """Turns jaxpr equations into z3 terms; `functions` holds the uninterpreted functions by name."""

    def __init__(self) -> None:
        self.functions: dict[str, Any] = {}
        self.elements = 0

    # -- helpers --
    def fn(self, name: str, args: Sequence[Any], result: Any) -> Any:
        """Uninterpreted function `name` applied to `args` (the name fixes its signature)."""
        z3 = _z3()
        sig = name + "|" + ",".join(str(a.sort()) for a in args) + "->" + str(result)
        f = self.functions.get(sig)
        if f is None:
            f = self.functions[sig] = z3.Function(f"u{len(self.functions)}", *[a.sort() for a in args], result)
        return f(*args) if args else f

    def new(self, terms: np.ndarray, dtype: str) -> Arr:
        self.elements += terms.size
        if self.elements > ELEMENTS:
            raise Unsupported(f"more than {ELEMENTS} array elements")
        return Arr(terms, dtype)

    def opaque(self, name: str, ins: Sequence[Arr], avals: Sequence[Any], elementwise: bool) -> list[Arr]:
        """Outputs of a primitive not modelled: per element, an uninterpreted function of its inputs (of the
        same position's elements when `elementwise`, else of every input element)."""
        outs = []
        for k, aval in enumerate(avals):
            dt = _dtype_of(aval)
            terms = np.empty(aval.shape, dtype=object)
            if elementwise:
                bs = [np.broadcast_to(a.terms, aval.shape) for a in ins]
                for idx in np.ndindex(*aval.shape):
                    terms[idx] = self.fn(f"{name}#{k}", [b[idx] for b in bs], _sort(dt))
            else:
                flat = [t for a in ins for t in a.terms.reshape(-1)]
                for n, idx in enumerate(np.ndindex(*aval.shape)):
                    terms[idx] = self.fn(f"{name}#{k}@{n}", flat, _sort(dt))
            outs.append(self.new(terms, dt))
        return outs

    # -- the interpreter --
    def run(self, closed: Any, args: Sequence[Arr]) -> list[Arr]:
        """The outputs of closed jaxpr `closed` on `args`."""
        jaxpr = closed.jaxpr if hasattr(closed, "jaxpr") else closed
        consts = closed.consts if hasattr(closed, "consts") else []
        env: dict[Any, Arr] = {}
        for v, c in zip(jaxpr.constvars, consts):
            env[v] = self.literal(c, v.aval)
        for v, a in zip(jaxpr.invars, args):
            env[v] = a
        for eqn in jaxpr.eqns:
            ins = [self.read(env, v) for v in eqn.invars]
            outs = self.eqn(eqn, ins)
            for v, o in zip(eqn.outvars, outs):
                env[v] = o
        return [self.read(env, v) for v in jaxpr.outvars]

    def read(self, env: dict[Any, Arr], v: Any) -> Arr:
        if hasattr(v, "val"):
            return self.literal(v.val, v.aval)
        return env[v]

    def literal(self, value: Any, aval: Any) -> Arr:
        dt = _dtype_of(aval)
        if dt == "key":
            raise Unsupported("a PRNG key constant")
        arr = np.asarray(value)
        terms = np.empty(arr.shape, dtype=object)
        for idx in np.ndindex(*arr.shape):
            terms[idx] = _const(arr[idx], dt)
        return self.new(terms, dt)

    def eqn(self, eqn: Any, ins: list[Arr]) -> list[Arr]:
        name = eqn.primitive.name
        p = eqn.params
        avals = [v.aval for v in eqn.outvars]
        rule = _RULES.get(name)
        if rule is not None:
            out = rule(self, ins, p, avals)
            if out is not None:
                return out
        if name in _CALLS:
            sub = p.get("jaxpr", p.get("call_jaxpr", p.get("fun_jaxpr")))
            if sub is not None:
                return self.run(sub, ins)
        if name == "cond":
            return self.cond(ins, p, avals)
        if name == "scan":
            return self.scan(ins, p, avals)
        if name == "while":
            return self.while_(ins, p, avals)
        tag = f"{name}{_param_key(p)}"
        return self.opaque(tag, ins, avals, elementwise=name in _ELEMENTWISE_OPAQUE)

    def cond(self, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr]:
        z3 = _z3()
        index, ops = ins[0], ins[1:]
        branches = [self.run(b, ops) for b in p["branches"]]
        i = index.terms[()]
        # XLA clamps the index: branch 0 takes everything below 1, the last everything above
        pick = [z3.Not(i)] if index.dtype == "bool" else [i <= 0, *(i == n for n in range(1, len(branches) - 1))]
        outs = []
        for k, aval in enumerate(avals):
            terms = branches[-1][k].terms.copy()
            for n in range(len(branches) - 2, -1, -1):
                terms = _ite(pick[n], branches[n][k].terms, terms)
            outs.append(self.new(terms, _dtype_of(aval)))
        return outs

    def scan(self, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr]:
        length, nc, ncarry = p["length"], p["num_consts"], p["num_carry"]
        if length > UNROLL:
            raise Unsupported(f"a scan of {length} steps")
        consts, carry, xs = ins[:nc], ins[nc : nc + ncarry], ins[nc + ncarry :]
        ys: list[list[Arr]] = []
        order = range(length - 1, -1, -1) if p["reverse"] else range(length)
        for t in order:
            out = self.run(p["jaxpr"], [*consts, *carry, *[Arr(x.terms[t], x.dtype) for x in xs]])
            carry, y = out[:ncarry], out[ncarry:]
            ys.append(y)
        if p["reverse"]:
            ys.reverse()
        stacked = []
        for k, aval in enumerate(avals[ncarry:]):
            terms = np.empty(aval.shape, dtype=object)
            for t in range(length):
                terms[t] = ys[t][k].terms
            stacked.append(self.new(terms, _dtype_of(aval)))
        return [*carry, *stacked]

    def while_(self, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr]:
        z3 = _z3()
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, carry = ins[:cn], ins[cn : cn + bn], ins[cn + bn :]
        for _ in range(UNROLL):
            go = z3.simplify(self.run(p["cond_jaxpr"], [*cconsts, *carry])[0].terms[()])
            if z3.is_false(go):
                return carry
            if not z3.is_true(go):
                break
            carry = self.run(p["body_jaxpr"], [*bconsts, *carry])
        tag = f"while{canonical(p['cond_jaxpr'])}{canonical(p['body_jaxpr'])}"
        return self.opaque(tag, ins, avals, elementwise=False)


def _ite(cond: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a` where the scalar `cond` holds, else `b`, element by element (equal elements stay as they are)."""
    z3 = _z3()
    a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.shape, dtype=object)
    for idx in np.ndindex(*a.shape):
        x: Any = a[idx]
        y: Any = b[idx]
        out[idx] = x if x.eq(y) else z3.If(cond, x, y)
    return out


def _param_key(p: dict[str, Any]) -> str:
    parts = []
    for k in sorted(p):
        v = p[k]
        parts.append(f"{k}={canonical(v) if _is_jaxpr(v) else v!r}")
    return "(" + ",".join(parts) + ")"


def _is_jaxpr(v: Any) -> bool:
    return hasattr(v, "eqns") or hasattr(v, "jaxpr")


def canonical(closed: Any) -> str:
    """A text of a (closed) jaxpr that names variables by their order: equal text, equal program."""
    jaxpr = closed.jaxpr if hasattr(closed, "jaxpr") else closed
    consts = closed.consts if hasattr(closed, "consts") else []
    names: dict[Any, str] = {}

    def name(v: Any) -> str:
        if hasattr(v, "val"):
            return f"lit({np.asarray(v.val).tolist()!r}:{v.aval})"
        return names.setdefault(v, f"v{len(names)}")

    lines = [" ".join(f"{name(v)}:{v.aval}" for v in [*jaxpr.constvars, *jaxpr.invars])]
    lines.append(repr([np.asarray(c).tolist() if not hasattr(c, "dtype") or _is_numeric(c) else str(c)
                       for c in consts]))
    for e in jaxpr.eqns:
        ins = ",".join(name(v) for v in e.invars)
        outs = ",".join(f"{name(v)}:{v.aval}" for v in e.outvars)
        lines.append(f"{outs}={e.primitive.name}{_param_key(e.params)}({ins})")
    lines.append(",".join(name(v) for v in jaxpr.outvars))
    return "\n".join(lines)


def _is_numeric(c: Any) -> bool:
    try:
        return np.asarray(c).dtype.kind in "biuf"
    except Exception:
        return False


# -- rules: each (encoder, inputs, params, output avals) -> outputs, or None to treat the primitive as opaque --

Rule = Callable[[Encoder, list[Arr], dict[str, Any], list[Any]], "list[Arr] | None"]
_RULES: dict[str, Rule] = {}
_CALLS = {"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr",
          "remat", "checkpoint"}  # fmt: skip
_ELEMENTWISE_OPAQUE = {"add", "sub", "mul", "div", "rem", "neg", "max", "min", "abs", "sign", "floor", "ceil",
                       "round", "exp", "exp2", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "atan2", "sqrt",
                       "rsqrt", "pow", "integer_pow", "square", "logistic", "eq", "ne", "lt", "le", "gt", "ge",
                       "convert_element_type", "is_finite", "nextafter", "asin", "acos", "atan", "sinh", "cosh",
                       "erf", "erf_inv", "cbrt", "reduce_precision", "population_count", "clz",
                       "shift_left", "shift_right_logical", "shift_right_arithmetic", "and", "or", "xor", "not",
                       "select_n", "clamp", "copy", "copy_p", "bitcast_convert_type"}  # fmt: skip


def rule(*names: str) -> Callable[[Rule], Rule]:
    def reg(f: Rule) -> Rule:
        for n in names:
            _RULES[n] = f
        return f

    return reg


def _exact(dts: Sequence[str]) -> bool:
    return all(_kind(d) in "biu" for d in dts)


def _elementwise(enc: Encoder, ins: list[Arr], aval: Any, dtype: str, f: Callable[..., Any]) -> list[Arr]:
    shape = tuple(aval.shape)
    bs = [np.broadcast_to(a.terms, shape) for a in ins]
    terms = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        terms[idx] = f(*[b[idx] for b in bs])
    return [enc.new(terms, dtype)]


def _arith(op: str) -> Rule:
    def r(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
        z3 = _z3()
        dt = ins[0].dtype
        if not _exact([a.dtype for a in ins]):
            return None
        signed = _kind(dt) == "i"
        if dt == "bool":
            f = {"and": z3.And, "or": z3.Or, "xor": z3.Xor, "not": z3.Not, "eq": lambda a, b: a == b,
                 "ne": lambda a, b: a != b, "max": z3.Or, "min": z3.And}.get(op)  # fmt: skip
            if f is None:
                return None
            return _elementwise(enc, ins, avals[0], _dtype_of(avals[0]), f)
        fs: dict[str, Callable[..., Any]] = {
            "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "neg": lambda a: -a, "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
            "not": lambda a: ~a, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
            "lt": (lambda a, b: a < b) if signed else z3.ULT, "le": (lambda a, b: a <= b) if signed else z3.ULE,
            "gt": (lambda a, b: a > b) if signed else z3.UGT, "ge": (lambda a, b: a >= b) if signed else z3.UGE,
            "max": (lambda a, b: z3.If(a >= b, a, b)) if signed else (lambda a, b: z3.If(z3.UGE(a, b), a, b)),
            "min": (lambda a, b: z3.If(a <= b, a, b)) if signed else (lambda a, b: z3.If(z3.ULE(a, b), a, b)),
            "shift_left": lambda a, b: a << b, "shift_right_arithmetic": lambda a, b: a >> b,
            "shift_right_logical": z3.LShR,
            "abs": lambda a: z3.If(a < 0, -a, a), "sign": lambda a: z3.If(a < 0, -1, z3.If(a == 0, 0, 1)),
        }  # fmt: skip
        if op in ("div", "rem"):
            return _divide(enc, ins, avals, op, signed)
        f = fs.get(op)
        if f is None:
            return None
        return _elementwise(enc, ins, avals[0], _dtype_of(avals[0]), f)

    return r


def _divide(enc: Encoder, ins: list[Arr], avals: list[Any], op: str, signed: bool) -> list[Arr] | None:
    """Integer division and remainder by a constant other than 0 and -1 (truncating, as XLA); else opaque."""
    z3 = _z3()
    shape = tuple(avals[0].shape)
    den = np.broadcast_to(ins[1].terms, shape)
    for idx in np.ndindex(*shape):
        d = z3.simplify(den[idx])
        if not z3.is_bv_value(d) or d.as_long() == 0 or (signed and d.as_signed_long() == -1):
            return None
    if signed:
        f = (lambda a, b: a / b) if op == "div" else z3.SRem
    else:
        f = z3.UDiv if op == "div" else z3.URem
    return _elementwise(enc, ins, avals[0], _dtype_of(avals[0]), f)


for _op in ("add", "sub", "mul", "neg", "and", "or", "xor", "not", "eq", "ne", "lt", "le", "gt", "ge", "max",
            "min", "shift_left", "shift_right_arithmetic", "shift_right_logical", "abs", "sign", "div", "rem"):
    _RULES[_op] = _arith(_op)


@rule("integer_pow")
def _integer_pow(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    if not _exact([ins[0].dtype]) or p["y"] < 0:
        return None

    def pw(a: Any) -> Any:
        out = _const(1, ins[0].dtype)
        for _ in range(p["y"]):
            out = out * a
        return out

    return _elementwise(enc, ins, avals[0], ins[0].dtype, pw)


@rule("select_n")
def _select_n(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    z3 = _z3()
    which, cases = ins[0], ins[1:]
    shape = tuple(avals[0].shape)
    w = np.broadcast_to(which.terms, shape)
    cs = [np.broadcast_to(c.terms, shape) for c in cases]
    terms = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        out: Any = cs[-1][idx]
        for n in range(len(cs) - 2, -1, -1):
            cond = z3.Not(w[idx]) if which.dtype == "bool" else w[idx] == n
            out = out if out.eq(cs[n][idx]) else z3.If(cond, cs[n][idx], out)
        terms[idx] = out
    return [enc.new(terms, cases[0].dtype)]


@rule("clamp")
def _clamp(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    z3 = _z3()
    if not _exact([a.dtype for a in ins]):
        return None
    signed = _kind(ins[1].dtype) == "i"
    lt = (lambda a, b: a < b) if signed else z3.ULT

    def f(lo: Any, x: Any, hi: Any) -> Any:
        return z3.If(lt(x, lo), lo, z3.If(lt(hi, x), hi, x))

    return _elementwise(enc, ins, avals[0], ins[1].dtype, f)


@rule("convert_element_type")
def _convert(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    z3 = _z3()
    src, dst = ins[0].dtype, _dtype_of(avals[0])
    if src == dst:
        return [ins[0]]
    if not _exact([src, dst]):
        return None
    w = _width(dst)

    def f(a: Any) -> Any:
        if dst == "bool":
            return a if src == "bool" else a != 0
        if src == "bool":
            return z3.If(a, z3.BitVecVal(1, w), z3.BitVecVal(0, w))
        ws = _width(src)
        if ws == w:
            return a
        if ws > w:
            return z3.Extract(w - 1, 0, a)
        return z3.SignExt(w - ws, a) if _kind(src) == "i" else z3.ZeroExt(w - ws, a)

    return _elementwise(enc, ins, avals[0], dst, f)


@rule("copy", "copy_p", "optimization_barrier")
def _identity(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    return list(ins)


@rule("broadcast_in_dim")
def _broadcast(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    shape, dims = tuple(p["shape"]), p["broadcast_dimensions"]
    src = ins[0].terms
    expanded = [1] * len(shape)
    for i, d in enumerate(dims):
        expanded[d] = src.shape[i]
    return [enc.new(np.broadcast_to(src.reshape(expanded), shape).copy(), ins[0].dtype)]


@rule("reshape")
def _reshape(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    if p.get("dimensions") is not None:
        return None
    return [Arr(ins[0].terms.reshape(tuple(avals[0].shape)), ins[0].dtype)]


@rule("squeeze")
def _squeeze(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    return [Arr(ins[0].terms.reshape(tuple(avals[0].shape)), ins[0].dtype)]


@rule("expand_dims")
def _expand(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    return [Arr(ins[0].terms.reshape(tuple(avals[0].shape)), ins[0].dtype)]


@rule("transpose")
def _transpose(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    return [Arr(ins[0].terms.transpose(p["permutation"]), ins[0].dtype)]


@rule("rev")
def _rev(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    return [Arr(np.flip(ins[0].terms, axis=tuple(p["dimensions"])), ins[0].dtype)]


@rule("concatenate")
def _concatenate(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    return [enc.new(np.concatenate([a.terms for a in ins], axis=p["dimension"]), ins[0].dtype)]


@rule("stack")
def _stack(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    return [enc.new(np.stack([a.terms for a in ins], axis=p["axis"]), ins[0].dtype)]


@rule("split")
def _split(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    cuts = np.cumsum(p["sizes"])[:-1]
    return [Arr(t, ins[0].dtype) for t in np.split(ins[0].terms, cuts, axis=p["axis"])]


@rule("slice")
def _slice(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    strides = p.get("strides") or [1] * len(p["start_indices"])
    sl = tuple(slice(a, b, s) for a, b, s in zip(p["start_indices"], p["limit_indices"], strides))
    return [Arr(ins[0].terms[sl], ins[0].dtype)]


@rule("pad")
def _pad(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    src, fill = ins[0].terms, ins[1].terms[()]
    cfg = p["padding_config"]
    if any(lo < 0 or hi < 0 for lo, hi, _ in cfg):
        return None
    out = np.empty(tuple(avals[0].shape), dtype=object)
    out.fill(fill)
    sl = tuple(slice(lo, lo + (n - 1) * (inner + 1) + 1 if n else lo, inner + 1)
               for (lo, _, inner), n in zip(cfg, src.shape))  # fmt: skip
    out[sl] = src
    return [enc.new(out, ins[0].dtype)]


@rule("iota")
def _iota(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    dt = _dtype_of(avals[0])
    shape, dim = tuple(p["shape"]), p["dimension"]
    terms = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        terms[idx] = _const(idx[dim], dt)
    return [enc.new(terms, dt)]


def _reducer(op: str) -> Rule:
    def r(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
        z3 = _z3()
        dt = ins[0].dtype
        if not _exact([dt]):
            return None
        signed = _kind(dt) == "i"
        binary: dict[str, Callable[[Any, Any], Any]] = {
            "reduce_sum": (lambda a, b: z3.Or(a, b)) if dt == "bool" else (lambda a, b: a + b),
            "reduce_or": (lambda a, b: z3.Or(a, b)) if dt == "bool" else (lambda a, b: a | b),
            "reduce_and": (lambda a, b: z3.And(a, b)) if dt == "bool" else (lambda a, b: a & b),
            "reduce_max": (lambda a, b: z3.Or(a, b)) if dt == "bool" else (
                (lambda a, b: z3.If(a >= b, a, b)) if signed else (lambda a, b: z3.If(z3.UGE(a, b), a, b))),
            "reduce_min": (lambda a, b: z3.And(a, b)) if dt == "bool" else (
                (lambda a, b: z3.If(a <= b, a, b)) if signed else (lambda a, b: z3.If(z3.ULE(a, b), a, b))),
        }  # fmt: skip
        f = binary[op]
        axes = tuple(p["axes"])
        src = ins[0].terms
        keep = [d for d in range(src.ndim) if d not in axes]
        moved = np.moveaxis(src, axes, range(src.ndim - len(axes), src.ndim)) if axes else src
        moved = moved.reshape(*[src.shape[d] for d in keep], -1)
        terms = np.empty(tuple(avals[0].shape), dtype=object)
        for idx in np.ndindex(*terms.shape):
            row = moved[idx]
            if len(row) == 0:
                return None
            acc = row[0]
            for x in row[1:]:
                acc = f(acc, x)
            terms[idx] = acc
        return [enc.new(terms, _dtype_of(avals[0]))]

    return r


for _op in ("reduce_sum", "reduce_or", "reduce_and", "reduce_max", "reduce_min"):
    _RULES[_op] = _reducer(_op)


def _argext(op: str) -> Rule:
    def r(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
        """The first index of the largest (smallest) integer along one axis."""
        z3 = _z3()
        dt = ins[0].dtype
        if not _exact([dt]) or dt == "bool" or len(p["axes"]) != 1:
            return None
        signed = _kind(dt) == "i"
        if op == "argmax":
            better = (lambda a, b: a > b) if signed else z3.UGT
        else:
            better = (lambda a, b: a < b) if signed else z3.ULT
        moved = np.moveaxis(ins[0].terms, p["axes"][0], -1)
        odt = _dtype_of(avals[0])
        terms = np.empty(tuple(avals[0].shape), dtype=object)
        for idx in np.ndindex(*terms.shape):
            row = moved[idx]
            if len(row) == 0:
                return None
            best, at = row[0], _const(0, odt)
            for i in range(1, len(row)):
                take = better(row[i], best)
                best, at = z3.If(take, row[i], best), z3.If(take, _const(i, odt), at)
            terms[idx] = at
        return [enc.new(terms, odt)]

    return r


_RULES["argmax"] = _argext("argmax")
_RULES["argmin"] = _argext("argmin")


@rule("cumsum")
def _cumsum(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    dt = ins[0].dtype
    if not _exact([dt]) or dt == "bool":
        return None
    src = np.moveaxis(ins[0].terms, p["axis"], -1)
    out = np.empty(src.shape, dtype=object)
    for idx in np.ndindex(*src.shape[:-1]):
        row = src[idx]
        order = range(len(row) - 1, -1, -1) if p.get("reverse") else range(len(row))
        acc = None
        for i in order:
            acc = row[i] if acc is None else acc + row[i]
            out[idx + (i,)] = acc
    return [enc.new(np.moveaxis(out, -1, p["axis"]), dt)]


def _candidates(start: Any, top: int) -> list[int]:
    """Concrete values `start` may take within 0..top (one value when it is a constant)."""
    z3 = _z3()
    s = z3.simplify(start)
    if z3.is_bv_value(s):
        v = s.as_signed_long()
        return [v] if 0 <= v <= top else []
    return list(range(top + 1))


def _mode(p: dict[str, Any]) -> str:
    m = str(p.get("mode", ""))
    if "FILL" in m or "DROP" in m:
        return "fill"
    if "CLIP" in m:
        return "clip"
    return "promise"


def _clip(z3: Any, s: Any, top: int) -> Any:
    w = s.size()
    return z3.If(s < 0, z3.BitVecVal(0, w), z3.If(s > top, z3.BitVecVal(top, w), s))


@rule("gather")
def _gather(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    z3 = _z3()
    operand, idx = ins[0], ins[1]
    dn = p["dimension_numbers"]
    if getattr(dn, "operand_batching_dims", ()) or getattr(dn, "start_indices_batching_dims", ()):
        return None
    sizes = tuple(p["slice_sizes"])
    op_shape = operand.terms.shape
    out_shape = tuple(avals[0].shape)
    offset_dims = tuple(dn.offset_dims)
    collapsed = set(dn.collapsed_slice_dims)
    smap = tuple(dn.start_index_map)
    window_dims = [d for d in range(len(op_shape)) if d not in collapsed]
    batch_pos = [d for d in range(len(out_shape)) if d not in offset_dims]
    mode = _mode(p)
    fill = p.get("fill_value")
    tops = [op_shape[d] - sizes[d] for d in range(len(op_shape))]
    terms = np.empty(out_shape, dtype=object)
    for o in np.ndindex(*out_shape):
        bidx = tuple(o[d] for d in batch_pos)
        vec = idx.terms[bidx] if idx.terms.ndim else idx.terms
        starts: dict[int, Any] = {}
        for k, d in enumerate(smap):
            starts[d] = vec[k]
        offs = {d: o[od] for d, od in zip(window_dims, offset_dims)}
        terms[o] = _pick(z3, operand, starts, offs, tops, mode, fill, enc)
    return [enc.new(terms, operand.dtype)]


def _pick(z3: Any, operand: Arr, starts: dict[int, Any], offs: dict[int, int], tops: list[int], mode: str,
          fill: Any, enc: Encoder) -> Any:
    """The operand element at `starts` + `offs` under the gather's out-of-range rule."""
    nd = operand.terms.ndim
    sym = []
    for d in range(nd):
        s = starts.get(d)
        if s is None:
            sym.append([0])
        else:
            if mode != "fill":
                s = _clip(z3, s, tops[d])
                starts[d] = s
            sym.append(_candidates(s, tops[d]))
    combos = list(itertools.product(*sym))
    if len(combos) > CANDIDATES:
        raise Unsupported("a gather over too many positions")
    if mode == "fill":
        f = fill if fill is not None else (False if operand.dtype == "bool" else 0)
        if _kind(operand.dtype) == "f" and fill is None:
            f = np.nan
        out = _const(f, operand.dtype)
    else:
        out = None
    for combo in reversed(combos):
        pos = tuple(c + offs.get(d, 0) for d, c in enumerate(combo))
        value = operand.terms[pos]
        conds = [starts[d] == c for d, c in enumerate(combo) if d in starts]
        if out is None:
            out = value
        else:
            out = z3.If(z3.And(*conds) if conds else z3.BoolVal(True), value, out)
    return out


def _scatter(combine: str) -> Rule:
    def r(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
        z3 = _z3()
        operand, idx, upd = ins[0], ins[1], ins[2]
        if combine != "set" and not _exact([operand.dtype]):
            return None
        dn = p["dimension_numbers"]
        if getattr(dn, "operand_batching_dims", ()) or getattr(dn, "scatter_indices_batching_dims", ()):
            return None
        op_shape = operand.terms.shape
        uwd = tuple(dn.update_window_dims)
        inserted = set(dn.inserted_window_dims)
        smap = tuple(dn.scatter_dims_to_operand_dims)
        window_dims = [d for d in range(len(op_shape)) if d not in inserted]
        wsize = [1] * len(op_shape)
        for d, ud in zip(window_dims, uwd):
            wsize[d] = upd.terms.shape[ud]
        tops = [op_shape[d] - wsize[d] for d in range(len(op_shape))]
        mode = _mode(p)
        scatter_pos = [d for d in range(upd.terms.ndim) if d not in uwd]
        out = operand.terms.copy()
        for u in np.ndindex(*upd.terms.shape):
            sidx = tuple(u[d] for d in scatter_pos)
            vec = idx.terms[sidx] if idx.terms.ndim else idx.terms
            starts = {d: vec[k] for k, d in enumerate(smap)}
            offs = {d: u[ud] for d, ud in zip(window_dims, uwd)}
            sym = []
            valid = []
            for d in range(len(op_shape)):
                s = starts.get(d)
                if s is None:
                    sym.append([0])
                    continue
                if mode == "clip":
                    s = _clip(z3, s, tops[d])
                    starts[d] = s
                else:
                    valid.append(z3.And(s >= 0, s <= tops[d]))
                sym.append(_candidates(s, tops[d]))
            combos = list(itertools.product(*sym))
            if len(combos) > CANDIDATES:
                raise Unsupported("a scatter over too many positions")
            v = upd.terms[u]
            for combo in combos:
                pos = tuple(c + offs.get(d, 0) for d, c in enumerate(combo))
                conds = [starts[d] == c for d, c in enumerate(combo) if d in starts] + valid
                old = out[pos]
                new = v if combine == "set" else (old + v if operand.dtype != "bool" else z3.Or(old, v))
                if combine == "max":
                    new = z3.If(old >= v, old, v) if _kind(operand.dtype) == "i" else z3.If(z3.UGE(old, v), old, v)
                elif combine == "min":
                    new = z3.If(old <= v, old, v) if _kind(operand.dtype) == "i" else z3.If(z3.ULE(old, v), old, v)
                c = z3.And(*conds) if conds else z3.BoolVal(True)
                out[pos] = new if z3.is_true(z3.simplify(c)) else z3.If(c, new, old)
        return [enc.new(out, operand.dtype)]

    return r


_RULES["scatter"] = _scatter("set")
_RULES["scatter-add"] = _RULES["scatter_add"] = _scatter("add")
_RULES["scatter_max"] = _scatter("max")
_RULES["scatter_min"] = _scatter("min")


@rule("dynamic_slice")
def _dynamic_slice(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    z3 = _z3()
    operand, starts_in = ins[0], ins[1:]
    sizes = tuple(p["slice_sizes"])
    shape = operand.terms.shape
    tops = [shape[d] - sizes[d] for d in range(len(shape))]
    terms = np.empty(sizes, dtype=object)
    for o in np.ndindex(*sizes):
        starts = {d: s.terms[()] for d, s in enumerate(starts_in)}
        terms[o] = _pick(z3, operand, starts, dict(enumerate(o)), tops, "clip", None, enc)
    return [enc.new(terms, operand.dtype)]


@rule("dynamic_update_slice")
def _dynamic_update_slice(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    z3 = _z3()
    operand, upd, starts_in = ins[0], ins[1], ins[2:]
    shape = operand.terms.shape
    tops = [shape[d] - upd.terms.shape[d] for d in range(len(shape))]
    starts = [_clip(z3, s.terms[()], tops[d]) for d, s in enumerate(starts_in)]
    cands = [_candidates(s, tops[d]) for d, s in enumerate(starts)]
    combos = list(itertools.product(*cands))
    if len(combos) > CANDIDATES:
        raise Unsupported("a dynamic_update_slice over too many positions")
    out = operand.terms.copy()
    for combo in combos:
        c = z3.And(*[s == v for s, v in zip(starts, combo)]) if combo else z3.BoolVal(True)
        for u in np.ndindex(*upd.terms.shape):
            pos = tuple(a + b for a, b in zip(combo, u))
            out[pos] = z3.If(c, upd.terms[u], out[pos])
    return [enc.new(out, operand.dtype)]


@rule("random_wrap")
def _random_wrap(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    z3 = _z3()
    data = ins[0].terms
    if data.shape[-1:] != (2,) or ins[0].dtype != "uint32":
        return None
    terms = np.empty(data.shape[:-1], dtype=object)
    for idx in np.ndindex(*terms.shape):
        terms[idx] = z3.Concat(data[idx + (0,)], data[idx + (1,)])
    return [enc.new(terms, "key")]


@rule("random_unwrap")
def _random_unwrap(enc: Encoder, ins: list[Arr], p: dict[str, Any], avals: list[Any]) -> list[Arr] | None:
    z3 = _z3()
    keys = ins[0].terms
    terms = np.empty(keys.shape + (2,), dtype=object)
    for idx in np.ndindex(*keys.shape):
        terms[idx + (0,)] = z3.Extract(63, 32, keys[idx])
        terms[idx + (1,)] = z3.Extract(31, 0, keys[idx])
    return [enc.new(terms, "uint32")]


Assume = Callable[[list[Arr]], list[Any]]


def within(x: Arr, lo: int, hi: int) -> list[Any]:
    """Constraints: every element of integer array `x` lies in lo..hi."""
    if _kind(x.dtype) not in "iu":
        return []
    signed = _kind(x.dtype) == "i"
    z3 = _z3()
    w = _width(x.dtype)
    out = []
    for t in x.terms.reshape(-1):
        a, b = z3.BitVecVal(lo % (1 << w), w), z3.BitVecVal(hi % (1 << w), w)
        out += [a <= t, t <= b] if signed else [z3.ULE(a, t), z3.ULE(t, b)]
    return out


def equal(a: Any, b: Any, assume: Assume | None = None, timeout_ms: int = 60_000) -> str | None:
    """Why closed jaxprs `a` and `b` (same inputs) compute the same outputs, or None (not proven). `assume`
    gives constraints on the input terms; the proof then holds for the inputs that meet them."""
    if canonical(a) == canonical(b):
        return "the same program"
    if [v.aval for v in a.jaxpr.invars] != [v.aval for v in b.jaxpr.invars]:
        return None
    if _same_but_bodies(a, b):
        return "the programs differ only in loop bodies or calls, proven equal for every input"
    return solve(a, b, assume, timeout_ms)


def solve(a: Any, b: Any, assume: Assume | None = None, timeout_ms: int = 60_000) -> str | None:
    """z3's answer for the whole of `a` and `b` (no equation-by-equation pass): why they agree, or None."""
    z3 = _z3()
    avals = [[v.aval for v in j.jaxpr.invars] + [None] + [v.aval for v in j.jaxpr.outvars] for j in (a, b)]
    if avals[0] != avals[1]:
        return None
    enc = Encoder()
    ins = []
    for n, v in enumerate(a.jaxpr.invars):
        dt = _dtype_of(v.aval)
        terms = np.empty(tuple(v.aval.shape), dtype=object)
        for idx in np.ndindex(*terms.shape):
            name = f"in{n}_" + "_".join(map(str, idx))
            terms[idx] = z3.Bool(name) if dt == "bool" else z3.BitVec(name, _width(dt))
        ins.append(Arr(terms, dt))
    try:
        xs = enc.run(a, ins)
        ys = enc.run(b, ins)
    except Unsupported:
        return None
    diffs = [x != y for xa, ya in zip(xs, ys) for x, y in zip(xa.terms.reshape(-1), ya.terms.reshape(-1))
             if not x.eq(y)]
    if not diffs:
        return "equal terms for every input"
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    facts = assume(ins) if assume is not None else []
    solver.add(*facts)
    solver.add(z3.Or(*diffs))
    if solver.check() == z3.unsat:
        return "z3: the same outputs for every input" + (" that meets the assumptions" if facts else "")
    return None


def _same_but_bodies(a: Any, b: Any) -> bool:
    """Jaxprs `a` and `b` are equation for equation the same except for sub-jaxprs, each pair of which is proven
    equal for every input."""
    ja, jb = (a.jaxpr if hasattr(a, "jaxpr") else a), (b.jaxpr if hasattr(b, "jaxpr") else b)
    if len(ja.eqns) != len(jb.eqns) or len(ja.invars) != len(jb.invars):
        return False
    ca, cb = (getattr(a, "consts", []), getattr(b, "consts", []))
    if len(ca) != len(cb) or any(not _same_const(x, y) for x, y in zip(ca, cb)):
        return False
    na: dict[Any, int] = {}
    nb: dict[Any, int] = {}

    def ref(names: dict[Any, int], v: Any) -> Any:
        return ("lit", repr(np.asarray(v.val).tolist()), str(v.aval)) if hasattr(v, "val") else names.get(v, -1)

    for x, y in zip([*ja.constvars, *ja.invars], [*jb.constvars, *jb.invars]):
        if x.aval != y.aval:
            return False
        na[x] = nb[y] = len(na)
    pending: list[tuple[Any, Any]] = []
    for ea, eb in zip(ja.eqns, jb.eqns):
        if ea.primitive.name != eb.primitive.name or len(ea.invars) != len(eb.invars):
            return False
        if [ref(na, v) for v in ea.invars] != [ref(nb, v) for v in eb.invars]:
            return False
        if set(ea.params) != set(eb.params):
            return False
        for k in ea.params:
            pa, pb = ea.params[k], eb.params[k]
            if _is_jaxpr(pa) and _is_jaxpr(pb):
                if canonical(pa) != canonical(pb):
                    pending.append((pa, pb))
            elif isinstance(pa, tuple) and pa and all(_is_jaxpr(x) for x in pa):
                if len(pa) != len(pb):
                    return False
                pending += [(x, y) for x, y in zip(pa, pb) if canonical(x) != canonical(y)]
            elif repr(pa) != repr(pb):
                return False
        for x, y in zip(ea.outvars, eb.outvars):
            if x.aval != y.aval:
                return False
            na[x] = nb[y] = len(na)
    if [ref(na, v) for v in ja.outvars] != [ref(nb, v) for v in jb.outvars]:
        return False
    return bool(pending) and all(_body_equal(x, y) for x, y in pending)


def _body_equal(a: Any, b: Any) -> bool:
    if not hasattr(a, "jaxpr"):
        from jax.extend.core import ClosedJaxpr

        a, b = ClosedJaxpr(a, []), ClosedJaxpr(b, [])
    return _same_but_bodies(a, b) or solve(a, b, None, 30_000) is not None


def _same_const(x: Any, y: Any) -> bool:
    try:
        return bool(np.array_equal(np.asarray(x), np.asarray(y))) and np.asarray(x).dtype == np.asarray(y).dtype
    except Exception:
        return x is y
