"""Site adapters: small plug-ins that know one site's layout. The generic adapter is the default.

An adapter is a `SiteAdapter` subclass registered with `register(...)`; third-party packages can provide
one through the `envc.scrapers` entry-point group (the entry point names the class).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from bs4 import BeautifulSoup

from ..fetch import ScrapeError
from .base import SiteAdapter
from .emberdb import EmberDB, EmberDBGallery
from .games import MagicTG, PokemonTCG
from .generic import GenericAdapter

_REGISTRY: dict[str, SiteAdapter] = {}


def register(adapter: SiteAdapter) -> SiteAdapter:
    """Add an adapter (a later one with the same name replaces the earlier)."""
    _REGISTRY[adapter.name] = adapter
    return adapter


def adapters() -> list[SiteAdapter]:
    """Every registered adapter, site-specific ones first, the generic one last."""
    _load_entry_points()
    return sorted(_REGISTRY.values(), key=lambda a: a.name == GenericAdapter.name)


def choose(url: str, soup: BeautifulSoup, name: str | None = None) -> SiteAdapter:
    """The adapter named `name`, else the first site adapter that recognizes the page, else the generic one."""
    return _choose(name, url, lambda a: a.matches(url, soup))


def choose_json(url: str, cards: list[dict[str, Any]], name: str | None = None) -> SiteAdapter:
    """The adapter named `name`, else the first site adapter that knows these JSON cards, else the generic one."""
    return _choose(name, url, lambda a: a.matches_json(url, cards))


def _choose(name: str | None, url: str, knows: Callable[[SiteAdapter], bool]) -> SiteAdapter:
    known = {a.name: a for a in adapters()}
    if name is not None:
        if name not in known:
            raise ScrapeError(f"unknown site adapter '{name}' (have: {', '.join(sorted(known))})")
        return known[name]
    for a in adapters():  # the site's own adapter first, then one that knows the layout
        if a.name != GenericAdapter.name and a.for_host(url):
            return a
    for a in adapters():
        if a.name != GenericAdapter.name and knows(a):
            return a
    return known[GenericAdapter.name]


_loaded = False


def _load_entry_points() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for ep in entry_points(group="envc.scrapers"):
        try:
            cls = ep.load()
            register(cls())
        except Exception as e:  # a broken plug-in must not break the built-in adapters
            raise ScrapeError(f"site adapter plug-in '{ep.name}' could not be loaded: {e}") from None


register(GenericAdapter())
register(EmberDBGallery())  # before EmberDB: the first that matches is used
register(EmberDB())
register(PokemonTCG())
register(MagicTG())

__all__ = [
    "EmberDB",
    "EmberDBGallery",
    "GenericAdapter",
    "MagicTG",
    "PokemonTCG",
    "SiteAdapter",
    "adapters",
    "choose",
    "choose_json",
    "register",
]
