"""`envc play` (a person plays a spec in the terminal) and `envc run --record` (an episode as a GIF)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from envc import rng
from envc.ir import SpecIR
from envc.render import Renderer, state_dict

Chooser = Callable[[Any, np.ndarray], int]  # (state, legal mask) -> action id


class PlayError(ValueError):
    """Something `envc play` or `--record` cannot do (one line, exit 2)."""


def action_names(spec: SpecIR) -> list[str]:
    """The name of every flat action id: `kind(param=value, ...)`, enum values by member name."""
    enums = {e.name: e.members for e in spec.enums}
    names: list[str] = []
    for a in spec.actions:
        for local in range(a.size):
            vals: list[str] = []
            rem = local
            for p in reversed(a.params):
                size = p.stop - p.start
                v = p.start + rem % size
                rem //= size
                shown = enums[p.ty.enum][v] if p.ty.enum is not None and 0 <= v < len(enums[p.ty.enum]) else str(v)
                vals.append(f"{p.name}={shown}")
            names.append(f"{a.name}({', '.join(reversed(vals))})" if vals else a.name)
    return names


def summary(spec: SpecIR, d: dict[str, np.ndarray]) -> str:
    """A short state summary for specs without a text render: the scalar fields."""
    return "\n".join(f"{f.name} = {d[f.name].item()}" for f in spec.fields if not f.ty.shape)


def policy_chooser(run_dir: str, spec: SpecIR, seed: int) -> Chooser:
    """A trained policy of `run_dir` (envc.train) choosing greedy legal actions."""
    try:
        from envc.train.checkpoint import load_run
        from envc.train.networks import flat_obs
    except ImportError as e:
        raise PlayError(f"a trained opponent needs envc.train ({e}); use --opponent random") from None
    try:
        run = load_run(run_dir)
    except Exception as e:  # RunError and what a damaged folder raises: one line either way
        raise PlayError(f"cannot load the run {run_dir}: {e}") from None
    if run.spec.name != spec.name:
        raise PlayError(f"the run {run_dir} was trained on '{run.spec.name}', not '{spec.name}'")
    policy = run.policy()
    import jax

    key = jax.random.PRNGKey(seed)

    def choose(state: Any, mask: np.ndarray) -> int:
        obs = jax.tree.map(lambda x: np.asarray(x)[None], state.observation)
        return int(policy.act(key, flat_obs(obs), jax.numpy.asarray(mask[None]), True)[0])

    return choose


def random_chooser(seed: int) -> Chooser:
    """Uniformly random legal actions."""
    gen = np.random.default_rng(seed)
    return lambda state, mask: int(gen.choice(np.flatnonzero(mask)))


def play(
    env: Any,
    spec: SpecIR,
    seat: int = 0,
    opponent: str = "random",
    seed: int = 0,
    console: Console | None = None,
    read: Callable[[str], str] | None = None,
    max_steps: int = 10_000,
) -> np.ndarray:
    """Play one episode with a person at `seat` (every seat of a one-player spec); returns the returns."""
    console = console or Console()
    read = read or console.input
    if spec.box is not None and spec.players > 1:
        raise PlayError("envc play with a continuous action box needs a one-player spec")
    if not 0 <= seat < spec.players:
        raise PlayError(f"--seat must be between 0 and {spec.players - 1}")
    other = random_chooser(seed) if opponent == "random" else policy_chooser(opponent, spec, seed)
    renderer = Renderer(spec) if spec.render is not None else None
    names = action_names(spec)
    seed_key = rng.key_from_seed(seed)
    state = env.init(rng.fold_in(seed_key, 0))
    returns = np.zeros(spec.players, np.float64)

    def show() -> None:
        d = state_dict(env, state)
        console.print(renderer.text(d) if renderer is not None else summary(spec, d), markup=False, highlight=False)

    t = 0
    last: np.ndarray | None = None
    while not (bool(state.terminated) or bool(state.truncated)) and t < max_steps:
        show()
        if spec.box is not None:
            last = _read_box(spec, read, console, last)
            if last is None:
                console.print("quit")
                return returns
            t += 1
            state = env.step(state, last, rng.fold_in(seed_key, t))
            returns += np.asarray(state.rewards, np.float64)
            continue
        mask = np.asarray(state.legal_action_mask, np.bool_)
        player = int(state.current_player)
        legal = np.flatnonzero(mask)
        if player == seat or spec.players == 1:
            for i, a in enumerate(legal, 1):
                console.print(f"  {i:>3}. {names[a]}", markup=False, highlight=False)
            action = -1
            while action < 0:
                try:
                    text = read(f"player {player}, your move [1-{len(legal)}, q to quit]: ").strip()
                except EOFError:
                    raise PlayError("the input ended before the game did") from None
                if text.lower() in ("q", "quit"):
                    console.print("quit")
                    return returns
                match = [a for a in legal if names[a] == text]
                if match:
                    action = int(match[0])
                elif text.isdigit() and 1 <= int(text) <= len(legal):
                    action = int(legal[int(text) - 1])
                else:
                    console.print(f"not a legal move: {text!r}", markup=False)
        else:
            action = other(state, mask)
            console.print(f"player {player} plays {names[action]}", markup=False, highlight=False)
        t += 1
        state = env.step(state, action, rng.fold_in(seed_key, t))
        returns += np.asarray(state.rewards, np.float64)
    show()
    scores = ", ".join(f"player {p}: {r:+g}" for p, r in enumerate(returns))
    if spec.players > 1:
        best = returns.max()
        verdict = "draw" if (returns == best).all() else ("you win" if returns[seat] == best else "you lose")
        console.print(f"game over: {scores} ({verdict})", markup=False)
    else:
        console.print(f"episode over after {t} steps: return {returns[0]:+g}", markup=False)
    return returns


def _read_box(spec: SpecIR, read: Callable[[str], str], console: Console, last: np.ndarray | None) -> np.ndarray | None:
    """A continuous action typed by the player: one number per element, within the box (None: quit)."""
    assert spec.box is not None
    lo, hi, shape = spec.box.low, spec.box.high, tuple(spec.box.shape)
    n = int(np.prod(shape))
    again = f"Enter repeats {' '.join(f'{v:g}' for v in last.reshape(-1))}, " if last is not None else ""
    while True:
        try:
            text = read(f"your action: {n} number(s) in [{lo:g}, {hi:g}] ({again}q to quit): ").strip()
        except EOFError:
            raise PlayError("the input ended before the game did") from None
        if text.lower() in ("q", "quit"):
            return None
        if not text and last is not None:
            return last
        try:
            values = np.array([float(v) for v in text.replace(",", " ").split()], np.float32)
        except ValueError:
            values = np.zeros(0, np.float32)
        if values.size == n and np.all(np.isfinite(values)) and np.all((values >= lo) & (values <= hi)):
            return values.reshape(shape)
        console.print(f"not an action: {text!r} ({n} number(s) in [{lo:g}, {hi:g}])", markup=False)


def record(
    env: Any,
    spec: SpecIR,
    out: str | os.PathLike[str],
    seed: int = 0,
    max_steps: int = 1000,
    fps: int = 25,
    chooser: Chooser | None = None,
) -> int:
    """Play one episode (random legal actions, or `chooser`) and write its frames to a GIF or an MP4 (H.264, by
    imageio-ffmpeg's ffmpeg); returns the frames."""
    from PIL import Image

    target = Path(out)
    kind = target.suffix.lower()
    if kind not in (".gif", ".mp4"):
        raise PlayError(f"--record writes a .gif or .mp4 file, not '{target.suffix or target.name}'")
    if not target.parent.is_dir():
        raise PlayError(f"the folder {target.parent} does not exist")
    if spec.render is None:
        raise PlayError(f"spec '{spec.name}' declares no `render` section to record")
    renderer = Renderer(spec)
    choose = chooser or random_chooser(seed)
    gen = np.random.default_rng(seed)
    seed_key = rng.key_from_seed(seed)
    state = env.init(rng.fold_in(seed_key, 0))
    frames = [Image.fromarray(renderer.rgb(state_dict(env, state)))]
    for t in range(1, max_steps + 1):
        if bool(state.terminated) or bool(state.truncated):
            break
        if spec.box is not None:
            action: Any = gen.uniform(spec.box.low, spec.box.high, spec.box.shape).astype(np.float32)
        else:
            action = choose(state, np.asarray(state.legal_action_mask, np.bool_))
        state = env.step(state, action, rng.fold_in(seed_key, t))
        frames.append(Image.fromarray(renderer.rgb(state_dict(env, state))))
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=kind)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # as a file opened for writing would be, not mkstemp's 0600
    try:
        if kind == ".mp4":
            _write_mp4(tmp, [np.asarray(f) for f in frames], fps)
        else:
            frames[0].save(tmp, save_all=True, append_images=frames[1:], duration=10 * max(1, 100 // fps), loop=0)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(frames)


def _write_mp4(path: str, frames: list[np.ndarray], fps: int) -> None:
    """H.264 in yuv420p, which needs even sides: frames are padded with their edge by one row or column."""
    try:
        import imageio_ffmpeg
    except ImportError:
        raise PlayError("--record out.mp4 needs imageio-ffmpeg (pip install envc[video]); .gif needs nothing") from None
    h, w = frames[0].shape[:2]
    pad = ((0, h % 2), (0, w % 2), (0, 0))
    writer = imageio_ffmpeg.write_frames(
        path, (w + w % 2, h + h % 2), fps=fps, codec="libx264", macro_block_size=2, output_params=["-f", "mp4"]
    )
    writer.send(None)  # start ffmpeg
    try:
        for f in frames:
            writer.send(np.ascontiguousarray(np.pad(f[..., :3], pad, mode="edge")))
    finally:
        writer.close()


__all__ = ["PlayError", "action_names", "play", "record"]
