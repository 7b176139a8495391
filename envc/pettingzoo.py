"""PettingZoo adapters for envc specs: `env(spec)` (AEC) and `parallel_env(spec)` (Parallel).

Agents are "player_0", "player_1", ...; an agent observes `{"observation": ..., "action_mask": int8[num_actions]}`
(PettingZoo's convention: the mask is all zeros for an agent that is not to move). Rewards are every player's
rewards of the last transition, as the spec defines them; when the spec terminates or truncates, every agent does.
An illegal action ends the episode: the mover gets the spec's `illegal_action_penalty` and the others its negation
shared (envc's rule, section 14.3 of the spec language; PettingZoo's `TerminateIllegalWrapper` does the same).
Episodes are keyed as in `envc.gymnasium` (`episode_keys`): `reset(seed=s)` plays episode 0 of `s`, a later
`reset()` the next episode. The backend is any of `envc.build`'s single-state backends (default "rust").

Parallel API for turn-based specs: every live agent passes an action each step, but only the player to move
(the one whose `action_mask` is not all zeros) acts; the other agents' actions are ignored. A spec whose players
move simultaneously is not expressible in envc's action model, so this is the only reading.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv

from envc import rng
from envc.gymnasium import action_space, build, episode_keys, load_spec, observation_space, render_modes, renderer_of
from envc.ir import SpecIR
from envc.render import Renderer, state_dict


class Match:
    """One episode at a time of a spec on a single-state backend: keys, state, and PettingZoo's views of them."""

    def __init__(
        self, spec: SpecIR | str | PathLike[str], backend: str = "rust", params: Mapping[str, Any] | None = None
    ):
        ir_ = load_spec(spec)
        if ir_.box is not None:
            raise ValueError(f"spec '{ir_.name}' has continuous actions: the PettingZoo adapters take discrete actions")
        self.spec = ir_
        self.env = build(spec, backend, params)
        self.agents = [f"player_{i}" for i in range(ir_.players)]
        self.num_actions = ir_.num_actions
        inner = observation_space(ir_)
        mask = spaces.Box(0, 1, (ir_.num_actions,), np.int8)
        self.observation_spaces = {a: spaces.Dict({"observation": inner, "action_mask": mask}) for a in self.agents}
        self.action_spaces = {a: action_space(ir_) for a in self.agents}
        self._inner = inner
        self.state_space = state_space(ir_)
        self._seed: int | None = None
        self._episode = 0
        self._stream: rng.Key = (0, 0)
        self._t = 0
        self.state: Any = None
        self._renderer: Renderer | None = None

    def render(self, mode: str | None) -> Any:
        """The state drawn in `mode` (None: nothing)."""
        if mode is None:
            return None
        if self.state is None:
            raise RuntimeError("call reset() before render()")
        if self._renderer is None:
            self._renderer = renderer_of(self.env)
        d = state_dict(self.env, self.state)
        return self._renderer.rgb(d) if mode == "rgb_array" else self._renderer.text(d) + "\n"

    def reset(self, seed: int | None, np_random: np.random.Generator) -> None:
        """Start episode 0 of `seed`, or the next episode (of a seed drawn from `np_random` the first time)."""
        if seed is not None:
            self._seed, self._episode = int(seed), 0
        elif self._seed is None:
            self._seed, self._episode = int(np_random.integers(2**31)), 0
        reset_key, self._stream = episode_keys(self._seed, self._episode)
        self._episode += 1
        self._t = 0
        self.state = self.env.init(reset_key)

    def step(self, action: int) -> None:
        """Apply the current player's `action`; an illegal one ends the episode with the spec's penalty."""
        action = int(action)
        self._t += 1
        self.state = self.env.step(self.state, action, rng.fold_in(self._stream, self._t))

    @property
    def current(self) -> int:
        """The player to move."""
        return int(self.state.current_player)

    @property
    def done(self) -> tuple[bool, bool]:
        """(terminated, truncated)."""
        return bool(self.state.terminated), bool(self.state.truncated)

    def legal_mask(self) -> np.ndarray:
        """The legal actions of the player to move."""
        return np.asarray(self.state.legal_action_mask, np.bool_)

    def legal(self) -> list[int]:
        """The legal action ids of the player to move."""
        return [int(a) for a in np.flatnonzero(self.legal_mask())]

    def rewards(self) -> dict[str, float]:
        """Every agent's reward of the last transition."""
        r = np.asarray(self.state.rewards, np.float64)
        return {a: float(r[i]) for i, a in enumerate(self.agents)}

    def raw_observation(self, player: int) -> Any:
        """What `player` observes, with the dtypes of the observation space."""
        obs = self.env.observe(self.state, player)
        if isinstance(self._inner, spaces.Dict):
            return {k: np.asarray(obs[k], self._inner[k].dtype) for k in self._inner.spaces}
        return np.asarray(obs, self._inner.dtype)

    def global_state(self) -> np.ndarray:
        """Every state field of the spec (hidden ones too), flattened in declaration order, as float64."""
        d = state_dict(self.env, self.state)
        return np.concatenate([np.asarray(d[f.name], np.float64).reshape(-1) for f in self.spec.fields])

    def observe(self, agent: str) -> dict[str, Any]:
        """PettingZoo's observation of `agent`: its observation and its action mask (zeros unless it is to move)."""
        p = self.agents.index(agent)
        to_move = p == self.current and not any(self.done)
        mask = self.legal_mask().astype(np.int8) if to_move else np.zeros(self.num_actions, np.int8)
        return {"observation": self.raw_observation(p), "action_mask": mask}


def state_space(spec: SpecIR) -> spaces.Box:
    """The Box of `Match.global_state`: each field's elements within `SpecIR.field_range` (declared bounds, a
    zone's count within its capacity, an enum within its members, else the dtype's range)."""
    ranges = [(spec.field_range(f), int(np.prod(f.ty.shape, dtype=np.int64))) for f in spec.fields]
    low = np.concatenate([np.full(n, lo) for (lo, _), n in ranges])
    high = np.concatenate([np.full(n, hi) for (_, hi), n in ranges])
    return spaces.Box(low, high, dtype=np.float64)


class _MatchEnv:
    """What the AEC and Parallel adapters share: a `Match`, the spaces, render modes and rendering."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        spec: SpecIR | str | PathLike[str],
        backend: str = "rust",
        params: Mapping[str, Any] | None = None,
        render_mode: str | None = None,
    ):
        super().__init__()
        self.match = Match(spec, backend, params)
        modes = render_modes(self.match.spec)
        if render_mode is not None and render_mode not in modes:
            raise ValueError(
                f"render_mode {render_mode!r} is not one of {modes} (a spec renders with a `render` section)"
            )
        self.metadata = {**type(self).metadata, "name": f"envc_{self.match.spec.name}", "render_modes": modes}
        self.render_mode = render_mode
        self.possible_agents = list(self.match.agents)
        self.agents: list[str] = []
        self._np_random = np.random.default_rng()

    @property
    def state_space(self) -> spaces.Box:
        """The Box of `state()`: every state field, flattened (see `state_space`)."""
        return self.match.state_space

    def state(self) -> np.ndarray:
        """The global state (every field, hidden ones too: for centralised critics), flattened as float64."""
        return self.match.global_state()

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        """The Dict space of `agent`'s observation and action mask (the same object every call)."""
        return self.match.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        """Discrete(num_actions)."""
        return self.match.action_spaces[agent]

    def render(self) -> Any:
        """The state drawn by the spec's `render` section: text ("ansi") or an RGB array ("rgb_array")."""
        return self.match.render(self.render_mode)

    def close(self) -> None:
        """Nothing to release."""


class AECEnvironment(_MatchEnv, AECEnv[str, dict[str, Any], int | None]):  # type: ignore[misc]
    """A multi-player spec as a PettingZoo AEC env (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": [], "is_parallelizable": False}

    def observe(self, agent: str) -> dict[str, Any]:
        """`agent`'s observation and action mask."""
        return self.match.observe(agent)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start an episode (see `Match.reset`)."""
        if seed is not None:
            self._np_random = np.random.default_rng(seed)
        self.match.reset(seed, self._np_random)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.agents[self.match.current]

    def step(self, action: int | None) -> None:
        """The selected agent's move (None once it is terminated or truncated)."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None:
            raise ValueError(f"{agent} is to move: None is only for agents that are done")
        acting = self.match.current
        self.match.step(int(action))
        self._cumulative_rewards[agent] = 0.0
        self.rewards = self.match.rewards()
        terminated, truncated = self.match.done
        if terminated or truncated:
            self.terminations = dict.fromkeys(self.agents, terminated)
            self.truncations = dict.fromkeys(self.agents, truncated and not terminated)
            self.agent_selection = self.possible_agents[(acting + 1) % len(self.possible_agents)]
        else:
            self.agent_selection = self.possible_agents[self.match.current]
        self._accumulate_rewards()


class ParallelEnvironment(_MatchEnv, ParallelEnv[str, dict[str, Any], int]):  # type: ignore[misc]
    """A multi-player spec as a PettingZoo Parallel env: only the player to move acts (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def _observations(self) -> dict[str, dict[str, Any]]:
        return {a: self.match.observe(a) for a in self.possible_agents}

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode; every agent's observation and an empty info each."""
        if seed is not None:
            self._np_random = np.random.default_rng(seed)
        self.match.reset(seed, self._np_random)
        self.agents = list(self.possible_agents)
        return self._observations(), {a: {} for a in self.agents}

    def step(
        self, actions: dict[str, int]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        """The player to move plays its entry of `actions` (the others' entries are ignored)."""
        mover = self.possible_agents[self.match.current]
        if mover not in actions:
            raise ValueError(f"{mover} is to move but has no entry in actions")
        self.match.step(int(actions[mover]))
        terminated, truncated = self.match.done
        obs = self._observations()
        rewards = self.match.rewards()
        terms = dict.fromkeys(self.possible_agents, terminated)
        truncs = dict.fromkeys(self.possible_agents, truncated and not terminated)
        infos: dict[str, dict[str, Any]] = {a: {} for a in self.possible_agents}
        if terminated or truncated:
            self.agents = []
        return obs, rewards, terms, truncs, infos



def env(
    spec: SpecIR | str | PathLike[str],
    backend: str = "rust",
    params: Mapping[str, Any] | None = None,
    render_mode: str | None = None,
) -> AECEnvironment:
    """The AEC env of a spec (a path or an IR)."""
    return AECEnvironment(spec, backend, params, render_mode)


def parallel_env(
    spec: SpecIR | str | PathLike[str],
    backend: str = "rust",
    params: Mapping[str, Any] | None = None,
    render_mode: str | None = None,
) -> ParallelEnvironment:
    """The Parallel env of a spec (only the player to move acts)."""
    return ParallelEnvironment(spec, backend, params, render_mode)


__all__ = ["AECEnvironment", "Match", "ParallelEnvironment", "env", "parallel_env"]
