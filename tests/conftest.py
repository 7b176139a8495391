"""Test-wide settings: compiled packages go to a fresh cache per test process, never ~/.cache/envc."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

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
