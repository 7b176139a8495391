"""The `envc synthesize` command (envc/cli.py declares the options and calls `run`)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from envc.scrapers.emit import write_atomic

from .llm import SynthError, api_key
from .loop import Config, Report, dump_report, synthesize


def run(draft: str, out: str, config: Config, report_path: str | None = None) -> int:
    """Synthesize and print the cost report; 0 if every item passed, 1 if some did not, 2 if nothing could run."""
    err = Console(stderr=True)
    try:
        api_key()
        with err.status("synthesizing") as status:
            report = synthesize(draft, out, config, progress=lambda msg: status.update(msg))
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
    if report.output:
        err.print(f"wrote {report.output}" + ("" if report.ok else " (with the items that passed)"), highlight=False)
    else:
        err.print("nothing written: no item passed", highlight=False)
    return 0 if report.ok else 1


def print_report(report: Report) -> None:
    """Per item: iterations, tokens, cost, status; then the totals against the budget."""
    table = Table(title=f"envc synthesize: {report.model}, budget ${report.max_cost:.2f}")
    for col in ("item", "iter", "input", "output", "cache read", "cache write", "cost $", "status"):
        table.add_column(col, justify="left" if col in ("item", "status") else "right")
    for r in report.items:
        status = {"passed": "[green]passed[/green]"}.get(r.status, f"[red]{r.status}[/red]")
        if r.detail and r.status != "passed":
            status += f"\n{r.detail}"
        u = r.usage
        table.add_row(
            r.name, str(r.iterations), f"{u.input:,}", f"{u.output:,}", f"{u.cache_read:,}",
            f"{u.cache_write:,}", f"{r.cost:.4f}", status,
        )  # fmt: skip
    u = report.usage
    passed = sum(r.status == "passed" for r in report.items)
    table.add_section()
    table.add_row(
        f"total: {passed}/{len(report.items)} passed", str(sum(r.iterations for r in report.items)),
        f"{u.input:,}", f"{u.output:,}", f"{u.cache_read:,}", f"{u.cache_write:,}", f"{report.cost:.4f}", "",
    )  # fmt: skip
    out = Console()
    if not out.is_terminal:
        out = Console(width=132)  # piped: wide enough for the item names instead of rich's default 80
    out.print(table)
