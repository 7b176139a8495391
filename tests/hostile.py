"""Hostile specs: every place a spec carries a name or a string, filled with what breaks generated code.

`NAMES` are identifiers that lint clean but are keywords, prelude items or generated members in Python or Rust;
`TEXTS` are free-text labels and docs that try to leave a docstring, comment or string literal and run code.
Each payload that runs creates the file MARK (a path the test chooses), so "nothing executed" is checkable.
"""

from __future__ import annotations

import json
import keyword

from hypothesis import strategies as st

from envc.check.symbols import RESERVED

RUST_KEYWORDS = (
    "abstract as async await become box break const continue crate do dyn else enum extern false final fn for gen "
    "if impl in let loop macro macro_rules match mod move mut override priv pub raw ref return safe self Self static "
    "struct super trait true try type typeof union unsafe unsized use virtual where while yield"
).split()
PRELUDE = "Some None Ok Err Vec Option Result Box String std core alloc rt usize isize u8 u64 f64 str char".split()
GENERATED = (
    "replace rewards terminated truncated observation legal_action_mask keys values items get from_tuple to_tuple "
    "State Env EnvParams C Any chex annotations reset observe reward apply_action apply_rules is_legal is_terminated "
    "is_truncated invariants legal_mask effect_box carry Lanes Batch VectorEnv INVARIANTS NUM_ACTIONS NUM_PLAYERS "
    "SPEC_FILE SPEC_SHA256 floor_div floor_mod clamp_index drop_index to_enum x_1 a_2 values_1 cond_1 obs mask rng "
    "out id st ln l i j k n v"
).split()
NAMES = sorted({*keyword.kwlist, *keyword.softkwlist, *RUST_KEYWORDS, *PRELUDE, *GENERATED} - RESERVED - {"_"})

TEXTS = (
    'x"""; __import__("os").system("touch MARK"); """',
    "x'''; __import__('os').system('touch MARK'); '''",
    'a\nstd::process::Command::new("touch").arg("MARK").status().ok();',
    'a\r\nstd::process::Command::new("touch").arg("MARK").status().ok();',
    'a\u2028__import__("os").system("touch MARK")',
    '*/ fn f() { std::process::Command::new("touch").arg("MARK").status().ok(); } /*',
    '"); std::process::Command::new("touch").arg("MARK").status().ok(); ("',
    '\\", __import__("os").system("touch MARK"), "\\',
    "{{ 7 * 7 }} {% raw %} ${x} `echo MARK` $(touch MARK)",
    "trailing backslash \\",
    "tab\tand unicode é ✓ \U0001f600",
)


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML) of any text."""
    out = json.dumps(text, ensure_ascii=False)
    return out.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\x85")


SLOTS = (
    "spec_doc param_static param_run const const_arr enum member1 member2 record rfield table column field "
    "field_arr field_enum field_rec zone obs action aparam fn fparam proc pparam local loopvar"
).split()
TEXT_SLOTS = ("doc", "rule", "rule_doc", "invariant", "invariant2", "row")


def render(names: dict[str, str], texts: dict[str, str], mark: str) -> str:
    """A two-player spec using `names` for every declared name and `texts` for every free-text label."""
    n = names
    t = {k: _q(v.replace("MARK", mark)) for k, v in texts.items()}
    return f"""name: hostile
doc: {t["doc"]}
version: "1.0"
players: 2
params:
  {n["param_static"]}: {{type: i32, default: 3, static: true, doc: {t["doc"]}}}
  {n["param_run"]}: {{type: i32, default: 5, doc: {t["doc"]}}}
constants:
  {n["const"]}: 2
  {n["const_arr"]}: {{type: i32, shape: [3], value: [1, 2, 3]}}
types:
  {n["enum"]}: {{enum: [{n["member1"]}, {n["member2"]}], doc: {t["doc"]}}}
  {n["record"]}:
    record:
      {n["rfield"]}: i32
tables:
  {n["table"]}:
    doc: {t["doc"]}
    columns: {{name: str, {n["column"]}: i32}}
    rows:
      - {{name: {t["row"]}, {n["column"]}: 1}}
      - {{name: plain, {n["column"]}: 2}}
state:
  {n["field"]}: {{type: i32, doc: {t["doc"]}}}
  {n["field_arr"]}: {{type: i32, shape: [{n["param_static"]}]}}
  {n["field_enum"]}: {n["enum"]}
  {n["field_rec"]}: {n["record"]}
  {n["zone"]}: {{zone: i32, capacity: 4}}
actions:
  {n["action"]}:
    doc: {t["doc"]}
    params: {{{n["aparam"]}: 2}}
    legal: "{n["field"]} < 1000"
    effect: |
      let {n["local"]} = {n["aparam"]} + {n["param_run"]}
      {n["field"]} += {n["fn"]}({n["local"]}) % 7
      {n["proc"]}({n["aparam"]})
      for {n["loopvar"]} in range({n["param_static"]}):
        {n["field_arr"]}[{n["loopvar"]}] += {n["const_arr"]}[{n["loopvar"]}] + {n["table"]}.{n["column"]}[{n["aparam"]}]
      {n["field_rec"]}.{n["rfield"]} += 1
      if {n["field_enum"]} == {n["enum"]}.{n["member1"]}:
        {n["field_enum"]} = {n["enum"]}.{n["member2"]}
functions:
  {n["fn"]}:
    params: {{{n["fparam"]}: i32}}
    returns: i32
    body: "{n["fparam"]} * {n["const"]} + 1"
procedures:
  {n["proc"]}:
    params: {{{n["pparam"]}: i32}}
    body: |
      if {n["zone"]}.count < 4:
        push({n["zone"]}, {n["pparam"]})
rules:
  - name: {t["rule"]}
    doc: {t["rule_doc"]}
    body: "current_player = 1 - current_player"
reward: "if p == 0 then f32({n["field"]} % 3) else 0.0"
terminated: "step_count >= 6"
observation:
  fields:
    {n["obs"]}: {{type: i32, shape: [2]}}
  body: |
    {n["obs"]}[0] = {n["field"]}
    {n["obs"]}[1] = {n["zone"]}.count
invariants:
  {t["invariant"]}: "{n["field"]} >= 0"
  {t["invariant2"]}: "{n["zone"]}.count <= 4"
"""


STORAGE_SLOTS = ("field", "field_arr", "field_enum", "field_rec", "zone")
STEP_OUTPUTS = {"rewards", "terminated", "truncated", "legal_action_mask", "observation"}  # not storage names (E013)


def _assign(names: list[str]) -> dict[str, str]:
    """Slots -> names, moving state_to_dict's output keys out of the storage slots into other slots."""
    out = dict(zip(SLOTS, names))
    free = [s for s in SLOTS if s not in STORAGE_SLOTS and out[s] not in STEP_OUTPUTS]
    for slot in STORAGE_SLOTS:
        if out[slot] in STEP_OUTPUTS:
            other = free.pop()
            out[slot], out[other] = out[other], out[slot]
    return out


@st.composite
def hostile_specs(draw: st.DrawFn) -> tuple[dict[str, str], dict[str, str]]:
    """Distinct hostile names for every name slot and hostile texts for every text slot."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=len(SLOTS), max_size=len(SLOTS), unique=True))
    texts = draw(st.lists(st.sampled_from(TEXTS), min_size=len(TEXT_SLOTS), max_size=len(TEXT_SLOTS)))
    invariant, invariant2 = texts[3], texts[4]
    if invariant == invariant2:  # invariant names are mapping keys: they must differ
        texts[4] = invariant2 + " (2)"
    return _assign(names), dict(zip(TEXT_SLOTS, texts))


def deterministic_cases() -> list[tuple[dict[str, str], dict[str, str]]]:
    """Every name in NAMES and every text in TEXTS in at least one spec, without hypothesis."""
    cases = []
    for start in range(0, len(NAMES), len(SLOTS)):
        chunk = (NAMES[start:] + NAMES)[: len(SLOTS)]
        if len(set(chunk)) < len(SLOTS):
            chunk = NAMES[-len(SLOTS) :]
        texts = [TEXTS[(start // len(SLOTS) + i) % len(TEXTS)] for i in range(len(TEXT_SLOTS))]
        if texts[3] == texts[4]:
            texts[4] += " (2)"
        cases.append((_assign(chunk), dict(zip(TEXT_SLOTS, texts))))
    return cases
