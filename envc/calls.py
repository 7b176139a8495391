"""The L2 check of single functions and procedures: each one the spec declares is called alone on reached and
fuzzed states with drawn arguments, backend against reference (as a unit test calls one function).

Play calls a function only with what the spec passes it, so a translation bug on other inputs hides: a loop of
`wrap` whose third turn no reachable angle takes, a push guard that only a full hand trips. The spec defines
each callable on every value of its parameters' types, so each answer must equal the reference's; integer
parameters are drawn within the range every call site passes (`envc.intervals.param_ranges`: the backends may
compile a callable for just those values), floats at the constants its body uses, at every small multiple of them
(a ladder of extra cases) and over several magnitudes. A quarter of the cases set every zone's count to an integer
argument or one off it, that argument at the top of its range every other time (the other arguments within the
storage axis they index, and drawn again until the reference can run the case): a draw of 8 cards from a deck
of 8 or 7, the edge of a guard that a call's loop meets at its last turn only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from envc import ir, rng
from envc.diagnostics import SpecRuntimeError
from envc.intervals import Interval, param_ranges
from envc.stats import far

CASES = 32  # cases per callable (half reached states, half fuzzed)
RETRIES = 8  # draws of the other arguments for a case whose zone counts sit at one argument


def _literals(node: object, out: set[float]) -> set[float]:
    """Every numeric literal in `node` (the constants a callable's body compares or computes with)."""
    if isinstance(node, tuple):
        for x in node:
            _literals(x, out)
    elif isinstance(node, ir.Lit):
        if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            out.add(float(node.value))
    elif isinstance(node, (ir._Expr, ir._Stmt, ir.ZoneRef, ir.Target)):
        for k in type(node).model_fields:
            if k not in ("ty", "span"):
                _literals(getattr(node, k), out)
    return out


def _loop_stops(node: object, out: set[int]) -> set[int]:
    """Every `range` bound of the loops in `node` (a count argument meets its edge at the top of one)."""
    if isinstance(node, tuple):
        for x in node:
            _loop_stops(x, out)
    elif isinstance(node, ir.ForS):
        out.add(node.stop)
        _loop_stops(node.body, out)
    elif isinstance(node, (ir.IfS, ir.Switch)):
        for k in type(node).model_fields:
            _loop_stops(getattr(node, k), out)
    return out


def _index_dims(spec: ir.SpecIR, params: set[str], node: object, out: dict[str, int]) -> dict[str, int]:
    """For each of `params` used directly as an index of state storage, the smallest axis it indexes (the range
    in which its writes land: a player index's 0..num_players)."""
    if isinstance(node, tuple):
        for x in node:
            _index_dims(spec, params, x, out)
    elif isinstance(node, (ir._Expr, ir._Stmt, ir.ZoneRef, ir.Target)):
        if isinstance(node, (ir.Read, ir.Target, ir.ZoneRef)) and getattr(node, "space", "state") == "state":
            shape = spec.field(node.name).ty.shape
            for axis, e in enumerate(node.index[: len(shape)]):
                if isinstance(e, ir.Local) and e.name in params:
                    out[e.name] = min(out.get(e.name, shape[axis]), shape[axis])
        for k in type(node).model_fields:
            if k not in ("ty", "span"):
                _index_dims(spec, params, getattr(node, k), out)
    return out


def _draw(ty: ir.Ty, known: Interval | None, members: int | None, lits: list[float], gen: np.random.Generator) -> Any:
    """One argument of type `ty`: within `known` (the call sites' range) or the enum's members when set."""
    n = int(np.prod(ty.shape)) if ty.shape else 1
    out: list[Any] = []
    for _ in range(n):
        r = gen.random()
        if ty.dtype is ir.DType.BOOL:
            v: Any = bool(gen.integers(0, 2))
        elif known is not None or members is not None:
            lo, hi = known if known is not None else (0, members or 1)
            v = int(gen.choice([lo, hi - 1])) if r < 0.25 else int(gen.integers(lo, hi))
        elif ty.dtype.is_int:
            ints = [int(x) + d for x in lits if x == int(x) for d in (-1, 0, 1)]
            v = int(gen.choice(ints)) if ints and r < 0.3 else int(gen.integers(-1, 9))
        elif lits and r < 0.1:  # a constant the body uses, one ulp off
            v = float(np.nextafter(gen.choice(lits), gen.choice([-np.inf, np.inf])))
        elif lits and r < 0.25:
            v = float(gen.choice(lits))
        elif lits and r < 0.5:  # a small multiple of one, off by a little (an angle a few turns out)
            v = float(gen.choice(lits) * gen.choice([-6, -5, -4, -3, -2, 2, 3, 4, 5, 6]) + gen.normal() * 0.5)
        else:
            v = float(gen.normal() * gen.choice([1.0, 4.0, 16.0]))
        out.append(v)
    return np.asarray(out).reshape(ty.shape) if ty.shape else out[0]


def _ladder(c: ir.CallableInfo, lits: list[float], gen: np.random.Generator) -> list[tuple[int, float]]:
    """(parameter, value) for each scalar float parameter: every multiple -6..6 of each of the body's first four
    constants of magnitude >= 0.5, exactly and off by up to half the constant (so each turn of a wrap by `2 pi`
    is met at least once, and its edges: `5 pi - 2 pi - 2 pi == pi` in f64), where random draws meet the far
    ones rarely; at most 64 in all."""
    bases = [x for x in lits if abs(x) >= 0.5][:4]
    out = [(at, float(b * k + off * gen.uniform(-0.5, 0.5) * abs(b)))
           for at, (_, t) in enumerate(c.params) if t.dtype.is_float and not t.shape
           for b in bases for k in range(-6, 7) if k for off in (0, 1)]  # fmt: skip
    if len(out) > 64:
        out = [out[j] for j in sorted(gen.choice(len(out), 64, replace=False))]
    return out


def free_slots_zero(spec: ir.SpecIR, d: dict[str, np.ndarray]) -> None:
    """Zero every zone slot at or past the zone's count, in place (a well-formed zone, as every backend keeps it)."""
    for f in spec.fields:
        if f.zone is not None and not f.name.endswith(".count"):
            cnt = d[f.name + ".count"]
            idx = np.arange(f.ty.shape[-1])
            d[f.name] = np.where(idx < cnt[..., None], d[f.name], 0).astype(d[f.name].dtype)


def _counts_at(spec: ir.SpecIR, d: Mapping[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """`d` with every zone's count `n` (within its capacity): the slots it frees are zeroed, those it opens hold 0."""
    out = {k: np.array(v, copy=True) for k, v in d.items()}
    for f in spec.fields:
        if f.zone is not None and f.name.endswith(".count"):
            cap = spec.field(f.zone).ty.shape[-1]
            out[f.name] = np.full(f.ty.shape, min(max(n, 0), cap), out[f.name].dtype)
    free_slots_zero(spec, out)
    return out


def _differs(want: np.ndarray, got: np.ndarray) -> bool:
    if np.shape(want) != np.shape(got):
        return True
    if np.asarray(want).dtype.kind == "f":
        return bool(np.any(far(np.asarray(got, np.float64), np.asarray(want, np.float64))))  # verify's tolerance
    return bool(np.any(np.asarray(want) != np.asarray(got)))


def check_callables(
    spec: ir.SpecIR,
    env: Any,
    call_ref: Callable[[str, Mapping[str, np.ndarray], list[Any], rng.Key], list[np.ndarray]],
    states: Callable[[int], dict[str, np.ndarray]],
    seed: int,
    only: set[str] | None = None,
) -> tuple[int, list[str]]:
    """(cases compared, failure messages) over every callable of `spec` (or those in `only`); `states(i)` gives
    the i-th input state and `call_ref` the reference's answer (raises SpecRuntimeError where the reference cannot
    run the case)."""
    if not spec.callables or not hasattr(env, "calls"):
        return 0, []
    ranges = param_ranges(spec)
    members = {e.name: len(e.members) for e in spec.enums}
    gen = np.random.default_rng(seed + 16)
    key = rng.key_from_seed(seed + 16)
    cases, failures = 0, []
    zoned = any(f.zone is not None for f in spec.fields)
    for c in spec.callables:
        if only is not None and c.name not in only:
            continue
        lits = sorted(_literals(c.body, set()))
        ints = [at for at, (_, t) in enumerate(c.params) if t.dtype.is_int and not t.shape and t.enum is None]
        known = ranges.get(c.name, {})
        dims = _index_dims(spec, {n for n, _ in c.params}, c.body, {})
        stop = max(_loop_stops(c.body, set()), default=None)
        todo: list[tuple[dict[str, np.ndarray], list[Any], rng.Key]] = []

        def draw() -> list[Any]:
            return [_draw(t, known.get(n), members.get(t.enum) if t.enum else None, lits, gen) for n, t in c.params]

        for i in range(CASES + len(ladder := _ladder(c, lits, gen))):
            args = draw()
            if i >= CASES:  # one float parameter on a rung of the ladder, the others drawn
                at, v = ladder[i - CASES]
                args[at] = v
            key, k = rng.split(key)
            state = states(i)
            if zoned and ints and i % 4 == 3 and i < CASES:  # each integer argument in turn, at the top of its
                at, t = ints[i // 4 % len(ints)], i // 4 // len(ints)  # range every other time; the zones'
                r = known.get(c.params[at][0])  # counts at it, then one below, then one above
                top = r[1] - 1 if r is not None else stop
                if t % 2 == 0 and top is not None:  # unknown range: the body's largest loop bound
                    args[at] = top
                state = _counts_at(spec, state, int(args[at]) + (0, -1, 1)[t // 2 % 3])
                for j, (name, _) in enumerate(c.params):  # the others, where no range is stated, within the
                    if j != at and j in ints and name in dims and name not in known:  # storage they index: a
                        args[j] = int(gen.integers(0, dims[name]))  # write to another player's zone is dropped
                for _ in range(RETRIES):  # the other arguments drawn again until the reference runs the case
                    try:
                        call_ref(c.name, state, args, k)
                        break
                    except SpecRuntimeError:  # e.g. a player index out of range: no case at all
                        args = [a if j == at else b for j, (a, b) in enumerate(zip(args, draw()))]
            todo.append((state, args, k))
        gots = env.calls(c.name, [t[0] for t in todo], [t[1] for t in todo], [t[2] for t in todo])
        if gots is None:
            continue  # the backend does not expose this one alone (Rust: array parameters or results)
        wants: list[list[np.ndarray] | None] = []
        for d, args, k in todo:
            try:
                wants.append(call_ref(c.name, d, args, k))
            except SpecRuntimeError:
                wants.append(None)  # a spec bug the reference reports on this input: not a case
        what = "state after" if c.returns is None else "result of"
        names = [f.name for f in spec.fields] if c.returns is None else [str(j) for j in range(len(gots[0]))]
        for i, (want, got) in enumerate(zip(wants, gots)):
            if want is None:
                continue
            cases += 1
            bad = next((j for j, (w, g) in enumerate(zip(want, got)) if _differs(w, g)), None)
            if bad is not None:
                shown = ", ".join(f"{n}={np.asarray(a).tolist()!r}" for (n, _), a in zip(c.params, todo[i][1]))
                part = f" field '{names[bad]}'" if c.returns is None else ""
                failures.append(f"{what} `{c.name}({shown})` on state {i}{part}: reference "
                                f"{np.asarray(want[bad]).tolist()} backend {np.asarray(got[bad]).tolist()}")
    return cases, failures
