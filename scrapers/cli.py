"""The `envc scrape` command (envc/cli.py declares the options and calls `run`)."""

from __future__ import annotations

import sys
from collections import Counter

from . import Fetcher, ScrapeError, scrape
from .emit import write_atomic
from .fetch import check_limits


def run(
    urls: list[str],
    out: str,
    *,
    from_file: bool = False,
    name: str | None = None,
    players: int = 2,
    adapter: str | None = None,
    timeout: float = 20.0,
    max_bytes: int = 5 * 1024 * 1024,
    max_redirects: int = 5,
    max_pages: int = 20,
    delay: float = 1.0,
) -> int:
    """Scrape, write the draft atomically, list what is left to formalize; returns the exit status.

    Every failure is one `error: ...` line on stderr and exit status 1 (2 for a bad option).
    """
    problem = check_limits(timeout, max_bytes, max_redirects, delay)
    if problem is None and not 1 <= players <= 16:
        problem = "--players must be between 1 and 16"
    if problem is None and max_pages < 1:
        problem = f"--max-pages must be at least 1 (got {max_pages})"
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    fetcher = Fetcher(timeout=timeout, max_bytes=max_bytes, max_redirects=max_redirects, delay=delay)
    try:
        draft = scrape(
            urls,
            from_files=from_file,
            name=name,
            players=players,
            adapter=adapter,
            fetcher=fetcher,
            max_pages=max_pages,
        )
        text = draft.yaml()
        write_atomic(out, text)
    except ScrapeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: cannot write {out}: {e.strerror or e}", file=sys.stderr)
        return 1
    except (MemoryError, RecursionError) as e:  # a page beyond the limits' intent; say so in one line
        print(f"error: the pages are too large or too deeply nested to draft ({type(e).__name__})", file=sys.stderr)
        return 1
    except Exception as e:  # a scraper bug must still be one line, not a traceback
        msg = " ".join(str(e).split())[:200]
        print(
            f"error: scraping failed unexpectedly: {type(e).__name__}: {msg} (please report this page)", file=sys.stderr
        )
        return 1
    for note in draft.notes:
        print(f"note: {note}", file=sys.stderr)
    tables = ", ".join(f"{t.name} ({t.n_rows} rows)" for t in draft.tables.values()) or "none"
    kinds = Counter(t.target.split(".")[0] for t in draft.todo)
    print(f"wrote {out}: tables {tables}", file=sys.stderr)
    print(
        f"{len(draft.todo)} todo items: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())),
        file=sys.stderr,
    )
    import envc

    _, diags = envc.lint(out)
    for d in diags:
        print(d.format())
    if any(d.severity.value == "error" for d in diags):  # a scraper bug: the draft must always lint
        print(f"error: the draft {out} does not lint; please report this page", file=sys.stderr)
        return 1
    print(f"next: envc synthesize {out} -o spec.yaml", file=sys.stderr)
    return 0
