"""Multi-player specs in PettingZoo (AEC and Parallel, PettingZoo's own API and seed tests) and OpenSpiel
(`pyspiel.load_game`, OpenSpiel's random-simulation test, CFR), checked against envc's own episodes."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import cfr, exploitability
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test, state_test

import envc.gymnasium as eg
import envc.openspiel as eo
import envc.pettingzoo as ep

ROOT = Path(__file__).resolve().parent.parent
SPECS = {n: ROOT / "specs" / f"{n}.yaml" for n in ("tic_tac_toe", "connect_four", "kuhn_poker", "tcg")}
# PettingZoo warns about every env whose name is not on its own lists: dict observations ("not a NumPy array",
# "should be Box or Discrete", as for its own classic games) and an empty board ("all zeros").
KNOWN = (
    "Observation is not a NumPy array",
    "probably should be gymnasium.spaces",
    "Observation numpy array is all zeros",
)


# Rust for the two specs the other tests build anyway; the reference for the others (a Rust build is ~1 minute).
BACKEND = {"tic_tac_toe": "rust", "kuhn_poker": "rust", "connect_four": "reference", "tcg": "reference"}


@pytest.mark.parametrize("name", list(SPECS))
def test_pettingzoo_api_and_seed_tests_pass(name: str) -> None:
    path, backend = SPECS[name], BACKEND[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api_test(ep.env(path, backend), num_cycles=200)
        parallel_api_test(ep.parallel_env(path, backend), num_cycles=200)
        seed_test(lambda: ep.env(path, backend), num_cycles=50)
        parallel_seed_test(lambda: ep.parallel_env(path, backend), num_cycles=50)
        state_test(ep.env(path, backend), ep.parallel_env(path, backend), num_cycles=50)
    unknown = {str(w.message) for w in caught if not any(k in str(w.message) for k in KNOWN)}
    assert not unknown, unknown


def test_global_state_is_every_field_in_order() -> None:
    """`state()` (PettingZoo's global state, for centralised critics): the spec's fields flattened in order,
    hidden ones included, within `state_space` (a zone's count within its capacity, enums within members)."""
    env = ep.parallel_env(SPECS["kuhn_poker"], "reference")
    env.reset(seed=3)
    d = env.match.env.state_to_dict(env.match.state)
    want = np.concatenate([np.asarray(d[f.name], np.float64).reshape(-1) for f in env.match.spec.fields])
    assert np.array_equal(env.state(), want) and env.state_space.contains(env.state())
    names = [f.name for f in env.match.spec.fields]
    at = sum(int(np.prod(f.ty.shape)) for f in env.match.spec.fields[: names.index("card")])
    assert sorted(env.state()[at : at + 2]) != [0.0, 0.0]  # both players' hidden cards are in it
    count = sum(int(np.prod(f.ty.shape)) for f in env.match.spec.fields[: names.index("deck.count")])
    assert (env.state_space.low[count], env.state_space.high[count]) == (0.0, 3.0)


def _play_aec(env: Any, seed: int, gen: np.random.Generator) -> list[tuple[str, int, dict[str, float]]]:
    env.reset(seed=seed)
    log = []
    for agent in env.agent_iter(10_000):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        action = int(gen.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)
        log.append((agent, action, dict(env.rewards)))
    return log


@pytest.mark.parametrize("name", ["kuhn_poker", "tic_tac_toe"])
def test_aec_plays_the_episodes_of_envc_on_rust_and_reference(name: str) -> None:
    """Rust and reference backends behind the AEC env give the same games, and each equals a direct rollout of
    `envc.build` with the keys of `envc.gymnasium.episode_keys`."""
    path = SPECS[name]
    rust, ref = ep.env(path), ep.env(path, backend="reference")
    direct = eg.build(path, "reference")
    finals = []
    for seed in range(6):
        log = _play_aec(rust, seed, np.random.default_rng(seed))
        assert log == _play_aec(ref, seed, np.random.default_rng(seed))
        reset_key, stream = eg.episode_keys(seed, 0)
        state = direct.init(reset_key)
        for t, (agent, action, rewards) in enumerate(log, start=1):
            assert agent == f"player_{int(state.current_player)}"
            state = direct.step(state, action, eg.rng.fold_in(stream, t))
            assert rewards == {f"player_{i}": float(r) for i, r in enumerate(state.rewards)}
        assert bool(state.terminated)
        finals.append(tuple(log[-1][2].values()))
    assert all(sum(f) == 0 for f in finals)  # both games are zero-sum
    if name == "kuhn_poker":
        assert all(f != (0.0, 0.0) for f in finals)  # and a hand always has a winner
    assert len(set(finals)) > 1, "every game ended alike: the seeds did not matter"


def test_parallel_env_only_the_mover_acts_and_illegal_moves_end_the_game() -> None:
    env = ep.parallel_env(SPECS["tic_tac_toe"])
    obs, _ = env.reset(seed=4)
    movers = [a for a in env.agents if obs[a]["action_mask"].any()]
    assert len(movers) == 1
    mover = movers[0]
    other = next(a for a in env.agents if a != mover)
    obs, rewards, term, _, _ = env.step({mover: 4, other: 0})  # the other's 0 is ignored
    assert not any(term.values()) and obs[other]["action_mask"].any() and not obs[mover]["action_mask"].any()
    assert obs[other]["action_mask"].sum() == 8
    obs, rewards, term, _, _ = env.step({other: 4, mover: 0})  # cell 4 is taken: illegal
    assert all(term.values()) and env.agents == []
    assert rewards == {other: -1.0, mover: 1.0}


def test_openspiel_games_pass_random_simulation_and_match_envc() -> None:
    for name, utility, length in (("tic_tac_toe", (-1.0, 1.0), 9), ("kuhn_poker", (-2.0, 2.0), 3)):
        short = eo.register(SPECS[name], utility=utility, max_game_length=length)
        game = pyspiel.load_game(short)
        assert short == f"envc_{name}" and game.num_players() == 2
        pyspiel.random_sim_test(game, num_sims=20, serialize=True, verbose=False)
        # chance outcome i is episode 0 of seed i: the same game as PettingZoo's reset(seed=i)
        aec = ep.env(SPECS[name])
        for seed in (0, 5):
            state = game.new_initial_state()
            assert state.is_chance_node() and len(state.chance_outcomes()) == 64
            state.apply_action(seed)
            log = _play_aec(aec, seed, np.random.default_rng(seed))
            for agent, action, _ in log:
                assert state.current_player() == int(agent.split("_")[1])
                state.apply_action(action)
            assert state.is_terminal() and state.returns() == list(log[-1][2].values())
    bad = eo.register(SPECS["kuhn_poker"], name="envc_kuhn_poker_narrow", utility=(-1.0, 1.0), max_game_length=3)
    with pytest.raises(pyspiel.SpielError, match=r"(Min|Max)Utility"):  # the bounds are checked: ±2 is reachable
        pyspiel.random_sim_test(pyspiel.load_game(bad), num_sims=200, serialize=False, verbose=False)


def test_openspiel_cfr_lowers_exploitability_on_kuhn_poker() -> None:
    eo.register(SPECS["kuhn_poker"], name="envc_kuhn_poker_cfr", utility=(-2.0, 2.0), max_game_length=3)
    game = pyspiel.load_game("envc_kuhn_poker_cfr(num_seeds=12)")
    solver = cfr.CFRSolver(game)
    first = exploitability.nash_conv(game, solver.average_policy())
    for _ in range(60):
        solver.evaluate_and_update_policy()
    last = exploitability.nash_conv(game, solver.average_policy())
    assert last < 0.1 < first, (first, last)
