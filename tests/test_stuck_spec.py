"""A spec whose `legal` and `terminated` disagree (no legal action, not ended) is reported, never a crash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import envc
from envc.verify import verify

STUCK = """\
name: stuck
players: 1
state:
  turn: i32
actions:
  only: {legal: "turn < 3", effect: "turn += 1"}
observation:
  fields: {seen: i32}
  body: "seen = turn"
"""


def test_verify_reports_the_stuck_state(tmp_path: Path) -> None:
    p = tmp_path / "stuck.yaml"
    p.write_text(STUCK)
    spec = envc.load(str(p))
    checks = {c.name: c for c in verify(spec, envc.build(spec), levels=("L1", "L3"), episodes=5)}
    want = "episode 0 step 3: no legal action in a non-terminal state"
    assert checks["legal action when not done"].failures[0] == want
    assert not next(c for name, c in checks.items() if name.startswith("lockstep: 5 episodes")).passed


def test_run_says_what_is_wrong(tmp_path: Path) -> None:
    p = tmp_path / "stuck.yaml"
    p.write_text(STUCK)
    r = subprocess.run([sys.executable, "-m", "envc.cli", "run", str(p)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "no action is legal but the episode has not ended" in r.stderr
    assert "Traceback" not in r.stderr
