"""Located diagnostics: every problem in a spec points at path:line:col of the YAML file."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

CODES: dict[str, str] = {
    "E001": "file cannot be read as a UTF-8 text spec (missing, binary, non-UTF-8, too large)",
    "E002": "YAML syntax error",
    "E003": "YAML structure not allowed in specs (anchors/aliases, explicit tags, too deep, too many nodes), or code "
    "nested too deeply (a rule body, calls in calls)",
    "E010": "missing required section or key",
    "E011": "unknown section or key",
    "E012": "invalid value for a section or key",
    "E013": "invalid identifier (not a name, or a reserved word)",
    "E014": "constant table or data file error",
    "E020": "syntax error in a rule body or expression",
    "E030": "unknown name",
    "E031": "duplicate name",
    "E040": "type mismatch",
    "E041": "shape mismatch",
    "E042": "wrong number of arguments",
    "E043": "not assignable (not a state field or local)",
    "E050": "assignment to a constant or read-only value",
    "E051": "loop bound or shape is not static",
    "E052": "action parameter range is empty or invalid",
    "E053": "constant index statically out of range",
    "E054": "side effect (state write or randomness) where only pure expressions are allowed",
    "E055": "recursive function or procedure",
    "E056": "`return` missing or misplaced",
    "E057": "match does not cover an enum member or names an unknown member",
    "E058": "work of one step over the static budget (loop iterations, loops multiplied out, calls expanded)",
    "W001": "rule text not yet formalized (draft)",
    "W002": "unused declaration",
}


class Severity(str, Enum):
    """How bad a diagnostic is."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Span:
    """A 1-based, end-exclusive range in a file."""

    path: str
    line: int
    col: int
    end_line: int
    end_col: int

    @staticmethod
    def point(path: str, line: int, col: int) -> Span:
        """A one-character span."""
        return Span(path, line, col, line, col + 1)


@dataclass(frozen=True)
class Diagnostic:
    """One located problem with a stable code."""

    span: Span
    severity: Severity
    code: str
    message: str

    def format(self) -> str:
        """The `path:line:col: error[CODE]: message` text form."""
        s = self.span
        return f"{s.path}:{s.line}:{s.col}: {self.severity.value}[{self.code}]: {self.message}"

    def to_json(self) -> dict[str, object]:
        """The `--format json` form."""
        s = self.span
        return {
            "path": s.path,
            "line": s.line,
            "col": s.col,
            "end_line": s.end_line,
            "end_col": s.end_col,
            "severity": self.severity.value,
            "code": self.code,
            "message": self.message,
        }


@dataclass
class Diagnostics:
    """An accumulator of diagnostics for one spec."""

    items: list[Diagnostic] = field(default_factory=list)

    def error(self, span: Span, code: str, message: str) -> None:
        """Record an error."""
        assert code in CODES, code
        self.items.append(Diagnostic(span, Severity.ERROR, code, one_line(message)))

    def warning(self, span: Span, code: str, message: str) -> None:
        """Record a warning."""
        assert code in CODES, code
        self.items.append(Diagnostic(span, Severity.WARNING, code, one_line(message)))

    @property
    def has_errors(self) -> bool:
        """Whether any error was recorded."""
        return any(d.severity is Severity.ERROR for d in self.items)

    def sorted(self) -> list[Diagnostic]:
        """Diagnostics in file order, duplicates removed."""
        seen: set[tuple[Span, str, str]] = set()
        out = []
        for d in sorted(self.items, key=lambda d: (d.span, d.code)):
            k = (d.span, d.code, d.message)
            if k not in seen:
                seen.add(k)
                out.append(d)
        return out


class SpecError(Exception):
    """A spec failed to load; `diagnostics` says where and why."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        super().__init__("\n".join(d.format() for d in diagnostics))


class SpecRuntimeError(Exception):
    """A spec bug found while running it (division by zero, index out of range, ...)."""

    def __init__(self, span: Span, message: str):
        self.span = span
        super().__init__(f"{span.path}:{span.line}:{span.col}: runtime error: {message}")


_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def one_line(message: str) -> str:
    """A message on one line: line breaks and other control characters (from quoted spec text) escaped."""
    if _CONTROL.search(message) is None:
        return message
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), message.strip())


def did_you_mean(name: str, candidates: list[str]) -> str:
    """A ` (did you mean 'x'?)` suffix, or ''. A candidate differing only in case wins (the first listed, so
    callers list declarations before builtins). Among many candidates only the 200 closest in length are compared
    (all of them made 50 misspellings in a spec with 8,000 functions take 30 s)."""
    import difflib
    import heapq

    pool = [c for c in candidates if c != name]
    folded = name.casefold()
    same = next((c for c in pool if c.casefold() == folded), None)  # `PI` for `pi`: the first one listed wins
    if same is not None:
        return f" (did you mean '{same}'?)"
    if len(pool) > 200:
        pool = heapq.nsmallest(200, pool, key=lambda c: abs(len(c) - len(name)))
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
