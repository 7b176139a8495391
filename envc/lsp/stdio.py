"""The stdio transport of `envc lsp`: LSP base-protocol framing that survives whatever arrives on stdin.

pygls reads stdin line by line and only recognises `Content-Length: <digits>\\r\\n` exactly: after one malformed
header, or random bytes, the next header ends up glued to the previous body (bodies carry no newline) and the
server never answers again; a huge Content-Length made it try to allocate that much. This reader replaces it:

- it scans for the next `Content-Length:` header (case-insensitive) and drops whatever comes before it;
- a header block that is not `Name: value` lines ended by a blank line within MAX_HEADER bytes, or whose
  length is not a decimal number up to MAX_MESSAGE, is dropped by scanning on from just past its
  `Content-Length:` (an oversized message is never buffered: its bytes are scanned through and dropped);
- a body that is not JSON is answered with a JSON-RPC parse error (-32700, `id: null`) and scanned again for a
  header (a truncated message followed by a good one: reading resumes at the good one); JSON that is not a
  valid JSON-RPC 2.0 message gets an invalid-request error (-32600, with the request's id when it has a valid
  one);
- when a body is still incomplete after input has stalled for STALL_S seconds and a complete header block
  appears inside it (a truncated message whose declared length runs into the next one), reading resumes there.

Each problem is logged on one line to stderr (at most MAX_PROBLEMS per read, then a count), never as a
traceback. Two gaps in pygls's dispatch are closed on the way: a request after `shutdown` is answered with an
invalid-request error instead of never, and a request without `params` to an unknown method gets "method not
found" instead of an internal error. Nothing a client sends can raise out of the loop: each message is handled
under `except Exception`, and a failure of the framing itself drops the buffered input and reads on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol

log = logging.getLogger("envc.lsp")

MAX_MESSAGE = 64 * 1024 * 1024  # bytes in one message body
MAX_HEADER = 8 * 1024  # bytes of a header block
STALL_S = 1.0
CHUNK = 64 * 1024

_TOKEN = b"content-length:"  # matched in any case
_DASH = re.compile(rb"-(?i:length):")  # its literal "-" lets re skip ahead fast, where a case-blind search crawls
MAX_PROBLEMS = 10  # logged per read; more are counted
_NAME = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP header name
_END = b"\r\n\r\n"


class Framer:
    """Splits a byte stream into LSP message bodies, resynchronising on the next header after bad framing."""

    def __init__(self, max_message: int = MAX_MESSAGE, max_header: int = MAX_HEADER) -> None:
        self.buf = bytearray()
        self.max_message = max_message
        self.max_header = max_header
        self.skipped = 0  # garbage bytes dropped since the last report
        self.problems: list[str] = []  # what went wrong since the last `report()`
        self.more = 0  # problems past MAX_PROBLEMS
        self.clean = 0  # no blank line starts before this buffer position (spares re-searching a long header)

    def feed(self, data: bytes) -> None:
        """Append what was read."""
        self.buf += data

    def next(self) -> bytes | None:
        """The next complete message body, or None until more input arrives."""
        while True:
            at = _find_token(self.buf)
            if at < 0:
                self._skip(len(self.buf) - (len(_TOKEN) - 1))  # keep what may be a token split across reads
                return None
            self._skip(at)
            end = self._block_end()
            if end < 0:
                if len(self.buf) < self.max_header + len(_END):
                    return None
                self._reject(f"no blank line within {self.max_header} bytes after a Content-Length header")
                continue
            length = self._length(bytes(self.buf[:end]))
            if length is None:
                continue
            start = end + len(_END)
            if len(self.buf) < start + length:
                return None
            with memoryview(self.buf) as view:
                body = view[start : start + length].tobytes()
            del self.buf[: start + length]
            self.clean = 0
            return body

    def unread(self, body: bytes) -> None:
        """`body` was not a message: scan it again from its second byte, so that a header inside it (or one that
        starts inside it and ends after it) is found."""
        self.buf[:0] = body[1:]
        self.clean = 0

    def stalled(self) -> None:
        """Input stopped mid-body: if a complete header block lies inside the partial body, the message was
        truncated; drop it and read on from that header."""
        end = self._block_end()
        if end < 0:
            return
        at = end + len(_END)
        while (at := _find_token(self.buf, at)) >= 0:
            inner = self.buf.find(_END, at, at + self.max_header + len(_END))
            if inner >= 0 and isinstance(self._parse(bytes(self.buf[at:inner])), int):
                self._problem(f"a message was cut short after {at - end - len(_END)} bytes")
                del self.buf[:at]
                self.clean = 0
                return
            at += len(_TOKEN)

    def report(self) -> list[str]:
        """The problems seen since the last report (garbage skipped included), cleared."""
        if self.more:
            self.problems.append(f"and {self.more} more problems like these")
        if self.skipped and (not self.buf or _find_token(self.buf) == 0):  # else the buffer holds more garbage
            self.problems.append(f"skipped {self.skipped} bytes that are not an LSP message header")
            self.skipped = 0
        out, self.problems, self.more = self.problems, [], 0
        return out

    def _problem(self, what: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(what)
        else:
            self.more += 1

    def _block_end(self) -> int:
        """Where the blank line ending the header at the start of the buffer is; -1 if not within max_header."""
        hi = self.max_header + len(_END)
        end = self.buf.find(_END, self.clean, hi)
        if end < 0:
            self.clean = max(self.clean, min(len(self.buf), hi) - len(_END) + 1)
        return end

    def _skip(self, n: int) -> None:
        if n > 0:
            self.skipped += n
            del self.buf[:n]
            self.clean = max(0, self.clean - n)

    def _reject(self, why: str) -> None:
        """Drop the header at the start of the buffer by skipping its `Content-Length:`."""
        self._problem(why)
        self._skip(len(_TOKEN))

    def _length(self, block: bytes) -> int | None:
        """The body length a header block declares; None (the header rejected) when it is malformed."""
        length = self._parse(block)
        if isinstance(length, str):
            self._reject(length)
            return None
        if length is None:
            self._reject("a malformed header block")
            return None
        return length

    def _parse(self, block: bytes) -> int | str | None:
        """The Content-Length of a header block; a message when the value is bad; None when the block is not
        `Name: value` lines."""
        length: int | str | None = None
        for line in block.split(b"\r\n"):
            name, colon, value = line.partition(b":")
            name, value = name.rstrip(b" \t"), value.strip(b" \t")
            if not colon or _NAME.fullmatch(name) is None or b"\n" in value:
                return None
            if name.lower() != b"content-length":
                continue
            if not (value.isdigit() and len(value) <= 12):
                return f"bad Content-Length {value[:40]!r}"
            n = int(value)
            if n > self.max_message:
                return f"a message of {n} bytes is over the {self.max_message}-byte limit: skipped"
            if length is not None and length != n:
                return "two different Content-Length headers"
            length = n
        return length


def _find_token(data: bytes | bytearray, start: int = 0) -> int:
    """Where the first `Content-Length:` (in any case) at or after `start` begins; -1 when there is none."""
    at = start + len(b"content")
    while (m := _DASH.search(data, at)) is not None:
        if data[m.start() - len(b"content") : m.start()].lower() == b"content":
            return m.start() - len(b"content")
        at = m.start() + 1
    return -1


def _invalid(data: Any) -> tuple[str | int | None, str] | None:
    """Why `data` is not a JSON-RPC 2.0 message (with the id to answer), or None when it is one."""
    if not isinstance(data, dict):
        return None, f"a JSON-RPC message is an object, not {type(data).__name__}"
    msg_id = data.get("id")
    known = msg_id if isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool) else None
    if "id" in data and msg_id is not None and known is None:
        return None, "the id must be a string or an integer"
    if data.get("jsonrpc") != "2.0":
        return known, 'the message must have "jsonrpc": "2.0"'
    if "method" in data:
        if not isinstance(data["method"], str):
            return known, "the method must be a string"
        if not isinstance(data.get("params"), (dict, list, type(None))):  # null: clients send it for "none"
            return known, "the params must be an object or an array"
        return None
    if "id" in data and ("result" in data or "error" in data):
        return None
    return known, "neither a request, a notification nor a response"


class Transport:
    """Reads framed messages from stdin and hands them to the pygls protocol."""

    def __init__(self, protocol: JsonRPCProtocol, stop: threading.Event) -> None:
        self.protocol = protocol
        self.stop = stop
        self.framer = Framer()

    async def run(self, stdin: BinaryIO) -> None:
        """Serve until end of input or until the server stops."""
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[bytes] = asyncio.Queue(maxsize=16)  # back-pressure on a client that floods us
        reader = threading.Thread(target=_pump, args=(stdin, chunks, loop), name="envc-stdin", daemon=True)
        reader.start()
        while not self.stop.is_set():
            try:
                chunk = await asyncio.wait_for(chunks.get(), STALL_S)
            except asyncio.TimeoutError:
                chunk = None
            if chunk == b"":
                break
            try:
                await self.take(chunk)
            except BrokenPipeError:
                raise  # the client is gone: start_io shuts down
            except Exception:  # a bug here must not stop the server: drop what was buffered, read on
                log.exception("envc lsp: reading the client's input failed; dropping it")
                self.framer = Framer()

    async def take(self, chunk: bytes | None) -> None:
        """Frame and handle what was read (None: input has stalled)."""
        if chunk is None:
            self.framer.stalled()
        else:
            self.framer.feed(chunk)
        while (body := self.framer.next()) is not None:
            self.dispatch(body)
            await asyncio.sleep(0)
        for problem in self.framer.report():
            log.warning("bad input from the client: %s", problem)

    def dispatch(self, body: bytes) -> None:
        """Handle one message body; answer what cannot be handled when it has an id or is not JSON."""
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as e:
            log.warning("bad input from the client: a message body that is not JSON (%s)", e)
            self.send_error(None, lsp.ErrorCodes.ParseError, f"Parse error: {e}")
            self.framer.unread(body)
            return
        bad = _invalid(data)
        if bad is not None:
            msg_id, why = bad
            log.warning("bad input from the client: %s", why)
            self.send_error(msg_id, lsp.ErrorCodes.InvalidRequest, f"Invalid request: {why}")
            return
        is_request = "method" in data and data.get("id") is not None
        if is_request and getattr(self.protocol, "_shutdown", False):  # pygls would drop it unanswered
            self.send_error(data["id"], lsp.ErrorCodes.InvalidRequest, "the server is shutting down")
            return
        if "method" in data and "params" not in data and self.protocol.get_message_type(data["method"]) is None:
            data["params"] = None  # pygls's fallback message types require params, which JSON-RPC makes optional
        try:
            message = self.protocol.structure_message(data)
            self.protocol.handle_message(message)
        except BrokenPipeError:
            raise  # the client is gone: start_io shuts down
        except JsonRpcException as e:
            log.warning("bad %s from the client: %s", data.get("method", "response"), e)
            if is_request:
                self.send_error(data["id"], e.code, e.message or type(e).__name__)
        except Exception as e:  # a bug in a handler must not take the server down
            log.exception("envc lsp: handling %r failed", data.get("method", "a response"))
            if is_request:
                self.send_error(data["id"], lsp.ErrorCodes.InternalError, f"{type(e).__name__}: {e}")

    def send_error(self, msg_id: str | int | None, code: int, message: str) -> None:
        """Send a JSON-RPC error response."""
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": int(code), "message": message}})
        data = body.encode("utf-8")
        writer = self.protocol.writer
        if writer is not None:
            writer.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)


class QuietDeserializeErrors(logging.Filter):
    """Drops pygls's traceback for a message it cannot structure: the transport logs one line for it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unable to deserialize message")


def _pump(stdin: BinaryIO, chunks: asyncio.Queue[bytes], loop: asyncio.AbstractEventLoop) -> None:
    """Reader thread: move stdin into `chunks` until end of input (b"").

    It reads the file descriptor, not the buffered file: a daemon thread blocked inside a buffered read at
    interpreter exit makes CPython abort ("could not acquire lock for <_io.BufferedReader name='<stdin>'>").
    """
    try:
        fd = stdin.fileno()
        read: Callable[[int], bytes] = lambda n: os.read(fd, n)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's BytesIO)
        read = getattr(stdin, "read1", stdin.read)
    while True:
        try:
            data = read(CHUNK)
        except (OSError, ValueError):
            data = b""
        try:
            asyncio.run_coroutine_threadsafe(chunks.put(data), loop).result()
        except (RuntimeError, asyncio.CancelledError):  # the loop has stopped
            return
        if not data:
            return
