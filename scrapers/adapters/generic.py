"""The default adapter: headings, paragraphs, lists and <table>s of any page."""

from __future__ import annotations

from bs4 import BeautifulSoup

from .base import SiteAdapter


class GenericAdapter(SiteAdapter):
    """Works on any page; used when no site adapter recognizes it."""

    name = "generic"
    description = "headings -> rule sections, <table> -> constant tables, pages linked by rel=next are followed"

    def matches(self, url: str, soup: BeautifulSoup) -> bool:
        """Every page."""
        return True
