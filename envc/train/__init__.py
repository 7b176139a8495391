"""Training on compiled envs: PPO in JAX (`envc train`), run folders and checkpoints."""

from __future__ import annotations

from envc.train.checkpoint import Run, RunError, load_run
from envc.train.config import TrainConfig
from envc.train.networks import Policy, flat_obs

__all__ = ["Policy", "Run", "RunError", "TrainConfig", "flat_obs", "load_run"]
