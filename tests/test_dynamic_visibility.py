"""Visibility that changes during the game: `visible: EXPR` and `visible: {element: [...], when: EXPR}`.

A small Leduc-like game: the public card is hidden in round 0 and shown from round 1 on, and each hand card is
revealed by its owner one at a time. The no-leak check must resample exactly what a player cannot see in the
state at hand, name the field (and element) that leaks, and run the same on the reference, JAX and Rust.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc.verify import _with_hidden, verify
from envc.visibility import Visibility

ROOT = Path(__file__).resolve().parent.parent

REVEAL = """\
name: reveal_poker
doc: The public card is shown from round 1 on; hand cards are revealed one by one by their owner.
players: 2
types:
  Card: {enum: [jack, queen, king]}
state:
  deck: {zone: Card, capacity: 6, visible: none}
  hand:
    type: Card
    shape: [2]
    per_player: true
    visible: {element: [pl, i], when: "pl == p or shown[pl, i]"}
  shown: {type: bool, shape: [2], per_player: true}
  board: {type: Card, visible: "round >= 1"}
  round: i8
  moves: i8
reset: |
  for c in range(3):
    push(deck, Card(c))
    push(deck, Card(c))
  shuffle(deck)
  for q in range(num_players):
    for i in range(2):
      hand[q, i] = pop(deck)
  board = pop(deck)
  current_player = randint(0, num_players)
actions:
  show:
    params: {i: 2}
    legal: "not shown[current_player, i]"
    effect: "shown[current_player, i] = true"
  wait:
rules:
  - name: advance
    body: |
      moves += 1
      if moves % 2 == 0:
        round += 1
      current_player = 1 - current_player
terminated: "round >= 3"
observation:
  fields:
    mine: {type: i32, shape: [2]}
    theirs: {type: i32, shape: [2]}
    public: i32
  body: |
    for i in range(2):
      mine[i] = int(hand[p, i])
      theirs[i] = if shown[1 - p, i] then int(hand[1 - p, i]) else -1
    public = if round >= 1 then int(board) else -1
"""

SHOW_PUBLIC = ("    public = if round >= 1 then int(board) else -1", "    public = int(board)")
SHOW_SECOND = (
    "      theirs[i] = if shown[1 - p, i] then int(hand[1 - p, i]) else -1",
    "      theirs[i] = if i == 1 then int(hand[1 - p, i]) else -1",
)


def write(tmp: Path, name: str, *edits: tuple[str, str]) -> Path:
    text = REVEAL
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp / f"{name}.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reveal")


def leak_check(spec: envc.SpecIR, env: Any, episodes: int = 40) -> Any:
    return next(c for c in verify(spec, env, levels=("L1",), episodes=episodes) if c.name.startswith("no hidden"))


# ---- the IR and the evaluation ---------------------------------------------------------------------------


def test_rules_reach_the_ir_and_literals_stay(specs: Path) -> None:
    spec = envc.load(str(write(specs, "ir")))
    hand, board, deck = spec.field("hand"), spec.field("board"), spec.field("deck")
    assert hand.visible == "rule" and hand.visible_rule is not None
    assert hand.visible_rule.element == ("pl", "i") and hand.visible_rule.text == "pl == p or shown[pl, i]"
    assert board.visible == "rule" and board.visible_rule is not None and board.visible_rule.element == ()
    assert deck.visible == "none" and deck.visible_rule is None
    assert spec.field("deck.count").visible == "all" and spec.field("shown").visible_rule is None
    kuhn = envc.load(str(ROOT / "specs" / "kuhn_poker.yaml"))
    assert kuhn.field("card").visible == "owner" and kuhn.field("card").visible_rule is None


def test_hidden_elements_follow_the_state(specs: Path) -> None:
    spec = envc.load(str(write(specs, "masks")))
    env = envc.build(spec)
    vis = Visibility(spec)
    d = env.state_to_dict(env.init((0, 1)))
    d["round"] = np.int8(0)
    d["shown"] = np.array([[False, True], [False, False]])
    m0, m1 = vis.hidden(d, 0), vis.hidden(d, 1)
    assert m0["board"].all() and m1["board"].all()  # round 0: nobody sees the public card
    assert m0["hand"].tolist() == [[False, False], [True, True]]
    assert m1["hand"].tolist() == [[True, False], [False, False]]  # player 0 revealed their second card
    assert m0["deck"].all() and "shown" not in m0 and "deck.count" not in m0
    d["round"] = np.int8(1)
    assert "board" not in vis.hidden(d, 0) and "board" not in vis.hidden(d, 1)
    # exactly the hidden elements are taken from the other state
    other = {k: np.array(v, copy=True) for k, v in d.items()}
    other["hand"] = np.full((2, 2), 7, np.int8)
    mixed = _with_hidden(spec, d, other, 1, vis.hidden(d, 1))
    assert mixed["hand"].tolist() == [[7, int(d["hand"][0, 1])], d["hand"][1].tolist()]


def test_fixed_declarations_resample_as_before() -> None:
    """all/owner/none: `none` fields whole, other players' rows of `owner` ones, nothing else."""
    spec = envc.load(str(ROOT / "specs" / "kuhn_poker.yaml"))
    env = envc.build(spec)
    d = env.state_to_dict(env.init((0, 5)))
    source = {k: np.asarray(v) + 1 if np.asarray(v).dtype != np.bool_ else ~np.asarray(v) for k, v in d.items()}
    for p in (0, 1):
        got = _with_hidden(spec, d, source, p)
        for f in spec.fields:
            want = np.array(d[f.name], copy=True)
            if f.visible == "none":
                want = source[f.name]
            elif f.visible == "owner":
                want[1 - p] = source[f.name][1 - p]
            assert np.array_equal(got[f.name], want), (p, f.name)


# ---- (a) a correct observation passes on every backend ------------------------------------------------


@pytest.mark.parametrize("backend", ["reference", "jax", "rust"])
def test_correct_observation_passes_on_every_backend(specs: Path, backend: str) -> None:
    spec = envc.load(str(write(specs, "honest")))
    env = envc.build(spec, backend=backend)
    checks = verify(spec, env, levels=("L1",), episodes=40)
    assert all(c.passed for c in checks), [c.failures for c in checks if not c.passed]
    assert next(c for c in checks if c.name.startswith("no hidden")).cases >= 40


@pytest.mark.parametrize(
    ("static", "field"),
    [('visible: {element: [pl, i], when: "pl == p or shown[pl, i]"}', "hand"), ('visible: "round >= 1"', "board")],
)
def test_the_same_observation_leaks_under_a_static_declaration(specs: Path, static: str, field: str) -> None:
    """What makes the honest spec pass is the rule: hiding the field always (owner / none) flags the shown cards."""
    fixed = "visible: owner" if field == "hand" else "visible: none"
    spec = envc.load(str(write(specs, f"static_{field}", (static, fixed))))
    check = leak_check(spec, envc.build(spec))
    assert not check.passed
    assert f"changes with hidden fields: {field}" in check.failures[0]


# ---- (b) a leaky observation fails, naming the field and element ------------------------------------------


@pytest.mark.parametrize("backend", ["reference", "jax"])
def test_public_card_shown_in_round_zero_is_a_leak(specs: Path, backend: str) -> None:
    spec = envc.load(str(write(specs, "leak_public", SHOW_PUBLIC)))
    check = leak_check(spec, envc.build(spec, backend=backend))
    assert not check.passed
    msg = check.failures[0]
    assert "observation 'public' changes with hidden fields: board (hidden from player" in msg, msg
    assert "`round >= 1` is false" in msg, msg


def test_unrevealed_hand_card_is_a_leak_named_by_element(specs: Path) -> None:
    spec = envc.load(str(write(specs, "leak_hand", SHOW_SECOND)))
    check = leak_check(spec, envc.build(spec))
    assert not check.passed
    msg = check.failures[0]
    assert "observation 'theirs' changes with hidden fields: hand[" in msg, msg
    assert ", 1] (hidden from player" in msg and "`pl == p or shown[pl, i]` is false for pl=" in msg, msg
    assert ", i=1)" in msg, msg


def test_a_rule_that_reads_hidden_data_is_reported(specs: Path) -> None:
    spec = envc.load(
        str(write(specs, "leak_rule", ('visible: "round >= 1"', 'visible: "round >= 1 or board == Card.king"')))
    )
    check = leak_check(spec, envc.build(spec))
    assert not check.passed
    assert any("the visibility of board to player" in m and "changes with data hidden" in m for m in check.failures)


def test_cli_verify_runs_the_dynamic_check(specs: Path) -> None:
    path = write(specs, "leak_cli", SHOW_PUBLIC)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "envc.cli",
            "verify",
            str(path),
            "--backend",
            "jax",
            "--level",
            "L1",
            "--episodes",
            "20",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "no hidden-information leak" in r.stdout and "board" in r.stdout, r.stdout


# ---- (c) located diagnostics ------------------------------------------------------------------------------

BOARD = '  board: {type: Card, visible: "round >= 1"}'


@pytest.mark.parametrize(
    ("visible", "code", "col", "text"),
    [
        ('"revealed = true"', "E054", 33, "state cannot be changed in the visibility of 'board'"),
        ('"rond >= 1"', "E030", 33, "unknown name 'rond' (did you mean 'round'?)"),
        ('"round + 1"', "E040", 33, "the visibility of 'board' must be a bool expression, got i8"),
        ('"randint(0, 2) == 0"', "E054", 33, "randomness is not allowed in the visibility of 'board'"),
        ('"pop(deck) == Card.king"', "E054", 33, "pop(...) changes a zone"),
        ("ownr", "E012", 32, "'ownr' is not a known name (did you mean 'owner'?)"),
        ('{element: [i], when: "true"}', "E012", 42, "`element` names 1 indices, but 'board' has 0 dimension(s) []"),
    ],
)
def test_bad_visibility_is_located(specs: Path, visible: str, code: str, col: int, text: str) -> None:
    path = write(
        specs, f"bad_{code}_{col}_{abs(hash(visible))}", (BOARD, f"  board: {{type: Card, visible: {visible}}}")
    )
    line = REVEAL.splitlines().index(BOARD) + 1
    spec, diags = envc.lint(str(path))
    assert spec is None
    first = next(d for d in diags if d.severity.value == "error")
    assert (first.code, first.span.line) == (code, line), first.format()
    assert text in first.message, first.format()
    assert first.span.col == col, first.format()


def test_bad_element_names_are_located(specs: Path) -> None:
    old = 'visible: {element: [pl, i], when: "pl == p or shown[pl, i]"}'
    for new, code, text in (
        ('visible: {element: [p, i], when: "shown[p, i]"}', "E013", "element index name 'p' is reserved"),
        ('visible: {element: [round, i], when: "true"}', "E031", "'round' is already defined"),
        ('visible: {element: [pl, i], when: "pl == p or shwn[pl, i]"}', "E030", "did you mean 'shown'?"),
    ):
        spec, diags = envc.lint(str(write(specs, f"elem_{code}", (old, new))))
        assert spec is None
        first = next(d for d in diags if d.severity.value == "error")
        assert first.code == code and text in first.message, first.format()
        assert first.span.line == REVEAL.splitlines().index(f"    {old}") + 1, first.format()


def test_editor_knows_visibility_rules(specs: Path) -> None:
    """Hover in a rule: the element names and `p` are locals, state names resolve as elsewhere."""
    from envc.lsp.features import Outline, hover

    path = write(specs, "editor")
    lines = REVEAL.split("\n")
    outline = Outline.of(str(path), REVEAL)
    row = next(i for i, text in enumerate(lines) if "when:" in text)
    for word, want in (("pl ==", "pl: i32"), ("shown", "state shown: bool[2]"), (" p ", "p: i32")):
        got = hover(outline, row, lines[row].index(word) + 1)
        assert got is not None and want in got[0], (word, got)
