"""The outline: the model's plan of the spec (state, zones, action kinds with parameters, rules, effect kinds),
read before any item is written. It is merged into the draft as stubs (a skeleton spec that must lint and
play), its new elements become todo items, and each element names the rule sections its item reads.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from envc.scrapers.draft import DRAFT_ACTION, MODULE

from .chunks import Section
from .items import Item, order

KEYS = ("types", "constants", "state", "actions", "rules", "procedures", "calls", "game", "drop")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(.*\)\s*$")
STUB = "planned by the outline; formalized by the todo item '{}'"


@dataclass
class Plan:
    """A checked outline: the skeleton spec, the sections each item reads, and the names the outline added."""

    spec: dict[str, Any]
    sections: dict[str, list[str]] = field(default_factory=dict)
    added: dict[str, set[str]] = field(default_factory=dict)
    new_items: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    procedures: set[str] = field(default_factory=set)  # new procedures the outline plans (each a todo item)
    called: dict[str, str] = field(default_factory=dict)  # draft procedure -> the one call the outline gave it


def apply_outline(
    draft: dict[str, Any], items: list[Item], sections: list[Section], outline: Any
) -> tuple[Plan | None, list[str]]:
    """The skeleton spec (the draft with the outline's names and stubs), or what is wrong with the outline."""
    if not isinstance(outline, dict) or not outline:
        return None, ["the outline must be a YAML mapping with at least `state`"]
    problems = [f"`{k}` is not an outline section (have: {', '.join(KEYS)})" for k in outline if k not in KEYS]
    if not isinstance(outline.get("state"), dict) or not outline["state"]:
        problems.append("`state` is required: a mapping of the state fields the game needs")
    if problems:
        return None, problems
    spec = copy.deepcopy(draft)
    todo: list[dict[str, Any]] = list(spec.get("todo") or [])
    by_target = {i.target: i for i in items}
    names = {i.name for i in items}
    ids = {s.id: s for s in sections}
    plan = Plan(spec)

    def cited(where: str, value: Any) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f"`{where}.sections` must be a list of section ids (s1, s2, ...)")
            return []
        bad = [v for v in value if v not in ids]
        if bad:
            problems.append(f"`{where}.sections`: no section {', '.join(bad)} (the sections are s1..s{len(ids)})")
        return [v for v in value if v in ids]

    def declare(section: str, value: Any) -> None:
        if not isinstance(value, dict):
            problems.append(f"`{section}` must be a mapping of names")
            return
        have = dict(spec.get(section) or {})
        for n, decl in value.items():
            if n in have:
                problems.append(f"`{section}.{n}` is declared by the draft already; use it, do not redeclare it")
            else:
                have[n] = decl
                plan.added.setdefault(section, set()).add(str(n))
        spec[section] = have

    def element(section: str, name: Any, decl: Any, allowed: set[str]) -> dict[str, Any] | None:
        where = f"{section}.{name}"
        if not isinstance(name, str) or not _NAME.match(name):
            problems.append(f"`{section}`: '{name}' is not an identifier")
            return None
        if decl is None:
            decl = {}
        if not isinstance(decl, dict):
            problems.append(f"`{where}` must be a mapping ({', '.join(sorted(allowed))})")
            return None
        extra = sorted(set(decl) - allowed - {"sections"})
        if extra:
            problems.append(
                f"`{where}`: {', '.join(extra)} not allowed in the outline; the outline names and plans "
                f"({', '.join(sorted(allowed))}, sections), its todo item writes the code"
            )
        target = f"{section}.{name}"
        refs = cited(where, decl.get("sections"))
        item = by_target.get(target)
        if item is None:
            if name in names:
                problems.append(f"`{where}`: '{name}' is the name of another todo item")
                return None
            names.add(name)
            plan.new_items.append(name)
            text = "\n\n".join(_section_text(ids[r]) for r in refs)
            doc = str(decl.get("doc") or "").strip()
            body = "\n\n".join(t for t in (doc, text) if t) or f"planned by the outline: {name}"
            todo.append({"name": name, "target": target, "source": ids[refs[0]].url if refs else "", "text": body})
            key = name
        else:
            key = item.name
        own = [s.id for s in sections if s.item == key]
        plan.sections[key] = sorted(set(own) | set(refs), key=lambda i: int(i[1:]))
        return {k: v for k, v in decl.items() if k in allowed}

    for section in ("types", "constants"):
        if section in outline:
            declare(section, outline[section])
    state = outline["state"]
    clash = sorted(set(state) & set(spec.get("state") or {}))
    if clash:
        problems.append(f"`state.{clash[0]}` is declared by the draft already")
    spec["state"] = {**(spec.get("state") or {}), **state}
    plan.added["state"] = {str(n) for n in state}

    acts = dict(spec.get("actions") or {})
    for name, decl in _mapping(outline, "actions", problems).items():
        if name == DRAFT_ACTION:
            problems.append(f"`actions.{DRAFT_ACTION}` is the draft's placeholder; plan the game's own actions")
            continue
        got = element("actions", name, decl, {"doc", "params"})
        if got is None:
            continue
        stub = dict(acts.get(name) or {}) if f"actions.{name}" in by_target else {}
        stub.update({"doc": got.get("doc") or stub.get("doc") or STUB.format(name), "legal": False})
        if "params" in got:
            stub["params"] = got["params"]
        acts[name] = stub
    if acts:
        spec["actions"] = acts

    if "rules" in outline:
        rules = outline["rules"]
        if not isinstance(rules, list) or not all(isinstance(r, dict) and "name" in r for r in rules):
            problems.append("`rules` must be a list of {name, doc, sections} entries, in the order they run")
        else:
            old = {r.get("name"): r for r in spec.get("rules") or [] if isinstance(r, dict)}
            placed = []
            for r in rules:
                got = element("rules", r["name"], {k: v for k, v in r.items() if k != "name"}, {"doc"})
                if got is None:
                    continue
                if r["name"] in old and f"rules.{r['name']}" not in by_target:
                    problems.append(f"`rules.{r['name']}` is written in the draft already")
                    continue
                stub = old.get(r["name"]) or {"name": r["name"], "when": False, "body": "pass"}
                placed.append({**stub, "doc": got.get("doc") or stub.get("doc") or STUB.format(r["name"])})
            names_placed = {r["name"] for r in placed}
            spec["rules"] = placed + [r for n, r in old.items() if n not in names_placed]

    procs = dict(spec.get("procedures") or {})
    for name, decl in _mapping(outline, "procedures", problems).items():
        got = element("procedures", name, decl, {"doc", "params"})
        if got is None:
            continue
        if name in procs:
            if f"procedures.{name}" not in by_target:
                problems.append(f"`procedures.{name}` is written in the draft already")
            elif "params" in got and got["params"] != procs[name].get("params"):
                problems.append(
                    f"`procedures.{name}` is declared by the draft with params {procs[name].get('params')}; keep them"
                )
            continue
        procs[name] = {"doc": got.get("doc") or STUB.format(name), "params": got.get("params") or {}, "body": "pass"}
        plan.procedures.add(name)
    if procs:
        spec["procedures"] = procs

    _calls(todo, procs, outline.get("calls"), by_target, plan, problems)
    game = outline.get("game")
    if game is not None:
        if not isinstance(game, dict) or set(game) - {"sections", "doc"}:
            problems.append("`game` must be {sections: [...]}: the sections the game item reads")
        else:
            refs = cited("game", game.get("sections"))
            if refs:
                plan.sections[MODULE] = sorted(set(refs), key=lambda i: int(i[1:]))
    _drop(spec, todo, outline.get("drop"), items, plan, problems)
    spec["todo"] = todo
    plan.spec = order(spec)
    return (None, problems) if problems else (plan, [])


def merge_outlines(base: dict[str, Any], part: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """The outline so far with one part's answer merged in (`{}`: nothing to add), or what is wrong with the part.

    Named entries (types, constants, state, actions, procedures, calls) are added, or replaced when the part names them
    again; rules keep their order (a rule named again is replaced in place, a new one goes last); `sections`
    of an element named again, `game.sections` and `drop` are the union of both.
    """
    if not isinstance(part, dict):
        return None, ["the outline must be a YAML mapping of outline sections (`{}` if this part adds nothing)"]
    problems = [f"`{k}` is not an outline section (have: {', '.join(KEYS)})" for k in part if k not in KEYS]
    for k in ("types", "constants", "state", "actions", "procedures", "calls"):
        if k in part and not isinstance(part[k], dict):
            problems.append(f"`{k}` must be a mapping of names")
    if "rules" in part and not (isinstance(part["rules"], list)
                                and all(isinstance(r, dict) and "name" in r for r in part["rules"])):  # fmt: skip
        problems.append("`rules` must be a list of {name, doc, sections} entries, in the order they run")
    if problems:
        return None, problems
    out = copy.deepcopy(base)
    for k in ("types", "constants", "state", "actions", "procedures", "calls"):
        if k in part:
            have = dict(out.get(k) or {})
            for name, decl in (part[k] or {}).items():
                have[name] = _union(have.get(name), decl)
            out[k] = have
    if "rules" in part:
        rules = list(out.get("rules") or [])
        at = {r["name"]: i for i, r in enumerate(rules)}
        for r in part["rules"]:
            if r["name"] in at:
                rules[at[r["name"]]] = _union(rules[at[r["name"]]], r)
            else:
                at[r["name"]] = len(rules)
                rules.append(r)
        out["rules"] = rules
    if "game" in part:
        out["game"] = _union(out.get("game"), part["game"])
    if "drop" in part:
        old, new = out.get("drop") or [], part["drop"]
        both = isinstance(old, list) and isinstance(new, list)
        out["drop"] = [*old, *(n for n in new if n not in old)] if both else new
    return out, []


def _union(old: Any, new: Any) -> Any:
    """`new`, with the `sections` of `old` kept in front of its own when both are mappings."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return new
    a, b = old.get("sections"), new.get("sections")
    if isinstance(a, list) and isinstance(b, list):
        return {**new, "sections": [*a, *(s for s in b if s not in a)]}
    if isinstance(a, list) and b is None:
        return {**new, "sections": a}
    return new


def _drop(
    spec: dict[str, Any], todo: list[dict[str, Any]], names: Any, items: list[Item], plan: Plan, problems: list[str]
) -> None:
    """Action and rule items the scraper guessed wrongly: their stub and todo entry go (their text stays citable)."""
    if names is None:
        return
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        problems.append("`drop` must be a list of todo item names")
        return
    by_name = {i.name: i for i in items}
    for n in names:
        item = by_name.get(n)
        if item is None or item.kind not in ("action", "rule"):
            problems.append(f"`drop`: '{n}' is not an action or rule todo item of the draft")
            continue
        if n in plan.sections:
            problems.append(f"`drop`: '{n}' is planned in the outline too; plan it or drop it")
            continue
        if item.kind == "action":
            (spec.get("actions") or {}).pop(item.element, None)
        else:
            spec["rules"] = [r for r in spec.get("rules") or [] if not (isinstance(r, dict) and r.get("name") == n)]
        todo[:] = [e for e in todo if e.get("name") != n]
        plan.sections.pop(n, None)
        plan.dropped.append(n)


def _calls(
    todo: list[dict[str, Any]],
    procs: dict[str, Any],
    calls: Any,
    by_target: dict[str, Item],
    plan: Plan,
    problems: list[str],
) -> None:
    """Draft procedures (one per effect text) written as one call of a general kind that the outline plans:
    their body is that call and their todo item goes, so tens of kinds are written instead of hundreds."""
    if calls is None:
        return
    if not isinstance(calls, dict):
        problems.append("`calls` must be a mapping: draft procedure -> one call of a procedure the outline plans")
        return
    planned = plan.procedures
    for name, call in calls.items():
        where = f"`calls.{name}`"
        if f"procedures.{name}" not in by_target or name not in procs:
            problems.append(f"{where}: '{name}' is not a procedure todo item of the draft")
            continue
        m = _CALL.match(call) if isinstance(call, str) and "\n" not in call.strip() else None
        if m is None:
            problems.append(f"{where} must be one call on one line, such as `deal_damage(pl, Target.bench, damage)`")
            continue
        if m.group(1) not in planned:
            problems.append(f"{where} calls '{m.group(1)}', which is not a procedure this outline plans")
            continue
        procs[name] = {**procs[name], "body": call.strip()}
        todo[:] = [e for e in todo if e.get("name") != by_target[f"procedures.{name}"].name]
        plan.called[name] = call.strip()


def _mapping(outline: dict[str, Any], key: str, problems: list[str]) -> dict[Any, Any]:
    value = outline.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(f"`{key}` must be a mapping of names")
        return {}
    return value


def _section_text(s: Section) -> str:
    return f"## {s.title}\n(source: {s.url})\n\n{s.body}".rstrip()
