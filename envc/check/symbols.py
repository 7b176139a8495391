"""Symbols in scope while checking rule bodies."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

from envc.check.tables import show
from envc.diagnostics import Span
from envc.ir import DType, Ty

KEYWORDS = {
    "let",
    "if",
    "elif",
    "else",
    "then",
    "for",
    "in",
    "match",
    "case",
    "return",
    "pass",
    "while",
    "break",
    "continue",
    "and",
    "or",
    "not",
    "true",
    "false",
}
DTYPES = {"bool", "i8", "i16", "i32", "u32", "f32", "f64"}
# Enums of up to I8_ENUM_MEMBERS members store their member index as i8, larger ones (up to MAX_ENUM_MEMBERS) as i16.
I8_ENUM_MEMBERS, MAX_ENUM_MEMBERS = 127, 32_767
RESERVED = (
    KEYWORDS
    | DTYPES
    | {
        "current_player",
        "step_count",
        "num_players",
        "p",
        "action",
        "range",
        "len",
        "count",
        "int",
        "float",
        "self",
        "None",
        "True",
        "False",
        "import",
        "class",
        "def",
        "lambda",
        "while",
        "fn",
        "struct",
        "impl",
        "mod",
        "use",
        "type",
        "ref",
        "mut",
        "state",
        "params",
        "key",
        "jnp",
        "jax",
        "np",
        "lax",
    }
)

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_NAME_LENGTH = 64


def name_problem(name: str, what: str, reserved: bool = True) -> str | None:
    """Why `name` cannot name a `what` (a message), or None if it can. The one rule for every declared name: an
    identifier of at most MAX_NAME_LENGTH characters, not `_` alone, without `__` (generated code joins names with
    it: a zone `x` is stored as `x__count`), and, where `reserved`, not a reserved word."""
    shown = show(name)
    if IDENT.fullmatch(name) is None:
        hint = " (a folded `>` or `|` value ends with a line break; write the name on one line)" * ("\n" in name)
        return f"{what} name {shown} is not an identifier ([A-Za-z_][A-Za-z0-9_]*){hint}"
    if len(name) > MAX_NAME_LENGTH:
        return f"{what} name {shown} is {len(name)} characters long; names have at most {MAX_NAME_LENGTH}"
    if name == "_":
        return f"{what} name '_' is reserved (it is the wildcard of `case _:`); use a descriptive name"
    if "__" in name:
        return f"{what} name {shown} contains '__', which is reserved for generated code; use a single '_'"
    if reserved and name in RESERVED:
        return f"{what} name {shown} is reserved"
    return None


@dataclass(frozen=True)
class StorageSym:
    """A group of storage arrays reachable from one name: plain array, record (fields), zone or table."""

    name: str
    space: str  # state | const | obs | action
    kind: str  # array | record | zone | table
    outer: tuple[int, ...]  # leading dims shared by all parts
    ty: Ty | None = None  # array: full type; zone: element type
    parts: dict[str, Ty] = field(default_factory=dict)  # record fields / table columns: type of one element
    capacity: int = 0
    writable: bool = True
    span: Span | None = None
    doc: str = ""


@dataclass(frozen=True)
class ParamSym:
    """A runtime parameter (static params are folded into constants)."""

    name: str
    ty: Ty
    doc: str = ""


@dataclass(frozen=True)
class ConstSym:
    """A compile-time scalar (static params, scalar constants, num_players)."""

    name: str
    ty: Ty
    value: Union[bool, int, float]
    doc: str = ""


@dataclass(frozen=True)
class EnumSym:
    """An enum type name (members are reached as `Enum.member`)."""

    name: str
    members: tuple[str, ...]

    @property
    def ty(self) -> Ty:
        """The type of its values: member indices stored as i8, or as i16 past I8_ENUM_MEMBERS members."""
        return Ty(dtype=DType.I8 if len(self.members) <= I8_ENUM_MEMBERS else DType.I16, enum=self.name)


@dataclass(frozen=True)
class CallableSym:
    """A user function or procedure signature."""

    name: str
    params: tuple[tuple[str, Ty], ...]
    returns: Ty | None
    span: Span
    results: tuple[Ty, ...] = ()  # a function that returns several values: their types (`returns` is the first)


Symbol = Union[StorageSym, ParamSym, ConstSym, EnumSym, CallableSym]


@dataclass
class LocalVar:
    """A local in a body: its type, static value range if known, and whether it may be reassigned."""

    ty: Ty
    mutable: bool
    range: tuple[int, int] | None = None  # [lo, hi) for loop vars and action params


@dataclass
class Context:
    """What a body may do."""

    where: str
    pure: bool = False  # no state writes, no randomness, no procedure calls
    obs: bool = False  # observation fields are writable
    returns: Ty | None = None  # inside a function
    results: tuple[Ty, ...] = ()  # inside a function that returns several values: their types
    caller: str | None = None  # callable being checked (call graph)
