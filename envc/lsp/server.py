"""`envc lsp`: a pygls language server over stdio for envc spec files.

Diagnostics are exactly `envc lint`'s, published on open, change and save, for every document that looks like
a spec (`looks_like_spec`: other YAML files the editor hands over, a CI workflow say, are left alone). Checks
run on one worker thread, one at a time per document: an edit that arrives while a check runs marks the
document dirty, and the check is run once more on the newest text when the first one ends (edits are
coalesced, never queued up). A re-check is fast because envc.parse keeps the parse of every rule body whose
text did not change. Hover, completion and go-to-definition answer from the document's outline (its YAML tree and
declarations, a few ms to build), rebuilt from the newest text on the first request after an edit.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

import envc
from envc.diagnostics import Diagnostic, Severity
from envc.ir import SpecIR
from envc.load import MAX_BYTES
from envc.lsp import features
from envc.lsp.features import Outline
from envc.lsp.stdio import QuietDeserializeErrors, Transport
from envc.pipeline import SECTIONS, lint

log = logging.getLogger("envc.lsp")

STALE_PUBLISH_S = 0.5  # while edits keep coming, still publish a result at least this often
FULL_GC_EVERY = 200  # idle tidy-ups between two full garbage collections
_KINDS = {
    "variable": lsp.CompletionItemKind.Variable,
    "field": lsp.CompletionItemKind.Field,
    "enum": lsp.CompletionItemKind.Enum,
    "member": lsp.CompletionItemKind.EnumMember,
    "function": lsp.CompletionItemKind.Function,
    "keyword": lsp.CompletionItemKind.Keyword,
    "constant": lsp.CompletionItemKind.Constant,
    "struct": lsp.CompletionItemKind.Struct,
    "property": lsp.CompletionItemKind.Property,
    "module": lsp.CompletionItemKind.Module,
}


@dataclass
class Result:
    """One check of one text: envc's diagnostics, or the internal error that stopped the check."""

    text: str
    diagnostics: list[Diagnostic]
    seconds: float
    crash: str | None = None
    spec: SpecIR | None = None  # the IR, when the text checked clean


_MODELINE = re.compile(r"#\s*yaml-language-server:\s*\$schema=\S*envc\.schema\.json")
_TOP_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*:(?:[ \t]|$)", re.MULTILINE)
# sections only an envc spec has (`name`, `doc` and `version` are common in other YAML files too)
SPEC_SECTIONS = frozenset(SECTIONS) - {"name", "doc", "version"}


def looks_like_spec(text: str) -> bool:
    """Is this text an envc spec (or an attempt at one), rather than some other YAML file the editor opened?

    With the envc schema modeline it always is. Otherwise a file whose top level is a mapping is a spec when one
    of its top-level keys is an envc section, and a top-level list (an Ansible playbook, say), an empty file or
    one of comments only is not. Anything else, such as text that is not YAML at all, is checked: it may be a
    spec gone wrong.
    """
    if _MODELINE.search(text):
        return True
    keys = {m.group(1) for m in _TOP_KEY.finditer(text) if m.start() == 0 or text[m.start() - 1] == "\n"}
    if keys:
        return bool(keys & SPEC_SECTIONS)
    top = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith((" ", "\t", "#"))]
    code = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return bool(code) and not (top and all(ln.startswith("-") for ln in top))


def check(path: str, text: str) -> Result:
    """Lint `text` as the spec at `path` (nothing to say about YAML that is not a spec); never raises."""
    t0 = time.perf_counter()
    crash = None
    if not looks_like_spec(text):
        return Result(text, [], time.perf_counter() - t0)
    spec = None
    try:
        spec, diags = lint(path, text)
    except Exception as e:  # a bug in envc must not take the editor's server down
        log.error("envc lint failed on %s:\n%s", path, traceback.format_exc())
        diags, crash = [], f"{type(e).__name__}: {e}"
    return Result(text, diags, time.perf_counter() - t0, crash, spec)


@dataclass
class _Doc:
    running: bool = False
    dirty: bool = False
    outline: Outline | None = None
    others: set[str] = field(default_factory=set)  # other files (data files) we published diagnostics for
    published_at: float = 0.0
    last: Result | None = None
    kind: tuple[str, bool] | None = None  # a text and whether it looks like a spec (asked on every request)


def tidy(full: bool) -> None:
    """Collect the garbage of the last check and freeze what survives (the parse caches, the outline).

    A check allocates a few hundred thousand objects, and Python's cyclic GC rescans every live object whenever
    it collects its oldest generation: in a long-lived server that doubled the time of a re-check of a
    1,500-line spec. Frozen objects are skipped by the GC (refcounting still frees them); the collection right
    before each freeze, over what the last check left (a few ms), keeps garbage cycles out of the frozen set,
    and every FULL_GC_EVERY checks everything is unfrozen and collected once.
    """
    if full:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


def _units(s: str, encoding: str) -> int:
    """Length of `s` in the client's position units."""
    if encoding == lsp.PositionEncodingKind.Utf8:
        return len(s.encode("utf-8"))
    if encoding == lsp.PositionEncodingKind.Utf32:
        return len(s)
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


def _chars(s: str, units: int, encoding: str) -> int:
    """The character index in `s` of a client column."""
    n = 0
    for i, ch in enumerate(s):
        if n >= units:
            return i
        n += _units(ch, encoding)
    return len(s)


class EnvcLanguageServer(LanguageServer):
    """The envc language server: one outline and one lint loop per open document."""

    def __init__(self) -> None:
        super().__init__("envc", envc.__version__)
        self.docs: dict[str, _Doc] = {}
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="envc-lint")
        self.tidied = 0
        self.tasks: set[asyncio.Task[None]] = set()

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve over stdio with envc's own reader (envc.lsp.stdio), which resynchronises after bad framing
        where pygls's would stop answering; exits with the code of the client's `exit` (0 after `shutdown`)."""
        self._stop_event = stop = threading.Event()
        logging.getLogger("pygls.protocol.json_rpc").addFilter(QuietDeserializeErrors())
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        code: int | str | None = 0
        try:
            asyncio.run(Transport(self.protocol, stop).run(stdin or sys.stdin.buffer))
        except BrokenPipeError:
            log.warning("the connection to the client is lost: shutting down")
        except KeyboardInterrupt:
            pass
        except SystemExit as e:  # pygls's `exit` handler
            code = e.code
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]
        sys.exit(code)

    # ---- positions ------------------------------------------------------
    @property
    def encoding(self) -> str:
        return str(self.workspace.position_encoding or lsp.PositionEncodingKind.Utf16)

    def to_client(self, lines: list[str], line: int, col: int) -> lsp.Position:
        """0-based line and character index -> an LSP position."""
        line = max(0, line)
        if line >= len(lines):
            return lsp.Position(line=line, character=0)
        text = lines[line]
        return lsp.Position(line=line, character=_units(text[: max(0, col)], self.encoding))

    def from_client(self, lines: list[str], pos: lsp.Position) -> tuple[int, int]:
        """An LSP position -> 0-based line and character index."""
        if pos.line >= len(lines):
            return pos.line, 0
        return pos.line, _chars(lines[pos.line], pos.character, self.encoding)

    # ---- documents ----------------------------------------------------------
    def path_of(self, uri: str) -> str:
        """The file path envc reports and resolves data files against."""
        path = to_fs_path(uri) if uri.startswith("file:") else None
        return path or str(Path.cwd() / (uri.rsplit("/", 1)[-1] or "untitled.yaml"))

    def document(self, uri: str) -> TextDocument | None:
        """The document the client opened at `uri`; None for any other URI (pygls's `get_text_document` would
        read it from disk: `file:///dev/zero` in a stray didSave must not hang the server)."""
        opened: dict[str, TextDocument] = self.workspace.text_documents
        return opened.get(unquote(uri))  # pygls keys them unquoted

    def outline(self, uri: str) -> Outline | None:
        """The outline of the document's newest text (None for a closed document or one that is not a spec)."""
        st = self.docs.get(uri)
        if st is None:
            return None
        doc = self.document(uri)
        if doc is None:
            return None
        text = doc.source
        if len(text) > MAX_BYTES:  # over envc's size limit: lint reports it, and nothing in it can be resolved
            return None
        if st.kind is None or st.kind[0] != text:
            st.kind = (text, looks_like_spec(text))
        if not st.kind[1]:
            return None
        if st.outline is None or st.outline.text != text:
            spec = st.last.spec if st.last is not None and st.last.text == text else None
            st.outline = Outline.of(self.path_of(uri), text, st.outline, spec)
        return st.outline

    def schedule(self, uri: str) -> None:
        """Check the document soon: now if idle, else once more after the running check."""
        st = self.docs.setdefault(uri, _Doc())
        if st.running:
            st.dirty = True
            return
        st.running = True
        task = asyncio.get_running_loop().create_task(self._lint_loop(uri, st))
        self.tasks.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(self.tasks.discard)

    async def _lint_loop(self, uri: str, st: _Doc) -> None:
        loop = asyncio.get_running_loop()
        path = self.path_of(uri)
        try:
            while self.docs.get(uri) is st:
                st.dirty = False
                doc = self.document(uri)
                if doc is None:
                    return
                text, version = doc.source, doc.version
                result = await loop.run_in_executor(self.worker, check, path, text)
                if self.docs.get(uri) is not st:
                    return  # closed meanwhile
                st.last = result
                if not st.dirty or time.monotonic() - st.published_at > STALE_PUBLISH_S:
                    self.publish(uri, st, result, version)
                self.tidied += 1
                await loop.run_in_executor(self.worker, tidy, self.tidied % FULL_GC_EVERY == 0)
                if not st.dirty:
                    return
        except Exception:
            log.error("envc lsp: checking %s failed:\n%s", uri, traceback.format_exc())
        finally:
            st.running = False

    def publish(self, uri: str, st: _Doc, result: Result, version: int | None) -> None:
        """Send the diagnostics of one check: the spec's own, and those located in its data files."""
        path = self.path_of(uri)
        lines = result.text.split("\n")
        by_file: dict[str, list[lsp.Diagnostic]] = {uri: []}
        for d in result.diagnostics:
            same = d.span.path == path
            target = uri if same else (from_fs_path(str(Path(d.span.path).resolve())) or d.span.path)
            file_lines = lines if same else _read_lines(d.span.path)
            by_file.setdefault(target, []).append(self.convert(d, file_lines))
        if result.crash is not None:
            by_file[uri].append(
                lsp.Diagnostic(
                    range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=1)),
                    message=f"envc could not check this file (internal error, see the server log): {result.crash}",
                    severity=lsp.DiagnosticSeverity.Error,
                    source="envc",
                )
            )
        for other in st.others - set(by_file):
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=other, diagnostics=[]))
        st.others = set(by_file) - {uri}
        for target, diags in by_file.items():
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=target, diagnostics=diags, version=version if target == uri else None)
            )
        st.published_at = time.monotonic()

    def convert(self, d: Diagnostic, lines: list[str]) -> lsp.Diagnostic:
        """An envc diagnostic (1-based, end-exclusive, in characters) as an LSP one."""
        s = d.span
        start = self.to_client(lines, s.line - 1, s.col - 1)
        end = self.to_client(lines, s.end_line - 1, s.end_col - 1)
        if (end.line, end.character) < (start.line, start.character):
            end = start
        return lsp.Diagnostic(
            range=lsp.Range(start=start, end=end),
            message=d.message,
            severity=lsp.DiagnosticSeverity.Error if d.severity is Severity.ERROR else lsp.DiagnosticSeverity.Warning,
            code=d.code,
            source="envc",
        )

    def close(self, uri: str) -> None:
        """Forget a closed document and clear what was published for it."""
        st = self.docs.pop(uri, None)
        for target in {uri} | (st.others if st else set()):
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=target, diagnostics=[]))


def _read_lines(path: str) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return []


def build_server() -> EnvcLanguageServer:
    """The server with its features registered."""
    server = EnvcLanguageServer()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: EnvcLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.docs.pop(params.text_document.uri, None)
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: EnvcLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
        if ls.document(params.text_document.uri) is not None:  # a change to a document never opened is dropped
            ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: EnvcLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
        if ls.document(params.text_document.uri) is not None:
            ls.schedule(params.text_document.uri)  # data files beside the spec may have changed

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: EnvcLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.close(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: EnvcLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
        try:
            o = ls.outline(params.text_document.uri)
            if o is None:
                return None
            line, col = ls.from_client(o.lines, params.position)
            found = features.hover(o, line, col)
            if found is None:
                return None
            text, (ln, c0, c1) = found
            rng = lsp.Range(start=ls.to_client(o.lines, ln, c0), end=ls.to_client(o.lines, ln, c1))
            return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text), range=rng)
        except Exception:
            log.error("envc lsp: hover failed:\n%s", traceback.format_exc())
            return None

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=["."]))
    def completion(ls: EnvcLanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList | None:
        try:
            o = ls.outline(params.text_document.uri)
            if o is None:
                return None
            line, col = ls.from_client(o.lines, params.position)
            items = [
                lsp.CompletionItem(
                    label=i.label,
                    kind=_KINDS.get(i.kind, lsp.CompletionItemKind.Text),
                    detail=i.detail or None,
                    documentation=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=i.doc) if i.doc else None,
                )
                for i in features.complete(o, line, col)
            ]
            return lsp.CompletionList(is_incomplete=False, items=items)
        except Exception:
            log.error("envc lsp: completion failed:\n%s", traceback.format_exc())
            return None

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: EnvcLanguageServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        try:
            o = ls.outline(params.text_document.uri)
            if o is None:
                return None
            line, col = ls.from_client(o.lines, params.position)
            target = features.definition(o, line, col)
            if target is None:
                return None
            if target.file is not None:
                zero = lsp.Position(line=0, character=0)
                uri = from_fs_path(target.file) or target.file
                return lsp.Location(uri=uri, range=lsp.Range(start=zero, end=zero))
            assert target.span is not None
            s = target.span
            start = ls.to_client(o.lines, s.line - 1, s.col - 1)
            rng = lsp.Range(start=start, end=ls.to_client(o.lines, s.end_line - 1, s.end_col - 1))
            return lsp.Location(uri=params.text_document.uri, range=rng)
        except Exception:
            log.error("envc lsp: definition failed:\n%s", traceback.format_exc())
            return None

    return server


def main() -> None:
    """Serve over stdio until the client exits."""
    logging.basicConfig(level=logging.WARNING, format="envc lsp: %(levelname)s %(message)s")  # to stderr
    threading.stack_size(64 * 1024 * 1024)  # the lint thread gets the main thread's room for deep rule bodies
    build_server().start_io()
