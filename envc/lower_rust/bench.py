"""`envc bench --backend rust`: steps/s of random-legal-action rollouts with auto-reset, stepped in Rust."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from envc import ir
from envc.bench import BenchRow, timed
from envc.lower_rust.build import RustEnv, build_seconds


def run(
    spec: ir.SpecIR,
    batches: list[int],
    steps: int,
    repeats: int,
    threads: int | None,
    progress: Callable[[str], None] | None = None,
) -> list[BenchRow]:
    """Per batch size: `repeats` timed rollouts of `steps` steps (after a warm-up), all in Rust, median steps/s.

    `compile_s` is the cargo build time of the package (recorded when it was built, so also for a cached build).
    """
    if progress is not None:
        progress("rust: building")
    t0 = time.perf_counter()
    env = RustEnv(spec, progress=progress)
    compile_s = build_seconds(env.module) or time.perf_counter() - t0
    rows = []
    for batch in batches:
        b = env.module._core.Batch(batch, threads, env.params)
        if progress is not None:
            progress(f"rust batch {batch}: warm-up")
        b.rollout(max(1, steps // 10), 0)
        if progress is not None:
            progress(f"rust batch {batch}: timing {repeats} runs on {b.threads} thread(s), {b.simd} build")
        episodes: list[int] = []
        walls = timed(lambda: episodes.append(int(b.rollout(steps, len(episodes) + 1)["episodes"])), repeats)
        runs = tuple(batch * steps / w for w in walls)
        rows.append(
            BenchRow(
                "rust",
                batch,
                statistics.median(runs),
                runs,
                compile_s,
                {"steps": steps, "threads": b.threads, "simd": b.simd, "episodes_per_run": episodes[-1]},
            )
        )
    return rows
