"""Spec names and spec text in the Rust backend (`envc/lower_rust/names.py`): free text never leaves its comment
or string literal, and names that are keywords, prelude items or names of the generated code build and step
exactly like the reference. Two cargo builds (a few seconds each once the dependencies are compiled)."""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envc
from envc import ir, rng
from envc.interpret import ReferenceEnv
from envc.lower_rust import lanes, render
from envc.lower_rust.emit import Analysis
from envc.lower_rust.names import (
    KEYWORDS,
    VALUE_RESERVED,
    Names,
    Namespace,
    comment_lines,
    py_doc,
    py_literal,
    rust_str,
    toml_value,
)
from envc.verify import verify

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What a Rust identifier, an editor or Python may take for the end of a line.
BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
# Free text that tries to leave a comment, docstring or string literal; each copy that ran would create MARK.
RUN = 'std::process::Command::new("touch").arg("MARK").status().ok();'
TEXTS = (
    f"a\n{RUN}",
    f"b\r\n{RUN}",
    f"c\r{RUN} */ fn evil() {{}} /*",
    f'd\u2028"); {RUN} ("',
    "e\u2029\u0085\x0b\x0c \u202e ''' \"\"\" \\",
    '\\", __import__("os").system("touch MARK"), "\\',
    "{{ 7 * 7 }} `touch MARK` $(touch MARK) \t é ✓ \U0001f600",
    f"A Markdown code block, a doctest in a doc comment:\n```\n{RUN}\n```\n\n    {RUN}",
)


def q(text: str, mark: Path) -> str:
    """A YAML double-quoted scalar of `text` (every character outside printable ASCII escaped), its MARK the
    marker file."""
    out = []
    for ch in text.replace("MARK", str(mark)):
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


# ---- the text escapes -------------------------------------------------------------------------------------


def rust_unescape(lit: str) -> str:
    """The value of a Rust string literal made of `\\"`, `\\\\`, `\\u{..}` and printable ASCII."""
    assert lit[0] == lit[-1] == '"'
    out, i, body = [], 0, lit[1:-1]
    while i < len(body):
        if body[i] != "\\":
            assert body[i] != '"'
            out.append(body[i])
            i += 1
        elif body[i + 1] == "u":
            end = body.index("}", i)
            out.append(chr(int(body[i + 3 : end], 16)))
            i = end + 1
        else:
            assert body[i + 1] in '"\\'
            out.append(body[i + 1])
            i += 2
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_text_escapes_round_trip_and_stay_printable_ascii(text: str) -> None:
    lit = rust_str(text)
    assert all(" " <= ch <= "~" for ch in lit)
    assert rust_unescape(lit) == text
    assert ast.literal_eval(py_literal(text)) == text
    assert py_literal(text).isascii()
    assert ast.literal_eval(f'"""{py_doc(text)}"""') == text


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_toml_strings_round_trip(text: str) -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    assert tomllib.loads(f"x = {toml_value(text)}")["x"] == text
    assert tomllib.loads(f"x = {toml_value([text, 'y'])}")["x"] == [text, "y"]


@settings(max_examples=300, deadline=None)
@given(st.text(), st.sampled_from(["// ", "/// ", "//! ", "# "]))
def test_comment_lines_never_end_early(text: str, prefix: str) -> None:
    for line in comment_lines(text, prefix):
        assert line.startswith(prefix.rstrip())
        assert not any(ch in BREAKS for ch in line), line
        assert not any(unicodedata.category(ch)[0] == "C" for ch in line), line
        assert "*/" not in line and "/*" not in line


def test_comment_lines_keep_plain_text_and_show_the_rest() -> None:
    assert comment_lines("  two\nlines, `code` and é ✓  ", "/// ") == ["/// two", "/// lines, `code` and é ✓"]
    assert comment_lines("a\r\nb\rc\u2028d */ e /* \u202e\x00", "// ") == [
        "// a",
        "// b",
        "// c",
        "// d * / e / * \\u{202e}\\u{0}",
    ]


# ---- the identifiers --------------------------------------------------------------------------------------

WORDS = sorted(
    {*KEYWORDS, *VALUE_RESERVED, "from", "assert", "with", "lambda", "del", "global", "x", "X", "u_x", "_x", "a.b"}
    | {"a_b", "a__b", "n1", "effect_push", "legal_push", "push", "x_", "x__", "Vec_", "vec", "fn_", "fn__", "_"}
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["local", "fn", "const", "enum"]), st.sampled_from(WORDS)), unique=True, max_size=40
    )
)
def test_value_identifiers_are_free_distinct_and_keep_the_spelling_they_can(entries: list[tuple[str, str]]) -> None:
    style = {"local": "keep", "fn": "keep", "const": "upper", "enum": "camel"}
    ns = Namespace(VALUE_RESERVED, no_underscore=True)
    ns.allocate((k, n, style[k]) for k, n in entries)
    ids = [ns.get(k, n, style[k]) for k, n in entries]
    assert len(set(ids)) == len(ids)
    claimed: set[str] = set()
    for (k, n), ident in zip(entries, ids):
        # never `_...`: `_` + ident marks an unused binding, `__` + word + number is a generated temporary
        assert IDENT.fullmatch(ident) and ident not in VALUE_RESERVED and not ident.startswith("_"), (n, ident)
        base = {"keep": n, "upper": n.upper(), "camel": n[:1].upper() + n[1:]}[style[k]]
        natural = IDENT.fullmatch(n) is not None and not base.startswith("_") and base not in VALUE_RESERVED
        if natural and base not in claimed:
            assert ident == base, (n, ident)
        claimed |= {base} if natural else set()


def test_storage_parts_and_case_folds_get_distinct_identifiers() -> None:
    spec = envc.load(str(Path(__file__).resolve().parent.parent / "specs" / "tcg.yaml"))
    names = Names(spec)
    fields = {names.field(f.name) for f in spec.fields} | {names.field("current_player")}
    assert len(fields) == len(spec.fields)
    assert names.field("deck.count") == "deck__count" and names.const("cards.hp") == "CARDS__HP"
    ns = Namespace(VALUE_RESERVED, no_underscore=True)
    ns.allocate([("const", "a", "upper"), ("local", "A", "keep"), ("local", "_A", "keep"), ("fn", "u_A", "keep")])
    assert [ns.get("const", "a"), ns.get("local", "A"), ns.get("local", "_A"), ns.get("fn", "u_A")] == [
        "A",
        "A_",
        "u_A_",
        "u_A",
    ]


# ---- built specs ------------------------------------------------------------------------------------------


def code_outside_literals(path: Path) -> str:
    """The text of a generated .rs or .py file without its comments and string literals."""
    text = path.read_text()
    if path.suffix == ".py":
        toks = tokenize.generate_tokens(io.StringIO(text).readline)
        return " ".join(t.string for t in toks if t.type not in (tokenize.STRING, tokenize.COMMENT))
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def assert_nothing_escaped(files: dict[str, str], root: Path) -> None:
    """No payload of TEXTS is code in any generated file, and the Python files compile."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        if p.suffix in (".rs", ".py"):
            code = code_outside_literals(p)
            assert "Command" not in code and "__import__" not in code and "evil" not in code, rel
        if p.suffix == ".rs":  # nor in a doc comment, where `cargo test` would run it as a doctest
            docs = [line for line in text.splitlines() if line.lstrip().startswith(("///", "//!"))]
            assert not any("Command" in line for line in docs), rel
        if p.suffix == ".py":
            compile(text, rel, "exec")
        if p.suffix == ".toml" and sys.version_info >= (3, 11):
            import tomllib

            tomllib.loads(text)


def rollout(spec: ir.SpecIR, env: Any, episodes: int, seed: int, params: dict[str, Any] | None = None) -> int:
    """Matched-key random episodes on the reference and `env`: the same states and the same violated
    invariants (by name) after init and every step; returns how many invariant violations were compared."""
    ref = ReferenceEnv(spec, params=params)
    gen = np.random.default_rng(seed)
    key = rng.key_from_seed(seed)
    seen = 0
    for _ in range(episodes):
        key, k = rng.split(key)
        a, b = ref.init(k), env.init(k)
        for _ in range(50):
            ra, rb = ref.state_to_dict(a), env.state_to_dict(b)
            assert ra.keys() == rb.keys()
            for name in ra:
                assert np.array_equal(np.asarray(ra[name]), np.asarray(rb[name])), name
            assert ref.invariants(a) == env.invariants(b)
            seen += len(env.invariants(b))
            if a.terminated or a.truncated:
                break
            key, k = rng.split(key)
            act = int(gen.choice(np.flatnonzero(np.asarray(a.legal_action_mask))))
            a, b = ref.step(a, act, k), env.step(b, act, k)
    return seen


LANE_SPEC = """
name: lanes
doc: {t7}
version: "1.0"
players: 1
params:
  from: {{type: f32, default: 0.5, doc: {t1}}}
  Self: {{type: f32, default: 0.25}}
state:
  loop: {{type: f32, doc: {t2}}}
  move: f32
  ln: f32
  l: f32
  LANES: f32
  Some: f32
  apply_lanes: i32
actions:
  yield:
    doc: {t3}
    params: {{dyn: 2}}
    effect: |
      let ok = f32(dyn) * from
      let None_ = sin(ok)
      loop = loop + ok + None_
      move = move * 0.5 + l + Self
      ln = cos(move)
      apply_lanes = apply_lanes + 1
rules:
  - name: {t4}
    doc: {t5}
    body: |
      LANES = LANES + 1.0
      l = l + 0.125
  - name: {t6}
    when: "loop > 3.0"
    body: "Some = Some - 1.0"
reward: "loop * 0.1"
terminated: "apply_lanes >= 6"
observation:
  fields:
    as: f32
    from_: f32
  body: |
    as = loop
    from_ = LANES
invariants:
  {t0}: "loop < 0.0"
  {t1}: "apply_lanes >= 0"
  {t2}: "LANES < 0.0"
  {t3}: "apply_lanes < 3"
  {t4}: "ln > 2.0"
  {t5}: "Some > 0.0"
  {t6}: "move < -100.0"
"""


def test_invariant_and_rule_names_cannot_run_code(tmp_path: Path, rust_cache: Path, monkeypatch: Any) -> None:
    """The issue's repro: an invariant named "a" newline `Command::new("touch")...` ran when `invariants()`
    was called. The spec also runs its effect and rules in the lane kernel with every state packed."""
    mark = tmp_path / "P"
    path = tmp_path / "lanes.yaml"
    path.write_text(LANE_SPEC.format(**{f"t{i}": q(t, mark) for i, t in enumerate(TEXTS)}))
    spec, diags = envc.lint(str(path))
    assert spec is not None, [d.format() for d in diags]
    plan = lanes.plan(spec, Analysis(spec))
    assert plan is not None and lanes.packed(spec, plan)
    assert_nothing_escaped(render(spec, path.read_text(), "lanes_rust"), tmp_path / "out")
    monkeypatch.setenv("ENVC_CACHE", str(rust_cache))
    env = envc.build(spec, backend="rust")
    ref, key = ReferenceEnv(spec), rng.key_from_seed(0)
    violated = env.invariants(env.init(key))  # names with line breaks, quotes, `*/`, U+2028, an emoji ...
    assert violated == ref.invariants(ref.init(key)) and len(violated) == 5
    assert rollout(spec, env, episodes=3, seed=1) > 0  # violated invariants came back under their exact names
    checks = verify(spec, env, levels=("L2", "L3"), episodes=5, states=30)
    assert all(c.passed for c in checks), [c.failures for c in checks if not c.passed]
    assert env.vector_env(4, seed=0).step(np.zeros(4, np.int64))[1].shape == (4,)
    assert not mark.exists()


KEYWORD_SPEC = """
name: keywords
doc: {t7}
version: "1.0"
players: 2
params:
  from: {{type: i32, default: 3, doc: {t1}}}
  crate: {{type: i32, default: 4, static: true, doc: {t2}}}
  as: {{type: f32, default: 0.5}}
  with: {{type: bool, default: true}}
types:
  vec: {{enum: [Ok, Err, a, A, Self, async], doc: {t3}}}
  spec: {{enum: [finally, none, NONE]}}
  KIND: {{enum: [x, y]}}
  Rec:
    record:
      move: i16
      box: {{type: i8, shape: [2]}}
constants:
  consts: {{type: i32, shape: [3], value: [1, 2, 3], doc: {t4}}}
  lanes: {{type: i8, shape: [2], value: [5, 6]}}
  num_actions: {{type: i32, shape: [2], value: [7, 8]}}
  Option: {{type: spec, shape: [2], value: [none, NONE]}}
  kind: {{type: KIND, shape: [2], value: [y, x]}}
tables:
  except:
    doc: {t5}
    columns: {{name: str, dyn: i32, where: vec}}
    rows:
      - {{name: {t6}, dyn: 1, where: Err}}
      - {{name: plain, dyn: 2, where: Self}}
state:
  loop: {{type: i32, doc: {t7}}}
  Self: i32
  new: i32
  unsafe: {{type: i32, shape: [4]}}
  pub: vec
  global: spec
  rec: {{type: Rec, shape: [2]}}
  yield: {{zone: i8, capacity: 5}}
  yield_count: i32
  apply_action: i32
  observe: f32
  ops: i32
  deck: {{zone: vec, capacity: 3, per_player: true}}
  kinds: KIND
actions:
  push:
    doc: {t0}
    params: {{dyn: 3}}
    legal: "legal_push(dyn) and loop < 1000"
    effect: |
      let Some = dyn + from
      let Ok = Some * 2
      let CONSTS = consts[dyn] + Ok
      let u_x = 1
      let _x = u_x + 1
      loop = loop + is_legal(CONSTS) % 7 + _x
      reset(dyn)
      for t1 in range(2):
        Self = Self + 1
      new = new + count(true for acc1 in range(3)) + sum(acc2 for acc2 in range(3))
      pub = vec.Self
      global = Option[loop % 2]
      observe = observe + as
      current_player = 1 - current_player
  move:
    params: {{try: 2, Ok: {{type: vec}}}}
    effect: |
      unsafe[effect_box(try)] = 1
      rec[try].move = rec[try].move + i16(Ok)
      rec[try].box[1] = lanes[try]
      current_player = 1 - current_player
  box:
    effect: |
      unsafe[randint(0, 4)] = 2
      current_player = 1 - current_player
  effect_push:
    effect: |
      let st = except.dyn[loop % 2]
      let ops_ = st + num_actions[1]
      ops = ops_
      if not contains(deck[current_player], vec.a):
        push(deck[current_player], vec.a)
      let drop = pop(deck[current_player])
      pub = drop
      if except.where[ops % 2] == vec.Err and with:
        global = spec.finally
      current_player = 1 - current_player
  mask:
    legal: "new >= 0"
    effect: |
      let mask = 1
      new = new + mask
      kinds = kind[new % 2]
      apply_rules(3)
      current_player = 1 - current_player
functions:
  legal_push:
    params: {{gen: i32}}
    returns: bool
    body: "gen < crate"
  is_legal:
    params: {{mask: i32}}
    returns: i32
    body: "mask * from + 1"
  effect_box:
    params: {{prm: i32}}
    returns: i32
    body: "prm + 1"
  Err:
    params: {{l: i32}}
    returns: i32
    body: |
      let i64 = l + 1
      return i64
procedures:
  reset:
    params: {{ln: i32}}
    body: |
      if yield.count < 5:
        push(yield, i8(ln))
      yield_count = yield.count + Err(ln)
  apply_rules:
    params: {{id: i32}}
    body: |
      let key_ = randint(0, 3)
      apply_action = apply_action + id + key_
rules:
  - name: {t0}
    doc: {t1}
    body: "loop = loop + 0"
  - name: {t2}
    when: "loop > 100000"
    body: "loop = 0"
reward: "if p == 0 then f32(loop % 3) else 0.0"
terminated: "step_count >= 8"
observation:
  fields:
    assert: {{type: i32, shape: [2]}}
    with_: f32
    raw: i32
  body: |
    assert[0] = loop
    assert[is_legal(p) % 2] = yield.count
    with_ = observe
    raw = i32(pub) + i32(global)
invariants:
  {t0}: "loop >= 0"
  {t1}: "yield.count <= 5"
  {t2}: "apply_action >= 0"
"""


def test_keywords_and_generated_names_everywhere_build_and_match_the_reference(
    tmp_path: Path, rust_cache: Path, monkeypatch: Any
) -> None:
    """Rust and Python keywords, prelude items and names of the generated code as params, enums and members,
    record parts, constants, table columns, fields, zones, observation parts, action kinds and parameters,
    functions, procedures and their parameters, and locals (`let Some`, `let st`, `let drop`, a local that
    upper-cases to a constant), an enum `KIND` beside a constant `kind`; free text with line breaks, quotes and
    `*/` everywhere text goes; and a call (`unsafe[effect_box(try)] = 1`) and a draw (`unsafe[randint(0, 4)] =
    2`) in a written index."""
    mark = tmp_path / "P"
    path = tmp_path / "keywords.yaml"
    path.write_text(KEYWORD_SPEC.format(**{f"t{i}": q(t, mark) for i, t in enumerate(TEXTS)}))
    spec, diags = envc.lint(str(path))
    assert spec is not None, [d.format() for d in diags]
    assert lanes.plan(spec, Analysis(spec)) is None  # the scalar path (the lane spec above covers the other)
    files = render(spec, path.read_text(), "keywords_rust")
    assert_nothing_escaped(files, tmp_path / "out")
    monkeypatch.setenv("ENVC_CACHE", str(rust_cache))
    checks = verify(spec, envc.build(spec, backend="rust"), episodes=10, states=60)
    assert all(c.passed for c in checks), [c.failures for c in checks if not c.passed]
    assert next(c for c in checks if c.level == "L3").cases == 10  # lockstep: one case per episode
    params = {"from": 5, "as": 0.25, "with": False}  # runtime params named `from`, `as` and `with`
    rollout(spec, envc.build(spec, backend="rust", params=params), episodes=5, seed=2, params=params)
    assert not mark.exists()


def test_calls_and_draws_in_written_indices_reach_the_signature(tmp_path: Path) -> None:
    """`a[g(x)] = 1` passes `prm` to `g` and `a[randint(0, 4)] = 2` needs a key: the function writing them must
    take both, although nothing else in it reads a param or draws."""
    path = tmp_path / "idx.yaml"
    path.write_text(
        """
name: idx
version: "1.0"
players: 1
state:
  arr: {type: i32, shape: [4]}
actions:
  go:
    params: {a: 3}
    effect: "arr[g(a)] = 1"
  roll:
    effect: "arr[randint(0, 4)] = 2"
functions:
  g: {params: {x: i32}, returns: i32, body: "x + 1"}
reward: "0.0"
terminated: "step_count >= 5"
observation:
  fields: {o: {type: i32, shape: [4]}}
  body: "o = arr"
"""
    )
    spec = envc.load(str(path))
    an = Analysis(spec)
    go, roll = spec.actions
    assert an.uses(go.effect, "params") and not an.draws(go.effect)
    assert an.draws(roll.effect) and not an.uses(roll.effect, "params")
    env_rs = render(spec, "", "idx_rust")["src/env.rs"]
    assert re.search(r"fn effect_go\(st: &mut State, prm: &Params, a: i32\)", env_rs)
    assert re.search(r"fn effect_roll\(st: &mut State, _prm: &Params, key: Key\)", env_rs)
