"""The `gymnasium:ENV_ID` adapter: a Gymnasium environment whose state can be read and written by attribute path.

Each mapped spec field names where the original keeps it, as a path on `env.unwrapped`: attributes, integer
indices and string keys (`state[2]`, `_board`, `data["pos"]`). Reading converts to the spec's dtype (float64 ->
f32 rounds: a lossy conversion, reported); writing converts back and keeps the container's kind (a tuple stays a
tuple). `step_count` follows the TimeLimit wrapper's counter unless the mapping names it. Classic control
(CartPole-v1, MountainCar-v0, MountainCarContinuous-v0, Pendulum-v1, Acrobot-v1) keeps its state in `state`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from envc import ir
from envc.ir import NP_DTYPE
from envc.oracle import Conversion, Oracle, OracleError, Transition

Step = tuple[str, Any]  # ("attr", name) | ("item", int or str)
_STEP = re.compile(r"""\.?([A-Za-z_][A-Za-z0-9_]*)|\[\s*(-?[0-9]+)\s*\]|\[\s*(["'])(.*?)\3\s*\]""")


def parse_path(text: str) -> tuple[Step, ...]:
    """`state[2]`, `_x.board`, `data["pos"]` -> steps; OracleError for anything else."""
    steps: list[Step] = []
    pos = 0
    while pos < len(text):
        m = _STEP.match(text, pos)
        if m is None or (m.group(1) is not None and (pos > 0) != text.startswith(".", pos)):
            raise OracleError(f"oracle path '{text}' is not attribute names, [int] indices and [\"key\"] keys")
        if m.group(1):
            steps.append(("attr", m.group(1)))
        elif m.group(2) is not None:
            steps.append(("item", int(m.group(2))))
        else:
            steps.append(("item", m.group(4)))
        pos = m.end()
    if not steps or steps[0][0] != "attr":
        raise OracleError(f"oracle path '{text}' must start with an attribute name")
    return tuple(steps)


def _get(obj: Any, step: Step) -> Any:
    kind, k = step
    return getattr(obj, k) if kind == "attr" else obj[k]


def read_path(root: Any, steps: Sequence[Step]) -> Any:
    """The value at `steps` below `root`."""
    obj = root
    for s in steps:
        obj = _get(obj, s)
    return obj


def _set(obj: Any, step: Step, value: Any) -> Any:
    """`obj` with `step` set to `value`: changed in place where it is mutable, else a changed copy."""
    kind, k = step
    if kind == "attr":
        setattr(obj, k, value)
        return obj
    if isinstance(obj, tuple):
        items = list(obj)
        items[k] = value
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)  # a namedtuple keeps its type
    if isinstance(obj, np.ndarray):  # a copy: the original may have handed this array out (as an observation)
        out = obj.copy()
        out[k] = value
        return out
    if hasattr(obj, "at") and hasattr(obj, "dtype"):  # a jax array: immutable, updated functionally
        return obj.at[k].set(value)
    obj[k] = value
    return obj


def write_path(root: Any, steps: Sequence[Step], value: Any) -> None:
    """Store `value` at `steps` below `root`, rebuilding immutable containers on the way."""

    def put(obj: Any, rest: Sequence[Step]) -> Any:
        child = value if len(rest) == 1 else put(_get(obj, rest[0]), rest[1:])
        return _set(obj, rest[0], child)

    put(root, steps)


@dataclass
class _Slot:
    """One mapped field: where it lives and how its values convert."""

    name: str
    source: str
    steps: tuple[Step, ...]
    shape: tuple[int, ...]
    spec_dtype: np.dtype[Any]
    orig_dtype: np.dtype[Any]
    python_scalar: type | None  # the original keeps a Python float/int/bool there, not a numpy value


def _kind_ok(orig: np.dtype[Any], spec: np.dtype[Any]) -> bool:
    if spec.kind == "f":
        return orig.kind == "f"
    if spec.kind == "b":
        return orig.kind == "b"
    return orig.kind in "iub"


def _slot(root: Any, name: str, source: str, spec_field: ir.FieldInfo) -> _Slot:
    steps = parse_path(source)
    try:
        raw = read_path(root, steps)
    except Exception as e:  # any failure to read is a mapping error of the user's
        raise OracleError(f"oracle field '{name}' -> {source}: cannot read it on the original ({e!r})") from None
    arr = np.asarray(raw)
    want = spec_field.ty.shape
    if arr.shape != want:
        raise OracleError(
            f"oracle field '{name}' -> {source}: the original's value has shape {list(arr.shape)}, "
            f"the spec's field {list(want)}"
        )
    spec_dtype = np.dtype(NP_DTYPE[spec_field.ty.dtype])
    if not _kind_ok(arr.dtype, spec_dtype):
        raise OracleError(
            f"oracle field '{name}' -> {source}: the original's dtype {arr.dtype} cannot become the spec's "
            f"{spec_field.ty.show()}"
        )
    scalar = type(raw) if isinstance(raw, (bool, int, float)) else None
    return _Slot(name, source, steps, want, spec_dtype, arr.dtype, scalar)


def _time_limit(env: Any) -> Any:
    """The TimeLimit wrapper around `env`, if any."""
    from gymnasium.wrappers import TimeLimit

    w = env
    while w is not None:
        if isinstance(w, TimeLimit):
            return w
        w = getattr(w, "env", None)
    return None


@dataclass
class GymnasiumOracle(Oracle):
    """A Gymnasium env (`gym.make(...)` or any `gymnasium.Env`) seen through a spec's field mapping."""

    env: Any = None
    spec: ir.SpecIR | None = None
    slots: tuple[_Slot, ...] = ()
    time_limit: Any = None
    last: Transition | None = field(default=None, repr=False)

    @classmethod
    def wrap(cls, env: Any, spec: ir.SpecIR, mapping: Mapping[str, str], chance: Sequence[str] = ()) -> GymnasiumOracle:
        """Wrap `env` (reset once here, so that its state exists) with `mapping`: spec field -> path on
        `env.unwrapped`."""
        if not mapping:
            raise OracleError(
                f"spec '{spec.name}' maps no field to the original: add `oracle: {{fields: {{FIELD: PATH}}}}` "
                "(docs/oracle.md)"
            )
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                env.reset(seed=0)
        except Exception as e:  # the original's own failure
            raise OracleError(f"the original raised on reset: {type(e).__name__}: {e}") from None
        root = env.unwrapped
        fields = {f.name: f for f in spec.fields}
        slots = []
        for name, source in mapping.items():
            if name not in fields:
                raise OracleError(f"oracle field '{name}' is not a state field of spec '{spec.name}'")
            slots.append(_slot(root, name, source, fields[name]))
        tl = _time_limit(env)
        if tl is not None and "step_count" not in mapping:
            slots.append(_Slot("step_count", "TimeLimit._elapsed_steps", (), (), np.dtype(np.int32),
                               np.dtype(np.int64), int))  # fmt: skip
        _check_spaces(env, spec)
        conversions = tuple(Conversion(s.name, s.source, str(s.orig_dtype), str(s.spec_dtype)) for s in slots)
        return cls(
            fields=tuple(s.name for s in slots),
            chance_fields=tuple(chance),
            conversions=conversions,
            num_players=1,
            env=env,
            spec=spec,
            slots=tuple(slots),
            time_limit=tl,
        )

    # ---- state -----------------------------------------------------------------------------------
    def _read(self, s: _Slot) -> Any:
        if not s.steps:
            return self.time_limit._elapsed_steps or 0
        return read_path(self.env.unwrapped, s.steps)

    def raw_state(self) -> dict[str, np.ndarray]:
        return {s.name: np.asarray(self._read(s), s.orig_dtype) for s in self.slots}

    def get_state(self) -> dict[str, np.ndarray]:
        return {s.name: np.asarray(self._read(s)).astype(s.spec_dtype) for s in self.slots}

    def set_state(self, values: Mapping[str, np.ndarray]) -> None:
        for s in self.slots:
            if s.name not in values:
                continue
            v = np.asarray(values[s.name])
            if v.shape != s.shape:
                raise OracleError(f"field '{s.name}': value of shape {list(v.shape)}, expected {list(s.shape)}")
            if not s.steps:
                self.time_limit._elapsed_steps = int(v)
                continue
            out: Any = v.astype(s.orig_dtype)
            if s.python_scalar is not None:
                out = s.python_scalar(out.item())
            elif out.shape == ():
                out = out[()]
            write_path(self.env.unwrapped, s.steps, out)
        root = self.env.unwrapped
        if hasattr(root, "steps_beyond_terminated"):  # CartPole's guard against stepping a finished episode
            root.steps_beyond_terminated = None
        self.last = None

    def thresholds(self) -> dict[str, list[float]]:
        limit = getattr(self.time_limit, "_max_episode_steps", None)
        return {"step_count": [float(limit)]} if limit is not None and "step_count" in self.fields else {}

    # ---- transitions -------------------------------------------------------------------------------
    def _transition(self, obs: Any, reward: float, terminated: bool, truncated: bool) -> Transition:
        return Transition(
            rewards=np.array([reward], np.float32),
            terminated=bool(terminated),
            truncated=bool(truncated),
            observation=None if obs is None else np.array(obs, copy=True),
        )

    def reset(self, seed: int) -> Transition:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obs, _ = self.env.reset(seed=seed)
        self.last = self._transition(obs, 0.0, False, False)
        return self.last

    def status(self) -> Transition:
        if self.last is not None:
            return self.last
        root = self.env.unwrapped
        get = getattr(root, "_get_obs", None) or getattr(root, "_get_ob", None)
        obs = get() if callable(get) else None
        return self._transition(obs, 0.0, False, False)

    def step(self, action: Any) -> Transition:
        a = int(action) if self.spec is not None and self.spec.box is None else np.asarray(action, np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obs, reward, terminated, truncated, _ = self.env.step(a)
        self.last = self._transition(obs, float(reward), terminated, truncated)
        return self.last

    def close(self) -> None:
        self.env.close()


def _check_spaces(env: Any, spec: ir.SpecIR) -> None:
    """The original's action and observation spaces have the spec's sizes (OracleError if not)."""
    from gymnasium import spaces

    act = env.action_space
    if spec.box is None:
        if not isinstance(act, spaces.Discrete):
            raise OracleError(f"the original's action space is {act}, the spec's is discrete ({spec.num_actions})")
        if int(act.n) != spec.num_actions:
            raise OracleError(f"the original has {int(act.n)} actions, the spec {spec.num_actions}")
    elif not isinstance(act, spaces.Box) or tuple(act.shape) != tuple(spec.box.shape):
        raise OracleError(f"the original's action space is {act}, the spec's a box of shape {list(spec.box.shape)}")


def make_gymnasium_oracle(env_id: str, spec: ir.SpecIR, decl: ir.OracleInfo | None) -> GymnasiumOracle:
    """`gymnasium:ENV_ID`: `gym.make(env_id)` with the spec's `oracle:` mapping."""
    try:
        import gymnasium as gym
    except ImportError as e:
        raise OracleError(f"gymnasium is not installed ({e})") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = gym.make(env_id)
    except Exception as e:  # unknown ids, missing extras, the env's own constructor
        first = str(e).splitlines()[0] if str(e) else ""
        raise OracleError(f"gymnasium cannot make '{env_id}': {type(e).__name__}: {first}") from None
    mapping = dict(decl.fields) if decl is not None else {}
    chance = decl.chance if decl is not None else ()
    return GymnasiumOracle.wrap(env, spec, mapping, chance)
