"""Run a trained policy on any backend (`envc eval`): per-episode returns, seeded so every backend sees the same keys.

Episode i of seed S uses the key `e = fold_in(PRNGKey(S), i)`: its reset key `fold_in(e, 0)`, the env key of step
t `fold_in(fold_in(e, 1), t)` and the policy's key of step t `fold_in(fold_in(e, 2), t)`. The policy acts on one
episode's observation at a time (vmapped over episodes), so an episode's actions do not depend on which others
run beside it. The reference, JAX and Rust backends therefore play identical episodes (identical returns) when
the env and the policy are deterministic functions of these keys; an external original (`--against`) is seeded
by its own `reset(seed)` and compared in distribution only.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from envc import ir

BACKENDS = ("reference", "jax", "rust")
QUANTILES = (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)
MAX_STEPS = 10_000  # an episode is cut (and counted as unfinished) after this many steps


class EvalError(Exception):
    """Bad input to eval / transfer / versus (one line; the CLI prints it and exits 2)."""


class Acts(Protocol):
    """What a policy offers (envc.train.networks.Policy): batched, jit- and vmap-able `act`."""

    discrete: bool

    def act(self, key: Any, obs: Any, mask: Any, greedy: bool) -> Any: ...


# actor(keys [N, 2], obs [N, D] f32, mask [N, A] bool | None, current_player [N], episode ids [N]) -> actions [N]
Actor = Callable[[Any, Any, Any, Any, Any], Any]


def flatten(observation: Any) -> Any:
    """The policy's input: `envc.train.networks.flat_obs` (the trainer's own flattening)."""
    from envc.train.networks import flat_obs

    return flat_obs(observation)


def per_episode(policy: Acts, greedy: bool) -> Actor:
    """An actor that runs `policy.act` on each episode alone (a batch of 1 per row, vmapped), with its own key."""
    import jax

    def one(key: Any, obs: Any, mask: Any) -> Any:
        return policy.act(key, obs[None], None if mask is None else mask[None], greedy)[0]

    def actor(keys: Any, obs: Any, mask: Any, player: Any, ids: Any) -> Any:
        if mask is None:
            return jax.vmap(lambda k, o: one(k, o, None))(keys, obs)
        return jax.vmap(one)(keys, obs, mask)

    return actor


def random_actor(spec: ir.SpecIR) -> Actor:
    """Uniformly random legal actions (discrete) or uniform in the box (continuous)."""
    import jax
    import jax.numpy as jnp

    box = spec.box

    def actor(keys: Any, obs: Any, mask: Any, player: Any, ids: Any) -> Any:
        if box is not None:

            def draw(k: Any) -> Any:
                return jax.random.uniform(k, box.shape, jnp.float32, box.low, box.high)

            return jax.vmap(draw)(keys)
        logits = jnp.where(mask, 0.0, -jnp.inf)
        return jax.vmap(lambda k, lg: jax.random.categorical(k, lg).astype(jnp.int32))(keys, logits)

    return actor


# ---- results ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReturnSummary:
    """The distribution of one player's episode returns."""

    player: int
    episodes: int
    mean: float
    sd: float
    ci_low: float  # 95% t-interval of the mean
    ci_high: float
    quantiles: dict[str, float]  # "0%", "5%", ..., "100%"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "player": self.player,
            "episodes": self.episodes,
            "mean": self.mean,
            "sd": self.sd,
            "ci95": [v if math.isfinite(v) else None for v in (self.ci_low, self.ci_high)],  # None: one episode
            "quantiles": self.quantiles,
        }


def summarize(returns: np.ndarray, player: int = 0) -> ReturnSummary:
    """Mean, SD, quantiles and the 95% confidence interval of the mean of one player's returns."""
    from scipy import stats as sps  # type: ignore[import-untyped]

    x = np.asarray(returns, np.float64).reshape(-1)
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if x.size > 1 else 0.0
    if x.size > 1 and sd > 0:
        half = float(sps.t.ppf(0.975, x.size - 1)) * sd / math.sqrt(x.size)
    else:
        half = 0.0 if sd == 0 and x.size > 1 else math.inf
    qs = {f"{q:.0%}": float(np.quantile(x, q)) for q in QUANTILES}
    return ReturnSummary(player, int(x.size), mean, sd, mean - half, mean + half, qs)


@dataclass
class EpisodeResults:
    """Per-episode outcomes of one policy on one backend."""

    backend: str  # reference / jax / rust / the original's target
    seed: int
    greedy: bool
    returns: np.ndarray  # f32 [episodes, players]: each player's summed rewards
    lengths: np.ndarray  # i32 [episodes]
    unfinished: int  # episodes cut at max_steps
    seconds: float  # wall time, including JIT compilation
    seed_matched: bool = True  # episodes follow envc's keys (not the original's own seeding)

    @property
    def episodes(self) -> int:
        """Number of episodes."""
        return int(self.returns.shape[0])

    def summaries(self) -> list[ReturnSummary]:
        """One summary per player."""
        return [summarize(self.returns[:, p], p) for p in range(self.returns.shape[1])]

    def to_json(self, per_episode: bool = False) -> dict[str, Any]:
        """JSON-ready form (with the per-episode returns and lengths if asked)."""
        out: dict[str, Any] = {
            "backend": self.backend,
            "seed": self.seed,
            "greedy": self.greedy,
            "episodes": self.episodes,
            "unfinished": self.unfinished,
            "mean_length": float(self.lengths.mean()),
            "seconds": self.seconds,
            "players": [s.to_json() for s in self.summaries()],
        }
        if per_episode:
            out["returns"] = self.returns.astype(float).tolist()
            out["lengths"] = self.lengths.astype(int).tolist()
        return out


# ---- keys ---------------------------------------------------------------------------------------------------
def episode_keys(seed: int, episodes: int) -> tuple[Any, Any, Any]:
    """Per-episode (reset keys, env-step base keys, policy base keys), each uint32 [episodes, 2]."""
    import jax

    return episode_keys_from(jax.random.PRNGKey(seed), episodes)


def episode_keys_from(base: Any, episodes: int) -> tuple[Any, Any, Any]:
    """`episode_keys` from a made key (traceable)."""
    import jax
    import jax.numpy as jnp

    ep = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(base, jnp.arange(episodes, dtype=jnp.uint32))
    sub = jax.vmap(jax.random.fold_in, in_axes=(0, None))
    return sub(ep, 0), sub(ep, 1), sub(ep, 2)


def _at(keys: Any, t: Any) -> Any:
    import jax

    return jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, t)


def _check(spec: ir.SpecIR, episodes: int, max_steps: int) -> None:
    if episodes < 1:
        raise EvalError(f"--episodes must be at least 1, got {episodes}")
    if max_steps < 1:
        raise EvalError(f"--max-steps must be at least 1, got {max_steps}")
    if spec.box is None and spec.num_actions < 1:
        raise EvalError(f"spec '{spec.name}' has no actions")


# ---- the JAX backend: every episode in one jitted while loop -------------------------------------------------
def run_jax(
    spec: ir.SpecIR, actor: Actor, episodes: int, seed: int, max_steps: int = MAX_STEPS, env: Any = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """All episodes vmapped in one `lax.while_loop` (finished ones frozen): returns, lengths, unfinished."""
    import jax
    import jax.numpy as jnp

    import envc

    jenv = env if env is not None else envc.build(spec, backend="jax")
    core, params = jenv.env, jenv.params
    discrete = spec.box is None

    def run(seed_key: Any) -> tuple[Any, Any, Any]:
        reset, step_base, act_base = episode_keys_from(seed_key, episodes)
        ids = jnp.arange(episodes, dtype=jnp.int32)
        states = jax.vmap(core.init, in_axes=(0, None))(reset, params)
        done = jnp.logical_or(states.terminated, states.truncated)
        returns = jnp.zeros((episodes, spec.players), jnp.float32)
        lengths = jnp.zeros(episodes, jnp.int32)

        def cond(c: tuple[Any, ...]) -> Any:
            return jnp.logical_and(c[4] < max_steps, ~jnp.all(c[1]))

        def body(c: tuple[Any, ...]) -> tuple[Any, ...]:
            states, done, returns, lengths, t = c
            mask = states.legal_action_mask if discrete else None
            actions = actor(_at(act_base, t), flatten(states.observation), mask, states.current_player, ids)
            new = jax.vmap(core.step, in_axes=(0, 0, 0, None))(states, actions, _at(step_base, t), params)
            live = ~done

            def keep(a: Any, b: Any) -> Any:
                return jnp.where(live.reshape(live.shape + (1,) * (a.ndim - 1)), a, b)

            returns = returns + jnp.where(live[:, None], new.rewards.astype(jnp.float32), 0.0)
            states = jax.tree.map(keep, new, states)
            done = done | (live & (new.terminated | new.truncated))
            return states, done, returns, lengths + live.astype(jnp.int32), t + 1

        _, done, returns, lengths, _ = jax.lax.while_loop(cond, body, (states, done, returns, lengths, jnp.int32(0)))
        return returns, lengths, jnp.sum(~done)

    returns, lengths, unfinished = jax.jit(run)(jax.random.PRNGKey(seed))
    return np.asarray(returns), np.asarray(lengths), int(unfinished)


# ---- one state at a time: the reference interpreter, Rust, an original ---------------------------------------
class _Stepper(Protocol):
    """One episode driven from Python: its current observation, mask, player; `step` returns the rewards."""

    def observation(self) -> Any: ...
    def mask(self) -> np.ndarray: ...
    def player(self) -> int: ...
    def done(self) -> bool: ...
    def step(self, action: Any, key: np.ndarray) -> np.ndarray: ...


class _EnvStepper:
    """An episode on an envc backend (reference or Rust): init/step with envc's keys."""

    def __init__(self, env: Any, key: np.ndarray):
        self.env = env
        self.state = env.init(key)

    def observation(self) -> Any:
        return self.state.observation

    def mask(self) -> np.ndarray:
        return np.asarray(self.state.legal_action_mask, np.bool_)

    def player(self) -> int:
        return int(self.state.current_player)

    def done(self) -> bool:
        return bool(self.state.terminated) or bool(self.state.truncated)

    def step(self, action: Any, key: np.ndarray) -> np.ndarray:
        self.state = self.env.step(self.state, action, key)
        return np.asarray(self.state.rewards, np.float32)


class _OracleStepper:
    """An episode on an external original (an envc.oracle.Oracle), seeded by its own `reset(seed)`."""

    def __init__(self, oracle: Any, seed: int, num_actions: int):
        self.oracle = oracle
        self.num_actions = num_actions
        self.last = oracle.reset(seed)
        if self.last.observation is None:
            raise EvalError("the original reports no observation, so a policy cannot play it")

    def observation(self) -> Any:
        return self.last.observation

    def mask(self) -> np.ndarray:
        m = self.last.legal_action_mask
        return np.ones(self.num_actions, np.bool_) if m is None else np.asarray(m, np.bool_)

    def player(self) -> int:
        return int(self.last.current_player)

    def done(self) -> bool:
        return bool(self.last.terminated) or bool(self.last.truncated)

    def step(self, action: Any, key: np.ndarray) -> np.ndarray:
        self.last = self.oracle.step(action)
        return np.asarray(self.last.rewards, np.float32)


def _stack(observations: Sequence[Any]) -> Any:
    import jax

    return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *observations)


def run_stepped(
    spec: ir.SpecIR,
    actor: Actor,
    steppers: Sequence[_Stepper],
    seed: int,
    max_steps: int = MAX_STEPS,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Episodes stepped one state at a time in lockstep; the policy acts for all of them in one jitted call."""
    import jax
    import jax.numpy as jnp

    n = len(steppers)
    discrete = spec.box is None

    @jax.jit
    def decide(t: Any, obs: Any, mask: Any, player: Any, bases: tuple[Any, Any]) -> tuple[Any, Any]:
        step_base, act_base = bases
        ids = jnp.arange(n, dtype=jnp.int32)
        return actor(_at(act_base, t), flatten(obs), mask, player, ids), _at(step_base, t)

    _, step_base, act_base = episode_keys(seed, n)
    returns = np.zeros((n, spec.players), np.float32)
    lengths = np.zeros(n, np.int32)
    live = np.array([not s.done() for s in steppers])
    last_obs = [s.observation() for s in steppers]
    t = 0
    while t < max_steps and live.any():
        for i in map(int, np.flatnonzero(live)):
            last_obs[i] = steppers[i].observation()
        masks = np.stack([s.mask() for s in steppers]) if discrete else None
        player = np.array([s.player() for s in steppers], np.int32)
        actions, keys = decide(jnp.int32(t), _stack(last_obs), masks, player, (step_base, act_base))
        actions, keys = np.asarray(actions), np.asarray(keys)
        for i in map(int, np.flatnonzero(live)):
            a = int(actions[i]) if discrete else actions[i]
            returns[i] += steppers[i].step(a, keys[i])
            lengths[i] += 1
            live[i] = not steppers[i].done()
        t += 1
    return returns, lengths, int(live.sum())


# ---- the entry point ------------------------------------------------------------------------------------------
def run_episodes(
    spec: ir.SpecIR,
    actor: Actor,
    backend: str,
    episodes: int,
    seed: int = 0,
    greedy: bool = True,
    max_steps: int = MAX_STEPS,
    against: str | None = None,
) -> EpisodeResults:
    """`episodes` seeded episodes of `actor` on `backend` (reference / jax / rust), or on the original `against`
    (gymnasium:ID, pgx:ID, MODULE:FACTORY or `declared`; the backend is then unused)."""
    import envc

    _check(spec, episodes, max_steps)
    start = time.perf_counter()
    if against is not None:
        from envc.oracle import OracleError
        from envc.oracle.targets import resolve, target_of

        oracles: list[Any] = []
        try:
            name = target_of(spec, against)
            steppers: list[_Stepper] = []
            for i in range(episodes):
                oracles.append(resolve(against, spec))
                steppers.append(_OracleStepper(oracles[-1], seed * 1_000_003 + i, spec.num_actions))
            returns, lengths, unfinished = run_stepped(spec, actor, steppers, seed, max_steps)
        except OracleError as e:
            raise EvalError(str(e)) from None
        finally:
            for o in oracles:
                o.close()
        return EpisodeResults(
            name, seed, greedy, returns, lengths, unfinished, time.perf_counter() - start, seed_matched=False
        )
    if backend not in BACKENDS:
        raise EvalError(f"unknown backend '{backend}' (have: {', '.join(BACKENDS)})")
    try:
        env = envc.build(spec, backend=backend)
    except ValueError as e:
        raise EvalError(str(e)) from None
    if backend == "jax":
        returns, lengths, unfinished = run_jax(spec, actor, episodes, seed, max_steps, env=env)
    else:
        reset, _, _ = episode_keys(seed, episodes)
        keys = np.asarray(reset)
        steppers = [_EnvStepper(env, keys[i]) for i in range(episodes)]
        returns, lengths, unfinished = run_stepped(spec, actor, steppers, seed, max_steps)
    return EpisodeResults(backend, seed, greedy, returns, lengths, unfinished, time.perf_counter() - start)


def evaluate(
    run: Any,
    backend: str = "jax",
    episodes: int = 100,
    seed: int = 0,
    greedy: bool = True,
    max_steps: int = MAX_STEPS,
    against: str | None = None,
) -> EpisodeResults:
    """A trained run's policy (`envc.train.checkpoint.Run`) in self-play on one backend or the original."""
    actor = per_episode(run.policy(), greedy)
    return run_episodes(run.spec, actor, backend, episodes, seed, greedy, max_steps, against)


# ---- CLI --------------------------------------------------------------------------------------------------------
def load(run_dir: str, checkpoint: str | None = None) -> Any:
    """`envc.train.checkpoint.load_run`, its RunError as EvalError."""
    from envc.train.checkpoint import RunError, load_run

    if not Path(run_dir).is_dir():
        raise EvalError(f"no run directory '{run_dir}'")
    try:
        return load_run(run_dir, checkpoint=checkpoint)
    except RunError as e:
        raise EvalError(str(e)) from None


def print_results(res: EpisodeResults, title: str) -> None:
    """The return distribution per player as a rich table."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in ("player", "mean", "sd", "95% CI", *QUANTILES_LABELS):
        table.add_column(col, justify="right")
    for s in res.summaries():
        q = [f"{s.quantiles[k]:.4g}" for k in QUANTILES_LABELS]
        table.add_row(str(s.player), f"{s.mean:.4g}", f"{s.sd:.4g}", f"[{s.ci_low:.4g}, {s.ci_high:.4g}]", *q)
    console = Console(width=max(Console().width, 120))
    console.print(table)
    cut = f", {res.unfinished} cut at the step limit" if res.unfinished else ""
    console.print(
        f"{res.episodes} episodes ({'greedy' if res.greedy else 'sampled'}, seed {res.seed}), mean length "
        f"{res.lengths.mean():.1f}{cut}, {res.seconds:.2f} s"
    )


QUANTILES_LABELS = tuple(f"{q:.0%}" for q in QUANTILES)


def eval_cli(
    run_dir: str,
    backend: str,
    against: str | None,
    episodes: int,
    greedy: bool,
    seed: int,
    max_steps: int,
    opponent: str | None,
    checkpoint: str | None,
    as_json: bool,
) -> int:
    """`envc eval`: exit 0, or 2 with one `error:` line on bad input (raised as EvalError)."""
    if opponent is not None and against is not None:
        raise EvalError("--opponent plays on envc's backends; it cannot be combined with --against")
    run = load(run_dir, checkpoint)
    if opponent is not None:
        from envc.train.versus import versus_cli

        return versus_cli(run, run_dir, opponent, backend, episodes, greedy, seed, max_steps, as_json)
    res = evaluate(run, backend, episodes, seed, greedy, max_steps, against)
    if as_json:
        print(json.dumps({"run": str(run_dir), "spec": run.spec.name, **res.to_json(per_episode=True)}, indent=2))
    else:
        print_results(res, f"{run.spec.name}: {run_dir} on {res.backend}")
    return 0
