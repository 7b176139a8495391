"""A draft's `todo` items: W001 warnings at the item, no effect on the IR, duplicates are errors."""

from __future__ import annotations

from pathlib import Path

import envc

DRAFT = """\
name: probe
players: 2
todo:
  - name: attack
    target: actions.attack
    source: "https://cards.example/rules.html#attacking"
    text: |
      Choose one of your Active creature's attacks
      and pay its Energy cost.
state:
  turn: i32
actions:
  attack: {legal: false}
  pass_turn:
observation:
  fields: {seen: i32}
  body: "seen = turn"
"""


def test_todo_items_are_located_warnings(tmp_path: Path) -> None:
    p = tmp_path / "draft.yaml"
    p.write_text(DRAFT)
    spec, diags = envc.lint(str(p))
    assert spec is not None  # warnings only: the draft still builds
    assert [(d.code, d.span.line, d.span.col, d.severity.value) for d in diags] == [("W001", 4, 5, "warning")]
    assert "'attack' is not formalized yet (actions.attack): Choose one of your Active creature's attacks and" in (
        diags[0].message
    )
    without = tmp_path / "plain.yaml"
    without.write_text(DRAFT.split("todo:")[0] + "state:" + DRAFT.split("state:")[1])
    with_todo, plain = envc.load(str(p)), envc.load(str(without))
    assert [(f.name, f.ty) for f in with_todo.fields] == [(f.name, f.ty) for f in plain.fields]
    assert [a.name for a in with_todo.actions] == [a.name for a in plain.actions] == ["attack", "pass_turn"]


def test_duplicate_todo_names(tmp_path: Path) -> None:
    p = tmp_path / "draft.yaml"
    p.write_text(DRAFT.replace("state:", "  - {name: attack, text: again}\nstate:", 1))
    _, diags = envc.lint(str(p))
    assert [(d.code, d.span.line) for d in diags if d.severity.value == "error"] == [("E031", 10)]
