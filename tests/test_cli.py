"""The `envc` command line, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def envc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envc.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_lint_clean_specs_exit_zero() -> None:
    r = envc("lint", *sorted(str(p) for p in (ROOT / "specs").glob("*.yaml")))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr


def test_lint_reports_located_errors_and_exits_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "specs" / "cartpole.yaml").read_text().replace("x = x + tau * x_dot", "x = x + tau * xdot"))
    r = envc("lint", str(bad))
    assert r.returncode == 1
    line = r.stdout.strip().splitlines()[0]
    assert line.startswith(f"{bad}:") and "error[E030]" in line and "did you mean 'x_dot'" in line
    text = bad.read_text().splitlines()
    _, ln, col = line.split(":")[:3]
    assert text[int(ln) - 1][int(col) - 1 :].startswith("xdot")


def test_lint_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nstate: {a: i9}\nactions: {go: {}}\nobservation: {fields: {o: i8}, body: 'o = 0'}\n")
    r = envc("lint", "--format", "json", str(bad))
    assert r.returncode == 1
    (d,) = json.loads(r.stdout)
    assert set(d) == {"path", "line", "col", "end_line", "end_col", "severity", "code", "message"}
    assert (d["code"], d["line"], d["col"], d["severity"]) == ("E030", 2, 12, "error")


def test_run_prints_summary_table() -> None:
    r = envc("run", "specs/tic_tac_toe.yaml", "--episodes", "5", "--seed", "1")
    assert r.returncode == 0, r.stderr
    for col in ("episodes", "mean return", "mean length", "steps/s"):
        assert col in r.stdout
    assert "│        5 │" in r.stdout


def test_run_bad_spec_fails_cleanly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [\n")
    r = envc("run", str(bad))
    assert r.returncode == 1 and "E002" in r.stderr and "Traceback" not in r.stderr


CARTPOLE_SPEC = str(ROOT / "specs" / "cartpole.yaml")


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["run", CARTPOLE_SPEC, "--episodes", "-2"], "--episodes"),  # was a numpy traceback
        (["run", CARTPOLE_SPEC, "--episodes", "0"], "--episodes"),  # was a table of nan
        (["run", CARTPOLE_SPEC, "--max-steps", "-1"], "--max-steps"),
        (["verify", CARTPOLE_SPEC, "--level", "L9"], "L9"),  # was a traceback
        (["verify", CARTPOLE_SPEC, "--episodes", "-5", "--level", "L3"], "--episodes"),  # was a traceback
        (["verify", CARTPOLE_SPEC, "--states", "0", "--level", "L2"], "--states"),  # passed, comparing nothing
        (["verify", CARTPOLE_SPEC, "--against", "declared", "--stat-episodes", "-3"], "--stat-episodes"),
        (["verify", CARTPOLE_SPEC, "--against", "declared", "--max-steps", "0"], "--max-steps"),
        (["bench", CARTPOLE_SPEC, "--steps", "0"], "--steps"),
        (["bench", CARTPOLE_SPEC, "--backend", "rust", "--threads", "-2"], "--threads"),  # was a traceback
    ],
)
def test_out_of_range_options_are_one_clear_error(args: list[str], option: str) -> None:
    """A count that cannot be run is refused before any work (exit 2), never a traceback or a vacuous pass."""
    r = envc(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert option in r.stderr, r.stderr
