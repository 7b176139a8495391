"""Language 1.1 values (docs/spec-language.md 6.7 and 17): array literals (`[a, b]`, rows `[[1, 2], [3, 4]]`,
adapting to the target's element type), functions that return several values (`returns: [f32, "f32[4]", i32, Cell]`,
`return a, b`, an expression body `a, b`, a parenthesized multi-line one), taking them apart (`let x, v = f(...)`,
`x, v = f(...)` into locals, state fields, elements, with conversions; inside a guarded loop body and a 20-step
loop), and scalar operations lifted to arrays element by element (unary `-`, `not`, `~`, comparisons, `and`/`or`,
`**`, shifts, `if`/`select`, casts, math builtins). One spec on the reference, JAX and Rust (one build): ints and
bools agree exactly, floats within `envc verify`'s tolerance (transcendental functions, section 10.2); the reference
is checked by hand on the exact parts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel

import envc
from envc import ir, rng

SPEC = """\
name: many_values
doc: Array literals, several return values, and scalar operations lifted to arrays, on every backend.
version: "1.0"
players: 1
params:
  dt: 0.05
types:
  Cell: {enum: [empty, x, o]}
constants:
  W: {type: f32, shape: [4], value: [1.0, 2.0, 0.5, -1.0]}
state:
  s: {type: f32, shape: [4]}
  v: {type: f32, shape: [2]}
  m: {type: i32, shape: [2, 3]}
  b: {type: i8, shape: [4]}
  u: {type: u32, shape: [3]}
  cells: {type: Cell, shape: [2]}
  flags: {type: bool, shape: [4]}
  t: f32
  k: i32
  hits: i32
functions:
  polar:
    doc: "two values, one expression"
    params: {x: f32, y: f32}
    returns: [f32, f32]
    body: "hypot(x, y), atan2(y, x)"
  split:
    doc: "several kinds of values, statements"
    params:
      y: f32[4]
      n: i32
    returns: [f32, "f32[4]", i32, Cell]
    body: |
      let head = y[0]
      let rest = [y[1], y[2], y[3], 0.0]
      return head * 2.0, -rest, n + 1, if n > 2 then Cell.x else Cell.o
  spread:
    doc: "a parenthesized multi-line pair"
    params: {a: f32}
    returns: ["f32[2]", "i8[4]"]
    body: |
      ([a, a + 1],
       [1, -2, 3, -4])
  derivs:
    params:
      y: f32[4]
      u: f32
    returns: f32[4]
    body: "[y[1], u - y[0] * 0.5, y[3], -y[2]]"
  rk4:
    params:
      y0: f32[4]
      h: f32
      u: f32
    returns: f32[4]
    body: |
      let k1 = derivs(y0, u)
      let k2 = derivs(y0 + h / 2.0 * k1, u)
      let k3 = derivs(y0 + h / 2.0 * k2, u)
      let k4 = derivs(y0 + h * k3, u)
      return y0 + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
actions:
  literals:
    effect: |
      let d = [s[1], dt - s[0], 0, 2]
      let grid = [[1, 2, k], [4, 5, 6]]
      let rows = [v, [0.5, -0.5]]
      s = d * [1, 2, 1, 2] + rows[1, 0]
      m = grid + m
      v = [1, 0]
      u = [7, 0xFFFFFFFF, 3] + u
      cells = [Cell.o, cells[0]]
      flags = [true, false, s[0] > 0.0, not flags[3]]
      t = t + sum([1.5, 2.5]) + d[3] + f32(len(d) + len(rows[0]))
  unpack:
    effect: |
      let r, a = polar(s[0], s[1])
      let h, rest, n, c = split(s, k)
      v, b = spread(r)
      s = rest + h
      t, s[2] = polar(a, 3.0)
      s[1], s, m[0, 1], cells[0] = split(s, k)
      t, s, s[3], cells[1] = split(rest, n)
      v, b = spread(a)
      for i in range(3):
        if i == 1:
          continue
        let pp, q = polar(f32(i), s[i])
        t = t + pp * q
        if t > 100.0:
          t, v[1] = polar(q, 1.0)
  lifted:
    effect: |
      let y = -s
      let w = clip(y * 2.0, -1.0, 1.0) + abs(sin(s)) - cos(y) * 0.5 + sqrt(abs(s)) + exp(-abs(s))
      let z = atan2(y, W) + max(s, W) - min(s, 0.0) + floor(s * 3.0) + round(s * 2.5) + sign(y)
      let q = fmod(s * 7.0, 2.0) + hypot(s, W) + tanh(s) + pow(abs(s), 1.5) + abs(s) ** 2 + trunc(y * 1.5)
      flags = (s > 0.0) and not (w < -0.5) or isnan(z)
      hits = hits + count(flags) + i32(any(abs(y) > 1.0))
      s = if flags then w else z + q * 0.01
      b = -b + i8(s * 4.0)
      u = (u << 2) ^ ~u >> 1
      m[0] = i32(b[1]) * [1, 2, 3] % 5
      v = select(v > 0.0, f32([m[1, 0], m[1, 1]]), -v)
  integrate:
    effect: |
      s = rk4(s, dt, t * 0.01)
      t = t + sum(s * s)
      let acc = 0.0
      for j in range(20):
        let c1, s1 = polar(f32(j), acc + 1.0)
        let h, rest, n, c = split(s * 0.5, j)
        acc, t = polar(c1 * 0.01 + h, s1 + rest[2])
        k = k + n
reward: t
terminated: "false"
reset: |
  s = [1.0, -0.5, 0.25, 2]
  b = [1, -2, 3, 127]
  m = [[1, 2, 3], [-4, 5, -6]]
  u = [1, 2, 0x80000000]
observation:
  fields: {obs: {type: f32, shape: [4]}}
  body: "obs = s"
"""

ACTIONS = [0, 1, 2, 3, 1, 2, 0, 3, 2, 2, 1, 3, 0, 1]
LITERALS, UNPACK, LIFTED = 0, 1, 2


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> envc.SpecIR:
    path = tmp_path_factory.mktemp("values") / "many_values.yaml"
    path.write_text(SPEC)
    return envc.load(str(path))


def one_step(spec: envc.SpecIR, action: int) -> dict[str, np.ndarray]:
    env = envc.build(spec)
    st = env.step(env.init(rng.key_from_seed(0)), action, rng.key_from_seed(1))
    return {k: np.asarray(v) for k, v in env.state_to_dict(st).items()}


def trajectory(env: Any) -> list[dict[str, np.ndarray]]:
    st = env.init(rng.key_from_seed(0))
    out = []
    for a in ACTIONS:
        st = env.step(st, a, rng.key_from_seed(1))
        out.append({k: np.asarray(v) for k, v in env.state_to_dict(st).items()})
    return out


def test_the_ir_uses_the_new_forms(spec: envc.SpecIR) -> None:
    """The spec exercises what it claims to: array literals, elementwise maps, several values, unpacking."""
    kinds: set[str] = set()
    todo: list[object] = [spec]
    while todo:
        node = todo.pop()
        if isinstance(node, (ir._Expr, ir._Stmt)):
            kinds.add(node.kind)
        if isinstance(node, BaseModel):
            todo.extend(getattr(node, k) for k in type(node).model_fields)
        elif isinstance(node, (tuple, list)):
            todo.extend(node)
    assert {"array", "map", "values", "unpack"} <= kinds
    several = {c.name: [t.show() for t in c.results] for c in spec.callables if c.results}
    assert several == {
        "polar": ["f32", "f32"],
        "split": ["f32", "f32[4]", "i32", "Cell"],
        "spread": ["f32[2]", "i8[4]"],
    }


def test_array_literals_by_hand(spec: envc.SpecIR) -> None:
    """`literals` from the reset state: element types, rows, adaptation to the target, wrapping, enums, bools."""
    d = one_step(spec, LITERALS)
    f32 = np.float32
    s0 = np.array([1.0, -0.5, 0.25, 2.0], dtype=f32)
    lit = np.array([s0[1], f32(0.05) - s0[0], 0.0, 2.0], dtype=f32)  # [s[1], dt - s[0], 0, 2]: f32[4]
    s = lit * np.array([1, 2, 1, 2], dtype=f32) + f32(0.5)  # `[1, 2, 1, 2]` takes f32; rows[1, 0] == 0.5
    np.testing.assert_array_equal(d["s"], s)
    np.testing.assert_array_equal(d["m"], np.array([[1, 2, 0], [4, 5, 6]]) + np.array([[1, 2, 3], [-4, 5, -6]]))
    np.testing.assert_array_equal(d["v"], np.array([1.0, 0.0], dtype=f32))
    np.testing.assert_array_equal(d["u"], np.array([8, 1, 0x80000003], dtype=np.uint32))  # u32 wraps
    np.testing.assert_array_equal(d["cells"], [2, 0])  # [Cell.o, cells[0]]
    np.testing.assert_array_equal(d["flags"], [True, False, False, True])
    assert d["t"] == f32(12.0)  # sum([1.5, 2.5]) + d[3] + f32(len(d) + len(rows[0]))


def test_several_values_by_hand(spec: envc.SpecIR) -> None:
    """`unpack`: values go to their targets left to right, each converted to the target's type."""
    d = one_step(spec, UNPACK)
    f32 = np.float32
    a = f32(np.arctan2(f32(-0.5), f32(1.0)))  # polar(1.0, -0.5)[1]
    np.testing.assert_allclose(d["v"], [a, a + f32(1.0)], rtol=1e-6)  # v, b = spread(a)
    np.testing.assert_array_equal(d["b"], [1, -2, 3, -4])
    assert d["m"][0, 1] == 1  # s[1], s, m[0, 1], cells[0] = split(s, k): n + 1 with k == 0
    np.testing.assert_array_equal(d["cells"], [2, 2])  # `if n > 2 then Cell.x else Cell.o`
    # t, s, s[3], cells[1] = split(rest, n) with rest = -[s[1], s[2], s[3], 0.0] of the reset state:
    # s = -[rest[1], rest[2], rest[3], 0.0], then s[3] = f32(n + 1) (an i32 into an f32 element)
    np.testing.assert_array_equal(d["s"], np.array([0.25, 2.0, 0.0, 2.0], dtype=f32))


def test_lifted_integer_operations_by_hand(spec: envc.SpecIR) -> None:
    """`lifted`: shifts, `~` and `^` on a u32 array, and a count over an elementwise comparison."""
    d = one_step(spec, LIFTED)
    u = np.array([1, 2, 0x80000000], dtype=np.uint32)
    np.testing.assert_array_equal(d["u"], (u << np.uint32(2)) ^ (~u >> np.uint32(1)))
    assert d["hits"] == np.count_nonzero(d["flags"]) + 1  # any(abs(-s) > 1.0) with s[3] == 2.0


def test_jax_and_rust_agree_step_by_step(spec: envc.SpecIR) -> None:
    ref = trajectory(envc.build(spec))
    for backend in ("jax", "rust"):
        got = trajectory(envc.build(spec, backend=backend))
        for t, (a, b) in enumerate(zip(ref, got)):
            for k in a:
                if a[k].dtype == np.float32:
                    ok = np.allclose(a[k], b[k], rtol=1e-5, atol=1e-6)
                else:
                    ok = np.array_equal(a[k], b[k])
                assert ok, f"{backend} step {t} field {k}: {a[k]} != {b[k]}"
