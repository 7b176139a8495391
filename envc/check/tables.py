"""Constant data: scalar/array constants and tables, inline or from CSV/YAML files beside the spec."""

from __future__ import annotations

import csv
import io
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Union

from envc.diagnostics import Diagnostics, Span
from envc.ir import DType, Ty
from envc.load import MAX_NODES, YSeq, compose_text, read_at_most, to_python

Value = Union[bool, int, float]
MAX_DATA_BYTES = 8 * 1024 * 1024
# YAML data files: as many nodes as a spec (each costs ~20 us to compose, convert and check: 2.7M nodes took 53 s
# of CPU); bigger data goes in a CSV file
MAX_DATA_NODES = MAX_NODES
MAX_DATA_ROWS = 1 << 20  # CSV rows: no array holds more elements (check.MAX_ELEMENTS); reading 2M rows took 20 s


class DataError(Exception):
    """A bad value; `span` says where."""

    def __init__(self, span: Span, message: str):
        self.span = span
        self.message = message


@dataclass
class DataFile:
    """The rows of a data file and where each one starts."""

    path: str  # as shown in diagnostics (beside the spec's path)
    rows: list[object]  # CSV: dicts (header -> cell text); YAML: the list's items
    spans: list[Span]  # start of each row in the file
    header: Span | None = None  # CSV: the header row
    header_names: list[str] = field(default_factory=list)


def read_data_file(spec_path: str, rel: str, span: Span, diags: Diagnostics) -> DataFile | None:
    """Rows of a CSV (dicts) or YAML (list items) file next to the spec; None with a diagnostic on failure."""
    try:
        base = Path(spec_path).resolve().parent
        target = (base / rel).resolve()
    except (OSError, RuntimeError, ValueError) as e:  # a symlink loop (RuntimeError), a NUL in the name (ValueError)
        diags.error(span, "E014", f"cannot resolve data file '{rel}': {e}")
        return None
    if base not in target.parents and target != base:
        diags.error(span, "E014", f"data file '{rel}' is outside the spec's folder")
        return None
    try:
        raw = read_at_most(target, MAX_DATA_BYTES + 1)
    except OSError as e:
        diags.error(span, "E014", f"cannot read data file '{rel}': {e.strerror or e}")
        return None
    if len(raw) > MAX_DATA_BYTES:
        diags.error(span, "E014", f"data file '{rel}' is larger than {MAX_DATA_BYTES} bytes")
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        diags.error(span, "E014", f"data file '{rel}' is not valid UTF-8")
        return None
    shown = str(Path(spec_path).parent / target.relative_to(base))  # the file read ('a/../x.csv' may not open)
    if target.suffix.lower() == ".csv":
        return _read_csv(shown, text, diags)
    node, ok = compose_text(shown, text, diags, max_nodes=MAX_DATA_NODES)
    if not ok:
        return None
    if not isinstance(node, YSeq):
        diags.error(span, "E014", f"data file '{rel}' must hold a list (of rows or values)")
        return None
    return DataFile(shown, [to_python(n) for n in node.items], [_start(n.span) for n in node.items])


def _start(s: Span) -> Span:
    return Span.point(s.path, s.line, s.col)


def _read_csv(shown: str, text: str, diags: Diagnostics) -> DataFile | None:
    """A CSV file with a header row; blank lines are skipped, and every row knows the line it starts on."""
    counter = csv.reader(io.StringIO(text, newline=""))
    try:  # a quick count first: the loop below takes seconds per million rows
        rows = sum(1 for _ in itertools.islice(filter(None, counter), MAX_DATA_ROWS + 2))
    except csv.Error:
        rows = 0  # reported by the loop below, where it is
    if rows > MAX_DATA_ROWS + 1:  # the header and more rows than any array holds
        diags.error(
            Span.point(shown, counter.line_num, 1),
            "E014",
            f"more than {MAX_DATA_ROWS:,} rows: no constant or table column holds that many",
        )
        return None
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    out = DataFile(shown, [], [])
    end = 0  # last line read so far
    try:
        for cells in reader:
            start, end = end + 1, reader.line_num
            if not cells:
                continue  # a blank line (the csv module skips them too)
            if header is None:
                header = cells
                out.header, out.header_names = Span.point(shown, start, 1), cells
                continue
            here = Span.point(shown, start, 1)
            if len(cells) > len(header):
                diags.error(
                    here,
                    "E014",
                    f"this row has {len(cells)} cells, but the header names {len(header)} columns "
                    f"({', '.join(header)})",
                )
            row: dict[str, str | None] = dict.fromkeys(header)
            row.update(zip(header, cells))
            out.rows.append(row)
            out.spans.append(here)
    except csv.Error as e:
        diags.error(Span.point(shown, end + 1, 1), "E014", f"not valid CSV: {e}")
        return None
    return out


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def show(raw: object, limit: int = 40) -> str:
    """A value quoted for a one-line message: control characters escaped, long text shortened."""
    text = raw if isinstance(raw, str) else repr(raw)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
    return f"'{text}'" if isinstance(raw, str) else text


def _hint(raw: object) -> str:
    if isinstance(raw, str) and "\n" in raw.strip():
        return " (the cell runs over several lines: is a closing quote missing?)"
    return ""


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aefiou" else f"a {word}"


@cache
def _int_range(dtype: DType) -> tuple[int, int]:
    return dtype.int_range


def scalar_value(raw: object, ty: Ty, enum_members: Callable[[str], tuple[str, ...] | None], span: Span) -> Value:
    """Convert one raw cell (YAML value or CSV text) to a value of scalar type `ty`."""
    if ty.enum is not None:
        members = enum_members(ty.enum) or ()
        if isinstance(raw, str) and raw.strip() in members:
            return members.index(raw.strip())
        raise DataError(span, f"{show(raw)} is not a member of enum {ty.enum} ({', '.join(members)}){_hint(raw)}")
    if isinstance(raw, str):
        s = raw.strip()
        if ty.dtype is DType.BOOL:
            if s.lower() in ("true", "1", "yes"):
                return True
            if s.lower() in ("false", "0", "no", ""):
                return False
            raise DataError(span, f"{show(raw)} is not a bool{_hint(raw)}")
        try:
            raw = float(s) if ty.dtype.is_float else int(s, 0)
        except ValueError:
            raise DataError(span, f"{show(raw)} is not {_a(ty.dtype.value)}{_hint(raw)}") from None
    if ty.dtype is DType.BOOL:
        if isinstance(raw, bool):
            return raw
        raise DataError(span, f"{show(raw)} is not a bool")
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise DataError(span, f"{show(raw)} is not {_a(ty.dtype.value)}")
    if ty.dtype.is_float:
        try:
            return float(raw)
        except OverflowError:  # an integer beyond every float
            raise DataError(span, f"{show(raw)} does not fit in {ty.dtype.value}") from None
    if isinstance(raw, float):
        if not raw.is_integer():
            raise DataError(span, f"{show(raw)} is not an integer")
        raw = int(raw)
    lo, hi = _int_range(ty.dtype)
    if not lo <= raw <= hi:
        raise DataError(span, f"{raw} does not fit in {ty.dtype.value} ({lo}..{hi})")
    return raw


def flatten(raw: object, ty: Ty, enum_members: Callable[[str], tuple[str, ...] | None], span: Span) -> list[Value]:
    """Flatten a nested list (or a `;`-separated CSV cell) of shape `ty.shape`, row-major."""
    if not ty.shape:
        return [scalar_value(raw, ty, enum_members, span)]
    if isinstance(raw, str):
        raw = [x for x in raw.replace(",", ";").split(";") if x.strip() != ""] if raw.strip() else []
        if len(ty.shape) > 1:
            raise DataError(span, "multi-dimensional values must be nested lists, not text")
    if not isinstance(raw, list) or len(raw) != ty.shape[0]:
        got = len(raw) if isinstance(raw, list) else type(raw).__name__
        raise DataError(span, f"expected a list of {ty.shape[0]} values for shape {list(ty.shape)}, got {got}")
    sub = Ty(dtype=ty.dtype, shape=ty.shape[1:], enum=ty.enum)
    out: list[Value] = []
    for item in raw:
        out.extend(flatten(item, sub, enum_members, span))
    return out
