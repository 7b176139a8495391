"""Fuzz the front end with malformed specs: no traceback, no hang, every diagnostic located.

    python benchmarks/fuzz_specs.py [--count 1000] [--seed 0] [--jobs 1] [--timeout 10] [--cli 20] [--json]
        [--only yaml.tags,rule.calls] [--start I] [--save DIR]
    python benchmarks/fuzz_specs.py --show INDEX [--seed 0]      # print one case (its class, base and text)

Case `i` of seed `s` is made by class `CLASSES[i % len(CLASSES)]` from `random.Random(f"{s}:{i}")`, so a run is
reproducible (for a given set of shipped specs) and any case can be regenerated. Most cases damage a shipped spec
(specs/, tests/specs/, docs/examples/): its YAML text (truncation, lines, indentation, tabs, tags, anchors and
alias bombs, extreme numbers, nesting, long lines, many nodes, BOM, control characters, non-UTF-8 bytes, line
endings, duplicate keys, documents), its schema (wrong types, missing, unknown and empty sections, bad shapes,
counts, enums and static params, data files: wrong, outside, looping links, malformed or huge CSV and YAML;
thousands of declarations), its rule bodies (token damage, brackets, deep nesting, Python-isms, unknown names,
type errors, extreme literals, huge loops, call chains 2x per level and recursion) or its names (keywords,
long, `__`, unicode, clashes); the rest are made from scratch (random specs and random YAML).

Each case is linted in a worker process (`envc.lint(path, text=...)`, or `envc.lint(path)` of a written file
for byte-level cases and cases with data files) under a 4 GiB address-space limit, and classified:
- traceback: an exception escaped `envc.lint`; crash: the worker died;
- hang: over `--timeout` seconds of CPU (CPU rather than wall time: the machine may be shared), or still running
  after 6 x `--timeout` seconds of wall clock (then the worker is killed);
- located: errors, and every diagnostic has a code in CODES, 1 <= line/col within the text, an end not before
  its start and a non-empty one-line message (the assertions of tests/test_fuzz_specs.py), and the IR is None;
- unlocated: a diagnostic fails one of those checks; clean: no error (fine: some damage is harmless).
A sample of cases (`--cli N`) also goes through the real `envc lint FILE` in a subprocess: the exit code must
be 1 for a spec with errors (0 for a clean one) and no output may contain "Traceback".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
BASES = sorted(
    [*ROOT.glob("specs/*.yaml"), *ROOT.glob("tests/specs/*.yaml"), *ROOT.glob("docs/examples/*.yaml")],
    key=lambda p: str(p.relative_to(ROOT)),
)
STATUSES = ("located", "clean", "unlocated", "traceback", "hang", "crash")
MEMORY_LIMIT = 4 * 1024**3

# ---- the cases -------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One malformed spec: str payloads are linted as text at `path`; bytes, and specs with `files`, are written
    to a folder first (beside copies of the data files of `path`'s folder) and linted from there."""

    cls: str
    path: Path
    payload: str | bytes
    note: str = ""
    files: dict[str, bytes | str] = field(default_factory=dict)  # beside the spec: bytes, or "->target" (a link)


Gen = Callable[[random.Random], Case]
_TEXTS: dict[Path, str] = {}
_DATA: dict[Path, Any] = {}


def _text(p: Path) -> str:
    if p not in _TEXTS:
        _TEXTS[p] = p.read_text(encoding="utf-8")
    return _TEXTS[p]


def _data(p: Path) -> Any:
    if p not in _DATA:
        _DATA[p] = yaml.load(_text(p), Loader=_Loader)
    return _DATA[p]


def _base(rng: random.Random) -> tuple[Path, str]:
    p = rng.choice(BASES)
    return p, _text(p)


def _copy(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_copy(v) for v in obj]
    return obj


_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Multi-line strings as `|` blocks (as people write rule bodies); everything else as PyYAML likes."""


def _str(dumper: Any, s: str) -> yaml.ScalarNode:
    style = "|" if "\n" in s.strip("\n") else None
    node: yaml.ScalarNode = dumper.represent_scalar("tag:yaml.org,2002:str", s, style=style)
    return node


_Dumper.add_representer(str, _str)


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1_000_000)


Step = str | int
Path_ = tuple[Step, ...]


def _walk(obj: Any, at: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    yield at, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, (*at, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, (*at, i))


def _get(obj: Any, at: Path_) -> Any:
    for s in at:
        obj = obj[s]
    return obj


def _set(obj: Any, at: Path_, value: Any) -> None:
    _get(obj, at[:-1])[at[-1]] = value


def _rename_key(d: dict[Any, Any], old: Any, new: Any) -> None:
    items = [(new if k == old else k, v) for k, v in d.items()]
    d.clear()
    d.update(items)


STMT_KEYS = ("reset", "effect", "body")
EXPR_KEYS = ("legal", "when", "reward", "terminated", "truncated")


def _code_sites(data: Any) -> list[tuple[Path_, bool]]:
    """(path, is_statements) of every rule-body string in a spec's data."""
    out = []
    for at, v in _walk(data):
        if not isinstance(v, str) or not at:
            continue
        last = at[-1]
        if last in STMT_KEYS:
            stmts = not (len(at) >= 3 and at[0] == "functions" and "return" not in v)
            out.append((at, stmts))
        elif last in EXPR_KEYS or (len(at) == 2 and at[0] == "invariants"):
            out.append((at, False))
    return out


def _derived(rng: random.Random, cls: str, mutate: Callable[[random.Random, Any], str]) -> Case:
    """A case made by changing the data of a shipped spec and dumping it again."""
    p = rng.choice(BASES)
    data = _copy(_data(p))
    note = mutate(rng, data)
    return Case(cls, p, _dump(data), note)


def _code_case(rng: random.Random, cls: str, change: Callable[[random.Random, str, bool], str]) -> Case:
    def mutate(rng: random.Random, data: Any) -> str:
        sites = _code_sites(data)
        at, stmts = rng.choice(sites)
        _set(data, at, change(rng, _get(data, at), stmts))
        return ".".join(map(str, at))

    return _derived(rng, cls, mutate)


# ---- YAML-level damage -----------------------------------------------------------------------------------


def y_truncate(rng: random.Random) -> Case:
    p, t = _base(rng)
    b = t.encode()
    return Case("yaml.truncate", p, b[: rng.randrange(len(b))])


def _lines_op(rng: random.Random, cls: str, op: Callable[[random.Random, list[str]], None]) -> Case:
    p, t = _base(rng)
    lines = t.split("\n")
    for _ in range(rng.randint(1, 4)):
        op(rng, lines)
    return Case(cls, p, "\n".join(lines))


def y_delete_lines(rng: random.Random) -> Case:
    def op(r: random.Random, ls: list[str]) -> None:
        del ls[r.randrange(len(ls))]

    return _lines_op(rng, "yaml.delete_lines", op)


def y_duplicate_lines(rng: random.Random) -> Case:
    def op(r: random.Random, ls: list[str]) -> None:
        i = r.randrange(len(ls))
        n = r.randint(1, 5)
        ls[i:i] = ls[i : i + n]

    return _lines_op(rng, "yaml.duplicate_lines", op)


def y_swap_lines(rng: random.Random) -> Case:
    def op(r: random.Random, ls: list[str]) -> None:
        i, j = r.randrange(len(ls)), r.randrange(len(ls))
        ls[i], ls[j] = ls[j], ls[i]

    return _lines_op(rng, "yaml.swap_lines", op)


def y_indent(rng: random.Random) -> Case:
    def op(r: random.Random, ls: list[str]) -> None:
        i = r.randrange(len(ls))
        for k in range(i, min(len(ls), i + r.randint(1, 8))):
            d = r.choice([-3, -2, -1, 1, 2, 3, 7])
            ls[k] = " " * d + ls[k] if d > 0 else ls[k][min(-d, len(ls[k]) - len(ls[k].lstrip(" "))) :]

    return _lines_op(rng, "yaml.indent", op)


def y_tabs(rng: random.Random) -> Case:
    def op(r: random.Random, ls: list[str]) -> None:
        i = r.randrange(len(ls))
        s = ls[i]
        n = len(s) - len(s.lstrip(" "))
        if n and r.random() < 0.6:
            ls[i] = "\t" * r.randint(1, max(1, n // 2)) + s[n:] if r.random() < 0.5 else " " * (n - 1) + "\t" + s[n:]
        else:
            j = r.randint(0, len(s))
            ls[i] = s[:j] + "\t" + s[j:]

    return _lines_op(rng, "yaml.tabs", op)


# fmt: off
TAGS = [
    '!!int "two"', "!!int two", "!!float abc", '!!float "1.5.5"', "!!binary AAAA", "!!binary ***", "!custom x",
    "!custom", "!!str 5", "!!bool maybe", "!!null x", "!!map x", "!!seq x", "!!timestamp 2001-13-99",
    "!!python/object/apply:os.system ['touch /tmp/envc_fuzz_pwned']", "!!python/name:os.system",
    "!<tag:yaml.org,2002:int> 0xZZ", "!!int 1_0_", "!!float .nan", "!!int 99999999999999999999999999", "!!set {a, b}",
    "!!omap [a: 1]", "!!pairs [a: 1]", "!e!x 1", "!!merge x", "!!value x", "!!yaml x", "!!float 1e99999",
    "!!int 0b102", "!!int 0o9", "!!int -", "!!float", "!!int", "!! x",
]
# fmt: on


def _value_lines(lines: list[str]) -> list[int]:
    return [i for i, s in enumerate(lines) if re.match(r"^\s*[-\w]+:\s+\S", s) and not s.lstrip().startswith("#")]


def y_tags(rng: random.Random) -> Case:
    p, t = _base(rng)
    lines = t.split("\n")
    note = []
    for _ in range(rng.randint(1, 2)):
        tag = rng.choice(TAGS)
        cands = _value_lines(lines)
        i = rng.choice(cands)
        key, _, value = lines[i].partition(": ")
        if tag.startswith("!!") and rng.random() < 0.3 and " " not in tag:
            lines[i] = f"{key}: {tag} {value}"
        elif rng.random() < 0.15:
            lines.insert(0, rng.choice(["%TAG !e! tag:example.com,2000:", "%TAG ! !!", "%YAML 1.1", "%FOO bar"]))
            lines.insert(1, "---")
        else:
            lines[i] = f"{key}: {tag}"
        note.append(tag)
    return Case("yaml.tags", p, "\n".join(lines), " ".join(note))


def y_aliases(rng: random.Random) -> Case:
    p, t = _base(rng)
    lines = t.split("\n")
    kind = rng.randrange(5)
    if kind == 0:  # an alias bomb at the top
        n = rng.randint(3, 12)
        bomb = ['lol0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
        bomb += [f"lol{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 10) + "]" for k in range(1, n)]
        lines = bomb + lines
    elif kind == 1:  # anchor a value, alias it elsewhere
        cands = _value_lines(lines)
        i, j = rng.choice(cands), rng.choice(cands)
        k1, _, v1 = lines[i].partition(": ")
        lines[i] = f"{k1}: &x {v1}"
        k2, _, _ = lines[j].partition(": ")
        lines[j] = f"{k2}: *x" if i != j else lines[j]
    elif kind == 2:  # merge keys
        lines += ["base: &b {type: i32}", "extra:", "  <<: *b", "  shape: [2]"]
    elif kind == 3:  # an undefined alias, or an alias as a key
        i = rng.choice(_value_lines(lines))
        k, _, _ = lines[i].partition(": ")
        lines[i] = rng.choice([f"{k}: *nowhere", f"*k: 1{k}", f"{k}: &", f"{k}: &a &b 1", f"{k}: *"])
    else:  # a recursive (self-referencing) anchor
        lines += rng.choice([["loop: &l [*l]"], ["loop: &l {a: *l}"], ["a: &a", "  - *a"]])
    return Case("yaml.aliases", p, "\n".join(lines), str(kind))


# fmt: off
NUMBERS = [
    "9" * 400, "-" + "9" * 400, "1e999", "-1e999", "1e-999", ".nan", ".NaN", ".inf", "-.inf", "+.inf", "nan", "inf",
    "0x" + "f" * 100, "0o777777777777777777777", "0b" + "1" * 200, "1_000_000", "1:20:30", "190:20:30.15",
    "2147483648", "-2147483649", "4294967296", "9223372036854775808", "-0", "-0.0", "0.", ".5", "1e", "0x",
    "1.7976931348623157e309", "5e-324", "00012", "0999", "1__0", "+12", "1.0e+", "12e3",
]
# fmt: on


def y_numbers(rng: random.Random) -> Case:
    p, t = _base(rng)
    nums = list(re.finditer(r"(?<![\w.])-?\d+(\.\d+)?(?![\w.])", t))
    out = t
    for m in sorted(rng.sample(nums, min(len(nums), rng.randint(1, 3))), key=lambda m: -m.start()):
        out = out[: m.start()] + rng.choice(NUMBERS) + out[m.end() :]
    return Case("yaml.numbers", p, out)


def y_nesting(rng: random.Random) -> Case:
    p, t = _base(rng)
    n = rng.choice([30, 47, 48, 49, 60, 200, 1000, 10_000, 100_000])
    kind = rng.randrange(5)
    deep = [
        lambda: "[" * n + "]" * n,
        lambda: "{a: " * n + "1" + "}" * n,
        lambda: "\n" + "".join(" " * (2 * k + 2) + f"k{k}:\n" for k in range(min(n, 3000))) + " " * 2 * min(n, 3000),
        lambda: "\n  " + "- " * n + "x",
        lambda: "[" * n,
    ][kind]()
    lines = t.split("\n")
    i = rng.choice(_value_lines(lines))
    k, _, _ = lines[i].partition(": ")
    lines[i] = f"{k}: {deep}"
    return Case("yaml.nesting", p, "\n".join(lines), f"{kind}:{n}")


def y_long(rng: random.Random) -> Case:
    p, t = _base(rng)
    n = rng.choice([1000, 65_536, 100_000, 1_000_000, 4 * 1024 * 1024 + 10])
    lines = t.split("\n")
    i = rng.randrange(len(lines))
    kind = rng.randrange(4)
    if kind == 0:
        lines[i] += " # " + "x" * n
    elif kind == 1:
        lines.insert(i, "k" * n + ": 1")
    elif kind == 2:
        lines.insert(i, "doc2: " + rng.choice("ab ") * n)
    else:
        j = rng.choice(_value_lines(lines))
        k, _, v = lines[j].partition(": ")
        lines[j] = f"{k}: {v}{'y' * n}"
    return Case("yaml.long_lines", p, "\n".join(lines), f"{kind}:{n}")


def y_bom(rng: random.Random) -> Case:
    p, t = _base(rng)
    i = rng.choice([0, 0, rng.randrange(len(t))])
    kind = rng.randrange(3)
    if kind == 0:
        return Case("yaml.bom", p, t[:i] + "\ufeff" + t[i:])
    if kind == 1:
        return Case("yaml.bom", p, b"\xef\xbb\xbf" * rng.randint(1, 3) + t.encode())
    return Case("yaml.bom", p, rng.choice([b"\xff\xfe", b"\xfe\xff"]) + t.encode("utf-16-le"))


CONTROL = [chr(c) for c in [*range(0, 9), 11, 12, *range(14, 32), 127, 0x85, 0x2028, 0x2029, 0xFFFE, 0xFFFF, 0xD7FF]]


def y_control(rng: random.Random) -> Case:
    p, t = _base(rng)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(t) + 1)
        t = t[:i] + rng.choice(CONTROL) * rng.randint(1, 3) + t[i:]
    return Case("yaml.control_chars", p, t)


# fmt: off
BAD_BYTES = [
    b"\xe9", b"\xff", b"\xc3", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf8\x88\x80\x80",
    b"\xf4\x90\x80\x80", b"\x80", b"\xfe\xff", b"\x00\x00",
]
# fmt: on


def y_bytes(rng: random.Random) -> Case:
    p, t = _base(rng)
    b = t.encode()
    if rng.random() < 0.15:
        return Case("yaml.non_utf8", p, t.encode(rng.choice(["utf-16-le", "utf-32", "cp1252", "utf-16-be"]), "replace"))
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(b) + 1)
        b = b[:i] + rng.choice(BAD_BYTES) + b[i:]
    return Case("yaml.non_utf8", p, b)


def y_line_endings(rng: random.Random) -> Case:
    p, t = _base(rng)
    kind = rng.randrange(4)
    if kind == 0:
        out = t.replace("\n", "\r\n")
    elif kind == 1:
        out = t.replace("\n", "\r")
    elif kind == 2:
        out = "".join(c if c != "\n" else rng.choice(["\n", "\r\n", "\r", "\n\r"]) for c in t)
    else:
        out = t.replace("\n", "\r\n") + "\r\n" + "x: |\r\n  a\r  b\r\n"
    return Case("yaml.line_endings", p, out, str(kind))


def y_duplicate_keys(rng: random.Random) -> Case:
    p, t = _base(rng)
    lines = t.split("\n")
    kind = rng.randrange(3)
    if kind == 0:  # a top-level section twice
        tops = [i for i, s in enumerate(lines) if re.match(r"^\w+:", s)]
        i = rng.choice(tops)
        lines.append(lines[i].split(":")[0] + ": " + rng.choice(["1", "{}", "[]", "x", ""]))
    elif kind == 1:  # a nested key twice (same indentation, right after)
        i = rng.choice(_value_lines(lines))
        lines.insert(i + 1, lines[i])
    else:
        lines.append(
            rng.choice(
                [
                    "dup: {a: 1, a: 2}",
                    "state: {x: f32, x: i32}",
                    "1: a",
                    "1.0: b",
                    "true: c",
                    "? [a, b]\n: c",
                    "? {a: 1}\n: d",
                    "~: e",
                    "'': f",
                    "? |\n  block\n: g",
                ]
            )
        )
    return Case("yaml.duplicate_keys", p, "\n".join(lines), str(kind))


def y_documents(rng: random.Random) -> Case:
    p, t = _base(rng)
    lines = t.split("\n")
    i = rng.randrange(len(lines) + 1)
    lines.insert(
        i,
        rng.choice(
            [
                "---",
                "...",
                "--- !!map",
                "--- |",
                "%YAML 1.2",
                "%YAML 9.9\n---",
                "--- >",
                "--- x",
                "... # end",
                "---\n---",
                "%",
            ]
        ),
    )
    return Case("yaml.documents", p, "\n".join(lines))


YAML_CHARS = list(":-[]{}()#&*!|>'\"\t ,.=<+%/\\@`?~;") + ["\n", ": ", "- ", "? ", '"', "'", "|-", ">+"]


def y_garbage(rng: random.Random) -> Case:
    p, t = _base(rng)
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(len(t) + 1)
        t = t[:i] + "".join(rng.choice(YAML_CHARS) for _ in range(rng.randint(1, 4))) + t[i:]
    return Case("yaml.garbage", p, t)


def y_many_nodes(rng: random.Random) -> Case:
    """Many YAML values: under the 500,000-node limit (work that must stay quick) and over it (rejected early)."""
    p, t = _base(rng)
    n = rng.choice([20_000, 100_000, 600_000, 2_000_000])
    kind = rng.randrange(4)
    if kind == 0:
        extra = "doc2: [" + "1," * n + "1]\n"
    elif kind == 1:
        extra = "todo:\n" + "- {name: a, text: b}\n" * (n // 5)
    elif kind == 2:
        extra = "invariants2:\n" + "".join(f"  k{i}: {i}\n" for i in range(n // 2))
    else:
        extra = "x: " + "[1, " * 40 + "1" + "]" * 40 + "\n" + "- - - 1\n" * (n // 4)
    return Case("yaml.many_nodes", p, t + "\n" + extra, f"{kind}:{n}")


# ---- schema-level damage ---------------------------------------------------------------------------------

# fmt: off
WRONG_VALUES: list[Any] = [
    0, -1, 1, 2**31, 10**30, 1.5, -0.0, float("nan"), float("inf"), True, False, None, "", "x", "two", "f64", [],
    [1, 2], [[]], ["a", None], {}, {"a": 1}, {"type": "i32"}, [{"x": 1}], "i32", "\u00e9", "null",
]
# fmt: on


def s_wrong_type(rng: random.Random) -> Case:
    def mutate(rng: random.Random, data: Any) -> str:
        paths = [at for at, _ in _walk(data) if at]
        notes = []
        for _ in range(rng.randint(1, 3)):
            at = rng.choice(paths)
            try:
                _set(data, at, _copy(rng.choice(WRONG_VALUES)))
            except (KeyError, IndexError, TypeError):
                continue
            paths = [a for a, _ in _walk(data) if a]
            notes.append(".".join(map(str, at)))
        return " ".join(notes)

    return _derived(rng, "schema.wrong_type", mutate)


def s_missing(rng: random.Random) -> Case:
    def mutate(rng: random.Random, data: Any) -> str:
        if rng.random() < 0.5:
            k = rng.choice(list(data))
            del data[k]
            return str(k)
        maps = [(at, v) for at, v in _walk(data) if isinstance(v, dict) and v]
        at, m = rng.choice(maps)
        k = rng.choice(list(m))
        del m[k]
        return ".".join(map(str, (*at, k)))

    return _derived(rng, "schema.missing", mutate)


# fmt: off
SECTION_TYPOS = [
    "stat", "action", "observations", "reward_fn", "Rules", "funcs", "procedure", "params ", "on", "yes", "__proto__",
    "constructor", "type", "shape", "rows", "effct", "\u0455tate", "123",
]
# fmt: on


def s_unknown(rng: random.Random) -> Case:
    def mutate(rng: random.Random, data: Any) -> str:
        maps = [(at, v) for at, v in _walk(data) if isinstance(v, dict)]
        at, m = rng.choice(maps) if rng.random() < 0.6 else ((), data)
        k = rng.choice([*SECTION_TYPOS, *(x + "_" for x in list(m)[:3])])
        m[k] = _copy(rng.choice(WRONG_VALUES))
        return ".".join(map(str, (*at, k)))

    return _derived(rng, "schema.unknown", mutate)


def s_empty(rng: random.Random) -> Case:
    def mutate(rng: random.Random, data: Any) -> str:
        conts = [at for at, v in _walk(data) if at and isinstance(v, (dict, list, str))]
        at = rng.choice(conts)
        _set(data, at, rng.choice([{}, [], "", None, " ", "\n", "#"]))
        return ".".join(map(str, at))

    return _derived(rng, "schema.empty", mutate)


# fmt: off
SHAPES: list[Any] = [
    [0], [-1], [2**31], [10**6, 10**6], [1024, 1024, 4], [2] * 30, [1.5], ["x"], ["nope"], [None], [[2]], 3, "4", [],
    [True], [10**40], [-(2**63)], [1] * 100, [1048577], [1024, 1025],
]
# fmt: on


def s_shapes(rng: random.Random) -> Case:
    def mutate(rng: random.Random, data: Any) -> str:
        sites = [at for at, v in _walk(data) if isinstance(v, dict) and ("type" in v or "zone" in v) and at]
        if not sites:
            data.setdefault("state", {})["big"] = {"type": "i32"}
            sites = [("state", "big")]
        notes = []
        for _ in range(rng.randint(1, 2)):
            at = rng.choice(sites)
            node = _get(data, at)
            key = rng.choice(["shape", "shape", "capacity"] if "zone" in node else ["shape"])
            node[key] = _copy(rng.choice(SHAPES))
            if rng.random() < 0.3:
                node["per_player"] = True
            notes.append(f"{'.'.join(map(str, at))}.{key}={node[key]!r}"[:80])
        return " ".join(notes)

    return _derived(rng, "schema.shapes", mutate)


COUNTS: list[Any] = [0, -1, -5, 17, 10**20, 2**31, "two", 1.5, None, [], True, 4194305, 1048577]


def s_counts(rng: random.Random) -> Case:
    """Players, zone capacities, action parameter ranges, box shapes: zero, negative, huge, wrong type."""

    def mutate(rng: random.Random, data: Any) -> str:
        sites: list[Path_] = [("players",)]
        for at, _ in _walk(data):
            if (at and at[-1] in ("capacity", "range", "default")) or (
                len(at) == 4 and at[0] == "actions" and at[2] == "params"
            ):
                sites.append(at)
        at = rng.choice(sites)
        v = _copy(rng.choice(COUNTS))
        if at[-1] == "range" and rng.random() < 0.5:
            v = rng.choice([[5, 1], [0, 10**12], [3, 3], [-(2**40), 2**40], [1], [1, 2, 3], ["a", "b"], [0, "n"]])
        if len(at) == 4 and at[0] == "actions" and rng.random() < 0.4:
            v = rng.choice(
                [
                    {"range": [0, 2**31]},
                    {"type": "i32"},
                    {"type": "f32", "range": 3},
                    {"range": 0},
                    {"type": "Nope"},
                    {"range": [1, 1048578]},
                ]
            )
        _set(data, at, v)
        return f"{'.'.join(map(str, at))}={v!r}"

    return _derived(rng, "schema.counts", mutate)


def s_enums(rng: random.Random) -> Case:
    def mutate(rng: random.Random, data: Any) -> str:
        n = rng.choice([0, 1, 126, 127, 128, 1000, 2])
        members: Any = [f"m{k}" for k in range(n)]
        kind = rng.randrange(4)
        if kind == 1 and members:
            members[-1] = members[0]
        elif kind == 2:
            members += rng.sample([None, 1, 2.5, [1], {"a": 1}, True, "off", "on", "if", "", "a b", "_"], 2)
        elif kind == 3:
            members = rng.choice([[], {}, "a, b", None, [[]]])
        types = data.setdefault("types", {})
        enums = [k for k, v in types.items() if isinstance(v, dict) and "enum" in v]
        name = rng.choice(enums) if enums and rng.random() < 0.7 else "Fuzz"
        types[name] = {"enum": members}
        if name == "Fuzz" and rng.random() < 0.7:
            data.setdefault("state", {})["fz"] = {"type": "Fuzz", "init": rng.choice(["m0", "m999", 0, None])}
        return f"{name}:{kind}:{n}"

    return _derived(rng, "schema.enums", mutate)


def s_data_files(rng: random.Random) -> Case:
    """Constants and tables whose values or files are wrong."""

    def mutate(rng: random.Random, data: Any) -> str:
        kind = rng.randrange(3)
        if kind == 0:
            f = rng.choice(
                [
                    "/etc/passwd",
                    "../../../etc/hostname",
                    "/dev/zero",
                    "/dev/urandom",
                    "nope.csv",
                    ".",
                    "",
                    "x" * 300 + ".csv",
                    "../README.md",
                    "\x00.csv",
                    "specs",
                    "tcg.yaml",
                ]
            )
            where = rng.choice(["constants", "tables"])
            body = (
                {"type": "i32", "shape": [3], "file": f}
                if where == "constants"
                else {"columns": {"a": "i32"}, "file": f}
            )
            data.setdefault(where, {})["fz"] = body
            return f"{where}:{f!r}"
        if kind == 1:
            data.setdefault("constants", {})["fz"] = {
                "type": rng.choice(["i8", "u32", "f32", "bool", "i16", "Nope"]),
                "shape": rng.choice([[2], [2, 2], [], [3]]),
                "value": _copy(
                    rng.choice(
                        [
                            [1, 2, 3],
                            [[1, 2], [3]],
                            1000,
                            -1,
                            [True, 2],
                            "x",
                            [1.5, 2],
                            [[[1]]],
                            [10**30, 1],
                            None,
                            {"a": 1},
                        ]
                    )
                ),
            }
            return "constants"
        data.setdefault("tables", {})["fz"] = {
            "columns": _copy(
                rng.choice([{"a": "i32"}, {"a": "str", "b": "i8"}, {}, {"a": {"type": "i8", "shape": [2]}}])
            ),
            "rows": _copy(
                rng.choice(
                    [
                        [],
                        [{"a": 1}, {"a": "x"}],
                        [{"b": 1}],
                        [{"a": 300}],
                        [[1, 2]],
                        {"a": 1},
                        [{"a": [1, 2, 3]}],
                        [None],
                    ]
                )
            ),
        }
        return "tables"

    return _derived(rng, "schema.data_files", mutate)


STATIC = [0, -1, 1, 2**31 - 1, 2**31, 2**32, 10**12, 1048577, 4294967295, -(2**31), 10**30, 1.5, "x", True]


def s_static_params(rng: random.Random) -> Case:
    """A static param with an extreme value used as a shape, a capacity, a loop bound and an action range."""

    def mutate(rng: random.Random, data: Any) -> str:
        v = rng.choice(STATIC)
        ty = rng.choice(["i32", "u32", "i8", "i16", "f32", "bool"])
        data.setdefault("params", {})["NZ"] = {"type": ty, "default": v, "static": True}
        use = rng.randrange(5)
        if use == 0:
            data.setdefault("state", {})["fz"] = {"type": "i32", "shape": [rng.choice(["NZ", 2]), "NZ"]}
        elif use == 1:
            data.setdefault("state", {})["fz"] = {"zone": "i8", "capacity": "NZ", "per_player": rng.random() < 0.5}
        elif use == 2:
            sites = [at for at, st in _code_sites(data) if st]
            if sites:
                at = rng.choice(sites)
                _set(data, at, _get(data, at).rstrip("\n") + "\nfor i in range(NZ):\n    pass\n")
        elif use == 3:
            acts = data.get("actions")
            if isinstance(acts, dict):
                acts["fz"] = {"params": {"k": rng.choice(["NZ", {"range": [0, "NZ"]}, {"range": ["NZ", 3]}])}}
        else:
            data.setdefault("constants", {})["FZ"] = {"type": "i8", "shape": ["NZ"], "value": 0}
        return f"{ty}={v!r} use {use}"

    return _derived(rng, "schema.static_params", mutate)


def _csv_bytes(rng: random.Random) -> bytes:
    rows = rng.randint(0, 5)
    kind = rng.randrange(12)
    if kind == 0:
        return b""
    if kind == 1:
        return b"a,b\n" + b"1,2,3\n" * rows + b"1\n"
    if kind == 2:
        return b'a,b\n"1,2\n3,4\n'
    if kind == 3:
        return b"\xef\xbb\xbfa,b\n1,2\n\x00,\xff\n"
    if kind == 4:
        return b"a,b\n" + b"99999999999999999999,1e999\n" + b"nan,-inf\n"
    if kind == 5:
        return b"a\n" + b"1\n" * 2_000_000
    if kind == 6:
        return b",,,\n,,,\n"
    if kind == 7:
        return b"a;b\r1;2\r"
    if kind == 8:  # a YAML data file
        return rng.choice(
            [
                b"- 1\n" * 2_000_000,
                b"- {a: 1}\n" * 900_000,
                b"- {a: 1, b: 2.5}\n" * 20_000,
                b"a: &a [1, 2]\nb: *a\n",
                b"[" * 100 + b"]" * 100,
                b"- !!python/object:os.system x\n",
                b"- 1\n- [2]\n- {a: 1}\n",
                b"{}",
                b"- " * 60 + b"1\n",
                b"%YAML 9.9\n--- [1]\n",
            ]
        )
    if kind == 9:
        return "a,b\n\u00e9,\u2028\n".encode()
    if kind == 10:
        return b"a,b\n1;2;3,4\n" + b"x" * 100_000 + b"\n"
    return b'"' * 1000


def s_data_contents(rng: random.Random) -> Case:
    """Constants and tables read from malformed CSV and YAML files, links out of the folder and special files."""
    p, t = _base(rng)
    ext = rng.choice([".csv", ".csv", ".yaml"])
    kind = rng.randrange(4)
    files: dict[str, bytes | str]
    if kind == 0:
        files = {"fz" + ext: _csv_bytes(rng)}
    elif kind == 1:
        files = {"fz" + ext: rng.choice(["->/etc/passwd", "->/dev/zero", "->fz" + ext, "->nowhere", "->."])}
    elif kind == 2:
        files = {"fz" + ext: _csv_bytes(rng), "sub/fz2.csv": _csv_bytes(rng)}
        ext = rng.choice([ext, "/../fz.csv"])
    else:
        files = {"fz" + ext: _csv_bytes(rng)}
        ext = rng.choice([ext + "/", ext + "/..", "", "." + ext])
    shape = rng.choice(["[3]", "[2, 2]", "[]", "[1048576]"])
    decl = rng.choice(
        [
            f"constants:\n  FZ: {{type: i32, shape: {shape}, file: fz{ext}}}\n",
            f"tables:\n  fz:\n    columns: {{a: i32, b: f32}}\n    file: fz{ext}\n",
            f"tables:\n  fz:\n    columns: {{a: {{type: i8, shape: [2]}}}}\n    file: fz{ext}\n",
        ]
    )
    top = re.search(rf"^{decl.split(':')[0]}:\n", t, re.M)
    text = t[: top.end()] + decl.split("\n", 1)[1] + t[top.end() :] if top else t + "\n" + decl
    return Case("schema.data_contents", p, text.encode(), f"{kind}{ext}", files)


def s_many_decls(rng: random.Random) -> Case:
    """Thousands of declarations of one kind, often with a misspelt use (a "did you mean" over all of them)."""

    def mutate(rng: random.Random, data: Any) -> str:
        n = rng.choice([500, 2000, 8000])
        kind = rng.randrange(6)
        typo = rng.random() < 0.5
        if kind == 0:
            data.setdefault("state", {}).update({f"fz_field{i}": "i8" for i in range(n)})
        elif kind == 1:
            data.setdefault("actions", {}).update({f"fz_act{i}": {"effect": "pass"} for i in range(n)})
        elif kind == 2:
            data["rules"] = [{"name": f"r{i}", "body": f"let fz{i} = {i}"} for i in range(n)]
        elif kind == 3:
            data.setdefault("functions", {}).update(
                {f"fz_fn{i}": {"params": {"x": "i32"}, "returns": "i32", "body": "x + 1"} for i in range(n)}
            )
        elif kind == 4:
            data["invariants"] = {f"inv{i}": "step_count >= 0" for i in range(n)}
        else:
            data.setdefault("params", {}).update({f"fz_param{i}": i for i in range(n)})
        if typo:
            use = ["fz_field{}x", "fz_act{}x", "fz{}x", "fz_fn{}x(1)", "inv{}x", "fz_param{}x"][kind]
            typos = [{"name": f"t{i}", "when": f"{use.format(i)} == 1", "body": "pass"} for i in range(50)]
            data["rules"] = [*(data.get("rules") or [])[: n // 2], *typos]
        return f"{kind}:{n}:{typo}"

    return _derived(rng, "schema.many_decls", mutate)


# ---- rule-language damage --------------------------------------------------------------------------------

_TOK = re.compile(r"\w+|\s+|[^\w\s]")
# fmt: off
TOKENS = [
    "(", ")", "[", "]", ",", ":", "=", "==", "+", "-", "*", "/", "//", "%", "**", ".", "if", "then", "else", "for",
    "in", "let", "return", "not", "and", "or", "match", "case", "_", "0", "1.5", "1e9", "true", "x", "range", "pass",
    "elif", "\n", "\n    ", "#", "\\", "'", '"', "@", "$", "?", "->", "=>", "!", "&&", ";",
]
# fmt: on


def _tok_change(rng: random.Random, code: str, insert: bool) -> str:
    toks = _TOK.findall(code)
    real = [i for i, t in enumerate(toks) if not t.isspace()]
    for _ in range(rng.randint(1, 3)):
        if not real:
            break
        i = rng.choice(real)
        if insert:
            toks.insert(i, rng.choice(TOKENS) + rng.choice(["", " "]))
        else:
            toks[i] = ""
    return "".join(toks)


def r_token_delete(rng: random.Random) -> Case:
    return _code_case(rng, "rule.token_delete", lambda r, c, s: _tok_change(r, c, False))


def r_token_insert(rng: random.Random) -> Case:
    return _code_case(rng, "rule.token_insert", lambda r, c, s: _tok_change(r, c, True))


def r_brackets(rng: random.Random) -> Case:
    def change(rng: random.Random, code: str, stmts: bool) -> str:
        pos = [m.start() for m in re.finditer(r"[()\[\]]", code)]
        if pos and rng.random() < 0.5:
            i = rng.choice(pos)
            return code[:i] + code[i + 1 :]
        i = rng.randrange(len(code) + 1)
        return code[:i] + rng.choice(["(", ")", "[", "]", "((", "]]", "(]", "{", "}"]) + code[i:]

    return _code_case(rng, "rule.brackets", change)


def _deep_expr(rng: random.Random, n: int) -> str:
    make: list[Callable[[], str]] = [
        lambda: "(" * n + "1" + ")" * n,
        lambda: "-" * n + "1",
        lambda: "not " * n + "true",
        lambda: "abs(" * n + "1" + ")" * n,
        lambda: " + ".join(["1"] * n),
        lambda: "if true then " * n + "1" + " else 2" * n,
        lambda: "(" * n + "1",
        lambda: "1" + ")" * n,
        lambda: "max(1, " * n + "1" + ")" * n,
        lambda: "[" * n + "1" + "]" * n,
    ]
    return rng.choice(make)()


def r_deep(rng: random.Random) -> Case:
    def change(rng: random.Random, code: str, stmts: bool) -> str:
        n = rng.choice([100, 159, 160, 161, 500, 5000, 50_000, 500_000])
        e = _deep_expr(rng, n)
        if not stmts:
            return e
        if rng.random() < 0.5:
            depth = min(n, rng.choice([50, 200, 1000]))
            return "".join("    " * k + "if true:\n" for k in range(depth)) + "    " * depth + "pass\n"
        return code + f"\nlet zz_deep = {e}\n"

    return _code_case(rng, "rule.deep_nesting", change)


def r_long_bodies(rng: random.Random) -> Case:
    """Megabytes of flat code: thousands of statements, expressions of thousands of terms or arguments."""

    def change(rng: random.Random, code: str, stmts: bool) -> str:
        n = rng.choice([1_000, 10_000, 100_000])
        if stmts and rng.random() < 0.6:
            return code.rstrip("\n") + "\n" + "".join(f"let zz{i} = {i}\n" for i in range(n))
        e = rng.choice([" + ".join(["1"] * n), " and ".join(["true"] * n), "max(" + ", ".join(["1"] * n) + ")"])
        return e if not stmts else code.rstrip("\n") + f"\nlet zz = {e}\n"

    return _code_case(rng, "rule.long_bodies", change)


# fmt: off
PY_STMTS = [
    "while true:\n    pass", "while x < 3:\n    x += 1", "break", "continue", "x = 2 ** 10", "let y = 2 ** 3",
    "f = lambda x: x", "import os", "from os import system", "__import__('os').system('true')", "def f():\n    pass",
    "class A:\n    pass", "let a = [1, 2]", "let d = {}", 'let s = "str"', 'let s = f"{x}"', "let t = (1, 2)",
    "print(x)", "yield 1", "with open('x') as f:\n    pass", "try:\n    pass\nexcept:\n    pass", "del x", "global x",
    "assert x", "let w = (x := 1)", "x = 1; y = 2", "x = y = 1", "a, b = 1, 2", "let n = None", "let b = True",
    "let e = ...", "@dec\npass", "let sl = board[1:2]", "f(*args, **kw)", "exec('1')", "eval('1')",
    "let c = ().__class__.__bases__[0].__subclasses__()", "let q = x if x else 1", "let r = 1 < 2 < 3", "x++", "x--",
    "++x", "let z = !x", "let z = x && y", "let z = x || y", "return", "let v: int = 1", "let v: f64 = 1.0",
    "for i in range(3):\nbreak", "for (i = 0; i < 3; i++) {}", "let k = 'a' + 'b'", "let m = x is None",
    "let m = 1 not in x", "match x:\n    case 1:\n        pass", "async def f(): pass", "await x", "nonlocal x",
    "raise ValueError", "let u = \u00e9", "let \u00e9 = 1", "let x = 1 # \u202e comment", "\\", "let v = 0x",
    "let v = 1e", "let v = 09", "let v = 1_000", "let v = 0b101", "let v = 0o7", "let v = 1j",
]
# fmt: on
# fmt: off
PY_EXPRS = [
    "x ** 2", "lambda: 1", "x if y else z", "1 < 2 < 3", "not", "None", "True and False", "[1, 2][0]", "{}", "'str'",
    '"s" * 3', "f(x)(y)", "x.y.z()", "a[1:2]", "a[::-1]", "(1, 2)", "__import__('os')", "...", "eval('1')", "x is y",
    "x in y", "x not in y", "~x", "x << 2", "x >> 2", "x @ y", "!x", "x && y", "x ? 1 : 2", "1.0.real", "x.__class__",
    "len()", "sum()", "abs(1, 2)", "range(3)", "step_count = 1", "p = 2", "", " ", "#", "1 +", "+", "(", ")",
    "if true then 1", "if then else", "match x", "let x = 1", "1e999", "9" * 50, "0x" + "f" * 40, "-" + "9" * 40,
    "1.5e-400", "nan", "inf", "float('nan')",
]
# fmt: on


def r_python_isms(rng: random.Random) -> Case:
    def change(rng: random.Random, code: str, stmts: bool) -> str:
        if stmts:
            lines = code.rstrip("\n").split("\n")
            i = rng.randint(0, len(lines))
            lines[i:i] = [rng.choice(PY_STMTS)]
            return "\n".join(lines) + "\n"
        return rng.choice(PY_EXPRS) if rng.random() < 0.6 else f"({code}) + ({rng.choice(PY_EXPRS)})"

    return _code_case(rng, "rule.python_isms", change)


def r_unknown_names(rng: random.Random) -> Case:
    def change(rng: random.Random, code: str, stmts: bool) -> str:
        names = [m for m in re.finditer(r"\b[A-Za-z_]\w*\b", code)]
        if not names:
            return code + " + nope"
        m = rng.choice(names)
        new = rng.choice(
            [
                m.group() + "x",
                m.group()[:-1] or "q",
                "nope",
                "Cell.purple",
                "os",
                "self",
                "state",
                "jnp",
                "key",
                m.group().upper(),
                "_",
                "__",
                "x" * 300,
                "\u00e9t\u00e9",
                "Nope.member",
            ]
        )
        return code[: m.start()] + new + code[m.end() :]

    return _code_case(rng, "rule.unknown_names", change)


# fmt: off
TYPE_STMTS = [
    "let a = true + 1", "let b = 1.5 // 0", "let c = 1 / 0", "let d = 5 % 0", "let e: bool = 3", "let f: i8 = 1000",
    "let g = len(3)", "let h = abs(true)", "let i = sqrt()", "let j = clip(1)", "let k = max(1, 2, 3)",
    "if 1:\n    pass", "for i in range(1.5):\n    pass", "for i in 3:\n    pass", "let l = uniform(1)",
    "let m = randint(0.5, 2.5)", "let n = i8(1, 2)", "let o = coin(1)", "let q = choice(3)", "let r = top(3)",
    "push(3, 1)", "pop(x)", "clear()", "shuffle(1)", "let s = sum(1)", "let t = any(true)", "let u = count(1)",
    "let v = argmax(2)", "let w = capacity(1)", "let x1 = contains(1, 2)", "let y = index_of()", "let z = int()",
    "let aa = float(1, 2)", "let bb = 1 if true", "let cc = -true", "let dd = not 1", "let ee = 1 and 2",
    "let ff = 1.5 & 2", "let gg = 1 | 2.0", "let hh = true < false", "let ii = 1 == true", "let jj = x[0]",
    "let kk = (1)[0]", "let ll = f32(1)[0]", "step_count = 0", "num_players = 3", "current_player = 1.5",
    "let mm = 2147483647 + 1", "let nn: u32 = -1", "let oo = i8(300)", "let pp = 0x7fffffff * 4",
    "let qq = bernoulli(true)", "let rr = select(1, 2, 3)", "let ss = atan2(1)", "let tt = exp(1, 2)",
]
# fmt: on


def r_type_errors(rng: random.Random) -> Case:
    def change(rng: random.Random, code: str, stmts: bool) -> str:
        if stmts:
            return code.rstrip("\n") + "\n" + rng.choice(TYPE_STMTS) + "\n"
        s = rng.choice(TYPE_STMTS)
        return s.split("= ", 1)[1] if "= " in s and "\n" not in s else f"({code}) + true"

    return _code_case(rng, "rule.type_errors", change)


HUGE = ["1000000000", "2147483647", "2147483648", "10000000000000000000000000000000", "-5", "0", "100000", "4294967296"]


def r_huge_range(rng: random.Random) -> Case:
    def change(rng: random.Random, code: str, stmts: bool) -> str:
        n = rng.choice(HUGE)
        if stmts:
            depth = rng.randint(1, 4)
            m = rng.choice(["1000", "100000", n])
            loops = "".join("    " * k + f"for i{k} in range({m if k else n}):\n" for k in range(depth))
            return code.rstrip("\n") + "\n" + loops + "    " * depth + "pass\n"
        return rng.choice(
            [
                f"sum(i for i in range({n})) > 0",
                f"any(any(i == j for j in range({n})) for i in range({n}))",
                f"count(true for i in range(0, {n}, 2)) > 0",
                f"all(i >= 0 for i in range(-{n}, {n}))",
                f"sum(sum(sum(1 for k in range(10000)) for j in range(10000)) for i in range({n})) > 0",
            ]
        )

    return _code_case(rng, "rule.huge_range", change)


def r_calls(rng: random.Random) -> Case:
    """Call chains: 2 calls per level 30 deep, long linear chains, recursion (direct and mutual), procedures."""

    def mutate(rng: random.Random, data: Any) -> str:
        kind = rng.randrange(6)
        depth = rng.choice([10, 20, 30]) if kind == 0 else rng.choice([30, 200, 1000, 3000])
        fns: dict[str, Any] = {}
        procs: dict[str, Any] = {}
        for k in range(depth):
            nxt = f"fz{k + 1}"
            last = k == depth - 1
            if kind == 0:  # each level calls the next twice: 2^depth expansion if inlined
                body = "x" if last else f"{nxt}(x) + {nxt}(x + 1)"
            elif kind == 1:  # linear chain
                body = "x + 1" if last else f"{nxt}(x) + 1"
            elif kind == 2:  # direct recursion at the end of a chain
                body = f"fz{k}(x)" if last else f"{nxt}(x)"
            elif kind == 3:  # mutual recursion around the whole chain
                body = "fz0(x)" if last else f"{nxt}(x)"
            elif kind == 4:  # each level loops over the next
                body = "x" if last else f"sum({nxt}(i) for i in range(100))"
            else:  # procedures calling each other twice per level
                procs[f"fz{k}"] = {"params": {"x": "i32"}, "body": "pass" if last else f"{nxt}(x)\n{nxt}(x + 1)\n"}
                continue
            fns[f"fz{k}"] = {"params": {"x": "i32"}, "returns": "i32", "body": body}
        if fns:
            data.setdefault("functions", {}).update(fns)
            data["reward"] = "fz0(1)"
        else:
            data.setdefault("procedures", {}).update(procs)
            data["reset"] = (
                (data.get("reset") or "pass").rstrip("\n") + "\nfz0(1)\n"
                if isinstance(data.get("reset"), str)
                else "fz0(1)\n"
            )
        return f"{kind}:{depth}"

    return _derived(rng, "rule.calls", mutate)


# fmt: off
LITERAL_STMTS = [
    "let a = board_x[99999999999999999999]", "let a: i8 = 99999999999999999999", "let a = 2147483647 * 2147483647",
    "let a = -(-2147483648)", "let a = abs(-2147483648)", "let a = 0 // 0", "let a = 0 % 0", "let a = 0.0 / 0.0",
    "let a = i32(1e30)", "let a = u32(-1)", "let a = f32(1e400)", "let a = 1e400 - 1e400", "let a = i8(-129)",
    "let a = 0xffffffffffffffffffffffff", "let a = 4294967295 + 1", "let a = -9223372036854775809",
    "let a = 1.0e-400", "let a = 340282366920938463463374607431768211456.0", "let a = u32(4294967295) * 2",
    "let a = 1 // 0", "let a = 5 % -0", "let a = floor(1e400)", "let a = i32(0.0 / 0.0)",
    "let a = max(x for x in range(-2147483648, 2147483647))", "let a = len(board_x[0][0][0])",
    "for i in range(2147483647, -2147483648):\n    pass", "for i in range(99999999999999999999, 1):\n    pass",
    "let a = clip(1, 99999999999999999999, -99999999999999999999)", "let a = 10 ** 400",
]
# fmt: on


def r_literals(rng: random.Random) -> Case:
    """Extreme literals and constant arithmetic: overflow, division by zero, NaN, huge indices and casts."""

    def change(rng: random.Random, code: str, stmts: bool) -> str:
        arrays = re.findall(r"\b(\w+)\[", code)
        s = rng.choice(LITERAL_STMTS).replace("board_x", rng.choice(arrays) if arrays else "zz")
        if stmts:
            return code.rstrip("\n") + "\n" + s + "\n"
        e = s.split("= ", 1)[1] if "= " in s and "\n" not in s else "99999999999999999999"
        return rng.choice([e, f"({code}) and ({e}) > 0", f"({e}) == ({e})"])

    return _code_case(rng, "rule.literals", change)


# ---- hostile names ---------------------------------------------------------------------------------------

# fmt: off
KEYWORDS = [
    "let", "if", "for", "in", "return", "and", "not", "true", "None", "True", "class", "def", "lambda", "while",
    "import", "fn", "self", "state", "jnp", "p", "range", "len", "i32", "f32", "current_player", "step_count",
    "num_players", "async", "await", "yield", "from", "as", "break", "impl", "struct", "loop", "match", "case",
    "pass", "type", "mut", "ref", "unsafe", "Self", "crate", "super", "std", "print", "exec", "eval", "__builtins__",
    "os", "sys", "Vec", "Option", "key", "params", "action",
]
# fmt: on
LONG = ["a" * 64, "a" * 65, "n" * 300, "x" * 10_000, "A" + "_b" * 150]
DUNDER = ["__", "_", "__init__", "x__count", "__class__", "a__b", "_x_", "__import__", "___", "_" * 64]
# fmt: off
UNICODE = [
    "caf\u00e9", "\u03c0", "\u540d\u524d", "x\u200b", "\U0001f600", "\u202eabc", "e\u0301", "\uff58", "\u0430", "",
    " ", "a b", "1abc", "a-b", "a.b", "a:b", "#x", "x\x00", "\u2028", "\ufeff", "\u00a0", "\u0130", "\u017f", "K",
    "\u212a", "\ud7ff", "\U000e0041",
]
# fmt: on

# where a spec declares names: a path pattern of mapping keys ("*" any key) whose keys are the names
# fmt: off
DECL_SITES: list[tuple[str, ...]] = [
    ("state", "*"), ("params", "*"), ("constants", "*"), ("tables", "*"), ("tables", "*", "columns", "*"),
    ("types", "*"), ("types", "*", "record", "*"), ("functions", "*"), ("functions", "*", "params", "*"),
    ("procedures", "*"), ("procedures", "*", "params", "*"), ("actions", "*"), ("actions", "*", "params", "*"),
    ("observation", "fields", "*"), ("invariants", "*"),
]
# fmt: on


def _decls(data: Any) -> list[tuple[Path_, str]]:
    """(path of the mapping, key) of every declared name."""
    out: list[tuple[Path_, str]] = []

    def go(node: Any, pat: tuple[str, ...], at: Path_) -> None:
        if not isinstance(node, dict):
            return
        if len(pat) == 1:
            out.extend((at, k) for k in node if isinstance(k, str))
            return
        keys = list(node) if pat[0] == "*" else [pat[0]] if pat[0] in node else []
        for k in keys:
            go(node[k], pat[1:], (*at, k))

    for pat in DECL_SITES:
        go(data, pat, ())
    return out


def _hostile(rng: random.Random, cls: str, pool: list[str]) -> Case:
    def mutate(rng: random.Random, data: Any) -> str:
        new = rng.choice(pool)
        kind = rng.randrange(4)
        if kind == 0:
            data["name"] = new
            return "name"
        if kind == 1:  # an enum member or a let local
            enums = [(at, v) for at, v in _walk(data) if at and at[-1] == "enum" and isinstance(v, list) and v]
            if enums and rng.random() < 0.5:
                _, members = rng.choice(enums)
                old = members[rng.randrange(len(members))]
                members[members.index(old)] = new
                return f"member {old}"
            sites = [at for at, stmts in _code_sites(data) if "let " in _get(data, at)]
            if sites:
                at = rng.choice(sites)
                code = _get(data, at)
                m = rng.choice(list(re.finditer(r"\blet (\w+)", code)))
                _set(data, at, re.sub(rf"\b{m.group(1)}\b", lambda _: new, code))
                return f"local {m.group(1)}"
        at, old = rng.choice(_decls(data))
        _rename_key(_get(data, at), old, new)
        if kind != 3:  # rename the uses too, so the name itself is the only problem
            for site, _ in _code_sites(data):
                _set(data, site, re.sub(rf"\b{re.escape(old)}\b", lambda _: new, _get(data, site)))
        return f"{'.'.join(map(str, (*at, old)))}"

    return _derived(rng, cls, mutate)


def n_keywords(rng: random.Random) -> Case:
    return _hostile(rng, "names.keywords", KEYWORDS)


def n_long(rng: random.Random) -> Case:
    return _hostile(rng, "names.long", LONG)


def n_dunder(rng: random.Random) -> Case:
    return _hostile(rng, "names.dunder", DUNDER)


def n_unicode(rng: random.Random) -> Case:
    return _hostile(rng, "names.unicode", UNICODE)


def n_clash(rng: random.Random) -> Case:
    def mutate(rng: random.Random, data: Any) -> str:
        decls = _decls(data)
        (at1, a), (at2, b) = rng.choice(decls), rng.choice(decls)
        if at1 == at2 and a == b:
            return "none"
        _rename_key(_get(data, at1), a, b)
        return f"{a}->{b}"

    return _derived(rng, "names.clash", mutate)


# ---- from scratch ----------------------------------------------------------------------------------------

TYPES = ["bool", "i8", "i16", "i32", "u32", "f32", "f64", "int", "Cell", "Nope", "i64", ""]


def _expr(rng: random.Random, names: list[str], depth: int = 0) -> str:
    if depth > 4 or rng.random() < 0.3:
        return rng.choice([*names, "1", "0.5", "true", "-3", "num_players", "step_count", "p", "zz"])
    k = rng.randrange(7)
    a, b = _expr(rng, names, depth + 1), _expr(rng, names, depth + 1)
    if k == 0:
        return f"({a} {rng.choice(['+', '-', '*', '/', '//', '%', '&', '|', '^'])} {b})"
    if k == 1:
        return f"({a} {rng.choice(['==', '!=', '<', '<=', '>', '>=', 'and', 'or'])} {b})"
    if k == 2:
        return f"{rng.choice(['abs', 'min', 'max', 'sqrt', 'i8', 'f32', 'len', 'clip', 'floor'])}({a}, {b})"[:200]
    if k == 3:
        return f"(if {a} then {b} else {_expr(rng, names, depth + 1)})"
    if k == 4:
        return f"{rng.choice(names or ['zz'])}[{a}]"
    if k == 5:
        return f"{rng.choice(['sum', 'any', 'count', 'max'])}({a} for i in range({rng.choice(['3', a])}))"
    return f"not {a}"


def _stmts(rng: random.Random, names: list[str], depth: int = 0) -> str:
    out = []
    for _ in range(rng.randint(1, 4)):
        k = rng.randrange(5)
        pad = "    " * depth
        if k == 0 and names:
            out.append(f"{pad}{rng.choice(names)} = {_expr(rng, names)}")
        elif k == 1:
            out.append(f"{pad}let l{rng.randrange(100)} = {_expr(rng, names)}")
        elif k == 2 and depth < 3:
            out.append(f"{pad}if {_expr(rng, names)}:\n{_stmts(rng, names, depth + 1)}")
        elif k == 3 and depth < 3:
            out.append(
                f"{pad}for i{depth} in range({rng.choice(['3', '0', '-1', 'n'])}):\n{_stmts(rng, names, depth + 1)}"
            )
        else:
            out.append(f"{pad}pass")
    return "\n".join(out)


def x_random_spec(rng: random.Random) -> Case:
    """A spec built from scratch: real section names, random declarations and random code."""
    names = [f"v{k}" for k in range(rng.randint(0, 4))]
    state = {}
    for n in names:
        f: dict[str, Any] = {"type": rng.choice(TYPES)}
        if rng.random() < 0.4:
            f["shape"] = [rng.choice([1, 2, 3, 0, -1, "n"]) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.2:
            f = {"zone": rng.choice(TYPES), "capacity": rng.choice([1, 5, 0, "n"])}
        state[n] = f if rng.random() < 0.8 else rng.choice(TYPES)
    spec: dict[str, Any] = {
        "name": rng.choice(["scratch", "s1", "1bad", "if", ""]),
        "players": rng.choice([1, 2, 0, 3]),
    }
    if rng.random() < 0.5:
        spec["types"] = {"Cell": {"enum": rng.choice([["a", "b"], [], ["a"], ["a", "a"]])}}
    if rng.random() < 0.4:
        spec["params"] = {"n": rng.choice([3, {"type": "i32", "default": 3, "static": True}, 2.5, "x"])}
    spec["state"] = state
    if rng.random() < 0.9:
        spec["actions"] = {
            "act": {
                "params": {"k": rng.choice([2, 0, -1, "n", {"range": [0, 3]}])},
                "legal": _expr(rng, names),
                "effect": _stmts(rng, names),
            }
        }
    if rng.random() < 0.2:
        spec["continuous_action"] = {"box": {"shape": [1], "low": -1.0, "high": 1.0}, "effect": _stmts(rng, names)}
    if rng.random() < 0.6:
        spec["reset"] = _stmts(rng, names)
    if rng.random() < 0.5:
        spec["rules"] = [{"name": "r", "when": _expr(rng, names), "body": _stmts(rng, names)}]
    spec["reward"] = _expr(rng, names)
    spec["terminated"] = _expr(rng, names)
    if rng.random() < 0.9:
        spec["observation"] = {
            "fields": {"o": {"type": "f32", "shape": [rng.choice([1, 4, 0])]}},
            "body": _stmts(rng, ["o", *names]),
        }
    if rng.random() < 0.3:
        spec["functions"] = {
            "f": {"params": {"a": "i32"}, "returns": rng.choice(TYPES), "body": _expr(rng, ["a", *names])}
        }
    return Case("scratch.random_spec", BASES[0].parent / "scratch.yaml", _dump(spec))


def _random_yaml(rng: random.Random, depth: int = 0) -> Any:
    k = rng.randrange(4) if depth < 5 else 3
    if k == 0:
        keys = [*rng.sample(["name", "state", "actions", "observation", "reward", "rules", "types"], 2), "k"]
        return {rng.choice(keys): _random_yaml(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if k == 1:
        return [_random_yaml(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return _copy(rng.choice(WRONG_VALUES))


def x_random_yaml(rng: random.Random) -> Case:
    """A random YAML document (often not a mapping) with spec-like keys."""
    doc = _random_yaml(rng)
    if rng.random() < 0.6:
        doc = {
            "name": "r",
            "state": {"x": "i32"},
            "observation": {"fields": {"o": "f32"}},
            "actions": {"a": None},
            rng.choice(["state", "actions", "observation", "reward", "name", "players"]): doc,
        }
    return Case("scratch.random_yaml", BASES[0].parent / "scratch.yaml", _dump(doc))


# fmt: off
CLASSES: list[Gen] = [
    y_truncate, y_delete_lines, y_duplicate_lines, y_swap_lines, y_indent, y_tabs, y_tags, y_aliases, y_numbers,
    y_nesting, y_long, y_many_nodes, y_bom, y_control, y_bytes, y_line_endings, y_duplicate_keys, y_documents,
    y_garbage, s_wrong_type, s_missing, s_unknown, s_empty, s_shapes, s_counts, s_enums, s_data_files,
    s_static_params, s_data_contents, s_many_decls, r_token_delete, r_token_insert, r_brackets, r_deep,
    r_long_bodies, r_python_isms, r_unknown_names, r_type_errors, r_huge_range, r_calls, r_literals, n_keywords,
    n_long, n_dunder, n_unicode, n_clash, x_random_spec, x_random_yaml,
]
# fmt: on


CLASS_NAMES = [make(random.Random(0)).cls for make in CLASSES]


def class_of(index: int) -> str:
    """The class name of case `index` (of any seed)."""
    return CLASS_NAMES[index % len(CLASSES)]


def make_case(seed: int, index: int) -> Case:
    """Case `index` of run `seed`: always the same spec."""
    gen = CLASSES[index % len(CLASSES)]
    return gen(random.Random(f"{seed}:{index}"))


# ---- judging one case ------------------------------------------------------------------------------------


def _lines(text: str) -> tuple[list[str], list[str]]:
    return text.split("\n"), re.split(r"\r\n|\r|\n", text)


def diagnostic_problems(ir: object, diags: list[Any], text: str, path: str) -> list[str]:
    """What is wrong with the diagnostics of one lint of `text` at `path` (empty when all are located): the checks
    of tests/test_fuzz_specs.py (code in CODES, line/col >= 1, end not before start, non-empty one-line message,
    IR None iff errors) and the position lying within the text (or within the data file it names)."""
    from envc.diagnostics import CODES

    out = []
    errors = [d for d in diags if d.severity.value == "error"]
    if (ir is None) != bool(errors):
        out.append(f"IR is {'None' if ir is None else 'set'} with {len(errors)} error(s)")
    files = {path: _lines(text)}
    for d in diags:
        s = d.span
        if s.path not in files:  # a data file beside the spec
            try:
                files[s.path] = _lines(Path(s.path).read_bytes().decode("utf-8", "replace"))
            except (OSError, ValueError):
                files[s.path] = ([], [])
        lf, any_break = files[s.path]
        why = []
        if d.code not in CODES:
            why.append("code not in CODES")
        if not (s.line >= 1 and s.col >= 1):
            why.append("line/col < 1")
        elif not any(s.line <= len(ls) and s.col <= len(ls[s.line - 1]) + 2 for ls in (lf, any_break)):
            why.append("outside the text")
        if (s.end_line, s.end_col) < (s.line, s.col):
            why.append("ends before it starts")
        if not d.message.strip() or "\n" in d.message:
            why.append("empty or multi-line message")
        if why:
            out.append(f"{', '.join(why)}: {d.format()[:300]}")
    return out


def _data_dir(base: Path, work: Path) -> Path:
    """A folder under `work` holding copies of the data files beside `base` (for cases written to disk)."""
    d = work / base.parent.relative_to(ROOT).as_posix().replace("/", "_")
    if not d.exists():
        d.mkdir(parents=True)
        for f in base.parent.iterdir():
            if f.is_file() and f.suffix != ".yaml":
                shutil.copy(f, d / f.name)
    return d


def write_case(case: Case, work: Path, name: str) -> Path:
    """The case as a file (beside copies of its base's data files, and its own files)."""
    folder = _data_dir(case.path, work)
    if case.files:  # a folder of its own, so its files replace nothing that later cases read
        folder = Path(tempfile.mkdtemp(dir=work))
        for f in _data_dir(case.path, work).iterdir():
            shutil.copy(f, folder / f.name)
        for rel, content in case.files.items():
            q = folder / rel
            q.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, str):
                q.unlink(missing_ok=True)
                q.symlink_to(content.removeprefix("->"))
            else:
                q.write_bytes(content)
    p = folder / name
    p.write_bytes(case.payload if isinstance(case.payload, bytes) else case.payload.encode("utf-8", "surrogatepass"))
    return p


def judge(case: Case, work: Path) -> dict[str, Any]:
    """Lint one case in this process and classify it (a traceback is caught and reported)."""
    import traceback

    import envc

    if isinstance(case.payload, bytes) or case.files:
        path = str(write_case(case, work, "case.yaml"))
        text = case.payload.decode("utf-8", "replace") if isinstance(case.payload, bytes) else case.payload
        call: Callable[[], Any] = lambda: envc.lint(path)
    else:
        path, text = str(case.path), case.payload
        call = lambda: envc.lint(path, text=text)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        ir, diags = call()
    except BaseException as e:
        tb = traceback.extract_tb(e.__traceback__)
        pkg = str(Path(envc.__file__).parent.parent)
        where = next(
            (f"{os.path.relpath(f.filename, pkg)}:{f.lineno}" for f in reversed(tb) if f.filename.startswith(pkg)), "?"
        )
        return {
            "cls": case.cls,
            "status": "traceback",
            "seconds": time.perf_counter() - t0,
            "cpu": time.process_time() - c0,
            "detail": f"{type(e).__name__}: {str(e)[:200]} at {where}",
        }
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    problems = diagnostic_problems(ir, diags, text, path)
    if case.files:
        shutil.rmtree(Path(path).parent, ignore_errors=True)
    errors = [d for d in diags if d.severity.value == "error"]
    status = "unlocated" if problems else "located" if errors else "clean"
    return {
        "cls": case.cls,
        "status": status,
        "detail": "; ".join(problems[:3]),
        "seconds": seconds,
        "cpu": cpu,
        "codes": sorted({d.code for d in errors}),
    }


def _worker(seed: int) -> None:
    """Read case indices from stdin, answer one JSON line each on the real stdout."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything envc prints goes to stderr
    with tempfile.TemporaryDirectory(prefix="envc-fuzz-") as tmp:
        for line in sys.stdin:
            index = int(line)
            case = make_case(seed, index)
            res = judge(case, Path(tmp))
            out.write(json.dumps({"index": index, **res}) + "\n")
            out.flush()


# ---- the runner ------------------------------------------------------------------------------------------


@dataclass
class _Proc:
    proc: subprocess.Popen[bytes]
    buf: bytes = b""
    index: int | None = None
    started: float = 0.0


@dataclass
class Report:
    """The outcome of a run."""

    seed: int
    count: int
    timeout: float
    results: dict[int, dict[str, Any]] = field(default_factory=dict)
    cli: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def table(self) -> dict[str, Counter[str]]:
        """Status counts per class."""
        t: dict[str, Counter[str]] = {}
        for i, r in sorted(self.results.items()):
            t.setdefault(class_of(i), Counter())[r["status"]] += 1
        return t

    def totals(self) -> Counter[str]:
        """Status counts over all cases."""
        return Counter(r["status"] for r in self.results.values())

    def failures(self) -> list[tuple[int, dict[str, Any]]]:
        """Cases that are not located or clean, and CLI samples that went wrong."""
        bad = [(i, r) for i, r in sorted(self.results.items()) if r["status"] not in ("located", "clean")]
        return bad + [(c["index"], c) for c in self.cli if not c["ok"]]

    def located_share(self) -> float:
        """Located cases among those with diagnostics to judge (located + unlocated)."""
        t = self.totals()
        n = t["located"] + t["unlocated"]
        return t["located"] / n if n else 1.0

    def to_json(self) -> dict[str, Any]:
        """The --json form."""
        return {
            "seed": self.seed,
            "count": self.count,
            "timeout_s": self.timeout,
            "seconds": round(self.seconds, 1),
            "totals": dict(self.totals()),
            "located_share": self.located_share(),
            "classes": {k: dict(v) for k, v in self.table().items()},
            "failures": [{"index": i, "class": class_of(i), **r} for i, r in self.failures()],
            "cli": self.cli,
            "slowest": sorted(
                (
                    {"index": i, "class": class_of(i), "cpu_s": round(r["cpu"], 2), "wall_s": round(r["seconds"], 2)}
                    for i, r in self.results.items()
                ),
                key=lambda x: -x["cpu_s"],
            )[:5],
        }

    def text(self) -> str:
        """A table of per-class counts, the totals and the failures."""
        cols = STATUSES
        rows = [f"| class | n | {' | '.join(cols)} | max CPU s |", "|---|" + "---:|" * (len(cols) + 2)]
        slowest: dict[str, float] = {}
        for i, r in self.results.items():
            slowest[class_of(i)] = max(slowest.get(class_of(i), 0.0), r["cpu"])
        for cls, c in self.table().items():
            counts = " | ".join(str(c[s]) for s in cols)
            rows.append(f"| {cls} | {sum(c.values())} | {counts} | {slowest[cls]:.2f} |")
        t = self.totals()
        top = max(slowest.values(), default=0.0)
        rows.append(f"| **total** | {sum(t.values())} | " + " | ".join(str(t[s]) for s in cols) + f" | {top:.2f} |")
        ok = sum(c["ok"] for c in self.cli)
        rows += [
            "",
            f"seed {self.seed}: {self.count} specs in {self.seconds:.1f} s; located {100 * self.located_share():.1f}% "
            f"of the specs with errors; tracebacks {t['traceback']}, hangs (> {self.timeout:g} s CPU) {t['hang']}, "
            f"crashes {t['crash']}; CLI samples {ok}/{len(self.cli)} ok",
        ]
        for i, r in self.failures():
            rows.append(f"  #{i} {class_of(i)}: {r.get('status', 'cli')}: {r['detail']}")
        return "\n".join(rows)


def _spawn(seed: int, scratch: str) -> _Proc:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--seed", str(seed)]
    env = {**os.environ, "TMPDIR": scratch}  # what a killed worker leaves goes when the run ends
    p = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT, env=env
    )
    return _Proc(p)


def _kill(w: _Proc) -> None:
    w.proc.kill()
    w.proc.wait()


def run(
    count: int,
    seed: int = 0,
    jobs: int = 1,
    timeout: float = 10.0,
    cli: int = 0,
    start: int = 0,
    only: set[str] | None = None,
) -> Report:
    """Lint `count` cases of `seed` from index `start` on (those of the classes `only`, if given) in `jobs` worker
    processes; then `cli` of them through `envc lint`. A lint over `timeout` seconds of CPU is a hang, and so is
    one still running after 6 x `timeout` seconds of wall clock (CPU time, since the machine may be shared)."""
    rep = Report(seed, count, timeout)
    guard = 6 * timeout
    t0 = time.perf_counter()
    todo = [i for i in range(start, start + count * len(CLASSES)) if only is None or class_of(i) in only][:count]
    todo.reverse()
    scratch = tempfile.mkdtemp(prefix="envc-fuzz-")
    workers = [_spawn(seed, scratch) for _ in range(max(1, jobs))]
    try:
        while todo or any(w.index is not None for w in workers):
            for w in workers:
                if w.index is None and todo:
                    w.index, w.started, w.buf = todo.pop(), time.perf_counter(), b""
                    assert w.proc.stdin is not None
                    try:
                        w.proc.stdin.write(f"{w.index}\n".encode())
                        w.proc.stdin.flush()
                    except BrokenPipeError:
                        pass
            busy = [w for w in workers if w.index is not None]
            now = time.perf_counter()
            wait = max(0.0, min(w.started + guard for w in busy) - now)
            ready, _, _ = select.select([w.proc.stdout for w in busy if w.proc.stdout is not None], [], [], wait)
            for k, w in enumerate(workers):
                if w.index is None:
                    continue
                if w.proc.stdout in ready:
                    assert w.proc.stdout is not None
                    chunk = os.read(w.proc.stdout.fileno(), 1 << 20)
                    if not chunk:  # the worker died
                        rc = w.proc.wait()
                        rep.results[w.index] = {
                            "status": "crash",
                            "detail": f"worker exited with {rc}",
                            "seconds": time.perf_counter() - w.started,
                            "cpu": 0.0,
                        }
                        workers[k] = _spawn(seed, scratch)
                        continue
                    w.buf += chunk
                    if w.buf.endswith(b"\n"):
                        res = json.loads(w.buf)
                        if res["cpu"] > timeout and res["status"] != "traceback":
                            res["detail"] = f"{res['cpu']:.1f} s of CPU (then {res['status']}) {res['detail']}"
                            res["status"] = "hang"
                        rep.results[res.pop("index")] = res
                        w.index = None
                elif time.perf_counter() - w.started >= guard:
                    rep.results[w.index] = {
                        "status": "hang",
                        "detail": f"killed after {guard:g} s (wall clock)",
                        "seconds": time.perf_counter() - w.started,
                        "cpu": guard,
                    }
                    _kill(w)
                    workers[k] = _spawn(seed, scratch)
    finally:
        for w in workers:
            if w.proc.poll() is None:
                assert w.proc.stdin is not None
                w.proc.stdin.close()
                try:
                    w.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    _kill(w)
        shutil.rmtree(scratch, ignore_errors=True)
    if cli:
        pick = random.Random(f"{seed}:cli")
        idx = sorted(pick.sample(sorted(rep.results), min(cli, len(rep.results))))
        rep.cli = [cli_check(seed, i, rep.results[i]["status"], timeout) for i in idx]
    rep.seconds = time.perf_counter() - t0
    return rep


def envc_command() -> list[str]:
    """The `envc` console script of this interpreter's environment."""
    exe = Path(sys.executable).parent / "envc"
    found = str(exe) if exe.exists() else shutil.which("envc")
    if found is None:
        raise SystemExit("error: no envc command beside this Python or on PATH")
    return [found]


def cli_check(seed: int, index: int, status: str, timeout: float) -> dict[str, Any]:
    """`envc lint` of case `index` written to a file: exit 1 for errors (0 when the in-process lint was clean),
    one located line per error on stdout, no traceback anywhere."""
    case = make_case(seed, index)
    with tempfile.TemporaryDirectory(prefix="envc-fuzz-cli-") as tmp:
        path = write_case(case, Path(tmp), f"case-{index}.yaml")
        try:
            p = subprocess.run([*envc_command(), "lint", str(path)], capture_output=True, timeout=6 * timeout + 10)
        except subprocess.TimeoutExpired:
            return {"index": index, "ok": False, "detail": "envc lint hung"}
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    want = 0 if status == "clean" else 1
    errs = [ln for ln in out.splitlines() if re.search(r":\d+:\d+: error\[E\d{3}\]: ", ln)]
    why = []
    if "Traceback" in out + err:
        why.append("traceback in output")
    if status in ("located", "clean") and p.returncode != want:
        why.append(f"exit {p.returncode}, in-process lint says {status}")
    if p.returncode == 1 and not errs:
        why.append("exit 1 without a located error line")
    return {
        "index": index,
        "ok": not why,
        "rc": p.returncode,
        "errors": len(errs),
        "detail": "; ".join(why) + (f" [{(err or out)[-300:]}]" if why else ""),
    }


def main() -> None:
    """The command line (see the module doc)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first case index")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--timeout", type=float, default=10.0, help="CPU seconds per spec before it counts as a hang")
    ap.add_argument("--cli", type=int, default=20, help="cases also run through `envc lint` in a subprocess")
    ap.add_argument("--only", default=None, help="comma-separated class names (yaml.tags,rule.calls,...)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show", type=int, default=None, help="print case INDEX and exit")
    ap.add_argument("--save", type=Path, default=None, help="write failing cases to this folder")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        _worker(a.seed)
        return
    if a.show is not None:
        c = make_case(a.seed, a.show)
        print(f"# class {c.cls}, base {c.path.relative_to(ROOT)}, {c.note}", file=sys.stderr)
        data = c.payload if isinstance(c.payload, bytes) else c.payload.encode("utf-8", "surrogatepass")
        sys.stdout.buffer.write(data)
        return
    only = set(a.only.split(",")) if a.only else None
    if only is not None and only - set(CLASS_NAMES):
        raise SystemExit(f"error: unknown classes {sorted(only - set(CLASS_NAMES))}; known: {', '.join(CLASS_NAMES)}")
    rep = run(a.count, a.seed, a.jobs, a.timeout, a.cli, a.start, only)
    if a.save is not None:
        a.save.mkdir(parents=True, exist_ok=True)
        for i, _ in rep.failures():
            write_case(make_case(a.seed, i), a.save, f"case-{a.seed}-{i}.yaml")
    print(json.dumps(rep.to_json(), indent=2) if a.json else rep.text())
    sys.exit(0 if not rep.failures() else 1)


if __name__ == "__main__":
    main()
