"""Card effect texts -> effect kinds: templates with numeric and word arguments (as specs/tcg.yaml does by hand).

"Does 10 damage to each of your opponent's Benched Pokémon." and "... 20 damage ..." are one kind, `Does
{damage} damage to each of your opponent's Benched Pokémon.`, with the number as a per-card argument. Number
words ("two cards") count as numbers, a card's own name in its text becomes `~`, and texts that differ in one
capitalized word or one brace token ("... is now Paralyzed." / "... is now Poisoned.", "{R}" / "{W}") become one
kind with a word argument. A template that asks the player to pick something takes a `choice` argument.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from .extract import STOPWORDS, slug

NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")  # inline markup left in card data (<strong>)
TOKEN_RE = re.compile(
    r"\{[^{}]{1,24}\}|\[[^\[\]\s]{1,24}\]|\d{1,9}(?:st|nd|rd|th)\b|\d{1,9}|[^\W\d_]+(?:['’][^\W\d_]+)*|\s+|[^\w\s]",
    re.UNICODE,
)
CHOICE_RE = re.compile(
    r"\b(?:choose|chosen|chooses|search(?:es)? (?:your|their|his or her) deck for|one of|select|target)\b", re.I
)
NUM, SLOT = "\x00#", "\x00@"  # placeholder tokens of a template while it is built
MAX_EXAMPLES = 3
NOT_NOUNS = {"until", "per", "each", "than", "or", "and", "then", "when", "if", "as", "at", "by", "but"}
MODIFIERS = {"more", "less", "fewer", "additional", "extra", "times", "x", "×"}  # skipped when naming a number


@dataclass
class Arg:
    """One argument of an effect kind: `int` (a number in the text) or a word (`Energy`, `card`, `word`)."""

    name: str
    kind: str  # "int", "energy", "card" or "word"


@dataclass
class EffectKind:
    """One template; `texts` are the distinct original texts it covers."""

    name: str
    template: str
    args: list[Arg]
    choice: bool
    texts: list[str] = field(default_factory=list)  # the first few distinct texts
    n_texts: int = 0  # distinct texts in all

    @property
    def numbers(self) -> list[Arg]:
        """The numeric arguments, in text order."""
        return [a for a in self.args if a.kind == "int"]

    def words(self, kind: str) -> list[Arg]:
        """The word arguments of one kind (energy, card or word), in text order."""
        return [a for a in self.args if a.kind == kind]


@dataclass
class Use:
    """What one effect text of one card is: its kind and argument values (words as written)."""

    kind: str
    numbers: list[int]
    words: list[str]


@dataclass
class Templates:
    """Every kind, and for each (text, card name) the kind and its arguments."""

    kinds: dict[str, EffectKind]
    uses: dict[tuple[str, str], Use]


def tokens(text: str) -> list[str]:
    """Words, numbers, brace tokens, spaces and punctuation of a text (concatenated they give the text back)."""
    return TOKEN_RE.findall(text)


def _skeleton(text: str, card: str) -> tuple[list[str], list[int]]:
    """Tokens with numbers replaced by NUM, and the numbers; the card's own name becomes `~`, markup goes."""
    text = " ".join(html.unescape(TAG_RE.sub("", text)).split())
    if card and len(card) >= 3:
        text = re.sub(rf"(?<!\w){re.escape(card)}(?!\w)", "~", text)
    toks, nums = [], []
    for t in tokens(text):
        if t.isdigit():  # ordinals ("2nd") stay words
            toks.append(NUM)
            nums.append(int(t))
        elif t.lower() in NUMBER_WORDS:
            toks.append(NUM)
            nums.append(NUMBER_WORDS[t.lower()])
        else:
            toks.append(t)
    return toks, nums


def _slot_positions(toks: list[str]) -> list[tuple[int, int]]:
    """Token positions that may become a word argument, each with the fewest texts that must share the rest:
    symbol tokens and capitalized words not opening a sentence (2), other words (3: "Destroy target land.",
    "... creature.", "... artifact.")."""
    out = []
    start = True  # at the start of a sentence
    for i, t in enumerate(toks):
        if t.isspace():
            continue
        if (t[:1], t[-1:]) in (("{", "}"), ("[", "]")):
            out.append((i, 2))
        elif t[:1].isalpha() and not start:
            out.append((i, 2 if t[:1].isupper() else 3))
        start = t in (".", "!", "?", ":", "(", "•", ";")
    return out


def templatize(
    items: list[tuple[str, str]],
    energy_of: Callable[[str], str | None] = lambda w: None,
    is_card: Callable[[str], bool] = lambda w: False,
    avoid: set[str] | frozenset[str] = frozenset(),
) -> Templates:
    """Kinds for (text, card name) pairs. A word argument whose values all name energy types (`energy_of`
    gives the member) is an `energy` argument, one whose values are all cards of the list a `card` argument;
    argument names avoid `avoid` (global names of the spec)."""
    skel: dict[tuple[str, str], tuple[list[str], list[int]]] = {}
    for text, card in dict.fromkeys(items):
        skel[(text, card)] = _skeleton(text, card)
    # merge templates that differ in one slot-able token, biggest groups first, until none do
    groups: dict[tuple[str, ...], set[tuple[str, str]]] = defaultdict(set)
    for key, (toks, _) in skel.items():
        groups[tuple(toks)].add(key)
    while True:
        cand: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
        need: dict[tuple[str, ...], int] = {}
        for tmpl in groups:
            for i, least in _slot_positions(list(tmpl)):
                merged_key = (*tmpl[:i], SLOT, *tmpl[i + 1 :])
                cand[merged_key].add(tmpl)
                need[merged_key] = max(need.get(merged_key, 2), least)
        ok = [kv for kv in cand.items() if len(kv[1]) >= need[kv[0]]]
        best = max(ok, key=lambda kv: (len(kv[1]), kv[0]), default=None)
        if best is None:
            break
        merged = groups.setdefault(best[0], set())
        for tmpl in best[1]:
            merged |= groups.pop(tmpl)
    kinds: dict[str, EffectKind] = {}
    uses: dict[tuple[str, str], Use] = {}
    taken = {"none"}
    for tmpl, keys in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        slots = [i for i, t in enumerate(tmpl) if t == SLOT]
        words = {k: [skel[k][0][i] for i in slots] for k in keys}
        args, text = _args(list(tmpl), slots, [words[k] for k in keys], energy_of, is_card, avoid)
        name = _unique(_kind_name(tmpl), taken)
        choice = bool(CHOICE_RE.search(text))
        if choice:
            args.append(Arg("choice", "choice"))
        texts = sorted({k[0] for k in keys})
        kinds[name] = EffectKind(name, text, args, choice, texts[:MAX_EXAMPLES], len(texts))
        for k in keys:
            uses[k] = Use(name, skel[k][1], words[k])
    return Templates(kinds, uses)


def _args(
    tmpl: list[str],
    slots: list[int],
    values: list[list[str]],
    energy_of: Callable[[str], str | None],
    is_card: Callable[[str], bool],
    avoid: set[str] | frozenset[str],
) -> tuple[list[Arg], str]:
    """Name and type the arguments of a template; the template text with `{name}` placeholders."""
    args: list[Arg] = []
    names: set[str] = {"pl", "choice", "c", "slot", *avoid}
    out = list(tmpl)
    for i, t in enumerate(tmpl):
        if t == NUM:
            base = _number_name(tmpl[i + 1 :])
            name = _unique(f"n_{base}" if base in avoid and base != "n" else base, names)  # cards -> n_cards
            args.append(Arg(name, "int"))
            out[i] = "{" + name + "}"
        elif t == SLOT:
            j = slots.index(i)
            vals = {v[j] for v in values}
            if all(energy_of(v) for v in vals):
                kind, base = "energy", "energy"
            elif all(is_card(v) for v in vals):
                kind, base = "card", "card"
            else:
                kind, base = "word", "word"
            name = _unique(base, names)
            args.append(Arg(name, kind))
            out[i] = "{" + name + "}"
    return args, "".join(out)


def _number_name(rest: list[str]) -> str:
    """A number's argument name: the noun after it ("20 damage", "2 more cards", "3 coins"), else `n`."""
    words = [w for w in rest[:8] if not w.isspace()]
    if rest and (rest[0][:1], rest[0][-1:]) in (("{", "}"), ("[", "]")):  # "2[credit]", "3{C}"
        words = [rest[0][1:-1]]
    for w in words[:3]:
        if not w[:1].isalpha() or w.lower() in STOPWORDS:
            break
        if w.lower() in MODIFIERS or w[:1].isupper():  # "2 more cards", "1 Fire Energy card"
            continue
        if w.lower() in NOT_NOUNS:
            break
        name = slug(w, max_words=1)
        return name if name and not name[0].isdigit() and len(name) <= 24 else "n"
    return "n"


def _kind_name(tmpl: tuple[str, ...]) -> str:
    words = [t for t in tmpl if t not in (NUM, SLOT)]
    name = slug("".join(words).replace("'", "").replace("’", ""), max_words=6) or "effect"
    while len(name) > 50 and "_" in name:  # whole words, short enough for `effect_<name>` (64)
        name = name.rsplit("_", 1)[0]
    return name[:50]


def _unique(name: str, taken: set[str]) -> str:
    out, i = name, 2
    while out in taken:
        out, i = f"{name}_{i}", i + 1
    taken.add(out)
    return out
