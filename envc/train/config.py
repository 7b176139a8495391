"""Training configuration: PPO hyperparameters with defaults per spec kind, overridable from a YAML/JSON file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from envc.ir import SpecIR

Kind = Literal["discrete", "box", "self_play"]


class ConfigError(Exception):
    """A config file that cannot be read or does not validate (one line)."""


class TrainConfig(BaseModel):
    """PPO hyperparameters (PureJaxRL's names, lower case); `envc train --config FILE` overrides any of them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    total_steps: int = Field(500_000, gt=0, description="Env steps to train for (all envs together)")
    num_envs: int = Field(4, gt=0, description="Envs stepped in parallel")
    num_steps: int = Field(128, gt=0, description="Steps per env per update (rollout length)")
    update_epochs: int = Field(4, gt=0, description="Passes over each rollout")
    num_minibatches: int = Field(4, gt=0, description="Minibatches per pass")
    lr: float = Field(2.5e-4, gt=0)
    anneal_lr: bool = True
    gamma: float = Field(0.99, ge=0, le=1)
    gae_lambda: float = Field(0.95, ge=0, le=1)
    clip_eps: float = Field(0.2, gt=0)
    ent_coef: float = Field(0.01, ge=0)
    vf_coef: float = Field(0.5, ge=0)
    max_grad_norm: float = Field(0.5, gt=0)
    hidden: tuple[int, ...] = Field((64, 64), min_length=1)
    activation: Literal["tanh", "relu"] = "tanh"
    log_std_init: float = Field(0.0, description="Initial log standard deviation of the Gaussian (box actions)")
    seed: int = 0
    updates_per_chunk: int = Field(0, ge=0, description="Updates per jitted call between progress/checkpoints "
                                                        "(0: about 50K env steps)")

    @model_validator(mode="after")
    def _minibatches_divide(self) -> TrainConfig:
        batch = self.num_envs * self.num_steps
        if batch % self.num_minibatches:
            raise ValueError(f"num_envs * num_steps ({batch}) is not a multiple of num_minibatches "
                             f"({self.num_minibatches})")
        return self

    @property
    def batch_size(self) -> int:
        """Env steps per update."""
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        """Updates in the whole run (at least one)."""
        return max(1, self.total_steps // self.batch_size)

    def chunk(self) -> int:
        """Updates per jitted call."""
        return self.updates_per_chunk or max(1, 50_000 // self.batch_size)


# Defaults per spec kind. discrete: PureJaxRL's CartPole settings; box: a small-batch continuous PPO for CPU;
# self_play: wider nets and more envs for turn-based games.
DEFAULTS: dict[str, dict[str, Any]] = {
    "discrete": {},
    "box": {"total_steps": 1_000_000, "num_envs": 16, "num_steps": 256, "update_epochs": 10,
            "num_minibatches": 32, "lr": 3e-4, "ent_coef": 0.0, "gamma": 0.95, "hidden": (64, 64)},
    "self_play": {"total_steps": 2_000_000, "num_envs": 64, "num_steps": 64, "update_epochs": 4,
                  "num_minibatches": 8, "lr": 3e-4, "ent_coef": 0.05, "hidden": (128, 128),
                  "activation": "relu"},
}


def spec_kind(spec: SpecIR) -> Kind:
    """Which defaults apply: self-play (more than one player), box (continuous actions) or discrete."""
    if spec.players > 1:
        return "self_play"
    return "box" if spec.box is not None else "discrete"


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The mapping in a YAML or JSON config file (ConfigError if unreadable or not a mapping)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read config {p}: {e.strerror or e}") from None
    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"{p}: not valid {'JSON' if p.suffix == '.json' else 'YAML'}: "
                          f"{str(e).splitlines()[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping of settings, got {type(data).__name__}")
    return data


def make_config(spec: SpecIR, file: str | Path | None = None, **overrides: Any) -> TrainConfig:
    """Defaults for the spec's kind, then the config file, then the non-None overrides (CLI options)."""
    values: dict[str, Any] = dict(DEFAULTS[spec_kind(spec)])
    where = "config"
    if file is not None:
        values.update(read_config_file(file))
        where = str(file)
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return TrainConfig(**values)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"]) or "config"
        msg = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
        raise ConfigError(f"{where}: {loc}: {msg} (allowed keys: {', '.join(TrainConfig.model_fields)})"
                          if first["type"] == "extra_forbidden" else f"{where}: {loc}: {msg}") from None
