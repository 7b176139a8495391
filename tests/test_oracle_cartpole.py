"""specs/cartpole.yaml against Gymnasium's CartPole-v1 (an implementation nobody here wrote)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import envc

SPEC = Path(__file__).resolve().parent.parent / "specs" / "cartpole.yaml"
FIELDS = ("x", "x_dot", "theta", "theta_dot")


@pytest.fixture(scope="module")
def env() -> envc.interpret.ReferenceEnv:
    return envc.build(str(SPEC))


@pytest.fixture(scope="module")
def gym_env() -> gym.Env:
    e = gym.make("CartPole-v1")
    e.reset(seed=0)
    return e


def inject(env, values: np.ndarray, steps: int = 0):  # type: ignore[no-untyped-def]
    d = env.state_to_dict(env.init((0, 0)))
    for name, v in zip(FIELDS, values):
        d[name] = np.float32(v)
    d["step_count"] = np.int32(steps)
    return env.state_from_dict(d)


def test_constants_match(gym_env: gym.Env, env) -> None:  # type: ignore[no-untyped-def]
    g = gym_env.unwrapped
    p = env.params
    f32 = np.float32  # the spec's params are f32: Gymnasium's float64 constants rounded once
    assert p["gravity"] == f32(g.gravity) and p["masscart"] == f32(g.masscart) and p["masspole"] == f32(g.masspole)
    assert p["length"] == f32(g.length) and p["force_mag"] == f32(g.force_mag) and p["tau"] == f32(g.tau)
    assert p["x_threshold"] == f32(g.x_threshold)
    assert p["theta_threshold_radians"] == f32(g.theta_threshold_radians)
    assert p["max_steps"] == gym_env.spec.max_episode_steps
    assert env.num_actions == gym_env.action_space.n


def test_one_step_from_2000_injected_states(gym_env: gym.Env, env) -> None:  # type: ignore[no-untyped-def]
    gen = np.random.default_rng(1)
    lim = np.array([2.4, 3.0, 0.2094, 3.5])
    g = gym_env.unwrapped
    compared = 0
    for _ in range(2000):
        start = (gen.uniform(-1, 1, 4) * lim).astype(np.float32)
        action = int(gen.integers(2))
        g.state = start.astype(np.float64)
        g.steps_beyond_terminated = None
        obs, reward, terminated, _, _ = g.step(action)
        s = env.step(inject(env, start), action, (0, 1))
        ours = np.array([s.observation[i] for i in range(4)], np.float32)
        np.testing.assert_allclose(ours, obs, rtol=2e-6, atol=2e-7)
        assert s.rewards[0] == reward
        near_edge = abs(abs(obs[0]) - 2.4) < 1e-5 or abs(abs(obs[2]) - g.theta_threshold_radians) < 1e-6
        if not near_edge:
            assert s.terminated == terminated
            compared += 1
    assert compared > 1900


def test_whole_episodes_terminate_at_the_same_step(gym_env: gym.Env, env) -> None:  # type: ignore[no-untyped-def]
    gen = np.random.default_rng(2)
    lengths = []
    for episode in range(100):
        gym_obs, _ = gym_env.reset(seed=episode)
        s = inject(env, gym_obs)
        np.testing.assert_array_equal(s.observation, gym_obs)
        for t in range(1, 501):
            a = int(gen.integers(2))
            gym_obs, reward, terminated, truncated, _ = gym_env.step(a)
            s = env.step(s, a, (0, t))
            # f32 (envc) vs f64 (gymnasium): the open-loop pendulum amplifies rounding by ~e^0.09 per step
            np.testing.assert_allclose(s.observation, gym_obs, rtol=1e-4, atol=1e-4)
            assert (s.terminated, s.truncated, float(s.rewards[0])) == (terminated, truncated, reward), (episode, t)
            if terminated or truncated:
                lengths.append(t)
                break
    assert len(lengths) == 100


def test_truncation_at_500_steps(gym_env: gym.Env, env) -> None:  # type: ignore[no-untyped-def]
    gym_obs, _ = gym_env.reset(seed=0)
    s = inject(env, gym_obs, steps=499)
    gym_env.unwrapped.state = np.asarray(gym_obs, np.float64)
    gym_env._elapsed_steps = 499  # the TimeLimit wrapper's counter
    _, _, terminated, truncated, _ = gym_env.step(0)
    s = env.step(s, 0, (0, 1))
    assert (s.terminated, s.truncated) == (terminated, truncated) == (False, True)


def test_reset_distribution(env) -> None:  # type: ignore[no-untyped-def]
    starts = np.array([env.init((0, i)).observation for i in range(400)])
    assert starts.min() >= -0.05 and starts.max() < 0.05
    assert np.all(np.abs(starts.mean(axis=0)) < 0.01)
    assert np.all(starts.std(axis=0) > 0.02)
