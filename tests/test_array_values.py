"""Array values (docs/spec-language.md 6, 8 and 17): `let` locals of static shape, their element reads and
writes, elementwise + - * / // % with array-scalar broadcasting, and functions taking and returning arrays (an
RK4 integrator written once over a 4-vector, as gymnasium's acrobot `rk4(derivs, y0, t)`). One spec runs on the
reference, JAX and Rust (one build) and every step agrees (Rust bit for bit, as the arithmetic is + - * / only;
JAX within the fused-multiply-add tolerance), and the reference agrees with the same RK4 in numpy float32."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import envc
from envc import rng

SPEC = """\
name: array_values
doc: Array locals, elementwise arithmetic and an RK4 step written once as a function over a 4-vector.
version: "1.0"
players: 1
params:
  dt: 0.05
constants:
  W: {type: f32, shape: [4], value: [1.0, 2.0, 0.5, -1.0]}
state:
  s: {type: f32, shape: [4]}
  t: f32
  n: {type: f32, shape: [4]}
  board: {type: i32, shape: [2, 3]}
  row: {type: i32, shape: [3]}
  out: {type: f32, shape: [4]}
  acc: f32
functions:
  derivs:
    params:
      y: f32[4]
      u: f32
    returns: f32[4]
    body: |
      let d = y * W
      d[0] = y[1] + u
      d[1] = 0.0 - y[0] * 0.5
      return d
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
  tail_sum:
    params: {y: "f32[4]"}
    returns: f32
    body: "sum(y) - y[0]"
actions:
  left:
    effect: |
      s = rk4(s, dt, -1.0)
      t = t + tail_sum(s)
      n = derivs(s, 0.0) * 2.0
  right:
    effect: |
      let y = rk4(s, dt, 1.0)
      s = y
      t = t + sum(y * y)
  locals:
    effect: |
      let y = s
      let k1 = y * W - 0.5 * y
      let k2 = (y + dt / 2.0 * k1) * W
      let z = y + dt / 6.0 * (k1 + 2.0 * k2)
      z[0] = z[0] + 1.0
      z[3] -= 0.25
      let r = board[1]
      r = r * 2 + board[0]
      r[2] = 7
      let q = r % 5 - r // 3
      for i in range(4):
        acc = acc + z[i]
        z[i] = z[i] * 0.5
      z += k1
      if acc > 2.0:
        z = z / 2.0
      s = z
      out = k2 / (y + 3.0)
      let m = board
      m[1] = q
      m[0, 2] = m[1, 0] + 9
      row = m[1] + m[0] * 3
      board[0] = r
      board[1] = m[0]
reward: t + acc
terminated: "false"
reset: |
  s[0] = 1.0
  s[1] = -0.5
  s[2] = 0.25
  s[3] = 2.0
  board[1, 0] = 3
  board[1, 2] = -4
  board[0, 1] = 5
observation:
  fields: {obs: {type: f32, shape: [4]}}
  body: "obs = s"
"""

ACTIONS = [0, 1, 2, 0, 2, 1, 1, 2, 0, 0, 2, 2, 1]


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> envc.SpecIR:
    path = tmp_path_factory.mktemp("arrays") / "array_values.yaml"
    path.write_text(SPEC)
    return envc.load(str(path))


def trajectory(env: Any) -> list[dict[str, np.ndarray]]:
    st = env.init(rng.key_from_seed(0))
    out = []
    for a in ACTIONS:
        st = env.step(st, a, rng.key_from_seed(1))
        d = env.state_to_dict(st)
        out.append({k: np.asarray(v) for k, v in d.items()})
    return out


def np_rk4(y0: np.ndarray, h: np.float32, u: np.float32) -> np.ndarray:
    """The spec's `rk4`, in numpy float32 with the same operation order."""
    f32 = np.float32
    w = np.array([1.0, 2.0, 0.5, -1.0], dtype=f32)

    def derivs(y: np.ndarray) -> np.ndarray:
        d = y * w
        d[0] = y[1] + u
        d[1] = f32(0.0) - y[0] * f32(0.5)
        return d

    k1 = derivs(y0)
    k2 = derivs(y0 + h / f32(2.0) * k1)
    k3 = derivs(y0 + h / f32(2.0) * k2)
    k4 = derivs(y0 + h * k3)
    return y0 + h / f32(6.0) * (k1 + f32(2.0) * k2 + f32(2.0) * k3 + k4)


def test_reference_rk4_matches_numpy(spec: envc.SpecIR) -> None:
    ref = envc.build(spec)
    st = ref.init(rng.key_from_seed(0))
    y = np.array([1.0, -0.5, 0.25, 2.0], dtype=np.float32)
    for a, u in [(0, -1.0), (1, 1.0), (1, 1.0), (0, -1.0)]:
        st = ref.step(st, a, rng.key_from_seed(1))
        y = np_rk4(y, np.float32(0.05), np.float32(u))
        np.testing.assert_array_equal(ref.state_to_dict(st)["s"], y)


def test_array_locals_by_hand(spec: envc.SpecIR) -> None:
    """Element writes, row slices, integer elementwise ops and broadcasting, checked by hand for one step."""
    ref = envc.build(spec)
    st = ref.step(ref.init(rng.key_from_seed(0)), 2, rng.key_from_seed(1))
    d = ref.state_to_dict(st)
    f32 = np.float32
    y = np.array([1.0, -0.5, 0.25, 2.0], dtype=f32)
    w = np.array([1.0, 2.0, 0.5, -1.0], dtype=f32)
    dt = f32(0.05)
    k1 = y * w - f32(0.5) * y
    k2 = (y + dt / f32(2.0) * k1) * w
    z = y + dt / f32(6.0) * (k1 + f32(2.0) * k2)
    z[0] = z[0] + f32(1.0)
    z[3] = z[3] - f32(0.25)
    acc = f32(0.0)
    for i in range(4):
        acc = f32(acc + z[i])
        z[i] = z[i] * f32(0.5)
    z = z + k1
    if acc > 2.0:
        z = z / f32(2.0)
    np.testing.assert_array_equal(d["s"], z)
    assert d["acc"] == acc
    np.testing.assert_array_equal(d["out"], k2 / (y + f32(3.0)))
    r = np.array([6, 5, 7], dtype=np.int32)  # board[1] * 2 + board[0], then r[2] = 7
    q = r % 5 - r // 3
    m = np.array([[0, 5, q[0] + 9], q], dtype=np.int32)  # the board before the step, then m[1] = q, m[0, 2] = ...
    np.testing.assert_array_equal(d["board"], np.array([r, m[0]], dtype=np.int32))
    np.testing.assert_array_equal(d["row"], m[1] + m[0] * 3)


def test_jax_and_rust_agree_step_by_step(spec: envc.SpecIR) -> None:
    """Rust bit for bit; JAX ints exactly and floats within `envc verify`'s tolerance (XLA may fuse a multiply
    and an add into one rounding, docs/jax-backend.md)."""
    ref = trajectory(envc.build(spec))
    for backend in ("jax", "rust"):
        got = trajectory(envc.build(spec, backend=backend))
        for t, (a, b) in enumerate(zip(ref, got)):
            for k in a:
                if backend == "jax" and a[k].dtype == np.float32:
                    ok = np.allclose(a[k], b[k], rtol=1e-5, atol=1e-6)
                else:
                    ok = np.array_equal(a[k], b[k])
                assert ok, f"{backend} step {t} field {k}: {a[k]} != {b[k]}"
