"""What `step`, `init` and `state_from_dict` take through the runtime API, alike on every backend
(`envc.inputs`; docs/spec-language.md 14.3): any integer id outside the action range is an illegal action, what
is not an action, a key or a state is one ValueError (it was a numpy, JAX or PyO3 conversion error, a JAX
OverflowError, a silent truncation of 1.5, or a NaN read as a NaN state or as 0, depending on the backend)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc.lower_rust.build import RustEnv

ROOT = Path(__file__).resolve().parent.parent
TIC_TAC_TOE = ROOT / "specs" / "tic_tac_toe.yaml"
PENDULUM = ROOT / "docs" / "examples" / "pendulum.yaml"
BACKENDS = ["reference", "jax", "rust"]


@functools.cache
def build(path: Path, backend: str, rust_cache: Path) -> Any:
    """One env per spec and backend for the whole module (the checks never change an env)."""
    if backend == "rust":  # the crates test_rust_backend.py builds into the shared cache
        return RustEnv(envc.load(str(path)), cache=rust_cache)
    return envc.build(path, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_of_range_ids_are_illegal_actions(backend: str, rust_cache: Path) -> None:
    env = build(TIC_TAC_TOE, backend, rust_cache)
    s = env.init((0, 0))
    for action in (9, -1, 2**40, -(2**63), np.int64(2**40), 9.0):
        out = env.step(s, action, (0, 1))
        assert bool(out.terminated), (backend, action)
        assert np.asarray(out.rewards).tolist() == [-1.0, 1.0] or np.asarray(out.rewards).tolist() == [1.0, -1.0]
    legal = env.step(s, np.int64(4), (0, 1))
    assert not bool(legal.terminated) and np.asarray(legal.rewards).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("action", [1.5, float("nan"), "a", None, True, np.array([1, 2]), [3]])
def test_what_is_not_an_action_id_is_one_value_error(backend: str, action: Any, rust_cache: Path) -> None:
    env = build(TIC_TAC_TOE, backend, rust_cache)
    with pytest.raises(ValueError, match=r"an action is an integer id \(0 to 8\), got "):
        env.step(env.init((0, 0)), action, (0, 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_box_actions_are_checked_for_size_and_kind(backend: str, rust_cache: Path) -> None:
    env = build(PENDULUM, backend, rust_cache)
    s = env.init((0, 0))
    same = [np.asarray(env.step(s, a, (0, 1)).rewards).tolist() for a in (0.5, [0.5], np.array([[0.5]], np.float64))]
    assert same[0] == same[1] == same[2]
    for action, got in ((np.zeros(3), "got 3"), ("x", "got 'x'"), (None, "got None"), ([], "got 0")):
        with pytest.raises(ValueError, match=rf"an action is 1 number\(s\) for the box \[1\], {got}"):
            env.step(s, action, (0, 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_keys_are_checked_alike(backend: str, rust_cache: Path) -> None:
    """`init(None)` is the zero key everywhere (the reference refused it); malformed keys are one ValueError."""
    env = build(TIC_TAC_TOE, backend, rust_cache)
    none, zero = env.state_to_dict(env.init(None)), env.state_to_dict(env.init((0, 0)))
    assert none.keys() == zero.keys() and all(np.array_equal(none[k], zero[k]) for k in zero)
    for key in [(0,), (1, 2, 3), -1, "x", (2**40, 1), (0.5, 1), 7]:
        with pytest.raises(ValueError, match="key"):
            env.init(key)


@pytest.mark.parametrize("backend", BACKENDS)
def test_injected_states_are_checked_alike(backend: str, rust_cache: Path) -> None:
    """state_from_dict: the same KeyError/ValueError on every backend, and the same wrapped integers."""
    env = build(TIC_TAC_TOE, backend, rust_cache)
    d = env.state_to_dict(env.init((0, 0)))

    def inject(**fields: Any) -> dict[str, Any]:
        return env.state_to_dict(env.state_from_dict({**d, **fields}))

    with pytest.raises(KeyError, match=r"state dict lacks fields \['board'\]"):
        env.state_from_dict({k: v for k, v in d.items() if k != "board"})
    for board, message in [
        (np.zeros(4, np.int32), r"field 'board' has shape \(4,\), expected \(3, 3\)"),
        (np.full((3, 3), 0.5), r"field 'board' \(Mark\): 0.5 is not an integer"),
        (np.full((3, 3), np.nan), r"field 'board' \(Mark\): nan is not an integer"),
        (np.full((3, 3), "x"), r"field 'board' \(Mark\): expected numbers"),
    ]:
        with pytest.raises(ValueError, match=message):
            env.state_from_dict({**d, "board": board})
    assert inject(board=np.full((3, 3), 2.0))["board"].tolist() == [[2] * 3] * 3  # integral floats are integers
    assert inject(winner=np.int64(2**32 + 1))["winner"].tolist() == 1  # integers wrap to the field's type
