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


def test_observation_of_an_out_of_range_player_uses_the_documented_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state whose `current_player` is out of range (a spec bug, or an injected state) is observed as the
    non-strict reference does it: every per-player index clamped (the JAX observe once assumed `p` in range)."""
    monkeypatch.setenv("ENVC_CACHE", str(tmp_path))
    spec = envc.load(str(ROOT / "specs" / "kuhn_poker.yaml"))
    ref, jx = envc.build(spec, strict=False), envc.build(spec, backend="jax")
    d = ref.state_to_dict(ref.init(rng.key_from_seed(4)))
    d["card"] = np.array([2, 0], d["card"].dtype)  # player 0 holds K, player 1 J: a wrong row shows
    for player in (-1, 2, 7):
        d["current_player"] = np.asarray(player, d["current_player"].dtype)
        want, got = ref.state_to_dict(ref.state_from_dict(d)), jx.state_to_dict(jx.state_from_dict(d))
        assert_same(want, got, f"current_player {player}")
        assert np.asarray(want["observation"]).any(), player
        # An illegal action's penalty goes to the mover; out of range, nobody pays it (as in Rust).
        key = rng.key_from_seed(5)
        want = ref.state_to_dict(ref.step(ref.state_from_dict(d), ref.num_actions, key))
        got = jx.state_to_dict(jx.step(jx.state_from_dict(d), jx.num_actions, key))
        assert_same(want, got, f"illegal action, current_player {player}")
        assert np.asarray(want["rewards"]).tolist() == [1.0, 1.0], player
