"""Adapters for well-known card games: what their cost symbols mean, wherever their card lists come from.

Each is chosen by the site's host name, or by the layout of the card list itself (a table with HP, Weakness
and Retreat columns is a Pokémon TCG list; JSON cards with `mana_cost` are Magic cards); `--adapter generic`
turns the guess off.
"""

from __future__ import annotations

import re
from typing import Any

from bs4 import BeautifulSoup
from bs4.element import Tag

from ..extract import Icons, text_of
from .base import SiteAdapter

POKEMON_TYPES = ("grass", "fire", "water", "lightning", "psychic", "fighting", "darkness", "metal", "fairy", "dragon")
# Energy symbols as printed on Pokémon cards, and the type names icons carry as alt text.
POKEMON_SYMBOLS = {
    "G": "grass", "R": "fire", "W": "water", "L": "lightning", "P": "psychic", "F": "fighting", "D": "darkness",
    "M": "metal", "Y": "fairy", "N": "dragon", "C": "colorless",
    **{t.capitalize(): t for t in (*POKEMON_TYPES, "colorless")},
}  # fmt: skip
# Magic: The Gathering mana symbols ({2} and {X} are generic amounts, not colors).
MTG_SYMBOLS = {
    "W": "white", "U": "blue", "B": "black", "R": "red", "G": "green", "C": "colorless", "S": "snow",
    **{c.capitalize(): c for c in ("white", "blue", "black", "red", "green", "colorless")},
}  # fmt: skip


def _table_heads(soup: BeautifulSoup) -> list[set[str]]:
    """The lowercased header texts of each table's first row (at most 20 tables)."""
    out = []
    for tbl in soup.find_all("table", limit=20):
        tr = tbl.find("tr")
        if isinstance(tr, Tag):
            out.append({text_of(c).strip().lower() for c in tr.find_all(["th", "td"], limit=60)})
    return out


class PokemonTCG(SiteAdapter):
    """Pokémon TCG card lists: energy letters ({G}{R}) and type icons (alt 'Fire') name energy types."""

    name = "pokemon-tcg"
    description = "Pokémon TCG card lists (pokemon.com, pokemontcg.io, Bulbapedia, or HP/Weakness/Retreat columns)"
    symbols = POKEMON_SYMBOLS
    hosts = ("pokemon.com", "pokemontcg.io", "bulbagarden.net", "limitlesstcg.com", "pkmncards.com")

    def matches(self, url: str, soup: BeautifulSoup) -> bool:
        """A Pokémon site, or a card table with HP and two of Weakness/Resistance/Retreat."""
        if self.for_host(url):
            return True
        marks = {"weakness", "resistance", "retreat", "retreat cost"}
        return any("hp" in h and len(h & marks) >= 2 for h in _table_heads(soup))

    def matches_json(self, url: str, cards: list[dict[str, Any]]) -> bool:
        """pokemontcg.io, or cards with a supertype and attacks/HP/retreat costs."""
        return self.for_host(url) or any(
            "supertype" in c and ({"attacks", "hp", "retreatCost"} & c.keys()) for c in cards[:20]
        )


class MagicTG(SiteAdapter):
    """Magic: The Gathering card lists: mana symbols {W}{U}{B}{R}{G} are colors ({2}, {X}: generic)."""

    name = "mtg"
    description = "Magic: The Gathering card lists (Scryfall, Gatherer, MTGJSON, or Mana Cost columns)"
    symbols = MTG_SYMBOLS
    icons = Icons(classes=re.compile(r"card-symbol-([A-Z0-9]{1,3})"))  # Scryfall's <abbr class="card-symbol-W">
    hosts = ("scryfall.com", "wizards.com", "mtgjson.com", "mtg.wiki", "mtg.fandom.com")

    def matches(self, url: str, soup: BeautifulSoup) -> bool:
        """A Magic site, or a card table with a Mana Cost column."""
        return self.for_host(url) or any("mana cost" in h or "mana value" in h for h in _table_heads(soup))

    def matches_json(self, url: str, cards: list[dict[str, Any]]) -> bool:
        """Scryfall or MTGJSON card objects."""
        keys = {"mana_cost", "manaCost", "manacost", "oracle_text", "type_line", "manaValue"}
        return self.for_host(url) or any(keys & c.keys() for c in cards[:20])
