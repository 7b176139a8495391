"""`envc synthesize`: an LLM turns a draft's rule text into spec code, checked and repaired by the compiler.

The model writes envc spec code only (never Python or Rust): every answer is merged into the spec, linted and
type-checked, and run through the derived L1 checks on the reference interpreter; located diagnostics go back
to the model until the item passes or its budget is spent.
"""

from __future__ import annotations

from .check import Problem, check_spec, parse_answer
from .items import Item, items_of, merge
from .llm import DEFAULT_MODEL, Client, Prices, SynthError, Usage, load_prices
from .loop import Config, ItemReport, Report, synthesize

__all__ = [
    "DEFAULT_MODEL",
    "Client",
    "Config",
    "Item",
    "ItemReport",
    "Prices",
    "Problem",
    "Report",
    "SynthError",
    "Usage",
    "check_spec",
    "items_of",
    "load_prices",
    "merge",
    "parse_answer",
    "synthesize",
]
