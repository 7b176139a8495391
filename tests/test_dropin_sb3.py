"""The torch trainers: Stable-Baselines3's PPO and sb3-contrib's MaskablePPO on `envc.sb3`'s Rust batch, compared
with SB3's own `DummyVecEnv` over the same spec's gymnasium env step for step and parameter for parameter; and
CleanRL's ppo.py, unchanged, on an id that `envc.envs` registers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecMonitor
from test_dropin_gym import _equal  # arrays, dicts and tuples of them, equal

import envc.gymnasium as eg
import envc.sb3 as es

ROOT = Path(__file__).resolve().parent.parent
CARTPOLE = str(ROOT / "specs" / "cartpole.yaml")
PENDULUM = str(ROOT / "docs" / "examples" / "pendulum.yaml")
GAME_2048 = str(ROOT / "docs" / "examples" / "game_2048.yaml")
TWO_PARTS = str(ROOT / "tests" / "specs" / "f64_forms.yaml")  # one player, a Dict observation of two parts


def _dummy(spec: str, n: int, seed: int | None, params: dict[str, Any] | None = None) -> DummyVecEnv:
    vec = DummyVecEnv([lambda: eg.make_env(spec, "rust", params) for _ in range(n)])
    if seed is not None:
        vec.seed(seed)
    return vec


def _lockstep(ours: VecEnv, theirs: VecEnv, actions: list[np.ndarray]) -> tuple[int, int]:
    """Step both with the same actions; every output equal. Returns (episodes ended, of them truncated)."""
    _equal(ours.reset(), theirs.reset())
    ended = truncated = 0
    for a in actions:
        o1, r1, d1, i1 = ours.step(a)
        o2, r2, d2, i2 = theirs.step(a)
        _equal(o1, o2)
        assert r1.dtype == r2.dtype == np.float32 and d1.dtype == d2.dtype == np.bool_
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(d1, d2)
        for x, y in zip(i1, i2, strict=True):
            assert x.keys() == y.keys()
            for k in x:
                _equal(x[k], y[k])
            if "terminal_observation" in x:
                ended += 1
                truncated += x["TimeLimit.truncated"]
    return ended, truncated


def test_rust_vec_env_steps_as_dummy_vec_env_over_gym_make() -> None:
    params = {"max_steps": 12}  # short episodes, so both kinds of end (fall and time limit) are compared
    ours = es.RustVecEnv(CARTPOLE, 4, params=params)
    ours.seed(3)
    theirs = _dummy(CARTPOLE, 4, 3, params)
    rng = np.random.default_rng(0)
    ended, truncated = _lockstep(ours, theirs, [rng.integers(0, 2, 4) for _ in range(200)])
    assert ended > 20 and 0 < truncated < ended, (ended, truncated)
    # A later reset() without a seed starts each env's next episode, as DummyVecEnv does.
    _lockstep(ours, theirs, [rng.integers(0, 2, 4) for _ in range(20)])


def test_dict_observations_and_box_actions_step_alike() -> None:
    rng = np.random.default_rng(1)
    _lockstep(es.make_vec_env(TWO_PARTS, 3, seed=9), _dummy(TWO_PARTS, 3, 9), [np.zeros(3, int)] * 40)
    box = [rng.uniform(-2, 2, (2, 1)).astype(np.float32) for _ in range(250)]
    ended, _ = _lockstep(es.make_vec_env(PENDULUM, 2, seed=4), _dummy(PENDULUM, 2, 4), box)
    assert ended == 2  # pendulum's 200-step limit


def _parameters(model: Any) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.policy.parameters()])


def test_ppo_trains_identically_on_the_rust_batch_and_on_dummy_vec_env() -> None:
    torch.set_num_threads(1)
    kw: dict[str, Any] = {"n_steps": 64, "batch_size": 64, "n_epochs": 2, "seed": 7, "device": "cpu"}
    ours = PPO("MlpPolicy", VecMonitor(es.make_vec_env(CARTPOLE, 4)), **kw).learn(1024)
    theirs = PPO("MlpPolicy", VecMonitor(_dummy(CARTPOLE, 4, None)), **kw).learn(1024)
    assert torch.equal(_parameters(ours), _parameters(theirs))
    assert len(ours.ep_info_buffer) > 10  # VecMonitor's episode returns, as SB3 logs them
    assert [e["r"] for e in ours.ep_info_buffer] == [e["r"] for e in theirs.ep_info_buffer]
    box = PPO("MlpPolicy", es.make_vec_env(PENDULUM, 2), **kw).learn(256)
    assert torch.isfinite(_parameters(box)).all()


def test_maskable_ppo_reads_the_legal_mask_and_never_plays_an_illegal_move() -> None:
    torch.set_num_threads(1)
    vec = es.make_vec_env(GAME_2048, 4, seed=2)
    model = MaskablePPO("MlpPolicy", vec, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu").learn(256)
    obs = vec.reset()
    illegal_seen = False
    for _ in range(150):
        masks = np.stack(vec.env_method("action_masks"))
        np.testing.assert_array_equal(masks, vec.action_masks())
        illegal_seen |= bool((~masks).any())
        actions, _ = model.predict(obs, action_masks=masks)
        assert masks[np.arange(4), actions].all()
        obs, _, dones, infos = vec.step(actions)
        # a finished env's info holds its last state's mask; the new episode's is in `reset_infos`
        now = [vec.reset_infos[i] if done else info for i, (done, info) in enumerate(zip(dones, infos))]
        np.testing.assert_array_equal(np.stack([i["legal_action_mask"] for i in now]), vec.action_masks())
    assert illegal_seen, "every move was legal throughout: the mask was not exercised"


def test_refusals_are_one_clear_error() -> None:
    with pytest.raises(ValueError, match="2 players and SB3 trains single agents"):
        es.make_vec_env(ROOT / "specs" / "tic_tac_toe.yaml", 2)
    vec = es.make_vec_env(CARTPOLE, 2)
    with pytest.raises(AttributeError, match="no method 'render'"):
        vec.env_method("render")
    with pytest.raises(ValueError, match="backend 'torch' is not available"):
        es.make_vec_env(CARTPOLE, 2, backend="torch")
    assert vec.get_attr("render_mode") == [None, None]


def test_cleanrl_ppo_runs_unchanged_on_envc_cartpole(tmp_path: Path) -> None:
    """CleanRL's ppo.py, vendored byte for byte, trains on envc's cartpole given only `--env-id`."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    script = ROOT / "tests" / "third_party" / "cleanrl" / "ppo.py"
    env_id = "envc.envs:envc/cartpole-v1"
    args = ["--env-id", env_id, "--total-timesteps", "1024", "--num-envs", "4", "--num-steps", "128"]
    done = subprocess.run(
        [sys.executable, str(script), *args], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (events,) = tmp_path.glob("runs/**/events.out.tfevents.*")
    acc = EventAccumulator(str(events.parent))
    acc.Reload()
    assert len(acc.Scalars("losses/value_loss")) == 2  # two PPO iterations of 4 x 128 steps
    assert all(np.isfinite(e.value) for e in acc.Scalars("losses/policy_loss"))
    import gymnasium as gym

    assert type(gym.make(env_id).unwrapped).__module__.endswith(".gym")  # the id is envc's Rust GymEnv


def test_rust_vec_env_renders_every_env_and_sb3_records_a_video(tmp_path: Path) -> None:
    """render_mode="rgb_array": each env drawn as gymnasium's own `render()` of the same env draws it, and SB3's
    `VecVideoRecorder` (moviepy) writes the batch to an mp4."""
    from stable_baselines3.common.vec_env import VecVideoRecorder

    ours = es.make_vec_env(CARTPOLE, 2, seed=5, render_mode="rgb_array")
    theirs = DummyVecEnv([lambda: eg.make_env(CARTPOLE, "rust", render_mode="rgb_array") for _ in range(2)])
    theirs.seed(5)
    ours.reset(), theirs.reset()
    for t in range(30):
        for a, b in zip(ours.get_images(), theirs.get_images(), strict=True):
            assert a is not None and a.shape == (400, 600, 3)
            np.testing.assert_array_equal(a, b)
        ours.step(np.array([t % 2, 1])), theirs.step(np.array([t % 2, 1]))
    assert ours.render().shape == (800, 600, 3)  # SB3 tiles the batch (two envs: one above the other)
    recorder = VecVideoRecorder(ours, str(tmp_path), record_video_trigger=lambda step: step == 0, video_length=20)
    recorder.reset()
    for _ in range(25):
        recorder.step(np.array([0, 1]))
    recorder.close()
    (video,) = tmp_path.glob("*.mp4")
    assert video.stat().st_size > 1000
    with pytest.raises(ValueError, match="declares no render section"):
        es.make_vec_env(GAME_2048, 1, render_mode="rgb_array")
