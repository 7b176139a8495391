"""`reward`, `terminated`, `truncated` and the observation read `action`, the action of the transition they score
(docs/spec-language.md sections 5 and 14): identical on the reference, JAX and Rust, through the single-state API,
the Rust batch and `envc verify`. The box spec's effect draws nothing, so its Rust effect takes no key (the
build used to fail: `apply_box` passed one)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import envc
from envc import ir, rng
from envc.interpret import ReferenceEnv
from envc.lower_rust import Lowering
from envc.verify import diff, verify

# A pendulum: the reward charges the torque (`0.001 * u**2`, gymnasium's control cost) and a second action value;
# the observation shows the last action; the ends read it too.
BOX = """
name: torque_cost
doc: A pendulum whose reward charges the torque just applied; the effect draws no randomness.
version: "1.0"
players: 1
params:
  max_torque: 2.0
state:
  th: f32
  w: f32
continuous_action:
  box: {shape: [2], low: -2.0, high: 2.0}
  effect: |
    let u = clip(action[0], -max_torque, max_torque)
    w = clip(w + (sin(th) * 9.75 + 3.0 * u) * 0.05, -8.0, 8.0)
    th = th + w * 0.05
reset: |
  th = uniform(-3.0, 3.0)
  w = uniform(-1.0, 1.0)
reward: "-(th * th + 0.1 * w * w + 0.001 * clip(action[0], -max_torque, max_torque) ** 2) - 0.5 * abs(action[1])"
terminated: "abs(action[1]) > 1.9"
truncated: "step_count >= 60 or action[0] > 1.95"
observation:
  fields:
    o: {type: f32, shape: [3]}
    last: {type: f32, shape: [2], doc: "the action just taken (zeros: none)"}
  body: |
    o[0] = cos(th)
    o[1] = sin(th)
    o[2] = w
    for i in range(2):
      last[i] = action[i]
"""

# A cart pushed left, not or right (ids 0, 1, 2): each push costs fuel by its id, a one-hot of the last id is
# observed (slot 3: none), and pushes run out (illegal ids). One kind, f32 arithmetic: the Rust lane kernel.
DISCRETE = """
name: push_cost
doc: A cart whose reward charges each push by its action id; the observation shows the last id.
version: "1.0"
players: 1
params:
  dt: 0.1
constants:
  FUEL: {type: f32, shape: [3], value: [0.5, 0.0, 0.75]}
state:
  x: f32
  v: f32
  drift: {type: f32, visible: none}
  pushes: i32
actions:
  push:
    params: {f: {range: [-1, 2]}}
    legal: "f == 0 or pushes < 6"
    effect: |
      v = v + dt * (f32(f) + drift)
      x = x + dt * v
      if f != 0:
        pushes += 1
reset: |
  drift = uniform(-0.1, 0.1)
reward: "-(x * x) - FUEL[max(action, 0)] - select(action == 1, 0.0, 0.01)"
terminated: "abs(x) > 2.0 or (action == 2 and v > 0.45)"
truncated: "step_count >= 40 and action != 1"
observation:
  fields:
    o: {type: f32, shape: [3]}
    last: {type: i32, shape: [4], doc: "one-hot of the last action id; slot 3: none"}
  body: |
    o[0] = x
    o[1] = v
    o[2] = f32(action)
    last[select(action >= 0, action, 3)] = 1
"""


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ir.SpecIR]:
    root = tmp_path_factory.mktemp("specs")
    out = {}
    for name, text in (("box", BOX), ("discrete", DISCRETE)):
        (root / f"{name}.yaml").write_text(text)
        out[name] = envc.load(str(root / f"{name}.yaml"))
    return out


@pytest.fixture(scope="module")
def rust_envs(specs: dict[str, ir.SpecIR], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One Rust build per spec (in one cache, so the dependencies compile once)."""
    pytest.importorskip("gymnasium")
    from envc.lower_rust.build import RustEnv

    cache = Path(os.environ["ENVC_CACHE"])
    return {name: RustEnv(spec, cache=cache) for name, spec in specs.items()}


def _actions(spec: ir.SpecIR, gen: np.random.Generator, mask: Any = None) -> Any:
    """A random action: box values over the whole box, or a legal id (of `mask`), out of range one time in ten."""
    if spec.box is not None:
        return gen.uniform(-2.0, 2.0, size=spec.box.shape).astype(np.float32)
    if gen.random() < 0.1 or mask is None:
        return int(gen.choice([-1, spec.num_actions]))
    return int(gen.choice(np.flatnonzero(np.asarray(mask))))


def _lockstep(spec: ir.SpecIR, ref: ReferenceEnv, env: Any, episodes: int) -> int:
    """Matched episodes (same keys and actions, illegal ones included) compared at every step; returns steps."""
    gen = np.random.default_rng(5)
    key = rng.key_from_seed(5)
    steps = 0
    for ep in range(episodes):
        key, k = rng.split(key)
        r, b = ref.init(k), env.init(k)
        for t in range(80):
            m = diff(spec, ref.state_to_dict(r), env.state_to_dict(b), f"episode {ep} step {t}", {})
            assert m is None, m
            if r.terminated or r.truncated:
                break
            key, k = rng.split(key)
            act = _actions(spec, gen, r.legal_action_mask)
            r, b = ref.step(r, act, k), env.step(b, act, k)
            steps += 1
    return steps


def test_checker_scopes_action(tmp_path: Path) -> None:
    """`action` reads in the outputs; elsewhere a located E030 that says where it can be read."""
    cases = {
        "rules:\n  - name: r\n    body: 'x = f32(action)'\n": "can only be read in `reward`, `terminated`",
        "invariants:\n  bad: 'action >= -1'\n": "the id of the action just taken",
    }
    for extra, message in cases.items():
        path = tmp_path / "bad.yaml"
        path.write_text(DISCRETE + extra)
        _, diags = envc.lint(str(path))
        errors = [d for d in diags if d.code == "E030"]
        assert errors and message in errors[0].message, [d.format() for d in diags]
    path = tmp_path / "effect.yaml"
    path.write_text(DISCRETE.replace("pushes += 1", "pushes += action"))
    _, diags = envc.lint(str(path))
    assert [d.message for d in diags if d.code == "E030"] == [
        "'action' (the id of the action just taken) can only be read in `reward`, `terminated`, `truncated` and "
        "the observation body; an effect reads its action's parameters"
    ]


def test_reference_semantics(specs: dict[str, ir.SpecIR]) -> None:
    """What `action` reads: the action applied by this step; none (zeros, -1) after init, for an injected state,
    in `observe`, and after an illegal action; no field of its own in `state_to_dict`."""
    box = ReferenceEnv(specs["box"])
    s = box.init((0, 1))
    assert np.array_equal(s.observation["last"], [0.0, 0.0])
    a = np.array([0.5, -0.25], np.float32)
    s2 = box.step(s, a, (0, 2))
    assert np.array_equal(s2.observation["last"], a)
    th, w = s2.data["th"][0], s2.data["w"][0]
    u = np.float32(0.5)
    want = -(th * th + 0.1 * w * w + 0.001 * float(u * u)) - 0.5 * 0.25
    assert s2.rewards[0] == pytest.approx(want, rel=1e-5)
    assert np.array_equal(box.observe(s2, 0)["last"], [0.0, 0.0])
    d = box.state_to_dict(s2)
    outputs = {"rewards", "terminated", "truncated", "legal_action_mask", "observation.o", "observation.last"}
    assert set(d) == {f.name for f in specs["box"].fields} | outputs  # no field of its own
    assert np.array_equal(box.state_from_dict(d).observation["last"], [0.0, 0.0])
    assert np.array_equal(box.state_from_dict(d).observation["o"], s2.observation["o"])
    assert box.step(s2, np.array([0.0, 1.95], np.float32), (0, 3)).terminated

    cart = ReferenceEnv(specs["discrete"])
    s = cart.init((0, 1))
    assert list(s.observation["last"]) == [0, 0, 0, 1] and s.observation["o"][2] == -1.0
    s2 = cart.step(s, 2, (0, 2))
    assert list(s2.observation["last"]) == [0, 0, 1, 0] and s2.observation["o"][2] == 2.0
    x = s2.data["x"][0]
    assert s2.rewards[0] == pytest.approx(-(x * x) - 0.75 - 0.01, rel=1e-6)
    s3 = cart.step(s2, 1, (0, 3))
    assert s3.rewards[0] == pytest.approx(-(s3.data["x"][0] ** 2), rel=1e-6)
    assert list(cart.observe(s3, 0)["last"]) == [0, 0, 0, 1]
    illegal = cart.step(s3, 7, (0, 4))
    assert illegal.terminated and illegal.rewards[0] == -1.0
    assert list(illegal.observation["last"]) == [0, 0, 0, 1]  # an illegal action is not applied


def test_jax_matches_reference_and_verifies(specs: dict[str, ir.SpecIR]) -> None:
    for name, spec in specs.items():
        env = envc.build(spec, backend="jax")
        assert _lockstep(spec, ReferenceEnv(spec), env, episodes=6) > 60, name
        s0 = env.init((0, 1))
        s = env.step(s0, _actions(spec, np.random.default_rng(0), s0.legal_action_mask), (0, 2))
        none = [0.0, 0.0] if spec.box is not None else [0, 0, 0, 1]
        assert not np.array_equal(np.asarray(s.observation["last"]), none)  # the step's own reads its action
        assert np.array_equal(np.asarray(env.observe(s, 0)["last"]), none)
        assert np.array_equal(np.asarray(env.state_from_dict(env.state_to_dict(s)).observation["last"]), none)
        checks = verify(spec, env, episodes=10, states=30, seed=3)
        assert all(c.passed for c in checks), [(c.name, c.failures) for c in checks if not c.passed]
        assert {c.level for c in checks} == {"L1", "L2", "L3"}
        leak = next(c for c in checks if "leak" in c.name)
        assert (leak.cases > 0) == (name == "discrete")


def test_rust_matches_reference(specs: dict[str, ir.SpecIR], rust_envs: dict[str, Any]) -> None:
    cart = Lowering(specs["discrete"])
    assert cart.lane_plan is not None and not cart.packed  # its outputs read the action: steps through the kernel
    for name, spec in specs.items():
        env = rust_envs[name]
        assert _lockstep(spec, ReferenceEnv(spec), env, episodes=6) > 60, name
        s0 = env.init((0, 1))
        s = env.step(s0, _actions(spec, np.random.default_rng(0), s0.legal_action_mask), (0, 2))
        none = [0.0, 0.0] if spec.box is not None else [0, 0, 0, 1]
        assert not np.array_equal(np.asarray(s.observation["last"]), none)  # the step's own reads its action
        assert np.array_equal(env.observe(s, 0)["last"], none)
        assert np.array_equal(env.state_from_dict(env.state_to_dict(s)).observation["last"], none)
        checks = verify(spec, env, levels=("L1", "L2"), episodes=10, states=30, seed=4)
        assert all(c.passed for c in checks), [(c.name, c.failures) for c in checks if not c.passed]


def test_rust_batch_rows_read_the_action(specs: dict[str, ir.SpecIR], rust_envs: dict[str, Any]) -> None:
    """Each row of a vector-env step is the reference's step of that env's state (the effects draw nothing, so
    keys do not matter); a restarted env's row reads no action."""
    for name, spec in specs.items():
        ref = ReferenceEnv(spec)
        envs = rust_envs[name].vector_env(16, seed=1, threads=2)
        _, info = envs.reset(seed=1)
        gen = np.random.default_rng(2)
        done = np.zeros(16, bool)
        restarts = 0
        for _ in range(30):
            before = [rust_envs[name].state_to_dict(envs._batch.state(i)) for i in range(16)]
            masks = info["legal_action_mask"]
            acts = np.stack([_actions(spec, gen, masks[i]) for i in range(16)])
            obs, reward, term, trunc, info = envs.step(acts)
            for i in range(16):
                if done[i]:  # gymnasium's next-step auto-reset: a fresh episode
                    restarts += 1
                    assert not term[i] and reward[i] == 0.0
                    want_last = [0.0, 0.0] if spec.box is not None else [0, 0, 0, 1]
                    assert np.array_equal(obs["last"][i], want_last)
                    continue
                r = ref.step(ref.state_from_dict(before[i]), acts[i], (0, 0))
                assert reward[i] == pytest.approx(r.rewards[0], rel=1e-5, abs=1e-6), (name, i)
                assert (term[i], trunc[i]) == (r.terminated, r.truncated), (name, i)
                for part in ("o", "last"):
                    np.testing.assert_allclose(obs[part][i], r.observation[part], rtol=1e-5, atol=1e-6)
            done = term | trunc
        assert restarts > 0, name
        stats = rust_envs[name].rollout(8, 200, seed=3)
        assert stats["episodes"] > 0


def test_editor_hover_knows_action_in_the_outputs(tmp_path: Path) -> None:
    from envc.lsp.features import Outline, hover

    for text, want in ((DISCRETE, "action: i32"), (BOX, "action: f32 array")):
        lines = text.split("\n")
        line = next(i for i, s in enumerate(lines) if s.startswith("reward:"))
        found = hover(Outline.of(str(tmp_path / "s.yaml"), text), line, lines[line].index("action"))
        assert found is not None and want in found[0], found
