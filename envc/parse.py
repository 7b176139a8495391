"""Pass 2: parse rule bodies and expressions (grammar/envc.lark) into the typed AST, with file positions."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.indenter import DedentError, Indenter

from envc import ast
from envc.diagnostics import Diagnostics, Span
from envc.load import YScalar

# envc/grammar links to the top-level grammar/ folder; wheels carry a copy.
GRAMMAR_PATH = Path(__file__).resolve().parent / "grammar" / "envc.lark"


class _Indenter(Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB"]
    CLOSE_PAREN_types = ["RPAR", "RSQB"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8


@lru_cache(maxsize=1)
def parser() -> Lark:
    """The LALR parser (built once)."""
    return Lark(
        GRAMMAR_PATH.read_text(),
        parser="lalr",
        postlex=_Indenter(),
        start=["body", "expr_only"],
        propagate_positions=True,
        maybe_placeholders=True,
    )


@dataclass(frozen=True)
class Snippet:
    """Source text of one YAML scalar and how its positions map back into the file."""

    text: str
    path: str
    line: int  # file line of snippet line 1
    col: int  # file column of snippet column 1 on its first line
    indent: int  # file column offset of later lines (block scalars)
    block: bool
    shift: int = 0  # columns added in front of line 1 (the parenthesis around a multi-line expression)

    @staticmethod
    def of(node: YScalar) -> Snippet:
        """The snippet of a YAML scalar node."""
        text = node.value if isinstance(node.value, str) else node.text
        if node.style == ">" and node.source is not None:
            return Snippet(node.source, node.span.path, node.span.line + 1, node.indent + 1, node.indent, True)
        if node.source is not None:  # multi-line plain scalar: keep the lines as written
            return Snippet(node.source, node.span.path, node.span.line, node.span.col, 0, False)
        if node.style in ("|", ">"):
            return Snippet(text, node.span.path, node.span.line + 1, node.indent + 1, node.indent, True)
        quote = 1 if node.style in ("'", '"') else 0
        return Snippet(text, node.span.path, node.span.line, node.span.col + quote, node.span.col - 1, False)

    def pos(self, line: int, col: int) -> tuple[int, int]:
        """File (line, col) of a snippet (line, col)."""
        if line == 1:
            col -= self.shift
        if self.block:
            return self.line + line - 1, self.indent + col
        if line == 1:
            return self.line, self.col + col - 1
        return self.line + line - 1, self.indent + col

    def span(self, line: int, col: int, end_line: int, end_col: int) -> Span:
        """File span of a snippet range."""
        a = self.pos(line, col)
        b = self.pos(end_line, end_col)
        return Span(self.path, a[0], a[1], b[0], b[1])


_BINOPS = {"or_": "or", "and_": "and", "bit_or": "|", "bit_xor": "^", "bit_and": "&"}


class _ToAst(Transformer[Token, Any]):
    def __init__(self, snip: Snippet):
        super().__init__()
        self.snip = snip

    def _s(self, meta: Any) -> Span:
        return self.snip.span(meta.line, meta.column, meta.end_line, meta.end_column)

    def _t(self, tok: Token) -> Span:
        assert tok.line is not None and tok.column is not None
        return self.snip.span(tok.line, tok.column, tok.end_line or tok.line, tok.end_column or tok.column + 1)

    # expressions
    @v_args(meta=True)
    def int_lit(self, meta: Any, c: list[Token]) -> ast.Num:
        return ast.Num(int(c[0], 0), self._s(meta))

    @v_args(meta=True)
    def float_lit(self, meta: Any, c: list[Token]) -> ast.Num:
        return ast.Num(float(c[0]), self._s(meta))

    @v_args(meta=True)
    def true_lit(self, meta: Any, c: list[Token]) -> ast.BoolLit:
        return ast.BoolLit(True, self._s(meta))

    @v_args(meta=True)
    def false_lit(self, meta: Any, c: list[Token]) -> ast.BoolLit:
        return ast.BoolLit(False, self._s(meta))

    @v_args(meta=True)
    def name(self, meta: Any, c: list[Token]) -> ast.Name:
        return ast.Name(str(c[0]), self._s(meta))

    @v_args(meta=True)
    def neg(self, meta: Any, c: list[Any]) -> ast.Expr:
        if isinstance(c[0], ast.Num):
            return ast.Num(-c[0].value, self._s(meta))
        return ast.Unary("-", c[0], self._s(meta))

    @v_args(meta=True)
    def not_(self, meta: Any, c: list[Any]) -> ast.Unary:
        return ast.Unary("not", c[0], self._s(meta))

    @v_args(meta=True)
    def binop(self, meta: Any, c: list[Any]) -> ast.Binary:
        return ast.Binary(str(c[1].children[0]), c[0], c[2], self._s(meta))

    @v_args(meta=True)
    def compare(self, meta: Any, c: list[Any]) -> ast.Binary:
        return ast.Binary(str(c[1].children[0]), c[0], c[2], self._s(meta))

    def __default__(self, data: Any, children: Any, meta: Any) -> Any:
        if data in _BINOPS:
            span = self.snip.span(meta.line, meta.column, meta.end_line, meta.end_column)
            return ast.Binary(_BINOPS[data], children[0], children[1], span)
        return super().__default__(data, children, meta)  # type: ignore[no-untyped-call]

    @v_args(meta=True)
    def if_expr(self, meta: Any, c: list[Any]) -> ast.IfExpr:
        return ast.IfExpr(c[0], c[1], c[2], self._s(meta))

    def args(self, c: list[Any]) -> tuple[Any, ...]:
        return tuple(c)

    @v_args(meta=True)
    def index(self, meta: Any, c: list[Any]) -> ast.Index:
        return ast.Index(c[0], c[1], self._s(meta))

    @v_args(meta=True)
    def attr(self, meta: Any, c: list[Any]) -> ast.Attr:
        return ast.Attr(c[0], str(c[1]), self._s(meta))

    def _callee(self, f: Any) -> str | None:
        return f.id if isinstance(f, ast.Name) else None

    @v_args(meta=True)
    def call(self, meta: Any, c: list[Any]) -> ast.Expr:
        name = self._callee(c[0])
        if name is None:
            raise _AstError(self._s(meta), "only named functions can be called")
        return ast.Call(name, c[1] or (), self._s(meta), c[0].span)

    @v_args(meta=True)
    def gen_call(self, meta: Any, c: list[Any]) -> ast.GenCall:
        name = self._callee(c[0])
        if name is None:
            raise _AstError(self._s(meta), "only named reductions can take a generator")
        return ast.GenCall(name, c[1], str(c[2]), c[3], c[4], self._s(meta), c[0].span)

    # statements
    def body(self, c: list[Any]) -> tuple[ast.Stmt, ...]:
        return tuple(c)

    def expr_only(self, c: list[Any]) -> ast.Expr:
        return c[0]  # type: ignore[no-any-return]

    def suite(self, c: list[Any]) -> tuple[ast.Stmt, ...]:
        return tuple(c)

    @v_args(meta=True)
    def let_stmt(self, meta: Any, c: list[Any]) -> ast.Let:
        return ast.Let(str(c[0]), str(c[1]) if c[1] is not None else None, c[2], self._s(meta))

    @v_args(meta=True)
    def expr_stmt(self, meta: Any, c: list[Any]) -> ast.Stmt:
        if c[1] is None:
            if not isinstance(c[0], ast.Call):
                raise _AstError(self._s(meta), "this expression does nothing; only calls can stand alone")
            return ast.ExprStmt(c[0], self._s(meta))
        target = c[0]
        if not isinstance(target, (ast.Name, ast.Index, ast.Attr)):
            raise _AstError(target.span, "cannot assign to this expression")
        return ast.Assign(target, str(c[1].children[0]), c[2], self._s(meta))

    @v_args(meta=True)
    def return_stmt(self, meta: Any, c: list[Any]) -> ast.Return:
        return ast.Return(c[0], self._s(meta))

    @v_args(meta=True)
    def pass_stmt(self, meta: Any, c: list[Any]) -> ast.Pass:
        return ast.Pass(self._s(meta))

    @v_args(meta=True)
    def if_stmt(self, meta: Any, c: list[Any]) -> ast.If:
        branches = [(c[0], c[1])]
        orelse: tuple[ast.Stmt, ...] = ()
        for item in c[2:]:
            if isinstance(item, tuple) and len(item) == 2 and item[0] == "elif":
                branches.append(item[1])
            elif item is not None:
                orelse = item
        return ast.If(tuple(branches), orelse, self._s(meta))

    def elif_clause(self, c: list[Any]) -> tuple[str, tuple[Any, Any]]:
        return ("elif", (c[0], c[1]))

    def else_clause(self, c: list[Any]) -> tuple[ast.Stmt, ...]:
        return c[0]  # type: ignore[no-any-return]

    @v_args(meta=True)
    def for_stmt(self, meta: Any, c: list[Any]) -> ast.For:
        return ast.For(str(c[0]), c[1], c[2], self._s(meta))

    @v_args(meta=True)
    def match_stmt(self, meta: Any, c: list[Any]) -> ast.Match:
        return ast.Match(c[0], tuple(c[1:]), self._s(meta))

    @v_args(meta=True)
    def case_clause(self, meta: Any, c: list[Any]) -> ast.Case:
        return ast.Case(tuple(str(t) for t in c[:-1]), c[-1], self._s(meta))


class _AstError(Exception):
    def __init__(self, span: Span, message: str):
        self.span = span
        self.message = message


def _describe(e: UnexpectedInput) -> str:
    if isinstance(e, UnexpectedToken):
        tok = e.token
        if tok.type == "$END":
            return "unexpected end of text"
        if tok.type == "_NL":
            return "unexpected end of line"
        if tok.type in ("_INDENT", "_DEDENT"):
            return "unexpected indentation"
        expected = sorted(x for x in e.expected if not x.startswith("_"))
        hint = f"; expected one of {', '.join(expected[:8])}" if expected else ""
        return f"unexpected '{tok}'{hint}"
    if isinstance(e, UnexpectedCharacters):
        return f"unexpected character {e.char!r}"
    if isinstance(e, UnexpectedEOF):
        return "unexpected end of text"
    return "syntax error"


def _parse(snip: Snippet, start: str, diags: Diagnostics) -> Any:
    text = snip.text if snip.text.endswith("\n") else snip.text + "\n"
    if start == "expr_only" and "\n" in text.strip():
        # a multi-line expression: parenthesized, so line breaks and indentation inside it are ignored
        text = "(" + text.rstrip() + ")\n"
        snip = replace(snip, shift=1)
    try:
        tree = parser().parse(text, start=start)
        return _ToAst(snip).transform(tree)
    except UnexpectedInput as e:
        line = getattr(e, "line", 1)
        col = getattr(e, "column", 1)
        if line is None or line < 1:
            line, col = max(1, text.count("\n")), 1
        if isinstance(e, UnexpectedToken) and e.token.type in ("$END", "_DEDENT"):
            lines = text.rstrip("\n").split("\n")
            line, col = len(lines), len(lines[-1]) + 1
        fl, fc = snip.pos(line, max(col, 1))
        diags.error(Span.point(snip.path, fl, fc), "E020", _describe(e))
    except DedentError:
        fl, fc = snip.pos(1, 1)
        diags.error(Span.point(snip.path, fl, fc), "E020", "inconsistent indentation (dedent does not match any block)")
    except _AstError as e:
        diags.error(e.span, "E020", e.message)
    except Exception as e:  # lark wraps transformer errors
        inner = getattr(e, "orig_exc", None)
        if isinstance(inner, _AstError):
            diags.error(inner.span, "E020", inner.message)
        else:
            fl, fc = snip.pos(1, 1)
            diags.error(Span.point(snip.path, fl, fc), "E020", f"cannot parse: {e}")
    return None


def parse_body(snip: Snippet, diags: Diagnostics) -> tuple[ast.Stmt, ...] | None:
    """Parse a statement block; None (with a diagnostic) on a syntax error."""
    out = _parse(snip, "body", diags)
    return tuple(out) if out is not None else None


def parse_expr(snip: Snippet, diags: Diagnostics) -> ast.Expr | None:
    """Parse one expression; None (with a diagnostic) on a syntax error."""
    return _parse(snip, "expr_only", diags)  # type: ignore[no-any-return]
