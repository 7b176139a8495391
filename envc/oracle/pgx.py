"""The `pgx:ENV_ID` adapter: a pgx game seen through a spec's field mapping.

Each mapped spec field names a place in pgx's `State` (the spec's `oracle: fields:`):

    PATH [INDEX] [+ K | - K]

PATH is an attribute path (`current_player`, `_board`, `_x.board`); INDEX an integer or a slice (`[2]`, `[0:2]`);
`+ K` an encoding shift: the spec's value is pgx's plus K (pgx keeps an empty tic-tac-toe cell as -1 and the two
colours as 0 and 1, the spec's `Mark` enum has them as 0, 1, 2: `board: "_x.board + 1"`). Writing subtracts K.
Values are reshaped row-major (pgx keeps the board as 9 cells, the spec as [3, 3]) and converted between dtypes
(pgx's int32 to the spec's i8; its f32 rewards to an integer field, refused if not integral), each conversion
listed in `Oracle.conversions`. `current_player` and `step_count` follow pgx's `current_player` and `_step_count`
unless the mapping names them. A few games need code (`envc/oracle/pgx_games.py`): deriving the legal mask again
after an injection, and values pgx never stores (the undealt cards: `undealt`, `undealt.count`).

pgx's `init`, `step`, `observe` are jitted once per game and process (un-jitted pgx takes ~0.2 s a call). `reset(seed)`
is pgx's `init(jax.random.PRNGKey(seed))`; the steps draw from that key's stream (2048's tile spawn).

Conventions: on an illegal action pgx runs the move's code before it ends the game with the penalty; envc leaves
the state as it was. The adapter reports pgx's rewards, `terminated` and mask for such a step and keeps the state
from before it (step count aside), so a spec is compared on what pgx defines, not on a by-product.
"""

from __future__ import annotations

import dataclasses
import math
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from envc import ir
from envc.ir import NP_DTYPE
from envc.oracle import Conversion, Oracle, OracleError, Transition
from envc.oracle.pgx_games import GAMES, Glue, Virtual

_PATH = re.compile(
    r"\s*(?P<attrs>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*"
    r"(?:\[\s*(?:(?P<at>-?[0-9]+)|(?P<start>-?[0-9]+)?\s*:\s*(?P<stop>-?[0-9]+)?)\s*\])?\s*"
    r"(?:(?P<sign>[+-])\s*(?P<shift>[0-9]+))?\s*"
)
DEFAULTS = {"current_player": "current_player", "step_count": "_step_count"}


@dataclass(frozen=True)
class PgxPath:
    """A parsed `PATH [INDEX] [+ K]`."""

    text: str
    attrs: tuple[str, ...]
    index: int | slice | None = None
    shift: int = 0

    @staticmethod
    def parse(text: str) -> PgxPath:
        m = _PATH.fullmatch(text)
        if m is None:
            raise OracleError(
                f"oracle path '{text}' is not `ATTR.ATTR[INDEX] + K` (an attribute path, an optional [int] or "
                "[start:stop], an optional integer shift)"
            )
        index: int | slice | None = None
        if m["at"] is not None:
            index = int(m["at"])
        elif "[" in text:
            index = slice(_int(m["start"]), _int(m["stop"]))
        shift = int(m["shift"]) * (-1 if m["sign"] == "-" else 1) if m["shift"] else 0
        return PgxPath(text.strip(), tuple(m["attrs"].split(".")), index, shift)

    @property
    def name(self) -> str:
        """The attribute path alone."""
        return ".".join(self.attrs)

    def read(self, state: Any) -> np.ndarray:
        """pgx's value (its dtype, before the shift) in `state` (a numpy copy of the State)."""
        obj = state
        for a in self.attrs:
            obj = getattr(obj, a)
        arr = np.asarray(obj)
        return arr if self.index is None else np.asarray(arr[self.index])

    def write(self, state: Any, value: np.ndarray) -> Any:
        """`state` (a jax State) with pgx's value here replaced by `value` (pgx's dtype, before the shift)."""
        import jax.numpy as jnp

        def put(obj: Any, attrs: tuple[str, ...]) -> Any:
            old = getattr(obj, attrs[0])
            if len(attrs) > 1:
                new = put(old, attrs[1:])
            elif self.index is None:
                new = jnp.asarray(value, old.dtype).reshape(old.shape)
            else:
                new = old.at[self.index].set(jnp.asarray(value, old.dtype).reshape(old[self.index].shape))
            return _replace(obj, attrs[0], new)

        return put(state, self.attrs)


def _int(s: str | None) -> int | None:
    return None if s is None else int(s)


def _replace(obj: Any, name: str, value: Any) -> Any:
    """A copy of the pgx State (a dataclass with `replace`) or of a NamedTuple of game internals, one field changed."""
    if hasattr(obj, "_fields"):
        return obj._replace(**{name: value})
    return obj.replace(**{name: value})


@dataclass(frozen=True)
class _Slot:
    """One mapped spec field: where pgx keeps it and how its values convert."""

    name: str
    path: PgxPath
    shape: tuple[int, ...]
    spec_dtype: np.dtype[Any]
    orig_dtype: np.dtype[Any]
    virtual: Virtual | None = None

    def raw(self, state: Any) -> np.ndarray:
        """pgx's values, shifted and in the spec's shape, in pgx's dtype."""
        if self.virtual is not None:
            v = self.virtual.read(state, math.prod(self.shape))
        else:
            v = self.path.read(state)
        v = np.asarray(v)
        if self.path.shift:
            v = v + np.asarray(self.path.shift, v.dtype)
        return v.reshape(self.shape)

    def convert(self, v: np.ndarray) -> np.ndarray:
        """`raw` values in the spec's dtype."""
        if v.dtype.kind == "f" and self.spec_dtype.kind in "iu" and not np.all(np.isfinite(v) & (v == np.round(v))):
            raise OracleError(f"oracle field '{self.name}' <- pgx {self.path.text}: {v.tolist()} is not an integer")
        return v.astype(self.spec_dtype)


@dataclass(frozen=True)
class _Compiled:
    """One pgx game with its functions jitted (shared by every oracle of the game in this process)."""

    env: Any
    glue: Glue | None
    init: Callable[[Any], Any]
    step: Callable[[Any, Any, Any], tuple[Any, Any]]
    observe: Callable[[Any, Any], Any]
    refresh: Callable[[Any], Any] | None


@cache
def _compiled(env_id: str) -> _Compiled:
    try:
        import jax
        import jax.numpy as jnp
        import pgx
    except ImportError as e:
        raise OracleError(f"pgx targets need pgx and jax installed ({e})") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = pgx.make(env_id)
    except Exception as e:  # pgx raises ValueError listing every id: keep one line
        ids = getattr(pgx, "available_envs", lambda: ())()
        raise OracleError(f"pgx has no game '{env_id}' ({type(e).__name__}); pgx games: {', '.join(ids)}") from None
    glue = GAMES.get(env_id)

    def finish(state: Any) -> Any:
        """pgx's conventions after `refresh`: an all-true mask at a terminal state, the mover's observation."""
        mask = jnp.where(state.terminated, True, state.legal_action_mask)
        state = state.replace(legal_action_mask=mask)
        return state.replace(observation=env.observe(state))

    def step(state: Any, action: Any, key: Any) -> tuple[Any, Any]:
        key, sub = jax.random.split(key)
        after = env.step(state, action, sub)
        # an illegal action: pgx's outcome (penalty, terminated, mask) on the state from before the move
        illegal = ~state.legal_action_mask[action] & ~(state.terminated | state.truncated)
        kept = state.replace(
            _step_count=after._step_count,
            rewards=after.rewards,
            terminated=after.terminated,
            legal_action_mask=after.legal_action_mask,
        )
        kept = kept.replace(observation=env.observe(kept))
        out = jax.tree_util.tree_map(lambda k, a: jnp.where(illegal, k, a), kept, after)
        return out, key

    def observe(state: Any, player: Any) -> Any:
        with warnings.catch_warnings():  # pgx 2.x deprecates, but honours, observe(state, player_id)
            warnings.simplefilter("ignore", DeprecationWarning)
            return env.observe(state, player)

    refresh = None
    if glue is not None:
        g = glue
        refresh = jax.jit(lambda s: finish(g.refresh(env, s)))
    return _Compiled(env, glue, jax.jit(env.init), jax.jit(step), jax.jit(observe), refresh)


@dataclass
class PgxOracle(Oracle):
    """A pgx game driven one step at a time, its State read and written through the spec's field mapping."""

    env_id: str = ""
    slots: tuple[_Slot, ...] = ()
    num_actions: int = 0
    compiled: _Compiled | None = field(default=None, repr=False)
    state: Any = field(default=None, repr=False)  # the jax State
    key: Any = field(default=None, repr=False)  # the stream the steps draw from
    _host: Any = field(default=None, repr=False)  # a numpy copy of `state`, made on demand
    # the virtual fields' values (raw): pgx does not keep them, so the adapter does; derived from pgx's state at
    # reset (and at an injection that does not give them), overwritten by an injection, left alone by a step
    _held: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def _c(self) -> _Compiled:
        assert self.compiled is not None
        return self.compiled

    def _numpy(self) -> Any:
        if self._host is None:
            import jax

            self._host = jax.device_get(self.state)
        return self._host

    def _set(self, state: Any) -> None:
        self.state, self._host = state, None

    def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except OracleError:
            raise
        except Exception as e:  # the original's own failure, as one line
            first = str(e).splitlines()[0] if str(e) else ""
            raise OracleError(f"pgx {self.env_id} raised in {what}: {type(e).__name__}: {first}") from None

    # ---- the protocol ------------------------------------------------------------------------------
    def reset(self, seed: int) -> Transition:
        import jax

        key = jax.random.PRNGKey(seed)
        self._set(self._call("init", self._c.init, key))
        self._derive(self.slots)
        self.key = jax.random.fold_in(key, 1 << 20)  # the steps' stream, apart from the keys init splits off
        return self.status()

    def status(self) -> Transition:
        s = self._numpy()
        return Transition(
            rewards=np.asarray(s.rewards, np.float32),
            terminated=bool(s.terminated),
            truncated=bool(s.truncated),
            current_player=int(s.current_player),
            legal_action_mask=np.asarray(s.legal_action_mask, np.bool_),
            observation=np.asarray(s.observation),
        )

    def step(self, action: Any) -> Transition:
        a = int(action)
        if not 0 <= a < self.num_actions:
            raise OracleError(f"pgx {self.env_id} has actions 0..{self.num_actions - 1}, not {a}")
        import jax.numpy as jnp

        state, self.key = self._call("step", self._c.step, self.state, jnp.int32(a), self.key)
        self._set(state)
        return self.status()

    def observe(self, player: int) -> np.ndarray:
        """The observation of any player in the current state (pgx's `observe(state, player_id)`)."""
        import jax.numpy as jnp

        return np.asarray(self._call("observe", self._c.observe, self.state, jnp.int32(player)))

    def _derive(self, slots: Iterable[_Slot]) -> None:
        s = self._numpy()
        for slot in slots:
            if slot.virtual is not None:
                self._held[slot.name] = slot.raw(s)

    def raw_state(self) -> dict[str, np.ndarray]:
        s = self._numpy()
        return {slot.name: self._held[slot.name] if slot.virtual else slot.raw(s) for slot in self.slots}

    def get_state(self) -> dict[str, np.ndarray]:
        raw = self.raw_state()
        return {slot.name: slot.convert(raw[slot.name]) for slot in self.slots}

    def set_state(self, values: Mapping[str, np.ndarray]) -> None:
        if self._c.refresh is None:
            raise OracleError(
                f"pgx {self.env_id}: the adapter does not know how this game derives its legal action mask after "
                "a state is injected; add the game to envc/oracle/pgx_games.py"
            )
        import jax.numpy as jnp

        # as `state_from_dict`: no rewards, not finished (unless a mapped field says so)
        s = self.state.replace(rewards=jnp.zeros_like(self.state.rewards), terminated=jnp.bool_(False),
                               truncated=jnp.bool_(False))  # fmt: skip
        held: dict[str, np.ndarray] = {}
        for slot in self.slots:
            if slot.name not in values:
                continue
            v = np.asarray(values[slot.name])
            if v.size != math.prod(slot.shape):
                raise OracleError(f"field '{slot.name}': {v.size} values, the spec's field has {list(slot.shape)}")
            if slot.virtual is not None:
                held[slot.name] = v.reshape(slot.shape).astype(slot.orig_dtype)
                continue
            if slot.path.shift:
                v = v.astype(np.int64) - slot.path.shift
            s = slot.path.write(s, v.astype(slot.orig_dtype))
        self._set(self._call("set_state", self._c.refresh, s))
        self._derive(slot for slot in self.slots if slot.name not in held)
        self._held.update(held)


def make_pgx_oracle(env_id: str, spec: ir.SpecIR, decl: ir.OracleInfo | None) -> PgxOracle:
    """`pgx:ENV_ID`: `pgx.make(env_id)` seen through the spec's `oracle: fields:` (docs/oracle.md)."""
    if spec.box is not None:
        raise OracleError(f"pgx games have discrete actions; spec '{spec.name}' has a continuous action")
    c = _compiled(env_id)
    env = c.env
    if env.num_actions != spec.num_actions or env.num_players != spec.players:
        raise OracleError(
            f"pgx {env_id} has {env.num_actions} actions and {env.num_players} player(s), spec '{spec.name}' "
            f"{spec.num_actions} and {spec.players}"
        )
    import jax

    state = jax.device_get(c.init(jax.random.PRNGKey(0)))
    mapping = dict(DEFAULTS)
    mapping.update(dict(decl.fields) if decl is not None else {})
    fields = {f.name: f for f in spec.fields}
    virtual = c.glue.virtual if c.glue is not None else {}
    slots = [_slot(env_id, spec, fields, virtual, state, name, text) for name, text in mapping.items()]
    chance = tuple(decl.chance) if decl is not None else ()
    oracle = PgxOracle(
        fields=tuple(s.name for s in slots),
        chance_fields=chance,
        conversions=tuple(Conversion(s.name, s.path.text, str(s.orig_dtype), str(s.spec_dtype)) for s in slots),
        num_players=int(env.num_players),
        env_id=env_id,
        slots=tuple(slots),
        num_actions=int(env.num_actions),
        compiled=c,
    )
    oracle.reset(0)
    return oracle


def _slot(
    env_id: str,
    spec: ir.SpecIR,
    fields: Mapping[str, ir.FieldInfo],
    virtual: Mapping[str, Virtual],
    state: Any,
    name: str,
    text: str,
) -> _Slot:
    """Check one mapping against pgx's initial State: the path reads, sizes and kinds agree."""
    if name not in fields:
        raise OracleError(f"oracle field '{name}' is not a state field of spec '{spec.name}'")
    f = fields[name]
    path = PgxPath.parse(text)
    spec_dtype = np.dtype(NP_DTYPE[f.ty.dtype])
    size = math.prod(f.ty.shape)
    if path.name in virtual and path.index is None:
        v = virtual[path.name]
        return _Slot(name, path, f.ty.shape, spec_dtype, np.asarray(v.read(state, size)).dtype, v)
    try:
        raw = path.read(state)
    except (AttributeError, IndexError, TypeError) as e:
        known = ", ".join(f.name for f in dataclasses.fields(state))
        extra = f"; derived: {', '.join(virtual)}" if virtual else ""
        raise OracleError(
            f"oracle field '{name}' -> {text}: pgx {env_id}'s State has no such value ({e}); it has {known}{extra}"
        ) from None
    if raw.size != size:
        raise OracleError(
            f"oracle field '{name}' -> {text}: pgx keeps {raw.size} value(s) of shape {list(raw.shape)} there, the "
            f"spec's field has shape {list(f.ty.shape)}"
        )
    if (spec_dtype.kind == "b") != (raw.dtype.kind == "b") or (spec_dtype.kind == "f" and raw.dtype.kind != "f"):
        raise OracleError(f"oracle field '{name}' -> {text}: pgx's {raw.dtype} cannot become the spec's {f.ty.show()}")
    if path.shift and raw.dtype.kind not in "iu":
        raise OracleError(f"oracle field '{name}' -> {text}: a shift needs an integer value, pgx's is {raw.dtype}")
    return _Slot(name, path, f.ty.shape, spec_dtype, raw.dtype)
