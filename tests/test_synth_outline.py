"""envc synthesize's outline step, section chunking, --dry-run and the OpenAI-compatible path.

The recorded answers (tests/fixtures/llm/nim, hand-written, see its README) are replayed on 127.0.0.1 by
tests/fixtures/llm/replay_server.py; the real anthropic and openai SDKs send the requests."""

from __future__ import annotations

import importlib.util
import json
import re
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
from envc.synthesize.chunks import Section, elide_tables, fit, repeated, sections_of, tokens
from envc.synthesize.items import Item, items_of
from envc.synthesize.llm import is_loopback, load_prices
from envc.synthesize.loop import Config, dry_run
from envc.synthesize.outline import apply_outline, merge_outlines
from envc.verify import level1

LLM = Path(__file__).parent / "fixtures" / "llm"
NIM = LLM / "nim"
_spec = importlib.util.spec_from_file_location("replay_server", LLM / "replay_server.py")
assert _spec is not None and _spec.loader is not None
replay_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(replay_server)
_spec = importlib.util.spec_from_file_location("make_replies", LLM / "make_replies.py")
assert _spec is not None and _spec.loader is not None
make_replies = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_replies)
runner = CliRunner()
HISTORY = "Charles L. Bouton"  # a line of the History section, which no item needs
_SECTION = re.compile(r'<section id="(s\d+)"(?: part="(\d+ of \d+)")? title="[^"]*" url="[^"]*">\n(.*?)\n</section>',
                      re.S)  # fmt: skip


@pytest.fixture()
def nim(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ThreadingHTTPServer, str]]:
    """The replay server with the nim answers; no API key in the environment."""
    server, _ = replay_server.start(replies=NIM)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _run(out: Path, *extra: str) -> Any:
    args = ["synthesize", str(NIM / "draft.yaml"), "-o", str(out), "--episodes", "2", "--max-steps", "60", *extra]
    return runner.invoke(app, args)


def _text(body: dict[str, Any]) -> str:
    parts = []
    for m in body.get("messages", []):
        c = m["content"]
        parts.append(c if isinstance(c, str) else "\n".join(b["text"] for b in c))
    return "\n".join(parts)


def _user_blocks(body: dict[str, Any]) -> list[str]:
    first = next(m for m in body["messages"] if m["role"] == "user")
    c = first["content"]
    return [c] if isinstance(c, str) else [b["text"] for b in c]


def _check_game(out: Path) -> dict[str, Any]:
    spec, diags = envc.lint(str(out))
    assert spec is not None and diags == [], [d.format() for d in diags]
    checks = level1(spec, envc.build(spec, strict=False), episodes=6, seed=1, max_steps=100)
    assert [(c.name, c.failures) for c in checks if not c.passed] == []
    doc: dict[str, Any] = yaml.safe_load(out.read_text())
    return doc


def test_outline_plans_the_items_and_a_failing_lint_is_repaired(nim: Any, tmp_path: Path) -> None:
    server, url = nim
    out = tmp_path / "nim.yaml"
    res = _run(out, "--base-url", url)  # a loopback server: no key needed
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output

    # the plan and its cost estimate are printed before the first call; then the outline is shown and saved
    assert res.output.index("request(s) planned") < res.output.index("outline (the plan")
    assert "estimated cost of the first attempts: $" in res.output and "characters / 3.5" in res.output
    saved = tmp_path / "nim.outline.yaml"
    outline = yaml.safe_load(saved.read_text())
    assert outline["drop"] == ["end_game"] and outline["constants"]["MAX_TAKE"] == 4
    assert "MAX_TAKE: 4" in res.output and f"wrote {saved}" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nim.outline.yaml", "nim.yaml"]

    # outline, its repair, then the items it planned (the scraper's `end_game` dropped, `take`/`last_stick` new)
    keys = [replay_server.request_key(r["body"]["messages"]) for r in server.requests]
    assert keys == [("outline", 1), ("outline", 2), ("game", 1), ("take", 1), ("last_stick", 1)]
    repair = server.requests[1]["body"]["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    feedback = repair[2]["content"][0]["text"]
    assert "Your answer for `outline` does not pass yet (attempt 2 of 4)" in feedback
    assert "nim.skeleton.yaml:" in feedback and "error[E051]" in feedback and "'MAX_TAKE'" in feedback
    assert "n: {range: [1, MAX_TAKE]}" in feedback  # the offending line of the skeleton

    # each request carries only its sections, once; the History section reaches no item
    first = _text(server.requests[0]["body"])
    assert HISTORY in first and '<section id="s2" title="History"' in first
    for r in server.requests[2:]:
        body = r["body"]
        assert HISTORY not in _text(body)
        assert r["path"] == "/v1/messages" and body["model"] == "claude-sonnet-4-6"
    take = _text(server.requests[3]["body"])
    assert "remove 1, 2 or 3 sticks" in take and "Put 15 sticks" not in take
    game = _text(server.requests[2]["body"])
    assert "Put 15 sticks" in game and "the player who removed the last stick wins" in game
    assert "params:\n      n: {range: [1, MAX_TAKE]}" in game  # the outline's stubs are in the current spec

    doc = _check_game(out)
    assert "todo" not in doc and "end_game" not in doc["actions"] and "draft_pass" not in doc["actions"]
    assert [r["name"] for r in doc["rules"]] == ["last_stick", "next_turn"]
    assert "4/4 passed" in res.output  # the outline (2 iterations) and 3 items


def test_openai_compatible_server_end_to_end(nim: Any, tmp_path: Path) -> None:
    """--provider openai --base-url: the real openai SDK, chat completions, no key for a loopback server."""
    server, url = nim
    out = tmp_path / "nim.yaml"
    res = _run(out, "--provider", "openai", "--base-url", f"{url}/v1", "--model", "local-nim", "--report",
               str(tmp_path / "report.yaml"))  # fmt: skip
    assert res.exit_code == 0, res.output
    assert len(server.requests) == 5
    for r in server.requests:
        body, headers = r["body"], r["headers"]
        assert r["path"] == "/v1/chat/completions"
        assert headers["user-agent"].startswith("OpenAI/Python") and headers["authorization"].startswith("Bearer ")
        assert body["model"] == "local-nim" and body["max_tokens"] == 16000 and "max_completion_tokens" not in body
        assert body["messages"][0]["role"] == "system" and "<language_reference>" in body["messages"][0]["content"]
        assert all(isinstance(m["content"], str) for m in body["messages"])  # plain strings: llama.cpp reads these
    assert [m["role"] for m in server.requests[1]["body"]["messages"]] == ["system", "user", "assistant", "user"]
    _check_game(out)
    # a model without a price: the run goes on, the cost is unknown (not a crash, not $0)
    assert "cost unknown" in res.output and "estimated cost: unknown" in res.output
    rep = yaml.safe_load((tmp_path / "report.yaml").read_text())
    assert rep["cost_usd"] is None and rep["priced"] is False
    recorded = json.loads((NIM / "game.json").read_text())["usage"]
    game = next(i for i in rep["items"] if i["name"] == "game")
    assert game["cache_read_tokens"] == recorded["cache_read_input_tokens"]  # from prompt_tokens_details
    assert game["output_tokens"] == recorded["output_tokens"]


def test_openai_needs_a_key_for_a_remote_server(nim: Any, tmp_path: Path) -> None:
    server, _ = nim
    res = _run(tmp_path / "s.yaml", "--provider", "openai")
    assert res.exit_code == 2 and "OPENAI_API_KEY" in res.output and "Traceback" not in res.output
    res = _run(tmp_path / "s.yaml", "--provider", "openai", "--base-url", "http://10.1.2.3:8000/v1")
    assert res.exit_code == 2 and "--model: name the model" in res.output
    res = _run(tmp_path / "s.yaml", "--provider", "nope")
    assert res.exit_code == 2 and "--provider nope: use one of anthropic, openai" in res.output
    assert server.requests == [] and not (tmp_path / "s.yaml").exists()
    assert is_loopback("http://127.0.0.1:8000/v1") and is_loopback("http://[::1]:1/") and is_loopback("http://localhost")
    assert not is_loopback("http://10.1.2.3/v1") and not is_loopback("https://api.openai.com/v1")


def test_dry_run_prints_and_dumps_the_requests_without_a_key_or_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing listens: nothing may be contacted
    # a long rulebook: the History section grown to ~420K characters (about 120K tokens)
    draft = yaml.safe_load((NIM / "draft.yaml").read_text())
    history = "Games of taking objects from heaps are played all over the world"
    assert history in draft["todo"][0]["text"]
    draft["todo"][0]["text"] = draft["todo"][0]["text"].replace(history, ", ".join([history] * 6000))
    path = tmp_path / "draft.yaml"
    path.write_text(yaml.safe_dump(draft, sort_keys=False))
    dump = tmp_path / "requests"
    res = runner.invoke(app, ["synthesize", str(path), "-o", str(tmp_path / "nim.yaml"), "--dry-run",
                              "--dump-requests", str(dump), "--max-request-tokens", "60000"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "largest request: " in res.output and "estimated cost of the first attempts: $" in res.output
    # the outline comes in parts of consecutive sections; the History section in parts of its own
    files = sorted(p.name for p in dump.iterdir())
    n = len(files) - 2
    assert n >= 2 and files == [f"{i:02d}_outline_part{i + 1}.json" for i in range(n)] + [
        f"{n:02d}_game.json", f"{n + 1:02d}_end_game.json"
    ]  # fmt: skip
    assert f"{len(files)} request(s) planned for anthropic claude-sonnet-4-6, budget 60,000 tokens per request" in (
        res.output
    )
    for f in files:
        body = json.loads((dump / f).read_text())
        assert set(body) == {"model", "max_tokens", "system", "messages"}
        est = tokens(body["system"][0]["text"]) + sum(tokens(b) for b in _user_blocks(body))
        assert est <= 60_000, (f, est)  # within the stated budget
        assert repeated(_user_blocks(body), [], {}) == []
    outlines = [_text(json.loads((dump / f).read_text())) for f in files[:n]]
    assert f"Plan the spec of `nim` (part 1 of {n})" in outlines[0] and "<outline_so_far>" not in outlines[0]
    assert all("<outline_so_far>\n(the outline that parts 1 to" in o for o in outlines[1:])  # room kept for it
    # no rule text is dropped and none is sent twice: every section, or every part of it, in exactly one request
    sent = [m.groups() for o in outlines for m in _SECTION.finditer(o)]
    assert sorted({(sid, part) for sid, part, _ in sent}) == sorted((sid, part) for sid, part, _ in sent)
    secs = sections_of(items_of(draft), {})
    for sec in secs:
        got = [body for sid, _, body in sent if sid == sec.id]
        assert " ".join(" ".join(got).split()) == " ".join(sec.body.split()), sec.id
    assert len([1 for sid, part, _ in sent if sid == "s2" and part]) > 1
    assert sum("Put 15 sticks in a pile" in o for o in outlines) == 1  # short sections whole, once
    game = _text(json.loads((dump / files[n]).read_text()))
    assert "more characters of this section not shown]" in game  # an item's request still cuts its text to fit
    assert not (tmp_path / "nim.yaml").exists()


def test_sections_are_split_fitted_and_sent_once() -> None:
    tables = {"decks": {"columns": {"card": "str"}, "rows": [{"card": "a"}, {"card": "b"}]}}
    item = Item("game", "module", "https://x/r.html", "## Setup\n(source: https://x/r.html#setup)\n\nShuffle.\n\n"
                "[table decks]\nCard\na\nb\n\nDeal five.\n\n## Turns\n\nDraw, then play.")  # fmt: skip
    effect = Item("effect_x", "procedures.effect_x", "https://x/c.html", "Draw a card.")
    secs = sections_of([item, effect], tables)
    assert [(s.id, s.title, s.url, s.item, s.headed) for s in secs] == [
        ("s1", "Setup", "https://x/r.html#setup", "game", True),
        ("s2", "Turns", "https://x/r.html", "game", True),
        ("s3", "effect_x", "https://x/c.html", "effect_x", False),
    ]
    assert secs[0].body == "Shuffle.\n\n[table decks: 2 rows, in `tables.decks` of the spec]\n\nDeal five."
    assert elide_tables("[table other]\nA\n1\n", tables) == "[table other]\nA\n1\n"  # not a draft table
    assert "</section" not in Section("s1", "t", "u", "a </section> b", "g").render()[:-10]

    long = [Section(f"s{i}", "t", "u", ("word " * n).strip(), "g") for i, n in enumerate((10, 4000, 20000), 1)]
    fitted = fit(long, 4000)
    assert sum(tokens(s.render()) for s in fitted) <= 4000
    assert fitted[0] == long[0] and fitted[1].cut > 0 and fitted[2].cut > fitted[1].cut  # short ones whole
    assert abs(len(fitted[1].body) - len(fitted[2].body)) < 10  # the long ones cut to one length
    assert fit(long, 10**6) == long

    text = "x" * 10 + " A rule sentence long enough to be recognised when it is sent twice."
    assert repeated([text], [Section("s1", "t", "u", text, "g")], {}) == []
    assert repeated([text, text], [Section("s1", "t", "u", text, "g")], {}) == ["section s1 (t) is sent 2 times"]
    assert repeated(["[table decks]\nCard", "rows:"], [], tables) == [
        "the rows of table decks are in the rule text and in the tables block"
    ]


def test_outline_problems_are_reported_not_raised() -> None:
    draft = yaml.safe_load((NIM / "draft.yaml").read_text())
    items = items_of(draft)
    secs = sections_of(items, {})
    cases = [
        ([], "the outline must be a YAML mapping"),
        ({"actions": {}}, "`state` is required"),
        ({"state": {"x": "i32"}, "legal": 1}, "`legal` is not an outline section"),
        ({"state": {"x": "i32"}, "actions": {"a": {"sections": ["s99"]}}}, "no section s99 (the sections are s1..s6)"),
        ({"state": {"x": "i32"}, "actions": {"a": {"effect": "pass"}}}, "effect not allowed in the outline"),
        ({"state": {"draft_turn": "i32"}}, "`state.draft_turn` is declared by the draft already"),
        ({"state": {"x": "i32"}, "drop": ["game"]}, "'game' is not an action or rule todo item"),
        ({"state": {"x": "i32"}, "drop": ["end_game"], "actions": {"end_game": {}}}, "planned in the outline too"),
        ({"state": {"x": "i32"}, "rules": [{"name": "game"}]}, "'game' is the name of another todo item"),
    ]
    for outline, message in cases:
        plan, problems = apply_outline(draft, items, secs, outline)
        assert plan is None and any(message in p for p in problems), (outline, problems)


def test_prices_cover_both_providers() -> None:
    prices = load_prices()
    assert prices["gpt-5.4"].input == 2.5 and prices["gpt-5.4"].cache_read == 0.25
    assert prices["claude-sonnet-4-6"].output == 15.0
    head = (Path(envc.__file__).parent / "synthesize" / "prices.yaml").read_text()
    assert "https://developers.openai.com/api/docs/pricing" in head and "2026" in head


def test_outline_parts_merge_into_one_outline() -> None:
    draft = yaml.safe_load((NIM / "draft.yaml").read_text())
    items = items_of(draft)
    first = {"state": {"sticks": "i32"}, "actions": {"take": {"doc": "d", "params": {"n": {"range": [1, 3]}},
                                                              "sections": ["s3"]}},
             "rules": [{"name": "a", "sections": ["s4"]}], "drop": ["end_game"]}  # fmt: skip
    part = {"state": {"winner": "i32"}, "actions": {"take": {"doc": "d2", "sections": ["s5", "s3"]}},
            "rules": [{"name": "b"}, {"name": "a", "doc": "x", "sections": ["s6"]}],
            "game": {"sections": ["s1"]}}  # fmt: skip
    merged, problems = merge_outlines(first, part)
    assert problems == [] and merged is not None
    assert merged["state"] == {"sticks": "i32", "winner": "i32"}
    assert merged["actions"]["take"] == {"doc": "d2", "sections": ["s3", "s5"]}  # replaced, its sections kept
    assert merged["rules"] == [{"name": "a", "doc": "x", "sections": ["s4", "s6"]}, {"name": "b"}]
    assert merged["drop"] == ["end_game"] and merged["game"] == {"sections": ["s1"]}
    assert first["state"] == {"sticks": "i32"}  # the earlier outline is not changed
    plan, problems = apply_outline(draft, items, sections_of(items, {}), merged)
    assert problems == [] and plan is not None and plan.sections["take"] == ["s3", "s5"]
    bad_parts = [([], "must be a YAML mapping"), ({"rules": {"a": 1}}, "`rules` must be a list"),
                 ({"actions": [1]}, "`actions` must be a mapping"), ({"x": 1}, "`x` is not an outline")]  # fmt: skip
    for bad, message in bad_parts:
        merged, problems = merge_outlines(first, bad)
        assert merged is None and any(message in p for p in problems), (bad, problems)


def test_dry_run_of_a_real_rulebook_and_258_cards_stays_within_the_budget(tmp_path: Path) -> None:
    """tests/fixtures/real/pokemon: the rulebook and the 258-card Scarlet & Violet list (JSON), as scraped."""
    real = Path(__file__).parent / "fixtures" / "real" / "pokemon"
    draft_path = tmp_path / "sv1.yaml"
    draft_path.write_text(scrape([str(real / "rules.html"), str(real / "cards_sv1.json")], from_files=True).yaml())
    est = dry_run(str(draft_path), str(tmp_path / "sv1.spec.yaml"), Config())
    budget = est.budget
    assert budget == 80_000 and not (tmp_path / "sv1.spec.yaml").exists()
    draft = yaml.safe_load(draft_path.read_text())
    items = items_of(draft)
    secs = sections_of(items, draft["tables"])
    effects = [i.name for i in items if i.name.startswith("effect_")]
    assert len(effects) > 100 and len(secs) > 200
    names = [r.name for r in est.requests]
    parts = [r for r in est.requests if r.name.startswith("outline_part")]
    assert len(parts) >= 2 and names[: len(parts)] == [f"outline_part{k}" for k in range(1, len(parts) + 1)]
    assert names[len(parts) :] == [i.name for i in items]
    for r in est.requests:
        blocks = [r.system[0]["text"], *(b["text"] for b in r.messages[0]["content"])]
        assert sum(tokens(b) for b in blocks) <= r.tokens <= budget, (r.name, r.tokens)
        assert r.repeats == [] and repeated(blocks[1:], secs, draft["tables"]) == [], r.name
    # the outline parts: every section (or each part of a long one) in exactly one request, none cut, in order
    sent = [(s.id, s.part) for r in parts for s in r.sections]
    assert len(sent) == len(set(sent)) and [i for i, _ in dict.fromkeys(sent)] == [s.id for s in secs]
    assert all(s.cut == 0 for r in parts for s in r.sections)
    text = "\n".join(_text({"messages": r.messages}) for r in parts)
    assert all(" ".join(s.body.split())[:200] in " ".join(text.split()) for s in secs)
    # an effect item sees every procedure it may call as a signature, apply_effect's dispatch as a one-line note,
    # and no table rows
    effect = next(r for r in est.requests if r.name == effects[0])
    body = _text({"messages": effect.messages})
    assert all(f"  {e}:\n" in body for e in effects)
    assert "apply_effect:" in body and "<body not shown: " in body and f"calls `{effects[0]}` as `" in body
    assert "case " not in body and "this item does not need their rows" in body
    game = next(r for r in est.requests if r.name == "game")
    assert "<tables>" in game.messages[0]["content"][0]["text"]  # the game item reads the card rows


def test_a_long_rulebook_is_outlined_in_parts_that_see_the_outline_so_far(tmp_path: Path) -> None:
    """nim with a ~66K-character History and a 62,000-token budget (tests/fixtures/llm/nim_parts, hand-written):
    three outline requests of consecutive sections, each after the outline of the earlier ones, merged into one."""
    copies, budget = make_replies.LONG_NIM
    draft = tmp_path / "draft.yaml"
    draft.write_text(make_replies.long_nim(copies))
    server, _ = replay_server.start(replies=LLM / "nim_parts")
    try:
        out = tmp_path / "nim.yaml"
        url = f"http://127.0.0.1:{server.server_address[1]}"
        args = ["synthesize", str(draft), "-o", str(out), "--episodes", "2", "--max-steps", "60",
                "--max-request-tokens", str(budget), "--base-url", url]  # fmt: skip
        res = runner.invoke(app, args)
    finally:
        server.shutdown()
        server.server_close()
    assert res.exit_code == 0, res.output
    keys = [replay_server.request_key(r["body"]["messages"]) for r in server.requests]
    assert keys == [(f"outline_part{k}", 1) for k in (1, 2, 3)] + [("game", 1), ("take", 1), ("last_stick", 1)]
    texts = [_text(r["body"]) for r in server.requests]
    for r, text in zip(server.requests, texts, strict=True):
        assert tokens(r["body"]["system"][0]["text"]) + tokens(text) <= budget
    history = ", ".join([make_replies.HISTORY] * 50)
    assert [history in t for t in texts[:3]] == [False, True, True]  # the History section, in two parts
    counts = [t.count(make_replies.HISTORY) for t in texts[1:3]]  # no sentence is sent twice, none dropped
    assert min(counts) > 0 and copies - 1 <= sum(counts) <= copies, counts
    assert "<outline_so_far>" not in texts[0]
    assert "MAX_TAKE: 4" in texts[1] and "MAX_TAKE: 4" in texts[2]  # the earlier parts' answers, not their text
    assert "Put 15 sticks in a pile" in texts[2] and "Put 15 sticks in a pile" not in texts[0] + texts[1]
    outline = yaml.safe_load((tmp_path / "nim.outline.yaml").read_text())  # the merged outline
    assert outline["constants"]["MAX_TAKE"] == 4 and outline["drop"] == ["end_game"]
    assert outline["game"] == {"sections": ["s1", "s3", "s4", "s5", "s6"]} and "take" in outline["actions"]
    assert HISTORY not in texts[3]  # the game item reads the sections the outline cites
    doc = _check_game(out)
    assert [r["name"] for r in doc["rules"]] == ["last_stick", "next_turn"] and "4/4 passed" in res.output


def test_hundreds_of_sections_fit_by_leaving_the_last_ones_out() -> None:
    """A rulebook read as 2,000 small sections (a .txt with a heading per subrule): their headings alone pass
    the budget, so the first sections whose headings fill half of it are sent and the last says which are not."""
    secs = [Section(f"s{i}", f"Rule {i}", f"https://example.org/r#{i}", "text " * 40, "game") for i in range(1, 2001)]
    shown = fit(secs, 20_000)
    text = "\n".join(s.render() for s in shown)
    assert tokens(text) <= 20_000 and 1 < len(shown) < 2000
    assert shown[-1].after[0] == f"s{len(shown) + 1}..s2000" and "not shown" in shown[-1].render()
    assert fit(secs[:5], 20_000) == secs[:5]  # few sections that fit stay as they are
