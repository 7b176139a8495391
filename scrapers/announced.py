"""Actions a rulebook announces: "a player must perform one of the following three actions:" and what follows.

Rulebooks often list the moves of a turn instead of giving each a verb-first heading: a bulleted or lettered list
("Take 3 gem tokens of different colors.", Netrunner's `"{click}: Gain 1{credit}."`) or the subsections that
follow the sentence ("Draw Train Car Cards", "Claim a Route"). A lead that speaks of actions (the following /
these actions, "...actions:", a short title such as "Corp Actions") makes what comes right after it actions,
whatever their first word. A list item that names a later section ("Assign Agent") makes that section the
action; any other item becomes a section of its own, under the section it was found in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .extract import Section, split_number

# "the following four actions", "one of these actions", "... take two actions:"; not "following 3 steps".
LEAD_RE = re.compile(r"\b(?:following|these|those)\s+(?:[\w()-]+\s+){0,3}?actions?\b|\bactions?\s*:$", re.I)
COUNTS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
COUNT_RE = re.compile(r"\b(\d{1,2}|" + "|".join(COUNTS) + r")\s+(?:\w+\s+)?actions\b", re.I)
# First words of a list item that is a sentence about the game, not a move ("If ...", "Example: ...").
NOT_VERBS = frozenset(
    "the a an if when whenever each every this these that those see example note for all any it its they you your "
    "players player in on at after before during once only there some no none and or but as to of while with".split()
)
OWNER_SKIP = frozenset("basic actions action the available player players main possible turn".split())
MAX_ITEM_CHARS = 300  # a move is named in a line or two; longer items are rules about moves
MAX_TITLE_CHARS = 80
LINE = re.compile(r"^( *)- (.*)$")
COST = re.compile(r"^(?P<head>[^:]{1,40}):\s+(?P<body>\S.*)$")


@dataclass
class _Item:
    depth: int
    text: str
    children: list[_Item]


def announce(sections: list[Section], skip: re.Pattern[str] | None = None) -> list[Section]:
    """The sections with the announced actions marked (kind "action") and list-item actions added after the
    section that holds them; sections under a title that `skip` matches (a glossary) are left alone."""
    out: list[Section] = []
    for i, s in enumerate(sections):
        out.append(s)
        if skip is not None and any(skip.search(p) for p in (*s.parents, s.title)):
            continue
        paragraphs = [p for p in s.text.split("\n\n") if p.strip()]
        out.extend(_listed(s, paragraphs, sections[i + 1 :]))
        last = paragraphs[-1] if paragraphs and not _is_list(paragraphs[-1]) else ""
        if _is_lead(last) or _is_lead(s.title):  # "...one of the following three actions:", a heading "Action"
            _mark_children(sections, i, _count(last))
    return out


def _listed(s: Section, paragraphs: list[str], later: list[Section]) -> list[Section]:
    """The actions that the lists of section `s` announce, as new sections; an item that names one of the
    `later` sections marks that section instead."""
    found: list[Section] = []
    for j, p in enumerate(paragraphs):
        if not _is_list(p):
            continue
        before = paragraphs[j - 1] if j > 0 and not _is_list(paragraphs[j - 1]) else ""
        for lead, owner, items in _groups(_tree(p), before):
            for item in items:
                phrase = _phrase(item)
                target = _named(later, phrase) if _is_name(item) else None
                if target is not None:
                    target.kind = "action"
                    continue
                found.append(
                    Section(
                        (f"{owner}: {phrase}" if owner else phrase)[:MAX_TITLE_CHARS],
                        s.level + 1,
                        s.source,
                        text=f"{lead}\n\n{item}".strip(),
                        kind="action",
                        parents=[*s.parents, s.title],
                    )
                )
    return found


def _is_list(paragraph: str) -> bool:
    """A list block of the section text: every line an item ("- " indented two spaces per level)."""
    return all(LINE.match(ln) for ln in paragraph.split("\n"))


def _groups(roots: list[_Item], lead: str) -> list[tuple[str, str, list[str]]]:
    """(lead text, owner, action items) for each group of sibling items that a lead announces."""
    got: list[tuple[str, str, list[str]]] = []

    def visit(items: list[_Item], lead: str, owner: str) -> None:
        texts = [split_number(it.text)[1] or it.text for it in items]
        start = 0
        if texts and _is_lead(texts[0]) and not _is_move(texts[0]):
            lead, start = f"{lead}\n{texts[0]}".strip(), 1
        if _is_lead(lead):
            moves = [t for t in texts[start:] if _is_move(t)]
            if len(moves) >= 2 and 2 * len(moves) >= len(texts) - start:
                got.append((lead, owner, moves))
                return
        for it, t in zip(items, texts):
            if it.children:
                visit(it.children, t, _owner(t))

    visit(roots, lead, "")
    return got


def _tree(block: str) -> list[_Item]:
    """The items of a list block ("- " lines indented two spaces per level) as a tree."""
    roots: list[_Item] = []
    stack: list[_Item] = []
    for ln in block.split("\n"):
        m = LINE.match(ln)
        assert m is not None
        item = _Item(len(m.group(1)) // 2, m.group(2).strip(), [])
        while stack and stack[-1].depth >= item.depth:
            stack.pop()
        (stack[-1].children if stack else roots).append(item)
        stack.append(item)
    return roots


def _is_lead(text: str) -> bool:
    """A sentence or title that announces actions: "the following (three) actions", "these actions", "...
    actions:", or a short title ending in "Actions" ("Corp Actions")."""
    t = text.strip().strip("*_").strip()
    if len(t) > 400:
        return False
    return bool(LEAD_RE.search(t)) or _actions_title(t) is not None


def _actions_title(text: str) -> list[str] | None:
    """The words of a short title ending in "Action(s)" ("Corp Actions", "2. Action"), else None."""
    words = text.strip().rstrip(":").split()
    return words if 0 < len(words) <= 4 and words[-1].lower() in ("action", "actions") else None


def _is_move(text: str) -> bool:
    """A list item that names a move: short, and its first word (after a cost) can start an instruction."""
    body = _phrase(text)
    first = re.match(r"[A-Za-z][\w'-]*", body)
    return len(text) <= MAX_ITEM_CHARS and first is not None and first.group(0).lower() not in NOT_VERBS


def _phrase(text: str) -> str:
    """The move an item names: its first sentence, without quotes, emphasis, a cost before a colon
    ("{click}, 1{credit}: Advance 1 installed card") or a link's brackets; a label before a colon ("Take 3
    Tokens: Take 3 gem tokens ...") is the name itself."""
    t = re.sub(r"[*_`\"\u201c\u201d]", "", text).strip()
    t = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", t)
    m = COST.match(t)
    if m:
        head = re.sub(r"\{[^}]*\}|[\d\s,+]", "", m.group("head"))
        t = m.group("head") if head else m.group("body")
    t = re.split(r"(?<=[A-Za-z0-9}])[.!?](?:\s|$)|\s\(", t, maxsplit=1)[0]
    return t.strip(" .;:")[:MAX_TITLE_CHARS]


def _owner(title: str) -> str:
    """Who a short list title's actions belong to ("Corp Actions" -> "Corp"); "" for a sentence."""
    words = _actions_title(title) or []
    return " ".join(w for w in words if w.lower().strip("'s") not in OWNER_SKIP)


def _count(lead: str) -> int | None:
    """How many actions a lead announces ("the following three actions" -> 3), if it says."""
    m = COUNT_RE.search(lead)
    if m is None:
        return None
    n = m.group(1).lower()
    return int(n) if n.isdigit() else COUNTS[n]


def _mark_children(sections: list[Section], i: int, count: int | None) -> None:
    """The subsections right under sections[i] (up to `count`) are the actions its last sentence announced."""
    level = sections[i].level
    marked = 0
    for s in sections[i + 1 :]:
        if s.level <= level or (count is not None and marked >= count):
            break
        if s.level == level + 1:
            s.kind = "action"
            marked += 1


ARTICLES = frozenset("a an the of to or and your".split())


def _stems(title: str) -> tuple[str, ...]:
    """The title's words, crudely stemmed ("Moving" and "Move", "Attacks" and "Attack" agree), articles dropped."""
    words = [w for w in re.findall(r"[a-z0-9]+", title.lower()) if w not in ARTICLES]
    stems = (re.sub(r"(?:ing|es|s)$", "", w) if len(w) > 4 else w for w in words)
    return tuple(w.rstrip("e") if len(w) > 2 else w for w in stems)


def _is_name(item: str) -> bool:
    """An item that only names a move ("Move", "[Assign Agent](#assign-agent)"), explained elsewhere; an
    instruction ("Take 3 gem tokens of different colors.", `"{click}: Draw 1 card."`) is an action itself."""
    t = re.sub(r"\([^)]*\)", "", re.sub(r"[*_`\"\u201c\u201d]", "", item)).strip()
    return not COST.match(t) and not t.endswith(".") and len(t.split()) <= 6


def _named(later: list[Section], phrase: str) -> Section | None:
    """The later section that a list item names: the same first word and most of the other words ("Use Items
    or Omen cards" names "Using Items and Omens")."""
    want = _stems(phrase)
    if not want:
        return None
    best: Section | None = None
    for s in later:
        stems = _stems(s.title)
        if stems and stems[0] == want[0]:
            a, b = set(stems), set(want)
            if 3 * len(a & b) >= 2 * len(a | b) and (best is None or len(s.text) > len(best.text)):
                best = s
    return best
