"""Kill rate of the derived suite on the shipped specs: `envc mutate` on each, one table (issue #20's figure).

Each spec gets the same sample size and seed; the suite is `envc verify`'s default (L3 100 episodes, L2 200
states per source, L1 a fifth of the episodes), run level by level, stopping at the first failure. Prints a
markdown table (killed / non-equivalent, the level split, equivalents, stillborn, time) and writes the full
reports as JSON (after each spec). Survivors of a spec whose reachable states can be listed are run on all of
them against the original (`envc.mutate.reachable`); those with the original's outputs everywhere are counted
as equivalent on the reachable space, apart from the proven (identical-program) equivalents.

    python benchmarks/mutate_specs.py                                  # JAX, the default specs
    python benchmarks/mutate_specs.py --backend rust --mutants 60
    python benchmarks/mutate_specs.py --specs specs/cartpole.yaml --out /tmp/mut.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPECS = ["specs/cartpole.yaml", "specs/tic_tac_toe.yaml", "specs/connect_four.yaml", "specs/kuhn_poker.yaml"]


def cpu() -> str:
    """The host's CPU model and core count, as /proc/cpuinfo names it."""
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specs", nargs="*", default=SPECS)
    ap.add_argument("--backend", default="jax", choices=["jax", "rust"])
    ap.add_argument("--mutants", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=float, default=900.0, help="seconds per spec")
    ap.add_argument("--episodes", type=int, default=100, help="the suite's L3 episodes (envc verify's default)")
    ap.add_argument("--states", type=int, default=200, help="the suite's L2 states (envc verify's default)")
    ap.add_argument("--out", default=None, help="write the JSON reports here")
    args = ap.parse_args()

    import envc
    from envc.mutate import MutateError, mutate, program
    from envc.mutate.report import percent

    reports = []
    rows = []
    for path in args.specs:
        spec = envc.load(str(ROOT / path) if not Path(path).exists() else path)
        t0 = time.perf_counter()
        prog = program(spec, args.backend)
        build = time.perf_counter() - t0
        try:
            rep = mutate(
                spec,
                prog,
                mutants=args.mutants,
                seed=args.seed,
                budget=args.budget,
                episodes=args.episodes,
                states=args.states,
            )
        except MutateError as e:  # no passing baseline: no score
            rows.append(f"| {spec.name} | {len(prog.sites)} | - | {e} |" + " |" * 7)
            print(rows[-1], file=sys.stderr, flush=True)
            continue
        d = rep.to_json()
        d["build_seconds"] = round(build, 1)
        reports.append(d)
        k = rep.count("killed")
        split = rep.by_level()
        rows.append(
            f"| {spec.name} | {rep.sites} | {len(rep.outcomes)} | {k} / {rep.scored} | "
            f"{percent(k, rep.scored)} | "
            + " / ".join(f"{split[lv]} ({percent(split[lv], k)})" for lv in ("L1", "L2", "L3"))
            + f" | {rep.count('survived')} | {rep.proven} / {rep.reachable} / {rep.bounded} / {rep.tolerance} / "
            f"{rep.unreached} | "
            f"{rep.count('stillborn')} | {rep.count('not run')} | {rep.seconds:.0f} |"
        )
        print(rows[-1], file=sys.stderr, flush=True)
        if args.out:  # after every spec: a long run that is stopped keeps what it measured
            Path(args.out).write_text(json.dumps(reports, indent=2) + "\n")
    print(f"Backend {args.backend}, {args.mutants} mutants per spec, seed {args.seed}; host: {cpu()}\n")
    print(
        "| spec | sites | mutants | killed / non-equivalent | kill rate | L1 / L2 / L3 (share of killed) | survived | "
        "equivalent: proven / reachable space / declared bounds / float tolerance / unreached | stillborn | not run | "
        "seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    killed = sum(r["killed"] for r in reports)
    scored = sum(r["killed"] + r["survived"] for r in reports)
    split = {lv: sum(r["by_level"][lv] for r in reports) for lv in ("L1", "L2", "L3")}
    print(
        f"\nAll: {killed} / {scored} = {percent(killed, scored)} killed; level split "
        + " / ".join(f"{lv} {percent(split[lv], killed)}" for lv in split)
        + " (paper: 68 / 24 / 8)"
    )
    if args.out:
        Path(args.out).write_text(json.dumps(reports, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
