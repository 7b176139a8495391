"""Wrapping your own environment class as an envc oracle (docs/oracle.md walks through this file).

`Corridor` stands for the environment you trust: plain Python, its own random generator, no envc anywhere.
`CorridorOracle` shows it to envc in the terms of docs/examples/corridor.yaml. Verify the spec against it:

    envc verify docs/examples/corridor.yaml --against docs/examples/oracle_example.py:make_oracle

`make_oracle(spec)` is the factory envc calls (TARGET is `MODULE:FACTORY`; MODULE may be a dotted module name
on the Python path or a path to a .py file).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import numpy as np

from envc import SpecIR
from envc.oracle import Oracle, OracleError, Transition


class Corridor:
    """A corridor of `length` cells: walk left (0) or right (1); with probability `slip` a move goes left."""

    def __init__(self, length: int = 8, slip: float = 0.1, max_steps: int = 50):
        self.length, self.slip, self.max_steps = length, slip, max_steps
        self.rng = random.Random(0)
        self.pos, self.steps, self.reached = 0, 0, False

    def reset(self, seed: int) -> np.ndarray:
        self.rng = random.Random(seed)
        self.pos = self.rng.randrange(0, self.length // 2)
        self.steps, self.reached = 0, False
        return self.observation()

    def legal_actions(self) -> list[bool]:
        return [self.pos > 0, True]  # no walking into the left wall

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool]:
        move = 1 if action == 1 else -1
        if self.rng.random() < self.slip:
            move = -1
        self.pos = min(max(self.pos + move, 0), self.length - 1)
        self.steps += 1
        self.reached = self.pos == self.length - 1
        reward = 1.0 if self.reached else -0.01
        return self.observation(), reward, self.reached, self.steps >= self.max_steps

    def observation(self) -> np.ndarray:
        onehot = np.zeros(self.length, bool)
        onehot[self.pos] = True
        return onehot


class CorridorOracle(Oracle):
    """`Corridor` in the spec's terms: fields `pos`, `reached` and `step_count`, read and written directly."""

    def __init__(self, length: int, slip: float, max_steps: int):
        # the fields compared after every step; the spec's other fields (none here) would be left alone
        super().__init__(fields=("pos", "reached", "step_count"))
        self.env = Corridor(length, slip, max_steps)
        self.last = Transition(rewards=np.zeros(1, np.float32), terminated=False, truncated=False)

    def _report(self, obs: np.ndarray, reward: float, terminated: bool, truncated: bool) -> Transition:
        self.last = Transition(
            rewards=np.array([reward], np.float32),
            terminated=terminated,
            truncated=truncated,
            legal_action_mask=np.array(self.env.legal_actions()),
            observation=obs,
        )
        return self.last

    def reset(self, seed: int) -> Transition:
        return self._report(self.env.reset(seed), 0.0, False, False)

    def get_state(self) -> dict[str, np.ndarray]:
        e = self.env
        return {
            "pos": np.array(e.pos, np.int32),
            "reached": np.array(e.reached),
            "step_count": np.array(e.steps, np.int32),
        }

    def set_state(self, values: Mapping[str, np.ndarray]) -> None:
        e = self.env
        e.pos, e.reached, e.steps = int(values["pos"]), bool(values["reached"]), int(values["step_count"])
        self.last = Transition(
            rewards=np.zeros(1, np.float32),
            terminated=False,
            truncated=False,
            legal_action_mask=np.array(e.legal_actions()),
            observation=e.observation(),
        )

    def status(self) -> Transition:
        return self.last

    def step(self, action: Any) -> Transition:
        return self._report(*self.env.step(int(action)))

    def thresholds(self) -> dict[str, list[float]]:
        return {"step_count": [float(self.env.max_steps)], "pos": [float(self.env.length - 1)]}


def make_oracle(spec: SpecIR) -> Oracle:
    """The factory: the original as it is (its own parameters: the spec must match them, not the reverse); a
    spec of another size cannot be compared with it at all, which is an OracleError (one line, exit 2)."""
    oracle = CorridorOracle(length=8, slip=0.1, max_steps=50)
    length = next((p.default for p in spec.params if p.name == "LENGTH"), None)
    if length != oracle.env.length:
        raise OracleError(f"the corridor has {oracle.env.length} cells, spec '{spec.name}' has LENGTH {length}")
    return oracle
