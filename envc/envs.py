"""Importing this module registers every shipped single-player spec with gymnasium, as `envc/<name>-v<major>`.

Scripts that take a gymnasium id then run envc's envs with no edit: `gym.make("envc.envs:envc/cartpole-v1")`
(gymnasium imports the module named before the colon), e.g. CleanRL's `ppo.py --env-id envc.envs:envc/cartpole-v1`.
The shipped specs are those `envc.gymnax.make` finds by name (specs/ and docs/examples/ of a source checkout).
"""

from __future__ import annotations

from envc import gymnasium as eg
from envc.gymnax import SEARCH


def register_shipped() -> list[str]:
    """Register the shipped single-player specs (Rust backend); returns their ids."""
    ids = []
    for path in sorted(p for d in SEARCH if d.is_dir() for p in d.glob("*.yaml")):
        if eg.load_spec(path).players == 1:
            ids.append(eg.register(path))
    return ids


REGISTERED = register_shipped()

__all__ = ["REGISTERED", "register_shipped"]
