"""pgx's AlphaZero example (vendored in tests/third_party/pgx_alphazero) trains on envc's connect four as on pgx's."""

from __future__ import annotations

import pickle
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pgx")
pytest.importorskip("mctx")
pytest.importorskip("haiku")
pytest.importorskip("omegaconf")
pytest.importorskip("wandb")

import jax
import jax.numpy as jnp
import mctx
import pgx

# pydantic 2 on the example's class-based `Config`
pytestmark = pytest.mark.filterwarnings("ignore:Support for class-based `config`:DeprecationWarning")
VENDORED = Path(__file__).parent / "third_party" / "pgx_alphazero"
ENVC_LINE = "env = envc.pgx.make(config.env_id)"
# The example's command line (`python train.py env_id=connect_four ...`, read by OmegaConf.from_cli): a tiny budget
# whose self-play games still end (48 moves per game slot), so the value loss has targets.
ARGS = {"env_id": "connect_four", "seed": 0, "max_num_iters": 1, "num_channels": 8, "num_layers": 1,
        "selfplay_batch_size": 8, "num_simulations": 4, "max_num_steps": 48, "training_batch_size": 32}


def _run_example(folder: Path) -> dict[str, Any]:
    """Run `folder/train.py` as `python train.py ARGS` (its `__main__` loop) in `folder`; its module globals."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)  # the example writes checkpoints/ under the working directory
        mp.setenv("WANDB_MODE", "disabled")  # wandb.init/log are no-ops, nothing leaves the machine
        mp.setattr(sys, "argv", ["train.py", *(f"{k}={v}" for k, v in ARGS.items())])
        mp.syspath_prepend(str(folder))  # `from network import AZNet`
        sys.modules.pop("network", None)
        return runpy.run_path(str(folder / "train.py"), run_name="__main__")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, Any]]]:
    """The vendored example run on envc's connect four, and the same file with pgx's `pgx.make` line, on pgx's."""
    text = (VENDORED / "train.py").read_text()
    assert text.count(ENVC_LINE) == 1
    out = {}
    for name, source in (("envc", text), ("pgx", text.replace(ENVC_LINE, "env = pgx.make(config.env_id)"))):
        folder = tmp_path_factory.mktemp(name)
        (folder / "train.py").write_text(source)
        (folder / "network.py").write_text((VENDORED / "network.py").read_text())
        out[name] = _run_example(folder) | {"folder": folder}
    yield out


class _Unpickler(pickle.Unpickler):
    """Reads the example's checkpoint, whose `config` is the `Config` class of the script run as `__main__`."""

    def __init__(self, file: Any, script_globals: dict[str, Any]) -> None:
        super().__init__(file)
        self.script_globals = script_globals

    def find_class(self, module: str, name: str) -> Any:
        """`__main__` names from the script's globals."""
        return self.script_globals[name] if module == "__main__" else super().find_class(module, name)


def _legal_from_obs(obs: np.ndarray) -> np.ndarray:
    """Connect four's legal columns from pgx's observation `[..., 6, 7, 2]`: a column is full when its top cell is."""
    return ~obs[..., 0, :, :].any(-1)


def test_alphazero_example_trains_on_envc_connect_four(runs: dict[str, dict[str, Any]]) -> None:
    """The example's loop completes on envc's env: finite losses, legal-only search policies, a checkpoint."""
    g = runs["envc"]
    env = g["env"]
    assert isinstance(env, pgx.core.Env) and not isinstance(env, type(pgx.make("connect_four")))
    assert type(env).__module__.endswith(".pgx_env") and env.id == "connect_four"
    assert g["iteration"] == ARGS["max_num_iters"] == 1
    assert g["frames"] == ARGS["selfplay_batch_size"] * ARGS["max_num_steps"]
    log = g["log"]
    assert np.isfinite(log["train/policy_loss"]) and log["train/policy_loss"] > 0
    assert np.isfinite(log["train/value_loss"]) and log["train/value_loss"] > 0  # some games ended: value targets
    data = jax.device_get(g["data"])  # the last self-play: (devices, steps, batch, ...)
    steps, batch = ARGS["max_num_steps"], ARGS["selfplay_batch_size"]
    assert data.obs.shape == (1, steps, batch, 6, 7, 2)
    assert data.action_weights.shape == (1, steps, batch, env.num_actions)
    np.testing.assert_allclose(data.action_weights.sum(-1), 1.0, rtol=1e-5)
    legal = _legal_from_obs(data.obs)
    assert (~legal).any(), "no full column in self-play: the legal-only check below would be vacuous"
    assert (data.action_weights[~legal] == 0).all()
    assert data.terminated.any() and set(np.unique(data.reward)) <= {-1.0, 0.0, 1.0}
    (ckpt,) = (g["folder"] / "checkpoints").glob("connect_four_*/000000.ckpt")
    with ckpt.open("rb") as f:
        saved = _Unpickler(f, g).load()
    assert saved["env_id"] == "connect_four" and saved["iteration"] == 0
    trained = jax.tree.map(lambda x: np.asarray(x[0]), g["model"][0])
    assert all(np.isfinite(x).all() for x in jax.tree.leaves(trained))
    assert any(not np.allclose(a, b) for a, b in zip(jax.tree.leaves(trained), jax.tree.leaves(saved["model"][0])))


def test_alphazero_example_on_envc_equals_pgx_connect_four(runs: dict[str, dict[str, Any]]) -> None:
    """Step-equivalent envs with equal observations: the whole run (self-play, search, losses, params) is equal."""
    a, b = runs["envc"], runs["pgx"]
    assert type(b["env"]).__module__.startswith("pgx.")
    assert a["log"].keys() == b["log"].keys()
    for key in a["log"]:
        if key != "hours":
            assert a["log"][key] == pytest.approx(b["log"][key], rel=1e-5), key
    da, db = jax.device_get(a["data"]), jax.device_get(b["data"])
    for field in da._fields:
        x, y = getattr(da, field), getattr(db, field)
        assert x.shape == y.shape and x.dtype == y.dtype, field
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6, err_msg=field)
    for x, y in zip(jax.tree.leaves(a["model"]), jax.tree.leaves(b["model"]), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-6)


def test_mctx_search_on_envc_and_pgx_from_the_same_position(runs: dict[str, dict[str, Any]]) -> None:
    """The example's `recurrent_fn` searched from one mid-game position: the same root values and visit counts."""
    moves = [3, 3, 3, 3, 3, 3, 2, 4, 2]  # column 3 full
    model = jax.tree.map(lambda x: x[0], runs["envc"]["model"])
    results = {}
    for name, g in runs.items():
        env = g["env"]
        state = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(1), 4))
        step = jax.jit(jax.vmap(env.step))
        for move in moves:
            state = step(state, jnp.full(4, move))

        def search(state: Any, key: jax.Array, g: dict[str, Any] = g) -> tuple[jax.Array, ...]:
            """The example's Gumbel MuZero search (its `recurrent_fn`, 16 simulations) with the trained model."""
            (logits, value), _ = g["forward"].apply(model[0], model[1], state.observation, is_eval=True)
            root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
            out = mctx.gumbel_muzero_policy(
                params=model, rng_key=key, root=root, recurrent_fn=g["recurrent_fn"], num_simulations=16,
                invalid_actions=~state.legal_action_mask, qtransform=mctx.qtransform_completed_by_mix_value)
            summary = out.search_tree.summary()
            return state.legal_action_mask, summary.value, summary.visit_counts, out.action_weights, out.action

        results[name] = [np.asarray(x) for x in jax.jit(search)(state, jax.random.PRNGKey(7))]
    legal, root_value, visits, weights, action = results["envc"]
    assert root_value.shape == (4,) and visits.shape == weights.shape == (4, 7) and action.shape == (4,)
    assert not legal[:, 3].any() and (visits[:, 3] == 0).all() and (weights[:, 3] == 0).all()
    assert (visits.sum(-1) == 16).all() and legal[np.arange(4), action].all()
    for x, y in zip(results["envc"], results["pgx"], strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
