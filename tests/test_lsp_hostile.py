"""`envc lsp` fed hostile input on stdin: it resynchronises after bad framing and keeps answering (issue #24).

The server is the real one (`envc lsp` in a subprocess) driven over raw pipes, since a client library will not
write malformed frames. Every read has a deadline, so a wedged server fails a test instead of hanging it, and
every server is killed in teardown.
"""

from __future__ import annotations

import json
import os
import queue
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envc
from envc.lsp.stdio import MAX_MESSAGE, Framer

ROOT = Path(__file__).resolve().parent.parent
TTT = (ROOT / "specs" / "tic_tac_toe.yaml").read_text(encoding="utf-8")
ENVC = Path(sys.executable).with_name("envc")
DEADLINE_S = 20.0  # generous for a loaded 2-core machine; a server that stopped answering fails at this
Message = dict[str, Any]


def frame(message: object) -> bytes:
    """One LSP message: a JSON value, or a body given as bytes, with its header."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def position(text: str, needle: str) -> dict[str, int]:
    """The LSP position of the first `needle` in an ASCII text."""
    k = text.index(needle)
    return {"line": text.count("\n", 0, k), "character": k - (text.rfind("\n", 0, k) + 1)}


class Server:
    """`envc lsp` in a subprocess, with a strict reader of what it writes."""

    def __init__(self) -> None:
        cmd = [str(ENVC), "lsp"] if ENVC.exists() else [sys.executable, "-m", "envc.cli", "lsp"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.inbox: queue.Queue[Message | str] = queue.Queue()
        self.seen: list[Message] = []
        self.stderr: list[str] = []
        self.next_id = 100
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = out.read(1)
                if not byte:
                    return
                header += byte
            try:
                fields = dict(line.split(b": ", 1) for line in header[:-4].split(b"\r\n"))
                body = out.read(int(fields[b"Content-Length"]))
                self.inbox.put(json.loads(body))
            except (KeyError, ValueError) as e:  # the server's own framing is broken: fail the waiting test
                self.inbox.put(f"malformed output from the server: {header!r} ({e})")
                return

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, method: str, params: object) -> int:
        self.next_id += 1
        self.send(frame({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}))
        return self.next_id

    def notify(self, method: str, params: object) -> None:
        self.send(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def wait(
        self, matches: Callable[[Message], bool], what: str, deadline_s: float = DEADLINE_S, since: int = 0
    ) -> Message:
        """The first message from number `since` on (seen so far or arriving within the deadline) that `matches`."""
        end = time.monotonic() + deadline_s
        while True:
            for m in self.seen[since:]:
                if matches(m):
                    return m
            try:
                got = self.inbox.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                log = "".join(self.stderr)
                raise AssertionError(f"no {what} within {deadline_s} s; server log:\n{log}") from None
            if isinstance(got, str):
                raise AssertionError(got)
            self.seen.append(got)

    def answer(self, msg_id: int | str | None, deadline_s: float = DEADLINE_S) -> Message:
        return self.wait(lambda m: m.get("id") == msg_id and "method" not in m, f"answer to {msg_id}", deadline_s)

    def error(self, code: int, msg_id: int | None, since: int) -> Message:
        """An error response with this code and id (null: the id could not be known), from message `since` on."""
        return self.wait(
            lambda m: "method" not in m and m.get("id") == msg_id and m.get("error", {}).get("code") == code,
            f"error {code} for id {msg_id}",
            since=since,
        )

    def diagnostics(self, uri: str, version: int) -> list[Message]:
        m = self.wait(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == uri
                and m["params"].get("version") == version
            ),
            f"diagnostics of {uri} version {version}",
        )
        return list(m["params"]["diagnostics"])

    def initialize(self) -> Message:
        msg_id = self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        return self.answer(msg_id)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


@pytest.fixture
def fresh() -> Iterator[Server]:
    server = Server()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lsp-hostile")


@pytest.fixture(scope="module")
def server(docs: Path) -> Iterator[Server]:
    """One initialized server with tic-tac-toe open, shared by the tests that must each leave it answering."""
    s = Server()
    try:
        assert "capabilities" in s.initialize()["result"]
        s.notify("initialized", {})
        uri = (docs / "ttt.yaml").as_uri()
        s.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": TTT}},
        )
        assert s.diagnostics(uri, 1) == []
        yield s
    finally:
        s.close()


def hover_answers(s: Server, docs: Path) -> None:
    """A hover on tic-tac-toe's `current_player` is answered correctly: the server is alive and in sync."""
    uri = (docs / "ttt.yaml").as_uri()
    pos = position(TTT, "current_player = int(coin())")
    msg_id = s.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": pos})
    result = s.answer(msg_id).get("result")
    assert result is not None and "state current_player: i32" in result["contents"]["value"], result
    assert "Traceback" not in "".join(s.stderr)  # bad input is logged in one line, not as a crash


# ---- bad framing, then a good request ---------------------------------------------------------------------

NOTE = {"jsonrpc": "2.0", "method": "$/envc-test-note", "params": {}}
GARBAGE = {
    "content-length-abc": b"Content-Length: abc\r\n\r\n" + json.dumps(NOTE).encode(),
    "random-10k": random.Random(24).randbytes(10 * 1024),
    "negative-length": b"Content-Length: -5\r\n\r\n{}",
    "huge-length": b"Content-Length: 99999999999999999999\r\n\r\n{}",
    "length-over-the-cap": b"Content-Length: %d\r\n\r\n{}" % (MAX_MESSAGE + 1),
    "no-blank-line-after-header": b"Content-Length: 53\r\n" + json.dumps(NOTE).encode(),
    "header-line-without-colon": b"Content-Length: 2\r\nnonsense\r\n\r\n{}",
    "header-never-ends": b"Content-Length: 2\r\n" + b"X-Pad: " + b"y" * 20_000,
    "two-different-lengths": b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    "length-shorter-than-the-body": b"Content-Length: 10\r\n\r\n" + json.dumps(NOTE).encode(),
    "nul-bytes": b"\x00" * 5000,
    "text-without-newlines": b"x" * 200_000,
}


@pytest.mark.parametrize("garbage", GARBAGE.values(), ids=GARBAGE.keys())
def test_bad_framing_then_a_request_is_answered(server: Server, docs: Path, garbage: bytes) -> None:
    server.send(garbage)
    hover_answers(server, docs)


def test_bad_framing_before_initialize(fresh: Server) -> None:
    fresh.send(GARBAGE["content-length-abc"] + GARBAGE["random-10k"])
    caps = fresh.initialize()["result"]["capabilities"]
    assert caps["hoverProvider"] and caps["definitionProvider"]
    assert "Traceback" not in "".join(fresh.stderr)


def test_truncated_message_then_a_good_one(server: Server, docs: Path) -> None:
    """The declared length covers part of the next message: the bad body gets a parse error and the next
    message, whose header lies inside it, is still read."""
    mark = len(server.seen)
    server.send(b'Content-Length: 60\r\n\r\n{"jsonrpc": "2.0", "id": 7, "method": ')
    hover_answers(server, docs)
    assert server.error(-32700, None, mark)["error"]["message"].startswith("Parse error")


def test_truncated_message_longer_than_what_follows(server: Server, docs: Path) -> None:
    """The declared length runs past everything sent: once input stalls, reading resumes at the header found
    inside the partial body."""
    server.send(b'Content-Length: 5000\r\n\r\n{"jsonrpc": "2.0", "id": 7, "method": ')
    t0 = time.monotonic()
    hover_answers(server, docs)
    assert time.monotonic() - t0 < 10


def test_a_request_written_one_byte_at_a_time(server: Server, docs: Path) -> None:
    uri = (docs / "ttt.yaml").as_uri()
    params = {"textDocument": {"uri": uri}, "position": position(TTT, "current_player = int(coin())")}
    data = frame({"jsonrpc": "2.0", "id": "bytewise", "method": "textDocument/hover", "params": params})
    for i in range(len(data)):
        server.send(data[i : i + 1])
    assert "current_player" in server.answer("bytewise")["result"]["contents"]["value"]


def test_a_flood_of_bad_headers_is_logged_in_summary(server: Server, docs: Path) -> None:
    """20,000 bad headers: the server reads through them and logs a bounded summary, not one line each."""
    before = len(server.stderr)
    server.send(b"Content-Length: x\r\n" * 20_000)
    hover_answers(server, docs)
    time.sleep(0.5)  # the log is written after the answer, on another pipe
    lines = server.stderr[before:]
    assert any("more problems like these" in line for line in lines)
    assert len(lines) < 1000


def test_header_names_are_case_insensitive(server: Server) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": "lower", "method": "shutdown-not"}).encode()
    server.send(b"content-length: %d\r\ncontent-type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(body))
    server.send(body)
    assert server.answer("lower")["error"]["code"] == -32601  # read and answered: method not found


# ---- bad messages get JSON-RPC errors -----------------------------------------------------------------------

BAD_BODIES: dict[str, tuple[bytes, int, int | None]] = {
    "not-json": (b"{this is not json", -32700, None),
    "not-utf8": (b"\xff\xfe\xfd\xfc{}", -32700, None),
    "empty-body": (b"", -32700, None),
    "nested-100k-deep": (b"[" * 100_000 + b"]" * 100_000, -32700, None),
    "array": (b"[1, 2, 3]", -32600, None),
    "string": (b'"hello"', -32600, None),
    "null": (b"null", -32600, None),
    "object-without-jsonrpc": (b'{"id": 31, "method": "textDocument/hover"}', -32600, 31),
    "id-is-an-object": (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "x"}', -32600, None),
    "method-is-a-number": (b'{"jsonrpc": "2.0", "id": 32, "method": 5}', -32600, 32),
    "params-is-a-string": (b'{"jsonrpc": "2.0", "id": 33, "method": "x", "params": "p"}', -32600, 33),
    "neither-request-nor-response": (b'{"jsonrpc": "2.0", "id": 34}', -32600, 34),
    "unknown-method": (b'{"jsonrpc": "2.0", "id": 35, "method": "envc/no-such-thing"}', -32601, 35),
    "hover-without-position": (
        b'{"jsonrpc": "2.0", "id": 36, "method": "textDocument/hover", "params": {"x": 1}}',
        -32602,
        36,
    ),
}


@pytest.mark.parametrize("body, code, msg_id", BAD_BODIES.values(), ids=BAD_BODIES.keys())
def test_bad_message_gets_an_error_then_a_request_is_answered(
    server: Server, docs: Path, body: bytes, code: int, msg_id: int | None
) -> None:
    mark = len(server.seen)
    server.send(frame(body))
    hover_answers(server, docs)
    server.error(code, msg_id, mark)


def test_unknown_notification_is_ignored(server: Server, docs: Path) -> None:
    before = len(server.seen)
    server.send(frame({"jsonrpc": "2.0", "method": "envc/unknown-notification"}))
    server.send(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"bogus": True}}))
    hover_answers(server, docs)
    assert not [m for m in server.seen[before:] if "error" in m]  # nothing to answer a notification with


# ---- hostile documents -------------------------------------------------------------------------------------


def _open(s: Server, uri: str, text: str) -> None:
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}})


def test_did_change_with_out_of_range_positions(server: Server, docs: Path) -> None:
    path = docs / "edited.yaml"
    uri = path.as_uri()
    _open(server, uri, TTT)
    assert server.diagnostics(uri, 1) == []

    def change(version: int, rng: dict[str, Any] | None, text: str) -> None:
        edit = {"range": rng, "text": text} if rng is not None else {"text": text}
        server.notify(
            "textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [edit]}
        )

    def codes(text: str) -> list[str | None]:
        return [d.code for d in envc.lint(str(path), text)[1]]

    far = {"line": 10**6, "character": 10**6}
    appended = "\nno_such_section: 1\n"
    change(2, {"start": far, "end": far}, appended)  # past the end: the edit lands at the end
    assert codes(TTT + appended)
    assert [d["code"] for d in server.diagnostics(uri, 2)] == codes(TTT + appended)
    change(3, {"start": {"line": 3, "character": 10**6}, "end": {"line": 2, "character": 0}}, "")  # end before start
    change(4, {"start": {"line": -1, "character": -5}, "end": {"line": 0, "character": 0}}, "x")  # negative
    change(5, {"start": {"line": 0, "character": 2**40}, "end": far}, "")  # beyond LSP's uinteger
    bad = TTT.replace("current_player = int(coin())", "current_player = int(coin(1))")
    assert codes(bad)
    change(9, None, bad)
    assert [d["code"] for d in server.diagnostics(uri, 9)] == codes(bad)
    hover_answers(server, docs)
    for ln, col in [(10**6, 0), (0, 10**6), (2**31 - 1, 2**31 - 1)]:
        msg_id = server.request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": ln, "character": col}}
        )
        assert server.answer(msg_id).get("result") is None


@pytest.mark.parametrize(
    "name, text, code",
    [
        ("nuls", "\x00" * 100_000, "E002"),
        ("huge", "name: huge\nstate:\n  x: i32\n" + "# padding\n" * 800_000, "E001"),
    ],
)
def test_hostile_document_gets_a_diagnostic(server: Server, docs: Path, name: str, text: str, code: str) -> None:
    uri = (docs / f"{name}.yaml").as_uri()
    _open(server, uri, text)
    pos = {"line": 1, "character": 2}
    msg_id = server.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": pos})
    assert server.answer(msg_id).get("result") is None
    hover_answers(server, docs)
    assert [d["code"] for d in server.diagnostics(uri, 1)] == [code]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a named pipe")
def test_notifications_about_unopened_files_read_nothing(fresh: Server, tmp_path: Path) -> None:
    """didSave / didChange name a file the client never opened: the server must not read it (a FIFO with no
    writer would block it for good), and a request for it answers nothing."""
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    fresh.initialize()
    uri = fifo.as_uri()
    fresh.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    fresh.notify(
        "textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "x"}]}
    )
    for method in ("textDocument/hover", "textDocument/completion", "textDocument/definition"):
        msg_id = fresh.request(method, {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
        assert fresh.answer(msg_id)["result"] is None
    assert fresh.answer(fresh.request("shutdown", None))["result"] is None


# ---- resources and exit ------------------------------------------------------------------------------------


def test_huge_lengths_allocate_nothing(fresh: Server) -> None:
    """Declared lengths of terabytes and a body over the cap streamed through: memory stays bounded."""
    fresh.send(b"Content-Length: 999999999999\r\n\r\n")
    chunk = b"z" * (1 << 20)
    fresh.send(b"Content-Length: %d\r\n\r\n" % (MAX_MESSAGE + 1))
    for _ in range(MAX_MESSAGE // len(chunk) + 1):
        fresh.send(chunk)
    assert "capabilities" in fresh.initialize()["result"]
    status = Path(f"/proc/{fresh.proc.pid}/status")
    if status.exists():
        peak_kib = int(next(ln for ln in status.read_text().splitlines() if ln.startswith("VmHWM:")).split()[1])
        assert peak_kib < 400 * 1024, f"peak RSS {peak_kib} KiB"


def test_end_of_input_stops_the_server(fresh: Server) -> None:
    fresh.send(b"Content-Length: 100\r\n\r\n{")  # in the middle of a message
    assert fresh.proc.stdin is not None
    fresh.proc.stdin.close()
    assert fresh.proc.wait(timeout=DEADLINE_S) == 0


def test_shutdown_then_exit(fresh: Server) -> None:
    fresh.initialize()
    assert fresh.answer(fresh.request("shutdown", None))["result"] is None
    assert fresh.answer(fresh.request("textDocument/hover", {}))["error"]["code"] == -32600  # not dropped unanswered
    fresh.send(frame({"jsonrpc": "2.0", "method": "exit"}))
    assert fresh.proc.wait(timeout=DEADLINE_S) == 0
    assert "Traceback" not in "".join(fresh.stderr)


# ---- the framer alone -------------------------------------------------------------------------------------

_garbage = st.binary(max_size=300).filter(lambda b: b"content-length:" not in b.lower())


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(_garbage, st.dictionaries(st.text(max_size=8), st.text(max_size=30), max_size=4)), max_size=6),
    st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=10),
)
def test_framer_recovers_every_message_between_garbage(
    parts: list[tuple[bytes, dict[str, str]]], cuts: list[int]
) -> None:
    """Garbage (without a header in it) between messages, the stream cut anywhere: every message comes out."""
    stream = b"".join(g + frame(m) for g, m in parts)
    framer, got, at, k = Framer(), [], 0, 0
    while at < len(stream):
        n = cuts[k % len(cuts)]
        framer.feed(stream[at : at + n])
        at, k = at + n, k + 1
        while (body := framer.next()) is not None:
            got.append(json.loads(body))
    assert got == [m for _, m in parts]
    assert len(framer.buf) < len(b"content-length:")  # nothing left over but a possible split token


def test_framer_drops_bad_headers_without_buffering_them() -> None:
    framer = Framer(max_message=100, max_header=64)
    good = frame({"ok": 1})
    fed = [b"Content-Length: 101\r\n\r\n" + b"a" * 1000 + good, b"Content-Length: 5\r\n" + b"b" * 1000, good]
    framer.feed(fed[0])
    assert framer.next() == b'{"ok": 1}'
    framer.feed(fed[1])
    assert framer.next() is None and len(framer.buf) < len(b"content-length:")
    framer.feed(fed[2])
    assert framer.next() == b'{"ok": 1}' and not framer.buf
    dropped = sum(map(len, fed)) - 2 * len(good)
    assert framer.report() == [
        "a message of 101 bytes is over the 100-byte limit: skipped",
        "no blank line within 64 bytes after a Content-Length header",
        f"skipped {dropped} bytes that are not an LSP message header",
    ]
