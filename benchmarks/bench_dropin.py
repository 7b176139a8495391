"""Steps/s through the drop-in APIs, each against its peer in the same run (CPU, median of `--repeats`).

gymnax: a PureJaxRL-style loop, `jit(lax.scan(vmap(env.step)))` of random actions, envc's `.gymnax()` CartPole vs
gymnax's own `CartPole-v1`. pgx: `vmap(pgx.experimental.auto_reset(env.step, env.init))` with `act_randomly`,
envc's `PgxEnv` vs `pgx.make` for connect_four and tic_tac_toe.

    .venv/bin/python benchmarks/bench_dropin.py [--envs 4096] [--steps 200] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax


def gymnax_loop(env: Any, params: Any, num_envs: int, num_steps: int) -> Callable[[jax.Array], jax.Array]:
    """A jitted PureJaxRL-style rollout: reset every env, then `num_steps` of `vmap(env.step)` in a scan."""
    n = env.num_actions

    def run(key: jax.Array) -> jax.Array:
        key, reset_key = jax.random.split(key)
        _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_envs), params)

        def body(carry: tuple[Any, jax.Array], _: None) -> tuple[tuple[Any, jax.Array], jax.Array]:
            state, key = carry
            key, act_key, step_key = jax.random.split(key, 3)
            actions = jax.random.randint(act_key, (num_envs,), 0, n)
            out = jax.vmap(env.step, in_axes=(0, 0, 0, None))(jax.random.split(step_key, num_envs), state, actions,
                                                               params)
            return (out[1], key), out[2].sum()

        return jax.lax.scan(body, (state, key), None, length=num_steps)[1].sum()

    return jax.jit(run)


def pgx_loop(env: Any, num_envs: int, num_steps: int) -> Callable[[jax.Array], jax.Array]:
    """A jitted pgx loop: `vmap(init)`, then `num_steps` of `vmap(auto_reset(step, init))` with random legal moves."""
    from pgx.experimental import act_randomly, auto_reset

    step = jax.vmap(auto_reset(env.step, env.init))

    def run(key: jax.Array) -> jax.Array:
        key, init_key = jax.random.split(key)
        state = jax.vmap(env.init)(jax.random.split(init_key, num_envs))

        def body(carry: tuple[Any, jax.Array], _: None) -> tuple[tuple[Any, jax.Array], jax.Array]:
            state, key = carry
            key, act_key, step_key = jax.random.split(key, 3)
            actions = act_randomly(act_key, state.legal_action_mask)
            state = step(state, actions, jax.random.split(step_key, num_envs))
            return (state, key), state.rewards.sum()

        return jax.lax.scan(body, (state, key), None, length=num_steps)[1].sum()

    return jax.jit(run)


def paired_rates(
    theirs: Callable[[jax.Array], jax.Array], ours: Callable[[jax.Array], jax.Array], steps: int, repeats: int
) -> tuple[float, float, float]:
    """Median steps/s of each side and the median of the per-round ratios (ours / theirs): both compiled first,
    then timed in turns, the order swapped every round, so a change of load on a shared host hits both sides."""
    for fn in (theirs, ours):
        fn(jax.random.PRNGKey(0)).block_until_ready()
    times: dict[int, list[float]] = {0: [], 1: []}
    for i in range(repeats):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            fn = (theirs, ours)[side]
            t = time.perf_counter()
            fn(jax.random.PRNGKey(i + 1)).block_until_ready()
            times[side].append(time.perf_counter() - t)
    ratio = statistics.median(a / b for a, b in zip(times[0], times[1]))
    return steps / statistics.median(times[0]), steps / statistics.median(times[1]), ratio


def main() -> None:
    """Time each pair and print steps/s and envc's ratio to its peer."""
    import gymnax
    import pgx

    import envc.gymnax
    import envc.pgx

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--envs", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", choices=["gymnax", "pgx"], default=None)
    a = ap.parse_args()
    total = a.envs * a.steps
    dev = jax.devices()[0]
    print(f"jax {jax.__version__} on {dev.platform} ({dev.device_kind}); batch {a.envs} x {a.steps} steps, "
          f"median of {a.repeats}, sides timed in turns")
    if a.only in (None, "gymnax"):
        peer = gymnax_loop(*gymnax.make("CartPole-v1"), a.envs, a.steps)
        theirs, ours, ratio = paired_rates(peer, gymnax_loop(*envc.gymnax.make("cartpole"), a.envs, a.steps),
                                           total, a.repeats)
        print(f"gymnax CartPole: gymnax {theirs / 1e6:.2f}M/s, envc .gymnax() {ours / 1e6:.2f}M/s "
              f"= {ratio:.2f}x (median of per-round ratios)")
    if a.only in (None, "pgx"):
        for name in ("connect_four", "tic_tac_toe"):
            theirs, ours, ratio = paired_rates(pgx_loop(pgx.make(name), a.envs, a.steps),
                                               pgx_loop(envc.pgx.make(name), a.envs, a.steps), total, a.repeats)
            print(f"pgx {name} (auto_reset): pgx {theirs / 1e6:.2f}M/s, envc PgxEnv {ours / 1e6:.2f}M/s "
                  f"= {ratio:.2f}x (median of per-round ratios)")


if __name__ == "__main__":
    main()
