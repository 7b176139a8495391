"""The `envc` command line."""

from __future__ import annotations

import dataclasses
import json
import sys
from enum import Enum
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

import envc
from envc.diagnostics import Severity

app = typer.Typer(add_completion=False, no_args_is_help=True, help="envc: compile declarative RL environment specs.")
err = Console(stderr=True, soft_wrap=True)  # soft_wrap: one message is one line, however long


def _error(message: object) -> None:
    """Print `error: message` to stderr, the message verbatim: neither markup nor emoji codes (a path may hold
    `[/red]`, cargo's output `[u32; 2]` or `:ops:`)."""
    err.print(Text.assemble(("error:", "red"), " ", str(message)))


class Format(str, Enum):
    """Diagnostic output formats."""

    text = "text"
    json = "json"


@app.callback()
def _main() -> None:
    """envc: compile declarative RL environment specs."""


@app.command()
def lint(
    specs: Annotated[list[str], typer.Argument(help="Spec files to check")],
    format: Annotated[Format, typer.Option("--format", help="text or json")] = Format.text,
) -> None:
    """Check specs and print located diagnostics; exit 1 if any has errors."""
    failed = False
    records = []
    for path in specs:
        _, diags = envc.lint(path)
        failed |= any(d.severity is Severity.ERROR for d in diags)
        if format is Format.json:
            records += [d.to_json() for d in diags]
        else:
            for d in diags:
                print(d.format())
    if format is Format.json:
        print(json.dumps(records, indent=2))
    elif not failed:
        err.print(f"[green]{len(specs)} spec(s) OK[/green]")
    raise typer.Exit(1 if failed else 0)


@app.command()
def run(
    spec: Annotated[str, typer.Argument(help="Spec file")],
    episodes: Annotated[int, typer.Option(min=1, help="Episodes to play")] = 10,
    seed: Annotated[int, typer.Option(help="Seed for keys and the random policy")] = 0,
    backend: Annotated[str, typer.Option(help="reference, jax or rust")] = "reference",
    max_steps: Annotated[int, typer.Option(min=1, help="Cut an episode after this many steps")] = 10_000,
    record: Annotated[
        str | None, typer.Option(help="Also write one random episode, drawn by the spec's render, to this .gif or .mp4")
    ] = None,
) -> None:
    """Play random legal actions and print a summary table."""
    from envc.rollout import StuckEpisode, random_rollouts

    try:
        model = envc.load(spec)
        env = envc.build(model, backend=backend)
    except envc.SpecError as e:
        for d in e.diagnostics:
            print(d.format(), file=sys.stderr)
        raise typer.Exit(1) from None
    except ValueError as e:
        _error(e)
        raise typer.Exit(2) from None
    try:
        summary = random_rollouts(env, episodes, seed, max_steps)
    except (envc.SpecRuntimeError, StuckEpisode) as e:
        _error(e)
        raise typer.Exit(1) from None
    table = Table(title=f"{model.name}: {episodes} random-legal episodes ({backend})")
    for col in ("episodes", "mean return", "mean length", "terminated", "truncated", "steps/s"):
        table.add_column(col, justify="right")
    returns = " / ".join(f"{r:+.3f}" for r in summary.mean_return)
    table.add_row(
        str(summary.episodes),
        returns,
        f"{summary.mean_length:.1f}",
        str(summary.terminated),
        str(summary.truncated),
        f"{summary.steps_per_second:,.0f}",
    )
    Console().print(table)
    if record is not None:
        from envc.play import PlayError
        from envc.play import record as record_episode

        try:
            frames = record_episode(env, model, record, seed=seed, max_steps=min(max_steps, 1000))
        except (PlayError, OSError) as e:
            _error(e)
            raise typer.Exit(2) from None
        err.print(f"wrote {record} ({frames} frames)")


@app.command()
def play(
    spec: Annotated[str, typer.Argument(help="Spec file")],
    backend: Annotated[str, typer.Option(help="reference, jax or rust")] = "reference",
    opponent: Annotated[str, typer.Option(help="random, or a run folder of `envc train`")] = "random",
    seat: Annotated[int, typer.Option(help="The player you are (0 moves first when the spec says so)")] = 0,
    seed: Annotated[int, typer.Option(help="Seed of the episode and of a random opponent")] = 0,
) -> None:
    """Play a spec in the terminal against a random or trained opponent, drawn by its render section."""
    from envc.play import PlayError
    from envc.play import play as play_episode

    model = _load_or_exit(spec)
    try:
        env = envc.build(model, backend=backend)
        play_episode(env, model, seat=seat, opponent=opponent, seed=seed, console=Console())
    except (PlayError, ValueError) as e:
        _error(e)
        raise typer.Exit(2) from None


def _load_or_exit(spec: str) -> envc.SpecIR:
    try:
        return envc.load(spec)
    except envc.SpecError as e:
        for d in e.diagnostics:
            print(d.format(), file=sys.stderr)
        raise typer.Exit(1) from None


@app.command()
def compile(
    spec: Annotated[str, typer.Argument(help="Spec file")],
    out: Annotated[str, typer.Option("-o", "--out", help="Output folder (a pip-installable package)")],
    backend: Annotated[str, typer.Option(help="jax, rust, or all (one package holding both)")] = "jax",
    force: Annotated[
        bool, typer.Option("--force", help="Replace an output folder that envc wrote (it holds .envc-output)")
    ] = False,
    force_any: Annotated[
        bool, typer.Option("--force-any", help="Replace an output folder even if envc did not write it")
    ] = False,
) -> None:
    """Compile a spec into an installable package with its derived tests."""
    from envc.compile import CompileError, write_package

    model = _load_or_exit(spec)
    try:
        files = write_package(model, out, backend=backend, force=force, force_any=force_any)
    except CompileError as e:
        _error(e)
        raise typer.Exit(2) from None
    shown = escape(out)
    err.print(f"[green]wrote {len(files)} files to {shown}[/green]: pip install {shown} && pytest {shown}/tests")


@app.command()
def verify(
    spec: Annotated[str, typer.Argument(help="Spec file")],
    backend: Annotated[
        str | None,
        typer.Option(
            help="jax or rust: the backend to check against the reference (default jax; with --against: "
            "run that backend instead of the reference interpreter)"
        ),
    ] = None,
    episodes: Annotated[int, typer.Option(min=1, help="L3 episodes (L1 uses a fifth of them)")] = 100,
    states: Annotated[int, typer.Option(min=1, help="L2 injected states per source")] = 200,
    seed: Annotated[int, typer.Option(help="Seed for keys and actions")] = 0,
    level: Annotated[list[str] | None, typer.Option(help="Levels to run (default L1 L2 L3)")] = None,
    against: Annotated[
        str | None,
        typer.Option(
            help="Verify against the original instead: gymnasium:ENV_ID, pgx:ENV_ID, MODULE:FACTORY, or "
            "`declared` (the spec's oracle: target); docs/oracle.md"
        ),
    ] = None,
    stat_episodes: Annotated[
        int, typer.Option(min=0, help="With --against: L3 (c) episodes on each side (0: skip)")
    ] = 200,
    max_steps: Annotated[int, typer.Option(min=1, help="With --against: cut an episode after this many steps")] = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON (for tools)")] = False,
) -> None:
    """Hierarchical verification: L1 properties, L2 one-step differential, L3 matched episodes."""
    from envc.against import LEVELS
    from envc.verify import verify as run_verify

    levels = tuple(level or LEVELS)
    bad = [lv for lv in levels if lv not in LEVELS]
    if bad:
        _error(f"unknown level '{bad[0]}' (L1, L2, L3)")
        raise typer.Exit(2)
    if against is not None:
        _verify_against(spec, against, backend, episodes, states, seed, levels, stat_episodes, max_steps, as_json)
        return
    backend = backend or "jax"
    model = _load_or_exit(spec)
    try:
        env = envc.build(model, backend=backend)
    except ValueError as e:
        _error(e)
        raise typer.Exit(2) from None
    with err.status("verifying") as status:
        checks = run_verify(
            model,
            env,
            levels=levels,
            episodes=episodes,
            states=states,
            seed=seed,
            progress=lambda lv: status.update(f"verifying {lv}"),
        )
    if as_json:
        from envc.against import plain

        checks_json = [plain(dataclasses.asdict(c)) for c in checks]
        passed = all(c.passed for c in checks)
        report = {"spec": model.name, "backend": backend, "passed": passed, "checks": checks_json}
        print(json.dumps(report, indent=2))
        raise typer.Exit(0 if passed else 1)
    for lv in levels:
        table = Table(title=f"{model.name} on {backend}: {lv}")
        for col in ("check", "cases", "result"):
            table.add_column(col)
        for c in checks:
            if c.level == lv:
                # failures are text, not markup: they name elements such as `board[2]`
                count = f": {c.failed} of {c.cases} {c.unit}" if c.failed else ""
                more = f"\n(first {len(c.failures)} shown)" if c.failed > len(c.failures) else ""
                failed = Text.assemble(("FAIL", "red"), count, "\n", "\n".join(c.failures), more)
                result = Text("pass", "green") if c.passed else failed
                table.add_row(c.name, str(c.cases), result)
        Console().print(table)
    raise typer.Exit(0 if all(c.passed for c in checks) else 1)


def _verify_against(
    spec: str,
    target: str,
    backend: str | None,
    episodes: int,
    states: int,
    seed: int,
    levels: tuple[str, ...],
    stat_episodes: int,
    max_steps: int,
    as_json: bool,
) -> None:
    """`envc verify SPEC --against TARGET`: exit 0 all passed, 1 a divergence, 2 nothing could be compared."""
    from envc.against import verify_against
    from envc.oracle import OracleError
    from envc.oracle.targets import resolve, target_of

    try:
        model = envc.load(spec)
    except envc.SpecError as e:
        for d in e.diagnostics:
            print(d.format(), file=sys.stderr)
        raise typer.Exit(2) from None
    oracle = None
    try:
        env = envc.build(model, backend=backend) if backend not in (None, "reference") else None
        name = target_of(model, target)
        with err.status(f"loading {name}"):
            oracle = resolve(target, model)
        with err.status("verifying") as status:
            report = verify_against(
                model, oracle, target=name, levels=levels, episodes=episodes, states=states,
                stat_episodes=stat_episodes, seed=seed, max_steps=max_steps, env=env,
                progress=lambda lv: status.update(f"verifying {lv} against {name}"),
            )  # fmt: skip
    except (OracleError, ValueError) as e:
        _error(e)
        raise typer.Exit(2) from None
    except envc.SpecRuntimeError as e:
        _error(e)
        raise typer.Exit(1) from None
    finally:
        if oracle is not None:
            oracle.close()
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
        raise typer.Exit(0 if report.passed else 1)
    _print_against(report, backend or "reference")
    raise typer.Exit(0 if report.passed else 1)


def _print_against(report: object, backend: str) -> None:
    """The report of `--against` as tables, one per level, then the first divergence in full."""
    from envc.against import FREE_TOL, TOL, AgainstReport

    assert isinstance(report, AgainstReport)
    out = Console()
    line = Console(soft_wrap=True)  # one message, one line: a divergence names values and a state
    line.print(Text(f"{report.spec} ({backend}) against {report.target}"))
    lossy = [c for c in report.conversions if c["lossy"]]
    for conv in lossy:
        how = "rounded to nearest" if conv["from"].startswith("float") else "values must fit"
        line.print(
            Text(f"  lossy conversion: {conv['field']} <- {conv['source']}: {conv['from']} -> {conv['to']} ({how})")
        )
    if report.key_searches:
        searched = f"{report.key_searches} step(s) synchronised by key search"
        line.print(Text(f"  chance: {searched} (keys: --json chance_tape)"))
    if any(conv["from"].startswith("float") for conv in lossy):
        line.print(Text(f"  float tolerance: one step {TOL:g} x (1 + |original|), free running {FREE_TOL:g}"))
    for lv in ("L1", "L2", "L3"):
        checks = [c for c in report.checks if c.level == lv]
        if not checks:
            continue
        table = Table(title=f"{report.spec} against {report.target}: {lv}")
        for col in ("check", "cases", "edges", "result"):
            table.add_column(col)
        for c in checks:
            notes = "\n".join(c.notes)
            if c.passed:
                result = Text.assemble(("pass", "green"), "\n" + notes if notes else "")
            else:
                shown = "\n".join(c.examples)
                more = f" (first {len(c.examples)} shown)" if c.failed > len(c.examples) else ""
                result = Text.assemble(("FAIL", "red"), f" {c.failed} of {c.cases} failed{more}\n", shown,
                                       "\n" + notes if notes else "")  # fmt: skip
            table.add_row(c.name, str(c.cases), str(c.edges), result)
        out.print(table)
    first = report.first
    if first is not None:
        line.print(Text.assemble(("first divergence", "red"), f" ({first.level}, {first.check}): {first.message()}"))
    elif not report.passed:
        c = next(c for c in report.checks if not c.passed)
        line.print(Text.assemble(("first failure", "red"), f" ({c.level}, {c.name}): {c.examples[0]}"))
    line.print(Text(f"{report.seconds:.1f} s"))


def _batches(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise typer.BadParameter(f"expected positive integers separated by commas, got {text!r}")
    return out


@app.command()
def bench(
    spec: Annotated[str, typer.Argument(help="Spec file")],
    backend: Annotated[str, typer.Option(help="jax or rust")] = "jax",
    batch: Annotated[str, typer.Option(help="Batch sizes, comma-separated")] = "1,256,4096",
    steps: Annotated[int, typer.Option(min=1, help="Steps per rollout")] = 1000,
    repeats: Annotated[int, typer.Option(min=1, help="Timed runs per batch size (the median is reported)")] = 5,
    threads: Annotated[int | None, typer.Option(min=1, help="Rust: worker threads (default: all cores)")] = None,
    single_thread_xla: Annotated[
        bool, typer.Option("--single-thread-xla", help="JAX: run XLA's CPU backend on one thread")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table")] = False,
) -> None:
    """Steps/s of random-legal-action rollouts with auto-reset, median of the timed runs."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from envc.bench import bench as run_bench
    from envc.bench import use_single_thread_xla

    sizes = _batches(batch)
    if single_thread_xla:
        use_single_thread_xla()
    model = _load_or_exit(spec)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err) as bar:
        task = bar.add_task(f"{model.name} on {backend}", total=None)
        try:
            rows = run_bench(
                model,
                backend,
                sizes,
                steps=steps,
                repeats=repeats,
                threads=threads,
                progress=lambda msg: bar.update(task, description=msg),
            )
        except ValueError as e:
            _error(e)
            raise typer.Exit(2) from None
    if as_json:
        print(json.dumps([r.to_json() for r in rows], indent=2))
        return
    table = Table(title=f"{model.name} on {backend}: random legal actions, auto-reset, median of {repeats}")
    for col in ("batch", "steps/s", "min", "max", "compile s", "notes"):
        table.add_column(col, justify="right")
    for r in rows:
        notes = ", ".join(f"{k}={v}" for k, v in r.extra.items())
        table.add_row(
            str(r.batch),
            f"{r.steps_per_s:,.0f}",
            f"{min(r.runs):,.0f}",
            f"{max(r.runs):,.0f}",
            f"{r.compile_s:.2f}",
            notes,
        )
    Console().print(table)


@app.command()
def schema(
    out: Annotated[str | None, typer.Option("-o", "--out", help="Write the schema to this file")] = None,
) -> None:
    """Print (or write) the JSON Schema of spec files, for YAML editors."""
    from envc.schema import render, write

    if out is None:
        sys.stdout.write(render())
        return
    try:
        write(out)
    except OSError as e:
        _error(f"cannot write {out}: {e.strerror or e}")
        raise typer.Exit(2) from None
    err.print(f"[green]wrote {escape(out)}[/green]")


@app.command()
def lsp() -> None:
    """Run the envc language server over stdio (diagnostics, hover, completion, go-to-definition)."""
    from envc.lsp import main

    main()


@app.command()
def scrape(
    urls: Annotated[list[str], typer.Argument(help="The rules page first, then card list pages (or saved files)")],
    out: Annotated[str, typer.Option("-o", "--out", help="Draft spec to write")],
    from_file: Annotated[
        bool,
        typer.Option("--from-file", help="Read saved pages (HTML, .txt/.md/.rst rulebooks, *.json cards), not URLs"),
    ] = False,
    name: Annotated[str | None, typer.Option(help="Spec name (default: from the page title)")] = None,
    players: Annotated[int, typer.Option(help="Number of players")] = 2,
    adapter: Annotated[str | None, typer.Option(help="Site adapter (default: chosen per page)")] = None,
    timeout: Annotated[
        float, typer.Option(help="Seconds per URL in all: robots.txt, redirects, connect, headers, body")
    ] = 20.0,
    max_bytes: Annotated[int, typer.Option(help="Largest page, on the wire and after each decoding")] = 5 << 20,
    max_redirects: Annotated[int, typer.Option(help="Redirects followed per request")] = 5,
    max_pages: Annotated[int, typer.Option(help="Pages read in all (card lists follow rel=next)")] = 20,
    delay: Annotated[float, typer.Option(help="Seconds between requests to one site")] = 1.0,
) -> None:
    """Draft a spec from a rules page and card lists: tables -> constant tables, rule text -> todo items.

    Limits against hostile sites: --timeout is one deadline per URL (a server trickling bytes is cut off;
    --delay waits do not count); --max-bytes holds on the wire and after every gzip/deflate layer (other
    encodings, or more than 3 layers, are refused); redirects go to http(s) URLs only. A page is read up to
    its 500th heading; longer sections, cells and rule text are cut, with a `note:` line; a draft over
    3 MiB or 400,000 YAML values is an error. Each failure is one `error:` line (exit 1; 2 for a bad option).
    """
    from envc.scrapers.cli import run as run_scrape

    raise typer.Exit(
        run_scrape(
            urls, out, from_file=from_file, name=name, players=players, adapter=adapter, timeout=timeout,
            max_bytes=max_bytes, max_redirects=max_redirects, max_pages=max_pages, delay=delay,
        )
    )  # fmt: skip


@app.command()
def synthesize(
    draft: Annotated[str, typer.Argument(help="Draft spec with a todo section (from envc scrape)")],
    out: Annotated[str, typer.Option("-o", "--out", help="Spec to write (atomically)")],
    provider: Annotated[str, typer.Option(help="anthropic (Messages API) or openai (chat completions)")] = "anthropic",
    base_url: Annotated[
        str | None, typer.Option(help="Server URL, e.g. a local vLLM/Ollama/llama.cpp (no key needed on 127.0.0.1)")
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Model id (default: claude-sonnet-4-6, or gpt-5.4 for openai)")
    ] = None,
    max_cost: Annotated[float, typer.Option(help="Dollar budget for the whole run")] = 10.0,
    max_iterations: Annotated[int, typer.Option(help="Answers per item (1 + repairs)")] = 4,
    max_tokens: Annotated[int, typer.Option(help="Largest answer, in tokens")] = 16_000,
    only: Annotated[list[str] | None, typer.Option(help="Formalize only these todo items")] = None,
    episodes: Annotated[int, typer.Option(help="L1 random games per check")] = 10,
    max_steps: Annotated[int, typer.Option(help="Steps per L1 game")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the L1 games")] = 0,
    prices: Annotated[str | None, typer.Option(help="Price table (YAML, USD per million tokens)")] = None,
    example: Annotated[list[str] | None, typer.Option(help="Extra example spec for the prompt")] = None,
    report: Annotated[str | None, typer.Option(help="Also write the cost report as YAML")] = None,
    outline: Annotated[bool, typer.Option(help="First have the model plan the spec (an outline call)")] = True,
    max_request_tokens: Annotated[
        int, typer.Option(help="Token budget per request (estimated: characters / 3.5)")
    ] = 80_000,
    dry_run: Annotated[bool, typer.Option(help="Print the planned requests and their size; send nothing")] = False,
    dump_requests: Annotated[
        str | None, typer.Option(help="With --dry-run: write each request body as JSON into this folder")
    ] = None,
) -> None:
    """Turn a draft's rule text into spec code with an LLM, checked by lint + L1 and repaired from diagnostics."""
    from envc.synthesize.cli import run as run_synthesize
    from envc.synthesize.loop import Config

    config = Config(
        max_cost=max_cost, max_iterations=max_iterations, max_tokens=max_tokens,
        only=tuple(only or ()), episodes=episodes, max_steps=max_steps, seed=seed, prices=prices,
        examples=tuple(example or ()), provider=provider, base_url=base_url, model=model or "", outline=outline,
        max_request_tokens=max_request_tokens,
    )  # fmt: skip
    raise typer.Exit(run_synthesize(draft, out, config, report, dry_run, dump_requests))


@app.command()
def mutate(
    spec: Annotated[str, typer.Argument(help="Spec file")],
    backend: Annotated[str, typer.Option(help="jax or rust: whose generated code to mutate")] = "jax",
    mutants: Annotated[int, typer.Option(help="Mutants sampled from all sites")] = 60,
    seed: Annotated[int, typer.Option(help="Seed of the sample")] = 0,
    budget: Annotated[float, typer.Option(help="Seconds: no mutant is started after this")] = 600.0,
    episodes: Annotated[int, typer.Option(help="L3 episodes of the suite (as envc verify)")] = 100,
    states: Annotated[int, typer.Option(help="L2 injected states per source (as envc verify)")] = 200,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout")] = False,
    killed: Annotated[bool, typer.Option("--killed", help="Also list the killed mutants")] = False,
) -> None:
    """Mutation testing: single-point bugs in the generated code, and the level of the suite that catches each."""
    from envc.mutate.cli import run as run_mutate

    raise typer.Exit(run_mutate(spec, backend, mutants, seed, budget, episodes, states, as_json, killed))


@app.command()
def train(
    spec: Annotated[str, typer.Argument(help="Spec file")],
    out: Annotated[str | None, typer.Option("-o", "--out", help="Run folder (default: under runs/)")] = None,
    steps: Annotated[int | None, typer.Option(help="Env steps to train for (config: total_steps)")] = None,
    num_envs: Annotated[int | None, typer.Option(help="Envs stepped in parallel (config: num_envs)")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the network, envs and sampling")] = None,
    config: Annotated[str | None, typer.Option(help="YAML or JSON file of PPO settings (docs/train.md)")] = None,
    resume: Annotated[
        str | None, typer.Option(help="Go on with this interrupted run (its folder) from its last chunk")
    ] = None,
) -> None:
    """Train PPO on the spec's JAX env (self-play for multi-player specs): metrics, curve and checkpoints."""
    from envc.train.checkpoint import RunError
    from envc.train.config import ConfigError
    from envc.train.run import train_cli

    try:
        model = envc.load(spec)
    except envc.SpecError as e:  # bad input to train (e.g. no actions): the diagnostics, exit 2
        for d in e.diagnostics:
            print(d.format(), file=sys.stderr)
        raise typer.Exit(2) from None
    try:
        code = train_cli(model, out, steps, num_envs, seed, config, resume)
    except (RunError, ConfigError) as e:
        _error(e)
        raise typer.Exit(2) from None
    raise typer.Exit(code)


@app.command("eval")
def eval_(
    run: Annotated[str, typer.Argument(help="Run folder (from envc train)")],
    backend: Annotated[str, typer.Option(help="reference, jax or rust")] = "jax",
    against: Annotated[
        str | None,
        typer.Option(help="Play the original instead: gymnasium:ENV_ID, pgx:ENV_ID, MODULE:FACTORY, declared"),
    ] = None,
    episodes: Annotated[int, typer.Option(help="Episodes (games with --opponent)")] = 100,
    greedy: Annotated[bool, typer.Option("--greedy/--sample", help="Most likely action, or sample the policy")] = True,
    seed: Annotated[int, typer.Option(help="Seed of the episodes' keys")] = 0,
    max_steps: Annotated[int, typer.Option(help="Cut an episode after this many steps")] = 10_000,
    opponent: Annotated[
        str | None, typer.Option(help="Multi-player: play `random`, a checkpoint of this run, or another run folder")
    ] = None,
    checkpoint: Annotated[str | None, typer.Option(help="Checkpoint to evaluate (default: the last)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON")] = False,
) -> None:
    """Run a trained policy on a backend (or the original) and report its return distribution, or win rates."""
    from envc.train.evaluate import EvalError, eval_cli

    try:
        code = eval_cli(run, backend, against, episodes, greedy, seed, max_steps, opponent, checkpoint, as_json)
    except EvalError as e:
        _error(e)
        raise typer.Exit(2) from None
    raise typer.Exit(code)


@app.command()
def transfer(
    run: Annotated[str, typer.Argument(help="Run folder (from envc train)")],
    episodes: Annotated[int, typer.Option(help="Episodes per backend")] = 1000,
    margin: Annotated[float | None, typer.Option(help="Equivalence margin (default: 10% of the return scale)")] = None,
    alpha: Annotated[float, typer.Option(help="Level of each one-sided test")] = 0.05,
    backend: Annotated[list[str] | None, typer.Option(help="Backends to compare (default: all three)")] = None,
    against: Annotated[str | None, typer.Option(help="The original (default: the spec's declared oracle)")] = None,
    original: Annotated[bool, typer.Option("--original/--no-original", help="Also play the original")] = True,
    greedy: Annotated[bool, typer.Option("--greedy/--sample", help="Most likely action, or sample the policy")] = True,
    seed: Annotated[int, typer.Option(help="Seed of the episodes' keys")] = 0,
    max_steps: Annotated[int, typer.Option(help="Cut an episode after this many steps")] = 10_000,
    checkpoint: Annotated[str | None, typer.Option(help="Checkpoint to evaluate (default: the last)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON")] = False,
) -> None:
    """The same policy on every backend and the original: mean returns and a TOST equivalence test each."""
    from envc.train.evaluate import EvalError
    from envc.train.transfer import transfer_cli

    try:
        code = transfer_cli(
            run, episodes, seed, greedy, margin, alpha, backend, against, max_steps, checkpoint, original, as_json
        )
    except EvalError as e:
        _error(e)
        raise typer.Exit(2) from None
    raise typer.Exit(code)


if __name__ == "__main__":
    app()
