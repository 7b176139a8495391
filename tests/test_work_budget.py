"""Static bounds of one step (envc/check/budget.py): loop lengths, work, inlined code, call depth and nesting.

The repros of the pathological specs themselves are in the corpus (tests/bad_specs/e058_*.yaml, e003_call_*.yaml)
with their exact messages; these tests check the budgets' boundaries, the cost model, that lint stays linear on
call graphs that are exponential at run time, and that code just inside the limits runs on every backend's walk.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import envc
from envc.check.budget import MAX_CALL_DEPTH, MAX_CODE, MAX_DEPTH, MAX_TRIPS, MAX_WORK, step_bound
from envc.diagnostics import Diagnostic

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted([*ROOT.glob("specs/*.yaml"), *ROOT.glob("tests/specs/*.yaml"), *ROOT.glob("docs/examples/*.yaml")])

ONE_ACTION = """\
name: work
players: 1
state:
  v: i32
actions:
  go:
    effect: |
{effect}
observation:
  fields: {{obs: i32}}
  body: "obs = v"
"""


def _chain(n: int, body: str, effect: str = "v = g0(v)") -> str:
    """A spec whose effect calls g0, where g{i} has `body` with NEXT standing for the call of g{i+1}."""
    fns = []
    for i in range(n):
        text = body.replace("NEXT", f"g{i + 1}(x)") if i < n - 1 else "x + 1"
        fns.append(f'  g{i}:\n    params: {{x: i32}}\n    returns: i32\n    body: "{text}"\n')
    return ONE_ACTION.format(effect=f"      {effect}") + "functions:\n" + "".join(fns)


def _loop(effect: str) -> str:
    return ONE_ACTION.format(effect=textwrap.indent(textwrap.dedent(effect).strip(), "      "))


def _lint(tmp_path: Path, text: str) -> tuple[envc.SpecIR | None, list[Diagnostic]]:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return envc.lint(str(path))


def _errors(tmp_path: Path, text: str) -> list[str]:
    """The errors of a spec as `line:col: CODE message`."""
    _, diags = _lint(tmp_path, text)
    return [f"{d.span.line}:{d.span.col}: {d.code} {d.message}" for d in diags if d.severity.value == "error"]


def _clean(tmp_path: Path, text: str) -> envc.SpecIR:
    spec, diags = _lint(tmp_path, text)
    assert spec is not None, [d.format() for d in diags]
    return spec


@pytest.mark.parametrize("path", SHIPPED, ids=[f"{p.parent.name}/{p.stem}" for p in SHIPPED])
def test_shipped_specs_are_well_within_the_budgets(path: Path) -> None:
    """Every shipped spec passes with a wide margin: the budgets only stop pathological specs."""
    spec, diags = envc.lint(str(path))
    assert spec is not None, [d.format() for d in diags]
    b = step_bound(spec)
    assert 0 < b.work * 100 <= MAX_WORK, b
    assert 0 < b.code * 20 <= MAX_CODE, b
    assert b.depth * 4 <= MAX_DEPTH, b
    assert b.calls * 8 <= MAX_CALL_DEPTH, b


def test_call_chain_of_2000_is_one_located_error(tmp_path: Path) -> None:
    """No RecursionError (lint would turn it into an E003 at 1:1): the call graph is walked iteratively."""
    assert _errors(tmp_path, _chain(2000, "NEXT + 1")) == [
        "8:11: E003 calls nest 2,000 deep from here (g0 -> g1 -> g2 -> ... -> g1998 -> g1999); the limit is 64"
    ]


def test_call_depth_limit_and_a_chain_at_it_runs(tmp_path: Path) -> None:
    assert MAX_CALL_DEPTH == 64
    assert _errors(tmp_path, _chain(65, "NEXT + 1")) == [
        "8:11: E003 calls nest 65 deep from here (g0 -> g1 -> g2 -> ... -> g63 -> g64); the limit is 64"
    ]
    spec = _clean(tmp_path, _chain(64, "NEXT + 1"))
    env = envc.build(spec)
    state = env.step(env.init((0, 1)), 0, (0, 2))
    assert int(env.state_to_dict(state)["v"]) == 64


def test_exponential_call_graph_is_costed_linearly(tmp_path: Path) -> None:
    """60 functions each calling the next twice: 2^60 calls per step, costed once per function (and in Python
    integers: no overflow in the numbers)."""
    assert _errors(tmp_path, _chain(60, "NEXT + NEXT")) == [
        "8:11: E058 this call of 'g0' expands to about 5,764,607,523,034,234,876 operations "
        "(1,152,921,504,606,846,974 nested calls): one step is bounded by about 5,764,607,523,034,234,885 "
        "operations (loops multiplied out, calls expanded); the budget is 100,000,000"
    ]


def test_calls_fanning_out_under_the_work_budget_are_held_by_the_code_budget(tmp_path: Path) -> None:
    """2^15 calls do little work, but the JAX backend inlines each one."""
    errors = _errors(tmp_path, _chain(16, "NEXT + NEXT"))
    assert len(errors) == 1 and errors[0].startswith("8:11: E058 this call of 'g0' expands to about"), errors
    tail = (
        f"the JAX backend inlines every call, and one step's code is about 327,685 IR nodes; the limit is {MAX_CODE:,}"
    )
    assert errors[0].endswith(tail), errors
    _clean(tmp_path, _chain(14, "NEXT + NEXT"))


@pytest.mark.parametrize("start", [0, -(2**31), 2**31 - 1 - MAX_TRIPS])
def test_trip_limit_is_inclusive_and_computed_without_overflow(start: int, tmp_path: Path) -> None:
    """At the ends of i32 too: the trip count is computed on Python integers."""
    stop = start + MAX_TRIPS
    _clean(tmp_path, _loop(f"v = count(i >= 0 for i in range({start}, {stop}))"))
    bad = f"{start - 1}, {stop}" if start > -(2**31) else f"{start}, {stop + 1}"
    errors = _errors(tmp_path, _loop(f"v = count(i >= 0 for i in range({bad}))"))
    assert errors == [
        f"8:11: E058 this generator runs {MAX_TRIPS + 1:,} times; a loop or generator runs at most 16,777,216 times "
        "(2^24)"
    ]


def test_budget_points_at_the_loop_that_alone_is_too_big(tmp_path: Path) -> None:
    """Neither loop is over the trip limit; the product is over the budget: the outer loop is blamed, not the
    generator inside it (which alone is small)."""
    errors = _errors(tmp_path, _loop("for i in range(20000):\n  v += sum(j for j in range(20000))"))
    assert len(errors) == 1 and errors[0].startswith("8:7: E058 this loop runs 20,000 times over a body of"), errors


def test_budget_follows_calls_to_the_loop_inside(tmp_path: Path) -> None:
    text = _loop("v = heavy(v)") + textwrap.dedent("""\
        functions:
          heavy:
            params: {x: i32}
            returns: i32
            body: |
              let t = x
              for i in range(10000):
                for j in range(10000):
                  t = t ^ (i + j)
              return t
        """)
    errors = _errors(tmp_path, text)
    assert len(errors) == 1 and errors[0].startswith("18:7: E058 this loop runs 10,000 times over a body"), errors


def test_work_counts_loops_times_their_bodies(tmp_path: Path) -> None:
    def work(n: int) -> int:
        return step_bound(_clean(tmp_path, _loop(f"for i in range({n}):\n  v += i * i"))).work

    a, b, c = work(1000), work(2000), work(3000)
    assert c - b == b - a > 1000  # linear in the trip count, several operations per iteration


def test_work_counts_legality_once_per_action_id(tmp_path: Path) -> None:
    def work(ids: int) -> int:
        text = ONE_ACTION.format(effect="      v += 1").replace(
            "  go:\n", f'  go:\n    params: {{k: {ids}}}\n    legal: "sum(j * k for j in range(50)) >= 0"\n'
        )
        return step_bound(_clean(tmp_path, text)).work

    a, b = work(10), work(20)
    assert b - a == work(30) - b > 10 * 50  # the legality (a 50-element generator) counts once per action id


def test_expanded_nesting_limit(tmp_path: Path) -> None:
    """Calls add their callee's nesting to the caller's: 29 functions of seven levels each nest past the limit,
    though each body and the call depth are small."""
    deep = "(((((NEXT + 1) + 1) + 1) + 1) + 1)"
    errors = _errors(tmp_path, _chain(29, deep))
    assert errors == [
        "8:11: E003 with the functions it calls (g0 -> g1 -> g2 -> ... -> g27 -> g28) expanded, the code here nests "
        f"201 levels deep; the limit is {MAX_DEPTH}: make the functions flatter (`let` steps) or call fewer levels "
        "deep"
    ]
    assert step_bound(_clean(tmp_path, _chain(28, deep))).depth == 194


_WALK = """\
import sys
import envc
from envc import lower_jax, lower_rust
spec = envc.load(sys.argv[1])
env = envc.build(spec)
env.step(env.init((0, 1)), 0, (0, 2))
lower_jax.render(spec, "", "deep_pkg")
lower_rust.render(spec, "", "deep_pkg")
print("ok")
"""


@pytest.mark.parametrize("shape", ["calls", "loops"])
def test_code_just_inside_the_limits_runs_everywhere(shape: str, tmp_path: Path) -> None:
    """The deepest legal code (calls expanded to the nesting limit; 79 nested loops, the parser's limit) runs on the
    reference interpreter and goes through both code generators at Python's default recursion limit, quickly (a
    subprocess with a time limit: a walk exponential in the nesting would hang here, not pass)."""
    if shape == "calls":
        text = _chain(28, "(((((NEXT + 1) + 1) + 1) + 1) + 1)")
    else:
        lines = [" " * d + f"for k{d} in range(1):" for d in range(79)] + [" " * 79 + "v += 1"]
        text = _loop("\n".join(lines))
    spec = _clean(tmp_path, text)
    assert step_bound(spec).depth >= MAX_DEPTH * 3 // 4
    out = subprocess.run(
        [sys.executable, "-c", _WALK, str(tmp_path / "spec.yaml")], capture_output=True, text=True, timeout=240
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


def test_deepest_legal_expression_lints_under_a_deep_caller(tmp_path: Path) -> None:
    """The checker recurses about five frames per level (805 for this expression), so pipeline.lint raises the
    recursion limit while it runs: from a caller already 400 frames deep, a body at the nesting limit still lints
    clean (without the headroom this is an E003 'nested too deeply to check' at 1:1)."""
    text = _loop("b = " + "not " * 158 + "b").replace("  v: i32\n", "  v: i32\n  b: bool\n")

    def deep(n: int) -> envc.SpecIR:
        return _clean(tmp_path, text) if n == 0 else deep(n - 1)

    assert sys.getrecursionlimit() <= 1000 + 100  # the default, or about (pytest may add a little)
    deep(400)
