"""Arm coverage of the derived suite (envc/coverage.py): measured, steered toward rare arms, shown by `envc verify`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import envc
import envc.coverage
from envc.coverage import arms_of, measure, measure_and_steer
from envc.interpret import ReferenceEnv
from envc.verify import verify

ROOT = Path(__file__).resolve().parent.parent
RARE = ROOT / "tests" / "specs" / "rare_arm.yaml"
SMALL = {"episodes": 10, "states": 20}


def test_arms_enumerated_with_their_lines() -> None:
    spec = envc.load(str(RARE))
    shown = [a.describe() for a in arms_of(spec)]
    where = str(RARE)
    assert f"{where}:18:10 if `x == 1000 and y == 500`: then" in shown
    assert f"{where}:18:10 if `x == 1000 and y == 500`: else (nothing)" in shown
    assert f"{where}:21:10 if `k > 5`: then" in shown
    assert f"{where}:23:13 select `bonus > 0`: first value" in shown
    assert len(shown) == 6


def test_match_cases_legal_and_rules_are_arms() -> None:
    spec = envc.load(str(ROOT / "specs" / "kuhn_poker.yaml"))
    kinds = {a.kind for a in arms_of(spec)}
    assert {"if", "elif", "select"} <= kinds
    ttt = envc.load(str(ROOT / "specs" / "tic_tac_toe.yaml"))
    legal = [a for a in arms_of(ttt) if a.kind == "legal"]
    assert [a.outcome for a in legal] == [True, False]


def test_detached_reference_compiles_no_probe() -> None:
    spec = envc.load(str(RARE))
    hits: set[object] = set()
    plain, probed = ReferenceEnv(spec), ReferenceEnv(spec, arms=hits)  # type: ignore[arg-type]
    k = envc.rng.key_from_seed(0)
    s0, s1 = plain.step(plain.init(k), 1), probed.step(probed.init(k), 1)
    assert plain.state_to_dict(s0)["x"] == probed.state_to_dict(s1)["x"] == 1
    assert hits and plain._c.arms is None


def test_rare_arm_reached_only_by_steering_and_dead_arm_listed() -> None:
    spec = envc.load(str(RARE))
    arms, suite = measure(spec, **SMALL)
    rare = next(a for a in arms if a.span.line == 18 and a.outcome is True)
    dead = next(a for a in arms if a.span.line == 21 and a.outcome is True)
    assert rare not in suite and dead not in suite  # random play and L2's fuzz never put both fields there
    cov = measure_and_steer(spec, **SMALL)
    assert rare in cov.by_steering and cov.steered
    assert cov.unreached == [dead]
    assert cov.ratio == 5 / 6


def test_steered_states_catch_a_bug_in_the_rare_arm(tmp_path: Path) -> None:
    # the "backend" is the reference of a spec whose rare arm writes 8 instead of 7: only a steered state shows it
    spec = envc.load(str(RARE))
    bad = tmp_path / "rare_bug.yaml"
    bad.write_text(RARE.read_text().replace("bonus = 7", "bonus = 8"))
    buggy = ReferenceEnv(envc.load(str(bad)), strict=False)
    checks = {c.name: c for c in verify(spec, buggy, **SMALL)}
    steered = checks["one step from coverage-steered states"]
    assert not steered.passed
    assert "field 'bonus'" in steered.failures[0] and "reference 7 backend 8" in steered.failures[0]
    others = [c for n, c in checks.items() if n != "one step from coverage-steered states" and not c.passed]
    assert not others, [(c.name, c.failures) for c in others]
    good = {c.name: c for c in verify(spec, ReferenceEnv(spec, strict=False), **SMALL)}
    assert good["one step from coverage-steered states"].passed


def test_verify_output_names_the_unreached_arm() -> None:
    args = [sys.executable, "-m", "envc.cli", "verify", str(RARE), "--backend", "reference", "--episodes", "10"]
    r = subprocess.run(
        [*args, "--states", "20"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "COLUMNS": "1000"},  # one table row per check, unwrapped
    )
    assert r.returncode == 0, r.stdout + r.stderr
    row = next(ln for ln in r.stdout.splitlines() if "arm coverage" in ln)
    assert "arm coverage 5 of 6 (83.3%), 1 of them reached only by steered states" in row
    assert f"unreached: {RARE}:21:10 if `k > 5`: then" in row and "pass" in row
    assert "one step from coverage-steered states" in r.stdout


def test_threshold_makes_low_coverage_fail() -> None:
    from envc.coverage import coverage_checks

    spec = envc.load(str(RARE))
    env = ReferenceEnv(spec, strict=False)
    check = coverage_checks(spec, env, threshold=0.95, **SMALL)[0]
    assert not check.passed and check.failures == [f"unreached arm {RARE}:21:10 if `k > 5`: then"]


def test_shipped_spec_full_coverage() -> None:
    spec = envc.load(str(ROOT / "specs" / "kuhn_poker.yaml"))
    arms, suite = measure(spec, episodes=20, states=50)
    assert len(arms) == 8 and suite == set(arms)


@pytest.mark.parametrize("path", ["docs/examples/leduc_holdem.yaml", "docs/examples/acrobot.yaml",
                                  "docs/examples/game_2048.yaml"])
def test_measuring_without_the_lockstep_takes_the_same_arms(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the measuring run, L3's lockstep is left out (`envc.coverage.measuring`): the reference in the backend's
    place takes the same steps free running. The arms it reaches are those the lockstep would add."""
    spec = envc.load(str(ROOT / path))
    sizes = {"episodes": 2, "states": 4, "seed": 5, "max_steps": 60}
    seen: list[bool] = []
    real = envc.coverage.measuring
    monkeypatch.setattr(envc.coverage, "measuring", lambda: seen.append(real()) or seen[-1])
    arms, without = measure(spec, **sizes)
    assert seen and all(seen)  # L3 asked, inside the measuring run
    monkeypatch.setattr(envc.coverage, "measuring", lambda: False)
    assert measure(spec, **sizes) == (arms, without)
    assert len(without) > len(arms) // 2
