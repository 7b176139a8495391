"""The JAX backend against the reference interpreter: same keys, same actions, every field compared each step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import envc
from envc import rng

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "specs").glob("*.yaml")) + [ROOT / "tests" / "specs" / "tcg_mechanics.yaml"]


def assert_same(ref: dict[str, np.ndarray], got: dict[str, np.ndarray], where: str) -> None:
    assert ref.keys() == got.keys(), where
    for k, want in ref.items():
        have = got[k]
        assert have.shape == want.shape and have.dtype == want.dtype, (where, k, have.dtype, want.dtype)
        if want.dtype.kind == "f":
            np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6, err_msg=f"{where}: {k}")
        else:
            np.testing.assert_array_equal(have, want, err_msg=f"{where}: {k}")


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_episodes_match_reference(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVC_CACHE", str(tmp_path))
    spec = envc.load(str(path))
    ref, jx = envc.build(spec), envc.build(spec, backend="jax")
    gen = np.random.default_rng(0)
    key = rng.key_from_seed(3)
    episodes = 3 if "tcg" in path.stem else 10
    for ep in range(episodes):
        key, k = rng.split(key)
        r, j = ref.init(k), jx.init(k)
        assert_same(ref.state_to_dict(r), jx.state_to_dict(j), f"episode {ep} init")
        for t in range(200):
            if r.terminated or r.truncated:
                break
            key, k = rng.split(key)
            a = int(gen.choice(np.flatnonzero(r.legal_action_mask)))
            r, j = ref.step(r, a, k), jx.step(j, a, k)
            assert_same(ref.state_to_dict(r), jx.state_to_dict(j), f"episode {ep} step {t + 1} action {a}")
