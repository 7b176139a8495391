"""gymnax-style registry: `envc.gymnax.make("cartpole")` -> `(env, params)`, like `gymnax.make("CartPole-v1")`.

`make` returns gymnax 1.x's API (`step` gives six values: obs, state, reward, terminated, truncated, info).
Trainers written for the five-value API (PureJaxRL, rejax) take `make(..., five_values=True)`, or
`from envc.gymnax import legacy as gymnax` in place of `import gymnax`: `legacy.make` wraps the env in gymnax's
`LegacyStepAPIWrapper` (done = terminated or truncated).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from envc.ir import SpecIR

ROOT = Path(__file__).resolve().parent.parent
SEARCH = (ROOT / "specs", ROOT / "docs" / "examples")  # where spec names are looked up, in order


def registered_envs() -> list[str]:
    """Names `make` resolves: the stems of the shipped specs and examples."""
    return sorted({p.stem for d in SEARCH if d.is_dir() for p in d.glob("*.yaml")})


def resolve(name: str | SpecIR) -> SpecIR:
    """The spec named `name` (a path, or a shipped spec's name such as "cartpole")."""
    from envc.pipeline import load

    if isinstance(name, SpecIR):
        return name
    path = Path(name)
    if not path.is_file():
        found = [d / f"{name}.yaml" for d in SEARCH if (d / f"{name}.yaml").is_file()]
        if not found:
            raise ValueError(f"no spec '{name}': give a path or one of {', '.join(registered_envs())}")
        path = found[0]
    return load(str(path))


def make(name: str | SpecIR, five_values: bool = False, **params: Any) -> tuple[Any, Any]:
    """`(env, params)` for a single-agent spec: a gymnax `Environment` and its `default_params` (overridden by
    `params`); `five_values=True` wraps the env in gymnax's `LegacyStepAPIWrapper` (`five_value_env`)."""
    from envc.lower_jax.build import compile_to_cache

    spec = resolve(name)
    if spec.players != 1:
        raise ValueError(f"'{spec.name}' has {spec.players} players; gymnax envs are single-agent (see envc.pgx)")
    env = importlib.import_module(compile_to_cache(spec) + ".gymnax_env").GymnaxEnv()
    env_params = env.default_params.replace(**params) if params else env.default_params
    return (five_value_env(env) if five_values else env), env_params


def five_value_env(env: Any) -> Any:
    """`env` with the five-value `step` (gymnax's `LegacyStepAPIWrapper`, made safe to deepcopy as rejax does)."""
    from gymnax.wrappers import LegacyStepAPIWrapper  # type: ignore[import-untyped]

    class FiveValueEnv(LegacyStepAPIWrapper):  # type: ignore[misc]
        """gymnax's wrapper, whose `__getattr__` recursed for `_env` on a half-built copy."""

        def __getattr__(self, name: str) -> Any:
            if name.startswith("__") or name == "_env":
                raise AttributeError(name)
            return getattr(self._env, name)

    return FiveValueEnv(env)


def _make_legacy(name: str | SpecIR, **params: Any) -> tuple[Any, Any]:
    """`make(name, five_values=True, **params)`."""
    return make(name, five_values=True, **params)


# `from envc.gymnax import legacy as gymnax`: a drop-in for `import gymnax` in five-value trainers.
legacy = SimpleNamespace(make=_make_legacy, registered_envs=registered_envs)

__all__ = ["five_value_env", "legacy", "make", "registered_envs", "resolve"]
