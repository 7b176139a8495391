"""envc scrape, page input side (issue #23): numbered headings and their classification, header rows in <td>,
icons as brace tokens, ASCII identifiers, per-site cost symbols, and card data from JSON files and JSON URLs
(served by a real HTTP server on 127.0.0.1). Real public pages in tests/fixtures/real are read as a user would."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from envc.cli import app
from envc.scrapers import Fetcher, PageContent, ScrapeError, choose, choose_json, read_saved, scrape
from envc.scrapers.adapters import GenericAdapter
from envc.scrapers.extract import Icons, extract, slug, soup_of, split_number
from envc.scrapers.fetch import Page
from envc.scrapers.jsoncards import MAX_JSON_DEPTH, card_table, parse_cards

REAL = Path(__file__).parent / "fixtures" / "real"
runner = CliRunner()


def page_of(html: str, url: str = "http://example.test/rules.html") -> tuple[Page, Any]:
    page = Page(url, html.encode(), charset="utf-8")
    return page, soup_of(page)


def content(html: str, adapter: str | None = None, url: str = "http://example.test/rules.html") -> PageContent:
    page, soup = page_of(html, url)
    return choose(url, soup, adapter).extract(page, soup)


def kinds(c: PageContent) -> dict[str, str]:
    return {s.title: s.kind for s in c.sections}


# --- headings --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heading", "number", "title"),
    [
        ("A-03 Retreat", "A-03", "Retreat"),
        ("508. Declare Attackers Step", "508", "Declare Attackers Step"),
        ("4.2.1 Attach an Energy", "4.2.1", "Attach an Energy"),
        ("VII. Attacking", "VII", "Attacking"),
        ("b) Draw", "b", "Draw"),
        ("(iv) Pass", "iv", "Pass"),
        ("Chapter 3. Game Rules", "Chapter 3", "Game Rules"),
        ("Step 2: Attack", "Step 2", "Attack"),
        ("100.1a General", "100.1a", "General"),
        ("A-0 3", "A-03", ""),  # a PDF conversion's bare number (its title is on the next line)
        ("A Retreat", "", "A Retreat"),  # an article, not a letter
        ("2024 Rules Update", "", "2024 Rules Update"),
        ("Rules of Go", "", "Rules of Go"),
        ("X can't retreat", "", "X can't retreat"),
    ],
)
def test_heading_numbers_are_split_off(heading: str, number: str, title: str) -> None:
    assert split_number(heading) == (number, title)


RULEBOOK = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Duel Rules</title></head><body>
<h1>Duel Rules</h1>
<h2>1. Playing the Game</h2><p>Two players.</p>
<h3>1.1 Attach an Energy card</h3><p>Once per turn.</p>
<h3>1.2 Retreat</h3><p>Pay the retreat cost.</p>
<h3>1.3 Casting Spells</h3><p>Pay the mana.</p>
<h3>1.4 Play Area</h3><p>Where cards go.</p>
<h3>1.5 Discard Pile</h3><p>Used cards.</p>
<h2>5. Turn Structure</h2>
<h3>502. Untap Step</h3><p>Untap all.</p>
<h3>508. Declare Attackers Step</h3><p>Choose attackers.</p>
<h3>510. Combat Damage Step</h3><p>Deal damage.</p>
<h3>513. End Step</h3><p>At the end.</p>
<h3>5.5 Discard Phase</h3><p>Discard to hand size.</p>
<h3>5.6 Main Phase</h3><p>Do things.</p>
<h2>VII. Card Text</h2>
<h3>C-01 Discard</h3><p>This refers to putting a card in the discard pile.</p>
<h3>C-02 Switch your Active Pokémon</h3><p>This refers to switching.</p>
</body></html>"""


def test_numbered_headings_are_classified_after_the_number_is_stripped() -> None:
    c = content(RULEBOOK)
    assert kinds(c) == {
        "Playing the Game": "module",  # a verb, but about the game itself
        "Attach an Energy card": "action",
        "Retreat": "action",
        "Casting Spells": "action",  # gerund of a player's verb
        "Play Area": "module",
        "Discard Pile": "module",
        "Turn Structure": "module",
        "Untap Step": "rule",
        "Declare Attackers Step": "action",
        "Combat Damage Step": "rule",
        "End Step": "rule",
        "Discard Phase": "rule",
        "Main Phase": "module",
        "Card Text": "module",
        "Discard": "module",  # inside the card-text chapter: an effect, not a turn action
        "Switch your Active Pokémon": "module",
    }
    retreat = next(s for s in c.sections if s.title == "Retreat")
    assert (retreat.number, retreat.level, retreat.parents) == ("1.2", 3, ["Playing the Game"])
    assert retreat.source == "http://example.test/rules.html#:~:text=1.2%20Retreat"


def test_a_page_whose_sections_are_all_h1() -> None:
    html = """<html><head><title>Netrunner Rules (v2)</title></head><body><h1>1. Game Concepts</h1><p>Intro.</p>
    <h1>2. Playing Cards</h1><p>How.</p><h1>3. Retreat</h1><p>Go.</p></body></html>"""
    c = content(html)
    assert c.title == "Netrunner Rules (v2)"  # not the first chapter
    assert [(s.title, s.level, s.kind) for s in c.sections] == [
        ("Game Concepts", 2, "module"),
        ("Playing Cards", 2, "action"),
        ("Retreat", 2, "action"),
    ]


def test_pdf_conversion_toc_bare_numbers_and_step_lines() -> None:
    """A table of contents made of headings, then the body's bare-number headings with the title on the next
    line, and numbered step lines set as headings: one Retreat action holding its steps."""
    html = """<html><body><h1>Advanced Rulebook</h1>
    <h2>I. Supplement</h2><h3>A. Pokémon</h3><h4>A-03 Retreat</h4><h4>A-05 Evolve</h4>
    <h2>I. Supplement</h2><p>Intro text.</p><h3>A. Pokémon</h3><p>Cards.</p>
    <h4>A-0 3</h4><p>Retreat
    ◆
    Retreat is when you move your Active Pokémon onto your Bench.</p>
    <h2>Discard the amount of Energy necessary for the Active Pokémon to Retreat.</h2>
    <h2>Move the Active Pokémon to your Bench.</h2>
    <h4>A-0 5</h4><p>Evolve
    You can evolve a Pokémon.</p></body></html>"""
    c = content(html)
    got = [(s.number, s.title, s.kind) for s in c.sections]
    assert got == [("I", "Supplement", "module"), ("A", "Pokémon", "module"), ("A-03", "Retreat", "action"),
                   ("A-05", "Evolve", "action")]  # fmt: skip
    retreat = c.sections[2]
    assert retreat.text.startswith("Retreat is when you move")
    assert "Discard the amount of Energy" in retreat.text and "Move the Active Pokémon to your Bench." in retreat.text


def test_note_boxes_credits_and_labels_are_not_sections() -> None:
    html = """<html><body><h1 class="title">Chapter&nbsp;1.&nbsp;Intro</h1>
    <div class="titlepage"><h3 class="author">Clay Pradarits</h3></div><p>Hello.</p>
    <h1>Chapter 2. How to Play</h1><div class="note"><h3 class="title">Note</h3><p>By default you start.</p></div>
    <h3 class="title">Number of possible players:</h3><p>One</p></body></html>"""
    c = content(html)
    assert [(s.number, s.title) for s in c.sections] == [("Chapter 1", "Intro"), ("Chapter 2", "How to Play")]
    assert "Note\n\nBy default you start." in c.sections[1].text and "Number of possible players:" in c.sections[1].text
    assert "Pradarits" not in " ".join(s.text for s in c.sections)


def test_rule_numbers_in_separate_elements_keep_a_space() -> None:
    html = '<html><body><h2>Actions</h2><ol><li><a class="RuleLink">5.2.1.</a><span>An action is a paid ability.</span>'
    html += "</li></ol></body></html>"
    assert "- 5.2.1. An action is a paid ability." in content(html).sections[0].text


# --- tables ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "first_row",
    [
        "<tr><td><b>Name</b></td><td><b>Kind</b></td><td><strong>Note</strong></td></tr>",  # bold labels
        "<tr><td>Card</td><td>Power</td><td>Note</td></tr>",  # labels over a column of numbers
        "<tr><td>Title</td><td>Size</td><td>Note</td></tr>",  # a known column name
    ],
)
def test_header_rows_written_with_td(first_row: str) -> None:
    rows = "".join(f"<tr><td>Card {i}</td><td>{10 * i}</td><td>text {i}</td></tr>" for i in range(1, 4))
    html = f"<html><body><h2>Cards</h2><table><tbody>{first_row}{rows}</tbody></table></body></html>"
    t = content(html).tables[0]
    assert t.headers == re.findall(r">(\w+)</", first_row)
    assert [r[0] for r in t.rows] == ["Card 1", "Card 2", "Card 3"]


def test_data_rows_are_not_taken_for_headers() -> None:
    rows = "".join(f"<tr><td>Card {i}</td><td>{10 * i}</td><td>text {i}</td></tr>" for i in range(1, 4))
    glossary = "<tr><td>Attach</td><td>put an Energy on a Pokémon</td></tr><tr><td>Bench</td><td>up to 5</td></tr>"
    html = f"<html><body><h2>Cards</h2><table>{rows}</table><table>{glossary}</table></body></html>"
    first, second = content(html).tables
    assert first.headers == ["column 1", "column 2", "column 3"] and len(first.rows) == 3
    assert second.headers == ["column 1", "column 2"] and len(second.rows) == 2


def test_th_row_inside_tbody_after_an_empty_thead() -> None:
    html = """<html><body><table><thead></thead><tbody><tr><th>Name</th><th>HP</th></tr>
    <tr><td>A</td><td>10</td></tr><tr><td>B</td><td>20</td></tr></tbody></table></body></html>"""
    t = content(html).tables[0]
    assert t.headers == ["Name", "HP"] and t.rows == [["A", "10"], ["B", "20"]]


def icon(alt: str, size: int = 16) -> str:
    return f'<img src="/i/{alt}.png" alt="{alt}" width="{size}" height="{size}">'


def test_icons_become_brace_tokens() -> None:
    cells = (
        f"<td>{icon('Fire')}\n{icon('Fire')} {icon('Fire')}</td><td>{icon('Water')} ×2</td>"
        f"<td>{icon('Pikachu', 240)}Pikachu</td><td>{icon('{R}')}{icon('[C]')}</td>"
    )
    html = f"<html><body><p>Pay {icon('Fire')} to attack.</p><table><tr>{cells}</tr></table></body></html>"
    c = content(html)
    assert c.tables[0].rows == [["{Fire}{Fire}{Fire}", "{Water} ×2", "Pikachu", "{R}{C}"]]  # pictures left out
    assert "Pay {Fire} to attack." in c.sections[0].text


def test_abbr_and_class_icons_when_an_adapter_says_so() -> None:
    html = """<html><body><table><tr><th>Cost</th><th>Type</th></tr><tr><td><abbr title="Fire">R</abbr>
    <abbr title="Fire">R</abbr></td><td><span class="energy energy-water"><span>W</span></span></td></tr>
    </table></body></html>"""
    page, soup = page_of(html)
    assert extract(page, soup).tables[0].rows == [["R R", "W"]]  # the generic default: text as written
    page, soup = page_of(html)
    icons = Icons(abbr=True, classes=re.compile(r"energy-(\w+)"))
    assert extract(page, soup, icons).tables[0].rows == [["{Fire}{Fire}", "{water}"]]


def test_identifiers_are_transliterated() -> None:
    assert slug("Pokémon Card Game") == "pokemon_card_game"
    assert slug("Déjà Vu", drop_stopwords=False) == "deja_vu"
    assert slug("Farfetch’d") == "farfetchd"


def test_cost_symbols_come_from_the_site_adapter() -> None:
    table = "<table><tr><th>Name</th><th>HP</th><th>Weakness</th><th>Resistance</th><th>Retreat</th></tr>"
    table += "".join(f"<tr><td>C{i}</td><td>{i}0</td><td>{{R}}</td><td></td><td>{{C}}</td></tr>" for i in range(3))
    generic = content(f"<html><body>{table}</table></body></html>", "generic")
    assert generic.tables[0].symbols == {} and generic.adapter == "generic"
    pokemon = content(f"<html><body>{table}</table></body></html>")  # recognized by its columns
    assert pokemon.adapter == "pokemon-tcg"
    assert pokemon.tables[0].symbols["W"] == "water" and pokemon.tables[0].symbols["Fire"] == "fire"
    mtg = content(f"<html><body>{table}</table></body></html>", url="https://scryfall.com/sets/lea")
    assert mtg.adapter == "mtg" and mtg.tables[0].symbols["W"] == "white" and mtg.tables[0].symbols["U"] == "blue"


# --- JSON card data ----------------------------------------------------------------------------------------------

CARDS = [
    {
        "name": "Pineco",
        "supertype": "Pokémon",
        "hp": 60,
        "types": ["Grass"],
        "subtypes": ["Basic", "Stage 1"],
        "attacks": [
            {"name": "Guard Press", "cost": ["Colorless", "Colorless"], "damage": "10", "text": ""},
            {"name": "Bite", "cost": ["Grass"], "damage": "20+", "text": "Flip a <b>coin</b>."},
        ],
        "weaknesses": [{"type": "Fire", "value": "×2"}],
        "retreatCost": ["Colorless"],
        "set": {"name": "Base", "images": {"logo": "https://x.test/l.png"}},
        "images": {"small": "https://x.test/1.png"},
        "evolvesFrom": None,
        "legal": True,
    },
    {"name": "Forretress", "supertype": "Pokémon", "hp": 120, "evolvesFrom": "Pineco", "rulings": []},
    {"name": "Grass Energy", "supertype": "Energy", "subtypes": ["Basic"]},
]


def json_page(doc: Any, url: str = "http://example.test/cards.json") -> Page:
    return Page(url, json.dumps(doc).encode(), content_type="application/json")


def test_json_cards_are_flattened_like_a_card_list() -> None:
    page = json_page({"data": CARDS})
    data = parse_cards(page)
    table, notes = card_table(page, data.cards)
    assert table.is_cards and table.name == "cards"
    assert table.headers == [
        "Name", "Supertype", "HP", "Types", "Subtypes", "Attack 1 Name", "Attack 1 Cost", "Attack 1 Damage",
        "Attack 1 Text", "Attack 2 Name", "Attack 2 Cost", "Attack 2 Damage", "Attack 2 Text", "Weakness Type",
        "Weakness Value", "Retreat Cost", "Set Name", "Legal", "Evolves From",
    ]  # fmt: skip
    row = dict(zip(table.headers, table.rows[0]))
    assert row["Attack 1 Cost"] == "{Colorless}{Colorless}" and row["Attack 2 Cost"] == "{Grass}"
    assert row["Subtypes"] == "Basic, Stage 1" and row["HP"] == "60" and row["Legal"] == "true"
    assert row["Attack 2 Text"] == "Flip a coin." and row["Weakness Value"] == "×2" and row["Evolves From"] == ""
    assert dict(zip(table.headers, table.rows[1]))["Evolves From"] == "Pineco"
    assert any("nested deeper than two levels" in n and "Set Images" in n for n in notes)
    assert any("link-only fields" in n and "Images Small" in n for n in notes)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"object": "error", "details": "x"}', "not a card list: expected a JSON list of card objects, or an object"),
        (b'[{"name": "A"}, "B"]', "not a card list: item 2 is a string, not a card object"),
        (b"[]", "the JSON card list is empty"),
        (b'[{"name": "A",}]', "not valid JSON: Expecting property name enclosed in double quotes (line 1, column 15)"),
        (b"[" * 100_000 + b"]" * 100_000, f"nests 100,000 levels deep, more than the limit of {MAX_JSON_DEPTH}"),
        (b'[{"a": {"b": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}}]', "levels deep, more than the limit"),
        (b"[{}, {}]", "the objects have no fields"),
        (json.dumps([{f"f{i}": i for i in range(120)}]).encode(), "the cards have 120 fields, more than the limit"),
    ],
)
def test_json_that_is_not_a_card_list_gets_one_clear_error(body: bytes, message: str) -> None:
    page = Page("http://example.test/c.json", body, content_type="application/json")
    with pytest.raises(ScrapeError, match=re.escape(message)):
        card_table(page, parse_cards(page).cards)


def test_huge_numbers_and_long_fields_stay_within_the_limits() -> None:
    big = "9" * 200_000  # int() of this would be refused (or quadratic): numbers are kept as written
    body = f'[{{"name": "A", "hp": {big}, "text": "{"[" * 5000}"}}]'.encode()  # brackets in a string: no nesting
    page = Page("http://example.test/c.json", body, content_type="application/json")
    t0 = time.perf_counter()
    table, notes = card_table(page, parse_cards(page).cards)
    assert time.perf_counter() - t0 < 2.0
    assert len(table.rows[0][1]) == 2000 and table.rows[0][1].endswith("...") and table.cut_cells == 2
    assert "2 field(s) longer than 2,000 characters were cut" in notes[0]


def test_json_adapters_know_their_cards() -> None:
    assert choose_json("file:///c.json", [{"name": "A", "supertype": "Pokémon", "hp": "60"}]).name == "pokemon-tcg"
    assert choose_json("file:///c.json", [{"name": "A", "manaCost": "{U}"}]).name == "mtg"
    assert choose_json("file:///c.json", [{"title": "Noise", "cost": 2}]).name == GenericAdapter.name


class CardSite(BaseHTTPRequestHandler):
    """Rules as HTML, cards as JSON (two pages, as a paged API gives them), and JSON under the wrong type."""

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, body: bytes, ctype: str) -> None:
        self.server.accepts.append(self.headers.get("Accept", ""))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        host = f"http://127.0.0.1:{self.server.server_address[1]}"
        if self.path == "/robots.txt":
            self._send(b"User-agent: *\nAllow: /\n", "text/plain")
        elif self.path == "/rules.html":
            self._send(RULEBOOK.encode(), "text/html; charset=utf-8")
        elif self.path == "/api/cards":
            doc = {"data": CARDS[:2], "has_more": True, "next_page": f"{host}/api/cards?page=2"}
            self._send(json.dumps(doc).encode(), "application/json; charset=utf-8")
        elif self.path == "/api/cards?page=2":
            self._send(json.dumps({"data": CARDS[2:], "has_more": False}).encode(), "application/vnd.api+json")
        elif self.path == "/rules.txt":
            self._send(RULES_TXT.encode(), "text/plain; charset=utf-8")
        elif self.path == "/cards.bin":
            self._send(json.dumps(CARDS).encode(), "application/octet-stream")
        else:
            self.send_error(404)


@pytest.fixture()
def card_site() -> Iterator[tuple[str, list[str]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), CardSite)
    server.daemon_threads = True
    server.accepts = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.accepts  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def test_json_url_is_read_as_card_data_and_paged(card_site: tuple[str, list[str]], tmp_path: Path) -> None:
    base, accepts = card_site
    out = tmp_path / "draft.yaml"
    res = runner.invoke(app, ["scrape", f"{base}/rules.html", f"{base}/api/cards", "-o", str(out), "--delay", "0"])
    assert res.exit_code == 0, res.output
    assert "application/json" in accepts[-1]
    doc = yaml.safe_load(out.read_text())
    rows = doc["tables"]["cards"]["rows"]
    assert [r["name"] for r in rows] == ["(no card)", "Pineco", "Forretress", "Grass Energy"]  # both pages
    assert {"retreat", "declare_attackers_step", "untap_step"} <= {t["name"] for t in doc["todo"]}


RULES_TXT = """Duel Rules

Page 1 of 3 - Duel Rules (c) 2026

1. Setup

Each player shuffles a deck of 20 cards and
draws 5 cards. The first player is chosen by a
coin flip.

2. Turn Actions

2.1 Draw Card

The player to move draws one card.

2.2 Play a Creature

Put a creature from your hand onto the
bench. You may play any number per turn.
Example: playing two creatures in one turn.

Page 2 of 3 - Duel Rules (c) 2026

2.3 Attack

Your active creature deals its damage to the
defending creature.

Page 3 of 3 - Duel Rules (c) 2026
Page 1 of 3 - Duel Rules (c) 2026
Page 2 of 3 - Duel Rules (c) 2026
Page 3 of 3 - Duel Rules (c) 2026
"""


def test_plain_text_rules_read_as_numbered_headings_and_paragraphs() -> None:
    from envc.scrapers.text import to_html

    page = Page("file:///rules.txt", to_html(RULES_TXT))
    c = choose(page.url, soup := soup_of(page), None).extract(page, soup)
    got = {(s.number, s.title, s.level) for s in c.sections if s.number}
    assert got == {("1", "Setup", 2), ("2", "Turn Actions", 2), ("2.1", "Draw Card", 3),
                   ("2.2", "Play a Creature", 3), ("2.3", "Attack", 3)}  # fmt: skip
    by = {s.title: s for s in c.sections}
    assert by["Setup"].text == (
        "Each player shuffles a deck of 20 cards and draws 5 cards. The first player is chosen by a coin flip.")
    assert by["Play a Creature"].text.split("\n\n") == [
        "Put a creature from your hand onto the bench. You may play any number per turn.",
        "Example: playing two creatures in one turn."]  # fmt: skip
    assert not any("Page 2 of 3" in s.text for s in c.sections)  # the running footer is dropped
    assert c.title == "Duel Rules" and by["Play a Creature"].kind == by["Attack"].kind == "action"


def test_a_text_plain_url_is_read_as_a_rulebook(card_site: tuple[str, list[str]], tmp_path: Path) -> None:
    base, _ = card_site
    out = tmp_path / "draft.yaml"
    res = runner.invoke(app, ["scrape", f"{base}/rules.txt", f"{base}/api/cards", "-o", str(out), "--delay", "0"])
    assert res.exit_code == 0, res.output
    assert "error" not in res.output.replace("warning[W001]", "")
    doc = yaml.safe_load(out.read_text())
    assert {"play_creature", "attack"} <= {t["name"] for t in doc["todo"]}


def test_json_under_another_content_type_is_refused(card_site: tuple[str, list[str]]) -> None:
    base, _ = card_site
    with pytest.raises(ScrapeError, match="expected an HTML page, got content type 'application/octet-stream'"):
        scrape([f"{base}/cards.bin"], fetcher=Fetcher(delay=0))


def test_json_file_next_to_a_saved_rules_page(tmp_path: Path) -> None:
    (tmp_path / "rules.html").write_text(RULEBOOK)
    (tmp_path / "cards.json").write_text(json.dumps({"cards": CARDS, "name": "Base"}))
    out = tmp_path / "draft.yaml"
    res = runner.invoke(
        app, ["scrape", "--from-file", str(tmp_path / "rules.html"), str(tmp_path / "cards.json"), "-o", str(out)]
    )
    assert res.exit_code == 0, res.output  # the CLI lints the draft: errors would exit 1
    assert "error" not in res.output.replace("warning[W001]", "")
    doc = yaml.safe_load(out.read_text())
    assert doc["name"] == "duel_rules" and len(doc["tables"]["cards"]["rows"]) == 4
    bad = tmp_path / "bad.json"
    bad.write_text('{"cards": 3}')
    res = runner.invoke(app, ["scrape", "--from-file", str(bad), "-o", str(tmp_path / "b.yaml")])
    assert res.exit_code == 1 and res.output.count("error:") == 1 and "not a card list" in res.output
    assert not (tmp_path / "b.yaml").exists()


# --- real public pages (tests/fixtures/real, see each SOURCE.md) ------------------------------------------------


def real(path: str, adapter: str | None = None) -> PageContent:
    page = read_saved(str(REAL / path))
    if page.is_json:
        data = parse_cards(page)
        return choose_json(page.url, data.cards, adapter).extract_json(page, data.cards)
    soup = soup_of(page)
    return choose(page.url, soup, adapter).extract(page, soup)


def test_real_pokemon_rulebook_gives_its_lettered_actions() -> None:
    c = real("pokemon/rules.html")
    actions = {(s.number, s.title) for s in c.sections if s.kind == "action"}
    assert {("A-01", "Attacks"), ("A-03", "Retreat"), ("A-05", "Evolve")} <= actions
    assert not [s for s in c.sections if s.kind != "module" and not s.text]  # no empty table-of-contents items
    assert not [s for s in c.sections if s.kind == "action" and s.title.endswith(".")]  # no PDF step lines
    card_text = [s for s in c.sections if "Card Text" in s.parents]
    assert len(card_text) > 50 and all(s.kind == "module" for s in card_text)
    assert slug(c.title) == "pokemon_card_game_advanced_players"


def test_real_rulebooks_running_header_is_dropped_and_table_cells_stay() -> None:
    """The Pokémon transcription repeats its PDF page header as a paragraph ~60 times; a result table's "Tie"
    cells repeat too, but are one word: content."""
    c = real("pokemon/rules.html")
    paragraphs = [p for s in c.sections for p in s.text.split("\n\n")]
    assert "Pokémon Card Game Advanced Players’ Rulebook Ver.2.2" not in paragraphs
    assert paragraphs.count("Tie") == 5 and any("running header" in n for n in c.notes)


def test_drafts_are_the_same_on_every_run(tmp_path: Path) -> None:
    """Two runs under different hash seeds write the same draft (an enum's members once came out of a set)."""
    import os
    import subprocess
    import sys

    files = [str(REAL / "pokemon" / "rules.html"), str(REAL / "pokemon" / "cards.html")]
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"draft{seed}.yaml"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-m", "envc.cli", "scrape", "--from-file", *files, "-o", str(out)],
                       env=env, check=True, capture_output=True)  # fmt: skip
        outs.append(out.read_text())
    assert outs[0] == outs[1]


def test_real_card_lists_icons_and_json() -> None:
    html = real("pokemon/cards.html")
    t = html.tables[0]
    assert html.adapter == "pokemon-tcg" and t.is_cards and len(t.rows) == 102
    alakazam = dict(zip(t.headers, t.rows[0]))
    assert alakazam["Cost 1"] == "{Psychic}{Psychic}{Psychic}" and alakazam["Weakness"] == "{Psychic} ×2"
    sv1 = real("pokemon/cards_sv1.json")
    t = sv1.tables[0]
    assert sv1.adapter == "pokemon-tcg" and len(t.rows) == 258 and t.symbols["C"] == "colorless"
    assert {"Attack 1 Cost", "Weakness Type", "Weakness Value", "Evolves From", "Retreat Cost"} <= set(t.headers)
    costs = {c for r in t.rows for c in r[t.headers.index("Attack 1 Cost")].split("}") if c}
    assert costs and all(re.fullmatch(r"\{[A-Z][a-z]+", c) for c in costs)
    lea = real("mtg/cards_lea.json")
    assert lea.adapter == "mtg" and len(lea.tables[0].rows) == 295 and lea.tables[0].symbols["U"] == "blue"
    nr = real("netrunner/cards_core.json")
    assert nr.adapter == "generic" and nr.tables[0].symbols == {} and len(nr.tables[0].rows) == 113
    assert not any("<strong>" in cell for r in nr.tables[0].rows for cell in r)


def test_real_comprehensive_rules_txt_reads_like_the_html_page(tmp_path: Path) -> None:
    """The Comprehensive Rules as Wizards publish them (a .txt): the same rule sections and actions as our
    HTML rendering of the same text, and a draft that lints with W001 warnings only."""
    txt = {s.title: s.kind for s in real("mtg/rules.txt").sections}
    html = {s.title: s.kind for s in real("mtg/rules.html").sections}
    assert txt["Declare Attackers Step"] == "action" and txt["Untap Step"] == "rule"
    moves = ("action", "rule")
    assert {t for t, k in html.items() if k in moves} == {t for t, k in txt.items() if k in moves}
    out = tmp_path / "draft.yaml"
    files = [str(REAL / "mtg" / "rules.txt"), str(REAL / "mtg" / "cards_lea.json")]
    res = runner.invoke(app, ["scrape", "--from-file", *files, "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "error" not in res.output.replace("warning[W001]", "") and "plain text" in out.read_text()


def test_real_numbered_rules_pages() -> None:
    mtg = {s.title: s.kind for s in real("mtg/rules.html").sections}
    assert mtg["Declare Attackers Step"] == "action" and mtg["Casting Spells"] == "action"
    assert mtg["Untap Step"] == "rule" and mtg["Cleanup Step"] == "rule" and mtg["End Step"] == "rule"
    nr = real("netrunner/rules.html")
    assert nr.title == "Netrunner Comprehensive Rules (v26.03)"
    assert {"Game Concepts", "Runs"} <= {s.title for s in nr.sections if s.number.isdigit()}
    text = " ".join(s.text for s in nr.sections)
    assert "{click}" in text and " click ," not in text and not re.search(r"\d\.[A-Z][a-z]", text)
    kr = real("kreversi/manual.html")
    assert [(s.number, s.title) for s in kr.sections if s.number][:3] == [
        ("Chapter 1", "Introduction"), ("Chapter 2", "How to Play"), ("Chapter 3", "Game Rules, Strategies and Tips")
    ]  # fmt: skip
    assert "Clay Pradarits" not in {s.title for s in kr.sections}
