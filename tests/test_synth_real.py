"""envc synthesize on a real public rulebook (issue #23): Lost Cities' Markdown rules from rulebook.io
(tests/fixtures/real/rulebooks, MIT) are scraped at test time, as a user would, and the recorded answers in
tests/fixtures/llm/lost_cities (hand-written: no live model was available; see that folder's README) are
replayed on 127.0.0.1 through the real anthropic SDK. The outline renames and adds actions the scraper could
not name; the first `play` answer never makes the player draw, which the L1 check catches through the game
item's invariant, and the repair is sent back with the failing check."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import envc
from envc.cli import app
from envc.verify import level1

FIXTURES = Path(__file__).parent / "fixtures"
RULEBOOK = FIXTURES / "real" / "rulebooks" / "lost-cities.md"
_spec = importlib.util.spec_from_file_location("replay_server", FIXTURES / "llm" / "replay_server.py")
assert _spec is not None and _spec.loader is not None
replay_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(replay_server)
runner = CliRunner()


@pytest.fixture()
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadingHTTPServer]:
    server, _ = replay_server.start(replies=FIXTURES / "llm" / "lost_cities")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_a_real_rulebook_becomes_a_spec_that_passes_l1(api: ThreadingHTTPServer, tmp_path: Path) -> None:
    draft = tmp_path / "draft.yaml"
    res = runner.invoke(app, ["scrape", "--from-file", str(RULEBOOK), "-o", str(draft)])
    assert res.exit_code == 0, res.output
    assert [t["name"] for t in yaml.safe_load(draft.read_text())["todo"]] == ["game", "play", "discarding_card"]

    out = tmp_path / "lost_cities.yaml"
    res = runner.invoke(app, ["synthesize", str(draft), "-o", str(out), "--episodes", "2", "--max-steps", "60"])
    assert res.exit_code == 0, res.output
    spec, diags = envc.lint(str(out))
    assert spec is not None and diags == []
    checks = level1(spec, envc.build(spec, strict=False), episodes=6, seed=5, max_steps=400)
    assert [(c.name, c.failures) for c in checks if not c.passed] == [] and all(c.cases > 0 for c in checks)
    doc = yaml.safe_load(out.read_text())
    assert set(doc["actions"]) == {"play", "discard", "draw_deck", "draw_pile"}  # `discarding_card` dropped
    assert "todo" not in doc and "draft_turn" not in doc["state"]

    names = [replay_server.request_key(r["body"]["messages"]) for r in api.requests]  # type: ignore[attr-defined]
    assert [n for n, _ in names] == ["outline", "game", "play", "play", "discard", "draw_deck", "draw_pile"]
    outline = _text(api.requests[0])  # type: ignore[attr-defined]
    assert "one card from his hand, then draw one card to replace it" in outline  # the rulebook's own words
    repair = _text(api.requests[3])  # type: ignore[attr-defined]
    assert "hand_full_between_turns" in repair  # the invariant the first `play` broke, located


def _text(request: dict[str, Any]) -> str:
    content = request["body"]["messages"][-1]["content"]
    return content if isinstance(content, str) else "\n".join(b["text"] for b in content if b.get("type") == "text")
