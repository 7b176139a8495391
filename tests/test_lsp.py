"""`envc lsp` driven by pytest-lsp: the real server as a subprocess over stdio, one per module."""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

import envc

ROOT = Path(__file__).resolve().parent.parent
TTT = (ROOT / "specs" / "tic_tac_toe.yaml").read_text(encoding="utf-8")
TCG = ROOT / "tests" / "specs" / "tcg_mechanics.yaml"

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[sys.executable, "-m", "envc.cli", "lsp"]))
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(
        lsp.InitializeParams(capabilities=pytest_lsp.client_capabilities("visual-studio-code"))
    )
    yield
    await lsp_client.shutdown_session()


# ---- helpers ------------------------------------------------------------------------------------------------


def _open(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    uri = path.resolve().as_uri()
    client.diagnostics.pop(uri, None)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="yaml", version=version, text=text)
        )
    )
    return uri


def _replace(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.diagnostics.pop(uri, None)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def _diagnostics(
    client: LanguageClient, uri: str, until: Callable[[Sequence[lsp.Diagnostic]], bool] = lambda d: True
) -> list[lsp.Diagnostic]:
    """The diagnostics published for `uri` once they satisfy `until` (30 s at most)."""
    for _ in range(3000):
        got = client.diagnostics.get(uri)
        if got is not None and until(got):
            return list(got)
        await asyncio.sleep(0.01)
    raise AssertionError(f"no matching diagnostics for {uri}: {client.diagnostics.get(uri)}")


def _at(text: str, needle: str, offset: int = 0) -> lsp.Position:
    """The LSP position (UTF-16) of `needle` (+ `offset` characters) in `text`."""
    k = text.index(needle) + offset
    line = text.count("\n", 0, k)
    start = text.rfind("\n", 0, k) + 1
    return lsp.Position(line=line, character=len(text[start:k].encode("utf-16-le")) // 2)


async def _hover(client: LanguageClient, uri: str, pos: lsp.Position) -> str | None:
    h = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=pos)
    )
    if h is None:
        return None
    assert isinstance(h.contents, lsp.MarkupContent)
    return h.contents.value


async def _complete(client: LanguageClient, uri: str, pos: lsp.Position) -> dict[str, lsp.CompletionItem]:
    r = await client.text_document_completion_async(
        lsp.CompletionParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=pos)
    )
    items = r.items if isinstance(r, lsp.CompletionList) else (r or [])
    return {i.label: i for i in items}


async def _definition(client: LanguageClient, uri: str, pos: lsp.Position) -> lsp.Location:
    r = await client.text_document_definition_async(
        lsp.DefinitionParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=pos)
    )
    assert isinstance(r, lsp.Location), r
    return r


# ---- diagnostics ---------------------------------------------------------------------------------------------


async def test_error_in_rule_body_is_located_then_cleared(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "ttt.yaml"
    bad = TTT.replace("      current_player = 1 - current_player", "      current_player = 1 - curent_player")
    uri = _open(client, path, bad)
    diags = await _diagnostics(client, uri)
    (d,) = diags
    assert (d.code, d.source, d.severity) == ("E030", "envc", lsp.DiagnosticSeverity.Error)
    assert "curent_player" in d.message and "did you mean 'current_player'" in d.message
    assert d.range.start == _at(bad, "curent_player")
    assert d.range.end == _at(bad, "curent_player", len("curent_player"))
    # exactly what `envc lint` says, at the same place
    (want,) = envc.lint(str(path), bad)[1]
    assert (d.range.start.line + 1, d.range.start.character + 1, d.message) == (
        want.span.line,
        want.span.col,
        want.message,
    )
    _replace(client, uri, TTT, 2)
    assert await _diagnostics(client, uri) == []


async def test_syntax_error_in_a_block_body_and_in_a_flow_scalar(client: LanguageClient, tmp_path: Path) -> None:
    bad = TTT.replace("    let theirs = opponent(mine)", "    let theirs = opponent(mine))").replace(
        'legal: "board[row, col] == Mark.empty"', 'legal: "board[row, col] == = Mark.empty"'
    )
    uri = _open(client, tmp_path / "syntax.yaml", bad)
    diags = await _diagnostics(client, uri)
    assert [(d.code, d.range.start) for d in diags] == [
        ("E020", _at(bad, "= Mark.empty")),
        ("E020", _at(bad, "opponent(mine))", len("opponent(mine)"))),
    ]


async def test_every_lint_diagnostic_is_published(client: LanguageClient, tmp_path: Path) -> None:
    """Several errors of several kinds, some in data files: the same set as `envc lint`, each file to its URI."""
    spec = tmp_path / "cards.yaml"
    src = ROOT / "tests" / "bad_specs"
    shutil.copy(src / "cards_bad_int.csv", tmp_path / "cards_bad_int.csv")
    text = (src / "e014_csv_bad_int.yaml").read_text(encoding="utf-8") + "reward: hp[p] + nope\nplayers: 3\n"
    uri = _open(client, spec, text)
    diags = await _diagnostics(client, uri)
    _, want = envc.lint(str(spec.resolve()), text)
    csv_uri = (tmp_path / "cards_bad_int.csv").resolve().as_uri()
    csv = await _diagnostics(client, csv_uri)
    got = {(uri, d.range.start.line + 1, d.range.start.character + 1, d.code, d.message) for d in diags}
    got |= {(csv_uri, d.range.start.line + 1, d.range.start.character + 1, d.code, d.message) for d in csv}
    expect = {(Path(w.span.path).resolve().as_uri(), w.span.line, w.span.col, w.code, w.message) for w in want}
    assert got == expect and len(want) >= 3 and {w.code for w in want} >= {"E014", "E030"}
    # fixing the data file's problem is seen after a save; its diagnostics are cleared
    (tmp_path / "cards_bad_int.csv").write_text("name,hp,cost\nPikachu,60,1\nCharizard,120,3\nBulbasaur,70,1\n")
    client.diagnostics.pop(csv_uri, None)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert await _diagnostics(client, csv_uri) == []


async def test_positions_are_utf16(client: LanguageClient, tmp_path: Path) -> None:
    """A character outside the BMP before the error counts as two UTF-16 units, as LSP clients count."""
    bad = TTT.replace(
        'winner: {type: Mark, init: empty, doc: "The mark that completed a line, or empty"}',
        'winner: {doc: "🏆 winner", type: Marc, init: empty}',
    )
    uri = _open(client, tmp_path / "emoji.yaml", bad)
    diags = await _diagnostics(client, uri)
    assert diags[0].code == "E030" and diags[0].range.start == _at(bad, "Marc")


async def test_garbage_gets_a_diagnostic_and_the_server_keeps_serving(client: LanguageClient, tmp_path: Path) -> None:
    modeline = "# yaml-language-server: $schema=../docs/envc.schema.json\n"
    texts = [
        "\x00\x01\x02 binary \xff\ufffe",
        "state: [unclosed\n  - : :\n\t{{{",
        modeline + "- just\n- a list\n",
        modeline,
        "name: x\nstate:\n  a: " + "[" * 5000,
        "actions:\n  a:\n    effect: |\n" + "      " + "(" * 3000 + "\n",
    ]
    for i, text in enumerate(texts):
        uri = _open(client, tmp_path / f"garbage{i}.yaml", text)
        diags = await _diagnostics(client, uri)
        assert diags and all(d.severity == lsp.DiagnosticSeverity.Error for d in diags), (text[:30], diags)
        assert await _hover(client, uri, lsp.Position(line=0, character=1)) is None
        await _complete(client, uri, lsp.Position(line=1, character=3))
        await client.text_document_definition_async(
            lsp.DefinitionParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=9, character=99)
            )
        )
    # the next request on a good document is answered
    good = _open(client, tmp_path / "good.yaml", TTT)
    assert await _diagnostics(client, good) == []
    assert "state board" in (await _hover(client, good, _at(TTT, "board[row, col] = turn")) or "")


async def test_half_typed_edits(client: LanguageClient, tmp_path: Path) -> None:
    """Typing one character at a time through a rule body: every version gets diagnostics, the last are clean."""
    path = tmp_path / "typing.yaml"
    uri = _open(client, path, TTT)
    await _diagnostics(client, uri)
    target = "      turn = opponent(turn)\n"
    at = TTT.index(target) + len(target)
    addition = "      let k = sum(i32(board[i // 3, i % 3] == Mark.x) for i in range(9))\n"
    version = 1
    for n in range(1, len(addition) + 1):
        version += 1
        _replace(client, uri, TTT[:at] + addition[:n] + TTT[at:], version)
    # intermediate versions may be skipped while a check runs; the newest one is always checked and published
    bad = TTT[:at] + addition[:-3] + "\n" + TTT[at:]
    want = [(w.code, w.span.line) for w in envc.lint(str(path), bad)[1]]
    assert want and want[0][0] == "E020"
    version += 1
    _replace(client, uri, bad, version)
    await _diagnostics(client, uri, lambda ds: [(d.code, d.range.start.line + 1) for d in ds] == want)
    for n in range(len(addition) - 2, len(addition) + 1):
        version += 1
        _replace(client, uri, TTT[:at] + addition[:n] + TTT[at:], version)
    assert envc.lint(str(path), TTT[:at] + addition + TTT[at:])[1] == []
    await _diagnostics(client, uri, lambda ds: not ds)


async def test_other_yaml_files_are_left_alone(client: LanguageClient, tmp_path: Path) -> None:
    """The server is attached to every YAML file: a CI workflow or a playbook gets no envc diagnostics."""
    for name, text in [
        ("ci.yaml", "name: CI\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n"),
        ("play.yaml", "- hosts: all\n  tasks: []\n"),
        ("empty.yaml", ""),
    ]:
        uri = _open(client, tmp_path / name, text)
        assert await _diagnostics(client, uri) == []
        assert await _complete(client, uri, lsp.Position(line=1, character=0)) == {}
    # once it has a spec section, it is checked
    _replace(client, uri, "name: x\nstate: {a: i9}\n", 2)
    codes = [d.code for d in await _diagnostics(client, uri)]
    assert codes and set(codes) <= {"E010"}  # the missing sections


# ---- hover -------------------------------------------------------------------------------------------------------


async def test_hover(client: LanguageClient) -> None:
    text = TCG.read_text(encoding="utf-8")
    uri = _open(client, TCG, text)
    await _diagnostics(client, uri)
    cases = {
        ("board[pl, 0].card", 0): ["state board: Slot[SPOTS], per player", "spot 0 = Active"],
        ("board[pl, 0].card", 13): ["Slot.card: i16"],
        ("cards[dfn].weakness == cards[atk].etype", 11): ["cards[i].weakness: EType", "default none"],
        ("Kind.energy and", 5): ["Kind.energy", "member 5 of enum Kind"],
        ("Kind.energy and", 0): ["enum Kind: none | basic | stage1 | item | supporter | energy"],
        ("atk_cost(c, i, t) for t in range(COST_W)", 0): ["function atk_cost(c: i32, i: i32, t: i32) -> i32"],
        ("RESISTANCE, 0)", 0): ["const RESISTANCE: i32 = 30"],
        ("capacity: DECK_SIZE", 10): ["param DECK_SIZE: i32 = 20 (static)", "Cards per deck"],
        ("all(board[pl, 0].energy[t]", 0): ["all(bools or generator) -> bool", "Whether every element is true"],
        ("typed_ok and", 0): ["let typed_ok: bool"],  # the type from the IR of the clean spec
        ("hand[pl].count", 9): ["hand.count: i32"],
        ("hand[pl].count", 0): ["zone hand: i16", "capacity DECK_SIZE", "per player", "visible: owner"],
    }
    for (needle, offset), want in cases.items():
        got = await _hover(client, uri, _at(text, needle, offset))
        assert got is not None, needle
        for w in want:
            assert w in got, (needle, got)
    assert await _hover(client, uri, _at(text, "let typed_ok", 1)) is None  # a keyword


# ---- completion ----------------------------------------------------------------------------------------------------


async def test_completion_in_rule_bodies(client: LanguageClient, tmp_path: Path) -> None:
    # an enum's members after `Mark.` while the line is half-typed
    text = TTT.replace("      turn = opponent(turn)\n", "      turn = opponent(turn)\n      let z = Mark.\n")
    uri = _open(client, tmp_path / "complete.yaml", text)
    items = await _complete(client, uri, _at(text, "Mark.\n", 5))
    assert set(items) == {"empty", "x", "o"}
    assert items["x"].kind == lsp.CompletionItemKind.EnumMember
    # names in scope in the observation body: locals above, loop variables, `p`, observation fields, builtins
    pos = _at(text, "        planes[row, col, 1]")
    names = set(await _complete(client, uri, pos))
    assert {"mine", "theirs", "row", "col", "p", "planes", "board", "turn", "opponent", "count", "Mark"} <= names
    assert {"current_player", "num_players", "if", "let"} <= names
    assert not {"m", "player", "rows"} & names  # another function's params and locals
    assert "coin" not in names  # randomness is not allowed in the observation (a pure context)


async def test_completion_of_columns_record_parts_and_scopes(client: LanguageClient) -> None:
    text = TCG.read_text(encoding="utf-8")
    uri = _open(client, TCG, text)
    await _diagnostics(client, uri)
    columns = await _complete(client, uri, _at(text, "cards[dfn].weakness", len("cards[dfn].")))
    assert {"hp", "kind", "weakness", "cost", "effect"} <= set(columns)
    assert columns["hp"].detail and "i16" in columns["hp"].detail
    parts = await _complete(client, uri, _at(text, "board[pl, 0].card", len("board[pl, 0].")))
    assert {"card", "energy", "damage", "cond"} <= set(parts) and "hp" not in parts
    # inside `can_pay`: its params and the `let` above the cursor, not the one below
    pos = _at(text, "return typed_ok and")
    scope = set(await _complete(client, uri, pos))
    assert {"pl", "i", "c", "typed_ok", "cards", "board", "atk_cost", "sum"} <= scope
    assert "d" not in scope  # a local of attack_damage


async def test_completion_of_section_keys(client: LanguageClient, tmp_path: Path) -> None:
    text = TTT + "rew\n"
    uri = _open(client, tmp_path / "keys.yaml", text)
    items = await _complete(client, uri, lsp.Position(line=text.count("\n") - 1, character=3))
    assert {"continuous_action", "illegal_action_penalty"} <= set(items)
    assert "state" not in items  # already there
    assert items["illegal_action_penalty"].documentation is not None
    # a key of a state field (long form), while the YAML is broken by the half-typed key
    text2 = TTT.replace("  winner: {type", "  score:\n    per_\n  winner: {type")
    uri2 = _open(client, tmp_path / "keys2.yaml", text2)
    keys = await _complete(client, uri2, _at(text2, "    per_", 8))
    assert {"type", "shape", "per_player", "init", "visible", "zone", "capacity"} <= set(keys)


# ---- go to definition -----------------------------------------------------------------------------------------------


async def test_go_to_definition(client: LanguageClient) -> None:
    text = TCG.read_text(encoding="utf-8")
    uri = _open(client, TCG, text)
    await _diagnostics(client, uri)
    cases = [
        (("return typed_ok and", 7), ("  let typed_ok", 6)),  # a let local
        (("atk_cost(c, i, t) for t in range(COST_W)", 0), ("  atk_cost: {", 2)),  # a function
        (("Kind.energy and", 5), ("supporter, energy]", 11)),  # an enum member
        (("cards[dfn].weakness", 11), ("      weakness:", 6)),  # a table column
        (("board[pl, 0].energy[t]", 13), ("      energy: {type: i8", 6)),  # a record part
        (("board[pl, 0].energy[t]", 0), ("  board: {type: Slot", 2)),  # a state field
        (("type: Slot,", 6), ("  Slot:\n", 2)),  # a type name in the YAML
    ]
    for (use, uoff), (decl, doff) in cases:
        loc = await _definition(client, uri, _at(text, use, uoff))
        assert loc.uri == uri and loc.range.start == _at(text, decl, doff), (use, loc.range.start)
    # the data file of a table
    loc = await _definition(client, uri, _at(text, "file: tcg_cards.csv", 7))
    assert loc.uri == (TCG.parent / "tcg_cards.csv").resolve().as_uri()
