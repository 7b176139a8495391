"""Declared param values (`params: {k: {values: [...]}}`): checked, and swept by envc verify's L3 (issue #20)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc.interpret import ReferenceEnv
from envc.verify import level3, param_sweep

SPEC = """\
name: stride
players: 1
params:
  k: {type: i32, default: 1, values: [1, 2, 5]}
  limit_2: {type: i32, default: 12}
state:
  x: i32
actions:
  go: {effect: "x += k"}
  back: {effect: "x -= 1"}
terminated: "x >= limit_2"
observation:
  fields: {o: i32}
  body: "o = x"
"""


def spec_at(tmp_path: Path, text: str = SPEC) -> Path:
    p = tmp_path / "stride.yaml"
    p.write_text(text)
    return p


def test_values_are_checked_with_their_position(tmp_path: Path) -> None:
    bad = SPEC.replace("type: i32, default: 1, values: [1, 2, 5]", "type: i8, default: 1, values: [1, 300]")
    with pytest.raises(envc.SpecError) as e:
        envc.load(str(spec_at(tmp_path, bad)))
    assert "stride.yaml:4:" in str(e.value) and "300 does not fit in i8" in str(e.value)
    static = SPEC.replace("default: 12}", "default: 12, static: true, values: [12]}")
    with pytest.raises(envc.SpecError, match="static param is fixed at build time"):
        envc.load(str(spec_at(tmp_path, static)))


def test_sweep_keeps_defaults_in_even_episodes_and_draws_declared_values(tmp_path: Path) -> None:
    spec = envc.load(str(spec_at(tmp_path)))
    env = ReferenceEnv(spec)
    got = param_sweep(spec, env, 40, seed=3)
    assert all(s == () for s in got[::2])
    drawn = {dict(s)["k"] for s in got[1::2] if s}
    assert drawn == {2, 5}  # 1 is the default: such an episode counts as a default one
    assert param_sweep(spec, object(), 4, seed=3) == [()] * 4  # no with_params: defaults only


class IgnoresParams:
    """A backend that builds with the defaults whatever it is asked: the bug the sweep exists to catch."""

    def __init__(self, spec: Any) -> None:
        self.inner = ReferenceEnv(spec)

    def with_params(self, params: dict[str, Any]) -> IgnoresParams:
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_l3_sweeps_declared_values_and_catches_a_backend_that_ignores_them(tmp_path: Path) -> None:
    spec = envc.load(str(spec_at(tmp_path)))
    ok = level3(spec, ReferenceEnv(spec), episodes=8, seed=0, max_steps=30)
    assert all(c.passed for c in ok) and "under other declared param values" in ok[0].name
    bad = level3(spec, IgnoresParams(spec), episodes=8, seed=0, max_steps=30)
    assert not bad[0].passed


def test_jax_with_params_steps_like_the_reference(tmp_path: Path) -> None:
    spec = envc.load(str(spec_at(tmp_path)))
    jx = envc.build(spec, "jax").with_params({"k": 5})
    ref = ReferenceEnv(spec, {"k": 5})
    a, b = ref.init((0, 1)), jx.init((0, 1))
    for _ in range(3):
        a, b = ref.step(a, 0, (0, 1)), jx.step(b, 0, (0, 1))
    assert int(np.asarray(jx.state_to_dict(b)["x"])) == int(ref.state_to_dict(a)["x"]) == 15
    assert bool(b.terminated)
    # a spec name the package spells otherwise in Python (`limit_2` is `limit_2_` there) is still accepted
    short = envc.build(spec, "jax", params={"limit_2": 3})
    assert bool(short.step(short.init((0, 1)), 0, (0, 1)).terminated) is False
    assert bool(short.with_params({"limit_2": 1}).step(short.init((0, 1)), 0, (0, 1)).terminated) is True
    with pytest.raises(KeyError, match="unknown runtime params"):
        envc.build(spec, "jax", params={"limit": 3})


@pytest.mark.parametrize("backend", ["reference", "jax"])
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"k": "5"}, r"param 'k' \(i32\): expected a number, got '5' \(str\)"),
        ({"k": None}, r"param 'k' \(i32\): expected a number, got None"),
        ({"k": 2.5}, r"param 'k' \(i32\): expected an integer, got 2.5"),
        ({"k": True}, r"param 'k' \(i32\): expected a number, got True \(bool\)"),
        ({"k": [1, 2]}, r"param 'k' \(i32\): expected a number, got \[1, 2\] \(list\)"),
        ({"k": np.array([1, 2])}, r"param 'k' \(i32\): expected a number"),
    ],
)
def test_bad_override_values_are_one_clear_error(tmp_path: Path, backend: str, override: dict[str, Any],
                                                 message: str) -> None:
    """A value that is not one of the param's type is refused when the env is built, naming the param and its
    type, on every backend alike (the reference raised struct.error, JAX accepted it and failed later)."""
    with pytest.raises(ValueError, match=message):
        envc.build(spec_at(tmp_path), backend, params=override)


@pytest.mark.parametrize("backend", ["reference", "jax"])
def test_override_values_convert_alike(tmp_path: Path, backend: str) -> None:
    """Integral floats, numpy and JAX scalars are accepted, and integers wrap to the type (spec-language 4.2)."""
    import jax.numpy as jnp

    for value, want in [(5.0, 5), (np.int64(3), 3), (jnp.int32(4), 4), (2**32 + 9, 9), (-(2**31) - 1, 2**31 - 1)]:
        env = envc.build(spec_at(tmp_path), backend, params={"k": value})
        assert int(env.params["k"] if backend == "reference" else env.params.k) == want, (value, backend)
