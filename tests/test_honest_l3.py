"""Honest L3 (issue #19 item 5): lockstep, free-running against the reference's own 1-ulp divergence horizon, and
a statistical comparison with stated power. A correct backend of a chaotic spec passes; a wrong one fails."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps  # type: ignore[import-untyped]
from typer.testing import CliRunner

import envc
from envc.cli import app
from envc.interpret import ReferenceEnv
from envc.lower_jax.build import JaxEnv, cache_dir, compile_to_cache
from envc.stats import compare_samples, detectable_shift, divergence_horizon, nudge, own_horizon, parting_rank_test
from envc.verify import Check, level3, verify

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"


# ---- envc.stats ---------------------------------------------------------------------------------------------


def test_compare_samples_degenerate_identical_and_shifted() -> None:
    same = compare_samples("episode length", [500] * 12, [500] * 12)
    assert (same.statistic, same.p_value, same.passed) == (0.0, 1.0, True)
    apart = compare_samples("episode length", [500] * 12, [499] * 12)
    assert apart.statistic == 1.0 and not apart.passed
    gen = np.random.default_rng(7)
    a = gen.normal(size=60)
    assert compare_samples("return", a, gen.normal(size=60)).passed
    shifted = compare_samples("return", a, gen.normal(size=60) + 1.5)
    assert not shifted.passed and shifted.p_value < 0.01
    with_nan = compare_samples("return", [1.0, float("nan")], [1.0, 2.0])
    assert math.isfinite(with_nan.p_value) and math.isfinite(with_nan.statistic)
    assert "n=60+60" in shifted.describe() and "80% power" in shifted.describe()
    assert not math.isfinite(compare_samples("x", [1.0], [2.0]).detectable)  # one episode each: no power
    with pytest.raises(ValueError, match="empty"):
        compare_samples("x", [], [1.0])


def test_stated_power_holds_on_fresh_draws() -> None:
    # the detectable shift is found by simulation with a fixed seed; check it on independent draws
    n, alpha = 40, 0.01
    delta = detectable_shift(n, n, alpha)
    assert detectable_shift(20, 20, alpha) > delta > detectable_shift(100, 100, alpha)
    gen = np.random.default_rng(12345)
    trials = 400
    hits = sum(sps.ks_2samp(gen.normal(size=n), gen.normal(size=n) + delta).pvalue < alpha for _ in range(trials))
    assert 0.72 <= hits / trials <= 0.88, (delta, hits / trials)
    below = sum(sps.ks_2samp(gen.normal(size=n), gen.normal(size=n) + delta / 2).pvalue < alpha for _ in range(trials))
    assert below / trials < 0.5


def test_nudge_moves_only_float_elements_by_one_ulp() -> None:
    values = {"x": np.array([1.0, -2.0, 0.0], np.float32), "k": np.array([3, 4], np.int32), "b": np.asarray(True)}
    up = nudge(values, ["x", "k", "b"])
    assert up["x"].dtype == np.float32 and np.all(up["x"] > values["x"])
    assert np.array_equal(np.nextafter(up["x"], np.float32(-np.inf)), values["x"])
    assert np.array_equal(up["k"], values["k"]) and up["b"] == values["b"]
    down = nudge(values, ["x"], -1.0)
    assert np.all(down["x"] < values["x"])
    assert up["x"] is not values["x"]  # a copy


def _map_step(r: float) -> Any:
    def step(d: Any, t: int) -> dict[str, np.ndarray]:
        x = float(d["x"])  # float64: an f32 orbit of the logistic map soon falls into a short cycle
        return {"x": np.asarray(r * x * (1.0 - x))}

    return step


def test_divergence_horizon_of_a_chaotic_and_a_contracting_map() -> None:
    start = {"x": np.asarray(0.3)}
    chaotic = divergence_horizon(_map_step(4.0), start, 200)  # logistic map at r = 4: doubles errors
    assert chaotic.step is not None and 5 < chaotic.step < 60 and chaotic.field == "x"
    calm = divergence_horizon(_map_step(2.5), start, 200)  # converges to a fixed point: a nudge dies out
    assert calm.step is None and calm.compared == 200
    mine = own_horizon(_map_step(4.0), start, 200)
    assert mine.step is not None and mine.step <= chaotic.step  # the earliest of several twins
    assert own_horizon(_map_step(4.0), start, 3).step is None  # limited to 3 steps


def test_parting_rank_test_is_exact_and_one_sided() -> None:
    ranks = [0, 1, 2]
    brute = sum(sum(c) <= sum(ranks) for c in itertools.product(range(3), repeat=3)) / 27
    assert parting_rank_test(ranks, 2).p_value == pytest.approx(brute)
    assert not parting_rank_test([0, 0, 0], 4).passed  # (1/5)^3 = 0.008
    assert parting_rank_test([0, 0], 4).passed and parting_rank_test([0, 0], 4).min_episodes == 3
    late = parting_rank_test([4] * 40 + [0] * 3, 4)  # parted first now and then, last otherwise: fine
    assert late.passed and late.first == 3 and "first in 3" in late.describe()
    assert not parting_rank_test([1] * 40, 4).passed  # always early, though rarely first
    with pytest.raises(ValueError):
        parting_rank_test([5], 4)


# ---- honest L3 on the classic-control examples --------------------------------------------------------------


def _checks(spec: envc.SpecIR, env: Any, episodes: int, max_steps: int) -> dict[str, Check]:
    return {c.name.split(":")[0].split(",")[0]: c for c in level3(spec, env, episodes, 0, max_steps)}


@pytest.mark.parametrize("backend", ["jax", "rust"])
@pytest.mark.parametrize("name", ["pendulum", "acrobot"])
def test_a_correct_backend_passes_honest_l3(name: str, backend: str) -> None:
    spec = envc.load(str(EXAMPLES / f"{name}.yaml"))
    everything = level3(spec, envc.build(spec, backend=backend), 8, 0, 150)
    assert all(c.passed for c in everything), [(c.name, c.failures) for c in everything if not c.passed]
    json.dumps([dataclasses.asdict(c) for c in everything])  # plain values, for --json
    free = next(c for c in everything if c.name.startswith("free-running"))
    stat = [c for c in everything if c.name.startswith("statistical")]
    assert [c.cases for c in stat] == [16, 16] and all("n=8+8" in c.name for c in stat)
    if backend == "jax":  # the f32 results part while free running: the horizon is what lets them pass
        assert free.figures["episodes_parted"], free.name
        assert free.figures["horizon_min"] is not None and "1-ulp noise twins part from it" in free.name


def _jax_mutant(spec: envc.SpecIR, pattern: str, replacement: str) -> JaxEnv:
    """The JAX env of `spec` with its generated env.py changed at the first match of `pattern`."""
    name = compile_to_cache(spec)
    src = (cache_dir() / "jax" / name / name / "env.py").read_text()
    changed, n = re.subn(pattern, replacement, src, count=1)
    assert n == 1, f"the generated code has no {pattern!r}"
    module = types.ModuleType(f"{name}.env_mutant_{abs(hash((pattern, replacement)))}")
    sys.modules[module.__name__] = module  # the dataclasses in it look their module up
    try:
        exec(compile(changed, f"<mutant of {name}/env.py>", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return JaxEnv(spec, module=module)


JAX_MUTANTS = [
    ("pendulum", r"params\.g\b", "(params.g * jnp.float32(1.01))"),  # a coefficient 1% off
    ("pendulum", r"jnp\.sin\(state\.theta\)", "(-jnp.sin(state.theta))"),  # a sign flipped in one term
    ("pendulum", r"\), params\.max_torque\)", "), params.max_torque * jnp.float32(0.9))"),  # the torque clip bound
    ("acrobot", r"params\.gravity\b", "(params.gravity * jnp.float32(1.01))"),
    ("acrobot", r"jnp\.sin\(t2_1\)", "(-jnp.sin(t2_1))"),
]


@pytest.mark.parametrize(("name", "pattern", "replacement"), JAX_MUTANTS)
def test_wrong_generated_jax_code_fails_lockstep(name: str, pattern: str, replacement: str) -> None:
    spec = envc.load(str(EXAMPLES / f"{name}.yaml"))
    checks = _checks(spec, _jax_mutant(spec, pattern, replacement), 7, 100)
    lock, free = checks["lockstep"], checks["free-running"]
    assert not lock.passed and not free.passed
    assert lock.level == "L3" and lock.unit == "episodes"
    assert 1 <= lock.failed <= lock.cases == 7 and len(lock.failures) == min(lock.failed, 5)
    assert "(from the reference's state): field '" in lock.failures[0]
    assert "noise twins" in free.failures[0]


def test_a_bias_below_the_one_step_tolerance_fails_free_running() -> None:
    # 3e-7 rad added to theta each step: every step from a synced state is within tolerance (lockstep passes,
    # and so did the old L3, which re-synced after a float divergence); the error accumulates, and the backend
    # parts from the reference before the reference parts from its own 1-ulp noise twins
    spec = envc.load(str(EXAMPLES / "pendulum.yaml"))
    env = _jax_mutant(spec, r"(theta_1 = \(state\.theta[^\n]*)\n", r"\1 + jnp.float32(3e-7)\n")
    checks = _checks(spec, env, 6, 200)
    assert checks["lockstep"].passed
    free = checks["free-running"]
    assert not free.passed and free.failed >= 3, free.failures
    assert free.figures["rank_test_p"] is not None and free.figures["rank_test_p"] < 0.01
    assert "(free running)" in free.failures[0] and "none of the reference's 4 noise twins" in free.failures[0]


@pytest.mark.parametrize("backend", ["jax", "rust"])
def test_a_mutated_spec_compiled_for_a_backend_fails_against_the_shipped_reference(
    tmp_path: Path, backend: str
) -> None:
    text = (EXAMPLES / "pendulum.yaml").read_text()
    flipped = text.replace("3.0 * g / (2.0 * l) * sin(theta)", "3.0 * g / (2.0 * l) * -sin(theta)")
    assert flipped != text
    path = tmp_path / "pendulum_flipped.yaml"
    path.write_text(flipped)
    shipped = envc.load(str(EXAMPLES / "pendulum.yaml"))
    checks = verify(shipped, envc.build(str(path), backend=backend), levels=("L3",), episodes=5, max_steps=50)
    failed = {c.name.split(":")[0] for c in checks if not c.passed}
    assert {"lockstep", "free-running, same keys and actions"} <= failed
    assert "pendulum.yaml:" in next(c for c in checks if c.name.startswith("lockstep")).failures[0]


@pytest.mark.parametrize(("param", "value"), [("g", 10.1), ("max_torque", 1.8)])
def test_rust_with_a_wrong_constant_fails_lockstep(param: str, value: float) -> None:
    spec = envc.load(str(EXAMPLES / "pendulum.yaml"))
    checks = _checks(spec, envc.build(spec, backend="rust", params={param: value}), 6, 100)
    assert not checks["lockstep"].passed and checks["lockstep"].failed >= 3


def test_a_spec_without_floats_matches_exactly_at_every_step() -> None:
    spec = envc.load(str(ROOT / "specs" / "tic_tac_toe.yaml"))
    checks = level3(spec, envc.build(spec, backend="jax"), 10, 0, 50)
    assert [c.name.split(",")[0].split(":")[0] for c in checks] == ["lockstep", "free-running"]  # no statistics
    assert all(c.passed for c in checks)
    assert "matches exactly at every step" in checks[1].name


def test_reference_episodes_are_what_the_reference_does() -> None:
    # the free-running comparison replays the reference's own keys and actions: a reference "backend" is exact
    spec = envc.load(str(EXAMPLES / "pendulum.yaml"))
    checks = level3(spec, ReferenceEnv(spec), 3, 0, 60)
    assert all(c.passed for c in checks)
    assert "matches at every step" in checks[1].name


def test_cli_shows_horizon_statistics_and_counts() -> None:
    args = ["verify", str(EXAMPLES / "pendulum.yaml"), "--backend", "jax", "--level", "L3", "--episodes", "6"]
    out = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert out.exit_code == 0, out.output
    for words in (
        "lockstep: 6 episodes",
        "1-ulp noise twins part from it at step",
        "two-sample KS, n=6+6",
        "80% power",
    ):
        assert words in out.output, words
