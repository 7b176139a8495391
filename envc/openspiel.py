"""OpenSpiel adapter: `register(spec)` makes `pyspiel.load_game("envc_<name>")` a Python game over the spec.

Chance: envc draws its randomness from keys inside `init` and `step`, not at explicit chance nodes, so a spec that
draws becomes an explicit-stochastic game with one chance node at the root: outcome `i` (of the game parameter
`num_seeds`, all equally likely) plays episode 0 of seed `i`, after which every transition is determined. The game
is therefore the uniform mixture of `num_seeds` seeded episodes of the spec: exact for algorithms, but only an
approximation of the spec's own chance distribution (more seeds, a closer one). A spec that never draws is
deterministic and has no chance node.

Players move in turns (`current_player` of the spec); returns are the sums of each player's rewards so far
(reward model REWARDS); an illegal action is refused as OpenSpiel requires. Observations: the observation tensor is
the player's observation (`env.observe`) flattened to float32, the observation string its values; the information
state string (perfect recall) is the player's observation strings after every move, with the moves it made.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import Any

import numpy as np
import pyspiel

from envc import rng
from envc.gymnasium import build, episode_keys, load_spec
from envc.ir import SpecIR


def _draws(spec: SpecIR) -> bool:
    """Does the spec draw randomness anywhere (reset, actions, rules)?"""
    from envc.lower_rust.emit import Analysis

    an = Analysis(spec)
    return an.draws(spec.reset) or any(an.draws(a.effect) for a in spec.actions) or an.draws(spec.rules)


_ENVS: dict[str, Any] = {}  # registered short name -> backend env, for unpickling states


class _Frozen:
    """A backend state: immutable, so an OpenSpiel clone shares it; pickled as its `state_to_dict` arrays."""

    def __init__(self, state: Any, game: str):
        self.state = state
        self.game = game

    def __deepcopy__(self, memo: dict[int, Any]) -> _Frozen:
        return self

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any], str]]:
        return (_thaw, (_ENVS[self.game].state_to_dict(self.state), self.game))


def _thaw(d: dict[str, Any], game: str) -> _Frozen:
    return _Frozen(_ENVS[game].state_from_dict(d), game)


class _Observer:
    """OpenSpiel's PyObserver: the player's observation (perfect_recall=False) or its information state."""

    def __init__(self, size: int, perfect_recall: bool):
        self.perfect_recall = perfect_recall
        self.tensor: np.ndarray | None = None if perfect_recall else np.zeros(size, np.float32)
        self.dict: dict[str, np.ndarray] = {} if perfect_recall else {"observation": self.tensor}  # type: ignore[dict-item]

    def set_from(self, state: EnvcState, player: int) -> None:
        """Write `player`'s observation of `state` into `tensor`."""
        if self.tensor is not None:
            self.tensor[:] = state.observation_vector(player)

    def string_from(self, state: EnvcState, player: int) -> str:
        """`player`'s observation, or its information state, as a string."""
        return state.information_state_text(player) if self.perfect_recall else state.observation_text(player)


class EnvcGame(pyspiel.Game):  # type: ignore[misc]
    """An OpenSpiel game over an envc spec (subclassed once per registered spec)."""

    spec: SpecIR
    env: Any
    short_name: str
    action_names: list[str]
    stochastic: bool
    obs_size: int

    def __init__(self, params: Mapping[str, Any] | None = None):
        params = dict(params or {})
        super().__init__(self.game_type, self._info(int(params.get("num_seeds", self.default_seeds))), params)
        self.num_seeds = int(params.get("num_seeds", self.default_seeds))

    game_type: Any
    default_seeds: int
    limits: tuple[float, float, int]

    def _info(self, num_seeds: int) -> Any:
        lo, hi, length = self.limits
        return pyspiel.GameInfo(
            num_distinct_actions=self.spec.num_actions,
            max_chance_outcomes=num_seeds if self.stochastic else 0,
            num_players=self.spec.players,
            min_utility=lo,
            max_utility=hi,
            utility_sum=None,
            max_game_length=length,
        )

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Pickled as its name and parameters (the spec must be registered where it is unpickled)."""
        return (pyspiel.load_game, (str(self),))

    def new_initial_state(self) -> EnvcState:
        """The root: a chance node over seeds, or (a spec that never draws) the episode of seed 0."""
        return EnvcState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Mapping[str, Any] | None = None) -> _Observer:
        """The observer of the player's observation, or (perfect recall) of its information state."""
        if params:
            raise ValueError(f"observation parameters are not supported, got {params}")
        return _Observer(self.obs_size, bool(iig_obs_type is not None and iig_obs_type.perfect_recall))


class EnvcState(pyspiel.State):  # type: ignore[misc]
    """A state of an `EnvcGame`: the backend state, the episode's step-key stream and the moves so far."""

    def __init__(self, game: EnvcGame):
        super().__init__(game)
        self._g = game
        self._cur: _Frozen | None = None
        self._stream: rng.Key = (0, 0)
        self._returns = np.zeros(game.spec.players, np.float64)
        self._last = np.zeros(game.spec.players, np.float64)
        self._trail: list[tuple[_Frozen, int, int]] = []  # (state before, mover, action)
        if not game.stochastic:
            self._start(0)

    def _start(self, seed: int) -> None:
        reset_key, self._stream = episode_keys(seed, 0)
        self._cur = _Frozen(self._g.env.init(reset_key), self._g.short_name)

    @property
    def _s(self) -> Any:
        assert self._cur is not None, "a chance node has no backend state yet"
        return self._cur.state

    def current_player(self) -> int:
        """The player to move, CHANCE at the root of a stochastic spec, TERMINAL at the end."""
        if self._cur is None:
            return int(pyspiel.PlayerId.CHANCE)
        if self.is_terminal():
            return int(pyspiel.PlayerId.TERMINAL)
        return int(self._s.current_player)

    def _legal_actions(self, player: int) -> list[int]:
        if self._cur is None or self.is_terminal() or player != int(self._s.current_player):
            return []
        return [int(a) for a in np.flatnonzero(np.asarray(self._s.legal_action_mask))]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The seeds, equally likely."""
        n = self._g.num_seeds
        return [(i, 1.0 / n) for i in range(n)]

    def _apply_action(self, action: int) -> None:
        if self._cur is None:
            self._start(int(action))
            return
        mover = int(self._s.current_player)
        self._trail.append((self._cur, mover, int(action)))
        key = rng.fold_in(self._stream, len(self._trail))
        self._cur = _Frozen(self._g.env.step(self._s, int(action), key), self._g.short_name)
        self._last = np.asarray(self._s.rewards, np.float64)
        self._returns = self._returns + self._last

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"seed:{action}"
        return self._g.action_names[action] if action < len(self._g.action_names) else str(action)

    def is_terminal(self) -> bool:
        """Has the spec terminated or truncated?"""
        return self._cur is not None and bool(self._s.terminated or self._s.truncated)

    def returns(self) -> list[float]:
        """Each player's rewards summed over the moves so far."""
        return [float(x) for x in self._returns]

    def rewards(self) -> list[float]:
        """Each player's rewards of the last move."""
        return [float(x) for x in self._last]

    def observation_vector(self, player: int) -> np.ndarray:
        """`player`'s observation, flattened to float32 (zeros at a chance node)."""
        if self._cur is None:
            return np.zeros(self._g.obs_size, np.float32)
        return _flat(self._g.env.observe(self._s, player))

    def observation_text(self, player: int, cur: _Frozen | None = None) -> str:
        """`player`'s observation as a string of its values."""
        cur = cur or self._cur
        if cur is None:
            return "chance"
        return " ".join(
            str(int(v)) if float(v).is_integer() else f"{v:g}" for v in _flat(self._g.env.observe(cur.state, player))
        )

    def information_state_text(self, player: int) -> str:
        """`player`'s observations after every move, with the moves it made (perfect recall), after its id (OpenSpiel
        keys policies by this string alone)."""
        parts = []
        for before, mover, action in self._trail:
            parts.append(self.observation_text(player, before))
            if mover == player:
                parts.append(f"played {self._action_to_string(player, action)}")
        parts.append(self.observation_text(player))
        return f"p{player}: " + " | ".join(parts)

    def __str__(self) -> str:
        if self._cur is None:
            return "chance: seed"
        d = self._g.env.state_to_dict(self._s)
        return "; ".join(f"{k}={np.asarray(v).tolist()}" for k, v in d.items() if "." not in k and k != "observation")


def _flat(obs: Any) -> np.ndarray:
    if isinstance(obs, dict):
        return np.concatenate([np.asarray(obs[k], np.float32).reshape(-1) for k in sorted(obs)])
    return np.asarray(obs, np.float32).reshape(-1)


def _action_names(spec: SpecIR) -> list[str]:
    """Action names by id: the kind and its parameter values (row-major), e.g. `place(row=1, col=2)`."""
    names: list[str] = []
    for kind in spec.actions:
        sizes = [p.stop - p.start for p in kind.params]
        for local in range(kind.size):
            idx = np.unravel_index(local, sizes) if sizes else ()
            args = ", ".join(f"{p.name}={p.start + int(i)}" for p, i in zip(kind.params, idx, strict=True))
            names.append(f"{kind.name}({args})" if args else kind.name)
    return names


def register(
    spec: SpecIR | str | PathLike[str],
    backend: str = "rust",
    name: str | None = None,
    params: Mapping[str, Any] | None = None,
    num_seeds: int = 64,
    utility: tuple[float, float] = (-1.0, 1.0),
    max_game_length: int = 1000,
) -> str:
    """Register `spec` with OpenSpiel; returns the short name (default `envc_<spec name>`) for `pyspiel.load_game`.

    `utility` (min, max of a player's return) and `max_game_length` are what OpenSpiel's GameInfo declares: envc
    does not derive them from a spec, so pass the true ones for algorithms that read them.
    """
    ir_ = load_spec(spec)
    if ir_.box is not None:
        raise ValueError(f"spec '{ir_.name}' has continuous actions: OpenSpiel games take discrete actions")
    short = name or f"envc_{ir_.name}"
    stochastic = _draws(ir_)
    game_type = pyspiel.GameType(
        short_name=short,
        long_name=f"envc {ir_.name}",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=(
            pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC if stochastic else pyspiel.GameType.ChanceMode.DETERMINISTIC
        ),
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.GENERAL_SUM,
        reward_model=pyspiel.GameType.RewardModel.REWARDS,
        max_num_players=ir_.players,
        min_num_players=ir_.players,
        provides_information_state_string=True,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification={"num_seeds": num_seeds} if stochastic else {},
    )
    env = build(spec, backend, params)
    obs_size = int(_flat(env.init((0, 0)).observation).size)
    game = type(
        f"EnvcGame_{ir_.name}",
        (EnvcGame,),
        {
            "spec": ir_,
            "env": env,
            "short_name": short,
            "stochastic": stochastic,
            "obs_size": obs_size,
            "game_type": game_type,
            "default_seeds": num_seeds,
            "limits": (float(utility[0]), float(utility[1]), int(max_game_length)),
            "action_names": _action_names(ir_),
        },
    )
    _ENVS[short] = env
    pyspiel.register_game(game_type, game)
    return short


__all__ = ["EnvcGame", "EnvcState", "register"]
