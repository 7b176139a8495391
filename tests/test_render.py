"""The `render` section: text and RGB renders, identical on every backend, gymnasium render modes, record, play."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from rich.console import Console
from typer.testing import CliRunner

import envc
from envc import rng
from envc.cli import app
from envc.play import play
from envc.render import Renderer, state_dict

ROOT = Path(__file__).resolve().parents[1]
TTT = str(ROOT / "specs" / "tic_tac_toe.yaml")
CARTPOLE = str(ROOT / "specs" / "cartpole.yaml")
RENDERED = [
    "specs/tic_tac_toe.yaml",
    "specs/connect_four.yaml",
    "specs/kuhn_poker.yaml",
    "specs/tcg.yaml",
    "specs/cartpole.yaml",
    "docs/examples/acrobot.yaml",
    "docs/examples/mountain_car.yaml",
    "docs/examples/pendulum.yaml",
]


def test_tic_tac_toe_text_of_a_known_state() -> None:
    spec = envc.load(TTT)
    env = envc.build(spec)
    d = env.state_to_dict(env.init(rng.key_from_seed(0)))
    d["board"] = np.array([[1, 0, 2], [0, 1, 0], [2, 0, 1]], np.int8)  # Mark: empty, x, o
    d["winner"] = np.int8(1)
    assert Renderer(spec).text(d) == "X . O\n. X .\nO . X\nx wins"


@pytest.mark.parametrize("path", RENDERED)
def test_every_shipped_render_draws(path: str) -> None:
    spec = envc.load(str(ROOT / path))
    env = envc.build(spec)
    r = Renderer(spec)
    d = state_dict(env, env.init(rng.key_from_seed(1)))
    img = r.rgb(d)
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 1  # something is drawn on the background
    assert r.text(d).strip()


def _pole_column(img: np.ndarray) -> float:
    """Mean x of the pole's (tan) pixels in the upper part of the cartpole image."""
    tan = np.all(img == np.array([202, 152, 101], np.uint8), axis=-1)
    _, xs = np.nonzero(tan[:250])
    assert xs.size > 0
    return float(xs.mean())


def test_cartpole_pole_moves_with_theta() -> None:
    spec = envc.load(CARTPOLE)
    r = Renderer(spec)
    d = state_dict(envc.build(spec), envc.build(spec).init(rng.key_from_seed(0)))
    d["x"], d["theta"] = np.float32(0.0), np.float32(0.0)
    upright = r.rgb(d)
    assert upright.shape == (400, 600, 3)
    d["theta"] = np.float32(0.2)
    right = _pole_column(r.rgb(d))
    d["theta"] = np.float32(-0.2)
    left = _pole_column(r.rgb(d))
    assert left < _pole_column(upright) - 5 < right - 10


@pytest.mark.parametrize("backend", ["jax", "rust"])
def test_same_render_on_every_backend(backend: str) -> None:
    spec = envc.load(TTT)
    ref, other = envc.build(spec, "reference"), envc.build(spec, backend)
    r = Renderer(spec)
    key = rng.key_from_seed(3)
    a, b = ref.init(key), other.init(key)
    gen = np.random.default_rng(0)
    for t in range(1, 10):
        da, db = state_dict(ref, a), state_dict(other, b)
        assert r.text(da) == r.text(db)
        assert np.array_equal(r.rgb(da), r.rgb(db))
        if a.terminated:
            break
        action = int(gen.choice(np.flatnonzero(np.asarray(a.legal_action_mask))))
        a, b = ref.step(a, action, rng.fold_in(key, t)), other.step(b, action, rng.fold_in(key, t))


def test_bad_render_expression_is_located(tmp_path: Path) -> None:
    text = Path(TTT).read_text()
    bad = tmp_path / "ttt.yaml"
    bad.write_text(text.replace("to move ({turn})", "to move ({tunr})"))
    result = CliRunner().invoke(app, ["lint", str(bad)])
    assert result.exit_code == 1
    line = next(i for i, s in enumerate(bad.read_text().split("\n"), 1) if "{tunr}" in s)
    col = bad.read_text().split("\n")[line - 1].index("tunr") + 1
    assert re.search(rf"ttt.yaml:{line}:{col}: error\[E030\]: unknown name 'tunr'", result.output), result.output


def test_bad_color_and_unknown_key(tmp_path: Path) -> None:
    text = Path(CARTPOLE).read_text()
    bad = tmp_path / "cp.yaml"
    bad.write_text(text.replace("color: tan", "color: tann"))
    assert "unknown color 'tann'" in CliRunner().invoke(app, ["lint", str(bad)]).output
    bad.write_text(text.replace("width: 600", "widht: 600"))
    assert "unknown key 'widht' (did you mean 'width'?)" in CliRunner().invoke(app, ["lint", str(bad)]).output


def test_gymnasium_render_modes() -> None:
    from gymnasium.utils.env_checker import check_env

    from envc.gymnasium import make_env

    env = make_env(envc.load(CARTPOLE), backend="reference", render_mode="rgb_array")
    check_env(env, skip_render_check=False)
    env.reset(seed=0)
    assert env.render().shape == (400, 600, 3)
    ansi = make_env(envc.load(CARTPOLE), backend="reference", render_mode="ansi")
    ansi.reset(seed=0)
    assert ansi.render().startswith("x ")
    with pytest.raises(ValueError, match="render_mode"):
        make_env(envc.load(CARTPOLE), backend="reference", render_mode="human")


def test_run_record_writes_a_gif(tmp_path: Path) -> None:
    out = tmp_path / "cp.gif"
    result = CliRunner().invoke(app, ["run", CARTPOLE, "--episodes", "1", "--record", str(out)])
    assert result.exit_code == 0, result.output
    frames = int(re.search(r"\((\d+) frames\)", result.output).group(1))  # type: ignore[union-attr]
    with Image.open(out) as gif:  # Pillow merges identical consecutive frames, adding up their durations
        assert gif.size == (600, 400) and 5 < gif.n_frames <= frames
        total = 0
        for i in range(gif.n_frames):
            gif.seek(i)
            total += gif.info["duration"]
        assert total == frames * 40  # 25 frames a second
    bad = CliRunner().invoke(app, ["run", CARTPOLE, "--episodes", "1", "--record", str(tmp_path / "x.avi")])
    assert bad.exit_code == 2 and "error:" in bad.output and not (tmp_path / "x.avi").exists()


def test_run_record_writes_an_mp4_of_the_same_frames(tmp_path: Path) -> None:
    """H.264 via imageio-ffmpeg: every frame is there, and each decodes close to the GIF's (lossy, yuv420p)."""
    import imageio_ffmpeg

    gif, mp4 = tmp_path / "cp.gif", tmp_path / "cp.mp4"
    for out in (gif, mp4):
        result = CliRunner().invoke(app, ["run", CARTPOLE, "--episodes", "1", "--seed", "3", "--record", str(out)])
        assert result.exit_code == 0, result.output
    frames = imageio_ffmpeg.read_frames(str(mp4))
    meta = next(frames)
    assert meta["size"] == (600, 400) and meta["fps"] == 25 and meta["codec"] == "h264"
    decoded = [np.frombuffer(f, np.uint8).reshape(400, 600, 3) for f in frames]
    n = int(re.search(r"\((\d+) frames\)", result.output).group(1))  # type: ignore[union-attr]
    assert len(decoded) == n
    with Image.open(gif) as g:  # the GIF's first and last frames are the episode's first and last
        first = np.asarray(g.convert("RGB"))
        g.seek(g.n_frames - 1)
        last = np.asarray(g.convert("RGB"))
    for ours, want in ((decoded[0], first), (decoded[-1], last)):
        assert np.abs(ours.astype(int) - want.astype(int)).mean() < 3.0
    assert not np.array_equal(decoded[0], decoded[-1])


def test_play_tic_tac_toe_to_the_end() -> None:
    moves = "\n".join(["nonsense", "1"] + ["1"] * 8) + "\n"
    result = CliRunner().invoke(app, ["play", TTT, "--seat", "0", "--seed", "0"], input=moves)
    assert result.exit_code == 0, result.output
    assert "place(row=0, col=0)" in result.output and "not a legal move: 'nonsense'" in result.output
    assert re.search(r"game over: player 0: [+-]\d, player 1: [+-]\d \((you win|you lose|draw)\)", result.output)


def test_play_a_continuous_action_spec() -> None:
    """Pendulum's torque typed as a number in the box; Enter repeats it, out-of-box or malformed input is refused."""
    pendulum = str(ROOT / "docs/examples/pendulum.yaml")
    r = CliRunner().invoke(app, ["play", pendulum], input="0.5\n\n9\nhello\n-2\nq\n")
    assert r.exit_code == 0, r.output
    assert "your action: 1 number(s) in [-2, 2] (q to quit)" in r.output
    assert "Enter repeats 0.5" in r.output and "Enter repeats -2" in r.output
    assert "not an action: '9'" in r.output and "not an action: 'hello'" in r.output
    assert r.output.count("step_count = ") == 4 and "step_count = 3" in r.output  # 3 steps taken, then quit
    env, spec = envc.build(envc.load(pendulum), "reference"), envc.load(pendulum)
    answers = iter(["2"] * 200 + ["q"])  # full torque to the end of the 200-step episode
    returns = play(env, spec, read=lambda _prompt: next(answers), console=Console(file=io.StringIO()))
    assert returns.shape == (1,) and returns[0] < 0  # pendulum's reward is a cost


def test_play_refuses_what_it_cannot_do() -> None:
    r = CliRunner().invoke(app, ["play", TTT], input="")
    assert r.exit_code == 2 and "input ended" in r.output


def test_rust_gym_env_renders_as_the_reference() -> None:
    from envc.gymnasium import make_env

    spec = envc.load(CARTPOLE)
    rust = envc.build(spec, "rust").gym_env(render_mode="rgb_array")
    ref = make_env(spec, backend="reference", render_mode="rgb_array")
    rust.reset(seed=4)
    ref.reset(seed=4)
    for _ in range(5):
        assert np.array_equal(rust.render(), ref.render())
        rust.step(1)
        ref.step(1)
    ansi = envc.build(envc.load(TTT), "rust").gym_env(render_mode="ansi")
    ansi.reset(seed=0)
    assert ansi.render().startswith(". . .\n. . .\n. . .\nplayer ")


def test_pgx_to_svg_draws_the_render() -> None:
    import jax

    spec = envc.load(TTT)
    pg = envc.build(spec, "jax").pgx()
    state = pg.init(jax.random.PRNGKey(0))
    state = pg.step(state, 4)
    svg = state.to_svg()
    assert svg.startswith("<svg") and ". X ." in svg
    batch = jax.vmap(pg.init)(jax.random.split(jax.random.PRNGKey(0), 3))
    assert batch.to_svg().count("<svg") == 4  # three drawings in one


def test_pettingzoo_ansi_render() -> None:
    from pettingzoo.test import api_test

    from envc.pettingzoo import env, parallel_env

    aec = env(TTT, backend="reference", render_mode="ansi")
    api_test(aec, num_cycles=5)
    aec.reset(seed=0)
    aec.step(int(np.flatnonzero(aec.observe(aec.agent_selection)["action_mask"])[0]))
    assert aec.render().startswith("X . .\n")
    par = parallel_env(TTT, backend="reference", render_mode="ansi")
    par.reset(seed=0)
    assert par.render().startswith(". . .\n. . .\n. . .\n")
    with pytest.raises(ValueError, match="render_mode"):
        env(TTT, backend="reference", render_mode="human")


def test_play_against_a_trained_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    trained = CliRunner().invoke(app, ["train", TTT, "-o", str(run_dir), "--steps", "512", "--num-envs", "8"])
    assert trained.exit_code == 0, trained.output
    result = CliRunner().invoke(app, ["play", TTT, "--opponent", str(run_dir), "--seat", "1"], input="1\n" * 5)
    assert result.exit_code == 0, result.output
    assert "player 0 plays place(" in result.output and "game over:" in result.output
    other = CliRunner().invoke(app, ["play", str(ROOT / "specs/connect_four.yaml"), "--opponent", str(run_dir)])
    assert other.exit_code == 2 and "trained on 'tic_tac_toe'" in other.output


def test_render_is_in_the_build_key_not_the_run_key(tmp_path: Path) -> None:
    from envc.ir import build_digest, content_digest

    spec = envc.load(TTT)
    changed = tmp_path / "tic_tac_toe.yaml"
    changed.write_text(Path(TTT).read_text().replace("{winner} wins", "{winner} won"))
    other = envc.load(str(changed))
    assert content_digest(spec) == content_digest(other)  # a trained run survives a render change ...
    assert build_digest(spec) != build_digest(other)  # ... a generated package, which embeds it, does not
    shifted = tmp_path / "shifted" / "tic_tac_toe.yaml"
    shifted.parent.mkdir()
    shifted.write_text("# one more line\n" + Path(TTT).read_text())
    moved = envc.load(str(shifted))
    assert build_digest(moved) == build_digest(spec) and moved.portable_json() == spec.portable_json()
