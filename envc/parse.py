"""Pass 2: parse rule bodies and expressions (grammar/envc.lark) into the typed AST, with file positions."""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.indenter import DedentError, Indenter

from envc import ast
from envc.diagnostics import Diagnostics, Span
from envc.load import YScalar
from envc.mathops import MODULE_PREFIXES

# envc/grammar links to the top-level grammar/ folder; wheels carry a copy.
GRAMMAR_PATH = Path(__file__).resolve().parent / "grammar" / "envc.lark"

# Deepest nesting of one body or expression: every operator, statement, call and argument list, index and block is
# a level (a chain of n binary operators is n levels). The typed IR is a tree of pydantic models that pydantic
# cannot serialize deeper than about 250 levels (a call is up to three: the call, its arguments, a conversion), and
# the reference interpreter and the lowerings walk it recursively.
MAX_NESTING = 160

_PARSE_LOCK = threading.Lock()  # the indenter keeps per-parse state in the shared parser


class _Indenter(Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB"]
    CLOSE_PAREN_types = ["RPAR", "RSQB"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8

    def handle_NL(self, token: Token) -> Iterator[Token]:
        """Lark's indentation tracking, with the position of a dedent that matches no block."""
        try:
            yield from super().handle_NL(token)
        except DedentError:
            indent = token.rsplit("\n", 1)[1]
            raise _Dedent(token.end_line or token.line or 1, len(indent) + 1) from None


class _Dedent(Exception):
    def __init__(self, line: int, col: int):
        self.line = line
        self.col = col


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
    where: tuple[tuple[int, int], ...] | None = None  # quoted scalars: file (line, col) of each char, then the end

    @staticmethod
    def of(node: YScalar) -> Snippet:
        """The snippet of a YAML scalar node."""
        text = node.value if isinstance(node.value, str) else node.text
        if node.style == ">" and node.source is not None:
            return Snippet(node.source, node.span.path, node.span.line + 1, node.indent + 1, node.indent, True)
        if node.style in ("'", '"') and node.source is not None:
            where = quoted_positions(node.source, node.style, node.span.line, node.span.col + 1)
            if where is not None and where[1] == text:
                return Snippet(text, node.span.path, node.span.line, node.span.col + 1, 0, False, where=where[0])
        elif node.source is not None:  # multi-line plain scalar: keep the lines as written
            return Snippet(node.source, node.span.path, node.span.line, node.span.col, 0, False)
        if node.style in ("|", ">"):
            return Snippet(text, node.span.path, node.span.line + 1, node.indent + 1, node.indent, True)
        quote = 1 if node.style in ("'", '"') else 0
        return Snippet(text, node.span.path, node.span.line, node.span.col + quote, node.span.col - 1, False)

    @cached_property
    def _line_starts(self) -> list[int]:
        starts = [0]
        for i, ch in enumerate(self.text):
            if ch == "\n":
                starts.append(i + 1)
        return starts

    def pos(self, line: int, col: int) -> tuple[int, int]:
        """File (line, col) of a snippet (line, col)."""
        if line == 1:
            col -= self.shift
        if self.where is not None:
            starts = self._line_starts
            offset = starts[min(max(line, 1), len(starts)) - 1] + max(col, 1) - 1
            return self.where[min(offset, len(self.where) - 1)]
        if self.block:
            return self.line + line - 1, self.indent + col
        if line == 1:
            return self.line, self.col + col - 1
        return self.line + line - 1, self.indent + col

    def span(self, line: int, col: int, end_line: int, end_col: int) -> Span:
        """File span of a snippet range."""
        a = self.pos(line, col)
        b = self.pos(end_line, end_col)
        if b < a:
            b = (a[0], a[1] + 1)
        return Span(self.path, a[0], a[1], b[0], b[1])


_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
    "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028",
    "P": "\u2029",
}  # fmt: skip


def quoted_positions(raw: str, style: str, line: int, col: int) -> tuple[tuple[tuple[int, int], ...], str] | None:
    """Undo YAML quoting of `raw` (the text between the quotes, starting at file line:col) the way YAML does,
    keeping the file position of every resulting character: escapes (double quotes), '' (single quotes) and the
    folding of line breaks. Returns (positions, value), or None for text this scanner does not understand."""
    where: list[tuple[int, int]] = []
    out: list[str] = []
    at: list[tuple[int, int]] = []  # file position of each raw character
    chars: list[str] = []
    ln, cl = line, col
    for k, ch in enumerate(raw):
        if not (ch == "\r" and raw[k + 1 : k + 2] == "\n"):  # a CRLF line break is one break
            chars.append(ch)
            at.append((ln, cl))
        ln, cl = (ln + 1, 1) if ch == "\n" else (ln, cl + 1)
    at.append((ln, cl))
    raw = "".join(chars)
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if style == '"' and ch == "\\":
            if i + 1 >= n:
                return None
            nxt = raw[i + 1]
            if nxt == "\n":  # an escaped line break joins the lines without a space
                i += 2
                while i < n and raw[i] in " \t":
                    i += 1
                continue
            width = _HEX_ESCAPES.get(nxt, 0)
            if width:
                try:
                    out.append(chr(int(raw[i + 2 : i + 2 + width], 16)))
                except ValueError:
                    return None
            elif nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
            else:
                return None
            where.append(at[i])
            i += 2 + width
            continue
        if style == "'" and ch == "'" and raw[i + 1 : i + 2] == "'":
            out.append("'")
            where.append(at[i])
            i += 2
            continue
        if ch in " \t\n":
            j = i
            while j < n and raw[j] in " \t":
                j += 1
            if j < n and raw[j] == "\n":  # trailing white space is dropped, line breaks are folded
                first = j
                breaks = 0
                while j < n and raw[j] == "\n":
                    breaks += 1
                    j += 1
                    while j < n and raw[j] in " \t":
                        j += 1
                if breaks == 1:
                    out.append(" ")
                    where.append(at[first])
                else:
                    out.extend("\n" * (breaks - 1))
                    where.extend([at[first]] * (breaks - 1))
                i = j
                continue
            out.extend(raw[i:j])
            where.extend(at[i:j])
            i = j
            continue
        out.append(ch)
        where.append(at[i])
        i += 1
    where.append(at[n])
    return tuple(where), "".join(out)


_BINOPS = {"or_": "or", "and_": "and", "bit_or": "|", "bit_xor": "^", "bit_and": "&"}
# parse-tree nodes that do not nest in the typed IR (lists, clauses, operator tokens)
_FLAT = {
    *("expr_only", "exprs_only", "elif_clause", "else_clause"),
    *("add_op", "mul_op", "shift_op", "comp_op", "assign_op"),
}


class _AstError(Exception):
    def __init__(self, span: Span, message: str, code: str = "E020"):
        self.span = span
        self.message = message
        self.code = code


Handler = Callable[[Any, list[Any]], Any]


class _ToAst:
    """Parse tree -> AST, bottom-up with an explicit stack (no recursion, so any depth is safe to walk)."""

    def __init__(self, snip: Snippet, text: str):
        self.snip = snip
        self.text = text  # as parsed
        self.starts = [0, *(i + 1 for i, ch in enumerate(text) if ch == "\n")]
        self.handlers: dict[str, Handler] = {
            "int_lit": self.int_lit,
            "float_lit": lambda m, c: ast.Num(float(c[0]), self._s(m)),
            "true_lit": lambda m, c: ast.BoolLit(True, self._s(m)),
            "false_lit": lambda m, c: ast.BoolLit(False, self._s(m)),
            "name": lambda m, c: ast.Name(str(c[0]), self._s(m)),
            "neg": self.neg,
            "not_": lambda m, c: ast.Unary("not", c[0], self._s(m)),
            "invert": lambda m, c: ast.Unary("~", c[0], self._s(m)),
            "power": lambda m, c: ast.Binary("**", c[0], c[1], self._s(m)),
            "binop": lambda m, c: ast.Binary(c[1], c[0], c[2], self._s(m)),
            "compare": lambda m, c: ast.Binary(c[1], c[0], c[2], self._s(m)),
            "if_expr": lambda m, c: ast.IfExpr(c[0], c[1], c[2], self._s(m)),
            "args": lambda m, c: tuple(c),
            "index": lambda m, c: ast.Index(c[0], c[1], self._s(m)),
            "attr": lambda m, c: ast.Attr(c[0], str(c[1]), self._s(m)),
            "call": self.call,
            "gen_call": self.gen_call,
            "body": lambda m, c: tuple(c),
            "suite": lambda m, c: tuple(c),
            "expr_only": lambda m, c: c[0],
            "let_stmt": lambda m, c: ast.Let(str(c[0]), str(c[1]) if c[1] is not None else None, c[2], self._s(m)),
            "expr_stmt": self.expr_stmt,
            "return_stmt": self.return_stmt,
            "pass_stmt": lambda m, c: ast.Pass(self._s(m)),
            "if_stmt": self.if_stmt,
            "elif_clause": lambda m, c: ("elif", (c[0], c[1])),
            "else_clause": lambda m, c: c[0],
            "for_stmt": lambda m, c: ast.For(str(c[0]), c[1], c[2], self._s(m)),
            "while_stmt": lambda m, c: ast.While(c[0], c[1], c[2], self._s(m)),
            "break_stmt": lambda m, c: ast.Break(self._s(m)),
            "continue_stmt": lambda m, c: ast.Continue(self._s(m)),
            "match_stmt": lambda m, c: ast.Match(c[0], tuple(c[1:]), self._s(m)),
            "case_clause": lambda m, c: ast.Case(tuple(str(t) for t in c[:-1]), c[-1], self._s(m)),
            # array values and functions that return several values (language 1.1)
            "array_lit": lambda m, c: ast.ArrayLit(c[0] or (), self._s(m)),
            "tuple": lambda m, c: ast.Tuple(tuple(c), self._s(m)),
            "exprs_only": lambda m, c: ast.Tuple(tuple(c), self._s(m)),
            "return_many": lambda m, c: ast.Return(ast.Tuple(tuple(c), self._items(c)), self._s(m)),
            "let_many": self.let_many,
            "assign_many": self.assign_many,
        }
        for op in ("add_op", "mul_op", "shift_op", "comp_op", "assign_op"):
            self.handlers[op] = lambda m, c: str(c[0])
        for data, op in _BINOPS.items():
            self.handlers[data] = self._binop(op)

    def _binop(self, op: str) -> Handler:
        return lambda m, c: ast.Binary(op, c[0], c[1], self._s(m))

    def _s(self, meta: Any) -> Span:
        if getattr(meta, "empty", True):
            return self.snip.span(1, 1, 1, 2)
        end_line, end_col = meta.end_line, meta.end_column
        end = self.starts[end_line - 1] + end_col - 1
        if self.text[end - 1 : end].isspace():  # a statement ends with its line break: end at its last character
            start = self.starts[meta.line - 1] + meta.column - 1
            while end > start + 1 and self.text[end - 1].isspace():
                end -= 1
            end_line = bisect_right(self.starts, end - 1)
            end_col = end - self.starts[end_line - 1] + 1
        return self.snip.span(meta.line, meta.column, end_line, end_col)

    def transform(self, tree: Tree[Token]) -> Any:
        """The AST of a whole parse tree; _AstError (E003) where it nests deeper than MAX_NESTING."""
        # a frame: node, its children still to visit, the values of those visited, its nesting, elifs seen
        stack: list[tuple[Tree[Token], Iterator[Any], list[Any], int, list[int]]] = [
            (tree, iter(tree.children), [], 0, [0])
        ]
        while True:
            node, todo, done, depth, elifs = stack[-1]
            for child in todo:
                if isinstance(child, Tree):
                    d = depth + (child.data not in _FLAT)
                    if node.data == "if_stmt" and child.data == "elif_clause":
                        elifs[0] += 1  # `elif` nests one `if` deeper in the IR
                        d += elifs[0]
                    if d > MAX_NESTING:
                        raise _AstError(
                            self._s(child.meta),
                            f"this is nested more than {MAX_NESTING} levels deep (every operator, call, argument list, "
                            "index and block is a level); split it into steps with `let`",
                            "E003",
                        )
                    stack.append((child, iter(child.children), [], d, [0]))
                    break
                done.append(child)
            else:
                stack.pop()
                value = self.handlers[str(node.data)](node.meta, done)
                if not stack:
                    return value
                stack[-1][2].append(value)

    # expressions
    def int_lit(self, meta: Any, c: list[Token]) -> ast.Num:
        text = str(c[0])
        try:
            return ast.Num(int(text, 0), self._s(meta))
        except ValueError:
            raise _AstError(
                self._s(meta), f"integer literal '{text}' has a leading zero; write {text.lstrip('0') or '0'}"
            ) from None

    def neg(self, meta: Any, c: list[Any]) -> ast.Expr:
        if isinstance(c[0], ast.Num):
            return ast.Num(-c[0].value, self._s(meta))
        return ast.Unary("-", c[0], self._s(meta))

    def _callee(self, f: Any) -> str | None:
        return f.id if isinstance(f, ast.Name) else None

    def _prefixed(self, f: Any) -> str | None:
        """`np.clip` as "np.clip" when the callee is a dotted name under a module prefix (the checker says to
        drop the prefix), else None."""
        parts: list[str] = []
        while isinstance(f, ast.Attr):
            parts.append(f.name)
            f = f.base
        if parts and isinstance(f, ast.Name) and f.id in MODULE_PREFIXES:
            return ".".join([f.id, *reversed(parts)])
        return None

    def call(self, meta: Any, c: list[Any]) -> ast.Expr:
        name = self._callee(c[0]) or self._prefixed(c[0])
        if name is None:
            raise _AstError(self._s(meta), "only named functions can be called")
        return ast.Call(name, c[1] or (), self._s(meta), c[0].span)

    def gen_call(self, meta: Any, c: list[Any]) -> ast.GenCall:
        name = self._callee(c[0]) or self._prefixed(c[0])
        if name is None:
            raise _AstError(self._s(meta), "only named reductions can take a generator")
        return ast.GenCall(name, c[1], str(c[2]), c[3], c[4], self._s(meta), c[0].span)

    # statements
    def _items(self, c: list[Any]) -> Span:
        """The span from the first to the last of several expressions."""
        a, b = c[0].span, c[-1].span
        return Span(a.path, a.line, a.col, b.end_line, b.end_col)

    def let_many(self, meta: Any, c: list[Any]) -> ast.LetMany:
        names = c[:-1]
        spans = tuple(self.snip.span(t.line, t.column, t.end_line, t.end_column) for t in names)
        return ast.LetMany(tuple(str(t) for t in names), spans, c[-1], self._s(meta))

    def assign_many(self, meta: Any, c: list[Any]) -> ast.AssignMany:
        for target in c[:-1]:
            if not isinstance(target, (ast.Name, ast.Index, ast.Attr)):
                raise _AstError(target.span, "cannot assign to this expression")
        return ast.AssignMany(tuple(c[:-1]), c[-1], self._s(meta))

    def expr_stmt(self, meta: Any, c: list[Any]) -> ast.Stmt:
        if c[1] is None:
            return ast.ExprStmt(c[0], self._s(meta))  # the checker says if it does nothing
        target = c[0]
        if not isinstance(target, (ast.Name, ast.Index, ast.Attr)):
            raise _AstError(target.span, "cannot assign to this expression")
        return ast.Assign(target, c[1], c[2], self._s(meta))

    def return_stmt(self, meta: Any, c: list[Any]) -> ast.Return:
        if c[0] is None:
            raise _AstError(
                self._s(meta),
                "`return` without a value: there is no early exit; put the rest under `if ...:`/`else:` (in a loop, "
                "`break` or `continue`); only a function returns, with `return VALUE` as its last statement",
                "E056",
            )
        return ast.Return(c[0], self._s(meta))

    def if_stmt(self, meta: Any, c: list[Any]) -> ast.If:
        branches = [(c[0], c[1])]
        orelse: tuple[ast.Stmt, ...] = ()
        for item in c[2:]:
            if isinstance(item, tuple) and len(item) == 2 and item[0] == "elif":
                branches.append(item[1])
            elif item is not None:
                orelse = item
        return ast.If(tuple(branches), orelse, self._s(meta))


_MAX_EXPECTED = 10
_TOKEN_WORDS = {"NAME": "a name", "INT": "a number", "FLOAT": "a number"}  # the grammar's regex terminals


@lru_cache(maxsize=1)
def _token_words() -> dict[str, tuple[int, str]]:
    """Each terminal of the grammar as people write it (`'('`, `'**'`, `'let'`, "a name"), with its rank: words
    for classes of tokens first, then the grammar's own order. Syntax errors never show lark's token names."""
    out: dict[str, tuple[int, str]] = {}
    for i, t in enumerate(parser().terminals):
        if t.name in _TOKEN_WORDS:
            out[t.name] = (i - 1000, _TOKEN_WORDS[t.name])
        elif t.pattern.type == "str":
            out[t.name] = (i, f"'{t.pattern.value}'")
    return out


def _expected_words(names: Any) -> list[str]:
    """The expected tokens of a syntax error in words, deduplicated, in a fixed order (layout tokens left out)."""
    words = _token_words()
    ranked = sorted(words[n] for n in names if n in words)
    out: list[str] = []
    for _, w in ranked:
        if w not in out:
            out.append(w)
    return out


def _describe(e: UnexpectedInput) -> str:
    if isinstance(e, UnexpectedToken):
        tok = e.token
        if tok.type == "$END":
            return "unexpected end of text"
        if tok.type == "_NL":
            return "unexpected end of line"
        if tok.type in ("_INDENT", "_DEDENT"):
            return "unexpected indentation"
        expected = _expected_words(e.expected)
        more = ", ..." if len(expected) > _MAX_EXPECTED else ""
        hint = f"; expected one of {', '.join(expected[:_MAX_EXPECTED])}{more}" if expected else ""
        return f"unexpected '{tok}'{hint}"
    if isinstance(e, UnexpectedCharacters):
        return f"unexpected character {e.char!r}"
    if isinstance(e, UnexpectedEOF):
        return "unexpected end of text"
    return "syntax error"


@dataclass(frozen=True)
class _Failure:
    """A syntax error, in the coordinates of the parsed text."""

    line: int
    col: int
    message: str
    at_end: bool  # the text ended too soon


@lru_cache(maxsize=2048)
def _lark_parse(text: str, start: str) -> Tree[Token] | _Failure:
    """The parse tree of a text, or where it fails. Cached: a linter in an editor re-checks the whole spec on every
    keystroke, and all rule bodies but the one being edited are unchanged (parsing is most of the time of a lint).
    The trees are never modified."""
    try:
        with _PARSE_LOCK:
            return parser().parse(text, start=start)
    except UnexpectedInput as e:
        line = getattr(e, "line", 1)
        col = getattr(e, "column", 1)
        if line is None or line < 1:
            line, col = max(1, text.count("\n")), 1
        at_end = isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END")
        return _Failure(line, max(col or 1, 1), _describe(e), at_end)
    except _Dedent as e:
        return _Failure(e.line, e.col, "inconsistent indentation: this line is dedented to no enclosing block", False)


def _parse(snip: Snippet, start: str, diags: Diagnostics) -> Any:
    value, errors = _parse_at(snip, start)
    for span, code, message in errors:
        diags.error(span, code, message)
    return value


@lru_cache(maxsize=2048)
def _parse_at(snip: Snippet, start: str) -> tuple[Any, tuple[tuple[Span, str, str], ...]]:
    """The AST of a snippet at its place in the file (ASTs are immutable), with its diagnostics."""
    scratch = Diagnostics()
    return _parse_now(snip, start, scratch), tuple((d.span, d.code, d.message) for d in scratch.items)


MAX_BODY_CHARS = 1 << 18  # one rule body or expression; lark parses about 100 KB a second


def _too_big(snip: Snippet) -> tuple[int, int, str] | None:
    """Line, column and message of a snippet too long or bracketed too deep to hand to lark: checked in one linear
    scan first, since lark would take a minute over a 2 MB body or a 500,000-deep `abs(abs(...`."""
    if len(snip.text) > MAX_BODY_CHARS:
        return 1, 1, (
            f"this code is {len(snip.text):,} characters long; the limit is {MAX_BODY_CHARS:,}: "
            "split it into functions and procedures"
        )
    depth, line, col, comment = 0, 1, 0, False
    for ch in snip.text:
        col += 1
        if ch == "\n":
            line, col, comment = line + 1, 0, False
        elif comment:
            continue
        elif ch == "#":
            comment = True
        elif ch in "([":
            depth += 1
            if depth > MAX_NESTING:
                return line, col, (
                    f"this is nested more than {MAX_NESTING} levels deep (every operator, call, argument list, "
                    "index and block is a level); split it into steps with `let`"
                )
        elif ch in ")]":
            depth -= 1
    return None


def _parse_now(snip: Snippet, start: str, diags: Diagnostics) -> Any:
    big = _too_big(snip)
    if big is not None:
        fl, fc = snip.pos(big[0], big[1])
        diags.error(Span.point(snip.path, fl, fc), "E003", big[2])
        return None
    text = snip.text if snip.text.endswith("\n") else snip.text + "\n"
    if start == "expr_only" and "\n" in text.strip():
        # a multi-line expression: parenthesized, so line breaks and indentation inside it are ignored
        text = "(" + text.rstrip() + ")\n"
        snip = replace(snip, shift=1)
    try:
        tree = _lark_parse(text, start)
        if isinstance(tree, _Failure):
            line, col = tree.line, tree.col
            if tree.at_end:  # just after the last character of the snippet (not of the parenthesis around it)
                lines = snip.text.rstrip().split("\n")
                line, col = len(lines), len(lines[-1]) + 1 + (snip.shift if len(lines) == 1 else 0)
            fl, fc = snip.pos(line, col)
            diags.error(Span.point(snip.path, fl, fc), "E020", tree.message)
            return None
        return _ToAst(snip, text).transform(tree)
    except _AstError as e:
        diags.error(e.span, e.code, e.message)
    except Exception as e:  # a bug here must still come out as a located diagnostic, not a traceback
        fl, fc = snip.pos(1, 1)
        diags.error(Span.point(snip.path, fl, fc), "E020", f"cannot parse: {type(e).__name__}: {e}")
    return None


def parse_body(snip: Snippet, diags: Diagnostics) -> tuple[ast.Stmt, ...] | None:
    """Parse a statement block; None (with a diagnostic) on a syntax error."""
    out = _parse(snip, "body", diags)
    return tuple(out) if out is not None else None


def parse_expr(snip: Snippet, diags: Diagnostics) -> ast.Expr | None:
    """Parse one expression; None (with a diagnostic) on a syntax error."""
    return _parse(snip, "expr_only", diags)  # type: ignore[no-any-return]


def has_return_line(text: str) -> bool:
    """Does a function body use statements (a `return` line) rather than being one expression?"""
    return any(line.split("#", 1)[0].strip().startswith("return") for line in text.splitlines())


def parse_function_body(snip: Snippet, diags: Diagnostics) -> ast.Expr | tuple[ast.Stmt, ...] | None:
    """A function body: one expression, or statements (that should end with `return VALUE`)."""
    if has_return_line(snip.text):
        return parse_body(snip, diags)
    as_expr, as_body = Diagnostics(), Diagnostics()
    x = parse_expr(snip, as_expr)
    if x is not None:
        return x
    stmts = parse_body(snip, as_body)
    if stmts is not None:
        return stmts  # statements without `return`: the checker says so
    # neither: report the reading that got further into the text
    e, b = as_expr.items[0], as_body.items[0]
    diags.items.append(b if (b.span.line, b.span.col) > (e.span.line, e.span.col) else e)
    return None
