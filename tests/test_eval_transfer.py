"""envc eval / transfer / versus (issue #21 items 2 and 4) and the TOST and proportion intervals of envc.stats."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import stats as sps  # type: ignore[import-untyped]
from typer.testing import CliRunner

import envc
from envc.cli import app
from envc.stats import proportion_interval, tost
from envc.train.checkpoint import run_meta, save_checkpoint, write_run_file
from envc.train.config import TrainConfig
from envc.train.evaluate import EvalError, evaluate, load
from envc.train.networks import flat_obs, make_network
from envc.train.transfer import transfer
from envc.train.versus import load_opponent, outcomes, play

ROOT = Path(__file__).resolve().parent.parent


def envc_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envc.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def save_run(spec_file: str, out: Path, seeds: tuple[int, ...] = (1, 2)) -> Path:
    """A run folder with one checkpoint of freshly initialised network parameters per seed (through the
    trainer's checkpoint API), so eval does not depend on how well training went."""
    spec = envc.load(str(ROOT / "specs" / spec_file) if "/" not in spec_file else spec_file)
    config = TrainConfig(seed=0)
    net = make_network(spec, config.hidden, config.activation, config.log_std_init)
    state = envc.build(spec, "reference").init(np.zeros(2, np.uint32))
    obs = flat_obs(jax.tree.map(lambda x: np.asarray(x)[None], state.observation))
    write_run_file(out, spec, config, {})
    for i, seed in enumerate(seeds):
        params = net.init(jax.random.PRNGKey(seed), obs)
        save_checkpoint(out, params, {**run_meta(spec, config), "steps": 1000 * (i + 1)})
    return out


@pytest.fixture(scope="session")
def cartpole_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_run("cartpole.yaml", tmp_path_factory.mktemp("runs") / "cartpole")


@pytest.fixture(scope="session")
def ttt_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_run("tic_tac_toe.yaml", tmp_path_factory.mktemp("runs") / "ttt")


# ---- statistics -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("shift", "scale_b", "n_a", "n_b"), [(0.0, 1.0, 40, 60), (0.3, 2.0, 25, 90), (-1.2, 0.5, 200, 7)]
)
def test_tost_matches_scipy_welch(shift: float, scale_b: float, n_a: int, n_b: int) -> None:
    gen = np.random.default_rng(7)
    a, b = gen.normal(0, 1, n_a), gen.normal(shift, scale_b, n_b)
    margin = 0.5
    r = tost(a, b, margin, alpha=0.05)
    lower = sps.ttest_ind(a + margin, b, equal_var=False, alternative="greater")
    upper = sps.ttest_ind(a - margin, b, equal_var=False, alternative="less")
    both = sps.ttest_ind(a, b, equal_var=False)
    assert r.p_lower == pytest.approx(float(lower.pvalue), rel=1e-9)
    assert r.p_upper == pytest.approx(float(upper.pvalue), rel=1e-9)
    assert r.p_difference == pytest.approx(float(both.pvalue), rel=1e-9)
    assert r.df == pytest.approx(float(both.df), rel=1e-9)
    # equivalence at alpha <=> the (1 - 2 alpha) interval of the difference lies inside the margin
    assert (r.p_value < 0.05) == (-margin < r.ci_low and r.ci_high < margin)


def test_paired_tost_matches_scipy() -> None:
    gen = np.random.default_rng(11)
    a = gen.normal(0, 1, 50)
    b = a + gen.normal(0.1, 0.2, 50)
    r = tost(a, b, 0.25, paired=True)
    assert r.p_lower == pytest.approx(float(sps.ttest_rel(a + 0.25, b, alternative="greater").pvalue), rel=1e-9)
    assert r.p_upper == pytest.approx(float(sps.ttest_rel(a - 0.25, b, alternative="less").pvalue), rel=1e-9)
    assert r.p_difference == pytest.approx(float(sps.ttest_rel(a, b).pvalue), rel=1e-9)
    # matched episodes with identical returns: equivalent at any size, where Welch's test cannot tell from 5
    assert tost(a[:5], a[:5], 0.1, paired=True).verdict == "equivalent"
    assert tost(a[:5], a[:5], 0.1).verdict == "not shown equivalent"
    with pytest.raises(ValueError, match="equal sizes"):
        tost(a, b[:10], 0.1, paired=True)


def test_tost_known_cases() -> None:
    gen = np.random.default_rng(3)
    a = gen.normal(10.0, 1.0, 300)
    assert tost(a, a.copy(), 0.5).verdict == "equivalent"
    assert tost(a, a + 2.0, 0.5).verdict == "different"
    assert tost(a[:5], a[5:10] + 0.3, 0.2).verdict == "not shown equivalent"  # too few to decide either way
    # constant samples: the difference is known exactly
    assert tost([500.0] * 10, [500.0] * 10, 1.0).verdict == "equivalent"
    assert tost([500.0] * 10, [498.0] * 10, 1.0).verdict == "different"
    assert tost([500.0] * 10, [499.5] * 10, 1.0).verdict == "equivalent"
    with pytest.raises(ValueError, match="margin"):
        tost(a, a, 0.0)
    with pytest.raises(ValueError, match="alpha"):
        tost(a, a, 1.0, alpha=0.5)
    with pytest.raises(ValueError, match="at least 2"):
        tost([1.0], a, 1.0)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (517, 1000), (1, 2)])
def test_wilson_and_clopper_pearson_match_their_formulas(k: int, n: int) -> None:
    z = float(sps.norm.ppf(0.975))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low, high = proportion_interval(k, n)
    assert low == pytest.approx(max(0.0, centre - half), abs=1e-12)
    assert high == pytest.approx(min(1.0, centre + half), abs=1e-12)
    exact = proportion_interval(k, n, method="exact")
    assert exact[0] == pytest.approx(0.0 if k == 0 else float(sps.beta.ppf(0.025, k, n - k + 1)), abs=1e-9)
    assert exact[1] == pytest.approx(1.0 if k == n else float(sps.beta.ppf(0.975, k + 1, n - k)), abs=1e-9)
    with pytest.raises(ValueError):
        proportion_interval(3, 2)


# ---- eval and transfer on cartpole ----------------------------------------------------------------------------
@pytest.mark.parametrize("greedy", [True, False])
def test_eval_identical_episodes_on_every_backend(cartpole_run: Path, greedy: bool) -> None:
    run = load(str(cartpole_run))
    results = {b: evaluate(run, b, episodes=6, seed=5, greedy=greedy) for b in ("jax", "reference", "rust")}
    jax_res = results["jax"]
    assert jax_res.returns.shape == (6, 1) and jax_res.unfinished == 0
    assert np.all(jax_res.returns[:, 0] == jax_res.lengths)  # cartpole: +1 per step
    assert len(set(jax_res.returns[:, 0].tolist())) > 1  # the seeds give different episodes
    for b in ("reference", "rust"):
        assert np.array_equal(results[b].returns, jax_res.returns), b
        assert np.array_equal(results[b].lengths, jax_res.lengths), b
    other = evaluate(run, "jax", episodes=6, seed=6, greedy=greedy)
    assert not np.array_equal(other.returns, jax_res.returns)


def test_eval_cut_at_max_steps(cartpole_run: Path) -> None:
    run = load(str(cartpole_run))
    res = evaluate(run, "jax", episodes=4, seed=0, max_steps=5)
    ref = evaluate(run, "reference", episodes=4, seed=0, max_steps=5)
    assert res.unfinished == ref.unfinished == 4 and np.all(res.lengths == 5) and np.all(ref.lengths == 5)


def test_transfer_cartpole_equivalent_with_gymnasium(cartpole_run: Path) -> None:
    run = load(str(cartpole_run))
    report = transfer(run, episodes=100, seed=0)
    names = [r.backend for r in report.results]
    assert names == ["jax", "reference", "rust", "gymnasium:CartPole-v1"]
    verdicts = {t.backend: t.test.verdict for t in report.tests}
    assert verdicts == dict.fromkeys(names[1:], "equivalent") and report.passed
    same = {t.backend: t.identical for t in report.tests}
    assert same == {"reference": 100, "rust": 100, "gymnasium:CartPole-v1": None}
    scale = max(float(np.ptp(report.results[0].returns)), float(report.results[0].returns.mean()))
    assert report.margin == pytest.approx(0.1 * scale)
    # the same episodes with a margin far below the original's sampling noise cannot be shown equivalent
    tight = transfer(run, episodes=40, seed=0, margin=1e-3, backends=("jax",))
    assert [t.test.verdict for t in tight.tests] != ["equivalent"] and not tight.passed


def test_transfer_cli_json_and_exit_codes(cartpole_run: Path) -> None:
    r = envc_cli("transfer", str(cartpole_run), "--episodes", "20", "--backend", "jax", "--backend", "reference",
                 "--no-original", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    body = json.loads(r.stdout)
    assert body["passed"] and [b["backend"] for b in body["backends"]] == ["jax", "reference"]
    assert "10%" in body["margin_rule"]
    r = envc_cli("transfer", str(cartpole_run), "--episodes", "20", "--backend", "jax", "--margin", "0.001")
    assert r.returncode == 1, r.stderr
    assert "NOT all equivalent" in r.stdout


# ---- two players ------------------------------------------------------------------------------------------------
def test_versus_random_against_random_is_even() -> None:
    spec = envc.load(str(ROOT / "specs" / "tic_tac_toe.yaml"))
    res = play(spec, "random", "random", 400, seed=2)
    rates = res.rates()
    assert rates["win"].count + rates["draw"].count + rates["loss"].count == 400 and res.unfinished == 0
    # symmetric play: the two intervals overlap, and of the decisive games the policy's side wins half
    assert rates["win"].low <= rates["loss"].high and rates["loss"].low <= rates["win"].high
    low, high = proportion_interval(rates["win"].count, rates["win"].count + rates["loss"].count)
    assert low <= 0.5 <= high
    assert 0 < rates["draw"].count < 400
    assert sorted(set(res.seat.tolist())) == [0, 1] and int((res.seat == 0).sum()) == 200
    ref = play(spec, "random", "random", 30, seed=2, backend="reference")
    assert np.array_equal(ref.outcome, play(spec, "random", "random", 30, seed=2).outcome)


def test_versus_policy_against_checkpoint_and_random(ttt_run: Path) -> None:
    run = load(str(ttt_run))
    older, name = load_opponent(run, str(ttt_run), "step_000000001000")
    assert name == "checkpoint step_000000001000" and not isinstance(older, str)
    mirror = play(run.spec, run.policy(), run.policy(), 40, seed=1)
    # the same greedy policy in both seats plays exactly the self-play games of `envc eval`
    selfplay = evaluate(run, "jax", episodes=40, seed=1)
    assert np.array_equal(mirror.outcome, outcomes(selfplay.returns, mirror.seat))
    res = play(run.spec, run.policy(), older, 40, seed=1)
    assert res.games == 40
    with pytest.raises(EvalError, match="no checkpoint"):
        load_opponent(run, str(ttt_run), "step_9")


def test_eval_cli_opponent_json(ttt_run: Path) -> None:
    r = envc_cli("eval", str(ttt_run), "--opponent", "random", "--episodes", "50", "--json")
    assert r.returncode == 0, r.stderr
    body = json.loads(r.stdout)
    assert body["games"] == 50 and body["win"]["count"] + body["draw"]["count"] + body["loss"]["count"] == 50
    assert set(body["by_seat"]) == {"0", "1"}
    lo, hi = body["win"]["ci95"]
    assert lo <= body["win"]["rate"] <= hi


# ---- bad input ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("eval", "{missing}"), "no run directory"),
        (("eval", "{cp}", "--backend", "cuda"), "unknown backend 'cuda'"),
        (("eval", "{cp}", "--episodes", "0"), "--episodes must be at least 1"),
        (("eval", "{cp}", "--opponent", "random"), "has one player"),
        (("eval", "{cp}", "--checkpoint", "step_7"), "no checkpoint 'step_7'"),
        (("eval", "{cp}", "--against", "gymnasium:NoSuchEnv-v0"), "NoSuchEnv"),
        (("transfer", "{cp}", "--margin", "-1"), "--margin must be positive"),
        (("transfer", "{cp}", "--backend", "gpu"), "unknown backend 'gpu'"),
        (("transfer", "{missing}"), "no run directory"),
        (("eval", "{cp}", "--opponent", "random", "--against", "declared"), "cannot be combined with --against"),
    ],
)
def test_bad_input_one_line_exit_2(cartpole_run: Path, tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    filled = [a.format(cp=cartpole_run, missing=tmp_path / "nope") for a in args]
    r = CliRunner().invoke(app, filled)  # in-process: these fail before any env runs
    assert r.exit_code == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], r.stderr
    assert r.stdout == ""


def test_eval_refuses_a_run_of_a_changed_spec(tmp_path: Path) -> None:
    spec = tmp_path / "cartpole.yaml"
    spec.write_text((ROOT / "specs" / "cartpole.yaml").read_text())
    run = save_run(str(spec), tmp_path / "run", seeds=(1,))
    spec.write_text(spec.read_text().replace("force_mag: 10.0", "force_mag: 11.0"))
    r = envc_cli("eval", str(run), "--episodes", "2")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("error: ") and "another spec" in r.stderr and len(r.stderr.strip().splitlines()) == 1
