"""envc scrape: saved pages of a card-database site served from a real HTTP server on 127.0.0.1, hostile pages
included; the draft's tables are compared with the page's data and the draft must lint (W001 only) and play."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import envc
from envc import rng
from envc.cli import app
from envc.scrapers import Fetcher, ScrapeError, scrape
from envc.scrapers.columns import cost_counts, energy_name, ident

SITE = Path(__file__).parent / "fixtures" / "scrape" / "emberdb"
HOSTILE = Path(__file__).parent / "fixtures" / "scrape" / "hostile"
runner = CliRunner()


class Site(BaseHTTPRequestHandler):
    """The EmberDB fixture pages plus misbehaving routes; every request is logged on the server."""

    robots_status = 200

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: bytes, ctype: str = "text/html; charset=utf-8", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k.replace("_", "-"), v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.server.log.append((self.path, self.headers.get("User-Agent", "")))  # type: ignore[attr-defined]
        path = self.path.split("?")[0]
        try:
            self.route(path)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def route(self, path: str) -> None:
        if path == "/robots.txt":
            if self.robots_status != 200:
                self._send(self.robots_status, b"unavailable", "text/plain")
            else:
                self._send(200, (SITE / "robots.txt").read_bytes(), "text/plain")
        elif path in ("/rules.html", "/cards.html", "/cards-2.html", "/gallery.html", "/private/rules.html"):
            self._send(200, (SITE / Path(path).name).read_bytes())
        elif path == "/malformed.html":
            self._send(200, (HOSTILE / "malformed.html").read_bytes(), "text/html; charset=windows-1252")
        elif path == "/huge.html":  # announced size over the cap
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(50 * 1024 * 1024))
            self.end_headers()
            self.wfile.write(b"<html>" + b"x" * 65536)
        elif path == "/endless.html":  # no length: keeps streaming until the client gives up
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            chunk = b"<p>" + b"y" * 65533
            for _ in range(200):
                self.wfile.write(chunk)
        elif path == "/bomb.html":  # 40 KB of gzip that inflates to 40 MB
            self._send(200, BOMB, "text/html", Content_Encoding="gzip")
        elif path == "/card.png":
            self._send(200, b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "image/png")
        elif path == "/loop-a":
            self._send(302, b"", Location="/loop-b")
        elif path == "/loop-b":
            self._send(302, b"", Location="/loop-a")
        elif path.startswith("/hop/"):
            n = int(path.split("/")[-1])
            self._send(301, b"", Location=f"/hop/{n + 1}")
        elif path == "/to-private":
            self._send(302, b"", Location="/private/rules.html")
        elif path == "/slow.html":
            time.sleep(3)
            self._send(200, b"<html><p>late</p></html>")
        elif path == "/trickle.html":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            for _ in range(30):
                self.wfile.write(b"<p>.")
                self.wfile.flush()
                time.sleep(0.1)
        elif path == "/deep.html":
            self._send(200, b"<html><body>" + b"<div>" * 20000 + b"<h2>Deep</h2><p>bottom</p>" + b"</div>" * 20000)
        elif path == "/inject.html":
            self._send(200, INJECT.encode())
        else:
            self._send(404, b"<html>not found</html>")


BOMB = gzip.compress(b" " * (40 * 1024 * 1024), compresslevel=9)
INJECT = """<!DOCTYPE html><html><head><title>Weird: a game | x</title></head><body><main>
<h1>Weird game</h1>
<h2 id="a">Play a card: {{ 7 * 7 }} !!python/object/apply:os.system ['echo pwned']</h2>
<p>key: value
- item &amp; *alias &anchor # not a comment --- ... ```yaml
evil: true``` </p>
<table><tr><th>Name</th><th>Kind</th><th>HP</th><th>Text</th><th>Cost</th></tr>
<tr><td>yes</td><td>on</td><td>10</td><td>'quoted' "double" \\ backslash: colon</td><td>{C}</td></tr>
<tr><td>null</td><td>off</td><td>20</td><td>{{ config }} {% raw %} - [1, 2]</td><td>{G}</td></tr>
<tr><td>1e3</td><td>on</td><td>30</td><td>tab\there and a very long line of effect text.</td><td>{G}{C}</td></tr>
</table></main></body></html>"""


@pytest.fixture()
def site() -> Iterator[tuple[str, list[tuple[str, str]], type[Site]]]:
    """A fresh handler class per test (robots behaviour can be changed) on a loopback server."""
    handler = type("SiteForTest", (Site,), {"robots_status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.log = []  # type: ignore[attr-defined]
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.log, handler  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def _scrape(args: list[str]) -> Any:
    return runner.invoke(app, ["scrape", *args, "--delay", "0"])


# The card list as printed on the fixture pages (written independently of the scraper).
# name, supertype, type, hp, weakness, costs (grass, fire, water, colorless) of attacks 1 and 2, damage, effect texts
CARDS = [
    ("Cindercub", "creature", "fire", 50, "water", [[0, 0, 0, 1], [0, 1, 0, 1]], [10, 30], ["", "coin+20"]),
    ("Blazehound", "creature", "fire", 70, "water", [[0, 1, 0, 0], [0, 2, 0, 1]], [20, 50], ["", ""]),
    ("Puddlefin", "creature", "water", 50, "grass", [[0, 0, 1, 0], [0, 0, 1, 1]], [10, 20], ["heal", "paralyze"]),
    ("Tidecrab", "creature", "water", 70, "grass", [[0, 0, 0, 2], [0, 0, 2, 1]], [20, 40], ["", ""]),
    ("Sproutling", "creature", "grass", 40, "fire", [[1, 0, 0, 0], [1, 0, 0, 1]], [10, 10], ["heal", "poison"]),
    ("Thornback", "creature", "grass", 80, "fire", [[1, 0, 0, 1], [0, 0, 0, 0]], [30, 0], ["draw", ""]),
    ("Fire Energy", "energy", "fire", 0, "none", [[0] * 4] * 2, [0, 0], ["", ""]),
    ("Water Energy", "energy", "water", 0, "none", [[0] * 4] * 2, [0, 0], ["", ""]),
    ("Grass Energy", "energy", "grass", 0, "none", [[0] * 4] * 2, [0, 0], ["", ""]),
]
EFFECTS = {  # effect kinds (templates) and their numeric argument (issue #23)
    "": ("none", 0),
    "coin+20": ("flip_coin_heads_attack_more_damage", 20),
    "heal": ("heal_damage_creature", 20),
    "paralyze": ("flip_coin_heads_defending_creature_paralyzed", 0),
    "poison": ("defending_creature_poisoned", 0),
    "draw": ("draw_card", 0),
}
DECKS = [(3, 0), (2, 0), (0, 3), (0, 2), (2, 2), (1, 1), (6, 0), (0, 6), (2, 2)]


def test_rules_page_and_paginated_card_list_over_http(site: Any, tmp_path: Path) -> None:
    base, log, _ = site
    out = tmp_path / "draft.yaml"
    res = _scrape([f"{base}/rules.html", f"{base}/cards.html", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    # politeness: robots.txt read once for the origin, our user agent on every request, rel=next followed
    paths = [p for p, _ in log]
    assert paths == ["/robots.txt", "/rules.html", "/cards.html", "/cards-2.html"]
    assert all(ua.startswith("envc-scrape/") for _, ua in log)

    doc = yaml.safe_load(out.read_text())
    assert doc["name"] == "ember_league_tcg" and doc["players"] == 2
    assert doc["types"]["Energy"]["enum"] == ["grass", "fire", "water", "colorless", "none"]
    assert doc["types"]["Supertype"]["enum"] == ["none", "creature", "energy"]
    cards = doc["tables"]["cards"]
    assert list(cards["columns"]) == [
        "number", "name", "supertype", "energy_type", "hp", "weakness", "attack_1", "cost", "damage", "text_1",
        "text_kind", "text_args", "attack_2", "text_2",
    ]  # fmt: skip
    assert cards["columns"]["cost"] == {
        "type": "i8", "shape": [2, 4], "default": [[0] * 4] * 2, "doc": "Cost 1, Cost 2; index i is number i+1"
    }  # fmt: skip
    rows = cards["rows"]
    assert rows[0]["name"] == "(no card)" and rows[0]["supertype"] == "none"
    got = [
        (r["name"], r["supertype"], r["energy_type"], r["hp"], r["weakness"], r["cost"], r["damage"], r["text_kind"])
        for r in rows[1:]
    ]
    want = [(n, s, t, hp, w, c, d, [EFFECTS[e][0] for e in fx]) for n, s, t, hp, w, c, d, fx in CARDS]
    assert got == want
    assert [r["text_args"] for r in rows[1:]] == [[[EFFECTS[e][1]] for e in fx] for *_, fx in CARDS]
    assert [r["number"] for r in rows] == list(range(10))
    assert rows[1]["text_2"] == "Flip a coin. If heads, this attack does 20 more damage."
    decks = doc["tables"]["starter_decks"]["rows"]
    assert [(r["card"], r["card_id"], tuple(r["copies_player"])) for r in decks] == [
        (c[0], i + 1, d) for i, (c, d) in enumerate(zip(CARDS, DECKS))
    ]
    assert doc["tables"]["special_conditions"]["rows"] == [
        {"condition": "Poisoned", "checkup_damage": 10, "removed": "when the Creature leaves the Active spot"},
        {"condition": "Paralyzed", "checkup_damage": 0, "removed": "at the end of its owner's next turn"},
    ]
    # rule sections keep their source anchors; actions, rules and card effects become todo items with stubs
    todo = {t["name"]: t for t in doc["todo"]}
    assert [(t["name"], t["target"]) for t in doc["todo"][:7]] == [
        ("game", "module"),
        ("play_creature_bench", "actions.play_creature_bench"),
        ("attach_energy_card", "actions.attach_energy_card"),
        ("attack", "actions.attack"),
        ("end_turn", "actions.end_turn"),
        ("knock_outs", "rules.knock_outs"),
        ("special_conditions", "rules.special_conditions"),
    ]
    assert todo["attack"]["source"] == f"{base}/rules.html#attack"
    assert "each {C} can be paid with any Energy" in todo["attack"]["text"]
    assert f"(source: {base}/rules.html#setup)" in todo["game"]["text"]
    assert "[table starter_decks]" in todo["game"]["text"]
    assert "window.dataLayer" not in out.read_text() and "Accept" not in todo["game"]["text"]  # scripts, banners
    assert todo["effect_draw_card"]["text"] == "Draw a card.\n\nUsed by: Thornback (Lash)"
    assert todo["effect_heal_damage_creature"]["text"].startswith("Heal {damage} damage from this Creature.\n")
    heal = todo["effect_heal_damage_creature"]["text"]
    assert "Used by: Puddlefin (Splash) [damage=20], Sproutling (Leech) [damage=20]" in heal
    assert doc["actions"]["attack"] == {"doc": "placeholder until the todo item 'attack' is formalized", "legal": False}
    body = doc["procedures"]["apply_effect"]["body"]
    assert "case draw_card:\n    effect_draw_card(pl)" in body
    assert "effect_heal_damage_creature(pl, i32(cards[c].text_args[slot, 0]))" in body
    assert doc["procedures"]["effect_heal_damage_creature"]["params"] == {"pl": "i32", "damage": "i32"}

    # the draft lints with one W001 per todo item and nothing else, and can be played
    spec, diags = envc.lint(str(out))
    assert spec is not None
    assert {d.code for d in diags} == {"W001"} and len(diags) == len(doc["todo"]) == 12
    assert res.output.count("warning[W001]") == 12
    env = envc.build(spec)
    s = env.init(rng.key_from_seed(0))
    s = env.step(s, int(s.legal_action_mask.argmax()), rng.key_from_seed(1))
    assert not s.terminated


def test_saved_pages_with_from_file_follow_saved_pagination(tmp_path: Path) -> None:
    draft = scrape([str(SITE / "rules.html"), str(SITE / "cards.html")], from_files=True)
    assert draft.tables["cards"].n_rows == 10
    assert draft.sources[-1].endswith("/cards-2.html")


def test_gallery_adapter_reads_the_same_cards_from_a_div_layout(site: Any) -> None:
    base, _, _ = site
    fetcher = Fetcher(delay=0)
    table = scrape([f"{base}/rules.html", f"{base}/cards.html"], fetcher=fetcher).doc["tables"]["cards"]
    gallery = scrape([f"{base}/rules.html", f"{base}/gallery.html"], fetcher=fetcher).doc["tables"]["cards"]
    assert "number" in table["columns"] and "number" not in gallery["columns"]
    drop = {"number"}
    assert {k: v for k, v in table["columns"].items() if k not in drop} == gallery["columns"]
    assert [{k: v for k, v in r.items() if k not in drop} for r in table["rows"]] == gallery["rows"]


@pytest.mark.parametrize(
    ("path", "options", "message"),
    [
        ("/huge.html", [], "more than the limit of 1,000,000"),
        ("/endless.html", [], "more than the limit of 1,000,000 bytes"),
        ("/bomb.html", [], "more than the limit of 1,000,000 bytes"),
        ("/card.png", [], "expected an HTML page, got content type 'image/png'"),
        ("/loop-a", [], "redirect loop"),
        ("/hop/0", [], "more than 5 redirects"),
        ("/private/rules.html", [], "robots.txt of http://127.0.0.1"),
        ("/to-private", [], "disallows fetching this page"),
        ("/slow.html", ["--timeout", "0.5"], "timed out after 0.5 s"),
        ("/trickle.html", ["--timeout", "0.5"], "timed out after 0.5 s"),
        ("/missing.html", [], "HTTP 404 Not Found"),
    ],
)
def test_hostile_pages_get_one_clear_error(
    site: Any, tmp_path: Path, path: str, options: list[str], message: str
) -> None:
    base, _, _ = site
    out = tmp_path / "draft.yaml"
    res = _scrape([f"{base}{path}", "-o", str(out), "--max-bytes", "1000000", *options])
    assert res.exit_code == 1
    assert message in res.output
    assert res.output.count("error:") == 1 and "Traceback" not in res.output
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_robots_txt_server_error_means_fetch_nothing(site: Any) -> None:
    base, log, handler = site
    handler.robots_status = 503
    with pytest.raises(ScrapeError, match=r"robots\.txt could not be read"):
        scrape([f"{base}/rules.html"], fetcher=Fetcher(delay=0))
    assert [p for p, _ in log] == ["/robots.txt"]


def test_missing_robots_txt_allows_everything(site: Any) -> None:
    base, _, handler = site
    handler.robots_status = 404
    draft = scrape([f"{base}/private/rules.html"], fetcher=Fetcher(delay=0))
    assert draft.doc["name"] == "ember_league_tcg"


def test_only_http_urls_are_fetched(tmp_path: Path) -> None:
    res = _scrape(["file:///etc/passwd", "-o", str(tmp_path / "d.yaml")])
    assert res.exit_code == 1 and "only http:// and https:// URLs" in res.output


def test_malformed_and_deeply_nested_markup(site: Any, tmp_path: Path) -> None:
    base, _, _ = site
    draft = scrape([f"{base}/malformed.html", f"{base}/deep.html"], fetcher=Fetcher(delay=0))
    names = [t["name"] for t in draft.doc["todo"]]
    assert names == ["game", "attack"]
    game = draft.doc["todo"][0]["text"]
    assert "- second item\n  - nested\n- third" in game and "célèbre —" in game
    assert "Injected heading" not in game and "not a heading" not in game
    assert "bottom" in game  # 20,000 nested divs: walked without recursion
    setup = draft.doc["tables"]["setup"]
    assert setup["columns"]["hp"]["type"] == "i16"
    # a colspan cell's text stays in its first column (hp is empty: 0); a rowspan carries 50 down
    # no symbol map for this page: each token is its own member, in the order met (g, c, r, w)
    assert [(r["card"], r["hp"], r["cost"]) for r in setup["rows"]] == [
        ("Alpha", 30, [1, 1, 0, 0]), ("Beta", 40, [0, 0, 1, 0]), ("Gamma (no cost)", 0, [0, 0, 0, 0]),
        ("Delta", 50, [0, 0, 0, 2]), ("Epsilon", 50, [0, 1, 0, 0]),
    ]  # fmt: skip
    p = tmp_path / "d.yaml"
    p.write_text(draft.yaml())
    assert {d.code for d in envc.lint(str(p))[1]} == {"W001"}


def test_scraped_text_cannot_inject_yaml_or_templates(site: Any, tmp_path: Path) -> None:
    base, _, _ = site
    out = tmp_path / "draft.yaml"
    res = _scrape([f"{base}/inject.html", "-o", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    doc = yaml.safe_load(text)  # still one well-formed document, no python tags honoured
    heading = "Play a card: {{ 7 * 7 }} !!python/object/apply:os.system ['echo pwned']"
    action = next(t for t in doc["todo"] if t["target"].startswith("actions."))
    assert action["name"] == "play_card_7" and heading in action["text"]
    assert "evil: true" in action["text"] and "evil" not in doc
    rows = doc["tables"]["cards"]["rows"]
    assert [r["name"] for r in rows[1:]] == ["yes", "null", "1e3"]  # strings, not a bool, None or a float
    assert rows[1]["text"] == "'quoted' \"double\" \\ backslash: colon"
    assert doc["types"]["Kind"]["enum"] == ["none", "on", "off"]
    spec, diags = envc.lint(str(out))
    assert spec is not None and {d.code for d in diags} == {"W001"}


def test_column_typing_helpers() -> None:
    pokemon = {"G": "grass", "C": "colorless", "R": "fire", "W": "water"}
    assert cost_counts("{G}{C}{C}", pokemon) == {"grass": 1, "colorless": 2}
    assert cost_counts(" {R} {R} ", pokemon) == {"fire": 2}
    assert cost_counts("{G}{C}{C}") == {"g": 1, "c": 2}  # no symbol map: no guessing what G means
    assert cost_counts("—") == {} and cost_counts("G C") is None
    assert energy_name("Fire ×2") == "fire" and energy_name("{W}", pokemon) == "water"
    assert energy_name("Grass Energy") == "grass" and energy_name("{W}") is None
    assert energy_name("Trainer") is None
    taken: set[str] = set()
    assert [ident(t, taken, "c") for t in ("Type", "type", "#", "2nd Attack", "HP (max)", "")] == [
        "type_", "type_2", "number", "n_2nd_attack", "hp_max", "c"
    ]  # fmt: skip
