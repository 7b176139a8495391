"""specs/{tic_tac_toe,connect_four,kuhn_poker}.yaml against pgx 2.x (implementations nobody here wrote).

Each spec declares its original in an `oracle:` section (target and field mapping); `envc.oracle.pgx` wraps the
pgx game (jitted) and `envc verify --against`'s levels compare the spec with it: L1 on pgx's states, L2 one step
from injected states, L3 lockstep, free-running and statistical. On top, the games below are played in lockstep
with every player's observation compared (`oracle_play.play`): pgx's random start (first player, the deal) is
carried over by state injection, and the play is varied (both players start and win, draws, every Kuhn betting
sequence from every deal and first player).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc import rng

jax = pytest.importorskip("jax")
pgx = pytest.importorskip("pgx")

from oracle_play import injected, play  # noqa: E402

from envc.against import Against, verify_against  # noqa: E402 - after the skips: the oracle needs jax and pgx
from envc.oracle import OracleError  # noqa: E402
from envc.oracle.targets import resolve  # noqa: E402

SPECS = Path(__file__).resolve().parent.parent / "specs"
GAMES = ("tic_tac_toe", "connect_four", "kuhn_poker")


@cache
def runner(name: str, seed: int = 0) -> Against:
    """The spec, its declared pgx oracle (jitted once per process) and an `--against` run over both."""
    spec = envc.load(str(SPECS / f"{name}.yaml"))
    return Against(spec, resolve("declared", spec), seed=seed)


@pytest.fixture(scope="module", params=GAMES)
def game(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# ---- the specs themselves ------------------------------------------------------------------------------


def test_specs_lint_clean(game: str) -> None:
    spec, diags = envc.lint(str(SPECS / f"{game}.yaml"))
    assert spec is not None and [d.format() for d in diags] == []
    assert spec.oracle is not None and spec.oracle.target == f"pgx:{game}"


def test_sizes_match(game: str) -> None:
    env, original = envc.build(str(SPECS / f"{game}.yaml")), pgx.make(game)
    assert env.num_actions == original.num_actions
    assert env.num_players == original.num_players


def test_reset_deals_every_start(game: str) -> None:
    """envc's own reset (not pgx's) picks the first player, and for Kuhn the deal, at random."""
    env = envc.build(str(SPECS / f"{game}.yaml"))
    starts: Counter[tuple[int, ...]] = Counter()
    for seed in range(240):
        s = env.init((seed, 7))
        assert not s.terminated and env.invariants(s) == []
        d = env.state_to_dict(s)
        cards = tuple(d["card"].tolist()) if game == "kuhn_poker" else ()
        starts[(s.current_player, *cards)] += 1
    want = (
        {(p, *c) for p in (0, 1) for c in itertools.permutations(range(3), 2)} if game == "kuhn_poker" else {(0,), (1,)}
    )
    assert set(starts) == want
    assert min(starts.values()) >= 240 // len(want) // 2


# ---- the levels of `envc verify --against pgx:GAME` ----------------------------------------------------

SIZES = {"tic_tac_toe": (30, 40, 60), "connect_four": (8, 25, 30), "kuhn_poker": (30, 40, 60)}


def test_levels_pass_against_pgx(game: str) -> None:
    run = runner(game)
    episodes, states, stat = SIZES[game]
    report = verify_against(run.spec, run.oracle, f"pgx:{game}", episodes=episodes, states=states, stat_episodes=stat)
    failures = [e for c in report.checks for e in c.examples]
    assert report.passed, "\n".join(failures)
    cases = {c.name.split(",")[0]: c.cases for c in report.checks}
    assert cases["invariants hold on the original's states"] > episodes // 5
    assert cases["one step from the original's rollout states"] >= min(states, 10)
    assert cases["one step from the spec's rollout states"] == states
    assert cases[f"(a) {episodes} lockstep episodes"] == episodes
    assert cases[f"(b) {episodes} free-running episodes"] == episodes
    assert report.key_searches == 0  # no chance inside a step of these games
    # the encodings: pgx's int32 with -1 for "none" become the spec's i8 enums by a shift of one
    shifted = {c["field"]: c for c in report.conversions if c["source"].endswith("+ 1")}
    assert shifted and all((c["from"], c["to"]) == ("int32", "int8") for c in shifted.values())


# ---- board games: pgx's random first player, random legal play, every player's view ---------------------


@pytest.mark.parametrize(("name", "games"), [("tic_tac_toe", 300), ("connect_four", 100)])
def test_board_game_matches_pgx(name: str, games: int) -> None:
    run = runner(name)
    gen = np.random.default_rng(2024)
    key = rng.key_from_seed(5)
    first: Counter[int] = Counter()
    outcomes: Counter[tuple[float, ...]] = Counter()
    lengths: Counter[int] = Counter()
    for g in range(games):
        key, k = rng.split(key)
        tr, d = run.synced_start(g, k)  # pgx's reset; its random first player injected into the spec
        first[tr.current_player] += 1
        moves, last = play(run, tr, d, gen, k, f"{name} game {g}")
        lengths[len(moves)] += 1
        outcomes[tuple(np.asarray(last.rewards).tolist())] += 1
    # the games were varied: both players started, both won, and (tic-tac-toe) some were drawn
    assert first[0] > games // 4 and first[1] > games // 4
    assert outcomes[(1.0, -1.0)] > 0 and outcomes[(-1.0, 1.0)] > 0
    if name == "tic_tac_toe":
        assert outcomes[(0.0, 0.0)] > 0 and lengths[9] > 0
    assert len(lengths) >= 5


# ---- Kuhn poker: a deal and first player injected into both, every betting sequence ---------------------

BET, PASS = 0, 1
SEQUENCES = ([PASS, PASS], [BET, PASS], [BET, BET], [PASS, BET, PASS], [PASS, BET, BET])


def kuhn_start(run: Against, cards: tuple[int, int], first: int) -> tuple[Any, dict[str, np.ndarray]]:
    """Both games at the start of a hand with this deal and first player (the undealt card stays in the deck)."""
    _, d = run.synced_start(0, rng.key_from_seed(0))
    deck = np.array([3 - sum(cards), 0, 0])
    values = {"card": np.array(cards), "current_player": first, "deck": deck, "deck.count": 1}
    return injected(run, d, values)


def test_kuhn_poker_matches_pgx() -> None:
    run = runner("kuhn_poker")
    gen = np.random.default_rng(7)
    key = rng.key_from_seed(7)
    deals = list(itertools.permutations(range(3), 2))
    seen: Counter[tuple[int, ...]] = Counter()
    # every deal x first player x betting sequence once (60 hands) ...
    for cards, first, script in itertools.product(deals, (0, 1), SEQUENCES):
        tr, d = kuhn_start(run, cards, first)
        where = f"kuhn cards {cards} first {first}"
        moves, last = play(run, tr, d, gen, key, where, script=script)
        assert abs(float(np.asarray(last.rewards).sum())) == 0.0 and np.abs(last.rewards).max() in (1.0, 2.0)
        seen[tuple(moves)] += 1
    # ... then 240 hands from pgx's own random deal and first player, with random actions
    for g in range(240):
        key, k = rng.split(key)
        tr, d = run.synced_start(100 + g, k)
        moves, _ = play(run, tr, d, gen, k, f"kuhn random hand {g}")
        seen[tuple(moves)] += 1
    assert sum(seen.values()) == 300
    assert set(seen) == {tuple(s) for s in SEQUENCES}
    assert min(seen.values()) >= 12 + 10


# ---- a wrong spec is found and located; bad targets and mappings are one line -----------------------------


def test_wrong_tic_tac_toe_fails_located(tmp_path: Path) -> None:
    """A copy without the anti-diagonal line: pgx's wins on it are found, at the spec lines that decide them."""
    text = (SPECS / "tic_tac_toe.yaml").read_text()
    wrong = text.replace("return rows or cols or diagonal or anti_diagonal", "return rows or cols or diagonal")
    assert wrong != text
    path = tmp_path / "tic_tac_toe.yaml"
    path.write_text(wrong)
    spec = envc.load(str(path))
    report = verify_against(spec, resolve("declared", spec), "pgx:tic_tac_toe", levels=("L3",), episodes=60,
                            stat_episodes=0)  # fmt: skip
    assert not report.passed
    lockstep = next(c for c in report.checks if c.name.startswith("(a)"))
    assert 0 < lockstep.failed < 60  # only the games won on the anti-diagonal
    first = report.first
    assert first is not None and first.quantity in ("winner", "rewards", "terminated")
    assert first.original != first.spec
    assert first.written_at and all(w.startswith(f"{path}:") for w in first.written_at)
    board = np.asarray(first.injected["board"]) if first.injected else None
    assert board is not None and board.shape == (3, 3)  # the state both stepped from is in the report


def envc_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envc.cli", *args], capture_output=True, text=True, cwd=SPECS.parent, timeout=300
    )


def test_cli_unknown_pgx_game_is_one_line() -> None:
    bad = envc_cli("verify", "specs/kuhn_poker.yaml", "--against", "pgx:kuhn_pokr")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "kuhn_poker" in lines[0], bad.stderr


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('board: "_x.board + 1"', 'board: "_x.bord + 1"'), "pgx tic_tac_toe's State has no such value"),
        (('board: "_x.board + 1"', 'board: "_x.board[0:4] + 1"'), "pgx keeps 4 value(s) of shape [4] there"),
        (('board: "_x.board + 1"', 'board: "_x.board * 2"'), "is not `ATTR.ATTR[INDEX] + K`"),
        (("target: pgx:tic_tac_toe", "target: pgx:connect_four"), "pgx connect_four has 7 actions"),
        (('turn: "_x.color + 1"', 'turn: "observation + 1"'), "pgx keeps 18 value(s)"),
    ],
)
def test_bad_mappings_are_one_line(tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    text = (SPECS / "tic_tac_toe.yaml").read_text()
    assert edit[0] in text
    path = tmp_path / "tic_tac_toe.yaml"
    path.write_text(text.replace(edit[0], edit[1]))
    spec = envc.load(str(path))
    with pytest.raises(OracleError) as err:
        resolve("declared", spec)
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)
