"""envc synthesize: the real anthropic SDK talks to a loopback HTTP server that replays recorded Messages API
responses (tests/fixtures/llm/ember_league, hand-written: see its README; the outline comes first, the first
`attack` answer has a type error, the second repairs it); the real loop merges, lints, runs L1 and sends the
located diagnostics back."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import envc
from envc.cli import app
from envc.scrapers import scrape
from envc.synthesize import Item, merge, parse_answer
from envc.synthesize.chunks import repeated, sections_of
from envc.synthesize.llm import Prices, Usage, load_prices
from envc.synthesize.prompts import reference
from envc.verify import level1

FIXTURES = Path(__file__).parent / "fixtures"
REPLIES = FIXTURES / "llm" / "ember_league"
_spec = importlib.util.spec_from_file_location("replay_server", FIXTURES / "llm" / "replay_server.py")
assert _spec is not None and _spec.loader is not None
replay_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(replay_server)
PAGES = FIXTURES / "scrape" / "emberdb"
runner = CliRunner()


@pytest.fixture()
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ThreadingHTTPServer, Any]]:
    server, handler = replay_server.start()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield server, handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def draft(tmp_path: Path) -> Path:
    """The draft `envc scrape` writes for the saved EmberDB rules page and card list."""
    path = tmp_path / "draft.yaml"
    res = runner.invoke(
        app, ["scrape", str(PAGES / "rules.html"), str(PAGES / "cards.html"), "--from-file", "-o", str(path)]
    )
    assert res.exit_code == 0, res.output
    return path


def _synthesize(draft: Path, out: Path, *extra: str) -> Any:
    args = ["synthesize", str(draft), "-o", str(out), "--episodes", "2", "--max-steps", "60", *extra]
    return runner.invoke(app, args)


def _expected_cost(names: list[str]) -> float:
    """Cost of the recorded replies, from their usage fields and the shipped price of claude-sonnet-4-6."""
    p = load_prices()["claude-sonnet-4-6"]
    total = 0.0
    for n in names:
        u = json.loads((REPLIES / f"{n}.json").read_text())["usage"]
        usage = Usage(
            u["input_tokens"], u["output_tokens"], u["cache_read_input_tokens"], u["cache_creation_input_tokens"]
        )
        total += usage.cost(p)
    return total


ITEMS = [
    "game", "play_creature_bench", "attach_energy_card", "attack", "end_turn", "knock_outs", "special_conditions",
    "effect_heal_damage_creature", "effect_draw_card", "effect_flip_coin_heads_attack_more_damage",
    "effect_flip_coin_heads_defending_creature_paralyzed", "effect_defending_creature_poisoned",
]  # fmt: skip


def test_replayed_synthesis_turns_the_draft_into_a_spec_that_passes_l1(api: Any, draft: Path, tmp_path: Path) -> None:
    server, _ = api
    out = tmp_path / "out" / "ember.yaml"
    report = tmp_path / "report.yaml"
    res = _synthesize(draft, out, "--report", str(report))
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output

    # the spec lints clean (no W001 left) and passes L1 on the reference interpreter
    spec, diags = envc.lint(str(out))
    assert spec is not None and diags == []
    env = envc.build(spec, strict=False)
    checks = level1(spec, env, episodes=8, seed=3, max_steps=300)
    assert [(c.name, c.failures) for c in checks if not c.passed] == []
    assert all(c.cases > 0 for c in checks)
    # written atomically, no temp file left; the outline is saved next to the spec
    assert sorted(p.name for p in out.parent.iterdir()) == ["ember.outline.yaml", "ember.yaml"]
    assert yaml.safe_load((out.parent / "ember.outline.yaml").read_text())["game"] == {
        "sections": ["s1", "s2", "s3", "s4", "s5", "s6"]
    }
    doc = yaml.safe_load(out.read_text())
    assert "todo" not in doc and "draft_pass" not in doc["actions"] and "draft_turn" not in doc["state"]
    assert [r["name"] for r in doc["rules"]] == ["special_conditions", "knock_outs", "next_turn"]
    assert "dmg = dmg * 2\n" in doc["actions"]["attack"]["effect"]
    # effect templates: the heal amount is a per-card argument that the draft's apply_effect passes on
    assert doc["procedures"]["effect_heal_damage_creature"]["params"] == {"pl": "i32", "damage": "i32"}
    heal = "effect_heal_damage_creature(pl, i32(cards[c].text_args[slot, 0]))"
    assert heal in doc["procedures"]["apply_effect"]["body"]

    # one request per answer: the outline, then the items; the type error in the first `attack` answer cost one
    # repair
    requests = server.requests
    names = [replay_server.request_key(r["body"]["messages"])[0] for r in requests]
    assert names == ["outline", *ITEMS[:4], "attack", *ITEMS[4:]]
    outline = requests[0]["body"]["messages"][0]["content"]
    assert len(outline) == 1 and "Plan the spec of `ember_league_tcg`" in outline[0]["text"]
    assert "Knocked Out: it goes to its owner's discard pile" in outline[0]["text"]  # every rule section
    assert "rows: <10 rows, not shown>" in outline[0]["text"] and "Cindercub, supertype" not in outline[0]["text"]
    doc_draft = yaml.safe_load(draft.read_text())
    sections = sections_of([Item(t["name"], t["target"], t["source"], t["text"]) for t in doc_draft["todo"]],
                           doc_draft["tables"])  # fmt: skip
    item_requests = requests[1:]
    for r in requests:
        assert r["path"] == "/v1/messages" and r["headers"]["authorization"] == "Bearer sk-ant-test-key"
        assert r["headers"]["anthropic-version"] and r["headers"]["user-agent"].startswith("Anthropic/Python 2.")
        body = r["body"]
        assert body["model"] == "claude-sonnet-4-6" and body["max_tokens"] == 16000
        # prompt caching: the system prompt and the source block are breakpoints, plus the last user block
        (system,) = body["system"]
        assert system["cache_control"] == {"type": "ephemeral"}
        assert "<language_reference>" in system["text"] and "## 12. Zones" in system["text"]
        assert "## 21. Command line" not in system["text"]
        assert '<example path="tcg_mechanics.yaml">' in system["text"]
        assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
        assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
        # no rule section and no table's rows twice in one request
        texts = [b["text"] for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
        assert repeated(texts, sections, doc_draft["tables"]) == []
        marks = [
            b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"] if "cache_control" in b
        ]
        assert len(marks) + 1 <= 4
    # every request shares the same cached system prompt byte for byte; the game, action and rule items share the
    # tables block with the rows, the effect procedures (whose code reads no table) one without them
    assert len({json.dumps(r["body"]["system"]) for r in requests}) == 1
    firsts = [(n, r["body"]["messages"][0]["content"][0]["text"])
              for n, r in zip(names[1:], item_requests, strict=True)]  # fmt: skip
    (tables,) = {t for n, t in firsts if not n.startswith("effect_")}
    assert "name: Cindercub" in tables and "removed: 'at the end of its owner''s next turn'" in tables
    assert "## " not in tables
    (no_rows,) = {t for n, t in firsts if n.startswith("effect_")}
    assert "Cindercub" not in no_rows and "this item does not need their rows" in no_rows
    # each item request carries only its own sections: the knock-out rules reach the knock_outs item only
    knock_out = "Knocked Out: it goes to its owner's discard pile"
    assert [n for n, r in zip(names[1:], item_requests, strict=True)
            if knock_out in r["body"]["messages"][0]["content"][1]["text"]] == ["knock_outs"]  # fmt: skip
    assert "Each player draws 5 cards" in item_requests[0]["body"]["messages"][0]["content"][1]["text"]

    first_attack = requests[4]["body"]["messages"]
    item_prompt = first_attack[0]["content"][1]["text"]
    assert "Formalize the todo item `attack` (target: `actions.attack`)" in item_prompt
    assert "Write `actions.attack`: `params`" in item_prompt  # the interface contract
    assert "Choose one of your Active Creature's attacks" in item_prompt  # the source text
    assert "every invariant in `invariants` holds" in item_prompt  # the tests it must pass
    assert "rows: <10 rows, in the tables block>" in item_prompt and "playing()" in item_prompt  # the current spec
    assert '<section id="s3" title="Card types"' in item_prompt  # the outline gave attack the energy-cost rules
    repair = requests[5]["body"]["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert "dmg = dmg * 2.0" in repair[1]["content"]
    feedback = repair[2]["content"][0]["text"]
    assert "Your answer for `attack` does not pass yet (attempt 2 of 4)" in feedback
    assert "ember.yaml:" in feedback and "error[E040]" in feedback and "(in actions.attack.effect)" in feedback
    assert "|         dmg = dmg * 2.0" in feedback  # the offending line, located
    effect_prompt = requests[-1]["body"]["messages"][0]["content"][1]["text"]
    assert "effect_defending_creature_poisoned(pl: i32)" in effect_prompt

    # the cost report: iterations, tokens, cost from the usage fields and the price table, status
    rep = yaml.safe_load(report.read_text())
    by_name = {i["name"]: i for i in rep["items"]}
    assert [i["name"] for i in rep["items"]] == ["outline", *ITEMS]
    assert all(i["status"] == "passed" for i in rep["items"])
    assert rep["outline"] == str(out.parent / "ember.outline.yaml")
    assert by_name["attack"]["iterations"] == 2 and by_name["game"]["iterations"] == 1
    recorded = json.loads((REPLIES / "game.json").read_text())["usage"]
    assert by_name["game"]["cache_write_tokens"] == recorded["cache_creation_input_tokens"]
    assert by_name["game"]["output_tokens"] == recorded["output_tokens"]
    want = _expected_cost(["outline", *ITEMS[:4], "attack.2", *ITEMS[4:]])
    assert rep["cost_usd"] == pytest.approx(want, abs=1e-5)
    assert f"{want:.4f}" in res.output and "13/13 passed" in res.output
    # the README shows this run's report: its rows are this report's figures, not an older replay's
    readme = (FIXTURES.parent.parent / "README.md").read_text()
    shown = {}
    for line in readme.split("```\n$ .venv/bin/python tests/fixtures/llm/replay_server.py")[1].splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 8 and cells[0] in by_name:
            shown[cells[0]] = [int(c.replace(",", "")) for c in cells[1:6]] + [float(cells[6])]
    keys = ("iterations", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    assert {n: v[:5] for n, v in shown.items()} == {n: [i[k] for k in keys] for n, i in by_name.items()}
    assert all(abs(shown[n][5] - i["cost_usd"]) <= 6e-5 for n, i in by_name.items())  # shown to 4 places


def test_without_an_api_key_synthesize_says_what_it_needs(
    draft: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing may be contacted
    out = tmp_path / "spec.yaml"
    res = _synthesize(draft, out)
    assert res.exit_code == 2
    assert "ANTHROPIC_API_KEY" in res.output and "Traceback" not in res.output
    assert not out.exists()
    # every other command works without a key
    assert runner.invoke(app, ["lint", str(draft)]).exit_code == 0
    assert runner.invoke(app, ["run", str(draft), "--episodes", "1", "--max-steps", "5"]).exit_code == 0


def test_api_errors_are_one_line_and_nothing_is_written(api: Any, draft: Path, tmp_path: Path) -> None:
    server, handler = api
    handler.failures.append(
        (401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    )
    out = tmp_path / "spec.yaml"
    res = _synthesize(draft, out)
    assert res.exit_code == 1
    assert "Anthropic API error 401 authentication_error: invalid x-api-key" in res.output
    assert "Traceback" not in res.output and not out.exists()
    assert len(server.requests) == 1


def test_overloaded_api_is_retried_by_the_sdk(api: Any, draft: Path, tmp_path: Path) -> None:
    server, handler = api
    handler.failures.append((529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
    res = _synthesize(draft, tmp_path / "spec.yaml", "--only", "game")
    assert res.exit_code == 0, res.output
    assert len(server.requests) == 3  # the 529, then the replayed outline and game


def test_dollar_budget_stops_before_the_next_call(api: Any, draft: Path, tmp_path: Path) -> None:
    server, _ = api
    out = tmp_path / "spec.yaml"
    game = _expected_cost(["game"])
    res = _synthesize(draft, out, "--max-cost", f"{game * 1.5:.4f}", "--no-outline")
    assert res.exit_code == 1
    assert len(server.requests) == 1  # a second call could cost as much as the first: over the budget
    spec, diags = envc.lint(str(out))  # what passed is kept; the rest is still todo (W001)
    assert spec is not None and {d.code for d in diags} == {"W001"} and len(diags) == 11
    assert "budget" in res.output


def test_iteration_budget_leaves_the_item_todo(api: Any, draft: Path, tmp_path: Path) -> None:
    server, _ = api
    out = tmp_path / "spec.yaml"
    res = _synthesize(draft, out, "--only", "game", "--only", "attack", "--max-iterations", "1", "--no-outline")
    assert res.exit_code == 1
    assert len(server.requests) == 2
    assert "E040" in res.output  # why attack failed, in the report
    doc = yaml.safe_load(out.read_text())
    assert [t["name"] for t in doc["todo"]][:2] == ["play_creature_bench", "attach_energy_card"]
    assert "attack" in [t["name"] for t in doc["todo"]]
    assert doc["actions"]["attack"]["legal"] is False  # the stub stays
    assert "draft_pass" in doc["actions"]  # actions are left: the placeholder keeps the game playable


def test_answers_are_parsed_safely() -> None:
    ok, problems = parse_answer("Sure.\n```yaml\nactions:\n  a: {legal: true}\n```\n")
    assert ok == {"actions": {"a": {"legal": True}}} and problems == []
    for text, msg in [
        ("no block at all", "found no ```yaml block"),
        ("```yaml\na: 1\n```\n```yaml\nb: 2\n```", "found 2 ```yaml blocks"),
        ("```yaml\na: &x [1]\nb: *x\n```", "anchors and aliases are not allowed"),
        ("```yaml\na: !!python/object/apply:os.system [ls]\n```", "YAML tags"),
        ("```yaml\na: [1\nb: 2\n```", "YAML syntax error"),
    ]:
        value, problems = parse_answer(text)
        assert value is None and msg in problems[0].message, (text, problems)
    _, problems = parse_answer("```yaml\nx: 1\ny: : 2\n```")
    assert problems[0].where == "your yaml block, line 2, column 4"


def test_merge_keeps_each_item_to_its_contract() -> None:
    spec = {
        "name": "g", "types": {"Energy": {"enum": ["fire", "none"]}}, "state": {"draft_turn": "i32"},
        "actions": {"draft_pass": {}, "attack": {"legal": False}},
        "procedures": {"effect_x": {"params": {"pl": "i32"}, "body": "pass"}},
        "todo": [{"name": "game", "text": "t"}, {"name": "attack", "target": "actions.attack", "text": "t"},
                 {"name": "effect_x", "target": "procedures.effect_x", "text": "t"}],
        "observation": {"fields": {"s": "i32"}, "body": "s = draft_turn"},
    }  # fmt: skip
    game, attack, effect = (Item("game", "module", "", ""), Item("attack", "actions.attack", "", ""),
                            Item("effect_x", "procedures.effect_x", "", ""))  # fmt: skip
    pending = [game, attack, effect]
    base = {"state": {"hp": "i16"}, "observation": {"fields": {"o": "i32"}, "body": "o = hp"}}
    _, problems = merge(spec, game, {**base, "types": {"Energy": {"enum": ["x"]}}}, pending)
    assert problems == ["`types.Energy` is declared by the draft (data or a stub); do not redeclare it"]
    _, problems = merge(spec, game, {**base, "actions": {"attack": {"legal": True}}}, pending)
    assert problems == ["`actions.attack` is formalized by its own todo item; leave it out"]
    _, problems = merge(spec, game, {**base, "tables": {}}, pending)
    assert problems == ["`tables` comes from the draft; leave it out of the answer"]
    merged, problems = merge(spec, game, base, pending)
    assert (
        problems == []
        and merged["state"] == {"hp": "i16"}
        and [t["name"] for t in merged["todo"]] == ["attack", "effect_x"]
    )
    assert merged["actions"]["draft_pass"] == {
        "doc": "placeholder that keeps the game playable until the last action or rule item is formalized"
    }
    _, problems = merge(merged, attack, {"actions": {"attack": {}, "other": {}}}, pending[1:])
    assert problems == ["write `actions` as a mapping with exactly one entry, `attack` (a mapping)"]
    _, problems = merge(merged, attack, {"actions": {"attack": {}}, "state": {"hp": "i8"}}, pending[1:])
    assert problems == ["`state.hp` exists already; add new names instead of changing existing ones"]
    done, problems = merge(
        merged, attack, {"actions": {"attack": {"effect": "pass"}}, "state": {"mp": "i8"}}, pending[1:]
    )
    assert problems == [] and "draft_pass" not in done["actions"] and done["state"]["mp"] == "i8"
    _, problems = merge(done, effect, {"procedures": {"effect_x": {"params": {"q": "i32"}, "body": "pass"}}}, [effect])
    assert problems == ["`procedures.effect_x` must keep the params of the contract: {'pl': 'i32'}"]


def test_prices_and_reference_are_shipped() -> None:
    prices = load_prices()
    assert prices["claude-sonnet-4-6"] == Prices(3.0, 15.0, 3.75, 0.30)
    assert prices["gpt-4.1"] == Prices(2.0, 8.0, 2.0, 0.50)
    assert Usage(1_000_000, 100_000, 2_000_000, 10_000).cost(prices["claude-sonnet-4-6"]) == pytest.approx(
        3.0 + 1.5 + 0.6 + 0.0375
    )
    ref = reference()
    assert ref.startswith("# The envc spec language") and "### 4.13 `todo`" in ref and "## 20. Python API" not in ref


def test_draft_scraped_from_files_is_the_draft_the_fixtures_answer() -> None:
    todo = [t.name for t in scrape([str(PAGES / "rules.html"), str(PAGES / "cards.html")], from_files=True).todo]
    assert todo == ITEMS
    assert sorted(p.stem.split(".")[0] for p in REPLIES.glob("*.json")) == sorted([*ITEMS, "attack", "outline"])
    for p in REPLIES.glob("*.json"):  # recorded answers say they were written by hand
        assert json.loads(p.read_text())["_fixture"]["hand_written"] is True


@pytest.mark.parametrize(
    ("args", "edit", "message"),
    [
        (["--only", "nope"], None, "--only nope: no such todo item"),
        (["--max-request-tokens", "10"], None, "--max-request-tokens must be at least 1000"),
        (["--max-iterations", "0"], None, "--max-iterations must be at least 1, got 0"),
        (["--max-cost", "0"], None, "--max-cost must be more than 0"),
        ([], ("state:\n  draft_turn:", "state:\n  draft turn:"), "does not lint"),
        ([], ("  target: module\n", "  target: somewhere\n"), "target 'somewhere' is not one of"),
        ([], ("  target: module\n", "  target: module\n  target: module\n"), "error[E031]: duplicate key 'target'"),
        ([], ("name: ember_league_tcg", "name: &a ember_league_tcg"), "error[E003]: YAML anchors and aliases are not"),
    ],
)
def test_bad_configuration_or_draft_is_one_line_before_any_call(
    api: Any, draft: Path, tmp_path: Path, args: list[str], edit: tuple[str, str] | None, message: str
) -> None:
    server, _ = api
    if edit is not None:
        text = draft.read_text()
        assert edit[0] in text
        draft.write_text(text.replace(edit[0], edit[1], 1))
    res = _synthesize(draft, tmp_path / "spec.yaml", *args)
    assert res.exit_code == 2 and message in res.output, res.output
    assert "Traceback" not in res.output and server.requests == []


def test_the_outline_writes_effect_texts_as_calls_of_a_few_general_kinds(
    monkeypatch: pytest.MonkeyPatch, draft: Path, tmp_path: Path
) -> None:
    """tests/fixtures/llm/ember_calls (hand-written answers): the outline plans four general effect kinds and
    gives each of the draft's five `effect_*` procedures one call of them (`calls`); those five are never
    requested, the four general kinds are, and the spec lints and plays."""
    server, _ = replay_server.start(replies=FIXTURES / "llm" / "ember_calls")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        out = tmp_path / "out" / "ember.yaml"
        res = _synthesize(draft, out)
    finally:
        server.shutdown()
        server.server_close()
    assert res.exit_code == 0, res.output
    names = [replay_server.request_key(r["body"]["messages"])[0] for r in server.requests]
    general = ["give_condition", "heal", "draw_cards", "attack_bonus"]
    assert not [n for n in names if n.startswith("effect_")] and set(general) <= set(names)
    assert len(names) == 13  # 18 with an item per effect text
    assert "5 draft procedure(s) written as calls of the planned ones" in res.output
    spec, diags = envc.lint(str(out))
    assert spec is not None and diags == []
    checks = level1(spec, envc.build(spec, strict=False), episodes=8, seed=3, max_steps=300)
    assert [(c.name, c.failures) for c in checks if not c.passed] == []
    procs = yaml.safe_load(out.read_text())["procedures"]
    assert procs["effect_flip_coin_heads_defending_creature_paralyzed"]["body"] == (
        "give_condition(pl, Condition.paralyzed, true)")
    assert "if not flip or coin():" in procs["give_condition"]["body"]


def test_calls_in_an_outline_are_checked(draft: Path) -> None:
    from envc.synthesize.items import items_of
    from envc.synthesize.outline import apply_outline

    doc = yaml.safe_load(draft.read_text())
    items = items_of(doc)
    base = yaml.safe_load((FIXTURES / "llm" / "ember_calls" / "answers" / "outline.yaml").read_text())
    plan, problems = apply_outline(doc, items, sections_of(items, {}), base)
    assert problems == [] and plan is not None and len(plan.called) == 5
    assert "effect_draw_card" not in {t["name"] for t in plan.spec["todo"]}
    assert {"give_condition", "draw_cards"} <= {t["name"] for t in plan.spec["todo"]}
    cases = [
        ({"effect_nope": "heal(pl, 1)"}, "'effect_nope' is not a procedure todo item of the draft"),
        ({"effect_draw_card": "draw_cards(pl, 1)\nheal(pl, 1)"}, "must be one call on one line"),
        ({"effect_draw_card": "draw(pl)"}, "calls 'draw', which is not a procedure this outline plans"),
        ([1], "`calls` must be a mapping"),
    ]
    for calls, message in cases:
        plan, problems = apply_outline(doc, items, sections_of(items, {}), {**base, "calls": calls})
        assert plan is None and any(message in p for p in problems), (calls, problems)
