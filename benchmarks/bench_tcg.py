"""The flagship TCG (specs/tcg.yaml) on every backend, against the hand-written Python implementation, in one run.

* Python: tests/tcg_oracle (the independent implementation of docs/tcg-rules.md), one game at a time, random legal
  actions, the legal mask and the acting player's observation every step (its own bench protocol).
* Rust: envc's all-Rust rollout (random legal actions, mask and observation every step, same-step auto-reset)
  on 1 and 2 threads.
* JAX on CPU: envc's scan-fused `rollout` at each `--jax-batches` size under the XLA setting of this process
  (`--single-thread-xla` for one XLA thread); JIT compile time and the step's jaxpr equation count apart.

Every steps/s figure is the median of `--repeats` timed runs after a warm-up. Ratios are to the Python
implementation measured in this run.

    python benchmarks/bench_tcg.py                        # everything, prints a markdown table
    python benchmarks/bench_tcg.py --only python,rust     # skip JAX
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_rust's timing helper
SPEC = ROOT / "specs" / "tcg.yaml"


def python_side(steps: int, repeats: int) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests"))
    from tcg_oracle.bench import timed_run

    timed_run(steps // 10, seed=99)  # warm-up
    runs = [timed_run(steps, seed=1000 * r) for r in range(repeats)]
    side = "Python implementation (tests/tcg_oracle)"
    return {"side": side, "batch": 1, "threads": 1, "sps": statistics.median(runs), "runs": runs}


def rust_side(batch: int, steps: int, repeats: int) -> list[dict[str, Any]]:
    from bench_rust import timed

    import envc

    t0 = time.perf_counter()
    env = envc.build(SPEC, backend="rust")
    build_s = time.perf_counter() - t0
    rows = []
    for threads in (1, 2):
        b = env.module._core.Batch(batch, threads, {})
        r = timed(lambda b=b: b.rollout(steps, 1), batch * steps, repeats)
        rows.append({"side": "envc Rust rollout", "batch": batch, "threads": threads, "build_s": build_s, **r})
    return rows


def jax_side(batches: list[int], steps: int, repeats: int) -> list[dict[str, Any]]:
    import envc
    from envc.bench import bench_jax

    xla = "one XLA thread" if "xla_cpu_multi_thread_eigen=false" in os.environ.get("XLA_FLAGS", "") else "XLA default"
    rows = []
    for r in bench_jax(envc.load(str(SPEC)), batches, steps=steps, repeats=repeats):
        rows.append(
            {
                "side": f"envc JAX rollout ({r.extra['device']}, {xla})",
                "batch": r.batch,
                "threads": "xla",
                "sps": r.steps_per_s,
                "runs": list(r.runs),
                "compile_s": r.compile_s,
                "jaxpr_eqns_per_step": r.extra["jaxpr_eqns_per_step"],
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="python,rust,jax")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--python-steps", type=int, default=20_000)
    ap.add_argument("--rust-batch", type=int, default=1024)
    ap.add_argument("--rust-steps", type=int, default=300)
    ap.add_argument("--jax-batches", default="4096")
    ap.add_argument("--jax-steps", type=int, default=100)
    ap.add_argument("--single-thread-xla", action="store_true")
    ap.add_argument("--json", help="write every row to this file")
    args = ap.parse_args()
    if args.single_thread_xla:
        from envc.bench import use_single_thread_xla

        use_single_thread_xla()
    parts = args.only.split(",")
    rows: list[dict[str, Any]] = []
    if "python" in parts:
        rows.append(python_side(args.python_steps, args.repeats))
    if "rust" in parts:
        rows += rust_side(args.rust_batch, args.rust_steps, args.repeats)
    if "jax" in parts:
        rows += jax_side([int(b) for b in args.jax_batches.split(",")], args.jax_steps, args.repeats)
    base = rows[0]["sps"] if "python" in parts else None
    with open("/proc/cpuinfo") as f:
        cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), platform.processor())
    print(f"machine: {os.cpu_count()} x {cpu}, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}")
    print("| side | batch | threads | steps/s (median) | min..max | vs Python | compile s | jaxpr eqns/step |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = f"{r['sps'] / base:,.0f}x" if base else ""
        compile_s = f"{r['compile_s']:.1f}" if "compile_s" in r else ""
        eqns = f"{r['jaxpr_eqns_per_step']:,}" if "jaxpr_eqns_per_step" in r else ""
        print(
            f"| {r['side']} | {r['batch']} | {r['threads']} | {r['sps']:,.0f} | "
            f"{min(r['runs']):,.0f}..{max(r['runs']):,.0f} | {ratio} | {compile_s} | {eqns} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2, default=float))


if __name__ == "__main__":
    main()
