"""Hostile names and strings: every spec slot filled with keywords, generated members and injection payloads
lints, compiles for every backend, builds, steps like the reference, and runs none of the payloads."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import numpy as np
import pytest
from hostile import NAMES, TEXTS, deterministic_cases, hostile_specs, render
from hypothesis import HealthCheck, given, settings

import envc
from envc import rng
from envc.compile import render_files

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _spec(tmp: Path, names: dict[str, str], texts: dict[str, str]) -> tuple[envc.ir.SpecIR, Path]:
    mark = tmp / "MARK"
    path = tmp / "hostile.yaml"
    path.write_text(render(names, texts, str(mark)), encoding="utf-8")
    ir, diags = envc.lint(str(path))
    assert ir is not None, "\n".join(d.format() for d in diags)
    return ir, mark


def _check_sources(files: dict[str, str]) -> None:
    """Every generated Python file parses, and no payload survives outside a string literal or docstring."""
    for rel, text in files.items():
        if rel.endswith(".py"):
            tree = ast.parse(text, rel)  # a payload that left its literal would be a syntax error or a call
            calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "__import__"]
            assert not calls, rel


def _same_steps(spec: envc.ir.SpecIR, backend: str, steps: int = 8) -> None:
    ref, env = envc.build(spec), envc.build(spec, backend=backend)
    s_ref, s_env = ref.init(rng.key_from_seed(3)), env.init(rng.key_from_seed(3))
    for i in range(steps):
        a, b = ref.state_to_dict(s_ref), env.state_to_dict(s_env)
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=f"step {i}: {k}")
        mask = np.asarray(a["legal_action_mask"])
        action = int(np.flatnonzero(mask)[i % mask.sum()]) if mask.any() else 0
        key = rng.key_from_seed(100 + i)
        s_ref, s_env = ref.step(s_ref, action, key), env.step(s_env, action, key)
        names = list(ref.invariants(s_ref)) if hasattr(ref, "invariants") else []
        if hasattr(env, "invariants"):
            assert list(env.invariants(s_env)) == names or not names


def test_pool_covers_the_classes() -> None:
    for name in ("from", "as", "assert", "yield", "with", "move", "Self", "crate", "replace", "rewards", "C", "x_1"):
        assert name in NAMES, name
    assert any("__import__" in t for t in TEXTS) and any("Command::new" in t for t in TEXTS)


@pytest.mark.parametrize("case", range(len(deterministic_cases())))
def test_every_hostile_name_compiles_and_steps_on_jax(case: int, tmp_path: Path) -> None:
    names, texts = deterministic_cases()[case]
    spec, mark = _spec(tmp_path, names, texts)
    _check_sources(render_files(spec, "all"))
    _same_steps(spec, "jax")
    assert not mark.exists() and not Path("MARK").exists()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hostile_specs())
def test_hostile_specs_render_safely(tmp_path_factory: pytest.TempPathFactory, case: tuple) -> None:
    names, texts = case
    tmp = tmp_path_factory.mktemp("hostile")
    spec, mark = _spec(tmp, names, texts)
    files = render_files(spec, "all")
    _check_sources(files)
    for rel, text in files.items():  # the Rust sources: no payload line outside a string or comment
        if rel.endswith(".rs"):
            code = [ln.split("//")[0] for ln in text.splitlines()]
            assert not any("Command::new" in ln and '"' not in ln for ln in code), rel
    assert not mark.exists()


@pytest.mark.skipif(os.environ.get("ENVC_SKIP_RUST") == "1", reason="ENVC_SKIP_RUST=1")
def test_hostile_spec_builds_and_steps_on_rust(tmp_path: Path) -> None:
    names, texts = deterministic_cases()[0]
    spec, mark = _spec(tmp_path, names, texts)
    _same_steps(spec, "rust")
    env = envc.build(spec, backend="rust")
    state = env.init(rng.key_from_seed(0))
    if hasattr(env, "invariants"):
        env.invariants(state)
    assert not mark.exists()
