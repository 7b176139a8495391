"""Card tables -> typed columns and effect templates (issue #23): brace-token costs through a site's symbol
map, column types by majority with outliers reported, name columns never effects, effect texts as templates
with numeric/word arguments and a choice, evolves-from as card ids, weakness/resistance amounts, and the real
card lists of tests/fixtures/real giving drafts that lint with W001 warnings only."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import envc
from envc.scrapers import scrape
from envc.scrapers.columns import column_kind, cost_counts, split_amount
from envc.scrapers.draft import build_draft
from envc.scrapers.effects import templatize
from envc.scrapers.extract import PageContent, RawTable, Section

REAL = Path(__file__).parent / "fixtures" / "real"
URL = "http://x/cards.html"


def draft_of(headers: list[str], rows: list[list[str]], symbols: dict[str, str] | None = None) -> Any:
    table = RawTable("cards", headers, rows, URL, is_cards=True)
    table.symbols = dict(symbols or {})
    page = PageContent(URL, "Cards", [Section("Cards", 1, URL, "The card list.")], [table])
    return build_draft([page])


def lint_codes(draft: Any, tmp_path: Path) -> set[str]:
    path = tmp_path / "draft.yaml"
    path.write_text(draft.yaml())
    spec, diags = envc.lint(str(path))
    assert spec is not None, [d.format() for d in diags]
    return {d.code for d in diags}


def test_effect_texts_become_templates_with_numeric_and_word_arguments() -> None:
    items = [
        ("Does 10 damage to each of your opponent's Benched Pokémon.", "Zubat"),
        ("Does 20 damage to each of your opponent's Benched Pokémon.", "Golbat"),
        ("Flip a coin. If heads, the Defending Pokémon is now Paralyzed.", "Pikachu"),
        ("Flip a coin. If heads, the Defending Pokémon is now Asleep.", "Jigglypuff"),
        ("Draw two cards.", "Bill"),
        ("Draw 3 cards.", "Oak"),
        ("Discard a {R} Energy attached to Charmander.", "Charmander"),
        ("Discard a {W} Energy attached to Squirtle.", "Squirtle"),
        ("Search your deck for a Basic Pokémon and put it onto your Bench.", "Nest Ball"),
    ]
    energy = {"{R}": "fire", "{W}": "water"}
    t = templatize(items, energy.get, avoid={"cards"})
    assert len(t.kinds) == 5  # nine texts, five kinds
    by_template = {k.template: k for k in t.kinds.values()}
    bench = by_template["Does {damage} damage to each of your opponent's Benched Pokémon."]
    assert [(a.name, a.kind) for a in bench.args] == [("damage", "int")] and not bench.choice
    assert t.uses[(items[1][0], "Golbat")].numbers == [20]
    status = by_template["Flip a coin. If heads, the Defending Pokémon is now {word}."]
    assert t.uses[(items[3][0], "Jigglypuff")].words == ["Asleep"]
    assert [a.kind for a in status.args] == ["word"]
    draw = by_template["Draw {n_cards} cards."]  # `cards` is the card table's name: the argument avoids it
    assert t.uses[(items[4][0], "Bill")].numbers == [2]
    discard = by_template["Discard a {energy} Energy attached to ~."]  # the card's own name is ~
    assert [a.kind for a in discard.args] == ["energy"] and draw.name != discard.name
    search = by_template["Search your deck for a Basic Pokémon and put it onto your Bench."]
    assert search.choice and [a.name for a in search.args] == ["choice"]


def test_card_table_effects_get_kind_and_argument_columns_and_procedures(tmp_path: Path) -> None:
    headers = ["Name", "HP", "Attack 1", "Text 1", "Attack 2", "Text 2"]
    rows = [
        ["Zubat", "40", "Screech", "Does 10 damage to each Benched Pokémon.", "Bite", ""],
        ["Golbat", "60", "Wing", "Does 20 damage to each Benched Pokémon.", "Sting", "Choose 1 of your Pokémon."],
        ["Crobat", "90", "Cross", "Does 30 damage to each Benched Pokémon.", "Poison", "Choose 2 of your Pokémon."],
    ]
    draft = draft_of(headers, rows)
    doc = draft.doc
    cols = doc["tables"]["cards"]["columns"]
    assert cols["text_kind"]["type"] == "Effect" and cols["text_kind"]["shape"] == [2]
    assert cols["text_args"]["type"] == "i16" and cols["text_args"]["shape"] == [2, 1]
    kinds = doc["types"]["Effect"]["enum"]
    assert kinds == ["none", "damage_each_benched_pokemon", "choose_pokemon"]
    data = doc["tables"]["cards"]["rows"]
    assert [r["text_args"] for r in data[1:]] == [[[10], [0]], [[20], [1]], [[30], [2]]]
    procs = doc["procedures"]
    assert procs["effect_choose_pokemon"]["params"] == {"pl": "i32", "n": "i32", "choice": "i32"}
    assert procs["apply_effect"]["params"] == {"pl": "i32", "c": "i32", "slot": "i32", "choice": "i32"}
    body = procs["apply_effect"]["body"]
    assert "match cards[c].text_kind[slot]:" in body
    assert "effect_choose_pokemon(pl, i32(cards[c].text_args[slot, 0]), choice)" in body
    todo = {t["name"]: t["text"] for t in doc["todo"]}
    assert (
        "Used by: Zubat (Screech) [damage=10], Golbat (Wing) [damage=20]" in todo["effect_damage_each_benched_pokemon"]
    )
    assert "choice (i32)" in todo["effect_choose_pokemon"]
    assert lint_codes(draft, tmp_path) == {"W001"}


def test_column_types_by_majority_with_outliers_in_the_notes(tmp_path: Path) -> None:
    headers = ["Name", "Damage", "Kind", "Rare"]
    names = [f"Card {i}" for i in range(20)]
    damage = [str(10 * i) for i in range(20)]
    damage[3], damage[10], damage[5], damage[6] = "?", "X", "30+", "60×"  # 18 of 20 numbers: 90%
    rows = [
        [n, d, "basic" if i % 2 else "stage", "yes" if i % 3 else "no"] for i, (n, d) in enumerate(zip(names, damage))
    ]
    draft = draft_of(headers, rows)
    cols = draft.doc["tables"]["cards"]["columns"]
    assert cols["damage"]["type"] == "i16" and cols["rare"]["type"] == "bool"
    want = [10 * i for i in range(20)]
    want[3], want[10], want[5], want[6] = 0, 0, 30, 60
    assert [r["damage"] for r in draft.doc["tables"]["cards"]["rows"][1:]] == want
    (note,) = [n for n in draft.notes if "'Damage'" in n]
    assert note == (
        "table cards, column 'Damage': 2 cell(s) are not numbers like the rest and were read as 0: "
        "row 4 (Card 3) '?', row 11 (Card 10) 'X'"
    )
    # below the majority the column stays what it is (here: labels)
    assert column_kind(["10", "?", "X", "20"]).name == "text"
    assert column_kind(["10", "20", "30", "?"]).name == "int"
    assert lint_codes(draft, tmp_path) == {"W001"}


def test_name_column_and_unique_short_columns_never_become_effects(tmp_path: Path) -> None:
    headers = ["Name", "HP", "Attack", "Text"]
    rows = [
        ["Professor's Research (Professor Sada)", "0", "Big Heavy Slam Attack", "Draw 7 cards."],
        ["Team Star Grunt Extra", "0", "Sudden Quick Strike Now", "Draw 3 cards."],
        ["Lost Vacuum Of The Void", "0", "Long Named Attack Here", "Put a card into the Lost Zone."],
    ]
    draft = draft_of(headers, rows)
    cols = draft.doc["tables"]["cards"]["columns"]
    assert cols["name"] == "str" and cols["attack"] == "str" and "name_kind" not in cols and "attack_kind" not in cols
    assert draft.doc["types"]["Effect"]["enum"] == ["none", "draw_cards", "put_card_lost_zone"]
    assert lint_codes(draft, tmp_path) == {"W001"}


def test_evolves_from_becomes_card_ids_and_unknown_names_are_reported(tmp_path: Path) -> None:
    headers = ["Name", "Stage", "Evolves from", "HP", "Weakness", "Resistance"]
    rows = [
        ["Charmander", "Basic", "", "50", "Water ×2", ""],
        ["Charmeleon", "Stage 1", "Charmander", "80", "Water ×2", "Fighting -30"],
        ["Charizard", "Stage 2", "Charmeleon", "120", "Water ×2", "Fighting -30"],
        ["Kadabra", "Stage 1", "Abra", "60", "Psychic ×2", ""],
    ]
    draft = draft_of(headers, rows)
    t = draft.doc["tables"]["cards"]
    assert t["columns"]["evolves_from_id"]["type"] == "i16"
    assert [r.get("evolves_from_id") for r in t["rows"]] == [0, 0, 1, 2, 0]
    assert any(
        "'Evolves from': 1 name(s) are not cards of the list" in n and "(Kadabra) 'Abra'" in n for n in draft.notes
    )
    assert t["columns"]["weakness"]["type"] == "Energy" and t["columns"]["resistance"]["type"] == "Energy"
    got = [(r["weakness"], r["weakness_factor"], r["resistance"], r["resistance_amount"]) for r in t["rows"][1:]]
    assert got == [
        ("water", 2, "none", 0), ("water", 2, "fighting", -30), ("water", 2, "fighting", -30), ("psychic", 2, "none", 0)
    ]  # fmt: skip
    assert split_amount("Fire +20") == ("Fire", 0, 20)
    assert lint_codes(draft, tmp_path) == {"W001"}


def test_cost_tokens_of_any_length_through_the_site_symbol_map(tmp_path: Path) -> None:
    # another game's mana: {W} is white here, and digits are generic amounts
    mana = {"W": "white", "U": "blue"}
    assert cost_counts("{2}{W}{W}", mana) == {"generic": 2, "white": 2}
    assert cost_counts("{Fire}{Fire}{Colorless}") == {"fire": 2, "colorless": 1}
    assert cost_counts("{X}{U}", mana) == {"x": 1, "blue": 1}
    headers = ["Name", "Mana Cost", "Color", "Text"]
    rows = [
        ["Serra Angel", "{3}{W}{W}", "White", "Flying, vigilance."],
        ["Air Elemental", "{3}{U}{U}", "Blue", "Flying."],
        ["Counterspell", "{U}{U}", "Blue", "Counter target spell."],
    ]
    draft = draft_of(headers, rows, mana)
    doc = draft.doc
    assert doc["types"]["Energy"]["enum"] == ["white", "blue", "generic", "none"]  # no Pokemon water/lightning
    assert doc["tables"]["cards"]["columns"]["color"]["type"] == "Energy"
    assert [r["mana_cost"] for r in doc["tables"]["cards"]["rows"]] == [[0, 0, 0], [2, 0, 3], [0, 2, 3], [0, 2, 0]]
    assert lint_codes(draft, tmp_path) == {"W001"}


def test_a_page_legend_says_what_symbols_mean_when_the_adapter_does_not() -> None:
    draft = scrape([str(Path(__file__).parent / "fixtures" / "scrape" / "emberdb" / "cards.html")], from_files=True)
    assert draft.doc["types"]["Energy"]["enum"] == ["grass", "fire", "water", "colorless", "none"]


REAL_PAIRS = [
    ("pokemon", "cards.html", {"hp": "i16", "damage": "i16", "weakness": "Energy", "evolves_from_id": "i16"}),
    ("pokemon", "cards_sv1.json", {"hp": "i16", "weakness_type": "Energy", "evolves_from_id": "i16"}),
    ("mtg", "cards_lea.json", {"cmc": "i16", "power": "i16", "manacost": "i8"}),
    ("netrunner", "cards_core.json", {"cost": "i16", "strength": "i16", "uniqueness": "bool"}),
]


@pytest.mark.parametrize(("game", "cards", "typed"), REAL_PAIRS, ids=[f"{g}-{c}" for g, c, _ in REAL_PAIRS])
def test_real_card_lists_give_drafts_that_lint(game: str, cards: str, typed: dict[str, str], tmp_path: Path) -> None:
    if not (REAL / game / cards).exists():
        pytest.skip(f"fixture {game}/{cards} not present")
    draft = scrape([str(REAL / game / "rules.html"), str(REAL / game / cards)], from_files=True)
    assert lint_codes(draft, tmp_path) == {"W001"}
    table = draft.doc["tables"]["cards"]
    types = {k: v if isinstance(v, str) else v["type"] for k, v in table["columns"].items()}
    assert {k: types.get(k) for k in typed} == typed
    assert types["name" if "name" in types else "title"] == "str"
    # effect texts are templated: fewer kinds than distinct texts, each kind with its procedure
    texts = {
        r[k]
        for r in table["rows"]
        for k in table["columns"]
        if table["columns"][k] == "str" and re.sub(r"_\d+$", "", k) + "_kind" in table["columns"] and r.get(k)
    }
    kinds = draft.doc["types"]["Effect"]["enum"][1:]
    assert 0 < len(kinds) < len(texts)
    assert all(f"effect_{k}" in draft.doc["procedures"] for k in kinds)


def test_draft_yaml_keeps_quotes_balanced_for_the_linter(tmp_path: Path) -> None:
    """Card names with apostrophes in flow rows used to hide closing braces from lint's depth pre-scan."""
    rows = [[f"Professor's Card {i}", str(i), "basic"] for i in range(60)]
    draft = draft_of(["Name", "HP", "Stage"], rows)
    text = draft.yaml()
    assert "'Professor''s Card 0'" in text and yaml.safe_load(text)["tables"]["cards"]["rows"][1]["name"] == rows[0][0]
    assert lint_codes(draft, tmp_path) == {"W001"}
