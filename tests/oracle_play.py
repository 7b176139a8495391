"""Shared by the pgx oracle tests: episodes played in lockstep through `envc verify --against`'s own comparison.

`play` drives an `envc.against.Against` run one step at a time: the spec is re-synced to the original's state
before every step (L3 lockstep), each step is judged by `Against.judge` (every mapped field, rewards,
terminated, truncated, player, legal mask, observation), and on top every player's observation is compared with
the original's `observe(player)`, which the levels do not compare.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from envc import rng
from envc.against import TOL, Against, AgainstCheck
from envc.oracle import Transition


def same_views(run: Against, state: Any, where: str) -> None:
    """Every player's observation of the spec's `state` equals the original's."""
    for p in range(run.spec.players):
        ours, theirs = np.asarray(run.env.observe(state, p)), np.asarray(run.oracle.observe(p))
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), (
            f"{where}: observe(player {p})\nspec     {ours.astype(int).ravel().tolist()}\n"
            f"original {theirs.astype(int).ravel().tolist()}"
        )


def start(run: Against, tr: Transition, d: dict[str, np.ndarray], where: str) -> None:
    """The spec's state `d` and the original's current one agree before any step."""
    s = run.env.state_from_dict(d)
    bad = run.mismatches(s, tr, run.oracle.get_state(), TOL)
    assert not bad, f"{where} start: {bad[0][0]}{list(bad[0][1])} original {bad[0][2]} spec {bad[0][3]}"
    same_views(run, s, f"{where} start")


def injected(run: Against, d: dict[str, np.ndarray], values: dict[str, Any]) -> tuple[Transition, dict[str, Any]]:
    """Both sides in the state `d` with `values` (spec fields) written over it: a deal, a first player."""
    d = run.inject(d, values)
    run.oracle.set_state({f: d[f] for f in run.fields})
    return run.oracle.status(), d


def play(
    run: Against,
    tr: Transition,
    d: dict[str, np.ndarray],
    gen: np.random.Generator,
    key: rng.Key,
    where: str,
    script: Sequence[int] | None = None,
) -> tuple[list[int], Transition]:
    """One episode from the original's current state and the spec's `d` (the same situation): scripted actions,
    else uniform over the original's legal ones. Returns the actions and the original's last transition."""
    check = AgainstCheck("L3", where)
    actions: list[int] = []
    start(run, tr, d, where)
    while not (tr.terminated or tr.truncated):
        assert tr.legal_action_mask is not None
        legal = np.flatnonzero(tr.legal_action_mask)
        a = int(script[len(actions)]) if script is not None else int(gen.choice(legal))
        assert a in legal, f"{where}: scripted action {a} is illegal after {actions}"
        actions.append(a)
        key, k = rng.split(key)
        st = run.both(d, None, a, k, f"in {where}")
        at = f"{where} after actions {actions}"
        assert run.judge(check, st, d, a, at) == "ok", check.examples
        same_views(run, st.spec, at)
        tr, d = st.tr, run.inject(run.env.state_to_dict(st.spec), st.orig)
    assert script is None or len(actions) == len(script), f"{where}: ended after {actions}"
    return actions, tr
