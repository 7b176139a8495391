"""`envc bench`: steps/s of a compiled backend on scan-fused (JAX) or threaded (Rust) batched rollouts."""

from __future__ import annotations

import importlib
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envc import ir

SINGLE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


@dataclass(frozen=True)
class BenchRow:
    """One batch size: the median steps/s of the timed repeats, and how the backend was prepared."""

    backend: str
    batch: int
    steps_per_s: float
    runs: tuple[float, ...]
    compile_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A plain dict for `--json`."""
        return {
            "backend": self.backend,
            "batch": self.batch,
            "steps_per_s": self.steps_per_s,
            "runs": list(self.runs),
            "compile_s": self.compile_s,
            **self.extra,
        }


def use_single_thread_xla() -> None:
    """Run XLA's CPU backend on one thread (must happen before jax is imported)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {SINGLE_THREAD_XLA}".strip()


def count_eqns(jaxpr: Any) -> int:
    """Equations of a jaxpr, counting those of nested jaxprs (scan/cond/while bodies) too."""
    n = 0
    for eqn in jaxpr.eqns:
        n += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else (value,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    n += count_eqns(inner)
    return n


def timed(fn: Callable[[], Any], repeats: int) -> list[float]:
    """Wall seconds of `repeats` calls of `fn` (which must block until its work is done)."""
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def bench_jax(
    spec: ir.SpecIR,
    batches: list[int],
    steps: int = 1000,
    repeats: int = 5,
    progress: Callable[[str], None] | None = None,
) -> list[BenchRow]:
    """Random-legal-action rollouts with auto-reset: one jitted `lax.scan` of `vmap(step)` per batch size."""
    import jax
    import jax.numpy as jnp

    from envc.lower_jax.build import JaxEnv

    env = JaxEnv(spec)
    key = jax.random.PRNGKey(0)
    state = env.env.init(key, env.params)
    eqns = count_eqns(jax.make_jaxpr(env.env.step)(state, jnp.zeros_like(_any_action(spec)), key, env.params).jaxpr)
    rows = []
    for batch in batches:
        if progress is not None:
            progress(f"jax batch {batch}: compiling")
        run = jax.jit(lambda k, b=batch: env.rollout(k, b, steps, params=env.params))
        t0 = time.perf_counter()
        compiled = run.lower(key).compile()
        compile_s = time.perf_counter() - t0
        compiled(key)[1].steps.block_until_ready()  # warm-up
        if progress is not None:
            progress(f"jax batch {batch}: timing {repeats} runs")
        walls = timed(lambda: compiled(key)[1].steps.block_until_ready(), repeats)
        runs = tuple(batch * steps / w for w in walls)
        rows.append(
            BenchRow(
                "jax",
                batch,
                statistics.median(runs),
                runs,
                compile_s,
                {"steps": steps, "jaxpr_eqns_per_step": eqns, "device": str(jax.devices()[0].platform)},
            )
        )
    return rows


def _any_action(spec: ir.SpecIR) -> Any:
    import jax.numpy as jnp

    if spec.box is not None:
        return jnp.zeros(spec.box.shape, jnp.float32)
    return jnp.int32(0)


def bench(
    spec: ir.SpecIR,
    backend: str,
    batches: list[int],
    steps: int = 1000,
    repeats: int = 5,
    threads: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[BenchRow]:
    """Benchmark `spec` on `backend` at each batch size."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    if backend == "jax":
        return bench_jax(spec, batches, steps, repeats, progress)
    if backend == "rust":
        try:
            rust_bench = importlib.import_module("envc.lower_rust.bench")
        except ImportError as e:
            raise ValueError(f"the rust backend is not available: {e}") from None
        from envc.lower_rust.build import RustBuildError

        try:
            rows: list[BenchRow] = rust_bench.run(spec, batches, steps, repeats, threads, progress)
        except RustBuildError as e:  # as `envc.build` reports it: one error, cargo's output verbatim
            raise ValueError(str(e)) from None
        return rows
    raise ValueError(f"backend '{backend}' cannot be benchmarked (have: jax, rust)")
