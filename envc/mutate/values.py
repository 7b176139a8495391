"""Integer intervals and value identities of a generated JAX function's names, for proofs of mutants.

Sound over every input the backend can be given: an argument is unbounded unless `JaxProgram.ranges` states its
range (an action's parameters, what every call passes), a state field holds any value of its dtype except a
zone's count (0..capacity: the zone invariant the other proofs assume too), a table holds its values, and a
result that could leave int32 (or a narrower cast's range) is unknown. Floats are never bounded.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from envc.mutate import operators

Interval = tuple[int, int]  # lo <= v <= hi
WEAK = ""  # the dtype of a Python literal: it takes the other operand's (JAX's weak typing)
BOOL: Interval = (0, 1)
DTYPES = {"int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "int32": (-(2**31), 2**31 - 1),
          "uint32": (0, 2**32 - 1), "bool": BOOL, "bool_": BOOL}  # fmt: skip
_DEPTH = 400  # names followed per question (SSA chains are long but acyclic)


def _join(a: Interval | None, b: Interval | None) -> Interval | None:
    return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))


def _fits(v: Interval | None, dtype: str = "int32") -> Interval | None:
    lo, hi = DTYPES.get(dtype, (1, 0))
    return v if v is not None and lo <= v[0] and v[1] <= hi else None


def _dtype(e: ast.expr) -> str | None:
    """`jnp.int8` / `np.int32` as "int8"; None for anything else."""
    return e.attr if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.attr in DTYPES else None


def _promote(*dts: str | None) -> str | None:
    """JAX's result dtype of mixing integer dtypes (None: unknown; a bool counts as the narrowest integer)."""
    if any(d is None for d in dts):
        return None
    order = ["", "bool", "bool_", "int8", "int16", "int32"]
    if any(d not in order for d in dts):
        return None  # uint32 mixed in: its wrap-around below zero is not modelled
    return max(dts, key=lambda d: order.index(d or ""))  # type: ignore[arg-type]


def _decide(op: ast.cmpop, a: Interval, b: Interval) -> Interval:
    """The truth of `a op b` over the intervals: (1, 1), (0, 0) or either."""
    if isinstance(op, ast.Gt):
        return _decide(ast.Lt(), b, a)
    if isinstance(op, ast.GtE):
        return _decide(ast.LtE(), b, a)
    if isinstance(op, ast.Lt):
        return (1, 1) if a[1] < b[0] else (0, 0) if a[0] >= b[1] else BOOL
    if isinstance(op, ast.LtE):
        return (1, 1) if a[1] <= b[0] else (0, 0) if a[0] > b[1] else BOOL
    same = a[0] == a[1] == b[0] == b[1]
    apart = a[1] < b[0] or b[1] < a[0]
    if isinstance(op, ast.Eq):
        return (1, 1) if same else (0, 0) if apart else BOOL
    if isinstance(op, ast.NotEq):
        return (0, 0) if same else (1, 1) if apart else BOOL
    return BOOL


class Module:
    """What every function's analysis shares: the module's functions, integer constants and tables, the state
    fields' value ranges and the argument ranges."""

    def __init__(
        self, tree: ast.Module, fields: dict[str, tuple[Interval | None, str]], ranges: dict[str, dict[str, Interval]]
    ):
        self.fields = {k: v for k, (v, _) in fields.items()}
        self.field_dtypes = {k: dt for k, (_, dt) in fields.items()}
        self.ranges = ranges
        self.functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
        self.consts = {t.id: (s.value.value, s.value.value) for s in tree.body if isinstance(s, ast.Assign)
                       for t in s.targets if isinstance(t, ast.Name) and isinstance(s.value, ast.Constant)
                       and type(s.value.value) is int}  # fmt: skip
        self.tables: dict[str, Interval] = {}
        self.table_dtypes: dict[str, str] = {}
        for cls in (s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == "C"):
            for s in cls.body:
                lists = [n for n in ast.walk(s) if isinstance(n, ast.List)] if isinstance(s, ast.Assign) else []
                try:
                    flat = [v for v in ast.literal_eval(lists[0]) if type(v) is int] if lists else []
                except ValueError:
                    flat = []
                dts = [d for n in ast.walk(s) if isinstance(n, ast.Attribute) and (d := _dtype(n)) is not None]
                if flat and len(dts) == 1 and isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
                    self.tables[s.targets[0].id] = (min(flat), max(flat))
                    self.table_dtypes[s.targets[0].id] = dts[0]

    def values(self, fn: ast.FunctionDef) -> Values:
        """The analysis of generated function `fn`, its arguments in the ranges `JaxProgram.ranges` states."""
        return Values(self, fn, {k: (lo, hi - 1) for k, (lo, hi) in self.ranges.get(fn.name, {}).items()})


class Values:
    """Intervals and identities of one function's expressions (names assigned once are followed to their value)."""

    def __init__(
        self, module: Module, fn: ast.FunctionDef, args: dict[str, Interval], depth: int = 0,
        arg_dtypes: dict[str, str | None] | None = None,
    ):
        self.module, self.fn, self.args, self.depth = module, fn, args, depth
        # an argument's dtype: as the caller's expression has it, else the narrowest that holds its range (a
        # narrower guess only makes more results "may have wrapped")
        self.arg_dtypes = arg_dtypes if arg_dtypes is not None else {
            k: next(d for d in ("int8", "int16", "int32") if _fits(v, d)) if _fits(v) else None
            for k, v in args.items()}  # fmt: skip
        defs: dict[str, list[ast.expr | None]] = {}  # None: bound otherwise (unpacked, a loop's or a lambda's)
        for n in ast.walk(fn):
            if n is fn.args:
                continue  # the function's own parameters: bound once
            if isinstance(n, (ast.Assign, ast.For, ast.comprehension, ast.arguments, ast.AugAssign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target] if hasattr(n, "target") else [
                    ast.Name(a.arg) for a in n.args + n.kwonlyargs] if isinstance(n, ast.arguments) else []
                for t in targets:
                    for name in ast.walk(t):
                        if isinstance(name, ast.Name):
                            single = isinstance(n, ast.Assign) and t is name
                            defs.setdefault(name.id, []).append(n.value if single else None)  # type: ignore[union-attr]
        self.defs = {k: v[0] for k, v in defs.items() if len(v) == 1 and v[0] is not None and k not in args}
        self._rebound = {k for k in defs if k not in self.defs}  # a name that may hold different values
        self._memo: dict[str, Interval | None] = {}
        self._dts: dict[str, str | None] = {}
        self._budget = _DEPTH
        self.swap: dict[int, ast.expr] = {}  # node id -> the node read in its place (a mutant's change)

    def interval(self, e: ast.expr, swap: dict[int, ast.expr] | None = None) -> Interval | None:
        """The values `e` can take (booleans as 0 and 1), with the nodes in `swap` read in place of others."""
        self.swap, self._budget = swap or {}, _DEPTH
        try:
            return self._iv(e)
        finally:
            self.swap = {}

    def same(self, a: ast.expr, b: ast.expr) -> bool:
        """Do `a` and `b` hold the same value on every input (a chain of copies and `where`s that agree)?"""
        self._budget = _DEPTH
        return self._canon(a) == self._canon(b)

    def _read(self, e: ast.expr) -> ast.expr | None:
        """`e` as the question reads it (a swapped node in its place); None once its budget is spent."""
        self._budget -= 1
        return None if self._budget < 0 else self.swap.get(id(e), e)

    def _canon(self, e: ast.expr) -> str:
        if self._read(e) is None:
            return ast.dump(e)
        if isinstance(e, ast.Name) and e.id in self.defs:
            inner = self.defs[e.id]
            if isinstance(inner, ast.Name) or operators.call_name(inner) == "where":
                found = self._canon(inner)
                return found if found != ast.dump(inner) else e.id
            return e.id
        if isinstance(e, ast.Call) and operators.call_name(e) == "where" and len(e.args) == 3:
            c = self._iv(e.args[0])
            if c in ((0, 0), (1, 1)):
                return self._canon(e.args[1] if c == (1, 1) else e.args[2])
            a, b = self._canon(e.args[1]), self._canon(e.args[2])
            if a == b:
                return a
        if any(isinstance(n, ast.Name) and n.id in self._rebound for n in ast.walk(e)):
            return f"<{id(e)}>"  # the same text may mean different values at different places
        return ast.unparse(e)

    def _dt(self, e: ast.expr) -> str | None:
        """The integer dtype of `e` ("int8", ...; WEAK for a Python literal; None: unknown or not an integer)."""
        if (read := self._read(e)) is None:
            return None
        e = read
        if isinstance(e, ast.Constant):
            return WEAK if isinstance(e.value, (bool, int)) else None
        if isinstance(e, ast.Name):
            if e.id in self.arg_dtypes:
                return self.arg_dtypes[e.id]
            if e.id in self._rebound:
                return None
            if e.id in self.module.consts and e.id not in self.defs:
                return WEAK
            value = self.defs.get(e.id)
            if value is None:
                return None
            if e.id not in self._dts:
                self._dts[e.id] = self._dt(value)
            return self._dts[e.id]
        if isinstance(e, (ast.Compare, ast.BoolOp)):
            return "bool"
        if isinstance(e, ast.UnaryOp):
            return "bool" if isinstance(e.op, ast.Not) else self._dt(e.operand)
        if isinstance(e, ast.BinOp):
            return _promote(self._dt(e.left), self._dt(e.right))
        if isinstance(e, ast.IfExp):
            return _promote(self._dt(e.body), self._dt(e.orelse))
        if isinstance(e, ast.Subscript):
            return self._dt(e.value)
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name):
            if e.value.id == "state":
                return self.module.field_dtypes.get(e.attr)
            return self.module.table_dtypes.get(e.attr) if e.value.id == "C" else None
        if not isinstance(e, ast.Call):
            return None
        f, args = e.func, e.args
        name = operators.call_name(e) or (f.id if isinstance(f, ast.Name) else None)
        if isinstance(f, ast.Attribute) and (dt := _dtype(f)) is not None:
            return dt
        if isinstance(f, ast.Attribute) and f.attr == "astype" and len(args) == 1:
            return _dtype(args[0])
        if isinstance(f, ast.Attribute) and f.attr in ("set", "get") and isinstance(f.value, ast.Subscript):
            at = f.value.value
            return self._dt(at.value) if isinstance(at, ast.Attribute) and at.attr == "at" else None
        if name == "where" and len(args) == 3:
            return _promote(self._dt(args[1]), self._dt(args[2]))
        if name in ("logical_and", "logical_or", "logical_not", "any", "all"):
            return "bool"
        if name in ("minimum", "maximum", "clip", "stack", "array", "asarray") and args:
            parts = args[0].elts if name in ("stack", "array") and isinstance(args[0], (ast.List, ast.Tuple)) else args
            return _promote(*(self._dt(a) for a in parts))
        if name in ("clamp_index", "drop_index", "floor_div", "floor_mod") and len(args) == 2:
            return _promote(self._dt(args[0]), self._dt(args[1]))
        if isinstance(f, ast.Name) and f.id in self.module.functions and self.depth < 3:
            callee = self._callee(f.id, args)
            found = [callee._dt(r.value) for r in _returns(callee.fn) if r.value is not None] if callee else []
            return _promote(*found) if found else None
        return None

    def _callee(self, name: str, args: list[ast.expr]) -> Values | None:
        """Module function `name` analysed with its parameters bound to these arguments' intervals and dtypes."""
        fn = self.module.functions[name]
        params = [a.arg for a in fn.args.args]
        if len(params) != len(args) or any(isinstance(a, ast.Starred) for a in args):
            return None
        bound = {p: v for p, a in zip(params, args) if (v := self._iv(a)) is not None}
        return Values(self.module, fn, bound, self.depth + 1, {p: self._dt(a) for p, a in zip(params, args)})

    def _iv(self, e: ast.expr) -> Interval | None:
        if (read := self._read(e)) is None:
            return None
        e = read
        if isinstance(e, ast.Constant):
            v = e.value
            return (int(v), int(v)) if isinstance(v, (bool, int)) else None
        if isinstance(e, ast.Name):
            return self._name(e.id)
        if isinstance(e, ast.UnaryOp):
            x = self._iv(e.operand)
            if x is None:
                return None
            if isinstance(e.op, ast.USub):
                return self._fits_dtype((-x[1], -x[0]), e)
            if isinstance(e.op, (ast.Not, ast.Invert)) and x[0] >= 0 and x[1] <= 1:
                return (1 - x[1], 1 - x[0])
            return None
        if isinstance(e, ast.BinOp):
            return self._fits_dtype(self._binop(e.op, self._iv(e.left), self._iv(e.right)), e)
        if isinstance(e, ast.BoolOp):
            return self._logic(isinstance(e.op, ast.And), [self._iv(v) for v in e.values])
        if isinstance(e, ast.Compare) and len(e.ops) == 1:
            a, b = self._iv(e.left), self._iv(e.comparators[0])
            return BOOL if a is None or b is None else _decide(e.ops[0], a, b)
        if isinstance(e, ast.IfExp):
            return self._where(e.test, e.body, e.orelse)
        if isinstance(e, ast.Subscript):  # a read of one element (an out-of-range read clamps: still one)
            return self._iv(e.value)
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name):
            if e.value.id == "state":
                return self.module.fields.get(e.attr)
            if e.value.id == "C":
                return self.module.tables.get(e.attr)
            return None
        if isinstance(e, ast.Call):
            return self._call(e)
        return None

    def _name(self, name: str) -> Interval | None:
        if name in self.args:
            return self.args[name]
        if name in self._rebound:
            return None
        if name in self.module.consts and name not in self.defs:
            return self.module.consts[name]
        if name not in self._memo:
            value = self.defs.get(name)
            self._memo[name] = self._iv(value) if value is not None else None
        return self._memo[name]

    def _fits_dtype(self, v: Interval | None, e: ast.expr) -> Interval | None:
        """`v` if `e`'s dtype holds all of it (else the value may have wrapped: unknown)."""
        dt = self._dt(e)
        if dt is None or v is None:
            return None
        return _fits(v, "int32" if dt in (WEAK, "bool", "bool_") else dt)

    def _binop(self, op: ast.operator, a: Interval | None, b: Interval | None) -> Interval | None:
        if a is None or b is None:
            return None
        if isinstance(op, ast.Add):
            return _fits((a[0] + b[0], a[1] + b[1]))
        if isinstance(op, ast.Sub):
            return _fits((a[0] - b[1], a[1] - b[0]))
        if isinstance(op, ast.Mult):
            ends = [x * y for x in a for y in b]
            return _fits((min(ends), max(ends)))
        if isinstance(op, (ast.BitAnd, ast.BitOr)) and min(a[0], b[0]) >= 0 and max(a[1], b[1]) <= 1:
            return self._logic(isinstance(op, ast.BitAnd), [a, b])
        return None

    @staticmethod
    def _logic(conj: bool, parts: list[Interval | None]) -> Interval:
        if any(p is not None and p == ((0, 0) if conj else (1, 1)) for p in parts):
            return (0, 0) if conj else (1, 1)
        if all(p == ((1, 1) if conj else (0, 0)) for p in parts):
            return (1, 1) if conj else (0, 0)
        return BOOL

    def _where(self, c: ast.expr, a: ast.expr, b: ast.expr) -> Interval | None:
        t = self._iv(c)
        if t == (1, 1):
            return self._iv(a)
        if t == (0, 0):
            return self._iv(b)
        return _join(self._iv(a), self._iv(b))

    def _call(self, e: ast.Call) -> Interval | None:
        f, args = e.func, e.args
        name = operators.call_name(e) or (f.id if isinstance(f, ast.Name) else None)
        if isinstance(f, ast.Attribute) and (dt := _dtype(f)) is not None and len(args) == 1:
            return _fits(self._iv(args[0]), dt)  # `jnp.int8(x)`
        if isinstance(f, ast.Attribute) and f.attr == "astype" and len(args) == 1:
            dt = _dtype(args[0])
            return _fits(self._iv(f.value), dt) if dt else None
        if isinstance(f, ast.Attribute) and f.attr in ("set", "get") and isinstance(f.value, ast.Subscript):
            at = f.value.value  # `x.at[i].set(v)`: x's values and v; `.get(mode='fill', fill_value=v)`: and v
            if not (isinstance(at, ast.Attribute) and at.attr == "at"):
                return None
            extra = args[0] if f.attr == "set" and args else next(
                (k.value for k in e.keywords if k.arg == "fill_value"), None)
            whole = self._iv(at.value)
            return whole if extra is None else _join(whole, self._iv(extra))
        if name == "where" and len(args) == 3:
            return self._where(*args)
        if name in ("logical_and", "logical_or"):
            return self._logic(name == "logical_and", [self._iv(a) for a in args])
        if name == "logical_not" and len(args) == 1:
            x = self._iv(args[0])
            return None if x is None else (1 - x[1], 1 - x[0])
        if name in ("minimum", "maximum") and len(args) == 2:
            a, b = self._iv(args[0]), self._iv(args[1])
            if a is None or b is None:
                return None
            pick = min if name == "minimum" else max
            return (pick(a[0], b[0]), pick(a[1], b[1]))
        if (name == "clip" and len(args) == 3) or (name == "clamp_index" and len(args) == 2):
            x = self._iv(args[0])  # clamp_index(i, n) is clip(i, 0, n - 1)
            lo, hi = ((0, 0), self._binop(ast.Sub(), self._iv(args[1]), (1, 1))) if name == "clamp_index" else (
                self._iv(args[1]), self._iv(args[2]))
            if x is None or lo is None or hi is None:
                return None
            return (min(max(x[0], lo[0]), hi[0]), min(max(x[1], lo[1]), hi[1]))  # min(max(x, lo), hi)
        if name == "drop_index" and len(args) == 2:
            x, n = self._iv(args[0]), self._iv(args[1])
            if x is None or n is None or n[0] != n[1]:
                return None
            k = n[0]
            if 0 <= x[0] and x[1] < k:
                return x
            if x[1] < 0 or x[0] >= k:
                return (k, k)
            return (max(x[0], 0), k)
        if name in ("floor_mod", "floor_div") and len(args) == 2:
            x, d = self._iv(args[0]), self._iv(args[1])
            if x is None or d is None or d[0] != d[1] or d[0] <= 0:
                return None
            if name == "floor_div":
                return (x[0] // d[0], x[1] // d[0])
            return x if 0 <= x[0] and x[1] < d[0] else (0, d[0] - 1)
        if name in ("asarray", "array") and len(args) == 1 and not e.keywords:
            return self._iv(args[0])
        if name in ("stack", "array") and args and isinstance(args[0], (ast.List, ast.Tuple)):
            out: Interval | None = None
            for i, item in enumerate(args[0].elts):
                found = self._iv(item)
                out = found if i == 0 else _join(out, found)
            return out
        if name in ("zeros", "zeros_like"):
            return (0, 0)
        if name in ("any", "all"):
            return BOOL
        if isinstance(f, ast.Name) and f.id in self.module.functions and self.depth < 3:
            return self._returned(f.id, args)
        return None

    def _returned(self, name: str, args: list[ast.expr]) -> Interval | None:
        """The value a module function returns with these arguments (its parameters bound to their intervals)."""
        callee = self._callee(name, args)
        if callee is None:
            return None
        returns = [r.value for r in _returns(callee.fn) if r.value is not None]
        out: Interval | None = None
        for i, r in enumerate(returns):
            v = callee._iv(r)
            out = v if i == 0 else _join(out, v)
        return out if returns else None


def _returns(fn: ast.FunctionDef) -> Iterator[ast.Return]:
    """The function's own `return`s (not those of functions defined inside it)."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Return):
            yield n
        elif not isinstance(n, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(n))
