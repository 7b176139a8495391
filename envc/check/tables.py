"""Constant data: scalar/array constants and tables, inline or from CSV/YAML files beside the spec."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Union

import yaml

from envc.diagnostics import Diagnostics, Span
from envc.ir import DType, Ty

Value = Union[bool, int, float]
MAX_DATA_BYTES = 8 * 1024 * 1024


class DataError(Exception):
    """A bad value; `span` says where."""

    def __init__(self, span: Span, message: str):
        self.span = span
        self.message = message


def read_data_file(spec_path: str, rel: str, span: Span, diags: Diagnostics) -> tuple[str, list[object]] | None:
    """Rows of a CSV (list of dicts) or YAML file next to the spec; None with a diagnostic on failure."""
    base = Path(spec_path).resolve().parent
    target = (base / rel).resolve()
    if base not in target.parents and target != base:
        diags.error(span, "E014", f"data file '{rel}' is outside the spec's folder")
        return None
    try:
        raw = target.read_bytes()
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
    shown = str(Path(spec_path).parent / rel)
    if target.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        return shown, [dict(r) for r in reader]
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        diags.error(span, "E014", f"data file '{rel}' is not valid YAML{where}")
        return None
    if not isinstance(data, list):
        diags.error(span, "E014", f"data file '{rel}' must hold a list (of rows or values)")
        return None
    return shown, data


def scalar_value(raw: object, ty: Ty, enum_members: Callable[[str], tuple[str, ...] | None], span: Span) -> Value:
    """Convert one raw cell (YAML value or CSV text) to a value of scalar type `ty`."""
    if ty.enum is not None:
        members = enum_members(ty.enum) or ()
        if isinstance(raw, str) and raw.strip() in members:
            return members.index(raw.strip())
        raise DataError(span, f"'{raw}' is not a member of enum {ty.enum} ({', '.join(members)})")
    if isinstance(raw, str):
        s = raw.strip()
        if ty.dtype is DType.BOOL:
            if s.lower() in ("true", "1", "yes"):
                return True
            if s.lower() in ("false", "0", "no", ""):
                return False
            raise DataError(span, f"'{raw}' is not a bool")
        try:
            raw = float(s) if ty.dtype is DType.F32 else int(s, 0)
        except ValueError:
            raise DataError(span, f"'{raw}' is not a {ty.dtype.value}") from None
    if ty.dtype is DType.BOOL:
        if isinstance(raw, bool):
            return raw
        raise DataError(span, f"{raw!r} is not a bool")
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise DataError(span, f"{raw!r} is not a {ty.dtype.value}")
    if ty.dtype is DType.F32:
        return float(raw)
    if isinstance(raw, float):
        if not raw.is_integer():
            raise DataError(span, f"{raw!r} is not an integer")
        raw = int(raw)
    lo, hi = ty.dtype.int_range
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
