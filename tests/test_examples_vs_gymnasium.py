"""docs/examples/{mountain_car,continuous_mountain_car,pendulum,acrobot}.yaml against Gymnasium's classic-control
environments (implementations nobody here wrote), on the reference interpreter and the JAX backend.

How: the same start state is injected into both (`state_from_dict` here, `env.unwrapped.state` there), the same
action is applied, and observation, reward, terminated and truncated are compared.

* One step from states drawn across the whole state box (walls, goal and speed limits included), and one step
  along Gymnasium's own random-policy episodes, re-synced every step (Gymnasium's state, rounded to f32, is
  injected into both before each step). Re-syncing is what makes the chaotic acrobot (and the pendulum near the
  top) comparable at all: a free run amplifies f32-vs-float64 rounding until the trajectories part.
* Whole free-running episodes only for the two mountain cars, which do not amplify rounding.

Tolerance, one step: |ours - gymnasium| <= 2e-6 * (1 + |gymnasium|) (`ONE_STEP`). Gymnasium computes in float64
and rounds the observation to f32; the specs compute in f32, one rounding (at most half an ULP, 2**-24 relative,
about 6e-8) per operation and a few ULPs for sin/cos, over at most a few hundred operations per step (acrobot's
four Runge-Kutta stages). 2e-6 is 32 f32 ULPs at 1.0; the largest difference measured over these tests is about
9 ULPs (5.3e-7 relative, acrobot). Where a quantity is within `EDGE` of a threshold (the goal, the termination
height) a rounding can legitimately flip `terminated`; such steps are not compared for termination, and each
test asserts how many steps it did compare.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import envc

ROOT = Path(__file__).resolve().parent.parent
ONE_STEP = 2e-6
EDGE = 1e-5


@dataclass(frozen=True)
class Example:
    """One docs/examples spec and the Gymnasium environment it claims to be."""

    name: str
    gym_id: str
    fields: tuple[str, ...]  # envc state fields, in the order of Gymnasium's `state`
    low: tuple[float, ...]  # the box start states are drawn from
    high: tuple[float, ...]
    edge: Callable[[np.ndarray], bool]  # the state (after the step) is within EDGE of a termination threshold


def _mountain_car_edge(goal: float) -> Callable[[np.ndarray], bool]:
    def edge(s: np.ndarray) -> bool:
        pos, vel = float(s[0]), float(s[1])
        return (abs(pos - goal) < EDGE and vel > -EDGE) or (pos > goal - EDGE and abs(vel) < EDGE)

    return edge


def _acrobot_edge(s: np.ndarray) -> bool:
    return abs(-np.cos(s[0]) - np.cos(s[1] + s[0]) - 1.0) < EDGE


PI = float(np.float32(np.pi))
EXAMPLES = {
    e.name: e
    for e in (
        Example("mountain_car", "MountainCar-v0", ("position", "velocity"), (-1.2, -0.07), (0.6, 0.07),
                _mountain_car_edge(0.5)),
        Example("continuous_mountain_car", "MountainCarContinuous-v0", ("position", "velocity"), (-1.2, -0.07),
                (0.6, 0.07), _mountain_car_edge(0.45)),
        Example("pendulum", "Pendulum-v1", ("theta", "theta_dot"), (-3 * PI, -8.0), (3 * PI, 8.0),
                lambda s: False),
        Example("acrobot", "Acrobot-v1", ("theta1", "theta2", "dtheta1", "dtheta2"), (-PI, -PI, -4.0, -9.0),
                (PI, PI, 4.0, 9.0), _acrobot_edge),
    )
}  # fmt: skip
BACKENDS = ("reference", "jax")


@cache
def built(name: str, backend: str) -> Any:
    return envc.build(str(ROOT / "docs" / "examples" / f"{name}.yaml"), backend=backend)


def inject(env: Any, ex: Example, values: np.ndarray, steps: int = 0) -> Any:
    """An envc state holding `values` (f32) in the example's fields, at step `steps`."""
    d = env.state_to_dict(env.init((0, 0)))
    for name, v in zip(ex.fields, values, strict=True):
        d[name] = np.float32(v)
    d["step_count"] = np.int32(steps)
    return env.state_from_dict(d)


def draw_action(env: Any, gen: np.random.Generator) -> Any:
    box = env.spec.box
    if box is None:
        return int(gen.integers(env.num_actions))
    return gen.uniform(box.low, box.high, box.shape).astype(np.float32)


def policy(env: Any, ex: Example, state: np.ndarray, gen: np.random.Generator) -> Any:
    """Random actions; the mountain cars mostly push along their velocity, so that episodes reach the flag."""
    if not ex.name.endswith("mountain_car") or gen.random() < 0.2:
        return draw_action(env, gen)
    right = float(state[1]) >= 0.0
    if env.spec.box is None:
        return 2 if right else 0
    return np.array([gen.uniform(0.5, 1.0) * (1 if right else -1)], np.float32)


class Compared:
    """One step compared; counts the steps whose termination was compared."""

    def __init__(self) -> None:
        self.steps = 0
        self.terminations = 0

    def step(self, env: Any, ex: Example, g: Any, start: np.ndarray, action: Any, where: str) -> tuple[Any, bool]:
        """Inject `start` (f32) into both, step both with `action`, compare; Gymnasium's (obs, terminated)."""
        g.state = np.asarray(start, np.float64)
        obs, reward, terminated, _, _ = g.step(action)
        s = env.step(inject(env, ex, start), action, (0, 1))
        ours = np.asarray(s.observation, np.float32)
        np.testing.assert_allclose(ours, obs, rtol=ONE_STEP, atol=ONE_STEP, err_msg=f"{where}: observation")
        reward_ours = float(s.rewards[0])
        np.testing.assert_allclose(reward_ours, reward, rtol=ONE_STEP, atol=ONE_STEP, err_msg=f"{where}: reward")
        assert not bool(s.truncated), where
        self.steps += 1
        if not ex.edge(np.asarray(g.state, np.float64)):
            assert bool(s.terminated) == terminated, f"{where}: terminated"
            self.terminations += 1
        return obs, terminated


@pytest.fixture(scope="module", params=sorted(EXAMPLES))
def example(request: pytest.FixtureRequest) -> Example:
    return EXAMPLES[request.param]


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_step_from_states_across_the_box(example: Example, backend: str) -> None:
    env, g = built(example.name, backend), gym.make(example.gym_id).unwrapped
    g.reset(seed=0)
    gen = np.random.default_rng(1)
    low, high = np.array(example.low), np.array(example.high)
    cmp = Compared()
    for i in range(400):
        start = gen.uniform(low, high).astype(np.float32)
        if i % 8 == 0 and example.name.endswith("mountain_car"):
            start[0] = np.float32(-1.2)  # at the left wall: the clip and the wall stop
        cmp.step(env, example, g, start, draw_action(env, gen), f"state {i}")
    assert cmp.terminations > 380


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_step_along_gymnasium_episodes_resynced(example: Example, backend: str) -> None:
    env, genv = built(example.name, backend), gym.make(example.gym_id)
    g = genv.unwrapped
    gen = np.random.default_rng(2)
    cmp = Compared()
    for episode in range(4):
        genv.reset(seed=episode)
        for t in range(200):
            start = np.asarray(g.state, np.float64).astype(np.float32)
            action = policy(env, example, start, gen)
            _, terminated = cmp.step(env, example, g, start, action, f"episode {episode} step {t}")
            if terminated:
                break
    assert cmp.terminations > 0.95 * cmp.steps > 250


@pytest.mark.parametrize("name", ["mountain_car", "continuous_mountain_car"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_whole_free_running_episodes(name: str, backend: str) -> None:
    """No re-sync: the mountain car does not amplify rounding, so whole episodes stay within 2e-5 (measured: 3e-6)
    and end at the same step."""
    ex = EXAMPLES[name]
    env, genv = built(name, backend), gym.make(ex.gym_id)
    gen = np.random.default_rng(3)
    lengths = []
    for episode in range(6):
        obs, _ = genv.reset(seed=episode)
        s = inject(env, ex, obs)
        np.testing.assert_array_equal(np.asarray(s.observation), obs)
        for t in range(1, genv.spec.max_episode_steps + 1):
            a = policy(env, ex, obs, gen)
            obs, reward, terminated, truncated, _ = genv.step(a)
            s = env.step(s, a, (0, t))
            np.testing.assert_allclose(np.asarray(s.observation), obs, rtol=2e-5, atol=2e-5, err_msg=f"{episode} {t}")
            np.testing.assert_allclose(float(s.rewards[0]), reward, rtol=ONE_STEP, atol=ONE_STEP)
            assert (bool(s.terminated), bool(s.truncated)) == (terminated, truncated), (episode, t)
            if terminated or truncated:
                lengths.append((t, terminated))
                break
    assert len(lengths) == 6 and sum(term for _, term in lengths) >= 3, lengths


def test_constants_and_spaces_match(example: Example) -> None:
    env, genv = built(example.name, "reference"), gym.make(example.gym_id)
    g, p = genv.unwrapped, env.params
    assert p["max_steps"] == genv.spec.max_episode_steps
    assert env.observe(env.init((0, 0)), 0).shape == genv.observation_space.shape
    if env.spec.box is None:
        assert env.num_actions == genv.action_space.n
    else:
        assert env.spec.box.shape == genv.action_space.shape
        assert (env.spec.box.low, env.spec.box.high) == (genv.action_space.low[0], genv.action_space.high[0])
    names = {
        "mountain_car": {"min_position": "min_position", "max_position": "max_position", "max_speed": "max_speed",
                         "goal_position": "goal_position", "goal_velocity": "goal_velocity", "force": "force",
                         "gravity": "gravity"},
        "continuous_mountain_car": {"min_action": "min_action", "max_action": "max_action",
                                    "min_position": "min_position", "max_position": "max_position",
                                    "max_speed": "max_speed", "goal_position": "goal_position",
                                    "goal_velocity": "goal_velocity", "power": "power"},
        "pendulum": {"max_speed": "max_speed", "max_torque": "max_torque", "dt": "dt", "g": "g", "m": "m", "l": "l"},
        "acrobot": {"dt": "dt", "link_length_1": "LINK_LENGTH_1", "link_mass_1": "LINK_MASS_1",
                    "link_mass_2": "LINK_MASS_2", "link_com_pos_1": "LINK_COM_POS_1",
                    "link_com_pos_2": "LINK_COM_POS_2", "link_moi": "LINK_MOI"},
    }[example.name]  # fmt: skip
    for ours, theirs in names.items():
        assert p[ours] == np.float32(getattr(g, theirs)), ours


@pytest.mark.parametrize("backend", BACKENDS)
def test_truncation_at_the_time_limit(example: Example, backend: str) -> None:
    env, genv = built(example.name, backend), gym.make(example.gym_id)
    limit = genv.spec.max_episode_steps
    genv.reset(seed=0)
    start = np.asarray(genv.unwrapped.state, np.float64).astype(np.float32)
    genv.unwrapped.state = start.astype(np.float64)
    genv._elapsed_steps = limit - 1  # the TimeLimit wrapper's counter
    gen = np.random.default_rng(4)
    a = draw_action(env, gen)
    _, _, terminated, truncated, _ = genv.step(a)
    s = env.step(inject(env, example, start, steps=limit - 1), a, (0, 1))
    assert (bool(s.terminated), bool(s.truncated)) == (terminated, truncated) == (False, True)
    s = env.step(inject(env, example, start, steps=limit - 2), a, (0, 1))
    assert not bool(s.truncated)


def test_start_states_are_drawn_like_gymnasium(example: Example) -> None:
    """Different generators, so the same distribution: Gymnasium's reset ranges, checked on 300 starts."""
    env, g = built(example.name, "reference"), gym.make(example.gym_id).unwrapped
    ours = np.array([[env.state_to_dict(env.init((0, i)))[f] for f in example.fields] for i in range(300)])
    theirs = []
    for i in range(300):
        g.reset(seed=i)
        theirs.append(np.asarray(g.state, np.float64))
    lo, hi = np.min(theirs, axis=0), np.max(theirs, axis=0)
    span = np.maximum(hi - lo, 1e-9)
    assert np.all(ours.min(axis=0) >= lo - 0.02 * span) and np.all(ours.max(axis=0) <= hi + 0.02 * span)
    assert np.all(np.abs(ours.mean(axis=0) - np.mean(theirs, axis=0)) <= 0.1 * span)
    assert np.all(np.abs(ours.std(axis=0) - np.std(theirs, axis=0)) <= 0.1 * span)
