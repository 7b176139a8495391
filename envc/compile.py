"""`envc compile`: write a backend package into a folder, all or nothing."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from envc import ir


class CompileError(Exception):
    """The output folder cannot be written as asked."""


def package_name(spec: ir.SpecIR) -> str:
    """The import name of a compiled spec's package."""
    return f"{spec.name}_jax"


def render_files(spec: ir.SpecIR, backend: str) -> dict[str, str]:
    """Every file of the package for `backend`, path -> text."""
    if backend != "jax":
        raise CompileError(f"backend '{backend}' is not available yet (have: jax)")
    from envc.lower_jax import render
    from envc.lower_jax.tests import render_tests

    text = Path(spec.path).read_text() if Path(spec.path).exists() else ""
    name = package_name(spec)
    files = render(spec, text, name)
    files.update(render_tests(spec, name))
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
