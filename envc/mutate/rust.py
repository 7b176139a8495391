"""Mutants of a spec's generated Rust crate as one mutant schema: every site under a runtime switch, one build.

The crate's `src/env.rs` is rendered without rustfmt (one emitted statement per line, the span map exact),
tokenized, and the bodies of its single-state functions (those `envc verify` runs: effects, rules, legality,
rewards, ends, observation, invariants; not the batch lane kernels) are parsed by a small expression parser
for the subset the emitter writes. Each site becomes code that reads a process-global mutant id:

    a + b          ->  ({ let (__l, __r) = (a, b); if __m(K) { __l - __r } else { __l + __r } })
    if c { .. }    ->  if ({ let __c = c; if __m(K1) { !__c } else if __m(K2) { false } ... else { __c } }) { .. }
    st.x = e;      ->  if !__m(K) { st.x = e; }

so all mutants cost one cargo build; `envc_set_mutant(K)` (an exported C symbol, reached through ctypes on the
loaded extension) picks one, 0 the original. The mutant ids are 1-based site indices.
"""

from __future__ import annotations

import bisect
import ctypes
import hashlib
import importlib
import re
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from envc import ir
from envc.diagnostics import Span
from envc.mutate.run import MutateError
from envc.mutate.spans import marked_lines, strip_marks

_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)
    |(?P<num>\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?(?:[iuf](?:8|16|32|64|128|size))?)
    |(?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])'|'[A-Za-z_]\w*)
    |(?P<ident>[A-Za-z_]\w*)
    |(?P<punct><<=|>>=|\.\.=|\.\.\.|::|->|=>|==|!=|<=|>=|&&|\|\||\+=|-=|\*=|/=|%=|\^=|&=|\|=|<<|>>|\.\.|[^\s\w])""",
    re.S | re.X,
)
PREC = {
    "*": 10, "/": 10, "%": 10, "+": 9, "-": 9, "<<": 8, ">>": 8, "&": 7, "^": 6, "|": 5,
    "==": 4, "!=": 4, "<": 4, ">": 4, "<=": 4, ">=": 4, "&&": 3, "||": 2, "..": 1, "..=": 1,
}  # fmt: skip
SWAP = {
    "+": "-", "-": "+", "*": "/", "/": "*", "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
    "&&": "||", "||": "&&", "&": "|", "|": "&",
}  # fmt: skip
OPS = {"+": "arith", "-": "arith", "*": "arith", "/": "arith", "&&": "and_or", "||": "and_or", "&": "and_or",
       "|": "and_or", "<": "compare", "<=": "compare", ">": "compare", ">=": "compare", "==": "compare",
       "!=": "compare"}  # fmt: skip
METHODS = {"wrapping_add": "wrapping_sub", "wrapping_sub": "wrapping_add"}
ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "<<=", ">>="}
_INT = re.compile(r"^(\d+)((?:i|u)(?:8|16|32|64|128|size))?$")
_LANES = re.compile(r"\b(Lanes|LaneRows|ObsRows)\b")


_DRAW_BUFFER = re.compile(r"let mut (__draws\d+) = \[0u32; (\d+)\];")
_RESET_WRITE = re.compile(
    r"st\.([A-Za-z_][A-Za-z0-9_]*) = ([-+]?[0-9][0-9_.eE+-]*(?:f32|f64|i8|i16|i32|u32)?|true|false);"
)


def _same_literal(lit: str, value: bool | int | float) -> bool:
    """Whether a Rust literal (`0.0f32`, `-3i32`, `true`) denotes `value`."""
    if lit in ("true", "false"):
        return isinstance(value, bool) and (lit == "true") == value
    num = re.sub(r"(f32|f64|i8|i16|i32|u32)$", "", lit).replace("_", "")
    try:
        return not isinstance(value, bool) and float(num) == float(value) and str(num).startswith("-") == (
            str(value).startswith("-")
        )
    except ValueError:
        return False


@dataclass
class Tok:
    """A token: its text and character offsets in the source."""

    text: str
    kind: str
    start: int
    end: int


@dataclass
class RSite:
    """One mutant: operator `op` at a node of the crate's `src/env.rs`, with mutant id `k` (1-based)."""

    k: int
    op: str
    line: int
    function: str
    before: str
    after: str

    def describe(self) -> str:
        """`before -> after`, short."""
        return f"{self.before} -> {self.after}"


@dataclass
class Node:
    """A rewritable token range [a, b) with holes (token ranges rendered recursively) and a template."""

    a: int
    b: int
    holes: list[tuple[int, int]]
    make: Callable[[list[str], list[str]], str]  # (original texts, rewritten texts) of the holes -> code
    children: list[Node] = field(default_factory=list)

    @property
    def wrapper(self) -> bool:
        """Its one hole is its whole range (nodes of the same range nest inside it)."""
        return self.holes == [(self.a, self.b)]


class ParseError(Exception):
    """The parser met code outside the subset it knows."""


def tokenize(src: str) -> list[Tok]:
    """Tokens of Rust source, without whitespace and comments."""
    out: list[Tok] = []
    for m in _TOKEN.finditer(src):
        kind = m.lastgroup or ""
        if kind in ("ws", "comment"):
            continue
        out.append(Tok(m.group(), kind, m.start(), m.end()))
    return out


class Parser:
    """Finds mutation sites in one function body (token range) of emitted Rust."""

    def __init__(self, toks: list[Tok], src: str, function: str, line_of: Callable[[int], int], next_k: int):
        self.t = toks
        self.src = src
        self.function = function
        self.line_of = line_of
        self.k = next_k
        self.sites: list[RSite] = []
        self.nodes: list[Node] = []
        self.no_sites = 0  # > 0 inside code where a mutant could loop forever (a `while` condition)

    # ---- helpers -----------------------------------------------------
    def tx(self, i: int) -> str:
        return self.t[i].text if i < len(self.t) else ""

    def text(self, a: int, b: int) -> str:
        return self.src[self.t[a].start : self.t[b - 1].end] if b > a else ""

    def expect(self, i: int, s: str) -> int:
        if self.tx(i) != s:
            raise ParseError(f"expected {s!r} at {self.line_of(i)}, got {self.tx(i)!r}")
        return i + 1

    def skip_group(self, i: int) -> int:
        """Past the balanced bracket group opening at `i`."""
        pairs = {"(": ")", "[": "]", "{": "}"}
        depth: list[str] = []
        while i < len(self.t):
            s = self.tx(i)
            if s in pairs:
                depth.append(pairs[s])
            elif depth and s == depth[-1]:
                depth.pop()
                if not depth:
                    return i + 1
            i += 1
        raise ParseError("unbalanced brackets")

    def skip_until(self, i: int, stops: set[str]) -> int:
        """The index of the first token in `stops` at bracket depth 0 from `i`."""
        while i < len(self.t) and self.tx(i) not in stops:
            i = self.skip_group(i) if self.tx(i) in "([{" else i + 1
        return i

    def site(self, op: str, i: int, before: str, after: str) -> int:
        if self.no_sites:
            return -1
        self.k += 1
        self.sites.append(RSite(self.k, op, self.line_of(i), self.function, before, after))
        return self.k

    # ---- types -------------------------------------------------------
    def skip_type(self, i: int) -> int:
        s = self.tx(i)
        if s in ("&", "&&"):
            i += 1
            if self.tx(i) == "mut":
                i += 1
            return self.skip_type(i)
        if s in ("[", "("):
            return self.skip_group(i)
        while True:  # a path with generics
            if self.tx(i) == "::":
                i += 1
            if self.t[i].kind != "ident":
                raise ParseError(f"type expected at {self.line_of(i)}")
            i += 1
            if self.tx(i) == "<":
                depth = 0
                while True:
                    s = self.tx(i)
                    depth += s.count("<") if s in ("<", "<<") else 0
                    depth -= {">": 1, ">>": 2}.get(s, 0)
                    i += 1
                    if depth <= 0:
                        break
            if self.tx(i) != "::":
                return i

    # ---- statements --------------------------------------------------
    def block(self, i: int) -> int:
        i = self.expect(i, "{")
        while self.tx(i) != "}":
            i = self.stmt(i)
        return i + 1

    def stmt(self, i: int) -> int:
        s = self.tx(i)
        if s == ";":
            return i + 1
        if s == "let":
            j = self.skip_until(i + 1, {"=", ";"})
            if self.tx(j) == "=":
                j = self.expr(j + 1)
            return self.expect(j, ";")
        if s in ("return", "break", "continue"):
            j = i + 1
            if self.tx(j) not in (";", "}"):
                j = self.expr(j)
            return j + 1 if self.tx(j) == ";" else j
        if s in ("if", "match", "for", "while", "loop", "{", "unsafe"):
            j = self.primary(i, False)  # a block-like statement ends at its closing brace
            return j + 1 if self.tx(j) == ";" else j
        if s in ("fn", "const", "static", "use"):
            return self.skip_until(i, {";", "{"}) + 1 if s != "fn" else self.skip_group(self.skip_until(i, {"{"}))
        j = self.expr(i)
        if self.tx(j) in ASSIGN:
            j = self.expr(j + 1)
            end = self.expect(j, ";")
            self.drop(i, end)
            return end
        if self.tx(j) == ";":
            if self.tx(j - 1) == ")":  # a call for its effect (a procedure, a zone operation)
                self.drop(i, j + 1)
            return j + 1
        return j  # a tail expression

    def drop(self, a: int, b: int) -> None:
        k = self.site("stmt_drop", a, self.text(a, b)[:60], "(statement dropped)")
        if k > 0:

            def make(raw: list[str], h: list[str], k: int = k) -> str:
                return f"if !__m({k}) {{ {h[0]} }}"

            self.nodes.append(Node(a, b, [(a, b)], make))

    # ---- expressions -------------------------------------------------
    def expr(self, i: int, min_prec: int = 0, no_struct: bool = False) -> int:
        a = i
        i = self.unary(i, no_struct)
        while True:
            op = self.tx(i)
            if op == "as":
                i = self.skip_type(i + 1)
                continue
            prec = PREC.get(op)
            if prec is None or prec < min_prec:
                return i
            if op in ("..", "..=") and self.tx(i + 1) in (")", "]", "{", ",", ";"):
                return i + 1  # an open range `a..`
            b0 = i + 1
            b1 = self.expr(b0, prec + 1, no_struct)
            if op in SWAP:
                self.binary(a, i, b0, b1, op)
            i = b1

    def binary(self, a: int, op_at: int, b0: int, b1: int, op: str) -> None:
        new = SWAP[op]
        k = self.site(OPS[op], op_at, op, new)
        if k <= 0:
            return

        def make(raw: list[str], h: list[str], k: int = k, op: str = op, new: str = new) -> str:
            return f"(if __m({k}) {{ ({raw[0]}) {new} ({raw[1]}) }} else {{ {h[0]} {op} {h[1]} }})"

        self.nodes.append(Node(a, b1, [(a, op_at), (b0, b1)], make))
        if op == "+" and b1 > b0:  # `row * N + col` in an index: swapping the two indices
            self.index_swap(a, op_at, b0, b1)

    def index_swap(self, a: int, plus: int, b0: int, b1: int) -> None:
        if not (a > 0 and self.tx(a - 1) == "[" and self.tx(b1) == "]"):
            return
        # the left side must be `X * N` at its top level: find its last top-level `*`
        depth, star = 0, -1
        for j in range(a, plus):
            s = self.tx(j)
            depth += s in "([{"
            depth -= s in ")]}"
            if depth == 0 and s in ("+", "-"):
                return
            if depth == 0 and s == "*":
                star = j
        if star < 0 or star + 2 != plus or self.t[star + 1].kind != "num":
            return
        r, c = self.text(a, star), self.text(b0, b1)
        if r == c:
            return
        k = self.site("index_swap", a, f"[{r} * N + {c}]", f"[{c} * N + {r}]")
        if k <= 0:
            return
        n = self.tx(star + 1)

        def make(raw: list[str], h: list[str], k: int = k, n: str = n, r: str = r, c: str = c) -> str:
            return f"(if __m({k}) {{ ({c}) * {n} + ({r}) }} else {{ {h[0]} }})"

        self.nodes.append(Node(a, b1, [(a, b1)], make))

    def unary(self, i: int, no_struct: bool) -> int:
        s = self.tx(i)
        if s in ("!", "-"):
            j = self.unary(i + 1, no_struct)
            if not (s == "-" and self.t[i + 1].kind == "num" and float(_num(self.tx(i + 1))) == 0.0):
                k = self.site("negation", i, self.text(i, j)[:40], self.text(i + 1, j)[:40])
                if k > 0:

                    def make(raw: list[str], h: list[str], k: int = k, s: str = s) -> str:
                        return f"(if __m({k}) {{ ({raw[0]}) }} else {{ {s}{h[0]} }})"

                    self.nodes.append(Node(i, j, [(i + 1, j)], make))
            return j
        if s in ("..", "..="):  # a range open at the start: `v[..2]`
            return i + 1 if self.tx(i + 1) in (")", "]", "}", ",", ";") else self.expr(i + 1, PREC[s] + 1, no_struct)
        if s in ("&", "&&", "*"):
            j = i + 1
            if self.tx(j) == "mut":
                j += 1
            return self.unary(j, no_struct)
        return self.postfix(i, self.primary(i, no_struct))

    def postfix(self, start: int, i: int) -> int:
        """Past the calls, fields, indexes and `?` after the primary at `start` (now at `i`)."""
        while True:
            s = self.tx(i)
            if s == "?":
                i += 1
            elif s == "." and self.t[i + 1].kind == "num":
                i += 2
            elif s == ".":
                name_at = i + 1
                i += 2
                if self.tx(i) == "::":
                    i = self.skip_turbofish(i)
                if self.tx(i) == "(":
                    i = self.args(i, self.tx(name_at), name_at, start)
            elif s == "(":
                i = self.args(i, "", -1, start)
            elif s == "[":
                j = self.expr(i + 1)
                i = self.expect(j, "]")
            else:
                return i

    def skip_turbofish(self, i: int) -> int:
        i = self.expect(i, "::")
        depth = 0
        while True:
            s = self.tx(i)
            depth += 1 if s == "<" else 0
            depth -= {">": 1, ">>": 2}.get(s, 0)
            i += 1
            if depth <= 0:
                return i

    def args(self, i: int, method: str, name_at: int, start: int) -> int:
        a = i
        i = self.expect(i, "(")
        while self.tx(i) != ")":
            i = self.expr(i)
            if self.tx(i) == ",":
                i += 1
        end = i + 1
        if method in METHODS and name_at > 0:
            new = METHODS[method]
            k = self.site("arith", name_at, method, new)
            if k > 0:
                recv = start  # the receiver: the whole postfix chain before the `.`

                def make(raw: list[str], h: list[str], k: int = k, m: str = method, new: str = new) -> str:
                    return f"(if __m({k}) {{ ({raw[0]}).{new}({raw[1]}) }} else {{ {h[0]}.{m}({h[1]}) }})"

                self.nodes.append(Node(recv, end, [(recv, name_at - 1), (a + 1, end - 1)], make))
        return end

    def primary(self, i: int, no_struct: bool) -> int:
        t = self.t[i]
        s = t.text
        if t.kind == "num":
            m = _INT.match(s.replace("_", ""))
            if m is not None:
                k = self.site("constant", i, s, f"{int(m.group(1)) + 1}{m.group(2) or ''}")
                if k > 0:
                    new = f"{int(m.group(1)) + 1}{m.group(2) or ''}"

                    def make(raw: list[str], h: list[str], k: int = k, s: str = s, new: str = new) -> str:
                        return f"(if __m({k}) {{ {new} }} else {{ {s} }})"

                    self.nodes.append(Node(i, i + 1, [], make))
            return i + 1
        if t.kind == "str" or s in ("true", "false", "self", "Self"):
            return i + 1
        if s == "(":
            j = i + 1
            while self.tx(j) != ")":
                j = self.expr(j)
                if self.tx(j) == ",":
                    j += 1
            return j + 1
        if s == "[":
            j = self.expr(i + 1)
            if self.tx(j) == ";":  # `[x; N]`: N is a constant expression, no sites
                return self.skip_group(i)
            while self.tx(j) == ",":
                j += 1
                if self.tx(j) == "]":
                    break
                j = self.expr(j)
            return self.expect(j, "]")
        if s == "{":
            return self.block(i)
        if s == "unsafe":
            return self.block(i + 1)
        if s == "if":
            return self.if_expr(i)
        if s == "match":
            j = self.expr(i + 1, no_struct=True)
            j = self.expect(j, "{")
            while self.tx(j) != "}":
                j = self.skip_until(j, {"=>"}) + 1
                j = self.expr(j)
                if self.tx(j) == ",":
                    j += 1
            return j + 1
        if s == "for":
            j = self.skip_until(i + 1, {"in"})
            j = self.expr(j + 1, no_struct=True)
            return self.block(j)
        if s == "while":
            self.no_sites += 1
            try:
                j = self.expr(i + 1, no_struct=True)
            finally:
                self.no_sites -= 1
            return self.block(j)
        if s == "loop":
            return self.block(i + 1)
        if s in ("|", "||", "move"):
            j = i + 1 if s == "move" else i
            if self.tx(j) == "|":
                j = self.skip_until(j + 1, {"|"}) + 1
            else:
                j += 1
            if self.tx(j) == "->":
                j = self.skip_type(j + 1)
            return self.expr(j)
        if s in ("return", "break"):
            return self.expr(i + 1) if self.tx(i + 1) not in (";", "}", ")", ",") else i + 1
        if s == "<":  # `<T as Trait>::f`
            depth, j = 0, i
            while True:
                depth += self.tx(j) == "<"
                depth -= self.tx(j) == ">"
                j += 1
                if depth == 0:
                    break
            return self.path(j - 1 if self.tx(j) == "::" else j, no_struct, qualified=True)
        if t.kind == "ident" or s == "::":
            return self.path(i, no_struct)
        raise ParseError(f"unexpected {s!r} at line {self.line_of(i)}")

    def path(self, i: int, no_struct: bool, qualified: bool = False) -> int:
        if not qualified:
            i += 1
        while self.tx(i) == "::":
            if self.tx(i + 1) == "<":
                i = self.skip_turbofish(i)
            else:
                i += 2
        if self.tx(i) == "!":  # a macro call
            return self.skip_group(i + 1)
        if self.tx(i) == "{" and not no_struct and self.tx(i - 1)[:1].isupper():
            return self.skip_group(i)
        return i

    def if_expr(self, i: int) -> int:
        if self.tx(i + 1) == "let":  # `if let PATTERN = EXPR { .. }`: no condition to flip
            j = self.skip_until(i + 2, {"="})
            j = self.block(self.expr(j + 1, no_struct=True))
            if self.tx(j) == "else":
                j = self.if_expr(j + 1) if self.tx(j + 1) == "if" else self.block(j + 1)
            return j
        c0 = i + 1
        c1 = self.expr(c0, no_struct=True)
        k = self.site("where_swap", c0, "if c { A } else { B }", "if c { B } else { A }")
        if k > 0:
            k2 = self.site("branch_drop", c0, "if c { A } else { B }", "B (then-arm dropped)")
            k3 = self.site("branch_drop", c0, "if c { A } else { B }", "A (else-arm dropped)")

            def make(raw: list[str], h: list[str], k: int = k, k2: int = k2, k3: int = k3) -> str:
                return (
                    f"(if __m({k}) {{ !({raw[0]}) }} else if __m({k2}) {{ false }} "
                    f"else if __m({k3}) {{ true }} else {{ {h[0]} }})"
                )

            self.nodes.append(Node(c0, c1, [(c0, c1)], make))
        j = self.block(c1)
        if self.tx(j) == "else":
            j = self.if_expr(j + 1) if self.tx(j + 1) == "if" else self.block(j + 1)
        return j


def _num(s: str) -> str:
    return re.sub(r"[iuf](8|16|32|64|128|size)$", "", s.replace("_", ""))


def _nest(nodes: list[Node]) -> list[Node]:
    """Nodes as a forest: each inside the smallest hole of an earlier/larger node containing it."""
    nodes = sorted(nodes, key=lambda n: (n.a, -n.b, not n.wrapper))
    roots: list[Node] = []
    stack: list[Node] = []
    for n in nodes:
        while stack and not (stack[-1].a <= n.a and n.b <= stack[-1].b):
            stack.pop()
        if stack:
            parent = stack[-1]
            if not any(h0 <= n.a and n.b <= h1 for h0, h1 in parent.holes):
                raise ParseError("a site straddles another site's operator")
            parent.children.append(n)
        else:
            roots.append(n)
        stack.append(n)
    return roots


def _emit(toks: list[Tok], src: str, a: int, b: int, nodes: list[Node]) -> str:
    """Source of token range [a, b) with the nodes inside it rewritten (nodes sorted and disjoint)."""
    if b <= a:
        return ""
    out: list[str] = []
    cursor = toks[a].start
    for n in nodes:
        if not (a <= n.a and n.b <= b):
            continue
        out.append(src[cursor : toks[n.a].start])
        out.append(_render(toks, src, n))
        cursor = toks[n.b - 1].end
    out.append(src[cursor : toks[b - 1].end])
    return "".join(out)


def _render(toks: list[Tok], src: str, n: Node) -> str:
    raw = [src[toks[h0].start : toks[h1 - 1].end] for h0, h1 in n.holes]
    return n.make(raw, [_emit(toks, src, h0, h1, n.children) for h0, h1 in n.holes])


SWITCH = """
// envc mutate: the mutant schema's switch (0 runs the original code; `envc_set_mutant` picks one)
static ENVC_MUTANT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[inline(always)]
fn __m(k: u32) -> bool {
    ENVC_MUTANT.load(std::sync::atomic::Ordering::Relaxed) == k
}

#[no_mangle]
pub extern "C" fn envc_set_mutant(k: u32) {
    ENVC_MUTANT.store(k, std::sync::atomic::Ordering::Relaxed);
    if k == 0 {
        let _ = std::panic::take_hook(); // the default hook again
    } else {
        std::panic::set_hook(Box::new(|_| {})); // a mutant's panic is a test failure, not news on stderr
    }
}
"""


def schema(src: str, line_spans: dict[int, Span]) -> tuple[str, list[RSite], list[str]]:
    """`src` with every site of its single-state functions under the switch; the sites; functions skipped."""
    toks = tokenize(src)
    starts = [0]
    for m in re.finditer("\n", src):
        starts.append(m.end())

    def line_of(i: int) -> int:
        return bisect.bisect_right(starts, toks[i].start)

    sites: list[RSite] = []
    nodes: list[Node] = []
    skipped: list[str] = []
    depth, i = 0, 0
    while i < len(toks):
        s = toks[i].text
        if s in "{([":
            depth += 1
        elif s in "})]":
            depth -= 1
        if depth == 0 and s == "fn" and toks[i + 1].kind == "ident":
            name = toks[i + 1].text
            body = i
            while toks[body].text != "{":
                body += 1
            head = src[toks[i].start : toks[body].start]
            p = Parser(toks, src, name, line_of, len(sites))
            end = p.skip_group(body)
            if _LANES.search(head):
                i = end
                continue
            try:
                if p.block(body) != end:
                    raise ParseError("the body did not end where its braces do")
                nest = _nest(p.nodes)
            except (ParseError, IndexError) as e:
                skipped.append(f"{name}: {e}")
                i = end
                continue
            sites += p.sites
            nodes += nest
            i = end
            continue
        i += 1
    out = _emit(toks, src, 0, len(toks), sorted(nodes, key=lambda n: n.a))
    tail = src[toks[-1].end :] if toks else ""
    # the schema's extra parentheses and blocks are not the generated code's style: no warnings for them; a
    # mutant's constant expression that overflows or indexes out of range (`0 - 64` in a slice bound) must not
    # stop the build: it panics when that mutant runs, which the suite sees as a failure
    allow = "#![allow(unused_parens, unused_braces, arithmetic_overflow, unconditional_panic)]\n"
    return allow + out + tail + SWITCH, sites, skipped


class RustProgram:
    """The generated crate of `spec` as one mutant schema, built once, with the mutant picked at run time."""

    backend = "rust"

    def __init__(self, spec: ir.SpecIR, progress: Callable[[str], None] | None = None):
        import envc.lower_rust as lower
        from envc.lower_rust.build import cache_dir
        from envc.lower_rust.emit import Emitter

        self.spec = spec
        text = Path(spec.path).read_text() if Path(spec.path).exists() else spec.name
        placeholder = "envc_mutant_schema_rs"
        with mock.patch.object(lower, "rustfmt", lambda s: s):
            with marked_lines(Emitter, "//") as spans:
                marked = lower.render(spec, text, placeholder, runtime_path="RUNTIME")["src/env.rs"]
            plain = lower.render(spec, text, placeholder, runtime_path="RUNTIME")["src/env.rs"]
        source, self.line_spans = strip_marks(marked, spans)
        if source != plain:
            self.line_spans = {}
            source = plain
        self.source = source
        schema_src, self.sites, skipped = schema(source, self.line_spans)
        self.notes = [f"not mutated: {s}" for s in skipped]
        digest = hashlib.sha256((schema_src + lower.runtime_digest()).encode()).hexdigest()
        self.package = f"envc_{re.sub(r'[^A-Za-z0-9_]', '_', spec.name)}_{digest[:10]}_mut_rs"
        self.root = cache_dir() / "rust" / "mutants" / self.package
        self._lines = source.split("\n")
        self.module = self._build(spec, text, schema_src, progress)
        core = sys.modules[f"{self.package}._core"]
        self._lib = ctypes.CDLL(str(core.__file__))
        self._lib.envc_set_mutant.argtypes = [ctypes.c_uint32]
        self._env: Any = None
        (self.root / "env.rs").write_text(source)  # the file the reported lines refer to

    @property
    def file(self) -> str:
        """The unformatted generated source the lines refer to (under ~/.cache/envc/rust/mutants/)."""
        return f"{self.package}/env.rs"

    def _build(self, spec: ir.SpecIR, text: str, schema_src: str, progress: Callable[[str], None] | None) -> Any:
        import envc.lower_rust as lower
        from envc.lower_rust.build import RustBuildError, cargo_build, shared_runtime, target_dir

        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        done = self.root / self.package / f"_core{suffix}"
        if not done.exists():
            with mock.patch.object(lower, "rustfmt", lambda s: s):
                files = lower.render(spec, text, self.package, runtime_path=str(shared_runtime()))
            files["src/env.rs"] = schema_src
            crate = self.root.parent / "crates" / self.package
            shutil.rmtree(crate, ignore_errors=True)
            for rel, body in files.items():
                if rel.startswith("python/"):
                    continue
                p = crate / rel
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(body)
            (crate / "Cargo.lock").write_text(lower.crate_lock(self.package, lower.cargo_version(spec.version)))
            try:
                cargo_build(crate / "Cargo.toml", progress)
            except RustBuildError as e:
                raise MutateError(f"the mutant schema of {spec.name} does not build: {e}") from None
            tmp = Path(tempfile.mkdtemp(dir=self.root.parent, prefix=f".{self.package}-"))
            for rel, body in files.items():
                if rel.startswith("python/"):
                    p = tmp / rel.removeprefix("python/")
                    p.parent.mkdir(parents=True, exist_ok=True)
                    p.write_text(body)
            shutil.copy2(target_dir() / "release" / f"lib{self.package}.so", tmp / self.package / f"_core{suffix}")
            shutil.rmtree(self.root, ignore_errors=True)
            tmp.rename(self.root)
        if str(self.root) not in sys.path:
            sys.path.insert(0, str(self.root))
        return importlib.import_module(self.package)

    def span(self, site: RSite) -> Span | None:
        """The spec span the site's generated line was lowered from."""
        return self.line_spans.get(site.line)

    def code(self, site: RSite) -> str:
        """The generated line of the site."""
        return self._lines[site.line - 1].strip()[:160] if 0 < site.line <= len(self._lines) else ""

    def same_tree(self, site: RSite) -> str | None:
        """Why the mutant is the original program, for two shapes the generator emits that are provably so
        (the rest is left to the suite): a draw buffer's initial zeros, which the loop right after it overwrites
        entry by entry before anything reads them; and a reset write of the value the field already holds (the
        reset starts from the declared inits, and nothing before the write in the reset can change it)."""
        code = self.code(site)
        buf = _DRAW_BUFFER.fullmatch(code)
        if site.op == "constant" and buf is not None:
            name, n = buf.group(1), buf.group(2)
            after = [ln.strip() for ln in self._lines[site.line : site.line + 2]]
            if after[:1] == [f"for i in 0..{n} {{"] and after[1:2] and after[1].startswith(f"{name}[i] = "):
                return f"proven: every entry of `{name}` is written by the loop after it before it is read"
        write = _RESET_WRITE.fullmatch(code)
        if site.op == "stmt_drop" and site.function == "reset_body" and write is not None:
            fname, lit = write.group(1), write.group(2)
            f = next((f for f in self.spec.fields if f.name == fname and not f.ty.shape), None)
            if f is not None and len(f.init) == 1 and _same_literal(lit, f.init[0]):
                start = next(i for i in range(site.line - 1, -1, -1) if self._lines[i].lstrip().startswith("fn "))
                before = self._lines[start + 1 : site.line - 1]
                if not any(re.search(rf"\bst\.{fname}\b|\(st\b|&mut st\b|, st\b", ln) for ln in before):
                    return f"proven: the reset writes {lit}, the declared init, to `{fname}` before anything else does"
        return None

    def activate(self, site: RSite | None) -> Any:
        """The one env of the schema, switched to `site` (None: the original)."""
        from envc.lower_rust.build import RustEnv

        self._lib.envc_set_mutant(0 if site is None else site.k)
        if self._env is None:
            self._env = RustEnv(self.spec, module=self.module)
        return self._env

    def identical(self, site: RSite, env: Any) -> str | None:
        """No program comparison for Rust (the schema holds every mutant)."""
        return None

    def release(self) -> None:
        """Back to the original code."""
        self._lib.envc_set_mutant(0)
