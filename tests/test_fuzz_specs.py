"""Robustness of the front end: mutated shipped specs and pathological files never make `envc.lint` raise; every
problem comes back as a located diagnostic (known bugs are strict xfails)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envc
from envc.diagnostics import CODES, Diagnostic

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted(str(p) for p in (ROOT / "specs").glob("*.yaml"))
TEXTS = {p: Path(p).read_text(encoding="utf-8") for p in SPECS}
CARTPOLE = str(ROOT / "specs" / "cartpole.yaml")
OBS3 = "    obs[3] = theta_dot"  # a rule-body line of cartpole's observation, replaced by the deep-expression tests
OBS3_LINE = TEXTS[CARTPOLE].split("\n").index(OBS3) + 1

# words, runs of whitespace, and single punctuation characters; "".join(tokens) == text
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
# characters that matter to YAML or to the rule grammar, plus anything else
_CHARS = st.one_of(
    st.sampled_from(list(":-[]{}()#&*!|>'\"\t\n ,.=<+%/\\@`?~\r\x00\x1b\ufeff")),
    st.characters(codec="utf-8"),
)


def _errors(diags: list[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diags if d.severity.value == "error"]


def _within(text: str, line: int, col: int) -> bool:
    """Whether line:col lies in `text` (or just past the end of its line), lines ended by LF, or by CR, CRLF or LF
    (YAML counts a lone CR as a line break, and says so in an E002)."""
    return any(
        line <= len(lines) and col <= len(lines[line - 1]) + 2
        for lines in (text.split("\n"), re.split(r"\r\n|\r|\n", text))
    )


def _lint_text(path: str, text: str) -> list[Diagnostic]:
    ir, diags = envc.lint(path, text=text)  # must not raise
    assert (ir is None) == bool(_errors(diags))
    for d in diags:
        assert d.code in CODES
        assert d.span.line >= 1 and d.span.col >= 1, d.format()
        assert (d.span.end_line, d.span.end_col) >= (d.span.line, d.span.col), d.format()
        assert d.message.strip(), d.format()
        assert d.span.path != path or _within(text, d.span.line, d.span.col), d.format()
    return diags


# ---- mutations -------------------------------------------------------------------------------------------


def _index(draw: st.DrawFn, n: int) -> int:
    return draw(st.integers(0, max(n - 1, 0)))


def delete_line(draw: st.DrawFn, text: str) -> str:
    lines = text.split("\n")
    del lines[_index(draw, len(lines))]
    return "\n".join(lines)


def duplicate_line(draw: st.DrawFn, text: str) -> str:
    lines = text.split("\n")
    i = _index(draw, len(lines))
    lines.insert(i, lines[i])
    return "\n".join(lines)


def swap_lines(draw: st.DrawFn, text: str) -> str:
    lines = text.split("\n")
    i, j = _index(draw, len(lines)), _index(draw, len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def _tokens(text: str) -> tuple[list[str], list[int]]:
    toks = _TOKEN.findall(text)
    assert "".join(toks) == text
    return toks, [i for i, t in enumerate(toks) if not t.isspace()]


def delete_token(draw: st.DrawFn, text: str) -> str:
    toks, real = _tokens(text)
    if real:
        del toks[real[_index(draw, len(real))]]
    return "".join(toks)


def duplicate_token(draw: st.DrawFn, text: str) -> str:
    toks, real = _tokens(text)
    if real:
        i = real[_index(draw, len(real))]
        toks.insert(i, toks[i] + draw(st.sampled_from(["", " "])))
    return "".join(toks)


def swap_tokens(draw: st.DrawFn, text: str) -> str:
    toks, real = _tokens(text)
    if real:
        i, j = real[_index(draw, len(real))], real[_index(draw, len(real))]
        toks[i], toks[j] = toks[j], toks[i]
    return "".join(toks)


def insert_char(draw: st.DrawFn, text: str) -> str:
    i = draw(st.integers(0, len(text)))
    return text[:i] + draw(_CHARS) + text[i:]


def truncate(draw: st.DrawFn, text: str) -> str:
    return text[: draw(st.integers(0, len(text)))]


def shift_indent(draw: st.DrawFn, text: str) -> str:
    lines = text.split("\n")
    i = _index(draw, len(lines))
    shift = draw(st.sampled_from([-2, -1, 1, 2]))
    indent = len(lines[i]) - len(lines[i].lstrip(" "))
    lines[i] = " " * shift + lines[i] if shift > 0 else lines[i][min(-shift, indent) :]
    return "\n".join(lines)


def insert_property(draw: st.DrawFn, text: str) -> str:
    """A YAML tag, anchor or alias before a value."""
    spots = [m.end() for m in re.finditer(r": ", text)] or [0]  # [0]: an earlier mutation left no value
    i = spots[_index(draw, len(spots))]
    prop = draw(st.sampled_from(['!!int "two"', "!!float abc", "!!binary AAAA", "!custom", "!!str", "&a", "*a", "!"]))
    return text[:i] + prop + " " + text[i:]


def replace_number(draw: st.DrawFn, text: str) -> str:
    nums = list(re.finditer(r"(?<![\w.])\d+(\.\d+)?(?![\w.])", text))
    if not nums:  # an earlier mutation left none
        return text
    m = nums[_index(draw, len(nums))]
    big = draw(st.sampled_from(["9" * 400, "1e999", "-1e999", ".nan", "-.inf", "0x", "0o9", "1:20", "2147483648"]))
    return text[: m.start()] + big + text[m.end() :]


MUTATIONS = [
    delete_line, duplicate_line, swap_lines, delete_token, duplicate_token, swap_tokens, insert_char, truncate,
    shift_indent, insert_property, replace_number,
]  # fmt: skip


@st.composite
def mutated_spec(draw: st.DrawFn) -> tuple[str, str]:
    path = draw(st.sampled_from(SPECS))
    text = TEXTS[path]
    for _ in range(draw(st.integers(1, 3))):
        text = draw(st.sampled_from(MUTATIONS))(draw, text)
    return path, text


def test_shipped_specs_are_clean() -> None:
    """The mutation baseline: every shipped spec lints without errors."""
    assert CARTPOLE in SPECS
    for path in SPECS:
        assert not _errors(_lint_text(path, TEXTS[path])), path


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_spec())
def test_mutated_specs_never_crash(case: tuple[str, str]) -> None:
    path, text = case
    diags = _lint_text(path, text)
    errors = _errors(diags)
    if errors:
        assert any(d.span.line >= 1 and d.span.col >= 1 for d in errors)


# ---- pathological files ----------------------------------------------------------------------------------


def _lint_file(tmp_path: Path, data: bytes, name: str = "spec.yaml") -> list[Diagnostic]:
    path = tmp_path / name
    path.write_bytes(data)
    ir, diags = envc.lint(str(path))
    assert ir is None
    for d in diags:
        assert d.span.line >= 1 and d.span.col >= 1 and d.code in CODES
        assert "\n" not in d.message, d.message
    return _errors(diags)


def _one(errors: list[Diagnostic], code: str) -> Diagnostic:
    assert [d.code for d in errors] == [code], [d.format() for d in errors]
    return errors[0]


def test_empty_file(tmp_path: Path) -> None:
    # the CODES table files "empty" under E010 (missing everything), not E001 (unreadable)
    d = _one(_lint_file(tmp_path, b""), "E010")
    assert (d.span.line, d.span.col) == (1, 1)


def test_whitespace_only_file(tmp_path: Path) -> None:
    _one(_lint_file(tmp_path, b"  \n\t\n\r\n   \n"), "E010")


def test_comment_only_file(tmp_path: Path) -> None:
    errors = _lint_file(tmp_path, b"# nothing yet\n---\n")
    assert len(errors) == 1 and errors[0].code in ("E010", "E012"), [d.format() for d in errors]


def test_binary_file(tmp_path: Path) -> None:
    data = bytes(range(256)) * 8
    d = _one(_lint_file(tmp_path, data), "E001")
    assert (d.span.line, d.span.col) == (1, 1)


def test_gzip_file(tmp_path: Path) -> None:
    import gzip

    _one(_lint_file(tmp_path, gzip.compress(TEXTS[CARTPOLE].encode())), "E001")


def test_non_utf8_file(tmp_path: Path) -> None:
    data = "name: caf\xe9\nplayers: 1\n".encode("latin-1")
    d = _one(_lint_file(tmp_path, data), "E001")
    assert (d.span.line, d.span.col) == (1, 10)


def test_crlf_line_endings(tmp_path: Path) -> None:
    """Windows line ends: a clean spec stays clean, and an error in a rule body is located as in the LF file."""
    path = tmp_path / "cartpole.yaml"
    path.write_bytes(TEXTS[CARTPOLE].replace("\n", "\r\n").encode())
    ir, diags = envc.lint(str(path))
    assert ir is not None and not diags
    path.write_bytes(TEXTS[CARTPOLE].replace(OBS3, "    obs[3] = theta_dot +* 2").replace("\n", "\r\n").encode())
    d = _one(_lint_file(tmp_path, path.read_bytes(), "cartpole.yaml"), "E020")
    assert (d.span.line, d.span.col) == (OBS3_LINE, len("    obs[3] = theta_dot +") + 1)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "cartpole.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + TEXTS[CARTPOLE].encode())
    ir, diags = envc.lint(str(path))
    assert ir is not None and not _errors(diags)


def test_missing_file(tmp_path: Path) -> None:
    ir, diags = envc.lint(str(tmp_path / "nope.yaml"))
    assert ir is None
    _one(_errors(diags), "E001")


def test_directory_instead_of_file(tmp_path: Path) -> None:
    ir, diags = envc.lint(str(tmp_path))
    assert ir is None
    _one(_errors(diags), "E001")


def test_five_megabyte_file(tmp_path: Path) -> None:
    line = b"# " + b"x" * 98 + b"\n"
    data = TEXTS[CARTPOLE].encode() + line * (5 * 1024 * 1024 // len(line))
    assert len(data) > 5 * 1024 * 1024
    _one(_lint_file(tmp_path, data), "E001")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_endless_file() -> None:
    """The size limit holds while reading: /dev/zero used to be read until memory ran out."""
    ir, diags = envc.lint("/dev/zero")
    assert ir is None
    _one(_errors(diags), "E001")


def test_five_megabyte_text() -> None:
    text = TEXTS[CARTPOLE] + "#" * (5 * 1024 * 1024)
    ir, diags = envc.lint(CARTPOLE, text=text)
    assert ir is None
    _one(_errors(diags), "E001")


def test_billion_laughs(tmp_path: Path) -> None:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    _one(_lint_file(tmp_path, ("\n".join(lines) + "\n").encode()), "E003")


def test_alias_in_spec_section(tmp_path: Path) -> None:
    text = (
        TEXTS[CARTPOLE]
        .replace("  x: {type: f32,", "  x: &cart {type: f32,")
        .replace('  x_dot: {type: f32, doc: "Cart velocity"}', "  x_dot: *cart")
    )
    assert "*cart" in text
    _one(_lint_file(tmp_path, text.encode()), "E003")


@pytest.mark.parametrize("opener", ["[", "{"])
def test_ten_thousand_deep_flow_nesting(tmp_path: Path, opener: str) -> None:
    closer = {"[": "]", "{": "}"}[opener]
    value = opener * 10_000 + closer * 10_000 if opener == "[" else "{a: " * 10_000 + "1" + "}" * 10_000
    d = _one(_lint_file(tmp_path, f"name: deep\nstate: {value}\n".encode()), "E003")
    assert d.span.line == 2


@pytest.mark.parametrize("indicator", ["- ", "? ", "-\t"])
def test_compact_block_nesting_on_one_line(tmp_path: Path, indicator: str) -> None:
    """100,000 nested block collections on one line: libyaml's composer recursed in C until the process crashed."""
    d = _one(_lint_file(tmp_path, ("state:\n  " + indicator * 100_000 + "x\n").encode()), "E003")
    assert d.span.line == 2


def test_deep_block_nesting(tmp_path: Path) -> None:
    text = "".join(" " * (2 * i) + f"k{i}:\n" for i in range(300)) + " " * 600 + "v: 1\n"
    _one(_lint_file(tmp_path, text.encode()), "E003")


def test_5000_deep_parenthesized_expression_in_rule_body() -> None:
    deep = "(" * 5000 + "theta_dot" + ")" * 5000
    text = TEXTS[CARTPOLE].replace(OBS3, f"    obs[3] = {deep}")
    assert deep in text
    diags = _lint_text(CARTPOLE, text)
    errors = _errors(diags)
    assert len(errors) <= 1
    for d in errors:  # parentheses build no tree, so accepting it is fine; rejecting must be located and clear
        assert d.code in ("E003", "E020") and d.span.line == OBS3_LINE and "\n" not in d.message


def test_5000_deep_unary_expression_in_rule_body() -> None:
    """The parse tree is walked without recursion, so the depth limit (not Python's stack) decides: one E003."""
    text = TEXTS[CARTPOLE].replace(OBS3, "    obs[3] = " + "-" * 5000 + "theta_dot")
    d = _one(_errors(_lint_text(CARTPOLE, text)), "E003")
    assert d.span.line == OBS3_LINE and "\n" not in d.message


def test_5000_deep_call_nest_in_rule_body() -> None:
    text = TEXTS[CARTPOLE].replace(OBS3, "    obs[3] = " + "abs(" * 5000 + "x" + ")" * 5000)
    d = _one(_errors(_lint_text(CARTPOLE, text)), "E003")
    assert d.span.line == OBS3_LINE and "\n" not in d.message


def test_long_flat_sum_is_located() -> None:
    """300 terms make a 300-deep IR tree (binary operators nest), more than pydantic can serialize: a located E003
    (it used to exhaust the checker's recursion and be reported at 1:1)."""
    terms = " + ".join(["theta_dot"] * 300)
    text = TEXTS[CARTPOLE].replace(OBS3, f"    obs[3] = {terms}")
    errors = _errors(_lint_text(CARTPOLE, text))
    assert all(d.span.line == OBS3_LINE for d in errors), [d.format() for d in errors]


@pytest.mark.parametrize("shape", ["sum", "call", "select"])
def test_deep_expressions_within_the_limit_run(shape: str) -> None:
    """Just inside MAX_NESTING the front end accepts (the checker needs more than Python's default 1000 frames),
    and the IR can be serialized and run by the reference interpreter."""
    import numpy as np

    expr = {
        "sum": " + ".join(["theta_dot"] * 150),
        "call": "abs(" * 75 + "theta_dot" + ")" * 75,
        "select": "if x > 0.0 then " * 150 + "theta_dot" + " else x" * 150,
    }[shape]
    text = TEXTS[CARTPOLE].replace(OBS3, f"    obs[3] = {expr}")
    ir, diags = envc.lint(CARTPOLE, text=text)
    assert ir is not None, [d.format() for d in diags]
    assert ir.model_dump_json()
    env = envc.build(ir, backend="reference")
    state = env.init(np.array([0, 1], dtype=np.uint32))
    env.step(state, 0, np.array([0, 2], dtype=np.uint32))


@pytest.mark.parametrize(
    "text",
    ["- name: a\n- name: b\n", "just a sentence\n", "42\n", "~\n", "[name, state]\n", "'name: quoted'\n"],
    ids=["list", "scalar", "int", "null", "flow-list", "quoted"],
)
def test_document_is_not_a_mapping(tmp_path: Path, text: str) -> None:
    errors = _lint_file(tmp_path, text.encode())
    assert len(errors) == 1 and errors[0].code in ("E010", "E012"), [d.format() for d in errors]


def test_multiple_documents(tmp_path: Path) -> None:
    text = TEXTS[CARTPOLE] + "---\n" + TEXTS[CARTPOLE]
    d = _one(_lint_file(tmp_path, text.encode()), "E002")
    assert d.span.line == TEXTS[CARTPOLE].count("\n") + 1


def test_document_end_marker_then_garbage(tmp_path: Path) -> None:
    errors = _lint_file(tmp_path, (TEXTS[CARTPOLE] + "...\n: : :\n").encode())
    assert 1 <= len(errors) <= 2 and errors[0].code == "E002"


def test_many_nodes(tmp_path: Path) -> None:
    data = ("name: big\nstate: [" + "1," * 600_000 + "1]\n").encode()
    assert len(data) < 4 * 1024 * 1024
    _one(_lint_file(tmp_path, data), "E003")


def test_many_small_errors_are_all_reported() -> None:
    """One bad line per rule, 50 rules: 50 located E030s (no cap, no crash)."""
    rules = "".join(f'  - name: r{i}\n    body: "x = nope{i}"\n' for i in range(50))
    text = TEXTS[CARTPOLE] + "rules:\n" + rules
    errors = _errors(_lint_text(CARTPOLE, text))
    assert [d.code for d in errors] == ["E030"] * 50
    assert len({d.span.line for d in errors}) == 50


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x07"], ids=["nul", "esc", "bel"])
def test_control_character_in_text(char: str) -> None:
    text = TEXTS[CARTPOLE].replace("players: 1", f"players: 1{char}")
    errors = _errors(_lint_text(CARTPOLE, text))
    assert len(errors) == 1 and errors[0].code in ("E001", "E002")
    d = errors[0]
    line = text[: text.index(char)].count("\n") + 1
    assert d.span.line == line and "\n" not in d.message, d.format()
