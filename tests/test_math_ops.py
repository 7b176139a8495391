"""The arithmetic of language 1.1 (docs/spec-language.md 9.4 and 10): `**` and `pow`, `<<` `>>` `~`, the math
constants, the builtins sign round trunc hypot asin acos atan sinh cosh log1p expm1 fmod isnan isinf isfinite, and
the diagnostics for code ported from Python. One spec computes every operation on injected operands into state
fields; the reference follows Python's semantics (hypothesis), and JAX and Rust (one build) agree with it bit for
bit, or within the documented ULP bounds for the transcendental functions (section 10.2)."""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envc
from envc import rng
from envc.diagnostics import SpecRuntimeError
from envc.lsp.features import Outline, hover
from envc.parse import Snippet, parse_body, parse_expr

ROOT = Path(__file__).resolve().parent.parent
K = 48  # lanes: operand tuples per step
IPOW = [0, 1, 2, 3, 5, 7, 8, 13, 31, 32, 100]  # static exponents on integer bases
FPOW = [-3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 16, 33]  # static exponents on an f32 base
F1 = ["round", "trunc", "sign", "asin", "acos", "atan", "sinh", "cosh", "log1p", "expm1"]
EXACT_F1 = {"round", "trunc", "sign"}
# the documented bound (section 10.2) of each transcendental function, in ULPs of the reference
ULPS = {"asin": 4, "acos": 4, "atan": 4, "hypot": 4, "log1p": 4, "pow": 4, "expm1": 8, "sinh": 32, "cosh": 32}


def _lines(rows: list[str], indent: int) -> str:
    return "\n".join(" " * indent + r for r in rows)


_LOOP = [
    *(f"ip32[i, {j}] = a[i] ** {p}" for j, p in enumerate(IPOW)),
    *(f"ip8[i, {j}] = a8[i] ** {p}" for j, p in enumerate(IPOW)),
    *(f"ipu[i, {j}] = u[i] ** {p}" for j, p in enumerate(IPOW)),
    *(f"fp[i, {j}] = x[i] ** {p}" for j, p in enumerate(FPOW)),
    "fdyn[i, 0] = x[i] ** y[i]",
    "fdyn[i, 1] = x[i] ** n[i]",
    "fdyn[i, 2] = pow(x[i], y[i])",
    *(f"fn1[i, {j}] = {f}(x[i])" for j, f in enumerate(F1)),
    "fn2[i, 0] = hypot(x[i], y[i])",
    "fn2[i, 1] = fmod(x[i], y[i])",
    "pred[i, 0] = isnan(x[i])",
    "pred[i, 1] = isinf(x[i])",
    "pred[i, 2] = isfinite(x[i])",
    "sgi[i, 0] = sign(a[i])",
    "sgi[i, 1] = sign(a8[i])",
    "sgi[i, 2] = i32(sign(u[i]))",
    "sh32[i, 0] = a[i] << n[i]",
    "sh32[i, 1] = a[i] >> n[i]",
    "sh8[i, 0] = a8[i] << n[i]",
    "sh8[i, 1] = a8[i] >> n[i]",
    "sh16[i, 0] = a16[i] << n8[i]",
    "sh16[i, 1] = a16[i] >> n8[i]",
    "shu[i, 0] = u[i] << nu[i]",
    "shu[i, 1] = u[i] >> nu[i]",
    "shu[i, 2] = u[i] & (1 << n[i])",
    "shu[i, 3] = 0xFFFFFFFF >> n[i]",
    "shu[i, 4] = ~u[i]",
    "inv[i, 0] = ~a[i]",
    "inv[i, 1] = ~a8[i]",
    "aug[i] = a[i]",
    "aug[i] **= 3",
    "aug[i] <<= 2",
    "aug[i] >>= 1",
    "aug[i] ^= 5",
]
_STATIC = [
    "let e = 5",  # shadows the constant e
    "cf[0] = pi",
    "cf[1] = tau",  # the param, not the constant
    "cf[2] = inf",
    "cf[3] = -inf",
    "cf[4] = PI",  # the declared constant
    "cf[5] = -pi ** 2",
    "cf[6] = (-pi) ** 2",
    "cf[7] = 2.0 ** -2",
    "cf[8] = f32(e)",
    "cf[9] = euler()",
    "cf[10] = round(2.5) + 10.0 * round(3.5) + 100.0 * round(-0.5)",
    "cf[11] = sign(-0.0)",
    "cf[12] = tau_of(2.0)",
    "ci[0] = 2 ** 3 ** 2",
    "ci[1] = -2 ** 2",
    "ci[2] = (-2) ** 2",
    "ci[3] = N ** 2",
    "ci[4] = ~0",
    "ci[5] = 1 << 30",
    "ci[6] = -7 >> 1",
    "ci[7] = i8(3) ** 5",
    "ci[8] = 7 ^ 2",
    "ci[9] = sign(-7)",
    "ci[10] = 1 << 2 + 1",
    "ci[11] = 6 & 3 << 1",
    "ci[12] = count(j >= 0 for j in range(N ** 2))",
    "cu[0] = 1 << 31",
    "cu[1] = 0xFFFFFFFF >> 4",
    "cu[2] = ~u32(5)",
    "cu[3] = 2 ** 31",
]
CF = [
    np.float32(math.pi),
    np.float32(0.25),
    np.inf,
    -np.inf,
    np.float32(3.0),
    -np.float32(np.float32(math.pi) * np.float32(math.pi)),
    np.float32(np.float32(math.pi) * np.float32(math.pi)),
    np.float32(0.25),
    np.float32(5.0),
    np.float32(math.e),
    np.float32(2.0 + 40.0 - 0.0),
    -0.0,
    np.float32(2 * math.pi),
]
CI = [512, -4, 4, 25, -1, 1 << 30, -4, -13, 5, -1, 8, 6, 25]
CU = [2**31, 0x0FFFFFFF, 2**32 - 6, 2**31]

SPEC = f"""
name: math_ops
doc: Every operation of the language 1.1 arithmetic, computed from injected operands.
version: "1.0"
players: 1
params:
  tau: 0.25
constants:
  PI: 3.0
  N: 5
state:
  x: {{type: f32, shape: [{K}]}}
  y: {{type: f32, shape: [{K}]}}
  a: {{type: i32, shape: [{K}]}}
  a8: {{type: i8, shape: [{K}]}}
  a16: {{type: i16, shape: [{K}]}}
  u: {{type: u32, shape: [{K}]}}
  n: {{type: i32, shape: [{K}]}}
  n8: {{type: i8, shape: [{K}]}}
  nu: {{type: u32, shape: [{K}]}}
  ip32: {{type: i32, shape: [{K}, {len(IPOW)}]}}
  ip8: {{type: i8, shape: [{K}, {len(IPOW)}]}}
  ipu: {{type: u32, shape: [{K}, {len(IPOW)}]}}
  fp: {{type: f32, shape: [{K}, {len(FPOW)}]}}
  fdyn: {{type: f32, shape: [{K}, 3]}}
  fn1: {{type: f32, shape: [{K}, {len(F1)}]}}
  fn2: {{type: f32, shape: [{K}, 2]}}
  pred: {{type: bool, shape: [{K}, 3]}}
  sgi: {{type: i32, shape: [{K}, 3]}}
  sh32: {{type: i32, shape: [{K}, 2]}}
  sh8: {{type: i8, shape: [{K}, 2]}}
  sh16: {{type: i16, shape: [{K}, 2]}}
  shu: {{type: u32, shape: [{K}, 5]}}
  inv: {{type: i32, shape: [{K}, 2]}}
  aug: {{type: i32, shape: [{K}]}}
  cf: {{type: f32, shape: [{len(CF)}]}}
  ci: {{type: i32, shape: [{len(CI)}]}}
  cu: {{type: u32, shape: [{len(CU)}]}}
functions:
  euler: {{returns: f32, body: "e"}}
  tau_of: {{params: {{e: f32}}, returns: f32, body: "e * pi"}}
actions:
  go:
    effect: |
      for i in range({K}):
{_lines(_LOOP, 8)}
{_lines(_STATIC, 6)}
reward: "0.0"
terminated: "false"
observation:
  fields: {{obs: f32}}
  body: "obs = cf[0]"
"""

FLT_MIN = 2.0**-126
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
F_SAMPLE = [
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 0.49999997, 2.0, -2.0, 3.0, -3.0, 10.0, -10.0,
    0.1, 0.3, -0.7, 0.999, -0.999, 1.0000001, 7.25, 1e10, -1e10, 88.0, 89.0, -89.5, 1e30, 3e38, -3e38, 1e-30,
    8388609.0, 16777216.0, math.inf, -math.inf, math.nan,
]  # fmt: skip
I_SAMPLE = [0, 1, -1, 2, -2, 3, -3, 7, 100, -100, 255, 65535, 46341, -46341, 2**30, I32_MIN, I32_MAX]
I8_SAMPLE = [-128, -127, -7, -3, -2, -1, 0, 1, 2, 3, 7, 127]
U_SAMPLE = [0, 1, 2, 3, 7, 255, 65536, 2**31, 2**32 - 1]
COUNTS = [-5, -1, 0, 1, 2, 7, 8, 15, 16, 30, 31, 32, 33, 63, 64, 100, I32_MAX, I32_MIN]
COUNTS8 = [-128, -1, 0, 1, 7, 8, 15, 16, 17, 127]
COUNTS_U = [0, 1, 2, 31, 32, 33, 1000, 2**32 - 1]


_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_LIBM.pow.restype = ctypes.c_double
_LIBM.pow.argtypes = [ctypes.c_double, ctypes.c_double]


def c_pow(x: float, y: float) -> float:
    """C99 `pow` in f64 (the C library's: an oracle independent of the reference's)."""
    return float(_LIBM.pow(x, y))


def wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def f32(v: float) -> float:
    return float(np.float32(v))


# ---- running the spec ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> envc.SpecIR:
    path = tmp_path_factory.mktemp("mathops") / "math_ops.yaml"
    path.write_text(SPEC)
    return envc.load(str(path))


@pytest.fixture(scope="module")
def ref(spec: envc.SpecIR) -> Any:
    return envc.build(spec, strict=False)  # negative shift counts take their fallback


@pytest.fixture(scope="module")
def jax_env(spec: envc.SpecIR) -> Any:
    return envc.build(spec, backend="jax")


@pytest.fixture(scope="module")
def base(ref: Any) -> dict[str, np.ndarray]:
    d = ref.state_to_dict(ref.init(rng.key_from_seed(0)))
    return {f.name: np.asarray(d[f.name]) for f in ref.spec.fields}


def run(env: Any, base: dict[str, np.ndarray], inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    """The state fields after one step from `base` with `inputs` written over it."""
    d = dict(base)
    for name, vals in inputs.items():
        d[name] = np.asarray(vals, dtype=base[name].dtype).reshape(base[name].shape)
    out = env.state_to_dict(env.step(env.state_from_dict(d), 0, rng.key_from_seed(1)))
    return {name: np.asarray(out[name]) for name in base}


def lanes(values: list[Any], k: int, shift: int = 0) -> list[Any]:
    """K values cycling through `values`, starting at position `shift`."""
    return [values[(shift + i) % len(values)] for i in range(k)]


def fixed_sample() -> list[dict[str, Any]]:
    """Steps covering every special operand, and for the two-operand functions every pair of F_SAMPLE."""
    pairs = list(itertools.product(F_SAMPLE, F_SAMPLE))
    steps = []
    for s in range(0, len(pairs), K):
        row = pairs[s : s + K]
        row += row[: K - len(row)]
        k = s // K
        steps.append(
            {
                "x": [p[0] for p in row],
                "y": [p[1] for p in row],
                "a": lanes(I_SAMPLE, K, k),
                "a8": lanes(I8_SAMPLE, K, k),
                "a16": lanes([*I8_SAMPLE, -32768, 32767, 300, -300], K, k),
                "u": lanes(U_SAMPLE, K, k),
                "n": lanes(COUNTS, K, 3 * k),
                "n8": lanes(COUNTS8, K, k),
                "nu": lanes(COUNTS_U, K, k),
            }
        )
    return steps


def same_bits(w: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Elementwise: the same bits, or two NaNs."""
    if w.dtype.kind == "f":
        return (w.view(np.uint32) == g.view(np.uint32)) | (np.isnan(w) & np.isnan(g))
    return w == g


def ulp_distance(w: np.ndarray, g: np.ndarray) -> np.ndarray:
    """ULPs between two f32 arrays (0 for two NaNs and for ±0.0, huge for a NaN against a number)."""

    def ordered(v: np.ndarray) -> np.ndarray:
        i = v.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    d = np.abs(ordered(w) - ordered(g))
    d = np.where(np.isnan(w) & np.isnan(g), 0, d)
    return np.where(np.isnan(w) != np.isnan(g), 2**40, d)


def jax_comparable(x: np.ndarray) -> np.ndarray:
    """Lanes where XLA's flushing of subnormals cannot matter: no tiny operand (transcendental functions already
    flush results near FLT_MIN) and no power that underflows through subnormals on the way."""
    ax = np.abs(x.astype(np.float64))
    return ~((ax > 0) & (ax < 0.125))


def compare(
    label: str,
    want: dict[str, np.ndarray],
    got: dict[str, np.ndarray],
    inputs: dict[str, Any],
    jax: bool,
) -> list[str]:
    """Every disagreement between the reference and a backend beyond what section 10.2 allows."""
    x = np.asarray(inputs["x"], np.float32)
    y = np.asarray(inputs["y"], np.float32)
    ok_x = jax_comparable(x) if jax else np.ones(K, bool)
    ok_xy = (ok_x & jax_comparable(y)) if jax else ok_x
    bad: list[str] = []

    def check(name: str, col: int | None, good: np.ndarray, rows: np.ndarray, what: str) -> None:
        w_all = want[name] if col is None else want[name][:, col]
        if jax and w_all.dtype.kind == "f":  # XLA flushes subnormal results to zero (section 10.2)
            mag = np.abs(w_all.astype(np.float64))
            rows = rows & ~((mag > 0) & (mag < FLT_MIN))
        fails = np.flatnonzero(~good & rows)
        if fails.size:
            i = int(fails[0])
            w = want[name][i] if col is None else want[name][i, col]
            g = got[name][i] if col is None else got[name][i, col]
            ops = {k: np.asarray(v).reshape(-1)[i] for k, v in inputs.items()}
            bad.append(f"{label} {name}[{i}, {col}] ({what}): reference {w!r}, got {g!r}; operands {ops}")

    everything = np.ones(K, bool)
    for name in ("ip32", "ip8", "ipu", "sgi", "sh32", "sh8", "sh16", "shu", "inv", "pred"):
        for col in range(want[name].shape[1]):
            check(name, col, same_bits(want[name][:, col], got[name][:, col]), everything, "exact")
    check("aug", None, same_bits(want["aug"], got["aug"]), everything, "exact")
    for name in ("cf", "ci", "cu"):
        assert same_bits(want[name], got[name]).all(), f"{label} {name}: {want[name]} vs {got[name]}"
    for j, p in enumerate(FPOW):
        check("fp", j, same_bits(want["fp"][:, j], got["fp"][:, j]), ok_x, f"x ** {p}")
    for j, f in enumerate(F1):
        w, g = want["fn1"][:, j], got["fn1"][:, j]
        if f in EXACT_F1:
            check("fn1", j, same_bits(w, g), ok_x, f)
        else:
            check("fn1", j, ulp_distance(w, g) <= ULPS[f], ok_x, f"{f} within {ULPS[f]} ULP")
            special = ~np.isfinite(x) | (x == 0)
            check("fn1", j, same_bits(w, g), special & ok_x, f"{f} of a special value")
    check("fn2", 0, ulp_distance(want["fn2"][:, 0], got["fn2"][:, 0]) <= ULPS["hypot"], ok_xy, "hypot")
    check("fn2", 1, same_bits(want["fn2"][:, 1], got["fn2"][:, 1]), ok_xy, "fmod")
    for col in range(3):
        check("fdyn", col, ulp_distance(want["fdyn"][:, col], got["fdyn"][:, col]) <= ULPS["pow"], ok_xy, "pow")
    special2 = ~np.isfinite(x) | (x == 0) | ~np.isfinite(y) | (y == 0)  # an operand is ±0, ±inf or NaN
    check("fn2", 0, same_bits(want["fn2"][:, 0], got["fn2"][:, 0]), special2 & ok_xy, "hypot of a special value")
    for col in (0, 2):
        check("fdyn", col, same_bits(want["fdyn"][:, col], got["fdyn"][:, col]), special2 & ok_xy, "pow, special")
    return bad


# ---- the spec and the reference ----------------------------------------------------------------------------------


def test_the_math_spec_is_lint_clean(spec: envc.SpecIR, tmp_path: Path) -> None:
    path = tmp_path / "math_ops.yaml"
    path.write_text(SPEC)
    checked, diagnostics = envc.lint(str(path))
    assert checked is not None and not diagnostics, [d.format() for d in diagnostics]


def test_constants_precedence_folding_and_shadowing(ref: Any, base: dict[str, np.ndarray]) -> None:
    out = run(ref, base, fixed_sample()[0])
    assert same_bits(out["cf"], np.asarray(CF, np.float32)).all(), out["cf"]
    assert out["ci"].tolist() == CI
    assert out["cu"].tolist() == CU


def test_reference_follows_the_documented_semantics(ref: Any, base: dict[str, np.ndarray]) -> None:
    """Integer powers and shifts as Python computes them (wrapped); f32 powers as the documented products; the
    new f32 builtins as numpy computes them in f64, rounded once."""
    checked = 0
    for inputs in fixed_sample():
        out = run(ref, base, inputs)
        for i in range(K):
            a, a8, a16, u = inputs["a"][i], inputs["a8"][i], inputs["a16"][i], inputs["u"][i]
            n, n8, nu = inputs["n"][i], inputs["n8"][i], inputs["nu"][i]
            x, y = f32(inputs["x"][i]), f32(inputs["y"][i])
            for j, p in enumerate(IPOW):
                assert out["ip32"][i, j] == wrap(a**p, 32, True)
                assert out["ip8"][i, j] == wrap(a8**p, 8, True)
                assert out["ipu"][i, j] == u**p % 2**32
            with np.errstate(all="ignore"):  # the documented products, overflow included
                x1 = np.float32(x)
                x2 = x1 * x1
                assert out["fp"][i, FPOW.index(2)].tobytes() == x2.tobytes()
                assert out["fp"][i, FPOW.index(4)].tobytes() == (x2 * x2).tobytes()
                assert out["fp"][i, FPOW.index(5)].tobytes() == (x1 * (x2 * x2)).tobytes()
                assert out["fp"][i, FPOW.index(6)].tobytes() == (x2 * (x2 * x2)).tobytes()
                assert out["fp"][i, FPOW.index(-2)].tobytes() == (np.float32(1.0) / x2).tobytes()
            shown = f"{x} {y} {a} {n}"
            assert out["sh32"][i].tolist() == ([wrap(a << min(n, 64), 32, True), a >> min(n, 64)] if n >= 0 else [0, 0])
            assert out["sh8"][i].tolist() == ([wrap(a8 << min(n, 64), 8, True), a8 >> min(n, 64)] if n >= 0 else [0, 0])
            want16 = [wrap(a16 << n8, 16, True), a16 >> n8] if n8 >= 0 else [0, 0]
            assert out["sh16"][i].tolist() == want16, shown
            assert out["shu"][i, :2].tolist() == [(u << min(nu, 64)) % 2**32, u >> min(nu, 64)]
            assert out["shu"][i, 2] == (u & (1 << n) if 0 <= n < 32 else 0), shown
            assert out["shu"][i, 3] == (0xFFFFFFFF >> n if 0 <= n else 0), shown
            assert out["shu"][i, 4] == 2**32 - 1 - u
            assert out["inv"][i].tolist() == [-a - 1, -a8 - 1]
            assert out["sgi"][i].tolist() == [(a > 0) - (a < 0), (a8 > 0) - (a8 < 0), int(u > 0)]
            assert out["aug"][i] == wrap(wrap(wrap(a**3, 32, True) << 2, 32, True) >> 1, 32, True) ^ 5
            assert out["pred"][i].tolist() == [math.isnan(x), math.isinf(x), math.isfinite(x)]
            with np.errstate(all="ignore"):
                x64, y64 = np.float64(x), np.float64(y)
                want = {
                    "round": np.round(np.float32(x)),
                    "trunc": np.trunc(np.float32(x)),
                    "asin": np.arcsin(x64),
                    "acos": np.arccos(x64),
                    "atan": np.arctan(x64),
                    "sinh": np.sinh(x64),
                    "cosh": np.cosh(x64),
                    "log1p": np.log1p(x64),
                    "expm1": np.expm1(x64),
                }
                for j, f in enumerate(F1):
                    if f in ("round", "trunc"):
                        assert out["fn1"][i, j].tobytes() == np.float32(want[f]).tobytes(), (f, shown)
                        continue
                    if f == "sign":
                        s = out["fn1"][i, j]
                        same_sign = math.copysign(1, s) == math.copysign(1, x)
                        assert (math.isnan(s) and math.isnan(x)) or (s == np.sign(x) and same_sign), shown
                        continue
                    w = np.float32(want[f])
                    assert ulp_distance(np.asarray([w]), out["fn1"][i, j : j + 1])[0] <= 1, (f, shown, w)
                assert ulp_distance(np.asarray([np.float32(np.hypot(x64, y64))]), out["fn2"][i, :1])[0] <= 1
                assert same_bits(np.asarray([np.fmod(np.float32(x), np.float32(y))]), out["fn2"][i, 1:2])[0], shown
                assert same_bits(np.asarray([np.float32(c_pow(x, y))]), out["fdyn"][i, 0:1])[0], shown
                assert same_bits(out["fdyn"][i, 0:1], out["fdyn"][i, 2:3])[0]  # pow(x, y) is x ** y
            checked += 1
    assert checked == K * len(fixed_sample())


def test_a_negative_shift_count_is_a_spec_bug(spec: envc.SpecIR, base: dict[str, np.ndarray]) -> None:
    strict = envc.build(spec)
    inputs = fixed_sample()[0]
    inputs = {**inputs, "n": [1] * K, "n8": [1] * K}
    run(strict, base, inputs)  # fine
    inputs["n"] = [1] * (K - 1) + [-1]
    with pytest.raises(SpecRuntimeError, match="negative shift count -1"):
        run(strict, base, inputs)


# ---- the backends ------------------------------------------------------------------------------------------------


def test_reference_jax_and_rust_agree(spec: envc.SpecIR, ref: Any, jax_env: Any, base: dict[str, np.ndarray]) -> None:
    rust_env = envc.build(spec, backend="rust")
    steps = fixed_sample()
    assert len(steps) >= 30
    for inputs in steps:
        want = run(ref, base, inputs)
        bad = compare("jax", want, run(jax_env, base, inputs), inputs, jax=True)
        bad += compare("rust", want, run(rust_env, base, inputs), inputs, jax=False)
        assert not bad, "\n".join(bad[:10])


F32S = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(
    st.lists(st.integers(I32_MIN, I32_MAX) | st.sampled_from(I_SAMPLE), min_size=K, max_size=K),
    st.lists(st.integers(-128, 127), min_size=K, max_size=K),
    st.lists(st.integers(0, 2**32 - 1) | st.sampled_from(U_SAMPLE), min_size=K, max_size=K),
    st.lists(st.integers(-3, 70) | st.sampled_from(COUNTS), min_size=K, max_size=K),
    st.lists(F32S | st.floats(-4.0, 4.0, width=32), min_size=K, max_size=K),
)
def test_powers_and_shifts_follow_python(
    ref: Any, base: dict[str, np.ndarray], a: list[int], a8: list[int], u: list[int], n: list[int], x: list[float]
) -> None:
    """Integer `**`, `<<`, `>>` are Python's (wrapped) for every operand and count >= 0; f32 `**` with a static
    exponent stays within one ULP per multiplication of Python's `x ** n` rounded to f32."""
    nu = [c % 2**32 for c in n]
    out = run(ref, base, {"a": a, "a8": a8, "u": u, "n": n, "nu": nu, "x": x, "n8": [c % 128 for c in n]})
    for i in range(K):
        for j, p in enumerate(IPOW):
            assert out["ip32"][i, j] == wrap(a[i] ** p, 32, True)
            assert out["ip8"][i, j] == wrap(a8[i] ** p, 8, True)
            assert out["ipu"][i, j] == pow(u[i], p, 2**32)
        c = n[i]
        want = [wrap(a[i] << min(c, 64), 32, True), a[i] >> min(c, 64)] if c >= 0 else [0, 0]
        assert out["sh32"][i].tolist() == want, (a[i], c)
        assert out["shu"][i, :2].tolist() == [(u[i] << min(nu[i], 64)) % 2**32, u[i] >> min(nu[i], 64)]
        for j, p in enumerate(FPOW):
            with np.errstate(all="ignore"):
                exact = np.float64(x[i]) ** p  # f64 power: correctly rounded or nearly
            got = out["fp"][i, j]
            if not (FLT_MIN <= abs(exact) <= 1e38 or exact == 0 or not math.isfinite(exact)):
                continue  # the f32 result is subnormal or near overflow: rounding steps may change the class
            if p in (-1, 0, 1, 2):
                assert same_bits(np.asarray([np.float32(exact)]), np.asarray([got]))[0], (x[i], p)
            else:
                assert ulp_distance(np.asarray([np.float32(exact)]), np.asarray([got]))[0] <= abs(p), (x[i], p)


@SETTINGS
@given(
    st.lists(st.integers(I32_MIN, I32_MAX), min_size=K, max_size=K),
    st.lists(st.integers(-40, 200) | st.sampled_from(COUNTS), min_size=K, max_size=K),
    st.lists(st.floats(-3.0, 3.0, width=32) | st.sampled_from(F_SAMPLE), min_size=2 * K, max_size=2 * K),
)
def test_jax_matches_the_reference(
    ref: Any, jax_env: Any, base: dict[str, np.ndarray], a: list[int], n: list[int], xy: list[float]
) -> None:
    inputs = {
        "a": a,
        "a8": [v % 256 - 128 for v in a],
        "a16": [v % 65536 - 32768 for v in a],
        "u": [v % 2**32 for v in a],
        "n": n,
        "n8": [c % 256 - 128 for c in n],
        "nu": [c % 2**32 for c in n],
        "x": xy[:K],
        "y": xy[K:],
    }
    bad = compare("jax", run(ref, base, inputs), run(jax_env, base, inputs), inputs, jax=True)
    assert not bad, "\n".join(bad[:10])


# ---- diagnostics ---------------------------------------------------------------------------------------------------

DIAG_SPEC = """\
name: t
players: 1
constants:
  PI: 3.14
state:
  x: f32
  n: i32
  u: u32
  b: bool
actions:
  go:
    effect: |
      {body}
observation:
  fields: {{o: f32}}
  body: "o = x"
"""


@pytest.mark.parametrize(
    "body, where, code, message",
    [
        ("x = np.clip(x, 0.0, 1.0)", 11, "E030", "write `clip(...)`: builtins have no module prefix"),
        ("x = jnp.sin(x)", 11, "E030", "write `sin(...)`: builtins have no module prefix"),
        ("x = math.pi", 11, "E030", "write `pi`: builtins have no module prefix"),
        ("x = math.sqrt(x) + 1.0", 11, "E030", "write `sqrt(...)`: builtins have no module prefix"),
        ("x = jax.numpy.arctan2(x, 1.0)", 11, "E030", "write `atan2(...)`: builtins have no module prefix"),
        ("n = np.int32(x)", 11, "E030", "write `i32(...)`: builtins have no module prefix"),
        ("np.random.shuffle(x)", 7, "E030", "write `shuffle(...)`: builtins have no module prefix"),
        (
            "x = np.linalg.norm(x)",
            11,
            "E030",
            "`np.linalg.norm(...)` is not available: builtins have no module prefix, and there is no builtin 'norm'",
        ),
        ("x = np.nan", 11, "E030", "`np.nan` is not available: there is no NaN constant; write `0.0 / 0.0`"),
        ("x = Pi", 11, "E030", "unknown name 'Pi' (did you mean 'PI'?)"),
        ("x = TAU", 11, "E030", "unknown name 'TAU' (did you mean 'tau'?)"),
        ("x = arctan2(x, 1.0)", 11, "E030", "unknown function 'arctan2' (did you mean 'atan2'?)"),
        ("x = sgn(x)", 11, "E030", "unknown function 'sgn' (did you mean 'sign'?)"),
        ("x = x ^ 2", 11, "E040", "`^` is bitwise xor; write `x ** 2`"),
        ("x = (x - 1.0) ^ 2", 11, "E040", "`^` is bitwise xor; write `(x - 1.0) ** 2`"),
        ("x = -x ^ 2", 11, "E040", "`^` is bitwise xor; write `(-x) ** 2`"),
        (
            "x = x ^ 2 + x ^ 2",
            11,
            "E040",
            "`^` is bitwise xor; for a power write `**`, which binds tighter than `*` and `+` (`a ** 2 + b ** 2`)",
        ),
        (
            "n = n ** -2",
            16,
            "E040",
            "negative exponent -2 on an integer: the result is not an integer; use a float base, e.g. `f32(x) ** -2`",
        ),
        (
            "n = 2 ** n",
            16,
            "E051",
            "`**` on an integer needs a static exponent (a literal, constant or static param); for a power of two "
            "write `1 << n`, for a float power convert the base: `f32(x) ** n`",
        ),
        ("n = 2 ** 40", 11, "E040", "2 ** 40 is 1099511627776, which does not fit in 32 bits"),
        ("n = n << -1", 16, "E040", "negative shift count -1; a shift count is 0 or more"),
        ("x = x >> 1", 11, "E040", "'>>' shifts bits and needs integers, got f32 (a comparison is '>')"),
        ("b = ~b", 11, "E040", "`~` is bitwise not on integers; for a bool write `not x`"),
        ("x = round(x, 2)", 11, "E042", "round(...) takes 1 argument(s), got 2"),
        ("u = u & (-1 << n)", 11, "E040", "literal -1 does not fit in u32"),
        ("x = x ** ** 2", 16, "E020", "unexpected '**'; expected one of a name, a number, '+', '-', '~', '[', '('"),
    ],
)
def test_newcomer_diagnostics(tmp_path: Path, body: str, where: int, code: str, message: str) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(DIAG_SPEC.format(body=body))
    checked, diags = envc.lint(str(path))
    assert checked is None and diags
    d = diags[0]
    assert (d.span.line, d.span.col, d.code, d.message) == (13, where, code, message), d.format()


@pytest.mark.parametrize(
    "text",
    [
        "x = (1 +",
        "x = 1 +* 2",
        "x = a[1",
        "x = f(1,,2)",
        "let = 3",
        "x == 1",
        "if x 1:\n  y = 2",
        "x = 1 ** ** 2",
        "x = a.(b)",
        "x = 1 < < 2",
        "for i in range(3) x = 1",
        "match x:\n  y = 1",
        "x = [1, 2]",
        "x = 1 ^^ 2",
        "x = ~ ~",
        "x += += 1",
        "x = 1 >>> 2",
    ],
)
def test_syntax_errors_name_no_grammar_tokens(text: str) -> None:
    """Syntax errors say what was expected in the words of the language ('(', a name), never lark's token names
    (LPAR, FLOAT, CIRCUMFLEX, DOUBLESTAR, __ANON_3)."""
    from envc.diagnostics import Diagnostics

    for parse in (parse_body, parse_expr):
        diags = Diagnostics()
        parse(Snippet(text, "t.yaml", 1, 1, 0, True), diags)
        for d in diags.items:
            assert not re.search(r"\b[A-Z][A-Z_]{2,}\b|__ANON|\$END", d.message), d.message


# ---- existing specs, editor support ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    sorted([*ROOT.glob("specs/*.yaml"), *ROOT.glob("tests/specs/*.yaml"), *ROOT.glob("docs/examples/*.yaml")]),
    ids=lambda p: p.name,
)
def test_specs_naming_e_tau_round_still_lint(path: Path) -> None:
    """Declarations named like the new constants and builtins (a param `tau`, locals and parameters `e`, a loop
    variable `round`) shadow them."""
    checked, diags = envc.lint(str(path))
    assert checked is not None, [d.format() for d in diags]


def test_hover_documents_constants_and_new_builtins(tmp_path: Path) -> None:
    text = DIAG_SPEC.format(body="x = hypot(pi, e) + x ** 2")
    o = Outline.of(str(tmp_path / "t.yaml"), text)
    line = text.splitlines().index("      x = hypot(pi, e) + x ** 2")
    found = {}
    for name in ("hypot", "pi", "e"):
        col = text.splitlines()[line].index(name + ("(" if name == "hypot" else ""))
        h = hover(o, line, col)
        assert h is not None, name
        found[name] = h[0]
    assert "hypot(x, y) -> f32" in found["hypot"]
    assert "const pi: f32 = 3.1415927" in found["pi"]
    assert "Euler" in found["e"]


# ---- the Rust lane kernel ------------------------------------------------------------------------------------------

# tests/specs/thruster.yaml (a spec the Rust lane kernel takes, states packed in lanes) rewritten with the new
# operators, builtins and constants in its effect, rule, reward and observation
THRUSTER_EDITS = [
    ("let a = force - drag * vel * abs(vel)", "let a = force - drag * sign(vel) * vel ** 2"),
    (
        "+ 0.01 * tanh(a)",
        "+ 0.01 * tanh(a) + 0.001 * round(asin(clip(vel, -1.0, 1.0)) * 4.0) - 0.001 * trunc(atan(pos))",
    ),
    ("fuel -= gear * abs(dir)", "fuel -= ((gear << 3) >> 3) * abs(dir) ** 1 + (~fuel & 0)"),
    ("floor(angle / 6.2831855 + 0.5)", "floor(angle / tau + 0.5)"),
    ("angle = angle - turns * 6.2831855", "angle = angle - turns * tau"),
    (
        "- 0.01 * abs(pos)",
        "- 0.01 * abs(pos) ** 1.5 - 0.001 * (cosh(vel) - 1.0) + 0.001 * expm1(-abs(vel)) - 0.001 * hypot(pos, vel)",
    ),
    ("obs[4] = float(fuel) / 60.0", "obs[4] = float(fuel) / 60.0 + 0.0 * log1p(abs(sinh(pos)))"),
]


def test_lane_kernel_computes_the_new_operators_like_one_state_at_a_time(tmp_path: Path) -> None:
    """The lane kernel (LANES states at once, packed) against gymnasium's SyncVectorEnv over the one-state Env,
    bit for bit; the one-state Env is the reference's twin (test_reference_jax_and_rust_agree)."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    from envc.lower_rust import render

    text = (ROOT / "tests/specs/thruster.yaml").read_text()
    for old, new in THRUSTER_EDITS:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / "thruster_math.yaml"
    path.write_text(text)
    spec = envc.load(str(path))
    assert "const PACKED: bool = true;" in render(spec, "", "lanes_probe")["src/env.rs"]
    env = envc.build(spec, backend="rust", params={"max_steps": 25})
    n = 45
    ours = env.vector_env(n, threads=2)
    theirs = SyncVectorEnv([env.gym_env for _ in range(n)], autoreset_mode=AutoresetMode.NEXT_STEP)
    o1, _ = ours.reset(seed=3)
    o2, _ = theirs.reset(seed=3)
    np.testing.assert_array_equal(o1, o2)
    gen = np.random.default_rng(1)
    ends = 0
    for _ in range(120):
        a = gen.integers(0, spec.num_actions, size=n)
        o1, r1, t1, u1, _ = ours.step(a)
        o2, r2, t2, u2, _ = theirs.step(a)
        for mine, gyms in ((o1, o2), (r1, r2), (t1, t2), (u1, u2)):
            np.testing.assert_array_equal(mine, gyms)
        ends += int(np.sum(t1 | u1))
    assert ends > 40
