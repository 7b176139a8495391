"""Stable-Baselines3 vector envs of single-player specs: `envc.sb3.make_vec_env(spec, n_envs)`.

On the rust backend the result is `RustVecEnv`, an SB3 `VecEnv` over the generated crate's batch: every env is
stepped by Rust threads, and an env that finishes is reset within the same step (SB3's convention: the new
episode's observation is returned, the last one is in `infos[i]["terminal_observation"]`), so no step of an
agent's action is ever ignored. Envs are seeded as SB3 seeds its own `DummyVecEnv` (`seed(s)` gives env i the
seed `s + i`) and keyed as `envc.gymnasium`'s envs, so `RustVecEnv` and `DummyVecEnv` over `gym.make` of the
same spec give the same episodes, observation for observation. The legal action mask is in every info dict and
`env_method("action_masks")` returns it, as sb3-contrib's `MaskablePPO` asks. With `render_mode="rgb_array"` (a
spec with a `render` section) `get_images` draws every env, so SB3's `VecVideoRecorder` records the batch.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any

import gymnasium
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

import envc.gymnasium as eg
from envc.ir import SpecIR
from envc.render import state_dict


class RustVecEnv(VecEnv):
    """`num_envs` envs of one spec stepped in place by the Rust batch, with SB3's same-step auto-reset."""

    def __init__(
        self,
        spec: SpecIR | str | PathLike[str],
        num_envs: int,
        params: Mapping[str, Any] | None = None,
        threads: int | None = 1,
        render_mode: str | None = None,
    ):
        self.spec_ir = _single_player(spec)
        self.spec = gymnasium.envs.registration.EnvSpec(id=eg.default_id(self.spec_ir))
        allowed = [None, "rgb_array"] if self.spec_ir.render is not None else [None]
        if render_mode not in allowed:
            raise ValueError(f"render_mode {render_mode!r} is not one of {allowed} for spec '{self.spec_ir.name}'"
                             + ("" if self.spec_ir.render is not None else " (it declares no render section)"))
        self.render_mode = render_mode
        self._env = eg.build(spec, "rust", params)
        self._renderer = eg.renderer_of(self._env) if render_mode is not None else None
        # "disabled": the batch never restarts an env by itself; step_wait resets the finished ones at once.
        self._vec = self._env.vector_env(num_envs, threads=threads, autoreset_mode="disabled")
        super().__init__(num_envs, self._vec.single_observation_space, self._vec.single_action_space)
        self._actions: np.ndarray | None = None
        self._masks = np.ones((num_envs, 0), np.bool_)

    def reset(self) -> VecEnvObs:
        """Reset every env: those given a seed by `seed()` start that seed's first episode, the others their next."""
        seeds = self._seeds if any(s is not None for s in self._seeds) else None
        obs: VecEnvObs
        obs, info = self._vec.reset(seed=seeds)
        self._masks = info["legal_action_mask"]
        self.reset_infos = [{"legal_action_mask": m} for m in self._masks]
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Keep the actions for `step_wait`."""
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        """Step every env; finished envs are reset in the same call (their last observation is in their info)."""
        if self._actions is None:
            raise RuntimeError("step_async(actions) must come before step_wait()")
        obs, rewards, terminated, truncated, info = self._vec.step(np.asarray(self._actions))
        self._actions = None
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [
            {"legal_action_mask": m, "TimeLimit.truncated": bool(tr and not te)}
            for m, te, tr in zip(info["legal_action_mask"], terminated, truncated)
        ]
        masks = info["legal_action_mask"]
        if dones.any():
            rows = np.flatnonzero(dones)
            for i in rows:
                infos[i]["terminal_observation"] = _row(obs, int(i))
            obs, reset_info = self._vec.reset(options={"reset_mask": dones})
            masks = masks.copy()
            masks[rows] = reset_info["legal_action_mask"][rows]
            for i in rows:
                self.reset_infos[i] = {"legal_action_mask": masks[i]}
        self._masks = masks
        return obs, np.asarray(rewards, np.float32), dones, infos

    def action_masks(self) -> np.ndarray:
        """The legal action mask of every env, shape (num_envs, num_actions)."""
        return np.array(self._masks, copy=True)

    def close(self) -> None:
        """Nothing to release: the Rust batch is freed with the object."""

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """`render_mode`, `spec`, the spaces or `action_masks` (a callable), once per indexed env."""
        if attr_name == "action_masks":
            return [functools.partial(self._mask_of, i) for i in self._get_indices(indices)]
        known = {
            "render_mode": self.render_mode,
            "spec": self.spec,
            "observation_space": self.observation_space,
            "action_space": self.action_space,
        }
        if attr_name not in known:
            raise AttributeError(f"the envs of RustVecEnv have no attribute {attr_name!r} (have: {', '.join(known)})")
        return [known[attr_name] for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """The envs live in Rust: no attribute can be set on them."""
        raise AttributeError(f"cannot set {attr_name!r} on the envs of RustVecEnv: they are stepped in Rust")

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """`action_masks` (sb3-contrib's `MaskablePPO`) is the one method the envs have."""
        if method_name != "action_masks":
            raise AttributeError(f"the envs of RustVecEnv have no method {method_name!r} (have: action_masks)")
        return [self._mask_of(i) for i in self._get_indices(indices)]

    def _mask_of(self, i: int) -> np.ndarray:
        return np.array(self._masks[i], copy=True)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """No env is wrapped."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Every env's state drawn by the spec's `render` section (render_mode "rgb_array"; else Nones), as SB3's
        `VecVideoRecorder` asks."""
        if self._renderer is None:
            return [None] * self.num_envs
        batch = self._vec._batch
        return [self._renderer.rgb(state_dict(self._env, batch.state(i))) for i in range(self.num_envs)]


def _row(obs: Any, i: int) -> Any:
    """Env i's observation, copied out of the batch (a dict of arrays for a spec with several parts)."""
    if isinstance(obs, Mapping):
        return {k: np.array(v[i], copy=True) for k, v in obs.items()}
    return np.array(obs[i], copy=True)


def _single_player(spec: SpecIR | str | PathLike[str]) -> SpecIR:
    ir_ = eg.load_spec(spec)
    if ir_.players > 1:
        raise ValueError(
            f"spec '{ir_.name}' has {ir_.players} players and SB3 trains single agents: use envc.pettingzoo for it"
        )
    return ir_


def make_vec_env(
    spec: SpecIR | str | PathLike[str],
    n_envs: int = 1,
    seed: int | None = None,
    backend: str = "rust",
    params: Mapping[str, Any] | None = None,
    threads: int | None = 1,
    render_mode: str | None = None,
) -> VecEnv:
    """An SB3 `VecEnv` of `n_envs` envs of a single-player spec, as SB3's `make_vec_env` (env i seeded `seed + i`).

    backend "rust" gives `RustVecEnv`; "reference" and "jax" give SB3's `DummyVecEnv` over `envc.gymnasium` envs.
    `threads`: Rust worker threads (None: one per core). One by default: SB3's torch updates run in this process,
    and idle workers spinning between steps take CPU from them (SB3's PPO on cartpole, 8 envs, 2 busy cores: 3.8K
    steps/s with one thread, 2.6K with two); more pay off only where the env's own step is costly.
    """
    if backend == "rust":
        vec: VecEnv = RustVecEnv(spec, n_envs, params=params, threads=threads, render_mode=render_mode)
    elif backend in eg.BACKENDS:
        _single_player(spec)
        vec = DummyVecEnv([_maker(spec, backend, params, render_mode) for _ in range(n_envs)])
    else:
        raise ValueError(f"backend '{backend}' is not available (have: {', '.join(eg.BACKENDS)})")
    if seed is not None:
        vec.seed(seed)
    return vec


def _maker(
    spec: SpecIR | str | PathLike[str], backend: str, params: Mapping[str, Any] | None, render_mode: str | None
) -> Any:
    source = spec if isinstance(spec, SpecIR) else str(spec)
    return lambda: eg.make_env(source, backend, params, render_mode=render_mode)


__all__ = ["RustVecEnv", "make_vec_env"]
