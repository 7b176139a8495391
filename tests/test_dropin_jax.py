"""The JAX drop-ins with the real libraries: pgx's api_test and auto_reset, gymnax, PureJaxRL's and rejax's PPO."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envc
import envc.gymnax
import envc.pgx

pgx = pytest.importorskip("pgx")
gymnax = pytest.importorskip("gymnax")
ROOT = Path(__file__).resolve().parent.parent


def leaves_equal(a: Any, b: Any) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(la, lb))


def test_build_jax_is_jit_and_vmap_able() -> None:
    env = envc.build(ROOT / "specs" / "cartpole.yaml", backend="jax")
    keys = jax.random.split(jax.random.PRNGKey(3), 5)
    states = jax.jit(jax.vmap(env.init))(keys)
    actions = jnp.array([0, 1, 1, 0, 1], jnp.int32)
    stepped = jax.jit(jax.vmap(env.step))(states, actions, keys)
    for i in range(5):  # the traced path equals the concrete one, env by env (vectorized sin/cos: to 1 ulp)
        one = env.step(env.init(keys[i]), int(actions[i]), keys[i])
        for x, y in zip(jax.tree.leaves(jax.tree.map(lambda x, i=i: x[i], stepped)), jax.tree.leaves(one)):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-9)
    assert env.init(jax.random.key(3)).x == env.init(jax.random.PRNGKey(3)).x  # typed keys too


@pytest.fixture
def act_randomly_unbatched(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """pgx 2.6's api_test_single calls `act_randomly` (axis=1) on one unbatched mask, which JAX 0.10 rejects for
    pgx's own games too; give it the mask as a batch of one, as pgx intends."""
    import pgx._src.api_test as api
    from pgx.experimental.utils import act_randomly

    fixed = jax.jit(lambda k, m: act_randomly(k, m[None])[0] if m.ndim == 1 else act_randomly(k, m))
    monkeypatch.setattr(api, "act_randomly", fixed)
    yield


@pytest.mark.parametrize("name", ["tic_tac_toe", "connect_four", "kuhn_poker"])
def test_pgx_api_test(name: str, act_randomly_unbatched: None) -> None:
    from pgx._src.api_test import api_test

    env = envc.pgx.make(name)
    assert isinstance(env, pgx.core.Env)
    assert (env.id, env.version, env.num_players) == (name, "1.0", 2)
    ours = envc.load(str(ROOT / "specs" / f"{name}.yaml"))
    assert env.num_actions == ours.num_actions
    assert env.observation_shape == jax.eval_shape(env.init, jax.random.PRNGKey(0)).observation.shape
    api_test(env, 3, use_key=True)
    if name == "tic_tac_toe":  # pgx's `step(state, action)` without a key (a deterministic game)
        api_test(env, 2, use_key=False)


def test_pgx_auto_reset_runs_unchanged_and_matches_envc_auto_reset() -> None:
    from pgx.experimental import act_randomly, auto_reset

    jenv = envc.build(ROOT / "specs" / "connect_four.yaml", backend="jax")
    env = jenv.pgx()
    rollout = importlib.import_module(jenv.package + ".rollout")
    pgx_step = jax.jit(jax.vmap(auto_reset(env.step, env.init)))
    envc_step = jax.jit(jax.vmap(lambda s, a, k: rollout.auto_reset_step(jenv.env, s, a, k, jenv.params)))
    keys = jax.random.split(jax.random.PRNGKey(0), 16)
    state = jax.vmap(env.init)(keys)
    inner = jax.vmap(jenv.env.init, in_axes=(0, None))(keys, jenv.params)
    restarts = 0
    for t in range(40):
        action = act_randomly(jax.random.PRNGKey(t), state.legal_action_mask)
        step_keys = jax.random.split(jax.random.PRNGKey(100 + t), 16)
        state, inner = pgx_step(state, action, step_keys), envc_step(inner, action, step_keys)
        restarts += int(state.terminated.sum())
        assert np.array_equal(state.observation, inner.observation) and np.array_equal(state.rewards, inner.rewards)
        assert np.array_equal(state._step_count, inner.step_count)
    assert restarts > 0  # 40 moves of connect four finish some games


def test_gymnax_make_resolves_names_and_params() -> None:
    env, params = envc.gymnax.make("cartpole")
    assert isinstance(env, gymnax.environments.environment.Environment)
    assert params.max_steps_in_episode == 500
    _, short = envc.gymnax.make(str(ROOT / "specs" / "cartpole.yaml"), max_steps=20)
    assert short.max_steps_in_episode == 20
    assert "cartpole" in envc.gymnax.registered_envs()
    with pytest.raises(ValueError, match=r"no spec 'CartPole-v9'.*cartpole"):
        envc.gymnax.make("CartPole-v9")
    with pytest.raises(ValueError, match="single-agent"):
        envc.gymnax.make("tic_tac_toe")
    theirs, their_params = gymnax.make("CartPole-v1")  # the space gymnax's own CartPole declares, element for element
    ours_space, their_space = env.observation_space(params), theirs.observation_space(their_params)
    assert ours_space.shape == their_space.shape and ours_space.dtype == their_space.dtype
    np.testing.assert_array_equal(np.asarray(ours_space.low), np.asarray(their_space.low))
    np.testing.assert_array_equal(np.asarray(ours_space.high), np.asarray(their_space.high))
    legacy, _ = envc.gymnax.legacy.make("cartpole")
    _, state = legacy.reset(jax.random.PRNGKey(0), short)
    out = legacy.step(jax.random.PRNGKey(1), state, 0, short)
    assert len(out) == 5 and out[0].shape == (4,)


def test_gymnax_batched_step_equals_gymnax_auto_reset() -> None:
    """Restarting only the finished envs (under vmap) gives gymnax's `Environment.step` values exactly."""
    from gymnax.environments.environment import Environment

    env, params = envc.gymnax.make("cartpole", max_steps=15)  # truncations as well as terminations
    n = 600  # above 256 envs: the restarts run in chunks
    ours = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    base = jax.jit(jax.vmap(lambda k, s, a, p: Environment.step.__wrapped__(env, k, s, a, p), in_axes=(0, 0, 0, None)))
    _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.PRNGKey(0), n), params)
    finished = 0
    for t in range(25):
        keys = jax.random.split(jax.random.PRNGKey(t + 1), n)
        action = jax.random.randint(jax.random.PRNGKey(1000 + t), (n,), 0, 2)
        got, want = ours(keys, state, action, params), base(keys, state, action, params)
        assert leaves_equal(got, want)
        finished += int(got[3].sum() + got[4].sum())
        state = got[1]
    assert finished > n  # every env finished at least once on average


@pytest.fixture
def purejaxrl(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """PureJaxRL's ppo.py, vendored (tests/third_party/purejaxrl), importing envc's gymnax registry."""
    pytest.importorskip("distrax")
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "third_party" / "purejaxrl"))
    for name in ("ppo", "wrappers"):
        sys.modules.pop(name, None)
    yield importlib.import_module("ppo")
    for name in ("ppo", "wrappers"):
        sys.modules.pop(name, None)


def test_purejaxrl_ppo_on_envc_cartpole(purejaxrl: Any) -> None:
    config = {
        "LR": 2.5e-4, "NUM_ENVS": 4, "NUM_STEPS": 64, "TOTAL_TIMESTEPS": 4 * 64 * 3, "UPDATE_EPOCHS": 2,
        "NUM_MINIBATCHES": 2, "GAMMA": 0.99, "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "ENT_COEF": 0.01, "VF_COEF": 0.5,
        "MAX_GRAD_NORM": 0.5, "ACTIVATION": "tanh", "ENV_NAME": "cartpole", "ANNEAL_LR": True, "DEBUG": False,
    }  # fmt: skip
    out = jax.jit(purejaxrl.make_train(config))(jax.random.PRNGKey(0))
    info = out["metrics"]
    assert info["returned_episode"].shape == (3, 64, 4)
    returns = np.asarray(info["returned_episode_returns"])[np.asarray(info["returned_episode"])]
    assert returns.size > 0 and np.all(returns >= 1) and np.all(returns <= 500)


def test_rejax_ppo_on_envc_cartpole() -> None:
    rejax = pytest.importorskip("rejax")
    env, params = envc.gymnax.make("cartpole", five_values=True)
    algo = rejax.PPO.create(env=env, env_params=params, total_timesteps=2048, num_envs=8, num_steps=64,
                            num_epochs=2, num_minibatches=2, eval_freq=1024, skip_initial_evaluation=True)
    _, (lengths, returns) = jax.jit(algo.train)(jax.random.PRNGKey(0))
    assert returns.shape == (2, 128)  # two evaluations of 128 episodes
    assert np.all(np.asarray(lengths) >= 1) and np.all(np.asarray(lengths) <= 500)
    assert np.array_equal(np.asarray(lengths), np.asarray(returns))  # CartPole pays 1 per step
