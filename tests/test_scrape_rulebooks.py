"""envc scrape (issue #23): rulebooks in Markdown and reStructuredText (files, raw URLs, code-host file views),
and actions a rulebook announces instead of heading them ("one of the following four actions:" and a list or the
subsections after it). The rulebooks in
tests/fixtures/real/rulebooks are public transcriptions nobody here wrote (SOURCE.md); the expected actions were
read off each rulebook by hand."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from envc.cli import app
from envc.scrapers import PageContent, choose, read_saved, scrape
from envc.scrapers.extract import soup_of
from envc.scrapers.fetch import Page, raw_file_url
from envc.scrapers.md import front_matter, is_markdown
from envc.scrapers.text import to_html

REAL = Path(__file__).parent / "fixtures" / "real"
runner = CliRunner()


def read(path: Path) -> PageContent:
    page = read_saved(str(path))
    soup = soup_of(page)
    return choose(page.url, soup, None).extract(page, soup)


def actions(c: PageContent) -> set[str]:
    return {s.title for s in c.sections if s.kind == "action"}


@pytest.mark.parametrize(
    ("book", "announced"),
    [
        # a bulleted list after "one of the following four actions."
        (
            "splendor",
            {
                "Take 3 gem tokens of different colors",
                "Take 2 gem tokens of the same color",
                "Reserve 1 development card and take 1 gold token",
            },
        ),
        # the subsections after "one (and only one) of the following three actions:" (no verb the classifier knows)
        ("ticket-to-ride", {"Draw Train Car Cards", "Claim a Route", "Draw Destination Tickets"}),
        ("jaipur", {"Take cards", "Sell cards"}),  # "...chooses one of these actions." then two subsections
        # a list of bare names, each explained by a later section with another inflection ("Move" -> "Moving")
        ("betrayal-at-house-on-the-hill", {"Moving", "Discovering a New Room", "Attempt a die roll", "Attacks"}),
        ("lords-of-waterdeep", {"Assign Agent", "Complete Quest"}),  # a list of links to the sections
        ("blood-rage", {"Invade", "March", "Upgrade", "Quest", "Pillage"}),
    ],
)
def test_announced_actions_of_real_rulebooks(book: str, announced: set[str]) -> None:
    c = read(REAL / "rulebooks" / f"{book}.md")
    assert announced <= actions(c)


def test_a_list_that_is_not_of_actions_stays_rule_text() -> None:
    """Spikeball's "The following infractions cause a loss of point:" list, Love Letter's lists of cards and
    tokens, and Skull's lists give no action (none of these rulebooks heads its moves either)."""
    for book in ("spikeball", "love-letter", "skull"):
        assert actions(read(REAL / "rulebooks" / f"{book}.md")) == set(), book


def test_netrunner_basic_actions_are_list_items_with_costs() -> None:
    """Netrunner's Comprehensive Rules list each side's basic actions as lettered items `"{click}: Gain
    1{credit}."` under "5.2.6 Corp Actions": 7 for the Corp and 6 for the Runner, named by their owner."""
    c = read(REAL / "netrunner" / "rules.html")
    basic = sorted(t for t in actions(c) if t.startswith(("Corp: ", "Runner: ")))
    assert len([t for t in basic if t.startswith("Corp: ")]) == 7
    assert len([t for t in basic if t.startswith("Runner: ")]) == 6
    assert {"Corp: Advance 1 installed card", "Corp: Purge virus counters", "Runner: Run any server"} <= set(basic)
    assert "Corp: Install 1 agenda, asset, upgrade, or piece of ice from HQ" in basic  # cut after "HQ.", not at "See"
    run = next(s for s in c.sections if s.title == "Runner: Run any server")
    assert "Runner Actions" in run.text and "{click}" in run.text and run.source.endswith("#sec_actions")
    # the page declares no charset (only `<?xml encoding="utf-8" ?>`): read as UTF-8, not windows-1252
    text = " ".join(s.text for s in c.sections)
    assert "\u201cwith the basic action\u201d" in text and "\u00e2\u20ac" not in text


def test_markdown_rulebook_drafts_lint_and_name_their_actions(tmp_path: Path) -> None:
    out = tmp_path / "splendor.yaml"
    res = runner.invoke(app, ["scrape", "--from-file", str(REAL / "rulebooks" / "splendor.md"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    draft = out.read_text()
    assert "Markdown, rendered to HTML" in draft
    res = runner.invoke(app, ["lint", str(out)])
    assert res.exit_code == 0 and "error" not in res.output.replace("warning[W001]", ""), res.output
    d = scrape([str(REAL / "rulebooks" / "splendor.md")], from_files=True)
    names = [t.name for t in d.todo if t.target.startswith("actions.")]
    assert {"take_3_gem", "take_2_gem", "reserve_1_development"} <= set(names)
    take = next(t for t in d.todo if t.name == "take_2_gem")
    assert "only possible if there are at least 4 tokens" in take.text and "following four actions" in take.text
    assert d.doc["name"] == "splendor"  # the front matter's title


def test_markdown_front_matter_tables_and_detection() -> None:
    meta, rest = front_matter("---\ntitle: Nim\nsource: x\n---\n# Rules\n")
    assert meta == {"title": "Nim", "source": "x"} and rest == "# Rules\n"
    assert front_matter("---\n: [unclosed\n---\ntext") == ({}, "---\n: [unclosed\n---\ntext")
    assert front_matter("--- not front matter") == ({}, "--- not front matter")
    assert is_markdown("https://raw.githubusercontent.com/o/r/main/rules.md", "text/plain")
    assert is_markdown("http://x.test/rules", "text/markdown") and not is_markdown("http://x.test/a.md", "text/html")


def test_markdown_pipe_table_is_a_card_table(tmp_path: Path) -> None:
    rows = "\n".join(f"| Card {i} | {i} | {i % 3} | Fire | Deal {i} damage. |" for i in range(1, 7))
    md = tmp_path / "cards.md"
    md.write_text(f"# Cards\n\n| Name | Cost | Power | Type | Text |\n|---|---|---|---|---|\n{rows}\n")
    c = read(md)
    assert c.card_list and c.tables[0].headers == ["Name", "Cost", "Power", "Type", "Text"]
    assert len(c.tables[0].rows) == 6


def test_plain_text_bullets_announced_as_actions() -> None:
    text = (
        "NIM\n\nOn your turn you take one of the following actions:\n\n- Take 1 stone.\n- Take 2 stones.\n"
        "- Pass the turn.\n\nWinning\n\nWhoever takes the last stone wins.\n"
    )
    page = Page("file:///nim.txt", to_html(text), "utf-8")
    c = choose(page.url, soup_of(page), None).extract(page, soup_of(page))
    assert {"Take 1 stone", "Take 2 stones", "Pass the turn"} <= actions(c)


def test_plain_text_title_case_headings_keep_their_small_words() -> None:
    text = "NIM\n\nSetup\n\nPlace 10 stones.\n\nEnd of the Game\n\nYou win.\n"
    page = Page("file:///nim.txt", to_html(text), "utf-8")
    c = choose(page.url, soup_of(page), None).extract(page, soup_of(page))
    assert {"Setup", "End of the Game"} <= {s.title for s in c.sections}


class _RawFiles(BaseHTTPRequestHandler):
    """A code host's raw file server: every file as text/plain, as raw.githubusercontent.com serves `.md`."""

    def do_GET(self) -> None:
        name = self.path.rsplit("/", 1)[-1]
        path = REAL / ("backgammon" if name.endswith((".html", ".rst")) else "rulebooks") / name
        if self.path == "/robots.txt" or not path.is_file():
            self.send_response(404)
            self.end_headers()
            return
        body = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def raw_host() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RawFiles)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/rigard/rulebooks/master/rulebooks"
    finally:
        server.shutdown()
        server.server_close()


def test_a_raw_markdown_url_served_as_text_plain_is_read_as_markdown(raw_host: str, tmp_path: Path) -> None:
    out = tmp_path / "ttr.yaml"
    res = runner.invoke(app, ["scrape", f"{raw_host}/ticket-to-ride.md", "-o", str(out)])
    assert res.exit_code == 0, res.output
    d = yaml.safe_load(out.read_text())
    assert {"draw_train_car", "claim_route", "draw_destination_tickets"} <= set(d["actions"])
    assert d["name"] == "ticket_to_ride" and "route_scoring_table" in d["tables"]  # front matter title; pipe table


def test_hostile_markdown_is_cut_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Markdown past the size that renders quickly is cut at a line, with a note; deep nesting renders flat."""
    monkeypatch.setattr("envc.scrapers.md.MAX_MARKDOWN_CHARS", 20_000)
    md = tmp_path / "rules.md"
    md.write_text("# Rules\n\n" + "> " * 5_000 + "deep\n\n" + "[" * 30_000 + "\n\n## Lost\n\nnever read\n")
    out = tmp_path / "draft.yaml"
    res = runner.invoke(app, ["scrape", "--from-file", str(md), "-o", str(out)])
    assert res.exit_code == 0, res.output
    draft = out.read_text()
    assert "more than 20,000 characters of Markdown; read up to character" in draft and "never read" not in draft


def test_a_raw_html_file_served_as_text_plain_is_read_as_html(raw_host: str) -> None:
    d = scrape([f"{raw_host}/rules.html"])
    assert "hitting_entering" in d.doc["actions"]  # the docutils page's heading, as when saved


@pytest.mark.parametrize(
    ("view", "raw"),
    [
        ("https://github.com/rigard/rulebooks/blob/master/rulebooks/splendor.md",
         "https://raw.githubusercontent.com/rigard/rulebooks/master/rulebooks/splendor.md"),
        ("https://github.com/o/r/blob/v1.2/docs/rules.md?plain=1#setup",
         "https://raw.githubusercontent.com/o/r/v1.2/docs/rules.md"),
        ("https://gitlab.com/group/sub/game/-/blob/main/RULES.md", "https://gitlab.com/group/sub/game/-/raw/main/RULES.md"),
        ("https://codeberg.org/o/r/src/branch/main/rules.md", "https://codeberg.org/o/r/raw/branch/main/rules.md"),
        ("https://github.com/o/r", None),
        ("https://example.com/o/r/blob/main/rules.md", None),
    ],
)
def test_code_host_file_views_are_read_as_raw_files(view: str, raw: str | None) -> None:
    assert raw_file_url(view) == raw


def test_restructuredtext_reads_like_its_docutils_rendering(raw_host: str) -> None:
    """gnubg's rules.rst, saved and as a raw URL, gives the sections of the HTML docutils made of it."""
    html = [(s.title, s.kind, s.text) for s in read(REAL / "backgammon" / "rules.html").sections]
    rst = read(REAL / "backgammon" / "rules.rst")
    assert [(s.title, s.kind, s.text) for s in rst.sections] == html
    d = scrape([f"{raw_host}/rules.rst"])
    assert "hitting_entering" in d.doc["actions"] and any("reStructuredText" in n for n in d.notes)


def test_restructuredtext_reads_nothing_from_outside_the_text(tmp_path: Path) -> None:
    """include, raw and csv-table's :file: would copy a local file into the draft (or fetch a URL): all off."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-LINE\n")
    rules = tmp_path / "rules.rst"
    rules.write_text(
        "Rules\n=====\n\nPlay\n----\n\nTake a stone.\n\n"
        f".. include:: {secret}\n\n.. raw:: html\n   :file: {secret}\n\n.. raw:: html\n\n   <h2>Injected</h2>\n\n"
        f".. csv-table:: Cards\n   :file: {secret}\n\n.. csv-table:: Remote\n   :url: http://127.0.0.1:9/x.csv\n\n"
        "Unclosed *emphasis and a `broken link`_ render as text.\n"
    )
    out = tmp_path / "draft.yaml"
    res = runner.invoke(app, ["scrape", "--from-file", str(rules), "-o", str(out)])
    assert res.exit_code == 0, res.output
    draft = out.read_text()
    assert "TOP-SECRET" not in draft and "Injected" not in draft and "Take a stone." in draft


def test_restructuredtext_too_deep_to_read_is_one_error_and_no_draft(tmp_path: Path) -> None:
    rules = tmp_path / "deep.rst"
    rules.write_text("".join(" " * i + "x\n\n" for i in range(3000)))  # 3,000 nested block quotes
    out = tmp_path / "draft.yaml"
    res = runner.invoke(app, ["scrape", "--from-file", str(rules), "-o", str(out)])
    assert res.exit_code == 1 and not out.exists()
    want = f"error: {rules.as_uri()}: cannot read the reStructuredText: RecursionError"
    assert res.output.strip().splitlines()[-1] == want
