"""Loop control (docs/spec-language.md 8.3): `break`, `continue` and `while cond max N:`.

One spec uses them in every position the language allows (nested loops, `break` inside `if` inside `match`,
`continue` before a draw, `while` loops in a function, a procedure and a `for` loop, an Othello flip scan, an
angle wrap whose cap can be reached). The reference must follow Python's semantics (checked against plain Python
re-implementations), and JAX and Rust (one build each) must match the reference step by step. Plus: draws keep
their keys, the cap of a `while` loop is a spec bug only in the strict reference, the rewritten IR grows linearly,
and the work budget still sees a `while` loop's bound.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc import ir, rng

SPEC = """
name: loop_control
doc: break, continue and `while cond max N` in every position the language allows.
version: "1.0"
players: 1
types:
  Mode: {enum: [up, down, flat]}
constants:
  DR: {type: i32, shape: [8], value: [-1, -1, -1, 0, 0, 1, 1, 1]}
  DC: {type: i32, shape: [8], value: [-1, 0, 1, -1, 1, -1, 0, 1]}
state:
  board: {type: i8, shape: [8, 8]}
  a: {type: i32, shape: [8]}
  out: {type: i32, shape: [8]}
  r: {type: i32, shape: [6]}
  mode: Mode
  theta: f32
  total: i32
  pairs: i32
  hits: i32
  found_at: i32
  n: i32
  flips: i32
functions:
  first_negative:
    doc: "Position of the first negative entry of a, or -1"
    params: {}
    returns: i32
    body: |
      let at = -1
      for i in range(8):
        if a[i] < 0:
          at = i
          break
      return at
  halvings:
    doc: "How often v halves evenly (a while loop in a function)"
    params: {v: i32}
    returns: i32
    body: |
      let k = 0
      let x = v
      while x > 1 and x % 2 == 0 max 31:
        x = x // 2
        k += 1
      return k
procedures:
  count_run:
    doc: "Sum the entries of a up to the first one above the limit, skipping negative ones"
    params: {limit: i32}
    body: |
      let k = 0
      let s = 0
      while k < 8 max 8:
        k += 1
        if a[k - 1] < 0:
          continue
        if a[k - 1] > limit:
          break
        s += a[k - 1]
      n = s
actions:
  place:
    doc: "Othello: place at (row, col) and flip every line of opponent stones (2) closed by one of ours (1)"
    params: {row: 8, col: 8}
    effect: |
      for d in range(8):
        let dr = DR[d]
        let dc = DC[d]
        let y = row + dr
        let x = col + dc
        let steps = 0
        while y >= 0 and y < 8 and x >= 0 and x < 8 and board[y, x] == 2 max 8:
          y += dr
          x += dc
          steps += 1
        if steps == 0 or y < 0 or y >= 8 or x < 0 or x >= 8:
          continue
        if board[y, x] != 1:
          continue
        for k in range(1, 8):
          if k > steps:
            break
          board[row + k * dr, col + k * dc] = 1
          flips += 1
      board[row, col] = 1
  wrap:
    doc: "Wrap theta into [-pi, pi]"
    effect: |
      while theta > pi max 64:
        theta -= 2.0 * pi
      while theta < -pi max 64:
        theta += 2 * pi
  nested:
    doc: "Nested loops; break inside if inside match; continue in both loops"
    effect: |
      for i in range(8):
        if a[i] == 0:
          continue
        for j in range(8):
          if j > i:
            break
          match mode:
            case up:
              if a[j] > a[i]:
                break
              pairs += 1
            case down:
              if a[j] < a[i]:
                continue
              pairs += 2
            case _:
              pass
          out[i] += 1
        if total > 40:
          break
        let before = total
        total += a[i]
        if total < before:
          break
        out[i] -= 1
  draws:
    doc: "continue before a draw, a draw that decides a break, a while loop whose condition draws"
    effect: |
      for i in range(6):
        if i % 3 == 1:
          continue
        r[i] = randint(0, 1000)
        if coin():
          hits += 1
        if hits >= 5:
          break
      while coin() max 3:
        hits += 10
  scan:
    doc: "A function and a procedure with loops that break; a while loop inside a for loop"
    effect: |
      found_at = first_negative()
      pairs = halvings(a[0] + 64)
      count_run(6)
      for i in range(8):
        while a[i] > 0 and a[i] % 2 == 0 max 4:
          a[i] = a[i] // 2
          if a[i] == 1:
            break
observation:
  fields: {obs: i32}
  body: "obs = total"
"""

WRAP, NESTED, DRAWS, SCAN = 64, 65, 66, 67  # 0..63: place(row, col)
F32 = np.float32
PI = F32(3.1415927)


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("loops") / "loop_control.yaml"
    path.write_text(SPEC)
    return path


@pytest.fixture(scope="module")
def spec(spec_path: Path) -> ir.SpecIR:
    return envc.load(str(spec_path))


@pytest.fixture(scope="module")
def ref(spec: ir.SpecIR) -> Any:
    return envc.build(spec)


@pytest.fixture(scope="module")
def lax(spec: ir.SpecIR) -> Any:
    return envc.build(spec, strict=False)  # the fallbacks: a `while` loop stops at its cap


@pytest.fixture(scope="module")
def compiled(spec: ir.SpecIR) -> dict[str, Any]:
    """The JAX and Rust builds (one each for the whole module)."""
    return {"jax": envc.build(spec, backend="jax"), "rust": envc.build(spec, backend="rust")}


def random_state(env: Any, rs: np.random.Generator, caps: bool = False) -> dict[str, np.ndarray]:
    """A state to inject: an Othello position, small numbers; with `caps`, values that reach `while` caps."""
    d = env.state_to_dict(env.init(rng.key_from_seed(0)))
    d["board"] = rs.choice([0, 1, 2], size=(8, 8), p=[0.3, 0.2, 0.5]).astype(np.int8)
    d["a"] = rs.integers(-3, 12, size=8).astype(np.int32)
    d["mode"] = np.asarray(rs.integers(0, 3), dtype=np.int8)
    d["theta"] = np.asarray(rs.normal(0.0, 40.0), dtype=np.float32)
    for k in ("total", "pairs", "hits", "found_at", "n", "flips"):
        d[k] = np.asarray(rs.integers(-5, 30), dtype=np.int32)
    if caps:
        d["theta"] = np.asarray(rs.choice([1000.0, -1000.0]), dtype=np.float32)
        d["a"][rs.integers(0, 8)] = 64  # halved 4 times, still even
    return d


def an_action(rs: np.random.Generator) -> int:
    kind = int(rs.integers(0, 5))
    return int(rs.integers(0, 64)) if kind == 0 else 63 + kind


def same(want: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> list[str]:
    return [k for k in want if not np.array_equal(np.asarray(want[k]), np.asarray(got[k]))]


# ---- Python's semantics ------------------------------------------------------------------------------------
def py_place(d: dict[str, np.ndarray], row: int, col: int) -> None:
    board, flips = d["board"], int(d["flips"])
    dr_, dc_ = [-1, -1, -1, 0, 0, 1, 1, 1], [-1, 0, 1, -1, 1, -1, 0, 1]
    for dr, dc in zip(dr_, dc_):
        y, x, steps = row + dr, col + dc, 0
        while 0 <= y < 8 and 0 <= x < 8 and board[y, x] == 2:
            y, x, steps = y + dr, x + dc, steps + 1
        if steps == 0 or not (0 <= y < 8 and 0 <= x < 8) or board[y, x] != 1:
            continue
        for k in range(1, steps + 1):
            board[row + k * dr, col + k * dc] = 1
            flips += 1
    board[row, col] = 1
    d["flips"] = np.asarray(flips, dtype=np.int32)


def py_wrap(theta: np.float32, cap: int = 64) -> np.float32:
    for _ in range(cap):
        if not theta > PI:
            break
        theta = F32(theta - F32(F32(2.0) * PI))
    for _ in range(cap):
        if not theta < -PI:
            break
        theta = F32(theta + F32(F32(2.0) * PI))
    return theta


def py_nested(d: dict[str, np.ndarray]) -> None:
    a, out, mode = d["a"], d["out"], int(d["mode"])
    total, pairs = int(d["total"]), int(d["pairs"])
    for i in range(8):
        if a[i] == 0:
            continue
        for j in range(8):
            if j > i:
                break
            if mode == 0:
                if a[j] > a[i]:
                    break
                pairs += 1
            elif mode == 1:
                if a[j] < a[i]:
                    continue
                pairs += 2
            out[i] += 1
        if total > 40:
            break
        before = total
        total += int(a[i])
        if total < before:
            break
        out[i] -= 1
    d["total"], d["pairs"] = np.asarray(total, dtype=np.int32), np.asarray(pairs, dtype=np.int32)


def py_scan(d: dict[str, np.ndarray]) -> None:
    a = d["a"]
    d["found_at"] = np.asarray(next((i for i in range(8) if a[i] < 0), -1), dtype=np.int32)
    x, k = int(a[0]) + 64, 0
    while x > 1 and x % 2 == 0:
        x, k = x // 2, k + 1
    d["pairs"] = np.asarray(k, dtype=np.int32)
    s = 0
    for v in a:
        if v < 0:
            continue
        if v > 6:
            break
        s += int(v)
    d["n"] = np.asarray(s, dtype=np.int32)
    for i in range(8):
        while a[i] > 0 and a[i] % 2 == 0:
            a[i] //= 2
            if a[i] == 1:
                break


def test_reference_follows_python_semantics(ref: Any) -> None:
    rs = np.random.default_rng(7)
    for _ in range(40):
        base = random_state(ref, rs)
        for action in (int(rs.integers(0, 64)), WRAP, NESTED, SCAN):
            want = {k: v.copy() for k, v in base.items()}
            if action < 64:
                py_place(want, action // 8, action % 8)
            elif action == WRAP:
                want["theta"] = np.asarray(py_wrap(F32(want["theta"])), dtype=np.float32)
            elif action == NESTED:
                py_nested(want)
            else:
                py_scan(want)
            got = ref.state_to_dict(ref.step(ref.state_from_dict(base), action, rng.key_from_seed(1)))
            fields = ["board", "a", "out", "theta", "total", "pairs", "found_at", "n", "flips"]
            assert [k for k in fields if not np.array_equal(got[k], want[k])] == [], (action, base)


def test_jax_and_rust_match_the_reference_step_by_step(compiled: dict[str, Any], lax: Any) -> None:
    envs = compiled
    rs = np.random.default_rng(3)
    kinds: set[int] = set()
    for episode in range(12):
        base = random_state(lax, rs, caps=episode % 3 == 2)
        states = {name: env.state_from_dict(base) for name, env in envs.items()}
        ref_state = lax.state_from_dict(base)
        for t in range(8):
            action = an_action(rs) if t else [WRAP, SCAN][episode % 2]
            kinds.add(action if action >= WRAP else 0)
            key = rng.key_from_seed(100 * episode + t)
            ref_state = lax.step(ref_state, action, key)
            want = lax.state_to_dict(ref_state)
            for name, env in envs.items():
                states[name] = env.step(states[name], action, key)
                diff = same(want, env.state_to_dict(states[name]))
                assert diff == [], f"{name}, episode {episode}, step {t}, action {action}: {diff} differ"
    assert kinds == {0, WRAP, NESTED, DRAWS, SCAN}


def test_while_cap_stops_everywhere_and_is_a_spec_bug_in_the_strict_reference(
    compiled: dict[str, Any], ref: Any, lax: Any
) -> None:
    base = random_state(lax, np.random.default_rng(0))
    base["theta"] = np.asarray(1000.0, dtype=np.float32)  # 159 turns of 2 pi: more than `max 64`
    want = py_wrap(F32(1000.0))
    assert want > PI  # the cap was reached
    envs = {"reference": lax, **compiled}
    for name, env in envs.items():
        got = env.state_to_dict(env.step(env.state_from_dict(base), WRAP, rng.key_from_seed(0)))
        assert np.asarray(got["theta"]).item() == want, name
    with pytest.raises(envc.SpecRuntimeError) as err:
        ref.step(ref.state_from_dict(base), WRAP, rng.key_from_seed(0))
    assert "`while` condition still true after 64 iterations (`max 64`)" in str(err.value)
    assert err.value.span.line == SPEC.split("\n").index("      while theta > pi max 64:") + 1


def test_a_while_condition_that_draws_is_checked_as_iteration_n(spec: ir.SpecIR, ref: Any, lax: Any) -> None:
    """`while coin() max 3`: the strict reference raises exactly when all 3 iterations ran and a 4th coin, keyed as
    iteration 3 of the loop (13.2), comes up true; otherwise it agrees with the fallback."""
    check = next(s for s in spec.actions[3].effect if isinstance(s, ir.CheckS))
    assert check.loop_id is not None and check.iteration == 3
    assert isinstance(check.cond, ir.Binary) and isinstance(check.cond.b, ir.Random)
    loop_id, site = check.loop_id, check.cond.b.site
    base = random_state(lax, np.random.default_rng(1))
    base["hits"] = np.asarray(0, dtype=np.int32)
    raised = capped = 0
    for seed in range(300):
        key = rng.key_from_seed(seed)
        loose = lax.state_to_dict(lax.step(lax.state_from_dict(base), DRAWS, key))
        full = int(loose["hits"]) >= 30  # the while loop ran all 3 iterations (the for loop adds at most 4)
        fourth = rng.bernoulli_scalar(rng.fold_in(rng.fold_in(rng.fold_in(key, loop_id), 3), site), 0.5)
        capped += full
        try:
            strict = ref.state_to_dict(ref.step(ref.state_from_dict(base), DRAWS, key))
        except envc.SpecRuntimeError as e:
            assert full and fourth and "after 3 iterations" in str(e), seed
            raised += 1
            continue
        assert not (full and fourth), seed
        assert same(loose, strict) == []
    assert 0 < raised < capped  # some capped runs go on (the 4th coin is false), others are spec bugs


TWINS = """
name: twin
players: 1
state:
  r: {type: i32, shape: [6]}
actions:
  go:
    effect: |
      BODY
observation:
  fields: {obs: i32}
  body: "obs = r[0]"
"""
WITH_CONTROL = """for i in range(6):
        if i % 3 == 1:
          continue
        r[i] = randint(0, 1000)
        if r[i] > 700:
          break"""
WITHOUT = """let stopped = false
      for i in range(6):
        if not stopped and i % 3 != 1:
          r[i] = randint(0, 1000)
          if r[i] > 700:
            stopped = true"""


def test_draws_keep_their_keys(tmp_path: Path) -> None:
    """`continue` and `break` skip draws but never move them: a loop written with them draws the same numbers as
    the same loop written with an explicit flag."""
    envs = []
    for name, body in (("control", WITH_CONTROL), ("flag", WITHOUT)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(TWINS.replace("BODY", body))
        envs.append(envc.build(envc.load(str(path))))
    broke = 0
    for seed in range(40):
        got = [e.state_to_dict(e.step(e.init(rng.key_from_seed(0)), 0, rng.key_from_seed(seed)))["r"] for e in envs]
        assert np.array_equal(got[0], got[1]), seed
        broke += bool((got[0] > 700).any() and got[0][-1] == 0)
    assert broke > 0  # some runs did break before the last iteration


def _ir_size(node: object) -> tuple[int, int]:
    """(IR nodes, nesting depth of statements) of a node or tuple of nodes."""
    if isinstance(node, tuple):
        parts = [_ir_size(x) for x in node]
        return sum(p[0] for p in parts), max((p[1] for p in parts), default=0)
    if not isinstance(node, (ir._Expr, ir._Stmt, ir.Target)):
        return 0, 0
    n, depth = 1, 0
    for k in type(node).model_fields:
        if k not in ("ty", "span"):
            m, d = _ir_size(getattr(node, k))
            n, depth = n + m, max(depth, d)
    return n, depth + isinstance(node, ir._Stmt)


def _loop_spec(n: int) -> str:
    """A loop body with n `if ...: continue` in a row, then ifs nested n deep, each with a `break` in it."""
    lines = ["for i in range(8):"]
    for k in range(n):
        lines += [f"  if a[i] == {k}:", "    continue", f"  let v{k} = total + {k}", f"  total += v{k}"]
    ind = "  "
    for k in range(n):
        lines += [f"{ind}if a[i] > {k}:", f"{ind}  if total > {100 + k}:", f"{ind}    break", f"{ind}  total -= 1"]
        ind += "  "
    body = "\n".join("      " + ln for ln in lines)
    return f"""
name: big
players: 1
state:
  a: {{type: i32, shape: [8]}}
  total: i32
actions:
  go:
    effect: |
{body}
observation:
  fields: {{obs: i32}}
  body: "obs = total"
"""


def test_rewritten_ir_grows_linearly(tmp_path: Path) -> None:
    sizes = {}
    for n in (5, 20):
        path = tmp_path / f"big{n}.yaml"
        path.write_text(_loop_spec(n))
        sizes[n] = _ir_size(envc.load(str(path)).actions[0].effect)
    (n5, d5), (n20, d20) = sizes[5], sizes[20]
    assert n20 <= 4 * n5 + 20, sizes  # linear in the number of statements (plus the loop's flags)
    # nesting: each source level that may break is followed by a guard for the rest of its block, so the IR nests
    # at most twice as deep as the source (the loop, n ifs and the `break`'s if), plus the iteration guard
    assert d20 <= 2 * (1 + 20 + 1) + 1 and d20 - d5 == 2 * 15, sizes


def test_work_budget_counts_a_while_loops_bound(tmp_path: Path) -> None:
    path = tmp_path / "budget.yaml"
    text = SPEC.replace("while theta > pi max 64:", "while theta > pi max 1000000000:")
    path.write_text(text)
    _, diags = envc.lint(str(path))
    errors = [(d.code, d.span.line, d.message) for d in diags if d.severity.value == "error"]
    line = text.split("\n").index("      while theta > pi max 1000000000:") + 1
    assert errors == [
        ("E058", line, "this loop runs 1,000,000,000 times; a loop or generator runs at most 16,777,216 times (2^24)")
    ]


def test_break_and_continue_reach_only_the_innermost_loop(tmp_path: Path) -> None:
    """A `continue` of the inner loop does not skip the rest of the outer loop's iteration; a `while` inside a
    `for` loop breaks only itself."""
    text = TWINS.replace("r: {type: i32, shape: [6]}", "r: {type: i32, shape: [6]}\n  c: i32").replace(
        "BODY",
        """for i in range(3):
        for j in range(3):
          if j == 1:
            continue
          c += 1
        let w = 0
        while true max 5:
          w += 1
          if w == 2:
            break
        r[i] = w
        c += 100""",
    )
    path = tmp_path / "inner.yaml"
    path.write_text(text)
    env = envc.build(envc.load(str(path)))
    d = env.state_to_dict(env.step(env.init(rng.key_from_seed(0)), 0, rng.key_from_seed(0)))
    assert int(d["c"]) == 3 * (2 + 100) and list(d["r"][:3]) == [2, 2, 2]
