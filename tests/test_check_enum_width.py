"""Enums past 127 members are stored as i16 (issue #23): a 200-member enum lints, compiles and verifies on
the reference interpreter, JAX and Rust; the limit is 32,767 members."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import yaml

import envc
from envc import ir, rng
from envc.lower_rust.build import RustEnv
from envc.verify import verify

N = 200


def wide_spec(n: int) -> dict[str, object]:
    """A one-player game over an n-member enum: enum state, an enum table column, enum action params, match."""
    members = [f"c{i}" for i in range(n)]
    return {
        "name": "wide_enum",
        "version": "1.0",
        "players": 1,
        "types": {"Card": {"enum": members}},
        "tables": {
            "deck": {
                "columns": {"card": "Card", "points": "i16"},
                "rows": [{"card": members[(7 * i) % n], "points": i} for i in range(n)],
            }
        },
        "state": {
            "held": {"type": "Card", "init": members[-1]},
            "seen": {"type": "Card", "shape": [3], "init": members[150]},
            "score": "i32",
            "steps": "i32",
        },
        "actions": {
            "pick": {
                "params": {"c": {"type": "Card"}},
                "legal": "c != held and (i32(c) % 3 == steps % 3 or c == Card.c199)",
                "effect": "seen[steps % 3] = held\nheld = c\nscore += i32(deck[i32(c)].points)",
            }
        },
        "rules": [
            {
                "name": "bonus",
                "body": (
                    "match held:\n  case c0 | c128:\n    score += 1000\n  case c199:\n    score -= 1\n"
                    "  case _:\n    held = Card((i32(held) + 128) % 200)\nsteps += 1"
                ),
            }
        ],
        "reward": "f32(score) / 1000.0",
        "terminated": "score > 5000",
        "truncated": "steps >= 12",
        "observation": {
            "fields": {"o_held": "Card", "o_seen": {"type": "Card", "shape": [3]}, "top": "i32"},
            "body": "o_held = held\no_seen = seen\ntop = i32(Card.c199)",
        },
    }


def write(tmp_path: Path, doc: dict[str, object]) -> Path:
    path = tmp_path / "wide.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_enum_of_200_members_is_i16_and_verifies_on_every_backend(tmp_path: Path) -> None:
    path = write(tmp_path, wide_spec(N))
    spec, diags = envc.lint(str(path))
    assert spec is not None and diags == []
    held = next(f for f in spec.fields if f.name == "held")
    assert held.ty.dtype is ir.DType.I16 and held.ty.enum == "Card"
    assert spec.num_actions == N
    ref = envc.build(spec, "reference")
    jax_env = envc.build(spec, "jax")
    for env in (ref, jax_env):
        checks = verify(spec, env, episodes=6, states=20, seed=5)
        assert checks and all(c.passed for c in checks), [c for c in checks if not c.passed]
    cache = Path(os.environ.get("ENVC_TEST_RUST_CACHE", tmp_path / "rust-cache"))
    checks = verify(spec, RustEnv(spec, cache=cache), episodes=6, states=20, seed=5)
    assert checks and all(c.passed for c in checks), [c for c in checks if not c.passed]
    # member 199 (past i8's range) reaches the observation and the state unchanged
    d = ref.state_to_dict(ref.init(rng.key_from_seed(3)))
    assert int(d["observation.top"]) == 199 and int(d["held"]) == 199 and d["held"].dtype == np.int16


@pytest.mark.parametrize(("n", "ok"), [(127, True), (128, True), (32_767, True), (32_768, False)])
def test_enum_member_limit(tmp_path: Path, n: int, ok: bool) -> None:
    doc = {
        "name": "limit",
        "version": "1.0",
        "players": 1,
        "types": {"Big": {"enum": [f"m{i}" for i in range(n)]}},
        "state": {"b": {"type": "Big", "init": f"m{n - 1}"}, "t": "i32"},
        "actions": {"go": {"effect": "t += 1"}},
        "terminated": "t > 1",
        "observation": {"fields": {"ob": "i32"}, "body": "ob = i32(b)"},
    }
    spec, diags = envc.lint(str(write(tmp_path, doc)))
    if ok:
        assert spec is not None and diags == []
        field = next(f for f in spec.fields if f.name == "b")
        assert field.ty.dtype is (ir.DType.I8 if n <= 127 else ir.DType.I16)
    else:
        assert spec is None
        assert [(d.code, d.message) for d in diags] == [("E012", "enums have at most 32,767 members (got 32,768)")]
