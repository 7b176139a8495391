"""Lower a checked spec to a JAX package (codegen_templates/jax/*.j2 filled from the IR)."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import jinja2
import numpy as np

from envc import __version__, ir
from envc.f64 import uses_f64
from envc.intervals import Interval, param_ranges
from envc.ir import DType
from envc.lower_jax.emit import JNP, UNROLL, UNROLL_BUDGET, Emitter, Scope
from envc.lower_jax.names import PyNames, doc

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "jax"
NUMPY = {
    DType.BOOL: "np.bool_",
    DType.I8: "np.int8",
    DType.I16: "np.int16",
    DType.I32: "np.int32",
    DType.U32: "np.uint32",
    DType.F32: "np.float32",
    DType.F64: "np.float64",
}


@dataclass(frozen=True)
class Function:
    """One generated function: signature and body lines."""

    name: str
    args: str
    body: list[str]
    doc: str


def _state_scope(py: PyNames, spec: ir.SpecIR, key: str) -> Scope:
    return Scope({f"state:{f.name}": f"state.{py.field(f.name)}" for f in spec.fields}, key)


def _changed(py: PyNames, spec: ir.SpecIR, sc: Scope) -> str:
    parts = [
        f"{py.field(f.name)}={sc.vars[f'state:{f.name}']}"
        for f in spec.fields
        if sc.vars[f"state:{f.name}"] != f"state.{py.field(f.name)}"
    ]
    return f"state.replace({', '.join(parts)})" if parts else "state"


def _writer(
    py: PyNames,
    spec: ir.SpecIR,
    name: str,
    args: str,
    stmts: tuple[ir.Stmt, ...],
    doc: str,
    locals_: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
    ranges: dict[str, tuple[int, int]] | None = None,
) -> Function:
    em = Emitter(spec, py=py)
    sc = _state_scope(py, spec, "key")
    sc.ranges.update(ranges or {})
    for k, v in (locals_ or {}).items():
        sc.vars[f"local:{k}"] = v
    for k, v in (extra or {}).items():
        sc.vars[k] = v
    em.block(stmts, sc)
    em.line(f"return {_changed(py, spec, sc)}")
    return Function(name, args, em.lines, doc)


def _expr_fn(
    py: PyNames,
    spec: ir.SpecIR,
    name: str,
    args: str,
    x: ir.Expr,
    doc: str,
    locals_: dict[str, str] | None = None,
    ranges: dict[str, tuple[int, int]] | None = None,
    extra: dict[str, str] | None = None,
) -> Function:
    em = Emitter(spec, py=py)
    sc = _state_scope(py, spec, "key")
    for k, v in (locals_ or {}).items():
        sc.vars[f"local:{k}"] = v
    sc.vars.update(extra or {})
    sc.ranges.update(ranges or {})
    em.line(f"return {em.expr(x, sc)}")
    return Function(name, args, em.lines, doc)


def _callable_fn(py: PyNames, spec: ir.SpecIR, c: ir.CallableInfo, ranges: dict[str, Interval]) -> Function:
    """A spec function (returns its value) or procedure (returns the new state), emitted once; `ranges`: what every
    call passes its integer parameters (`envc.intervals.param_ranges`)."""
    em = Emitter(spec, py=py)
    sc = _state_scope(py, spec, "key")
    sc.ranges.update(ranges)
    args = []
    for pname, _ in c.params:
        sc.vars[f"local:{pname}"] = em.fresh(pname)
        args.append(f", {sc.vars[f'local:{pname}']}: jax.Array")
    if c.returns is None:
        em.block(c.body, sc)
        em.line(f"return {_changed(py, spec, sc)}")
        head, what = "state: State, key: jax.Array, params: EnvParams", "Procedure"
    else:
        em.block(c.body[:-1], sc)
        last = c.body[-1]
        assert isinstance(last, ir.ReturnS) and last.value is not None
        em.line(f"return {em.expr(last.value, sc)}")
        head, what = "state: State, params: EnvParams", "Function"
    return Function(py.glob("call", c.name), head + "".join(args), em.lines, f"{what} `{c.name}` of the spec.")


def always_legal(a: ir.ActionKind) -> bool:
    """Is the kind's legality the literal `true` (no `legal:` condition)?"""
    return isinstance(a.legal, ir.Lit) and a.legal.value is True


def reads_action(node: object) -> bool:
    """Does this code read `action` (the action of the transition: docs/spec-language.md section 14)? Functions
    and procedures cannot, so calls are not followed."""
    if isinstance(node, tuple):
        return any(reads_action(x) for x in node)
    if isinstance(node, ir.Read) and node.space == "action":
        return True
    if not isinstance(node, (ir._Expr, ir._Stmt, ir.ZoneRef, ir.Target)):
        return False
    return any(reads_action(getattr(node, k)) for k in type(node).model_fields if k not in ("ty", "span"))


def _action_arg(node: object) -> str:
    """The `action` parameter of an output function (reward, ends, observation) that reads it, else nothing."""
    return ", action: jax.Array" if reads_action(node) else ""


def _observe_fn(py: PyNames, spec: ir.SpecIR) -> Function:
    em = Emitter(spec, py=py)
    sc = _state_scope(py, spec, "key")
    sc.vars["local:p"] = "p"  # no static range: observe runs for the current player, whatever the state holds
    sc.vars["action"] = "action"
    for o in spec.obs_fields:
        sc.vars[f"obs:{o.name}"] = em.bind(o.name, f"jnp.zeros({o.ty.shape}, {JNP[o.ty.dtype]})")
    em.block(spec.observation, sc)
    if len(spec.obs_fields) == 1:
        em.line(f"return {sc.vars[f'obs:{spec.obs_fields[0].name}']}")
    else:
        items = ", ".join(f'{o.name!r}: {sc.vars[f"obs:{o.name}"]}' for o in spec.obs_fields)
        em.line(f"return {{{items}}}")
    return Function(
        "observe",
        f"state: State, params: EnvParams, p: jax.Array{_action_arg(spec.observation)}",
        em.lines,
        "The observation of player `p`.",
    )


def _rules_fn(py: PyNames, spec: ir.SpecIR) -> Function:
    stmts: list[ir.Stmt] = []
    for r in spec.rules:
        if isinstance(r.when, ir.Lit) and r.when.value is True:
            stmts.extend(r.body)
        else:
            stmts.append(ir.IfS(cond=r.when, then=r.body, span=r.when.span))
    names = ", ".join(r.name for r in spec.rules) or "none"
    return _writer(
        py,
        spec,
        "apply_rules",
        "state: State, key: jax.Array, params: EnvParams",
        tuple(stmts),
        f"Automatic rules, in order ({names}).",
    )


def _const_value(c: ir.ConstInfo) -> str:
    vals = ", ".join(repr(v) for v in c.values)
    array = f"np.array([{vals}], {NUMPY[c.ty.dtype]}).reshape({c.ty.shape})"
    return f"_f64({array})" if c.ty.dtype is DType.F64 else f"jnp.asarray({array})"  # made with x64: not truncated


def render(spec: ir.SpecIR, spec_text: str, package: str) -> dict[str, str]:
    """The files of the generated package, path -> text."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters["pyrepr"] = repr
    env.filters["doc"] = doc
    py = PyNames(spec)
    passed = param_ranges(spec)
    functions: list[Function] = [_callable_fn(py, spec, c, passed.get(c.name, {})) for c in spec.callables]
    functions.append(
        _writer(
            py,
            spec,
            "reset",
            "state: State, key: jax.Array, params: EnvParams",
            spec.reset,
            "The reset body: fields start at their `init` values.",
        )
    )
    for a in spec.actions:
        argnames = {p.name: py.arg(a.name, p.name) for p in a.params}
        args = "".join(f", {arg}: jax.Array" for arg in argnames.values())
        ranges = {p.name: (p.start, p.stop) for p in a.params}
        functions.append(
            _writer(
                py,
                spec,
                py.glob("effect", a.name),
                f"state: State, key: jax.Array, params: EnvParams{args}",
                a.effect,
                f"Effect of action kind `{a.name}`.",
                argnames,
                ranges=ranges,
            )
        )
        if not always_legal(a):
            functions.append(
                _expr_fn(
                    py,
                    spec,
                    py.glob("legal", a.name),
                    f"state: State, params: EnvParams{args}",
                    a.legal,
                    f"Is `{a.name}` legal?",
                    argnames,
                    ranges,
                )
            )
    if spec.box is not None:
        functions.append(
            _writer(
                py,
                spec,
                "effect_box",
                "state: State, key: jax.Array, params: EnvParams, action: jax.Array",
                spec.box.effect,
                "Effect of the continuous action.",
                extra={"action": "action"},
            )
        )
    functions.append(_rules_fn(py, spec))
    functions.append(
        _expr_fn(
            py,
            spec,
            "reward",
            f"state: State, params: EnvParams, p: jax.Array{_action_arg(spec.reward)}",
            spec.reward,
            "Reward of player `p` for the last transition.",
            {"p": "p"},
            {"p": (0, spec.players)},
            extra={"action": "action"},
        )
    )
    functions.append(
        _expr_fn(
            py,
            spec,
            "is_terminated",
            f"state: State, params: EnvParams{_action_arg(spec.terminated)}",
            spec.terminated,
            "Has the episode ended?",
            extra={"action": "action"},
        )
    )
    functions.append(
        _expr_fn(
            py,
            spec,
            "is_truncated",
            f"state: State, params: EnvParams{_action_arg(spec.truncated)}",
            spec.truncated,
            "Has the episode been cut off?",
            extra={"action": "action"},
        )
    )
    functions.append(_observe_fn(py, spec))
    invariants = [
        _expr_fn(
            py, spec, py.glob("invariant", name), "state: State, params: EnvParams", x, f"Invariant {name!r}."
        )
        for name, x in spec.invariants
    ]
    actions = []
    sizer = Emitter(spec, py=py)
    for a in spec.actions:
        combos: list[list[int]] = [[] for _ in a.params]
        for local in range(a.size):
            rem = local
            vals = []
            for p in reversed(a.params):
                size = p.stop - p.start
                vals.append(p.start + rem % size)
                rem //= size
            for i, v in enumerate(reversed(vals)):
                combos[i].append(v)
        actions.append(
            {
                "kind": a,
                "combos": combos,
                "dtypes": [NUMPY[p.ty.dtype] for p in a.params],  # enums: i8, or i16 past 127 members
                "always_legal": always_legal(a),  # its ids are ones in the mask, with no `legal_*` function
                # small kinds test each action id with constant parameters (static indices, no gathers)
                "unroll": a.size <= 4 * UNROLL and a.size * sizer.size(a.legal) <= 2 * UNROLL_BUDGET,
            }
        )
    ctx = {
        "spec": spec,
        "version": __version__,
        "package": package,
        "sha": hashlib.sha256(spec_text.encode()).hexdigest()[:12],
        "fields": [(f, py.field(f.name), JNP[f.ty.dtype], NUMPY[f.ty.dtype]) for f in spec.fields],
        "params": [(py.param(p.name), JNP[p.ty.dtype], repr(p.default)) for p in spec.params if not p.static],
        "consts": [(py.const(c.name), _const_value(c)) for c in spec.consts],
        "py": py,
        "spec_file": Path(spec.path).name,
        "functions": functions,
        "invariants": invariants,
        "actions": actions,
        "obs": [(o, JNP[o.ty.dtype], NUMPY[o.ty.dtype]) for o in spec.obs_fields],
        # no kind has a legality condition (or there are no discrete actions): the mask is ones, computed nowhere
        "mask_is_ones": all(always_legal(a) for a in spec.actions),
        "init_values": {f.name: _init_value(f) for f in spec.fields},
        "obs_spaces": [(o.name, _box(o)) for o in spec.obs_fields],
        "math": math,
        # which output functions take the action of the transition (section 14), and what none reads as
        "reads_action": {
            "reward": reads_action(spec.reward),
            "is_terminated": reads_action(spec.terminated),
            "is_truncated": reads_action(spec.truncated),
            "observe": reads_action(spec.observation),
        },
        "no_action": f"np.zeros({spec.box.shape}, np.float32)" if spec.box is not None else "np.int32(-1)",
        # f64 specs run every package function with x64 enabled (envc/f64.py); their f64 params are float64 arrays
        "x64": uses_f64(spec),
        "f64_params": [py.param(p.name) for p in spec.params if not p.static and p.ty.dtype is DType.F64],
    }
    files = {
        f"{package}/__init__.py": env.get_template("__init__.py.j2").render(ctx),
        f"{package}/env.py": env.get_template("env.py.j2").render(ctx),
        f"{package}/_runtime.py": env.get_template("_runtime.py.j2").render(ctx),
        f"{package}/rollout.py": env.get_template("rollout.py.j2").render(ctx),
        "pyproject.toml": env.get_template("pyproject.toml.j2").render(ctx),
        "README.md": env.get_template("README.md.j2").render(ctx),
        f"{package}/pgx_env.py": env.get_template("pgx_env.py.j2").render(ctx),
    }
    if spec.players == 1:
        files[f"{package}/gymnax_env.py"] = env.get_template("gymnax_env.py.j2").render(ctx)
    if spec.render is not None:  # what envc.render draws from (pgx_env.to_svg)
        files[f"{package}/render_spec.json"] = spec.portable_json()
    return files


def _bound(v: float, dt: DType) -> str:
    """A float bound; an unbounded side is the dtype's largest finite value, as in gymnax's own CartPole."""
    if math.isinf(v):
        big = float(np.finfo(np.float64 if dt is DType.F64 else np.float32).max)
        return repr(-big if v < 0 else big)
    return repr(v)


def _box(o: ir.ObsFieldInfo) -> str:
    """A gymnax `spaces.Box` for one observation part: declared bounds (per element where declared so), else the
    dtype's range."""
    dt = o.ty.dtype

    def code(b: ir.Bound) -> str:
        if isinstance(b, tuple):
            items = ", ".join(str(int(v)) if not dt.is_float else _bound(v, dt) for v in b)
            return f"jnp.array([{items}], {JNP[dt]}).reshape({o.ty.shape})"
        return str(int(b)) if not dt.is_float else _bound(b, dt)

    lo, hi = o.bounds()
    return f"spaces.Box({code(lo)}, {code(hi)}, {o.ty.shape}, {JNP[dt]})"


def _init_value(f: ir.FieldInfo) -> str:
    if len(set(f.init)) == 1:
        return f"np.full({f.ty.shape}, {f.init[0]!r}, {NUMPY[f.ty.dtype]})"
    vals = ", ".join(repr(v) for v in f.init)
    return f"np.array([{vals}], {NUMPY[f.ty.dtype]}).reshape({f.ty.shape})"
