"""Polite, bounded page fetching: robots.txt, one deadline per URL, a size cap, a redirect cap, content types.

Limits hold against a hostile server:
- `timeout` is one wall-clock deadline per URL covering DNS, connect, TLS, headers (`100 Continue` included),
  body, every redirect hop and robots.txt. Every socket operation runs through a network backend that gives
  it only the time left, so a server that trickles one byte a second is cut off at the deadline. Politeness
  waits (`delay`, Crawl-delay) do not count.
- `max_bytes` bounds the bytes on the wire and the output of every `Content-Encoding` layer: the body is
  decoded here, layer by layer and in steps, never by the HTTP library.
- Redirects go to http(s) URLs only, at most `max_redirects` of them, each checked against robots.txt.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import re
import socket
import threading
import time
import urllib.request
import urllib.robotparser
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import httpcore
import httpx

USER_AGENT_TOKEN = "envc"
HTML_TYPES = ("text/html", "application/xhtml+xml")
JSON_TYPES = ("application/json", "text/json")  # and any application/*+json
REDIRECTS = (301, 302, 303, 307, 308)
ENCODINGS = ("gzip", "x-gzip", "deflate")  # what we ask for and decode (identity aside)
MAX_ENCODINGS = 3  # stacked Content-Encoding layers accepted
MAX_SECONDS = 86_400.0  # largest --timeout / --delay
ROBOTS_MAX_BYTES = 512 * 1024
_STEP = 64 * 1024  # most bytes a decoding layer produces per call
_HTTP_ERRORS = (
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.ProxyError,
    httpcore.UnsupportedProtocol,
    httpcore.ConnectionNotAvailable,
)


class ScrapeError(Exception):
    """A page could not be fetched or read; the message is one line for the user."""


@dataclass(frozen=True)
class Page:
    """A fetched (or saved) HTML page, or JSON card data (`is_json`)."""

    url: str
    body: bytes
    charset: str | None = None
    notes: tuple[str, ...] = ()  # what was left out of it, one line each
    content_type: str = "text/html"  # the media type, without parameters

    @property
    def is_json(self) -> bool:
        """Whether the body is JSON (card data) rather than HTML."""
        return is_json_type(self.content_type)


def is_json_type(mime: str) -> bool:
    """application/json, text/json and application/<anything>+json."""
    return mime in JSON_TYPES or (mime.startswith("application/") and mime.endswith("+json"))


def check_limits(timeout: float, max_bytes: int, max_redirects: int, delay: float, flags: bool = True) -> str | None:
    """What is wrong with these limits (a message naming the option: `--max-bytes`, or `max_bytes`), or None."""

    def name(option: str) -> str:
        return f"--{option}" if flags else option.replace("-", "_")

    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and 0 < timeout <= MAX_SECONDS):
        return f"{name('timeout')} must be a number of seconds above 0 and at most {MAX_SECONDS:g} (got {timeout})"
    if not (isinstance(delay, (int, float)) and math.isfinite(delay) and 0 <= delay <= MAX_SECONDS):
        return f"{name('delay')} must be a number of seconds from 0 to {MAX_SECONDS:g} (got {delay})"
    if max_bytes < 1:
        return f"{name('max-bytes')} must be at least 1 (got {max_bytes})"
    if max_redirects < 0:
        return f"{name('max-redirects')} must be 0 or more (got {max_redirects})"
    return None


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

    def __post_init__(self) -> None:
        problem = check_limits(self.timeout, self.max_bytes, self.max_redirects, self.delay, flags=False)
        if problem is not None:
            raise ValueError(problem)

    def fetch(self, url: str) -> Page:
        """GET an HTML page within one deadline, following at most `max_redirects` redirects (each checked
        against robots.txt). A code host's file view (a GitHub `blob` URL) is read as its raw file."""
        raw = raw_file_url(url)
        if raw is not None:
            page = self.fetch(raw)
            return dataclasses.replace(page, notes=(*page.notes, f"{url}: a code host's file view, read as {raw}"))
        _check_scheme(url)
        deadline = _Deadline(self.timeout)
        backend = _DeadlineBackend(deadline)
        try:
            with _pool(url, backend) as pool:
                return self._fetch(pool, deadline, url)
        except httpcore.TimeoutException:
            raise ScrapeError(f"{url}: timed out after {self.timeout:g} s") from None
        except _HTTP_ERRORS as e:
            raise ScrapeError(f"{url}: {type(e).__name__}: {_one_line(e)}") from None

    def _fetch(self, pool: httpcore.ConnectionPool, deadline: _Deadline, url: str) -> Page:
        seen = [url]
        current = url
        for _ in range(self.max_redirects + 1):
            _check_scheme(current)
            self._check_robots(pool, deadline, current)
            self._wait(current, deadline)
            status, headers, body = self._get(pool, deadline, current, self.max_bytes, html=True)
            if status in REDIRECTS:
                nxt = _redirect_target(current, status, headers)
                if nxt in seen:
                    raise ScrapeError(f"{url}: redirect loop ({' -> '.join([*seen, nxt])})")
                seen.append(nxt)
                current = nxt
                continue
            if status != 200:
                raise ScrapeError(f"{current}: HTTP {status} {_reason(status)}")
            ctype = headers.get("content-type", "")
            mime = _mime(ctype)
            if not mime:
                if _looks_like_json(body) and urlsplit(current).path.lower().endswith(".json"):
                    mime = "application/json"
                elif _looks_like_html(body):
                    mime = "text/html"
                else:
                    raise ScrapeError(f"{current}: expected an HTML page, got content type 'none'")
            markup = markup_page(current, current, mime, body, _charset(ctype))
            if markup is not None:
                return markup
            if mime == "text/plain" and urlsplit(current).path.lower().endswith((".html", ".htm")):
                mime = "text/html"  # a raw file server sends every file as text/plain
            if mime == "text/plain":
                return text_page(current, body, _charset(ctype))
            charset = _charset(ctype) or (sniff_utf8(body) if mime == "text/html" else None)
            return Page(current, body, charset, content_type=mime)
        raise ScrapeError(f"{url}: more than {self.max_redirects} redirects ({' -> '.join(seen)})")

    def _get(
        self, pool: httpcore.ConnectionPool, deadline: _Deadline, url: str, limit: int, html: bool = False
    ) -> tuple[int, httpx.Headers, bytes]:
        """One GET: status, headers and (for a 200) the decoded body, at most `limit` bytes after every layer."""
        try:
            req = httpx.Request(
                "GET",
                url,
                headers={
                    "User-Agent": self.user_agent,
                    "Accept": "text/html,application/xhtml+xml;q=0.9,application/json;q=0.8,text/plain;q=0.5,"
                    "*/*;q=0.1"
                    if html
                    else "text/plain,*/*;q=0.1",
                    "Accept-Encoding": "gzip, deflate",
                },
            )
        except (httpx.InvalidURL, UnicodeError) as e:
            raise ScrapeError(f"{url}: invalid URL: {_one_line(e)}") from None
        left = deadline.left()
        if left <= 0:
            raise httpcore.ReadTimeout("deadline reached")
        core = httpcore.Request(
            "GET",
            httpcore.URL(scheme=req.url.raw_scheme, host=req.url.raw_host, port=req.url.port, target=req.url.raw_path),
            headers=req.headers.raw,
            extensions={"timeout": dict.fromkeys(("connect", "read", "write", "pool"), left)},
        )
        resp = pool.handle_request(core)
        try:
            headers = httpx.Headers(resp.headers)
            if resp.status != 200:
                return resp.status, headers, b""
            mime = _mime(headers.get("content-type", ""))
            if html and mime and mime not in HTML_TYPES and mime != "text/plain" and not is_json_type(mime):
                raise ScrapeError(f"{url}: expected an HTML page, got content type '{mime}'")
            size = headers.get("content-length", "")
            if size.isdigit() and int(size) > limit:
                raise ScrapeError(f"{url}: page is {int(size):,} bytes, more than the limit of {limit:,}")
            codings = [c.strip().lower() for c in headers.get_list("content-encoding", split_commas=True)]
            assert isinstance(resp.stream, Iterable)  # a sync pool's responses stream synchronously
            body = _read_body(url, resp.stream, codings, limit)
            return resp.status, headers, body
        finally:
            resp.close()

    def _check_robots(self, pool: httpcore.ConnectionPool, deadline: _Deadline, url: str) -> None:
        origin = _origin(url)
        if origin not in self._robots:
            self._robots[origin] = self._read_robots(pool, deadline, origin)
        rp = self._robots[origin]
        if rp is not None and not rp.can_fetch(USER_AGENT_TOKEN, url):
            raise ScrapeError(f"{url}: robots.txt of {origin} disallows fetching this page")

    def _read_robots(
        self, pool: httpcore.ConnectionPool, deadline: _Deadline, origin: str
    ) -> urllib.robotparser.RobotFileParser | None:
        """RFC 9309: 4xx means no restrictions; 5xx or an unreachable file means fetch nothing."""
        url = origin + "/robots.txt"
        for _ in range(self.max_redirects + 1):
            try:
                status, headers, body = self._get(pool, deadline, url, ROBOTS_MAX_BYTES)
            except ScrapeError as e:
                raise ScrapeError(f"robots.txt could not be read, so nothing is fetched: {e}") from None
            except httpcore.TimeoutException:
                raise ScrapeError(
                    f"robots.txt could not be read, so nothing is fetched: {url}: timed out after {self.timeout:g} s"
                ) from None
            except _HTTP_ERRORS as e:
                raise ScrapeError(
                    f"robots.txt could not be read, so nothing is fetched: {url}: {type(e).__name__}: {_one_line(e)}"
                ) from None
            if status in REDIRECTS and headers.get("location"):
                url = _redirect_target(url, status, headers)
                continue
            if 400 <= status < 500:
                return None
            if status != 200:
                raise ScrapeError(f"{url}: HTTP {status}; robots.txt could not be read, so nothing is fetched")
            rp = urllib.robotparser.RobotFileParser(url)
            rp.parse(body.decode("utf-8", "replace").splitlines())
            delay = rp.crawl_delay(USER_AGENT_TOKEN)
            if delay is not None and not float(delay) <= self.max_crawl_delay:
                raise ScrapeError(f"{url} asks for a crawl delay of {delay} s (more than {self.max_crawl_delay:g} s)")
            return rp
        raise ScrapeError(f"{origin}/robots.txt: more than {self.max_redirects} redirects")

    def _wait(self, url: str, deadline: _Deadline) -> None:
        """Space requests to one origin by `delay` (or robots.txt's Crawl-delay when longer); the wait is
        added to the deadline."""
        origin = _origin(url)
        rp = self._robots.get(origin)
        crawl = rp.crawl_delay(USER_AGENT_TOKEN) if rp is not None else None
        gap = max(self.delay, float(crawl or 0))
        last = self._last.get(origin)
        if last is not None and gap > 0:
            left = last + gap - time.monotonic()
            if left > 0:
                time.sleep(left)
                deadline.extend(left)
        self._last[origin] = time.monotonic()


def read_saved(path: str, max_bytes: int = 5 * 1024 * 1024, url: str | None = None) -> Page:
    """A saved page (or a .json card file) from disk; its URL (for anchors) is `url` or the file's URI."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            body = f.read(max_bytes + 1)  # a FIFO or a growing file has no trustworthy size
    except OSError as e:
        raise ScrapeError(f"{path}: cannot read: {e.strerror or e}") from None
    if len(body) > max_bytes:
        raise ScrapeError(f"{path}: file is more than the limit of {max_bytes:,} bytes")
    if p.suffix.lower() == ".json" or (_looks_like_json(body) and not _looks_like_html(body)):
        return Page(url or p.resolve().as_uri(), body, content_type="application/json")
    markup = markup_page(p.resolve().as_uri(), url or p.resolve().as_uri(), "", body, None)
    if markup is not None:
        return markup
    if not _looks_like_html(body):
        from .text import looks_like_text

        if p.suffix.lower() in (".txt", ".text", "") and looks_like_text(body):
            return text_page(url or p.resolve().as_uri(), body, None)
        raise ScrapeError(f"{path}: does not look like an HTML page, a .txt rulebook or a .json card file")
    return Page(url or p.resolve().as_uri(), body, sniff_utf8(body))


# A code host's page that shows a file -> the URL of the file itself (the page is an app shell around it).
_FILE_VIEWS = (
    (re.compile(r"^https://github\.com/([^/]+)/([^/]+)/blob/(.+)$"), "https://raw.githubusercontent.com/{}/{}/{}"),
    (re.compile(r"^https://gitlab\.com/(.+?)/-/blob/(.+)$"), "https://gitlab.com/{}/-/raw/{}"),
    (re.compile(r"^https://codeberg\.org/([^/]+)/([^/]+)/src/(.+)$"), "https://codeberg.org/{}/{}/raw/{}"),
)


def raw_file_url(url: str) -> str | None:
    """The raw file behind a code host's file view ("github.com/o/r/blob/main/rules.md" ->
    "raw.githubusercontent.com/o/r/main/rules.md"); None for any other URL."""
    bare = urldefrag(url).url.split("?", 1)[0]
    for pattern, raw in _FILE_VIEWS:
        m = pattern.match(bare)
        if m:
            return raw.format(*m.groups())
    return None


def markup_page(name: str, url: str, mime: str, body: bytes, charset: str | None) -> Page | None:
    """A Markdown or reStructuredText rulebook (by the content type, or by the suffix of `name`) as an HTML page;
    None for anything else."""
    from .md import is_markdown, markdown_page  # they import this module
    from .rst import is_rst, rst_page

    if is_markdown(name, mime):
        return markdown_page(url, body, charset)
    if is_rst(name, mime):
        return rst_page(url, body, charset)
    return None


def sniff_utf8(body: bytes) -> str | None:
    """'utf-8' for a page that declares no charset but is valid UTF-8, else None (the parser's own sniffing).

    Without a declaration an HTML parser falls back to windows-1252, which turns a saved UTF-8 page's curly
    quotes into three characters each; a page that decodes as UTF-8 is UTF-8, as browsers' detectors decide.
    """
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "utf-8"


def text_page(url: str, body: bytes, charset: str | None) -> Page:
    """A plain-text page as HTML: its title lines as headings, the rest as paragraphs (`scrapers.text`)."""
    from .text import decode, to_html  # the extraction's heading rules; it imports this module

    note = f"{url}: plain text, read as headings (by their numbering) and paragraphs"
    return Page(url, to_html(decode(body, charset)), "utf-8", notes=(note,))


class _Deadline:
    """A monotonic-clock deadline; `extend` adds time (for politeness waits)."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def extend(self, seconds: float) -> None:
        self.end += seconds

    def clamp(self, timeout: float | None, exc: type[Exception]) -> float:
        """`timeout` cut to the time left; `exc` when none is left."""
        left = self.left()
        if left <= 0:
            raise exc("deadline reached")
        return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every read, write and TLS handshake gets only the time left."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: _Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.clamp(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.clamp(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        t = self._deadline.clamp(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, t), self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's sync backend under a deadline: name lookup, each connect attempt and all stream I/O."""

    def __init__(self, deadline: _Deadline) -> None:
        self._inner = httpcore.SyncBackend()
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        last: Exception = httpcore.ConnectError(f"{host}: no address")
        for addr in _resolve(host, port, self._deadline):
            t = self._deadline.clamp(timeout, httpcore.ConnectTimeout)
            try:
                stream = self._inner.connect_tcp(addr, port, t, local_address, socket_options)
            except httpcore.ConnectError as e:
                last = e
                continue
            return _DeadlineStream(stream, self._deadline)
        raise last

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:  # pragma: no cover - never configured
        raise httpcore.ConnectError("unix sockets are not used")

    def sleep(self, seconds: float) -> None:  # pragma: no cover - only with retries, which are off
        time.sleep(self._deadline.clamp(seconds, httpcore.PoolTimeout))


def _resolve(host: str, port: int, deadline: _Deadline) -> list[str]:
    """The addresses of `host`; the lookup (which sockets cannot time out) runs in a daemon thread."""
    try:
        ipaddress.ip_address(host)
        return [host]
    except ValueError:
        pass
    found: list[list[str] | BaseException] = []

    def lookup() -> None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            found.append(list(dict.fromkeys(str(i[4][0]) for i in infos)))
        except BaseException as e:  # handed to the caller
            found.append(e)

    t = threading.Thread(target=lookup, name=f"resolve {host}", daemon=True)
    t.start()
    t.join(deadline.clamp(None, httpcore.ConnectTimeout))
    if not found:
        raise httpcore.ConnectTimeout(f"{host}: name lookup timed out")
    if isinstance(found[0], BaseException):
        raise httpcore.ConnectError(f"{host}: {found[0]}")
    return found[0]


def _pool(url: str, backend: httpcore.NetworkBackend) -> httpcore.ConnectionPool:
    """A connection pool on the deadline backend, through the proxy the environment names for `url`."""
    scheme = urlsplit(url).scheme
    proxy_url = urllib.request.getproxies().get(scheme)
    host = urlsplit(url).hostname or ""
    proxy = None
    if proxy_url and urlsplit(proxy_url).scheme in ("http", "https") and not urllib.request.proxy_bypass(host):
        proxy = httpcore.Proxy(proxy_url)
    return httpcore.ConnectionPool(ssl_context=_ssl_context(), proxy=proxy, network_backend=backend)


_SSL: list[Any] = []


def _ssl_context() -> Any:
    if not _SSL:
        _SSL.append(httpx.create_ssl_context())
    return _SSL[0]


class _Layer:
    """One Content-Encoding layer, decoded in steps of at most _STEP bytes, its output counted against `limit`."""

    def __init__(self, coding: str, limit: int) -> None:
        self.coding = coding
        self.limit = limit
        self.produced = 0
        self._first = True
        gzip_ = coding in ("gzip", "x-gzip")
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS if gzip_ else zlib.MAX_WBITS)

    def push(self, data: bytes) -> Iterator[bytes]:
        """Decoded pieces of `data` (after the end of the stream, further data is ignored)."""
        while not self._z.eof:
            try:
                out = self._z.decompress(data, _STEP)
            except zlib.error as e:
                if self.coding == "deflate" and self._first:  # servers send raw deflate as "deflate" too
                    self._first = False
                    self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise _BadEncoding(f"{self.coding}: {e}") from None
            self._first = False
            self.produced += len(out)
            if self.produced > self.limit:
                raise _TooLarge
            if out:
                yield out
            data = self._z.unconsumed_tail
            if not data and len(out) < _STEP:  # all input used and no output held back
                return


class _TooLarge(Exception):
    pass


class _BadEncoding(Exception):
    pass


def _read_body(url: str, stream: Iterable[bytes], codings: list[str], limit: int) -> bytes:
    """The body decoded layer by layer (the last coding listed is undone first); every layer's output and
    the bytes on the wire are held to `limit`."""
    codings = [c for c in codings if c and c != "identity"]
    for c in codings:
        if c not in ENCODINGS:
            raise ScrapeError(f"{url}: unsupported content encoding '{c}'")
    if len(codings) > MAX_ENCODINGS:
        raise ScrapeError(f"{url}: {len(codings)} stacked content encodings (at most {MAX_ENCODINGS} are decoded)")
    layers = [_Layer(c, limit) for c in reversed(codings)]

    def through(i: int, data: bytes) -> Iterator[bytes]:
        if i == len(layers):
            yield data
            return
        for piece in layers[i].push(data):
            yield from through(i + 1, piece)

    chunks: list[bytes] = []
    wire = got = 0
    try:
        for raw in stream:
            wire += len(raw)
            if wire > limit:
                raise _TooLarge
            for piece in through(0, raw):
                got += len(piece)
                if got > limit:
                    raise _TooLarge
                chunks.append(piece)
    except _TooLarge:
        after = f" after decoding {', '.join(codings)}" if codings else ""
        raise ScrapeError(f"{url}: page is more than the limit of {limit:,} bytes{after}") from None
    except _BadEncoding as e:
        raise ScrapeError(f"{url}: the body is not valid {e}") from None
    return b"".join(chunks)


def _redirect_target(current: str, status: int, headers: httpx.Headers) -> str:
    """The absolute http(s) URL a redirect points to."""
    target = str(headers.get("location", "")).strip()
    if not target:
        raise ScrapeError(f"{current}: HTTP {status} redirect without a Location header")
    try:
        nxt = urljoin(current, target)
        parts = urlsplit(nxt)
    except ValueError as e:
        raise ScrapeError(f"{current}: HTTP {status} redirect to an invalid URL: {_one_line(e)}") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        shown = nxt if len(nxt) <= 80 else nxt[:77] + "..."
        raise ScrapeError(f"{current}: HTTP {status} redirect to {shown!r}, not an http(s) URL; not followed")
    return nxt


def _check_scheme(url: str) -> None:
    try:
        parts = urlsplit(url)
    except ValueError as e:
        raise ScrapeError(f"{url}: invalid URL: {_one_line(e)}") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ScrapeError(f"{url}: only http:// and https:// URLs can be fetched (use --from-file for saved pages)")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _mime(ctype: str) -> str:
    return ctype.split(";")[0].strip().lower()


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


def _looks_like_json(body: bytes) -> bool:
    head = body[:64].lstrip()
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:].lstrip()
    return head.startswith((b"[", b"{"))


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _reason(status: int) -> str:
    try:
        from http import HTTPStatus

        return HTTPStatus(status).phrase
    except ValueError:
        return ""
