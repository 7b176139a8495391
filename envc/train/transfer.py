"""Does a trained policy score the same everywhere? (`envc transfer RUN`, the paper's L4.)

The run's policy plays the same seeded episodes (envc.train.evaluate) on the reference interpreter, the JAX and
the Rust backend, and on the original when the spec declares one (`oracle: target:`) or `--against` names one.
Each backend's returns are compared with the training backend's by two one-sided t-tests (TOST, envc.stats.tost)
per player: paired over the matched episodes of envc's backends (same keys), Welch's for the original (its own
seeding: independent samples). The margin is stated: by default MARGIN_FRACTION of the training backend's return
scale, max(range of its episode returns, |its mean return|) (MARGIN_FRACTION itself where both are 0). Verdicts:
"equivalent" (shown within the margin at level alpha), "different" (a difference shown by the two-sided t-test) or
"not shown equivalent".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from envc.stats import Equivalence, tost
from envc.train.evaluate import BACKENDS, MAX_STEPS, EpisodeResults, EvalError, load, per_episode, run_episodes

MARGIN_FRACTION = 0.1
ALPHA = 0.05


@dataclass(frozen=True)
class PairTest:
    """One backend against the training backend, one player."""

    backend: str
    player: int
    test: Equivalence
    identical: int | None  # episodes with the same return on both (seed-matched backends only)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        t = self.test
        return {
            "backend": self.backend,
            "player": self.player,
            "verdict": t.verdict,
            "difference": t.difference,
            "ci": [t.ci_low, t.ci_high],
            "p_tost": t.p_value,
            "p_difference": t.p_difference,
            "test": "Welch" if self.identical is None else "paired",
            "identical_episodes": self.identical,
        }


@dataclass
class TransferReport:
    """Every backend's episodes and the equivalence tests against the training backend."""

    spec: str
    run: str
    reference_backend: str  # the one trained on
    margin: float
    margin_rule: str  # how the margin was chosen, in words
    alpha: float
    results: list[EpisodeResults]
    tests: list[PairTest]

    @property
    def passed(self) -> bool:
        """Every test says equivalent."""
        return all(t.test.verdict == "equivalent" for t in self.tests)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "spec": self.spec,
            "run": self.run,
            "trained_on": self.reference_backend,
            "margin": self.margin,
            "margin_rule": self.margin_rule,
            "alpha": self.alpha,
            "passed": self.passed,
            "backends": [r.to_json() for r in self.results],
            "tests": [t.to_json() for t in self.tests],
        }


def default_margin(returns: np.ndarray) -> tuple[float, str]:
    """MARGIN_FRACTION of max(range, |mean|) of the training backend's returns (all players), and the rule."""
    x = np.asarray(returns, np.float64)
    scale = max(float(x.max() - x.min()), float(np.abs(x.mean(axis=0)).max()))
    if scale == 0.0:
        return MARGIN_FRACTION, f"{MARGIN_FRACTION:g} (absolute: every training-backend return is 0)"
    return MARGIN_FRACTION * scale, (
        f"{MARGIN_FRACTION:.0%} of the training backend's return scale {scale:.4g} = max(range, |mean|)"
    )


def transfer(
    run: Any,
    episodes: int = 1000,
    seed: int = 0,
    greedy: bool = True,
    margin: float | None = None,
    alpha: float = ALPHA,
    backends: tuple[str, ...] = BACKENDS,
    against: str | None = None,
    max_steps: int = MAX_STEPS,
    original: bool = True,
) -> TransferReport:
    """Run `run`'s policy on every backend (and the original: `against`, else the spec's declared one) and test
    each against the training backend (`original=False`: no original)."""
    if margin is not None and not margin > 0:
        raise EvalError(f"--margin must be positive, got {margin}")
    if not 0 < alpha < 0.5:
        raise EvalError(f"--alpha must lie in (0, 0.5), got {alpha}")
    if episodes < 2:
        raise EvalError(f"--episodes must be at least 2 for a t-test, got {episodes}")
    spec = run.spec
    trained = str(run.meta.get("backend", "jax"))
    order = [trained, *[b for b in backends if b != trained]]
    target = against or (spec.oracle.target if spec.oracle is not None and spec.oracle.target else None)
    actor = per_episode(run.policy(), greedy)
    results = [run_episodes(spec, actor, b, episodes, seed, greedy, max_steps) for b in order]
    if target is not None and original:
        results.append(run_episodes(spec, actor, trained, episodes, seed, greedy, max_steps, against=target))
    base = results[0]
    rule = f"{margin:g} (given)" if margin is not None else ""
    if margin is None:
        margin, rule = default_margin(base.returns)
    tests = []
    for res in results[1:]:
        for p in range(spec.players):
            same = int(np.sum(res.returns[:, p] == base.returns[:, p])) if res.seed_matched else None
            test = tost(res.returns[:, p], base.returns[:, p], margin, alpha, paired=res.seed_matched)
            tests.append(PairTest(res.backend, p, test, same))
    return TransferReport(spec.name, str(run.run_dir), trained, margin, rule, alpha, results, tests)


def print_report(report: TransferReport) -> None:
    """The table of mean returns and the verdicts."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(width=max(Console().width, 120))
    table = Table(title=f"{report.spec}: {report.run}, trained on {report.reference_backend}")
    multi = len(report.results[0].summaries()) > 1
    cols = [
        "backend",
        *(["player"] if multi else []),
        "mean +/- sd",
        f"difference [{1 - 2 * report.alpha:.0%} CI]",
        "TOST p",
        "same",
        "verdict",
        "s",
    ]
    for col in cols:
        table.add_column(col, justify="right")
    by = {(t.backend, t.player): t for t in report.tests}
    colour = {"equivalent": "green", "different": "red", "not shown equivalent": "yellow"}
    for res in report.results:
        for s in res.summaries():
            t = by.get((res.backend, s.player))
            cells: list[str | Text]
            if t is None:
                cells = ["", "", "", Text("trained on")]
            else:
                e = t.test
                same = "-" if t.identical is None else f"{t.identical}/{res.episodes}"
                cells = [
                    f"{e.difference:+.3g} [{e.ci_low:+.3g}, {e.ci_high:+.3g}]",
                    f"{e.p_value:.2g}",
                    same,
                    Text(e.verdict, colour[e.verdict]),
                ]
            player = [str(s.player)] if multi else []
            table.add_row(res.backend, *player, f"{s.mean:.4g} +/- {s.sd:.3g}", *cells, f"{res.seconds:.1f}")
    console.print(table)
    n = report.results[0].episodes
    console.print(f"{n} episodes per backend; same: episodes with identical returns (seed-matched backends)")
    console.print(
        f"margin +/-{report.margin:.4g}: {report.margin_rule}; alpha {report.alpha:g} (two one-sided "
        f"t-tests: paired for seed-matched backends, Welch for the original); "
        f"{'all equivalent' if report.passed else 'NOT all equivalent'}"
    )


def transfer_cli(
    run_dir: str,
    episodes: int,
    seed: int,
    greedy: bool,
    margin: float | None,
    alpha: float,
    backends: list[str] | None,
    against: str | None,
    max_steps: int,
    checkpoint: str | None,
    original: bool,
    as_json: bool,
) -> int:
    """`envc transfer`: exit 0 when every backend is equivalent, 1 otherwise (EvalError: bad input)."""
    chosen = tuple(backends or BACKENDS)
    bad = [b for b in chosen if b not in BACKENDS]
    if bad:
        raise EvalError(f"unknown backend '{bad[0]}' (have: {', '.join(BACKENDS)})")
    run = load(run_dir, checkpoint)
    report = transfer(run, episodes, seed, greedy, margin, alpha, chosen, against, max_steps, original)
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print_report(report)
    return 0 if report.passed else 1
