"""LLM calls through the official SDKs (anthropic: Messages API; openai: chat completions, which local vLLM,
Ollama and llama.cpp servers speak too), with token usage and cost from a price table."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

DEFAULT_MODEL = "claude-sonnet-4-6"
KEY_VAR = "ANTHROPIC_API_KEY"
KEY_VARS = {"anthropic": KEY_VAR, "openai": "OPENAI_API_KEY"}
DEFAULT_MODELS = {"anthropic": DEFAULT_MODEL, "openai": "gpt-5.4"}
PROVIDERS = {"anthropic": "Anthropic Messages API", "openai": "OpenAI chat completions API"}


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


def is_loopback(url: str | None) -> bool:
    """Whether `url` names this machine (a local vLLM, Ollama or llama.cpp server needs no API key)."""
    if not url:
        return False
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_key(provider: str = "anthropic", base_url: str | None = None) -> str:
    """The provider's API key from the environment, or a SynthError that says what is needed.

    A `base_url` on this machine (127.0.0.1, ::1, localhost) needs none: local servers ignore the key.
    """
    var = KEY_VARS[provider]
    key = os.environ.get(var, "").strip()
    if not key and is_loopback(base_url):
        return "no-key-needed-for-a-local-server"
    if not key:
        site = "https://console.anthropic.com" if provider == "anthropic" else "https://platform.openai.com"
        raise SynthError(
            f"envc synthesize calls the {PROVIDERS[provider]} and needs an API key: set {var} ({site}), or "
            "point --base-url at a local server (127.0.0.1). Every other envc command works without it."
        )
    return key


def default_model(provider: str) -> str:
    """The model used when --model is not given."""
    return DEFAULT_MODELS[provider]


def request_body(
    provider: str, model: str, max_tokens: int, base_url: str | None, system: list[dict[str, Any]],
    messages: list[dict[str, Any]],
) -> dict[str, Any]:  # fmt: skip
    """The JSON body sent for one request, in the provider's wire format.

    Anthropic Messages: the blocks as given (with their cache_control marks). OpenAI chat completions: the
    system blocks joined into one system message and each message's blocks into one string (local servers
    such as llama.cpp accept only strings); `max_completion_tokens` for OpenAI's own API, `max_tokens` for
    any other server (vLLM, Ollama and llama.cpp read that one).
    """
    if provider == "anthropic":
        return {"model": model, "max_tokens": max_tokens, "system": system, "messages": messages}
    chat = [{"role": "system", "content": "\n\n".join(b["text"] for b in system)}]
    for m in messages:
        content = m["content"]
        text = content if isinstance(content, str) else "\n\n".join(b["text"] for b in content)
        chat.append({"role": m["role"], "content": text})
    limit = "max_completion_tokens" if base_url is None else "max_tokens"
    return {"model": model, limit: max_tokens, "messages": chat}


class Client:
    """A Messages API client (the real SDK; `base_url` from ANTHROPIC_BASE_URL or the argument)."""

    provider = "anthropic"

    def __init__(self, model: str, max_tokens: int, base_url: str | None = None, timeout: float = 600.0) -> None:
        try:
            import anthropic
        except ImportError:
            raise SynthError("envc synthesize needs the anthropic package: pip install 'envc[llm]'") from None
        self._anthropic = anthropic
        self.model = model
        self.max_tokens = max_tokens
        key = api_key("anthropic", base_url)
        self._client = anthropic.Anthropic(api_key=key, base_url=base_url, timeout=timeout, max_retries=3)
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


class OpenAIClient:
    """A chat completions client (the real openai SDK): OpenAI's API, or any compatible server at `base_url`."""

    provider = "openai"

    def __init__(self, model: str, max_tokens: int, base_url: str | None = None, timeout: float = 600.0) -> None:
        try:
            import openai
        except ImportError:
            raise SynthError("--provider openai needs the openai package: pip install 'envc[llm]'") from None
        self._openai = openai
        self.model = model
        self.max_tokens = max_tokens
        self.base_url = base_url
        key = api_key("openai", base_url)
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=3)

    def ask(self, system: list[dict[str, Any]], messages: list[dict[str, Any]]) -> Answer:
        """One request; API failures become SynthError."""
        o = self._openai
        where = self.base_url or "the OpenAI API"
        body = request_body("openai", self.model, self.max_tokens, self.base_url, system, messages)
        try:
            resp = self._client.chat.completions.create(**body)
        except o.APIStatusError as e:
            body_ = e.body if isinstance(e.body, dict) else {}
            err = body_.get("error") if isinstance(body_.get("error"), dict) else body_
            kind = f" {err.get('type') or err.get('code') or ''}: {err.get('message', '')}" if err else ""
            msg = kind or ": " + str(e)
            raise SynthError(f"OpenAI-compatible API error {e.status_code} from {where}{msg}") from None
        except o.APITimeoutError:
            raise SynthError(f"{where} did not answer in time") from None
        except o.APIConnectionError as e:
            raise SynthError(f"cannot reach {where}: {e}") from None
        except ValueError as e:
            raise SynthError(f"the openai SDK refused the request: {e}") from None
        if not resp.choices:
            raise SynthError(f"{where} answered with no choices")
        choice = resp.choices[0]
        u = resp.usage
        details = getattr(u, "prompt_tokens_details", None) if u else None
        cached = int(getattr(details, "cached_tokens", 0) or 0)
        written = int(getattr(details, "cache_write_tokens", 0) or 0)
        prompt = int(u.prompt_tokens or 0) if u else 0
        usage = Usage(max(prompt - cached - written, 0), int(u.completion_tokens or 0) if u else 0, cached, written)
        msg = choice.message
        stop = {"length": "max_tokens", "content_filter": "refusal"}.get(choice.finish_reason or "", "end_turn")
        if getattr(msg, "refusal", None):
            stop = "refusal"
        return Answer(msg.content or "", usage, stop)


def make_client(provider: str, model: str, max_tokens: int, base_url: str | None) -> Client | OpenAIClient:
    """The SDK client of `provider`."""
    if provider == "openai":
        return OpenAIClient(model, max_tokens, base_url)
    return Client(model, max_tokens, base_url)
