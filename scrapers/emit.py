"""Safe YAML output for drafts and synthesized specs: a YAML emitter, never string concatenation.

Every scraped string goes through PyYAML's SafeDumper, which quotes or escapes whatever would otherwise be
read as YAML syntax; the result is loaded back and compared before it is returned.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

try:  # libyaml's emitter and parser: the same text, several times faster on large drafts
    from yaml import CSafeDumper as _BaseDumper
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeDumper as _BaseDumper  # type: ignore[assignment]
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


class Flow(dict[str, Any]):
    """A mapping written on one line (`{name: X, hp: 60}`), e.g. a table row."""


class FlowList(list[Any]):
    """A list written on one line (`[1, 0, 2]`)."""


class _Dumper(_BaseDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # equal values are written out, never as anchors/aliases (envc rejects those)


def _str(dumper: _Dumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data and data.strip() else None  # code and prose as block scalars, value kept exactly
    if style is None and ("'" in data or data.count('"') % 2):
        # single quotes ('' inside): `envc lint`'s bracket-depth pre-scan pairs quote characters on each line, so
        # a plain "Professor's" in a flow row would hide that row's closing brace from it
        style = "'"
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def _leaf(value: Any) -> bool:
    return isinstance(value, (bool, int, float, type(None))) or (isinstance(value, str) and "\n" not in value)


def _short(items: list[Any]) -> bool:
    return len(items) <= 8 and sum(len(str(x)) + 2 for x in items) <= 72


def _dict(dumper: _Dumper, data: dict[str, Any]) -> yaml.Node:
    """Small mappings of scalars (or of short scalar lists) on one line; the rest in block style."""
    flat = all(_leaf(v) or (isinstance(v, list) and all(_leaf(x) for x in v) and _short(v)) for v in data.values())
    flow = bool(data) and flat and _short([*data.keys(), *(str(v) for v in data.values())])
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=flow)


def _list(dumper: _Dumper, data: list[Any]) -> yaml.Node:
    flow = bool(data) and all(_leaf(x) for x in data) and _short(data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


def _flow(dumper: _Dumper, data: dict[str, Any]) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=True)


def _flow_list(dumper: _Dumper, data: list[Any]) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


_Dumper.add_representer(str, _str)
_Dumper.add_representer(dict, _dict)
_Dumper.add_representer(list, _list)
_Dumper.add_representer(Flow, _flow)
_Dumper.add_representer(FlowList, _flow_list)


def plain(value: Any) -> Any:
    """The same data with Flow/FlowList markers turned back into dicts and lists (for comparisons)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def dump(doc: dict[str, Any], header: str = "") -> str:
    """YAML text for `doc`, block style except Flow/FlowList parts; checked by loading it back."""
    body = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=4096, default_flow_style=False)
    if yaml.load(body, Loader=_Loader) != plain(doc):  # pragma: no cover - a PyYAML bug would be caught here
        raise ValueError("YAML round trip changed the document")
    safe = ("".join(ch for ch in line if ch.isprintable()) for line in header.splitlines())
    lines = "".join(f"# {line}\n" if line else "#\n" for line in safe)
    return lines + body


def write_atomic(path: str, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same folder and a rename (never half-written)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
