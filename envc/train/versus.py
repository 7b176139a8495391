"""Two-player evaluation (`envc eval RUN --opponent random|CHECKPOINT`): a policy against uniform random play or
against another checkpoint, seats alternating game by game, win/draw/loss rates with Wilson 95% intervals.

Game i seats the policy as player `i % players` and the opponent in every other seat; whoever is to move acts
(`current_player`). A game is won when the policy's return exceeds every other player's, lost when some other
player's exceeds it, drawn otherwise. All games run at once, vmapped, on the JAX backend by default.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envc import ir
from envc.stats import proportion_interval
from envc.train.evaluate import MAX_STEPS, Actor, Acts, EvalError, load, per_episode, random_actor, run_episodes

RANDOM = "random"


@dataclass(frozen=True)
class Rate:
    """A share of games with its Wilson 95% interval."""

    count: int
    games: int
    low: float
    high: float

    @property
    def rate(self) -> float:
        """count / games."""
        return self.count / self.games

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"count": self.count, "rate": self.rate, "ci95": [self.low, self.high]}


def rate(count: int, games: int) -> Rate:
    """`count` of `games` with its Wilson 95% interval."""
    low, high = proportion_interval(count, games, 0.95, "wilson")
    return Rate(count, games, low, high)


@dataclass
class VersusResult:
    """Outcomes of `games` games of a policy against an opponent."""

    spec: str
    policy: str
    opponent: str
    backend: str
    games: int
    outcome: np.ndarray  # i8 [games]: +1 won, 0 drawn, -1 lost (from the policy's side)
    seat: np.ndarray  # i32 [games]: the policy's player index
    unfinished: int
    seconds: float

    def rates(self, which: np.ndarray | None = None) -> dict[str, Rate]:
        """Win / draw / loss rates over all games (or those selected by the boolean mask `which`)."""
        o = self.outcome if which is None else self.outcome[which]
        n = int(o.size)
        wins, draws, losses = int((o > 0).sum()), int((o == 0).sum()), int((o < 0).sum())
        return {"win": rate(wins, n), "draw": rate(draws, n), "loss": rate(losses, n)}

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        seats = sorted({int(s) for s in self.seat})
        return {
            "spec": self.spec,
            "policy": self.policy,
            "opponent": self.opponent,
            "backend": self.backend,
            "games": self.games,
            "unfinished": self.unfinished,
            "seconds": self.seconds,
            **{k: v.to_json() for k, v in self.rates().items()},
            "by_seat": {str(s): {k: v.to_json() for k, v in self.rates(self.seat == s).items()} for s in seats},
        }


def _actor(spec: ir.SpecIR, side: Acts | str, greedy: bool) -> Actor:
    return random_actor(spec) if isinstance(side, str) else per_episode(side, greedy)


def seated(spec: ir.SpecIR, policy: Acts | str, opponent: Acts | str, greedy: bool = True) -> Actor:
    """The actor of game i: `policy` moves for player i % players, `opponent` for every other player."""
    import jax.numpy as jnp

    mine, theirs = _actor(spec, policy, greedy), _actor(spec, opponent, greedy)
    players = spec.players

    def actor(keys: Any, obs: Any, mask: Any, player: Any, ids: Any) -> Any:
        a, b = mine(keys, obs, mask, player, ids), theirs(keys, obs, mask, player, ids)
        return jnp.where(player == ids % players, a, b)

    return actor


def outcomes(returns: np.ndarray, seat: np.ndarray) -> np.ndarray:
    """+1 / 0 / -1 per game: the seated player's return against the best of the others'."""
    rows = np.arange(returns.shape[0])
    mine = returns[rows, seat]
    others = returns.copy()
    others[rows, seat] = -np.inf
    best = others.max(axis=1)
    return np.asarray(np.sign(mine - best), np.int8)


def play(
    spec: ir.SpecIR,
    policy: Acts | str,
    opponent: Acts | str,
    games: int,
    seed: int = 0,
    greedy: bool = True,
    backend: str = "jax",
    max_steps: int = MAX_STEPS,
    names: tuple[str, str] = ("policy", "opponent"),
) -> VersusResult:
    """`games` games of `policy` against `opponent` (each a Policy or "random"), seats alternating."""
    if spec.players < 2:
        raise EvalError(f"spec '{spec.name}' has one player: play against an opponent needs two or more")
    if spec.box is not None:
        raise EvalError(f"spec '{spec.name}' has continuous actions: versus play needs discrete actions")
    res = run_episodes(spec, seated(spec, policy, opponent, greedy), backend, games, seed, greedy, max_steps)
    seat = (np.arange(games) % spec.players).astype(np.int32)
    return VersusResult(
        spec.name,
        names[0],
        names[1],
        res.backend,
        games,
        outcomes(res.returns, seat),
        seat,
        res.unfinished,
        res.seconds,
    )


def load_opponent(run: Any, run_dir: str, opponent: str) -> tuple[Acts | str, str]:
    """The opponent named on the command line: "random", a checkpoint of this run (name, step count or file), or
    another run folder trained on the same spec (its last checkpoint)."""
    if opponent == RANDOM:
        return RANDOM, RANDOM
    if Path(opponent).is_dir():
        other = load(opponent)
        if other.meta.get("spec_digest") != run.meta.get("spec_digest"):
            raise EvalError(f"opponent run '{opponent}' was trained on another spec than '{run.spec.name}'")
        return other.policy(), opponent
    return load(run_dir, opponent).policy(), f"checkpoint {opponent}"


def versus_cli(
    run: Any,
    run_dir: str,
    opponent: str,
    backend: str,
    games: int,
    greedy: bool,
    seed: int,
    max_steps: int,
    as_json: bool,
) -> int:
    """`envc eval RUN --opponent ...`: the table (or JSON); exit 0."""
    other, name = load_opponent(run, run_dir, opponent)
    res = play(run.spec, run.policy(), other, games, seed, greedy, backend, max_steps, (str(run_dir), name))
    if as_json:
        print(json.dumps(res.to_json(), indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{res.spec}: {run_dir} against {name} on {res.backend}, {games} games")
    for col in ("seat", "games", "win", "draw", "loss"):
        table.add_column(col, justify="right")

    def cells(r: dict[str, Rate]) -> list[str]:
        return [f"{v.rate:.1%} [{v.low:.1%}, {v.high:.1%}]" for v in (r["win"], r["draw"], r["loss"])]

    for s in sorted({int(x) for x in res.seat}):
        table.add_row(f"player {s}", str(int((res.seat == s).sum())), *cells(res.rates(res.seat == s)))
    table.add_row("all", str(games), *cells(res.rates()))
    console = Console(width=max(Console().width, 120))
    console.print(table)
    cut = f"; {res.unfinished} games cut at the step limit (scored by their returns so far)" if res.unfinished else ""
    console.print(
        f"rates with Wilson 95% intervals, {'greedy' if greedy else 'sampled'}, seed {seed}, {res.seconds:.2f} s{cut}"
    )
    return 0
