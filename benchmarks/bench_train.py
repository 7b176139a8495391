"""PPO training throughput: `envc train`'s trainer against PureJaxRL, the env's share of training, and the TCG.

Sections (`--only`, comma-separated):

* `cartpole`: PPO env steps/s of envc's `Trainer` (envc/train/ppo.py, the program `envc train` runs) on
  specs/cartpole.yaml against PureJaxRL's `make_train` (tests/third_party/purejaxrl/ppo.py) on gymnax's own
  CartPole-v1, and PureJaxRL's `make_train` on envc's cartpole (`envc.gymnax.legacy`), same hyperparameters
  (PureJaxRL's CartPole config: 4 envs x 128 steps, 4 epochs x 4 minibatches, 64x64 tanh), and at `--wide` envs.
  A timed run is one whole jitted training program (init included on both sides: PureJaxRL's `train(rng)`,
  envc's `init` + one chunk of every update); no file I/O, no progress bar.
* `share`: the env's share of training time, cartpole, per policy size: the same trainer (a) as is, (b) with the
  env step replaced by a null transition (the next state is the previous one with the batch's observations
  rotated by one env: no env work, while the policy still sees changing, real observations, so XLA cannot hoist
  it out of the rollout loop), (c) the env alone: the same number of batched auto-reset steps with uniform
  random actions in a `lax.scan`. Share = (a - b) / a (the cost the env adds to training) and c / a.
* `tcg`: envc's trainer on specs/tcg.yaml, self-play defaults (64 envs x 64 steps, 128x128 relu) and `--tcg-envs`
  batches; fewer repeats (`--tcg-repeats`). The paper reports 153K PPO steps/s on one GPU.

Each side is compiled first (compile time reported apart), warmed up once, then timed `--repeats` times with
the sides run in turns (one run of each per round), so drift in a shared machine's speed weighs on all alike.
steps/s is the median. The load average is sampled around every timed run.

    nice -n 10 .venv/bin/python benchmarks/bench_train.py --json /tmp/bench_train.json
    nice -n 10 .venv/bin/python benchmarks/bench_train.py --only tcg --tcg-repeats 3
"""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "third_party" / "purejaxrl"))
CARTPOLE = ROOT / "specs" / "cartpole.yaml"
TCG = ROOT / "specs" / "tcg.yaml"
PAPER_TCG_SPS = 153_000

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import envc  # noqa: E402
from envc.train.config import TrainConfig, make_config  # noqa: E402
from envc.train.ppo import Trainer  # noqa: E402

PUREJAXRL_CARTPOLE = {
    "LR": 2.5e-4, "NUM_ENVS": 4, "NUM_STEPS": 128, "TOTAL_TIMESTEPS": 500_000, "UPDATE_EPOCHS": 4,
    "NUM_MINIBATCHES": 4, "GAMMA": 0.99, "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "ENT_COEF": 0.01, "VF_COEF": 0.5,
    "MAX_GRAD_NORM": 0.5, "ACTIVATION": "tanh", "ANNEAL_LR": True, "DEBUG": False,
}
LOADS: list[float] = []


def load1() -> float:
    """The 1-minute load average, also kept for the summary."""
    v = os.getloadavg()[0]
    LOADS.append(v)
    return v


def timed_together(sides: list[tuple[str, Callable[[], Any]]], work: int, repeats: int) -> list[dict[str, Any]]:
    """Warm each side up once, then `repeats` rounds of one run per side; median steps/s and the runs."""
    for _, fn in sides:
        fn()
    runs: list[list[float]] = [[] for _ in sides]
    loads: list[list[float]] = [[] for _ in sides]
    for _ in range(repeats):
        for i, (_, fn) in enumerate(sides):
            la = load1()
            t0 = time.perf_counter()
            fn()
            runs[i].append(work / (time.perf_counter() - t0))
            loads[i].append((la + load1()) / 2)
    return [{"side": name, "sps": statistics.median(r), "runs": r, "load": statistics.mean(ld)}
            for (name, _), r, ld in zip(sides, runs, loads)]


def envc_side(spec_path: Path, config: TrainConfig, null_env: bool = False) -> tuple[Callable[[], Any], float, int]:
    """(one whole training run, compile seconds, env steps per run) of envc's Trainer, jitted, no I/O."""
    spec = envc.load(str(spec_path))
    trainer = Trainer(envc.build(spec, backend="jax"), config)
    if null_env:
        def null_step(env: Any, state: Any, actions: Any, keys: Any, params: Any) -> Any:
            return state.replace(observation=jnp.roll(state.observation, 1, axis=0))

        trainer.reset_step = null_step
    n = config.num_updates
    t0 = time.perf_counter()
    carry = jax.block_until_ready(trainer.init(config.seed))  # compiles init
    trainer.compile(carry, n)
    compile_s = time.perf_counter() - t0

    def run() -> Any:
        out, _ = trainer.run_chunk(trainer.init(config.seed), n)  # metrics are fetched: the program ran
        return jax.block_until_ready(out)

    return run, compile_s, n * config.batch_size


def env_only_side(spec_path: Path, num_envs: int, steps: int) -> tuple[Callable[[], Any], float, int]:
    """The env alone: `steps` batched auto-reset steps of `num_envs` envs with uniform random actions (a scan)."""
    spec = envc.load(str(spec_path))
    jenv = envc.build(spec, backend="jax")
    step = importlib.import_module(jenv.package + ".rollout").batch_auto_reset_step
    env, params, num_actions = jenv.env, jenv.params, spec.num_actions

    def program(key: jax.Array) -> Any:
        key, init_key = jax.random.split(key)
        state = jax.vmap(env.init, in_axes=(0, None))(jax.random.split(init_key, num_envs), params)

        def body(c: tuple[Any, jax.Array], _: None) -> tuple[tuple[Any, jax.Array], jax.Array]:
            s, k = c
            k, act_key, step_key = jax.random.split(k, 3)
            actions = jax.random.randint(act_key, (num_envs,), 0, num_actions)
            s = step(env, s, actions, jax.random.split(step_key, num_envs), params)
            return (s, k), s.rewards.sum()

        _, rewards = jax.lax.scan(body, (state, key), None, length=steps)
        return rewards.sum()

    t0 = time.perf_counter()
    compiled = jax.jit(program).lower(jax.random.PRNGKey(0)).compile()
    compile_s = time.perf_counter() - t0
    return (lambda: jax.block_until_ready(compiled(jax.random.PRNGKey(0)))), compile_s, steps * num_envs


def purejaxrl_side(env_name: str, config: dict[str, Any], use_envc: bool) -> tuple[Callable[[], Any], float, int]:
    """PureJaxRL's make_train on gymnax's env (`import gymnax`) or envc's (`envc.gymnax.legacy`), compiled."""
    import gymnax
    import ppo  # tests/third_party/purejaxrl/ppo.py

    import envc.gymnax

    # make_train reads the module's `gymnax` global. gymnax 1.x's step gives six values: its own CartPole takes
    # the same five-value wrapper (gymnax's LegacyStepAPIWrapper) that envc.gymnax.legacy puts around envc's.
    gymnax_legacy = SimpleNamespace(make=lambda name: (lambda e, p: (envc.gymnax.five_value_env(e), p))(
        *gymnax.make(name)))
    ppo.gymnax = envc.gymnax.legacy if use_envc else gymnax_legacy
    cfg = {**copy.deepcopy(config), "ENV_NAME": env_name}
    train = ppo.make_train(cfg)
    t0 = time.perf_counter()
    compiled = jax.jit(train).lower(jax.random.PRNGKey(0)).compile()
    compile_s = time.perf_counter() - t0
    return (lambda: jax.block_until_ready(compiled(jax.random.PRNGKey(0)))), compile_s, \
        int(cfg["NUM_UPDATES"]) * cfg["NUM_ENVS"] * cfg["NUM_STEPS"]


def cartpole_config(num_envs: int, total: int, hidden: tuple[int, ...] = (64, 64)) -> TrainConfig:
    """envc's TrainConfig equal to PureJaxRL's CartPole config at `num_envs` envs and `total` steps."""
    c = PUREJAXRL_CARTPOLE
    return TrainConfig(total_steps=total, num_envs=num_envs, num_steps=c["NUM_STEPS"], update_epochs=c["UPDATE_EPOCHS"],
                       num_minibatches=c["NUM_MINIBATCHES"], lr=c["LR"], anneal_lr=c["ANNEAL_LR"], gamma=c["GAMMA"],
                       gae_lambda=c["GAE_LAMBDA"], clip_eps=c["CLIP_EPS"], ent_coef=c["ENT_COEF"],
                       vf_coef=c["VF_COEF"], max_grad_norm=c["MAX_GRAD_NORM"], hidden=hidden,
                       activation=c["ACTIVATION"], seed=0, updates_per_chunk=0)


def section_cartpole(points: list[tuple[int, int]], repeats: int) -> list[dict[str, Any]]:
    """envc trainer vs PureJaxRL (gymnax CartPole-v1) vs PureJaxRL (envc cartpole) at each (envs, total steps)."""
    rows = []
    for num_envs, total in points:
        pj = {**PUREJAXRL_CARTPOLE, "NUM_ENVS": num_envs, "TOTAL_TIMESTEPS": total}
        built = {
            "envc trainer, envc cartpole": envc_side(CARTPOLE, cartpole_config(num_envs, total)),
            "PureJaxRL make_train, gymnax CartPole-v1": purejaxrl_side("CartPole-v1", pj, use_envc=False),
            "PureJaxRL make_train, envc cartpole (legacy)": purejaxrl_side("cartpole", pj, use_envc=True),
        }
        works = {w for _, _, w in built.values()}
        assert len(works) == 1, f"sides do different amounts of work: {works}"
        res = timed_together([(k, v[0]) for k, v in built.items()], works.pop(), repeats)
        base = res[1]["sps"]
        for r in res:
            rows.append({"section": "cartpole", "num_envs": num_envs, "total_steps": total, **r,
                         "compile_s": built[r["side"]][1], "vs_purejaxrl_gymnax": r["sps"] / base})
        print_rows(rows[-3:])
    return rows


def section_share(points: list[tuple[int, tuple[int, ...], int]], repeats: int) -> list[dict[str, Any]]:
    """The env's share of PPO time at each (envs, hidden, updates): full trainer, null env, env alone."""
    rows = []
    for num_envs, hidden, updates in points:
        config = cartpole_config(num_envs, updates * num_envs * 128, hidden)
        full = envc_side(CARTPOLE, config)
        null = envc_side(CARTPOLE, config, null_env=True)
        alone = env_only_side(CARTPOLE, num_envs, updates * 128)
        assert full[2] == null[2] == alone[2]
        res = timed_together([("trainer", full[0]), ("trainer, null env", null[0]), ("env alone", alone[0])],
                             full[2], repeats)
        t = {r["side"]: 1.0 / r["sps"] for r in res}  # seconds per env step (medians)
        row = {"section": "share", "num_envs": num_envs, "hidden": list(hidden), "updates": updates,
               "steps": full[2], "sps": res[0]["sps"], "sps_null_env": res[1]["sps"], "sps_env_alone": res[2]["sps"],
               "runs": [r["runs"] for r in res], "compile_s": [full[1], null[1], alone[1]],
               "share_with_minus_without": (t["trainer"] - t["trainer, null env"]) / t["trainer"],
               "share_env_alone": t["env alone"] / t["trainer"], "load": statistics.mean(r["load"] for r in res)}
        rows.append(row)
        print(f"share {num_envs} envs, hidden {hidden}: trainer {row['sps']:,.0f} steps/s, null env "
              f"{row['sps_null_env']:,.0f}, env alone {row['sps_env_alone']:,.0f}; env share "
              f"{row['share_with_minus_without']:.1%} (with - without), {row['share_env_alone']:.1%} (alone / trainer)",
              flush=True)
    return rows


def section_tcg(points: list[tuple[int, int]], repeats: int) -> list[dict[str, Any]]:
    """envc's trainer on the TCG, self-play defaults at each (envs, updates per timed run)."""
    spec = envc.load(str(TCG))
    rows = []
    built = {}
    for num_envs, updates in points:
        base = make_config(spec)
        config = make_config(spec, num_envs=num_envs, total_steps=updates * num_envs * base.num_steps)
        built[f"envc trainer, tcg, {num_envs} envs x {config.num_steps}, hidden {list(config.hidden)}"] = (
            envc_side(TCG, config), num_envs)
        print(f"tcg {num_envs} envs compiled in {built[list(built)[-1]][0][1]:.0f}s", flush=True)
    for name, ((fn, compile_s, work), num_envs) in built.items():  # different work per side: timed one by one
        (r,) = timed_together([(name, fn)], work, repeats)
        rows.append({"section": "tcg", "num_envs": num_envs, "total_steps": work, **r, "compile_s": compile_s,
                     "vs_paper_gpu": r["sps"] / PAPER_TCG_SPS})
        print_rows(rows[-1:])
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    """One line per side, as results arrive."""
    for r in rows:
        print(f"{r['section']} {r['num_envs']} envs | {r['side']}: {r['sps']:,.0f} steps/s (median of "
              f"{len(r['runs'])}: {min(r['runs']):,.0f}..{max(r['runs']):,.0f}), compile {r['compile_s']:.1f}s, "
              f"load {r['load']:.1f}", flush=True)


def host() -> str:
    """CPU model, core count and the SIMD extensions that matter for XLA's CPU code."""
    with open("/proc/cpuinfo") as f:
        text = f.read()
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), "?")
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])
    simd = [s for s in ("avx2", "avx512f", "avx512bw", "avx512vl", "fma") if s in flags]
    dev = jax.devices()[0]
    return (f"{os.cpu_count()} x {model} ({', '.join(simd)}), jax {jax.__version__} on {dev.platform} "
            f"({dev.device_kind}), "
            f"Python {platform.python_version()}, nice {os.nice(0)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="cartpole,share,tcg")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=500_000 // 512 * 512, help="env steps per timed run, 4 envs")
    ap.add_argument("--wide", type=int, default=2048, help="the wider cartpole batch (envs)")
    ap.add_argument("--wide-steps", type=int, default=2048 * 128 * 4, help="env steps per timed run, wide batch")
    ap.add_argument("--large", default="512,512,512", help="the large policy's hidden widths")
    ap.add_argument("--tcg-envs", default="64,256", help="TCG batches (envs), comma-separated")
    ap.add_argument("--tcg-steps", type=int, default=65_536, help="about this many env steps per timed TCG run")
    ap.add_argument("--tcg-repeats", type=int, default=3)
    ap.add_argument("--json", help="write every row to this file")
    args = ap.parse_args()
    parts = args.only.split(",")
    print(f"host: {host()}; load average at start {os.getloadavg()}", flush=True)
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    if "cartpole" in parts:
        rows += section_cartpole([(4, args.steps), (args.wide, args.wide_steps)], args.repeats)
    if "share" in parts:
        large = tuple(int(w) for w in args.large.split(","))
        rows += section_share([(4, (64, 64), 100), (4, large, 10), (args.wide, (64, 64), 4)], args.repeats)
    if "tcg" in parts:
        rows += section_tcg([(n, max(1, args.tcg_steps // (n * 64))) for n in map(int, args.tcg_envs.split(","))],
                            args.tcg_repeats)
    summary = {"host": host(), "load_min": min(LOADS, default=0), "load_max": max(LOADS, default=0),
               "wall_s": time.perf_counter() - t0, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    print(f"done in {summary['wall_s']:.0f}s; load average during timed runs {summary['load_min']:.1f}.."
          f"{summary['load_max']:.1f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1, default=float))


if __name__ == "__main__":
    main()
