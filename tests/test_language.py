"""Semantics of the rule language, run on the reference interpreter (small specs written inline)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc import rng

HEADER = """
name: t
players: {players}
state:
{state}
actions:
  go:
    effect: |
{effect}
observation:
  fields: {{o: i32}}
  body: "o = 0"
"""


def make(tmp_path: Path, state: str, effect: str, players: int = 1, extra: str = "", strict: bool = True) -> Any:
    text = HEADER.format(players=players, state=textwrap.indent(textwrap.dedent(state).strip(), "  "),
                         effect=textwrap.indent(textwrap.dedent(effect).strip(), "      "))
    path = tmp_path / "t.yaml"
    path.write_text(text + textwrap.dedent(extra))
    spec, diags = envc.lint(str(path))
    assert spec is not None, [d.format() for d in diags]
    return envc.build(spec, strict=strict)


def run(env: Any, key: tuple[int, int] = (0, 7)) -> dict[str, np.ndarray]:
    return env.state_to_dict(env.step(env.init((0, 1)), 0, key))


def test_integers_wrap_and_floor_divide(tmp_path: Path) -> None:
    env = make(tmp_path, """
        a: i8
        b: i32
        c: i32
        d: u32
        e: i16
    """, """
        a = 127
        a += 1
        b = -7 // 2
        c = -7 % 2
        d = 0
        d -= 1
        e = i16(70000)
    """)
    s = run(env)
    assert (s["a"], s["b"], s["c"], s["d"], s["e"]) == (-128, -4, 1, 2**32 - 1, 70000 - 65536)


def test_f32_arithmetic_rounds_every_operation(tmp_path: Path) -> None:
    env = make(tmp_path, "x: f32\ny: f32\nn: i32", """
        x = 0.1 + 0.2
        y = 1.0 / 3.0
        n = i32(-2.7)
    """)
    s = run(env)
    assert s["x"] == np.float32(np.float32(0.1) + np.float32(0.2))
    assert s["y"] == np.float32(1) / np.float32(3)
    assert s["n"] == -2


def test_zones_push_pop_insert_remove(tmp_path: Path) -> None:
    env = make(tmp_path, """
        z: {zone: i16, capacity: 5}
        got: i16
        n: i32
        at: i32
    """, """
        for i in range(4):
            push(z, i16(10 + i))
        let top_card = pop(z)
        got = top_card
        insert(z, 0, 99)
        remove_at(z, 2)
        n = count(z)
        at = index_of(z, 12)
    """)
    s = run(env)
    assert s["z"].tolist() == [99, 10, 12, 0, 0]
    assert (s["z.count"], s["got"], s["n"], s["at"]) == (3, 13, 3, 2)


def test_records_tables_and_match(tmp_path: Path) -> None:
    (tmp_path / "cards.csv").write_text("name,hp,kind,cost\nPebblit,40,rock,1;0\nEmberkit,60,fire,0;2\n")
    env = make(tmp_path, """
        bench: {type: Slot, shape: [2], per_player: true}
        total: i32
    """, """
        for i in range(2):
            bench[0, i].card = i16(i)
            bench[0, i].damage = cards[i].hp // 2
            match cards[i].kind:
                case fire:
                    bench.energy[0, i, 1] = cards[i].cost[1]
                case _:
                    pass
        total = sum(i32(bench[0, i].damage) for i in range(2))
    """, extra="""
    types:
      Kind: {enum: [rock, fire]}
      Slot: {record: {card: i16, damage: i16, energy: {type: i8, shape: [2]}}}
    tables:
      cards:
        file: cards.csv
        columns: {name: str, hp: i16, kind: Kind, cost: {type: i8, shape: [2]}}
    """)
    s = run(env)
    assert s["bench.damage"].tolist() == [[20, 30]]
    assert s["bench.energy"][0].tolist() == [[0, 0], [0, 2]]
    assert s["total"] == 50


def test_randomness_is_keyed_by_site_and_iteration(tmp_path: Path) -> None:
    env = make(tmp_path, """
        a: f32
        b: i32
        r: {type: i32, shape: [3]}
        z: {zone: i8, capacity: 6}
    """, """
        a = uniform(-1.0, 1.0)
        b = randint(0, 100)
        for i in range(3):
            r[i] = randint(0, 1000)
        for i in range(6):
            push(z, i8(i))
        shuffle(z)
    """)
    key = (3, 9)
    s = run(env, key)
    # site ids: uniform=1, randint=2, loop randint=3, for loop=4, push loop=5, shuffle=6
    assert s["a"] == rng.uniform_scalar(rng.fold_in(key, 1), -1.0, 1.0)
    assert s["b"] == rng.randint_scalar(rng.fold_in(key, 2), 0, 100)
    loop = rng.fold_in(key, 4)
    assert s["r"].tolist() == [rng.randint_scalar(rng.fold_in(rng.fold_in(loop, i), 3), 0, 1000) for i in range(3)]
    assert sorted(s["z"].tolist()) == list(range(6))
    assert s["z"].tolist() == rng.shuffle_order(rng.fold_in(key, 6), 6, 6)
    assert run(env, (3, 10))["r"].tolist() != s["r"].tolist()


def test_functions_procedures_and_choice(tmp_path: Path) -> None:
    env = make(tmp_path, """
        v: {type: i32, shape: [5], init: [3, 0, 7, 0, 1]}
        best: i32
        pick: i32
        m: i32
    """, """
        best = argmax(v)
        pick = choice(v[i] == 0 for i in range(5))
        bump(2)
        m = twice(v[2])
    """, extra="""
    functions:
      twice: {params: {x: i32}, returns: i32, body: "x * 2"}
    procedures:
      bump:
        params: {i: i32}
        body: |
          v[i] += 1
    """)
    s = run(env)
    assert (s["best"], s["m"]) == (2, 16)
    assert s["pick"] in (1, 3)


def test_runtime_spec_bug_is_located(tmp_path: Path) -> None:
    env = make(tmp_path, "a: {type: i32, shape: [3]}\nk: i32", """
        k = 5
        a[k - 2] = 1
    """)
    with pytest.raises(envc.SpecRuntimeError) as e:
        run(env)
    assert "t.yaml:11:7" in str(e.value) and "out of range" in str(e.value)


def test_fallbacks_when_not_strict(tmp_path: Path) -> None:
    env = make(tmp_path, "a: {type: i32, shape: [3], init: [1, 2, 3]}\nk: i32\nq: i32\nz: {zone: i8, capacity: 1}",
               """
        k = 3
        q = a[k]
        q += 10 // (k - 3)
        let c = pop(z)
        q += i32(c)
    """, strict=False)
    s = run(env)
    assert s["q"] == 3  # read clamps to a[2]; x // 0 == 0; empty pop yields 0


def test_illegal_action_ends_the_game_pgx_style(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(textwrap.dedent("""
        name: g
        players: 2
        state: {n: i32}
        actions:
          a: {legal: "n == 0", effect: "n += 1"}
          b: {legal: "false"}
        observation: {fields: {o: i32}, body: "o = n"}
    """))
    env = envc.build(str(path))
    s = env.init((0, 0))
    assert s.legal_action_mask.tolist() == [True, False]
    s2 = env.step(s, 1, (0, 1))
    assert s2.terminated and s2.rewards.tolist() == [-1.0, 1.0]
    assert s2.legal_action_mask.all()
    s3 = env.step(s2, 0, (0, 2))
    assert s3.rewards.tolist() == [0.0, 0.0] and s3.step_count == s2.step_count


def test_state_dict_round_trip(tmp_path: Path) -> None:
    env = make(tmp_path, "a: {type: i8, shape: [2, 2]}\nz: {zone: i16, capacity: 3, per_player: true}", """
        a[1, 0] = -3
        push(z[1], 4)
    """, players=2)
    s = env.step(env.init((0, 1)), 0, (0, 2))
    d = env.state_to_dict(s)
    back = env.state_to_dict(env.state_from_dict(d))
    assert d.keys() == back.keys()
    for k in d:
        np.testing.assert_array_equal(d[k], back[k])
    assert d["z.count"].tolist() == [0, 1] and d["a"].dtype == np.int8
