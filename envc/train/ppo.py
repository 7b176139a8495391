"""PPO on a compiled JAX env, PureJaxRL-style: rollout (scan, auto-reset), GAE and minibatch updates in one jitted
program; a chunk of updates is one jitted call, so the driver can report progress and checkpoint between chunks.

Multi-player specs train by self-play: one shared policy acts for `current_player` from `state.observation`, and
advantages are computed per player over that player's own decisions (`player_gae`).
"""

from __future__ import annotations

import importlib
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax.training.train_state import TrainState
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from envc.train.config import TrainConfig
from envc.train.networks import MASKED, ActorCritic, flat_obs, gaussian_log_prob, make_network


class Transition(NamedTuple):
    """One batched rollout step, as the update reads it."""

    obs: jax.Array  # [B, D] the mover's observation
    mask: jax.Array  # [B, A] legal actions ([B, 0] for box specs)
    action: jax.Array  # [B] ids, or [B, A] unclipped Gaussian samples
    log_prob: jax.Array  # [B]
    value: jax.Array  # [B] the critic's value of the mover's observation
    mover: jax.Array  # [B] who acted
    rewards: jax.Array  # [B, P] every player's reward from this step
    done: jax.Array  # [B] the step ended the episode (terminated or truncated)


class Carry(NamedTuple):
    """Everything a chunk of updates carries: optimizer, env batch, episode counters, key."""

    train_state: TrainState
    env_state: Any
    ep_return: jax.Array  # [B, P] returns of the running episodes
    ep_len: jax.Array  # [B]
    key: jax.Array
    update: jax.Array  # updates done so far


def policy_outputs(
    network: ActorCritic, params: Any, obs: jax.Array, mask: jax.Array
) -> tuple[jax.Array, jax.Array | None, jax.Array]:
    """(masked logits or mean, log-std or None, value) of flat observations."""
    out, log_std, value = network.apply(params, obs)
    if network.discrete:
        out = jnp.where(mask, out, MASKED)
    return out, log_std, value


def player_gae(
    traj: Transition, last_values: jax.Array, gamma: float, lam: float
) -> tuple[jax.Array, jax.Array]:
    """Advantages and value targets [T, B] with each decision credited to the player who took it.

    Scanning backwards, every player p keeps the rewards it received since its latest (later) decision, and
    the value and advantage of that decision. At a step where p moves, p's reward is what it collected from
    this step until its next decision (so a turn-based game's outcome, which arrives when the opponent's move
    ends it, is credited to p's last move), bootstrapped by the value at p's next decision; an episode end
    clears all of it. `last_values` [B, P] bootstraps the players at the rollout's end (each player's value of
    its own observation of the final state). With one player this is ordinary GAE.
    """
    num_players = last_values.shape[1]

    def back(carry: tuple[jax.Array, jax.Array, jax.Array], t: Transition) -> tuple[Any, tuple[jax.Array, ...]]:
        next_value, next_adv, pending = carry
        done = t.done[:, None]
        next_value = jnp.where(done, 0.0, next_value)  # what follows belongs to the next episode
        next_adv = jnp.where(done, 0.0, next_adv)
        pending = jnp.where(done, 0.0, pending) + t.rewards
        mine = jax.nn.one_hot(t.mover, num_players, dtype=bool)

        def pick(x: jax.Array) -> jax.Array:
            return jnp.sum(jnp.where(mine, x, 0.0), axis=1)

        delta = pick(pending) + gamma * pick(next_value) - t.value
        adv = delta + gamma * lam * pick(next_adv)
        carry = (jnp.where(mine, t.value[:, None], next_value), jnp.where(mine, adv[:, None], next_adv),
                 jnp.where(mine, 0.0, pending))
        return carry, (adv, adv + t.value)

    zeros = jnp.zeros_like(last_values)
    _, (adv, targets) = jax.lax.scan(back, (last_values, zeros, zeros), traj, reverse=True)
    return adv, targets


class Trainer:
    """The jitted PPO program for one env and config; `init` then `run_chunk` repeatedly."""

    def __init__(self, jenv: Any, config: TrainConfig, mesh: Mesh | None = None):
        self.env = jenv.env
        self.env_params = jenv.params
        self.spec = jenv.spec
        self.config = config
        self.num_players = int(jenv.num_players)
        self.network = make_network(jenv.spec, config.hidden, config.activation, config.log_std_init)
        self.discrete = self.network.discrete
        self.reset_step = importlib.import_module(jenv.package + ".rollout").batch_auto_reset_step
        self.mesh = mesh
        num_devices = 1 if mesh is None else mesh.size
        minibatch = config.batch_size // config.num_minibatches
        if config.num_envs % num_devices or minibatch % num_devices:
            raise ValueError(f"num_envs ({config.num_envs}) and the minibatch size ({minibatch}) must be multiples "
                             f"of the device count ({num_devices})")
        total = config.num_updates * config.update_epochs * config.num_minibatches
        lr: float | optax.Schedule = optax.linear_schedule(config.lr, 0.0, total) if config.anneal_lr else config.lr
        self.tx = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(lr, eps=1e-5))
        self._init = jax.jit(self._init_impl)
        self._chunk = jax.jit(self._chunk_impl, static_argnums=1)
        self._compiled: dict[int, Any] = {}
        self._vs: Any = None

    # --- sharding helpers: the env batch (axis 0, or 1 for [T, B] arrays) is split over the mesh ---
    def _shard(self, tree: Any, axis: int = 0) -> Any:
        mesh = self.mesh
        if mesh is None or mesh.size == 1:
            return tree
        spec = P(*([None] * axis), "batch")  # type: ignore[no-untyped-call]

        def one(x: jax.Array) -> jax.Array:
            if x.ndim <= axis:
                return x
            out: jax.Array = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))  # type: ignore[no-untyped-call]
            return out

        return jax.tree.map(one, tree)

    def _replicate(self, tree: Any) -> Any:
        mesh = self.mesh
        if mesh is None or mesh.size == 1:
            return tree
        whole = NamedSharding(mesh, P())  # type: ignore[no-untyped-call]
        return jax.tree.map(lambda x: jax.lax.with_sharding_constraint(x, whole), tree)  # type: ignore[no-untyped-call]

    # --- the program ---
    def _init_impl(self, key: jax.Array) -> Carry:
        key, net_key, env_key = jax.random.split(key, 3)
        env_keys = jax.random.split(env_key, self.config.num_envs)
        env_state = self._shard(jax.vmap(self.env.init, in_axes=(0, None))(env_keys, self.env_params))
        obs = flat_obs(env_state.observation)
        params = self._replicate(self.network.init(net_key, obs[:1]))
        train_state = TrainState.create(apply_fn=self.network.apply, params=params, tx=self.tx)
        return Carry(train_state=train_state, env_state=env_state,
                     ep_return=self._shard(jnp.zeros((self.config.num_envs, self.num_players), jnp.float32)),
                     ep_len=self._shard(jnp.zeros(self.config.num_envs, jnp.int32)), key=key, update=jnp.int32(0))

    def _sample(self, params: Any, state: Any, key: jax.Array) -> tuple[jax.Array, ...]:
        """(flat obs, mask, stored action, log-prob, value, env action) for the batch's movers."""
        obs = flat_obs(state.observation)
        mask = state.legal_action_mask if self.discrete else jnp.zeros((obs.shape[0], 0), bool)
        out, log_std, value = policy_outputs(self.network, params, obs, mask)
        if self.discrete:
            action = jax.random.categorical(key, out, axis=-1).astype(jnp.int32)
            log_prob = jnp.take_along_axis(jax.nn.log_softmax(out), action[:, None], axis=1)[:, 0]
            return obs, mask, action, log_prob, value, action
        assert log_std is not None and self.spec.box is not None
        raw = out + jnp.exp(log_std) * jax.random.normal(key, out.shape)
        box = self.spec.box
        env_action = jnp.clip(raw, box.low, box.high).reshape((raw.shape[0], *box.shape))
        return obs, mask, raw, gaussian_log_prob(raw, out, log_std), value, env_action

    def _env_step(self, carry: Carry, _: None) -> tuple[Carry, tuple[Transition, tuple[jax.Array, ...]]]:
        key, act_key, step_key = jax.random.split(carry.key, 3)
        state = carry.env_state
        obs, mask, action, log_prob, value, env_action = self._sample(carry.train_state.params, state, act_key)
        keys = jax.random.split(step_key, self.config.num_envs)
        nxt = self._shard(self.reset_step(self.env, state, env_action, keys, self.env_params))
        done = jnp.logical_or(nxt.terminated, nxt.truncated)
        ep_return = carry.ep_return + nxt.rewards
        ep_len = carry.ep_len + 1
        finished = (done, jnp.where(done[:, None], ep_return, 0.0), jnp.where(done, ep_len, 0))
        tr = Transition(obs, mask, action, log_prob, value, state.current_player.astype(jnp.int32),
                        nxt.rewards.astype(jnp.float32), done)
        carry = carry._replace(env_state=nxt, key=key, ep_return=jnp.where(done[:, None], 0.0, ep_return),
                              ep_len=jnp.where(done, 0, ep_len))
        return carry, (tr, finished)

    def _last_values(self, params: Any, state: Any) -> jax.Array:
        """[B, P]: each player's value of its own observation of `state` (the mover's is state.observation)."""
        if self.num_players == 1:
            values: jax.Array = self.network.apply(params, flat_obs(state.observation))[2]
            return values[:, None]
        players = jnp.arange(self.num_players)
        obs = jax.vmap(lambda s: jax.vmap(lambda p: self.env.observe(s, p, self.env_params))(players))(state)
        flat = flat_obs(jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), obs))
        values = self.network.apply(params, flat)[2]
        return values.reshape(-1, self.num_players)

    def _loss(self, params: Any, mb: tuple[Transition, jax.Array, jax.Array]) -> tuple[jax.Array, Any]:
        t, adv, targets = mb
        c = self.config
        out, log_std, value = policy_outputs(self.network, params, t.obs, t.mask)
        if self.discrete:
            logp_all = jax.nn.log_softmax(out)
            log_prob = jnp.take_along_axis(logp_all, t.action[:, None], axis=1)[:, 0]
            entropy = -jnp.sum(jnp.where(t.mask, jnp.exp(logp_all) * logp_all, 0.0), axis=1).mean()
        else:
            assert log_std is not None
            log_prob = gaussian_log_prob(t.action, out, log_std)
            entropy = jnp.sum(log_std + 0.5 * jnp.log(2 * jnp.pi * jnp.e))
        v_clipped = t.value + jnp.clip(value - t.value, -c.clip_eps, c.clip_eps)
        value_loss = 0.5 * jnp.maximum(jnp.square(value - targets), jnp.square(v_clipped - targets)).mean()
        ratio = jnp.exp(log_prob - t.log_prob)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        actor_loss = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - c.clip_eps, 1 + c.clip_eps) * adv).mean()
        total = actor_loss + c.vf_coef * value_loss - c.ent_coef * entropy
        approx_kl = ((ratio - 1) - jnp.log(ratio)).mean()
        clip_frac = (jnp.abs(ratio - 1) > c.clip_eps).mean()
        return total, (actor_loss, value_loss, entropy, approx_kl, clip_frac)

    def _update(self, carry: Carry, _: None) -> tuple[Carry, dict[str, jax.Array]]:
        c = self.config
        carry, (traj, finished) = jax.lax.scan(self._env_step, carry, None, length=c.num_steps)
        traj = self._shard(traj, axis=1)
        last = self._last_values(carry.train_state.params, carry.env_state)
        adv, targets = player_gae(traj, last, c.gamma, c.gae_lambda)
        batch = jax.tree.map(lambda x: x.reshape((c.batch_size, *x.shape[2:])), (traj, adv, targets))
        grad_fn = jax.value_and_grad(self._loss, has_aux=True)

        def epoch(state_key: tuple[TrainState, jax.Array], _: None) -> tuple[Any, Any]:
            train_state, key = state_key
            key, perm_key = jax.random.split(key)
            perm = jax.random.permutation(perm_key, c.batch_size)
            size = c.batch_size // c.num_minibatches
            mbs = jax.tree.map(lambda x: jnp.take(x, perm, axis=0).reshape((c.num_minibatches, size, *x.shape[1:])),
                               batch)

            def minibatch(ts: TrainState, mb: Any) -> tuple[TrainState, Any]:
                (loss, aux), grads = grad_fn(ts.params, self._shard(mb))
                return ts.apply_gradients(grads=grads), (loss, *aux)

            train_state, losses = jax.lax.scan(minibatch, train_state, mbs)
            return (train_state, key), losses

        key, upd_key = jax.random.split(carry.key)
        (train_state, _), losses = jax.lax.scan(epoch, (carry.train_state, upd_key), None, length=c.update_epochs)
        done, returns, lengths = finished
        episodes = done.sum()
        names = ("loss", "actor_loss", "value_loss", "entropy", "approx_kl", "clip_frac")
        metrics = {name: jnp.mean(v) for name, v in zip(names, losses)}
        metrics.update(episodes=episodes, return_sum=returns.sum(axis=(0, 1)), length_sum=lengths.sum())
        carry = carry._replace(train_state=train_state, key=key, update=carry.update + 1)
        return carry, metrics

    def _chunk_impl(self, carry: Carry, num_updates: int) -> tuple[Carry, dict[str, jax.Array]]:
        return jax.lax.scan(self._update, carry, None, length=num_updates)

    def _vs_random_impl(self, params: Any, key: jax.Array, games: int, max_steps: int) -> dict[str, jax.Array]:
        """The policy (greedy) in seat `g % players` of game g against uniformly random legal moves."""
        key, init_key = jax.random.split(key)
        state = self._shard(jax.vmap(self.env.init, in_axes=(0, None))(jax.random.split(init_key, games),
                                                                        self.env_params))
        seat = jnp.arange(games) % self.num_players

        def running(c: tuple[Any, jax.Array, jax.Array, jax.Array]) -> jax.Array:
            s, _, _, i = c
            return jnp.logical_and(i < max_steps, ~jnp.all(jnp.logical_or(s.terminated, s.truncated)))

        def body(c: tuple[Any, jax.Array, jax.Array, jax.Array]) -> tuple[Any, jax.Array, jax.Array, jax.Array]:
            s, ret, k, i = c
            k, rand_key, step_key = jax.random.split(k, 3)
            out, _, _ = policy_outputs(self.network, params, flat_obs(s.observation), s.legal_action_mask)
            mine = jnp.argmax(out, axis=-1).astype(jnp.int32)
            rand = jax.random.categorical(rand_key, jnp.where(s.legal_action_mask, 0.0, MASKED)).astype(jnp.int32)
            action = jnp.where(s.current_player == seat, mine, rand)
            s = jax.vmap(self.env.step, in_axes=(0, 0, 0, None))(s, action, jax.random.split(step_key, games),
                                                                  self.env_params)
            return s, ret + s.rewards[jnp.arange(games), seat], k, i + 1

        state, ret, _, _ = jax.lax.while_loop(running, body, (state, jnp.zeros(games), key, jnp.int32(0)))
        finished = jnp.logical_or(state.terminated, state.truncated)
        return {"win_rate": jnp.mean(finished & (ret > 0)), "loss_rate": jnp.mean(finished & (ret < 0)),
                "unfinished": jnp.mean(~finished)}

    def vs_random(self, params: Any, seed: int, games: int, max_steps: int) -> dict[str, float]:
        """Win/loss rates of the greedy policy against uniform random over `games` games (multi-player specs)."""
        if not self.discrete or self.num_players < 2:
            raise ValueError("vs_random needs a multi-player spec with discrete actions")
        if self._vs is None:
            self._vs = jax.jit(self._vs_random_impl, static_argnums=(2, 3))
        out = self._vs(params, jax.random.PRNGKey(seed), games, max_steps)
        return {k: float(v) for k, v in jax.device_get(out).items()}

    def compile(self, carry: Carry, num_updates: int) -> float:
        """Compile the chunk of `num_updates` updates ahead of time; returns the seconds it took."""
        start = time.perf_counter()
        if num_updates not in self._compiled:
            self._compiled[num_updates] = self._chunk.lower(carry, num_updates).compile()
        return time.perf_counter() - start

    def init(self, seed: int) -> Carry:
        """The starting carry: fresh network, optimizer and env batch."""
        return self._init(jax.random.PRNGKey(seed))  # type: ignore[no-any-return]

    def run_chunk(self, carry: Carry, num_updates: int) -> tuple[Carry, dict[str, Any]]:
        """`num_updates` updates in one jitted call; per-update metrics as numpy arrays."""
        self.compile(carry, num_updates)
        carry, metrics = self._compiled[num_updates](carry)
        return carry, jax.device_get(metrics)

__all__ = ["Carry", "Trainer", "Transition", "player_gae", "policy_outputs"]
