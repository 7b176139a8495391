"""`envc schema`: the committed JSON Schema matches the pydantic models and accepts every shipped spec."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from envc import document as d
from envc.diagnostics import Diagnostics
from envc.load import load_yaml, to_python
from envc.schema import DESCRIPTIONS, EXAMPLES, models, spec_schema

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "docs" / "envc.schema.json"
SHIPPED = sorted([*ROOT.glob("specs/*.yaml"), *ROOT.glob("tests/specs/*.yaml"), *ROOT.glob("docs/examples/*.yaml")])


def _doc(path: Path) -> Any:
    root, _ = load_yaml(str(path), Diagnostics())
    assert root is not None, path
    return to_python(root)


def test_committed_schema_matches_the_models() -> None:
    """Regenerate with `envc schema -o docs/envc.schema.json` when this fails."""
    assert json.loads(COMMITTED.read_text(encoding="utf-8")) == spec_schema()


def test_schema_is_valid_2020_12_and_draft_7() -> None:
    schema = spec_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    # the YAML language server validates with draft-07 semantics: the schema must mean the same there
    jsonschema.Draft7Validator.check_schema(schema)


def test_every_key_has_a_description() -> None:
    missing = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, prop in node.get("properties", {}).items():
                if not prop.get("description"):
                    missing.append(f"{where}.{key}")
            for k, v in node.items():
                walk(v, f"{where}/{k}")
        elif isinstance(node, list):
            for v in node:
                walk(v, where)

    walk(spec_schema(), "")
    assert not missing


def test_description_table_names_only_real_keys() -> None:
    """A key renamed in envc.document must not leave a dead description behind."""
    ms = models()
    for model, keys in DESCRIPTIONS.items():
        assert model in ms, model
        for key in keys:
            assert key in ms[model].model_fields, f"{model}.{key}"
            assert not ms[model].model_fields[key].description, f"{model}.{key} is documented in the model already"
    assert set(EXAMPLES) == set(d.SpecDocument.model_fields)


@pytest.mark.parametrize("section", sorted(EXAMPLES))
def test_section_examples_are_valid(section: str) -> None:
    schema = spec_schema()
    sub = {"$defs": schema["$defs"], **schema["properties"][section]}
    for example in schema["properties"][section]["examples"]:
        jsonschema.Draft202012Validator(sub).validate(example)
        jsonschema.Draft7Validator(sub).validate(example)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_specs_validate(path: Path) -> None:
    doc = _doc(path)
    d.SpecDocument.model_validate(doc)  # the models accept it ...
    jsonschema.Draft202012Validator(spec_schema()).validate(doc)  # ... and so does the schema
    jsonschema.Draft7Validator(spec_schema()).validate(doc)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_specs_carry_the_modeline(path: Path) -> None:
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    prefix = "# yaml-language-server: $schema="
    assert first.startswith(prefix), first
    assert (path.parent / first[len(prefix) :]).resolve() == COMMITTED


def test_schema_rejects_what_the_models_reject() -> None:
    base = _doc(ROOT / "specs" / "tic_tac_toe.yaml")
    validator = jsonschema.Draft202012Validator(spec_schema())
    bad = [
        {**base, "terminate": True},  # unknown section
        {**base, "players": 0},
        {**base, "state": {**base["state"], "board": {"type": "Mark", "shpe": [3, 3]}}},  # unknown key
        {**base, "state": {**base["state"], "board": {"type": "Mark", "visible": {"element": ["i"], "whn": "true"}}}},
        {**base, "state": {**base["state"], "board": {"type": "Mark", "visible": 3}}},
        {k: v for k, v in base.items() if k != "observation"},  # missing required section
    ]
    for doc in bad:
        assert list(validator.iter_errors(doc)), doc
        with pytest.raises(ValueError):
            d.SpecDocument.model_validate(doc)


def test_cli_prints_and_writes_the_schema(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "envc.cli", "schema"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == spec_schema()
    out = tmp_path / "envc.schema.json"
    r = subprocess.run(
        [sys.executable, "-m", "envc.cli", "schema", "-o", str(out)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0 and out.read_text(encoding="utf-8") == COMMITTED.read_text(encoding="utf-8")
    r = subprocess.run(
        [sys.executable, "-m", "envc.cli", "schema", "-o", str(tmp_path / "missing" / "x.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "missing").exists()
