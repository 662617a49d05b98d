"""The settings of an API judge (keys of its ``[[judges]]`` table) and the provider-neutral
shape of a reply."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, field_validator

from voirdire.judges.api.ratelimit import DEFAULT_JITTER_S
from voirdire.judges.base import JudgeSettings


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
    one second's rate), ``rate_jitter_s`` (seconds a request may reach the server after
    its slot; the limiter keeps this margin so the limit holds where requests arrive).

    Retries: one layer, the official SDK's (408/409/429/5xx and connection errors,
    exponential backoff, honouring ``Retry-After``): ``max_retries`` (also accepted as
    ``sdk_max_retries``) retries, so at most ``max_retries + 1`` HTTP attempts per query;
    ``timeout_s`` (seconds per attempt).

    Checks and money: ``context_window`` (tokens), ``price_input_per_mtok`` /
    ``price_output_per_mtok`` (USD per 1M tokens) override the model facts of
    :mod:`voirdire.judges.api.pricing`; ``cache`` (``"job"``, ``"user"``, ``"off"`` or a
    file path).

    Log-probability verdicts: ``logprobs`` (OpenAI-protocol backends only) asks for the
    top log-probabilities of every output token and stores the option probabilities of
    the verdict letter (the token right after the benchmark's verdict cue, ``[[`` or
    ``Choice: ``) as ``option_probs``, ``verdict_mode = "logprobs"``: what logprob
    calibration reads (``docs/mitigation.md``). Such replies are not cached.

    Batch mode: ``batch`` (use the provider's batch API), ``batch_poll_s`` (seconds between
    status polls), ``batch_timeout_s`` (give up and record failures after this long).

    Raises (on validation): pydantic's ``ValidationError`` for unknown keys (e.g. the
    removed ``max_attempts`` / ``retry_backoff_s``) and out-of-range values.
    """

    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    system_prompt: str | None = None
    workers: int = Field(default=1, ge=1, le=1024)
    rpm: float | None = Field(default=None, gt=0)
    tpm: float | None = Field(default=None, gt=0)
    rate_burst_s: float = Field(default=0.02, gt=0, le=0.5)
    rate_jitter_s: float = Field(default=DEFAULT_JITTER_S, ge=0, le=5.0)
    rate_limit_key: str | None = None
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(
        default=3,
        ge=0,
        le=20,
        validation_alias=AliasChoices("max_retries", "sdk_max_retries"),
    )
    context_window: int | None = Field(default=None, ge=1)
    price_input_per_mtok: float | None = Field(default=None, ge=0)
    price_output_per_mtok: float | None = Field(default=None, ge=0)
    cache: str = "job"
    logprobs: bool = False
    batch: bool = False
    batch_poll_s: float = Field(default=30.0, gt=0)
    batch_timeout_s: float = Field(default=86_400.0, gt=0)

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, v: str | None) -> str | None:
        return check_base_url(v)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            # never echo the value: someone may have pasted the key itself here
            raise ValueError(
                "must be the NAME of an environment variable (letters, digits, _), not a key"
            )
        return v


def check_base_url(url: str | None) -> str | None:
    """``url`` when it holds no credentials: a ``user:password@`` (or ``user@``) part before
    the host is refused, since the URL is recorded in ``job.json`` and rate-limit keys.

    Raises:
        ValueError: naming the problem, never echoing the URL (it holds a secret).
    """
    if url is None:
        return url
    u = url.strip()
    if "@" in (urlsplit(u).netloc if "://" in u else u.split("/", 1)[0]):
        raise ValueError(
            "base_url may not hold credentials (user:password@host); put the key in the environment "
            "variable named by api_key_env"
        )
    return url


@dataclass
class Reply:
    """A provider's answer mapped to common terms: ``text`` (None if absent), token counts
    as reported by the provider, ``stop`` (the provider's finish/stop reason) and, when
    asked for, ``letter_logprobs``."""

    text: str | None
    input_tokens: int | None
    output_tokens: int | None
    stop: str | None = None
    #: log-probability verdicts: letter -> log-probability at the verdict position (the
    #: letters among the provider's top log-probabilities there), or None
    letter_logprobs: dict[str, float] | None = None
