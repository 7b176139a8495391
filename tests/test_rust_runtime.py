"""envc-runtime: its threefry generator and samplers against jax.random (known answers via cargo, live via Python)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import envc
from envc.lower_rust.build import RustEnv

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ROOT / "rust_runtime"


@pytest.fixture(scope="session")
def rust_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One envc cache for the whole test run (shared by xdist workers), so cargo builds each crate once."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "envc-rust-cache"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture(scope="module")
def module(rust_cache: Path) -> object:
    """A compiled spec's extension module: it exposes the runtime's generator to Python."""
    return RustEnv(envc.load(str(ROOT / "specs" / "cartpole.yaml")), cache=rust_cache).module


def test_cargo_test_checks_every_known_answer(rust_cache: Path) -> None:
    r = subprocess.run(
        ["cargo", "test", "--quiet", "--manifest-path", str(RUNTIME / "Cargo.toml")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "CARGO_TARGET_DIR": str(rust_cache / "runtime-test-target")},
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "runtime_matches_every_known_answer" not in r.stdout or "FAILED" not in r.stdout
    assert "test result: ok" in r.stdout


def test_known_answers_are_what_jax_says() -> None:
    """The committed vectors.txt is regenerated from jax.random here: a changed jax would show."""
    sys.path.insert(0, str(RUNTIME / "tests"))
    try:
        import make_vectors
    finally:
        sys.path.pop(0)
    text = (RUNTIME / "tests" / "vectors.txt").read_text().splitlines()
    assert make_vectors.lines() == text
    assert len(text) > 300


def test_python_binding_matches_jax_live(module: object) -> None:
    import jax
    import jax.numpy as jnp

    m = module
    gen = np.random.default_rng(7)
    for _ in range(40):
        key = (int(gen.integers(2**32)), int(gen.integers(2**32)))
        kj = jnp.array(key, jnp.uint32)
        assert m.key_from_seed(int(key[1])) == tuple(int(w) for w in jax.random.key_data(jax.random.PRNGKey(key[1])))
        assert m.split(key, 3) == [tuple(int(w) for w in k) for k in np.asarray(jax.random.split(kj, 3))]
        d = int(gen.integers(2**32))
        assert m.fold_in(key, d) == tuple(int(w) for w in np.asarray(jax.random.fold_in(kj, np.uint32(d))))
        assert m.bits(key, 5) == [int(b) for b in np.asarray(jax.random.bits(kj, (5,), jnp.uint32))]
        lo = float(np.float32(gen.uniform(-100, 100)))
        hi = float(np.float32(lo + gen.uniform(0, 50)))
        s = int(gen.integers(0, 8))  # a draw at site s reads the site key fold_in(key, s)
        site = m.fold_in(key, s)
        want = np.float32(jax.random.uniform(kj, (s + 1,), jnp.float32, lo, hi)[s])
        assert np.float32(m.uniform(site, lo, hi)).view(np.uint32) == want.view(np.uint32)
        p = float(gen.uniform())
        assert m.bernoulli(site, p) == bool(jax.random.bernoulli(kj, p, (s + 1,))[s])


def test_envc_samplers_match_the_reference(module: object) -> None:
    from envc import rng

    m = module
    gen = np.random.default_rng(3)
    for _ in range(50):
        key = (int(gen.integers(2**32)), int(gen.integers(2**32)))
        mask = [bool(x) for x in gen.integers(0, 2, size=int(gen.integers(1, 12)))]
        assert m.choice_mask(key, mask) == rng.choice_mask(key, mask)
        a = int(gen.integers(-(2**31), 2**31 - 1))
        b = int(gen.integers(a, 2**31))
        assert m.randint(key, a, b) == rng.randint_scalar(key, a, b)
        cap = int(gen.integers(1, 30))
        count = int(gen.integers(0, cap + 1))
        assert m.shuffle_order(key, cap, count) == rng.shuffle_order(key, cap, count)
