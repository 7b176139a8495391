"""`envc compile -o DIR`: folders that cannot or may not be written are one `error:` line, `--force` replaces only
envc's own folders, and a compile killed at any point leaves the old or the new package (issue #24, item 9)."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import envc
from envc.cli import app
from envc.compile import MARKER, CompileError, _recover, is_envc_output, write_package

ROOT = Path(__file__).resolve().parent.parent
CARTPOLE = ROOT / "specs" / "cartpole.yaml"
TIC_TAC_TOE = ROOT / "specs" / "tic_tac_toe.yaml"


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envc.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def compile_in_process(*args: str) -> tuple[int, str]:
    """`envc compile` through the real command-line code, in this process (exit code, stdout + stderr)."""
    r = CliRunner().invoke(app, ["compile", *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.stdout + r.stderr


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".envc-" in p.name or ".tmp-" in p.name or ".old-" in p.name)


def one_error_line(output: str) -> str:
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in output, output
    return lines[0]


# ---- folders that cannot be written ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("/proc/x", "/proc is a kernel file system"),
        ("/sys/x", "/sys is a kernel file system"),
        ("/dev/null/x", "/dev/null is a character device, not a folder"),
        ("afile/sub", "afile is a file, not a folder"),
        ("afile/sub/deeper", "afile is a file, not a folder"),
        ("afile", "afile exists and is not a folder"),
        ("/", "it is the root folder"),
        (".", "it is the current folder"),
        ("..", "it holds the current folder"),
        ("sub/..", "it is the current folder"),
        ("HOME", "it is your home folder"),
        ("x\0y", "is not a folder name"),
    ],
)
def test_unwritable_targets_are_one_error_line(
    out: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "afile").write_text("keep")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(home))
    before = tree(tmp_path)
    code, output = compile_in_process(str(CARTPOLE), "-o", str(home) if out == "HOME" else out, "--force-any")
    assert code == 2 and message in one_error_line(output)
    assert tree(tmp_path) == before and leftovers(tmp_path) == leftovers(cwd) == []


def test_force_on_the_current_folder_leaves_nothing_behind(tmp_path: Path) -> None:
    """`-o . --force` failed with EBUSY after moving things aside, leaving a `..old-*` folder."""
    work = tmp_path / "work"
    work.mkdir()
    r = cli("compile", str(CARTPOLE), "-o", ".", "--force", cwd=work)
    assert r.returncode == 2 and "it is the current folder" in one_error_line(r.stderr)
    assert sorted(os.listdir(tmp_path)) == ["work"] and os.listdir(work) == []


def test_a_folder_we_may_not_write_in(tmp_path: Path) -> None:
    """As root, the compile runs as `nobody`, for whom the folder is read-only."""
    base = Path(tempfile.mkdtemp(prefix="envc-ro-"))  # pytest's tmp_path is private to root
    try:
        base.chmod(0o755)
        spec = base / "cartpole.yaml"
        shutil.copy(CARTPOLE, spec)
        spec.chmod(0o644)
        ro = base / "ro"
        ro.mkdir(mode=0o555)
        ro.chmod(0o555)
        command = [sys.executable, "-m", "envc.cli", "compile", str(spec), "-o", str(ro / "pkg")]
        if os.geteuid() == 0:  # root writes anywhere: run as nobody (setpriv execs the interpreter as root can)
            if shutil.which("setpriv") is None:
                pytest.skip("running as root without setpriv to drop to another user")
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
        r = subprocess.run(command, capture_output=True, text=True, cwd=base, timeout=300)
        assert r.returncode == 2 and "Permission denied" in one_error_line(r.stderr), r.stderr
        assert os.listdir(ro) == []
    finally:
        shutil.rmtree(base)


def test_a_symbolic_link_is_not_replaced(tmp_path: Path) -> None:
    real = tmp_path / "real"
    write_package(envc.load(str(CARTPOLE)), real)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(CompileError, match="symbolic link"):
        write_package(envc.load(str(CARTPOLE)), tmp_path / "link", force_any=True)
    assert (tmp_path / "link").is_symlink() and is_envc_output(real)


# ---- which folders --force replaces --------------------------------------------------------------------


def test_every_output_folder_is_marked(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    files = write_package(envc.load(str(CARTPOLE)), out)
    assert out / MARKER in files
    marker = (out / MARKER).read_text()
    assert f'envc_version = "{envc.__version__}"' in marker and 'backend = "jax"' in marker
    assert f'spec_sha256 = "{hashlib.sha256(CARTPOLE.read_bytes()).hexdigest()}"' in marker
    assert is_envc_output(out)


def test_force_replaces_only_folders_envc_wrote(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    for flags in ([], ["--force"]):
        code, output = compile_in_process(str(CARTPOLE), "-o", str(mine), *flags)
        assert code == 2 and "was not written by envc" in one_error_line(output) and "--force-any" in output
        assert tree(mine) == {"thesis.tex": b"years of work"}
    code, output = compile_in_process(str(CARTPOLE), "-o", str(mine), "--force-any")
    assert code == 0 and not (mine / "thesis.tex").exists() and is_envc_output(mine)
    code, output = compile_in_process(str(TIC_TAC_TOE), "-o", str(mine))
    assert code == 2 and "pass --force to replace it" in one_error_line(output)
    code, output = compile_in_process(str(TIC_TAC_TOE), "-o", str(mine), "--force")
    assert code == 0 and (mine / "tic_tac_toe_jax").is_dir() and not (mine / "cartpole_jax").exists()


def test_force_replaces_an_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    write_package(envc.load(str(CARTPOLE)), tmp_path / "empty", force=True)
    assert is_envc_output(tmp_path / "empty")


@pytest.mark.parametrize("backend", ["jax", "rust"])
def test_a_package_from_before_the_marker_counts_as_envc_output(backend: str, tmp_path: Path) -> None:
    """`make demo` runs `envc compile specs/tcg.yaml -o tcgjax/ --force` over a tcgjax/ an older envc wrote: a
    folder holding exactly an envc package layout (plus build leftovers) is replaced; one more file and it is not."""
    spec = envc.load(str(CARTPOLE))
    old = tmp_path / "tcgjax"
    write_package(spec, old, backend=backend)
    (old / MARKER).unlink()
    (old / "build").mkdir()
    (old / "cartpole_jax.egg-info").mkdir()
    assert is_envc_output(old)
    code, output = compile_in_process(str(CARTPOLE), "-o", f"{old}/", "--force")
    assert code == 0, output
    assert (old / MARKER).is_file() and not (old / "build").exists()
    (old / MARKER).unlink()
    (old / "notes.txt").write_text("mine")
    assert not is_envc_output(old)
    with pytest.raises(CompileError, match="not written by envc"):
        write_package(spec, old, force=True)


def test_a_marker_that_is_not_a_file_does_not_count(tmp_path: Path) -> None:
    for make in (Path.mkdir, os.mkfifo):
        folder = tmp_path / make.__name__
        folder.mkdir()
        make(folder / MARKER)
        assert not is_envc_output(folder)


# ---- replacement that survives kills -----------------------------------------------------------------


def _wait_for(folder: Path, prefix: str, proc: subprocess.Popen[bytes], limit: float = 120) -> bool:
    """Poll until an entry starting with `prefix` appears in `folder` (True) or `proc` ends (False)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if any(name.startswith(prefix) for name in os.listdir(folder)):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.0005)
    raise AssertionError(f"no {prefix}* in {folder} after {limit} s")


def _effective(out: Path) -> dict[str, bytes]:
    """The package a reader finds at `out`, or where the next compile puts it back from."""
    if out.exists():
        return tree(out)
    hidden = [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.envc-old-")]
    assert len(hidden) == 1, f"{out} is gone and no old copy is kept: {os.listdir(out.parent)}"
    return tree(hidden[0])


@pytest.fixture
def references(tmp_path: Path) -> dict[Path, dict[str, bytes]]:
    """The complete package of each spec."""
    refs = {}
    for spec in (CARTPOLE, TIC_TAC_TOE):
        write_package(envc.load(str(spec)), tmp_path / "refs" / spec.stem)
        refs[spec] = tree(tmp_path / "refs" / spec.stem)
    return refs


def test_sigkill_at_any_point_leaves_the_old_or_the_new_package(
    tmp_path: Path, references: dict[Path, dict[str, bytes]]
) -> None:
    """`envc compile --force` is stopped (SIGSTOP) when its temporary folder appears, or a little later, then
    killed (SIGKILL). Each time the folder holds the complete old or the complete new package; the next compile
    removes what the killed one left. The old package carries 3,000 files of build output, so deleting it
    takes long enough to be caught in the middle."""
    out = tmp_path / "work" / "pkg"
    write_package(envc.load(str(CARTPOLE)), out)
    rng = random.Random(24)
    interrupted = 0
    for i, delay in enumerate([0.0, 0.003, 0.03, rng.uniform(0.0, 0.1)]):
        if out.exists() and not (out / "build").exists():
            for n in range(3000):
                (out / "build" / str(n % 30)).mkdir(parents=True, exist_ok=True)
                (out / "build" / str(n % 30) / f"{n}.o").write_bytes(b"%d" % n)
        old = _effective(out)
        spec = (TIC_TAC_TOE, CARTPOLE)[i % 2]
        proc = subprocess.Popen(
            [sys.executable, "-m", "envc.cli", "compile", str(spec), "-o", str(out), "--force"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            if _wait_for(out.parent, f".{out.name}.envc-new-{proc.pid}-", proc):
                time.sleep(delay)
                proc.send_signal(signal.SIGSTOP)
            stopped = _effective(out)
            assert stopped in (old, references[spec]), f"run {i}: a mix of old and new"
        finally:
            proc.kill()
            proc.wait()
        assert _effective(out) == stopped
        interrupted += bool(leftovers(out.parent))
    assert interrupted, "no compile was caught before it finished"
    r = cli("compile", str(CARTPOLE), "-o", str(out), "--force")
    assert r.returncode == 0, r.stderr
    assert tree(out) == references[CARTPOLE] and os.listdir(out.parent) == ["pkg"]


def test_a_kill_between_the_two_renames_is_undone_by_the_next_compile(
    tmp_path: Path, references: dict[Path, dict[str, bytes]]
) -> None:
    """Where folders cannot be swapped atomically, the old package is renamed aside before the new one moves in. A
    kill between the two leaves no package and the old one hidden; the next compile puts it back first."""
    out = tmp_path / "pkg"
    write_package(envc.load(str(CARTPOLE)), out)
    ended = subprocess.Popen(["true"])
    ended.wait()
    out.rename(tmp_path / f".pkg.envc-old-{ended.pid}-0123abcd")
    half = tmp_path / f".pkg.envc-new-{ended.pid}-0123abcd"
    (half / "tests").mkdir(parents=True)
    (half / "README.md").write_text("half")
    code, output = compile_in_process(str(TIC_TAC_TOE), "-o", str(out))
    assert code == 2 and "pass --force" in one_error_line(output)
    assert tree(out) == references[CARTPOLE] and leftovers(tmp_path) == []
    code, output = compile_in_process(str(TIC_TAC_TOE), "-o", str(out), "--force")
    assert code == 0 and tree(out) == references[TIC_TAC_TOE] and sorted(os.listdir(tmp_path)) == ["pkg", "refs"]


@pytest.fixture
def sleeper() -> Iterator[int]:
    proc = subprocess.Popen(["sleep", "60"])
    yield proc.pid
    proc.kill()
    proc.wait()


def test_without_a_lock_only_folders_of_ended_processes_are_stale(tmp_path: Path, sleeper: int) -> None:
    """On a file system without flock, a temporary folder is left alone while the process named in it runs."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    alive = tmp_path / f".pkg.envc-new-{sleeper}-0123abcd"
    gone = tmp_path / f".pkg.envc-new-{ended.pid}-0123abcd"
    mine = tmp_path / f".pkg.envc-new-{os.getpid()}-0123abcd"  # this process's, not in use: a pid reused
    for p in (alive, gone, mine):
        p.mkdir()
    _recover(tmp_path, locked=False)
    assert sorted(os.listdir(tmp_path)) == [alive.name]
    _recover(tmp_path, locked=True)  # holding the lock: every temporary folder is stale
    assert os.listdir(tmp_path) == []


def test_compiles_into_one_folder_at_the_same_time(tmp_path: Path) -> None:
    """Compiles into one parent folder wait for each other (flock on the folder): all succeed, nothing is left."""
    specs = [envc.load(str(p)) for p in (CARTPOLE, TIC_TAC_TOE)]
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            for k in range(3):
                write_package(specs[(n + k) % 2], tmp_path / "pkg", force=True)
        except BaseException as e:  # reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and os.listdir(tmp_path) == ["pkg"] and is_envc_output(tmp_path / "pkg")
