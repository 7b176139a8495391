"""Polite, bounded page fetching: robots.txt, timeouts, a size cap, a redirect cap and content-type checks."""

from __future__ import annotations

import time
import urllib.robotparser
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx

USER_AGENT_TOKEN = "envc"
HTML_TYPES = ("text/html", "application/xhtml+xml")
REDIRECTS = (301, 302, 303, 307, 308)


class ScrapeError(Exception):
    """A page could not be fetched or read; the message is one line for the user."""


@dataclass(frozen=True)
class Page:
    """A fetched (or saved) HTML page."""

    url: str
    body: bytes
    charset: str | None = None


@dataclass
class Fetcher:
    """Fetches HTML pages over http(s) with limits; one instance per scrape (it caches robots.txt)."""

    timeout: float = 20.0
    max_bytes: int = 5 * 1024 * 1024
    max_redirects: int = 5
    delay: float = 1.0
    max_crawl_delay: float = 30.0
    user_agent: str = "envc-scrape/0.1 (drafts an RL environment spec from a rules page)"
    _robots: dict[str, urllib.robotparser.RobotFileParser | None] = field(default_factory=dict)
    _last: dict[str, float] = field(default_factory=dict)

    def fetch(self, url: str) -> Page:
        """GET an HTML page, following at most `max_redirects` redirects, each checked against robots.txt."""
        seen = [url]
        with httpx.Client(headers={"User-Agent": self.user_agent}, follow_redirects=False) as client:
            current = url
            for _ in range(self.max_redirects + 1):
                _check_scheme(current)
                self._check_robots(client, current)
                self._wait(current)
                status, headers, body = self._get(client, current, self.max_bytes)
                if status in REDIRECTS:
                    target = headers.get("location")
                    if not target:
                        raise ScrapeError(f"{current}: HTTP {status} redirect without a Location header")
                    nxt = urljoin(current, target)
                    if nxt in seen:
                        raise ScrapeError(f"{url}: redirect loop ({' -> '.join([*seen, nxt])})")
                    seen.append(nxt)
                    current = nxt
                    continue
                if status != 200:
                    raise ScrapeError(f"{current}: HTTP {status} {_reason(status)}")
                ctype = headers.get("content-type", "")
                mime = ctype.split(";")[0].strip().lower()
                if mime not in HTML_TYPES and not (not mime and _looks_like_html(body)):
                    raise ScrapeError(f"{current}: expected an HTML page, got content type '{mime or 'none'}'")
                return Page(current, body, _charset(ctype))
        raise ScrapeError(f"{url}: more than {self.max_redirects} redirects ({' -> '.join(seen)})")

    def _get(self, client: httpx.Client, url: str, limit: int) -> tuple[int, httpx.Headers, bytes]:
        """One GET with an overall deadline and a byte cap (checked on Content-Length and while reading)."""
        deadline = time.monotonic() + self.timeout
        timeout = httpx.Timeout(self.timeout)
        try:
            with client.stream("GET", url, timeout=timeout) as r:
                if r.status_code in REDIRECTS or r.status_code != 200:
                    return r.status_code, r.headers, b""
                size = r.headers.get("content-length")
                if size is not None and size.isdigit() and int(size) > limit:
                    raise ScrapeError(f"{url}: page is {int(size):,} bytes, more than the limit of {limit:,}")
                chunks: list[bytes] = []
                got = 0
                for chunk in r.iter_bytes():  # decoded (gzip...), so the cap bounds what is kept
                    got += len(chunk)
                    if got > limit:
                        raise ScrapeError(f"{url}: page is more than the limit of {limit:,} bytes")
                    if time.monotonic() > deadline:
                        raise ScrapeError(f"{url}: timed out after {self.timeout:g} s")
                    chunks.append(chunk)
                return r.status_code, r.headers, b"".join(chunks)
        except httpx.TimeoutException:
            raise ScrapeError(f"{url}: timed out after {self.timeout:g} s") from None
        except httpx.HTTPError as e:
            raise ScrapeError(f"{url}: {type(e).__name__}: {e}") from None

    def _check_robots(self, client: httpx.Client, url: str) -> None:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._robots:
            self._robots[origin] = self._read_robots(client, origin)
        rp = self._robots[origin]
        if rp is None:
            return
        if not rp.can_fetch(USER_AGENT_TOKEN, url):
            raise ScrapeError(f"{url}: robots.txt of {origin} disallows fetching this page")

    def _read_robots(self, client: httpx.Client, origin: str) -> urllib.robotparser.RobotFileParser | None:
        """RFC 9309: 4xx means no restrictions; 5xx or an unreachable file means fetch nothing."""
        url = origin + "/robots.txt"
        for _ in range(self.max_redirects + 1):
            try:
                status, headers, body = self._get(client, url, 512 * 1024)
            except ScrapeError as e:
                raise ScrapeError(f"robots.txt could not be read, so nothing is fetched: {e}") from None
            if status in REDIRECTS and headers.get("location"):
                url = urljoin(url, headers["location"])
                continue
            if 400 <= status < 500:
                return None
            if status != 200:
                raise ScrapeError(f"{url}: HTTP {status}; robots.txt could not be read, so nothing is fetched")
            rp = urllib.robotparser.RobotFileParser(url)
            rp.parse(body.decode("utf-8", "replace").splitlines())
            delay = rp.crawl_delay(USER_AGENT_TOKEN)
            if delay is not None and float(delay) > self.max_crawl_delay:
                raise ScrapeError(f"{url} asks for a crawl delay of {delay} s (more than {self.max_crawl_delay:g} s)")
            return rp
        raise ScrapeError(f"{origin}/robots.txt: more than {self.max_redirects} redirects")

    def _wait(self, url: str) -> None:
        """Space requests to one origin by `delay` (or robots.txt's Crawl-delay when longer)."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        rp = self._robots.get(origin)
        crawl = rp.crawl_delay(USER_AGENT_TOKEN) if rp is not None else None
        gap = max(self.delay, float(crawl or 0))
        last = self._last.get(origin)
        if last is not None and gap > 0:
            left = last + gap - time.monotonic()
            if left > 0:
                time.sleep(left)
        self._last[origin] = time.monotonic()


def read_saved(path: str, max_bytes: int = 5 * 1024 * 1024, url: str | None = None) -> Page:
    """A saved page from disk (`--from-file`); its URL (for anchors) is `url` or the file's URI."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > max_bytes:
            raise ScrapeError(f"{path}: file is {size:,} bytes, more than the limit of {max_bytes:,}")
        body = p.read_bytes()
    except OSError as e:
        raise ScrapeError(f"{path}: cannot read: {e.strerror or e}") from None
    if not _looks_like_html(body):
        raise ScrapeError(f"{path}: does not look like an HTML page")
    return Page(url or p.resolve().as_uri(), body)


def _check_scheme(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ScrapeError(f"{url}: only http:// and https:// URLs can be fetched (use --from-file for saved pages)")


def _charset(ctype: str) -> str | None:
    for part in ctype.split(";")[1:]:
        k, _, v = part.partition("=")
        if k.strip().lower() == "charset" and v.strip():
            return v.strip().strip('"').lower()
    return None


def _looks_like_html(body: bytes) -> bool:
    head = body[:1024].lstrip().lower()
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:].lstrip()
    starts = (b"<!doctype html", b"<html", b"<head", b"<body", b"<!--", b"<meta", b"<title", b"<h1", b"<p", b"<?xml")
    return head.startswith(starts)


def _reason(status: int) -> str:
    try:
        from http import HTTPStatus

        return HTTPStatus(status).phrase
    except ValueError:
        return ""
