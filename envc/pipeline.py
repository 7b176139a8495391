"""The front end as one call: load -> validate sections -> parse + check -> IR, with located diagnostics."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import BaseModel, ValidationError

from envc import document as d
from envc.check import check
from envc.check.tables import show
from envc.diagnostics import Diagnostic, Diagnostics, Span, SpecError, did_you_mean
from envc.ir import SpecIR
from envc.load import YMap, YNode, YScalar, YSeq, key_span, load_yaml, node_at, to_python
from envc.parse import MAX_NESTING


def _all_keys(model: type[BaseModel], seen: set[str] | None = None) -> set[str]:
    seen = seen if seen is not None else set()
    for name, f in model.model_fields.items():
        seen.add(name)
        for sub in _models_in(f.annotation):
            if sub.__name__ not in seen:
                seen.add(sub.__name__)
                _all_keys(sub, seen)
    return seen


def _models_in(tp: object) -> list[type[BaseModel]]:
    out: list[type[BaseModel]] = []
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    for a in getattr(tp, "__args__", ()) or ():
        out += _models_in(a)
    meta = getattr(tp, "__metadata__", None)
    if meta is not None:
        out += _models_in(getattr(tp, "__origin__", None))
    return out


KNOWN_KEYS = sorted(k for k in _all_keys(d.SpecDocument) if k[0].islower())
SECTIONS = list(d.SpecDocument.model_fields)


def _validate(root: YNode, path: str, diags: Diagnostics) -> d.SpecDocument | None:
    if not isinstance(root, YMap):
        diags.error(root.span, "E012", "a spec must be a YAML mapping of sections (name, state, actions, ...)")
        return None
    try:
        return d.SpecDocument.model_validate(to_python(root))
    except ValidationError as e:
        bad: dict[tuple[object, ...], list[tuple[str, str, frozenset[str], dict[str, object]]]] = {}
        for err in e.errors(include_url=False):
            loc = tuple(err["loc"])
            kind = err["type"]
            if kind == "missing":
                where = node_at(root, loc[:-1])
                what = "section" if len(loc) == 1 else "key"
                diags.error(_head(where), "E010", f"missing required {what} '{loc[-1]}'")
            elif kind == "extra_forbidden":
                key = str(loc[-1])
                pool = SECTIONS if len(loc) == 1 else KNOWN_KEYS
                what = "section" if len(loc) == 1 else "key"
                diags.error(key_span(root, loc).span, "E011", f"unknown {what} '{key}'{did_you_mean(key, pool)}")
            else:
                real, tags = _split_loc(root, loc)
                bad.setdefault(real, []).append((kind, err["msg"], tags, dict(err.get("ctx") or {})))
        for real, errs in bad.items():
            node = node_at(root, real)
            label = ".".join(str(x) for x in real) or "spec"
            diags.error(node.span, "E012", f"{label}: {_explain(errs, node)}")
        return None


def _split_loc(root: YNode, loc: tuple[object, ...]) -> tuple[tuple[object, ...], frozenset[str]]:
    """A pydantic error location as (the steps that exist in the YAML tree, the union-branch tags in between)."""
    node: YNode | None = root
    real: list[object] = []
    tags: set[str] = set()
    for step in loc:
        nxt = None
        if isinstance(node, YMap) and isinstance(step, str):
            nxt = node.get(step)
        elif isinstance(node, YSeq) and isinstance(step, int) and 0 <= step < len(node.items):
            nxt = node.items[step]
        if nxt is None:
            tags.add(str(step))  # 'short form', 'int', 'function-after[...]', ...: not in the file
        else:
            real.append(step)
            node = nxt
    return tuple(real), frozenset(tags)


# what a pydantic error type says was expected
_EXPECTED = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "string_type": "text",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true/false",
    "bool_parsing": "true/false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "union_tag_invalid": "a mapping",
    "union_tag_not_found": "a mapping",
}

_ORDER = ["a whole number", "a number", "true/false", "text", "a list", "a mapping"]


def _explain(errs: list[tuple[str, str, frozenset[str], dict[str, object]]], node: YNode) -> str:
    """One message for all errors at one place (a union gives one error per branch)."""
    value = node.value if isinstance(node, YScalar) else None
    got = _got(node)
    if all(kind in _EXPECTED for kind, _, _, _ in errs):
        wanted = {_EXPECTED[kind] for kind, _, _, _ in errs}
        if any("short form" in tags for _, _, tags, _ in errs):
            wanted.add("a mapping")  # the long form of a key that also has a short form
        if "a number" in wanted:
            wanted.discard("a whole number")
        text = f"expected {' or '.join(w for w in _ORDER if w in wanted)}, got {got}"
        if wanted == {"text"} and isinstance(node, YScalar) and not node.style and not isinstance(value, str):
            text += f'; quote it: "{node.text}"'  # YAML read on/off/yes/no, 1.0, ~ as a bool, number or null
        return text
    kind, msg, _, ctx = next((x for x in errs if x[0] not in _EXPECTED), errs[0])
    if msg.startswith("Input should be "):
        msg = "should be " + msg[len("Input should be ") :]
    if kind == "literal_error" or "expected" in ctx or msg.startswith("should be"):
        return f"{msg}, got {got}"
    return msg


def _got(node: YNode) -> str:
    if isinstance(node, YMap):
        return "a mapping"
    if isinstance(node, YSeq):
        return "a list"
    assert isinstance(node, YScalar)
    v = node.value
    if v is None:
        return "nothing (null)"
    if isinstance(v, bool):
        return f"the boolean {node.text}" if node.text else f"the boolean {str(v).lower()}"
    if isinstance(v, (int, float)):
        return f"the number {node.text or v}"
    return show(v)


def _head(node: YNode) -> Span:
    s = node.span
    return Span(s.path, s.line, s.col, s.line, s.col + 1)


# The checker recurses up to five Python frames per level of an expression (a chain of 158 `not`s needs 805
# frames), and the parser admits MAX_NESTING levels: close to Python's default limit of 1000 frames before the
# caller's own stack (a test runner, the language server) is counted. While a lint runs the limit is raised to this
# (Python frames live on the heap since 3.11, so this costs no C stack), and put back when the last concurrent lint
# ends. Walks over the call graph (recursion, budget) are iterative: a chain of calls may be thousands long.
_FRAMES = 12 * MAX_NESTING + 2000
_limit_lock = threading.Lock()
_linting = 0
_saved_limit = 0


@contextmanager
def _frame_headroom() -> Iterator[None]:
    global _linting, _saved_limit
    with _limit_lock:
        if _linting == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, _FRAMES))
        _linting += 1
    try:
        yield
    finally:
        with _limit_lock:
            _linting -= 1
            if _linting == 0:
                sys.setrecursionlimit(_saved_limit)


def lint(path: str, text: str | None = None) -> tuple[SpecIR | None, list[Diagnostic]]:
    """Run the whole front end; returns the IR (None on errors) and all diagnostics in file order."""
    diags = Diagnostics()
    root, _ = load_yaml(path, diags, text)
    spec = None
    if root is not None:
        doc = _validate(root, path, diags)
        if doc is not None:
            try:
                with _frame_headroom():
                    spec = check(doc, root, path, diags)
            except RecursionError:  # pragma: no cover - MAX_NESTING keeps the checker well inside the headroom
                diags.error(Span.point(path, 1, 1), "E003", "a rule body is nested too deeply to check")
    return (spec if not diags.has_errors else None), diags.sorted()


def load(path: str) -> SpecIR:
    """Load and check a spec; raises SpecError with located diagnostics."""
    spec, ds = lint(str(path))
    if spec is None:
        raise SpecError([x for x in ds if x.severity.value == "error"])
    return spec
