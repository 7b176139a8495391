"""Resolve a TARGET string of `envc verify SPEC --against TARGET` into an Oracle.

* `gymnasium:ENV_ID`: `gym.make(ENV_ID)` with the spec's `oracle:` field mapping (envc.oracle.gymnasium);
* `pgx:ENV_ID`: `pgx.make(ENV_ID)` (envc.oracle.pgx);
* `MODULE:FACTORY`: `FACTORY(spec)` from a module on the path or a `.py` file (`path/to/file.py:make_oracle`);
* `declared`: the target of the spec's own `oracle:` section.

Every failure is an OracleError with a one-line message (the CLI prints it and exits 2).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from envc import ir
from envc.oracle import Oracle, OracleError

DECLARED = "declared"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__


def target_of(spec: ir.SpecIR, target: str) -> str:
    """The target to use: `target` itself, or the spec's declared one for `declared`."""
    if target != DECLARED:
        return target
    if spec.oracle is None or not spec.oracle.target:
        raise OracleError(f"spec '{spec.name}' declares no oracle target (`oracle: {{target: ...}}`)")
    return spec.oracle.target


def _import(module: str) -> ModuleType:
    """A module by dotted name (the working directory first on the path) or from a `.py` file."""
    try:
        if module.endswith(".py") or os.sep in module or "/" in module:
            path = Path(module)
            if not path.is_file():
                raise OracleError(f"cannot import '{module}': no such file")
            name = "_envc_oracle_" + path.stem
            found = importlib.util.spec_from_file_location(name, path)
            if found is None or found.loader is None:
                raise OracleError(f"cannot import '{module}': not a Python file")
            mod = importlib.util.module_from_spec(found)
            sys.modules[name] = mod
            found.loader.exec_module(mod)
            return mod
        cwd = os.getcwd()
        added = cwd not in sys.path
        if added:
            sys.path.insert(0, cwd)
        try:
            return importlib.import_module(module)
        finally:
            if added:
                sys.path.remove(cwd)
    except OracleError:
        raise
    except BaseException as e:  # the user's module may raise anything while importing, even exit
        if isinstance(e, KeyboardInterrupt):
            raise
        raise OracleError(f"cannot import '{module}': {_first_line(e)}") from None


def resolve(target: str, spec: ir.SpecIR) -> Oracle:
    """The oracle named by `target` (see the module docstring) for `spec`."""
    target = target_of(spec, target)
    scheme, sep, rest = target.partition(":")
    if not sep or not scheme or not rest:
        raise OracleError(
            f"unknown target '{target}': expected gymnasium:ENV_ID, pgx:ENV_ID, MODULE:FACTORY or {DECLARED}"
        )
    if scheme == "gymnasium":
        from envc.oracle.gymnasium import make_gymnasium_oracle

        oracle: object = make_gymnasium_oracle(rest, spec, spec.oracle)
    elif scheme == "pgx":
        try:
            from envc.oracle.pgx import make_pgx_oracle
        except ImportError as e:
            raise OracleError(f"pgx targets are not available: {_first_line(e)}") from None
        try:
            oracle = make_pgx_oracle(rest, spec, spec.oracle)
        except OracleError:
            raise
        except Exception as e:  # pgx's own failure (unknown id, ...)
            raise OracleError(f"pgx cannot make '{rest}': {_first_line(e)}") from None
    else:
        mod = _import(scheme)
        factory = getattr(mod, rest, None)
        if factory is None or not callable(factory):
            raise OracleError(f"'{scheme}' has no callable '{rest}' (the factory: FACTORY(spec) -> Oracle)")
        try:
            oracle = factory(spec)
        except OracleError:
            raise
        except Exception as e:  # the user's factory
            raise OracleError(f"{target} raised: {_first_line(e)}") from None
    if not isinstance(oracle, Oracle):
        raise OracleError(f"{target} returned {type(oracle).__name__}, not an envc.oracle.Oracle")
    return oracle
