"""z3 equivalence of two traced JAX functions (`envc.mutate.smt`): what it proves holds on every input tried, and
pairs that differ somewhere (integer wrap, out-of-range gathers and scatters, -0.0, another random draw) stay
unproven."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("z3")
jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import envc  # noqa: E402
from envc.mutate import smt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
I32 = [-(2**31), -(2**31) + 1, -17, -2, -1, 0, 1, 2, 3, 4, 5, 16, 17, 18, 31, 32, 33, 127, 128, 2**31 - 1]


def _compacted(line: Any, plus: int) -> Any:
    """2048's slide on one line: the nonzero tiles moved left, then (with a tile at all) `0 + plus < n` and the
    first two equal."""

    def body(i: Any, carry: Any) -> Any:
        out, n = carry
        v = line[i]
        out = jnp.where(v != 0, out.at[jnp.where(n < 4, n, 4)].set(v, mode="drop"), out)
        return out, jnp.where(v != 0, n + 1, n)

    out, n = jax.lax.fori_loop(0, 4, body, (jnp.zeros(4, jnp.int32), jnp.int32(0)))
    return jnp.logical_and(0 < n, jnp.logical_and(jnp.int32(0) + jnp.int32(plus) < n, out[0] == out[1]))


def _in_loop(plus: int) -> Callable[[Any], Any]:
    def f(board: Any) -> Any:
        def body(i: Any, acc: Any) -> Any:
            return acc + _compacted(board[i], plus).astype(jnp.int32)

        return jax.lax.fori_loop(0, 2, body, jnp.int32(0))

    return f


CASES: list[tuple[str, Callable[..., Any], Callable[..., Any], list[Any], bool]] = [
    # name, f, g, example arguments (their dtypes and shapes), proven
    ("x + x is x * 2", lambda x: x + x, lambda x: x * 2, [jnp.int32(0)], True),
    ("max is a where", jnp.maximum, lambda a, b: jnp.where(a >= b, a, b), [jnp.int32(0), jnp.int32(0)], True),
    ("floor division by 2 is a shift", lambda x: x // 2, lambda x: x >> 1, [jnp.int32(0)], True),
    ("int8 x + 1 > x wraps at 127", lambda x: x + jnp.int8(1) > x, lambda x: jnp.bool_(True) | (x == x),
     [jnp.int8(0)], False),
    ("a shift past the width is 0", lambda x: jnp.left_shift(jnp.int32(1), x),
     lambda x: jnp.where((x < 0) | (x >= 32), 0, jnp.left_shift(jnp.int32(1), jnp.clip(x, 0, 31))),
     [jnp.int32(0)], True),
    ("a fill gather is not a clipped one", lambda a, i: a.at[i].get(mode="fill", fill_value=0),
     lambda a, i: a.at[i].get(mode="clip"), [jnp.zeros(4, jnp.int32), jnp.int32(0)], False),
    ("a dropped write is a guarded clipped one", lambda a, i, v: a.at[i].set(v, mode="drop"),
     lambda a, i, v: jnp.where((i >= -4) & (i < 4), a.at[jnp.clip(jnp.where(i < 0, i + 4, i), 0, 3)].set(v), a),
     [jnp.zeros(4, jnp.int32), jnp.int32(0), jnp.int32(0)], True),
    ("a dropped write at -1 is at the last slot", lambda a, i, v: a.at[i].set(v, mode="drop"),
     lambda a, i, v: jnp.where((i >= 0) & (i < 4), a.at[jnp.clip(i, 0, 3)].set(v), a),
     [jnp.zeros(4, jnp.int32), jnp.int32(0), jnp.int32(0)], False),
    ("a dropped write is not a clipped one", lambda a, i, v: a.at[i].set(v, mode="drop"),
     lambda a, i, v: a.at[jnp.clip(i, 0, 3)].set(v), [jnp.zeros(4, jnp.int32), jnp.int32(0), jnp.int32(0)], False),
    ("x - x is not 0.0 (inf, nan)", lambda x: x - x, lambda x: jnp.zeros_like(x), [jnp.float32(0)], False),
    ("an integer test that always holds picks the same float", lambda x, k: jnp.where(k * 2 == k + k, jnp.sin(x),
     jnp.cos(x)), lambda x, k: jnp.sin(x), [jnp.float32(0), jnp.int32(0)], True),
    ("another fold_in is another draw", lambda k: jax.random.bits(jax.random.fold_in(k, 1), (2,)),
     lambda k: jax.random.bits(jax.random.fold_in(k, 2), (2,)), [jax.random.key(0)], False),
    ("2048's `0 + 1 < n` guard is `0 - 1 < n` in a loop body", _in_loop(1), _in_loop(-1),
     [jnp.zeros((2, 4), jnp.int32)], True),
    ("but `0 + 2 < n` is not", _in_loop(1), _in_loop(2), [jnp.zeros((2, 4), jnp.int32)], False),
]


def _inputs(example: list[Any], gen: np.random.Generator) -> list[list[Any]]:
    """Argument lists that reach the edges: every int8, the int32 edges, small boards, several keys."""
    options = []
    for x in example:
        if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            options.append([jax.random.key(s) for s in range(4)])
        elif x.dtype == jnp.int8:
            options.append([jnp.int8(v) for v in range(-128, 128)])
        elif x.dtype == jnp.float32:
            options.append([jnp.float32(v) for v in (0.0, -0.0, 1.5, -2.0, 3e38, np.inf, np.nan)])
        elif x.shape:
            options.append([jnp.asarray(gen.integers(0, 3, x.shape), x.dtype) for _ in range(24)])
        else:
            options.append([jnp.int32(v) for v in I32])
    return [list(c) for c in itertools.islice(itertools.product(*options), 3000)]


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_proofs_hold_on_every_input_tried_and_differences_stay_unproven(name: str) -> None:
    _, f, g, example, expected = next(c for c in CASES if c[0] == name)
    a, b = jax.make_jaxpr(f)(*example), jax.make_jaxpr(g)(*example)
    why = smt.equal(a, b)
    gen = np.random.default_rng(0)
    same = all(
        np.array_equal(x, y, equal_nan=True) and np.signbit(x).tolist() == np.signbit(y).tolist()
        if np.asarray(x).dtype.kind == "f" else np.array_equal(x, y)
        for args in _inputs(example, gen)
        for x, y in zip(jax.tree.leaves(jax.jit(f)(*args)), jax.tree.leaves(jax.jit(g)(*args)))
    )  # fmt: skip
    assert (why is not None) == expected, why
    assert same == expected  # a proof holds everywhere; each unproven pair here does differ on some input


def test_a_proof_under_assumptions_is_named_as_such() -> None:
    """`count < 0` against `count <= 0`, with count = x + 1: equal only where x >= 0 (2048's declared `low: 0`)."""

    def f(le: bool) -> Callable[[Any], Any]:
        return lambda x: jnp.where(((x + 1) <= 0) if le else ((x + 1) < 0), 0, jnp.left_shift(1, x + 1))

    a, b = jax.make_jaxpr(f(False))(jnp.int32(0)), jax.make_jaxpr(f(True))(jnp.int32(0))
    assert smt.equal(a, b) is None
    why = smt.equal(a, b, lambda xs: smt.within(xs[0], 0, 17))
    assert why is not None and "assumptions" in why


def test_2048s_survivors_are_proven_and_a_killed_mutant_is_not() -> None:
    """The three survivors of 2048's last JAX run: the slide's two `j + 1 < n` guards are proven for every input
    (the line's slots past its `n` tiles hold 0), the shift guard `count < 0` only within the board's declared
    `low: 0`; dropping the compaction's `v != 0` test is not proven (the suite kills it)."""
    from envc.mutate.jax import JaxProgram

    prog = JaxProgram(envc.load(str(ROOT / "docs" / "examples" / "game_2048.yaml")))

    def site(code: str, change: str) -> Any:
        return next(s for s in prog.sites if prog.code(s).startswith(code) and s.describe() == change)

    guard = site("cond_7 = jnp.logical_and(((jnp.int32(0) + jnp.int32(1)) < n_9)", "+ -> -")
    shift = site("merged_11 = (merged_10 + jnp.where((count_3 < 0)", "< -> <=")
    killed = site("cond_1 = (v_1 != jnp.int32(0))", "!= -> ==")
    why = prog.proven_equal(guard, prog.env(guard))
    assert why is not None and why.startswith("proven equal by z3"), why
    why = prog.proven_equal(shift, prog.env(shift))
    assert why is not None and why.startswith(smt.BOUNDED), why
    assert prog.proven_equal(killed, prog.env(killed)) is None
