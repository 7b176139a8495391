"""The synthesis loop: first the outline (the model's plan of the spec, checked as a skeleton), then for each
todo item ask, merge, test (lint + types + L1), repair with the located diagnostics, until the item passes or
its iteration budget or the dollar budget is spent. Each request carries only the rule sections it needs,
within --max-request-tokens (estimated, see chunks.py)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag

import yaml

import envc
from envc.diagnostics import Severity
from envc.scrapers.draft import MODULE
from envc.scrapers.emit import dump, write_atomic

from .check import Problem, check_spec, load_yaml, parse_answer
from .chunks import Section, chunk, fit, repeated, sections_of, tokens
from .items import DraftError, Item, items_of, merge
from .llm import DEFAULT_MODEL, KEY_VARS, Answer, Prices, SynthError, Usage, default_model, load_prices, make_client
from .outline import Plan, apply_outline, merge_outlines
from .prompts import CACHE, Prompts, default_examples, read_examples
from .view import reads

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
    provider: str = "anthropic"
    outline: bool = True
    max_request_tokens: int = 80_000


@dataclass
class ItemReport:
    """What one item (or the outline) cost and how it ended."""

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
    outline: str | None = None
    error: str = ""
    priced: bool = True

    @property
    def usage(self) -> Usage:
        """Tokens of every call."""
        total = Usage()
        for r in self.items:
            total = total + r.usage
        return total

    @property
    def cost(self) -> float:
        """USD of every call (0 when the model has no price)."""
        return sum(r.cost for r in self.items)

    @property
    def ok(self) -> bool:
        """Every selected item passed."""
        return bool(self.items) and all(r.status == "passed" for r in self.items)


@dataclass(frozen=True)
class Request:
    """One request as it will be sent (first attempt), with its estimated size."""

    name: str
    system: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    sections: list[Section]
    tokens: int
    parts: dict[str, int]
    repeats: list[str]

    @property
    def cut(self) -> int:
        """Characters of rule text left out to keep the request within its budget."""
        return sum(s.cut + s.after[1] for s in self.sections)


@dataclass
class Estimate:
    """What the planned first attempts cost before any answer: tokens and USD (None: no price)."""

    requests: list[Request]
    budget: int
    input_tokens: int
    input_cost: float | None
    output_cost: float | None
    max_tokens: int
    more: str = ""


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


@dataclass
class _Prepared:
    """Everything a run needs before its first call."""

    draft: dict[str, Any]
    items: list[Item]
    sections: list[Section]
    prompts: Prompts
    prices: Prices | None
    system: list[dict[str, Any]]
    tables: dict[str, Any]
    name: str
    sources: list[str]
    budget: int
    contexts: dict[tuple[str, ...], str] = field(default_factory=dict)

    def context(self, read: list[str]) -> str:
        """The block an item request starts with: the game, and the rows of the tables the item reads."""
        key = tuple(read)
        if key not in self.contexts:
            shown = {k: v for k, v in self.tables.items() if k in read}
            self.contexts[key] = self.prompts.context(
                self.name, self.sources, shown, self.budget // 8, len(self.tables) - len(shown)
            )
        return self.contexts[key]


def resolve(config: Config) -> Config:
    """The config with its model filled in (the provider's default; a server at --base-url must be named)."""
    if config.provider not in KEY_VARS:
        raise SynthError(f"--provider {config.provider}: use one of {', '.join(KEY_VARS)}")
    if config.model:
        return config
    if config.provider == "openai" and config.base_url:
        raise SynthError(f"--model: name the model that {config.base_url} serves (e.g. --model qwen3-coder)")
    return replace(config, model=default_model(config.provider))


def _prepare(draft_path: str, config: Config) -> _Prepared:
    """Checks of the options and the draft (each failure one SynthError), the prompts' fixed parts."""
    for opt, value in (("max-iterations", config.max_iterations), ("max-tokens", config.max_tokens),
                       ("episodes", config.episodes), ("max-steps", config.max_steps)):  # fmt: skip
        if value < 1:
            raise SynthError(f"--{opt} must be at least 1, got {value}")
    if not config.max_cost > 0:
        raise SynthError(f"--max-cost must be more than 0, got {config.max_cost}")
    if config.max_request_tokens < 1000:
        raise SynthError(f"--max-request-tokens must be at least 1000, got {config.max_request_tokens}")
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
    prices = load_prices(config.prices).get(config.model)
    try:
        examples = default_examples() + read_examples(list(config.examples))
    except OSError as e:
        raise SynthError(f"cannot read an example spec: {e}") from None
    prompts = Prompts(examples)
    tables = {k: v for k, v in (draft.get("tables") or {}).items() if isinstance(v, dict)}
    sources = list(dict.fromkeys(urldefrag(i.source).url for i in items if i.source))
    name = str(draft.get("name", ""))
    return _Prepared(
        draft, items, sections_of(items, tables), prompts, prices, prompts.system(), tables, name, sources,
        config.max_request_tokens,
    )  # fmt: skip


def _fitted(
    prep: _Prepared, budget: int, sections: list[Section], render: Callable[[list[Section]], str], first: str = ""
) -> tuple[str, list[Section], dict[str, int]]:
    """The request text with `sections` cut to what the budget leaves after the fixed parts."""
    fixed = tokens(prep.system[0]["text"]) + tokens(first) + tokens(render([]))
    shown = fit(sections, budget - fixed)
    text = render(shown)
    return text, shown, {"system": tokens(prep.system[0]["text"]), "context": tokens(first), "request": tokens(text)}


def _request(
    prep: _Prepared, name: str, blocks: list[str], sections: list[Section], parts: dict[str, int]
) -> Request:
    messages = [{"role": "user", "content": [{"type": "text", "text": b} for b in blocks]}]
    tables = prep.draft.get("tables") or {}
    repeats = repeated([prep.system[0]["text"], *blocks], sections, tables if isinstance(tables, dict) else {})
    return Request(name, prep.system, messages, sections, sum(parts.values()), parts, repeats)


def _outline_text(prep: _Prepared, shown: list[Section], part: int, parts: int, so_far: str) -> str:
    last = prep.sections[-1].id if prep.sections else "-"
    return prep.prompts.outline(prep.name, prep.sources, shown, prep.draft, prep.items, part, parts, last, so_far)


def outline_chunks(prep: _Prepared, config: Config, sections: list[Section], so_far: int = 0) -> list[list[Section]]:
    """The rule sections in consecutive chunks, one outline request each, every request within the budget: all
    of them in one request if they fit, else chunks that leave room for the outline of the earlier parts
    (`so_far` tokens, at least an eighth of the budget)."""
    budget = config.max_request_tokens
    system = tokens(prep.system[0]["text"])
    if not so_far and system + tokens(_outline_text(prep, sections, 1, 1, "")) <= budget:
        return [sections]
    fixed = system + tokens(_outline_text(prep, [], 99, 99, "x")) + max(so_far, budget // 8) + 20  # span, numbers
    return chunk(sections, max(budget - fixed, 500))


def outline_request(
    prep: _Prepared, config: Config, shown: list[Section] | None = None, part: int = 1, parts: int = 1,
    so_far: str | None = None,
) -> Request:  # fmt: skip
    """One outline request: the role and reference, then its rule sections (no table rows), and for a later part
    the outline so far (`None`: not known yet, its room is reserved in the estimate)."""
    shown = prep.sections if shown is None else shown
    name = "outline" if parts == 1 else f"outline_part{part}"
    reserve = 0
    if so_far is None and part > 1:
        reserve = config.max_request_tokens // 8
        so_far = f"(the outline that parts 1 to {part - 1} answer, up to ~{reserve:,} tokens)"
    text = _outline_text(prep, shown, part, parts, so_far or "")
    parts_ = {"system": tokens(prep.system[0]["text"]), "context": 0, "request": tokens(text)}
    if reserve:
        parts_["reserve"] = reserve - tokens(so_far or "")
    return _request(prep, name, [text], shown, parts_)


def item_request(
    prep: _Prepared, config: Config, out_name: str, item: Item, spec: dict[str, Any], pending: list[Item],
    plan: Plan | None,
) -> Request:  # fmt: skip
    """The request for one item: the shared tables block, then only the sections this item needs."""
    ids = (plan.sections if plan else {}).get(item.name)
    by_id = {s.id: s for s in prep.sections}
    mine = [s for s in prep.sections if s.item == item.name] if ids is None else [by_id[i] for i in ids]
    read = reads(item, spec, pending, "\n".join(s.body for s in mine))
    context = prep.context(read)
    current = prep.prompts.current(spec, item, pending, read)

    def render(shown: list[Section]) -> str:
        return prep.prompts.item(
            item, shown, spec, pending, out_name, config.episodes, config.max_steps, read, current
        )

    text, shown, parts = _fitted(prep, config.max_request_tokens, mine, render, context)
    return _request(prep, item.name, [context, text], shown, parts)


def estimate(prep: _Prepared, config: Config, out_name: str) -> Estimate:
    """The first attempt of every request known before any answer: the outline (if on) and the draft's items."""
    reqs = []
    if config.outline:
        chunks = outline_chunks(prep, config, prep.sections)
        reqs += [outline_request(prep, config, c, k, len(chunks)) for k, c in enumerate(chunks, 1)]
    selected = [i for i in prep.items if not config.only or i.name in config.only]
    reqs += [item_request(prep, config, out_name, i, prep.draft, prep.items, None) for i in selected]
    total = sum(r.tokens for r in reqs)
    p = prep.prices
    more = "the outline may plan more items; their requests are sized the same way" if config.outline else ""
    n_parts = sum(r.name.startswith("outline_part") for r in reqs)
    if n_parts > 1:
        room = config.max_request_tokens // 8
        more += f"; outline parts 2 to {n_parts} will carry the outline so far, ~{room:,} tokens each (in their totals)"
    return Estimate(
        reqs, config.max_request_tokens, total,
        None if p is None else total * p.input / 1e6,
        None if p is None else len(reqs) * config.max_tokens * p.output / 1e6,
        config.max_tokens, more,
    )  # fmt: skip


def dry_run(draft_path: str, out_path: str, config: Config) -> Estimate:
    """The requests a run would send first, built without a key, a client or a server."""
    config = resolve(config)
    prep = _prepare(draft_path, config)
    return estimate(prep, config, Path(out_path).name)


def outline_path(out_path: str) -> str:
    """Where the outline is saved: next to the spec, `<out stem>.outline.yaml`."""
    p = Path(out_path)
    return str(p.with_name(p.stem + ".outline.yaml"))


def synthesize(
    draft_path: str,
    out_path: str,
    config: Config,
    client: Any = None,
    progress: Callable[[str], None] | None = None,
    show: Callable[[str, Any], None] | None = None,
) -> Report:
    """Outline, then formalize the todo items into spec code; writes `out_path` atomically if any item passed.

    `show("plan", Estimate)` is called before the first call, `show("outline", yaml_text)` once the outline passes.
    """
    say = progress or (lambda _msg: None)
    tell = show or (lambda _kind, _what: None)
    config = resolve(config)
    prep = _prepare(draft_path, config)
    tell("plan", estimate(prep, config, Path(out_path).name))
    if client is None:
        client = make_client(config.provider, config.model, config.max_tokens, config.base_url)
    run = _Run(config, prep, client, out_path, say, tell)
    return run.all(draft_path)


class _Run:
    def __init__(
        self, config: Config, prep: _Prepared, client: Any, out_path: str, say: Callable[[str], None],
        tell: Callable[[str, Any], None],
    ) -> None:  # fmt: skip
        self.config = config
        self.prep = prep
        self.prices = prep.prices
        self.prompts = prep.prompts
        self.client = client
        self.out_path = out_path
        self.say = say
        self.tell = tell
        self.spent = 0.0
        self.dearest = 0.0  # the most expensive call so far: the estimate for the next one

    def all(self, draft_path: str) -> Report:
        prep, cfg = self.prep, self.config
        report = Report(cfg.model, cfg.max_cost, priced=self.prices is not None)
        spec = copy.deepcopy(prep.draft)
        items = prep.items
        plan: Plan | None = None
        selected = [i for i in items if not cfg.only or i.name in cfg.only]
        module_failed = False
        try:
            if cfg.outline:
                rep = ItemReport("outline", "outline")
                report.items.append(rep)
                self.say(f"outline: asking {cfg.model}")
                try:
                    plan = self.outline(rep)
                except SynthError as e:
                    rep.status, rep.detail = "error", str(e)
                    report.error = str(e)
                    return report
                if plan is None:
                    for i in selected:
                        report.items.append(ItemReport(i.name, i.target, status="skipped",
                                                       detail="the outline did not pass"))  # fmt: skip
                    return report
                report.outline = outline_path(self.out_path)
                spec = plan.spec
                items = items_of(spec)
                selected = [i for i in items if not cfg.only or i.name in cfg.only or i.name in plan.new_items]
            pending = list(items)
            for item in selected:
                rep = ItemReport(item.name, item.target)
                report.items.append(rep)
                if module_failed:
                    rep.status, rep.detail = "skipped", f"the '{MODULE}' item did not pass"
                    continue
                self.say(f"{item.name}: asking {cfg.model}")
                try:
                    new = self.item(item, spec, pending, plan, rep)
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
            if any(r.status == "passed" for r in report.items if r.name != "outline" or not cfg.outline):
                left = len(spec.get("todo") or [])
                header = (
                    f"Spec written by `envc synthesize` (model {cfg.model}) from {Path(draft_path).name}.\n"
                    + (f"{left} todo item(s) are not formalized yet.\n" if left else "")
                )
                write_atomic(self.out_path, spec_text(spec, header))
                report.output = self.out_path
        return report

    def ask_until(
        self, rep: ItemReport, first: Request, test: Callable[[Answer], tuple[Any, list[Problem]]]
    ) -> Any:
        """Ask, test, repair with the located problems until the answer passes or a budget is spent."""
        cfg = self.config
        if first.repeats:
            self.say(f"{rep.name}: text sent twice: {'; '.join(first.repeats)}")
        if first.tokens > cfg.max_request_tokens:
            rep.status = "budget"
            rep.detail = (
                f"the request is ~{first.tokens:,} tokens, over --max-request-tokens {cfg.max_request_tokens:,}"
            )
            return None
        messages = copy.deepcopy(first.messages)
        problems: list[Problem] = []
        for attempt in range(1, cfg.max_iterations + 1):
            if self.prices is not None and self.spent + self.dearest > cfg.max_cost:
                rep.status = "budget"
                rep.detail = f"${self.spent:.4f} spent; the next call could pass --max-cost ${cfg.max_cost:.2f}"
                return None
            _mark_cache(messages)
            answer = self.client.ask(first.system, messages)
            self._account(rep, answer)
            if answer.stop_reason == "refusal":
                rep.status, rep.detail = "failed", "the model declined to answer"
                return None
            if answer.stop_reason == "max_tokens":
                result, problems = None, [
                    Problem("answer", f"the answer was cut off at max_tokens ({cfg.max_tokens}); write less")
                ]
            else:
                result, problems = test(answer)
            if result is not None:
                rep.status = "passed"
                self.say(f"{rep.name}: passed after {attempt} iteration(s)")
                return result
            self.say(f"{rep.name}: attempt {attempt} failed ({len(problems)} problem(s)): {problems[0].where}")
            messages += [
                {"role": "assistant", "content": answer.text or "(no answer)"},
                {"role": "user", "content": [
                    {"type": "text", "text": self.prompts.repair(rep.name, problems, attempt + 1, cfg.max_iterations)}
                ]},
            ]  # fmt: skip
        rep.status = "failed"
        rep.detail = problems[0].format().splitlines()[0] if problems else ""
        return None

    def outline(self, rep: ItemReport) -> Plan | None:
        """The outline calls (one per chunk of rule sections, each seeing the outline so far): a skeleton that
        lints and plays after every part, saved and shown; None if a part never passed."""
        prep, cfg = self.prep, self.config
        skeleton = Path(self.out_path).stem + ".skeleton.yaml"
        so_far: dict[str, Any] = {}
        plan: Plan | None = None
        chunks = outline_chunks(prep, cfg, prep.sections)
        done = 0
        while done < len(chunks):
            part = done + 1
            text = dump(so_far) if so_far else ""
            first = outline_request(prep, cfg, chunks[done], part, len(chunks), text)
            if first.tokens > cfg.max_request_tokens and part > 1:  # the outline so far outgrew its reserve
                rest = [s for c in chunks[done:] for s in c]
                chunks = chunks[:done] + outline_chunks(prep, cfg, rest, tokens(text))
                first = outline_request(prep, cfg, chunks[done], part, len(chunks), text)
            base = so_far

            def test(answer: Answer, base: dict[str, Any] = base) -> tuple[Any, list[Problem]]:
                fragment, problems = parse_answer(answer.text)
                if problems:
                    return None, problems
                merged, messages = merge_outlines(base, fragment) if base else (fragment, [])
                if merged is None:
                    return None, [Problem("outline", m) for m in messages]
                plan, messages = apply_outline(prep.draft, prep.items, prep.sections, merged)
                if plan is None:
                    return None, [Problem("outline", m) for m in messages]
                problems = check_spec(skeleton, spec_text(plan.spec), cfg.episodes, cfg.max_steps, cfg.seed)
                return ((plan, merged), []) if not problems else (None, problems)

            got = self.ask_until(rep, first, test)
            if got is None:
                return None
            plan, so_far = got
            done += 1
        if plan is not None:
            header = (
                f"Outline of {prep.name} by `envc synthesize` (model {cfg.model}): the plan the todo items were "
                f"written against.\nMerged into the draft as stubs it lints and plays; new items: "
                f"{', '.join(plan.new_items) or 'none'}."
                + (f"\n{len(plan.called)} draft procedure(s) written as calls of the planned ones: no item each."
                   if plan.called else "")
            )
            text = dump(so_far, header)
            write_atomic(outline_path(self.out_path), text)
            self.tell("outline", text)
        return plan

    def item(
        self, item: Item, spec: dict[str, Any], pending: list[Item], plan: Plan | None, rep: ItemReport
    ) -> dict[str, Any] | None:
        cfg = self.config
        first = item_request(self.prep, cfg, Path(self.out_path).name, item, spec, pending, plan)
        planned = plan.added if plan else None

        def test(answer: Answer) -> tuple[Any, list[Problem]]:
            fragment, problems = parse_answer(answer.text)
            if problems:
                return None, problems
            merged, violations = merge(spec, item, fragment, pending, planned)
            if violations:
                return None, [Problem("answer", v) for v in violations]
            problems = check_spec(
                Path(self.out_path).name, spec_text(merged), cfg.episodes, cfg.max_steps, cfg.seed
            )
            return (merged, []) if not problems else (None, problems)

        result: dict[str, Any] | None = self.ask_until(rep, first, test)
        return result

    def _account(self, rep: ItemReport, answer: Answer) -> None:
        cost = answer.usage.cost(self.prices) if self.prices is not None else 0.0
        rep.iterations += 1
        rep.usage = rep.usage + answer.usage
        rep.cost += cost
        self.spent += cost
        self.dearest = max(self.dearest, cost)


def _mark_cache(messages: list[dict[str, Any]]) -> None:
    """Cache breakpoints: the first block of the first message (the shared tables block of item requests, the
    outline text for the outline) and the last user block. OpenAI-compatible servers ignore the marks."""
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
            "priced": report.priced,
            "cost_usd": round(report.cost, 6) if report.priced else None,
            "output": report.output,
            "outline": report.outline,
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
                    "cost_usd": round(r.cost, 6) if report.priced else None,
                    "detail": r.detail,
                }
                for r in report.items
            ],
        },
        sort_keys=False,
    )
