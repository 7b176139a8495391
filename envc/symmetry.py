"""The players' roles swapped in a state: what player 0 holds becomes player 1's and back.

A state a random game reaches for one player (player 0 replacing a stadium, poisoning the other's Active) is
rarely reached for the other in a suite of a few hundred states, and a backend that indexes by the wrong player
there passes every check. Swapping players 0 and 1 in reached states gives the other player's version of each.

Which storage is a player's: fields declared `per_player`, fields whose first dimension is the number of
players and is indexed by a player id somewhere, and scalar fields that hold a player id (`stadium_owner`,
`winner`): those that the spec compares with, assigns from, or indexes per-player storage with a player id
(`current_player`, the outputs' `p`, a local used as such), followed through locals, calls and returns. The
analysis only chooses where to look: the check that uses it compares backend and reference on whatever state
it makes, so a field taken for a player id that is not one only gives another state to compare on.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import numpy as np

from envc import ir

Slot = tuple[str, str]  # (scope, name): ("state", field), (callable or action, local), ("return", function)


class _Links:
    """Slots that hold the same kind of value, joined (union-find), and the slots known to hold a player id."""

    def __init__(self, spec: ir.SpecIR) -> None:
        self.spec = spec
        self.parent: dict[Slot, Slot] = {}
        self.players: set[Slot] = {("state", "current_player")}
        self.indexed: dict[str, set[Slot]] = {}  # a field with a players-long first dimension: its first indices
        self.scalars = {f.name for f in spec.fields if not f.ty.shape and not f.ty.dtype.is_float}
        self.params = {c.name: [p for p, _ in c.params] for c in spec.callables}

    def find(self, s: Slot) -> Slot:
        while self.parent.get(s, s) != s:
            s = self.parent[s]
        return s

    def join(self, slots: set[Slot]) -> None:
        roots = sorted({self.find(s) for s in slots})
        for r in roots[1:]:
            self.parent[r] = roots[0]

    def slots(self, e: Any, scope: str) -> set[Slot]:
        """The slots whose value `e` is, up to a cast, `players - 1 - x` or a choice between two of them."""
        if isinstance(e, ir.Cast):
            return self.slots(e.x, scope)
        if isinstance(e, ir.Read) and e.space == "state" and not e.index and e.name in self.scalars:
            return {("state", e.name)}
        if isinstance(e, ir.Local):
            return {(scope, e.name)}
        if isinstance(e, ir.CallFn):
            return {("return", e.fn)}
        if isinstance(e, ir.Binary) and e.op == "-" and isinstance(e.a, ir.Lit) and e.a.value == self.spec.players - 1:
            return self.slots(e.b, scope)
        if isinstance(e, ir.Select):
            return self.slots(e.a, scope) | self.slots(e.b, scope)
        return set()

    def storage(self, name: str, index: tuple[Any, ...], scope: str) -> None:
        """A read or write of state `name[index...]`: its first index is a player where the field is a player's."""
        if not index:
            return
        f = self.spec.field(name)
        first = self.slots(index[0], scope)
        if f.per_player:
            self.players |= first
        elif f.ty.shape and f.ty.shape[0] == self.spec.players:
            self.indexed.setdefault(name, set()).update(first)

    def scan(self, root: Any, scope: str) -> None:
        """Record what `root` (statements or expressions in `scope`) says about its slots."""
        for n in ir.nodes(root):
            if isinstance(n, ir.Binary) and n.op in ("==", "!="):
                self.join(self.slots(n.a, scope) | self.slots(n.b, scope))
            elif isinstance(n, ir.Assign):
                t = n.target
                mine: set[Slot] = (
                    {("state", t.name)} if t.space == "state" and not t.index and t.name in self.scalars
                    else {(scope, t.name)} if t.space == "local" and not t.index else set()
                )
                self.join(mine | self.slots(n.value, scope))
            elif isinstance(n, ir.LetS):
                self.join({(scope, n.name)} | self.slots(n.value, scope))
            elif isinstance(n, ir.ReturnS):
                self.join({("return", scope)} | self.slots(n.value, scope))
            elif isinstance(n, (ir.CallFn, ir.CallProc)):
                callee = n.fn if isinstance(n, ir.CallFn) else n.proc
                for p, a in zip(self.params.get(callee, []), n.args):
                    self.join({(callee, p)} | self.slots(a, scope))
            elif isinstance(n, ir.ZoneRef) or (isinstance(n, (ir.Read, ir.Target)) and n.space == "state"):
                self.storage(n.name, n.index, scope)


@cache
def _roles(spec: ir.SpecIR) -> tuple[tuple[str, ...], tuple[str, ...]]:
    links = _Links(spec)
    links.players |= {("reward", "p"), ("observation", "p")}
    scopes: list[tuple[Any, str]] = [(c.body, c.name) for c in spec.callables]
    scopes += [((a.legal, a.effect), a.name) for a in spec.actions]
    scopes += [(r, r.name) for r in spec.rules] + [(spec.reset, "reset"), (spec.box, "box")]
    scopes += [((spec.reward, spec.terminated, spec.truncated), "reward"), (spec.observation, "observation")]
    scopes += [(e, f"invariant {name}") for name, e in spec.invariants]
    for root, scope in scopes:
        links.scan(root, scope)
    players = {links.find(s) for s in links.players}
    ids = tuple(sorted(n for n in links.scalars if links.find(("state", n)) in players))
    per = {f.name for f in spec.fields if f.per_player}
    per |= {n for n, first in links.indexed.items() if {links.find(s) for s in first} & players}
    return tuple(sorted(per)), ids


def player_storage(spec: ir.SpecIR) -> tuple[str, ...]:
    """The fields indexed by player first (rows 0 and 1 belong to players 0 and 1)."""
    return _roles(spec)[0]


def player_ids(spec: ir.SpecIR) -> tuple[str, ...]:
    """The scalar fields that hold a player id (`current_player` included)."""
    return _roles(spec)[1]


def swap_players(spec: ir.SpecIR, d: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A copy of the state `d` with players 0 and 1 exchanged: their rows of per-player storage, and the ids 0
    and 1 wherever a field holds a player id (other values, such as -1 for nobody, stay)."""
    out = {k: np.array(v, copy=True) for k, v in d.items()}
    if spec.players < 2:
        return out
    for name in player_storage(spec):
        out[name][[0, 1]] = out[name][[1, 0]]
    for name in player_ids(spec):
        v = out[name]
        out[name] = np.where(v == 0, 1, np.where(v == 1, 0, v)).astype(v.dtype)
    return out


def tell_apart(spec: ir.SpecIR, d: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A copy of the state `d` where player 0's integer storage is one more wherever it equals player 1's (zones
    and enums kept as they are): a read of the wrong player's element gives another value. Reached states often
    hold the same count for both (no copies of a card discarded yet), where such a read goes unseen."""
    out = {k: np.array(v, copy=True) for k, v in d.items()}
    for name in player_storage(spec) if spec.players >= 2 else ():
        f = spec.field(name)
        if f.zone is not None or f.ty.enum is not None or not f.ty.dtype.is_int:
            continue
        v = out[name]
        high = np.iinfo(v.dtype).max
        out[name][0] = np.where((v[0] == v[1]) & (v[0] < high), v[0] + 1, v[0]).astype(v.dtype)
    return out
