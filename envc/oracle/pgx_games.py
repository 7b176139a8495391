"""What pgx keeps implicitly, per game: the code a declarative field mapping cannot express.

A spec's `oracle:` section maps each field to a place in pgx's `State` (docs/oracle.md; `envc/oracle/pgx.py` reads
the paths, including the `+ 1` of an encoding shift). Two things are not places in the State, so they live here:

* `refresh`: pgx stores the legal action mask in the State and derives it only inside its own `step`; after a
  state is injected (`set_state`) it must be derived again from the game's internals. Where pgx has a function for
  it, it is called (tic-tac-toe, connect four, 2048: the original's own logic); for the poker games pgx computes the
  mask inline in `_step`, and the few lines are transcribed here, with the pgx lines cited. `terminated` is not
  derived: as `state_from_dict` does for a spec, an injected state is not finished unless a mapped field says so
  (`finished: terminated`), so both sides step it alike (a finished board with no legal move: an illegal action).
* virtual fields: values pgx never stores but a spec does. The poker specs keep the undealt cards in a `deck`
  zone; pgx keeps only the dealt `_cards`. The paths `undealt` (the cards not dealt, ascending, padded with zeros to
  the spec field's size as a zone's free slots are) and `undealt.count` name them. The adapter holds their values:
  derived from pgx's cards at reset (and at an injection that does not give them), overwritten by an injection,
  left alone by a step, as pgx never deals again. So a spec that changes its deck during a hand is told so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Virtual:
    """A read-only value derived from pgx's state (numpy): `read(state, size)` -> array of `size` values."""

    doc: str
    read: Callable[[Any, int], np.ndarray]


@dataclass(frozen=True)
class Glue:
    """One pgx game's implicit parts."""

    # (pgx env, jax State) -> the State with `legal_action_mask` derived from its internals, traced once under
    # jit; the adapter then applies pgx's own conventions (an all-true mask at a terminal state, the observation of
    # the player to move)
    refresh: Callable[[Any, Any], Any]
    virtual: Mapping[str, Virtual] = field(default_factory=dict)


def _undealt(deck: tuple[int, ...], dealt: slice) -> dict[str, Virtual]:
    """The cards of `deck` not among `state._cards[dealt]`, and their number."""

    def rest(state: Any) -> list[int]:
        left = list(deck)
        for c in np.asarray(state._cards)[dealt].tolist():
            if c in left:
                left.remove(c)
        return sorted(left)

    def cards(state: Any, size: int) -> np.ndarray:
        out = np.zeros(size, np.int32)
        r = rest(state)[:size]
        out[: len(r)] = r
        return out

    def count(state: Any, size: int) -> np.ndarray:
        return np.full(size, len(rest(state)), np.int32)

    return {
        "undealt": Virtual(f"the cards of {list(deck)} not in _cards[{dealt.start}:{dealt.stop}], ascending", cards),
        "undealt.count": Virtual("the number of undealt cards", count),
    }


def _board_game(env: Any, state: Any) -> Any:
    """tic_tac_toe, connect_four: pgx's `Game.legal_action_mask` on `_x`."""
    return state.replace(legal_action_mask=env._game.legal_action_mask(state._x))


def _kuhn(env: Any, state: Any) -> Any:
    """pgx kuhn_poker `_step`: `legal_action = select(terminated, [0, 0], [1, 1])`; `terminated` is mapped."""
    import jax.numpy as jnp

    return state.replace(legal_action_mask=jnp.where(state.terminated, False, jnp.ones(2, jnp.bool_)))


def _leduc(env: Any, state: Any) -> Any:
    """pgx leduc_holdem `_step`: after CALL (or at a round's start) [1, 1, 0], after RAISE [1, 1, 1], the RAISE
    entry `raise_count < MAX_RAISE`; `terminated` is mapped."""
    import jax.numpy as jnp

    mask = jnp.stack([jnp.bool_(True), state._raise_count < 2, state._last_action == 1])
    return state.replace(legal_action_mask=jnp.where(state.terminated, False, mask))


def _play2048(env: Any, state: Any) -> Any:
    """pgx play2048 `_step`: `legal_action_mask = _legal_action_mask(board)`."""
    from pgx.play2048 import _legal_action_mask

    return state.replace(legal_action_mask=_legal_action_mask(state._board.reshape((4, 4))))


GAMES: dict[str, Glue] = {
    "tic_tac_toe": Glue(_board_game),
    "connect_four": Glue(_board_game),
    "kuhn_poker": Glue(_kuhn, _undealt((0, 1, 2), slice(0, 2))),
    "leduc_holdem": Glue(_leduc, _undealt((0, 0, 1, 1, 2, 2), slice(0, 3))),
    "2048": Glue(_play2048),
}
