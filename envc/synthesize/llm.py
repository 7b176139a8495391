"""The Messages API through the anthropic SDK, with token usage and cost from a price table."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

DEFAULT_MODEL = "claude-sonnet-4-6"
KEY_VAR = "ANTHROPIC_API_KEY"


class SynthError(Exception):
    """Synthesis cannot go on (missing key, API failure, bad configuration); one line for the user."""


@dataclass(frozen=True)
class Prices:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float


@dataclass
class Usage:
    """Token counts of one or more calls (`input` excludes cached tokens, as the API reports it)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
        )

    def cost(self, p: Prices) -> float:
        """USD for these tokens."""
        return (
            self.input * p.input + self.output * p.output + self.cache_read * p.cache_read
            + self.cache_write * p.cache_write
        ) / 1e6  # fmt: skip


@dataclass(frozen=True)
class Answer:
    """The text of a reply and what it cost."""

    text: str
    usage: Usage
    stop_reason: str


def load_prices(path: str | None = None) -> dict[str, Prices]:
    """The price table: `path` if given, else the one shipped with envc."""
    try:
        text = Path(path).read_text("utf-8") if path else files("envc.synthesize").joinpath("prices.yaml").read_text()
        raw = yaml.safe_load(text)
    except (OSError, yaml.YAMLError) as e:
        raise SynthError(f"cannot read the price table {path or 'prices.yaml'}: {e}") from None
    if not isinstance(raw, dict):
        raise SynthError(f"price table {path}: expected a mapping of model -> prices")
    out = {}
    for model, row in raw.items():
        try:
            out[str(model)] = Prices(*(float(row[k]) for k in ("input", "output", "cache_write", "cache_read")))
        except (TypeError, KeyError, ValueError):
            raise SynthError(
                f"price table {path or 'prices.yaml'}: model '{model}' needs input, output, cache_write, cache_read"
            ) from None
    return out


def api_key() -> str:
    """The API key from the environment, or a SynthError that says what is needed."""
    key = os.environ.get(KEY_VAR, "").strip()
    if not key:
        raise SynthError(
            f"envc synthesize calls the Anthropic Messages API and needs an API key: set {KEY_VAR} "
            "(https://console.anthropic.com). Every other envc command works without it."
        )
    return key


class Client:
    """A Messages API client (the real SDK; `base_url` from ANTHROPIC_BASE_URL or the argument)."""

    def __init__(self, model: str, max_tokens: int, base_url: str | None = None, timeout: float = 600.0) -> None:
        try:
            import anthropic
        except ImportError:
            raise SynthError("envc synthesize needs the anthropic package: pip install 'envc[llm]'") from None
        self._anthropic = anthropic
        self.model = model
        self.max_tokens = max_tokens
        self._client = anthropic.Anthropic(api_key=api_key(), base_url=base_url, timeout=timeout, max_retries=3)

    def ask(self, system: list[dict[str, Any]], messages: list[dict[str, Any]]) -> Answer:
        """One request; API failures become SynthError."""
        a = self._anthropic
        try:
            msg = self._client.messages.create(
                model=self.model, max_tokens=self.max_tokens, system=system, messages=messages  # type: ignore[arg-type]
            )
        except a.APIStatusError as e:
            kind = ""
            body = e.body if isinstance(e.body, dict) else {}
            err = body.get("error") if isinstance(body.get("error"), dict) else {}
            if err:
                kind = f" {err.get('type', '')}: {err.get('message', '')}"
            raise SynthError(f"Anthropic API error {e.status_code}{kind or ': ' + str(e)}") from None
        except a.APITimeoutError:
            raise SynthError("the Anthropic API did not answer in time") from None
        except a.APIConnectionError as e:
            raise SynthError(f"cannot reach the Anthropic API: {e}") from None
        except ValueError as e:  # the SDK refuses some requests before sending them (e.g. too many max_tokens)
            raise SynthError(f"the anthropic SDK refused the request: {e}") from None
        u = msg.usage
        usage = Usage(
            u.input_tokens or 0, u.output_tokens or 0, u.cache_read_input_tokens or 0,
            u.cache_creation_input_tokens or 0,
        )  # fmt: skip
        text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", "") == "text")
        return Answer(text, usage, str(msg.stop_reason or ""))
