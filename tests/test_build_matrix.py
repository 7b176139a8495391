"""The rule since issue #18: every spec in the repository that lints also compiles (`envc compile --backend all`)
and verifies (L1, L2, L3 against the reference interpreter) on every compiled backend, JAX and Rust.

Collected: specs/*.yaml, tests/specs/*.yaml, docs/examples/*.yaml. Not collected: tests/bad_specs (broken on
purpose) and tests/fixtures (scraper inputs and LLM drafts, which are not environments yet).

Sizes are small (`EPISODES`, `STATES`, `MAX_STEPS`): the matrix is there to catch a spec that does not build or
that a backend gets wrong at all (a template that does not compile for one spec shape, a statement a lowering
mishandles); the per-backend suites verify at full size. "Compiles" is checked twice: the `--backend all` package
is written (its Python parses, its TOML parses), and the crate of the same generated sources is built by cargo
through `envc.build(spec, backend="rust")` (the `all` package's own cargo build would cost a second build per spec).

Every (spec, backend) pair is built and verified, here or in the per-backend suite that verifies it at full size:

* Rust: tests/test_rust_backend.py::test_verify_l1_l2_l3 verifies specs/, docs/examples/ and two of tests/specs/
  at L1-L3 (40 episodes, 80 states). The matrix verifies on Rust only the specs that list leaves out (a spec
  added to tests/specs/ later lands here by itself): a small run of the same checks on the same backend would
  repeat the suite's fixed part (coverage, steering, boundary values: 84 s for tcg, beside the suite's 240 s)
  for nothing. `test_every_spec_is_verified_on_rust` checks that the two lists name specs alike.
* JAX: tests/test_jax_backend.py compares whole episodes (L3) of specs/ and tcg_mechanics, not L1 (invariants,
  bounds, determinism, no leak) or L2 (injected and fuzzed states), and nothing checks docs/examples or
  thruster on JAX. So every spec is verified on JAX here, tcg and tcg_mechanics included (about 40 and 35 s of
  CPU, XLA).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from test_rust_backend import SPECS as RUST_VERIFIED

import envc
from envc import ir
from envc.compile import write_package
from envc.verify import verify

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted(p for folder in ("specs", "tests/specs", "docs/examples") for p in (ROOT / folder).glob("*.yaml"))
IDS = [str(p.relative_to(ROOT).with_suffix("")) for p in SPECS]
EPISODES, STATES, MAX_STEPS = 2, 5, 60
MATRIX = [(p, "jax") for p in SPECS] + [(p, "rust") for p in SPECS if p not in RUST_VERIFIED]


def draws(node: object) -> bool:
    """Whether IR `node` may draw randomness (a draw, a choice, a shuffle, or a procedure call, which may)."""
    if isinstance(node, tuple):
        return any(draws(x) for x in node)
    if isinstance(node, (ir.Random, ir.CallProc)) or getattr(node, "op", None) in ("choice", "shuffle"):
        return True
    return isinstance(node, ir._Node) and any(draws(getattr(node, k)) for k in type(node).model_fields)


def test_the_matrix_holds_every_folder_and_a_box_effect_without_draws() -> None:
    """Each folder contributes, and so does a continuous action whose effect draws nothing: the Rust backend once
    failed to build exactly those (E0061, the template passed a key the effect did not take)."""
    assert {p.parent.relative_to(ROOT).as_posix() for p in SPECS} == {"specs", "tests/specs", "docs/examples"}
    boxes = [s.box for s in (envc.load(str(p)) for p in SPECS) if s.box is not None]
    assert any(not draws(b.effect) for b in boxes)
    corridor = envc.load(str(ROOT / "docs/examples/corridor.yaml"))  # its effect draws (a slippery floor)
    assert draws(corridor.actions[0].effect) and not draws(envc.load(str(ROOT / "specs/cartpole.yaml")).actions)


@pytest.mark.parametrize("path", SPECS, ids=IDS)
def test_lints_and_compiles_for_every_backend(path: Path, tmp_path: Path) -> None:
    spec, diagnostics = envc.lint(str(path))
    assert spec is not None and not [d for d in diagnostics if d.severity == "error"], [d.format() for d in diagnostics]
    out = tmp_path / "pkg"
    written = {p.relative_to(out).as_posix() for p in write_package(spec, out, backend="all")}
    jax_pkg, rust_pkg = f"python/{spec.name}_jax", f"python/{spec.name}_rust"
    assert {"pyproject.toml", "Cargo.toml", "src/env.rs", f"{jax_pkg}/env.py", f"{rust_pkg}/__init__.py"} <= written
    for rel in written:
        text = (out / rel).read_text()
        if rel.endswith(".py"):
            ast.parse(text, rel)  # generated Python is at least valid Python
        elif rel.endswith(".toml") and sys.version_info >= (3, 11):
            import tomllib

            tomllib.loads(text)


def test_every_spec_is_verified_on_rust() -> None:
    """The Rust suite's specs are among the matrix's, spelled as its paths are: a Rust row is left out only for a
    spec that suite verifies (a path spelled otherwise would bring the duplicate row back unnoticed)."""
    assert set(RUST_VERIFIED) <= set(SPECS)


@pytest.mark.parametrize(("path", "backend"), MATRIX,
                         ids=[f"{p.relative_to(ROOT).with_suffix('')}-{b}" for p, b in MATRIX])
def test_verifies_on_every_backend(path: Path, backend: str, rust_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if backend == "rust":
        monkeypatch.setenv("ENVC_CACHE", str(rust_cache))
    spec = envc.load(str(path))
    env = envc.build(spec, backend=backend)
    checks = verify(spec, env, levels=("L1", "L2", "L3"), episodes=EPISODES, states=STATES, max_steps=MAX_STEPS)
    failed = [f"{c.level} {c.name}: {c.failures}" for c in checks if not c.passed]
    assert not failed, "\n".join(failed)
    assert {c.level for c in checks} == {"L1", "L2", "L3"}
    # a check may have no case only where it does not apply: no hidden fields, or no action mask (a box action)
    exempt = {"no hidden-information leak"} | ({"legal action when not done"} if spec.box is not None else set())
    assert all(c.cases > 0 for c in checks if c.name not in exempt), [(c.name, c.cases) for c in checks]
