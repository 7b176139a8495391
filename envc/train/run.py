"""The `envc train` driver: chunks of jitted PPO updates, a progress bar, metrics (CSV/JSON), a learning-curve
PNG and a checkpoint after every chunk, sharded over all local devices (and hosts, with jax.distributed)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh

import envc
from envc import ir
from envc.train.checkpoint import (
    RUN_FILE,
    RunError,
    list_checkpoints,
    read_resume,
    run_meta,
    save_checkpoint,
    save_resume,
    write_atomic,
    write_run_file,
)
from envc.train.config import TrainConfig, spec_kind
from envc.train.ppo import Trainer

# What a chunk hook receives: {"steps", "updates", "checkpoint", "rows"} (rows: this chunk's metric rows).
Hook = Callable[[dict[str, Any]], None]


@dataclass
class TrainResult:
    """What a training run produced."""

    run_dir: Path
    steps: int
    updates: int
    interrupted: bool
    checkpoint: Path | None
    compile_s: float
    train_s: float
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def steps_per_s(self) -> float:
        """Env steps per second of training (compilation excluded)."""
        return self.steps / self.train_s if self.train_s > 0 else 0.0

    def final_return(self) -> float:
        """Mean return (player 0) of the episodes that finished in the last tenth of the updates (at least 10)."""
        tail = [r for r in self.rows[-max(10, len(self.rows) // 10):] if r["episodes"] > 0]
        episodes = sum(r["episodes"] for r in tail)
        return sum(r["mean_return"] * r["episodes"] for r in tail) / episodes if episodes else math.nan


def maybe_init_distributed() -> None:
    """Join a multi-host run when the environment says so: ENVC_COORDINATOR (host:port) with ENVC_NUM_PROCESSES
    and ENVC_PROCESS_ID, or ENVC_DISTRIBUTED=1 to let jax.distributed detect the cluster (SLURM, TPU pods...)."""
    if jax.distributed.is_initialized():
        return
    if os.environ.get("ENVC_COORDINATOR"):
        jax.distributed.initialize(coordinator_address=os.environ["ENVC_COORDINATOR"],
                                   num_processes=int(os.environ["ENVC_NUM_PROCESSES"]),
                                   process_id=int(os.environ["ENVC_PROCESS_ID"]))
    elif os.environ.get("ENVC_DISTRIBUTED") == "1":
        jax.distributed.initialize()


def device_mesh(devices: list[Any] | None = None) -> Mesh | None:
    """A 1-D mesh named "batch" over all devices (every host's), or None with a single device."""
    devs = jax.devices() if devices is None else devices
    return Mesh(np.array(devs), ("batch",)) if len(devs) > 1 else None


def check_trainable(spec: ir.SpecIR) -> None:
    """RunError unless the spec has an action space to learn."""
    if spec.box is None and spec.num_actions < 1:
        raise RunError(f"{spec.path}: '{spec.name}' declares no actions: there is nothing to train")


COLUMNS = ["update", "env_steps", "episodes", "mean_return", "mean_length", "loss", "actor_loss", "value_loss",
           "entropy", "approx_kl", "clip_frac", "steps_per_s", "wall_s"]


def chunk_rows(metrics: dict[str, Any], first_update: int, batch: int, sps: float, wall: float,
               num_players: int) -> list[dict[str, Any]]:
    """One metrics row per update of a chunk."""
    rows = []
    for i in range(len(metrics["episodes"])):
        eps = int(metrics["episodes"][i])
        ret = np.asarray(metrics["return_sum"][i], np.float64) / eps if eps else np.full(num_players, math.nan)
        row: dict[str, Any] = {
            "update": first_update + i + 1, "env_steps": (first_update + i + 1) * batch, "episodes": eps,
            "mean_return": float(ret[0]), "mean_length": float(metrics["length_sum"][i]) / eps if eps else math.nan,
        }
        row.update({k: float(metrics[k][i]) for k in COLUMNS[5:11]})
        row.update(steps_per_s=sps, wall_s=wall)
        if num_players > 1:
            row.update({f"return_p{p}": float(ret[p]) for p in range(num_players)})
        rows.append(row)
    return rows


def write_metrics(run_dir: Path, rows: list[dict[str, Any]], evals: list[dict[str, Any]]) -> None:
    """metrics.csv (one row per update) and metrics.json (rows plus the vs-random evaluations), atomically."""
    cols = list(dict.fromkeys(k for r in rows for k in r)) if rows else COLUMNS
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=cols)
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(run_dir / "metrics.csv", buf.getvalue().encode())
    body = json.dumps({"updates": rows, "vs_random": evals}, indent=1, allow_nan=True)
    write_atomic(run_dir / "metrics.json", body.encode())


def plot_curve(run_dir: Path, rows: list[dict[str, Any]], evals: list[dict[str, Any]], title: str) -> None:
    """curve.png: mean episodic return against env steps (and the win rate against random, self-play)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    xs = [r["env_steps"] for r in rows if r["episodes"] > 0]
    ys = [r["mean_return"] for r in rows if r["episodes"] > 0]
    ax.plot(xs, ys, lw=1, color="tab:blue", label="mean return (player 0)")
    ax.set_xlabel("env steps")
    ax.set_ylabel("mean episodic return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    handles = ax.get_lines()
    if evals:
        ax2 = ax.twinx()
        handles += ax2.plot([e["env_steps"] for e in evals], [e["win_rate"] for e in evals], "o-", ms=3,
                            color="tab:orange", label="win rate vs random (greedy)")
        ax2.set_ylim(0, 1)
        ax2.set_ylabel("win rate vs uniform random")
    ax.legend(handles=handles, loc="lower left" if evals else "lower right", framealpha=0.9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    write_atomic(run_dir / "curve.png", buf.getvalue())


def train(
    spec: ir.SpecIR,
    run_dir: str | Path,
    config: TrainConfig,
    on_chunk: Hook | None = None,
    progress: bool = True,
    eval_games: int = 256,
    eval_max_steps: int = 1000,
    devices: list[Any] | None = None,
    resume: bool = False,
) -> TrainResult:
    """Train PPO on `spec`'s JAX env, writing run.json, checkpoints, metrics and curve.png into `run_dir`.

    Ctrl-C (KeyboardInterrupt, also from `on_chunk`) stops after writing the outputs: the last checkpoint is
    the one written after the last whole chunk. With `resume`, the run in `run_dir` goes on from the carry saved
    after its last chunk (one process only), to the same updates, metrics and parameters as if never stopped.
    """
    check_trainable(spec)
    root = Path(run_dir)
    if (root / RUN_FILE).exists() != resume:
        raise RunError(f"{root}: no run to resume" if resume else
                       f"{root} already holds a run; choose another -o folder, remove it, or --resume it")
    mesh = device_mesh(devices)
    jenv = envc.build(spec, backend="jax")
    try:
        trainer = Trainer(jenv, config, mesh)
    except ValueError as e:
        raise RunError(str(e)) from None
    lead = jax.process_index() == 0  # only one host writes files
    single = jax.process_count() == 1  # the resume file gathers the carry on one host
    kind = spec_kind(spec)
    if lead and not resume:
        root.mkdir(parents=True, exist_ok=True)
        write_run_file(root, spec, config, {"kind": kind, "devices": 1 if mesh is None else mesh.size})
    multi = spec.players > 1 and spec.box is None and eval_games > 0
    total, chunk = config.num_updates, config.chunk()
    rows: list[dict[str, Any]] = []
    evals: list[dict[str, Any]] = []
    done_updates, train_s, interrupted = 0, 0.0, False
    last_ckpt: Path | None = None
    carry = trainer.init(config.seed)
    if resume:
        carry, _ = read_resume(root, carry)
        done_updates = int(jax.device_get(carry.update))
        saved = json.loads((root / "metrics.json").read_text())
        rows, evals = saved["updates"][:done_updates], [e for e in saved["vs_random"]
                                                        if e["env_steps"] <= done_updates * config.batch_size]
        train_s = float(rows[-1]["wall_s"]) if rows else 0.0
        found = list_checkpoints(root)
        last_ckpt = found[-1] if found else None
    compile_s = trainer.compile(carry, min(chunk, total))

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    bar = Progress(TextColumn("[bold]train[/bold] {task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console,
                   disable=not (progress and lead))
    try:
        with bar:
            task = bar.add_task(spec.name, total=total * config.batch_size, info=f"compiled in {compile_s:.1f}s")
            while done_updates < total:
                n = min(chunk, total - done_updates)
                compile_s += trainer.compile(carry, n)  # the last, shorter chunk compiles once more
                start = time.perf_counter()
                carry, metrics = trainer.run_chunk(carry, n)
                wall = time.perf_counter() - start
                train_s += wall
                new = chunk_rows(metrics, done_updates, config.batch_size, n * config.batch_size / wall, train_s,
                                 spec.players)
                rows += new
                done_updates += n
                steps = done_updates * config.batch_size
                params = jax.device_get(carry.train_state.params)
                info = f"{new[-1]['steps_per_s']:,.0f} steps/s"
                finished = [r["mean_return"] for r in new if r["episodes"] > 0]
                if finished:
                    info += f"  return {np.mean(finished):.3g}"
                if multi:
                    ev = trainer.vs_random(params, config.seed + done_updates, eval_games, eval_max_steps)
                    evals.append({"env_steps": steps, **ev})
                    info += f"  vs random {ev['win_rate']:.0%}"
                if lead:
                    last_ckpt = save_checkpoint(root, params, {**run_meta(spec, config), "steps": steps,
                                                               "updates": done_updates, "kind": kind})
                    write_metrics(root, rows, evals)
                    if single:
                        save_resume(root, carry, {**run_meta(spec, config), "updates": done_updates})
                bar.update(task, completed=steps, info=info)
                if on_chunk is not None:
                    on_chunk({"steps": steps, "updates": done_updates, "checkpoint": last_ckpt, "rows": new})
    except KeyboardInterrupt:
        interrupted = True
    if lead and rows:
        write_metrics(root, rows, evals)
        plot_curve(root, rows, evals, f"PPO on {spec.name} (seed {config.seed})")
    return TrainResult(run_dir=root, steps=done_updates * config.batch_size, updates=done_updates,
                       interrupted=interrupted, checkpoint=last_ckpt, compile_s=compile_s, train_s=train_s, rows=rows)


def default_run_dir(spec: ir.SpecIR, seed: int) -> Path:
    """runs/<spec>-s<seed>-<UTC time>: a fresh folder per run."""
    return Path("runs") / f"{spec.name}-s{seed}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"


def train_cli(spec: ir.SpecIR, out: str | None, steps: int | None, num_envs: int | None, seed: int | None,
              config_file: str | None, resume: str | None = None) -> int:
    """`envc train`: train, print a summary; exit code 0, or 130 when interrupted (RunError/ConfigError raise)."""
    from rich.console import Console

    from envc.train.checkpoint import load_run
    from envc.train.config import make_config

    check_trainable(spec)
    if resume is not None:
        given = [n for n, v in (("-o", out), ("--steps", steps), ("--num-envs", num_envs), ("--seed", seed),
                                ("--config", config_file)) if v is not None]
        if given:
            raise RunError(f"--resume goes on with the run's own settings: drop {', '.join(given)}")
        config = load_run(resume, spec_path=spec.path).config  # the same spec (digest) and envc version
        run_dir = Path(resume)
    else:
        config = make_config(spec, config_file, total_steps=steps, num_envs=num_envs, seed=seed)
        run_dir = Path(out) if out else default_run_dir(spec, config.seed)
    maybe_init_distributed()
    if resume is not None and jax.process_count() > 1:
        raise RunError("--resume runs on one process (multi-host runs write no resume file)")
    result = train(spec, run_dir, config, resume=resume is not None)
    console = Console(stderr=True, soft_wrap=True, highlight=False)
    if jax.process_index() != 0:
        return 130 if result.interrupted else 0
    final = result.final_return()
    console.print(f"{spec.name}: {result.steps:,} env steps in {result.train_s:.1f}s "
                  f"({result.steps_per_s:,.0f} steps/s; compiled in {result.compile_s:.1f}s, "
                  f"{jax.device_count()} device(s)); mean return {final:.4g} (player 0, episodes of the last tenth)",
                  markup=False)
    if result.interrupted:
        where = result.checkpoint if result.checkpoint else "none (interrupted before the first chunk ended)"
        console.print(f"interrupted: last checkpoint {where}", markup=False)
        return 130
    console.print(f"run: {run_dir} (run.json, metrics.csv, metrics.json, curve.png, checkpoints/)", markup=False)
    return 0
