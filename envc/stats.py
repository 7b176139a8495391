"""Statistics for honest verification of float dynamics (DESIGN.md "L3 for float dynamics is honest").

- `compare_samples`: a two-sample Kolmogorov-Smirnov test whose power is stated: the smallest location shift
  (in pooled standard deviations) it detects with 80% power at the samples' sizes and level, by simulation.
- `nudge`: a state with its float fields moved by one ulp.
- `divergence_horizon`: how long a run and the same run from a 1-ulp nudged start stay within tolerance of
  each other (same actions, same keys): the horizon beyond which a comparison of chaotic trajectories says
  nothing, measured on the system itself (the reference interpreter, or an external original) through a step
  callable. `twin_horizons` runs several noise twins (nudged at random before every step), `own_horizon` takes
  the earliest of several twins.
- `parting_rank_test`: whether a second implementation parts from the system sooner than the system's own
  noise twins do, over many episodes (the parting step of one run against one twin is a race that a correct
  implementation loses now and then, so a single episode cannot decide it).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as sps  # type: ignore[import-untyped]

# The one-step float tolerance of the comparisons (the same as envc.verify's).
RTOL, ATOL = 1e-5, 1e-6
POWER = 0.8  # the power at which `detectable` is stated
_REPLICATES = 1000  # simulated sample pairs per power estimate
_SEED = 20240519  # fixed: the detectable shift is a deterministic function of (n_a, n_b, alpha)


@dataclass(frozen=True)
class SampleComparison:
    """A two-sample test of one quantity (e.g. episode return), with its power stated."""

    quantity: str
    n_a: int
    n_b: int
    statistic: float  # the KS statistic: the largest gap between the two empirical CDFs, in [0, 1]
    p_value: float
    alpha: float
    detectable: float  # smallest normal location shift, in pooled SDs, found with 80% power (inf: none)
    passed: bool  # p_value >= alpha: no difference shown at this level

    def describe(self) -> str:
        """One line: the test, the sizes, the statistic, p and what the test could have seen."""
        power = (
            f"detects a shift of {self.detectable:.2f} SD with {POWER:.0%} power"
            if math.isfinite(self.detectable)
            else "too few episodes to detect any shift"
        )
        return (
            f"{self.quantity}: two-sample KS, n={self.n_a}+{self.n_b}, D={self.statistic:.3f}, "
            f"p={self.p_value:.3g} (alpha {self.alpha:g}; {power})"
        )


def _clean(x: Sequence[float], what: str) -> np.ndarray:
    v = np.asarray(x, np.float64).reshape(-1)
    if v.size == 0:
        raise ValueError(f"compare_samples: sample {what} is empty")
    return np.where(np.isnan(v), np.inf, v)  # NaN (a blown-up episode) ranks above every number


def compare_samples(quantity: str, a: Sequence[float], b: Sequence[float], alpha: float = 0.01) -> SampleComparison:
    """Two-sample Kolmogorov-Smirnov test (scipy, exact p where it can) of `a` against `b`.

    Identical or degenerate samples (all-equal lengths) give D = 0, p = 1; NaN counts as larger than every
    number. `detectable` is `detectable_shift(len(a), len(b), alpha)`.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"compare_samples: alpha must lie in (0, 1), got {alpha}")
    va, vb = _clean(a, "a"), _clean(b, "b")
    if np.array_equal(np.sort(va), np.sort(vb)):
        d, p = 0.0, 1.0
    else:
        d, p = _ks(va, vb)
        if not math.isfinite(p):  # not seen; kept so that a NaN never reaches a report
            p = 0.0 if d > 0 else 1.0
    return SampleComparison(
        quantity=quantity,
        n_a=int(va.size),
        n_b=int(vb.size),
        statistic=d,
        p_value=p,
        alpha=alpha,
        detectable=detectable_shift(int(va.size), int(vb.size), alpha),
        passed=p >= alpha,
    )


def _ks(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """scipy's two-sample KS statistic and p-value (exact where scipy manages, else asymptotic: silently)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = sps.ks_2samp(a, b)
    return float(r.statistic), float(r.pvalue)


def _ks_d(za: np.ndarray, zb: np.ndarray) -> np.ndarray:
    """Row-wise two-sample KS statistics (continuous draws: no ties)."""
    na, nb = za.shape[1], zb.shape[1]
    z = np.concatenate([za, zb], axis=1)
    step = np.concatenate([np.full(na, 1.0 / na), np.full(nb, -1.0 / nb)])
    walk = np.cumsum(step[np.argsort(z, axis=1, kind="stable")], axis=1)
    return np.asarray(np.max(np.abs(walk), axis=1))


@functools.lru_cache(maxsize=256)
def detectable_shift(n_a: int, n_b: int, alpha: float) -> float:
    """The smallest location shift (in SDs of a normal distribution) that `compare_samples` finds with 80% power.

    By simulation with a fixed seed: `_REPLICATES` pairs of standard normal samples of sizes n_a and n_b, the
    second shifted by delta (the same draws for every delta, so the power is monotone in delta); the power is
    the share of pairs whose KS p-value (scipy's, as in the test itself) is below alpha; delta is bisected to
    0.01. inf where even a shift of 20 SD is found less than 80% of the time (tiny samples).
    """
    gen = np.random.default_rng(_SEED)
    za = gen.standard_normal((_REPLICATES, n_a))
    zb = gen.standard_normal((_REPLICATES, n_b))
    p_of: dict[int, float] = {}  # for fixed sizes, scipy's p depends on D alone: one call per lattice value

    def power(delta: float) -> float:
        shifted = zb + delta
        d = _ks_d(za, shifted)
        keys = np.rint(d * n_a * n_b).astype(np.int64)
        rejected = 0
        for k in np.unique(keys):
            if int(k) not in p_of:
                i = int(np.flatnonzero(keys == k)[0])
                p_of[int(k)] = _ks(za[i], shifted[i])[1]
            if p_of[int(k)] < alpha:
                rejected += int(np.count_nonzero(keys == k))
        return rejected / _REPLICATES

    lo, hi = 0.0, 20.0
    if power(hi) < POWER:
        return math.inf
    while hi - lo > 0.01:
        mid = (lo + hi) / 2
        if power(mid) >= POWER:
            hi = mid
        else:
            lo = mid
    return round(hi, 2)


def nudge(
    values: Mapping[str, np.ndarray], fields: Iterable[str], direction: float | np.ndarray = 1.0
) -> dict[str, np.ndarray]:
    """A copy of `values` with every float element of `fields` moved one ulp (in its own dtype), up where
    `direction` > 0 and down where < 0 (a scalar, or one sign per element); other fields copied unchanged."""
    out = {k: np.array(v, copy=True) for k, v in values.items()}
    for name in fields:
        v = out[name]
        if v.dtype.kind == "f":
            to = np.where(np.asarray(direction) > 0, np.inf, -np.inf).astype(v.dtype)
            out[name] = np.nextafter(v, to).astype(v.dtype).reshape(v.shape)
    return out


def float_fields(values: Mapping[str, np.ndarray]) -> list[str]:
    """The names of the float-valued entries of `values`."""
    return [k for k, v in values.items() if np.asarray(v).dtype.kind == "f"]


def far(got: np.ndarray, want: np.ndarray, rtol: float = RTOL, atol: float = ATOL) -> np.ndarray:
    """Where `got` is beyond tolerance of `want` (as `~np.isclose(got, want, rtol, atol, equal_nan=True)`:
    |got - want| > atol + rtol * |want|), for float arrays; a cheaper formula, as it runs at every step."""
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.abs(g - w) <= atol + rtol * np.abs(w)
    ok |= g == w  # equal infinities
    ok |= np.isnan(g) & np.isnan(w)
    return ~ok


def parted(
    a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], rtol: float = RTOL, atol: float = ATOL
) -> str | None:
    """The first field (in `a`'s order) where `b` differs from `a` beyond tolerance (floats by `far`, relative to
    `a`'s values; the rest exactly); None where they agree."""
    for k, x in a.items():
        xa, xb = np.asarray(x), np.asarray(b[k])
        if xa.shape != xb.shape:
            return k
        if xa.dtype.kind == "f" or xb.dtype.kind == "f":
            if far(xb, xa, rtol, atol).any():
                return k
        elif not np.array_equal(xa, xb):
            return k
    return None


# step(state, t): the state after step t (0-based) from `state`; the caller fixes the action and key of step t,
# so that every run takes the same ones.
StepFn = Callable[[Mapping[str, np.ndarray], int], Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class Horizon:
    """Where a run and its 1-ulp nudged twin parted."""

    step: int | None  # the first step (1-based: after that many steps) beyond tolerance; None: they never did
    compared: int  # steps both runs took (the episode may end first)
    field: str | None  # the first field beyond tolerance at `step`


def _done(state: Mapping[str, np.ndarray]) -> bool:
    return bool(np.any(state.get("terminated", False))) or bool(np.any(state.get("truncated", False)))


def divergence_horizon(
    step: StepFn,
    start: Mapping[str, np.ndarray],
    max_steps: int,
    fields: Iterable[str] | None = None,
    *,
    rtol: float = RTOL,
    atol: float = ATOL,
    done: Callable[[Mapping[str, np.ndarray]], bool] = _done,
    direction: float = 1.0,
    noise_seed: int | None = None,
    base: Sequence[Mapping[str, np.ndarray]] | None = None,
) -> Horizon:
    """The step at which a run from `start` and a run from `start` nudged one ulp part beyond tolerance.

    `fields`: the ones nudged (default: every float field of `start`), up (`direction` > 0) or down; all of
    `start`'s fields are compared, floats within rtol/atol, the rest exactly. With `noise_seed`, a noise twin:
    each element is nudged one ulp up or down at random (that seed), at the start and before every later step:
    the run under roundoff noise, as a second implementation that agrees to about an ulp per step. The runs stop
    after `max_steps` steps or when either is `done` (default: its `terminated` or `truncated`); a run that ends
    while its twin does not has parted there. `base`: the unnudged run's states if known (`base[t]` after t
    steps, `base[0]` = `start`), which saves running it again.
    """
    names = float_fields(start) if fields is None else list(fields)
    a: Mapping[str, np.ndarray] = {k: np.asarray(v) for k, v in start.items()}
    gen = np.random.default_rng(noise_seed) if noise_seed is not None else None
    b: Mapping[str, np.ndarray] = nudge(a, names, direction) if gen is None else _noise(gen, a, names)
    t = 0
    while t < max_steps and not (done(a) or done(b)):
        if gen is not None and t > 0:
            b = _noise(gen, b, names)
        if base is not None and t + 1 < len(base):
            a = base[t + 1]
        else:
            a = step(a, t)
        b = step(b, t)
        t += 1
        where = parted(a, b, rtol, atol)
        if where is not None:
            return Horizon(t, t, where)
    return Horizon(None, t, None)


def _noise(gen: np.random.Generator, values: Mapping[str, np.ndarray], names: Sequence[str]) -> dict[str, np.ndarray]:
    """`values` with each float element of `names` moved one ulp up or down at random."""
    out = dict(values)
    for n in names:
        v = np.asarray(values[n])
        if v.dtype.kind == "f":
            out[n] = nudge({n: v}, [n], gen.integers(0, 2, size=v.shape) * 2 - 1)[n]
    return out


def own_horizon(
    step: StepFn,
    start: Mapping[str, np.ndarray],
    max_steps: int,
    fields: Iterable[str] | None = None,
    *,
    noise_twins: int = 4,
    rtol: float = RTOL,
    atol: float = ATOL,
    done: Callable[[Mapping[str, np.ndarray]], bool] = _done,
    base: Sequence[Mapping[str, np.ndarray]] | None = None,
) -> Horizon:
    """A system's own divergence horizon along one episode: the earliest step at which any of its 1-ulp twins
    parts from it (`divergence_horizon` from `start` nudged up, nudged down, and `noise_twins` noise twins with
    seeds 0, 1, ...). A twin is run only as far as it could still lower the minimum. Being the earliest of
    several random runs, it is an optimistic horizon: a correct second implementation parts before it now and
    then (measured on acrobot, 1 episode in 100), so use `parting_rank_test` to decide over episodes."""
    names = float_fields(start) if fields is None else list(fields)
    twins: list[tuple[float, int | None]] = [(1.0, None), (-1.0, None)] + [(1.0, s) for s in range(noise_twins)]
    best = Horizon(None, 0, None)
    for direction, seed in twins:
        limit = max_steps if best.step is None else best.step - 1
        h = divergence_horizon(
            step, start, limit, names, rtol=rtol, atol=atol, done=done, direction=direction, noise_seed=seed, base=base
        )
        if h.step is not None:
            best = h
        elif best.step is None:
            best = Horizon(None, max(best.compared, h.compared), None)
    return best


def twin_horizons(
    step: StepFn,
    start: Mapping[str, np.ndarray],
    max_steps: int,
    fields: Iterable[str] | None = None,
    *,
    twins: int = 4,
    seed: int = 0,
    rtol: float = RTOL,
    atol: float = ATOL,
    done: Callable[[Mapping[str, np.ndarray]], bool] = _done,
    base: Sequence[Mapping[str, np.ndarray]] | None = None,
) -> list[Horizon]:
    """Where each of `twins` noise twins (`divergence_horizon` with noise seeds seed, seed + 1, ...) parts from
    the run from `start`, within `max_steps` steps."""
    names = float_fields(start) if fields is None else list(fields)
    return [
        divergence_horizon(
            step, start, max_steps, names, rtol=rtol, atol=atol, done=done, noise_seed=seed + j, base=base
        )
        for j in range(twins)
    ]


@dataclass(frozen=True)
class RankTest:
    """Does a second implementation part from a system sooner than the system parts from its own noise twins?

    Per episode, the rank of the implementation's parting step among its `twins` noise twins' is the number of
    twins that part at or before it (0: it parts first; `twins`: last; an episode where it never parts counts
    `twins`). If it behaved like one more noise twin, each rank would be uniform on 0..twins; a sum of ranks
    that is improbably small under that says it parts too soon (one-sided, exact p). Ties favour it."""

    episodes: int
    twins: int
    rank_sum: int
    first: int  # episodes where it parted before every twin
    p_value: float
    alpha: float
    passed: bool

    @property
    def min_episodes(self) -> int:
        """Episodes needed to reject at `alpha` when it parts first every time: (1/(twins+1))^n < alpha."""
        return math.ceil(math.log(self.alpha) / math.log(1.0 / (self.twins + 1)))

    def describe(self) -> str:
        """One line: what was ranked, the ranks, p and what the test can see."""
        mean = self.rank_sum / self.episodes if self.episodes else float("nan")
        return (
            f"rank of its parting step among {self.twins} noise twins over {self.episodes} episodes: mean "
            f"{mean:.2f} (as a noise twin: {self.twins / 2:g}), first in {self.first}, p={self.p_value:.3g} "
            f"(alpha {self.alpha:g}; one that parts first every time is caught from {self.min_episodes} episodes)"
        )


def parting_rank_test(ranks: Sequence[int], twins: int, alpha: float = 0.01) -> RankTest:
    """The exact one-sided test of `RankTest` on per-episode ranks (each in 0..twins)."""
    if twins < 1:
        raise ValueError("parting_rank_test: needs at least one twin")
    r = [int(x) for x in ranks]
    if any(not 0 <= x <= twins for x in r):
        raise ValueError(f"parting_rank_test: ranks must lie in 0..{twins}")
    total = sum(r)
    pmf = np.ones(1)
    for _ in r:  # the sum of len(r) independent uniforms on 0..twins
        pmf = np.convolve(pmf, np.full(twins + 1, 1.0 / (twins + 1)))
    p = float(min(1.0, pmf[: total + 1].sum()))
    return RankTest(len(r), twins, total, sum(1 for x in r if x == 0), p, alpha, p >= alpha)


# ---- equivalence and proportions (envc eval / transfer / versus) -------------------------------------------
@dataclass(frozen=True)
class Equivalence:
    """Two one-sided t-tests (TOST, Welch or paired) that mean(a) - mean(b) lies within (-margin, +margin).

    `p_value` is the larger of the two one-sided p-values: below `alpha`, equivalence is shown at level alpha (the
    (1 - 2 alpha) confidence interval of the difference lies inside the margin). `p_difference` is the ordinary
    two-sided Welch test of no difference. Verdict: "equivalent" (p_value < alpha); else "different" (the
    difference itself is significant, p_difference < alpha); else "not shown equivalent".
    """

    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    difference: float  # mean_a - mean_b
    margin: float
    alpha: float
    df: float  # Welch-Satterthwaite degrees of freedom (inf when both samples are constant)
    ci_low: float  # the (1 - 2 alpha) confidence interval of the difference
    ci_high: float
    p_lower: float  # H0: difference <= -margin
    p_upper: float  # H0: difference >= +margin
    p_difference: float

    @property
    def p_value(self) -> float:
        """The TOST p-value: the larger one-sided p."""
        return max(self.p_lower, self.p_upper)

    @property
    def verdict(self) -> str:
        """equivalent / different / not shown equivalent."""
        if self.p_value < self.alpha:
            return "equivalent"
        if self.p_difference < self.alpha:
            return "different"
        return "not shown equivalent"

    def describe(self) -> str:
        """One line: the difference, its interval, the margin, p and the verdict."""
        level = 1 - 2 * self.alpha
        return (
            f"difference {self.difference:+.4g}, {level:.0%} CI [{self.ci_low:+.4g}, {self.ci_high:+.4g}], "
            f"margin +/-{self.margin:.4g}, TOST p={self.p_value:.3g} (alpha {self.alpha:g}): {self.verdict}"
        )


def _sample(x: npt.ArrayLike, what: str) -> np.ndarray:
    v = np.asarray(x, np.float64).reshape(-1)
    if v.size < 2:
        raise ValueError(f"tost: sample {what} needs at least 2 values, got {v.size}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"tost: sample {what} holds a non-finite value")
    return v


def tost(a: npt.ArrayLike, b: npt.ArrayLike, margin: float, alpha: float = 0.05, paired: bool = False) -> Equivalence:
    """TOST of |mean(a) - mean(b)| < margin at level `alpha` (see `Equivalence`): Welch's t for independent
    samples, or with `paired` the one-sample t of the differences a[i] - b[i] (matched episodes: same seeds).

    No variance (two constant samples, or identical differences when paired) is decided exactly: the difference
    is then known, so its p-values are 0 or 1.
    """
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"tost: alpha must lie in (0, 0.5), got {alpha}")
    if not (margin > 0 and math.isfinite(margin)):
        raise ValueError(f"tost: margin must be a positive number, got {margin}")
    va, vb = _sample(a, "a"), _sample(b, "b")
    ma, mb = float(va.mean()), float(vb.mean())
    n_a, n_b = int(va.size), int(vb.size)
    if paired:
        if n_a != n_b:
            raise ValueError(f"tost: paired samples need equal sizes, got {n_a} and {n_b}")
        diff = va - vb
        d = float(diff.mean())
        se = float(diff.std(ddof=1)) / math.sqrt(n_a)
        df = float(n_a - 1)
    else:
        d = ma - mb
        qa, qb = va.var(ddof=1) / n_a, vb.var(ddof=1) / n_b
        se = math.sqrt(qa + qb)
        df = (qa + qb) ** 2 / (qa**2 / (n_a - 1) + qb**2 / (n_b - 1)) if se > 0 else math.inf
    if se == 0.0:
        lower, upper = float(d <= -margin), float(d >= margin)
        return Equivalence(n_a, n_b, ma, mb, d, margin, alpha, math.inf, d, d, lower, upper, float(d == 0.0))
    half = float(sps.t.ppf(1 - alpha, df)) * se
    return Equivalence(
        n_a=n_a,
        n_b=n_b,
        mean_a=ma,
        mean_b=mb,
        difference=d,
        margin=margin,
        alpha=alpha,
        df=float(df),
        ci_low=d - half,
        ci_high=d + half,
        p_lower=float(sps.t.sf((d + margin) / se, df)),
        p_upper=float(sps.t.cdf((d - margin) / se, df)),
        p_difference=float(2 * sps.t.sf(abs(d) / se, df)),
    )


def proportion_interval(k: int, n: int, confidence: float = 0.95, method: str = "wilson") -> tuple[float, float]:
    """A confidence interval of a binomial proportion k/n: "wilson" (score interval, no continuity correction) or
    "exact" (Clopper-Pearson), by scipy's `binomtest`."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"proportion_interval: need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    if method not in ("wilson", "exact"):
        raise ValueError(f"proportion_interval: method is wilson or exact, not {method!r}")
    ci = sps.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method=method)
    return float(ci.low), float(ci.high)
