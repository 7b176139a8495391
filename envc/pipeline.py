"""The front end as one call: load -> validate sections -> parse + check -> IR, with located diagnostics."""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from envc import document as d
from envc.check import check
from envc.diagnostics import Diagnostic, Diagnostics, Span, SpecError, did_you_mean
from envc.ir import SpecIR
from envc.load import YMap, YNode, key_span, load_yaml, node_at, to_python


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
                real = [str(x) for x in loc if not (isinstance(x, str) and (" " in x or "[" in x))]
                label = ".".join(real) or "spec"
                msg = err["msg"]
                if kind.startswith("union_tag") or kind == "model_type":
                    msg = "expected a mapping"
                diags.error(node_at(root, loc).span, "E012", f"{label}: {msg}")
        return None


def _head(node: YNode) -> Span:
    s = node.span
    return Span(s.path, s.line, s.col, s.line, s.col + 1)


def lint(path: str, text: str | None = None) -> tuple[SpecIR | None, list[Diagnostic]]:
    """Run the whole front end; returns the IR (None on errors) and all diagnostics in file order."""
    diags = Diagnostics()
    root, _ = load_yaml(path, diags, text)
    spec = None
    if root is not None:
        doc = _validate(root, path, diags)
        if doc is not None:
            try:
                spec = check(doc, root, path, diags)
            except RecursionError:
                diags.error(Span.point(path, 1, 1), "E003", "an expression is nested too deeply")
    return (spec if not diags.has_errors else None), diags.sorted()


def load(path: str) -> SpecIR:
    """Load and check a spec; raises SpecError with located diagnostics."""
    spec, ds = lint(str(path))
    if spec is None:
        raise SpecError([x for x in ds if x.severity.value == "error"])
    return spec
