"""Which spec line each generated line comes from, and which spec lines the reference interpreter runs.

Generated line -> spec line: the backend's `render` is run once more with each emitter's `line()` appending a
marker comment naming the spec span of the statement (or outermost expression) being lowered; the markers are
stripped and the text must equal the plain rendering byte for byte, so the map describes the shipped code.
Nothing in the emitters changes: the hook is installed on the class for the length of one `render` call.

Reference coverage: `Compiler.stmt` / `Compiler.expr` of `envc.interpret` are wrapped while a `ReferenceEnv` is
built, so every statement and expression closure records its span when it runs.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any

from envc.diagnostics import Span

MARK = "@envc-span:"
_MARKED = re.compile(r" (?:#|//) " + re.escape(MARK) + r"(\d+)")


@contextlib.contextmanager
def marked_lines(emitter: Any, comment: str) -> Iterator[list[Span]]:
    """While active, `emitter.line` appends `{comment} @envc-span:N` where N indexes the yielded span list."""
    spans: list[Span] = []
    index: dict[Span, int] = {}
    saved: dict[str, Any] = {}

    def current(self: Any) -> Span | None:
        stack = self.__dict__.get("_envc_stack")
        got: Span | None = stack[-1] if stack else self.__dict__.get("_envc_last")
        return got

    def line(self: Any, text: str) -> None:
        span = current(self)
        if span is None:
            saved["line"](self, text)
            return
        i = index.setdefault(span, len(spans))
        if i == len(spans):
            spans.append(span)
        saved["line"](self, f"{text} {comment} {MARK}{i}")

    def wrap_stmt(orig: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, s: Any, *args: Any, **kw: Any) -> Any:
            stack = self.__dict__.setdefault("_envc_stack", [])
            stack.append(s.span)
            try:
                return orig(self, s, *args, **kw)
            finally:
                stack.pop()

        return run

    def expr(self: Any, e: Any, *args: Any, **kw: Any) -> Any:
        stack = self.__dict__.setdefault("_envc_stack", [])
        if stack:
            return saved["expr"](self, e, *args, **kw)
        stack.append(e.span)  # an output function's one expression (reward, terminated, a legal rule ...)
        try:
            return saved["expr"](self, e, *args, **kw)
        finally:
            stack.pop()
            self.__dict__["_envc_last"] = e.span

    saved["line"], saved["expr"] = emitter.line, emitter.expr
    stmt_methods = [n for n in vars(emitter) if n.startswith("s_") and callable(getattr(emitter, n))]
    for n in stmt_methods:
        saved[n] = getattr(emitter, n)
    try:
        emitter.line = line
        emitter.expr = expr
        for n in stmt_methods:
            setattr(emitter, n, wrap_stmt(saved[n]))
        yield spans
    finally:
        for n, f in saved.items():
            setattr(emitter, n, f)


def strip_marks(text: str, spans: list[Span]) -> tuple[str, dict[int, Span]]:
    """`text` without the markers, and 1-based line -> span for the lines that had one."""
    out: list[str] = []
    where: dict[int, Span] = {}
    for n, ln in enumerate(text.split("\n"), 1):
        # a marker is usually at the end, but an emitter may append to a marked line (`} else if ...`)
        found = _MARKED.findall(ln)
        if found:
            where[n] = spans[int(found[0])]
        out.append(_MARKED.sub("", ln))
    return "\n".join(out), where


@contextlib.contextmanager
def reference_coverage() -> Iterator[set[Span]]:
    """Spans of the statements and expressions that the reference interpreters built inside the block run."""
    from envc.interpret import Compiler

    hits: set[Span] = set()
    orig_stmt, orig_expr = Compiler.stmt, Compiler.expr

    def stmt(self: Any, s: Any) -> Any:
        op = orig_stmt(self, s)
        sp = s.span

        def run(fr: Any) -> Any:
            hits.add(sp)
            return op(fr)

        return run

    def expr(self: Any, e: Any) -> Any:
        f = orig_expr(self, e)
        sp = e.span

        def run(fr: Any) -> Any:
            hits.add(sp)
            return f(fr)

        return run

    Compiler.stmt, Compiler.expr = stmt, expr  # type: ignore[method-assign]
    try:
        yield hits
    finally:
        Compiler.stmt, Compiler.expr = orig_stmt, orig_expr  # type: ignore[method-assign]
