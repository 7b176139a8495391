"""envc train: PPO on compiled JAX envs (tiny budgets), checkpoints and load_run, self-play credit, sharding."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("flax")
pytest.importorskip("optax")

import jax
import jax.numpy as jnp
from typer.testing import CliRunner

import envc
from envc.cli import app
from envc.train import RunError, flat_obs, load_run
from envc.train.checkpoint import list_checkpoints, read_checkpoint, save_checkpoint
from envc.train.config import make_config
from envc.train.ppo import Transition, player_gae
from envc.train.run import train

ROOT = Path(__file__).resolve().parents[1]
CARTPOLE = ROOT / "specs" / "cartpole.yaml"
TIC_TAC_TOE = ROOT / "specs" / "tic_tac_toe.yaml"
PENDULUM = ROOT / "docs" / "examples" / "pendulum.yaml"
TINY = {"num_envs": 8, "num_steps": 32, "num_minibatches": 4, "update_epochs": 2, "updates_per_chunk": 4}


@pytest.fixture(scope="module")
def ttt_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """A tiny tic-tac-toe self-play run (2 chunks), with its result."""
    spec = envc.load(str(TIC_TAC_TOE))
    run_dir = tmp_path_factory.mktemp("ttt") / "run"
    config = make_config(spec, total_steps=2048, **TINY)
    return run_dir, train(spec, run_dir, config, progress=False, eval_games=64, eval_max_steps=20)


def test_player_gae_credits_each_move_with_its_players_outcome() -> None:
    # One env, two players alternating 0,1,0; player 0's third move wins: rewards (+1, -1) on that step. The
    # loser's -1 arrives on the winner's step but belongs to player 1's move at t=1. gamma = lambda = 1, so
    # each advantage is the mover's final outcome minus its value.
    values = jnp.array([[0.5], [0.2], [0.7]])
    traj = Transition(obs=jnp.zeros((3, 1, 1)), mask=jnp.ones((3, 1, 9), bool), action=jnp.zeros((3, 1), jnp.int32),
                      log_prob=jnp.zeros((3, 1)), value=values, mover=jnp.array([[0], [1], [0]]),
                      rewards=jnp.array([[[0.0, 0.0]], [[0.0, 0.0]], [[1.0, -1.0]]]),
                      done=jnp.array([[False], [False], [True]]))
    adv, targets = player_gae(traj, jnp.array([[9.0, 9.0]]), 1.0, 1.0)  # bootstraps unused: the episode ended
    np.testing.assert_allclose(np.asarray(adv)[:, 0], [1 - 0.5, -1 - 0.2, 1 - 0.7], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(targets)[:, 0], [1.0, -1.0, 1.0], rtol=1e-6)
    # Unfinished at the rollout's end: each player bootstraps from its own value of the last state.
    traj = traj._replace(done=jnp.zeros((3, 1), bool), rewards=jnp.zeros((3, 1, 2)))
    adv, _ = player_gae(traj, jnp.array([[3.0, -2.0]]), 0.5, 1.0)
    np.testing.assert_allclose(np.asarray(adv)[:, 0], [0.5 * 0.7 - 0.5 + 0.5 * (0.5 * 3.0 - 0.7), 0.5 * -2.0 - 0.2,
                                                       0.5 * 3.0 - 0.7], rtol=1e-6)


def test_interrupted_cartpole_run_writes_outputs_and_a_loadable_checkpoint(tmp_path: Path) -> None:
    spec = envc.load(str(CARTPOLE))
    config = make_config(spec, total_steps=3 * 4 * 8 * 32, **TINY)  # 3 chunks of 4 updates

    def stop_after_two(info: dict[str, Any]) -> None:
        if info["updates"] == 8:
            raise KeyboardInterrupt

    result = train(spec, tmp_path / "run", config, on_chunk=stop_after_two, progress=False)
    assert result.interrupted and result.updates == 8 and result.steps == 8 * 8 * 32
    rows = (tmp_path / "run" / "metrics.csv").read_text().splitlines()
    assert rows[0].startswith("update,env_steps,episodes,mean_return,mean_length,loss") and len(rows) == 1 + 8
    body = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert [r["env_steps"] for r in body["updates"]] == [256 * i for i in range(1, 9)]
    assert all(r["episodes"] > 0 and 8 <= r["mean_length"] <= 500 for r in body["updates"])
    assert (tmp_path / "run" / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in list_checkpoints(tmp_path / "run")] == ["step_000000001024.msgpack",
                                                                     "step_000000002048.msgpack"]
    run = load_run(tmp_path / "run")
    assert run.meta["steps"] == 2048 and run.meta["spec_name"] == "cartpole" and run.meta["seed"] == 0
    assert run.meta["spec_digest"] == envc.ir.content_digest(spec) and run.meta["envc_version"] == envc.__version__
    env = envc.build(spec, "jax")
    state = env.init(jax.random.PRNGKey(0))
    obs = flat_obs(jax.tree.map(lambda x: x[None], state.observation))
    action = run.policy().act(jax.random.PRNGKey(1), obs, state.legal_action_mask[None], True)
    assert action.shape == (1,) and action.dtype == jnp.int32 and int(action[0]) in (0, 1)
    assert load_run(tmp_path / "run", checkpoint="step_000000001024").meta["steps"] == 1024


def test_an_interrupted_run_resumed_equals_the_run_never_stopped(tmp_path: Path) -> None:
    """Stopped after 2 of 3 chunks, then `envc train --resume`: the same metrics, evaluations and parameters as
    one uninterrupted run (timings aside), from the carry (optimizer, env batch, key) saved after each chunk."""
    spec = envc.load(str(TIC_TAC_TOE))
    config = make_config(spec, total_steps=3 * 4 * 8 * 32, **TINY)

    def stop_after_two(info: dict[str, Any]) -> None:
        if info["updates"] == 8:
            raise KeyboardInterrupt

    whole = train(spec, tmp_path / "whole", config, progress=False)
    cut = train(spec, tmp_path / "cut", config, on_chunk=stop_after_two, progress=False)
    assert cut.interrupted and cut.updates == 8 and not whole.interrupted
    bad = CliRunner().invoke(app, ["train", str(TIC_TAC_TOE), "--resume", str(tmp_path / "cut"), "--steps", "99"])
    assert bad.exit_code == 2 and "drop --steps" in bad.output
    nothing = CliRunner().invoke(app, ["train", str(TIC_TAC_TOE), "--resume", str(tmp_path / "nowhere")])
    assert nothing.exit_code == 2 and "error:" in nothing.output
    done = CliRunner().invoke(app, ["train", str(TIC_TAC_TOE), "--resume", str(tmp_path / "cut")])
    assert done.exit_code == 0, done.output
    timing = ("steps_per_s", "wall_s")
    a, b = (json.loads((tmp_path / r / "metrics.json").read_text()) for r in ("whole", "cut"))
    assert [{k: v for k, v in r.items() if k not in timing} for r in a["updates"]] == [
        {k: v for k, v in r.items() if k not in timing} for r in b["updates"]
    ]
    assert len(a["updates"]) == 12 and a["vs_random"] == b["vs_random"] and len(a["vs_random"]) == 3
    pa, pb = (load_run(tmp_path / r).params for r in ("whole", "cut"))
    assert all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(pa), jax.tree.leaves(pb), strict=True))
    names = [[p.name for p in list_checkpoints(tmp_path / r)] for r in ("whole", "cut")]
    assert names[0] == names[1] and len(names[0]) == 3


def test_self_play_tic_tac_toe_runs_and_records_both_players(ttt_run: tuple[Path, Any]) -> None:
    run_dir, result = ttt_run
    assert not result.interrupted and result.steps == 2048
    body = json.loads((run_dir / "metrics.json").read_text())
    for row in body["updates"]:  # zero-sum: what one player wins the other loses
        assert row["episodes"] > 0 and row["return_p0"] == pytest.approx(-row["return_p1"])
        assert 5 <= row["mean_length"] <= 9
    assert len(body["vs_random"]) == 2
    assert all(0 <= e["win_rate"] + e["loss_rate"] <= 1 and e["unfinished"] == 0 for e in body["vs_random"])


def test_load_run_round_trips_and_policy_never_picks_an_illegal_action(ttt_run: tuple[Path, Any]) -> None:
    run_dir, _ = ttt_run
    run = load_run(run_dir)
    params, meta = read_checkpoint(list_checkpoints(run_dir)[-1])
    assert meta["steps"] == 2048 and run.config.num_envs == 8 and run.spec.name == "tic_tac_toe"
    jax.tree.map(np.testing.assert_array_equal, run.params, params)
    env = envc.build(run.spec, "jax")
    step = jax.jit(jax.vmap(env.env.step, in_axes=(0, 0, 0, None)))
    # Reachable states from random play: 256 games, 0..8 random moves each.
    states = jax.vmap(env.env.init, in_axes=(0, None))(jax.random.split(jax.random.PRNGKey(0), 256), env.params)
    depth = jnp.arange(256) % 9
    for i in range(8):
        key = jax.random.PRNGKey(100 + i)
        moves = jax.random.categorical(key, jnp.where(states.legal_action_mask, 0.0, -jnp.inf)).astype(jnp.int32)
        stepped = step(states, moves, jax.random.split(key, 256), env.params)
        live = (i < depth) & ~stepped.terminated
        states = jax.tree.map(lambda a, b: jnp.where(live.reshape((-1,) + (1,) * (a.ndim - 1)), a, b), stepped, states)
    obs, mask = flat_obs(states.observation), states.legal_action_mask
    assert int((~mask).sum()) > 500  # many illegal cells to tempt the policy
    policy = run.policy()
    act = jax.jit(lambda pol, key, greedy: pol.act(key, obs, mask, greedy), static_argnums=2)
    # The trained policy, and the same policy made to prefer each cell in turn by a huge margin, pick legal
    # cells only, greedily and sampled.
    bias = jnp.asarray(policy.params["params"]["actor_out"]["bias"])
    for cell in range(-1, 9):
        tilted = jax.tree.map(lambda x: x, policy.params)
        if cell >= 0:
            tilted["params"]["actor_out"]["bias"] = bias.at[cell].set(50.0)
        p = dataclasses.replace(policy, params=tilted)
        for greedy in (True, False):
            acts = act(p, jax.random.PRNGKey(cell + 1), greedy)
            assert bool(jnp.all(mask[jnp.arange(256), acts]))
        if cell >= 0:  # the tilt works: wherever the cell is legal, the greedy policy takes it
            assert bool(jnp.all(jnp.where(mask[:, cell], act(p, jax.random.PRNGKey(0), True) == cell, True)))


def test_box_spec_trains_with_actions_in_the_box(tmp_path: Path) -> None:
    spec = envc.load(str(PENDULUM))
    config = make_config(spec, total_steps=1024, num_envs=8, num_steps=64, num_minibatches=4, update_epochs=2)
    result = train(spec, tmp_path / "run", config, progress=False)
    assert result.steps == 1024 and all(r["mean_length"] == 200 for r in result.rows if r["episodes"])
    assert all(np.isfinite(r["loss"]) for r in result.rows)
    policy = load_run(tmp_path / "run").policy()
    assert not policy.discrete
    acts = policy.act(jax.random.PRNGKey(0), 10 * jax.random.normal(jax.random.PRNGKey(1), (512, 3)), None, False)
    assert acts.shape == (512, 1) and float(acts.min()) >= -2.0 and float(acts.max()) <= 2.0


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_bad_inputs_exit_2_with_one_line(tmp_path: Path, ttt_run: tuple[Path, Any]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("lr: 0.001\nclip_epsilon: 0.1\n")
    code, out = _cli("train", str(CARTPOLE), "--config", str(bad), "-o", str(tmp_path / "r"))
    assert code == 2 and out.strip().count("\n") == 0 and "clip_epsilon: unknown key" in out
    noact = tmp_path / "idle.yaml"
    noact.write_text(textwrap.dedent("""\
        name: idle
        players: 1
        state:
          t: {type: i32}
        reward: 1.0
        terminated: step_count >= 5
        observation:
          fields:
            obs: {type: f32, shape: [1]}
          body: "obs[0] = 1.0"
        """))
    code, out = _cli("train", str(noact), "-o", str(tmp_path / "r"))
    assert code == 2 and out.strip().count("\n") == 0 and "actions" in out
    assert not (tmp_path / "r").exists()

    run_dir, _ = ttt_run
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    with pytest.raises(RunError, match="another spec"):  # a checkpoint of tic-tac-toe read as connect four
        load_run(copy, spec_path=ROOT / "specs" / "connect_four.yaml")
    params, meta = read_checkpoint(list_checkpoints(copy)[-1])
    save_checkpoint(copy, params, {**meta, "steps": 99_999, "envc_version": "0.0.1"})
    with pytest.raises(RunError, match=r"trained with envc 0\.0\.1"):
        load_run(copy)
    with pytest.raises(RunError, match="no checkpoint 'step_7'"):
        load_run(copy, checkpoint="step_7")
    moved = json.loads((copy / "run.json").read_text())
    moved["spec_path"] = str(tmp_path / "gone.yaml")
    (copy / "run.json").write_text(json.dumps(moved))
    with pytest.raises(RunError, match="gone"):
        load_run(copy, checkpoint="step_000000002048")
    with pytest.raises(RunError, match="no such run folder"):
        load_run(tmp_path / "nowhere")


SHARDED = """
import json, sys, jax, envc
from envc.train.config import make_config
from envc.train.ppo import Trainer
from envc.train.run import device_mesh, train
spec = envc.load(sys.argv[1])
cfg = make_config(spec, total_steps=2048, num_envs=8, num_steps=32, num_minibatches=4, update_epochs=2,
                  updates_per_chunk=4)
carry = Trainer(envc.build(spec, "jax"), cfg, device_mesh()).init(0)
out = {"devices": jax.device_count(), "env_shards": len(carry.env_state.x.sharding.device_set),
       "env_replicated": carry.env_state.x.sharding.is_fully_replicated}
for n in (1, 2):
    r = train(spec, f"{sys.argv[2]}/d{n}", cfg, progress=False, devices=jax.devices()[:n])
    out[n] = r.rows
print(json.dumps(out))
"""


def test_sharded_run_over_two_host_devices_matches_one_device(tmp_path: Path) -> None:
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", SHARDED, str(CARTPOLE), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["devices"] == 2 and out["env_shards"] == 2 and not out["env_replicated"]
    _same_run_on_two_devices(out["1"], out["2"], tmp_path / "d2")


def _same_run_on_two_devices(one: list[dict[str, Any]], two: list[dict[str, Any]], two_dir: Path) -> None:
    """The rows of a run on one device and on two: the same episodes; losses differ only by reduction order."""
    assert len(one) == len(two) == 8
    for a, b in zip(one, two):
        assert a["episodes"] == b["episodes"] and a["mean_return"] == b["mean_return"]
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-4, abs=1e-5)
    assert json.loads((two_dir / "run.json").read_text())["meta"]["devices"] == 2
    assert load_run(two_dir).meta["steps"] == 2048


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_two_processes_through_jax_distributed_match_one_process(tmp_path: Path) -> None:
    """`envc train` started twice with ENVC_COORDINATOR on 127.0.0.1 (two hosts of one CPU device each, joined by
    jax.distributed): the global batch is split across the processes, only process 0 writes the run, and the run
    equals the same config trained by one process on one device."""
    config = tmp_path / "small.yaml"
    config.write_text("num_steps: 32\nnum_minibatches: 4\nupdate_epochs: 2\nupdates_per_chunk: 4\n")
    args = ["train", str(CARTPOLE), "--steps", "2048", "--num-envs", "8", "--config", str(config)]
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"} | {"JAX_PLATFORMS": "cpu"}
    port = _free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "envc.cli", *args, "-o", str(tmp_path / f"p{i}")],
            env=env | {"ENVC_COORDINATOR": f"127.0.0.1:{port}", "ENVC_NUM_PROCESSES": "2", "ENVC_PROCESS_ID": str(i)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
    assert "2 device(s)" in outs[0][1]
    assert not (tmp_path / "p1").exists()  # process 1 trains but writes nothing
    single = subprocess.run([sys.executable, "-m", "envc.cli", *args, "-o", str(tmp_path / "one")], env=env,
                            capture_output=True, text=True, timeout=600)
    assert single.returncode == 0, single.stderr[-2000:]
    assert "1 device(s)" in single.stderr
    two = json.loads((tmp_path / "p0" / "metrics.json").read_text())["updates"]
    one = json.loads((tmp_path / "one" / "metrics.json").read_text())["updates"]
    _same_run_on_two_devices(one, two, tmp_path / "p0")
