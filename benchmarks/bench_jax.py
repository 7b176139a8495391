"""envc's JAX backend against its peers, measured in the same run with the same protocol.

Pairs: specs/cartpole.yaml vs gymnax CartPole-v1, specs/tic_tac_toe.yaml and specs/connect_four.yaml vs
pgx. Each side runs one jitted `lax.scan` of `steps` batched steps with auto-reset, exactly as the peer
scripts in ../shared/anchors/peers do: gymnax draws actions with one `randint` for the batch and auto-resets
inside its own `step`; pgx draws `categorical(log(mask))` and wraps `step` in `pgx.experimental.auto_reset`.
envc uses the generated `rollout` (the same action draws; finished envs restart in the same step).
Compile time is measured apart; steps/s is the median of `--repeats` timed runs, envc's and the peer's
taken in turns (one of each per round) so that drift in the machine's speed weighs on both alike.

    python benchmarks/bench_jax.py                      # both XLA settings, one subprocess each
    python benchmarks/bench_jax.py --xla single --batches 4096 --pairs cartpole
"""

from __future__ import annotations

import argparse
import importlib
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

ROOT = Path(__file__).resolve().parent.parent
SINGLE = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
PAIRS = {"cartpole": "gymnax CartPole-v1", "tic_tac_toe": "pgx tic_tac_toe", "connect_four": "pgx connect_four"}


def measure(fn: Callable[[Any], Any], arg: Any, work: int, repeats: int) -> dict[str, Any]:
    """Compile, warm up, then time `repeats` runs of a jitted function; steps/s median and spread."""
    return measure_together([(fn, arg)], work, repeats)[0]


def measure_together(sides: list[tuple[Callable[[Any], Any], Any]], work: int, repeats: int) -> list[dict[str, Any]]:
    """Compile and warm up each `(fn, arg)`, then time them in turns (one run of each per round, `repeats`
    rounds), so that a change in the machine's speed during the run weighs on every side alike."""
    import jax

    compiled, compile_s = [], []
    for fn, arg in sides:
        t0 = time.perf_counter()
        compiled.append(jax.jit(fn).lower(arg).compile())
        compile_s.append(time.perf_counter() - t0)
        jax.block_until_ready(compiled[-1](arg))
    sps: list[list[float]] = [[] for _ in sides]
    for _ in range(repeats):
        for i, (_, arg) in enumerate(sides):
            t0 = time.perf_counter()
            jax.block_until_ready(compiled[i](arg))
            sps[i].append(work / (time.perf_counter() - t0))
    return [
        {"sps": statistics.median(v), "sps_min": min(v), "sps_max": max(v), "compile_s": c}
        for v, c in zip(sps, compile_s)
    ]


def envc_side(name: str, batch: int, steps: int) -> tuple[Callable[[Any], Any], Any]:
    import jax

    import envc

    env = envc.build(ROOT / "specs" / f"{name}.yaml", backend="jax")
    rollout = importlib.import_module(env.package + ".rollout")
    policy = rollout.random_actions
    if name == "cartpole":  # gymnax's protocol: one randint draw for the whole batch
        policy = lambda key, states: jax.random.randint(key, (batch,), 0, env.num_actions)
    return lambda k: rollout.rollout(k, batch, steps, policy)[1], jax.random.PRNGKey(0)


def gymnax_side(batch: int, steps: int) -> tuple[Callable[[Any], Any], Any]:
    import gymnax
    import jax
    import jax.numpy as jnp

    env, params = gymnax.make("CartPole-v1")
    v_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.PRNGKey(1), batch), params)

    def rollout(key: Any) -> Any:
        def body(carry: Any, _: Any) -> Any:
            state, key, rsum, done = carry
            key, k_act, k_step = jax.random.split(key, 3)
            actions = jax.random.randint(k_act, (batch,), 0, 2)
            obs, state, reward, term, trunc, _ = v_step(jax.random.split(k_step, batch), state, actions, params)
            return (state, key, rsum + reward.sum() + obs.sum() * 0.0, done + (term | trunc).sum()), None

        return jax.lax.scan(body, (state, key, jnp.float32(0), jnp.int32(0)), None, length=steps)[0][2:]

    return rollout, jax.random.PRNGKey(0)


def pgx_side(game: str, batch: int, steps: int, repeats: int) -> dict[str, Any]:
    """pgx's rollout measured alone (for bench_rust.py)."""
    fn, arg = pgx_rollout(game, batch, steps)
    return measure(fn, arg, batch * steps, repeats)


def pgx_rollout(game: str, batch: int, steps: int) -> tuple[Callable[[Any], Any], Any]:
    import jax
    import jax.numpy as jnp
    import pgx
    from pgx.experimental import auto_reset

    env = pgx.make(game)
    v_step = jax.vmap(auto_reset(env.step, env.init))
    state = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(1), batch))

    def rollout(key: Any) -> Any:
        def body(carry: Any, _: Any) -> Any:
            state, key, rsum, done = carry
            key, k_act, k_step = jax.random.split(key, 3)
            logits = jnp.log(state.legal_action_mask.astype(jnp.float32))
            action = jax.random.categorical(k_act, logits=logits, axis=-1)
            state = v_step(state, action, jax.random.split(k_step, batch))
            rsum = rsum + state.rewards.sum() + state.observation.sum() * 0
            return (state, key, rsum, done + state.terminated.sum()), None

        return jax.lax.scan(body, (state, key, jnp.float32(0), jnp.int32(0)), None, length=steps)[0][2:]

    return rollout, jax.random.PRNGKey(0)


def run_setting(args: argparse.Namespace) -> list[dict[str, Any]]:
    """All pairs and batch sizes under the XLA setting of this process."""
    import jax

    rows = []
    for name in args.pairs.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            steps = args.steps
            peer_side = gymnax_side(batch, steps) if name == "cartpole" else pgx_rollout(name, batch, steps)
            ours, peer = measure_together([envc_side(name, batch, steps), peer_side], batch * steps, args.repeats)
            row = {
                "xla": args.xla,
                "device": str(jax.devices()[0].device_kind),
                "spec": name,
                "peer": PAIRS[name],
                "batch": batch,
                "steps": steps,
                "envc": ours,
                "peer_result": peer,
                "ratio": ours["sps"] / peer["sps"],
            }
            print(
                f"{args.xla:7s} {name:13s} b={batch:6d} envc {ours['sps']:12,.0f}  {PAIRS[name]:20s} "
                f"{peer['sps']:12,.0f}  ratio {row['ratio']:.2f}x  "
                f"compile {ours['compile_s']:.1f}s/{peer['compile_s']:.1f}s",
                file=sys.stderr,
                flush=True,
            )
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", default=",".join(PAIRS))
    ap.add_argument("--batches", default="1,256,4096")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--xla", choices=["default", "single", "both"], default="both")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "jax.json"))
    args = ap.parse_args()
    if args.xla == "both":
        rows: list[dict[str, Any]] = []
        for setting in ("default", "single"):
            cmd = [sys.executable, __file__, *sys.argv[1:], "--xla", setting, "--out", args.out + f".{setting}"]
            subprocess.run(cmd, check=True)
            rows += json.loads(Path(args.out + f".{setting}").read_text())["rows"]
            Path(args.out + f".{setting}").unlink()
    else:
        rows = run_setting(args)
    meta = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(), "date": time.strftime("%F")}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    if args.xla == "both" or "--out" not in sys.argv:
        print("| XLA | spec | peer | batch | envc steps/s | peer steps/s | ratio | envc compile s | peer compile s |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            e, p = r["envc"], r["peer_result"]
            print(
                f"| {r['xla']} | {r['spec']} | {r['peer']} | {r['batch']} | {e['sps']:,.0f} | {p['sps']:,.0f} | "
                f"{r['ratio']:.2f}x | {e['compile_s']:.1f} | {p['compile_s']:.1f} |"
            )


if __name__ == "__main__":
    if "--xla" in sys.argv and sys.argv[sys.argv.index("--xla") + 1] == "single":
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {SINGLE}".strip()
    main()
