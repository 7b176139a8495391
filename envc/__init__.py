"""envc: a declarative spec-to-environment compiler for reinforcement learning."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envc.diagnostics import Diagnostic, SpecError, SpecRuntimeError
from envc.ir import SpecIR
from envc.pipeline import lint, load

__version__ = "0.1.0"
__all__ = ["Diagnostic", "SpecError", "SpecIR", "SpecRuntimeError", "__version__", "build", "lint", "load"]


def build(
    spec: SpecIR | str, backend: str = "reference", params: Mapping[str, Any] | None = None, strict: bool = True
) -> Any:
    """An environment for `spec` (an IR or a path) on `backend`; only "reference" exists so far."""
    if isinstance(spec, str):
        spec = load(spec)
    if backend == "reference":
        from envc.interpret import ReferenceEnv

        return ReferenceEnv(spec, params=params, strict=strict)
    raise ValueError(f"backend '{backend}' is not available yet (have: reference)")
