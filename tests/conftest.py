"""Test-wide settings: compiled packages go to a fresh cache per test process, never ~/.cache/envc."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

os.environ["ENVC_CACHE"] = tempfile.mkdtemp(prefix="envc-test-cache-")
atexit.register(shutil.rmtree, os.environ["ENVC_CACHE"], ignore_errors=True)
