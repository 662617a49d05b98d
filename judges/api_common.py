"""What every API judge shares: settings, rate limits, retries, failures, cache, cost.

The OpenAI, OpenAI-compatible and Anthropic backends (:mod:`voirdire.judges.openai_judge`,
:mod:`voirdire.judges.anthropic_judge`) subclass :class:`APIJudge` and differ only in how a
query becomes a request and a response becomes a :class:`Reply` (and in the batch API's
wire format). Everything else lives here, once:

- **Concurrency.** A worker actor answers the queries of all its batches concurrently, at
  most ``concurrency`` requests in flight (an :class:`asyncio.Semaphore` per worker).
- **Rate limits.** Requests per minute (``rpm``) and tokens per minute (``tpm``) are held
  by one named, detached Ray actor per limit key (:class:`RateLimiter`), shared by every
  worker of every job on the cluster that uses the key. Every HTTP attempt, the SDK's own
  retries included, reserves its slot first (an httpx request hook), so the limit holds
  whatever the retry policy does. Each limit is a token bucket (:func:`bucket_for`) that
  never admits more than ``rpm / 60`` requests (``tpm / 60`` tokens) in any window of one
  second, nor ``rpm`` (``tpm``) in any minute; sustained throughput is ``1 -
  rate_burst_s`` (98 %) of the limit. Tokens reserved per request: the prompt's estimated tokens plus
  ``max_tokens`` -- the rule OpenAI documents for its TPM limit (never refunded).
- **Retries.** The official SDKs retry 408/409/429/5xx and connection errors with
  exponential backoff and honour ``Retry-After`` (``sdk_max_retries`` tries). A 429 also
  pauses the shared limiter for the server's ``Retry-After``. What the SDK gives up on is
  retried ``max_attempts - 1`` more times by us (transient classes only, backoff
  ``retry_backoff_s * 2**k`` seconds), then recorded as a failure.
- **Failures.** Every query ends as an output or a :class:`~voirdire.judges.base.FailureClass`
  with a message (secrets redacted): rate limited, server error (5xx, dropped connection),
  timeout, refused (401/403/404/other 4xx), context too long (checked before sending with
  the token estimate, and the provider's 400), content filtered, malformed response.
- **Cache.** Successful replies are stored in SQLite keyed by H(judge identity hash, system
  prompt + prompt, repetition) -- never pickle -- so a rerun, a resumed crash or an
  extended job never pays twice for the same query (``cache = "job" | "user" | "off" |
  path``).
- **Cost.** ``input_tokens * price_in + output_tokens * price_out`` (USD per 1M tokens) from
  :data:`PRICES` (list prices; override per judge with ``price_input_per_mtok`` /
  ``price_output_per_mtok``), halved in batch mode (both providers' batch discount).
- **Batch APIs** (``batch = true``): one provider batch per scheduler batch; its id and
  unit ids are written to ``<output_dir>/api_batches/<judge>/`` before polling, so a
  resumed job re-attaches to a submitted batch instead of paying again.
"""

from __future__ import annotations

import abc
import asyncio
import contextvars
import math
import os
import random
import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Iterable

from pydantic import Field, field_validator
from voirdire.judges.base import (
    JudgeBackend,
    JudgeContext,
    JudgeSettings,
    Query,
    Result,
    Sampling,
)

from voirdire.core import ConfigError, FailureClass, content_hash

# ---------------------------------------------------------------------------------------
# Price and context-window tables
# ---------------------------------------------------------------------------------------

#: List prices in USD per 1M tokens ``(input, output)``, matched by the longest model-name
#: prefix. Standard (non-batch) tier as published by OpenAI, Anthropic and Google in 2024-25;
#: check your provider's page and override per judge (``price_input_per_mtok`` /
#: ``price_output_per_mtok``) where they differ.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o-2024-05-13": (5.00, 15.00),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-4-1106-preview": (10.00, 30.00),
    "gpt-4-0125-preview": (10.00, 30.00),
    "gpt-4-32k": (60.00, 120.00),
    "gpt-4": (30.00, 60.00),
    "gpt-3.5-turbo-1106": (1.00, 2.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "o1-mini": (1.10, 4.40),
    "o1": (15.00, 60.00),
    "o3-mini": (1.10, 4.40),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-opus": (15.00, 75.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-3-sonnet": (3.00, 15.00),
    "claude-3-haiku": (0.25, 1.25),
    "gemini-1.5-pro": (1.25, 5.00),
    "gemini-1.5-flash": (0.075, 0.30),
    "gemini-2.0-flash": (0.10, 0.40),
    "gemini-pro": (0.50, 1.50),
}

#: Context windows in tokens, matched by the longest model-name prefix (``context_window``
#: overrides; an unknown model has no pre-send check).
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4-turbo": 128_000,
    "gpt-4-1106-preview": 128_000,
    "gpt-4-0125-preview": 128_000,
    "gpt-4-32k": 32_768,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "claude-": 200_000,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2.0-flash": 1_048_576,
    "gemini-pro": 32_760,
    "llama-2": 4_096,
    "Llama-2": 4_096,
    "meta-llama/Llama-2": 4_096,
    "llama-3": 8_192,
    "meta-llama/Meta-Llama-3-": 8_192,
    "llama-3.1": 131_072,
    "meta-llama/Llama-3.1": 131_072,
}

#: Batch APIs (OpenAI Batch, Anthropic Message Batches) bill half the standard price.
BATCH_DISCOUNT = 0.5


def _by_prefix(table: dict[str, Any], model: str) -> Any:
    best = max((k for k in table if model.startswith(k)), key=len, default=None)
    return table[best] if best is not None else None


def price_for(model: str, price_in: float | None = None, price_out: float | None = None) -> tuple[float, float] | None:
    """``(input, output)`` USD per 1M tokens: the overrides where given, else :data:`PRICES`;
    ``None`` when neither knows the model."""
    known = _by_prefix(PRICES, model)
    if price_in is not None and price_out is not None:
        return (price_in, price_out)
    if known is None:
        return None
    return (price_in if price_in is not None else known[0], price_out if price_out is not None else known[1])


def context_window_for(model: str, override: int | None = None) -> int | None:
    """The model's context window in tokens (``override`` first), or ``None`` if unknown."""
    return override if override is not None else _by_prefix(CONTEXT_WINDOWS, model)


def cost_usd(prices: tuple[float, float] | None, input_tokens: int | None, output_tokens: int | None,
             batch: bool = False) -> float | None:
    """USD for one call: ``(in * p_in + out * p_out) / 1e6``, times :data:`BATCH_DISCOUNT`
    in batch mode; ``None`` without a price or token counts."""
    if prices is None or input_tokens is None or output_tokens is None:
        return None
    usd = (input_tokens * prices[0] + output_tokens * prices[1]) / 1e6
    return usd * BATCH_DISCOUNT if batch else usd


# ---------------------------------------------------------------------------------------
# Token estimates
# ---------------------------------------------------------------------------------------

#: Characters per token assumed where no tokenizer is available. English prose runs about
#: 4 characters per token with the GPT/Claude tokenizers; 3 over-counts on purpose, so a
#: context-window check errs towards refusing rather than paying for a 400.
CHARS_PER_TOKEN = 3.0
#: Chat formatting overhead per message and for the reply priming (OpenAI cookbook,
#: "How to count tokens with tiktoken").
TOKENS_PER_MESSAGE = 4
TOKENS_REPLY_PRIMING = 3


@lru_cache(maxsize=64)
def _tiktoken_encoding(model: str) -> Any:
    """tiktoken's encoding for an OpenAI model, or ``None`` (unknown model, or its BPE file
    cannot be loaded, e.g. offline without ``TIKTOKEN_CACHE_DIR``)."""
    try:
        import tiktoken

        return tiktoken.encoding_for_model(model)
    except Exception:  # noqa: BLE001 - KeyError (unknown model) or a failed download
        return None


def count_tokens(text: str, model: str, use_tiktoken: bool) -> tuple[int, str]:
    """Tokens of ``text`` and the method used: ``("tiktoken:<encoding>")`` for OpenAI models
    whose encoding loads, else ``ceil(chars / CHARS_PER_TOKEN)`` (``"chars/3"``)."""
    if use_tiktoken:
        enc = _tiktoken_encoding(model)
        if enc is not None:
            return len(enc.encode(text, disallowed_special=())), f"tiktoken:{enc.name}"
    return math.ceil(len(text) / CHARS_PER_TOKEN), "chars/3"


def estimate_prompt_tokens(prompt: str, system: str | None, model: str, use_tiktoken: bool) -> int:
    """Estimated input tokens of a chat request: the messages' text plus the chat format's
    overhead (:data:`TOKENS_PER_MESSAGE` per message, :data:`TOKENS_REPLY_PRIMING`)."""
    n, _ = count_tokens(prompt, model, use_tiktoken)
    messages = 1
    if system:
        n += count_tokens(system, model, use_tiktoken)[0]
        messages += 1
    return n + TOKENS_PER_MESSAGE * messages + TOKENS_REPLY_PRIMING


# ---------------------------------------------------------------------------------------
# Secrets
# ---------------------------------------------------------------------------------------

_KEY_PATTERN = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{6,}|\bAIza[A-Za-z0-9_\-]{20,}")


def redact(text: str | None, *secrets: str | None) -> str | None:
    """``text`` with the given secrets and anything shaped like an API key replaced by
    ``[redacted]`` (providers echo partly masked keys in 401 messages)."""
    if text is None:
        return None
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "[redacted]")
    return _KEY_PATTERN.sub("[redacted]", text)


# ---------------------------------------------------------------------------------------
# Rate limiter (a Ray actor shared by the cluster)
# ---------------------------------------------------------------------------------------


class TokenBucket:
    """A token bucket in GCRA form (virtual scheduling; ITU-T I.371, ATM Forum TM 4.0).

    ``rate`` units per second refill a bucket of ``capacity`` units; a reservation of ``n``
    units waits until the bucket holds ``min(n, capacity)`` and then takes ``n`` (a
    reservation larger than the bucket goes into debt, paid back before the next).
    State: ``tat``, the time at which the bucket would be full again. Guarantee: the units
    booked at times within any ``T`` seconds sum to at most
    ``capacity + rate * T + max(0, n_max - capacity)``.
    """

    def __init__(self, rate: float, capacity: float) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = float(rate)
        self.capacity = max(1.0, float(capacity))
        self.tat = -math.inf

    def earliest(self, now: float, n: float) -> float:
        """The earliest time >= ``now`` at which ``n`` units conform."""
        return max(now, self.tat - (self.capacity - min(n, self.capacity)) / self.rate)

    def book(self, at: float, n: float) -> None:
        self.tat = max(self.tat, at) + n / self.rate

    def pause_until(self, t: float) -> None:
        """Admit nothing before ``t`` (a server's Retry-After)."""
        self.tat = max(self.tat, t + self.capacity / self.rate)


def bucket_for(per_minute: float, burst_s: float) -> TokenBucket:
    """The bucket that keeps a per-minute limit in every window of one second or more.

    With ``p = per_minute / 60`` per second: capacity ``c = max(1, p * burst_s)``, refill
    rate ``p * (1 - burst_s)``. In any window of ``T >= 1`` seconds at most
    ``c + p * (1 - burst_s) * T <= p * T`` units are admitted (for requests, at most one
    more when ``p * burst_s < 1``; for tokens, plus the excess of a single request larger
    than ``c``), so both per-minute limits and providers that quantize them per second
    (OpenAI: "60,000 RPM may be enforced as 1,000 requests per second") are respected.
    Sustained throughput is ``1 - burst_s`` of the limit (98 % at the default 0.02).
    """
    rate = per_minute / 60.0
    return TokenBucket(rate * (1.0 - burst_s), max(1.0, rate * burst_s))


class RateLimiter:
    """RPM and TPM limits of one limit key, as a Ray actor (see the module docstring).

    Args:
        rpm: requests per minute, or ``None`` for no request limit.
        tpm: tokens per minute (prompt estimate + ``max_tokens`` per request), or ``None``.
        burst_s: burst tolerance as a fraction of one second's rate (see :func:`bucket_for`).
    """

    def __init__(self, rpm: float | None, tpm: float | None, burst_s: float = 0.02) -> None:
        self.configure(rpm, tpm, burst_s)
        self.granted = 0
        self.tokens = 0
        self.waited_s = 0.0
        self.pauses = 0

    def configure(self, rpm: float | None, tpm: float | None, burst_s: float = 0.02) -> None:
        """Set the limits (kept state is reset only when they change)."""
        cfg = (rpm, tpm, burst_s)
        if getattr(self, "_cfg", None) == cfg:
            return
        self._cfg = cfg
        self.req = bucket_for(rpm, burst_s) if rpm else None
        self.tok = bucket_for(tpm, burst_s) if tpm else None

    def reserve(self, tokens: int = 0) -> float:
        """Book one request of ``tokens`` tokens; returns the seconds to wait before sending."""
        now = time.time()
        at = now
        if self.req is not None:
            at = max(at, self.req.earliest(now, 1))
        if self.tok is not None and tokens:
            at = max(at, self.tok.earliest(now, tokens))
        if self.req is not None:
            self.req.book(at, 1)
        if self.tok is not None and tokens:
            self.tok.book(at, tokens)
        self.granted += 1
        self.tokens += tokens
        self.waited_s += at - now
        return at - now

    def pause(self, seconds: float) -> None:
        """Hold every reservation for ``seconds`` (a 429's Retry-After)."""
        t = time.time() + max(0.0, seconds)
        self.pauses += 1
        for g in (self.req, self.tok):
            if g is not None:
                g.pause_until(t)

    def stats(self) -> dict[str, float]:
        """``granted`` requests, ``tokens`` booked, ``waited_s`` summed waits, ``pauses``."""
        return {"granted": self.granted, "tokens": self.tokens, "waited_s": self.waited_s, "pauses": self.pauses}


#: Ray namespace of the shared limiter actors (one per limit key, detached).
LIMITER_NAMESPACE = "voirdire"


def limiter_name(key: str) -> str:
    """The Ray actor name of a limit key's limiter."""
    return "voirdire-ratelimit-" + content_hash(key, size=8)


def get_limiter(key: str, rpm: float | None, tpm: float | None, burst_s: float) -> Any:
    """The cluster's limiter actor for ``key`` (created detached on first use, then shared)."""
    import ray

    actor = (
        ray.remote(RateLimiter)
        .options(
            name=limiter_name(key),
            namespace=LIMITER_NAMESPACE,
            lifetime="detached",
            get_if_exists=True,
            num_cpus=0,
            max_restarts=-1,
        )
        .remote(rpm, tpm, burst_s)
    )
    return actor


# ---------------------------------------------------------------------------------------
# Response cache (SQLite)
# ---------------------------------------------------------------------------------------


def default_user_cache_dir() -> Path:
    """``$VOIRDIRE_CACHE_DIR``, else ``$XDG_CACHE_HOME/voirdire``, else ``~/.cache/voirdire``."""
    if os.environ.get("VOIRDIRE_CACHE_DIR"):
        return Path(os.environ["VOIRDIRE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "voirdire"


CACHE_FILE = "api_cache.sqlite"


def cache_path(setting: str, output_dir: str | None) -> Path | None:
    """Where a judge's cache lives: ``"job"`` -> ``<output_dir>/api_cache.sqlite``, ``"user"``
    -> :func:`default_user_cache_dir`, ``"off"`` -> ``None``, anything else is a file path."""
    if setting == "off":
        return None
    if setting == "job":
        return Path(output_dir) / CACHE_FILE if output_dir else None
    if setting == "user":
        return default_user_cache_dir() / CACHE_FILE
    return Path(setting).expanduser()


class ResponseCache:
    """Successful replies keyed by content (one SQLite file, WAL mode; safe for several
    worker processes; plain text columns, no pickle).

    Table ``responses``: ``key`` (text, primary), ``output`` (text), ``input_tokens``,
    ``output_tokens`` (int), ``cost_usd`` (real, USD paid), ``model`` (text), ``created``
    (real, Unix seconds).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, output TEXT NOT NULL, "
            "input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL, model TEXT, created REAL)"
        )

    @staticmethod
    def key(identity_hash: str, system: str | None, prompt: str, repetition: int) -> str:
        """H(identity hash, system prompt, prompt, repetition), 32 hex chars."""
        return content_hash(identity_hash, system or "", prompt, str(repetition))

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT output, input_tokens, output_tokens, cost_usd FROM responses WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return {"output": row[0], "input_tokens": row[1], "output_tokens": row[2], "cost_usd": row[3]}

    def put(self, key: str, output: str, input_tokens: int | None, output_tokens: int | None,
            cost: float | None, model: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, output, input_tokens, output_tokens, cost, model, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


# ---------------------------------------------------------------------------------------
# Failure classification
# ---------------------------------------------------------------------------------------

class MalformedResponse(ValueError):
    """A 2xx response whose body does not have the protocol's shape."""


#: Failure classes worth another round after the SDK's own retries.
TRANSIENT = {FailureClass.RATE_LIMITED, FailureClass.SERVER_ERROR, FailureClass.TIMEOUT,
             FailureClass.MALFORMED_RESPONSE}

_CONTEXT_HINTS = ("context_length_exceeded", "context length", "prompt is too long", "too many tokens",
                  "maximum context", "input is too long")
_FILTER_HINTS = ("content_filter", "content_policy", "content management policy", "safety", "responsible ai")


def classify_exception(exc: BaseException, sdk: Any) -> FailureClass:
    """The failure class of an exception raised by the official SDK ``sdk`` (the ``openai``
    or ``anthropic`` module: both define the same exception names)."""
    if isinstance(exc, sdk.APITimeoutError) or isinstance(exc, asyncio.TimeoutError):
        return FailureClass.TIMEOUT
    if isinstance(exc, sdk.APIConnectionError):
        return FailureClass.SERVER_ERROR  # dropped connection, refused connect, reset
    if isinstance(exc, (sdk.APIResponseValidationError, ValueError)):
        return FailureClass.MALFORMED_RESPONSE  # 2xx whose body is not JSON / not the documented shape
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        text = f"{getattr(exc, 'body', '')} {exc}".lower()
        if status == 429:
            return FailureClass.RATE_LIMITED
        if status in (408, 504):
            return FailureClass.TIMEOUT
        if status >= 500:
            return FailureClass.SERVER_ERROR  # 500/502/503 and Anthropic's 529 overloaded
        if status in (400, 413, 422) and any(h in text for h in _CONTEXT_HINTS):
            return FailureClass.CONTEXT_TOO_LONG
        if status == 400 and any(h in text for h in _FILTER_HINTS):
            return FailureClass.CONTENT_FILTERED
        return FailureClass.REFUSED  # 400/401/403/404/413/422: the provider refused the request
    return FailureClass.ERROR


def describe_exception(exc: BaseException) -> str:
    """A one-line description: type, HTTP status and the provider's message."""
    status = getattr(exc, "status_code", None)
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    head = type(exc).__name__ + (f" (HTTP {status})" if status else "")
    return f"{head}: {msg}"[:500] if msg else head


# ---------------------------------------------------------------------------------------
# Settings and the shared backend
# ---------------------------------------------------------------------------------------


class APISettings(JudgeSettings):
    """Settings of an API judge (keys of its ``[[judges]]`` table).

    Model and request: ``model`` (provider model id), ``base_url`` (endpoint; ``None`` =
    the provider's), ``api_key_env`` (NAME of the environment variable holding the key;
    the key itself is never a setting), ``system_prompt`` (``None``: the whole prompt is
    one user message, as in the release). Sampling (temperature, max_tokens, seed, top_p)
    comes from the job's/judge's ``[sampling]``.

    Throughput: ``workers`` (actors), ``concurrency`` (requests in flight per worker,
    given as the judge's ``concurrency`` key), ``rpm`` / ``tpm`` (requests and tokens per
    minute shared by every worker with the same ``rate_limit_key``; default key: backend,
    base URL, key variable and model), ``rate_burst_s`` (burst tolerance as a fraction of
    one second's rate; sustained throughput is ``1 - rate_burst_s`` of the limit).

    Retries: ``timeout_s`` (seconds per HTTP attempt), ``sdk_max_retries`` (the SDK's
    retries), ``max_attempts`` (our rounds for transient failures), ``retry_backoff_s``.

    Checks and money: ``context_window`` (tokens; default from :data:`CONTEXT_WINDOWS`),
    ``price_input_per_mtok`` / ``price_output_per_mtok`` (USD per 1M tokens; default
    :data:`PRICES`), ``cache`` (``"job"``, ``"user"``, ``"off"`` or a file path).

    Batch mode: ``batch`` (use the provider's batch API), ``batch_poll_s`` (seconds between
    status polls), ``batch_timeout_s`` (give up and record failures after this long).
    """

    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    system_prompt: str | None = None
    workers: int = Field(default=1, ge=1, le=1024)
    rpm: float | None = Field(default=None, gt=0)
    tpm: float | None = Field(default=None, gt=0)
    rate_burst_s: float = Field(default=0.02, gt=0, le=0.5)
    rate_limit_key: str | None = None
    timeout_s: float = Field(default=120.0, gt=0)
    sdk_max_retries: int = Field(default=3, ge=0, le=20)
    max_attempts: int = Field(default=2, ge=1, le=20)
    retry_backoff_s: float = Field(default=2.0, ge=0)
    context_window: int | None = Field(default=None, ge=1)
    price_input_per_mtok: float | None = Field(default=None, ge=0)
    price_output_per_mtok: float | None = Field(default=None, ge=0)
    cache: str = "job"
    batch: bool = False
    batch_poll_s: float = Field(default=30.0, gt=0)
    batch_timeout_s: float = Field(default=86_400.0, gt=0)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            # never echo the value: someone may have pasted the key itself here
            raise ValueError("must be the NAME of an environment variable (letters, digits, _), not a key")
        return v


@dataclass
class Reply:
    """A provider's answer mapped to common terms: ``text`` (None if absent), token counts
    as reported by the provider, and ``stop`` (the provider's finish/stop reason)."""

    text: str | None
    input_tokens: int | None
    output_tokens: int | None
    stop: str | None = None


#: Tokens to reserve for the HTTP request being sent from this task (read by the hook).
_RESERVATION: contextvars.ContextVar[int | None] = contextvars.ContextVar("voirdire_reservation", default=None)


class APIJudge(JudgeBackend):
    """Base of the API backends. Subclasses set ``name``, ``Settings``, ``sdk`` (the SDK
    module, for exception types), ``default_key_env``, ``uses_tiktoken``,
    ``filter_stops`` (stop reasons meaning "content filtered") and implement
    :meth:`make_client`, :meth:`send` and :meth:`parse` (plus the ``batch_*`` methods for
    batch mode). Everything else is shared (see the module docstring)."""

    Settings: ClassVar[type[APISettings]] = APISettings
    needs_prompt = True
    sdk: ClassVar[Any]
    default_key_env: ClassVar[str | None] = None
    uses_tiktoken: ClassVar[bool] = False
    filter_stops: ClassVar[frozenset[str]] = frozenset()
    #: settings that do not change what the judge answers (left out of its identity)
    identity_exclude = (
        "base_url", "api_key_env", "workers", "rpm", "tpm", "rate_burst_s", "rate_limit_key", "timeout_s",
        "sdk_max_retries", "max_attempts", "retry_backoff_s", "context_window", "price_input_per_mtok",
        "price_output_per_mtok", "cache", "batch", "batch_poll_s", "batch_timeout_s",
    )

    # -- class-level helpers (driver side) ------------------------------------------------

    @classmethod
    def key_env(cls, settings: APISettings) -> str | None:
        """The environment variable holding the key (``None``: the server needs none)."""
        return settings.api_key_env if settings.api_key_env is not None else cls.default_key_env

    @classmethod
    def preflight(cls, settings: APISettings, context: JudgeContext) -> None:  # type: ignore[override]
        """Check the API key variable is set and non-empty (nothing is sent).

        Raises:
            ConfigError: naming the judge and the missing variable.
        """
        env = cls.key_env(settings)
        if env and not os.environ.get(env, "").strip():
            raise ConfigError(
                f"judge {context.judge!r} ({cls.name}, model {settings.model!r}) needs an API key in the "
                f"environment variable {env}, which is not set; export {env}=... (or set api_key_env to "
                f"the variable that holds it) and run again. Nothing was sent."
            )

    @classmethod
    def worker_options(cls, settings):  # type: ignore[override]
        return {"num_cpus": 0}

    @classmethod
    def concurrency(cls, settings) -> int:  # type: ignore[override]
        return 16

    @classmethod
    def limit_key(cls, settings: APISettings) -> str:
        """The key whose limiter this judge shares."""
        return settings.rate_limit_key or "|".join(
            [cls.name, settings.base_url or "default", cls.key_env(settings) or "-", settings.model]
        )

    @classmethod
    def estimate(cls, settings: APISettings, sampling: Sampling, prompts: Iterable[str]) -> dict[str, Any]:  # type: ignore[override]
        """Dry-run estimate over the prompts to be sent.

        Returns ``queries``, ``input_tokens`` (estimated), ``max_output_tokens``
        (``max_tokens`` per query, the bound), ``too_long`` (queries over the context
        window), ``cost_usd_max`` (USD at the bound, ``None`` without a price) and
        ``counting`` (tokenizer used).
        """
        n = tokens = too_long = 0
        window = context_window_for(settings.model, settings.context_window)
        method = "chars/3"
        for p in prompts:
            t = estimate_prompt_tokens(p, settings.system_prompt, settings.model, cls.uses_tiktoken)
            if n == 0:
                method = count_tokens("x", settings.model, cls.uses_tiktoken)[1]
            n += 1
            if window is not None and t + sampling.max_tokens > window:
                too_long += 1
                continue
            tokens += t
        out = (n - too_long) * sampling.max_tokens
        prices = price_for(settings.model, settings.price_input_per_mtok, settings.price_output_per_mtok)
        return {
            "queries": n,
            "input_tokens": tokens,
            "max_output_tokens": out,
            "too_long": too_long,
            "cost_usd_max": cost_usd(prices, tokens, out, batch=settings.batch),
            "counting": method,
        }

    # -- worker side ---------------------------------------------------------------------

    def __init__(self, settings: APISettings, context: JudgeContext) -> None:
        super().__init__(settings, context)
        s = settings
        env = self.key_env(s)
        self._api_key = os.environ.get(env, "").strip() if env else ""
        self.sampling = context.sampling
        self.prices = price_for(s.model, s.price_input_per_mtok, s.price_output_per_mtok)
        self.window = context_window_for(s.model, s.context_window)
        self._sem = asyncio.Semaphore(max(1, int(getattr(context, "concurrency", None) or self.concurrency(s))))
        self.identity_hash = getattr(context, "identity_hash", None) or content_hash(self.identity(s, context.sampling))
        path = cache_path(s.cache, context.output_dir)
        self.cache = ResponseCache(path) if path is not None else None
        self.limiter = get_limiter(self.limit_key(s), s.rpm, s.tpm, s.rate_burst_s) if (s.rpm or s.tpm) else None
        if self.limiter is not None:
            self.limiter.configure.remote(s.rpm, s.tpm, s.rate_burst_s)
        self.client = self.make_client(self._api_key or "no-key-needed", self._http_client())

    def _http_client(self) -> Any:
        """The SDK's default async HTTP client with our hooks: every attempt reserves its
        rate-limit slot before it is sent; a 429 pauses the shared limiter."""
        limiter = self.limiter

        async def on_request(request: Any) -> None:
            tokens = _RESERVATION.get()
            if limiter is None or tokens is None:
                return
            delay = await limiter.reserve.remote(tokens)
            if delay > 0:
                await asyncio.sleep(delay)

        async def on_response(response: Any) -> None:
            if limiter is None or response.status_code != 429:
                return
            wait = _retry_after_s(response.headers)
            if wait:
                limiter.pause.remote(min(wait, 60.0))

        return self.sdk.DefaultAsyncHttpxClient(event_hooks={"request": [on_request], "response": [on_response]})

    @abc.abstractmethod
    def make_client(self, api_key: str, http_client: Any) -> Any:
        """The SDK's async client for ``base_url`` with ``timeout_s`` and ``sdk_max_retries``."""

    @abc.abstractmethod
    async def send(self, prompt: str) -> Any:
        """Send one query (system prompt, sampling from ``self``) and return the SDK's response."""

    @abc.abstractmethod
    def parse(self, response: Any) -> Reply:
        """Map the SDK's response (or a batch result's body as a dict) to a :class:`Reply`."""

    def parse_checked(self, response: Any) -> Reply:
        """:meth:`parse`, with any shape error raised as :class:`MalformedResponse`."""
        try:
            return self.parse(response)
        except Exception as exc:  # noqa: BLE001 - the body is not what the protocol documents
            raise MalformedResponse(f"unexpected response shape: {type(exc).__name__}: {exc}") from exc

    # -- answering -------------------------------------------------------------------------

    async def judge(self, queries: list[Query]) -> list[Result]:
        """Answer a batch concurrently (bounded by the worker's semaphore); never raises."""
        if self.settings.batch:
            from voirdire.judges.api_batch import run_batch

            return await run_batch(self, queries)
        return list(await asyncio.gather(*(self._safe_one(q) for q in queries)))

    async def _safe_one(self, q: Query) -> Result:
        try:
            return await self._one(q)
        except Exception as exc:  # noqa: BLE001 - a query never escapes unrecorded
            return Result.failed(q.unit_id, FailureClass.ERROR, self.redact(describe_exception(exc)))

    def redact(self, text: str | None) -> str | None:
        return redact(text, self._api_key)

    def cache_key(self, q: Query) -> str:
        return ResponseCache.key(self.identity_hash, self.settings.system_prompt, q.prompt or "", q.repetition)

    def from_cache(self, q: Query) -> Result | None:
        if self.cache is None:
            return None
        hit = self.cache.get(self.cache_key(q))
        if hit is None:
            return None
        return Result(unit_id=q.unit_id, output=hit["output"], input_tokens=hit["input_tokens"],
                      output_tokens=hit["output_tokens"], cost_usd=0.0, cached=True, latency_s=0.0)

    def too_long(self, q: Query) -> tuple[int, Result | None]:
        """Estimated input tokens, and a CONTEXT_TOO_LONG failure if prompt + max_tokens do
        not fit the context window (decided before any call)."""
        est = estimate_prompt_tokens(q.prompt or "", self.settings.system_prompt, self.settings.model,
                                     self.uses_tiktoken)
        if self.window is not None and est + self.sampling.max_tokens > self.window:
            return est, Result.failed(
                q.unit_id, FailureClass.CONTEXT_TOO_LONG,
                f"estimated {est} prompt tokens + max_tokens {self.sampling.max_tokens} exceed the context "
                f"window of {self.window} tokens of {self.settings.model}; not sent",
            )
        return est, None

    def finish(self, q: Query, reply: Reply, latency: float, batch: bool = False) -> Result:
        """Turn a reply into a Result (content filter, empty output -> failures; cost; cache)."""
        cost = cost_usd(self.prices, reply.input_tokens, reply.output_tokens, batch=batch)
        kw = {"latency_s": latency, "input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens,
              "cost_usd": cost}
        if reply.stop in self.filter_stops:
            return Result.failed(q.unit_id, FailureClass.CONTENT_FILTERED,
                                 f"the provider stopped the reply: {reply.stop}", **kw)
        if not reply.text:
            return Result.failed(q.unit_id, FailureClass.MALFORMED_RESPONSE,
                                 f"the response has no text (stop reason {reply.stop!r})", **kw)
        if self.cache is not None:
            self.cache.put(self.cache_key(q), reply.text, reply.input_tokens, reply.output_tokens, cost,
                           self.settings.model)
        return Result(unit_id=q.unit_id, output=reply.text, **kw)

    async def _one(self, q: Query) -> Result:
        if q.prompt is None:
            return Result.failed(q.unit_id, FailureClass.ERROR, "the query carries no prompt")
        hit = self.from_cache(q)
        if hit is not None:
            return hit
        est, failed = self.too_long(q)
        if failed is not None:
            return failed
        s = self.settings
        async with self._sem:
            t0 = time.perf_counter()
            for attempt in range(1, s.max_attempts + 1):
                token = _RESERVATION.set(est + self.sampling.max_tokens)
                try:
                    response = await self.send(q.prompt)
                    reply = self.parse_checked(response)
                except Exception as exc:  # noqa: BLE001 - classified below
                    failure = classify_exception(exc, self.sdk)
                    if failure in TRANSIENT and attempt < s.max_attempts:
                        await asyncio.sleep(s.retry_backoff_s * 2 ** (attempt - 1) * (0.75 + 0.5 * random.random()))
                        continue
                    return Result.failed(
                        q.unit_id, failure,
                        self.redact(f"{describe_exception(exc)} (after {attempt} attempt(s) of "
                                    f"{s.sdk_max_retries + 1} tries each)"),
                        latency_s=time.perf_counter() - t0,
                    )
                finally:
                    _RESERVATION.reset(token)
                return self.finish(q, reply, time.perf_counter() - t0)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        try:
            await self.client.close()
        finally:
            if self.cache is not None:
                self.cache.close()


def sdk_call_kwargs(method: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments for an SDK method from a wire-format request body: fields the
    method's signature names go as arguments, the rest in ``extra_body`` (SDK versions
    differ in which sampling fields they type, the wire format does not)."""
    params = _signature_params(method)
    kwargs = {k: v for k, v in body.items() if k in params}
    extra = {k: v for k, v in body.items() if k not in params}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


@lru_cache(maxsize=32)
def _signature_params_of(func: Any) -> frozenset[str]:
    import inspect

    return frozenset(inspect.signature(func).parameters)


def _signature_params(method: Any) -> frozenset[str]:
    return _signature_params_of(getattr(method, "__func__", method))


def _retry_after_s(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (numeric form), else ``None``."""
    for name, div in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        v = headers.get(name)
        if v:
            try:
                return float(v) / div
            except ValueError:
                continue
    return None


__all__ = [
    "APIJudge", "APISettings", "TokenBucket", "bucket_for", "RateLimiter", "Reply", "ResponseCache", "PRICES", "CONTEXT_WINDOWS",
    "classify_exception", "context_window_for", "cost_usd", "count_tokens", "estimate_prompt_tokens",
    "get_limiter", "price_for", "redact",
]
