"""Tables of a mutation run for the terminal."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from envc.mutate.run import LEVELS, Report

PAPER_SPLIT = {"L1": 68, "L2": 24, "L3": 8}  # the paper's battle env: bugs caught by property/interaction/rollout


def percent(a: int, b: int) -> str:
    """`a/b` as a percentage with one decimal."""
    return f"{100 * a / b:.1f}%" if b else "-"


def summary(report: Report) -> Table:
    """One row: killed / scored, the per-level split, the other outcomes, time (`breakdown` says more)."""
    title = f"{report.spec} on {report.backend}: {len(report.outcomes)} mutants of {report.sites} sites"
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("killed", "rate", "L1/L2/L3", "survived", "equiv.", "stillborn", "not run", "s"):
        table.add_column(col, justify="right")
    split = report.by_level()
    killed = report.count("killed")
    table.add_row(
        f"{killed} / {report.scored}",
        percent(killed, report.scored),
        "/".join(str(split[lv]) for lv in LEVELS),
        str(report.count("survived")),
        str(report.count("equivalent")),
        str(report.count("stillborn")),
        str(report.count("not run")),
        f"{report.seconds:.0f}",
    )
    return table


def breakdown(report: Report) -> list[str]:
    """The lines under the summary: the level shares against the paper's, and the kinds of equivalent."""
    split, killed = report.by_level(), report.count("killed")
    shares = " / ".join(percent(split[lv], killed) for lv in LEVELS)
    paper = " / ".join(str(PAPER_SPLIT[lv]) for lv in LEVELS)
    return [
        f"first caught at L1 / L2 / L3: {shares} of the killed (the paper's battle env: {paper}%)",
        f"equivalent: {report.proven} proven, {report.reachable} on the reachable space, {report.bounded} within "
        f"the declared bounds, {report.tolerance} within the float tolerance, {report.unreached} unreached",
    ]


def details(report: Report, status: str) -> Table:
    """The mutants with one status, located in the generated file and the spec."""
    table = Table(title=f"{status} mutants")
    for col in ("generated", "spec", "operator", "change", "code", "why"):
        table.add_column(col)
    for o in report.outcomes:
        if o.status != status:
            continue
        why = o.reason if status != "killed" else f"{o.level}: {o.check}"
        table.add_row(
            Text(f"{o.file}:{o.line}"),
            Text(o.spec or "(template)"),
            o.op,
            Text(o.change),
            Text(o.code if len(o.code) <= 70 else o.code[:67] + "..."),
            Text(why or ""),
        )
    return table


def show(report: Report, console: Console, killed: bool = False) -> None:
    """Print the summary, survivors and equivalents (and the killed ones when asked)."""
    console.print(summary(report))
    for line in breakdown(report):
        console.print(Text(line))
    for status in ("survived", "equivalent", *(("killed",) if killed else ())):
        if report.count(status):
            console.print(details(report, status))
    for note in report.notes:
        console.print(Text(f"note: {note}"))
    if report.space is not None:
        console.print(Text(f"reachable state space: {report.space}"))
    console.print(
        f"reference coverage: {report.coverage[0]} of {report.coverage[1]} spec spans with generated code ran; "
        f"strict kill rate (unreached, reachable-space, declared-bounds and float-tolerance equivalents counted as "
        f"survivors): "
        f"{100 * report.strict_kill_rate():.1f}%"
    )
