"""Compile a spec to a Rust extension in the envc cache and import it (`envc.build(spec, backend="rust")`).

All builds share one cargo target folder (`$ENVC_CACHE/rust/target`), so pyo3, numpy and rayon compile once,
and one vendored copy of the runtime per runtime version, so it compiles once too.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import functools
import hashlib
import importlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from envc import __version__, ir, rng
from envc.inputs import checked_action, checked_params, checked_state
from envc.ir import NP_DTYPE
from envc.lower_rust import (
    HERE,
    TEMPLATES,
    cargo_version,
    crate_lock,
    render,
    runtime_digest,
    runtime_files,
    scalar_only,
)


class RustBuildError(RuntimeError):
    """cargo could not build a generated crate (the message ends with cargo's output)."""


def cache_dir() -> Path:
    """Where compiled packages are kept (`ENVC_CACHE` or ~/.cache/envc)."""
    return Path(os.environ.get("ENVC_CACHE", Path.home() / ".cache" / "envc"))


def target_dir(cache: Path | None = None) -> Path:
    """The cargo target folder shared by every build."""
    return (cache or cache_dir()) / "rust" / "target"


@functools.cache
def compiler_digest() -> str:
    """A hash of the Rust lowering, its templates and the runtime, so a changed compiler never reuses a build."""
    h = hashlib.sha256(__version__.encode())
    lowering = [HERE / f"{m}.py" for m in ("__init__", "emit", "lanes", "names", "build")]
    for p in sorted([*lowering, *TEMPLATES.rglob("*.j2")]):
        h.update(p.name.encode() + p.read_bytes())
    h.update(runtime_digest().encode())
    return h.hexdigest()


def package_name(spec: ir.SpecIR, digest: str) -> str:
    """A unique importable package name for this spec and compiler version."""
    return f"envc_{re.sub(r'[^A-Za-z0-9_]', '_', spec.name)}_{digest[:10]}_rs"


def cargo_env(cache: Path | None = None) -> dict[str, str]:
    """The environment of a cargo build of an extension module for this interpreter."""
    env = dict(os.environ)
    env["PYO3_PYTHON"] = sys.executable
    env["PYO3_BUILD_EXTENSION_MODULE"] = "1"
    env["CARGO_TARGET_DIR"] = str(target_dir(cache))
    env.setdefault("CARGO_TERM_COLOR", "never")
    return env


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _write_tree(root: Path, files: Mapping[str, str]) -> None:
    for rel, body in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)


def shared_runtime(cache: Path | None = None) -> Path:
    """The cache's copy of the runtime crate for this runtime version (written once)."""
    root = (cache or cache_dir()) / "rust" / f"runtime-{runtime_digest()[:12]}"
    if not (root / "Cargo.toml").exists():
        root.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=".runtime-"))
        _write_tree(tmp, runtime_files())
        try:
            tmp.rename(root)
        except OSError:  # another process won the race
            shutil.rmtree(tmp, ignore_errors=True)
    return root


def cargo_build(manifest: Path, progress: Callable[[str], None] | None = None, cache: Path | None = None) -> None:
    """`cargo build --release` of one crate into the shared target folder."""
    if shutil.which("cargo") is None:
        raise RustBuildError("cargo is not installed: the rust backend needs a Rust toolchain (https://rustup.rs)")
    if progress is not None:
        progress("cargo build --release")
    proc = subprocess.run(
        ["cargo", "build", "--release", "--quiet", "--manifest-path", str(manifest)],
        env=cargo_env(cache),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-60:])
        raise RustBuildError(f"cargo build of {manifest.parent} failed:\n{tail}")


def compile_to_cache(spec: ir.SpecIR, progress: Callable[[str], None] | None = None, cache: Path | None = None) -> str:
    """Generate and build (once) the package of `spec` in `cache` (default: `cache_dir()`); returns its
    name, importable afterwards."""
    digest = hashlib.sha256((ir.build_digest(spec) + compiler_digest()).encode()).hexdigest()
    name = package_name(spec, digest)
    base = (cache or cache_dir()) / "rust"
    root = base / "packages" / name
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    done = root / name / f"_core{suffix}"
    if not done.exists():
        with _locked(base / "locks" / name):
            if not done.exists():
                _build(spec, name, base, root, suffix, progress, cache)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return name


def _build(
    spec: ir.SpecIR,
    name: str,
    base: Path,
    root: Path,
    suffix: str,
    progress: Callable[[str], None] | None,
    cache: Path | None,
) -> None:
    text = Path(spec.path).read_text() if Path(spec.path).exists() else spec.name
    runtime = shared_runtime(cache)
    files = render(spec, text, name, runtime_path=str(runtime))
    crate = base / "crates" / name
    shutil.rmtree(crate, ignore_errors=True)
    _write_tree(crate, {k: v for k, v in files.items() if not k.startswith("python/")})
    (crate / "Cargo.lock").write_text(crate_lock(name, cargo_version(spec.version)))
    t0 = time.perf_counter()
    cargo_build(crate / "Cargo.toml", progress, cache)
    built = target_dir(cache) / "release" / f"lib{name}.so"
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".{name}-"))
    _write_tree(tmp, {k.removeprefix("python/"): v for k, v in files.items() if k.startswith("python/")})
    shutil.copy2(built, tmp / name / f"_core{suffix}")
    (tmp / name / "BUILD_SECONDS").write_text(f"{time.perf_counter() - t0:.2f}\n")
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)


def build_seconds(module: Any) -> float:
    """How long the cargo build of a cached package took (0 if unknown)."""
    p = Path(module.__file__).parent / "BUILD_SECONDS"
    return float(p.read_text()) if p.exists() else 0.0


class RustEnv:
    """The envc runtime API over a generated Rust env (`init`/`step` on single states, numpy dict I/O)."""

    backend = "rust"

    def __init__(
        self,
        spec: ir.SpecIR,
        params: Mapping[str, Any] | None = None,
        module: Any = None,
        progress: Callable[[str], None] | None = None,
        cache: Path | None = None,
    ):
        self.spec = spec
        if module is None:
            module = importlib.import_module(compile_to_cache(spec, progress, cache))
        self.module = module
        self.env = self.module.Env(checked_params(spec, params) or None)
        self.params = self.env.params
        self.num_players = spec.players
        self.num_actions = spec.num_actions

    def with_params(self, params: Mapping[str, Any]) -> RustEnv:
        """The same built env with other runtime params."""
        other = copy.copy(self)
        other.env = self.module.Env(checked_params(self.spec, params) or None)
        other.params = other.env.params
        return other

    def init(self, key: Any) -> Any:
        """A fresh episode."""
        return self.env.init(key)

    def step(self, state: Any, action: Any, key: Any = None) -> Any:
        """One transition."""
        return self.env.step(state, checked_action(self.spec, action), key)

    def observe(self, state: Any, player: int) -> Any:
        """Observation of `player`."""
        return self.env.observe(state, player)

    def invariants(self, state: Any) -> list[str]:
        """Names of violated invariants."""
        return self.env.invariants(state)  # type: ignore[no-any-return]

    def state_to_dict(self, state: Any) -> dict[str, np.ndarray]:
        """Numpy arrays under the spec's storage names."""
        return self.env.state_to_dict(state)  # type: ignore[no-any-return]

    def state_from_dict(self, d: Mapping[str, Any]) -> Any:
        """Inject a state."""
        return self.env.state_from_dict(checked_state(self.spec, d))

    def calls(
        self, name: str, ds: list[dict[str, Any]], args: list[list[Any]], keys: list[Any]
    ) -> list[list[np.ndarray]] | None:
        """Spec function or procedure `name` called alone on each state of `ds` with its arguments and key: per
        case, as `ReferenceEnv.call` answers; None for one with array parameters or results (not exposed)."""
        c = next(c for c in self.spec.callables if c.name == name)
        if not scalar_only(c):
            return None
        results = c.results or ((c.returns,) if c.returns is not None else ())
        out = []
        for d, a, k in zip(ds, args, keys):
            values, fields = self.env.call(name, self.state_from_dict(d), [float(np.asarray(v)) for v in a],
                                           None if k is None else tuple(int(w) for w in rng.as_key(k)))
            if c.returns is None:
                out.append([np.asarray(fields[f.name]) for f in self.spec.fields])
            else:
                out.append([np.asarray(v).astype(NP_DTYPE[t.dtype]) for v, t in zip(values, results)])
        return out

    def vector_env(
        self,
        num_envs: int,
        seed: int = 0,
        threads: int | None = None,
        copy: bool = True,
        autoreset_mode: Any = "next_step",
    ) -> Any:
        """A gymnasium `VectorEnv` stepped in Rust (batched numpy outputs, legal mask in `info`); `autoreset_mode`:
        "next_step", "same_step" or "disabled"."""
        return self.env.vector_env(num_envs, seed=seed, threads=threads, copy=copy, autoreset_mode=autoreset_mode)

    def gym_env(self, render_mode: str | None = None) -> Any:
        """A gymnasium `Env`."""
        return self.env.gym_env(render_mode=render_mode)

    def rollout(self, num_envs: int, steps: int, seed: int = 0, threads: int | None = None) -> dict[str, Any]:
        """Random-legal-action rollouts with auto-reset, all in Rust."""
        return self.env.rollout(num_envs, steps, seed=seed, threads=threads)  # type: ignore[no-any-return]
