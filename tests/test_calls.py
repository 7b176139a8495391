"""Functions and procedures called alone (envc/calls.py): bugs on inputs play never passes are caught, and the
reference's answers are the documented ones."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc import rng
from envc.calls import check_callables
from envc.interpret import ReferenceEnv
from envc.verify import fuzz_state, verify

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"


def _edited(spec_file: Path, old: str, new: str) -> Any:
    """A `JaxEnv` over the spec's generated `env.py` with `old` replaced by `new` (once, and it must be there)."""
    from envc.mutate.jax import JaxProgram

    prog = JaxProgram(envc.load(str(spec_file)))
    assert prog.source.count(old) == 1, old
    prog.tree = ast.parse(prog.source.replace(old, new))
    return prog.env(None)


def _alone(env: Any, only: set[str] | None = None) -> tuple[int, list[str]]:
    """The check on its own, on the spec's first state and fuzzed ones."""
    ref = ReferenceEnv(env.spec, strict=False)
    base = ref.state_to_dict(ref.init(rng.key_from_seed(0)))
    gen = np.random.default_rng(0)

    def state(i: int) -> dict[str, np.ndarray]:
        return base if i % 2 == 0 else fuzz_state(env.spec, base, gen)

    return check_callables(env.spec, env, ref.call, state, 0, only)


def test_a_turn_of_a_wrap_no_reachable_angle_takes_is_caught() -> None:
    """acrobot's `wrap` unrolls three turns each way; play never needs the third. Drop it: the episodes and
    one-step checks cannot tell, a call of `wrap` alone with an angle three turns out does."""
    spec_file = EXAMPLES / "acrobot.yaml"
    cases, failures = _alone(envc.build(envc.load(str(spec_file)), backend="jax"))
    assert cases >= 9 * 32 * 0.9 and failures == []  # nine callables, a few cases at most left out
    cases, failures = _alone(_edited(spec_file, "y_7 = jnp.where(cond_3, y_6, y_5)", "y_7 = y_5"))
    called = {f.split("`")[1].split("(")[0] for f in failures}
    assert failures and called <= {"wrap", "settle"}, failures  # `settle` wraps its angle with `wrap`
    angle = float(re.search(r"\(\w+=([-0-9.e]+)", failures[0]).group(1))  # type: ignore[union-attr]
    assert angle > 5 * np.pi  # only an angle past the second turn shows it


def test_a_push_guard_only_a_full_hand_trips_is_caught_by_verify() -> None:
    """high card's `deal` pushes onto a hand that is never full in play (the reset deals three cards to each).
    A guard that lets a fourth card through passes every other check and fails this one."""
    env = _edited(EXAMPLES / "high_card.yaml", "ok_2 = n_2 < 3", "ok_2 = n_2 < 4")
    checks = {c.name: c for c in verify(env.spec, env, levels=("L1", "L2"), episodes=10, states=40)}
    alone = next(c for name, c in checks.items() if name.startswith("functions and procedures called alone"))
    assert not alone.passed and "`deal(q=" in alone.failures[0] and "field 'hand" in alone.failures[0]
    assert all(c.passed for c in checks.values() if c is not alone), [c.failures for c in checks.values()]


def test_the_last_card_of_a_deck_at_a_draws_last_turn_is_caught() -> None:
    """tcg's `draw_cards(pl, n)` unrolls its eight draws, each guarded by the deck's count and the pop's own empty
    check. Make the seventh pop refuse a deck of one: only a draw of 7 or 8 from a deck of exactly 7 meets it,
    which a count drawn over 0..60 seldom gives; the cases whose zone counts are set to an argument (8, the loop's
    bound, and one below) do."""
    spec_file = ROOT / "specs" / "tcg.yaml"
    env = envc.build(envc.load(str(spec_file)), backend="jax")
    assert _alone(env, {"draw_cards"})[1] == []
    cases, failures = _alone(_edited(spec_file, "ok_7 = n_14 > 0", "ok_7 = n_14 > 1"), {"draw_cards"})
    assert cases == 32 and failures and all("`draw_cards(pl=" in f and "n=8)" in f for f in failures), failures


def test_the_reference_answers_a_full_push_and_a_function_as_documented() -> None:
    """A push onto a full zone does nothing (docs/spec-language.md, zone operations); a function's result comes
    back in its declared type."""
    spec = envc.load(str(EXAMPLES / "high_card.yaml"))
    ref = ReferenceEnv(spec, strict=False)
    d = ref.state_to_dict(ref.init(rng.key_from_seed(3)))
    assert int(d["hand.count"][0]) == 3 and int(d["deck.count"]) == 6
    after = dict(zip([f.name for f in spec.fields], ref.call("deal", d, [0], rng.key_from_seed(0))))
    assert np.array_equal(after["hand"], d["hand"]) and int(after["hand.count"][0]) == 3
    assert int(after["deck.count"]) == 5  # the pop still happens: the card is lost, as the spec says
    pendulum = envc.load(str(EXAMPLES / "pendulum.yaml"))
    pref = ReferenceEnv(pendulum, strict=False)
    start = pref.state_to_dict(pref.init(rng.key_from_seed(0)))
    (got,) = pref.call("angle_normalize", start, [2.5 * np.pi], rng.key_from_seed(0))
    assert got.dtype == np.float32 and abs(float(got) - 0.5 * np.pi) < 1e-5


def test_rust_calls_its_callables_alone_as_the_reference_does(
    rust_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Rust package's `Env.call` runs one callable alone; acrobot's `dsdt` (an array argument) is not exposed."""
    monkeypatch.setenv("ENVC_CACHE", str(rust_cache))  # the crates test_build_matrix builds anyway
    env = envc.build(envc.load(str(EXAMPLES / "acrobot.yaml")), backend="rust")
    cases, failures = _alone(env)
    assert cases > 8 * 32 and failures == []  # nine callables, `dsdt` left out (the float ones get a ladder too)
    assert env.calls("dsdt", [], [], []) is None
    ref = ReferenceEnv(env.spec)
    state = env.state_from_dict(ref.state_to_dict(ref.init(rng.key_from_seed(0))))
    (wrapped,), _ = env.env.call("wrap", state, [7 * np.pi])
    assert abs(wrapped - np.pi) < 1e-5
