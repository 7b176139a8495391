"""The derived tests written into a compiled Rust package's tests/ folder (with a copy of the spec)."""

from __future__ import annotations

from pathlib import Path

from envc import __version__, ir
from envc.lower_rust import TEMPLATES, _env


def render_tests(spec: ir.SpecIR, package: str, episodes: int = 100, states: int = 200) -> dict[str, str]:
    """tests/test_verify.py plus tests/spec/ (the spec and its data files), path -> text."""
    src = Path(spec.path)
    files = {
        "tests/test_verify.py": _env(TEMPLATES)
        .get_template("tests/test_verify.py.j2")
        .render(spec=spec, package=package, version=__version__, spec_file=src.name, episodes=episodes, states=states),
        f"tests/spec/{src.name}": src.read_text(),
    }
    for rel in spec.data_files:
        files[f"tests/spec/{rel}"] = (src.parent / rel).read_text()
    return files
