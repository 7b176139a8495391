"""Typed syntax tree of rule bodies and expressions (what the parser produces)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from envc.diagnostics import Span


@dataclass(frozen=True)
class Num:
    """An int or float literal."""

    value: int | float
    span: Span


@dataclass(frozen=True)
class BoolLit:
    """`true` or `false`."""

    value: bool
    span: Span


@dataclass(frozen=True)
class Name:
    """A bare identifier."""

    id: str
    span: Span


@dataclass(frozen=True)
class Unary:
    """`-x` or `not x`."""

    op: str
    x: Expr
    span: Span


@dataclass(frozen=True)
class Binary:
    """Arithmetic, bitwise, comparison or boolean binary operation."""

    op: str
    a: Expr
    b: Expr
    span: Span


@dataclass(frozen=True)
class IfExpr:
    """`if c then a else b`."""

    cond: Expr
    a: Expr
    b: Expr
    span: Span


@dataclass(frozen=True)
class Index:
    """`base[i, j]`."""

    base: Expr
    indices: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True)
class Attr:
    """`base.name` (record field, table column, enum member, zone count)."""

    base: Expr
    name: str
    span: Span


@dataclass(frozen=True)
class Call:
    """`f(a, b)`."""

    func: str
    args: tuple[Expr, ...]
    span: Span
    func_span: Span


@dataclass(frozen=True)
class GenCall:
    """`sum(expr for i in range(n) if cond)` and the other reductions."""

    func: str
    elt: Expr
    var: str
    iter: Expr
    cond: Expr | None
    span: Span
    func_span: Span


@dataclass(frozen=True)
class ArrayLit:
    """`[a, b, c]` (rows for more dimensions: `[[1, 2], [3, 4]]`)."""

    items: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True)
class Tuple:
    """`a, b` after `return` (or `(a, b)`): the values of a function that returns several."""

    items: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True)
class Checked:
    """An operand the checker has already typed (`x`, an `envc.ir` expression), put back into its expression to
    check the rest of it once (envc/check/values.py); never produced by the parser."""

    x: Any
    span: Span


Expr = Union[Num, BoolLit, Name, Unary, Binary, IfExpr, Index, Attr, Call, GenCall, ArrayLit, Tuple, Checked]


@dataclass(frozen=True)
class Let:
    """`let x[: T] = e`."""

    name: str
    type_name: str | None
    value: Expr
    span: Span


@dataclass(frozen=True)
class Assign:
    """`target op= value`; op is '=' or an augmented operator like '+='."""

    target: Expr
    op: str
    value: Expr
    span: Span


@dataclass(frozen=True)
class ExprStmt:
    """A call used as a statement."""

    expr: Expr
    span: Span


@dataclass(frozen=True)
class Return:
    """`return e`."""

    value: Expr
    span: Span


@dataclass(frozen=True)
class Pass:
    """`pass`."""

    span: Span


@dataclass(frozen=True)
class If:
    """if/elif/else."""

    branches: tuple[tuple[Expr, tuple[Stmt, ...]], ...]
    orelse: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True)
class For:
    """`for v in range(...)`."""

    var: str
    iter: Expr
    body: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True)
class While:
    """`while cond max bound:` (`bound` is None when `max N` is missing, which the checker reports)."""

    cond: Expr
    bound: Expr | None
    body: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True)
class Break:
    """`break`: leave the innermost loop."""

    span: Span


@dataclass(frozen=True)
class Continue:
    """`continue`: go on with the next iteration of the innermost loop."""

    span: Span


@dataclass(frozen=True)
class Case:
    """`case a | b:`; the name `_` matches everything else."""

    names: tuple[str, ...]
    body: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True)
class Match:
    """`match e:` over enum members."""

    subject: Expr
    cases: tuple[Case, ...]
    span: Span


@dataclass(frozen=True)
class LetMany:
    """`let x, v = f(...)`: one new local per value of a function that returns several."""

    names: tuple[str, ...]
    name_spans: tuple[Span, ...]
    value: Expr
    span: Span


@dataclass(frozen=True)
class AssignMany:
    """`x, v = f(...)`: the values of a function that returns several, into existing locals or storage."""

    targets: tuple[Expr, ...]
    value: Expr
    span: Span


Stmt = Union[Let, Assign, ExprStmt, Return, Pass, If, For, Match, While, Break, Continue, LetMany, AssignMany]
