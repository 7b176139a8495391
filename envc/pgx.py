"""pgx-style registry: `envc.pgx.make("connect_four")` -> a `pgx.Env`, like `pgx.make("connect_four")`."""

from __future__ import annotations

import importlib
from typing import Any

from envc.gymnax import registered_envs, resolve
from envc.ir import SpecIR


def make(name: str | SpecIR, **params: Any) -> Any:
    """The generated package's `PgxEnv` for a spec (a path or a shipped spec's name), with runtime `params`."""
    from envc.lower_jax.build import compile_to_cache

    spec = resolve(name)
    package = compile_to_cache(spec)
    env_module = importlib.import_module(package + ".env")
    pgx_module = importlib.import_module(package + ".pgx_env")
    return pgx_module.PgxEnv(env_module.Env().default_params.replace(**params) if params else None)


__all__ = ["make", "registered_envs"]
