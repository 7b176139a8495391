"""A spec's generated code and cache key depend on its content and file name, not on where it lies."""

from __future__ import annotations

import shutil
from pathlib import Path

import envc
from envc.compile import render_files
from envc.ir import content_digest

ROOT = Path(__file__).resolve().parent.parent


def _copy(tmp: Path) -> Path:
    for p in (ROOT / "specs").iterdir():
        shutil.copy(p, tmp / p.name)
    return tmp / "tcg.yaml"


def test_moved_spec_keeps_its_digest_and_code(tmp_path: Path) -> None:
    here = envc.load(str(ROOT / "specs" / "tcg.yaml"))  # with CSV data files beside it
    moved = envc.load(str(_copy(tmp_path)))
    assert content_digest(here) == content_digest(moved)
    a, b = render_files(here, "all"), render_files(moved, "all")
    assert a == b
    assert not any(str(tmp_path) in text or str(ROOT) in text for text in b.values())


def test_changed_spec_changes_its_digest(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    before = content_digest(envc.load(str(path)))
    path.write_text(path.read_text().replace("max_turns: {type: i32, default: ", "max_turns: {type: i32, default: 1"))
    assert content_digest(envc.load(str(path))) != before
