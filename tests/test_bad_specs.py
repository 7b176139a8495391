"""The malformed-spec corpus (tests/bad_specs): every file lints without raising, and its first error has the
expected code at the expected line:col.

Each corpus file states its expectation on its first line:

    # expect: CODE LINE:COL [TEXT]          position in the spec itself
    # expect: CODE FILE:LINE:COL [TEXT]     position in a data file beside it (CSV tables)

TEXT, if given, must appear in the first error's message (used to check "did you mean" hints). "First" is the
first error in the order `envc.lint` returns (file order). Comment lines right after it may mark a known compiler
bug: `# xfail: REASON` (the expectation is what the compiler should report; the test is a strict xfail until it
does) and `# xfail-span: REASON` (the same for the "every diagnostic is located inside its file, with a one-line
message" check). Files that cannot carry a comment (binary, not UTF-8) are listed in bad_specs/expected.txt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import envc
from envc.diagnostics import CODES, Diagnostic

CORPUS = Path(__file__).resolve().parent / "bad_specs"
_EXPECT = re.compile(r"^(E\d{3})\s+(?:([^\s:]+):)?(\d+):(\d+)(?:\s+(.*?))?\s*$")

# Codes no corpus file triggers, with the reason. Empty: every E code can be reached from a file.
UNCOVERED_OK: dict[str, str] = {}


@dataclass(frozen=True)
class Case:
    path: Path
    code: str
    file: str | None  # data file the first error points into (None: the spec itself)
    line: int
    col: int
    text: str | None
    xfail: str | None
    xfail_span: str | None

    @property
    def id(self) -> str:
        return self.path.name


def _parse_expect(spec: str, where: str) -> tuple[str, str | None, int, int, str | None]:
    m = _EXPECT.match(spec.strip())
    if m is None:
        raise ValueError(f"{where}: bad expectation {spec!r} (want 'CODE [FILE:]LINE:COL [TEXT]')")
    code, file, line, col, text = m.groups()
    if code not in CODES:
        raise ValueError(f"{where}: {code} is not a diagnostic code")
    return code, file, int(line), int(col), text or None


def _side_table() -> dict[str, str]:
    out: dict[str, str] = {}
    table = CORPUS / "expected.txt"
    for n, raw in enumerate(table.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, spec = line.partition(":")
        if not spec:
            raise ValueError(f"expected.txt:{n}: want 'FILE: CODE LINE:COL'")
        out[name.strip()] = spec.strip()
    return out


def load_cases() -> list[Case]:
    side = _side_table()
    cases = []
    for path in sorted(CORPUS.glob("*.yaml")):
        head = [ln.decode("utf-8", "replace") for ln in path.read_bytes().split(b"\n")[:4]]
        first = head[0]
        xfail = xfail_span = None
        if first.startswith("# expect:"):
            if path.name in side:
                raise ValueError(f"{path.name}: expectation both in the file and in expected.txt")
            spec = first[len("# expect:") :]
            for extra in head[1:]:
                if not extra.startswith("#"):
                    break
                if extra.startswith("# xfail:"):
                    xfail = extra[len("# xfail:") :].strip()
                elif extra.startswith("# xfail-span:"):
                    xfail_span = extra[len("# xfail-span:") :].strip()
        elif path.name in side:
            spec = side[path.name]
        else:
            raise ValueError(f"{path.name}: no `# expect:` first line and no entry in expected.txt")
        code, file, line, col, text = _parse_expect(spec, path.name)
        cases.append(Case(path, code, file, line, col, text, xfail, xfail_span))
    missing = set(side) - {c.path.name for c in cases}
    if missing:
        raise ValueError(f"expected.txt names files that do not exist: {sorted(missing)}")
    return cases


CASES = load_cases()


def _params(which: str) -> list[object]:
    out = []
    for c in CASES:
        reason = c.xfail if which == "expect" else c.xfail_span
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


def _lint(path: Path) -> list[Diagnostic]:
    ir, diags = envc.lint(str(path))  # must not raise, whatever the file holds
    errors = [d for d in diags if d.severity.value == "error"]
    assert (ir is None) == bool(errors), "the IR must be None exactly when there are errors"
    return diags


def _all_diagnostics() -> list[Diagnostic]:
    """Diagnostics of the whole corpus, for checks of message text (a case that raises is test_first_error's)."""
    out: list[Diagnostic] = []
    for c in CASES:
        try:
            out += envc.lint(str(c.path))[1]
        except Exception:
            pass
    return out


def _lines(path: Path) -> list[str] | list[bytes]:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return raw.split(b"\n")  # columns of undecodable files count bytes


@pytest.mark.parametrize("case", _params("expect"))
def test_first_error(case: Case) -> None:
    diags = _lint(case.path)
    errors = [d for d in diags if d.severity.value == "error"]
    assert errors, f"{case.id}: expected {case.code}, got no error at all"
    first = errors[0]
    want_file = case.path.name if case.file is None else case.file
    got = (first.code, Path(first.span.path).name, first.span.line, first.span.col)
    listing = "\n".join(d.format() for d in diags)
    assert got == (case.code, want_file, case.line, case.col), f"{case.id}: first error differs; all:\n{listing}"
    if case.text is not None:
        assert case.text in first.message, f"{case.id}: {case.text!r} not in {first.message!r}"


@pytest.mark.parametrize("case", _params("span"))
def test_diagnostics_are_located(case: Case) -> None:
    diags = _lint(case.path)
    assert diags
    for d in diags:
        s = d.span
        assert d.code in CODES
        assert d.message.strip(), f"{d.format()}: empty message"
        assert "\n" not in d.message and "\r" not in d.message, f"multi-line message: {d.message!r}"
        target = Path(s.path)
        if not target.is_absolute():
            target = Path.cwd() / target
        assert target.resolve() == case.path.resolve() or target.resolve().parent == CORPUS, (
            f"{d.format()}: points outside the spec and its data files"
        )
        lines = _lines(target)
        assert 1 <= s.line <= len(lines), f"{d.format()}: line {s.line} not in 1..{len(lines)}"
        assert 1 <= s.col <= len(lines[s.line - 1]) + 1, (
            f"{d.format()}: col {s.col} past the end of line {s.line} ({len(lines[s.line - 1])} chars)"
        )
        assert (s.end_line, s.end_col) >= (s.line, s.col), f"{d.format()}: span ends before it starts"
        assert s.end_line <= len(lines), f"{d.format()}: end line {s.end_line} past the end of the file"
        # end-exclusive; a one-character span on a line break ends one past it
        assert 1 <= s.end_col <= len(lines[s.end_line - 1]) + 2, f"{d.format()}: end col {s.end_col} out of range"


def test_corpus_is_big_enough() -> None:
    assert len(CASES) >= 40
    assert len([c for c in CASES if c.xfail is None]) >= 40


def test_every_error_code_is_covered() -> None:
    covered = {c.code for c in CASES if c.xfail is None}
    wanted = {code for code in CODES if code.startswith("E")} - set(UNCOVERED_OK)
    assert not wanted - covered, f"no passing corpus file for {sorted(wanted - covered)}"


def test_corpus_data_files_are_used() -> None:
    """Every data file beside the corpus (CSV, or YAML as .yml) is named by some spec (no stale fixtures)."""
    texts = " ".join(p.read_text("utf-8", "replace") for p in CORPUS.glob("*.yaml"))
    for data in [*CORPUS.glob("*.csv"), *CORPUS.glob("*.yml")]:
        assert data.name in texts, f"{data.name} is not used by any corpus spec"


# ---- targeted checks of diagnostic text and positions (known bugs are strict xfails) ----------------------


def _did_you_mean_self(d: Diagnostic) -> bool:
    m = re.search(r"'([^']+)'.*\(did you mean '([^']+)'\?\)", d.message)
    return m is not None and m.group(1) == m.group(2)


def test_did_you_mean_never_suggests_the_same_name() -> None:
    """A key valid in another section (rules[].legal) must not suggest itself."""
    bad = [d.format() for d in _all_diagnostics() if _did_you_mean_self(d)]
    assert not bad, "\n".join(bad)


BASE = """\
name: tictactoe
players: 2
state:
  board: {type: i8, shape: [9]}
actions:
  place:
    params: {cell: 9}
    legal: LEGAL
    effect: "board[cell] = 1"
observation:
  fields: {obs: {type: i8, shape: [9]}}
  body: "obs[0] = board[0]"
"""


def _first_error(text: str, tmp_path: Path) -> Diagnostic:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    _, diags = envc.lint(str(path), text=text)
    errors = [d for d in diags if d.severity.value == "error"]
    assert errors
    return errors[0]


def test_single_quoted_expression_position(tmp_path: Path) -> None:
    d = _first_error(BASE.replace("LEGAL", "'board[cell] == 0 and ] cell < 9'"), tmp_path)
    assert (d.code, d.span.line, d.span.col) == ("E020", 8, 34)


def test_position_after_escape_in_double_quoted_expression(tmp_path: Path) -> None:
    """Columns count the characters as written: an escape sequence (\\t, \\", \\n) is two or more of them."""
    d = _first_error(BASE.replace("LEGAL", '"board[cell] == 0 \\t and ] cell < 9"'), tmp_path)
    assert (d.code, d.span.line, d.span.col) == ("E020", 8, 37)


def test_position_in_multiline_double_quoted_expression(tmp_path: Path) -> None:
    """A double-quoted scalar continued on the next line is folded into one line by YAML; positions of tokens on
    the continuation line are still reported on that line."""
    text = BASE.replace("LEGAL", '"board[cell] == 0 and\n      cell < 9 ]"')
    d = _first_error(text, tmp_path)
    assert (d.code, d.span.line, d.span.col) == ("E020", 9, 16)


QUOTED = {
    "hex-escape": ("LEGAL", '"board[cell] == \\x30 and ] cell < 9"'),
    "escaped-line-break": ("LEGAL", '"board[cell] == 0 and \\\n      cell < 9 ]"'),
    "single-quoted-two-lines": ("LEGAL", "'board[cell] == 0 and\n      cell < 9 ]'"),
    "single-quote-escape": ("LEGAL", "'board[cell] == 0 and '' ]'"),
    "blank-line-in-double-quotes": ("LEGAL", '"board[cell] == 0 and\n\n      cell < 9 ]"'),
    "newline-escape-in-effect": ('effect: "board[cell] = 1"', 'effect: "board[cell] = 1\\nboard[cell] = ]"'),
}


@pytest.mark.parametrize("case", sorted(QUOTED))
def test_positions_inside_quoted_scalars(case: str, tmp_path: Path) -> None:
    """The first error is where its character is in the file, whatever YAML's quoting did to the text."""
    old, new = QUOTED[case]
    text = BASE.replace(old, new).replace("LEGAL", "true")
    start = text.index(new)
    at = start + (new.index("''") if case == "single-quote-escape" else new.rindex("]"))
    line, col = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
    d = _first_error(text, tmp_path)
    assert (d.code, d.span.line, d.span.col) == ("E020", line, col), d.format()


def _declared_names(path: Path) -> set[str]:
    import yaml

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError):
        return set()
    names: set[str] = set()
    if isinstance(doc, dict):
        for section in ("types", "params", "constants", "tables", "state", "functions", "procedures"):
            if isinstance(doc.get(section), dict):
                names |= {str(k) for k in doc[section]}
    return names


def test_no_unknown_name_cascade_for_declared_names() -> None:
    """A declaration with an error (a bad size, a table row, a missing `returns`) is not reported again, as E030
    'unknown name', at every use (often with a misleading hint: "unknown name 'cards' (did you mean 'card'?)")."""
    bad = []
    for d in _all_diagnostics():
        m = re.match(r"unknown (?:name|function|procedure|type) '([^']+)'", d.message)
        if (
            d.code == "E030"
            and m
            and d.span.path.endswith(".yaml")
            and m.group(1) in _declared_names(Path(d.span.path))
        ):
            bad.append(d.format())
    assert not bad, "\n".join(bad)


def test_csv_extra_cell_message() -> None:
    """A CSV row with more cells than the header says so (csv.DictReader used to call the extras column 'None')."""
    diags = _lint(CORPUS / "e014_csv_extra_cell.yaml")
    assert "'None'" not in diags[0].message, diags[0].format()
    assert "4 cells" in diags[0].message and "3 columns" in diags[0].message, diags[0].format()


def test_messages_do_not_leak_validator_internals() -> None:
    """Pydantic union branches do not leak into E012 messages ('state.hand.capacity.int: Input should be a valid
    integer...' and 'state.hand.capacity.str: ...' for one fractional capacity): one message per place."""
    leak = re.compile(r"\.(int|str|float|bool)[.:]|\[key\]|function-(after|before)|literal_error")
    diags = _all_diagnostics()
    bad = [d.format() for d in diags if leak.search(d.message) or "Input should" in d.message]
    assert not bad, "\n".join(bad)
    e012 = [(d.span, d.code) for d in diags if d.code == "E012"]
    assert len(e012) == len(set(e012)), "two E012 errors at one place"


def test_table_with_a_bad_cell_is_still_checked_where_used(tmp_path: Path) -> None:
    """A bad cell does not hide the table: its uses are type-checked (here: a column that does not exist)."""
    (tmp_path / "cards.csv").write_text("name,hp\nPikachu,60\nCharizard,lots\n", encoding="utf-8")
    text = BASE.replace("LEGAL", "cards[0].hpp > 0").replace(
        "state:", "tables:\n  cards: {file: cards.csv, columns: {name: str, hp: i16}}\nstate:"
    )
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    _, diags = envc.lint(str(path))
    got = [(Path(d.span.path).name, d.span.line, d.code) for d in diags]
    assert got == [("cards.csv", 3, "E014"), ("spec.yaml", 10, "E030")], [d.format() for d in diags]
    assert "'cards' has no field 'hpp'" in diags[1].message


def test_let_with_an_error_is_not_an_unknown_name_later(tmp_path: Path) -> None:
    effect = "effect: |\n      let v: i8 = 300\n      let w = v + 1\n      board[cell] = w"
    text = BASE.replace("LEGAL", "true").replace('effect: "board[cell] = 1"', effect)
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    _, diags = envc.lint(str(path))
    assert [(d.code, d.span.line) for d in diags] == [("E040", 10)], [d.format() for d in diags]


# ---- the name rule (E013): one rule for every kind of declared name ---------------------------------------

# A spec declaring one name of every kind; NAMES holds each placeholder's valid value.
ALL_KINDS = """\
name: {spec}
players: 2
types:
  {enum}: {{enum: [{member}, other]}}
  {record}:
    record: {{{rfield}: i8}}
params:
  {param}: 3
constants:
  {const}: {{type: i8, shape: [2], value: [1, 2]}}
tables:
  {table}:
    columns: {{{column}: i8}}
    rows: [{{{column}: 4}}]
state:
  {field}: i32
  {zone}: {{zone: i8, capacity: 4}}
  slot: {record}
  mode: {enum}
functions:
  {fn}:
    params: {{{fparam}: i32}}
    returns: i32
    body: "{fparam} + {param}"
procedures:
  {proc}:
    params: {{{pparam}: i32}}
    body: "{field} = {pparam} + {const}[0] + {table}[0].{column} + slot.{rfield}"
actions:
  {action}:
    params: {{{aparam}: 2}}
    legal: "mode == {enum}.{member}"
    effect: |
      let {local} = {fn}({aparam})
      for {loopvar} in range(2):
        {proc}({local} + {loopvar})
      push({zone}, i8(sum({genvar} for {genvar} in range(3))))
observation:
  fields: {{{obs}: i32}}
  body: "{obs} = {field}"
"""
NAMES = {
    "spec": ("spec", "s"),
    "enum": ("type", "Mode"),
    "member": ("enum member", "start"),
    "record": ("type", "Slot"),
    "rfield": ("record field", "hp"),
    "param": ("param", "bonus"),
    "const": ("constant", "base"),
    "table": ("table", "cards"),
    "column": ("column", "power"),
    "field": ("state field", "total"),
    "zone": ("state field", "pile"),
    "fn": ("function", "double"),
    "fparam": ("parameter", "x"),
    "proc": ("procedure", "add"),
    "pparam": ("parameter", "amount"),
    "action": ("action", "play"),
    "aparam": ("action parameter", "which"),
    "local": ("local", "got"),
    "loopvar": ("loop variable", "i"),
    "genvar": ("generator variable", "j"),
    "obs": ("observation field", "seen"),
}


def _with_name(tmp_path: Path, slot: str, name: str) -> list[Diagnostic]:
    text = ALL_KINDS.format(**{k: (name if k == slot else v) for k, (_, v) in NAMES.items()})
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    ir, diags = envc.lint(str(path))
    assert (ir is None) == any(d.severity.value == "error" for d in diags)
    return diags


def test_all_kinds_spec_is_valid(tmp_path: Path) -> None:
    diags = _with_name(tmp_path, "", "")
    assert not diags, [d.format() for d in diags]


@pytest.mark.parametrize("slot", sorted(NAMES))
@pytest.mark.parametrize(
    "bad, says",
    [
        ("x__y", "contains '__', which is reserved for generated code; use a single '_'"),
        ("__init__", "contains '__'"),
        ("_", "is reserved (it is the wildcard of `case _:`)"),
        ("n" * 65, "is 65 characters long; names have at most 64"),
    ],
    ids=["double-underscore", "dunder", "underscore", "65-chars"],
)
def test_name_rule_covers_every_kind(slot: str, bad: str, says: str, tmp_path: Path) -> None:
    """Every kind of declared name follows one rule: one E013, at the declaration, saying what to do; the uses of
    the bad name are not reported again."""
    what = NAMES[slot][0]
    diags = _with_name(tmp_path, slot, bad)
    errors = [d for d in diags if d.severity.value == "error"]
    assert [d.code for d in errors] == ["E013"], [d.format() for d in diags]
    assert errors[0].message.startswith(f"{what} name "), errors[0].format()
    assert says in errors[0].message, errors[0].format()


@pytest.mark.parametrize("name", ["n" * 64, "a_b", "_x", "x_", "from", "as", "replace", "rewards", "observation"])
def test_names_that_stay_legal(name: str, tmp_path: Path) -> None:
    """64 characters, single underscores, and words the backends mangle (Python/Rust keywords, API names)."""
    for slot in ("field", "local", "rfield"):
        if slot == "field" and name in ("rewards", "observation"):
            continue  # storage names only: state_to_dict's output keys (e013_state_field_named_rewards)
        diags = _with_name(tmp_path, slot, name)
        assert not diags, [d.format() for d in diags]
