"""The generated JAX package's runtime API: scan-fused rollouts with auto-reset, the gymnax Environment, bench."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envc

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("envc_cache")


def jax_env(name: str, cache: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("ENVC_CACHE", str(cache))
    return envc.build(ROOT / "specs" / f"{name}.yaml", backend="jax")


def leaves_equal(a: Any, b: Any) -> bool:
    return all(bool(jnp.array_equal(x, y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


@pytest.mark.parametrize("name", ["tic_tac_toe", "cartpole"])
def test_partial_resets_equal_resetting_every_env(name: str, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = jax_env(name, cache, monkeypatch)
    rollout = importlib.import_module(env.package + ".rollout")
    run = jax.jit(rollout.rollout, static_argnames=("num_envs", "num_steps", "reset_chunk"))
    key = jax.random.PRNGKey(7)
    every, s_every = run(key, num_envs=16, num_steps=60, reset_chunk=16)
    assert int(s_every.episodes) > 0  # envs really finished and restarted
    for chunk in (1, 3):
        chunked, s_chunked = run(key, num_envs=16, num_steps=60, reset_chunk=chunk)
        assert leaves_equal(every, chunked) and leaves_equal(s_every, s_chunked), chunk


@pytest.mark.parametrize("name", ["tic_tac_toe", "cartpole"])
def test_rollout_is_the_documented_loop(name: str, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`rollout` equals blank states all restarted, then policy, step and `reset_rows` with the documented keys."""
    env = jax_env(name, cache, monkeypatch)
    rollout = importlib.import_module(env.package + ".rollout")
    e, params = env.env, env.params
    n, steps, key = 8, 40, jax.random.PRNGKey(3)
    states, stats = jax.jit(rollout.rollout, static_argnums=(1, 2))(key, n, steps)
    key, reset_key = jax.random.split(key)
    step = jax.jit(jax.vmap(e.step, in_axes=(0, 0, 0, None)))
    rows = jnp.arange(n)
    # Env i's first state is init(fold_in(reset_key, i)): split keys in JAX's default partitionable threefry.
    first = jax.vmap(e.init, in_axes=(0, None))(rollout.row_keys(reset_key, rows), params)
    assert leaves_equal(jax.random.split(reset_key, n), rollout.row_keys(reset_key, rows))
    want, episodes, done = first, 0, jnp.ones(n, bool)
    for t in range(steps):
        if t:
            want = rollout.reset_rows(e.init, want, done, lambda r, k=reset_key: rollout.row_keys(k, r), params, 3)
        key, act_key, step_key, reset_key = jax.random.split(key, 4)
        actions = rollout.random_actions(act_key, want)
        cleared = want.replace(terminated=jnp.zeros(n, bool), truncated=jnp.zeros(n, bool),
                               rewards=jnp.zeros_like(want.rewards))
        want = step(cleared, actions, rollout.row_keys(step_key, rows), params)
        done = want.terminated | want.truncated
        episodes += int(jnp.sum(done))
    assert episodes > 0 and int(stats.episodes) == episodes and int(stats.steps) == n * steps
    for have, expected in zip(jax.tree.leaves(states), jax.tree.leaves(want)):
        if jnp.issubdtype(expected.dtype, jnp.floating):  # XLA may contract the fused scan's float ops differently
            np.testing.assert_allclose(np.asarray(have), np.asarray(expected), rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(np.asarray(have), np.asarray(expected))


def test_batch_auto_reset_step_follows_the_single_env_rule(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = jax_env("tic_tac_toe", cache, monkeypatch)
    rollout = importlib.import_module(env.package + ".rollout")
    e, params, n = env.env, env.params, 8
    states = jax.vmap(e.init, in_axes=(0, None))(jax.random.split(jax.random.PRNGKey(0), n), params)
    for t in range(12):
        keys = jax.random.split(jax.random.PRNGKey(100 + t), n)
        actions = rollout.random_actions(jax.random.PRNGKey(200 + t), states)
        batched = rollout.batch_auto_reset_step(e, states, actions, keys, params, 2)
        for i in range(n):
            s_i = jax.tree.map(lambda x, i=i: x[i], states)
            s_i = s_i.replace(terminated=jnp.bool_(False), truncated=jnp.bool_(False), rewards=jnp.zeros(2))
            stepped = e.step(s_i, actions[i], keys[i], params)
            want = stepped
            if bool(stepped.terminated | stepped.truncated):
                want = e.init(jax.random.fold_in(keys[i], 1), params).replace(
                    rewards=stepped.rewards, terminated=stepped.terminated, truncated=stepped.truncated
                )
            assert leaves_equal(want, jax.tree.map(lambda x, i=i: x[i], batched)), (t, i)
        states = batched


def test_random_actions_are_legal_and_cover_the_mask(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = jax_env("connect_four", cache, monkeypatch)
    rollout = importlib.import_module(env.package + ".rollout")
    states, stats = jax.jit(rollout.rollout, static_argnums=(1, 2))(jax.random.PRNGKey(1), 32, 30)
    assert int(stats.steps) == 32 * 30
    mask = np.asarray(states.legal_action_mask)
    assert not mask.all()  # some columns are full after 30 moves
    seen = np.zeros_like(mask)
    for t in range(200):
        a = np.asarray(rollout.random_actions(jax.random.PRNGKey(t), states))
        assert mask[np.arange(32), a].all()
        seen[np.arange(32), a] = True
    assert (seen == mask).all()


def test_gymnax_environment_with_log_wrapper(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gymnax.wrappers.purerl import LogWrapper

    env = jax_env("cartpole", cache, monkeypatch)
    gym = LogWrapper(env.gymnax())
    params = gym.default_params
    obs, state = gym.reset(jax.random.PRNGKey(0), params)
    assert gym.observation_space(params).contains(obs) and gym.action_space(params).n == 2
    step, direct_step = jax.jit(gym.step), jax.jit(env.env.step)
    finished = []
    for t in range(300):
        key = jax.random.PRNGKey(t)
        before = state.env_state
        obs, state, reward, terminated, truncated, info = step(key, state, 1 - t % 2, params)
        # the transition is the pgx-style env's step with gymnax's step key
        direct = direct_step(before, 1 - t % 2, jax.random.split(key)[0], params)
        assert bool(terminated) == bool(direct.terminated) and bool(truncated) == bool(direct.truncated)
        assert float(reward) == float(direct.rewards[0])
        np.testing.assert_array_equal(np.asarray(info["final_observation"]), np.asarray(direct.observation))
        if bool(info["returned_episode"]):
            finished.append(int(info["returned_episode_lengths"]))
    assert finished and all(n > 0 for n in finished)


def test_gymnax_is_single_agent_only(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="single-agent"):
        jax_env("tic_tac_toe", cache, monkeypatch).gymnax()


def test_bench_command_json(cache: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "envc.cli", "bench", "specs/tic_tac_toe.yaml", "--batch", "1,8", "--steps", "20"]
        + ["--repeats", "2", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**__import__("os").environ, "ENVC_CACHE": str(cache)},
    )
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["batch"] for row in rows] == [1, 8]
    for row in rows:
        assert len(row["runs"]) == 2 and row["steps_per_s"] > 0 and row["jaxpr_eqns_per_step"] > 0


def test_bench_rejects_bad_batches() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "envc.cli", "bench", "specs/cartpole.yaml", "--batch", "4,x"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert r.returncode == 2 and "positive integers" in r.stderr and "Traceback" not in r.stderr


def test_generated_samplers_equal_the_reference(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JAX package's scalar samplers (docs/spec-language.md 13.4) give the reference's values, bit for bit,
    on site keys raw or typed, with traced bounds, under vmap."""
    from envc import rng

    runtime = importlib.import_module(jax_env("cartpole", cache, monkeypatch).package + "._runtime")
    gen = np.random.default_rng(11)
    keys = [(int(a), int(b)) for a, b in gen.integers(0, 2**32, size=(300, 2), dtype=np.uint64)]
    raw = jnp.asarray(np.array(keys, np.uint32))
    lo_f, hi_f = np.float32(-0.05), np.float32(0.05)
    bounds = [(0, 1), (0, 7), (-5, 5), (0, 2**16 + 1), (-(2**31), 2**31 - 1), (3, 3), (9, 2)]
    uniform = jax.jit(jax.vmap(runtime.site_uniform, in_axes=(0, None, None)))
    randint = jax.jit(jax.vmap(runtime.site_randint, in_axes=(0, None, None)))
    bernoulli = jax.jit(jax.vmap(runtime.site_bernoulli, in_axes=(0, None)))
    got = np.asarray(uniform(raw, lo_f, hi_f))
    want = np.array([rng.uniform_scalar(k, float(lo_f), float(hi_f)) for k in keys], np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    for lo, hi in bounds:
        assert np.asarray(randint(raw, jnp.int32(lo), jnp.int32(hi))).tolist() == [
            rng.randint_scalar(k, lo, hi) for k in keys], (lo, hi)
    assert np.asarray(bernoulli(raw, jnp.float32(0.3))).tolist() == [rng.bernoulli_scalar(k, 0.3) for k in keys]
    mask = jnp.asarray([False, True, True, False, True])
    choice = jax.jit(jax.vmap(runtime.choice_index, in_axes=(0, None)))
    assert np.asarray(choice(raw, mask)).tolist() == [rng.choice_mask(k, list(np.asarray(mask))) for k in keys]
    typed = jax.random.wrap_key_data(raw[:5])
    assert np.asarray(jax.vmap(runtime.site_randint, in_axes=(0, None, None))(typed, 0, 7)).tolist() == [
        rng.randint_scalar(k, 0, 7) for k in keys[:5]]
