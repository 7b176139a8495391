"""envc: a declarative spec-to-environment compiler for reinforcement learning."""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import Any

from envc import rng
from envc.diagnostics import Diagnostic, SpecError, SpecRuntimeError
from envc.ir import SpecIR
from envc.pipeline import lint, load

__version__ = "0.1.0"
__all__ = ["Diagnostic", "SpecError", "SpecIR", "SpecRuntimeError", "__version__", "build", "lint", "load", "rng"]


def build(
    spec: SpecIR | str | PathLike[str],
    backend: str = "reference",
    params: Mapping[str, Any] | None = None,
    strict: bool = True,
) -> Any:
    """An environment for `spec` (an IR or a path) on `backend`: "reference", "jax" or "rust"."""
    if not isinstance(spec, SpecIR):
        spec = load(str(spec))
    if backend == "reference":
        from envc.interpret import ReferenceEnv

        return ReferenceEnv(spec, params=params, strict=strict)
    if backend == "jax":
        from envc.lower_jax.build import JaxEnv

        return JaxEnv(spec, params=dict(params or {}))
    if backend == "rust":
        from envc.lower_rust.build import RustBuildError, RustEnv

        try:
            return RustEnv(spec, params=params)
        except RustBuildError as e:
            raise ValueError(str(e)) from None
    raise ValueError(f"backend '{backend}' is not available (have: reference, jax, rust)")
