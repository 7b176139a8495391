"""`envc compile`: write a backend package into a folder, all or nothing."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from envc import ir

BACKENDS = ("jax", "rust", "all")


class CompileError(Exception):
    """The output folder cannot be written as asked."""


def package_name(spec: ir.SpecIR, backend: str = "jax") -> str:
    """The import name of a compiled spec's package (`all` holds both `<name>_jax` and `<name>_rust`)."""
    return f"{spec.name}_{'envc' if backend == 'all' else backend}"


def _jax_files(spec: ir.SpecIR, text: str, name: str) -> dict[str, str]:
    from envc.lower_jax import render
    from envc.lower_jax.tests import render_tests

    files = render(spec, text, name)
    files.update(render_tests(spec, name))
    return files


def _rust_files(spec: ir.SpecIR, text: str, name: str, **extra: object) -> dict[str, str]:
    from envc.lower_rust import cargo_version, crate_lock, render, runtime_files
    from envc.lower_rust.tests import render_tests

    files = render(spec, text, name, runtime_path="runtime", **extra)  # type: ignore[arg-type]
    files["Cargo.lock"] = crate_lock(name, cargo_version(spec.version))
    files.update({f"runtime/{rel}": body for rel, body in runtime_files().items()})
    files.update(render_tests(spec, name))
    return files


def render_files(spec: ir.SpecIR, backend: str) -> dict[str, str]:
    """Every file of the package for `backend`, path -> text."""
    if backend not in BACKENDS:
        raise CompileError(f"unknown backend '{backend}' (have: {', '.join(BACKENDS)})")
    text = Path(spec.path).read_text() if Path(spec.path).exists() else ""
    if backend == "jax":
        return _jax_files(spec, text, package_name(spec, "jax"))
    if backend == "rust":
        return _rust_files(spec, text, package_name(spec, "rust"))
    jax_name, rust_name = package_name(spec, "jax"), package_name(spec, "rust")
    jax = _jax_files(spec, text, jax_name)
    files = _rust_files(
        spec,
        text,
        rust_name,
        dist_name=package_name(spec, "all"),
        extra_deps=("jax>=0.4.30", "chex>=0.1.86"),
        python_packages=(jax_name,),
    )
    for rel, body in jax.items():
        if rel.startswith(f"{jax_name}/"):
            files[f"python/{rel}"] = body
        elif rel == "tests/test_verify.py":
            files["tests/test_verify_jax.py"] = body
    files["tests/test_verify_rust.py"] = files.pop("tests/test_verify.py")
    return files


def write_package(spec: ir.SpecIR, out: str | Path, backend: str = "jax", force: bool = False) -> list[Path]:
    """Render into a temporary folder beside `out`, then move it into place (never a half-written `out`)."""
    out = Path(out)
    if out.exists() and not force:
        raise CompileError(f"{out} already exists; pass --force to replace it")
    if out.exists() and not out.is_dir():
        raise CompileError(f"{out} exists and is not a folder")
    files = render_files(spec, backend)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.tmp-"))
    try:
        for rel, body in files.items():
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(body)
        if out.exists():
            old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.old-"))
            out.rename(old / out.name)
            tmp.rename(out)
            shutil.rmtree(old)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [out / rel for rel in sorted(files)]
