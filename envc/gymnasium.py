"""Gymnasium registration of envc specs: `register(spec)`, then `gym.make(id)` and `gym.make_vec(id, n, ...)`.

On the rust backend `gym.make` gives the generated crate's `GymEnv` and `gym.make_vec(..., vectorization_mode=
"vector_entry_point")` (the default) its Rust-stepped `VectorEnv`; "sync" and "async" wrap `GymEnv`s as gymnasium
does. The reference and jax backends give `SpecEnv` (the single-state API behind gymnasium's `Env`), vectorized
"sync" or "async". Every env keys its episodes alike (`episode_keys`), so a seed gives the same episodes on every
backend and in every vectorization mode.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import re
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

import envc
from envc import ir, rng
from envc.ir import NP_DTYPE, SpecIR
from envc.render import Renderer, state_dict

BACKENDS = ("rust", "reference", "jax")
_MASK32 = 0xFFFFFFFF


def part_space(o: ir.ObsFieldInfo) -> spaces.Box:
    """The Box of one observation part: its declared bounds, else its dtype's (finite) range, as the Rust gym.py."""
    dt = o.ty.dtype
    shape = tuple(o.ty.shape)
    np_dtype = NP_DTYPE[dt]
    big = float(np.finfo(np_dtype).max) if dt.is_float else 0.0  # an unbounded side: the largest finite value

    def side(b: ir.Bound) -> Any:
        """One bound: a number, or an array of the part's shape (declared per element)."""
        if not dt.is_float:
            return np.reshape(np.asarray(b, np.int64), shape) if isinstance(b, tuple) else int(b)
        clipped = np.clip(np.asarray(b, np.float64), -big, big)
        return np.reshape(clipped, shape).astype(np_dtype) if isinstance(b, tuple) else float(clipped)

    lo, hi = o.bounds()
    return spaces.Box(side(lo), side(hi), shape, np_dtype)


def observation_space(spec: SpecIR) -> spaces.Space[Any]:
    """The observation space of one player: a Box, or a Dict of Boxes for a spec with several parts."""
    if len(spec.obs_fields) == 1:
        return part_space(spec.obs_fields[0])
    return spaces.Dict({o.name: part_space(o) for o in spec.obs_fields})


def action_space(spec: SpecIR) -> spaces.Space[Any]:
    """Discrete(num_actions), or the declared Box of a continuous-action spec."""
    if spec.box is not None:
        return spaces.Box(spec.box.low, spec.box.high, tuple(spec.box.shape), np.float32)
    return spaces.Discrete(spec.num_actions)


def episode_keys(seed: int, episode: int) -> tuple[rng.Key, rng.Key]:
    """The reset key and step-key stream of `episode` of an env seeded with `seed` (the Rust envs' scheme: step
    t = 1, 2, ... uses `fold_in(stream, t)`)."""
    ek = rng.fold_in(rng.key_from_seed(seed), episode & _MASK32)
    return rng.fold_in(ek, 0), rng.fold_in(ek, 1)


def load_spec(spec: SpecIR | str | PathLike[str]) -> SpecIR:
    """`spec` itself, or the spec at that path (loaded once per path and modification time)."""
    if isinstance(spec, SpecIR):
        return spec
    p = Path(spec).resolve()
    return _load(str(p), p.stat().st_mtime_ns if p.exists() else 0)


@functools.lru_cache(maxsize=32)
def _load(path: str, mtime: int) -> SpecIR:
    return envc.load(path)


@functools.lru_cache(maxsize=32)
def _rust_module(path: str, mtime: int) -> Any:
    from envc.lower_rust.build import compile_to_cache

    return importlib.import_module(compile_to_cache(_load(path, mtime)))


def build(spec: SpecIR | str | PathLike[str], backend: str = "rust", params: Mapping[str, Any] | None = None) -> Any:
    """`envc.build(spec, backend, params)`, with the loaded spec and the Rust package kept across calls."""
    if backend not in BACKENDS:
        raise ValueError(f"backend '{backend}' is not available (have: {', '.join(BACKENDS)})")
    ir_ = load_spec(spec)
    if backend == "rust" and not isinstance(spec, SpecIR):
        from envc.lower_rust.build import RustEnv

        p = Path(spec).resolve()
        return RustEnv(ir_, params=params, module=_rust_module(str(p), p.stat().st_mtime_ns))
    return envc.build(ir_, backend, params=params)


class SpecEnv(gymnasium.Env[Any, Any]):
    """A single-player spec as a gymnasium `Env` over the single-state API of any backend (keys as `GymEnv`'s).

    The reward is that of the player who acted; the legal action mask is in `info["legal_action_mask"]`.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, env: Any, render_mode: str | None = None):
        self.env = env
        self.metadata = {"render_modes": render_modes(env.spec), "render_fps": RENDER_FPS}
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self._renderer = renderer_of(env) if render_mode is not None else None
        self.observation_space = observation_space(env.spec)
        self.action_space = action_space(env.spec)
        self._seed: int | None = None
        self._episode = 0
        self._stream: rng.Key = (0, 0)
        self._t = 0
        self._state: Any = None

    def _obs(self) -> Any:
        obs = self._state.observation
        if isinstance(self.observation_space, spaces.Dict):
            return {k: np.asarray(obs[k], self.observation_space[k].dtype) for k in self.observation_space.spaces}
        return np.asarray(obs, self.observation_space.dtype)

    def _info(self) -> dict[str, Any]:
        return {"legal_action_mask": np.asarray(self._state.legal_action_mask, np.bool_)}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Start an episode: episode 0 of `seed`, or the next episode."""
        super().reset(seed=seed)
        if seed is not None:
            self._seed, self._episode = int(seed), 0
        elif self._seed is None:
            self._seed, self._episode = int(self.np_random.integers(2**31)), 0
        reset_key, self._stream = episode_keys(self._seed, self._episode)
        self._episode += 1
        self._t = 0
        self._state = self.env.init(reset_key)
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """One transition; the reward is that of the player who acted."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        acting = int(self._state.current_player)
        self._t += 1
        if self.env.spec.box is not None:
            action = np.ascontiguousarray(action, dtype=np.float32).reshape(self.action_space.shape)
        else:
            action = int(action)
        self._state = self.env.step(self._state, action, rng.fold_in(self._stream, self._t))
        s = self._state
        rewards = np.asarray(s.rewards)
        reward = float(rewards[acting]) if 0 <= acting < len(rewards) else 0.0
        return self._obs(), reward, bool(s.terminated), bool(s.truncated), self._info()

    def render(self) -> Any:
        """The state drawn by the spec's `render` section: an RGB array ("rgb_array") or text ("ansi")."""
        if self._renderer is None:
            return None
        if self._state is None:
            raise RuntimeError("call reset() before render()")
        d = state_dict(self.env, self._state)
        return self._renderer.rgb(d) if self.render_mode == "rgb_array" else self._renderer.text(d) + "\n"


RENDER_FPS = 30


def render_modes(spec: SpecIR) -> list[str]:
    """The render modes a spec offers: ansi and rgb_array when it declares a `render` section."""
    return ["ansi", "rgb_array"] if spec.render is not None else []


def renderer_of(env: Any) -> Renderer:
    """The renderer of a built env, with the env's runtime params."""
    params = getattr(env, "params", None)
    if dataclasses.is_dataclass(params) and not isinstance(params, type):  # the JAX backend's EnvParams
        params = {f.name: np.asarray(getattr(params, f.name)).item() for f in dataclasses.fields(params)}
    return Renderer(env.spec, params if isinstance(params, Mapping) else None)


def make_env(
    spec: SpecIR | str,
    backend: str = "rust",
    params: Mapping[str, Any] | None = None,
    render_mode: str | None = None,
    autoreset_mode: Any = None,
) -> gymnasium.Env[Any, Any]:
    """The entry point of `register`: one env of `spec` on `backend`."""
    if autoreset_mode is not None:
        raise TypeError(
            "autoreset_mode is an option of the Rust VectorEnv (vectorization_mode='vector_entry_point'); with 'sync' "
            "or 'async' pass vector_kwargs={'autoreset_mode': gymnasium.vector.AutoresetMode.SAME_STEP}"
        )
    env = build(spec, backend, params)
    if backend == "rust":
        return env.gym_env(render_mode=render_mode)  # type: ignore[no-any-return]
    return SpecEnv(env, render_mode=render_mode)


def make_vector(
    num_envs: int,
    spec: SpecIR | str,
    backend: str = "rust",
    params: Mapping[str, Any] | None = None,
    seed: int = 0,
    threads: int | None = None,
    copy: bool = True,
    autoreset_mode: Any = "next_step",
    render_mode: str | None = None,
) -> gymnasium.vector.VectorEnv[Any, Any, Any]:
    """The vector entry point of `register`: the Rust `VectorEnv` of `num_envs` envs of `spec`."""
    if backend != "rust":
        raise ValueError(f"the vector entry point needs backend 'rust'; use vectorization_mode='sync' for '{backend}'")
    if render_mode is not None:
        raise ValueError("the Rust VectorEnv does not render")
    env = build(spec, "rust", params)
    return env.vector_env(  # type: ignore[no-any-return]
        num_envs, seed=seed, threads=threads, copy=copy, autoreset_mode=autoreset_mode
    )


def default_id(spec: SpecIR) -> str:
    """`envc/<name>-v<major version>`, the id `register` uses when given none."""
    major = re.match(r"\d+", spec.version)
    return f"envc/{spec.name}-v{major.group(0) if major else 0}"


def register(spec: SpecIR | str | PathLike[str], id: str | None = None, backend: str = "rust", **kwargs: Any) -> str:
    """Register a single-player spec (a path or an IR) with gymnasium; returns its id (default `default_id`).

    Extra `kwargs` (e.g. `params`) become the id's default keyword arguments. Multi-player specs are refused:
    use `envc.pettingzoo` (or `envc.openspiel`) for them.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend '{backend}' is not available (have: {', '.join(BACKENDS)})")
    ir_ = load_spec(spec)
    if ir_.players > 1:
        raise ValueError(
            f"spec '{ir_.name}' has {ir_.players} players and gymnasium's Env is single-agent: use "
            f"envc.pettingzoo.env(spec) (AEC) or envc.pettingzoo.parallel_env(spec), or envc.openspiel.register(spec)"
        )
    env_id = id or default_id(ir_)
    source: SpecIR | str = ir_ if isinstance(spec, SpecIR) else str(Path(spec).resolve())
    gymnasium.registry.pop(env_id, None)
    gymnasium.register(
        id=env_id,
        entry_point=make_env,  # type: ignore[arg-type]
        vector_entry_point=make_vector if backend == "rust" else None,  # type: ignore[arg-type]
        kwargs={"spec": source, "backend": backend, **kwargs},
    )
    return env_id


__all__ = [
    "BACKENDS",
    "SpecEnv",
    "action_space",
    "build",
    "default_id",
    "episode_keys",
    "load_spec",
    "make_env",
    "make_vector",
    "observation_space",
    "register",
]
