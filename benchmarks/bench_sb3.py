"""Stable-Baselines3 on envc's Rust batch against SB3 on gymnasium's own CartPole-v1, in the same run.

Two figures, each side timed in turns (median of `--repeats`):
- VecEnv steps/s: `vec.step(random actions)` with SB3's auto-reset, `envc.sb3.RustVecEnv` of specs/cartpole.yaml
  vs `DummyVecEnv` over `gym.make("CartPole-v1")`, at each batch size of `--envs`;
- PPO steps/s: `PPO("MlpPolicy", vec).learn(--ppo-steps)` (SB3 defaults, torch on CPU, one thread), same two envs,
  and the env's share of that time.

    .venv/bin/python benchmarks/bench_sb3.py [--envs 8,256] [--repeats 5] [--ppo-steps 16384]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
import stable_baselines3
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

import envc.sb3

CARTPOLE = str(Path(__file__).resolve().parent.parent / "specs" / "cartpole.yaml")


def sides(n: int) -> dict[str, Callable[[], VecEnv]]:
    return {
        "envc RustVecEnv": lambda: envc.sb3.make_vec_env(CARTPOLE, n, seed=0),
        "SB3 DummyVecEnv(gym CartPole-v1)": lambda: DummyVecEnv([lambda: gym.make("CartPole-v1")] * n),
    }


def step_rate(vec: VecEnv, steps: int) -> float:
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 2, vec.num_envs) for _ in range(64)]
    vec.reset()
    t0 = time.perf_counter()
    for t in range(steps):
        vec.step(actions[t % 64])
    return steps * vec.num_envs / (time.perf_counter() - t0)


def ppo_rate(vec: VecEnv, steps: int) -> float:
    model = PPO("MlpPolicy", vec, seed=0, device="cpu")
    t0 = time.perf_counter()
    model.learn(steps)  # whole rollouts: at least n_steps x num_envs env steps
    return model.num_timesteps / (time.perf_counter() - t0)


def host() -> str:
    with open("/proc/cpuinfo") as f:
        text = f.read()
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), "?")
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])
    simd = [s for s in ("avx2", "avx512f", "fma") if s in flags]
    return (f"{os.cpu_count()} x {model} ({', '.join(simd)}), Python {platform.python_version()}, torch "
            f"{torch.__version__}, SB3 {stable_baselines3.__version__}, {time.strftime('%Y-%m-%d')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", default="8,256")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ppo-steps", type=int, default=16384)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(host())
    print("| figure | envs | envc RustVecEnv | SB3 DummyVecEnv(CartPole-v1) | ratio |")
    print("|---|---|---|---|---|")
    step_medians: dict[int, tuple[float, float]] = {}
    for n in (int(x) for x in args.envs.split(",")):
        makers = sides(n)
        vecs = {name: make() for name, make in makers.items()}
        steps = max(20, 200_000 // (n * 10))
        rates: dict[str, list[float]] = {name: [] for name in vecs}
        for _ in range(args.repeats):
            for name, vec in vecs.items():
                rates[name].append(step_rate(vec, steps))
        a, b = (statistics.median(r) for r in rates.values())
        step_medians[n] = (a, b)
        print(f"| VecEnv steps/s | {n} | {a:,.0f} | {b:,.0f} | {a / b:.1f}x |")
    ppo: dict[str, list[float]] = {name: [] for name in sides(8)}
    for _ in range(args.repeats):
        for name, make in sides(8).items():
            ppo[name].append(ppo_rate(make(), args.ppo_steps))
    a, b = (statistics.median(r) for r in ppo.values())
    print(f"| PPO steps/s (SB3 defaults, n_steps 2048) | 8 | {a:,.0f} | {b:,.0f} | {a / b:.2f}x |")
    if 8 in step_medians:  # the env's share of training time: its stepping time at that rate over the whole time
        ea, eb = step_medians[8]
        print(f"| env share of PPO time | 8 | {a / ea:.1%} | {b / eb:.1%} | |")


if __name__ == "__main__":
    main()
