"""`envc.gymnasium.register`: gymnasium's own `make`, `make_vec` (every vectorization mode), `check_env`, seeds
as lists, and both autoreset modes, compared with gymnasium's own vector envs over our single env."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import envc
import envc.gymnasium as eg

ROOT = Path(__file__).resolve().parent.parent
CARTPOLE = ROOT / "specs" / "cartpole.yaml"
CORRIDOR = ROOT / "docs" / "examples" / "corridor.yaml"


def _equal(a: Any, b: Any) -> None:
    if isinstance(a, tuple):
        for x, y in zip(a, b, strict=True):
            _equal(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _equal(a[k], b[k])
    else:
        np.testing.assert_array_equal(a, b)


def test_make_and_make_vec_in_every_mode_give_the_same_episodes() -> None:
    env_id = eg.register(CARTPOLE)
    assert env_id == "envc/cartpole-v1"
    single = gym.make(env_id)
    assert single.spec is not None and single.spec.id == env_id
    assert single.observation_space == eg.observation_space(envc.load(str(CARTPOLE)))
    assert single.action_space == gym.spaces.Discrete(2)
    seeds = [5, 6, 7, 11]
    firsts = [single.reset(seed=s)[0] for s in seeds]
    runs = {}
    for mode in ("vector_entry_point", "sync", "async"):
        vec = gym.make_vec(env_id, num_envs=4, vectorization_mode=mode)
        assert vec.spec is not None and vec.spec.id == env_id
        assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        obs, _ = vec.reset(seed=seeds)
        np.testing.assert_array_equal(obs, np.stack(firsts))
        steps = []
        for t in range(30):
            obs, rew, term, trunc, _ = vec.step(np.array([t % 2, 1, 0, (t // 3) % 2]))
            steps.append((obs.copy(), rew.copy(), term.copy(), trunc.copy()))
        runs[mode] = steps
        vec.close()
    assert type(gym.make_vec(env_id, 2).unwrapped).__module__.endswith(".gym")  # the Rust VectorEnv by default
    for mode in ("sync", "async"):
        for ours, theirs in zip(runs["vector_entry_point"], runs[mode], strict=True):
            for a, b in zip(ours, theirs, strict=True):
                np.testing.assert_array_equal(a, b)
    assert any(s[2].any() for s in runs["sync"]), "no episode ended: the autoreset paths were not compared"


def test_list_seeds_none_entries_and_their_errors() -> None:
    vec = eg.make_vector(3, str(CARTPOLE))
    by_int, _ = vec.reset(seed=40)
    by_list, _ = vec.reset(seed=[40, 41, 42])
    np.testing.assert_array_equal(by_int, by_list)
    again, _ = vec.reset(seed=[None, 41, None])  # envs 0 and 2 go on to their next episode; env 1 starts over
    np.testing.assert_array_equal(again[1], by_int[1])
    assert not np.array_equal(again[0], by_int[0])
    single = eg.make_env(str(CARTPOLE))
    single.reset(seed=40)
    np.testing.assert_array_equal(again[0], single.reset()[0])
    with pytest.raises(ValueError, match="2 seeds for 3 envs"):
        vec.reset(seed=[1, 2])


@pytest.mark.parametrize("path", [CORRIDOR, CARTPOLE], ids=["corridor", "cartpole"])
def test_same_step_autoreset_equals_gymnasiums_sync_vector_env(path: Path) -> None:
    ours = eg.make_vector(5, str(path), autoreset_mode="same_step")
    assert ours.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    theirs = SyncVectorEnv([lambda: eg.make_env(str(path)) for _ in range(5)], autoreset_mode=AutoresetMode.SAME_STEP)
    o1, i1 = ours.reset(seed=3)
    o2, i2 = theirs.reset(seed=3)
    _equal(o1, o2)
    gen = np.random.default_rng(0)
    finals = 0
    for _ in range(150):
        a = np.array([gen.choice(np.flatnonzero(m)) for m in i1["legal_action_mask"]])
        o1, r1, t1, u1, i1 = ours.step(a)
        o2, r2, t2, u2, i2 = theirs.step(a)
        for x, y in ((o1, o2), (r1, r2), (t1, t2), (u1, u2)):
            _equal(x, y)
        _equal(i1["legal_action_mask"], i2["legal_action_mask"])
        assert ("final_obs" in i1) == ("final_obs" in i2)
        if "final_obs" in i1:
            finals += int(i1["_final_obs"].sum())
            _equal(i1["_final_obs"], i2["_final_obs"])
            for f1, f2 in zip(i1["final_obs"], i2["final_obs"], strict=True):
                assert (f1 is None) == (f2 is None)
                if f1 is not None:
                    _equal(f1, f2)
            _equal(i1["final_info"]["legal_action_mask"], i2["final_info"]["legal_action_mask"])
            _equal(i1["final_info"]["_legal_action_mask"], i2["final_info"]["_legal_action_mask"])
    assert finals >= 3, f"only {finals} episodes ended"


def test_reset_mask_with_autoreset_disabled_equals_gymnasium() -> None:
    ours = eg.make_vector(4, str(CORRIDOR), autoreset_mode="disabled")
    envs = [lambda: eg.make_env(str(CORRIDOR)) for _ in range(4)]
    theirs = SyncVectorEnv(envs, autoreset_mode=AutoresetMode.DISABLED)
    o1, i1 = ours.reset(seed=8)
    o2, _ = theirs.reset(seed=8)
    gen = np.random.default_rng(1)
    resets = 0
    for _ in range(120):
        a = np.array([gen.choice(np.flatnonzero(m)) for m in i1["legal_action_mask"]])
        o1, r1, t1, u1, i1 = ours.step(a)
        o2, r2, t2, u2, _ = theirs.step(a)
        _equal((o1, r1, t1, u1), (o2, r2, t2, u2))
        done = t1 | u1
        if done.any():
            resets += int(done.sum())
            o1, i1m = ours.reset(options={"reset_mask": done})
            o2, _ = theirs.reset(options={"reset_mask": done})
            _equal(o1, o2)
            _equal(i1m["_legal_action_mask"], done)
            i1["legal_action_mask"][done] = i1m["legal_action_mask"][done]
    assert resets >= 3


@pytest.mark.parametrize(
    ("spec", "original"),
    [
        ("specs/cartpole.yaml", "CartPole-v1"),
        ("docs/examples/mountain_car.yaml", "MountainCar-v0"),
        ("docs/examples/continuous_mountain_car.yaml", "MountainCarContinuous-v0"),
        ("docs/examples/pendulum.yaml", "Pendulum-v1"),
        ("docs/examples/acrobot.yaml", "Acrobot-v1"),
    ],
)
def test_observation_spaces_are_the_originals_element_for_element(spec: str, original: str) -> None:
    """Per-element bounds (`low: [...]`) give gymnasium's own spaces; an infinite side is float32's largest
    value, as gymnax's CartPole has it (gymnasium 1.x writes inf there, which check_env warns about)."""
    theirs = gym.make(original).observation_space
    big = np.finfo(np.float32).max
    for ours in (eg.observation_space(envc.load(str(ROOT / spec))), eg.make_env(str(ROOT / spec)).observation_space):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours.low, np.clip(theirs.low, -big, big))
        np.testing.assert_array_equal(ours.high, np.clip(theirs.high, -big, big))


def test_check_env_passes_without_warnings() -> None:
    """cartpole on Rust, the control examples on the reference (Pendulum's Box(-2, 2) action draws gymnasium's
    advice to normalize it, as gymnasium's own Pendulum-v1 does: the spec copies that space)."""
    cases = [(CARTPOLE, "rust"), (CORRIDOR, "rust")]
    cases += [(ROOT / "docs" / "examples" / f"{n}.yaml", "reference") for n in ("mountain_car", "acrobot", "pendulum")]
    cases += [(ROOT / "docs" / "examples" / "continuous_mountain_car.yaml", "reference"), (CARTPOLE, "reference")]
    for path, backend in cases:
        env = gym.make(eg.register(path, id=f"envc-test/{path.stem}-{backend}-v0", backend=backend))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped)
        messages = [str(w.message) for w in caught]
        if path.stem == "pendulum":
            assert len(messages) == 1 and "symmetric and normalized" in messages[0], messages
        else:
            assert messages == [], (path.stem, messages)


@pytest.mark.parametrize("backend", ["reference", "jax"])
def test_other_backends_play_the_rust_episodes(backend: str) -> None:
    rust = eg.make_env(str(CARTPOLE))
    ref = eg.make_env(str(CARTPOLE), backend=backend)
    assert isinstance(ref, eg.SpecEnv) and ref.observation_space == rust.observation_space
    gen = np.random.default_rng(2)
    for seed in (0, 9):
        o1, _ = rust.reset(seed=seed)
        o2, _ = ref.reset(seed=seed)
        np.testing.assert_allclose(o1, o2, rtol=1e-6, atol=1e-7)
        done = False
        while not done:
            a = int(gen.integers(2))
            o1, r1, t1, u1, _ = rust.step(a)
            o2, r2, t2, u2, _ = ref.step(a)
            np.testing.assert_allclose(o1, o2, rtol=1e-5, atol=1e-6)
            assert (r1, t1, u1) == (r2, t2, u2)
            done = t1 or u1


def test_spaces_match_the_generated_crate() -> None:
    for path in (CARTPOLE, CORRIDOR):  # the specs the other tests build (each Rust build costs about a minute)
        spec = envc.load(str(path))
        rust = eg.build(path)
        gym_module = __import__(f"{rust.module.__name__}.gym", fromlist=["observation_space"])
        assert gym_module.observation_space() == eg.observation_space(spec)
        assert gym_module.action_space() == eg.action_space(spec)


def test_multi_player_specs_are_refused_with_a_pointer() -> None:
    with pytest.raises(ValueError, match=r"2 players .*envc\.pettingzoo"):
        eg.register(ROOT / "specs" / "tic_tac_toe.yaml")
    with pytest.raises(ValueError, match="backend 'torch' is not available"):
        eg.register(CARTPOLE, backend="torch")
