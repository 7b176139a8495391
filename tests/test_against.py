"""`envc verify SPEC --against TARGET`: specs against the originals they claim to be (Gymnasium, a user's own
class), deliberately wrong copies that must fail with a located report, and bad input that must give one line
and exit 2. Everything runs through the real CLI (typer's runner, one real subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import envc
from envc.against import KEY_TRIES, boundaries, draws_in_step
from envc.cli import app
from envc.oracle.gymnasium import parse_path, read_path, write_path

ROOT = Path(__file__).resolve().parent.parent
CARTPOLE = ROOT / "specs" / "cartpole.yaml"
EXAMPLES = ROOT / "docs" / "examples"
SMALL = ["--episodes", "10", "--states", "40", "--stat-episodes", "40"]


def verify(*args: str) -> Any:
    return CliRunner().invoke(app, ["verify", *args])


def report(result: Any) -> dict[str, Any]:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def checks(rep: dict[str, Any], level: str) -> list[dict[str, Any]]:
    return [c for c in rep["checks"] if c["level"] == level]


def mutate(tmp_path: Path, source: Path, old: str, new: str) -> Path:
    text = source.read_text()
    assert text.count(old) == 1, old
    out = tmp_path / source.name
    out.write_text(text.replace(old, new))
    return out


def line_of(path: Path, fragment: str) -> str:
    """`path:line` of the one line holding `fragment`."""
    lines = [i for i, t in enumerate(path.read_text().splitlines(), 1) if fragment in t]
    assert len(lines) == 1, fragment
    return f"{path}:{lines[0]}"


# ---- correct specs pass -------------------------------------------------------------------------------------
def test_cartpole_passes_against_gymnasium() -> None:
    r = verify(str(CARTPOLE), "--against", "gymnasium:CartPole-v1", *SMALL, "--json")
    rep = report(r)
    assert r.exit_code == 0 and rep["passed"], r.stdout
    assert rep["target"] == "gymnasium:CartPole-v1"
    lossy = {c["field"]: (c["from"], c["to"]) for c in rep["conversions"] if c["lossy"]}
    assert lossy["x"] == ("float64", "float32") and lossy["theta_dot"] == ("float64", "float32")
    assert [c["cases"] > 0 for c in checks(rep, "L1")] == [True] * 3
    l2 = {c["name"]: c for c in checks(rep, "L2")}
    assert len(l2) == 4 and all(c["cases"] >= 40 for c in l2.values())
    edge = l2["one step from boundary values of the spec's constants"]
    # x and theta at +-threshold and next to it, step_count next to 500: f32(2.4) > 2.4 is a rounding edge;
    # x at the invariant's 1e6 and beyond breaks `finite_state`: outside the spec's domain, skipped and counted
    assert edge["cases"] >= 140 and edge["edges"] >= 4
    assert any("skipped: they break invariant 'finite_state'" in n for n in edge["notes"])
    l3 = checks(rep, "L3")
    assert [c["name"][:3] for c in l3] == ["(a)", "(b)", "(c)"]
    assert all(s["n_a"] == s["n_b"] == 40 and s["passed"] for s in l3[2]["statistics"])
    assert {s["quantity"] for s in l3[2]["statistics"]} == {"episode return", "episode length"}


def test_text_report_lists_levels_and_conversions() -> None:
    r = verify(str(CARTPOLE), "--against", "declared", "--episodes", "4", "--states", "10", "--stat-episodes", "0")
    assert r.exit_code == 0, r.stdout + r.stderr
    for text in ("lossy conversion: x <- state[0]: float64 -> float32", "against gymnasium:CartPole-v1: L1",
                 ": L2", ": L3", "one step from boundary"):  # fmt: skip
        assert text in r.stdout, text


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("mountain_car", []),
        ("continuous_mountain_car", ["--max-steps", "200"]),
        ("pendulum", []),
        ("acrobot", ["--max-steps", "150"]),
    ],
)
def test_classic_control_examples_pass_against_gymnasium(name: str, extra: list[str]) -> None:
    args = ["--episodes", "5", "--states", "30", "--stat-episodes", "20", *extra, "--json"]
    r = verify(str(EXAMPLES / f"{name}.yaml"), "--against", "declared", *args)
    rep = report(r)
    failing = [c["failures"] for c in rep["checks"] if not c["passed"]]
    assert r.exit_code == 0 and rep["passed"], failing
    assert rep["target"].startswith("gymnasium:")
    assert all(c["cases"] > 0 for c in rep["checks"])
    assert sum(c["cases"] for c in checks(rep, "L2")) >= 120


def test_a_backend_runs_through_the_same_levels() -> None:
    pytest.importorskip("jax")
    r = verify(str(CARTPOLE), "--against", "declared", "--backend", "jax", "--level", "L2", "--states", "20", "--json")
    rep = report(r)
    assert r.exit_code == 0 and rep["passed"] and sum(c["cases"] for c in rep["checks"]) > 200


# ---- wrong copies fail, located --------------------------------------------------------------------------------
def test_changed_gravity_fails_every_level_that_steps(tmp_path: Path) -> None:
    spec = mutate(tmp_path, CARTPOLE, "gravity: 9.8", "gravity: 10.0")
    r = verify(str(spec), "--against", "gymnasium:CartPole-v1", *SMALL, "--json")
    rep = report(r)
    assert r.exit_code == 1 and not rep["passed"]
    first = rep["first_divergence"]
    assert first["level"] == "L2" and first["quantity"] in ("x_dot", "theta_dot")
    assert line_of(spec, f"      {first['quantity']} = {first['quantity']} + tau") in first["written_at"]
    assert set(first["injected"]) >= {"x", "x_dot", "theta", "theta_dot", "step_count"}
    assert first["original"] != first["spec"]
    l2 = checks(rep, "L2")
    # every failing case is counted, not only the first five
    assert all(c["failed"] > 0.8 * c["cases"] for c in l2[:3]) and l2[0]["failed"] > 5
    lock, free = checks(rep, "L3")[:2]
    assert lock["failed"] == lock["cases"] and free["failed"] > 0


def test_strict_for_non_strict_threshold_is_caught_by_boundary_states(tmp_path: Path) -> None:
    """`x >= x_threshold` for `x > x_threshold`: only x exactly at the threshold tells them apart."""
    spec = mutate(tmp_path, CARTPOLE, "or x > x_threshold", "or x >= x_threshold")
    r = verify(str(spec), "--against", "gymnasium:CartPole-v1", "--level", "L2", "--states", "20", "--json")
    rep = report(r)
    assert r.exit_code == 1
    (bad,) = [c for c in rep["checks"] if not c["passed"]]
    assert bad["name"] == "one step from boundary values of the spec's constants"
    first = rep["first_divergence"]
    assert (first["quantity"], first["original"], first["spec"]) == ("terminated", False, True)
    assert first["injected"]["x"] == 2.4 and first["injected"]["x_dot"] == 0.0
    assert first["written_at"] == [line_of(spec, "x < -x_threshold or x >= x_threshold")]


def test_missing_truncation_is_caught(tmp_path: Path) -> None:
    spec = mutate(tmp_path, CARTPOLE, "truncated: step_count >= max_steps", "truncated: false")
    r = verify(str(spec), "--against", "gymnasium:CartPole-v1", "--level", "L2", "--states", "20", "--json")
    rep = report(r)
    assert r.exit_code == 1
    first = rep["first_divergence"]
    assert (first["quantity"], first["original"], first["spec"]) == ("truncated", True, False)
    assert first["injected"]["step_count"] == 499
    assert first["written_at"] == [line_of(spec, "truncated: false")]


def test_text_report_names_the_first_divergence(tmp_path: Path) -> None:
    spec = mutate(tmp_path, CARTPOLE, "truncated: step_count >= max_steps", "truncated: false")
    r = verify(str(spec), "--against", "declared", "--level", "L2", "--states", "10")
    assert r.exit_code == 1
    (line,) = [t for t in r.stdout.splitlines() if t.startswith("first divergence")]
    assert "L2" in line and "truncated original True spec False" in line and line_of(spec, "truncated:") in line


def test_wrong_pendulum_fails(tmp_path: Path) -> None:
    spec = mutate(tmp_path, EXAMPLES / "pendulum.yaml", "type: f32, default: 10.0,", "type: f32, default: 9.81,")
    r = verify(str(spec), "--against", "declared", "--level", "L2", "--states", "20", "--json")
    rep = report(r)
    assert r.exit_code == 1 and rep["first_divergence"]["quantity"] in ("theta", "theta_dot", "observation")


# ---- a user's own class (the docs example) -------------------------------------------------------------------
ORACLE_EXAMPLE = EXAMPLES / "oracle_example.py"
CORRIDOR = EXAMPLES / "corridor.yaml"


def test_docs_example_oracle_passes_with_key_search() -> None:
    r = verify(str(CORRIDOR), "--against", f"{ORACLE_EXAMPLE}:make_oracle", *SMALL, "--json")
    rep = report(r)
    assert r.exit_code == 0 and rep["passed"], [c["failures"] for c in rep["checks"]]
    assert rep["key_searches"] > 0 and rep["chance_tape"]  # the slips were followed by choosing keys
    assert rep["conversions"] == []


def test_docs_example_as_a_dotted_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES)
    r = verify(str(CORRIDOR), "--against", "oracle_example:make_oracle", "--level", "L2", "--states", "10")
    assert r.exit_code == 0, r.stdout + r.stderr
    sys.modules.pop("oracle_example", None)


def test_a_spec_that_cannot_draw_the_originals_chance_fails(tmp_path: Path) -> None:
    spec = mutate(tmp_path, CORRIDOR, "slip: 0.1 ", "slip: 0.0 ")
    r = verify(str(spec), "--against", f"{ORACLE_EXAMPLE}:make_oracle", "--level", "L2", "--states", "40", "--json")
    rep = report(r)
    assert r.exit_code == 1
    assert f"no key among {KEY_TRIES}" in rep["first_divergence"]["note"]


def test_wrong_slip_probability_is_caught_by_the_statistics(tmp_path: Path) -> None:
    """Key search makes each step reproducible whatever the slip probability: the distributions tell."""
    spec = mutate(tmp_path, CORRIDOR, "slip: 0.1 ", "slip: 0.5 ")
    r = verify(str(spec), "--against", f"{ORACLE_EXAMPLE}:make_oracle", *SMALL, "--json")
    rep = report(r)
    assert r.exit_code == 1
    assert [c["name"][:3] for c in rep["checks"] if not c["passed"]] == ["(c)"]


CHANCE_FACTORY = """
import importlib.util
spec_ = importlib.util.spec_from_file_location("oracle_example_copy", {path!r})
mod = importlib.util.module_from_spec(spec_)
spec_.loader.exec_module(mod)

def make(spec):
    o = mod.make_oracle(spec)
    o.chance_fields = ("pos", "reached")  # filled by the original's own slip: copied after each step
    return o
"""


def test_chance_fields_are_copied_from_the_original(tmp_path: Path) -> None:
    spec = mutate(tmp_path, CORRIDOR, "slip: 0.1 ", "slip: 0.0 ")
    factory = tmp_path / "chance_factory.py"
    factory.write_text(CHANCE_FACTORY.format(path=str(ORACLE_EXAMPLE)))
    r = verify(str(spec), "--against", f"{factory}:make", "--level", "L2", "--level", "L3", "--states", "20",
               "--episodes", "10", "--stat-episodes", "0", "--json")  # fmt: skip
    rep = report(r)
    assert r.exit_code == 0, [c["failures"] for c in rep["checks"]]
    assert rep["key_searches"] == 0


# ---- bad input: one line, exit 2 --------------------------------------------------------------------------------
FACTORIES = """
import numpy as np
import gymnasium as gym
from envc.oracle.gymnasium import GymnasiumOracle

MAP = {"x": "state[0]", "x_dot": "state[1]", "theta": "state[2]", "theta_dot": "state[3]"}

class Raising(GymnasiumOracle):
    calls = 0
    def step(self, action):
        Raising.calls += 1
        if Raising.calls == 7:
            raise ZeroDivisionError("the original's own bug")
        return super().step(action)

def raising(spec):
    return Raising.wrap(gym.make("CartPole-v1"), spec, MAP)

def unknown_field(spec):
    return GymnasiumOracle.wrap(gym.make("CartPole-v1"), spec, {**MAP, "nope": "state[0]"})

class ShortObs(GymnasiumOracle):
    def reset(self, seed):
        t = super().reset(seed)
        return type(t)(t.rewards, t.terminated, t.truncated, observation=t.observation[:3])

def short_obs(spec):
    return ShortObs.wrap(gym.make("CartPole-v1"), spec, MAP)

def not_an_oracle(spec):
    return 42
"""


@pytest.fixture
def factories(tmp_path: Path) -> Path:
    path = tmp_path / "factories.py"
    path.write_text(FACTORIES)
    return path


def bad_mapping(tmp_path: Path, old: str, new: str) -> str:
    return str(mutate(tmp_path, CARTPOLE, old, new))


@pytest.mark.parametrize(
    ("target", "expect"),
    [
        ("nonsense", "unknown target 'nonsense'"),
        ("gymnasium:NoSuchEnv-v9", "gymnasium cannot make 'NoSuchEnv-v9'"),
        ("no_such_module_xyz:make", "cannot import 'no_such_module_xyz': ModuleNotFoundError"),
        ("{f}:missing", "has no callable 'missing'"),
        ("{f}:not_an_oracle", "returned int, not an envc.oracle.Oracle"),
        ("{f}:raising", "the original raised ZeroDivisionError at"),
        ("{f}:unknown_field", "oracle field 'nope' is not a state field"),
        ("{f}:short_obs", "the original's observation has shape [3], the spec's [4]"),
        ("gymnasium:Acrobot-v1", "the original has 3 actions, the spec 2"),
        ("pgx:tic_tac_toe", "9 actions and 2 player(s)"),
    ],
)
def test_bad_targets_give_one_line_and_exit_2(factories: Path, target: str, expect: str) -> None:
    r = verify(str(CARTPOLE), "--against", target.format(f=factories), *SMALL)
    assert r.exit_code == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expect in lines[0], r.stderr
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.parametrize(
    ("old", "new", "expect"),
    [
        ('theta_dot: "state[3]"', 'omega: "state[3]"', "error[E030]: oracle maps unknown state field 'omega'"),
        ('x: "state[0]"', 'x: "state"', "the original's value has shape [4], the spec's field []"),
        ('x: "state[0]"', 'x: "state[0]", step_count: "state[1]"', "dtype float64 cannot become the spec's i32"),
        ('x: "state[0]"', 'x: "state[9]"', "cannot read it on the original"),
        ('x: "state[0]"', 'x: "state[0"', "is not attribute names"),
        ("target: gymnasium:CartPole-v1", "target: CartPole-v1", "error[E012]: oracle target 'CartPole-v1'"),
    ],
)
def test_bad_mappings_give_one_line_and_exit_2(tmp_path: Path, old: str, new: str, expect: str) -> None:
    spec = bad_mapping(tmp_path, old, new)
    r = verify(spec, "--against", "gymnasium:CartPole-v1" if "target" in old else "declared", *SMALL)
    assert r.exit_code == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and expect in lines[0], r.stderr
    if "error[" in expect:  # a spec diagnostic, located at the name it quotes
        path, ln, col = lines[0].split(":")[:3]
        quoted = expect.split("'")[1]
        assert path == spec and Path(spec).read_text().splitlines()[int(ln) - 1][int(col) - 1 :].startswith(quoted)


def test_a_raising_original_in_a_real_process(factories: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "envc.cli", "verify", str(CARTPOLE), "--against", f"{factories}:raising"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and "ZeroDivisionError" in r.stderr


# ---- pieces -------------------------------------------------------------------------------------------------------
def test_boundaries_are_the_constants_the_spec_compares_with() -> None:
    b = boundaries(envc.load(str(CARTPOLE)))
    assert {2.4, -2.4} <= b[("x", ())] and {0.20943951023931953, -0.20943951023931953} <= b[("theta", ())]
    assert 500.0 in b[("step_count", ())]
    assert draws_in_step(envc.load(str(CORRIDOR))) and not draws_in_step(envc.load(str(CARTPOLE)))


def test_paths_write_through_tuples_and_copies() -> None:
    class Env:
        state: Any = (1.0, 2.0)

    e = Env()
    shared = np.zeros(3)
    write_path(e, parse_path("state[1]"), 5.0)
    assert e.state == (1.0, 5.0) and read_path(e, parse_path("state[1]")) == 5.0
    e.state = shared
    write_path(e, parse_path("state[2]"), 7.0)
    assert e.state[2] == 7.0 and shared[2] == 0.0  # an array the original handed out is not changed under it
