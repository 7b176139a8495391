"""Todo items of a draft: their interface contracts, and how an answer is merged into the spec.

An answer is a YAML mapping of spec sections. What an item may write is fixed by its kind: the `module`
item (the game itself) writes the state, setup, turn structure, win conditions and observation; an action,
rule, procedure or function item writes that one element and may only *add* names elsewhere.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from envc.scrapers.draft import DRAFT_ACTION, DRAFT_FIELD, DRAFT_OBS

# Section order of the specs we write (new sections go to their place).
ORDER = [
    "name", "doc", "version", "players", "todo", "params", "types", "constants", "tables", "state", "functions",
    "procedures", "reset", "actions", "continuous_action", "rules", "reward", "terminated", "truncated",
    "illegal_action_penalty", "observation", "invariants",
]  # fmt: skip
NAMED = ("params", "types", "constants", "state", "functions", "procedures", "invariants")
WHOLE = ("doc", "reset", "reward", "terminated", "truncated", "illegal_action_penalty", "observation")
PASS_DOC = "placeholder that keeps the game playable until the last action or rule item is formalized"
KINDS = {"module": "module", "actions": "action", "rules": "rule", "procedures": "procedure", "functions": "function"}


class DraftError(Exception):
    """The draft's todo section cannot be used (one line for the user)."""


@dataclass(frozen=True)
class Item:
    """One todo entry."""

    name: str
    target: str
    source: str
    text: str

    @property
    def kind(self) -> str:
        """module, action, rule, procedure or function."""
        return KINDS[self.target.split(".")[0]]

    @property
    def element(self) -> str:
        """The name of the action/rule/procedure/function (empty for the module)."""
        return self.target.partition(".")[2]


def items_of(doc: dict[str, Any]) -> list[Item]:
    """The todo entries of a draft, checked."""
    raw = doc.get("todo") or []
    if not isinstance(raw, list):
        raise DraftError("the `todo` section must be a list of {name, target, source, text} entries")
    out: list[Item] = []
    seen: set[str] = set()
    for i, e in enumerate(raw):
        if not isinstance(e, dict) or not isinstance(e.get("name"), str) or not isinstance(e.get("text"), str):
            raise DraftError(f"todo entry {i + 1} needs at least a `name` and a `text`")
        target = str(e.get("target") or "module")
        head, _, elem = target.partition(".")
        if head not in KINDS or (head == "module") != (elem == ""):
            raise DraftError(
                f"todo entry '{e['name']}': target '{target}' is not one of module, actions.NAME, rules.NAME, "
                "procedures.NAME, functions.NAME"
            )
        if e["name"] in seen:
            raise DraftError(f"todo entry '{e['name']}' appears twice")
        seen.add(e["name"])
        out.append(Item(e["name"], target, str(e.get("source") or ""), e["text"]))
    return out


def pending_names(items: list[Item]) -> dict[str, set[str]]:
    """Per section, the element names whose stubs belong to todo items."""
    out: dict[str, set[str]] = {k: set() for k in KINDS}
    for it in items:
        if it.kind != "module":
            out[it.target.split(".")[0]].add(it.element)
    return out


def contract(item: Item, spec: dict[str, Any], pending: list[Item]) -> str:
    """The interface the answer must keep, in words and signatures."""
    stubs = pending_names([p for p in pending if p.name != item.name])
    if item.kind == "module":
        lines = [
            "You write the game itself: sections `state` and `observation` (required), and as needed `types`,",
            "`constants`, `params`, `functions`, `procedures`, `reset`, `actions`, `rules`, `reward`,",
            "`terminated`, `truncated`, `invariants`. Your `state` and `observation` replace the draft's",
            f"placeholders `{DRAFT_FIELD}` and `{DRAFT_OBS}`; state fields already in the current spec (planned by",
            "the outline) are kept as they are unless your `state` declares them again.",
            "The tables and the enums declared by the draft are data from the pages: use them, do not redeclare them.",
            "Keep every state change consistent with the rules text, and give the game invariants that",
            "the tests can check (for example: cards are conserved, counts stay in range).",
            "Games must end (a turn limit in `truncated` is fine). Once every action and rule is formalized, at least",
            "one action must be legal in every state that is not terminated or truncated. Until then the placeholder",
            f"`{DRAFT_ACTION}` (which does nothing) stays legal so the game can be played; it is removed with the",
            "last action or rule item (a rule such as the end of the game may be what keeps moves available).",
        ]
        if stubs["actions"]:
            lines.append(
                "These actions are formalized later by their own items; design the state they need, but do not "
                "write them: " + ", ".join(sorted(stubs["actions"]))
            )
        if stubs["rules"]:
            lines.append(
                "These rules are formalized later; to put your own rules before or after them, list a stub in "
                "your `rules` as `- name: NAME` (no body): " + ", ".join(sorted(stubs["rules"]))
            )
        calls = sorted(n for n in stubs["procedures"] | {"apply_effect"} if n in (spec.get("procedures") or {}))
        if calls:
            lines.append(
                f"You can call the {len(calls)} procedure(s) of the current spec whose bodies come later or from the "
                f"draft ({', '.join(calls[:3])}{', ...' if len(calls) > 3 else ''}); their signatures are in its "
                "`procedures`."
            )
        return "\n".join(lines)
    extra = (
        "You may also add new names to `types`, `constants`, `state`, `functions`, `procedures` and `invariants` "
        "(existing names cannot be changed)."
    )
    if item.kind == "action":
        return (
            f"Write `actions.{item.element}`: `params` (finite ranges; they are read-only locals), `legal` (a pure "
            f"bool expression, evaluated for current_player) and `effect` (statements). Write no other action. "
            + extra
        )
    if item.kind == "rule":
        return (
            f"Write the rule `{item.element}` as a one-entry list `rules: [{{name: {item.element}, when: ..., "
            f"body: ...}}]`; it keeps its place among the rules (they run in order after every action effect). "
            + extra
        )
    sig = _signatures(spec, item.kind + "s", [item.element]) or f"{item.element}(...)"
    return (
        f"Write `{item.kind}s.{item.element}` with exactly this signature (same params, same order"
        + (", same returns" if item.kind == "function" else "")
        + f"):\n{sig}\nOnly the body is yours to write. "
        + extra
    )


def _signatures(spec: dict[str, Any], section: str, names: list[str]) -> str:
    out = []
    for n in names:
        decl = (spec.get(section) or {}).get(n)
        if not isinstance(decl, dict):
            continue
        params = ", ".join(f"{k}: {v}" for k, v in (decl.get("params") or {}).items())
        ret = f" -> {decl['returns']}" if decl.get("returns") else ""
        doc = f"    # {decl['doc']}" if decl.get("doc") else ""
        out.append(f"  {n}({params}){ret}{doc}")
    return "\n".join(out)


def merge(
    spec: dict[str, Any], item: Item, answer: Any, pending: list[Item], planned: dict[str, set[str]] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The spec with the answer merged in, or the contract violations (messages about the answer).

    `planned`: names the outline added (types, constants, state); the module item may redeclare them.
    """
    problems: list[str] = []
    if not isinstance(answer, dict) or not answer:
        return spec, ["the answer must be a YAML mapping of spec sections (e.g. `actions:`), not empty"]
    out = copy.deepcopy(spec)
    stubs = pending_names([p for p in pending if p.name != item.name])
    for key in answer:
        if not isinstance(key, str) or key not in ORDER:
            problems.append(f"`{key}` is not a spec section")
        elif key in ("name", "version", "players", "tables", "todo", "continuous_action"):
            problems.append(f"`{key}` comes from the draft; leave it out of the answer")
    if problems:
        return spec, problems
    if item.kind == "module":
        given = {k: set(spec.get(k) or {}) - (planned or {}).get(k, set()) for k in NAMED if k != "state"}
        problems += _merge_module(out, answer, given, stubs)
    else:
        problems += _merge_element(out, item, answer, spec)
    if problems:
        return spec, problems
    if item.kind in ("action", "rule") and not stubs["actions"] and not stubs["rules"]:
        (out.get("actions") or {}).pop(DRAFT_ACTION, None)  # the last action/rule item: the game plays on its own
    out["todo"] = [e for e in out.get("todo") or [] if not (isinstance(e, dict) and e.get("name") == item.name)]
    if not out["todo"]:
        del out["todo"]
    return order(out), []


def _merge_module(
    out: dict[str, Any], answer: dict[str, Any], draft_names: dict[str, set[str]], stubs: dict[str, set[str]]
) -> list[str]:
    problems: list[str] = []
    for key in ("state", "observation"):
        if not isinstance(answer.get(key), dict):
            problems.append(f"the `{key}` section is required (a mapping)")
    for key, value in answer.items():
        if key == "state" and isinstance(value, dict):  # the outline's fields stay unless redeclared
            out[key] = {**{k: v for k, v in (out.get(key) or {}).items() if k != DRAFT_FIELD}, **value}
        elif key in WHOLE or key == "state":
            out[key] = value
        elif key in NAMED:
            if not isinstance(value, dict):
                problems.append(f"`{key}` must be a mapping of names")
                continue
            sec = out.setdefault(key, {}) or {}
            for name, decl in value.items():
                if name in draft_names.get(key, set()):
                    problems.append(f"`{key}.{name}` is declared by the draft (data or a stub); do not redeclare it")
                else:
                    sec[name] = decl
            out[key] = sec
        elif key == "actions":
            if not isinstance(value, dict):
                problems.append("`actions` must be a mapping of action kinds")
                continue
            acts = dict(out.get("actions") or {})
            for name, decl in value.items():
                if name in stubs["actions"]:
                    problems.append(f"`actions.{name}` is formalized by its own todo item; leave it out")
                else:
                    acts[name] = decl
            out["actions"] = acts
        elif key == "rules":
            problems += _place_rules(out, value, stubs["rules"])
    if not problems:
        acts = out.get("actions") or {}
        if (stubs["actions"] or stubs["rules"]) and DRAFT_ACTION in acts:
            acts[DRAFT_ACTION] = {"doc": PASS_DOC}
        else:
            acts.pop(DRAFT_ACTION, None)
        if out.get("truncated") == f"{DRAFT_FIELD} >= 10" and "truncated" not in answer:
            del out["truncated"]
    return problems


def _place_rules(out: dict[str, Any], value: Any, stub_rules: set[str]) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in value):
        return ["`rules` must be a list of {name, when, body} entries"]
    old = {r["name"]: r for r in out.get("rules") or [] if isinstance(r, dict)}
    rules: list[Any] = []
    problems = []
    for r in value:
        if r["name"] in stub_rules:
            if set(r) - {"name"}:
                problems.append(
                    f"rule `{r['name']}` is formalized by its own todo item; list it as `- name: {r['name']}` only"
                )
            rules.append(old[r["name"]])
        else:
            rules.append(r)
    placed = {r["name"] for r in rules}
    rules += [r for n, r in old.items() if n in stub_rules and n not in placed]
    out["rules"] = rules
    return problems


def _merge_element(out: dict[str, Any], item: Item, answer: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    section = item.target.split(".")[0]
    name = item.element
    for key, value in answer.items():
        if key == section:
            continue
        if key not in NAMED:
            allowed = ", ".join(NAMED)
            problems.append(f"this item writes `{item.target}` and may only add names to {allowed}; not `{key}`")
            continue
        if not isinstance(value, dict):
            problems.append(f"`{key}` must be a mapping of names")
            continue
        sec = dict(out.get(key) or {})
        for n, decl in value.items():
            if n in sec:
                problems.append(f"`{key}.{n}` exists already; add new names instead of changing existing ones")
            else:
                sec[n] = decl
        out[key] = sec
    given = answer.get(section)
    if section == "rules":
        entries = given if isinstance(given, list) else []
        mine = [r for r in entries if isinstance(r, dict) and r.get("name") == name]
        if len(entries) != 1 or len(mine) != 1:
            return [*problems, f"write `rules` as a list with exactly one entry, named `{name}`"]
        out["rules"] = [
            mine[0] if isinstance(r, dict) and r.get("name") == name else r for r in out.get("rules") or []
        ]
        return problems
    if not isinstance(given, dict) or set(given) != {name} or not isinstance(given[name], dict):
        return [*problems, f"write `{section}` as a mapping with exactly one entry, `{name}` (a mapping)"]
    decl = given[name]
    if section in ("procedures", "functions"):
        old = (spec.get(section) or {}).get(name) or {}
        want = dict(old.get("params") or {})
        got = decl.get("params") or {}
        if not isinstance(got, dict) or list(got.items()) != list(want.items()):
            problems.append(f"`{section}.{name}` must keep the params of the contract: {want}")
        if section == "functions" and decl.get("returns") != old.get("returns"):
            problems.append(f"`functions.{name}` must keep `returns: {old.get('returns')}`")
    sec = dict(out.get(section) or {})
    sec[name] = decl
    out[section] = sec
    return problems


def order(doc: dict[str, Any]) -> dict[str, Any]:
    """Sections in the canonical order (unknown keys last, as they came)."""
    known = {k: doc[k] for k in ORDER if k in doc}
    return {**known, **{k: v for k, v in doc.items() if k not in known}}
