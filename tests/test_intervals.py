"""`envc.intervals`: the value range of an index expression contains every value it takes (a clamp is dropped only
where it can never fire), is exact on the forms the lowerings meet, and gives up where the type could wrap."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envc import ir, pipeline, rng
from envc.diagnostics import Span
from envc.interpret import ReferenceEnv
from envc.intervals import fixed_ranges, interval, param_ranges

SPAN = Span("t.yaml", 1, 1, 1, 2)
I32, I8 = ir.Ty(dtype=ir.DType.I32), ir.Ty(dtype=ir.DType.I8)
OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}


def lit(v: int, t: ir.Ty = I32) -> ir.Lit:
    return ir.Lit(ty=t, span=SPAN, value=v)


def local(name: str, t: ir.Ty = I32) -> ir.Local:
    return ir.Local(ty=t, span=SPAN, name=name)


def binary(op: str, a: Any, b: Any, t: ir.Ty = I32) -> ir.Binary:
    return ir.Binary(ty=t, span=SPAN, op=op, a=a, b=b)


def value(e: Any, env: dict[str, int]) -> int:
    if isinstance(e, ir.Lit):
        return int(e.value)
    if isinstance(e, ir.Local):
        return env[e.name]
    if isinstance(e, ir.Unary):
        return -value(e.x, env)
    if isinstance(e, ir.Math):
        return (min if e.fn == "min" else max)(value(e.args[0], env), value(e.args[1], env))
    return OPS[e.op](value(e.a, env), value(e.b, env))  # type: ignore[no-any-return]


@st.composite
def expressions(draw: st.DrawFn, depth: int = 3) -> Any:
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from([local("i"), local("j")]) | st.integers(-12, 12).map(lit))
    kind = draw(st.sampled_from(["+", "-", "*", "//", "%", "neg", "min", "max"]))
    x = draw(expressions(depth - 1))
    if kind in ("//", "%"):
        return binary(kind, x, lit(draw(st.integers(1, 7))))
    if kind == "neg":
        return ir.Unary(ty=I32, span=SPAN, op="neg", x=x)
    y = draw(expressions(depth - 1))
    if kind in ("min", "max"):
        return ir.Math(ty=I32, span=SPAN, fn=kind, args=(x, y))
    return binary(kind, x, y)


@settings(max_examples=400, deadline=None)
@given(expressions(), st.integers(-15, 15), st.integers(1, 9), st.integers(-15, 15), st.integers(1, 9))
def test_the_range_holds_every_value(e: Any, i0: int, ni: int, j0: int, nj: int) -> None:
    got = interval(e, {"i": (i0, i0 + ni), "j": (j0, j0 + nj)})
    values = {value(e, {"i": i, "j": j}) for i in range(i0, i0 + ni) for j in range(j0, j0 + nj)}
    assert got is not None
    assert got[0] <= min(values) and max(values) < got[1]


def test_the_forms_the_lowerings_meet_are_exact() -> None:
    rows = {"row": (1, 6), "c": (0, 16), "i": (0, 3)}
    assert interval(binary("-", local("row"), lit(1)), rows) == (0, 5)  # connect four's gravity: board[row - 1]
    assert interval(binary("//", local("c"), lit(4)), rows) == (0, 4)  # 2048's board[c // 4, c % 4]
    assert interval(binary("%", local("c"), lit(4)), rows) == (0, 4)
    assert interval(binary("-", lit(2), local("i")), rows) == (0, 3)  # tic-tac-toe's anti-diagonal
    assert interval(binary("%", lit(7), lit(3)), {}) == (1, 2)  # an unrolled loop's constant: a static index
    assert interval(local("p"), rows) is None  # a function parameter, a state field: unknown


def test_an_expression_that_could_wrap_is_unknown() -> None:
    assert interval(binary("+", local("i", I8), lit(100, I8), I8), {"i": (0, 100)}) is None  # 199 wraps in i8
    assert interval(binary("+", local("i", I8), lit(27, I8), I8), {"i": (0, 100)}) == (27, 127)
    assert interval(binary("//", local("i"), local("j")), {"i": (0, 9), "j": (1, 3)}) is None  # not a constant


def test_constant_tables_bound_what_is_read_from_them() -> None:
    """2048's `let c = LINE[d, i, j]`: any element of the table (0..15), so `board[c // 4, c % 4]` needs no clamp."""
    table = ir.Read(ty=I32, span=SPAN, space="const", name="LINE", index=(local("d"),))
    consts = {"LINE": (0, 16)}
    assert interval(table, {}, consts) == (0, 16)
    assert interval(binary("//", table, lit(4)), {}, consts) == (0, 4)
    assert interval(table, {}) is None  # a table whose values are not given


@pytest.mark.parametrize(
    "path", ["specs/connect_four.yaml", "specs/tcg.yaml", "specs/kuhn_poker.yaml", "docs/examples/game_2048.yaml"]
)
def test_every_call_passes_a_value_in_its_parameters_range(path: str) -> None:
    """`param_ranges` and `fixed_ranges` against the reference: every argument of every call, and every value a
    function returns, in random episodes and in steps where the player to move is no player (verify's L2 states),
    lies in the range the lowerings drop clamps for."""
    spec = pipeline.load(path)
    ranges = param_ranges(spec)
    results = {k: v for k, v in fixed_ranges(spec).items() if k.endswith("()")}
    returned: dict[str, list[int]] = {name[:-2]: [] for name in results}
    ref = ReferenceEnv(spec, strict=False)  # 14.3's fallbacks where the player to move is no player
    seen: dict[str, list[dict[str, int]]] = {name: [] for name in ranges}
    names = {c.name: [n for n, _ in c.params] for c in spec.callables}
    for name, inner in list(ref._c.compiled_fns.items()):

        def spy(fr: Any, args: list[Any], name: str = name, inner: Any = inner) -> Any:
            given = dict(zip(names[name], args)) if args else {n: fr.loc[n] for n in names[name]}
            seen[name].append({k: int(v) for k, v in given.items() if k in ranges[name]})
            out = inner(fr, args)
            if name + "()" in results:
                returned[name].append(int(out))
            return out

        ref._c.compiled_fns[name] = spy
    gen = np.random.default_rng(0)
    for episode in range(3):
        state = ref.init(rng.key_from_seed(episode))
        for t in range(150):
            if state.terminated or state.truncated:
                break
            for cp in (-1, spec.players):  # a step from the same state with no player to move
                d = ref.state_to_dict(state)
                d["current_player"] = np.asarray(cp, d["current_player"].dtype)
                odd = ref.state_from_dict(d)
                for a in np.flatnonzero(odd.legal_action_mask)[:3]:
                    ref.step(odd, int(a), rng.key_from_seed(t))
            legal = np.flatnonzero(state.legal_action_mask)
            state = ref.step(state, int(gen.choice(legal)), rng.key_from_seed(1000 * episode + t))
    assert any(ranges.values())
    for name, values in returned.items():
        lo, hi = results[name + "()"]
        assert all(lo <= v < hi for v in values), (name, (lo, hi), sorted(set(values)))
    for name, calls in seen.items():
        for param, (lo, hi) in ranges[name].items():
            got = [c[param] for c in calls]
            assert all(lo <= v < hi for v in got), (name, param, (lo, hi), sorted(set(got)))


def test_a_parameter_gets_no_range_where_a_call_passes_an_unknown_value() -> None:
    """connect four's `four_from` is called with constants and loop variables only; kuhn poker's `showdown` with
    literal amounts; a player read from the state (tcg's `apply_effect(current_player, ...)`) is unknown."""
    assert param_ranges(pipeline.load("specs/connect_four.yaml"))["four_from"]["row"] == (0, 6)
    tcg = param_ranges(pipeline.load("specs/tcg.yaml"))
    assert "pl" not in tcg["apply_effect"]
    assert tcg["position_ok"] == {"pl": (0, 2), "s": (0, 6)}
    assert tcg["put_in_play"]["s"] == (0, 6)  # 0, or `first_free(pl)`: an argmax over bench positions 1-5


def test_reductions_give_positions_and_counts() -> None:
    """argmax/argmin over a range give a position in it, or -1 when a filter can leave nothing (14.3's empty
    value); count gives 0..n; choice falls back to the range start."""
    elt = local("i")

    def reduce(op: str, cond: Any = None) -> ir.Reduce:
        return ir.Reduce(ty=I32, span=SPAN, op=op, var="i", start=1, stop=6, elt=elt, cond=cond)

    assert interval(reduce("argmax"), {}) == (1, 6)
    assert interval(reduce("argmin", binary(">", elt, lit(2))), {}) == (-1, 6)
    assert interval(reduce("count", binary(">", elt, lit(2))), {}) == (0, 6)
    assert interval(reduce("choice", binary(">", elt, lit(2))), {}) == (1, 6)
    assert interval(reduce("sum"), {}) is None
