"""The reference interpreter's chance log: every random outcome, in order, with what it produced."""

from __future__ import annotations

from pathlib import Path

import envc
from envc import rng

ROOT = Path(__file__).resolve().parent.parent


def test_kuhn_deal_is_the_logged_shuffle() -> None:
    env = envc.build(ROOT / "specs" / "kuhn_poker.yaml")
    for seed in range(20):
        env.chance_log = []
        s = env.init(rng.key_from_seed(seed))
        d = env.state_to_dict(s)
        shuffle, first = env.chance_log
        assert shuffle.kind == "shuffle" and shuffle.zone == "deck" and sorted(shuffle.value) == [0, 1, 2]
        # cards are dealt by popping the top (last) card of the shuffled deck
        assert [int(d["card"][0]), int(d["card"][1])] == [shuffle.value[2], shuffle.value[1]]
        assert first.kind == "randint" and first.value == int(d["current_player"])
    env.chance_log = None
    env.init(rng.key_from_seed(0))
    assert env.chance_log is None


def test_per_player_shuffles_name_their_zone_index() -> None:
    env = envc.build(ROOT / "tests" / "specs" / "tcg_mechanics.yaml")
    env.chance_log = []
    env.init(rng.key_from_seed(1))
    shuffles = [e for e in env.chance_log if e.kind == "shuffle"]
    assert [(e.zone, e.index) for e in shuffles[:2]] == [("deck", (0,)), ("deck", (1,))]
    assert all(e.span.path.endswith("tcg_mechanics.yaml") and e.span.line > 0 for e in env.chance_log)
