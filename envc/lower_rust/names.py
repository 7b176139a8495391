"""The one door through which spec names and spec text reach the generated Rust crate and its Python package.

Identifiers: `Names` maps every spec name to a Rust identifier, one namespace at a time, knowing every name up
front. A name keeps its spelling when that is a free identifier, else `_` is appended until it is: the result is
never a keyword, never a name the generated code defines or uses (`State`, `apply_action`, `st`, `Some`, ...)
and never another spec name's identifier, whatever the order of the lookups. Locals, functions, constants and
enum types share one namespace (a Rust `let FOO` of a constant `FOO` in scope is a pattern, a local shadows a
function), and none of its identifiers starts with `_`: `_` + identifier is an unused binding and
`__` + word + number a generated temporary (`Emitter.fresh`), so neither can meet a spec name.

Text: `rust_str` is the only way spec text becomes a Rust string literal, `comment_lines`/`comment_text` the
only way it becomes a comment, `py_literal`/`py_doc` a Python literal or docstring text, `toml_value` a TOML
value.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Iterator

from envc import ir

# Strict, reserved (up to the 2024 edition) and weak keywords: none can be a plain identifier, and `self`,
# `Self`, `crate`, `super` and `_` cannot even be raw ones (`r#...`).
KEYWORDS = frozenset(
    "as break const continue crate else enum extern false fn for if impl in let loop match mod move mut pub ref "
    "return self Self static struct super trait true type unsafe use where while async await dyn "
    "abstract become box do final macro override priv typeof unsized virtual yield try gen "
    "macro_rules union raw safe _".split()
)
# What every Rust module sees: the std prelude (2015 to 2024 editions), the extern crates and the primitive types.
PRELUDE = frozenset(
    "Copy Send Sized Sync Unpin Drop Fn FnMut FnOnce AsyncFn AsyncFnMut AsyncFnOnce drop Box ToOwned Clone "
    "PartialEq PartialOrd Eq Ord AsRef AsMut Into From Default Iterator Extend IntoIterator DoubleEndedIterator "
    "ExactSizeIterator Option Some None Result Ok Err String ToString Vec TryFrom TryInto FromIterator Future "
    "IntoFuture size_of size_of_val align_of align_of_val Debug Hash std core alloc "
    "bool char str i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f16 f32 f64 f128".split()
)
# The items of env.rs and the names its generated functions bind around spec code. `avx2` and `baseline` are
# the inner functions of `rt::simd_dispatch!`.
GENERATED = frozenset(
    "rt ops rng zone Int Key LANES NUM_PLAYERS NUM_ACTIONS State Params Obs ObsRows Lanes Spec main "
    "fresh reset reset_body apply_rules apply_action is_legal legal_mask reward is_terminated is_truncated observe "
    "invariants effect_box lane_kernel lane_kernel_body load_lane store_lane apply_lanes unpack_lane step_pack "
    "pack_rows pack_rows_body avx2 baseline "
    "st prm key obs mask ok id action ln l ids rows".split()
)
VALUE_RESERVED = KEYWORDS | PRELUDE | GENERATED
# Fields of `State`, `Params`, `Obs`, `Lanes` and `ObsRows`, and associated constants of enum types: only
# keywords are out (a field may be called `new` or `State`).
MEMBER_RESERVED = KEYWORDS

_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _base(name: str, style: str) -> str:
    """`name` as an identifier-shaped word: record and zone parts joined with `__` (a declared name never
    holds `__`), anything else that cannot be in an identifier replaced by `_`, then styled."""
    s = _NOT_IDENT.sub("_", name.replace(".", "__")) or "n"
    if s[0].isdigit():
        s = "n" + s
    if style == "upper":
        s = s.upper()
    elif style == "camel":
        s = s[:1].upper() + s[1:]
    return s


class Namespace:
    """Injective name -> identifier allocation within one Rust namespace."""

    def __init__(self, reserved: Iterable[str] = (), no_underscore: bool = False):
        self.reserved = frozenset(reserved)
        self.no_underscore = no_underscore  # identifiers must not start with `_` (the value namespace)
        self.ids: dict[tuple[str, str], str] = {}
        self.taken: set[str] = set()

    def _free(self, ident: str) -> bool:
        return ident not in self.reserved and ident not in self.taken

    def _start(self, name: str, style: str) -> tuple[str, bool]:
        """The first candidate for `name` and whether it is the name as written (styled)."""
        base = _base(name, style)
        natural = _IDENT.fullmatch(name) is not None  # a record or zone part (`a.b`) is never as written
        if self.no_underscore and base.startswith("_"):
            base, natural = "u" + base, False
        return base, natural

    def claim(self, ident: str) -> None:
        """Keep `ident` for the generated code."""
        self.taken.add(ident)

    def allocate(self, entries: Iterable[tuple[str, str, str]]) -> None:
        """Allocate (kind, name, style) entries: first every name whose styled spelling is free, in order,
        then the rest, each with `_` appended until free."""
        todo = []
        for kind, name, style in entries:
            if (kind, name) in self.ids:
                continue
            base, natural = self._start(name, style)
            if natural and self._free(base):
                self.ids[(kind, name)] = base
                self.taken.add(base)
            else:
                todo.append((kind, name, base))
        for kind, name, base in todo:
            if (kind, name) in self.ids:
                continue
            ident = base
            while not self._free(ident):
                ident += "_"
            self.ids[(kind, name)] = ident
            self.taken.add(ident)

    def get(self, kind: str, name: str, style: str = "keep") -> str:
        """The identifier of `name` (allocated now if it was not known up front)."""
        if (kind, name) not in self.ids:
            self.allocate([(kind, name, style)])
        return self.ids[(kind, name)]


def spec_locals(spec: ir.SpecIR) -> list[str]:
    """Every local name of the spec (lets, loop and reduction variables, action, function and procedure
    parameters, `p`), in a fixed order."""
    seen: dict[str, None] = {"p": None}

    def visit(node: object) -> None:
        if isinstance(node, (tuple, list)):
            for x in node:
                visit(x)
            return
        if isinstance(node, ir.Local):
            seen[node.name] = None
        elif isinstance(node, ir.LetS):
            seen[node.name] = None
        elif isinstance(node, ir.ForS):
            seen[node.var] = None
        elif isinstance(node, ir.Reduce):
            seen[node.var] = None
        elif isinstance(node, ir.Target) and node.space == "local":
            seen[node.name] = None
        if isinstance(node, (ir._Expr, ir._Stmt, ir.ZoneRef, ir.Target)):
            for k in type(node).model_fields:
                if k not in ("ty", "span"):
                    visit(getattr(node, k))

    for a in spec.actions:
        for q in a.params:
            seen[q.name] = None
        visit((a.legal, a.effect))
    for c in spec.callables:
        for n, _ in c.params:
            seen[n] = None
        visit(c.body)
    visit(spec.reset)
    if spec.box is not None:
        visit(spec.box.effect)
    for r in spec.rules:
        visit((r.when, r.body))
    visit((spec.reward, spec.terminated, spec.truncated, spec.observation))
    visit(tuple(x for _, x in spec.invariants))
    return list(seen)


class Names:
    """The Rust identifiers of every spec name, allocated up front (see the module docstring).

    Namespaces: `value` (locals, functions, constants, enum types), `field` (`State` and `Lanes` fields),
    `param` (`Params` fields), `obs` (`Obs` and `ObsRows` fields), one per enum for its members, and `kind`
    (the action kinds, named only as the suffix of their `effect_<kind>` and `legal_<kind>` functions).
    """

    def __init__(self, spec: ir.SpecIR | None = None):
        self.value = Namespace(VALUE_RESERVED, no_underscore=True)
        self.fields = Namespace(MEMBER_RESERVED)
        self.params = Namespace(MEMBER_RESERVED)
        self.obs_ns = Namespace(MEMBER_RESERVED)
        # a kind's functions must not be generated ones (a kind `mask` would define `legal_mask` twice)
        self.kinds = Namespace(
            n.removeprefix(pre) for n in VALUE_RESERVED for pre in ("effect_", "legal_") if n.startswith(pre)
        )
        self.members: dict[str, Namespace] = {}
        if spec is None:
            return
        self.kinds.allocate(("kind", a.name, "keep") for a in spec.actions)
        for a in spec.actions:
            self.value.claim(f"effect_{self.kind(a.name)}")
            self.value.claim(f"legal_{self.kind(a.name)}")
        self.value.allocate(
            [
                *(("fn", c.name, "keep") for c in spec.callables),
                *(("const", c.name, "upper") for c in spec.consts),
                *(("enum", e.name, "camel") for e in spec.enums),
                *(("local", n, "keep") for n in spec_locals(spec)),
            ]
        )
        self.fields.allocate(("field", f.name, "keep") for f in spec.fields)
        self.params.allocate(("param", p.name, "keep") for p in spec.params)
        self.obs_ns.allocate(("obs", o.name, "keep") for o in spec.obs_fields)
        for e in spec.enums:
            self.enum_members(e.name).allocate(("member", m, "upper") for m in e.members)

    def enum_members(self, enum: str) -> Namespace:
        return self.members.setdefault(enum, Namespace(MEMBER_RESERVED))

    def local(self, name: str) -> str:
        """A local (let, loop variable, parameter)."""
        return self.value.get("local", name)

    def fn(self, name: str) -> str:
        """A spec function or procedure."""
        return self.value.get("fn", name)

    def const(self, name: str) -> str:
        """A constant (or table column): a `const` or `static` item."""
        return self.value.get("const", name, "upper")

    def enum(self, name: str) -> str:
        """An enum type: a unit struct holding its members as associated constants."""
        return self.value.get("enum", name, "camel")

    def member(self, enum: str, member: str) -> str:
        """An enum member (an associated constant of the enum's struct)."""
        return self.enum_members(enum).get("member", member, "upper")

    def field(self, name: str) -> str:
        """A storage array of the state (`State` field)."""
        return self.fields.get("field", name)

    def param(self, name: str) -> str:
        """A runtime parameter (`Params` field)."""
        return self.params.get("param", name)

    def obs(self, name: str) -> str:
        """An observation part (`Obs` field)."""
        return self.obs_ns.get("obs", name)

    def kind(self, name: str) -> str:
        """An action kind, as the suffix of `effect_<kind>` / `legal_<kind>`."""
        return self.kinds.get("kind", name)

    def get(self, space: str, name: str, style: str = "keep") -> str:
        """The older one-call form: `space` is local, item (function; `upper` constant; `camel` enum), field,
        param, obs, kind or `enum:<Enum>` (a member)."""
        if space == "local":
            return self.local(name)
        if space == "item":
            return {"upper": self.const, "camel": self.enum}.get(style, self.fn)(name)
        if space.startswith("enum:"):
            return self.member(space.removeprefix("enum:"), name)
        return {"field": self.field, "param": self.param, "obs": self.obs, "kind": self.kind}[space](name)


# ---- text -------------------------------------------------------------------------------------------------


def _scalar(ch: str) -> str:
    """`ch`, or U+FFFD for a lone surrogate (not a Unicode scalar value, so no Rust or TOML string holds it)."""
    return "\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch


def rust_str(s: str) -> str:
    """A Rust string literal of `s`: printable ASCII as is (`"` and `\\` escaped), everything else `\\u{..}`."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append(f"\\u{{{ord(_scalar(ch)):x}}}")
    return '"' + "".join(out) + '"'


def comment_text(text: str) -> str:
    """`text` fit for the inside of one comment line: control, format (bidi), separator, surrogate, private and
    unassigned characters shown as `\\u{..}`, and no `*/` or `/*` left to end or open a block comment."""
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        out.append(f"\\u{{{ord(ch):x}}}" if cat[0] == "C" or cat in ("Zl", "Zp") else ch)
    s = "".join(out)
    while "*/" in s or "/*" in s:
        s = s.replace("*/", "* /").replace("/*", "/ *")
    return s


def comment_lines(text: str, prefix: str = "// ") -> list[str]:
    """`text` as comment lines starting with `prefix` (`// `, `/// `, `//! `, `# `): one per line of `text`,
    split at every line break Python, Rust or an editor honours (`\\n`, `\\r`, `\\r\\n`, `\\v`, `\\f`,
    U+001C..U+001E, U+0085, U+2028, U+2029), each passed through `comment_text`."""
    return [(prefix + comment_text(line)).rstrip() for line in text.strip().splitlines() or [""]]


def py_literal(v: object) -> str:
    """A Python literal of `v` (str, bool, int, float, None, or tuples and lists of them); strings are ASCII."""
    if isinstance(v, str):
        return ascii(v)
    if isinstance(v, float) and not math.isfinite(v):
        return f"float({str(v)!a})"
    if isinstance(v, tuple):
        inner = ", ".join(py_literal(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(py_literal(x) for x in v) + "]"
    if v is None or isinstance(v, (bool, int, float)):
        return repr(v)
    raise TypeError(f"no Python literal for {type(v).__name__}")


def py_doc(text: str) -> str:
    """`text` fit for the inside of a `\"\"\"` docstring (ASCII, every quote and backslash escaped)."""
    return ascii(text)[1:-1].replace('"', '\\"')


def _toml_chars(s: str) -> Iterator[str]:
    for ch in s:
        if ch in '"\\':
            yield "\\" + ch
        elif " " <= ch <= "~":
            yield ch
        else:
            c = ord(_scalar(ch))
            yield f"\\u{c:04X}" if c <= 0xFFFF else f"\\U{c:08X}"


def toml_value(v: object) -> str:
    """A TOML value of `v`: a basic string (everything outside printable ASCII escaped), a bool, a number, or an
    array of these."""
    if isinstance(v, str):
        return '"' + "".join(_toml_chars(v)) + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML value for {type(v).__name__}")
