"""docs/examples/leduc_holdem.yaml against pgx's leduc_holdem (an implementation nobody here wrote).

The spec declares its original (`oracle: target: pgx:leduc_holdem`, the field mapping, pgx keeping no deck:
`undealt`); the levels of `envc verify --against` compare them, and hands are played in lockstep with every
player's observation compared (`oracle_play.play`): pgx's deal and first player are carried over by state
injection, both take the same random legal actions. The spec declares the public card `visible: "round >= 1"`;
the no-leak check runs on the same spec.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc import rng
from envc.verify import verify

jax = pytest.importorskip("jax")
pgx = pytest.importorskip("pgx")

from oracle_play import play  # noqa: E402

from envc.against import Against, verify_against  # noqa: E402 - after the skips: the oracle needs jax and pgx
from envc.oracle.targets import resolve  # noqa: E402

SPEC = Path(__file__).resolve().parent.parent / "docs" / "examples" / "leduc_holdem.yaml"
CALL, RAISE, FOLD = 0, 1, 2


@cache
def runner() -> Against:
    spec = envc.load(str(SPEC))
    return Against(spec, resolve("declared", spec), seed=0)


@pytest.fixture(scope="module")
def env() -> Any:
    return envc.build(str(SPEC))


def test_leduc_lints_clean() -> None:
    spec, diags = envc.lint(str(SPEC))
    assert spec is not None and [d.format() for d in diags] == []
    assert spec.field("board").visible == "rule" and spec.field("board").visible_rule is not None
    assert spec.num_actions == 3 and spec.players == 2
    assert spec.oracle is not None and spec.oracle.target == "pgx:leduc_holdem"


def test_levels_pass_against_pgx() -> None:
    run = runner()
    report = verify_against(run.spec, run.oracle, "pgx:leduc_holdem", episodes=30, states=40, stat_episodes=60)
    # Boundary and fuzzed states that break the spec's invariants (stakes that no sequence of raises gives)
    # are outside its domain and skipped; the invariants themselves hold on every pgx state (L1).
    for c in report.checks:
        assert c.passed, "\n".join(c.examples)
    edge = next(c for c in report.checks if c.name.startswith("one step from boundary values"))
    assert edge.cases > 50 and any("stakes_follow_raises" in n for n in edge.notes)
    cases = {c.name.split(",")[0]: c.cases for c in report.checks}
    assert cases["one step from the spec's rollout states"] == 40
    assert cases["(a) 30 lockstep episodes"] == 30 and cases["(b) 30 free-running episodes"] == 30
    sources = {c["field"]: c["source"] for c in report.conversions}
    assert sources["deck"] == "undealt" and sources["board"] == "_cards[2]" and sources["last_action"].endswith("+ 1")


def test_leduc_matches_pgx() -> None:
    run = runner()
    gen = np.random.default_rng(11)
    key = rng.key_from_seed(11)
    deals: Counter[tuple[int, int, int]] = Counter()
    ends: Counter[str] = Counter()
    lengths: Counter[int] = Counter()
    for g in range(250):
        key, k = rng.split(key)
        tr, d = run.synced_start(g, k)  # pgx's deal and first player, injected into the spec
        cards = (*d["hand"].tolist(), int(d["board"]))
        assert sorted([*cards, *d["deck"][: int(d["deck.count"])].tolist()]) == [0, 0, 1, 1, 2, 2]
        moves, last = play(run, tr, d, gen, k, f"hand {g} cards {cards} first {tr.current_player}")
        deals[cards] += 1
        lengths[len(moves)] += 1
        rewards = tuple(float(r) for r in last.rewards)
        ends["fold" if moves[-1] == FOLD else "draw" if rewards == (0.0, 0.0) else "showdown"] += 1
    # the hands were varied: many deals, folds, draws and showdowns, short and long betting
    assert len(deals) >= 20
    assert min(ends["fold"], ends["draw"], ends["showdown"]) >= 5, ends
    assert len(lengths) >= 6, lengths


def test_leduc_reset_deals_like_pgx(env: Any) -> None:
    """envc's own reset deals two of each card and picks the first player at random."""
    seen: Counter[tuple[int, ...]] = Counter()
    for seed in range(300):
        s = env.init((seed, 3))
        d = env.state_to_dict(s)
        cards = sorted([*d["hand"].tolist(), int(d["board"]), *d["deck"][: int(d["deck.count"])].tolist()])
        assert cards == [0, 0, 1, 1, 2, 2]
        assert s.current_player == int(d["first_player"]) and env.invariants(s) == []
        seen[(s.current_player, *d["hand"].tolist(), int(d["board"]))] += 1
    assert {k[0] for k in seen} == {0, 1} and len(seen) >= 30


def test_leduc_has_no_leak(env: Any) -> None:
    """The public card is hidden in round 0 and visible from round 1; pgx's observation respects that."""
    checks = {c.name: c for c in verify(env.spec, env, levels=("L1",), episodes=150)}
    assert all(c.passed for c in checks.values()), [c.failures for c in checks.values()]
    assert checks["no hidden-information leak"].cases > 100
