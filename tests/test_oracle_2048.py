"""docs/examples/game_2048.yaml against pgx's 2048: a game whose every step ends with a chance event.

The start (two random tiles) is carried over by state injection; the tile pgx spawns after each move by key
search (`envc.against`: the first key under which the spec's step reproduces pgx's board). The spec spawns as pgx
does, a uniformly random empty cell and a 4 with probability 0.1, so every outcome has a key; how many keys the
search needs, and how often it would miss, follows from that distribution and is checked here.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import envc
from envc import rng

jax = pytest.importorskip("jax")
pgx = pytest.importorskip("pgx")

from oracle_play import play  # noqa: E402

from envc.against import KEY_TRIES, Against, verify_against  # noqa: E402 - after the skips: the oracle needs pgx
from envc.oracle.targets import resolve  # noqa: E402

SPEC = Path(__file__).resolve().parent.parent / "docs" / "examples" / "game_2048.yaml"
LEFT = 0


@cache
def runner() -> Against:
    spec = envc.load(str(SPEC))
    return Against(spec, resolve("declared", spec), seed=0)


def test_lints_clean_and_declares_pgx() -> None:
    spec, diags = envc.lint(str(SPEC))
    assert spec is not None and [d.format() for d in diags] == []
    assert spec.oracle is not None and spec.oracle.target == "pgx:2048" and spec.oracle.chance == ()
    assert (spec.num_actions, spec.players) == (pgx.make("2048").num_actions, 1)


def test_levels_pass_against_pgx() -> None:
    run = runner()
    report = verify_against(run.spec, run.oracle, "pgx:2048", episodes=2, states=10, stat_episodes=12)
    assert report.passed, "\n".join(e for c in report.checks for e in c.examples)
    cases = {c.name.split(",")[0]: c.cases for c in report.checks}
    assert cases["invariants hold on the original's states"] > 50  # one whole game of pgx's
    assert cases["one step from the original's rollout states"] == 10
    assert cases["(a) 2 lockstep episodes"] == 2 and cases["(b) 2 free-running episodes"] == 2
    assert report.key_searches > 100  # most steps spawn a tile the first key does not
    assert 0 < len(report.chance_tape) <= report.key_searches  # the keys found, for replay


def test_lockstep_games_and_miss_rate() -> None:
    """Whole games in lockstep (each spawn found by key search); the chance that the search misses a spawn, from
    the empty cells the games had: 0.9 / n for a 2 on one of n cells, 0.1 / n for a 4, with KEY_TRIES + 1 tries."""
    run = runner()
    gen = np.random.default_rng(3)
    key = rng.key_from_seed(3)
    empty: list[int] = []
    for g in range(2):
        key, k = rng.split(key)
        tr, d = run.synced_start(500 + g, k)
        searches = run.key_searches
        moves, last = play(run, tr, d, gen, k, f"2048 game {g}")
        assert last.terminated and len(moves) > 30
        assert run.key_searches - searches > len(moves) // 2
        # replay pgx's game to count the empty cells each spawn chose among
        run.oracle.reset(500 + g)
        for a in moves:
            run.oracle.step(a)
            empty.append(int(np.count_nonzero(run.oracle.get_state()["board"] == 0)) + 1)
    n = np.asarray(empty, np.float64)
    miss = 0.9 * (1 - 0.9 / n) ** (KEY_TRIES + 1) + 0.1 * (1 - 0.1 / n) ** (KEY_TRIES + 1)
    assert miss.mean() < 1e-6, f"a spawn is missed at {miss.mean():.2e} of the steps with {KEY_TRIES} tries"
    worst = 0.1 * (1 - 0.1 / 15) ** (KEY_TRIES + 1)  # a 4 on a board of one tile
    assert worst < 1e-4


def test_every_spawn_has_a_key_and_pgx_odds() -> None:
    """One tile slid left leaves 15 empty cells: 30 outcomes. Among KEY_TRIES keys the spec spawns each of them,
    and it spawns a 4 about as often as pgx does from the same board."""
    run = runner()
    board = np.zeros((4, 4), np.int32)
    board[1, 3] = 3
    d = run.inject(run.env.state_to_dict(run.env.init(rng.key_from_seed(0))), {"board": board})
    pre = run.env.state_from_dict(d)
    after_move = board.copy()
    after_move[1] = [3, 0, 0, 0]
    spec_spawns: Counter[tuple[int, int]] = Counter()
    base = rng.key_from_seed(9)
    for i in range(KEY_TRIES):
        s = run.env.state_to_dict(run.env.step(pre, LEFT, rng.fold_in(base, i)))["board"]
        new = np.argwhere(s != after_move)
        assert len(new) == 1 and after_move[tuple(new[0])] == 0
        cell = int(new[0][0] * 4 + new[0][1])
        spec_spawns[(cell, int(s[tuple(new[0])]))] += 1
    assert set(spec_spawns) == {(c, v) for c in range(16) if c != 4 for v in (1, 2)}
    # pgx from the same board, as many keys
    env = pgx.make("2048")
    state = jax.jit(env.init)(jax.random.PRNGKey(0)).replace(_board=jax.numpy.asarray(board.ravel()))
    state = state.replace(legal_action_mask=jax.numpy.ones(4, bool))
    keys = jax.random.split(jax.random.PRNGKey(9), KEY_TRIES)
    boards = np.asarray(jax.jit(jax.vmap(lambda k: env.step(state, LEFT, k)._board))(keys))
    pgx_fours = int(np.count_nonzero(boards == 2))
    spec_fours = sum(c for (_, v), c in spec_spawns.items() if v == 2)
    # both near 10%: 3 standard deviations of a binomial(2048, 0.1) are about 0.02
    for fours in (pgx_fours, spec_fours):
        assert abs(fours / KEY_TRIES - 0.1) < 3 * np.sqrt(0.09 / KEY_TRIES), (pgx_fours, spec_fours)


def test_wrong_merge_rule_fails_located(tmp_path: Path) -> None:
    """A merge that does not use up its second tile ([2 2 4] slides to [4 2 4], not [4 4]) is found and located
    at the slide."""
    text = SPEC.read_text()
    wrong = text.replace("              skip = true\n", "              skip = false\n")
    assert wrong != text
    path = tmp_path / "game_2048.yaml"
    path.write_text(wrong)
    spec = envc.load(str(path))
    report = verify_against(spec, resolve("declared", spec), "pgx:2048", levels=("L3",), episodes=1, stat_episodes=0)
    assert not report.passed
    lockstep = next(c for c in report.checks if c.name.startswith("(a)"))
    assert lockstep.failed == 1
    first = report.first
    assert first is not None and first.quantity in ("board", "rewards")
    assert any(w.startswith(f"{path}:") for w in first.written_at), first.written_at
    assert "from state" in first.message() and "no key among" in first.note
