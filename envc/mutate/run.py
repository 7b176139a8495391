"""Run the derived suite (`envc.verify`, levels L1, L2, L3 in order, stopping at the first failure) on mutants."""

from __future__ import annotations

import contextlib
import random
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from envc import ir
from envc.diagnostics import Span
from envc.interpret import ReferenceEnv
from envc.mutate import reachable
from envc.mutate.smt import BOUNDED
from envc.mutate.spans import reference_coverage
from envc.mutate.tolerance import TOLERANCE, within_tolerance
from envc.verify import Check, verify

LEVELS = ("L1", "L2", "L3")
REACHABLE = "equivalent on the reachable state space"


class MutateError(Exception):
    """Mutation testing cannot start (bad backend, the unmutated code fails its own suite, ...)."""


class Program(Protocol):
    """A backend's generated code as a set of mutation sites and an env per mutant."""

    backend: str
    sites: list[Any]

    @property
    def file(self) -> str: ...

    def span(self, site: Any) -> Span | None: ...

    def code(self, site: Any) -> str: ...

    def same_tree(self, site: Any) -> str | None: ...

    def activate(self, site: Any | None) -> Any: ...

    def identical(self, site: Any, env: Any) -> str | None: ...

    def release(self) -> None: ...


@dataclass
class Outcome:
    """What the suite did to one mutant."""

    id: int
    op: str
    file: str
    line: int
    function: str
    code: str
    change: str
    spec: str | None
    status: str = "not run"  # killed | survived | equivalent | stillborn | not run
    level: str | None = None
    check: str | None = None
    detail: str | None = None
    reason: str | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """A plain dict."""
        return dict(vars(self))


@dataclass
class Report:
    """Outcomes of one `envc mutate` run."""

    spec: str
    backend: str
    sites: int
    seed: int
    outcomes: list[Outcome]
    coverage: tuple[int, int]  # spec spans with generated code that the reference ran, of all such spans
    seconds: float
    space: str | None = None  # how the reachable state space was listed, or why it was not
    suite: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # about the code mutated (functions left out, and why)

    def count(self, status: str) -> int:
        """Mutants with this status."""
        return sum(o.status == status for o in self.outcomes)

    @property
    def scored(self) -> int:
        """Mutants that count: run, neither equivalent nor stillborn."""
        return self.count("killed") + self.count("survived")

    @property
    def unreached(self) -> int:
        """Equivalent because their spec site is never reached by the reference (not by identical code)."""
        return sum(o.status == "equivalent" and (o.reason or "").startswith("unreached") for o in self.outcomes)

    @property
    def reachable(self) -> int:
        """Equivalent because they behave as the original on the whole reachable state space (not proven)."""
        return sum(o.status == "equivalent" and (o.reason or "").startswith(REACHABLE) for o in self.outcomes)

    @property
    def bounded(self) -> int:
        """Equivalent on every state within the declared bounds (proven by z3), not on every state."""
        return sum(o.status == "equivalent" and (o.reason or "").startswith(BOUNDED) for o in self.outcomes)

    @property
    def tolerance(self) -> int:
        """Equivalent within the float tolerance: a comparison flip where a conforming backend may differ too."""
        return sum(o.status == "equivalent" and (o.reason or "").startswith(TOLERANCE) for o in self.outcomes)

    @property
    def proven(self) -> int:
        """Equivalent by an identical program, a clamped index or a z3 proof for every input: proven, not tested."""
        return self.count("equivalent") - self.unreached - self.reachable - self.tolerance - self.bounded

    def kill_rate(self) -> float:
        """Killed / non-equivalent run mutants."""
        return self.count("killed") / self.scored if self.scored else 1.0

    def strict_kill_rate(self) -> float:
        """Killed / run mutants that are not identical programs (unreached survivors, and survivors equivalent
        only on the reachable state space, within the declared bounds or within the float tolerance, count as
        survivors)."""
        n = self.scored + self.unreached + self.reachable + self.tolerance + self.bounded
        return self.count("killed") / n if n else 1.0

    def by_level(self) -> dict[str, int]:
        """Killed mutants by the level that first caught them."""
        return {lv: sum(o.status == "killed" and o.level == lv for o in self.outcomes) for lv in LEVELS}

    def to_json(self) -> dict[str, Any]:
        """The report as a plain dict (`envc mutate --json`)."""
        return {
            "spec": self.spec,
            "backend": self.backend,
            "seed": self.seed,
            "sites": self.sites,
            "mutants": len(self.outcomes),
            "killed": self.count("killed"),
            "survived": self.count("survived"),
            "equivalent": self.count("equivalent"),
            "equivalent_unreached": self.unreached,
            "equivalent_reachable": self.reachable,
            "equivalent_tolerance": self.tolerance,
            "equivalent_bounded": self.bounded,
            "equivalent_proven": self.proven,
            "reachable_space": self.space,
            "stillborn": self.count("stillborn"),
            "not_run": self.count("not run"),
            "kill_rate": round(self.kill_rate(), 4),
            "strict_kill_rate": round(self.strict_kill_rate(), 4),
            "by_level": self.by_level(),
            "reference_coverage": {"reached": self.coverage[0], "spans": self.coverage[1]},
            "suite": self.suite,
            "seconds": round(self.seconds, 1),
            "notes": self.notes,
            "outcomes": [o.to_json() for o in self.outcomes],
        }


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: float | None) -> Iterator[None]:
    """Raise `_Timeout` in the main thread after `seconds` (between two Python bytecodes: a hung XLA call is not
    interrupted, but every test step returns to Python)."""
    if not seconds or seconds <= 0:
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise _Timeout

    try:
        old = signal.signal(signal.SIGALRM, fire)
    except ValueError:  # not the main thread
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _first_failure(checks: list[Check]) -> Check | None:
    return next((c for c in checks if not c.passed), None)


def _where(span: Span | None) -> str | None:
    return f"{span.path}:{span.line}" if span is not None else None


def mutate(
    spec: ir.SpecIR,
    program: Program,
    mutants: int = 100,
    seed: int = 0,
    budget: float | None = None,
    episodes: int = 100,
    states: int = 200,
    max_steps: int = 500,
    per_mutant: float | None = 300.0,
    progress: Callable[[int, int, str], None] | None = None,
    only: list[int] | None = None,
    reachable_space: bool = True,
) -> Report:
    """Sample `mutants` sites of `program` (by `seed`; or take the site indices `only`) and run the suite on each
    until `budget` seconds pass. With `reachable_space`, survivors of a spec whose reachable states can be listed
    (listed at the first survivor) are run on all of them against the original (`envc.mutate.reachable`)."""
    t0 = time.perf_counter()
    suite = {"episodes": episodes, "states": states, "max_steps": max_steps, "verify_seed": 0}

    current = {"level": LEVELS[0]}

    def run_levels(env: Any) -> tuple[str, Check] | None:
        for lv in LEVELS:
            current["level"] = lv
            checks = verify(spec, env, levels=(lv,), episodes=episodes, states=states, max_steps=max_steps)
            bad = _first_failure(checks)
            if bad is not None:
                return lv, bad
        return None

    if progress is not None:
        progress(0, 0, "unmutated code")
    base = program.activate(None)
    with reference_coverage() as hits:
        failed = run_levels(base)
        # L1 runs on the backend alone: run it on the reference too, so invariants and observations count
        verify(spec, ReferenceEnv(spec), levels=("L1",), episodes=episodes, max_steps=max_steps)
    if failed is not None:
        lv, c = failed
        raise MutateError(
            f"the unmutated {program.backend} code fails its own suite at {lv} ({c.name}): {c.failures[0]}; "
            "mutation scores need a passing baseline"
        )
    mapped = {program.span(s) for s in program.sites} - {None}
    reached = {s for s in mapped if s in hits}
    order = list(range(len(program.sites)))
    random.Random(seed).shuffle(order)
    chosen = sorted(order[:mutants] if only is None else only, key=lambda i: (program.sites[i].line, i))
    listed: dict[str, Any] = {}  # the reachable space, listed at the first survivor: ("space", "note")
    outcomes: list[Outcome] = []
    for i in chosen:
        site = program.sites[i]
        span = program.span(site)
        outcomes.append(
            Outcome(
                id=i,
                op=site.op,
                file=program.file,
                line=site.line,
                function=site.function,
                code=program.code(site),
                change=site.describe(),
                spec=_where(span),
            )
        )
    for n, o in enumerate(outcomes):
        if budget is not None and time.perf_counter() - t0 > budget:
            break
        if progress is not None:
            progress(n, len(outcomes), f"{o.file}:{o.line} {o.op}")
        site = program.sites[o.id]
        t1 = time.perf_counter()
        try:
            _judge(program, site, o, run_levels, current, per_mutant)
            if o.status == "survived" and reachable_space:
                if not listed:
                    listed["space"], listed["note"] = _space(spec)
                if listed["space"] is not None:
                    _on_reachable(program, site, o, listed["space"], base, per_mutant)
        finally:
            o.seconds = round(time.perf_counter() - t1, 2)
            program.release()
        span = program.span(site)
        if o.status == "survived" and site.op == "compare":
            why = within_tolerance(spec, span, site.before, site.after)
            if why is not None:
                o.status, o.reason = "equivalent", why
        if o.status == "survived" and span is not None and span not in hits:
            o.status = "equivalent"
            o.reason = (
                f"unreached: the reference never ran {_where(span)} in the suite "
                f"(it ran {len(reached)} of the {len(mapped)} spec spans with generated code)"
            )
    if progress is not None:
        progress(len(outcomes), len(outcomes), "done")
    return Report(
        spec=spec.path,
        backend=program.backend,
        sites=len(program.sites),
        seed=seed,
        outcomes=outcomes,
        coverage=(len(reached), len(mapped)),
        seconds=time.perf_counter() - t0,
        space=listed.get("note"),
        suite=suite,
        notes=list(getattr(program, "notes", [])),
    )


def _space(spec: ir.SpecIR) -> tuple[reachable.Space | None, str]:
    """The spec's reachable state space, if it can be listed; and a line saying how, or why not."""
    try:
        space = reachable.explore(spec)
    except reachable.Infinite as e:
        return None, f"not listed: {e}"
    return space, space.describe()


def _on_reachable(
    program: Program, site: Any, o: Outcome, space: reachable.Space, base: Any, per_mutant: float | None
) -> None:
    """Mark survivor `o` equivalent if it gives the original's outputs on the whole reachable state space."""
    try:
        with _deadline(per_mutant):
            program.release()  # Rust: the schema's switch back on the original
            reachable.original_outputs(space, program.backend, base)
            env = program.activate(site)
            differs = reachable.first_difference(space, program.backend, env)
    except _Timeout:
        o.reason = f"the reachable-space check did not finish in {per_mutant:.0f} s"
        return
    if differs is None:
        o.status = "equivalent"
        o.reason = (
            f"{REACHABLE} ({len(space.states)} states): the original's outputs on all {reachable.cases(space)} "
            "cases (each state, its invariants and observations, every action id and -1, num_actions, 2**31-1)"
        )
    else:
        o.reason = f"differs from the original on a reachable input ({differs}), which the suite never gives"


def _judge(
    program: Program,
    site: Any,
    o: Outcome,
    run_levels: Callable[[Any], tuple[str, Check] | None],
    current: dict[str, str],
    per_mutant: float | None,
) -> None:
    """Fill in `o` for one mutant."""
    same = program.same_tree(site)
    if same is not None:
        o.status, o.reason = "equivalent", same
        return
    try:
        env = program.activate(site)
        same = program.identical(site, env)  # why it is the original program, or None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # a mutant that does not trace is no test of the suite
        o.status, o.reason = "stillborn", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        return
    if same is not None:
        o.status, o.reason = "equivalent", same
        return
    try:
        with _deadline(per_mutant):
            got = run_levels(env)
    except _Timeout:
        o.status, o.level, o.check = "killed", current["level"], "timeout"
        o.detail = f"no result in {per_mutant:.0f} s"
        return
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # the backend raised (a Rust panic is a BaseException): the suite sees it fail
        o.status, o.level, o.check = "killed", current["level"], "raised"
        o.detail = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        return
    if got is None:
        o.status = "survived"
        prove = getattr(program, "proven_equal", None)  # JAX: the two traces of the function, z3
        if prove is not None:
            try:
                with _deadline(per_mutant):
                    why = prove(site, env)
            except _Timeout:
                why = None
            if why is not None:
                o.status, o.reason = "equivalent", why
        return
    o.status, o.level, o.check = "killed", got[0], got[1].name
    o.detail = got[1].failures[0][:300]
