"""`envc mutate`: mutants of generated code are killed at the level expected, equivalents are recognised, the
Rust mutant schema switches mutants at run time, and the CLI reports (or refuses bad input) in one line."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

import envc
from envc.cli import app
from envc.diagnostics import Span
from envc.mutate import mutate, reachable
from envc.mutate.jax import JaxProgram
from envc.mutate.run import REACHABLE
from envc.mutate.rust import schema

ROOT = Path(__file__).resolve().parent.parent
CORRIDOR = ROOT / "docs" / "examples" / "corridor.yaml"
KUHN = ROOT / "specs" / "kuhn_poker.yaml"
SMALL = {"episodes": 10, "states": 20, "max_steps": 60}  # a light suite: the tests stay fast


@pytest.fixture(scope="module")
def corridor() -> tuple[envc.SpecIR, JaxProgram]:
    spec = envc.load(str(CORRIDOR))
    return spec, JaxProgram(spec)


def _site(prog: JaxProgram, function: str, op: str, before: str) -> int:
    hits = [i for i, s in enumerate(prog.sites) if s.function == function and s.op == op and s.before == before]
    assert len(hits) == 1, [(s.function, s.op, s.before) for s in prog.sites if s.function == function]
    return hits[0]


def _spec_line(needle: str) -> int:
    return next(n for n, line in enumerate(CORRIDOR.read_text().splitlines(), 1) if needle in line)


def test_generated_lines_map_to_spec_lines(corridor: tuple[envc.SpecIR, JaxProgram]) -> None:
    _, prog = corridor
    move = prog.sites[_site(prog, "effect_move", "arith", "+")]
    span = prog.span(move)
    assert span is not None and span.line == _spec_line("pos = clip(pos + step")
    assert "state.pos + step_3" in prog.code(move)
    rule = prog.span(prog.sites[_site(prog, "apply_rules", "compare", "==")])
    assert rule is not None and rule.line == _spec_line('when: "pos == LENGTH - 1"')
    # template code (the step's bookkeeping) has no spec line
    bookkeeping = next(s for s in prog.sites if s.function == "Env.invariants" and s.op == "stmt_drop")
    assert prog.span(bookkeeping) is None


def test_killed_at_the_expected_level_and_equivalent_recognised(corridor: tuple[envc.SpecIR, JaxProgram]) -> None:
    spec, prog = corridor
    weaker_invariant = _site(prog, "invariant_in_bounds", "compare", ">=")  # `pos >= 0` -> `pos > 0`: false at 0
    wrong_move = _site(prog, "effect_move", "arith", "+")  # `pos + step` -> `pos - step`: invariants still hold
    unused = next(i for i, s in enumerate(prog.sites) if s.function == "Env.invariants" and s.op == "stmt_drop")
    report = mutate(spec, prog, only=[weaker_invariant, wrong_move, unused], **SMALL)
    got = {o.id: o for o in report.outcomes}
    assert got[weaker_invariant].status == "killed" and got[weaker_invariant].level == "L1"
    assert got[weaker_invariant].check == "invariants hold"
    assert got[wrong_move].status == "killed" and got[wrong_move].level == "L2"
    assert got[wrong_move].spec == f"{spec.path}:{_spec_line('pos = clip(pos + step')}"
    # the env always passes params, so dropping the `params = default if None` line leaves the same program
    assert got[unused].status == "equivalent" and "identical lowered program" in (got[unused].reason or "")
    assert report.kill_rate() == 1.0 and report.by_level() == {"L1": 1, "L2": 1, "L3": 0}
    assert report.coverage[0] == report.coverage[1] > 0  # the reference ran every spec span with generated code


def test_rust_schema_switches_mutants_at_run_time(tmp_path: Path) -> None:
    if shutil.which("rustc") is None:
        pytest.skip("rustc is not installed")
    src = (
        "fn f(a: i32, b: i32) -> i32 {\n    if a < b { a + b } else { a - b }\n}\n"
        "fn g(x: Option<i32>) -> i32 {\n    if let Some(v) = x { v } else { 0 }\n}\n"
    )
    code, sites, skipped = schema(src, {})
    assert not skipped
    ops = [s.op for s in sites]
    assert ops == ["compare", "where_swap", "branch_drop", "branch_drop", "arith", "arith", "constant"]
    main = (
        "\nfn main() {\n    for k in 0..8u32 {\n        envc_set_mutant(k);\n"
        '        println!("{} {} {}", f(2, 3), f(5, 1), g(None));\n    }\n}\n'
    )
    (tmp_path / "m.rs").write_text(code + main)
    subprocess.run(["rustc", "-O", "-o", str(tmp_path / "m"), str(tmp_path / "m.rs")], check=True, capture_output=True)
    out = subprocess.run([str(tmp_path / "m")], check=True, capture_output=True, text=True).stdout.split("\n")
    # original; `<=`; branches swapped; then-arm dropped; else-arm dropped; then `a - b`; else `a + b`; 0 -> 1
    assert out[:8] == ["5 4 0", "5 4 0", "-1 6 0", "-1 4 0", "5 6 0", "-1 4 0", "5 6 0", "5 4 1"]


def test_cli_json_and_bad_input() -> None:
    runner = CliRunner()
    r = runner.invoke(app, ["mutate", str(CORRIDOR), "--mutants", "2", "--episodes", "5", "--states", "10", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["mutants"] == 2 and data["backend"] == "jax" and data["sites"] > 50
    assert {o["status"] for o in data["outcomes"]} <= {"killed", "survived", "equivalent", "stillborn"}
    assert all(o["file"].endswith("env.py") and o["line"] > 0 for o in data["outcomes"])
    for args in (["--backend", "pytorch"], ["--mutants", "0"]):
        r = runner.invoke(app, ["mutate", str(CORRIDOR), *args])
        assert r.exit_code == 2
        assert r.stderr.startswith("error:") and len(r.stderr.strip().splitlines()) == 1
    r = runner.invoke(app, ["mutate", str(ROOT / "no_such_spec.yaml")])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and "cannot read" in r.stderr
    r = runner.invoke(app, ["mutate", str(CORRIDOR), "--mutants", "2", "--episodes", "5", "--states", "10"])
    text = " ".join(r.stdout.split())  # the terminal tables, rewrapped
    assert r.exit_code == 0 and "L1/L2/L3" in text and "first caught at L1 / L2 / L3:" in text
    assert f"equivalent: {data['equivalent_proven']} proven" in text and "within the float tolerance" in text


@pytest.fixture(scope="module")
def kuhn() -> tuple[envc.SpecIR, JaxProgram, reachable.Space]:
    spec = envc.load(str(KUHN))
    return spec, JaxProgram(spec), reachable.explore(spec)


def test_reachable_space_of_kuhn_poker_is_listed_exactly(kuhn: tuple[envc.SpecIR, JaxProgram, reachable.Space]) -> None:
    spec, _, space = kuhn
    # 3! deals x 2 first movers, each hand a tree of 9 nodes (root, 2 after one move, 4 + 2 after two ...)
    assert len(space.states) == 108 and space.random_reset and not space.random_steps
    ref = envc.build(spec)
    assert all(not ref.invariants(ref.state_from_dict(d)) for d in space.states)
    deals = {tuple(int(c) for c in d["card"]) for d in space.states}
    assert deals == {(a, b) for a in range(3) for b in range(3) if a != b}
    with pytest.raises(reachable.Infinite, match="continuous"):  # cartpole's reset draws uniform floats
        reachable.explore(envc.load(str(ROOT / "specs" / "cartpole.yaml")))


def test_reachable_space_tells_an_equivalent_mutant_from_a_real_one(
    kuhn: tuple[envc.SpecIR, JaxProgram, reachable.Space],
) -> None:
    _, prog, space = kuhn
    reachable.original_outputs(space, "jax", prog.activate(None))
    # `card[0] > card[1]` -> `>=`: the two cards always differ (the suite's fuzzed states tell them apart)
    showdown = next(i for i, s in enumerate(prog.sites) if s.function == "showdown" and s.op == "compare")
    assert reachable.first_difference(space, "jax", prog.activate(prog.sites[showdown])) is None
    # the loser's `-amount` -> `amount`: a real bug on the first showdown
    loser = next(i for i, s in enumerate(prog.sites) if s.function == "pay" and s.op == "negation")
    got = reachable.first_difference(space, "jax", prog.activate(prog.sites[loser]))
    assert got is not None and "action" in got


def test_survivor_equivalent_on_the_reachable_space_is_counted_apart(
    kuhn: tuple[envc.SpecIR, JaxProgram, reachable.Space],
) -> None:
    spec, prog, _ = kuhn
    # the observation's one-hot write at `drop_index(card[p], 7) -> 8`: a card is 0-2 in every reachable state
    # (`clamp_index(p, 2) -> 3` used to be this example; `envc.mutate.oob` proves it from the code now)
    guard = next(
        i
        for i, s in enumerate(prog.sites)
        if s.function == "observe" and s.op == "constant" and s.before == "7" and "state.card[" in prog.code(s)
    )
    report = mutate(spec, prog, only=[guard], **SMALL)
    o = report.outcomes[0]
    assert o.status == "equivalent" and (o.reason or "").startswith(REACHABLE), o
    assert report.reachable == 1 and report.proven == 0 and report.unreached == 0
    assert report.kill_rate() == 1.0 and report.strict_kill_rate() == 0.0  # strict: counted as a survivor
    assert report.space is not None and "108 reachable states" in report.space


def test_rust_schema_builds_with_overflowing_mutants_and_open_ranges(tmp_path: Path) -> None:
    if shutil.which("rustc") is None:
        pytest.skip("rustc is not installed")
    # `0 + 2` in a slice bound: its mutant `0 - 2` is a constant overflow, an error unless the schema allows it
    src = "fn h(v: &mut [i32; 4]) -> i32 {\n    v[..2].fill(1);\n    v[(0 + 2)..4].iter().sum::<i32>() + v[0]\n}\n"
    code, sites, skipped = schema(src, {})
    assert not skipped
    assert [(s.op, s.before) for s in sites][:3] == [
        ("constant", "2"),
        ("constant", "1"),
        ("stmt_drop", "v[..2].fill(1);"),
    ]
    arith = next(s.k for s in sites if s.op == "arith")  # the first `+`: `0 + 2`
    main = (
        "\nfn main() {\n    let k: u32 = std::env::args().nth(1).unwrap().parse().unwrap();\n"
        '    envc_set_mutant(k);\n    let mut v = [0, 0, 5, 7];\n    println!("{}", h(&mut v));\n}\n'
    )
    (tmp_path / "m.rs").write_text(code + main)
    subprocess.run(["rustc", "-O", "-o", str(tmp_path / "m"), str(tmp_path / "m.rs")], check=True, capture_output=True)
    ok = subprocess.run([str(tmp_path / "m"), "0"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.strip() == "13"
    bad = subprocess.run([str(tmp_path / "m"), str(arith)], capture_output=True, text=True)
    assert bad.returncode != 0  # the mutant panics when it runs (a slice out of range): the suite sees a failure


RESETS = """\
name: resets
players: 1
state:
  a: {type: f32, init: 0.0}
  b: {type: f32, init: 1.0}
  c: {type: i32, init: 0}
  u: f32
  v: f32
actions:
  go: {effect: "c += 1"}
reset: |
  c += 1
  u = uniform(0.0, 1.0)
  v = uniform(-1.0, 1.0)
  a = 0.0
  b = 2.0
  c = 0
terminated: "c > 3"
observation:
  fields: {o: f32}
  body: "o = a + b + u + v"
"""


def test_rust_equivalents_proven_from_the_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two shapes are proven equivalent without running: the draw buffer's zeros (overwritten by the loop after
    them) and a reset write of the declared init with nothing writing the field before; nothing else is."""
    import envc.lower_rust as lower
    from envc.mutate.rust import RustProgram

    (tmp_path / "resets.yaml").write_text(RESETS)
    spec = envc.load(str(tmp_path / "resets.yaml"))
    monkeypatch.setattr(lower, "rustfmt", lambda s: s)
    src = lower.render(spec, RESETS, "envc_resets_rs", runtime_path="RUNTIME")["src/env.rs"]
    _, sites, _ = schema(src, {})
    prog = object.__new__(RustProgram)
    prog.spec, prog._lines = spec, src.split("\n")
    proven = {(s.op, s.before): prog.same_tree(s) for s in sites if s.function == "reset_body"}
    assert proven[("stmt_drop", "st.a = 0.0f32;")] is not None  # a's init is 0.0
    assert proven[("stmt_drop", "st.b = 2.0f32;")] is None  # b's init is 1.0
    assert proven[("stmt_drop", "st.c = 0i32;")] is None  # `c += 1` wrote it before
    zeros = [why for (op, before), why in proven.items() if op == "constant" and before.startswith("0u32")]
    assert zeros and all(w is not None and "written by the loop" in w for w in zeros)
    others = [k for k, why in proven.items() if why is not None and k[0] not in ("stmt_drop", "constant")]
    assert not others


def test_jax_reset_write_of_the_declared_init_is_proven_equivalent() -> None:
    """Mountain car's reset writes `velocity = 0.0`, its declared init: dropping it keeps the input state's 0.0,
    proven from the code; dropping the position's draw is not (the input holds the init, not the draw)."""
    prog = JaxProgram(envc.load(str(ROOT / "docs" / "examples" / "continuous_mountain_car.yaml")))
    drops = {prog.code(s).split(" = ")[0]: s for s in prog.sites if s.function == "reset" and s.op == "stmt_drop"}
    assert set(drops) == {"position_1", "velocity_1"}
    assert "the declared init, to `velocity`" in (prog.same_tree(drops["velocity_1"]) or "")
    assert prog.same_tree(drops["position_1"]) is None


OOB_SOURCE = '''
NUM_ACTIONS = 4

def clamp_index(i, n):
    return jnp.clip(i, 0, n - 1)

def drop_index(i, n):
    return jnp.where((i >= 0) & (i < n), i, n)

def read(state, i):
    return state.grid[clamp_index(i, 2), 1] + state.grid[1, clamp_index(i, 3)] + state.grid[0, clamp_index(i, 2)]

def write(state, i):
    at_1 = (drop_index(i, 2),)
    row_1 = state.grid.at[at_1].get(mode="fill", fill_value=-1)
    grid_1 = state.grid.at[at_1].set(row_1 * 2, mode="drop")
    grid_2 = grid_1.at[drop_index(i, 2), drop_index(i, 3)].add(5, mode="drop")
    grid_3 = grid_2.at[0, drop_index(i, 2)].add(7, mode="drop")
    row_2 = state.grid.at[at_1].get(mode="fill", fill_value=0)
    row_3 = row_2.at[jnp.where(i > 0, i, 3)].set(9, mode="drop")
    row_4 = row_2.at[jnp.where(i > 0, i, 1)].set(8, mode="drop")
    return jnp.concatenate([grid_3.ravel(), row_3, row_4])

def legal(state, i):
    return state.legal_action_mask[jnp.clip(i, 0, NUM_ACTIONS - 1)]

class C:
    table = jnp.asarray(np.array([5, 6, 7], np.int32).reshape((3,)))

def lookup(state, i):
    return C.table[clamp_index(i, 3)] * 10 + C.table[clamp_index(i, 2)]
'''


# the arith mutant `row_1 * 2` -> `row_1 / 2` stores a float in the int32 grid, which JAX warns about: the mutant's
# doing, not the original's
@pytest.mark.filterwarnings("ignore:scatter inputs have incompatible types:FutureWarning")
def test_jax_out_of_range_index_mutants_proven_and_equal_when_run() -> None:
    """`envc.mutate.oob` proves index mutants equivalent by JAX's out-of-range rules (gathers clamp, drop writes and
    fill reads ignore any out-of-range index): each proven mutant is run here against the original on every index
    from -3 to 5 and gives the same result, while the look-alikes it must not prove (a bound below the axis's
    length, a sentinel in range, a lowered bound) are left unproven and do differ somewhere."""
    import ast
    from types import SimpleNamespace

    import jax
    import jax.numpy as jnp
    import numpy as np

    from envc.mutate import operators

    tree = ast.parse(OOB_SOURCE)
    sites = operators.sites(tree, {"grid": (2, 3)})
    state = SimpleNamespace(grid=jnp.arange(6, dtype=jnp.int32).reshape(2, 3) + 10,
                            legal_action_mask=jnp.array([True, False, True, False]))  # fmt: skip

    def results(t: ast.Module) -> dict[str, list[np.ndarray]]:
        scope: dict[str, object] = {"jnp": jnp, "np": np}
        exec(compile(t, "<oob>", "exec"), scope)
        fns = ("read", "write", "legal", "lookup")
        run = {f: jax.jit(lambda i, g=scope[f]: g(state, i)) for f in fns}  # type: ignore[misc]
        return {f: [np.asarray(g(jnp.int32(i))) for i in range(-3, 6)] for f, g in run.items()}

    original = results(tree)
    proven, unproven = [], []
    for s in sites:
        if s.function not in original or s.op not in ("constant", "arith"):
            continue
        mutant = results(operators.apply(tree, s))[s.function]
        same = all(np.array_equal(a, b) for a, b in zip(original[s.function], mutant))
        (proven if s.equivalent.startswith("proven") else unproven).append((s, same))
    kinds = {(s.function, s.before) for s, _ in proven}
    assert {("read", "2"), ("read", "3"), ("write", "2"), ("write", "3"), ("legal", "-"), ("lookup", "3")} <= kinds
    assert any("index 3 -> 4 on an axis of length 3" in s.equivalent for s, _ in proven)  # row_3's sentinel
    assert all(same for _, same in proven), [(s.function, s.describe()) for s, same in proven if not same]
    # not proven: a clamp and a drop index on an axis longer than their bound, a lowered bound
    for fn, before in [("read", "2"), ("write", "2"), ("write", "1"), ("legal", "1"), ("lookup", "2")]:
        assert any(s.function == fn and s.before == before and not same for s, same in unproven), (fn, before)


def test_jax_flip_at_a_boundary_both_arms_hold_is_proven_equivalent() -> None:
    """Mountain car's wall: `velocity < 0` sets the velocity to 0, so `<` -> `<=` changes only a zero velocity into
    zero: proven; a flip whose arms do not both hold the boundary (the goal test) is not."""
    prog = JaxProgram(envc.load(str(ROOT / "docs" / "examples" / "continuous_mountain_car.yaml")))
    flips = {(s.function, prog.code(s)): prog.same_tree(s) for s in prog.sites if s.op == "compare"}
    wall = [why for (fn, code), why in flips.items() if fn == "effect_box" and "velocity_1 <" in code]
    assert wall and all(w is not None and "both arms" in w for w in wall)
    goal = [why for (fn, code), why in flips.items() if "goal_velocity" in code]
    assert goal and all(w is None for w in goal)


CASES_SOURCE = '''
def effect(kind, x, z):
    cond_1 = (kind == jnp.int8(2))
    cond_2 = jnp.logical_or((kind == jnp.int8(3)), (kind == jnp.int8(4)))
    cond_3 = (kind == jnp.int8(3))
    y_1 = jnp.where(cond_2, z, x)
    y_2 = jnp.where(cond_1, x, y_1)
    w_1 = jnp.where(cond_3, z, x)
    w_2 = jnp.where(cond_2, x, w_1)
    return y_2 * 10 + w_2
'''


def test_jax_dropped_arm_of_exclusive_match_cases_is_proven_equivalent() -> None:
    """Two cases of a `match` lower to nested `where`s: dropping the outer then-arm (which keeps the value) is
    proven equivalent when the inner case's constants are disjoint from the outer's, and run to agree on every
    kind; with overlapping cases (3 in both) it is not proven, and does differ."""
    import ast

    import jax.numpy as jnp
    import numpy as np

    from envc.mutate import operators, proofs

    tree = ast.parse(CASES_SOURCE)

    def run(t: ast.Module) -> list[int]:
        scope: dict[str, object] = {"jnp": jnp}
        exec(compile(t, "<cases>", "exec"), scope)
        return [int(np.asarray(scope["effect"](jnp.int8(k), 1, 2))) for k in range(6)]  # type: ignore[operator]

    drops = {ast.unparse(list(ast.walk(tree))[s.index]): s for s in operators.sites(tree, {})
             if s.op == "branch_drop" and "then-arm" in s.after}  # fmt: skip
    disjoint, overlapping = drops["jnp.where(cond_1, x, y_1)"], drops["jnp.where(cond_2, x, w_1)"]
    assert "one of [2]" in (proofs.exclusive_cases(tree, disjoint) or "")
    assert run(operators.apply(tree, disjoint)) == run(tree)
    assert proofs.exclusive_cases(tree, overlapping) is None
    assert run(operators.apply(tree, overlapping)) != run(tree)
    stmts = {s.replacement: s for s in operators.sites(tree, {}) if s.op == "stmt_drop"}  # `y_2 = y_1`: the same
    assert proofs.exclusive_cases(tree, stmts["y_1"]) is not None and proofs.exclusive_cases(tree, stmts["w_1"]) is None


DRAW_SOURCE = '''
def reward(a, b, c):
    return jnp.where(jnp.logical_or(c > 0, a == b), 0.0, jnp.where(a > b, 1.0, -1.0))

def other(a, b, c):
    return jnp.where(jnp.logical_or(c > 0, a == c), 0.0, jnp.where(a > b, 1.0, -1.0))
'''


def test_jax_flip_excluded_by_an_enclosing_equality_is_proven_equivalent() -> None:
    """A reward's draw test (`a == b` takes the then-arm) makes `a > b` -> `a >= b` in the else-arm equivalent:
    proven and run to agree; with the equality on other operands it is not proven, and differs."""
    import ast

    import jax.numpy as jnp

    from envc.mutate import operators, proofs

    tree = ast.parse(DRAW_SOURCE)

    def run(t: ast.Module, fn: str) -> list[float]:
        scope: dict[str, object] = {"jnp": jnp}
        exec(compile(t, "<draw>", "exec"), scope)
        f = scope[fn]
        return [float(f(a, b, c)) for a in range(3) for b in range(3) for c in (-1, 1)]  # type: ignore[operator]

    flips = {s.function: s for s in operators.sites(tree, {}) if s.op == "compare" and s.before == ">"
             and "a > b" in ast.unparse(list(ast.walk(tree))[s.index])}  # fmt: skip
    assert "differ only where its sides are equal" in (proofs.equality_excluded(tree, flips["reward"]) or "")
    assert run(operators.apply(tree, flips["reward"]), "reward") == run(tree, "reward")
    assert proofs.equality_excluded(tree, flips["other"]) is None
    assert run(operators.apply(tree, flips["other"]), "other") != run(tree, "other")


SWING = """
name: swing
doc: "A pendulum-like toy: the angle moves by a sine; comparisons of computed and of stored values."
version: "1.0"
players: 1
params:
  limit: {type: f32, default: 3.0}
state:
  angle: {type: f32}
  speed: {type: f32}
actions:
  push:
    params: {d: 2}
    effect: |
      let kick = sin(angle) * 0.1
      let exact = speed * 0.5
      speed = speed + kick
      if wrap_needed(angle + kick):
        angle = angle + speed - 6.0
      else:
        angle = angle + speed
      if exact > 1.0:
        speed = 1.0
functions:
  wrap_needed:
    params: {x: f32}
    returns: bool
    body: "x > limit"
reward: "if cos(angle) > 0.5 then 1.0 else 0.0"
terminated: "speed >= limit"
observation:
  fields:
    obs: {type: f32, shape: [2]}
  body: |
    obs[0] = angle
    obs[1] = speed
"""


def test_flips_of_comparisons_that_read_a_transcendental_result_are_within_the_float_tolerance(
    tmp_path: Path,
) -> None:
    """A flip is excused where the compared value carries a `sin`/`cos` result through locals, parameters and
    returns (`x > limit` inside a function called with `angle + kick`, `kick` a local sine; `cos(angle) > 0.5`),
    not where it is exact (`exact > 1.0`) or a stored field the suite compares bit for bit (`speed >= limit`,
    read after the step wrote it from a sine)."""
    from envc.mutate.tolerance import TOLERANCE, within_tolerance

    path = tmp_path / "swing.yaml"
    path.write_text(SWING)
    spec = envc.load(str(path))
    lines = {n: i for i, ln in enumerate(SWING.splitlines(), 1) for n in ("x > limit", "cos(angle) > 0.5",
             "exact > 1.0", "speed >= limit") if n in ln}  # fmt: skip

    def why(line: int, before: str, after: str) -> str | None:
        return within_tolerance(spec, Span.point(str(path), line, 1), before, after)

    assert (why(lines["x > limit"], ">", ">=") or "").startswith(TOLERANCE)
    assert (why(lines["cos(angle) > 0.5"], ">", ">=") or "").startswith(TOLERANCE)
    assert why(lines["cos(angle) > 0.5"], "<", "<=") is not None  # the backend may write it as `0.5 < cos(angle)`
    assert why(lines["cos(angle) > 0.5"], ">", "<") is None  # not a flip at equality
    assert why(lines["exact > 1.0"], ">", ">=") is None
    assert why(lines["speed >= limit"], ">=", ">") is None


def test_float_tolerance_equivalents_are_counted_apart() -> None:
    """Left out of the kill rate like every equivalent, but not called proven, and the strict rate counts them."""
    from envc.mutate.run import Outcome, Report
    from envc.mutate.tolerance import TOLERANCE

    def outcome(status: str, reason: str | None = None) -> Outcome:
        return Outcome(0, "compare", "f", 1, "g", "c", "> -> >=", None, status=status, reason=reason)

    outs = [outcome("killed"), outcome("killed"), outcome("survived")]
    outs += [outcome("equivalent", f"{TOLERANCE} (...)"), outcome("equivalent", "proven: ...")]
    report = Report("s.yaml", "rust", 10, 0, outs, (1, 1), 0.0)
    assert (report.tolerance, report.proven) == (1, 1)
    assert report.kill_rate() == 2 / 3 and report.strict_kill_rate() == 2 / 4
    assert report.to_json()["equivalent_tolerance"] == 1


ZONE_SOURCE = '''
def clamp_index(i, n):
    return jnp.clip(i, 0, n - 1)


def push(state, v):
    n_1 = state.zone__count
    ok_1 = n_1 < 3
    row_1 = state.zone.at[jnp.where(ok_1, n_1, 3)].set(v, mode='drop')
    return row_1


def push_short(state, v):
    n_1 = state.zone__count
    ok_1 = n_1 < 2
    row_1 = state.zone.at[jnp.where(ok_1, n_1, 3)].set(v, mode='drop')
    return row_1


def pop(state, v):
    n_1 = state.zone__count
    ok_1 = n_1 > 0
    popped_1 = jnp.where(ok_1, state.zone[clamp_index(n_1 - 1, 3)], 0).astype(state.zone.dtype)
    row_1 = state.zone.at[jnp.where(ok_1, n_1 - 1, 3)].set(0, mode='drop')
    return popped_1, row_1


def pop_marked(state, v):
    n_1 = state.zone__count
    ok_1 = n_1 > 0
    popped_1 = jnp.where(ok_1, state.zone[clamp_index(n_1 - 1, 3)], 0).astype(state.zone.dtype)
    row_1 = state.zone.at[jnp.where(ok_1, n_1 - 1, 3)].set(v, mode='drop')
    return popped_1, row_1


def zone_remove(row, i):
    idx = jnp.arange(row.shape[0])
    shifted = jnp.where(idx + 1 < row.shape[0], row[jnp.clip(idx + 1, 0, row.shape[0] - 1)], 0)
    return jnp.where(idx < i, row, shifted).astype(row.dtype)


def remove(state, slot):
    row_1 = state.zone
    n_1 = state.zone__count
    ok_1 = (slot >= 0) & (slot < n_1)
    removed_1 = jnp.where(ok_1, row_1[slot], 0).astype(row_1.dtype)
    row_2 = jnp.where(ok_1, zone_remove(row_1, slot), row_1)
    return removed_1, row_2


def remove_wide(state, slot):
    row_1 = state.zone
    n_1 = state.zone__count
    ok_1 = (slot >= 0) & (slot < n_1)
    removed_1 = jnp.where(ok_1, row_1[slot], 0).astype(row_1.dtype)
    return removed_1
'''


def test_jax_zone_guards_proven_equivalent_and_equal_on_every_well_formed_zone() -> None:
    """A push's guard against a full zone (the write at `n >= 3` is out of range itself), a pop's guard against
    an empty one (an empty zone's slots hold 0) and `remove_at`'s guard for a slot known to be one of the zone's
    are proven redundant; each proven mutant gives the original's results on every well-formed zone of 3 slots
    (and every slot), and the look-alikes (a guard below the capacity, a pop that writes something other than
    0, a slot that may lie past the zone) are not proven and do differ."""
    import ast
    from types import SimpleNamespace

    import jax.numpy as jnp
    import numpy as np

    from envc.mutate import operators, proofs

    tree = ast.parse(ZONE_SOURCE)
    shapes = {"zone": (3,), "zone__count": ()}
    zones = [SimpleNamespace(zone=jnp.array([4, 5, 6][:n] + [0] * (3 - n), jnp.int8), zone__count=jnp.int32(n))
             for n in range(4)]  # fmt: skip

    ranges = {"remove": {"slot": (0, 3)}, "remove_wide": {"slot": (0, 4)}}

    def results(t: ast.Module, fn: str) -> list[list[np.ndarray]]:
        scope: dict[str, object] = {"jnp": jnp}
        exec(compile(t, "<zones>", "exec"), scope)
        f = scope[fn]
        args = [jnp.int32(i) for i in range(*ranges[fn]["slot"])] if fn in ranges else [jnp.int8(9)]
        outs = [f(z, a) for z in zones for a in args]  # type: ignore[operator]
        return [[np.asarray(x) for x in (o if isinstance(o, tuple) else (o,))] for o in outs]

    outcome = {}
    for s in operators.sites(tree, shapes):
        if s.op != "branch_drop" or "else-arm" not in s.after or s.function in ("clamp_index", "zone_remove"):
            continue
        why = (proofs.guarded_index(tree, s, shapes) or proofs.empty_pop(tree, s, shapes)
               or proofs.remove_in_range(tree, s, shapes, ranges))
        same = all(np.array_equal(a, b) for x, y in zip(results(tree, s.function),
                                                         results(operators.apply(tree, s), s.function))
                   for a, b in zip(x, y))  # fmt: skip
        outcome[(s.function, ZONE_SOURCE.split("\n")[s.line - 1].split(" = ")[0].strip())] = (why is not None, same)
    proven = {k for k, (p, _) in outcome.items() if p}
    assert proven == {("push", "row_1"), ("pop", "popped_1"), ("pop", "row_1"), ("remove", "removed_1"),
                      ("remove", "row_2")}, outcome
    assert all(same for p, same in outcome.values() if p), outcome
    assert outcome[("push_short", "row_1")] == (False, False)  # where n < 2 fails, n = 2 is in range
    assert outcome[("pop_marked", "row_1")] == (False, False)  # the 9 lands in slot 2 of an empty zone
    assert outcome[("remove_wide", "removed_1")] == (False, False)  # slot 3 clamps onto a full zone's slot 2



VALUES_SOURCE = """
def drop_index(i, n):
    return jnp.where((i >= 0) & (i < n), i, n)


def match_dir(d, a, b, c, e):
    return jnp.where((d == jnp.int8(0)), a, jnp.where((d == jnp.int8(1)), b, jnp.where((d == jnp.int8(2)), c, e)))


def keep(d):
    dc_1 = match_dir(d, jnp.int32(1), jnp.int32(0), jnp.int32(-1), jnp.int32(0))
    near_1 = ((jnp.int32(0) + dc_1) < jnp.int32(4))
    far_1 = ((jnp.int32(3) + dc_1) < jnp.int32(4))
    return jnp.stack([near_1, far_1])


def merge(state):
    n_1 = jnp.int32(0)
    n_2 = jnp.where(state.line[0] != 0, n_1 + jnp.int32(1), n_1)
    n_3 = jnp.where(state.line[1] != 0, n_2 + jnp.int32(1), n_2)
    m_1 = jnp.int32(0)
    out_1 = jnp.zeros((2,), jnp.int32)
    out_2 = out_1.at[drop_index(m_1, 2)].set(state.line[0], mode="drop")
    total_1 = state.line[0] + state.line[1]
    total_2 = jnp.where(((jnp.int32(1) + jnp.int32(1)) < n_3), total_1, state.line[0])
    total_3 = jnp.where(state.line[0] > jnp.int32(1), total_1, state.line[0])
    return out_2, total_2, total_3
"""


def test_jax_interval_proofs_hold_on_every_input() -> None:
    """Mutants the integer intervals of the generated code prove (a comparison every input decides alike, a
    write index that is one constant either way, a `where` whose test its range decides) give the original's
    results on every input; the look-alikes (a comparison one input tells apart, a constant that sets a shape)
    are not proven and do differ."""
    import ast
    from types import SimpleNamespace

    import jax.numpy as jnp
    import numpy as np

    from envc.mutate import operators, proofs, values

    tree = ast.parse(VALUES_SOURCE)
    module = values.Module(tree, {"line": ((-(2**31), 2**31 - 1), "int32")}, {"keep": {"d": (0, 4)}})
    lines = [SimpleNamespace(line=jnp.array([a, b], jnp.int32)) for a in range(-1, 3) for b in range(-1, 3)]
    inputs = {"keep": [(jnp.int8(d),) for d in range(4)], "merge": [(x,) for x in lines]}

    def results(t: ast.Module, fn: str) -> list[np.ndarray] | None:
        scope: dict[str, object] = {"jnp": jnp}
        exec(compile(t, "<values>", "exec"), scope)
        try:
            outs = [scope[fn](*a) for a in inputs[fn]]  # type: ignore[operator]
        except (TypeError, ValueError, IndexError):
            return None  # the changed shape does not fit: it differs
        return [np.asarray(x) for o in outs for x in (o if isinstance(o, tuple) else (o,))]

    lines = VALUES_SOURCE.split("\n")
    outcome: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
    for s in operators.sites(tree, {"line": (2,)}):
        if s.function not in inputs:
            continue
        why = proofs.decided_alike(tree, s, module) or proofs.same_arms(tree, s, module)
        a, b = results(tree, s.function), results(operators.apply(tree, s), s.function)
        same = a is not None and b is not None and all(np.array_equal(x, y) and x.shape == y.shape
                                                       for x, y in zip(a, b))  # fmt: skip
        outcome.setdefault((lines[s.line - 1].split(" = ")[0].strip(), s.describe()[:16]), []).append(
            (why is not None, same))
    assert all(same for found in outcome.values() for proven, same in found if proven), outcome
    assert outcome[("near_1", "< -> <=")] == [(True, True)]  # `0 + dc < 4`: dc is -1, 0 or 1
    assert outcome[("far_1", "< -> <=")] == [(False, False)]  # `3 + dc < 4`: dc = 1 tells them apart
    assert (True, True) in outcome[("out_2", "2 -> 3")]  # `drop_index(m_1, 2)`: m_1 is 0, an index either way
    assert outcome[("out_1", "2 -> 3")] == [(False, False)]  # `jnp.zeros((2,))`: a shape, not a value
    assert sorted(outcome[("total_2", "jnp.where(jnp.in")]) == [(False, False), (True, True)]  # `2 < n_3` is
    # false (n_3 <= 2): its then-arm dropped is proven, its else-arm dropped is not (and differs)
    assert outcome[("total_2", "< -> <=")] == [(False, False)]  # `2 <= n_3` holds where both are nonzero
    assert outcome[("total_3", "> -> >=")] == [(False, False)]  # the state's value is not bounded


def test_jax_interval_proofs_on_2048s_generated_code() -> None:
    """On 2048's generated `can_move`, `0 + dc < 4`, `1 + dc < 4` and `2 + dc < 4` hold for every direction
    (`dc` comes out of `match_dir` as -1, 0 or 1): their flips to `<=` are proven; `3 + dc < 4` is not."""
    from envc.mutate import proofs
    from envc.mutate.jax import JaxProgram

    prog = JaxProgram(envc.load(str(ROOT / "docs" / "examples" / "game_2048.yaml")))
    flips = [s for s in prog.sites if s.op == "compare" and s.describe() == "< -> <="
             and prog.code(s).startswith("keep_1 = ")]  # fmt: skip
    proven = [s for s in flips if proofs.decided_alike(prog.tree, s, prog.values)]
    assert len(flips) == 4 and len(proven) == 3, [prog.code(s)[:60] for s in proven]
