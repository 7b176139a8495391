"""Run folders: checkpoints (flax msgpack, written atomically) and `load_run`, which checks spec and envc version.

A run folder holds `run.json` (spec path, config, metadata) and `checkpoints/step_<steps>.msgpack`, each the
network parameters plus that checkpoint's metadata (spec digest, spec name, envc version, steps, seed).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization

import envc
from envc import ir
from envc.train.config import TrainConfig
from envc.train.networks import Policy, make_network, make_policy

RUN_FILE = "run.json"
CHECKPOINTS = "checkpoints"
RESUME_FILE = "resume.msgpack"  # the whole training carry after the last chunk: `envc train --resume RUN`


class RunError(Exception):
    """A run folder or checkpoint that cannot be used (one line)."""


@dataclass(frozen=True)
class Run:
    """A trained run: its spec, config, metadata and the parameters of one checkpoint."""

    run_dir: Path
    spec_path: Path
    spec: ir.SpecIR
    config: TrainConfig
    meta: dict[str, Any]
    params: Any

    def policy(self) -> Policy:
        """The policy of this checkpoint."""
        network = make_network(self.spec, self.config.hidden, self.config.activation, self.config.log_std_init)
        return make_policy(self.spec, network, self.params)


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder and a rename (never half-written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run_meta(spec: ir.SpecIR, config: TrainConfig) -> dict[str, Any]:
    """The metadata every checkpoint of a run on `spec` records."""
    return {"spec_digest": ir.content_digest(spec), "spec_name": spec.name, "envc_version": envc.__version__,
            "seed": config.seed, "backend": "jax"}


def write_run_file(run_dir: Path, spec: ir.SpecIR, config: TrainConfig, extra: dict[str, Any]) -> None:
    """Write `run.json`: the spec's absolute path, the config and the run's metadata."""
    body = {"spec_path": str(Path(spec.path).resolve()), "config": config.model_dump(mode="json"),
            "meta": {**run_meta(spec, config), **extra}}
    write_atomic(run_dir / RUN_FILE, (json.dumps(body, indent=2) + "\n").encode())


def checkpoint_path(run_dir: Path, steps: int) -> Path:
    """Where the checkpoint after `steps` env steps goes."""
    return run_dir / CHECKPOINTS / f"step_{steps:012d}.msgpack"


def save_checkpoint(run_dir: Path, params: Any, meta: dict[str, Any]) -> Path:
    """Write the parameters (host copies) and `meta` (with "steps") atomically; returns the file."""
    path = checkpoint_path(run_dir, int(meta["steps"]))
    state = {"params": serialization.to_state_dict(params), "meta": json.dumps(meta, sort_keys=True)}
    write_atomic(path, serialization.msgpack_serialize(state))
    return path


def save_resume(run_dir: Path, carry: Any, meta: dict[str, Any]) -> None:
    """Write every array of the training carry (host copies, in tree order) and `meta`, atomically."""
    leaves = [np.asarray(x) for x in jax.tree.leaves(jax.device_get(carry))]
    body = {"leaves": {str(i): x for i, x in enumerate(leaves)}, "meta": json.dumps(meta, sort_keys=True)}
    write_atomic(run_dir / RESUME_FILE, serialization.msgpack_serialize(body))


def read_resume(run_dir: Path, template: Any) -> tuple[Any, dict[str, Any]]:
    """The carry saved by `save_resume`, laid out (tree, shapes, dtypes, shardings) as `template`."""
    path = run_dir / RESUME_FILE
    try:
        body = serialization.msgpack_restore(path.read_bytes())
        saved = [np.asarray(body["leaves"][str(i)]) for i in range(len(body["leaves"]))]
        meta = json.loads(body["meta"])
    except FileNotFoundError:
        raise RunError(f"{run_dir}: nothing to resume (no {RESUME_FILE}: the run ended before its first chunk, "
                       "or on several hosts)") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RunError(f"{path}: not a readable envc resume file ({type(e).__name__}: {e})") from None
    slots = jax.tree.leaves(template)
    if len(saved) != len(slots) or any(s.shape != t.shape or s.dtype != t.dtype for s, t in zip(saved, slots)):
        raise RunError(f"{path}: its arrays do not fit this run's trainer (another config or envc version)")
    placed = [jax.device_put(s, t.sharding) for s, t in zip(saved, slots)]
    return jax.tree.unflatten(jax.tree.structure(template), placed), meta


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """The run's checkpoint files, oldest (fewest steps) first."""
    return sorted((Path(run_dir) / CHECKPOINTS).glob("step_*.msgpack"))


def _resolve_checkpoint(run_dir: Path, checkpoint: str | None) -> Path:
    found = list_checkpoints(run_dir)
    if checkpoint is None or checkpoint == "last":
        if not found:
            raise RunError(f"{run_dir}: no checkpoint in {run_dir / CHECKPOINTS}")
        return found[-1]
    for cand in (Path(checkpoint), run_dir / CHECKPOINTS / checkpoint, run_dir / CHECKPOINTS / f"{checkpoint}.msgpack"):
        if cand.is_file():
            return cand
    if checkpoint.isdigit():
        cand = checkpoint_path(run_dir, int(checkpoint))
        if cand.is_file():
            return cand
    names = ", ".join(p.stem for p in found) or "none"
    raise RunError(f"{run_dir}: no checkpoint '{checkpoint}' (have: {names})")


def read_checkpoint(path: Path) -> tuple[Any, dict[str, Any]]:
    """The parameters and metadata of one checkpoint file."""
    try:
        state = serialization.msgpack_restore(path.read_bytes())
        return state["params"], json.loads(state["meta"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RunError(f"{path}: not a readable envc checkpoint ({type(e).__name__}: {e})") from None


def load_run(run_dir: str | Path, checkpoint: str | None = None, spec_path: str | Path | None = None) -> Run:
    """A run's spec, config and one checkpoint (default: the last); RunError if the folder, the checkpoint or the
    spec is missing, or the spec (content digest) or envc version differs from the one trained on."""
    root = Path(run_dir)
    if not root.is_dir():
        raise RunError(f"{root}: no such run folder")
    try:
        body = json.loads((root / RUN_FILE).read_text())
        recorded_spec = Path(body["spec_path"])
        config = TrainConfig(**body["config"])
    except FileNotFoundError:
        raise RunError(f"{root}: not a run folder (no {RUN_FILE})") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RunError(f"{root / RUN_FILE}: unreadable ({type(e).__name__}: {str(e).splitlines()[0]})") from None
    params, meta = read_checkpoint(_resolve_checkpoint(root, checkpoint))
    path = Path(spec_path) if spec_path is not None else recorded_spec
    if not path.is_file():
        raise RunError(f"the spec this run trained on is gone: {path} (pass the spec's new path)")
    try:
        spec = envc.load(str(path))
    except envc.SpecError as e:
        raise RunError(f"{path}: the spec no longer loads ({len(e.diagnostics)} diagnostic(s))") from None
    if meta.get("envc_version") != envc.__version__:
        raise RunError(f"{root}: trained with envc {meta.get('envc_version')}, this is envc {envc.__version__}")
    if meta.get("spec_digest") != ir.content_digest(spec):
        raise RunError(f"{root}: trained on another spec than {path} (content digest "
                       f"{str(meta.get('spec_digest'))[:12]} != {ir.content_digest(spec)[:12]})")
    return Run(run_dir=root, spec_path=path.resolve(), spec=spec, config=config, meta={**body["meta"], **meta},
               params=params)
