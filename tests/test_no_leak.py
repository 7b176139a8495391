"""Hidden information stays hidden: resampling what player p cannot see never changes p's observation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc import rng
from envc.visibility import Visibility

ROOT = Path(__file__).resolve().parent.parent
# the specs, and an example whose public card is hidden or shown depending on the round (`visible: EXPR`)
SPECS = sorted((ROOT / "specs").glob("*.yaml")) + [ROOT / "docs" / "examples" / "leduc_holdem.yaml"]


def hidden_from(
    spec: envc.SpecIR, player: int, d: dict[str, np.ndarray] | None = None, vis: Visibility | None = None
) -> list[tuple[str, Any]]:
    """(field, index) pairs player `player` must not see: `none` fields whole, `owner` fields of other players,
    and for a visibility rule the elements it hides in state `d` (a bool mask)."""
    out: list[tuple[str, Any]] = []
    for f in spec.fields:
        if f.visible == "none":
            out.append((f.name, ...))
        elif f.visible == "owner":
            out += [(f.name, q) for q in range(spec.players) if q != player]
        elif f.visible == "rule":
            assert d is not None and vis is not None
            mask = vis.hidden(d, player).get(f.name)
            if mask is not None:
                out.append((f.name, mask))
    return out


def resample(
    d: dict[str, np.ndarray], spec: envc.SpecIR, parts: list[tuple[str, Any]], gen: np.random.Generator
) -> None:
    for name, idx in parts:
        f = spec.field(name)
        arr = d[name]
        if f.ty.enum is not None:
            n = len(next(e.members for e in spec.enums if e.name == f.ty.enum))
            arr[idx] = gen.integers(0, n, size=np.shape(arr[idx]))
        elif arr.dtype == np.bool_:
            arr[idx] = gen.integers(0, 2, size=np.shape(arr[idx])).astype(bool)
        elif arr.dtype.kind == "f":
            arr[idx] = gen.normal(size=np.shape(arr[idx]))
        else:
            arr[idx] = gen.integers(-3, 60, size=np.shape(arr[idx]))


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_resampling_hidden_fields_keeps_observations(path: Path) -> None:
    spec = envc.load(str(path))
    if not any(f.visible != "all" for f in spec.fields):
        pytest.skip("no hidden information declared")
    env = envc.build(spec, strict=False)
    vis = Visibility(spec)
    gen = np.random.default_rng(0)
    key = rng.key_from_seed(1)
    checked = 0
    for _ in range(8 if path.stem == "tcg" else 30):  # 8 tcg games: ~1,000 states, each resampled 3 times per player
        key, k = rng.split(key)
        s = env.init(k)
        while True:
            d = env.state_to_dict(s)
            for p in range(spec.players):
                parts = hidden_from(spec, p, d, vis)
                want = env.observe(s, p)
                for _ in range(3):
                    d2 = {k2: np.array(v, copy=True) for k2, v in d.items()}
                    resample(d2, spec, parts, gen)
                    got = env.observe(env.state_from_dict(d2), p)
                    pairs = [(got[k], want[k]) for k in want] if isinstance(want, dict) else [(got, want)]
                    for g, w in pairs:
                        np.testing.assert_array_equal(g, w, err_msg=f"player {p} sees hidden state")
                    checked += 1
            if s.terminated or s.truncated:
                break
            key, k = rng.split(key)
            s = env.step(s, int(gen.choice(np.flatnonzero(s.legal_action_mask))), k)
    assert checked > 100
