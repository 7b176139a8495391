"""Reading hostile spec files: special files are refused before they are opened, explicit YAML tags and broken
numbers are located errors, never tracebacks or hangs (issue #24, item 7)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import envc
from envc.diagnostics import Diagnostic
from envc.load import MAX_BYTES, MAX_NUMBER

ROOT = Path(__file__).resolve().parent.parent

SPEC = """\
name: hostile
players: PLAYERS
state:
  pos: i32
actions:
  stay: {effect: "pos = pos"}
observation:
  fields: {obs: i32}
  body: "obs = pos"
"""


def _errors(path: Path) -> list[Diagnostic]:
    _, diags = envc.lint(str(path))
    return [d for d in diags if d.severity.value == "error"]


def test_lint_refuses_special_and_oversized_files_without_blocking(tmp_path: Path) -> None:
    """A named pipe (opening it would wait for a writer), a folder, /dev/zero, a file past the size limit and a
    non-UTF-8 file: one located E001 line each, in one `envc lint` run that ends."""
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    huge = tmp_path / "huge.yaml"
    with open(huge, "wb") as f:
        f.truncate(64 * MAX_BYTES)  # sparse: big to read, cheap to make
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"name: caf\xe9\n")
    data_fifo = tmp_path / "walls.yml"
    os.mkfifo(data_fifo)
    uses_fifo = tmp_path / "uses_fifo.yaml"
    uses_fifo.write_text(
        SPEC.replace("PLAYERS", "1").replace(
            "state:", "constants:\n  W: {type: i8, shape: [2], file: walls.yml}\nstate:"
        )
    )
    paths = [fifo, folder, Path("/dev/zero"), huge, latin1, uses_fifo]
    r = subprocess.run(
        [sys.executable, "-m", "envc.cli", "lint", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(paths), r.stdout
    want = {
        fifo: ("1:1: error[E001]", "named pipe"),
        folder: ("1:1: error[E001]", "folder"),
        Path("/dev/zero"): ("1:1: error[E001]", "character device"),
        huge: ("1:1: error[E001]", f"larger than {MAX_BYTES} bytes"),
        latin1: ("1:10: error[E001]", "not valid UTF-8"),
        uses_fifo: ("4:35: error[E014]", "named pipe"),
    }
    for line, path in zip(lines, paths, strict=True):
        where, text = want[path]
        assert line.startswith(f"{path}:{where}:") and text in line, line


def test_a_folder_swapped_in_after_the_check_is_still_refused(tmp_path: Path) -> None:
    """What is read is checked on the open file too, not only by name (a folder opened for reading)."""
    from envc.load import read_at_most

    with pytest.raises(IsADirectoryError, match="folder"):
        read_at_most(tmp_path, 10)
    (tmp_path / "f.yaml").write_bytes(b"x" * 100)
    assert read_at_most(tmp_path / "f.yaml", 10) == b"x" * 10


TAGS = [
    "!!int",
    "!!float",
    "!!bool",
    "!!null",
    "!!str",
    "!!binary",
    "!!timestamp",
    "!!seq",
    "!!map",
    "!!set",
    "!!omap",
    "!!python/object/apply:os.system",
    "!custom",
    "!",
    "!<tag:yaml.org,2002:int>",
]
VALUES = ['"two"', "abc", "0b1111 0.5", "2", "[1, 2]", "{a: 1}", ""]


@pytest.mark.parametrize("tag", TAGS)
def test_every_explicit_tag_is_a_located_error(tag: str, tmp_path: Path) -> None:
    """Standard, Python and local tags on any kind of value: E003 at the tag, never an exception."""
    for value in VALUES:
        text = SPEC.replace("PLAYERS", f"{tag} {value}".rstrip())
        path = tmp_path / "spec.yaml"
        path.write_text(text)
        errors = _errors(path)
        assert [(d.code, d.span.line, d.span.col) for d in errors] == [("E003", 2, 10)], (value, errors)
        assert f"'{tag}'" in errors[0].message


PLACES = {  # where: (text, the same with a tag)
    "key": ("name: hostile", "!!str name: hostile"),
    "sequence item": ("shape: [2]", "shape: [2, !!int 3]"),
    "flow mapping after a quoted key": ('effect: "pos = pos"', '"effect":!!str "pos = pos"'),
    "block scalar": ('body: "obs = pos"', "body: !!str |\n    obs = pos"),
    "block mapping": ("state:\n", "state: !!map\n"),
    "document": ("name: hostile", "--- !!map\nname: hostile"),
    "anchor before the tag": ("players: 1", "players: &p !!int 1"),
}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_tags_are_found_wherever_they_are(place: str, tmp_path: Path) -> None:
    """E003 where the tag (or an anchor) starts, whatever kind of node carries it."""
    old, new = PLACES[place]
    base = SPEC.replace("PLAYERS", "1").replace("pos: i32", "pos: {type: i32, shape: [2]}")
    assert old in base
    text = base.replace(old, new, 1)
    at = base.index(old) + min(i for i in (new.find("!"), new.find("&")) if i >= 0)
    line, col = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    errors = _errors(path)
    assert [(d.code, d.span.line, d.span.col) for d in errors] == [("E003", line, col)], errors


def test_text_that_mentions_tags_is_not_a_tag(tmp_path: Path) -> None:
    """`!` inside values (`!=`, quoted text, comments) is not a tag: the spec is fine."""
    text = (
        SPEC.replace("PLAYERS", "1  # !!int here is a comment").replace('"pos = pos"', '"if pos != 0: pos = 0"')
        + 'doc: "!!int and &anchor are text here"\n'
    )
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    assert _errors(path) == []


@pytest.mark.parametrize("number", ["0b_", "0x_", "-0x_", "0b__"])
def test_plain_values_yaml_takes_for_broken_numbers(number: str, tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.replace("PLAYERS", number))
    errors = _errors(path)
    assert [(d.code, d.span.line, d.span.col) for d in errors] == [("E012", 2, 10)]
    assert f"'{number}'" in errors[0].message


@pytest.mark.parametrize("number", ["1" * 5000, "1" + ":0" * 1_000_000, "0x" + "f" * 100_000, "1." + "5" * 100_000])
def test_long_numbers_are_refused_quickly(number: str, tmp_path: Path) -> None:
    """A 5,000-digit decimal made int() raise; a million-part base-60 number took minutes to convert."""
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.replace("PLAYERS", number))
    start = time.perf_counter()
    errors = _errors(path)
    assert time.perf_counter() - start < 30
    assert [(d.code, d.span.line, d.span.col) for d in errors] == [("E012", 2, 10)]
    assert f"at most {MAX_NUMBER} characters" in errors[0].message


def test_numbers_up_to_the_limit_still_work(tmp_path: Path) -> None:
    long_float = "0." + "0" * (MAX_NUMBER - 3) + "1"
    text = SPEC.replace("PLAYERS", "0b10") + f"params:\n  eps: {{type: f32, default: {long_float}}}\n"
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    spec, diags = envc.lint(str(path))
    assert spec is not None, [d.format() for d in diags]
    assert spec.players == 2


def test_apostrophes_in_plain_flow_text_do_not_count_as_nesting(tmp_path: Path) -> None:
    """`Professor's` in a flow row is plain text, not an open quote: 60 such rows (a scraped card list) are not
    60 unclosed brackets; real nesting past the limit is still refused where it starts."""
    from envc.load import MAX_DEPTH, _nesting_problem

    row = "  - {{id: {i}, name: Professor's Research {i}, text: 'It''s {{not}} [a] bracket'}}\n"
    rows = "".join(row.format(i=i) for i in range(60))
    assert _nesting_problem(f"rows:\n{rows}") is None
    assert _nesting_problem('a: "\\" [" \nb: ' + "[" * (MAX_DEPTH + 1)) == (2, MAX_DEPTH + 4)
