"""The actor-critic network (flax.linen), the observation flattening and the pure-JAX `Policy` of a trained run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax.linen.initializers import constant, orthogonal

from envc.ir import SpecIR


def flat_obs(observation: Any) -> jax.Array:
    """A batched observation (array, tuple or dict of arrays with a leading batch axis) as float32 [B, D]; dict
    parts are concatenated in sorted-key order (JAX's pytree order), each flattened row-major."""
    leaves = jax.tree.leaves(observation)
    if not leaves:
        raise ValueError("the observation is empty")
    batch = np.shape(leaves[0])[0]
    return jnp.concatenate([jnp.reshape(jnp.asarray(x).astype(jnp.float32), (batch, -1)) for x in leaves], axis=1)


class ActorCritic(nn.Module):  # type: ignore[misc]
    """Separate actor and critic MLPs (PureJaxRL's): logits (discrete) or a Gaussian mean, and a value."""

    num_outputs: int
    discrete: bool
    hidden: Sequence[int] = (64, 64)
    activation: str = "tanh"
    log_std_init: float = 0.0

    @nn.compact  # type: ignore[untyped-decorator]
    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array | None, jax.Array]:
        """(logits or mean [B, A], log-std [A] or None, value [B]) of flat observations [B, D]."""
        act = nn.tanh if self.activation == "tanh" else nn.relu
        a = x
        for i, width in enumerate(self.hidden):
            a = act(nn.Dense(width, kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0), name=f"actor_{i}")(a))
        out = nn.Dense(self.num_outputs, kernel_init=orthogonal(0.01), bias_init=constant(0.0), name="actor_out")(a)
        log_std = None
        if not self.discrete:
            log_std = self.param("log_std", constant(self.log_std_init), (self.num_outputs,))
        c = x
        for i, width in enumerate(self.hidden):
            c = act(nn.Dense(width, kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0), name=f"critic_{i}")(c))
        value = nn.Dense(1, kernel_init=orthogonal(1.0), bias_init=constant(0.0), name="critic_out")(c)
        return out, log_std, value[:, 0]


def make_network(spec: SpecIR, hidden: Sequence[int], activation: str, log_std_init: float = 0.0) -> ActorCritic:
    """The network for `spec`'s action space (ValueError if it has none)."""
    if spec.box is not None:
        return ActorCritic(int(np.prod(spec.box.shape)), False, tuple(hidden), activation, log_std_init)
    if spec.num_actions < 1:
        raise ValueError(f"'{spec.name}' declares no actions: there is nothing to train")
    return ActorCritic(spec.num_actions, True, tuple(hidden), activation, log_std_init)


MASKED = -1e9  # logit of an illegal action: exp() is exactly 0 in float32, and 0 * MASKED stays finite


def masked_logits(logits: jax.Array, mask: jax.Array | None) -> jax.Array:
    """Logits with illegal actions at MASKED (never sampled while one action is legal)."""
    if mask is None:
        return logits
    return jnp.where(mask, logits, MASKED)


def gaussian_log_prob(x: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    """Log density of a diagonal Gaussian, summed over the action dimensions."""
    z = (x - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z * z - log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1)


@dataclass(frozen=True)
class Policy:
    """A trained policy: network and parameters (a pytree: params are its leaves); `act` is pure, so
    `jax.jit(policy.act)` and vmap work, and a Policy can be passed into jitted functions."""

    network: ActorCritic
    params: Any
    discrete: bool
    box_shape: tuple[int, ...] = ()
    low: float = 0.0
    high: float = 0.0

    def act(self, key: jax.Array, obs: jax.Array, mask: jax.Array | None, greedy: bool) -> jax.Array:
        """Actions for a batch: int32 [B] legal ids (discrete) or float32 [B, *box] clipped to the box."""
        out, log_std, _ = self.network.apply(self.params, jnp.asarray(obs, jnp.float32))
        if self.discrete:
            logits = masked_logits(out, None if mask is None else jnp.asarray(mask, bool))
            if greedy:
                return jnp.argmax(logits, axis=-1).astype(jnp.int32)
            return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)
        assert log_std is not None
        action = out if greedy else out + jnp.exp(log_std) * jax.random.normal(key, out.shape)
        action = jnp.clip(action, self.low, self.high)
        return action.reshape((action.shape[0], *self.box_shape)).astype(jnp.float32)

    def value(self, obs: jax.Array) -> jax.Array:
        """The critic's value [B] of flat observations [B, D]."""
        value: jax.Array = self.network.apply(self.params, jnp.asarray(obs, jnp.float32))[2]
        return value


jax.tree_util.register_dataclass(Policy, data_fields=["params"],
                                 meta_fields=["network", "discrete", "box_shape", "low", "high"])


def make_policy(spec: SpecIR, network: ActorCritic, params: Any) -> Policy:
    """The `Policy` of `spec` with these parameters."""
    if spec.box is None:
        return Policy(network=network, params=params, discrete=True)
    return Policy(network=network, params=params, discrete=False, box_shape=tuple(spec.box.shape),
                  low=float(spec.box.low), high=float(spec.box.high))
