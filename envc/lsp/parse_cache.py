"""Memoized rule-body parsing for the language server: an edit re-parses only the bodies whose text changed.

envc.parse reaches its LALR parser through `envc.parse.parser()`; `install()` makes that return a wrapper that
keeps lark parse trees by (text, start). Trees hold positions relative to the body's own text (the file position
is added when the tree becomes an AST), so a body moved by an edit above it is still a hit. Failed parses are not
kept: they raise, and the parser reports them afresh each time. Only the `envc lsp` process (and the benchmark)
installs it; `envc lint` parses every body once anyway.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import envc.parse


class TreeCache:
    """An LRU of lark parse trees in front of a lark parser."""

    def __init__(self, inner: Any, size: int = 8192):
        self.inner = inner
        self.size = size
        self.trees: OrderedDict[tuple[str, str | None], Any] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def parse(self, text: str, start: str | None = None, **kw: Any) -> Any:
        """The parse tree of `text` from rule `start`, from the cache when this text was parsed before."""
        key = (text, start)
        with self._lock:
            tree = self.trees.get(key)
            if tree is not None:
                self.trees.move_to_end(key)
                self.hits += 1
                return tree
        tree = self.inner.parse(text, start=start, **kw)
        with self._lock:
            self.misses += 1
            self.trees[key] = tree
            if len(self.trees) > self.size:
                self.trees.popitem(last=False)
        return tree

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


_installed: TreeCache | None = None


def install(size: int = 8192) -> TreeCache:
    """Route envc.parse's parser through a TreeCache in this process (idempotent); returns the cache."""
    global _installed
    if _installed is None:
        original = envc.parse.parser
        cache = TreeCache(original(), size)

        def cached_parser() -> Any:
            """The LALR parser, with parse trees memoized (envc.lsp.parse_cache)."""
            return cache

        cached_parser.original = original  # type: ignore[attr-defined]
        envc.parse.parser = cached_parser  # type: ignore[assignment]
        _installed = cache
    return _installed


def uninstall() -> None:
    """Put envc.parse's own parser back."""
    global _installed
    if _installed is not None:
        envc.parse.parser = envc.parse.parser.original  # type: ignore[attr-defined]
        _installed = None
