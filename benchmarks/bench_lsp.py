"""Re-lint latency of `envc lsp` after an edit, against a plain `envc lint` of the same text (the peer).

    python benchmarks/bench_lsp.py [SPEC] [--edits 20] [--scale 1,4] [--json]

SPEC defaults to specs/tcg.yaml when it exists, else tests/specs/tcg_mechanics.yaml. `--scale K` also measures
a K-times larger spec made from SPEC by copying its functions, procedures and actions under new names (copies
call the originals), for a feel of how the figures grow with spec size.

Measured, each as the median of the runs (>= 5), in milliseconds:
- peer_lint: `envc.lint(path, text)` with envc.parse's caches cleared first: what every edit would cost a
  server (or an editor plugin running `envc lint`) that keeps nothing from one check to the next (the
  process start of a real `envc lint` run, ~0.7 s, not counted); cold_lint is the first such call;
- lint: `envc.lint` in a warm process, where the parses of unchanged rule bodies are reused;
- check: the server's own check function (lint, never raising), same edits, same process; outline: the YAML
  tree and declarations that hover and completion use, built on the first request after an edit;
- relint (end to end): the real server as a subprocess over stdio, from sending `didChange` to receiving the
  `publishDiagnostics` of that version, after opening the spec and a few warm-up edits; open: the first check;
- hover, completion: round trips of the first hover after an edit (it builds the outline) and of a completion
  right after it, on 10 edits.

The edits break a name in a rule body (`zz` appended: an unknown name, a located error) and repair it, in
bodies spread over the file; every fifth edit inserts a comment line at the top, which moves every body.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import envc  # noqa: E402
import envc.parse  # noqa: E402
from envc.check.symbols import KEYWORDS  # noqa: E402
from envc.lsp.features import Outline  # noqa: E402
from envc.parse import Snippet  # noqa: E402

DEFAULT = ROOT / "specs" / "tcg.yaml"
FALLBACK = ROOT / "tests" / "specs" / "tcg_mechanics.yaml"


# ---- the spec and its edits ----------------------------------------------------------------------------------


def scaled(spec: Path, k: int, out_dir: Path) -> Path:
    """A copy of `spec` with its functions, procedures and actions repeated `k` times (data files copied too)."""
    for f in spec.parent.iterdir():
        if f.is_file() and f.suffix in (".csv", ".yaml", ".yml") and f != spec:
            shutil.copy(f, out_dir / f.name)
    out = out_dir / f"{spec.stem}_x{k}.yaml"
    if k == 1:
        shutil.copy(spec, out)
        return out
    lines = spec.read_text(encoding="utf-8").split("\n")
    result: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"(functions|procedures|actions):\s*$", line)
        if not m:
            result.append(line)
            i += 1
            continue
        j = i + 1
        while j < len(lines) and (not lines[j] or lines[j].startswith((" ", "#"))):
            j += 1
        block = lines[i + 1 : j]
        result.append(line)
        result.extend(block)
        for copy in range(2, k + 1):
            result.extend(re.sub(r"^  ([A-Za-z_][A-Za-z0-9_]*):", rf"  \1_{copy}:", ln) for ln in block)
        i = j
    out.write_text("\n".join(result), encoding="utf-8")
    return out


def _spots(text: str, path: str) -> list[int]:
    """File offsets just after the first name in each rule body (a name that is not a keyword)."""
    lines = text.split("\n")
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)
    out = []
    for site in Outline.of(path, text).index.sites:
        snip = Snippet.of(site.node)
        for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*", snip.text):
            if m.group() in KEYWORDS:
                continue
            sl = snip.text.count("\n", 0, m.end()) + 1
            sc = m.end() - (snip.text.rfind("\n", 0, m.end()) + 1) + 1
            fl, fc = snip.pos(sl, sc)
            out.append(starts[fl - 1] + fc - 1)
            break
    return out


def edits(text: str, path: str, n: int) -> list[str]:
    """`n` successive versions of `text`: a name broken (`zz` appended) then repaired, in bodies spread over the
    file; every fifth version inserts a comment line at the top."""
    versions = []
    cur = text
    broken: int | None = None  # offset of the `zz` we added
    k = 0
    for i in range(n):
        if i % 5 == 4:
            cur = f"# edit {i}\n" + cur
            broken = broken + len(f"# edit {i}\n") if broken is not None else None
        elif broken is None:
            spots = _spots(cur, path)
            at = spots[(k * 7) % len(spots)]
            k += 1
            cur = cur[:at] + "zz" + cur[at:]
            broken = at
        else:
            cur = cur[:broken] + cur[broken + 2 :]
            broken = None
        versions.append(cur)
    return versions


def _uncached_lint(path: str, text: str) -> None:
    """`envc lint` as a fresh process would run it: envc.parse's caches of earlier parses cleared first."""
    for name in ("_lark_parse", "_parse_at"):
        fn = getattr(envc.parse, name, None)
        if fn is not None and hasattr(fn, "cache_clear"):
            fn.cache_clear()
    envc.lint(path, text)


def median_ms(xs: list[float]) -> float:
    return 1000 * statistics.median(xs)


# ---- in process -------------------------------------------------------------------------------------------------


def in_process(path: Path, versions: list[str]) -> dict[str, float]:
    from envc.lsp.server import check

    text = path.read_text(encoding="utf-8")
    t0 = time.perf_counter()
    _uncached_lint(str(path), text)
    cold = time.perf_counter() - t0
    peer = []
    for v in versions:
        t0 = time.perf_counter()
        _uncached_lint(str(path), v)
        peer.append(time.perf_counter() - t0)
    check(str(path), text)  # the opened spec: every body parsed once
    ours, lints, outlines = [], [], []
    for v in versions:
        t0 = time.perf_counter()
        envc.lint(str(path), v)
        lints.append(time.perf_counter() - t0)
    for v in versions:
        t0 = time.perf_counter()
        check(str(path), v)
        ours.append(time.perf_counter() - t0)
    for v in versions:
        t0 = time.perf_counter()
        Outline.of(str(path), v)
        outlines.append(time.perf_counter() - t0)
    return {
        "cold_lint_ms": 1000 * cold,
        "peer_lint_ms": median_ms(peer),
        "lint_ms": median_ms(lints),
        "check_ms": median_ms(ours),
        "check_max_ms": 1000 * max(ours),
        "outline_ms": median_ms(outlines),
    }


# ---- end to end -----------------------------------------------------------------------------------------------


@dataclass
class _Published:
    uri: str
    version: int | None
    at: float
    count: int


async def end_to_end(path: Path, versions: list[str], warmup: int = 3) -> dict[str, float]:
    client = LanguageClient("bench-lsp", "1")
    got: asyncio.Queue[_Published] = asyncio.Queue()

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        got.put_nowait(_Published(params.uri, params.version, time.perf_counter(), len(params.diagnostics)))

    await client.start_io(sys.executable, "-m", "envc.cli", "lsp", cwd=str(ROOT))
    await client.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    client.initialized(lsp.InitializedParams())
    uri = path.resolve().as_uri()
    text = path.read_text(encoding="utf-8")

    async def wait(version: int) -> _Published:
        while True:
            p = await asyncio.wait_for(got.get(), 120)
            if p.uri == uri and p.version == version:
                return p

    t0 = time.perf_counter()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=text)
        )
    )
    first = (await wait(1)).at - t0
    latencies = []
    version = 1
    for i, v in enumerate(versions[:warmup] + versions):
        version += 1
        t0 = time.perf_counter()
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=v)],
            )
        )
        p = await wait(version)
        if i >= warmup:
            latencies.append(p.at - t0)
    # requests: the first after an edit rebuilds the outline (YAML tree and declarations) of the new text
    hovers, completions = [], []
    for v in versions[:10]:
        version += 1
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=v)],
            )
        )
        await wait(version)
        spot = next(i for i, ln in enumerate(v.split("\n")) if ln.startswith("state:")) + 1
        where = lsp.TextDocumentIdentifier(uri=uri)
        t0 = time.perf_counter()
        await client.text_document_hover_async(
            lsp.HoverParams(text_document=where, position=lsp.Position(line=spot, character=3))
        )
        hovers.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await client.text_document_completion_async(
            lsp.CompletionParams(text_document=where, position=lsp.Position(line=spot, character=2))
        )
        completions.append(time.perf_counter() - t0)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {
        "open_ms": 1000 * first,
        "relint_ms": median_ms(latencies),
        "relint_min_ms": 1000 * min(latencies),
        "relint_max_ms": 1000 * max(latencies),
        "hover_ms": median_ms(hovers),
        "completion_ms": median_ms(completions),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", nargs="?", type=Path, default=DEFAULT if DEFAULT.exists() else FALLBACK)
    ap.add_argument("--edits", type=int, default=20, help="timed edits (>= 5)")
    ap.add_argument("--scale", default="1", help="sizes to measure, e.g. 1,4")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    if args.edits < 5:
        ap.error("--edits must be at least 5 (figures are medians of >= 5 runs)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="envc-bench-lsp-") as tmp:
        for k in (int(x) for x in args.scale.split(",")):
            path = scaled(args.spec.resolve(), k, Path(tmp))
            text = path.read_text(encoding="utf-8")
            versions = edits(text, str(path), args.edits)
            row: dict[str, object] = {
                "spec": f"{args.spec.name} x{k}",
                "lines": text.count("\n") + 1,
                "bodies": len(Outline.of(str(path), text).index.sites),
                "edits_with_errors": f"{sum(bool(envc.lint(str(path), v)[1]) for v in versions)}/{len(versions)}",
            }
            row.update(in_process(path, versions))
            row.update(asyncio.run(end_to_end(path, versions)))
            row["vs_peer"] = f"{row['peer_lint_ms'] / row['relint_ms']:.1f}x"  # type: ignore[operator]
            rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        f"{date.today()}  {platform.processor() or platform.machine()}  Python {platform.python_version()}  "
        f"{args.edits} edits per spec, times in ms (median)"
    )
    cols = ["spec", "lines", "bodies", "edits_with_errors", "cold_lint_ms", "peer_lint_ms", "lint_ms", "check_ms"]
    cols += ["outline_ms", "relint_ms", "relint_max_ms", "vs_peer", "open_ms", "hover_ms", "completion_ms"]
    print("| " + " | ".join(c.removesuffix("_ms") for c in cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(f"{r[c]:.1f}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
