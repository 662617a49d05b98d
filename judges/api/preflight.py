"""The API judge's class-level side: what the driver asks of it before anything is sent.

:class:`APIPreflight` is the part of :class:`~voirdire.judges.api.base.APIJudge` that needs
no worker: the environment variable holding its key and the check that it is set
(:class:`~voirdire.judges.capabilities.UsesKey`), the checks of its settings
(:meth:`APIPreflight.preflight`), its placement, the key of the rate limiter it shares, its
prices and context window (:mod:`voirdire.judges.api.pricing`) and a dry run's token and
cost estimate (:class:`~voirdire.judges.capabilities.Estimates`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, ClassVar, TypeVar

from voirdire.core import ConfigError
from voirdire.judges.api.pricing import cost_usd, facts_for
from voirdire.judges.api.settings import APISettings
from voirdire.judges.api.tokens import count_tokens, estimate_prompt_tokens
from voirdire.judges.base import JudgeBackend, JudgeContext, Sampling
from voirdire.judges.capabilities import Estimates, UsesKey

#: the settings model of an API backend
AS = TypeVar("AS", bound=APISettings)


class APIPreflight(Estimates[AS], UsesKey[AS], JudgeBackend[AS]):
    """The class-level side of an API backend (driver side; see the module docstring).

    A provider subclass sets ``provider`` (the genai-prices provider id),
    ``default_key_env``, ``uses_tiktoken`` (count tokens with tiktoken) and
    ``offers_logprobs``."""

    provider: ClassVar[str | None] = None
    default_key_env: ClassVar[str | None] = None
    uses_tiktoken: ClassVar[bool] = False
    #: the provider returns token log-probabilities (``logprobs = true`` is accepted)
    offers_logprobs: ClassVar[bool] = False

    @classmethod
    def key_env(cls, settings: AS) -> str | None:
        """The environment variable holding the key (``None``: the server needs none)."""
        return (
            settings.api_key_env
            if settings.api_key_env is not None
            else cls.default_key_env
        )

    @classmethod
    def check_secrets(cls, settings: AS, context: JudgeContext) -> None:
        """Check the API key variable is set and non-empty (nothing is sent; skipped by a
        dry run, which only warns).

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
    def preflight(cls, settings: AS, context: JudgeContext) -> None:
        """Checks before anything is sent (the key is :meth:`check_secrets`'s).

        Raises:
            ConfigError: ``logprobs = true`` on a provider without token log-probabilities,
                or with batch mode.
        """
        if settings.logprobs and not cls.offers_logprobs:
            raise ConfigError(
                f"judge {context.judge!r}: backend {cls.name!r} returns no token log-probabilities; drop logprobs = true"
            )
        if settings.logprobs and settings.batch:
            raise ConfigError(
                f"judge {context.judge!r}: logprobs = true is not offered in batch mode"
            )

    @classmethod
    def worker_options(cls, settings: AS) -> dict[str, Any]:
        return {"num_cpus": 0}

    @classmethod
    def concurrency(cls, settings: AS) -> int:
        return 16

    @classmethod
    def limit_key(cls, settings: APISettings) -> str:
        """The key whose limiter this judge shares."""
        return settings.rate_limit_key or "|".join(
            [
                cls.name,
                settings.base_url or "default",
                cls.key_env(settings) or "-",
                settings.model,
            ]
        )

    @classmethod
    def facts(cls, settings: APISettings):
        """The model's prices and context window (settings first; see
        :func:`voirdire.judges.api.pricing.facts_for`)."""
        return facts_for(
            settings.model,
            cls.provider,
            settings.price_input_per_mtok,
            settings.price_output_per_mtok,
            settings.context_window,
        )

    @classmethod
    def estimate(
        cls, settings: AS, sampling: Sampling, prompts: Iterable[str]
    ) -> dict[str, Any]:
        """Dry-run estimate over the prompts to be sent.

        Returns ``queries``, ``input_tokens`` (estimated), ``max_output_tokens``
        (``max_tokens`` per query, the bound), ``too_long`` (queries over the context
        window), ``cost_usd_max`` (USD at the bound, ``None`` without a price),
        ``counting`` (tokenizer used) and ``price_source`` (where the price came from).
        """
        facts = cls.facts(settings)
        window = facts.context_window
        n = tokens = too_long = 0
        for p in prompts:
            t = estimate_prompt_tokens(
                p, settings.system_prompt, settings.model, cls.uses_tiktoken
            )
            n += 1
            if window is not None and t + sampling.max_tokens > window:
                too_long += 1
                continue
            tokens += t
        out = (n - too_long) * sampling.max_tokens
        return {
            "queries": n,
            "input_tokens": tokens,
            "max_output_tokens": out,
            "too_long": too_long,
            "cost_usd_max": cost_usd(facts.prices, tokens, out, batch=settings.batch),
            "counting": count_tokens("x", settings.model, cls.uses_tiktoken)[1]
            if n
            else "chars/3",
            "price_source": facts.price_source,
        }


__all__ = ["AS", "APIPreflight"]
