"""Pass 3: resolve names and types of a spec document, run the checks, and build the typed IR."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from envc import ast, ir
from envc import document as d
from envc.check import action as action_scope
from envc.check.body import Bail, BodyChecker, Env, plain_number
from envc.check.budget import check_budget
from envc.check.render import check_render
from envc.check.symbols import (
    MAX_ENUM_MEMBERS,
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
from envc.check.tables import DataError, flatten, read_data_file
from envc.check.visibility import check_visibility, visible_kind
from envc.diagnostics import Diagnostics, Span, did_you_mean
from envc.ir import BOOL, F32, I32, DType, Ty
from envc.load import YNode, YScalar, key_span, node_at
from envc.parse import Snippet, parse_body, parse_expr, parse_function_body

# keys state_to_dict gives the step's outputs on every backend, so no storage may be named so
STEP_OUTPUTS = frozenset({"rewards", "terminated", "truncated", "legal_action_mask", "observation"})
MAX_SIZE = 1 << 20  # one dimension
MAX_ELEMENTS = 1 << 20  # one array (state field, zone, constant, observation field)
MAX_TOTAL_ELEMENTS = 1 << 22  # all arrays of a spec together
MAX_ACTIONS = 1 << 20  # the flat discrete action space
Path = tuple[object, ...]


class Checker:
    """Declarations first (symbols, shapes, constants), then every body, then whole-spec checks."""

    def __init__(self, doc: d.SpecDocument, root: YNode, path: str, diags: Diagnostics):
        self.doc = doc
        self.root = root
        self.path = path
        self.diags = diags
        self.symbols: dict[str, Symbol] = {}
        self.origin: dict[str, Span] = {}
        self.records: dict[str, dict[str, Ty]] = {}
        self.params: list[ir.ParamInfo] = []
        self.consts: list[ir.ConstInfo] = []
        self.fields: list[ir.FieldInfo] = []
        self.obs_fields: list[ir.ObsFieldInfo] = []
        self._site = 0
        self.elements = 0  # array elements declared so far (MAX_TOTAL_ELEMENTS)
        self.env = Env(self.symbols, diags, doc.players, self.next_site)

    def next_site(self) -> int:
        self._site += 1
        return self._site

    # ---- locations ---------------------------------------------------
    def at(self, *keys: object) -> Span:
        return node_at(self.root, keys).span

    def key_at(self, *keys: object) -> Span:
        return key_span(self.root, keys).span

    # ---- names -------------------------------------------------------
    def ident(self, name: str, keys: Path, what: str, reserved: bool = True, value: bool = False) -> bool:
        """Is `name` a valid name for a `what` (E013 at its key, or at its value when `value`, if not)?"""
        problem = name_problem(name, what, reserved)
        if problem is not None:
            self.diags.error(self.at(*keys) if value else self.key_at(*keys), "E013", problem)
        return problem is None

    def define(self, name: str, sym: Symbol, keys: Path, what: str) -> None:
        if not self.ident(name, keys, what):
            return
        span = self.key_at(*keys)
        if name in self.symbols:
            first = self.origin[name]
            self.diags.error(span, "E031", f"duplicate name '{name}' (first defined at line {first.line})")
            return
        self.symbols[name] = sym
        self.origin[name] = span

    def settle(self, names: Iterable[str]) -> None:
        """Names of a section that did not make it into the symbol table had an error: uses of them are skipped
        quietly instead of being reported again as unknown names."""
        for name in names:
            if name not in self.symbols and name not in self.records:
                self.env.broken.add(name)

    # ---- types and shapes ----------------------------------------------
    def scalar_type(self, name: str, keys: Path, allow_records: bool = False) -> Ty | None:
        if name in ("bool", "i8", "i16", "i32", "u32", "f32", "f64"):
            return Ty(dtype=DType(name))
        sym = self.symbols.get(name)
        if isinstance(sym, EnumSym):
            return sym.ty
        if allow_records and name in self.records:
            return Ty(dtype=DType.I32, enum=None)
        if name in self.env.broken:
            return None
        hint = did_you_mean(name, ["bool", "i8", "i16", "i32", "u32", "f32", "f64", *self.symbols, *self.records])
        self.diags.error(self.at(*keys), "E030", f"unknown type '{name}'{hint}")
        return None

    def value_type(self, name: str, keys: Path) -> Ty | None:
        """A function parameter's or result's type: a scalar type, or `T[n, ...]` an array of static shape."""
        m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[([^\]]*)\]\s*", name)
        if m is None:
            return self.scalar_type(name, keys)
        base = self.scalar_type(m.group(1), keys)
        dims: list[int] = []
        for part in m.group(2).split(","):
            v = part.strip()
            n = self.dim(int(v) if v.isdigit() else v, keys)
            if n is None:
                return None
            dims.append(n)
        if base is None or not self.sized(tuple(dims), keys, total=False):
            return None
        return Ty(dtype=base.dtype, shape=tuple(dims), enum=base.enum)

    def static_value(self, name: str) -> int | None:
        if name == "num_players":
            return self.doc.players
        sym = self.symbols.get(name)
        if isinstance(sym, ConstSym) and isinstance(sym.value, int) and not isinstance(sym.value, bool):
            return sym.value
        return None

    def dim(self, v: int | str, keys: Path) -> int | None:
        if isinstance(v, str):
            n = self.static_value(v)
            if n is None:
                if v in self.env.broken:
                    return None
                if isinstance(self.symbols.get(v), ParamSym):
                    self.diags.error(
                        self.at(*keys), "E051", f"'{v}' is a runtime param; mark it `static: true` to use it as a size"
                    )
                else:
                    hint = did_you_mean(v, [k for k in self.symbols if self.static_value(k) is not None])
                    self.diags.error(self.at(*keys), "E051", f"size '{v}' is not a static constant{hint}")
                return None
            v = n
        if v < 1 or v > MAX_SIZE:
            self.diags.error(self.at(*keys), "E012", f"size {v} must be between 1 and {MAX_SIZE}")
            return None
        return v

    def shape(self, dims: list[int | str], keys: Path) -> tuple[int, ...] | None:
        out = []
        for i, v in enumerate(dims):
            n = self.dim(v, keys + (i,))
            if n is None:
                return None
            out.append(n)
        return tuple(out) if self.sized(tuple(out), keys, total=False) else None

    def sized(self, shape: tuple[int, ...], keys: Path, total: bool = True) -> bool:
        """Is an array of `shape` small enough to build (checked before any values are materialized)?"""
        n = math.prod(shape)
        if n > MAX_ELEMENTS:
            self.diags.error(
                self.at(*keys),
                "E012",
                f"an array of shape {list(shape)} has {n:,} elements; the limit is {MAX_ELEMENTS:,} per array",
            )
            return False
        if not total:
            return True
        self.elements += n
        if self.elements > MAX_TOTAL_ELEMENTS >= self.elements - n:
            self.diags.error(
                self.at(*keys), "E012", f"the spec's arrays hold more than {MAX_TOTAL_ELEMENTS:,} elements in all"
            )
        return self.elements <= MAX_TOTAL_ELEMENTS

    def values(self, raw: object, ty: Ty, keys: Path) -> tuple[bool | int | float, ...] | None:
        members = self.enum_members
        try:
            if raw is None:
                return tuple([_zero(ty)] * math.prod(ty.shape))
            if ty.shape and not isinstance(raw, list):
                v = flatten(raw, ty.scalar(), members, self.at(*keys))[0]
                return tuple([v] * math.prod(ty.shape))
            return tuple(flatten(raw, ty, members, self.at(*keys)))
        except DataError as e:
            self.diags.error(e.span, "E012", e.message)
            return None

    def enum_members(self, name: str) -> tuple[str, ...] | None:
        sym = self.symbols.get(name)
        return sym.members if isinstance(sym, EnumSym) else None

    # ---- declarations --------------------------------------------------
    def declare_types(self) -> None:
        for name, t in self.doc.types.items():
            if isinstance(t, d.EnumDecl):
                for i, m in enumerate(t.enum):
                    self.ident(m, ("types", name, "enum", i), "enum member", reserved=False, value=True)
                dup = next((m for m, n in Counter(t.enum).items() if n > 1), None)
                if dup is not None:
                    self.diags.error(self.at("types", name, "enum"), "E031", f"enum member '{dup}' appears twice")
                if len(t.enum) > MAX_ENUM_MEMBERS:
                    msg = f"enums have at most {MAX_ENUM_MEMBERS:,} members (got {len(t.enum):,})"
                    self.diags.error(self.at("types", name, "enum"), "E012", msg)
                self.define(name, EnumSym(name, tuple(t.enum)), ("types", name), "type")

    def declare_records(self) -> None:
        for name, t in self.doc.types.items():
            if isinstance(t, d.RecordDecl):
                if not self.ident(name, ("types", name), "type"):
                    continue
                if name in self.symbols or name in self.records:
                    self.diags.error(self.key_at("types", name), "E031", f"duplicate name '{name}'")
                    continue
                parts: dict[str, Ty] = {}
                for fname, f in t.record.items():
                    keys: Path = ("types", name, "record", fname)
                    self.ident(fname, keys, "record field")  # a bad name is reported, and the field kept for its uses
                    decl = f if isinstance(f, d.RecordField) else d.RecordField(type=f)
                    sty = self.scalar_type(decl.type, keys)
                    shp = self.shape(decl.shape, keys + ("shape",))
                    if sty is not None and shp is not None:
                        parts[fname] = Ty(dtype=sty.dtype, shape=shp, enum=sty.enum)
                self.records[name] = parts

    def declare_params(self) -> None:
        for name, p in self.doc.params.items():
            decl = p if isinstance(p, d.ParamDecl) else d.ParamDecl(type=_infer_type(p), default=p)
            keys: Path = ("params", name)
            if not self.ident(name, keys, "param"):
                continue
            ty = self.scalar_type(decl.type or _infer_type(decl.default), keys)
            if ty is None:
                continue
            if ty.enum:
                self.diags.error(self.at(*keys), "E012", "params must be bool, sized int, f32 or f64")
                continue
            vals = self.values(decl.default, ty, keys)
            if vals is None:
                continue
            domain = None
            if decl.values is not None:
                if decl.static:
                    msg = "a static param is fixed at build time: `values` is for runtime params"
                    self.diags.error(self.at(*keys, "values"), "E012", msg)
                domain = self.values(decl.values, Ty(dtype=ty.dtype, shape=(len(decl.values),)), keys + ("values",))
            p_info = ir.ParamInfo(name=name, ty=ty, default=vals[0], static=decl.static, doc=decl.doc, values=domain)
            self.params.append(p_info)
            sym: Symbol = ConstSym(name, ty, vals[0], decl.doc) if decl.static else ParamSym(name, ty, decl.doc)
            self.define(name, sym, keys, "param")

    def declare_constants(self) -> None:
        for name, c in self.doc.constants.items():
            keys: Path = ("constants", name)
            if not self.ident(name, keys, "constant"):
                continue
            if not isinstance(c, d.ConstDecl):
                ty = Ty(dtype=DType(_infer_type(c)))
                self.define(name, ConstSym(name, ty, c), keys, "constant")
                continue
            sty = self.scalar_type(c.type, keys + ("type",))
            shp = self.shape(c.shape, keys + ("shape",))
            if sty is None or shp is None or not self.sized(shp, keys + ("shape",)):
                continue
            ty = Ty(dtype=sty.dtype, shape=shp, enum=sty.enum)
            raw: object = c.value
            if c.file is not None:
                got = read_data_file(self.path, c.file, self.at(*keys, "file"), self.diags)
                if got is None:
                    continue
                rows = [list(r.values()) if isinstance(r, dict) else r for r in got.rows]
                if len(shp) == 1 and rows and all(isinstance(r, list) and len(r) == 1 for r in rows):
                    rows = [r[0] for r in rows]  # type: ignore[index]
                raw = rows
            elif raw is None:
                self.diags.error(self.at(*keys), "E010", f"constant '{name}' needs `value` or `file`")
                continue
            if not shp:
                vals = self.values(raw, ty, keys + ("value",))
                if vals is not None:
                    self.define(name, ConstSym(name, ty, vals[0], c.doc), keys, "constant")
                continue
            vals = self.values(raw, ty, keys + ("value",))
            if vals is not None:
                self.consts.append(ir.ConstInfo(name=name, ty=ty, values=vals, doc=c.doc))
            # with bad values the shape and type are still known, so uses go on being checked
            self.define(name, StorageSym(name, "const", "array", shp, ty, writable=False, doc=c.doc), keys, "constant")

    def declare_tables(self) -> None:
        for name, t in self.doc.tables.items():
            keys: Path = ("tables", name)
            if not self.ident(name, keys, "table"):
                continue
            cols: dict[str, tuple[Ty | None, d.ColumnDecl]] = {}
            for cname, col in t.columns.items():
                decl = col if isinstance(col, d.ColumnDecl) else d.ColumnDecl(type=col)
                ckeys = keys + ("columns", cname)
                if not self.ident(cname, ckeys, "column"):
                    continue
                if decl.type == "str":
                    cols[cname] = (None, decl)
                    continue
                sty = self.scalar_type(decl.type, ckeys)
                shp = self.shape(decl.shape, ckeys + ("shape",))
                if sty is not None and shp is not None:
                    cols[cname] = (Ty(dtype=sty.dtype, shape=shp, enum=sty.enum), decl)
            rows: list[object]
            got = None
            line_of: Callable[[int, str], Span]
            if (t.file is None) == (t.rows is None):
                self.diags.error(self.at(*keys), "E010", f"table '{name}' needs exactly one of `rows` or `file`")
                continue
            if t.file is not None:
                got = read_data_file(self.path, t.file, self.at(*keys, "file"), self.diags)
                if got is None:
                    continue
                rows = got.rows

                def line_of(i: int, c: str, spans: list[Span] = got.spans) -> Span:
                    return spans[i]
            else:
                rows = list(t.rows or [])

                def line_of(i: int, c: str, k: Path = keys) -> Span:
                    return key_span(self.root, (*k, "rows", i, c)).span

            if not rows:
                self.diags.error(self.at(*keys), "E014", f"table '{name}' has no rows")
                continue
            parts: dict[str, Ty] = {}
            for cname, (cty, decl) in cols.items():
                if cty is None:
                    continue
                flat: list[bool | int | float] = []
                for i, row in enumerate(rows):
                    if not isinstance(row, dict):
                        self.diags.error(line_of(i, cname), "E014", f"row {i} of table '{name}' is not a mapping")
                        break
                    raw = row.get(cname, decl.default)
                    if raw is None or raw == "":
                        raw = decl.default
                    if raw is None:
                        self.diags.error(
                            line_of(i, cname), "E014", f"row {i} of table '{name}' has no value for '{cname}'"
                        )
                        break
                    try:
                        flat.extend(flatten(raw, cty, self.enum_members, line_of(i, cname)))
                    except DataError as e:
                        self.diags.error(e.span, "E014", f"table '{name}', row {i}, column '{cname}': {e.message}")
                        break
                parts[cname] = cty
                self.consts.append(
                    ir.ConstInfo(
                        name=f"{name}.{cname}",
                        ty=Ty(dtype=cty.dtype, shape=(len(rows),) + cty.shape, enum=cty.enum),
                        values=tuple(flat),
                        doc=decl.doc,
                    )
                )
            if got is not None and got.header is not None:  # a CSV file: its header names the columns, once
                extra = [k for k in got.header_names if k not in t.columns]
                if extra:
                    hint = did_you_mean(extra[0], list(t.columns))
                    msg = f"table '{name}': column '{extra[0]}' of the file is not declared in `columns`{hint}"
                    self.diags.error(got.header, "E014", msg)
            else:
                for i, row in enumerate(rows):
                    if isinstance(row, dict):
                        extra = [k for k in row if k not in t.columns]
                        if extra:
                            col = str(extra[0])
                            hint = did_you_mean(col, list(t.columns))
                            msg = f"table '{name}' row {i} has undeclared column '{col}'{hint}"
                            self.diags.error(line_of(i, col), "E014", msg)
            if len(cols) == len(t.columns):  # bad cells or extra columns: its shape and types are still known
                self.define(
                    name,
                    StorageSym(name, "const", "table", (len(rows),), parts=parts, writable=False, doc=t.doc),
                    keys,
                    "table",
                )

    def declare_state(self) -> None:
        self.fields.append(
            ir.FieldInfo(
                name="current_player", ty=I32, init=(0,), span=Span.point(self.path, 1, 1), doc="Player to act"
            )
        )
        self.fields.append(
            ir.FieldInfo(
                name="step_count",
                ty=I32,
                init=(0,),
                writable=False,
                span=Span.point(self.path, 1, 1),
                doc="Steps taken this episode",
            )
        )
        self.symbols["current_player"] = StorageSym("current_player", "state", "array", (), I32)
        self.symbols["step_count"] = StorageSym("step_count", "state", "array", (), I32, writable=False)
        P = self.doc.players
        for name, f in self.doc.state.items():
            keys: Path = ("state", name)
            span = self.key_at(*keys)
            if isinstance(f, str):
                f = d.FieldDecl(type=f)
            if not self.ident(name, keys, "state field"):
                continue
            if name in STEP_OUTPUTS:
                self.diags.error(
                    span,
                    "E013",
                    f"state field name '{name}' is reserved: state_to_dict uses it for the step's output; "
                    f"name the field '{name}_' or something more specific",
                )
                continue
            outer_pp = (P,) if f.per_player else ()
            if f.visible == "owner" and not f.per_player:
                self.diags.error(self.at(*keys, "visible"), "E012", "`visible: owner` needs `per_player: true`")
            if isinstance(f, d.ZoneDecl):
                ety = self.scalar_type(f.zone, keys + ("zone",))
                cap = self.dim(f.capacity, keys + ("capacity",))
                shp = self.shape(f.shape, keys + ("shape",))
                if ety is None or cap is None or shp is None:
                    continue
                if ety.dtype.is_float or ety.dtype is DType.BOOL:
                    self.diags.error(self.at(*keys, "zone"), "E012", "zone elements must be integers or enums")
                    continue
                outer = outer_pp + shp
                if not self.sized(outer + (cap,), keys + ("shape" if f.shape else "capacity",)):
                    continue
                self.fields.append(
                    ir.FieldInfo(
                        name=name,
                        ty=Ty(dtype=ety.dtype, shape=outer + (cap,), enum=ety.enum),
                        init=tuple([0] * math.prod(outer + (cap,))),
                        visible=visible_kind(f.visible),
                        per_player=f.per_player,
                        zone=name,
                        doc=f.doc,
                        span=span,
                    )
                )
                self.fields.append(
                    ir.FieldInfo(
                        name=f"{name}.count",
                        ty=Ty(dtype=DType.I32, shape=outer),
                        init=tuple([0] * math.prod(outer)),
                        per_player=f.per_player,
                        zone=name,
                        doc=f"Number of elements in {name}",
                        span=span,
                    )
                )
                self.define(
                    name,
                    StorageSym(name, "state", "zone", outer, ety, capacity=cap, span=span, doc=f.doc),
                    keys,
                    "state field",
                )
                continue
            shp = self.shape(f.shape, keys + ("shape",))
            if shp is None:
                continue
            outer = outer_pp + shp
            if f.type in self.records:
                parts = self.records[f.type]
                if not all(self.sized(outer + pty.shape, keys + ("shape",)) for pty in parts.values()):
                    continue
                for pname, pty in parts.items():
                    full = Ty(dtype=pty.dtype, shape=outer + pty.shape, enum=pty.enum)
                    self.fields.append(
                        ir.FieldInfo(
                            name=f"{name}.{pname}",
                            ty=full,
                            init=tuple([_zero(full)] * math.prod(full.shape)),
                            visible=visible_kind(f.visible),
                            per_player=f.per_player,
                            doc=f.doc,
                            span=span,
                        )
                    )
                self.define(
                    name,
                    StorageSym(name, "state", "record", outer, parts=parts, span=span, doc=f.doc),
                    keys,
                    "state field",
                )
                continue
            sty = self.scalar_type(f.type, keys + ("type",) if not isinstance(self.doc.state[name], str) else keys)
            if sty is None:
                continue
            ty = Ty(dtype=sty.dtype, shape=outer, enum=sty.enum)
            if not self.sized(outer, keys + ("shape",)):
                continue
            if f.per_player and isinstance(f.init, list) and shp and len(f.init) == shp[0] != P:
                one = self.values(f.init, Ty(dtype=ty.dtype, shape=shp, enum=ty.enum), keys + ("init",))
                init = one * P if one is not None else None  # one player's init, repeated for each player
            else:
                init = self.values(f.init, ty, keys + ("init",))
            if init is None:
                continue
            self.fields.append(
                ir.FieldInfo(
                    name=name,
                    ty=ty,
                    init=init,
                    visible=visible_kind(f.visible),
                    per_player=f.per_player,
                    low=f.low,
                    high=f.high,
                    doc=f.doc,
                    span=span,
                )
            )
            self.define(name, StorageSym(name, "state", "array", outer, ty, span=span, doc=f.doc), keys, "state field")

    def declare_obs(self) -> None:
        for name, f in self.doc.observation.fields.items():
            keys: Path = ("observation", "fields", name)
            if not self.ident(name, keys, "observation field"):
                continue
            decl = f if isinstance(f, d.ObsField) else d.ObsField(type=f)
            sty = self.scalar_type(decl.type, keys)
            shp = self.shape(decl.shape, keys + ("shape",))
            if sty is None or shp is None:
                continue
            ty = Ty(dtype=sty.dtype, shape=shp, enum=sty.enum)
            low, high = (self.obs_bound(b, shp, keys + (k,)) for b, k in ((decl.low, "low"), (decl.high, "high")))
            self.obs_fields.append(ir.ObsFieldInfo(name=name, ty=ty, low=low, high=high))
            self.define(name, StorageSym(name, "obs", "array", shp, ty, doc=decl.doc), keys, "observation field")

    def obs_bound(self, b: float | list[Any] | None, shape: tuple[int, ...], keys: Path) -> ir.Bound | None:
        """An observation bound: one number, or one per element (a list, row-major; nested rows flattened)."""
        if not isinstance(b, list):
            return b
        flat = [float(x) for row in b for x in (row if isinstance(row, list) else [row])]
        if len(flat) != math.prod(shape):
            self.diags.error(
                self.at(*keys),
                "E041",
                f"'{keys[-1]}' gives {len(flat)} values for an observation of shape {list(shape)} "
                f"({math.prod(shape)} elements): give one number for all, or one per element",
            )
            return None
        return tuple(flat)

    def declare_callables(self) -> None:
        for section in ("functions", "procedures"):
            for name, c in getattr(self.doc, section).items():
                keys: Path = (section, name)
                if not self.ident(name, keys, section[:-1]):
                    continue
                params: list[tuple[str, Ty]] = []
                for pname, tname in c.params.items():
                    self.ident(pname, keys + ("params", pname), "parameter")  # reported; kept, so calls check on
                    ty = self.value_type(tname, keys + ("params", pname))
                    if ty is not None:
                        params.append((pname, ty))
                returns = None
                results: tuple[Ty, ...] = ()  # `returns: [f32, f32]`: several values (envc/check/values.py)
                if section == "functions":
                    if c.returns is None:
                        self.diags.error(self.key_at(*keys), "E010", f"function '{name}' needs `returns: TYPE`")
                        continue
                    if isinstance(c.returns, list):
                        if not c.returns:
                            msg = "`returns: []` lists no type; write `returns: f32`, or `returns: [f32, f32]` for two"
                            self.diags.error(self.at(*keys, "returns"), "E012", msg)
                            continue
                        types = [self.value_type(t, keys + ("returns", k)) for k, t in enumerate(c.returns)]
                        if any(t is None for t in types):
                            continue
                        results = tuple(t for t in types if t is not None) if len(types) > 1 else ()
                        returns = types[0]
                    else:
                        returns = self.value_type(c.returns, keys + ("returns",))
                    if returns is None:
                        continue
                elif c.returns is not None:
                    self.diags.error(self.at(*keys, "returns"), "E012", "procedures return nothing; make it a function")
                sym = CallableSym(name, tuple(params), returns, self.key_at(*keys), results)
                self.define(name, sym, keys, section[:-1])

    # ---- bodies --------------------------------------------------------
    def snippet(self, keys: Path) -> Snippet | None:
        node = node_at(self.root, keys)
        if not isinstance(node, YScalar):
            self.diags.error(node.span, "E012", "expected code text here")
            return None
        return Snippet.of(node)

    def expr_at(self, keys: Path, value: object, ctx: Context, locals_: dict[str, LocalVar], want: Ty) -> ir.Expr:
        span = self.at(*keys)
        if isinstance(value, bool) and want.dtype is DType.BOOL:
            return ir.Lit(value=value, ty=BOOL, span=span)
        if plain_number(value) and want.dtype is DType.F32:
            return ir.Lit(value=float(value), ty=F32, span=span)
        snip = self.snippet(keys)
        tree = parse_expr(snip, self.diags) if snip is not None else None
        return self.typed_expr(tree, ctx, locals_, want, span)

    def typed_expr(
        self, tree: ast.Expr | None, ctx: Context, locals_: dict[str, LocalVar], want: Ty, span: Span
    ) -> ir.Expr:
        placeholder = ir.Lit(value=False if want.dtype is DType.BOOL else 0.0, ty=want, span=span)
        if tree is None:
            return placeholder
        bc = BodyChecker(self.env, ctx, locals_)
        try:
            if want.shape:  # a function returning an array
                return bc.shaped(tree, want, ctx.where)
            x = bc.scalar(tree, ctx.where)
            return bc.coerce(x, want, tree.span, ctx.where)
        except Bail:
            return placeholder

    def body_at(self, keys: Path, ctx: Context, locals_: dict[str, LocalVar]) -> tuple[tuple[ir.Stmt, ...], bool]:
        snip = self.snippet(keys)
        tree = parse_body(snip, self.diags) if snip is not None else None
        if tree is None:
            return (), False
        bc = BodyChecker(self.env, ctx, locals_)
        return bc.block(tree), bc.uses_random

    def check_callables(self) -> list[ir.CallableInfo]:
        out = []
        for section in ("functions", "procedures"):
            for name in getattr(self.doc, section):
                sym = self.symbols.get(name)
                if not isinstance(sym, CallableSym):
                    continue
                keys: Path = (section, name, "body")
                locals_ = {pn: LocalVar(ty, False) for pn, ty in sym.params}
                ctx = Context(
                    where=f"function '{name}'" if sym.returns else f"procedure '{name}'",
                    pure=sym.returns is not None,
                    returns=sym.returns,
                    results=sym.results,
                    caller=name,
                )
                body: tuple[ir.Stmt, ...]
                if sym.returns is None:
                    body, rnd = self.body_at(keys, ctx, locals_)
                else:
                    body, rnd = self.function_body(keys, ctx, locals_, sym.returns)
                if rnd:
                    self.env.random_callables.add(name)
                out.append(
                    ir.CallableInfo(
                        name=name,
                        params=sym.params,
                        returns=sym.returns,
                        body=body,
                        random=rnd,
                        span=sym.span,
                        results=sym.results,
                    )
                )
        return out

    def function_body(
        self, keys: Path, ctx: Context, locals_: dict[str, LocalVar], returns: Ty
    ) -> tuple[tuple[ir.Stmt, ...], bool]:
        """A function's body: one expression, or statements ending with `return VALUE`."""
        snip = self.snippet(keys)
        tree = parse_function_body(snip, self.diags) if snip is not None else None
        if tree is None:
            return (), False
        if not isinstance(tree, tuple) and (ctx.results or isinstance(tree, ast.Tuple)):
            tree = (ast.Return(tree, tree.span),)  # `a, b`: several values, checked as `return a, b`
        if not isinstance(tree, tuple):
            x = self.typed_expr(tree, ctx, locals_, returns, self.at(*keys))
            return (ir.ReturnS(value=x, span=x.span),), False
        stmts = tree
        last = stmts[-1] if stmts else None
        bare = isinstance(last, ast.ExprStmt) and not isinstance(last.expr, ast.Call)
        if bare:
            msg = "a function body must end with `return VALUE`; its last line is a value without `return`"
            self.diags.error(self.at(*keys), "E056", msg)
            stmts = stmts[:-1]  # the rest is still checked
        before = len(self.diags.items)
        bc = BodyChecker(self.env, ctx, locals_)
        body = bc.block(stmts)
        if not bare and len(self.diags.items) == before:
            self.check_returns(body, keys)
        return body, bc.uses_random

    def check_returns(self, body: tuple[ir.Stmt, ...], keys: Path) -> None:
        def nested(stmts: tuple[ir.Stmt, ...]) -> ir.Stmt | None:
            for s in stmts:
                if isinstance(s, ir.ReturnS):
                    return s
                subs: list[tuple[ir.Stmt, ...]] = []
                if isinstance(s, ir.IfS):
                    subs = [s.then, s.orelse]
                elif isinstance(s, ir.ForS):
                    subs = [s.body]
                elif isinstance(s, ir.Switch):
                    subs = [b for _, b in s.cases] + [s.default]
                for b in subs:
                    r = nested(b)
                    if r is not None:
                        return r
            return None

        if not body or not isinstance(body[-1], ir.ReturnS):
            self.diags.error(self.at(*keys), "E056", "a function body must end with `return VALUE`")
        bad = nested(body[:-1]) if body else None
        if bad is not None:
            self.diags.error(bad.span, "E056", "only one `return`, as the last statement, is allowed in a function")

    def check_recursion(self) -> None:
        """E055 for each cycle of the call graph, then randomness propagated from callees to callers (an
        iterative depth-first walk, callees first: a call chain may be thousands long)."""
        calls = self.env.calls
        state: dict[str, int] = {}  # 1: on the current path, 2: done
        order: list[str] = []
        for root in sorted(calls):
            if root in state:
                continue
            state[root] = 1
            path = [root]
            todo = [iter(sorted(calls.get(root, ())))]
            while path:
                m = next(todo[-1], None)
                if m is None:
                    state[path[-1]] = 2
                    order.append(path.pop())
                    todo.pop()
                elif state.get(m) == 1:
                    cyc = path[path.index(m) :] + [m]
                    sym = self.symbols[m]
                    assert isinstance(sym, CallableSym)
                    self.diags.error(sym.span, "E055", f"recursion is not allowed: {' -> '.join(cyc)}")
                elif m not in state:
                    state[m] = 1
                    path.append(m)
                    todo.append(iter(sorted(calls.get(m, ()))))
        # randomness flows up the call graph
        for n in order:
            if n not in self.env.random_callables and calls.get(n, set()) & self.env.random_callables:
                self.env.random_callables.add(n)

    def action_param(self, aname: str, pname: str, p: object) -> ir.ActionParamInfo | None:
        keys: Path = ("actions", aname, "params", pname)
        if not self.ident(pname, keys, "action parameter"):
            return None
        if isinstance(p, d.ActionParamDecl):
            if p.type is not None:
                ty = self.scalar_type(p.type, keys + ("type",))
                if ty is None:
                    return None
                if ty.enum is None:
                    if p.range is None:
                        self.diags.error(self.at(*keys), "E052", "an integer action parameter needs a `range`")
                        return None
                members = self.enum_members(ty.enum) if ty.enum else None
                if members is not None:
                    return ir.ActionParamInfo(name=pname, ty=ty, start=0, stop=len(members))
            else:
                ty = I32
            rng = p.range
        else:
            ty, rng = I32, p  # type: ignore[assignment]
        if isinstance(rng, list):
            if len(rng) != 2:
                self.diags.error(self.at(*keys), "E052", "range must be [start, stop]")
                return None
            lo = self._int_or_static(rng[0], keys + ("range", 0))
            hi = self._int_or_static(rng[1], keys + ("range", 1))
        else:
            lo, hi = 0, self._int_or_static(rng, keys if not isinstance(p, d.ActionParamDecl) else keys + ("range",))
        if lo is None or hi is None:
            return None
        if hi <= lo:
            self.diags.error(self.at(*keys), "E052", f"action parameter '{pname}' has an empty range [{lo}, {hi})")
            return None
        return ir.ActionParamInfo(name=pname, ty=ty, start=lo, stop=hi)

    def _int_or_static(self, v: object, keys: Path) -> int | None:
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if isinstance(v, str):
            n = self.static_value(v)
            if n is not None:
                return n
            if v in self.env.broken:
                return None
        self.diags.error(self.at(*keys), "E051", f"range bound {v!r} must be an integer or a static constant")
        return None

    def check_actions(self) -> tuple[list[ir.ActionKind], int]:
        kinds: list[ir.ActionKind] = []
        offset = 0
        seen: set[str] = set()
        for aname, a in self.doc.actions.items():
            keys: Path = ("actions", aname)
            if not self.ident(aname, keys, "action"):
                continue
            if aname in seen:
                continue
            seen.add(aname)
            decl = a or d.ActionDecl()
            params = [self.action_param(aname, pn, pv) for pn, pv in decl.params.items()]
            if any(p is None for p in params):
                continue
            ps = tuple(p for p in params if p is not None)
            locals_ = {p.name: LocalVar(p.ty, False, (p.start, p.stop)) for p in ps}
            legal = self.expr_at(
                keys + ("legal",), decl.legal, Context(where=f"legality of '{aname}'", pure=True), locals_, BOOL
            )
            effect: tuple[ir.Stmt, ...] = ()
            if a is not None and node_at(self.root, keys + ("effect",)) is not node_at(self.root, keys):
                effect, _ = self.body_at(keys + ("effect",), Context(where=f"effect of '{aname}'"), locals_)
            size = math.prod(p.stop - p.start for p in ps)
            if offset + size > MAX_ACTIONS >= offset:  # reported once, at the action that crosses the limit
                self.diags.error(
                    self.key_at(*keys),
                    "E052",
                    f"action '{aname}' makes the action space {offset + size:,} actions; the limit is {MAX_ACTIONS:,}",
                )
            if offset + size > MAX_ACTIONS:
                offset += size
                continue
            kinds.append(
                ir.ActionKind(
                    name=aname,
                    params=ps,
                    legal=legal,
                    effect=effect,
                    offset=offset,
                    size=size,
                    doc=decl.doc,
                    span=self.key_at(*keys),
                )
            )
            offset += size
        return kinds, offset

    def check_box(self) -> ir.BoxAction | None:
        c = self.doc.continuous_action
        if c is None:
            return None
        if self.doc.actions:
            self.diags.error(
                self.key_at("continuous_action"), "E012", "a spec has either `actions` or `continuous_action`"
            )
        shp = self.shape(c.box.shape, ("continuous_action", "box", "shape"))
        if shp is None:
            return None
        ty = Ty(dtype=DType.F32, shape=shp)
        self.symbols["action"] = StorageSym("action", "action", "array", shp, ty, writable=False)
        effect, _ = self.body_at(("continuous_action", "effect"), Context(where="continuous action effect"), {})
        return ir.BoxAction(shape=shp, low=c.box.low, high=c.box.high, effect=effect)

    def report_todo(self) -> None:
        """A draft's unformalized rule text: one W001 warning per item (E031 for a repeated name)."""
        seen: dict[str, int] = {}
        for i, item in enumerate(self.doc.todo):
            if item.name in seen:
                self.diags.error(self.at("todo", i, "name"), "E031", f"duplicate todo item '{item.name}'")
            seen.setdefault(item.name, i)
            text = " ".join(item.text.split())
            text = text if len(text) <= 72 else text[:69] + "..."
            where = f" ({item.target})" if item.target else ""
            self.diags.warning(self.at("todo", i), "W001", f"'{item.name}' is not formalized yet{where}: {text}")

    def check_oracle(self) -> ir.OracleInfo | None:
        """The `oracle:` section: a well-formed target, and every mapped or chance field a state field (E030)."""
        o = self.doc.oracle
        if o is None:
            return None
        if o.target and not re.fullmatch(r"[^:\s]+:[^:\s]+", o.target):
            self.diags.error(
                self.at("oracle", "target"),
                "E012",
                f"oracle target '{o.target}' is not `gymnasium:ENV_ID`, `pgx:ENV_ID` or `MODULE:FACTORY`",
            )
        names = [f.name for f in self.fields]
        for name in [*o.fields, *o.chance]:
            if name in names or name in self.env.broken:
                continue
            keys = ("oracle", "fields", name) if name in o.fields else ("oracle", "chance", o.chance.index(name))
            where = self.key_at(*keys) if name in o.fields else self.at(*keys)
            self.diags.error(where, "E030", f"oracle maps unknown state field '{name}'{did_you_mean(name, names)}")
        for i, name in enumerate(o.chance):
            if name in names and name not in o.fields:
                self.diags.error(
                    self.at("oracle", "chance", i), "E012", f"chance field '{name}' needs a mapping in oracle.fields"
                )
        return ir.OracleInfo(
            target=o.target,
            fields=tuple(o.fields.items()),
            chance=tuple(o.chance),
            observation=o.observation,
            span=self.key_at("oracle"),
        )

    def run(self) -> ir.SpecIR | None:
        doc = self.doc
        self.ident(doc.name, ("name",), "spec", reserved=False, value=True)
        if not re.fullmatch(r"[0-9]+(\.[0-9]+)*((a|b|rc|\.post|\.dev)[0-9]+)?", doc.version):
            self.diags.error(
                self.at("version"), "E012", f"version '{doc.version}' is not a release number like 1.0 or 2.1.3"
            )
        self.report_todo()
        self.declare_types()
        self.settle(doc.types)
        self.declare_params()
        self.settle(doc.params)
        self.declare_constants()
        self.settle(doc.constants)
        self.declare_records()  # after params and constants: record field shapes may use static sizes
        self.settle(doc.types)
        self.declare_tables()
        self.settle(doc.tables)
        self.declare_state()
        self.settle(doc.state)
        self.declare_obs()
        self.settle(doc.observation.fields)
        self.declare_callables()
        self.settle(doc.functions)
        self.settle(doc.procedures)
        callables = self.check_callables()
        self.fields = check_visibility(self, self.fields)
        box = self.check_box()
        if doc.continuous_action is None:
            self.symbols["action"] = action_scope.discrete_symbol()  # the id the outputs read (check.action)
        actions, num_actions = self.check_actions()
        if not actions and box is None and not doc.actions:
            at = self.root.span if "actions" not in doc.model_fields_set else self.key_at("actions")
            self.diags.error(
                Span.point(at.path, at.line, at.col),  # like a missing section: at the document's first key
                "E010",
                "spec needs `actions` (discrete) or `continuous_action`",
            )
        reset, _ = (
            self.body_at(("reset",), Context(where="reset"), {}) if "reset" in doc.model_fields_set else ((), False)
        )
        rules = []
        for i, r in enumerate(doc.rules):
            when = self.expr_at(
                ("rules", i, "when"), r.when, Context(where=f"`when` of rule '{r.name}'", pure=True), {}, BOOL
            )
            body, _ = self.body_at(("rules", i, "body"), Context(where=f"rule '{r.name}'"), {})
            rules.append(ir.RuleInfo(name=r.name, when=when, body=body, doc=r.doc))
        pvar = {"p": LocalVar(I32, False, (0, doc.players))}
        reward = self.expr_at(("reward",), doc.reward, Context(where="reward", pure=True), pvar, F32)
        term = self.expr_at(("terminated",), doc.terminated, Context(where="terminated", pure=True), {}, BOOL)
        trunc = self.expr_at(("truncated",), doc.truncated, Context(where="truncated", pure=True), {}, BOOL)
        obs, _ = self.body_at(("observation", "body"), Context(where="observation", pure=True, obs=True), pvar)
        invariants = []
        for name, text in doc.invariants.items():
            x = self.expr_at(("invariants", name), text, Context(where=f"invariant '{name}'", pure=True), {}, BOOL)
            invariants.append((name, x))
        self.check_recursion()
        rand = self.env.random_callables
        callables = [
            c.model_copy(update={"random": c.name in rand, "body": _mark_loops(c.body, rand)}) for c in callables
        ]
        actions = [a.model_copy(update={"effect": _mark_loops(a.effect, rand)}) for a in actions]
        rules = [r.model_copy(update={"body": _mark_loops(r.body, rand)}) for r in rules]
        reset = _mark_loops(reset, rand)
        if box is not None:
            box = box.model_copy(update={"effect": _mark_loops(box.effect, rand)})
        oracle = self.check_oracle()
        render = check_render(self)
        if self.diags.has_errors:
            return None
        spec = ir.SpecIR(
            name=doc.name,
            doc=doc.doc,
            version=doc.version,
            path=self.path,
            players=doc.players,
            params=tuple(self.params),
            enums=tuple(
                ir.EnumInfo(name=s.name, members=s.members) for s in self.symbols.values() if isinstance(s, EnumSym)
            ),
            consts=tuple(self.consts),
            fields=tuple(self.fields),
            actions=tuple(actions),
            num_actions=num_actions,
            box=box,
            reset=reset,
            rules=tuple(rules),
            reward=reward,
            terminated=term,
            truncated=trunc,
            obs_fields=tuple(self.obs_fields),
            observation=obs,
            invariants=tuple(invariants),
            callables=tuple(callables),
            data_files=tuple(
                sorted(
                    {t.file for t in doc.tables.values() if t.file}
                    | {c.file for c in doc.constants.values() if isinstance(c, d.ConstDecl) and c.file}
                )
            ),
            illegal_action_penalty=doc.illegal_action_penalty,
            oracle=oracle,
            render=render,
        )
        check_budget(spec, self.diags)  # after the IR is complete: the bounds need every body
        return None if self.diags.has_errors else spec


def _mark_loops(stmts: tuple[ir.Stmt, ...], rand: set[str]) -> tuple[ir.Stmt, ...]:
    """Flag loops whose body calls a procedure that draws randomness (so each iteration gets its own key)."""

    def walk(ss: tuple[ir.Stmt, ...]) -> tuple[tuple[ir.Stmt, ...], bool]:
        out: list[ir.Stmt] = []
        any_rand = False
        for s in ss:
            r = False
            if isinstance(s, ir.ForS):
                body, r = walk(s.body)
                r = r or s.random
                s = s.model_copy(update={"body": body, "random": r})
            elif isinstance(s, ir.IfS):
                then, r1 = walk(s.then)
                orelse, r2 = walk(s.orelse)
                s, r = s.model_copy(update={"then": then, "orelse": orelse}), r1 or r2
            elif isinstance(s, ir.Switch):
                cases = []
                for members, body in s.cases:
                    b, rb = walk(body)
                    cases.append((members, b))
                    r = r or rb
                default, rd = walk(s.default)
                s, r = s.model_copy(update={"cases": tuple(cases), "default": default}), r or rd
            elif isinstance(s, ir.CallProc):
                r = s.proc in rand
            out.append(s)
            any_rand = any_rand or r
        return tuple(out), any_rand

    return walk(stmts)[0]


def _zero(ty: Ty) -> bool | int | float:
    if ty.dtype is DType.BOOL:
        return False
    return 0.0 if ty.dtype.is_float else 0


def _infer_type(v: object) -> str:
    if isinstance(v, bool):
        return "bool"
    return "i32" if isinstance(v, int) else "f32"


def check(doc: d.SpecDocument, root: YNode, path: str, diags: Diagnostics) -> ir.SpecIR | None:
    """Check a validated document and build its IR (None if there were errors)."""
    return Checker(doc, root, path, diags).run()


__all__ = ["ast", "check"]
