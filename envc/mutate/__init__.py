"""Mutation testing of the derived suite: how many single-point bugs in generated code `envc verify` catches.

`envc mutate SPEC --backend jax|rust` makes single-point mutants of the generated code, runs the suite (L1, L2,
L3 in order, stopping at the first failure) on each, and reports killed / total, the level that caught each,
and the survivors and equivalent mutants located in the generated file and in the spec (docs/mutate.md).
"""

from __future__ import annotations

from typing import Any

from envc import ir
from envc.mutate.run import LEVELS, MutateError, Outcome, Program, Report, mutate

__all__ = ["LEVELS", "MutateError", "Outcome", "Program", "Report", "mutate", "program"]


def program(spec: ir.SpecIR, backend: str, progress: Any = None) -> Program:
    """The mutable generated code of `spec` on `backend` ("jax" or "rust")."""
    if backend == "jax":
        from envc.mutate.jax import JaxProgram

        return JaxProgram(spec)
    if backend == "rust":
        from envc.mutate.rust import RustProgram

        return RustProgram(spec, progress=progress)
    raise MutateError(f"backend '{backend}' cannot be mutated (have: jax, rust)")
