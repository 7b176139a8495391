"""The Rust backend: L1-L3 against the reference for every shipped spec, exact f32 arithmetic, the gymnasium
interfaces, injection-proof names, `envc compile --backend rust|all` and `pip install` of its output."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc import ir, rng
from envc.compile import CompileError, write_package
from envc.interpret import ReferenceEnv
from envc.lower_rust import render
from envc.lower_rust.build import RustEnv, target_dir
from envc.verify import verify

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted(
    [
        *(ROOT / "specs").glob("*.yaml"),
        *(ROOT / "docs" / "examples").glob("*.yaml"),
        ROOT / "tests/specs/tcg_mechanics.yaml",
        ROOT / "tests/specs/thruster.yaml",
    ]
)


_BUILT: dict[str, RustEnv] = {}


def rust(path: Path, cache: Path, params: dict[str, Any] | None = None) -> RustEnv:
    key = f"{path}:{params}"
    if key not in _BUILT:
        _BUILT[key] = RustEnv(envc.load(str(path)), params=params, cache=cache)
    return _BUILT[key]


def cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envc.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={**os.environ, "ENVC_CACHE": str(cache)},
    )


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_verify_l1_l2_l3(path: Path, rust_cache: Path) -> None:
    env = rust(path, rust_cache)
    # 20 where an episode is long or a reference step slow (500-step acrobot episodes: RK4 in emulated f32)
    episodes = 20 if path.stem in ("tcg_mechanics", "acrobot", "acrobot_f64") else 40
    checks = verify(env.spec, env, episodes=episodes, states=80, seed=11)
    failed = [f"{c.level} {c.name}: {c.failures}" for c in checks if not c.passed]
    assert not failed, "\n".join(failed)
    box_only = env.spec.box is not None  # a continuous action is never illegal: no legal-action cases
    assert {c.level for c in checks} == {"L1", "L2", "L3"}
    assert all(c.cases > 0 or "leak" in c.name or (box_only and "legal action" in c.name) for c in checks)


ARITH = """
name: arith
doc: f32 and integer arithmetic of every kind, with draws in a loop.
version: "1.0"
players: 1
params:
  scale: {type: f32, default: 0.1}
state:
  a: {type: f32, init: 0.3}
  b: {type: f32, shape: [3], init: [1.5, -2.25, 0.1]}
  i: {type: i8, init: -100}
  u: {type: u32, init: 7}
  n: {type: i16}
actions:
  go:
    params: {k: 4}
    effect: |
      for j in range(3):
        b[j] = b[j] * scale + uniform(-1.0, 1.0) / (a + 3.0)
      a = a - b[k % 3] * 0.7 + f32(k) // 0.3 - (a % 1.3)
      i = i * 3 + i8(k) - 100
      u = u * 2654435761 + u32(k)
      n = n // i16(k - 2) + n % 3 + i16(i32(a * 10.0))
      if abs(a) > 1000.0:
        a = 0.0
reward: "a + b[0] * b[1] - b[2] / 3.0"
terminated: "false"
truncated: "step_count >= 40"
observation:
  fields:
    o: {type: f32, shape: [4]}
  body: |
    o[0] = a
    o[1] = b[0] - b[1]
    o[2] = f32(i) * 0.5
    o[3] = f32(n)
"""


def rounded(spec: ir.SpecIR) -> ir.SpecIR:
    """The spec with every f32 constant rounded to f32 (the reference keeps Python floats; see requests-rust.md)."""

    def fix(node: Any) -> Any:
        if isinstance(node, tuple):
            return tuple(fix(x) for x in node)
        if isinstance(node, ir.Lit) and node.ty.dtype is ir.DType.F32:
            return node.model_copy(update={"value": float(np.float32(node.value))})
        if isinstance(node, (ir.ParamInfo,)) and node.ty.dtype is ir.DType.F32:
            return node.model_copy(update={"default": float(np.float32(node.default))})
        if isinstance(node, (ir.FieldInfo, ir.ConstInfo)) and node.ty.dtype is ir.DType.F32:
            key = "init" if isinstance(node, ir.FieldInfo) else "values"
            return node.model_copy(update={key: tuple(float(np.float32(v)) for v in getattr(node, key))})
        if isinstance(node, ir._Node):
            return node.model_copy(update={k: fix(getattr(node, k)) for k in type(node).model_fields})
        return node

    return fix(spec)  # type: ignore[no-any-return]


def test_float_and_integer_arithmetic_is_bit_exact(tmp_path: Path, rust_cache: Path) -> None:
    path = tmp_path / "arith.yaml"
    path.write_text(ARITH)
    spec = rounded(envc.load(str(path)))
    ref, env = ReferenceEnv(spec, strict=False), RustEnv(spec, cache=rust_cache)  # `n // 0` takes the fallback
    key = rng.key_from_seed(5)
    gen = np.random.default_rng(5)
    compared = 0
    for _ in range(10):
        key, k = rng.split(key)
        r, b = ref.init(k), env.init(k)
        for _t in range(40):
            want, got = ref.state_to_dict(r), env.state_to_dict(b)
            for name, w in want.items():
                w, g = np.asarray(w), np.asarray(got[name])
                assert w.dtype == g.dtype and w.shape == g.shape, name
                assert w.tobytes() == g.tobytes() or (w.dtype.kind == "f" and np.array_equal(w, g, equal_nan=True)), (
                    f"{name}: reference {w!r} rust {g!r}"
                )
                compared += 1
            if r.terminated or r.truncated:
                break
            key, k = rng.split(key)
            a = int(gen.integers(4))
            r, b = ref.step(r, a, k), env.step(b, a, k)
    assert compared > 1000


def test_transcendentals_stay_within_the_documented_tolerance(rust_cache: Path) -> None:
    spec = rounded(envc.load(str(ROOT / "specs" / "cartpole.yaml")))
    ref, env = ReferenceEnv(spec), RustEnv(spec, cache=rust_cache)
    worst = 0
    key = rng.key_from_seed(1)
    for _ in range(20):
        key, k = rng.split(key)
        r, b = ref.init(k), env.init(k)
        for t in range(60):
            w = np.asarray(ref.state_to_dict(r)["observation"])
            g = np.asarray(env.state_to_dict(b)["observation"])
            ulps = np.abs(w.view(np.int32).astype(np.int64) - g.view(np.int32).astype(np.int64))
            worst = max(worst, int(ulps.max()))
            if r.terminated:
                break
            key, k = rng.split(key)
            r, b = ref.step(r, t % 2, k), env.step(b, t % 2, k)
    assert worst <= 64, f"{worst} ULPs"


BOX = """
name: pend
doc: A continuous action, with a draw in its effect.
version: "1.0"
players: 1
state:
  th: f32
  w: f32
continuous_action:
  box: {shape: [2], low: -2.0, high: 2.0}
  effect: |
    let u = clip(action[0], -2.0, 2.0) + 0.1 * action[1]
    w = w + (sin(th) * 9.8 + u) * 0.05 + uniform(-0.01, 0.01)
    th = th + w * 0.05
reset: |
  th = uniform(-3.0, 3.0)
  w = uniform(-1.0, 1.0)
reward: "-(th * th + 0.1 * w * w)"
terminated: "false"
truncated: "step_count >= 50"
observation:
  fields:
    o: {type: f32, shape: [3]}
  body: |
    o[0] = cos(th)
    o[1] = sin(th)
    o[2] = w
"""


def test_continuous_actions(tmp_path: Path, rust_cache: Path) -> None:
    from gymnasium.utils.env_checker import check_env

    path = tmp_path / "pend.yaml"
    path.write_text(BOX)
    spec = rounded(envc.load(str(path)))  # chaotic: unrounded reference constants drift past the tolerance
    env = RustEnv(spec, cache=rust_cache)
    checks = verify(spec, env, episodes=20, states=40)
    assert all(c.passed for c in checks), [c.failures for c in checks if not c.passed]
    envs = env.vector_env(4, threads=2)
    obs, info = envs.reset(seed=0)
    obs, reward, term, trunc, info = envs.step(envs.action_space.sample())
    assert obs.shape == (4, 3) and reward.shape == (4,) and info["legal_action_mask"].shape == (4, 0)
    assert not (term | trunc).any()
    with pytest.raises(ValueError, match=r"an action is 2 number\(s\) for the box \[2\], got 3"):
        env.step(env.init((0, 1)), np.zeros(3, np.float32), (0, 2))
    with pytest.raises(ValueError, match="2 action values"):  # the crate's own check, under envc.inputs'
        env.env.step(env.init((0, 1)), np.zeros(3, np.float32), (0, 2))
    check_env(env.gym_env(), skip_render_check=True)
    assert env.rollout(8, 60, seed=3)["truncated"] >= 8


KITCHEN = """
name: kitchen
doc: Every zone statement, reduction and builtin the shipped specs leave out.
version: "1.0"
players: 2
types:
  Suit: {enum: [clubs, diamonds, hearts, spades]}
constants:
  W: {type: i16, shape: [5], value: [3, -1, 4, 1, -5]}
state:
  z: {zone: i16, capacity: 6, per_player: true}
  pile: {zone: Suit, capacity: 4}
  v: {type: f32, shape: [4], init: [0.5, -1.25, 2.0, 0.0]}
  u: {type: u32, init: 4000000000}
  s: {type: i16}
  suit: {type: Suit, init: hearts}
  picks: {type: i32, shape: [3]}
  flags: {type: bool, shape: [3]}
actions:
  act:
    params: {k: 5}
    legal: "k < 4 or z[current_player].count > 0"
    effect: |
      let me = current_player
      if z[me].count < capacity(z[me]):
        insert(z[me], min(k, z[me].count), i16(k) * W[k])
      else:
        let dropped = remove_at(z[me], k)
        s = s - dropped
      if k == 3:
        clear(z[1 - me])
      if contains(z[me], 4):
        s = s + i16(index_of(z[me], 4)) + top(z[me])
      push(pile, Suit(k % 4))
      if pile.count == 4:
        let got = remove_at(pile, 1)
        suit = got
        clear(pile)
      match suit:
        case clubs | spades:
          v[0] = v[0] + floor(v[1] * 1.5) - ceil(v[2] / 3.0)
        case hearts:
          v[1] = clip(v[1] * -1.1, -3.0, 3.0) + sqrt(abs(v[0])) - tanh(v[3])
        case _:
          v[2] = exp(-abs(v[2])) + log(1.0 + abs(v[1])) + atan2(v[0], 1.5) + tan(0.25)
      v[3] = f32(max(sum(z[me]), i32(min(W))) + argmax(W) - argmin(W))
      if any(z[me, i] > 0 for i in range(6)):
        picks[0] = choice(z[me, i] > 0 for i in range(6))
      picks[1] = choice(W[i] != 9 for i in range(5))
      picks[2] = i32(count(z[me, i] != 0 for i in range(6))) + argmin(W[i] for i in range(1, 5) if W[i] > -2)
      u = u * 3 + u32(k) - u // 7 + u % 5
      flags[k % 3] = not flags[k % 3]
      s = s * i16(300) + i16(i32(v[0] * 100.0))
      current_player = 1 - current_player
reset: |
  push(z[0], i16(randint(0, 9)))
  push(z[1], 4)
reward: "if p == current_player then v[0] * 0.5 else f32(s) / 1000.0"
terminated: "abs(s) > 30000"
truncated: "step_count >= 25"
observation:
  fields:
    zs: {type: i16, shape: [6]}
    fl: {type: f32, shape: [4]}
    misc: {type: i32, shape: [5]}
  body: |
    for i in range(6):
      zs[i] = z[p, i]
    fl = v
    misc[0] = i32(u % 1000)
    misc[1] = i32(suit)
    misc[2] = max(picks) + min(picks[1], picks[2])
    misc[3] = count(fl[i] > 0.0 for i in range(4))
    misc[4] = (i32(any(zs[i] == 4 for i in range(6))) + i32(all(picks[i] >= 0 for i in range(3)))
      + 2 * i32(any(zs[i] > 3 for i in range(6) if i % 2 == 1)) + 4 * i32(all(zs[i] != 0 for i in range(6) if i < 3))
      + 8 * count(zs[i] < 2 for i in range(6) if i != 4) + 100 * count(picks[i] > 0 for i in range(3) if picks[i] < 4)
      + 1000 * (i32(any(flags)) + 2 * i32(all(flags)) + 4 * count(flags)))
"""


def test_zone_statements_reductions_and_builtins_the_shipped_specs_leave_out(tmp_path: Path, rust_cache: Path) -> None:
    path = tmp_path / "kitchen.yaml"
    path.write_text(KITCHEN)
    spec = rounded(envc.load(str(path)))
    checks = verify(spec, RustEnv(spec, cache=rust_cache), episodes=40, states=100, seed=3)
    assert all(c.passed for c in checks), [c.failures for c in checks if not c.passed]


def test_cheap_reductions_fold_without_early_exits() -> None:
    """any/all/count over a cheap body become branch-free folds; a costly body keeps its early exit."""
    spec = envc.load(str(ROOT / "specs" / "connect_four.yaml"))
    src = render(spec, "", "c4")["src/env.rs"]
    four_from = src[src.index("fn four_from") : src.index("fn connects_four")]
    assert ".fold(true," in four_from and ".all(" not in four_from
    connects = src[src.index("fn connects_four") : src.index("fn reset")]
    assert ".any(|row|" in connects  # 6 rows x 4 windows x four_from: over the budget, exits early


def test_runtime_params_override_like_the_reference(rust_cache: Path) -> None:
    path = ROOT / "specs" / "cartpole.yaml"
    env = rust(path, rust_cache, {"gravity": 20.0, "max_steps": 7})
    ref = ReferenceEnv(env.spec, params={"gravity": 20.0, "max_steps": 7})
    k = (0, 9)
    r, b = ref.init(k), env.init(k)
    for _ in range(8):
        r, b = ref.step(r, 1, k), env.step(b, 1, k)
    assert bool(b.truncated) and b.step_count == 7
    assert np.allclose(ref.state_to_dict(r)["observation"], env.state_to_dict(b)["observation"], rtol=1e-5)
    with pytest.raises(KeyError, match="unknown runtime param"):
        rust(path, rust_cache, {"gravityy": 1.0})
    with pytest.raises(ValueError, match=r"param 'gravity' \(f32\): expected a number, got 'heavy'"):
        rust(path, rust_cache, {"gravity": "heavy"})
    assert rust(path, rust_cache, {"max_steps": 2**32 + 7}).params["max_steps"] == 7  # ints wrap (spec-language 4.2)
    # with_params (what verify's param sweep uses) is the same as building with those params
    again = rust(path, rust_cache).with_params({"gravity": 20.0, "max_steps": 7})
    c = again.init(k)
    for _ in range(8):
        c = again.step(c, 1, k)
    assert np.array_equal(env.state_to_dict(b)["observation"], again.state_to_dict(c)["observation"])
    assert bool(c.truncated) and c.step_count == 7


def test_vector_env_equals_gymnasium_sync_vector_env(rust_cache: Path) -> None:
    """Our VectorEnv against gymnasium's own SyncVectorEnv over our gym Env: same seeds, same episodes."""
    import gymnasium as gym
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    for name in ("corridor", "connect_four"):
        path = ROOT / ("docs/examples" if name == "corridor" else "specs") / f"{name}.yaml"
        env = rust(path, rust_cache)
        ours = env.vector_env(5, threads=2)
        theirs = SyncVectorEnv([env.gym_env for _ in range(5)], autoreset_mode=AutoresetMode.NEXT_STEP)
        assert ours.single_observation_space == theirs.single_observation_space
        o1, i1 = ours.reset(seed=42)
        o2, i2 = theirs.reset(seed=42)
        np.testing.assert_array_equal(o1, o2)
        gen = np.random.default_rng(0)
        done = 0
        for _ in range(120):
            a = np.array([gen.choice(np.flatnonzero(m)) for m in i1["legal_action_mask"]])
            o1, r1, t1, u1, i1 = ours.step(a)
            o2, r2, t2, u2, i2 = theirs.step(a)
            for x, y in ((o1, o2), (r1, r2), (t1, t2), (u1, u2), (i1["legal_action_mask"], i2["legal_action_mask"])):
                np.testing.assert_array_equal(x, y)
            done += int(np.sum(t1 | u1))
        assert done > 3
        assert isinstance(ours, gym.vector.VectorEnv) and ours.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP


def lane_variant(tmp_path: Path, name: str, variant: str) -> Path:
    """A shipped spec with a lane kernel as it is ("packed": cartpole and thruster qualify), with an array field
    the kernel never touches ("kernel": the kernel only, states unpacked), or with a rule that never fires but could
    draw ("scalar": no kernel, one env at a time)."""
    path = ROOT / name
    if variant == "packed":
        return path
    text = path.read_text()
    if variant == "kernel":
        text = text.replace("\nstate:\n", "\nstate:\n  trail: {type: f32, shape: [2]}\n", 1)
    elif variant == "parts":  # still packed, with a second observation part (a scalar)
        part, line = "    obs: {type: f32, shape: [5]}\n", "    obs[4] = float(fuel) / 60.0\n"
        text = text.replace(part, part + "    left: {type: i32}\n", 1).replace(line, line + "    left = fuel\n", 1)
    else:
        f = {"cartpole.yaml": "x", "thruster.yaml": "pos"}[path.name]
        rule = f'  - {{name: never, when: "{f} > 99.0", body: "{f} = uniform(0.0, 1.0)"}}\n'
        text = (
            text.replace("\nrules:\n", "\nrules:\n" + rule, 1)
            if "\nrules:\n" in text
            else text.replace("\nreward:", "\nrules:\n" + rule + "\nreward:", 1)
        )
    out = tmp_path / f"{variant}_{path.name}"
    out.write_text(text)
    return out


def same_obs(a: Any, b: Any) -> None:
    """Equal observations: arrays, or dicts of arrays with the same keys."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    else:
        np.testing.assert_array_equal(a, b)


def lane_mode(spec: ir.SpecIR) -> str:
    """How the Rust backend steps `spec`'s discrete actions: "packed", "kernel" or "scalar"."""
    src = render(spec, "", "lanes_probe")["src/env.rs"]
    if "const PACKED: bool = true;" in src:
        return "packed"
    return "kernel" if "const LANE_KERNEL: bool = true;" in src else "scalar"


@pytest.mark.parametrize(
    ("name", "variant"),
    [
        *((n, v) for n in ("specs/cartpole.yaml", "tests/specs/thruster.yaml") for v in ("packed", "kernel")),
        ("tests/specs/thruster.yaml", "parts"),
    ],
)
def test_lane_kernel_steps_exactly_like_one_state_at_a_time(
    name: str, variant: str, tmp_path: Path, rust_cache: Path
) -> None:
    """A spec with a lane kernel, its states packed in lanes or not: its VectorEnv (chunks of LANES envs in
    lanes, a scalar tail per thread) against gymnasium's SyncVectorEnv over the one-state Env, bit for bit, with
    restarts, illegal and out-of-range ids falling inside the chunks."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    env = rust(lane_variant(tmp_path, name, variant), rust_cache, {"max_steps": 15})  # truncations too
    assert lane_mode(env.spec) == ("packed" if variant == "parts" else variant)
    n = 77  # two threads: parts of 38 and 39 envs (32 and 45 when packed), so chunks and a tail in each
    ours = env.vector_env(n, threads=2)
    assert ours.threads == 2
    theirs = SyncVectorEnv([env.gym_env for _ in range(n)], autoreset_mode=AutoresetMode.NEXT_STEP)
    o1, i1 = ours.reset(seed=7)
    o2, i2 = theirs.reset(seed=7)
    same_obs(o1, o2)
    gen = np.random.default_rng(3)
    ends = illegal = truncs = 0
    for _ in range(150):
        a = (
            gen.integers(-1, env.spec.num_actions + 1, size=n)
            if gen.random() < 0.2
            else gen.integers(0, env.spec.num_actions, size=n)
        )
        illegal += int(
            sum(not (0 <= x < env.spec.num_actions and i1["legal_action_mask"][i][x]) for i, x in enumerate(a))
        )
        o1, r1, t1, u1, i1 = ours.step(a)
        o2, r2, t2, u2, i2 = theirs.step(a)
        same_obs(o1, o2)
        for x, y in ((r1, r2), (t1, t2), (u1, u2), (i1["legal_action_mask"], i2["legal_action_mask"])):
            np.testing.assert_array_equal(x, y)
        ends += int(np.sum(t1 | u1))
        truncs += int(np.sum(u1))
    assert ends > 50 and illegal > 50 and truncs > 20
    for i in (0, 37, 76):  # a packed env's state comes out of its lane whole
        mine, gyms = env.state_to_dict(ours._batch.state(i)), env.state_to_dict(theirs.envs[i]._state)
        assert all(np.array_equal(mine[f.name], gyms[f.name]) for f in env.spec.fields)


@pytest.mark.parametrize("name", ["specs/cartpole.yaml", "tests/specs/thruster.yaml"])
def test_lane_rollout_equals_the_scalar_rollout(name: str, tmp_path: Path, rust_cache: Path) -> None:
    """The all-Rust rollout steps chunks of LANES envs in lanes, packed or not: its totals equal those of a twin
    that gets no kernel and so steps one env at a time."""
    runs = {v: rust(lane_variant(tmp_path, name, v), rust_cache) for v in ("packed", "kernel", "scalar")}
    assert {v: lane_mode(e.spec) for v, e in runs.items()} == {v: v for v in runs}
    for threads in (1, 2):
        got = {v: e.rollout(75, 120, seed=5, threads=threads) for v, e in runs.items()}  # parts of 37 and 38 envs
        assert got["packed"] == got["kernel"] == got["scalar"]
        assert got["packed"]["steps"] == 75 * 120 and got["packed"]["episodes"] > 50


def test_rollout_totals_do_not_depend_on_the_thread_count(rust_cache: Path) -> None:
    """Each env draws its random actions from its own generator, so 1, 2 and 3 threads play the same episodes
    (with and without a lane kernel)."""
    for name in ("specs/cartpole.yaml", "specs/connect_four.yaml"):
        env = rust(ROOT / name, rust_cache)
        got = [env.rollout(100, 40, seed=3, threads=t) for t in (1, 2, 3)]
        assert got[0] == got[1] == got[2], name
        assert got[0]["episodes"] > 10


TRACE = """
import hashlib, sys
from pathlib import Path
import numpy as np
import envc
from envc.lower_rust.build import RustEnv
env = RustEnv(envc.load(sys.argv[1]), cache=Path(sys.argv[2]))
envs = env.vector_env(37, seed=4, threads=2)
envs.action_space.seed(5)
h = hashlib.sha256()
obs, info = envs.reset()
for _ in range(300):
    obs, r, term, trunc, info = envs.step(envs.action_space.sample())
    for x in (*(obs.values() if isinstance(obs, dict) else [obs]), r, term, trunc, info["legal_action_mask"]):
        h.update(np.ascontiguousarray(x).tobytes())
print(envs.simd, h.hexdigest(), sorted(env.rollout(29, 200, seed=6, threads=2).items()))
"""


def host_has_avx2() -> bool:
    """Whether this host has what the runtime's AVX2 build needs (x86-64 with AVX2, FMA, BMI1 and BMI2)."""
    try:
        flags = next(ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")).split()
    except (OSError, StopIteration):
        return False
    return {"avx2", "fma", "bmi1", "bmi2"} <= set(flags)


@pytest.mark.parametrize("name", ["specs/cartpole.yaml", "tests/specs/thruster.yaml", "tests/specs/tcg_mechanics.yaml"])
def test_avx2_and_baseline_builds_step_the_same_bits(name: str, rust_cache: Path) -> None:
    """Lane kernels, pack rows and resets have an AVX2 build besides the baseline one; both step the same bits
    (a packed spec with its sin/cos lane forms, one with continuous actions, one with shuffles and a mask), and
    `ENVC_RUST_AVX2=0` keeps the baseline."""
    rust(ROOT / name, rust_cache)  # built once, in the shared cache
    runs = []
    for flag in ("0", "1"):
        out = subprocess.run(
            [sys.executable, "-c", TRACE, str(ROOT / name), str(rust_cache)],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "ENVC_RUST_AVX2": flag},
        )
        assert out.returncode == 0, out.stderr
        runs.append(out.stdout.split(" ", 1))
    assert [build for build, _ in runs] == ["baseline", "avx2" if host_has_avx2() else "baseline"]
    assert runs[0][1] == runs[1][1]


def test_lane_kernel_only_for_specs_it_covers() -> None:
    """Draws (corridor's slippery floor), array fields (boards), several action kinds or no f32 arithmetic:
    the scalar path. Of the three with a kernel, cartpole and thruster have scalar fields, one player and outputs
    that read fields and params only, so their states are packed too."""
    from envc.lower_rust.emit import Analysis
    from envc.lower_rust.lanes import plan

    got = {p.stem for p in SPECS if plan(spec := envc.load(str(p)), Analysis(spec)) is not None}
    assert got == {"cartpole", "thruster", "mountain_car"}
    modes = {p.stem: lane_mode(envc.load(str(p))) for p in SPECS if p.stem in got}
    # mountain_car's `terminated` calls a function: a kernel, but no packed outputs
    assert modes == {"cartpole": "packed", "thruster": "packed", "mountain_car": "kernel"}


def test_the_kernel_takes_sin_and_cos_of_all_lanes_at_once() -> None:
    """The kernel's sin and cos go through the runtime's lane forms (whose polynomial vectorizes), never a call per
    lane: a `let` of one call binds the result array, a call on an expression gathers its argument first, and an
    inner call comes before the one whose argument it is in."""

    def kernel(name: str) -> str:
        src = render(envc.load(str(ROOT / name)), "", "sin_probe")["src/env.rs"]
        body = src[src.index("fn lane_kernel_body(") :]
        return body[: body.index("\n}\n")]

    cartpole, thruster = kernel("specs/cartpole.yaml"), kernel("tests/specs/thruster.yaml")
    assert "let costheta = ops::cos_lanes(&ln.theta);" in cartpole
    assert "let sintheta = ops::sin_lanes(&ln.theta);" in cartpole
    inner = thruster.index("= ops::sin_lanes(&ln.vel);")
    gather = thruster.index("= (ln.angle[l] * 1.0f32) + (0.0f32 * __sin")
    assert inner < gather < thruster.index("= ops::cos_lanes(&__arg")
    assert "ops::sin(" not in cartpole + thruster and "ops::cos(" not in cartpole + thruster


def test_only_the_table_columns_the_code_reads_are_emitted() -> None:
    """A card table's id column is read by no rule, so the crate has no static for it (it would be dead code);
    the columns the rules read are there."""
    src = render(envc.load(str(ROOT / "specs/tcg.yaml")), "", "tables_probe")["src/env.rs"]
    assert "static CARDS__KIND:" in src and "static ATTACKS__DAMAGE:" in src
    assert "CARDS__ID" not in src and "ATTACKS__ID" not in src


def test_vector_env_replays_reference_episodes(rust_cache: Path) -> None:
    """The documented key scheme: env i of reset(seed=s) plays episode j with episode_keys(s + i, j)."""
    path = ROOT / "docs" / "examples" / "corridor.yaml"  # its effect draws (slippery floor)
    env = rust(path, rust_cache)
    ref = ReferenceEnv(env.spec)
    envs = env.vector_env(3, threads=1)
    obs, info = envs.reset(seed=100)
    states = []
    for i in range(3):
        reset_key, stream = env.module.episode_keys(100 + i, 0)
        states.append([ref.init(reset_key), stream, 0])
    for i in range(3):
        np.testing.assert_array_equal(obs[i], states[i][0].observation)
    for _ in range(30):
        a = np.array([int(np.flatnonzero(m)[-1]) for m in info["legal_action_mask"]])
        obs, reward, term, _, info = envs.step(a)
        for i in range(3):
            s, stream, t = states[i]
            if s.terminated or s.truncated:
                continue
            s = ref.step(s, int(a[i]), env.module.fold_in(stream, t + 1))
            states[i] = [s, stream, t + 1]
            np.testing.assert_array_equal(obs[i], s.observation)
            assert reward[i] == s.rewards[0] and term[i] == s.terminated


@pytest.mark.parametrize("spin_us", ["0", None])
def test_threads_and_copies_do_not_change_results(
    rust_cache: Path, monkeypatch: pytest.MonkeyPatch, spin_us: str | None
) -> None:
    """1-3 threads whose workers go back to sleep after every call (ENVC_SPIN_US=0) or stay awake (the default),
    returning fresh arrays or the same ones (copy=False): the same trace."""
    if spin_us is not None:
        monkeypatch.setenv("ENVC_SPIN_US", spin_us)
    env = rust(ROOT / "tests/specs/tcg_mechanics.yaml", rust_cache)
    runs = []
    for threads, copy in ((1, True), (2, True), (3, True), (2, False)):
        envs = env.vector_env(70, seed=1, threads=threads, copy=copy)
        obs, info = envs.reset()
        trace = []
        gen = np.random.default_rng(2)
        for _ in range(40):
            a = np.array([gen.choice(np.flatnonzero(m)) for m in info["legal_action_mask"]])
            obs, r, term, _, info = envs.step(a)
            trace.append(tuple(np.copy(x) for x in (obs["boards"], r, term, info["rewards"], info["current_player"])))
        runs.append(trace)
        assert envs.threads == threads
    for other in runs[1:]:
        for x, y in zip(runs[0], other):
            for a, b in zip(x, y):
                np.testing.assert_array_equal(a, b)
    assert env.rollout(64, 30, threads=2)["steps"] == 64 * 30


def test_copy_false_shares_only_the_observation_and_copy_true_nothing(rust_cache: Path) -> None:
    """gymnasium's `copy` semantics: copy=False writes every observation into the arrays of the first reset;
    rewards, ends and infos are fresh arrays either way."""
    for path, part in ((ROOT / "specs/cartpole.yaml", None), (ROOT / "tests/specs/tcg_mechanics.yaml", "boards")):
        env = rust(path, rust_cache)
        shared, fresh = env.vector_env(64, threads=2, copy=False), env.vector_env(64, threads=2)
        o0, _ = shared.reset(seed=1)
        fresh.reset(seed=1)
        a = np.zeros(64, np.int64)
        outs = [shared.step(a) for _ in range(2)]
        obs = [o if part is None else o[part] for o in (o0, *(x[0] for x in outs))]
        assert obs[0] is obs[1] is obs[2]
        for k in (1, 2, 3):
            assert not np.shares_memory(outs[0][k], outs[1][k])
        assert not np.shares_memory(outs[0][4]["legal_action_mask"], outs[1][4]["legal_action_mask"])
        mine = [fresh.step(a) for _ in range(2)]
        view = [m[0] if part is None else m[0][part] for m in mine]
        assert not np.shares_memory(view[0], view[1])
        np.testing.assert_array_equal(view[1], obs[2])
        for k in (1, 2, 3):
            np.testing.assert_array_equal(mine[1][k], outs[1][k])


def test_vector_env_takes_whatever_numpy_converts_to_ids(rust_cache: Path) -> None:
    """Actions convert as `np.ascontiguousarray(a, np.int64)` would: a list, int32, a strided view or a column all
    step like the int64 ids; a wrong count or an unconvertible value is a clear error."""
    env = rust(ROOT / "specs/cartpole.yaml", rust_cache)
    ids = np.random.default_rng(0).integers(0, 2, size=(30, 6))
    forms = (
        lambda a: a,
        lambda a: a.tolist(),
        lambda a: a.astype(np.int32),
        lambda a: np.repeat(a, 2)[::2],
        lambda a: a.reshape(6, 1),
    )
    runs = []
    for form in forms:
        envs = env.vector_env(6, seed=4, threads=1)
        envs.reset()
        runs.append([tuple(np.copy(x) for x in envs.step(form(a))[:4]) for a in ids])
    for other in runs[1:]:
        for x, y in zip(runs[0], other):
            for u, v in zip(x, y):
                np.testing.assert_array_equal(u, v)
    with pytest.raises(ValueError, match="expected 6 actions, got 5"):
        envs.step(np.zeros(5, np.int64))
    with pytest.raises(ValueError):
        envs.step(["left"] * 6)


def test_gym_env_passes_gymnasium_env_checker(rust_cache: Path) -> None:
    from gymnasium.utils.env_checker import check_env

    for path in (
        ROOT / "specs/cartpole.yaml",
        ROOT / "specs/tic_tac_toe.yaml",
        ROOT / "tests/specs/tcg_mechanics.yaml",
    ):
        e = rust(path, rust_cache).gym_env()
        check_env(e, skip_render_check=True)
        obs, info = e.reset(seed=3)
        assert e.observation_space.contains(obs) and info["legal_action_mask"].any()


HOSTILE = """
name: unsafe
doc: "*/ } fn main() { std::process::exit(3) } /*\\n#![no_std] \\u202e {{ 7*7 }} \\\\ \\" end"
version: "1.0"
players: 2
types:
  State: {enum: [Some, Vec, loop], doc: "x\\n}\\nfn evil_type() {}"}
params:
  crate: {type: i32, default: 3, doc: "\\n}\\nfn evil_param() {}"}
state:
  loop: {type: i32, doc: "line\\nfn evil_field() {}"}
  st: {type: State, init: Some}
  obs: f32
  _t1: i32
  Spec: {type: i8, shape: [2]}
functions:
  Some: {params: {prm: i32}, returns: i32, body: "prm + crate"}
  legal_push: {params: {n: i32}, returns: bool, body: "n < 25"}
procedures:
  effect_push:
    body: "loop = loop + 1"
  super:
    params: {move: i32}
    body: |
      let mask = move * 2
      _t1 = _t1 + mask
actions:
  dyn:
    params: {static: 3}
    legal: "static <= loop + 2"
    effect: |
      let ops = Some(static)
      loop = loop + ops % 7
      super(ops)
      st = State.loop
      obs = obs + 0.5
      Spec[current_player] = i8(static)
      current_player = 1 - current_player
  push:
    legal: "legal_push(loop)"
    effect: |
      effect_push()
      current_player = 1 - current_player
reward: "f32(loop) * 0.1"
terminated: "loop > 20"
truncated: "step_count >= 30"
observation:
  fields:
    rng: {type: i32, shape: [3]}
  body: |
    rng[0] = loop
    rng[1] = _t1
    rng[2] = i32(Spec[p])
"""


def test_spec_names_and_strings_cannot_inject_code(tmp_path: Path, rust_cache: Path) -> None:
    path = tmp_path / "unsafe.yaml"
    path.write_text(HOSTILE)
    spec, diags = envc.lint(str(path))
    assert spec is not None, [d.format() for d in diags]
    env = RustEnv(spec, cache=rust_cache)
    checks = verify(spec, env, episodes=5, states=20)
    assert all(c.passed for c in checks), [c.failures for c in checks if not c.passed]
    out = tmp_path / "out"
    write_package(spec, out, backend="rust")
    for rel in ("src/env.rs", "src/lib.rs", "python/unsafe_rust/__init__.py", "python/unsafe_rust/gym.py", "README.md"):
        text = (out / rel).read_text()
        assert "\u202e" not in text, rel
        for line in text.splitlines():
            if "evil" in line or "process::exit" in line or "no_std" in line:
                assert line.strip().startswith(("//", "#", "doc")), f"{rel}: {line}"
    for rel in ("python/unsafe_rust/__init__.py", "python/unsafe_rust/gym.py", "tests/test_verify.py"):
        compile((out / rel).read_text(), rel, "exec")
    assert "49" not in (out / "README.md").read_text()


def test_compile_rust_is_atomic_and_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = envc.load(str(ROOT / "specs" / "tic_tac_toe.yaml"))
    files = write_package(spec, tmp_path / "ttt", backend="rust")
    names = {str(p.relative_to(tmp_path / "ttt")) for p in files}
    for rel in (
        "pyproject.toml",
        "Cargo.toml",
        "Cargo.lock",
        "src/env.rs",
        "src/lib.rs",
        "runtime/src/rng.rs",
        "runtime/Cargo.lock",
        "python/tic_tac_toe_rust/__init__.py",
        "tests/test_verify.py",
        "tests/spec/tic_tac_toe.yaml",
    ):
        assert rel in names, rel
    env_rs = (tmp_path / "ttt" / "src/env.rs").read_text()
    assert env_rs.startswith("//! The `tic_tac_toe` environment, generated by envc")
    lock = (tmp_path / "ttt" / "Cargo.lock").read_text()
    assert 'name = "tic_tac_toe_rust"' in lock and 'name = "pyo3"' in lock

    def boom(*args: object) -> dict[str, str]:
        raise CompileError("template exploded")

    monkeypatch.setattr("envc.lower_rust.tests.render_tests", boom)
    with pytest.raises(CompileError):
        write_package(spec, tmp_path / "second", backend="rust")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ttt"]


def test_compile_all_holds_both_backends(tmp_path: Path) -> None:
    spec = envc.load(str(ROOT / "specs" / "kuhn_poker.yaml"))
    write_package(spec, tmp_path / "both", backend="all")
    root = tmp_path / "both"
    assert (root / "python/kuhn_poker_jax/env.py").is_file() and (root / "python/kuhn_poker_rust/gym.py").is_file()
    assert (root / "tests/test_verify_jax.py").is_file() and (root / "tests/test_verify_rust.py").is_file()
    pyproject = (root / "pyproject.toml").read_text()
    assert 'python-packages = ["kuhn_poker_jax"]' in pyproject and 'name = "kuhn_poker_envc"' in pyproject


def test_pip_install_and_pytest_the_compiled_rust_package(tmp_path: Path, rust_cache: Path) -> None:
    out, site = tmp_path / "kuhn", tmp_path / "site"
    r = cli("compile", "specs/kuhn_poker.yaml", "-o", str(out), "--backend", "rust", cache=rust_cache)
    assert r.returncode == 0, r.stderr
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "CARGO_TARGET_DIR": str(target_dir(rust_cache) / "pip"),
    }
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-3000:]
    assert list((site / "kuhn_poker_rust").glob("_core*.so"))
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", str(out / "tests")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site), "ENVC_CACHE": str(rust_cache)},
    )
    assert r.returncode == 0, r.stdout[-3000:]
    assert "5 passed" in r.stdout


def test_cli_verify_and_bench_on_rust(rust_cache: Path) -> None:
    r = cli(
        "verify", "docs/examples/nim.yaml", "--backend", "rust", "--episodes", "10", "--states", "20", cache=rust_cache
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nim on rust: L3" in r.stdout and "FAIL" not in r.stdout
    r = cli(
        "bench",
        "docs/examples/nim.yaml",
        "--backend",
        "rust",
        "--batch",
        "1,64",
        "--steps",
        "20",
        "--threads",
        "2",
        "--json",
        cache=rust_cache,
    )
    assert r.returncode == 0, r.stderr
    import json

    rows = json.loads(r.stdout)
    assert [row["batch"] for row in rows] == [1, 64] and all(row["threads"] in (1, 2) for row in rows)
    assert all(len(row["runs"]) == 5 and row["steps_per_s"] > 0 and math.isfinite(row["compile_s"]) for row in rows)


def test_observation_of_an_out_of_range_player_uses_the_documented_fallback(rust_cache: Path) -> None:
    """An out-of-range `current_player` is observed as the non-strict reference does it (indices clamped)."""
    env = rust(ROOT / "specs/kuhn_poker.yaml", rust_cache)
    ref = ReferenceEnv(env.spec, strict=False)
    d = ref.state_to_dict(ref.init(rng.key_from_seed(4)))
    d["card"] = np.array([2, 0], d["card"].dtype)
    for player in (-1, 2, 7):
        d["current_player"] = np.asarray(player, d["current_player"].dtype)
        want, got = ref.state_to_dict(ref.state_from_dict(d)), env.state_to_dict(env.state_from_dict(d))
        for k, v in want.items():
            np.testing.assert_array_equal(got[k], v, err_msg=f"current_player {player}: {k}")
        key = rng.key_from_seed(5)  # an illegal action: out of range, nobody pays the penalty
        want = ref.state_to_dict(ref.step(ref.state_from_dict(d), ref.num_actions, key))
        got = env.state_to_dict(env.step(env.state_from_dict(d), env.num_actions, key))
        for k, v in want.items():
            np.testing.assert_array_equal(got[k], v, err_msg=f"illegal action, current_player {player}: {k}")
        assert np.asarray(want["rewards"]).tolist() == [1.0, 1.0], player
