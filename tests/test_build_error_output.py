"""Build errors reach the terminal verbatim: cargo's `[u32; 2]` is text, not rich markup."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from envc.cli import _error
from envc.lower_rust.build import RustBuildError, cargo_build

BROKEN = """
fn main() {
    let pair: [u32; 2] = 7u8;
    let _ = pair;
}
"""


@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs a Rust toolchain")
def test_cargo_error_printed_verbatim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    crate = tmp_path / "broken"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "broken"\nversion = "0.1.0"\nedition = "2021"\n')
    (crate / "src" / "main.rs").write_text(BROKEN)
    with pytest.raises(RustBuildError) as info:
        cargo_build(crate / "Cargo.toml", cache=tmp_path / "cache")
    message = str(info.value)
    assert "[u32; 2]" in message  # cargo said it: the type of `pair`
    capsys.readouterr()
    _error(ValueError(message))  # how `envc verify/run --backend rust` and `envc bench` report a failed build
    printed = capsys.readouterr().err
    assert "[u32; 2]" in printed and "error[E0308]" in printed, printed
    assert printed.startswith("error: ")


def test_markup_and_emoji_codes_stay_text(capsys: pytest.CaptureFixture[str]) -> None:
    _error("rt::ops::ix in [/red] of [bold]x[/bold] with :smile: and a trailing \\")
    assert capsys.readouterr().err == "error: rt::ops::ix in [/red] of [bold]x[/bold] with :smile: and a trailing \\\n"
