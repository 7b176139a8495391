"""envc scrape against misbehaving HTTP servers on 127.0.0.1 (issue #24): stacked encodings, trickled headers,
endless `100 Continue`, slow robots.txt and redirect chains, non-http redirects, bad limits and pages with far
too many headings. Each run goes through the real CLI and must end, in bounded time, with one `error:` line
(or a draft that lints), never a traceback."""

from __future__ import annotations

import gzip
import os
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import envc
from envc.cli import app
from envc.scrapers import ScrapeError
from envc.scrapers.draft import MAX_DRAFT_BYTES, MAX_DRAFT_NODES, MAX_EFFECTS, build_draft
from envc.scrapers.extract import (
    MAX_CELL_CHARS,
    MAX_HEADING_TAGS,
    MAX_SECTION_CHARS,
    MAX_SECTIONS,
    PageContent,
    RawTable,
    Section,
)

HOSTILE = Path(__file__).parent / "fixtures" / "scrape" / "hostile"
# 6.8 KB: gzip of the gzip of 4 GiB of zero bytes, served as `Content-Encoding: gzip, gzip`. Made with
#   c = zlib.compressobj(9, zlib.DEFLATED, 31); inner = b"".join(c.compress(bytes(1 << 24)) for _ in range(256))
#   + c.flush(); gzip.compress(inner, 9, mtime=0)
BOMB_4GIB = HOSTILE / "gzip-gzip-4gib.bin"
ENVC = Path(sys.executable).parent / "envc"
PAGE = b"<!DOCTYPE html><html><body><h1>Tiny Game</h1><h2>Setup</h2><p>Each player draws 5 cards.</p></body></html>"
_ROW = b"<tr><td>C%d</td><td>%d0</td><td>fire</td><td>{R}</td><td>Draw a card.</td></tr>"
CARDS = (  # a card list page: its rel=next links are followed
    b"<html><body><h1>Cards</h1><table><tr><th>Name</th><th>HP</th><th>Type</th><th>Cost</th><th>Text</th></tr>"
    + b"".join(_ROW % (i, i) for i in range(3))
    + b"</table></body></html>"
)
runner = CliRunner()

Route = Callable[[socket.socket, threading.Event], None]


class RawServer:
    """An HTTP server on a raw socket: each route writes whatever bytes it likes, as slowly as it likes.

    `log` lists the paths requested in order; robots.txt is 404 (no restrictions) unless a route replaces it.
    One request per connection; routes loop until the client goes away or the test ends (`stop`).
    """

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = {"/robots.txt": reply(404, b"", "text/plain"), **routes}
        self.log: list[str] = []
        self.stop = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            with conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    data = conn.recv(4096)
                    if not data:
                        return
                    head += data
                path = head.split(b" ", 2)[1].decode("latin-1")
                self.log.append(path)
                self.routes.get(path, reply(404, b"<html>not found</html>"))(conn, self.stop)
        except OSError:  # the client went away (what a timed-out fetch does)
            pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)
        self.sock.close()


def reply(status: int, body: bytes, ctype: str = "text/html", **headers: str) -> Route:
    """A route answering at once with `body` and the given headers (`Content_Encoding` -> Content-Encoding)."""
    fields = {"Content-Type": ctype, "Content-Length": str(len(body)), "Connection": "close", **headers}
    head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in fields.items()) + "\r\n"

    def route(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(head.encode("latin-1") + body)

    return route


def trickle(first: bytes, unit: bytes, every: float = 0.05) -> Route:
    """Send `first`, then `unit` every `every` seconds until the client leaves."""

    def route(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(first)
        while not stop.wait(every):
            conn.sendall(unit)

    return route


def late(seconds: float, inner: Route) -> Route:
    """`inner`, after `seconds` of silence."""

    def route(conn: socket.socket, stop: threading.Event) -> None:
        if not stop.wait(seconds):
            inner(conn, stop)

    return route


@pytest.fixture()
def serve() -> Iterator[Callable[[dict[str, Route]], RawServer]]:
    """Start RawServers for a test; all are stopped at its end."""
    servers: list[RawServer] = []

    def start(routes: dict[str, Route]) -> RawServer:
        servers.append(RawServer(routes))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def scrape_cli(args: list[str]) -> tuple[int, str, float]:
    """`envc scrape ARGS --delay 0` in process: exit code, output (stdout and stderr), seconds taken."""
    t = time.monotonic()
    res = runner.invoke(app, ["scrape", *args, "--delay", "0"])
    took = time.monotonic() - t
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    return res.exit_code, res.output, took


def one_error(output: str) -> str:
    """The one `error:` line of a failed run."""
    errors = [line for line in output.splitlines() if "error:" in line]
    assert len(errors) == 1, output
    assert errors[0].startswith("error: ")
    return errors[0]


# --- size: every Content-Encoding layer is held to --max-bytes ---------------------------------------------


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_stacked_gzip_bomb_stops_at_max_bytes_in_bounded_memory(serve: Any, tmp_path: Path) -> None:
    """13 KB on the wire used to inflate to 4 GB and a MemoryError. Now: one error line, within a 1 GiB address
    space: the decoder holds at most --max-bytes plus one step per layer. (The limit is RLIMIT_AS rather than
    wait4's ru_maxrss, which counts the forking pytest worker's own pages and reads 2 GB after a JAX test.)"""
    bomb = BOMB_4GIB.read_bytes()
    assert len(bomb) < 8_000 and gzip.decompress(bomb)[:2] == b"\x1f\x8b"  # a gzip stream inside a gzip stream
    site = serve({"/bomb.html": reply(200, bomb, Content_Encoding="gzip, gzip")})
    out, err = tmp_path / "d.yaml", tmp_path / "stderr.txt"
    cmd = [str(ENVC), "scrape", f"{site.url}/bomb.html", "-o", str(out), "--max-bytes", "1000000", "--delay", "0"]
    with err.open("wb") as f:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=f, preexec_fn=_limit_memory)
    timer = threading.Timer(120, proc.kill)  # a hang fails the test instead of blocking the suite
    timer.start()
    try:
        _, status, _ = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    assert os.waitstatus_to_exitcode(status) == 1
    text = err.read_text()
    assert "Traceback" not in text
    assert one_error(text) == (
        f"error: {site.url}/bomb.html: page is more than the limit of 1,000,000 bytes after decoding gzip, gzip"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("encoding", "body", "message"),
    [
        ("gzip, gzip, gzip, gzip", gzip.compress(PAGE), "4 stacked content encodings (at most 3 are decoded)"),
        ("br", b"\x1b\x00", "unsupported content encoding 'br'"),
        ("gzip", b"\x1f\x8b\x08\x00garbage" * 10, "the body is not valid gzip"),
        (
            "deflate",
            zlib.compress(b" " * 5_000_000, 9),
            "more than the limit of 1,000,000 bytes after decoding deflate",
        ),
        ("identity, gzip", gzip.compress(b" " * 5_000_000, 9), "more than the limit of 1,000,000 bytes after decoding"),
        (  # the inner layer is 3 MB (a page, then bytes its decoder ignores), the decoded page 100 bytes
            "gzip, gzip",
            gzip.compress(gzip.compress(PAGE) + bytes(3_000_000)),
            "more than the limit of 1,000,000 bytes after decoding gzip, gzip",
        ),
    ],
)
def test_bad_content_encodings_get_one_error(
    serve: Any, tmp_path: Path, encoding: str, body: bytes, message: str
) -> None:
    site = serve({"/p.html": reply(200, body, Content_Encoding=encoding)})
    code, output, _ = scrape_cli([f"{site.url}/p.html", "-o", str(tmp_path / "d.yaml"), "--max-bytes", "1000000"])
    assert code == 1
    assert message in one_error(output)


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        ("gzip, gzip", gzip.compress(gzip.compress(PAGE))),
        ("deflate", zlib.compress(PAGE)),  # zlib-wrapped, as the RFC says
        ("deflate", zlib.compress(PAGE)[2:-4]),  # raw deflate, as some servers send it
        ("x-gzip", gzip.compress(PAGE)),
        ("identity", PAGE),
    ],
)
def test_encoded_pages_are_decoded(serve: Any, tmp_path: Path, encoding: str, body: bytes) -> None:
    site = serve({"/p.html": reply(200, body, Content_Encoding=encoding)})
    out = tmp_path / "d.yaml"
    code, output, _ = scrape_cli([f"{site.url}/p.html", "-o", str(out)])
    assert code == 0, output
    doc = yaml.safe_load(out.read_text())
    assert doc["name"] == "tiny_game" and "Each player draws 5 cards." in doc["todo"][0]["text"]


# --- time: --timeout is one deadline per URL ---------------------------------------------------------------

OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"


@pytest.mark.parametrize(
    ("routes", "url", "message"),
    [
        pytest.param(  # one byte of a header every 50 ms: each read is quick, the headers never end
            {"/p.html": trickle(OK_HEAD + b"X-Slow: ", b"a")}, "/p.html", "/p.html: timed out after 1 s", id="headers"
        ),
        pytest.param(
            {"/p.html": trickle(b"", b"HTTP/1.1 100 Continue\r\n\r\n")}, "/p.html", "timed out after 1 s", id="100"
        ),
        pytest.param(
            {"/p.html": trickle(OK_HEAD + b"Content-Length: 100000\r\n\r\n<html>", b"<p>")},
            "/p.html",
            "timed out after 1 s",
            id="body",
        ),
        pytest.param(  # 0.4 s per hop, each far within the timeout; five hops are not
            {f"/hop/{i}": late(0.4, reply(302, b"", Location=f"/hop/{i + 1}")) for i in range(5)},
            "/hop/0",
            "/hop/0: timed out after 1 s",
            id="redirects",
        ),
        pytest.param(
            {"/robots.txt": trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nUser-agent: *\n", b"#")},
            "/p.html",
            "robots.txt could not be read, so nothing is fetched: ",
            id="robots",
        ),
        pytest.param(
            {"/robots.txt": trickle(b"HTTP/1.1 200 OK\r\nX-Slow: ", b"a")},
            "/p.html",
            "robots.txt could not be read, so nothing is fetched: ",
            id="robots-headers",
        ),
    ],
)
def test_timeout_bounds_the_whole_request(
    serve: Any, tmp_path: Path, routes: dict[str, Route], url: str, message: str
) -> None:
    site = serve(routes)
    out = tmp_path / "d.yaml"
    code, output, took = scrape_cli([f"{site.url}{url}", "-o", str(out), "--timeout", "1"])
    assert code == 1
    line = one_error(output)
    assert message in line and "timed out after 1 s" in line
    assert took < 2.5, f"took {took:.1f} s with --timeout 1"
    assert not out.exists()
    if "robots" in message:
        assert site.log == ["/robots.txt"]  # the page itself is never asked for


def test_politeness_delay_is_not_counted_against_the_timeout(serve: Any, tmp_path: Path) -> None:
    """Two pages of one site 1.2 s apart (--delay) with --timeout 1: the wait is not part of the deadline."""
    site = serve({"/rules.html": reply(200, PAGE), "/cards.html": reply(200, CARDS)})
    args = [f"{site.url}/rules.html", f"{site.url}/cards.html", "-o", str(tmp_path / "d.yaml"), "--timeout", "1"]
    t = time.monotonic()
    res = runner.invoke(app, ["scrape", *args, "--delay", "1.2"])
    assert res.exit_code == 0, res.output
    assert time.monotonic() - t >= 1.2
    assert site.log == ["/robots.txt", "/rules.html", "/cards.html"]


@pytest.mark.parametrize(
    ("route", "message"),
    [
        (trickle(OK_HEAD, b"X-Many: 1\r\n" * 100, every=0.005), "RemoteProtocolError"),  # headers without end
        (lambda c, s: c.sendall(b"garbage\r\n\r\n"), "RemoteProtocolError"),
        (lambda c, s: None, "RemoteProtocolError"),  # closes without a word
    ],
    ids=["endless-headers", "garbage", "silent-close"],
)
def test_broken_responses_get_one_error(serve: Any, tmp_path: Path, route: Route, message: str) -> None:
    site = serve({"/p.html": route})
    code, output, took = scrape_cli([f"{site.url}/p.html", "-o", str(tmp_path / "d.yaml"), "--timeout", "5"])
    assert code == 1
    assert message in one_error(output)
    assert took < 5


# --- redirects: http(s) targets only -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("javascript:alert(1)", "redirect to 'javascript:alert(1)', not an http(s) URL"),
        ("data:text/html,<h1>x</h1>", "redirect to 'data:text/html,<h1>x</h1>', not an http(s) URL"),
        ("file:///etc/passwd", "redirect to 'file:///etc/passwd', not an http(s) URL"),
        ("ftp://127.0.0.1/rules.html", "not an http(s) URL"),
        ("mailto:rules@example.com", "not an http(s) URL"),
        ("http://[::1/x", "redirect to an invalid URL"),
    ],
)
def test_redirects_only_to_http_urls(serve: Any, tmp_path: Path, location: str, message: str) -> None:
    site = serve({"/r": reply(302, b"", Location=location)})
    code, output, _ = scrape_cli([f"{site.url}/r", "-o", str(tmp_path / "d.yaml")])
    assert code == 1
    assert message in one_error(output)
    assert site.log == ["/robots.txt", "/r"]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://[::1", "invalid URL: Invalid IPv6 URL"),
        ("javascript:alert(1)", "only http:// and https:// URLs can be fetched (use --from-file for saved pages)"),
        ("http://", "only http:// and https:// URLs can be fetched (use --from-file for saved pages)"),
    ],
)
def test_bad_start_urls(tmp_path: Path, url: str, message: str) -> None:
    code, output, _ = scrape_cli([url, "-o", str(tmp_path / "d.yaml")])
    assert code == 1
    assert one_error(output) == f"error: {url}: {message}"


def test_bad_next_links_are_passed_over(serve: Any, tmp_path: Path) -> None:
    links = '<link rel="next" href="javascript:alert(1)"><a rel="next" href="http://[::1">2</a>'
    site = serve({"/cards.html": reply(200, CARDS.replace(b"</body>", links.encode() + b"</body>"))})
    code, output, _ = scrape_cli([f"{site.url}/cards.html", "-o", str(tmp_path / "d.yaml")])
    assert code == 0, output
    assert "tables cards (4 rows)" in output
    assert site.log == ["/robots.txt", "/cards.html"]


def test_robots_txt_redirect_to_javascript_is_not_followed(serve: Any, tmp_path: Path) -> None:
    site = serve({"/robots.txt": reply(301, b"", Location="javascript:alert(1)"), "/p.html": reply(200, PAGE)})
    code, output, _ = scrape_cli([f"{site.url}/p.html", "-o", str(tmp_path / "d.yaml")])
    assert code == 1
    assert "/robots.txt: HTTP 301 redirect to 'javascript:alert(1)', not an http(s) URL" in one_error(output)
    assert site.log == ["/robots.txt"]


# --- options ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--timeout=-1", "--timeout must be a number of seconds above 0 and at most 86400 (got -1.0)"),
        ("--timeout=nan", "--timeout must be a number of seconds above 0"),
        ("--timeout=inf", "--timeout must be a number of seconds above 0"),
        ("--timeout=0", "--timeout must be"),
        ("--timeout=1e300", "--timeout must be"),
        ("--max-bytes=0", "--max-bytes must be at least 1 (got 0)"),
        ("--max-bytes=-5", "--max-bytes must be at least 1 (got -5)"),
        ("--delay=nan", "--delay must be a number of seconds from 0"),
        ("--delay=-1", "--delay must be"),
        ("--max-redirects=-1", "--max-redirects must be 0 or more"),
        ("--max-pages=0", "--max-pages must be at least 1"),
    ],
)
def test_bad_limits_get_one_error_and_fetch_nothing(serve: Any, tmp_path: Path, option: str, message: str) -> None:
    site = serve({"/p.html": reply(200, PAGE)})
    res = runner.invoke(app, ["scrape", f"{site.url}/p.html", "-o", str(tmp_path / "d.yaml"), option])
    assert res.exit_code == 2
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert one_error(res.output).startswith(f"error: {message}")
    assert site.log == []


def test_bad_timeout_in_a_real_process_prints_no_traceback(tmp_path: Path) -> None:
    cmd = [str(ENVC), "scrape", "http://127.0.0.1:9/p.html", "-o", str(tmp_path / "d.yaml"), "--timeout", "nan"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: --timeout must be a number of seconds above 0 and at most 86400 (got nan)"
    ]


def test_saved_page_over_max_bytes(tmp_path: Path) -> None:
    page = tmp_path / "big.html"
    page.write_bytes(b"<html><body>" + b"<p>x</p>" * 1000)
    code, output, _ = scrape_cli(["--from-file", str(page), "-o", str(tmp_path / "d.yaml"), "--max-bytes", "4000"])
    assert code == 1
    assert one_error(output) == f"error: {page}: file is more than the limit of 4,000 bytes"


# --- drafts: bounded, and they always lint ------------------------------------------------------------------


def test_page_with_100000_headings_gives_a_draft_that_lints(serve: Any, tmp_path: Path) -> None:
    """It used to give a 28 MB draft that failed its own lint (and took minutes); now the page is cut before
    parsing, the first headings are kept, and the draft lints."""
    heads = "".join(f"<h2>{'Play' if i % 2 else 'Checkup'} {i}</h2><p>{i}</p>" for i in range(100_000))
    page = f"<!DOCTYPE html><html><body><h1>Many</h1>{heads}</body></html>".encode()
    site = serve({"/many.html": reply(200, page)})
    out = tmp_path / "d.yaml"
    code, output, _ = scrape_cli([f"{site.url}/many.html", "-o", str(out)])
    assert code == 0, output[-2000:]
    url = f"{site.url}/many.html"
    cut = page.index(b"<h2>Play 19999</h2>")  # the 20,001st heading tag, counting the h1
    notes = [line for line in output.splitlines() if line.startswith("note: ")]
    assert notes == [
        f"note: {url}: more than {MAX_HEADING_TAGS:,} heading tags; the page was read up to byte {cut:,}",
        f"note: {url}: more than {MAX_SECTIONS} headings; the page was read up to the heading 'Checkup 498' "
        "(the rest is not in the draft)",
    ]
    spec, diags = envc.lint(str(out))
    assert spec is not None and {d.code for d in diags} == {"W001"}
    doc = yaml.safe_load(out.read_text())
    # 500 sections: the empty one before <h1> and 'Many' (no text, dropped), then 498 <h2> sections
    names = [t["name"] for t in doc["todo"]]
    assert names == ["game"] + [f"{'play' if i % 2 else 'checkup'}_{i}" for i in range(498)]
    assert out.stat().st_size < 200_000
    assert f"# Note: {url}: more than {MAX_SECTIONS} headings" in out.read_text()  # also in the draft's header


def test_long_sections_and_cells_are_cut_with_a_note(serve: Any, tmp_path: Path) -> None:
    long_text = "word " * 100_000
    cards = "".join(
        f"<tr><td>Card {i}</td><td>{10 * i}</td><td>fire</td><td>{{R}}</td><td>{'Burn. ' * (1000 if i == 1 else 1)}"
        f"Card {i} text.</td></tr>"
        for i in range(4)
    )
    page = (
        "<html><body><h1>Long</h1><h2>Setup</h2><p>" + long_text + "</p><table><tr><th>Name</th><th>HP</th>"
        "<th>Type</th><th>Cost</th><th>Text</th></tr>" + cards + "</table></body></html>"
    ).encode()
    site = serve({"/long.html": reply(200, page)})
    out = tmp_path / "d.yaml"
    code, output, _ = scrape_cli([f"{site.url}/long.html", "-o", str(out)])
    assert code == 0, output[-2000:]
    assert f"section(s) longer than {MAX_SECTION_CHARS:,} characters were cut (first: 'Setup')" in output
    assert f"1 table cell(s) longer than {MAX_CELL_CHARS:,} characters were cut" in output
    doc = yaml.safe_load(out.read_text())
    assert "characters cut]" in doc["todo"][0]["text"] and len(doc["todo"][0]["text"]) < MAX_SECTION_CHARS + 1000
    texts = [r["text"] for r in doc["tables"]["cards"]["rows"][1:]]
    assert len(texts[1]) == MAX_CELL_CHARS and texts[1].endswith("...") and texts[2] == "Burn. Card 2 text."
    assert {d.code for d in envc.lint(str(out))[1]} == {"W001"}


def _word(i: int) -> str:
    return "".join(chr(97 + int(d)) for d in str(i))


def test_too_many_distinct_effects_stay_text(tmp_path: Path) -> None:
    n = MAX_EFFECTS + 1
    # texts that differ in two words (one word or a number would make them one templated kind)
    texts = [f"Effect {_word(i)} does {_word(i)}x things." for i in range(n)]
    rows = [[f"Card {i}", str(i), t] for i, t in enumerate(texts)]
    table = RawTable("cards", ["Name", "HP", "Text"], rows, "http://x/c.html", is_cards=True)
    page = PageContent("http://x/c.html", "Cards", [Section("Cards", 1, "http://x/c.html", "text")], [table])
    draft = build_draft([page])
    assert f"{n:,} kinds of effect text, more than {MAX_EFFECTS}" in draft.notes[0]
    assert "procedures" not in draft.doc and draft.doc["tables"]["cards"]["columns"]["text"] == "str"
    out = tmp_path / "d.yaml"
    out.write_text(draft.yaml())
    assert {d.code for d in envc.lint(str(out))[1]} == {"W001"}


@pytest.mark.parametrize(
    ("rows", "cols", "cell", "message"),
    [
        (5_000, 50, "1", f"YAML values, more than the limit of {MAX_DRAFT_NODES:,}"),
        (2_000, 3, "x" * 1999, f"bytes, more than the limit of {MAX_DRAFT_BYTES:,}"),
    ],
)
def test_drafts_larger_than_a_spec_may_be_are_an_error(rows: int, cols: int, cell: str, message: str) -> None:
    """Table data cannot be cut, so a draft over lint's limits is one clear error instead of a file that fails."""
    headers = ["Name", "HP", *(f"Stat {chr(65 + j // 26)}{chr(65 + j % 26)}" for j in range(cols - 2))]  # unnumbered
    data = [[f"Row {i}", str(i), *([cell + str(i % 7)] * (cols - 2))] for i in range(rows)]
    table = RawTable("numbers", headers, data, "http://x/t.html")
    page = PageContent("http://x/t.html", "T", [Section("T", 1, "http://x/t.html", "text")], [table])
    with pytest.raises(ScrapeError) as e:
        build_draft([page])
    assert message in str(e.value) and str(e.value).endswith("; scrape fewer pages")


# --- proxies from the environment still work, under the same deadline ----------------------------------------


def test_http_proxy_from_the_environment(serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = serve({"/p.html": reply(200, PAGE)})
    seen: list[str] = []

    class Proxy(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.path)  # absolute-form: the proxy is asked for the full URL
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            try:
                with opener.open(self.path, timeout=5) as r:
                    status, body, ctype = r.status, r.read(), r.headers.get("Content-Type", "")
            except urllib.error.HTTPError as e:
                status, body, ctype = e.code, b"", "text/plain"
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=proxy.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        for var in ("no_proxy", "NO_PROXY", "http_proxy"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
        code, output, _ = scrape_cli([f"{site.url}/p.html", "-o", str(tmp_path / "d.yaml")])
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert code == 0, output
    assert seen == [f"{site.url}/robots.txt", f"{site.url}/p.html"]
