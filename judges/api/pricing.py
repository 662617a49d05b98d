"""Model facts (list prices, context windows) and the cost of a call.

Where the facts come from, field by field, first hit wins:

1. the judge's own settings (``price_input_per_mtok``, ``price_output_per_mtok``,
   ``context_window``);
2. ``genai-prices`` (PyPI, maintained by the Pydantic team; its price data ships inside
   the package and is updated with each release), looked up with the backend's provider
   (``"openai"``, ``"anthropic"``; any provider for OpenAI-compatible servers);
3. the offline fallback shipped with voirdire, ``model_facts.json`` beside this module
   (longest model-name prefix wins), for models genai-prices does not know (e.g. open
   models behind an OpenAI-compatible server) or when it is not installed.

A model known to none of them has no price (its cost is reported as unknown) and no
context window (no pre-send check). Prices are USD per 1M tokens at the provider's
standard tier for prompts below any long-context tier (priced at 1,000 tokens each way);
batch APIs bill :data:`BATCH_DISCOUNT` of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

try:  # the maintained source; optional, the fallback file answers without it
    import genai_prices
except ImportError:  # pragma: no cover - exercised by a test in a subprocess
    genai_prices = None

#: Batch APIs (OpenAI Batch, Anthropic Message Batches) bill half the standard price.
BATCH_DISCOUNT = 0.5
#: The fallback data file (package data of ``voirdire.judges.api``).
FALLBACK_FILE = "model_facts.json"
#: Tokens each way at which genai-prices is asked (below every long-context tier).
_PROBE_TOKENS = 1000


@dataclass(frozen=True)
class ModelFacts:
    """What is known about a model: ``price_in`` / ``price_out`` (USD per 1M tokens, or
    ``None``), ``context_window`` (tokens, or ``None``) and where each came from
    (``price_source`` / ``window_source``: ``"settings"``, ``"genai-prices <version>"``,
    ``"fallback"`` or ``None``)."""

    price_in: float | None
    price_out: float | None
    context_window: int | None
    price_source: str | None
    window_source: str | None

    @property
    def prices(self) -> tuple[float, float] | None:
        """``(input, output)`` USD per 1M tokens, or ``None`` when either is unknown."""
        if self.price_in is None or self.price_out is None:
            return None
        return (self.price_in, self.price_out)


@lru_cache(maxsize=1)
def _fallback_table() -> dict[str, dict[str, Any]]:
    text = (
        resources.files(__package__).joinpath(FALLBACK_FILE).read_text(encoding="utf-8")
    )
    data = json.loads(text)
    return {"prices": data["prices"], "context_windows": data["context_windows"]}


def _by_prefix(table: dict[str, Any], model: str) -> Any:
    best = max((k for k in table if model.startswith(k)), key=len, default=None)
    return table[best] if best is not None else None


def fallback_facts(model: str) -> tuple[tuple[float, float] | None, int | None]:
    """``(prices, context window)`` of ``model`` from the shipped fallback file."""
    t = _fallback_table()
    p = _by_prefix(t["prices"], model)
    return (tuple(map(float, p)) if p is not None else None), _by_prefix(
        t["context_windows"], model
    )


@lru_cache(maxsize=256)
def maintained_facts(
    model: str, provider: str | None
) -> tuple[tuple[float, float] | None, int | None]:
    """``(prices, context window)`` of ``model`` from genai-prices (``(None, None)`` when it
    is not installed or does not know the model)."""
    if genai_prices is None:
        return None, None
    usage = genai_prices.Usage(input_tokens=_PROBE_TOKENS, output_tokens=_PROBE_TOKENS)
    try:
        calc = genai_prices.calc_price(usage, model, provider_id=provider)
    except LookupError:
        return None, None
    per = 1e6 / _PROBE_TOKENS
    prices = (float(calc.input_price) * per, float(calc.output_price) * per)
    return prices, calc.model.context_window


def facts_for(
    model: str,
    provider: str | None = None,
    price_in: float | None = None,
    price_out: float | None = None,
    context_window: int | None = None,
) -> ModelFacts:
    """The facts of ``model`` (see the module docstring for the order of the sources).

    Args:
        model: the provider's model id, e.g. ``"gpt-4o-2024-08-06"``.
        provider: genai-prices provider id (``"openai"``, ``"anthropic"``) or ``None``.
        price_in, price_out: per-judge overrides, USD per 1M tokens.
        context_window: per-judge override, tokens.
    """
    m_prices, m_window = maintained_facts(model, provider)
    f_prices, f_window = fallback_facts(model)
    source = (
        f"genai-prices {genai_prices.__version__}" if genai_prices is not None else None
    )
    known, known_src = (
        (m_prices, source)
        if m_prices is not None
        else (f_prices, "fallback" if f_prices else None)
    )
    p_in = price_in if price_in is not None else (known[0] if known else None)
    p_out = price_out if price_out is not None else (known[1] if known else None)
    p_src = "settings" if price_in is not None and price_out is not None else known_src
    if context_window is not None:
        window, w_src = context_window, "settings"
    elif m_window is not None:
        window, w_src = m_window, source
    else:
        window, w_src = f_window, ("fallback" if f_window is not None else None)
    return ModelFacts(p_in, p_out, window, p_src, w_src)


def price_for(
    model: str,
    price_in: float | None = None,
    price_out: float | None = None,
    provider: str | None = None,
) -> tuple[float, float] | None:
    """``(input, output)`` USD per 1M tokens (overrides first), or ``None`` when no source
    knows the model."""
    return facts_for(model, provider, price_in, price_out).prices


def cost_usd(
    prices: tuple[float, float] | None,
    input_tokens: int | None,
    output_tokens: int | None,
    batch: bool = False,
) -> float | None:
    """USD for one call: ``(in * p_in + out * p_out) / 1e6``, times :data:`BATCH_DISCOUNT`
    in batch mode; ``None`` without a price or token counts."""
    if prices is None or input_tokens is None or output_tokens is None:
        return None
    usd = (input_tokens * prices[0] + output_tokens * prices[1]) / 1e6
    return usd * BATCH_DISCOUNT if batch else usd
