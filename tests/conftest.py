"""Test-wide settings: compiled packages go to a fresh cache per test process, never ~/.cache/envc; property tests are
derandomized unless HYPOTHESIS_PROFILE=explore."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# `make test` must not turn red on a seed nobody chose: property tests run a fixed sequence of examples here, and
# HYPOTHESIS_PROFILE=explore draws fresh ones (benchmarks/fuzz_specs.py runs the long campaigns).
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

os.environ["ENVC_CACHE"] = tempfile.mkdtemp(prefix="envc-test-cache-")
atexit.register(shutil.rmtree, os.environ["ENVC_CACHE"], ignore_errors=True)


@pytest.fixture(scope="session")
def rust_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One envc cache folder for the Rust builds of the whole run (shared by xdist workers): each crate is compiled
    once, whichever test asks first."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "envc-rust-cache"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture(scope="session", autouse=True)
def jax_compilation_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One JAX compilation cache for the whole run (shared by xdist workers and the CLIs tests start): many tests
    compile the same spec's programs (tcg's step, its callables), and XLA's CPU compile is a third of the matrix's
    tcg run."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "jax-compilation-cache"
    root.mkdir(exist_ok=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(root)
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    import jax

    jax.config.update("jax_compilation_cache_dir", str(root))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return root
