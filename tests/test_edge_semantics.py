"""Edge values on lint-clean specs (docs/spec-language.md 6.4, 6.6, 11, 18): float -> int casts out of range and
of NaN/inf, wrapping int casts, integer and f32 `//` and `%` (zero divisors, MIN // -1, signed zeros, infinities,
NaN, subnormals), empty and NaN-holding reductions, loops at the ends of i32, literals that do not fit their type.
One spec computes every edge value into state fields; the reference, JAX and Rust builds must agree bit for bit
(NaN payloads aside) on a fixed sample of special values, and JAX also on hypothesis-drawn floats."""

from __future__ import annotations

import itertools
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envc
from envc import rng

K = 64  # lanes: operand pairs per step

SPEC = f"""
name: edge_semantics
doc: Every edge value of casts, division, modulo and reductions, computed from injected operands.
version: "1.0"
players: 1
types:
  Col: {{enum: [red, green, blue]}}
state:
  x: {{type: f32, shape: [{K}]}}
  y: {{type: f32, shape: [{K}]}}
  fd: {{type: f32, shape: [{K}]}}
  fm: {{type: f32, shape: [{K}]}}
  c8: {{type: i8, shape: [{K}]}}
  c16: {{type: i16, shape: [{K}]}}
  c32: {{type: i32, shape: [{K}]}}
  cu: {{type: u32, shape: [{K}]}}
  a: {{type: i32, shape: [{K}]}}
  b: {{type: i32, shape: [{K}]}}
  id32: {{type: i32, shape: [{K}]}}
  im32: {{type: i32, shape: [{K}]}}
  w8: {{type: i8, shape: [{K}]}}
  w16: {{type: i16, shape: [{K}]}}
  wu: {{type: u32, shape: [{K}]}}
  af: {{type: f32, shape: [{K}]}}
  an: {{type: i32, shape: [{K}]}}
  aa: {{type: i32, shape: [{K}]}}
  am: {{type: i32, shape: [{K}]}}
  a8: {{type: i8, shape: [{K}]}}
  b8: {{type: i8, shape: [{K}]}}
  id8: {{type: i8, shape: [{K}]}}
  im8: {{type: i8, shape: [{K}]}}
  m8: {{type: i8, shape: [{K}]}}
  n8: {{type: i8, shape: [{K}]}}
  ab8: {{type: i8, shape: [{K}]}}
  s8: {{type: i8, shape: [{K}]}}
  u: {{type: u32, shape: [{K}]}}
  v: {{type: u32, shape: [{K}]}}
  ud: {{type: u32, shape: [{K}]}}
  um: {{type: u32, shape: [{K}]}}
  uf: {{type: f32, shape: [{K}]}}
  ui: {{type: i32, shape: [{K}]}}
  u8c: {{type: i8, shape: [{K}]}}
  un: {{type: u32, shape: [{K}]}}
  rx: {{type: f32, shape: [{K}]}}
  keep: {{type: bool, shape: [{K}]}}
  rf: {{type: f32, shape: [{K}]}}
  never: bool
  red_f: {{type: f32, shape: [17]}}
  red_i: {{type: i32, shape: [16]}}
  red_b: {{type: bool, shape: [4]}}
  red_u: {{type: u32, shape: [2]}}
  red_8: {{type: i8, shape: [2]}}
  red_c: {{type: Col, shape: [2]}}
  loops: {{type: i32, shape: [6]}}
  lit_f: {{type: f32, shape: [14]}}
  lit_i: {{type: i32, shape: [8]}}
  lit_u: {{type: u32, shape: [4]}}
  lit_8: {{type: i8, shape: [4]}}
actions:
  go:
    effect: |
      for i in range({K}):
        fd[i] = x[i] // y[i]
        fm[i] = x[i] % y[i]
        c8[i] = i8(x[i])
        c16[i] = i16(x[i])
        c32[i] = i32(x[i])
        cu[i] = u32(x[i])
        id32[i] = a[i] // b[i]
        im32[i] = a[i] % b[i]
        w8[i] = i8(a[i])
        w16[i] = i16(a[i])
        wu[i] = u32(a[i])
        af[i] = f32(a[i])
        an[i] = -a[i]
        aa[i] = abs(a[i])
        am[i] = a[i] * b[i] + a[i]
        id8[i] = a8[i] // b8[i]
        im8[i] = a8[i] % b8[i]
        m8[i] = a8[i] * b8[i]
        n8[i] = -a8[i]
        ab8[i] = abs(a8[i])
        ud[i] = u[i] // v[i]
        um[i] = u[i] % v[i]
        uf[i] = f32(u[i])
        ui[i] = i32(u[i])
        u8c[i] = i8(u[i])
        un[i] = -u[i] + abs(v[i])
        rf[i] = floor(rx[i]) + ceil(rx[i]) * 0.5
      for i in range({K}):
        s8[i] = a8[i]
        s8[i] += b8[i]
        s8[i] *= 3
      red_f[0] = min(rx)
      red_f[1] = max(rx)
      red_f[2] = sum(rx)
      red_f[3] = min(rx[i] for i in range({K}) if keep[i])
      red_f[4] = max(rx[i] for i in range({K}) if keep[i])
      red_f[5] = sum(rx[i] for i in range({K}) if keep[i])
      red_f[6] = min(rx[i] for i in range(2, 6) if keep[i])
      red_f[7] = sum(rx[i] for i in range(2, 12) if keep[i])
      red_f[8] = min(rx[i] for i in range(5, 5))
      red_f[9] = max(rx[i] for i in range({K}) if never)
      red_f[10] = sum(rx[i] for i in range(5, 5))
      red_f[11] = sum(rx[i] for i in range({K}) if never)
      red_f[12] = min(0.0, -0.0) + max(-0.0, 0.0) * rx[0]
      red_f[13] = clip(rx[0], -0.0, 0.0)
      red_f[14] = max(rx[i] for i in range(1, 5))
      red_f[15] = sum(x[i] for i in range(3) if never)
      red_f[16] = rx[1] + 0.0
      red_i[0] = argmin(rx)
      red_i[1] = argmax(rx)
      red_i[2] = argmin(rx[i] for i in range({K}) if keep[i])
      red_i[3] = argmax(rx[i] for i in range({K}) if keep[i])
      red_i[4] = argmax(rx[i + 8] for i in range(-8, -3))
      red_i[5] = argmin(rx[i] for i in range(5, 5))
      red_i[6] = argmax(rx[i] for i in range({K}) if never)
      red_i[7] = choice(rx[i] > 0.0 for i in range(5, 5))
      red_i[8] = choice(rx[i] > 0.0 for i in range(3, 40) if never)
      red_i[9] = count(keep[i] for i in range(5, 5)) + count(keep[i] for i in range({K}) if never) * 10
      red_i[10] = sum(a[i] for i in range(5, 5)) + sum(a[i] for i in range({K}) if never)
      red_i[11] = sum(a[i] for i in range({K}))
      red_i[12] = min(a[i] for i in range({K}) if never)
      red_i[13] = max(a[i] for i in range(5, 5))
      red_i[14] = argmin(a[i] for i in range(1, 5))
      red_i[15] = sum(i32(a8[i]) for i in range({K}))
      red_b[0] = any(keep[i] for i in range(5, 5))
      red_b[1] = all(keep[i] for i in range(5, 5))
      red_b[2] = any(keep[i] for i in range({K}) if never)
      red_b[3] = all(keep[i] for i in range({K}) if never)
      red_u[0] = min(u[i] for i in range(5, 5))
      red_u[1] = max(u[i] for i in range({K}) if never)
      red_8[0] = min(a8[i] for i in range(5, 5))
      red_8[1] = max(a8[i] for i in range({K}) if never)
      red_c[0] = min(Col(i) for i in range(5, 5))
      red_c[1] = max(Col(i) for i in range(3) if never)
      loops[0] = 0
      for i in range(2147483630, 2147483647):
        loops[0] = loops[0] + i * 3
      loops[1] = 0
      for i in range(-2147483648, -2147483630):
        loops[1] = loops[1] - i
      loops[2] = sum(i for i in range(2147483630, 2147483647))
      loops[3] = argmax(0 - i for i in range(-2147483648, -2147483640))
      loops[4] = min(i for i in range(-2147483648, -2147483647))
      loops[5] = max(i * 2 for i in range(2147483640, 2147483647))
      lit_f[0] = 1e-45 % -128.0
      lit_f[1] = -5.5 // ceil(-0.0)
      lit_f[2] = 1e39 * 0.0
      lit_f[3] = floor(-0.0)
      lit_f[4] = ceil(-0.5)
      lit_f[5] = min(0.0, -0.0)
      lit_f[6] = max(-0.0, 0.0)
      lit_f[7] = 0.1 * 3.0
      lit_f[8] = 16777217.0 + 0.0
      lit_f[9] = -4.0 % 2.0
      lit_f[10] = 4.0 % -2.0
      lit_f[11] = -1.0 % (1.0 / 0.0)
      lit_f[12] = -0.0 // 4.0
      lit_f[13] = f32(16777217)
      lit_i[0] = -(-2147483648)
      lit_i[1] = abs(-2147483648)
      lit_i[2] = i32(1e30)
      lit_i[3] = i32(0.0 / 0.0)
      lit_i[4] = 3000000000
      lit_i[5] = -2147483648 // -1
      lit_i[6] = a[0] // 0 + a[0] % 0
      lit_i[7] = i32(-2147483904.0)
      lit_u[0] = u32(-5.0)
      lit_u[1] = u32(1e10)
      lit_u[2] = u32(-1)
      lit_u[3] = u32(f32(-1))
      lit_8[0] = i8(200)
      lit_8[1] = i8(1000.0)
      lit_8[2] = i8(-1000.0)
      lit_8[3] = i8(0.0 / 0.0)
reward: "0.0"
terminated: "false"
truncated: "false"
observation:
  fields:
    o: {{type: f32}}
  body: "o = fd[0]"
"""

F32_MIN_SUB = 1.401298464324817e-45
F32_MAX_SUB = 1.1754942106924411e-38
F32_MIN = 1.1754943508222875e-38
F32_MAX = 3.4028234663852886e38
SPECIAL_F32 = [
    0.0, -0.0, F32_MIN_SUB, -F32_MIN_SUB, F32_MAX_SUB, -F32_MAX_SUB, F32_MIN, -F32_MIN, 1.0, -1.0, 1.5, -7.5,
    2.0, -128.0, 0.1, 3.0, 1e-30, -1e10, 127.9, -128.5, 255.9, 2147483520.0, 2147483648.0, -2147483648.0,
    -2147483904.0, 4294967040.0, 4294967296.0, F32_MAX, -F32_MAX, math.inf, -math.inf, math.nan,
]  # fmt: skip
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
SPECIAL_I32 = [
    I32_MIN, I32_MIN + 1, -65536, -32769, -129, -128, -7, -1, 0, 1, 2, 3, 7, 127, 128, 255, 256, 32767, 65535,
    16777217, I32_MAX,
]  # fmt: skip
SPECIAL_I8 = [-128, -127, -7, -1, 0, 1, 2, 7, 127]
SPECIAL_U32 = [0, 1, 2, 7, 16777217, 2**31, 2**32 - 1]
# reduction inputs: no subnormals (JAX on CPU flushes them in every operation, section 18)
REDUCE_F32 = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-30, 1e30, -3.25, 2.0, math.inf, -math.inf, math.nan, 7.0]


def f32(v: float) -> float:
    return float(struct.unpack("f", struct.pack("f", v))[0])


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> envc.SpecIR:
    path = tmp_path_factory.mktemp("edge") / "edge_semantics.yaml"
    path.write_text(SPEC)
    return envc.load(str(path))


@pytest.fixture(scope="module")
def ref(spec: envc.SpecIR) -> Any:
    return envc.build(spec, strict=False)  # the fallbacks: integer // 0, choice from nothing


@pytest.fixture(scope="module")
def jax_env(spec: envc.SpecIR) -> Any:
    return envc.build(spec, backend="jax")


@pytest.fixture(scope="module")
def base(ref: Any) -> dict[str, np.ndarray]:
    """The state fields after init (all zero), as numpy arrays to overwrite with operands."""
    d = ref.state_to_dict(ref.init(rng.key_from_seed(0)))
    return {f.name: np.asarray(d[f.name]) for f in ref.spec.fields}


def run(env: Any, base: dict[str, np.ndarray], inputs: dict[str, Any], seed: int = 1) -> dict[str, np.ndarray]:
    """The state fields after one step from `base` with `inputs` written over it."""
    d = dict(base)
    for name, vals in inputs.items():
        d[name] = np.asarray(vals, dtype=base[name].dtype).reshape(base[name].shape)
    out = env.state_to_dict(env.step(env.state_from_dict(d), 0, rng.key_from_seed(seed)))
    return {name: np.asarray(out[name]) for name in base}


def same(want: np.ndarray, got: np.ndarray) -> bool:
    """Same dtype, shape and bits; two NaNs match whatever their payloads."""
    if want.dtype != got.dtype or want.shape != got.shape:
        return False
    if want.dtype.kind == "f":
        both_nan = np.isnan(want) & np.isnan(got)
        return bool(np.all(both_nan | (want.view(np.uint32) == got.view(np.uint32))))
    return want.tobytes() == got.tobytes()


def mismatches(want: dict[str, np.ndarray], got: dict[str, np.ndarray], inputs: dict[str, Any]) -> list[str]:
    out = []
    for name, w in want.items():
        g = got[name]
        if not same(w, g):
            bad = [i for i in range(w.size) if not same(w.reshape(-1)[i : i + 1], g.reshape(-1)[i : i + 1])]
            shown = {k: np.asarray(v).reshape(-1)[bad[0]] for k, v in inputs.items() if np.asarray(v).size == w.size}
            w0, g0 = w.reshape(-1)[bad[0]], g.reshape(-1)[bad[0]]
            out.append(f"{name}[{bad[0]}]: reference {w0!r}, got {g0!r} ({shown})")
    return out


def chunks(pairs: list[tuple[Any, Any]]) -> list[tuple[list[Any], list[Any]]]:
    """`pairs` in rows of K (the last one padded with its first pair)."""
    rows = []
    for i in range(0, len(pairs), K):
        row = pairs[i : i + K]
        row += [row[0]] * (K - len(row))
        rows.append(([p[0] for p in row], [p[1] for p in row]))
    return rows


def fixed_sample() -> list[dict[str, Any]]:
    """Every pair of special values of each kind, K pairs a step."""
    fl = chunks(list(itertools.product(SPECIAL_F32, SPECIAL_F32)))
    it = chunks(list(itertools.product(SPECIAL_I32, SPECIAL_I32)))
    i8 = chunks(list(itertools.product(SPECIAL_I8, SPECIAL_I8)))
    uu = chunks(list(itertools.product(SPECIAL_U32, SPECIAL_U32)))
    red = chunks([(v, k % 3 != 1) for k, v in enumerate(REDUCE_F32 * 9)])
    steps = []
    for k in range(max(len(fl), len(it), len(i8), len(uu), len(red))):
        s: dict[str, Any] = {}
        for rows, (first, second) in ((fl, ("x", "y")), (it, ("a", "b")), (i8, ("a8", "b8")), (uu, ("u", "v"))):
            s[first], s[second] = rows[k % len(rows)]
        rx, on = red[k % len(red)]
        s["rx"] = np.roll(rx, k)  # the NaN, the zeros and the infinities move around
        s["keep"] = np.roll(on, 2 * k)
        steps.append(s)
    steps.append({"rx": [-0.0] * K, "keep": [True] * K})  # sums of -0.0 start from +0.0
    return steps


def test_the_edge_spec_is_lint_clean(tmp_path: Path) -> None:
    path = tmp_path / "edge.yaml"
    path.write_text(SPEC)
    checked, diagnostics = envc.lint(str(path))
    assert checked is not None and diagnostics == []  # no warning either


def test_a_loop_bound_outside_i32_is_an_error(tmp_path: Path) -> None:
    """The loop variable is an i32: a bound that is not one is E040 (it crashed the JAX and Rust builds)."""
    path = tmp_path / "bound.yaml"
    path.write_text(SPEC.replace("range(2147483630, 2147483647)", "range(3999999999, 4000000000)", 1))
    _, diagnostics = envc.lint(str(path))
    assert [(d.code, d.message) for d in diagnostics] == [("E040", "loop bound 3999999999 does not fit in i32")]


def test_reference_edge_values_follow_the_language_reference(ref: Any, base: dict[str, np.ndarray]) -> None:
    """The documented values (sections 6.4, 6.6, 11, 18), spelled out, on the reference (the oracle)."""
    nan, inf = math.nan, math.inf
    x = [7.5, -7.5, 7.5, -4.0, 4.0, F32_MIN_SUB, -1.0, 0.0, 1.0, nan, inf, 5.0, -5.5, -1e-30, 1000.0, -5.0]
    y = [-2.0, 2.0, 0.0, 2.0, -2.0, -128.0, inf, -0.0, F32_MIN_SUB, 1.0, 2.0, nan, -0.0, 1e10, 1.0, 1.0]
    a = [I32_MIN, I32_MIN, -7, 7, 5, -7, 0, 3]
    b = [-1, 0, 2, -3, 0, -2, 5, 3]
    s = run(ref, base, {"x": x + [0.0] * (K - 16), "y": y + [1.0] * (K - 16), "a": a + [0] * (K - 8),
                        "b": b + [1] * (K - 8), "a8": [-128] * K, "b8": [-1] * K})  # fmt: skip

    def bits(v: float) -> int:
        return struct.unpack("I", struct.pack("f", v))[0]  # type: ignore[no-any-return]

    fd = [-4.0, -4.0, inf, -2.0, -2.0, -0.0, -0.0, nan, inf, nan, inf, nan, inf, -0.0, 1000.0, -5.0]
    fm = [-0.5, 0.5, nan, 0.0, -0.0, -0.0, inf, nan, nan, nan, nan, nan, nan, 1e10, 0.0, 0.0]
    for i in range(16):
        for name, want in (("fd", fd[i]), ("fm", fm[i])):
            got = float(s[name][i])
            assert (math.isnan(want) and math.isnan(got)) or bits(got) == bits(f32(want)), (name, x[i], y[i], got)
    assert s["c8"][:16].tolist() == [7, -7, 7, -4, 4, 0, -1, 0, 1, 0, 127, 5, -5, 0, 127, -5]
    assert s["cu"][:16].tolist() == [7, 0, 7, 0, 4, 0, 0, 0, 1, 0, 2**32 - 1, 5, 0, 0, 1000, 0]
    assert s["id32"][:8].tolist() == [I32_MIN, 0, -4, -3, 0, 3, 0, 1]
    assert s["im32"][:8].tolist() == [0, 0, 1, -2, 0, -1, 0, 0]
    assert s["an"][:2].tolist() == [I32_MIN, I32_MIN] and s["aa"][:2].tolist() == [I32_MIN, I32_MIN]
    assert s["id8"][0] == -128 and s["im8"][0] == 0 and s["n8"][0] == -128 and s["ab8"][0] == -128
    assert s["s8"][0] == 125  # s8 += -1: -128 + -1 wraps to 127; s8 *= 3: 381 wraps to 381 - 256
    assert s["wu"][0] == 2**31 and s["w8"][2] == -7 and s["w16"][0] == 0
    assert s["lit_i"].tolist() == [I32_MIN, I32_MIN, I32_MAX, 0, 3000000000 - 2**32, I32_MIN, 0, I32_MIN]
    assert s["lit_u"].tolist() == [0, 2**32 - 1, 2**32 - 1, 0]
    assert s["lit_8"].tolist() == [-56, 127, -128, 0]
    lf = s["lit_f"]
    assert [bits(float(v)) for v in lf[[0, 1, 3, 4, 5, 6, 9, 10, 11, 12]]] == [
        bits(v) for v in (-0.0, inf, -0.0, -0.0, -0.0, 0.0, 0.0, -0.0, inf, -0.0)
    ]
    assert math.isnan(lf[2]) and lf[7] == np.float32(0.1) * np.float32(3.0) and lf[8] == lf[13] == 16777216.0
    assert s["red_f"][[8, 9, 10, 11]].tolist() == [inf, -inf, 0.0, 0.0]
    assert s["red_i"][5:11].tolist() == [-1, -1, 5, 3, 0, 0]
    assert s["red_b"].tolist() == [False, True, False, True]
    assert s["red_u"].tolist() == [2**32 - 1, 0] and s["red_8"].tolist() == [127, -128]
    assert s["red_c"].tolist() == [0, 0]


def test_reference_reductions_order_nan_and_signed_zeros(ref: Any, base: dict[str, np.ndarray]) -> None:
    """f32 min/max/argmin/argmax: the first NaN wins, -0.0 is below +0.0; positions of negative ranges count."""
    rx = [1.0, 0.0, -0.0, 2.0, math.nan, 0.0, -3.0, 5.0] + [1.0] * (K - 8)
    s = run(ref, base, {"rx": rx, "keep": [True, True, True, True, False] + [True] * (K - 5)})
    assert math.isnan(s["red_f"][0]) and math.isnan(s["red_f"][1]) and s["red_i"][:2].tolist() == [4, 4]
    assert s["red_f"][3] == -3.0 and s["red_f"][4] == 5.0 and s["red_i"][2:4].tolist() == [6, 7]
    assert math.copysign(1.0, s["red_f"][6]) == -1.0 and s["red_f"][6] == 0.0  # min(0.0, -0.0, 2.0) over 2..5
    assert s["red_i"][4] == -4  # argmax(rx[i + 8] for i in range(-8, -3)): the NaN rx[4] at i == -4
    assert math.isnan(s["red_f"][14])
    z = run(ref, base, {"rx": [0.0, -0.0, -0.0, 0.0] + [-1.0] * (K - 4), "keep": [True] * K})
    assert z["red_i"][:2].tolist() == [4, 0] and math.copysign(1.0, z["red_f"][1]) == 1.0
    assert z["red_i"][4] == -8  # the first +0.0, at a negative position
    assert math.copysign(1.0, z["red_f"][16]) == 1.0  # -0.0 + 0.0
    n = run(ref, base, {"rx": [-0.0] * K, "keep": [True] * K})
    assert [math.copysign(1.0, n["red_f"][i]) for i in (2, 5, 7, 0)] == [1.0, 1.0, 1.0, -1.0]  # sums start at +0.0
    assert math.copysign(1.0, z["red_f"][14]) == 1.0  # max(-0.0, -0.0, 0.0, -1.0) is +0.0
    assert math.copysign(1.0, z["red_f"][13]) == 1.0  # clip(0.0, -0.0, 0.0)


def test_reference_jax_and_rust_agree_on_every_edge_value(
    spec: envc.SpecIR, ref: Any, jax_env: Any, base: dict[str, np.ndarray]
) -> None:
    rust_env = envc.build(spec, backend="rust")
    steps = fixed_sample()  # subnormal operands reach `//`, `%` and casts only (see REDUCE_F32)
    assert len(steps) >= 16
    compared = 0
    for k, inputs in enumerate(steps):
        want = run(ref, base, inputs, k)
        for label, env in (("jax", jax_env), ("rust", rust_env)):
            bad = mismatches(want, run(env, base, inputs, k), inputs)
            assert not bad, f"{label}, step {k}: " + "; ".join(bad[:8])
            compared += 1
    assert compared == 2 * len(steps)


F32 = st.one_of(
    st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True),
    st.sampled_from(SPECIAL_F32),
    st.integers(-300, 300).map(float),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(F32, F32), min_size=K, max_size=K))
def test_jax_floor_division_modulo_and_casts_match_the_reference(
    ref: Any, jax_env: Any, base: dict[str, np.ndarray], pairs: list[tuple[float, float]]
) -> None:
    inputs = {"x": [p[0] for p in pairs], "y": [p[1] for p in pairs]}
    bad = mismatches(run(ref, base, inputs), run(jax_env, base, inputs), inputs)
    assert not bad, "; ".join(bad[:8])


REDUCE = st.one_of(
    st.lists(st.floats(-1e3, 1e3, width=32, allow_subnormal=False), min_size=K, max_size=K),  # order-dependent sums
    st.lists(
        st.floats(width=32, allow_subnormal=False) | st.sampled_from([0.0, -0.0, 1.0, -1.0, math.nan, math.inf]),
        min_size=K,
        max_size=K,
    ),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    REDUCE,
    st.lists(st.booleans(), min_size=K, max_size=K),
    st.lists(st.sampled_from(SPECIAL_I32) | st.integers(I32_MIN, I32_MAX), min_size=2 * K, max_size=2 * K),
)
def test_jax_reductions_and_integer_edges_match_the_reference(
    ref: Any, jax_env: Any, base: dict[str, np.ndarray], rx: list[float], keep: list[bool], ints: list[int]
) -> None:
    inputs = {"rx": rx, "keep": keep, "a": ints[:K], "b": ints[K:], "a8": [v % 256 - 128 for v in ints[:K]]}
    bad = mismatches(run(ref, base, inputs), run(jax_env, base, inputs), inputs)
    assert not bad, "; ".join(bad[:8])
