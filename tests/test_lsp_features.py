"""The language server's features in process: scopes, cursor mapping, name resolution on every shipped spec,
and no exception on mangled text (the subprocess tests in test_lsp.py cover the protocol)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envc import ast
from envc.check.body import BUILTINS as CHECKER_BUILTINS
from envc.diagnostics import Diagnostics, Span
from envc.lsp.builtins import BUILTINS
from envc.lsp.features import Outline, complete, definition, hover, key_path
from envc.lsp.scope import chain_before, locals_at, snippet_position
from envc.parse import Snippet, parse_body, parse_expr, parse_function_body

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted([*ROOT.glob("specs/*.yaml"), *ROOT.glob("tests/specs/*.yaml"), *ROOT.glob("docs/examples/*.yaml")])
TEXTS = {p: p.read_text(encoding="utf-8") for p in SHIPPED}


def test_every_builtin_has_hover_text() -> None:
    assert set(CHECKER_BUILTINS) <= set(BUILTINS)


# ---- scopes --------------------------------------------------------------------------------------------------------

BODY = """\
let a = 1
for i in range(3):
  let b = i
  if b > 0:
    let c = b
    x = c
  else:
    let d = 2
  y = b
match m:
  case one:
    let e = 1
    z = e
  case two:
    z = 0
w = sum(q[j] for j in range(2)) + count(
  r[k] for k in range(4))
"""


def _scope(line_text: str, col: int = 1) -> set[str]:
    line = BODY.split("\n").index(line_text) + 1
    return set(locals_at(BODY, line, col))


def test_locals_follow_blocks() -> None:
    assert _scope("    x = c") == {"a", "i", "b", "c"}
    assert _scope("    let d = 2") == {"a", "i", "b"}  # a sibling block's `let` is not visible
    assert _scope("  y = b") == {"a", "i", "b"}
    assert _scope("    z = e") == {"a", "e"}
    assert _scope("    z = 0") == {"a"}
    assert _scope("w = sum(q[j] for j in range(2)) + count(") == {"a", "j", "k"}  # generators of the statement
    assert _scope("  r[k] for k in range(4))") == {"a", "j", "k"}
    assert set(locals_at(BODY, 1, 1)) == set()  # nothing is declared before the first line


def test_locals_on_a_half_typed_new_line() -> None:
    text = "let a = 1\nfor i in range(3):\n  let b = i\n  \n"
    assert set(locals_at(text, 4, 3)) == {"a", "i", "b"}  # cursor after the indentation of a new line in the loop
    assert set(locals_at(text, 4, 1)) == {"a"}  # at column 1: after the loop
    assert set(locals_at("for i in range(3):\n  x = q[i", 2, 10)) == {"i"}  # the line does not parse yet


@pytest.mark.parametrize(
    ("text", "root", "steps"),
    [
        ("Mark.", "Mark", []),
        ("x = cards[c].", "cards", ["[]"]),
        ("board[pl, s[0]].", "board", ["[]"]),
        ("a.b[1].", "a", [".b", "[]"]),
        ("f(x).", None, None),
        ("3.", None, None),
    ],
)
def test_chain_before_a_dot(text: str, root: str | None, steps: list[str] | None) -> None:
    chain = chain_before(text, len(text) - 1)
    assert (chain.root, chain.steps) == (root, steps) if chain else root is None


# ---- YAML keys -------------------------------------------------------------------------------------------------------


def test_key_path_from_indentation() -> None:
    lines = [
        "name: x",
        "state:",
        "  board:",
        "    type: i8",
        "    ",
        "rules:",
        "  - name: r",
        "    when: true",
        "    ",
        "- weird",
    ]
    assert key_path(lines, 4, 4) == ["state", "board"]
    assert key_path(lines, 4, 2) == ["state"]
    assert key_path(lines, 4, 0) == []
    assert key_path(lines, 8, 4) == ["rules", 0]
    assert key_path(lines, 6, 4, dash=2) == ["rules", 0]  # the item's first key line itself
    assert key_path(["rules:", "- name: r", "  when: x"], 2, 2) == ["rules", 0]  # a list at its key's indentation
    assert key_path(["rules:"], 1, 2, dash=0) == ["rules", 0]


# ---- cursor mapping and name resolution on every shipped spec --------------------------------------------------------


def _uses(tree: object) -> list[tuple[str, Span]]:
    """(name, span of the name) of every name use in an AST."""
    out: list[tuple[str, Span]] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (list, tuple)):
            todo.extend(node)
        elif dataclasses.is_dataclass(node) and not isinstance(node, Span):
            if isinstance(node, ast.Name):
                out.append((node.id, node.span))
            elif isinstance(node, ast.Attr):
                s = node.span
                out.append((node.name, Span(s.path, s.end_line, s.end_col - len(node.name), s.end_line, s.end_col)))
            elif isinstance(node, (ast.Call, ast.GenCall)):
                out.append((node.func, node.func_span))
            todo.extend(getattr(node, f.name) for f in dataclasses.fields(node))
    return out


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_in_every_body_resolves(path: Path) -> None:
    """Hover finds each name use the checker accepted, and go-to-definition lands on a declaration of that name."""
    text = TEXTS[path]
    o = Outline.of(str(path), text)
    assert o.ok and o.index.sites
    checked = 0
    for site in o.index.sites:
        snip = Snippet.of(site.node)
        parse = {"body": parse_body, "expr": parse_expr, "function": parse_function_body}[site.mode]
        tree = parse(snip, Diagnostics())
        assert tree is not None, site.where
        for name, span in _uses(tree):
            found = hover(o, span.line - 1, span.col - 1)
            assert found is not None, f"{path.name}:{span.line}:{span.col}: no hover for {name!r}"
            assert found[1] == (span.line - 1, span.col - 1, span.col - 1 + len(name))
            target = definition(o, span.line - 1, span.col - 1)
            if target is not None and target.span is not None and name != "count":  # z.count: at the zone
                t = target.span
                assert o.lines[t.line - 1][t.col - 1 :].startswith(name), (name, t)
            checked += 1
    assert checked > 10


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_cursor_maps_back_into_every_snippet(path: Path) -> None:
    """Every character of every rule body maps to the file and back (all YAML scalar styles)."""
    o = Outline.of(str(path), TEXTS[path])
    for site in o.index.sites:
        snip = Snippet.of(site.node)
        line, col = 1, 1
        for ch in snip.text:
            if ch not in " \n":
                assert snippet_position(snip, *snip.pos(line, col)) == (line, col), (site.where, line, col)
            line, col = (line + 1, 1) if ch == "\n" else (line, col + 1)


def test_declarations_hover_at_their_keys() -> None:
    path = ROOT / "tests" / "specs" / "tcg_mechanics.yaml"
    o = Outline.of(str(path), TEXTS[path])
    decls = [*o.index.globals.values(), *o.index.records.values(), *o.index.actions.values()]
    for d in decls:
        if d.span is None:
            continue
        found = hover(o, d.span.line - 1, d.span.col - 1)
        assert found is not None and d.signature in found[0], d.name


def test_completion_while_the_yaml_is_broken() -> None:
    """An unclosed quote breaks the YAML: code completion goes on with the declarations last seen."""
    path = ROOT / "specs" / "tic_tac_toe.yaml"
    good = Outline.of(str(path), TEXTS[path])
    for old, new in [
        ('legal: "board[row, col] == Mark.empty"', 'legal: "board[row, col] == Mark.'),
        ("terminated: >\n  winner != Mark.empty", 'terminated: "winner != Mark.'),
    ]:
        text = TEXTS[path].replace(old, new)
        o = Outline.of(str(path), text, good)
        assert not o.ok
        line = text[: text.index(new) + len(new)].count("\n")
        col = len(text.split("\n")[line])
        assert {i.label for i in complete(o, line, col)} == {"empty", "x", "o"}
        names = {i.label for i in complete(o, line, col - len("Mark."))}
        assert {"board", "winner", "Mark", "opponent"} <= names


# ---- robustness ---------------------------------------------------------------------------------------------------


@st.composite
def mangled(draw: st.DrawFn) -> tuple[str, int, int]:
    text = TEXTS[draw(st.sampled_from(SHIPPED))]
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 40))
        junk = draw(st.text(alphabet=st.sampled_from(list(" \n\t:-[]{}()'\"#|>.,=abcXYZ_019\\é😀\x00")), max_size=12))
        text = text[:at] + junk + text[at + cut :]
    lines = text.split("\n")
    line = draw(st.integers(0, len(lines)))
    col = draw(st.integers(0, len(lines[line]) + 1 if line < len(lines) else 3))
    return text, line, col


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled())
def test_features_never_raise_on_mangled_text(case: tuple[str, int, int]) -> None:
    text, line, col = case
    previous = Outline.of("spec.yaml", TEXTS[SHIPPED[0]])
    o = Outline.of("spec.yaml", text, previous)
    hover(o, line, col)
    complete(o, line, col)
    definition(o, line, col)
