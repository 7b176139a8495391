"""Compile a spec to a JAX package in a cache folder and import it (`envc.build(spec, backend="jax")`)."""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from envc import __version__, ir
from envc.inputs import checked_action, checked_params, checked_state
from envc.ir import NP_DTYPE
from envc.lower_jax import TEMPLATES, render
from envc.lower_jax.names import PyNames


def cache_dir() -> Path:
    """Where compiled packages are kept (`ENVC_CACHE` or ~/.cache/envc)."""
    return Path(os.environ.get("ENVC_CACHE", Path.home() / ".cache" / "envc"))


def package_name(spec: ir.SpecIR, digest: str) -> str:
    """A unique importable package name for this spec and compiler version."""
    return f"envc_{spec.name}_{digest[:10]}"


@functools.cache
def compiler_digest() -> str:
    """A hash of the JAX lowering's code and templates, so a changed compiler never reuses a stale package."""
    h = hashlib.sha256(__version__.encode())
    here = Path(__file__).resolve().parent
    for p in sorted([*here.glob("*.py"), *TEMPLATES.rglob("*.j2")]):
        h.update(p.read_bytes())
    return h.hexdigest()


def compile_to_cache(spec: ir.SpecIR) -> str:
    """Generate (once) and return the package name; its folder is on sys.path afterwards."""
    text = Path(spec.path).read_text() if Path(spec.path).exists() else spec.name
    digest = hashlib.sha256((ir.build_digest(spec) + compiler_digest()).encode()).hexdigest()
    name = package_name(spec, digest)
    root = cache_dir() / "jax" / name
    if not (root / name / "env.py").exists():
        files = render(spec, text, name)
        root.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=".tmp-"))
        for rel, body in files.items():
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(body)
        try:
            tmp.rename(root)
        except OSError:  # another process won the race
            pass
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return name


class JaxEnv:
    """The envc runtime API over a generated JAX env: single-state init/step, jitted, numpy dict I/O."""

    backend = "jax"

    def __init__(self, spec: ir.SpecIR, params: dict[str, Any] | None = None, module: Any = None):
        import jax

        self.spec = spec
        self.module = module if module is not None else importlib.import_module(compile_to_cache(spec) + ".env")
        self.package = self.module.__name__.rsplit(".", 1)[0]
        self.env = self.module.Env()
        self.params = self.env.typed_params(self._params(params))  # f64 params as float64 arrays (envc/f64.py)
        self.num_players = spec.players
        self.num_actions = spec.num_actions
        self._init = jax.jit(self.env.init)
        self._step = jax.jit(self.env.step)
        self._observe = jax.jit(self.env.observe)
        self._inject = jax.jit(self.env.inject)
        self._invariants = jax.jit(self.env.invariants)
        self._calls: dict[str, Any] = {}  # spec functions and procedures, jitted when first called alone

    def _params(self, params: dict[str, Any] | None) -> Any:
        """The package's EnvParams: the defaults with `params` (spec names) over them."""
        values = checked_params(self.spec, params)
        if not values:
            return self.env.default_params
        py = PyNames(self.spec)  # a spec name may be spelled otherwise in Python (`link_mass_1` -> `link_mass_1_`)
        return self.env.default_params.replace(**{py.param(k): v for k, v in values.items()})

    def with_params(self, params: dict[str, Any]) -> JaxEnv:
        """The same compiled env with other runtime params (jit arguments: nothing is traced again)."""
        other = copy.copy(self)
        other.params = self.env.typed_params(self._params(params))
        return other

    @staticmethod
    def _key(key: Any) -> Any:
        """A raw uint32[2] key: traced keys (under `jax.jit`/`jax.vmap`) pass through, concrete ones are checked."""
        import jax
        import jax.numpy as jnp

        from envc import rng

        if key is None:
            return jnp.zeros(2, jnp.uint32)
        if isinstance(key, jax.core.Tracer):
            if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
                return jax.random.key_data(key)
            return key.astype(jnp.uint32)
        return jnp.asarray(np.array(rng.as_key(key), np.uint32))

    def init(self, key: Any) -> Any:
        """A fresh episode."""
        return self._init(self._key(key), self.params)

    def step(self, state: Any, action: Any, key: Any = None) -> Any:
        """One transition."""
        return self._step(state, checked_action(self.spec, action), self._key(key), self.params)

    def observe(self, state: Any, player: int) -> Any:
        """Observation of `player`."""
        return self._observe(state, player, self.params)

    def invariants(self, state: Any) -> list[str]:
        """Names of violated invariants."""
        return [k for k, v in self._invariants(state, self.params).items() if not bool(v)]

    def state_to_dict(self, state: Any) -> dict[str, np.ndarray]:
        """Numpy arrays under the spec's storage names."""
        return self.env.state_to_dict(state)  # type: ignore[no-any-return]

    def state_from_dict(self, d: dict[str, Any]) -> Any:
        """Inject a state."""
        return self._inject(*self.env.arrays_from_dict(checked_state(self.spec, d)), self.params)

    def calls(
        self, name: str, ds: list[dict[str, Any]], args: list[list[Any]], keys: list[Any]
    ) -> list[list[np.ndarray]]:
        """Spec function or procedure `name` of the generated module called alone on each state of `ds` with its
        arguments and key (one `vmap`, jitted): per case, as `ReferenceEnv.call` answers (a function's results,
        or every field after a procedure)."""
        import jax

        c = next(c for c in self.spec.callables if c.name == name)
        proc = c.returns is None
        with jax.enable_x64(bool(getattr(self.module, "X64", False))):  # f64 arguments stay f64 through jit
            if name not in self._calls:
                fn = getattr(self.module, PyNames(self.spec).glob("call", name))
                lead = (0, 0, None) if proc else (0, None)
                self._calls[name] = jax.jit(jax.vmap(fn, in_axes=(*lead, *[0] * len(c.params))))
            state = jax.tree.map(lambda *xs: jax.numpy.stack(xs), *[self.state_from_dict(d) for d in ds])
            typed: list[np.ndarray] = [
                np.stack([np.asarray(a[i], NP_DTYPE[t.dtype]).reshape(t.shape) for a in args])
                for i, (_, t) in enumerate(c.params)
            ]
            if proc:
                keys_ = np.stack([np.asarray(self._key(k)) for k in keys])
                out = self.state_to_dict(self._calls[name](state, keys_, self.params, *typed))
                per = [np.asarray(out[f.name]) for f in self.spec.fields]
            else:
                got = self._calls[name](state, self.params, *typed)
                per = [np.asarray(v) for v in (got if c.results else (got,))]
        return [[v[j] for v in per] for j in range(len(ds))]

    @property
    def rollout(self) -> Any:
        """The generated package's scan-fused `rollout(key, num_envs, num_steps, policy, params)`."""
        return importlib.import_module(self.package + ".rollout").rollout

    def gymnax(self, five_values: bool = False) -> Any:
        """The spec as a gymnax `Environment` (single-agent specs; needs gymnax); `five_values=True` wraps it in
        gymnax's `LegacyStepAPIWrapper` (the five-value `step` of PureJaxRL and rejax)."""
        if self.num_players != 1:
            raise ValueError(f"'{self.spec.name}' has {self.num_players} players; gymnax envs are single-agent")
        env = importlib.import_module(self.package + ".gymnax_env").GymnaxEnv()
        if five_values:
            from envc.gymnax import five_value_env

            return five_value_env(env)
        return env

    def pgx(self) -> Any:
        """The spec as a `pgx.Env` with this env's params (needs pgx)."""
        return importlib.import_module(self.package + ".pgx_env").PgxEnv(self.params)
