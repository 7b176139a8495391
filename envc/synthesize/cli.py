"""The `envc synthesize` command (envc/cli.py declares the options and calls `run`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from envc.scrapers.emit import write_atomic

from .chunks import CHARS_PER_TOKEN
from .llm import SynthError, api_key, request_body
from .loop import Config, Estimate, Report, dry_run, dump_report, resolve, synthesize


def run(
    draft: str, out: str, config: Config, report_path: str | None = None, dry: bool = False,
    dump_requests: str | None = None,
) -> int:  # fmt: skip
    """Synthesize and print the cost report; 0 if every item passed, 1 if some did not, 2 if nothing could run.

    `dry`: build and print the first requests (and write them under `dump_requests`), send nothing.
    """
    err = Console(stderr=True)
    out_console = _stdout()
    try:
        config = resolve(config)
        if dry or dump_requests:
            est = dry_run(draft, out, config)
            print_plan(out_console, est, config)
            if dump_requests:
                _dump(est, config, dump_requests)
                msg = f"wrote {len(est.requests)} request bodies to {dump_requests}"
                err.print(msg, highlight=False, soft_wrap=True)
            return 0
        api_key(config.provider, config.base_url)

        def show(kind: str, what: Any) -> None:
            if kind == "plan":
                print_plan(out_console, what, config)
            elif kind == "outline":
                out_console.print("[bold]outline[/bold] (the plan every item is written against):")
                out_console.print(what, markup=False, highlight=False, soft_wrap=True)

        with err.status("synthesizing") as status:
            report = synthesize(draft, out, config, progress=lambda msg: status.update(msg), show=show)
    except SynthError as e:
        err.print(f"[red]error:[/red] {e}", highlight=False, soft_wrap=True)
        return 2
    print_report(report)
    if report_path:
        try:
            write_atomic(report_path, dump_report(report))
        except OSError as e:
            err.print(f"[red]error:[/red] cannot write {report_path}: {e.strerror or e}", highlight=False)
            return 2
    if report.error:
        err.print(f"[red]error:[/red] {report.error}", highlight=False, soft_wrap=True)
    if report.outline:
        err.print(f"wrote {report.outline}", highlight=False, soft_wrap=True)
    if report.output:
        done = "" if report.ok else " (with the items that passed)"
        err.print(f"wrote {report.output}{done}", highlight=False, soft_wrap=True)
    else:
        err.print("nothing written: no item passed", highlight=False)
    return 0 if report.ok else 1


def _stdout() -> Console:
    out = Console()
    return out if out.is_terminal else Console(width=132)  # piped: wide enough for the item names


def _dump(est: Estimate, config: Config, folder: str) -> None:
    """One JSON request body per request (the provider's wire format), numbered in sending order."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        for n, r in enumerate(est.requests):
            body = request_body(config.provider, config.model, config.max_tokens, config.base_url, r.system,
                                r.messages)  # fmt: skip
            write_atomic(str(Path(folder) / f"{n:02d}_{r.name}.json"), json.dumps(body, indent=1) + "\n")
    except OSError as e:
        raise SynthError(f"cannot write the requests to {folder}: {e.strerror or e}") from None


def print_plan(out: Console, est: Estimate, config: Config) -> None:
    """The first requests, their estimated size against the budget, and the estimated cost, before any call."""
    out.print(
        f"envc synthesize: {len(est.requests)} request(s) planned for {config.provider} {config.model}, "
        f"budget {est.budget:,} tokens per request",
        highlight=False, soft_wrap=True,
    )  # fmt: skip
    table = Table()
    for col in ("request", "sections", "rule text cut", "system", "tables", "request text", "total ~tokens"):
        table.add_column(col, justify="left" if col in ("request", "sections") else "right")
    for r in est.requests:
        ids = ", ".join(s.id for s in r.sections)
        if len(ids) > 40:
            ids = f"{len(r.sections)}: {r.sections[0].id} .. {r.sections[-1].id}"
        over = " [red](over)[/red]" if r.tokens > est.budget else ""
        table.add_row(
            r.name, ids or "-", f"{r.cut:,} chars" if r.cut else "-", f"{r.parts['system']:,}",
            f"{r.parts['context']:,}" if r.parts["context"] else "-", f"{r.parts['request']:,}",
            f"{r.tokens:,}{over}",
        )  # fmt: skip
    out.print(table)
    largest = max(est.requests, key=lambda r: r.tokens)
    out.print(
        f"tokens are estimated as characters / {CHARS_PER_TOKEN} (no tokenizer call); largest request: "
        f"{largest.name}, ~{largest.tokens:,} tokens; all first attempts: ~{est.input_tokens:,} input tokens",
        highlight=False, soft_wrap=True,
    )
    if est.input_cost is None or est.output_cost is None:
        out.print(
            f"estimated cost: unknown (no price for '{config.model}' in the price table; pass --prices FILE); "
            "--max-cost is not enforced",
            highlight=False, soft_wrap=True,
        )
    else:
        out.print(
            f"estimated cost of the first attempts: ${est.input_cost:.4f} input at the uncached rate (prompt "
            f"caching makes it less) + up to ${est.output_cost:.4f} output (--max-tokens {est.max_tokens:,} "
            f"per answer); repairs cost more",
            highlight=False, soft_wrap=True,
        )
    if est.more:
        out.print(est.more, highlight=False)
    for r in est.requests:
        for msg in r.repeats:
            out.print(f"[yellow]warning:[/yellow] {r.name}: {msg}", highlight=False)


def print_report(report: Report) -> None:
    """Per item: iterations, tokens, cost, status; then the totals against the budget."""
    budget = f"budget ${report.max_cost:.2f}" if report.priced else "cost unknown (no price for this model)"
    table = Table(title=f"envc synthesize: {report.model}, {budget}")
    for col in ("item", "iter", "input", "output", "cache read", "cache write", "cost $", "status"):
        table.add_column(col, justify="left" if col in ("item", "status") else "right")
    for r in report.items:
        status = {"passed": "[green]passed[/green]"}.get(r.status, f"[red]{r.status}[/red]")
        if r.detail and r.status != "passed":
            status += f"\n{r.detail}"
        u = r.usage
        table.add_row(
            r.name, str(r.iterations), f"{u.input:,}", f"{u.output:,}", f"{u.cache_read:,}",
            f"{u.cache_write:,}", f"{r.cost:.4f}" if report.priced else "unknown", status,
        )  # fmt: skip
    u = report.usage
    passed = sum(r.status == "passed" for r in report.items)
    table.add_section()
    table.add_row(
        f"total: {passed}/{len(report.items)} passed", str(sum(r.iterations for r in report.items)),
        f"{u.input:,}", f"{u.output:,}", f"{u.cache_read:,}", f"{u.cache_write:,}",
        f"{report.cost:.4f}" if report.priced else "unknown", "",
    )  # fmt: skip
    _stdout().print(table)
