"""specs/cartpole.yaml against Gymnasium's CartPole-v1 (an implementation nobody here wrote), through the oracle
feature: the spec's `oracle:` section names the original and where it keeps each field (docs/oracle.md)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import envc
from envc.against import Against, AgainstReport, verify_against
from envc.oracle.targets import resolve

SPEC = Path(__file__).resolve().parent.parent / "specs" / "cartpole.yaml"


@pytest.fixture(scope="module")
def spec() -> envc.SpecIR:
    return envc.load(str(SPEC))


@pytest.fixture(scope="module")
def result(spec: envc.SpecIR) -> AgainstReport:
    oracle = resolve("declared", spec)
    return verify_against(spec, oracle, target="declared", episodes=40, states=150, stat_episodes=100, seed=3)


def test_the_spec_declares_gymnasium_as_its_oracle(spec: envc.SpecIR) -> None:
    assert spec.oracle is not None and spec.oracle.target == "gymnasium:CartPole-v1"
    assert dict(spec.oracle.fields) == {"x": "state[0]", "x_dot": "state[1]", "theta": "state[2]",
                                        "theta_dot": "state[3]"}  # fmt: skip


def test_constants_match(spec: envc.SpecIR) -> None:
    g = gym.make("CartPole-v1")
    p = {prm.name: prm.default for prm in spec.params}
    names = ("gravity", "masscart", "masspole", "length", "force_mag", "tau", "x_threshold", "theta_threshold_radians")
    for name in names:
        assert p[name] == getattr(g.unwrapped, name), name  # as declared: the float64 value (f32 when run)
    assert p["max_steps"] == g.spec.max_episode_steps


def test_every_level_passes(result: AgainstReport) -> None:
    assert result.passed, [c.examples for c in result.checks if not c.passed]
    cases = {c.name: c.cases for c in result.checks}
    assert cases["one step from the original's rollout states"] == 150
    assert cases["one step from states fuzzed inside the declared bounds"] == 150
    assert cases["one step from boundary values of the spec's constants"] > 140
    lock = next(c for c in result.checks if c.name.startswith("(a)"))
    assert lock.cases == 40 and int(lock.notes[0].split()[0]) > 500  # steps compared


def test_truncation_at_500_steps_is_compared(spec: envc.SpecIR) -> None:
    """Gymnasium's TimeLimit is a threshold of the original: the boundary cases put step_count next to it."""
    oracle = resolve("declared", spec)
    assert oracle.thresholds() == {"step_count": [500.0]}
    assert 500.0 in Against(spec, oracle).bounds[("step_count", ())]


def test_reset_distribution(spec: envc.SpecIR) -> None:
    env = envc.build(spec)
    starts = np.array([env.init((0, i)).observation for i in range(400)])
    assert starts.min() >= -0.05 and starts.max() < 0.05
    assert np.all(np.abs(starts.mean(axis=0)) < 0.01)
    assert np.all(starts.std(axis=0) > 0.02)
