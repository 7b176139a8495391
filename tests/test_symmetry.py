"""Which storage belongs to a player, and states with the players' roles swapped (envc.symmetry)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import envc
from envc import rng
from envc.interpret import ReferenceEnv
from envc.symmetry import player_ids, player_storage, swap_players

ROOT = Path(__file__).resolve().parent.parent


def test_the_flagships_player_storage_and_player_ids() -> None:
    """tcg: every `per_player` field, and the scalars that hold a player: `stadium_owner` indexes a discard pile,
    `first_player` and `turn_player` are copied to and from `current_player`, `winner` is compared with `p`. Not
    `pending_target` (a position) nor `turn` (a turn count)."""
    spec = envc.load(str(ROOT / "specs" / "tcg.yaml"))
    assert set(player_storage(spec)) == {f.name for f in spec.fields if f.per_player}
    assert set(player_ids(spec)) == {"current_player", "first_player", "stadium_owner", "turn_player", "winner"}


STOCKS = """
name: stocks
version: "1.0"
players: 2
state:
  stock: {type: i32, shape: [num_players], init: 50}
  rows: {type: i32, shape: [2], doc: "not a player's: never indexed by one"}
  moves: {type: i32}
actions:
  take:
    legal: "stock[current_player] > 0"
    effect: |
      stock[current_player] -= 1
      rows[1] += 1
rules:
  - name: next_turn
    body: "current_player = 1 - current_player"
reward: "0.0"
terminated: "moves >= 20"
observation:
  fields:
    mine: {type: i32, low: 0, high: 50}
  body: "mine = stock[p]"
"""


def test_storage_indexed_by_a_player_without_per_player_counts(tmp_path: Path) -> None:
    """A `shape: [num_players]` field indexed by the player to move is a player's, another two-long one is not;
    connect four's board (rows and columns) and its colours (`turn`, `winner`: cells, not players) are not."""
    (tmp_path / "stocks.yaml").write_text(STOCKS)
    stocks = envc.load(str(tmp_path / "stocks.yaml"))
    assert player_storage(stocks) == ("stock",) and player_ids(stocks) == ("current_player",)
    nim = envc.load(str(ROOT / "docs" / "examples" / "nim.yaml"))
    assert player_ids(nim) == ("current_player", "winner")
    c4 = envc.load(str(ROOT / "specs" / "connect_four.yaml"))
    assert player_storage(c4) == () and player_ids(c4) == ("current_player",)


def test_a_swap_exchanges_rows_and_ids_and_undoes_itself() -> None:
    spec = envc.load(str(ROOT / "specs" / "tcg.yaml"))
    ref = ReferenceEnv(spec)
    s = ref.init(rng.key_from_seed(3))
    for a in range(12):  # into the game: both players' zones differ
        mask = np.asarray(s.legal_action_mask)
        s = ref.step(s, int(np.flatnonzero(mask)[a % int(mask.sum())]), rng.key_from_seed(a))
    d = ref.state_to_dict(s)
    d["stadium_owner"] = np.asarray(-1, np.int8)
    w = swap_players(spec, d)
    assert np.array_equal(w["hand"][0], d["hand"][1]) and np.array_equal(w["deck"][1], d["deck"][0])
    assert int(w["current_player"]) == 1 - int(d["current_player"])
    assert int(w["first_player"]) == 1 - int(d["first_player"]) and int(w["stadium_owner"]) == -1
    assert w["hand"].dtype == d["hand"].dtype and w["first_player"].dtype == d["first_player"].dtype
    back = swap_players(spec, w)
    assert all(np.array_equal(back[k], v) for k, v in d.items())
    ref.state_from_dict(w)  # a state the reference takes
