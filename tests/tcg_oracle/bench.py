"""Random legal play on the Python implementation: steps/s, the baseline the Rust and JAX backends are compared to.

Run from the repository root: `PYTHONPATH=tests python -m tcg_oracle.bench [--steps N] [--runs 5] [--json]`.
One step is what an environment step delivers: the action's effect, the new legal mask and the observation of
the player to act; a finished or truncated game is reset at once (the reset is counted in the time, not as a step).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time

from .chance import RandomChance
from .rules import legal_mask, new_game, step
from .views import observe


def timed_run(n_steps: int, seed: int) -> float:
    """Steps/s of `n_steps` random legal steps, games chained with auto-reset."""
    chance = RandomChance(seed)
    actions = random.Random(seed + 1)
    start = time.perf_counter()
    game = new_game(chance)
    mask = legal_mask(game)
    observe(game, game.current_player)
    for _ in range(n_steps):
        step(game, actions.choice([a for a, ok in enumerate(mask) if ok]), chance)
        if game.terminated or game.truncated:
            game = new_game(chance)
        mask = legal_mask(game)
        observe(game, game.current_player)
    return n_steps / (time.perf_counter() - start)


def benchmark(n_steps: int = 20_000, runs: int = 5, seed: int = 0) -> dict[str, object]:
    """The median (and every run) of `runs` timed runs with different seeds."""
    rates = [timed_run(n_steps, seed + 1000 * r) for r in range(runs)]
    return {
        "implementation": "tests/tcg_oracle (pure Python, one game, one thread)",
        "steps": n_steps,
        "runs": runs,
        "steps_per_s_median": statistics.median(rates),
        "steps_per_s_runs": rates,
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="steps per run")
    parser.add_argument("--runs", type=int, default=5, help="timed runs; the median is reported")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    result = benchmark(args.steps, args.runs, args.seed)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        runs = ", ".join(f"{r:,.0f}" for r in result["steps_per_s_runs"])  # type: ignore[attr-defined]
        print(f"tcg Python implementation: {result['steps_per_s_median']:,.0f} steps/s "
              f"(median of {args.runs} x {args.steps:,} steps; runs: {runs})")


if __name__ == "__main__":
    main()
