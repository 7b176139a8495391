"""What `envc scrape` extracts from the real public pages in tests/fixtures/real/, and what synthesis would send.

For each fixture (rules page + card list; rules only for the board games) it runs the real commands:
`envc scrape --from-file`, `envc lint` on the draft, and `envc synthesize --dry-run` (no key, nothing sent),
then prints one markdown table per page (sections, todo items, tables and rows, columns by type, effect texts ->
effect kinds, notes, lint result, seconds, requests and their estimated size and cost) and a summary table.
Seconds are wall-clock seconds of each command, Python start included. The host is named in the output.

    .venv/bin/python benchmarks/scrape_real.py [--only pokemon] [--keep DIR]
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"
_SCRIPT = Path(sys.executable).parent / "envc"  # the installed `envc` command, as a user runs it
ENVC = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "envc.cli"]

# (label, folder, rules page, card lists); mtg-txt is the Comprehensive Rules as published (.txt), mtg our HTML of it
PAIRS: list[tuple[str, str, str, list[str]]] = [
    ("pokemon", "pokemon", "rules.html", ["cards.html"]),
    ("pokemon-sv1", "pokemon", "rules.html", ["cards_sv1.json"]),
    ("netrunner", "netrunner", "rules.html", ["cards_core.json"]),
    ("mtg", "mtg", "rules.html", ["cards_lea.json"]),
    ("mtg-txt", "mtg", "rules.txt", ["cards_lea.json"]),
    ("backgammon", "backgammon", "rules.html", []),
    ("kreversi", "kreversi", "manual.html", []),
    ("splendor", "rulebooks", "splendor.md", []),
    ("ticket-to-ride", "rulebooks", "ticket-to-ride.md", []),
]
NOT_YET: set[str] = set()  # pairs expected to fail today
INT_TYPES = {"i8", "i16", "i32", "i64", "u8"}
COST_LINE = re.compile(r"estimated cost of the first attempts: \$([\d.]+) input .*?\+ up to \$([\d.]+) output")
LARGEST = re.compile(r"largest request: (\S+), ~([\d,]+) tokens; all first attempts: ~([\d,]+) input tokens")
PLANNED = re.compile(r"(\d+) request\(s\) planned for (\S+) (\S+), budget ([\d,]+) tokens per request")


@dataclass
class Result:
    """What one page pair gave."""

    label: str
    files: list[str]
    ok: bool = False
    error: str = ""
    sections: Counter[str] = field(default_factory=Counter)
    items: dict[str, list[str]] = field(default_factory=dict)
    tables: list[tuple[str, int]] = field(default_factory=list)
    columns: Counter[str] = field(default_factory=Counter)
    cards: int = 0
    effect_texts: int = 0
    effect_kinds: int = 0
    kind_names: list[str] = field(default_factory=list)
    notes: int = 0
    lint: str = ""
    scrape_s: float = 0.0
    lint_s: float = 0.0
    dry: dict[str, Any] = field(default_factory=dict)
    dry_s: float = 0.0


def host() -> str:
    """CPU model, vCPU count and the widest SIMD level, from /proc/cpuinfo."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown host (no /proc/cpuinfo)"
    model = re.search(r"^model name\s*:\s*(.+)$", info, re.M)
    found = re.search(r"^flags\s*:\s*(.+)$", info, re.M)
    flags = set(found.group(1).split()) if found else set()
    simd = [n for f, n in (("avx512f", "AVX-512F"), ("avx2", "AVX2"), ("sse4_2", "SSE4.2")) if f in flags]
    cpus = len(re.findall(r"^processor\s*:", info, re.M))
    return f"{cpus} vCPU {model.group(1).strip() if model else 'unknown CPU'} ({' + '.join(simd[:2]) or 'no AVX'})"


def run(args: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    t = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    return proc, time.perf_counter() - t


def sections_of(rules: Path) -> Counter[str]:
    """Sections of the rules page by kind (action/rule/module), as the scraper's adapter classifies them."""
    from envc.scrapers import choose, read_saved
    from envc.scrapers.extract import soup_of, trim_headings

    page = trim_headings(read_saved(str(rules), 5 << 20))
    content = choose(page.url, soup_of(page), None).extract(page, soup_of(page))
    return Counter(s.kind for s in content.sections)


def announced_table() -> str:
    """Every Markdown rulebook of tests/fixtures/real/rulebooks: the actions found by a heading's verb alone and
    those a lead sentence announced (`scrapers.announced`), by name."""
    from envc.scrapers import choose, read_saved
    from envc.scrapers.extract import soup_of

    lines = ["| rulebook | sections | actions by heading verb | announced (new or re-marked) |", "|---|---|---|---|"]
    for path in sorted((REAL / "rulebooks").glob("*.md")):
        page = read_saved(str(path))
        soup = soup_of(page)
        adapter = choose(page.url, soup, None)
        content = adapter.extract(page, soup)
        by_verb = {s.title for s in content.sections if s.kind == "action" and adapter.classify(s) == "action"}
        new = [s.title for s in content.sections if s.kind == "action" and s.title not in by_verb]
        lines.append(
            f"| {path.stem} | {len(content.sections)} | {len(by_verb)} | {len(new)}: "
            + (", ".join(f"`{t[:40]}`" for t in new) or "-") + " |"
        )
    return "\n".join(lines) + "\n"


def column_kind(name: str, spec: Any, enums: dict[str, list[str]], n_energy: int) -> str:
    """int, enum, cost, link, effect (kind and argument columns) or str."""
    if spec == "str" or (isinstance(spec, dict) and spec.get("type") == "str"):
        return "str"
    ty = spec if isinstance(spec, str) else spec.get("type", "")
    shape = [] if isinstance(spec, str) else spec.get("shape", [])
    doc = "" if isinstance(spec, str) else str(spec.get("doc", ""))
    if re.search(r"_(kind|args|energy|word|card)(_\d+)?$", name) and ("effect" in doc or name.endswith("_kind")):
        return "effect"
    if name.endswith("_id") and "card id" in doc:
        return "link"
    if ty in INT_TYPES and shape and n_energy and shape[-1] == n_energy:
        return "cost"
    if ty in enums:
        return "enum"
    return "int" if ty in INT_TYPES or ty in ("f32", "bool") else "str"


def effect_texts(table: dict[str, Any]) -> set[str]:
    """Distinct texts behind the effect-kind columns: `X_kind[_n]` sits beside its text column `X[_n]`, or
    beside `X_1`, `X_2`, ... when the kinds were merged into one array column."""
    cols = table["columns"]
    texts: set[str] = set()
    for name, spec in cols.items():
        m = re.match(r"^(.*)_kind(_\d+)?$", name)
        if not m or not isinstance(spec, dict):
            continue
        stem, suffix = m.group(1), m.group(2) or ""
        shaped = bool(spec.get("shape"))
        sources = [f"{stem}_{i + 1}" for i in range(spec["shape"][0])] if shaped else [stem + suffix]
        for row in table["rows"]:
            kinds = row.get(name)
            for i, src in enumerate(sources):
                kind = kinds[i] if shaped and isinstance(kinds, list) else kinds
                if kind not in (None, "none") and row.get(src):
                    texts.add(str(row[src]))
    return texts


def measure(label: str, folder: str, rules: str, cards: list[str], work: Path) -> Result:
    files = [REAL / folder / f for f in [rules, *cards]]
    r = Result(label, [f.name for f in files])
    draft = work / f"{label}.yaml"
    rel = [str(f.relative_to(ROOT)) for f in files]  # the commands run in the repository root
    proc, r.scrape_s = run([*ENVC, "scrape", "--from-file", *rel, "-o", str(draft)])
    if proc.returncode != 0:
        r.error = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return r
    r.sections = sections_of(files[0])
    doc = yaml.safe_load(draft.read_text())
    r.notes = sum(1 for line in draft.read_text().splitlines() if line.startswith("# Note:"))
    for t in doc.get("todo") or []:
        kind = t["target"].split(".")[0] if "." in t["target"] else t["target"]
        r.items.setdefault(kind, []).append(t["name"])
    enums = {k: v["enum"] for k, v in (doc.get("types") or {}).items() if isinstance(v, dict) and "enum" in v}
    n_energy = len([m for m in enums.get("Energy", []) if m != "none"])
    for tname, t in (doc.get("tables") or {}).items():
        r.tables.append((tname, len(t["rows"])))
        for cname, spec in t["columns"].items():
            r.columns[column_kind(cname, spec, enums, n_energy)] += 1
        if tname == "cards":
            r.cards = len(t["rows"]) - 1  # row 0 is "(no card)"
            r.effect_texts = len(effect_texts(t))
    effect = [m for m in enums.get("Effect", []) if m != "none"]
    r.effect_kinds, r.kind_names = len(effect), effect
    proc, r.lint_s = run([*ENVC, "lint", str(draft)])
    codes = Counter(re.findall(r"(?:warning|error)\[(\w+)\]", proc.stdout + proc.stderr))
    errors = sorted(c for c in codes if not c.startswith("W"))
    r.lint = ("errors: " + ", ".join(errors)) if errors else ", ".join(f"{c} x{n}" for c, n in sorted(codes.items()))
    r.lint = r.lint or "clean"
    out = work / f"{label}.spec.yaml"
    proc, r.dry_s = run([*ENVC, "synthesize", str(draft), "-o", str(out), "--dry-run"])
    text = " ".join((proc.stdout + proc.stderr).split())
    planned, largest, cost = PLANNED.search(text), LARGEST.search(text), COST_LINE.search(text)
    if proc.returncode != 0 or not (planned and largest and cost):
        r.error = "synthesize --dry-run: " + (proc.stderr.strip().splitlines() or ["unexpected output"])[-1]
        return r
    r.dry = {
        "requests": int(planned.group(1)),
        "model": f"{planned.group(2)} {planned.group(3)}",
        "budget": int(planned.group(4).replace(",", "")),
        "over": text.count("(over)"),
        "outline_parts": len(set(re.findall(r"│ (outline_part\d+) ", proc.stdout))) or int("│ outline " in proc.stdout),
        "largest": largest.group(1),
        "largest_tokens": int(largest.group(2).replace(",", "")),
        "input_tokens": int(largest.group(3).replace(",", "")),
        "input_usd": float(cost.group(1)),
        "output_usd": float(cost.group(2)),
    }
    r.ok = not errors
    return r


def few(names: list[str], n: int = 4) -> str:
    shown = ", ".join(f"`{x}`" for x in names[:n])
    return f"{shown}, ... (+{len(names) - n})" if len(names) > n else shown or "-"


def page_table(r: Result) -> str:
    rows = [("files", ", ".join(r.files))]
    if r.error:
        rows.append(("error", r.error))
    if r.sections:
        rows.append(("rule sections (by kind)", ", ".join(f"{k} {n}" for k, n in sorted(r.sections.items()))))
    if r.items or not r.error:
        rows += [
            ("actions", f"{len(r.items.get('actions', []))}: {few(r.items.get('actions', []))}"),
            ("rules", f"{len(r.items.get('rules', []))}: {few(r.items.get('rules', []))}"),
            ("modules", f"{len(r.items.get('module', []))}: {few(r.items.get('module', []))}"),
            ("tables (rows)", ", ".join(f"{n} ({k})" for n, k in r.tables) or "-"),
            ("columns by type", ", ".join(f"{k} {r.columns[k]}" for k in
                                          ("int", "enum", "cost", "link", "effect", "str") if r.columns[k]) or "-"),
        ]  # fmt: skip
        if r.cards:
            rows.append(("cards; effect texts -> kinds",
                         f"{r.cards}; {r.effect_texts} -> {r.effect_kinds} ({few(r.kind_names, 3)})"))  # fmt: skip
        rows += [
            ("notes in the draft", str(r.notes)),
            ("lint", r.lint),
            ("seconds (scrape / lint / dry-run)", f"{r.scrape_s:.1f} / {r.lint_s:.1f} / {r.dry_s:.1f}"),
        ]
    if r.dry:
        d = r.dry
        rows += [
            ("dry-run requests", f"{d['requests']} ({d['model']}, budget {d['budget']:,} tokens each)"),
            ("outline requests (parts of the rule text)", str(d["outline_parts"])),
            ("largest request", f"`{d['largest']}`, ~{d['largest_tokens']:,} tokens"),
            ("requests over the budget", str(d["over"])),
            ("estimated cost, first attempts",
             f"${d['input_usd']:.2f} input (~{d['input_tokens']:,} tokens, uncached) + up to ${d['output_usd']:.2f} "
             "output"),
        ]  # fmt: skip
    body = "\n".join(f"| {k} | {v} |" for k, v in rows)
    return f"### {r.label}\n\n| | |\n|---|---|\n{body}\n"


def summary(results: list[Result]) -> str:
    head = ("| page | sections | actions / rules / modules | tables (rows) | cards | effect texts -> kinds | notes "
            "| lint | scrape s | requests (outline parts; over budget) | largest ~tokens | est. input $ |")  # fmt: skip
    lines = [head, "|" + "---|" * 12]
    for r in results:
        tables = ", ".join(f"{n} ({k})" for n, k in r.tables) or "-"
        items = "/".join(str(len(r.items.get(k, []))) for k in ("actions", "rules", "module"))
        fx = f"{r.effect_texts} -> {r.effect_kinds}" if r.cards else "-"
        d = r.dry
        lines.append(
            f"| {r.label} | {sum(r.sections.values())} | {items} | {tables} | {r.cards or '-'} | {fx} | {r.notes} "
            f"| {r.lint or r.error} | {r.scrape_s:.1f} | {d['requests']} ({d['outline_parts']}; {d['over']}) | "
            f"{d['largest_tokens']:,} | {d['input_usd']:.2f} |" if d else
            f"| {r.label} | {sum(r.sections.values())} | {items} | {tables} | {r.cards or '-'} | {fx} | {r.notes} "
            f"| {r.lint or r.error} | {r.scrape_s:.1f} | - | - | - |"
        )  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", help="Only these pages (labels: " + ", ".join(p[0] for p in PAIRS) + ")")
    ap.add_argument("--keep", help="Write the drafts into this folder instead of a temporary one")
    ap.add_argument("--rulebooks", action="store_true", help="Only the table of announced actions per rulebook")
    args = ap.parse_args()
    if args.rulebooks:
        print(f"# Actions in the Markdown rulebooks ({datetime.date.today().isoformat()}, {host()})\n")
        print(announced_table())
        return 0
    pairs = [p for p in PAIRS if not args.only or p[0] in args.only]
    if not pairs:
        print(f"error: --only: no such page (have: {', '.join(p[0] for p in PAIRS)})", file=sys.stderr)
        return 2
    print(f"# envc scrape on real pages ({datetime.date.today().isoformat()}, {host()})\n")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for label, folder, rules, cards in pairs:
            r = measure(label, folder, rules, cards, work)
            results.append(r)
            print(page_table(r), flush=True)
    print("## Summary\n")
    print(summary(results))
    return 0 if all(r.ok or r.label in NOT_YET for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
