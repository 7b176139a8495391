"""envc's Rust backend against its peers, measured in the same run with the peers' own protocol.

* cartpole vs gymnasium's `make_vec("CartPole-v1", num_envs=1024, vectorization_mode="vector_entry_point")`
  and envpool's `make_gymnasium("CartPole-v1", num_envs=1024, batch_size=1024)` (when installed:
  `pip install -e '.[bench]'`): all driven from one Python loop over pre-generated random actions (the peer
  scripts' protocol, ../shared/anchors/peers/bench_gymnasium.py and bench_envpool.py), envc through its
  gymnasium `VectorEnv` (next-step auto-reset, fresh output arrays filled by Rust; a `copy=False` row reuses
  them); plus envc's all-Rust rollout for reference. Ratios are against gymnasium; envpool's own ratio to
  gymnasium is shown too.
* connect_four vs pgx on CPU at batch 4096: pgx's jitted `lax.scan` of `vmap(auto_reset(step))` with
  `categorical(log(mask))` actions (bench_jax.py's pgx side, XLA default threading and one XLA thread, each in
  its own process) against envc's all-Rust rollout (random legal actions, same-step auto-reset).
* the mini TCG and, when present, the full TCG (specs/tcg.yaml): all-Rust rollouts.

Every figure is the median of `--repeats` timed runs after a warm-up (cartpole's sides run in turns, one run
of each per round, so drift in the machine's speed weighs on all alike, each after a pause longer than envc's
1 ms spin window, so no earlier side's threads still poll on the cores); `other` is how many cores other
processes kept busy meanwhile (from /proc/stat), since this VM is shared. envc's lane kernels, pack rows and
resets run their AVX2 build where the host has it (`ENVC_RUST_AVX2=0` measures the baseline build).

    python benchmarks/bench_rust.py                 # everything, prints a markdown table
    python benchmarks/bench_rust.py --only cartpole --repeats 7
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SINGLE = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
# Pause before each timed run: an envc batch's workers poll for 1 ms after its last call (ENVC_SPIN_US).
QUIET_S = 0.005


def busy_cores() -> float:
    """Machine-wide busy CPU seconds so far."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def timed(fn: Callable[[], Any], work: int, repeats: int) -> dict[str, Any]:
    """Warm up once, then time `repeats` calls: median steps/s, the runs, and the other processes' load."""
    return timed_together([fn], work, repeats)[0]


def timed_together(fns: list[Callable[[], Any]], work: int, repeats: int) -> list[dict[str, Any]]:
    """`timed` for several sides at once, run in turns (one call of each per round) so that drift in the
    machine's speed weighs on every side alike."""
    for fn in fns:
        fn()
    sps: list[list[float]] = [[] for _ in fns]
    other: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            time.sleep(QUIET_S)
            b0, c0, t0 = busy_cores(), time.process_time(), time.perf_counter()
            fn()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            sps[i].append(work / wall)
            other[i].append(max(0.0, (busy_cores() - b0 - cpu) / wall))
    return [{"sps": statistics.median(v), "runs": v, "other_cores": statistics.mean(o)} for v, o in zip(sps, other)]


def python_loop(envs: Any, actions: np.ndarray) -> Callable[[], float]:
    def run() -> float:
        acc = 0.0
        for a in actions:
            _, r, _, _, _ = envs.step(a)
            acc += float(r[0])
        return acc

    return run


def cartpole(args: argparse.Namespace) -> list[dict[str, Any]]:
    import gymnasium as gym

    import envc

    n, steps = args.cartpole_envs, args.cartpole_steps
    actions = np.random.default_rng(0).integers(0, 2, size=(steps, n))
    t0 = time.perf_counter()
    env = envc.build(ROOT / "specs" / "cartpole.yaml", backend="rust")
    build_s = time.perf_counter() - t0
    peer = gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point")
    peer.reset(seed=0)
    sides: list[tuple[dict[str, Any], Callable[[], Any]]] = [
        ({"side": "gymnasium CartPoleVectorEnv", "threads": 1}, python_loop(peer, actions))
    ]
    try:
        import envpool
    except ImportError:
        print("envpool is not installed (pip install -e '.[bench]'): no envpool rows", file=sys.stderr)
    else:
        for threads in (1, 2):  # the peer script's protocol: synchronous, batch_size == num_envs, int32 actions
            pool = envpool.make_gymnasium("CartPole-v1", num_envs=n, batch_size=n, num_threads=threads, seed=0)
            pool.reset()
            sides.append(
                (
                    {"side": f"envpool {envpool.__version__}", "threads": threads, "ratio_key": "peer_ratio"},
                    python_loop(pool, actions.astype(np.int32)),
                )
            )
    for threads, copy in ((1, True), (2, True), (2, False)):
        envs = env.vector_env(n, seed=0, threads=threads, copy=copy)
        envs.reset(seed=0)
        side = "envc rust VectorEnv" if copy else "envc rust VectorEnv, copy=False"
        ours = {"side": side, "threads": threads, "ratio_key": "ratio", "build_s": build_s, "simd": envs.simd}
        sides.append((ours, python_loop(envs, actions)))
    for threads in (1, 2):
        b = env.module._core.Batch(n, threads, {})
        ours = {"side": "envc rust rollout (all in Rust)", "threads": threads, "ratio_key": "ratio", "simd": b.simd}
        sides.append((ours, lambda b=b: b.rollout(steps, 1)))
    results = timed_together([fn for _, fn in sides], n * steps, args.repeats)
    gym_sps = results[0]["sps"]
    rows = []
    for (meta, _), r in zip(sides, results):
        row = {"spec": "cartpole", "batch": n, **meta, **r}
        if key := row.pop("ratio_key", None):  # envc: "ratio"; envpool: "peer_ratio"; gymnasium: none
            row[key] = r["sps"] / gym_sps
        rows.append(row)
    return rows


def pgx_process(game: str, batch: int, steps: int, repeats: int, xla: str) -> dict[str, Any]:
    """pgx's rollout in a fresh process (XLA's threading is fixed when jax is imported)."""
    code = (
        f"import json, sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); from bench_jax import pgx_side; "
        f"print(json.dumps(pgx_side({game!r}, {batch}, {steps}, {repeats})))"
    )
    env = dict(os.environ)
    if xla == "single":
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {SINGLE}".strip()
    b0, t0 = busy_cores(), time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["busy_cores_whole_run"] = (busy_cores() - b0) / (time.perf_counter() - t0)
    return result


def rollout_rows(
    name: str, path: Path, batch: int, steps: int, args: argparse.Namespace, peer: float | None, peer_name: str
) -> list[dict[str, Any]]:
    import envc

    t0 = time.perf_counter()
    env = envc.build(path, backend="rust")
    build_s = time.perf_counter() - t0
    rows = []
    for threads in (1, 2):
        b = env.module._core.Batch(batch, threads, {})
        r = timed(lambda b=b: b.rollout(steps, 1), batch * steps, args.repeats)
        row = {
            "spec": name,
            "side": "envc rust rollout (all in Rust)",
            "batch": batch,
            "threads": threads,
            "build_s": build_s,
            "simd": b.simd,
            **r,
        }
        if peer:
            row["ratio"] = r["sps"] / peer
            row["peer"] = peer_name
        rows.append(row)
    return rows


def connect_four(args: argparse.Namespace) -> list[dict[str, Any]]:
    n, steps = args.c4_batch, args.c4_steps
    rows = []
    peers = {}
    for xla in ("default", "single"):
        p = pgx_process("connect_four", n, steps, args.repeats, xla)
        peers[xla] = p["sps"]
        rows.append(
            {
                "spec": "connect_four",
                "side": f"pgx connect_four (XLA {xla})",
                "batch": n,
                "threads": "xla",
                "sps": p["sps"],
                "runs": [p["sps_min"], p["sps_max"]],
                "compile_s": p["compile_s"],
                "other_cores": None,
            }
        )
    best = max(peers.values())
    rows += rollout_rows("connect_four", ROOT / "specs" / "connect_four.yaml", n, steps, args, best, "best pgx")
    return rows


def tcg(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = rollout_rows("tcg_mechanics", ROOT / "tests/specs/tcg_mechanics.yaml", 1024, 300, args, None, "")
    if (ROOT / "specs" / "tcg.yaml").exists():
        rows += rollout_rows("tcg", ROOT / "specs" / "tcg.yaml", 1024, 300, args, None, "")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="cartpole,connect_four,tcg")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cartpole-envs", type=int, default=1024)
    ap.add_argument("--cartpole-steps", type=int, default=2000)
    ap.add_argument("--c4-batch", type=int, default=4096)
    ap.add_argument("--c4-steps", type=int, default=1000)
    ap.add_argument("--json", help="write every row to this file")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for part in args.only.split(","):
        rows += {"cartpole": cartpole, "connect_four": connect_four, "tcg": tcg}[part](args)
    with open("/proc/cpuinfo") as f:
        cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), platform.processor())
    builds = ", ".join(sorted({r["simd"] for r in rows if "simd" in r}))
    print(f"machine: {os.cpu_count()} x {cpu}, {platform.python_version()}, {time.strftime('%Y-%m-%d')}")
    print(f"envc's Rust hot functions: {builds} build (ENVC_RUST_AVX2=0 runs the baseline build)")
    print("| spec | side | batch | threads | steps/s (median) | min..max | ratio | other cores |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = f"**{r['ratio']:.2f}x**" if "ratio" in r else ""
        if "peer_ratio" in r:
            ratio = f"({r['peer_ratio']:.2f}x)"
        other = f"{r['other_cores']:.2f}" if r.get("other_cores") is not None else ""
        print(
            f"| {r['spec']} | {r['side']} | {r['batch']} | {r['threads']} | {r['sps']:,.0f} | "
            f"{min(r['runs']):,.0f}..{max(r['runs']):,.0f} | {ratio} | {other} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2, default=float))


if __name__ == "__main__":
    main()
