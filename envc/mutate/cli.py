"""`envc mutate`: the command's body (envc/cli.py only declares its options)."""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text


def run(
    spec: str,
    backend: str,
    mutants: int,
    seed: int,
    budget: float,
    episodes: int,
    states: int,
    as_json: bool,
    killed: bool,
) -> int:
    """Run mutation testing and print the report; the exit code (0 done, 2 bad input or no baseline)."""
    import envc
    from envc.mutate import MutateError, mutate, program
    from envc.mutate.report import show

    err = Console(stderr=True, soft_wrap=True)

    def error(message: object) -> int:
        err.print(Text.assemble(("error:", "red"), " ", str(message)))
        return 2

    if backend not in ("jax", "rust"):
        return error(f"backend '{backend}' cannot be mutated (have: jax, rust)")
    if mutants < 1 or budget <= 0 or episodes < 1 or states < 1:
        return error("--mutants, --budget, --episodes and --states must be positive")
    try:
        model = envc.load(spec)
    except envc.SpecError as e:
        for d in e.diagnostics[:1]:  # one line: the first problem (`envc lint` lists them all)
            err.print(Text(d.format()))
        return 2
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(f"{model.name} on {backend}: building", total=None)

        def progress(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, total=total or None, description=f"{model.name} on {backend}: {what}")

        try:
            prog = program(model, backend, progress=lambda msg: progress(0, 0, msg))
            report = mutate(
                model,
                prog,
                mutants=mutants,
                seed=seed,
                budget=budget,
                episodes=episodes,
                states=states,
                progress=progress,
            )
        except MutateError as e:
            return error(e)
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        show(report, Console(), killed=killed)
    return 0
