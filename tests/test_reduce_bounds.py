"""Reductions whose condition starts with `i < x` stop the loop at x in the reference (envc/interpret.py,
`Compiler._leading_bound`): the same results as testing the condition at every step, for every x (below the
range, inside, past it), for `<` and `<=`, with a further condition, a range not starting at 0 and an i8 bound;
and the reference agrees with JAX on them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import envc
from envc import ir
from envc.interpret import Compiler, ReferenceEnv

SPEC = """
name: reduce_bounds
version: "1.0"
players: 1
state:
  v: {type: i32, shape: [8]}
  n: {type: i32}
  k: {type: i8}
  r_count: {type: i32}
  r_sum: {type: i32}
  r_le: {type: i32}
  r_and: {type: i32}
  r_min: {type: i32}
  r_argmax: {type: i32}
  r_any: {type: bool}
  r_all: {type: bool}
  r_i8: {type: i32}
  r_start: {type: i32}
  r_nested: {type: i32}
actions:
  go:
    effect: |
      r_count = count(v[i] > 0 for i in range(8) if i < n)
      r_sum = sum(v[i] for i in range(8) if i < n)
      r_le = sum(v[i] for i in range(8) if i <= n)
      r_and = count(v[i] > 0 for i in range(8) if i < n and v[i] != 5)
      r_min = min(v[i] for i in range(8) if i < n)
      r_argmax = argmax(v[i] for i in range(8) if i < n)
      r_any = any(v[i] > 2 for i in range(8) if i < n)
      r_all = all(v[i] > 0 for i in range(8) if i < n)
      r_i8 = sum(v[i] for i in range(8) if i < k)
      r_start = sum(v[i] for i in range(3, 8) if i < n)
      r_nested = sum(count(v[j] < v[i] for j in range(8) if j < i) for i in range(8) if i < n)
reward: "0.0"
terminated: "false"
observation:
  fields:
    o: {type: i32}
  body: |
    o = r_sum
"""
V = [3, -1, 5, 0, 7, 5, 2, 9]
BOUNDS = [-3, 0, 1, 2, 5, 7, 8, 12]


def expected(v: list[int], n: int, k: int) -> dict[str, Any]:
    """The reductions with the condition tested at every step, in plain Python."""
    upto = [x for i, x in enumerate(v) if i < n]
    return {
        "r_count": sum(x > 0 for x in upto),
        "r_sum": sum(upto),
        "r_le": sum(x for i, x in enumerate(v) if i <= n),
        "r_and": sum(x > 0 for x in upto if x != 5),
        "r_min": min(upto) if upto else 2**31 - 1,
        "r_argmax": max(range(len(upto)), key=lambda i: (upto[i], -i)) if upto else -1,
        "r_any": any(x > 2 for x in upto),
        "r_all": all(x > 0 for x in upto),
        "r_i8": sum(x for i, x in enumerate(v) if i < k),
        "r_start": sum(x for i, x in enumerate(v) if 3 <= i < n),
        "r_nested": sum(sum(v[j] < v[i] for j in range(i)) for i in range(min(n, 8))),
    }


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> ir.SpecIR:
    path = tmp_path_factory.mktemp("bounds") / "reduce_bounds.yaml"
    path.write_text(SPEC)
    return envc.load(str(path))


def step(env: Any, spec: ir.SpecIR, n: int, k: int) -> dict[str, Any]:
    d = env.state_to_dict(env.init(np.zeros(2, np.uint32)))
    d.update(v=np.array(V, np.int32), n=np.int32(n), k=np.int8(k))
    out = env.state_to_dict(env.step(env.state_from_dict(d), 0, np.array([0, 1], np.uint32)))
    return {name: out[name].item() for name in expected(V, n, k)}


def test_every_reduction_here_takes_the_bounded_loop(spec: ir.SpecIR) -> None:
    """The results below come from the bounded loop: every condition here is recognized, the inner `j < i` too
    (its bound is the outer loop's variable, fixed while the inner loop runs)."""
    compiler = Compiler(spec, strict=True)
    reduces = [n for n in ir.nodes(spec.actions) if isinstance(n, ir.Reduce)]
    assert len(reduces) == 12
    assert all(compiler._leading_bound(r)[0] is not None for r in reduces)
    rest = [compiler._leading_bound(r)[1] for r in reduces]
    assert sum(r is not None for r in rest) == 1  # `and v[i] != 5` stays a test at each step


def test_bounds_that_cannot_stop_the_loop_are_left_alone(spec: ir.SpecIR) -> None:
    """A bound with a draw, a call or a reduction in it is tested at every step, as written."""
    compiler = Compiler(spec, strict=True)
    r = next(n for n in ir.nodes(spec.actions) if isinstance(n, ir.Reduce) and n.op == "sum")
    assert isinstance(r.cond, ir.Binary)
    inner = next(n for n in ir.nodes(spec.actions) if isinstance(n, ir.Reduce) and n.var == "j")
    with_reduce = r.model_copy(update={"cond": r.cond.model_copy(update={"b": inner})})
    assert compiler._leading_bound(with_reduce) == (None, with_reduce.cond)
    greater = r.model_copy(update={"cond": r.cond.model_copy(update={"op": ">"})})
    assert compiler._leading_bound(greater) == (None, greater.cond)


@pytest.mark.parametrize("n", BOUNDS)
def test_reference_stops_where_the_condition_would(spec: ir.SpecIR, n: int) -> None:
    got = step(ReferenceEnv(spec), spec, n, k=n % 9)
    assert got == expected(V, n, n % 9)


def test_jax_agrees(spec: ir.SpecIR) -> None:
    ref, jenv = ReferenceEnv(spec), envc.build(spec, backend="jax")
    for n in BOUNDS:
        assert step(jenv, spec, n, k=-n) == step(ref, spec, n, k=-n) == expected(V, n, -n)
