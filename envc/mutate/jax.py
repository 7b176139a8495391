"""Mutants of a spec's generated JAX package: its `env.py`, one `ast` change at a time.

Each mutant is the cached package's `env.py` with one node changed, compiled from the tree and executed as a
fresh module (its imports of the package's `_runtime` resolve as usual), then wrapped in a `JaxEnv`: one new
trace + jit per mutant, a few seconds. Before running tests, the mutant's lowered programs (init, step, observe,
inject, invariants as StableHLO text) are compared with the original's: equal text is an equivalent mutant.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from envc import ir, rng
from envc.diagnostics import Span
from envc.ir import NP_DTYPE
from envc.mutate import operators, proofs, smt, values
from envc.mutate.proofs import literal
from envc.mutate.spans import marked_lines, strip_marks

# functions that run in Python, outside jit: a change there is invisible in the lowered programs
PYTHON_LEVEL = {"Env.state_to_dict", "Env.arrays_from_dict", "Env.state_from_dict", "Env.default_params",
                "EnvParams.<body>"}  # fmt: skip


class JaxProgram:
    """The generated `env.py` of `spec`, its mutation sites, and an env per mutant."""

    backend = "jax"

    def __init__(self, spec: ir.SpecIR):
        from envc.lower_jax import render
        from envc.lower_jax.build import cache_dir, compile_to_cache
        from envc.lower_jax.emit import Emitter
        from envc.lower_jax.names import PyNames

        self.spec = spec
        self.package = compile_to_cache(spec)
        self.path = cache_dir() / "jax" / self.package / self.package / "env.py"
        self.source = self.path.read_text()
        text = Path(spec.path).read_text() if Path(spec.path).exists() else spec.name
        with marked_lines(Emitter, "#") as spans:
            marked = render(spec, text, self.package)[f"{self.package}/env.py"]
        plain, self.line_spans = strip_marks(marked, spans)
        fresh = render(spec, text, self.package)[f"{self.package}/env.py"]
        self.notes: list[str] = []  # for the report
        if plain != fresh:  # the hook changed the code: keep no map rather than a wrong one
            self.line_spans = {}
            self.notes.append("no spec lines: the marked rendering differs from the plain one")
        if fresh != self.source:  # e.g. the spec file's text changed but not its IR: the cache keeps its sha
            differ = [n for n, (x, y) in enumerate(zip(fresh.split("\n"), self.source.split("\n")), 1) if x != y]
            self.notes.append(f"the cached {self.path.name} differs from a fresh rendering at lines {differ[:5]}")
            self.source = fresh  # what is mutated and reported: the same code as the map
        self.tree = ast.parse(self.source, str(self.path))
        py = PyNames(spec)
        self.shapes = {py.field(f.name): tuple(f.ty.shape) for f in spec.fields}
        self.ranges = _arg_ranges(spec, self.tree)
        self.sites = operators.sites(self.tree, self.shapes)
        self._lines = self.source.split("\n")
        self._reference: dict[str, Any] | None = None
        self._reference_text: dict[str, str] = {}
        self._compiled_text: dict[str, str] = {}
        self._example: Any = None  # an input of `inject`, from the original
        self._state: dict[str, Any] = {}  # the original's first state, as `state_to_dict` gives it
        self._params: list[Any] = []  # the original's runtime param values

    @property
    def file(self) -> str:
        """The generated file, as `package/env.py`."""
        return f"{self.package}/env.py"

    def span(self, site: operators.Site) -> Span | None:
        """The spec span the site's generated line was lowered from (None: template code)."""
        return self.line_spans.get(site.line)

    def code(self, site: operators.Site) -> str:
        """The generated line of the site."""
        return self._lines[site.line - 1].strip() if 0 < site.line <= len(self._lines) else ""

    def same_tree(self, site: operators.Site) -> str | None:
        """Why the mutant is the original code, from the code alone (None: not known)."""
        if site.equivalent:
            return site.equivalent
        if ast.dump(operators.apply(self.tree, site)) == ast.dump(self.tree):
            return "identical code after the change"
        tree, shapes = self.tree, self.shapes
        found: tuple[Callable[[], str | None], ...] = (
            lambda: proofs.boundary_kept(tree, site),
            lambda: proofs.exclusive_cases(tree, site),
            lambda: proofs.equality_excluded(tree, site),
            lambda: proofs.guarded_index(tree, site, shapes),
            lambda: proofs.empty_pop(tree, site, shapes),
            lambda: proofs.remove_in_range(tree, site, shapes, self.ranges),
            lambda: proofs.decided_alike(tree, site, self.values),
            lambda: proofs.same_arms(tree, site, self.values),
        )
        return self._reset_writes_init(site) or next((why for f in found if (why := f())), None)

    @functools.cached_property
    def values(self) -> values.Module:
        """The interval analysis's view of the module: field ranges (a zone's count 0..capacity, other integers
        their dtype's), tables, constants, and the arguments' stated ranges."""
        from envc.lower_jax.names import PyNames

        py = PyNames(self.spec)
        fields: dict[str, tuple[values.Interval | None, str]] = {}
        for f in self.spec.fields:
            dt = np.dtype(NP_DTYPE[f.ty.dtype]).name
            if f.zone is not None and f.name.endswith(".count"):
                fields[py.field(f.name)] = ((0, self.spec.field(f.zone).ty.shape[-1]), dt)
            elif dt != "uint32" and dt in values.DTYPES:
                fields[py.field(f.name)] = (values.DTYPES[dt], dt)
        return values.Module(self.tree, fields, self.ranges)

    def _reset_writes_init(self, site: operators.Site) -> str | None:
        """A dropped reset write of a field's declared init (`velocity_1 = jnp.float32(0.0)` kept as
        `state.velocity`): `reset` receives the state `init` builds from the declared inits, so the value is there."""
        if site.op != "stmt_drop" or site.function != "reset" or not site.replacement.startswith("state."):
            return None
        from envc.lower_jax.names import PyNames

        node = list(ast.walk(self.tree))[site.index]
        value = literal(node.value) if isinstance(node, ast.Assign) else None
        reset = next((f for f in self.tree.body if isinstance(f, ast.FunctionDef) and f.name == "reset"), None)
        writes = [t for n in ast.walk(reset) if isinstance(n, ast.Assign) for t in n.targets] if reset else []
        if reset is None or any(isinstance(t, ast.Name) and t.id == "state" for t in writes):
            return None  # `state` is no longer the input there
        py = PyNames(self.spec)
        name = site.replacement.removeprefix("state.")
        f = next((f for f in self.spec.fields if py.field(f.name) == name and not f.ty.shape), None)
        if value is None or f is None or len(f.init) != 1:
            return None
        dtype = NP_DTYPE[f.ty.dtype]
        if np.asarray(value).astype(dtype).tobytes() != np.asarray(f.init[0]).astype(dtype).tobytes():
            return None
        return f"proven: the reset writes {value!r}, the declared init, to `{f.name}`, which its input state holds"

    def proven_equal(self, site: operators.Site, env: Any) -> str | None:
        """Why the mutant's function computes the original's outputs, proven by z3 on both traces (None: not
        proven, or the function is not one traced alone). First for every input the program can give it (its
        integer arguments within the range every call passes); then, failing that, for every state within the
        spec's declared bounds (`low`/`high`, a zone's count within its capacity, an enum within its members),
        a weaker claim the reason names."""
        try:
            import z3  # noqa: F401
        except ImportError:
            return None
        try:
            traced = self._traces(site, env)
        except Exception:  # a mutant whose function does not trace alone
            return None
        if traced is None:
            return None
        a, b, facts, declared = traced
        why = smt.equal(a, b, facts)
        if why is not None:
            return f"proven equal by z3: `{site.function}` ({why})"
        if declared is not None and smt.solve(a, b, lambda xs: facts(xs) + declared(xs)) is not None:
            return f"{smt.BOUNDED}: z3 proves `{site.function}` gives the original's outputs on every state within them"
        return None

    @functools.cached_property
    def _inputs(self) -> tuple[Any, Any, Any]:
        """The original's env, a key and the state's shapes: what both traces of a function are given."""
        import jax

        base = self.env(None)
        key = base._key(rng.key_from_seed(0))
        return base, key, jax.eval_shape(base.env.init, key, base.params)

    def _traces(self, site: operators.Site, env: Any) -> tuple[Any, Any, smt.Assume, smt.Assume | None] | None:
        """The jaxprs of the site's function in the original and in the mutant, with the facts on their inputs:
        the arguments' stated ranges, and the fields' declared bounds (None: the function reads no such field)."""
        import inspect

        import jax

        from envc.lower_jax.names import PyNames

        base, key, state = self._inputs
        py = PyNames(self.spec)
        name = site.function
        if name == "reset" and self._reset_only_in_init():
            name = "Env.init"  # reset's input is the state init builds: the whole of init is what differs
        if name == "Env.init":
            a = jax.make_jaxpr(base.env.init)(key, base.params)
            b = jax.make_jaxpr(env.env.init)(key, base.params)
            return a, b, lambda xs: [], None
        kinds: dict[str, list[ir.Ty]] = {py.glob("call", c.name): [t for _, t in c.params] for c in self.spec.callables}
        for act in self.spec.actions:
            kinds[py.glob("effect", act.name)] = kinds[py.glob("legal", act.name)] = [p.ty for p in act.params]
        if name not in kinds or not hasattr(base.module, name):
            return None
        fa, fb = getattr(base.module, name), getattr(env.module, name)
        names = list(inspect.signature(fa).parameters)
        lead = {"state": state, "key": key, "params": base.params}
        head = [lead[n] for n in names[: len(names) - len(kinds[name])] if n in lead]
        if len(head) != len(names) - len(kinds[name]):
            return None
        args = [jax.ShapeDtypeStruct(tuple(t.shape), NP_DTYPE[t.dtype]) for t in kinds[name]]  # type: ignore[no-untyped-call]
        a = jax.make_jaxpr(fa)(*head, *args)
        b = jax.make_jaxpr(fb)(*head, *args)
        offset = sum(len(jax.tree.leaves(h)) for h in head)
        stated = [self.ranges.get(name, {}).get(n) for n in names[len(head):]]
        bounds = self._bounds(state) if "state" in names else []

        def facts(xs: list[smt.Arr]) -> list[Any]:
            return [f for r, x in zip(stated, xs[offset:]) if r is not None for f in smt.within(x, r[0], r[1] - 1)]

        def declared(xs: list[smt.Arr]) -> list[Any]:
            return [f for at, lo, hi in bounds for f in smt.within(xs[at], lo, hi)]

        return a, b, facts, declared if bounds else None

    def _reset_only_in_init(self) -> bool:
        """`reset` is called once, from `Env.init`."""
        calls = [(f, n) for f, node in operators.functions(self.tree) for n in ast.walk(node)
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "reset"]  # fmt: skip
        return [f for f, _ in calls] == ["Env.init"]

    def _bounds(self, state: Any) -> list[tuple[int, int, int]]:
        """(leaf index in the state, low, high) of each integer field whose `SpecIR.field_range` is narrower than
        its dtype: declared bounds, a zone's count (0..capacity), an enum (its members)."""
        import jax

        from envc.lower_jax.names import PyNames

        py = PyNames(self.spec)
        by_name = {py.field(f.name): f for f in self.spec.fields}
        out = []
        for at, (path, _) in enumerate(jax.tree_util.tree_flatten_with_path(state)[0]):
            f = by_name.get(getattr(path[-1], "name", "")) if path else None
            if f is None or not f.ty.dtype.is_int:
                continue
            lo, hi = self.spec.field_range(f)
            if (lo, hi) != tuple(float(x) for x in f.ty.dtype.int_range):
                out.append((at, int(np.ceil(lo)), int(np.floor(hi))))
        return out

    def module(self, site: operators.Site | None) -> Any:
        """The module of the original (None) or of one mutant, freshly executed."""
        tree = self.tree if site is None else operators.apply(self.tree, site)
        name = f"{self.package}.env_mutant"
        mod = types.ModuleType(name)
        mod.__file__ = str(self.path)
        sys.modules[name] = mod  # dataclasses look their module up while the classes are made
        try:
            exec(compile(tree, str(self.path), "exec"), mod.__dict__)
        finally:
            sys.modules.pop(name, None)
        return mod

    def env(self, site: operators.Site | None) -> Any:
        """A `JaxEnv` over the original or one mutant."""
        from envc.lower_jax.build import JaxEnv

        return JaxEnv(self.spec, module=self.module(site))

    def activate(self, site: operators.Site | None) -> Any:
        """The env to test: the original (None) or one mutant (its module executed afresh)."""
        env = self.env(site)
        if site is None and self._reference is None:
            self._set_reference(env)
        return env

    def identical(self, site: operators.Site, env: Any) -> str | None:
        """Why the mutant is the original program, or None: its lowered StableHLO is the original's for every
        entry point, or XLA's optimised HLO is (the change folds away, e.g. an index clamped back into range).
        Raises if the mutant does not trace."""
        low = self._lower(env)
        if site.function in PYTHON_LEVEL or not self._same_python(env):
            return None  # code that runs outside jit (or values passed in as arguments) is not in the HLO
        differ = [k for k, v in low.items() if v.as_text() != self._reference_text[k]]
        if not differ:
            return "identical lowered program (StableHLO of init, step, observe, invariants, inject)"
        for k in differ:
            if _canonical(low[k].compile().as_text()) != self._compiled(k):
                return None
        return f"identical compiled program (XLA's optimised HLO of {', '.join(differ)})"

    def _lower(self, env: Any) -> dict[str, Any]:
        """The lowered entry points the tests call."""
        import jax
        import jax.numpy as jnp

        key = env._key(rng.key_from_seed(0))
        state = jax.eval_shape(env.env.init, key, env.params)
        if self.spec.box is not None:
            action: Any = jax.ShapeDtypeStruct(tuple(self.spec.box.shape), jnp.float32)  # type: ignore[no-untyped-call]
        else:
            action = jax.ShapeDtypeStruct((), jnp.int32)  # type: ignore[no-untyped-call]
        player = jax.ShapeDtypeStruct((), jnp.int32)  # type: ignore[no-untyped-call]
        return {
            "init": env._init.lower(key, env.params),
            "step": env._step.lower(state, action, key, env.params),
            "observe": env._observe.lower(state, player, env.params),
            "invariants": env._invariants.lower(state, env.params),
            "inject": env._inject.lower(*self._example, env.params),
        }

    def _same_python(self, env: Any) -> bool:
        """The mutant's Python-level values are the original's: runtime params (jit arguments, not constants),
        a fresh state through `state_to_dict`, and `arrays_from_dict` of it."""
        import jax

        try:
            mine = jax.tree.leaves(env.params)
            state = env.state_to_dict(env.init(rng.key_from_seed(0)))
            arrays = jax.tree.leaves(env.env.arrays_from_dict(self._state))
        except Exception:
            return False

        def same(xs: list[Any], ys: list[Any]) -> bool:
            return len(xs) == len(ys) and all(np.array_equal(x, y) for x, y in zip(xs, ys))

        return (
            same(mine, self._params)
            and same(arrays, jax.tree.leaves(self._example))
            and state.keys() == self._state.keys()
            and same([state[k] for k in self._state], [self._state[k] for k in self._state])
        )

    def _set_reference(self, env: Any) -> None:
        import jax

        self._state = env.state_to_dict(env.init(rng.key_from_seed(0)))
        self._params = jax.tree.leaves(env.params)
        self._example = env.env.arrays_from_dict(self._state)
        self._reference = self._lower(env)
        self._reference_text = {k: v.as_text() for k, v in self._reference.items()}

    def _compiled(self, name: str) -> str:
        if name not in self._compiled_text:
            assert self._reference is not None
            self._compiled_text[name] = _canonical(self._reference[name].compile().as_text())
        return self._compiled_text[name]

    @staticmethod
    def release() -> None:
        """Drop compiled programs of finished mutants."""
        import jax

        jax.clear_caches()  # type: ignore[no-untyped-call]


def _arg_ranges(spec: ir.SpecIR, tree: ast.Module) -> dict[str, dict[str, tuple[int, int]]]:
    """The integer range of each generated function's arguments where the spec states it: an action kind's
    parameters in its `effect_*` and `legal_*` functions, a callable's parameters as every call passes them."""
    from envc.intervals import param_ranges
    from envc.lower_jax.names import PyNames

    py = PyNames(spec)
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for a in spec.actions:
        own = {py.arg(a.name, p.name): (p.start, p.stop) for p in a.params}
        out[py.glob("effect", a.name)] = out[py.glob("legal", a.name)] = own
    defs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    passed = param_ranges(spec)
    for c in spec.callables:
        fn = defs.get(py.glob("call", c.name))
        known = passed.get(c.name, {})
        if fn is None:
            continue
        names = [a.arg for a in fn.args.args][-len(c.params):] if c.params else []
        out[fn.name] = {n: known[p] for n, (p, _) in zip(names, c.params) if p in known}
    return out


def _canonical(hlo: str) -> str:
    """Optimised HLO text without source metadata and the file/function/location tables."""
    tables = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
    blocks = [b for b in hlo.split("\n\n") if not b.lstrip("\n").startswith(tables)]
    return re.sub(r", metadata=\{[^{}]*\}", "", "\n\n".join(blocks))
