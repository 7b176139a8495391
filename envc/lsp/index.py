"""Declarations and code sites of one spec, read from its YAML node tree (so a spec with errors still has them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from envc.diagnostics import Span
from envc.load import YMap, YNode, YScalar, YSeq, to_python

Mode = Literal["body", "expr", "function"]


@dataclass
class Decl:
    """A declared name: where, what (one line of code-like text) and its doc."""

    name: str
    kind: str  # param const enum record table state zone obs function procedure action member column field local
    span: Span | None
    signature: str
    doc: str = ""
    members: dict[str, Decl] = field(default_factory=dict)  # enum members, table columns, record fields, ...
    type_name: str | None = None  # a state field's declared type (its record type, for `.part`)


@dataclass
class CodeSite:
    """A YAML scalar holding rule code, with what is in scope there besides the globals."""

    node: YScalar
    mode: Mode
    where: str
    locals: dict[str, Decl] = field(default_factory=dict)
    pure: bool = False  # no procedure calls, no randomness
    obs: bool = False  # observation fields are in scope
    action: bool = False  # `action` is in scope: the continuous action's effect and the outputs (reward, ends, obs)


@dataclass
class Index:
    """Everything named in a spec, and where its code is."""

    globals: dict[str, Decl] = field(default_factory=dict)
    records: dict[str, Decl] = field(default_factory=dict)
    actions: dict[str, Decl] = field(default_factory=dict)
    obs: dict[str, Decl] = field(default_factory=dict)
    sites: list[CodeSite] = field(default_factory=list)
    keys: list[tuple[YScalar, tuple[object, ...]]] = field(default_factory=list)  # mapping keys (<= 4 deep), paths
    root: YNode | None = None

    def site_at(self, line: int, col: int) -> CodeSite | None:
        """The code site containing file position line:col (1-based), if any."""
        for s in self.sites:
            if _inside(s.node.span, line, col):
                return s
        return None


def _inside(span: Span, line: int, col: int) -> bool:
    if span.end_col == 1 and span.end_line > span.line:  # a block scalar ends at column 1 of the next line
        return span.line <= line < span.end_line or (line, col) == (span.line, span.col)
    return (span.line, span.col) <= (line, col) <= (span.end_line, span.end_col)


def _str(v: object) -> str:
    if v is ...:
        return "[...]"
    if isinstance(v, bool):
        return str(v).lower()
    if v is None:
        return "~"
    if isinstance(v, list):
        return "[" + ", ".join(_str(x) for x in v) + "]"
    return str(v)


def _shape(v: object) -> str:
    return f"[{', '.join(_str(x) for x in v)}]" if isinstance(v, list) and v else ""


def _doc(v: object) -> str:
    if isinstance(v, dict):
        doc = v.get("doc")
        return doc.strip() if isinstance(doc, str) else ""
    return ""


def _shallow(node: YNode) -> object:
    """Plain data of a mapping's scalar entries (nested lists and mappings: only the small ones), or of a scalar."""
    if not isinstance(node, YMap):
        return to_python(node) if isinstance(node, YScalar) else None
    out: dict[str, object] = {}
    for k, v in node.items:
        if isinstance(v, YScalar):
            out[_name(k)] = v.value
        elif isinstance(v, YSeq) and len(v.items) <= 8 and all(isinstance(x, YScalar) for x in v.items):
            out[_name(k)] = to_python(v)
        else:
            out[_name(k)] = ...  # present, not converted
    return out


def _items(node: YNode | None) -> list[tuple[YScalar, YNode]]:
    return list(node.items) if isinstance(node, YMap) else []


def _name(key: YScalar) -> str:
    return key.value if isinstance(key.value, str) else key.text


def _infer(v: object) -> str:
    if isinstance(v, bool):
        return "bool"
    return "i32" if isinstance(v, int) else "f32"


class _Builder:
    def __init__(self, root: YNode):
        self.ix = Index(root=root)
        self.root = root

    def add(self, decl: Decl) -> None:
        self.ix.globals.setdefault(decl.name, decl)

    def build(self) -> Index:
        root = self.root
        if not isinstance(root, YMap):
            return self.ix
        self.collect_keys(root, ())
        sections = {_name(k): v for k, v in root.items}
        players = sections.get("players")
        nplayers = players.value if isinstance(players, YScalar) and isinstance(players.value, int) else 1
        self.add(Decl("num_players", "const", None, f"const num_players: i32 = {nplayers}", "The number of players."))
        for k, v in _items(sections.get("params")):
            self.param(k, v)
        for k, v in _items(sections.get("types")):
            self.type_decl(k, v)
        for k, v in _items(sections.get("constants")):
            self.constant(k, v)
        for k, v in _items(sections.get("tables")):
            self.table(k, v)
        for k, v in _items(sections.get("state")):
            self.state(k, v)
        obs = sections.get("observation")
        for k, v in _items(obs.get("fields") if isinstance(obs, YMap) else None):
            raw = to_python(v)
            ty = raw.get("type") if isinstance(raw, dict) else raw
            sig = f"observation {_name(k)}: {_str(ty)}{_shape(raw.get('shape') if isinstance(raw, dict) else None)}"
            self.ix.obs[_name(k)] = Decl(_name(k), "obs", k.span, sig, _doc(raw))
        for section in ("functions", "procedures"):
            for k, v in _items(sections.get(section)):
                self.callable(section, k, v)
        for k, v in _items(sections.get("actions")):
            self.action(k, v)
        self.code_sites(sections)
        return self.ix

    def collect_keys(self, node: YNode, path: tuple[object, ...]) -> None:
        if len(path) > 3:  # declarations are at most three keys deep (tables.T.columns.C); rows are data
            return
        if isinstance(node, YMap):
            for k, v in node.items:
                self.ix.keys.append((k, path))
                self.collect_keys(v, (*path, _name(k)))
        elif isinstance(node, YSeq):
            for i, item in enumerate(node.items):
                self.collect_keys(item, (*path, i))

    def param(self, k: YScalar, v: YNode) -> None:
        raw = to_python(v)
        name = _name(k)
        if isinstance(raw, dict):
            default = raw.get("default")
            ty = raw.get("type") or _infer(default)
            static = " (static)" if raw.get("static") is True else ""
            sig = f"param {name}: {_str(ty)} = {_str(default)}{static}"
        else:
            sig = f"param {name}: {_infer(raw)} = {_str(raw)}"
        self.add(Decl(name, "param", k.span, sig, _doc(raw)))

    def type_decl(self, k: YScalar, v: YNode) -> None:
        name = _name(k)
        raw = to_python(v)
        doc = _doc(raw)
        if isinstance(v, YMap) and isinstance(v.get("enum"), YSeq):
            seq = v.get("enum")
            assert isinstance(seq, YSeq)
            members: dict[str, Decl] = {}
            for i, item in enumerate(seq.items):
                if isinstance(item, YScalar):
                    m = item.text or _str(item.value)
                    members.setdefault(m, Decl(m, "member", item.span, f"{name}.{m}  (member {i} of enum {name})", doc))
            sig = f"enum {name}: {' | '.join(members)}"
            self.add(Decl(name, "enum", k.span, sig, doc, members))
        elif isinstance(v, YMap) and isinstance(v.get("record"), YMap):
            fields: dict[str, Decl] = {}
            for fk, fv in _items(v.get("record")):
                fraw = to_python(fv)
                fty = fraw.get("type") if isinstance(fraw, dict) else fraw
                fshape = _shape(fraw.get("shape")) if isinstance(fraw, dict) else ""
                fname = _name(fk)
                fields[fname] = Decl(fname, "field", fk.span, f"{name}.{fname}: {_str(fty)}{fshape}", _doc(fraw))
            body = "\n".join(f"  {d.signature.split('.', 1)[1]}" for d in fields.values())
            self.ix.records.setdefault(name, Decl(name, "record", k.span, f"record {name}:\n{body}", doc, fields))

    def constant(self, k: YScalar, v: YNode) -> None:
        name = _name(k)
        raw = _shallow(v)  # an inline array value can be large: it is not converted
        if isinstance(raw, dict):
            shape = _shape(raw.get("shape"))
            sig = f"const {name}: {_str(raw.get('type'))}{shape}"
            if raw.get("file") is not None:
                sig += f"  (from {_str(raw.get('file'))})"
            elif not shape and raw.get("value") is not None:
                sig += f" = {_str(raw.get('value'))}"
        else:
            sig = f"const {name}: {_infer(raw)} = {_str(raw)}"
        self.add(Decl(name, "const", k.span, sig, _doc(raw)))

    def table(self, k: YScalar, v: YNode) -> None:
        name = _name(k)
        raw = _shallow(v)  # the rows are only counted
        columns: dict[str, Decl] = {}
        cols = v.get("columns") if isinstance(v, YMap) else None
        for ck, cv in _items(cols):
            craw = to_python(cv)
            cname = _name(ck)
            cty = craw.get("type") if isinstance(craw, dict) else craw
            sig = f"{name}[i].{cname}: {_str(cty)}{_shape(craw.get('shape')) if isinstance(craw, dict) else ''}"
            if isinstance(craw, dict) and craw.get("default") is not None:
                sig += f"  (default {_str(craw.get('default'))})"
            columns[cname] = Decl(cname, "column", ck.span, sig, _doc(craw))
        source = ""
        rows = v.get("rows") if isinstance(v, YMap) else None
        if isinstance(rows, YSeq):
            source = f"{len(rows.items)} rows"
        elif isinstance(raw, dict) and raw.get("file") is not None:
            source = f"rows from {_str(raw.get('file'))}"
        listing = "\n".join(f"  {c.signature.split('.', 1)[1]}" for c in columns.values())
        sig = f"table {name}{'  (' + source + ')' if source else ''}:\n{listing}"
        self.add(Decl(name, "table", k.span, sig, _doc(raw), columns))

    def state(self, k: YScalar, v: YNode) -> None:
        name = _name(k)
        raw = to_python(v)
        if isinstance(raw, dict) and "zone" in raw:
            parts = [f"zone {name}: {_str(raw.get('zone'))}{_shape(raw.get('shape'))}"]
            parts.append(f"capacity {_str(raw.get('capacity'))}")
            if raw.get("per_player") is True:
                parts.append("per player")
            if raw.get("visible", "all") != "all":
                parts.append(f"visible: {_str(raw.get('visible'))}")
            count = Decl("count", "field", k.span, f"{name}.count: i32", "Number of elements in the zone.")
            self.add(Decl(name, "zone", k.span, ", ".join(parts), _doc(raw), {"count": count}))
            return
        ty = raw.get("type") if isinstance(raw, dict) else raw
        parts = [f"state {name}: {_str(ty)}{_shape(raw.get('shape')) if isinstance(raw, dict) else ''}"]
        if isinstance(raw, dict):
            if raw.get("per_player") is True:
                parts.append("per player")
            if raw.get("init") is not None:
                parts.append(f"init {_str(raw.get('init'))}")
            if raw.get("visible", "all") != "all":
                parts.append(f"visible: {_str(raw.get('visible'))}")
        type_name = ty if isinstance(ty, str) else None
        self.add(Decl(name, "state", k.span, ", ".join(parts), _doc(raw), type_name=type_name))

    def callable(self, section: str, k: YScalar, v: YNode) -> None:
        name = _name(k)
        raw = to_python(v)
        params: dict[str, Decl] = {}
        pnode = v.get("params") if isinstance(v, YMap) else None
        for pk, pv in _items(pnode):
            pname = _name(pk)
            pty = _str(to_python(pv))
            params[pname] = Decl(pname, "local", pk.span, f"param {pname}: {pty}  (of {section[:-1]} {name})")
        args = ", ".join(p.signature.split(" ", 1)[1].split("  ")[0] for p in params.values())
        kind = section[:-1]
        sig = f"{kind} {name}({args})"
        if kind == "function" and isinstance(raw, dict) and raw.get("returns") is not None:
            sig += f" -> {_str(raw.get('returns'))}"
        self.add(Decl(name, kind, k.span, sig, _doc(raw), params))

    def action(self, k: YScalar, v: YNode) -> None:
        name = _name(k)
        raw = to_python(v)
        params: dict[str, Decl] = {}
        for pk, pv in _items(v.get("params") if isinstance(v, YMap) else None):
            pname = _name(pk)
            praw = to_python(pv)
            if isinstance(praw, dict):
                rng = praw.get("range")
                ty = _str(praw.get("type") or "i32")
                if rng is None:
                    what = f"{ty} (every member)"
                elif isinstance(rng, list) and len(rng) == 2:
                    what = f"{ty} in {_str(rng[0])} .. {_str(rng[1])} - 1"
                else:
                    what = f"{ty} in 0 .. {_str(rng)} - 1"
            else:
                what = f"i32 in 0 .. {_str(praw)} - 1"
            params[pname] = Decl(pname, "local", pk.span, f"action param {pname}: {what}", _doc(praw))
        args = ", ".join(params)
        self.ix.actions[name] = Decl(name, "action", k.span, f"action {name}({args})", _doc(raw), params)

    # ---- code sites -----------------------------------------------------
    def site(self, node: YNode | None, mode: Mode, where: str, **kw: object) -> None:
        if isinstance(node, YScalar) and isinstance(node.value, str):
            self.ix.sites.append(CodeSite(node, mode, where, **kw))  # type: ignore[arg-type]

    def code_sites(self, sections: dict[str, YNode]) -> None:
        p = {"p": Decl("p", "local", None, "p: i32", "The player index (0 .. players-1) this is evaluated for.")}
        for section in ("functions", "procedures"):
            for k, v in _items(sections.get(section)):
                decl = self.ix.globals.get(_name(k))
                params = decl.members if decl is not None and decl.span == k.span else {}
                if isinstance(v, YMap):
                    fn = section == "functions"
                    mode: Mode = "function" if fn else "body"
                    self.site(v.get("body"), mode, f"{section[:-1]} '{_name(k)}'", locals=params, pure=fn)
        cont = sections.get("continuous_action")
        if isinstance(cont, YMap):
            self.site(cont.get("effect"), "body", "continuous action effect", action=True)
        for k, v in _items(sections.get("actions")):
            if isinstance(v, YMap):
                params = self.ix.actions[_name(k)].members if _name(k) in self.ix.actions else {}
                self.site(v.get("legal"), "expr", f"legality of '{_name(k)}'", locals=params, pure=True)
                self.site(v.get("effect"), "body", f"effect of '{_name(k)}'", locals=params)
        self.site(sections.get("reset"), "body", "reset")
        rules = sections.get("rules")
        if isinstance(rules, YSeq):
            for item in rules.items:
                if isinstance(item, YMap):
                    self.site(item.get("when"), "expr", "rule `when`", pure=True)
                    self.site(item.get("body"), "body", "rule body")
        self.site(sections.get("reward"), "expr", "reward", locals=p, pure=True, action=True)
        for key in ("terminated", "truncated"):
            self.site(sections.get(key), "expr", key, pure=True, action=True)
        obs = sections.get("observation")
        if isinstance(obs, YMap):
            self.site(obs.get("body"), "body", "observation", locals=p, pure=True, obs=True, action=True)
        for k, v in _items(sections.get("invariants")):
            self.site(v, "expr", f"invariant '{_name(k)}'", pure=True)
        self.visibility_sites(sections.get("state"), p)

    def visibility_sites(self, state: YNode | None, p: dict[str, Decl]) -> None:
        """`visible: EXPR` and `visible: {element: [...], when: EXPR}` rules (section 15) are code too."""
        for k, v in _items(state):
            vis = v.get("visible") if isinstance(v, YMap) else None
            where = f"the visibility of '{_name(k)}'"
            if isinstance(vis, YScalar) and vis.value not in ("all", "owner", "none"):
                self.site(vis, "expr", where, locals=p, pure=True)
            elif isinstance(vis, YMap):
                names = vis.get("element")
                local = dict(p)
                for item in names.items if isinstance(names, YSeq) else []:
                    if isinstance(item, YScalar) and isinstance(item.value, str):
                        local[item.value] = Decl(item.value, "local", item.span, f"{item.value}: i32", "Element index.")
                self.site(vis.get("when"), "expr", where, locals=local, pure=True)


def build_index(root: YNode | None) -> Index:
    """The index of a spec's YAML tree (empty for None or a tree that is not a mapping)."""
    if root is None:
        return Index()
    return _Builder(root).build()
