"""The typed intermediate spec: every name resolved, every expression typed (dtype + static shape).

Backends read only this. Storage names are dotted paths: a record field `bench.damage`, a zone's
count `hand.count`, a table column `cards.hp`; these are also the keys of `state_to_dict`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from enum import Enum
from pathlib import PurePath
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from envc.diagnostics import Span


class DType(str, Enum):
    """Scalar element types."""

    BOOL = "bool"
    I8 = "i8"
    I16 = "i16"
    I32 = "i32"
    U32 = "u32"
    F32 = "f32"
    F64 = "f64"  # opt-in double precision (docs/spec-language.md 6.1)

    @property
    def is_int(self) -> bool:
        """Sized integer?"""
        return self in (DType.I8, DType.I16, DType.I32, DType.U32)

    @property
    def is_float(self) -> bool:
        """f32 or f64?"""
        return self in (DType.F32, DType.F64)

    @property
    def bits(self) -> int:
        """Width of an integer type."""
        return {"i8": 8, "i16": 16, "i32": 32, "u32": 32}[self.value]

    @property
    def signed(self) -> bool:
        """Signed integer?"""
        return self in (DType.I8, DType.I16, DType.I32)

    @property
    def int_range(self) -> tuple[int, int]:
        """Inclusive (min, max) of an integer type."""
        if self.signed:
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        return 0, (1 << self.bits) - 1


class _Node(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)


# numpy's type for each dtype: how every backend's arrays hold a state field
NP_DTYPE = {
    DType.BOOL: np.bool_,
    DType.I8: np.int8,
    DType.I16: np.int16,
    DType.I32: np.int32,
    DType.U32: np.uint32,
    DType.F32: np.float32,
    DType.F64: np.float64,
}


class Ty(_Node):
    """A type: element dtype, static shape, and the enum name for enum values."""

    dtype: DType
    shape: tuple[int, ...] = ()
    enum: str | None = None

    def scalar(self) -> Ty:
        """The element type."""
        return Ty(dtype=self.dtype, enum=self.enum)

    def show(self) -> str:
        """Human-readable form, e.g. `i8[3, 3]` or `Cell`."""
        base = self.enum or self.dtype.value
        return f"{base}[{', '.join(map(str, self.shape))}]" if self.shape else base


BOOL = Ty(dtype=DType.BOOL)
I32 = Ty(dtype=DType.I32)
F32 = Ty(dtype=DType.F32)
F64 = Ty(dtype=DType.F64)


class _Expr(_Node):
    ty: Ty
    span: Span


class Lit(_Expr):
    """A constant value (ints already fitted to their type)."""

    kind: Literal["lit"] = "lit"
    value: Union[bool, int, float]


class Param(_Expr):
    """A runtime parameter."""

    kind: Literal["param"] = "param"
    name: str


class Local(_Expr):
    """A local: `let` variable, loop variable, action/function/procedure parameter, `p`."""

    kind: Literal["local"] = "local"
    name: str


class Read(_Expr):
    """Read of storage (`space` state, const or obs, or an array `local`) with leading indices; the rest of the
    shape remains."""

    kind: Literal["read"] = "read"
    space: Literal["state", "const", "obs", "action", "local"]
    name: str
    index: tuple[Expr, ...] = ()
    dims: tuple[int, ...] = ()  # space local: the array local's whole shape


class Unary(_Expr):
    """`neg` or `not`."""

    kind: Literal["unary"] = "unary"
    op: Literal["neg", "not"]
    x: Expr


class Binary(_Expr):
    """A binary op; operands are already cast to a common type (comparisons yield bool)."""

    kind: Literal["binary"] = "binary"
    op: str
    a: Expr
    b: Expr


class Cast(_Expr):
    """Conversion to `ty` (ints wrap, floats to ints truncate and saturate, NaN -> 0)."""

    kind: Literal["cast"] = "cast"
    x: Expr


class Select(_Expr):
    """`if cond then a else b`."""

    kind: Literal["select"] = "select"
    cond: Expr
    a: Expr
    b: Expr


class Math(_Expr):
    """A builtin math function: abs min max clip sqrt sin cos tan exp log tanh floor ceil atan2, and (language 1.1,
    envc/mathops.py) sign round trunc hypot asin acos atan sinh cosh log1p expm1 fmod isnan isinf isfinite;
    `powi` (x, a static integer literal: `x ** n`), `pow` (f32 `x ** y`), `shl`/`shr` (x, count) and `invert` (`~x`).
    """

    kind: Literal["math"] = "math"
    fn: str
    args: tuple[Expr, ...]


class Reduce(_Expr):
    """A reduction over `var` in range(start, stop) of `elt`, counting only where `cond`."""

    kind: Literal["reduce"] = "reduce"
    op: Literal["sum", "any", "all", "count", "min", "max", "argmax", "argmin", "choice"]
    var: str
    start: int
    stop: int
    elt: Expr
    cond: Expr | None = None
    site: int = -1


class ReduceArray(_Expr):
    """A reduction over every element of an array-valued expression (row-major)."""

    kind: Literal["reduce_array"] = "reduce_array"
    op: Literal["sum", "any", "all", "count", "min", "max", "argmax", "argmin", "choice"]
    x: Expr
    site: int = -1


class Random(_Expr):
    """A draw: uniform(lo, hi) f32, randint(lo, hi) i32, bernoulli(p) bool; keyed by its static site."""

    kind: Literal["random"] = "random"
    dist: Literal["uniform", "randint", "bernoulli"]
    args: tuple[Expr, ...]
    site: int


class CallFn(_Expr):
    """Call of a pure user function."""

    kind: Literal["call_fn"] = "call_fn"
    fn: str
    args: tuple[Expr, ...]


class ZoneFind(_Expr):
    """`contains(z, v)` (bool) or `index_of(z, v)` (i32, -1 if absent) over the zone's live elements."""

    kind: Literal["zone_find"] = "zone_find"
    op: Literal["contains", "index_of"]
    zone: ZoneRef
    value: Expr


class ArrayLit(_Expr):
    """`[a, b, c]`: an array value built from `items` along its first dimension (each item a scalar, or for
    more dimensions a row of shape `ty.shape[1:]`), every item already of the element type."""

    kind: Literal["array"] = "array"
    items: tuple[Expr, ...]


class Map(_Expr):
    """A scalar expression applied element by element (language 1.1: unary `-`, comparisons, `if`/`else`, casts and
    math builtins on arrays). `body` is a scalar expression of the locals `names` only (and literals); local
    `names[j]` is, at each position (row-major), the element of `args[j]` when that is an array of shape `ty.shape`,
    or `args[j]` itself when it is a scalar (evaluated once, before the elements)."""

    kind: Literal["map"] = "map"
    names: tuple[str, ...]
    args: tuple[Expr, ...]
    body: Expr


class Values(_Expr):
    """`return a, b`: the values of a function that returns several (`CallableInfo.results`), only as the value
    of its `ReturnS`; `ty` is the first one's type."""

    kind: Literal["values"] = "values"
    items: tuple[Expr, ...]


Expr = Annotated[
    Union[
        Lit, Param, Local, Read, Unary, Binary, Cast, Select, Math, Reduce, ReduceArray, Random, CallFn, ZoneFind,
        ArrayLit, Map, Values,
    ],
    Field(discriminator="kind"),
]  # fmt: skip


class ZoneRef(_Node):
    """A zone selected by its leading (e.g. per-player) indices; storage `name` and `name.count`."""

    name: str
    index: tuple[Expr, ...] = ()
    capacity: int
    elem: Ty
    span: Span


class Target(_Node):
    """Where a statement writes: a local, or storage with leading indices."""

    space: Literal["local", "state", "obs"]
    name: str
    index: tuple[Expr, ...] = ()
    ty: Ty
    dims: tuple[int, ...] = ()  # an element of an array local: the local's whole shape
    span: Span


class _Stmt(_Node):
    span: Span


class LetS(_Stmt):
    """Declare and initialise a local."""

    kind: Literal["let"] = "let"
    name: str
    value: Expr


class Assign(_Stmt):
    """Write a value (a scalar into an array fills it)."""

    kind: Literal["assign"] = "assign"
    target: Target
    value: Expr


class IfS(_Stmt):
    """if/else (elif chains are nested)."""

    kind: Literal["if"] = "if"
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


class Switch(_Stmt):
    """`match` on an enum: each case lists member indices; `default` runs for the rest."""

    kind: Literal["switch"] = "switch"
    subject: Expr
    cases: tuple[tuple[tuple[int, ...], tuple[Stmt, ...]], ...]
    default: tuple[Stmt, ...] = ()


class ForS(_Stmt):
    """`for var in range(start, stop)` with static bounds; `loop_id` keys randomness per iteration."""

    kind: Literal["for"] = "for"
    var: str
    start: int
    stop: int
    body: tuple[Stmt, ...]
    loop_id: int
    random: bool = False


class ZoneOp(_Stmt):
    """push/insert/pop/remove_at/clear/shuffle on a zone; pop/remove_at may store the element in `out`."""

    kind: Literal["zone_op"] = "zone_op"
    op: Literal["push", "insert", "pop", "remove_at", "clear", "shuffle"]
    zone: ZoneRef
    index: Expr | None = None
    value: Expr | None = None
    out: Target | None = None
    site: int = -1


class CallProc(_Stmt):
    """Call of a procedure; `site` keys its randomness."""

    kind: Literal["call_proc"] = "call_proc"
    proc: str
    args: tuple[Expr, ...]
    site: int


class ReturnS(_Stmt):
    """`return value` (functions only)."""

    kind: Literal["return"] = "return"
    value: Expr


class CheckS(_Stmt):
    """A spec bug only the reference reports (section 18): when strict, it raises `message` at `span` where `cond`
    holds; otherwise, and on the compiled backends (which emit nothing for it), nothing happens. A `while` loop's
    cap (`while c max N:` with `c` still true after N iterations) is one. With `loop_id` set, `cond` is evaluated
    with the key of iteration `iteration` of that loop (a condition that draws, evaluated once more)."""

    kind: Literal["check"] = "check"
    cond: Expr
    message: str
    loop_id: int | None = None
    iteration: int = 0


class Unpack(_Stmt):
    """`x, v = f(...)` (and `let x, v = f(...)`, after a `LetS` of each): the values of a call of a function that
    returns several, written to `targets` in order, each converted to its target's type (6.5)."""

    kind: Literal["unpack"] = "unpack"
    targets: tuple[Target, ...]
    value: CallFn


Stmt = Annotated[
    Union[LetS, Assign, IfS, Switch, ForS, ZoneOp, CallProc, ReturnS, CheckS, Unpack], Field(discriminator="kind")
]


class EnumInfo(_Node):
    """An enum and its members (member i is stored as i)."""

    name: str
    members: tuple[str, ...]
    doc: str = ""


class ParamInfo(_Node):
    """A parameter; static ones are already folded into shapes and constants."""

    name: str
    ty: Ty
    default: Union[bool, int, float]
    static: bool
    doc: str = ""
    values: Union[tuple[Union[bool, int, float], ...], None] = None  # the declared domain (verify sweeps it)


class ConstInfo(_Node):
    """A constant array or scalar (tables are one ConstInfo per column), values flat row-major."""

    name: str
    ty: Ty
    values: tuple[Union[bool, int, float], ...]
    doc: str = ""


class VisibleRule(_Node):
    """State-dependent visibility (`visible: EXPR`, or `{element: [i, j], when: EXPR}` per element): player `p`
    may see element (i, j, ...) of the leading dimensions where `when` holds in the current state. `when` is a
    pure bool expression with `p` and the `element` names bound as i32 locals; `text` is the rule as written."""

    element: tuple[str, ...] = ()
    when: Expr
    text: str
    span: Span


class FieldInfo(_Node):
    """A storage array of the state: user fields, record fields, zone data and counts, builtins.

    `visible` is `all`, `owner`, `none` or `rule` (then `visible_rule` says who sees what). Only the no-leak
    check reads it; the backends ignore it."""

    name: str
    ty: Ty
    init: tuple[Union[bool, int, float], ...]
    visible: Literal["all", "owner", "none", "rule"] = "all"
    visible_rule: VisibleRule | None = None
    per_player: bool = False
    zone: str | None = None
    writable: bool = True
    low: float | None = None
    high: float | None = None
    doc: str = ""
    span: Span


class ActionParamInfo(_Node):
    """One action parameter ranging over [start, stop)."""

    name: str
    ty: Ty
    start: int
    stop: int


class ActionKind(_Node):
    """A named action kind: ids offset .. offset+size-1, params row-major."""

    name: str
    params: tuple[ActionParamInfo, ...]
    legal: Expr
    effect: tuple[Stmt, ...]
    offset: int
    size: int
    doc: str = ""
    span: Span


class BoxAction(_Node):
    """A continuous action space; effects read the local `action`."""

    shape: tuple[int, ...]
    low: float
    high: float
    effect: tuple[Stmt, ...]


class RuleInfo(_Node):
    """An automatic rule."""

    name: str
    when: Expr
    body: tuple[Stmt, ...]
    doc: str = ""


Bound = Union[float, tuple[float, ...]]  # one bound for every element, or one per element (row-major)


def dtype_range(dt: DType) -> tuple[float, float]:
    """The values a dtype holds: bools 0..1, floats unbounded, integers their range."""
    if dt is DType.BOOL:
        return 0.0, 1.0
    if dt.is_float:
        return -math.inf, math.inf
    lo, hi = dt.int_range
    return float(lo), float(hi)


class ObsFieldInfo(_Node):
    """One observation part."""

    name: str
    ty: Ty
    low: Bound | None = None
    high: Bound | None = None

    def bounds(self) -> tuple[Bound, Bound]:
        """The declared bounds, else the dtype's range (bools 0..1, floats unbounded)."""
        lo, hi = dtype_range(self.ty.dtype)
        return (self.low if self.low is not None else lo, self.high if self.high is not None else hi)

    def declared(self) -> tuple[float | np.ndarray | None, float | np.ndarray | None]:
        """The declared (low, high) for comparing with an observation: None, a float, or an array of its shape."""

        def shaped(b: Bound | None) -> float | np.ndarray | None:
            return np.reshape(np.asarray(b, np.float64), self.ty.shape) if isinstance(b, tuple) else b

        return shaped(self.low), shaped(self.high)


class CallableInfo(_Node):
    """A function (`returns` set, pure) or procedure."""

    name: str
    params: tuple[tuple[str, Ty], ...]
    returns: Ty | None
    body: tuple[Stmt, ...]
    random: bool = False
    span: Span
    results: tuple[Ty, ...] = ()  # a function that returns several values (`returns: [f32, f32]`): their types


class OracleInfo(_Node):
    """The spec's `oracle:` section (docs/oracle.md): the original environment the spec claims to be, for
    `envc verify --against`. The backends ignore it (it is not part of `content_digest`)."""

    target: str = ""  # gymnasium:ENV_ID | pgx:ENV_ID | MODULE:FACTORY; "" when only the mapping is declared
    fields: tuple[tuple[str, str], ...] = ()  # (spec storage field, where the original keeps it), in file order
    chance: tuple[str, ...] = ()  # fields the original fills from its own randomness during a step
    observation: bool = True  # compare the original's observation with the spec's
    span: Span


class RenderField(_Node):
    """A `{EXPR}` of a render text line: the value, its format spec, and labels to draw instead of ints."""

    expr: Expr
    fmt: str = ""
    names: tuple[str, ...] = ()


class RenderLine(_Node):
    """A render text line: `texts` around `fields` (one more text than fields), drawn when `when` holds."""

    texts: tuple[str, ...]
    fields: tuple[RenderField, ...]
    when: Expr


class RenderShape(_Node):
    """One shape; coords: line x0 y0 x1 y1, circle cx cy r, rect cx cy w h, polygon x y ..., curve x y (of `t`)."""

    shape: str
    coords: tuple[Expr, ...]
    width: Expr | None = None
    color: tuple[int, int, int]
    samples: int = 0
    when: Expr


class RenderInfo(_Node):
    """The `render` section: a text grid and lines, and/or a canvas of shapes (envc/render.py draws them)."""

    grid: tuple[int, int] | None = None
    cell: Expr | None = None
    symbols: tuple[tuple[int, str], ...] = ()
    sep: str = " "
    lines: tuple[RenderLine, ...] = ()
    canvas: tuple[int, int] | None = None
    world: tuple[Expr, ...] = ()
    background: tuple[int, int, int] = (255, 255, 255)
    shapes: tuple[RenderShape, ...] = ()


class SpecIR(_Node):
    """A checked spec, ready for the interpreter and the code generators."""

    name: str
    doc: str
    version: str
    path: str
    players: int
    params: tuple[ParamInfo, ...]
    enums: tuple[EnumInfo, ...]
    consts: tuple[ConstInfo, ...]
    fields: tuple[FieldInfo, ...]
    actions: tuple[ActionKind, ...]
    num_actions: int
    box: BoxAction | None
    reset: tuple[Stmt, ...]
    rules: tuple[RuleInfo, ...]
    reward: Expr
    terminated: Expr
    truncated: Expr
    obs_fields: tuple[ObsFieldInfo, ...]
    observation: tuple[Stmt, ...]
    invariants: tuple[tuple[str, Expr], ...]
    callables: tuple[CallableInfo, ...]
    illegal_action_penalty: float
    data_files: tuple[str, ...] = ()
    oracle: OracleInfo | None = None
    render: RenderInfo | None = None

    def portable_json(self) -> str:
        """The IR as JSON with every source position cut to the spec's file name at 1:1: what generated packages
        embed for rendering, so their code depends neither on where the spec lies nor on its line numbers (as
        `build_digest`, their cache key)."""
        data = self.model_dump(mode="json")
        name = PurePath(self.path).name
        where = {"path": name, "line": 1, "col": 1, "end_line": 1, "end_col": 2}
        stack: list[object] = [data]
        while stack:  # iterative: IR trees may nest deeper than Python's recursion limit
            node = stack.pop()
            if isinstance(node, dict):
                if isinstance(node.get("span"), dict):
                    node["span"] = where
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
        data["path"] = name
        data["data_files"] = [PurePath(p).name for p in self.data_files]
        return json.dumps(data, separators=(",", ":"))

    def field(self, name: str) -> FieldInfo:
        """The storage field called `name`."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def field_range(self, f: FieldInfo) -> tuple[float, float]:
        """The values `f`'s elements hold in the spec's states: its declared bounds, else a zone's count
        0..capacity, an enum's members, the dtype's range (bools 0..1, floats unbounded)."""
        if f.zone is not None and f.name.endswith(".count"):
            lo, hi = 0.0, float(self.field(f.zone).ty.shape[-1])
        elif f.ty.enum is not None:
            lo, hi = 0.0, float(next(len(e.members) for e in self.enums if e.name == f.ty.enum) - 1)
        else:
            lo, hi = dtype_range(f.ty.dtype)
        return (f.low if f.low is not None else lo, f.high if f.high is not None else hi)


_MODELS: tuple[type[BaseModel], ...] = (
    VisibleRule,
    FieldInfo,
    Reduce,
    ReduceArray,
    Read,
    Unary,
    Binary,
    Cast,
    Select,
    Math,
    Random,
    CallFn,
    ZoneFind,
    ArrayLit,
    Map,
    Values,
    ZoneRef,
    Target,
    LetS,
    Assign,
    IfS,
    Switch,
    ForS,
    ZoneOp,
    CallProc,
    ReturnS,
    CheckS,
    Unpack,
    ActionKind,
    BoxAction,
    RuleInfo,
    CallableInfo,
    OracleInfo,
    RenderField,
    RenderLine,
    RenderShape,
    RenderInfo,
    SpecIR,
)
for _model in _MODELS:
    _model.model_rebuild()


def build_digest(spec: SpecIR) -> str:
    """The cache key of a generated package: `content_digest` plus the render section, which the packages embed
    (envc.render draws from it) though no backend's stepping reads it."""
    if spec.render is None:
        return content_digest(spec)
    extra = json.dumps(_without_spans(spec.render.model_dump(mode="json")), sort_keys=True)
    return hashlib.sha256((content_digest(spec) + extra).encode()).hexdigest()


def content_digest(spec: SpecIR) -> str:
    """sha256 of what the backends read: the IR without source positions, the spec named by its file name, so
    a spec moved to another folder or machine keeps its digest (and its cached builds)."""
    data = spec.model_dump(mode="json")
    data["path"] = PurePath(spec.path).name
    data["data_files"] = [PurePath(p).name for p in spec.data_files]
    data.pop("oracle", None)  # what the spec is compared with is no input of any backend
    data.pop("render", None)  # nor is how a state is drawn (envc/render.py draws from the state's arrays)
    return hashlib.sha256(json.dumps(_without_spans(data), sort_keys=True).encode()).hexdigest()


def _without_spans(data: dict[str, object]) -> dict[str, object]:
    """`data` (a dumped IR node) with every source position removed, in place."""
    stack: list[object] = [data]
    while stack:  # iterative: IR trees may nest deeper than Python's recursion limit
        node = stack.pop()
        if isinstance(node, dict):
            node.pop("span", None)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return data


def nodes(root: Any) -> Iterator[BaseModel]:
    """Every IR node in `root` (a node, or tuples and lists of them), depth first, without recursion."""
    stack = [root]
    while stack:
        x = stack.pop()
        if isinstance(x, BaseModel):
            yield x
            stack.extend(x.__dict__.values())
        elif isinstance(x, (tuple, list)):
            stack.extend(x)
