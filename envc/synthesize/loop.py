"""The synthesis loop: for each todo item, ask, merge, test (lint + types + L1), repair with the located
diagnostics, until the item passes or its iteration budget or the dollar budget is spent."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag

import yaml

import envc
from envc.diagnostics import Severity
from envc.scrapers.draft import MODULE
from envc.scrapers.emit import dump, write_atomic

from .check import Problem, check_spec, load_yaml, parse_answer
from .items import DraftError, Item, items_of, merge
from .llm import DEFAULT_MODEL, Answer, Client, Prices, SynthError, Usage, load_prices
from .prompts import CACHE, Prompts, default_examples, read_examples

MAX_DRAFT = 4 * 1024 * 1024


@dataclass
class Config:
    """Budgets and checks of one synthesis run."""

    model: str = DEFAULT_MODEL
    max_cost: float = 10.0
    max_iterations: int = 4
    max_tokens: int = 16_000
    episodes: int = 10
    max_steps: int = 200
    seed: int = 0
    only: tuple[str, ...] = ()
    prices: str | None = None
    examples: tuple[str, ...] = ()
    base_url: str | None = None


@dataclass
class ItemReport:
    """What one item cost and how it ended."""

    name: str
    target: str
    iterations: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    status: str = "pending"
    detail: str = ""


@dataclass
class Report:
    """The whole run."""

    model: str
    max_cost: float
    items: list[ItemReport] = field(default_factory=list)
    output: str | None = None
    error: str = ""

    @property
    def usage(self) -> Usage:
        """Tokens of every call."""
        total = Usage()
        for r in self.items:
            total = total + r.usage
        return total

    @property
    def cost(self) -> float:
        """USD of every call."""
        return sum(r.cost for r in self.items)

    @property
    def ok(self) -> bool:
        """Every selected item passed."""
        return bool(self.items) and all(r.status == "passed" for r in self.items)


def read_draft(path: str) -> dict[str, Any]:
    """The draft as plain data (anchors/aliases refused, size capped)."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_DRAFT:
            raise SynthError(f"{path}: more than {MAX_DRAFT:,} bytes")
        text = p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SynthError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    doc, problems = load_yaml(text)
    if problems:
        where = problems[0].where.replace("your yaml block, line", "line")
        raise SynthError(f"{path}: {where}: {problems[0].message}")
    if not isinstance(doc, dict):
        raise SynthError(f"{path}: a spec must be a YAML mapping of sections")
    return doc


def spec_text(spec: dict[str, Any], header: str = "") -> str:
    """YAML text of a spec dict."""
    return dump(spec, header)


def synthesize(
    draft_path: str,
    out_path: str,
    config: Config,
    client: Any = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Formalize the draft's todo items into spec code; writes `out_path` atomically if any item passed."""
    say = progress or (lambda _msg: None)
    for opt, value in (("max-iterations", config.max_iterations), ("max-tokens", config.max_tokens),
                       ("episodes", config.episodes), ("max-steps", config.max_steps)):  # fmt: skip
        if value < 1:
            raise SynthError(f"--{opt} must be at least 1, got {value}")
    if not config.max_cost > 0:
        raise SynthError(f"--max-cost must be more than 0, got {config.max_cost}")
    _, diags = envc.lint(draft_path)  # located errors in the file itself (duplicate keys, anchors, types, ...)
    errors = [d for d in diags if d.severity is Severity.ERROR]
    if errors:
        shown = "; ".join(d.format() for d in errors[:3])
        raise SynthError(f"{draft_path} does not lint ({len(errors)} error(s)), fix the draft first: {shown}")
    draft = read_draft(draft_path)
    try:
        items = items_of(draft)
    except DraftError as e:
        raise SynthError(f"{draft_path}: {e}") from None
    if not items:
        raise SynthError(f"{draft_path} has no todo items: nothing to synthesize")
    unknown = [n for n in config.only if n not in {i.name for i in items}]
    if unknown:
        raise SynthError(f"--only {', '.join(unknown)}: no such todo item (have: {', '.join(i.name for i in items)})")
    prices = load_prices(config.prices)
    if config.model not in prices:
        raise SynthError(
            f"no price for model '{config.model}' in the price table (have: {', '.join(prices)}); "
            "add it with --prices FILE so the cost can be accounted"
        )
    try:
        examples = default_examples() + read_examples(list(config.examples))
    except OSError as e:
        raise SynthError(f"cannot read an example spec: {e}") from None
    client = client or Client(config.model, config.max_tokens, config.base_url)
    run = _Run(config, prices[config.model], Prompts(examples), client, out_path, say)
    report = run.all(draft, items, draft_path)
    return report


class _Run:
    def __init__(
        self, config: Config, prices: Prices, prompts: Prompts, client: Any, out_path: str,
        say: Callable[[str], None],
    ) -> None:  # fmt: skip
        self.config = config
        self.prices = prices
        self.prompts = prompts
        self.client = client
        self.out_path = out_path
        self.say = say
        self.spent = 0.0
        self.dearest = 0.0  # the most expensive call so far: the estimate for the next one

    def all(self, draft: dict[str, Any], items: list[Item], draft_path: str) -> Report:
        report = Report(self.config.model, self.config.max_cost)
        spec = copy.deepcopy(draft)
        pending = list(items)
        system = self.prompts.system()
        sources = list(dict.fromkeys(urldefrag(i.source).url for i in items if i.source))
        source = self.prompts.source(str(draft.get("name", "")), sources, items, MODULE, draft)
        selected = [i for i in items if not self.config.only or i.name in self.config.only]
        module_failed = False
        try:
            for item in selected:
                rep = ItemReport(item.name, item.target)
                report.items.append(rep)
                if module_failed:
                    rep.status, rep.detail = "skipped", f"the '{MODULE}' item did not pass"
                    continue
                self.say(f"{item.name}: asking {self.config.model}")
                try:
                    new = self.item(item, spec, pending, system, source, rep)
                except SynthError as e:
                    rep.status, rep.detail = "error", str(e)
                    report.error = str(e)
                    break
                if new is not None:
                    spec = new
                    pending = [p for p in pending if p.name != item.name]
                elif item.kind == "module":
                    module_failed = True
        finally:
            if any(r.status == "passed" for r in report.items):
                left = len(spec.get("todo") or [])
                header = (
                    f"Spec written by `envc synthesize` (model {self.config.model}) from {Path(draft_path).name}.\n"
                    + (f"{left} todo item(s) are not formalized yet.\n" if left else "")
                )
                write_atomic(self.out_path, spec_text(spec, header))
                report.output = self.out_path
        return report

    def item(
        self, item: Item, spec: dict[str, Any], pending: list[Item], system: list[dict[str, Any]], source: str,
        rep: ItemReport,
    ) -> dict[str, Any] | None:  # fmt: skip
        cfg = self.config
        first = self.prompts.item(item, spec, pending, Path(self.out_path).name, cfg.episodes, cfg.max_steps)
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "text", "text": source}, {"type": "text", "text": first}]}
        ]
        problems: list[Problem] = []
        for attempt in range(1, cfg.max_iterations + 1):
            if self.spent + self.dearest > cfg.max_cost:
                rep.status = "budget"
                rep.detail = f"${self.spent:.4f} spent; the next call could pass --max-cost ${cfg.max_cost:.2f}"
                return None
            _mark_cache(messages)
            answer = self.client.ask(system, messages)
            self._account(rep, answer)
            if answer.stop_reason == "refusal":
                rep.status, rep.detail = "failed", "the model declined to answer"
                return None
            candidate, problems = self.evaluate(item, spec, pending, answer)
            if candidate is not None:
                rep.status = "passed"
                self.say(f"{item.name}: passed after {attempt} iteration(s)")
                return candidate
            self.say(f"{item.name}: attempt {attempt} failed ({len(problems)} problem(s)): {problems[0].where}")
            messages += [
                {"role": "assistant", "content": answer.text or "(no answer)"},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": self.prompts.repair(item, problems, attempt + 1, cfg.max_iterations),
                        }
                    ],
                },
            ]
        rep.status = "failed"
        rep.detail = problems[0].format().splitlines()[0] if problems else ""
        return None

    def evaluate(
        self, item: Item, spec: dict[str, Any], pending: list[Item], answer: Answer
    ) -> tuple[dict[str, Any] | None, list[Problem]]:
        """The merged spec if the answer passes every test, else the problems."""
        if answer.stop_reason == "max_tokens":
            return None, [
                Problem("answer", f"the answer was cut off at max_tokens ({self.config.max_tokens}); write less")
            ]
        fragment, problems = parse_answer(answer.text)
        if problems:
            return None, problems
        merged, violations = merge(spec, item, fragment, pending)
        if violations:
            return None, [Problem("answer", v) for v in violations]
        text = spec_text(merged)
        problems = check_spec(
            Path(self.out_path).name, text, self.config.episodes, self.config.max_steps, self.config.seed
        )
        return (merged, []) if not problems else (None, problems)

    def _account(self, rep: ItemReport, answer: Answer) -> None:
        cost = answer.usage.cost(self.prices)
        rep.iterations += 1
        rep.usage = rep.usage + answer.usage
        rep.cost += cost
        self.spent += cost
        self.dearest = max(self.dearest, cost)


def _mark_cache(messages: list[dict[str, Any]]) -> None:
    """Cache breakpoints: the source block (first block of the first message) and the last user block."""
    for m in messages:
        if isinstance(m["content"], list):
            for b in m["content"]:
                b.pop("cache_control", None)
    messages[0]["content"][0]["cache_control"] = CACHE
    last = next(m for m in reversed(messages) if m["role"] == "user")
    last["content"][-1]["cache_control"] = CACHE


def dump_report(report: Report) -> str:
    """The report as YAML (for --report FILE)."""
    return yaml.safe_dump(
        {
            "model": report.model,
            "max_cost_usd": report.max_cost,
            "cost_usd": round(report.cost, 6),
            "output": report.output,
            "items": [
                {
                    "name": r.name,
                    "target": r.target,
                    "status": r.status,
                    "iterations": r.iterations,
                    "input_tokens": r.usage.input,
                    "output_tokens": r.usage.output,
                    "cache_read_tokens": r.usage.cache_read,
                    "cache_write_tokens": r.usage.cache_write,
                    "cost_usd": round(r.cost, 6),
                    "detail": r.detail,
                }
                for r in report.items
            ],
        },
        sort_keys=False,
    )
