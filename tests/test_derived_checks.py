"""The derived checks of issue #20 catch the bugs random play never shows: a generated JAX `env.py` with one
hand-made bug in the step's bookkeeping fails the new checks at L1 and L2, and one at a boundary passes the older
checks and fails the boundary check."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc import rng
from envc.verify import Check, finished_contract, illegal_contract, verify

ROOT = Path(__file__).resolve().parent.parent
OLD = {"invariants hold", "observation shapes and bounds", "legal action when not done", "determinism",
       "one step from reference-rollout states", "one step from fuzzed states"}  # fmt: skip


def _edited(spec_file: str, old: str, new: str) -> Any:
    """A `JaxEnv` over the spec's generated `env.py` with `old` replaced by `new` (once, and it must be there)."""
    from envc.mutate.jax import JaxProgram

    prog = JaxProgram(envc.load(str(ROOT / "specs" / spec_file)))
    assert prog.source.count(old) == 1, old
    prog.tree = ast.parse(prog.source.replace(old, new))
    return prog.env(None)


def _edited_text(path: Path, text: str, old: str, new: str) -> Any:
    """`_edited` for a spec written here (`text` saved at `path`)."""
    from envc.mutate.jax import JaxProgram

    path.write_text(text)
    prog = JaxProgram(envc.load(str(path)))
    assert prog.source.count(old) == 1, old
    prog.tree = ast.parse(prog.source.replace(old, new))
    return prog.env(None)


def _checks(env: Any) -> dict[str, Check]:
    return {c.name: c for c in verify(env.spec, env, levels=("L1", "L2"), episodes=10, states=40)}


@pytest.mark.parametrize(
    ("old", "new", "caught"),
    [
        # the penalty's sign
        ("jnp.float32(ILLEGAL_ACTION_PENALTY),", "jnp.float32(-ILLEGAL_ACTION_PENALTY),", "illegal"),
        # -1 clipped to 0 and taken as a move
        ("& (action >= 0) ", "", "illegal"),
        # a truncated state steps on
        ("done = jnp.logical_or(state.terminated, state.truncated)", "done = state.terminated", "finish"),
    ],
    ids=["penalty-sign", "negative-id", "truncated-steps"],
)
def test_step_bookkeeping_bug_is_caught(old: str, new: str, caught: str) -> None:
    checks = _checks(_edited("tic_tac_toe.yaml", old, new))
    failed = {c.level for c in checks.values() if not c.passed and caught in c.name}
    assert failed == {"L1", "L2"}, [(c.level, c.name, c.failures[:1]) for c in checks.values() if not c.passed]


def test_boundary_comparison_is_caught() -> None:
    # `x > x_threshold` -> `x >= x_threshold`: only a state landing exactly on 2.4 tells them apart
    env = _edited("cartpole.yaml", "(state.x > params.x_threshold)", "(state.x >= params.x_threshold)")
    checks = _checks(env)
    assert all(checks[n].passed for n in OLD if n in checks)
    edges = checks["one step from boundary values (compared constants, +-1 ulp / +-1)"]
    assert not edges.passed and "'terminated'" in edges.failures[0]


def test_truncation_limit_is_caught() -> None:
    env = _edited("cartpole.yaml", "(state.step_count >= params.max_steps)", "(state.step_count > params.max_steps)")
    checks = _checks(env)
    assert all(checks[n].passed for n in OLD if n in checks)
    assert not checks["one step from boundary values (compared constants, +-1 ulp / +-1)"].passed


def test_the_contracts_as_documented() -> None:
    spec = envc.load(str(ROOT / "specs" / "kuhn_poker.yaml"))
    ref = envc.build(spec)
    s = ref.init(rng.key_from_seed(0))
    before = ref.state_to_dict(s)
    after = ref.state_to_dict(ref.step(s, -1))
    assert illegal_contract(spec, before, after, "x") is None
    wrong = dict(after, rewards=-np.asarray(after["rewards"]))
    assert "illegal_action_penalty" in str(illegal_contract(spec, before, wrong, "x"))
    moved = dict(after, current_player=np.asarray(1 - int(before["current_player"]), np.int32))
    assert "an illegal action changes nothing" in str(illegal_contract(spec, before, moved, "x"))
    end = ref.step(s, -1)
    again = ref.state_to_dict(ref.step(end, 0))
    assert finished_contract(spec, after, again, "x") is None
    assert "a finished state stays as it is" in str(finished_contract(spec, after, dict(again, terminated=False), "x"))


def test_weakened_invariant_is_caught_at_its_boundary() -> None:
    # `abs(x) < 1e6 and abs(theta_dot) < 1e6` -> `or`: fuzzed states stay within [-1, 1], so only a state at the
    # invariant's own constant (x = 1e6 +- 1 ulp) tells them apart
    env = _edited(
        "cartpole.yaml",
        "jnp.logical_and((jnp.abs(state.x) < jnp.float32(1000000.0))",
        "jnp.logical_or((jnp.abs(state.x) < jnp.float32(1000000.0))",
    )
    checks = _checks(env)
    assert all(checks[n].passed for n in OLD if n in checks)
    inv = checks["the same invariants fail on injected states as on the reference"]
    assert not inv.passed and "finite_state" in inv.failures[0] and "1000000" in inv.failures[0]


def test_one_conjunct_of_an_invariant_is_caught_on_a_state_changed_in_one_place() -> None:
    # gravity's "board[2, 4] rests on board[3, 4]" reads board[4, 4] instead: reached states satisfy both, fuzzed
    # states break gravity in many places at once; a reached state with one disc added or removed tells them apart
    env = _edited("connect_four.yaml", "(state.board[3, 4] != jnp.int8(0))", "(state.board[4, 4] != jnp.int8(0))")
    checks = _checks(env)
    assert all(checks[n].passed for n in OLD if n in checks)
    inv = checks["the same invariants fail on injected states as on the reference"]
    assert not inv.passed and "reached state" in inv.failures[0] and "gravity" in inv.failures[0]


def test_declared_bound_of_an_integer_field_is_tried_in_reached_states() -> None:
    # 2048's `board[0, 0] <= 17` -> `< 17`: no game gets a 2**17 tile, fuzzed values are mostly small; a reached
    # state with one cell at its declared bound (`high: 17`) tells them apart
    cell = "state.board[0, 0]"  # a static index since the lowerings know index ranges
    from envc.mutate.jax import JaxProgram

    prog = JaxProgram(envc.load(str(ROOT / "docs" / "examples" / "game_2048.yaml")))
    old = f"{cell} <= jnp.int32(17))"
    assert prog.source.count(old) == 1
    prog.tree = ast.parse(prog.source.replace(old, f"{cell} < jnp.int32(17))"))
    env = prog.env(None)
    checks = {c.name: c for c in verify(env.spec, env, levels=("L2",), episodes=10, states=20)}
    inv = checks["the same invariants fail on injected states as on the reference"]
    assert not inv.passed and "= 17" in inv.failures[0] and "tiles_in_range" in inv.failures[0]
    assert checks["one step from reference-rollout states"].passed and checks["one step from fuzzed states"].passed


def test_the_fallback_for_a_player_to_move_out_of_range_is_compared() -> None:
    """The other players' share of an illegal id's penalty reaches the mover's own slot only when the player to
    move is no player: a state the rollouts and the fuzzing (which keep `current_player` in range) never give."""
    share = "-ILLEGAL_ACTION_PENALTY * (NUM_PLAYERS - {})"
    env = _edited("cartpole.yaml", share.format(1), share.format(2))
    checks = _checks(env)
    assert all(c.passed for n, c in checks.items() if "out of range (-1" not in n), [
        (n, c.failures[:1]) for n, c in checks.items() if not c.passed
    ]
    nobody = checks["one step with the player to move out of range (-1, num_players)"]
    assert not nobody.passed and "current_player = " in nobody.failures[0] and "'rewards'" in nobody.failures[0]


MANY_KINDS = """
name: many_kinds
doc: "Sixty kinds of move that count, and one that claims a flag for the player to move."
version: "1.0"
players: 2
state:
  moves: {type: i32}
  claimed: {type: bool, shape: [num_players]}
actions:
%s
  claim:
    legal: "not claimed[current_player]"
    effect: "claimed[current_player] = true"
rules:
  - name: next_turn
    when: "true"
    body: "current_player = 1 - current_player"
reward: "0.0"
terminated: "moves >= 20"
observation:
  fields:
    seen: {type: i32, low: 0, high: 40}
  body: "seen = moves"
invariants:
  counted: "moves >= 0"
""".replace("%s", "\n".join(f'  step{i}: {{effect: "moves += 1"}}' for i in range(60)))


def test_every_kind_of_legal_move_is_taken_with_the_player_to_move_out_of_range(tmp_path: Path) -> None:
    """The claim is one legal move in sixty-one: with no player to move, its write must be dropped (14.3), and a
    backend that clamps it onto a player's flag is caught only if that state takes a claim."""
    old = "state.claimed.at[drop_index(state.current_player, 2)]"
    env = _edited_text(tmp_path / "many_kinds.yaml", MANY_KINDS, old, old.replace("drop_index", "clamp_index"))
    checks = {c.name: c for c in verify(env.spec, env, levels=("L1", "L2"), episodes=4, states=6)}
    nobody = checks.pop("one step with the player to move out of range (-1, num_players)")
    assert not nobody.passed and "'claimed'" in nobody.failures[0]
    assert all(c.passed for c in checks.values()), [(n, c.failures[:1]) for n, c in checks.items() if not c.passed]


def test_a_second_run_on_another_backend_of_the_same_spec_sees_its_own_bugs() -> None:
    """The reference's answers are kept across `verify` calls of one spec (`envc mutate` runs the suite on every
    mutant): a run on the original, then one on a mutant, then the original again give each its own verdict,
    and the original's two runs the same cases."""
    from envc.mutate.jax import JaxProgram

    prog = JaxProgram(envc.load(str(ROOT / "specs" / "tic_tac_toe.yaml")))
    original = prog.env(None)
    old = "jnp.float32(ILLEGAL_ACTION_PENALTY),"
    assert prog.source.count(old) == 1
    tree = prog.tree
    prog.tree = ast.parse(prog.source.replace(old, "jnp.float32(-ILLEGAL_ACTION_PENALTY),"))
    mutant = prog.env(None)
    prog.tree = tree

    def run(env: Any) -> list[tuple[str, int, int]]:
        checks = verify(prog.spec, env, levels=("L1", "L2", "L3"), episodes=10, states=40)
        return [(c.name, c.cases, c.failed) for c in checks]

    first = run(original)
    assert all(failed == 0 for _, _, failed in first)
    assert any(failed for _, _, failed in run(mutant))
    assert run(original) == first


STOCKS = """
name: stocks
doc: "Each player takes from their own stock of 50 until 20 moves are made, or passes."
version: "1.0"
players: 2
state:
  stock: {type: i32, shape: [num_players], init: 50}
  moves: {type: i32}
actions:
  take:
    legal: "stock[current_player] > 0"
    effect: "stock[current_player] -= 1"
  hold: {effect: "moves += 0"}
rules:
  - name: next_turn
    when: "true"
    body: |
      moves += 1
      current_player = 1 - current_player
reward: "0.0"
terminated: "moves >= 20"
observation:
  fields:
    mine: {type: i32, low: 0, high: 50}
  body: "mine = stock[p]"
invariants:
  counted: "moves >= 0"
"""


def test_a_comparison_at_a_computed_index_gets_boundary_states(tmp_path: Path) -> None:
    """`stock[current_player] > 0` -> `>= 0`: no game empties a stock of 50 in 20 moves, and the compared element
    is picked by the player to move; both players' stocks are put at 0 and its neighbours (before, only reads at
    literal indices had boundary states)."""
    old = "(state.stock[clamp_index(state.current_player, 2)] > jnp.int32(0))"
    env = _edited_text(tmp_path / "stocks.yaml", STOCKS, old, old.replace(" > ", " >= "))
    checks = {c.name: c for c in verify(env.spec, env, levels=("L1", "L2"), episodes=4, states=10)}
    edges = checks.pop("one step from boundary values (compared constants, +-1 ulp / +-1)")
    assert not edges.passed and "stock" in edges.failures[0]  # fuzzed states may draw a 0 too, reached ones never
    assert checks["one step from reference-rollout states"].passed and checks["invariants hold"].passed


OWNER = """
name: owner
doc: "Player 0 claims the flag on the first move; after that, each move marks the flag's owner, until six moves."
version: "1.0"
players: 2
state:
  owner: {type: i8, init: -1, doc: "The player who claimed the flag, -1 = nobody yet"}
  marks: {type: i32, per_player: true}
  moves: {type: i32}
actions:
  claim:
    legal: "owner == -1"
    effect: "owner = i8(current_player)"
  mark:
    legal: "owner != -1"
    effect: "marks[owner] += 1"
reset: "current_player = 0"
rules:
  - name: next_turn
    body: |
      moves += 1
      current_player = 1 - current_player
reward: "0.0"
terminated: "moves >= 6"
observation:
  fields:
    mine: {type: i32, low: 0, high: 6}
  body: "mine = marks[p]"
"""


def test_player_ones_version_of_a_reached_state_is_stepped(tmp_path: Path) -> None:
    """Player 0 always owns the flag in play, so a backend that marks player 0 whoever owns it passes every
    reached state; with the players swapped (`owner` is a player id: it indexes per-player storage) it fails."""
    old = "state.marks.at[drop_index(state.owner, 2)]"
    env = _edited_text(tmp_path / "owner.yaml", OWNER, old, "state.marks.at[0]")
    checks = {c.name: c for c in verify(env.spec, env, levels=("L1", "L2"), episodes=4, states=10)}
    swapped = checks["one step with the players swapped, or their storage told apart"]
    assert not swapped.passed and "players 0 and 1 swapped" in swapped.failures[0] and "'marks'" in swapped.failures[0]
    assert checks["one step from reference-rollout states"].passed and checks["invariants hold"].passed


def test_each_window_of_a_win_test_is_stepped_alone() -> None:
    """Connect four's win test reads 69 windows; one of them turned into another (row 1's across line from
    column 0 checked down-right instead) wins or loses only where that window alone is four: random play and
    fuzzed boards show it among others. States cut down to what ends the game show each window alone."""
    call = "four_from(state, params, c_1, jnp.int32(1), jnp.int32(0), jnp.int32(0), jnp.int32(1))"
    env = _edited("connect_four.yaml", call, call.replace("jnp.int32(0), jnp.int32(1))", "jnp.int32(1), jnp.int32(1))"))
    checks = {c.name: c for c in verify(env.spec, env, levels=("L2",), states=200)}
    minimal = checks.pop("one step from minimal states that end the game (each element decisive)")
    assert not minimal.passed and "'winner'" in minimal.failures[0]
    assert checks["one step from reference-rollout states"].passed and checks["one step from fuzzed states"].passed


VAULT = """
name: vault
doc: "A player who found their key may take from their own stock of 50; 20 moves end the game."
version: "1.0"
players: 2
state:
  has_key: {type: bool, per_player: true}
  stock: {type: i32, per_player: true, init: 50}
  moves: {type: i32}
actions:
  find:
    legal: "not has_key[current_player]"
    effect: "has_key[current_player] = true"
  take:
    legal: "has_key[current_player] and stock[current_player] > 0"
    effect: "stock[current_player] -= 1"
  wait: {effect: "moves += 0"}
rules:
  - name: next_turn
    body: |
      moves += 1
      current_player = 1 - current_player
reward: "0.0"
terminated: "moves >= 20"
observation:
  fields:
    mine: {type: i32, low: 0, high: 50}
  body: "mine = stock[p]"
"""


def test_a_legal_condition_is_tried_at_its_boundary_in_many_reached_states(tmp_path: Path) -> None:
    """`stock[current_player] > 0` -> `>= 0`: no game empties a stock, and the move also needs the key; the legal
    moves of reached states with each stock at 0 and its neighbours are compared."""
    old = "(state.stock[clamp_index(state.current_player, 2)] > jnp.int32(0))"
    env = _edited_text(tmp_path / "vault.yaml", VAULT, old, old.replace(" > ", " >= "))
    checks = {c.name: c for c in verify(env.spec, env, levels=("L1", "L2"), episodes=4, states=40)}
    masks = checks["legal moves at boundary values (constants compared in legal:, +-1)"]
    assert not masks.passed and "stock[" in masks.failures[0] and "legal_action_mask" in masks.failures[0]
    assert checks["one step from reference-rollout states"].passed and checks["invariants hold"].passed
