"""Random-legal-action rollouts (what `envc run` prints)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from envc import rng


class StuckEpisode(Exception):
    """A non-terminal state without a legal action: the spec's `legal` and `terminated` disagree."""


@dataclass(frozen=True)
class Summary:
    """Totals over a batch of episodes."""

    episodes: int
    mean_return: list[float]
    mean_length: float
    terminated: int
    truncated: int
    steps_per_second: float


def _warm_up(env: Any, key: Any) -> None:
    s = env.init(key)
    box = env.spec.box
    if box is not None:
        env.step(s, np.zeros(box.shape, np.float32), key)
    elif np.any(s.legal_action_mask):
        env.step(s, int(np.flatnonzero(s.legal_action_mask)[0]), key)


def random_rollouts(env: Any, episodes: int, seed: int, max_steps: int = 10_000) -> Summary:
    """Play `episodes` episodes with uniformly random legal actions (uniform boxes for continuous specs)."""
    gen = np.random.default_rng(seed)
    key = rng.key_from_seed(seed)
    returns = np.zeros((episodes, env.num_players), np.float64)
    lengths = []
    term = trunc = steps = 0
    box = env.spec.box
    _warm_up(env, key)  # compiled backends build/JIT on first use: keep that out of steps/s
    t0 = time.perf_counter()
    for ep in range(episodes):
        key, k_init = rng.split(key)
        s = env.init(k_init)
        n = 0
        while not (s.terminated or s.truncated) and n < max_steps:
            key, k_step = rng.split(key)
            if box is not None:
                action: Any = gen.uniform(box.low, box.high, box.shape).astype(np.float32)
            else:
                legal = np.flatnonzero(s.legal_action_mask)
                if legal.size == 0:
                    raise StuckEpisode(
                        f"episode {ep}, step {n}: no action is legal but the episode has not ended "
                        "(check the actions' `legal` and `terminated`)"
                    )
                action = int(gen.choice(legal))
            s = env.step(s, action, k_step)
            returns[ep] += s.rewards
            n += 1
        steps += n
        lengths.append(n)
        term += int(s.terminated)
        trunc += int(s.truncated)
    dt = time.perf_counter() - t0
    return Summary(
        episodes,
        returns.mean(axis=0).tolist(),
        float(np.mean(lengths)) if lengths else 0.0,
        term,
        trunc,
        steps / dt if dt > 0 else 0.0,
    )
