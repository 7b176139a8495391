"""The tests an answer must pass: its YAML, then lint + type check of the merged spec, then derived L1 checks.

Every failure becomes a Problem with a location (`spec.yaml:line:col` or `answer line N`) and the offending
line, which is what the repair prompt shows the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import yaml

import envc
from envc import rng
from envc.diagnostics import Severity, Span
from envc.verify import level1

MAX_ANSWER = 256 * 1024
FENCE = re.compile(r"```[ \t]*ya?ml[ \t]*\r?\n(.*?)^[ \t]*```", re.S | re.M)


@dataclass(frozen=True)
class Problem:
    """One failed test, located."""

    where: str
    message: str
    context: str = ""

    def format(self) -> str:
        """`where: message` (the context on the following lines)."""
        return f"{self.where}: {self.message}" + (f"\n{self.context}" if self.context else "")


def parse_answer(text: str) -> tuple[Any, list[Problem]]:
    """The YAML mapping in the answer's one ```yaml block (anchors, aliases and tags refused)."""
    if len(text) > MAX_ANSWER:
        return None, [Problem("answer", f"the answer is longer than {MAX_ANSWER:,} characters")]
    blocks = FENCE.findall(text)
    if len(blocks) != 1:
        found = "no ```yaml block" if not blocks else f"{len(blocks)} ```yaml blocks"
        return None, [Problem("answer", f"answer with exactly one ```yaml block; found {found}")]
    return load_yaml(blocks[0])


def load_yaml(body: str) -> tuple[Any, list[Problem]]:
    """Plain data from YAML text, refusing anchors, aliases and tags (no expansion bombs, no object tags)."""
    try:
        for ev in yaml.parse(body, Loader=yaml.SafeLoader):
            if isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None):
                return None, [Problem(_at(ev.start_mark), "YAML anchors and aliases are not allowed; write values out")]
            tag = getattr(ev, "tag", None)
            if tag and not getattr(ev, "implicit", True) and tag != "!":
                return None, [Problem(_at(ev.start_mark), f"YAML tags ({tag}) are not allowed")]
        return yaml.safe_load(body), []
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        msg = " ".join(str(getattr(e, "problem", None) or e).split())
        if mark is None:
            return None, [Problem("answer", f"YAML syntax error: {msg}")]
        src = body.splitlines()
        context = _excerpt_line(mark.line + 1, src[mark.line]) if mark.line < len(src) else ""
        return None, [Problem(_at(mark), f"YAML syntax error: {msg}", context)]


def _at(mark: Any) -> str:
    return f"your yaml block, line {mark.line + 1}, column {mark.column + 1}"


def check_spec(path: str, text: str, episodes: int, max_steps: int, seed: int = 0) -> list[Problem]:
    """Lint (with types) the candidate spec text as `path`; if clean, run L1 on the reference interpreter."""
    spec, diags = envc.lint(path, text=text)
    errors = [d for d in diags if d.severity is Severity.ERROR]
    lines = text.splitlines()
    if errors or spec is None:
        return [
            Problem(_where(d.span), f"error[{d.code}]: {d.message}{_in(text, d.span.line)}", _excerpt(lines, d.span))
            for d in errors[:25]
        ]
    try:
        _strict_games(spec, episodes, max_steps, seed)
        # L1's leak check injects resampled (unreachable) states, where spec-bug fallbacks are expected
        checks = level1(spec, envc.build(spec, backend="reference", strict=False), episodes, seed, max_steps)
    except envc.SpecRuntimeError as e:
        msg = str(e).split("runtime error: ", 1)[-1]
        return [Problem(_where(e.span), f"runtime error in a random game: {msg}{_in(text, e.span.line)}",
                        _excerpt(lines, e.span))]  # fmt: skip
    except (ValueError, IndexError, TypeError) as e:  # an interpreter crash is reported, not raised at the user
        return [Problem("L1", f"the reference interpreter failed on this spec: {type(e).__name__}: {e}")]
    problems = []
    for c in checks:
        for f in c.failures[:3]:
            where, context = f"L1 {c.name}", ""
            m = re.search(r"invariant '(\w+)' is false", f)
            if m:
                span = locate(text, ("invariants", m.group(1)), path)
                if span is not None:
                    where, context = f"{_where(span)} (L1 {c.name})", _excerpt(lines, span)
            problems.append(Problem(where, f, context))
    return problems


def _strict_games(spec: envc.SpecIR, episodes: int, max_steps: int, seed: int) -> None:
    """Random legal games on the strict reference interpreter: a spec bug on a reachable state raises."""
    env = envc.build(spec, backend="reference", strict=True)
    gen = np.random.default_rng(seed)
    key = rng.key_from_seed(seed)
    for _ in range(episodes):
        key, k = rng.split(key)
        s = env.init(k)
        for _ in range(max_steps):
            mask = np.flatnonzero(np.asarray(s.legal_action_mask))
            if s.terminated or s.truncated or (spec.box is None and len(mask) == 0):
                break
            key, k = rng.split(key)
            if spec.box is not None:
                act: Any = gen.uniform(spec.box.low, spec.box.high, spec.box.shape).astype(np.float32)
            else:
                act = int(gen.choice(mask))
            s = env.step(s, act, k)


def _where(span: Span) -> str:
    return f"{span.path}:{span.line}:{span.col}"


def _excerpt(lines: list[str], span: Span) -> str:
    if not 1 <= span.line <= len(lines):
        return ""
    text = lines[span.line - 1]
    out = _excerpt_line(span.line, text)
    width = (span.end_col - span.col) if span.end_line == span.line else len(text) - span.col + 1
    return out + "\n" + " " * (len(str(span.line)) + 3 + span.col - 1) + "^" * max(1, min(width, 80))


def _excerpt_line(n: int, text: str) -> str:
    return f"{n} | {text}"


def locate(text: str, keys: tuple[str, ...], path: str) -> Span | None:
    """The span (in file `path`) of the key at `keys` (mapping keys from the root) in YAML text written by envc."""
    node: Any = yaml.compose(text, Loader=yaml.SafeLoader)
    key_node = None
    for step in keys:
        if not isinstance(node, yaml.MappingNode):
            return None
        hit = next(((k, v) for k, v in node.value if k.value == step), None)
        if hit is None:
            return None
        key_node, node = hit
    if key_node is None:
        return None
    m, e = key_node.start_mark, key_node.end_mark
    return Span(path, m.line + 1, m.column + 1, e.line + 1, e.column + 1)


def section_path(text: str, line: int) -> str:
    """The dotted key path (e.g. `actions.attack.effect`, `rules[checkup].body`) of the value covering `line`."""
    try:
        node: Any = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return ""
    out = ""
    while True:
        children: list[tuple[str, Any, int]] = []
        if isinstance(node, yaml.MappingNode):
            children = [(f".{k.value}" if out else str(k.value), v, k.start_mark.line + 1) for k, v in node.value]
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                label = str(i)
                if isinstance(v, yaml.MappingNode):
                    label = next((str(x.value) for k, x in v.value if k.value == "name"), label)
                children.append((f"[{label}]", v, v.start_mark.line + 1))
        hit = next((c for c in children if c[2] <= line <= _last_line(c[1])), None)
        if hit is None:
            return out
        out += hit[0]
        node = hit[1]


def _last_line(node: Any) -> int:
    """The 1-based last line of a node (a block collection ends with its last child, not at the next key)."""
    if isinstance(node, yaml.MappingNode) and node.value:
        return _last_line(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and node.value:
        return _last_line(node.value[-1])
    end = node.end_mark
    return int(end.line + (1 if end.column > 0 else 0))


def _in(text: str, line: int) -> str:
    p = section_path(text, line)
    return f" (in {p})" if p else ""
