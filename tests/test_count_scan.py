"""`count(a[..., i] == x for i in range(lo, hi) if i < n)` in the reference is one `list.count` over the slots
the loop reads (envc/interpret.py, `Compiler._count_scan`): the same counts and the same strict-mode errors as
the loop, for reads on either side of `==` and `!=`, widening casts, a constant table, the loop variable in
any index position and indices that are expressions; counts the scan cannot take run the loop; JAX agrees."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import envc
from envc import ir
from envc.diagnostics import SpecRuntimeError
from envc.interpret import Compiler, ReferenceEnv

SPEC = """
name: count_scan
version: "1.0"
players: 1
constants:
  TAB: {type: i32, shape: [8], value: [4, 1, 4, 0, 4, 2, 7, 4]}
state:
  t: {type: i8, shape: [2, 8]}
  u: {type: i16, shape: [4, 2]}
  f: {type: f32, shape: [8]}
  b: {type: bool, shape: [8]}
  pl: {type: i32}
  n: {type: i32}
  w: {type: i32}
  c_eq: {type: i32}
  c_ne: {type: i32}
  c_rhs: {type: i32}
  c_mid: {type: i32}
  c_const: {type: i32}
  c_cast: {type: i32}
  c_expr: {type: i32}
  c_float: {type: i32}
  c_bool: {type: i32}
  c_loopdep: {type: i32}
actions:
  go:
    effect: |
      c_eq = count(t[pl, i] == w for i in range(8) if i < n)
      c_ne = count(t[pl, i] != w for i in range(8) if i < n)
      c_rhs = count(w == i32(t[pl, i]) for i in range(2, 8) if i <= n)
      c_mid = count(u[i, pl] == w for i in range(4))
      c_const = count(TAB[i] == w for i in range(8) if i < n)
      c_cast = count(t[pl, i8(i)] == w for i in range(8) if i < n)
      c_expr = count(t[1 - pl, i] == w * 2 - 1 for i in range(8))
      c_float = count(f[i] == 1.5 for i in range(8) if i < n)
      c_bool = count(b[i] == true for i in range(8) if i < n)
      c_loopdep = count(t[pl, i] == i for i in range(8) if i < n)
reward: "0.0"
terminated: "false"
observation:
  fields:
    o: {type: i32}
  body: |
    o = c_eq
"""
SCANNED = ("c_eq", "c_ne", "c_rhs", "c_mid", "c_const", "c_cast", "c_expr")
LOOPED = ("c_float", "c_bool", "c_loopdep")  # a float or bool element, an x that changes with i
TAB = [4, 1, 4, 0, 4, 2, 7, 4]


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> ir.SpecIR:
    path = tmp_path_factory.mktemp("scan") / "count_scan.yaml"
    path.write_text(SPEC)
    return envc.load(str(path))


def targets(spec: ir.SpecIR) -> dict[str, ir.Reduce]:
    return {s.target.name: s.value for s in spec.actions[0].effect if isinstance(s.value, ir.Reduce)}


def test_which_counts_take_the_scan(spec: ir.SpecIR) -> None:
    compiler = Compiler(spec, strict=True)
    taken = {name for name, r in targets(spec).items() if compiler._count_scan(r, lambda fr: r.stop, lambda fr: 0)}
    assert taken == set(SCANNED)
    assert set(targets(spec)) == set(SCANNED) | set(LOOPED)


def states(spec: ir.SpecIR, count: int, in_range: bool) -> list[dict[str, Any]]:
    """Random states; outside `in_range` the player index and the bound also take values off both ends."""
    env = ReferenceEnv(spec)
    base = env.state_to_dict(env.init(np.zeros(2, np.uint32)))
    gen = np.random.default_rng(7)
    out = []
    for _ in range(count):
        d = dict(base)
        d.update(t=gen.integers(-2, 3, (2, 8)).astype(np.int8), u=gen.integers(0, 3, (4, 2)).astype(np.int16),
                 f=gen.choice([1.5, 0.0], 8).astype(np.float32), b=gen.integers(0, 2, 8).astype(bool),
                 pl=np.int32(gen.integers(0, 2) if in_range else gen.integers(-2, 4)),
                 n=np.int32(gen.integers(0, 9) if in_range else gen.integers(-3, 12)),
                 w=np.int32(gen.integers(-1, 5)))
        out.append(d)
    return out


def step(env: Any, d: dict[str, Any]) -> dict[str, Any]:
    out = env.state_to_dict(env.step(env.state_from_dict(d), 0, np.array([0, 1], np.uint32)))
    return {name: out[name].item() for name in (*SCANNED, *LOOPED)}


def outcome(env: Any, d: dict[str, Any]) -> Any:
    try:
        return step(env, d)
    except SpecRuntimeError as e:
        return f"error: {e}"


@pytest.mark.parametrize("strict", [False, True])
def test_the_scan_equals_the_loop(spec: ir.SpecIR, strict: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Clamped reads (lenient) and the error of the first bad read (strict) included."""
    scan = ReferenceEnv(spec, strict=strict)
    monkeypatch.setattr(Compiler, "_count_scan", lambda self, e, stop, slow: None)
    loop = ReferenceEnv(spec, strict=strict)
    cases = states(spec, 300, in_range=False)
    got = [outcome(scan, d) for d in cases]
    assert got == [outcome(loop, d) for d in cases]
    errors = sum(isinstance(g, str) for g in got)
    assert (errors > 0) == strict and errors < len(got)


def expected(d: dict[str, Any]) -> dict[str, int]:
    """The counts in plain Python (in-range states)."""
    t, u, pl, n, w = d["t"].tolist(), d["u"].tolist(), int(d["pl"]), int(d["n"]), int(d["w"])
    f, b = d["f"].tolist(), d["b"].tolist()
    upto = range(min(n, 8))
    return {
        "c_eq": sum(t[pl][i] == w for i in upto), "c_ne": sum(t[pl][i] != w for i in upto),
        "c_rhs": sum(w == t[pl][i] for i in range(2, min(n + 1, 8))), "c_mid": sum(u[i][pl] == w for i in range(4)),
        "c_const": sum(TAB[i] == w for i in upto), "c_cast": sum(t[pl][i] == w for i in upto),
        "c_expr": sum(t[1 - pl][i] == w * 2 - 1 for i in range(8)), "c_float": sum(f[i] == 1.5 for i in upto),
        "c_bool": sum(b[i] for i in upto), "c_loopdep": sum(t[pl][i] == i for i in upto),
    }


def test_reference_and_jax_count_as_python_does(spec: ir.SpecIR) -> None:
    ref, jenv = ReferenceEnv(spec, strict=True), envc.build(spec, backend="jax")
    cases = states(spec, 40, in_range=True)
    want = [expected(d) for d in cases]
    assert [step(ref, d) for d in cases] == want
    assert [step(jenv, d) for d in cases] == want
    assert len({w["c_eq"] for w in want}) > 2  # the states tell the counts apart


def test_a_range_past_the_axis_runs_the_loop(spec: ir.SpecIR, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker keeps a loop's range inside the axes it indexes (E053); IR built past it (range(10) over 8
    slots) gets the loop's clamped reads and its strict-mode error, not a short slice."""
    action = spec.actions[0]
    effect = tuple(s.model_copy(update={"value": s.value.model_copy(update={"stop": 10})})
                   if isinstance(s.value, ir.Reduce) and s.target.name == "c_eq" else s for s in action.effect)
    wide = spec.model_copy(update={"actions": (action.model_copy(update={"effect": effect}),)})
    cases = [d | {"n": np.int32(10)} for d in states(spec, 20, in_range=True)]
    got = {strict: [outcome(ReferenceEnv(wide, strict=strict), d) for d in cases] for strict in (False, True)}
    monkeypatch.setattr(Compiler, "_count_scan", lambda self, e, stop, slow: None)
    assert got == {strict: [outcome(ReferenceEnv(wide, strict=strict), d) for d in cases] for strict in (False, True)}
    assert all(g.startswith("error: ") and "index 8 out of range for 't'" in g for g in got[True])
