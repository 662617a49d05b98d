"""API judges: OpenAI, OpenAI-compatible servers and Anthropic, through the official SDKs.

One module per idea:

- :mod:`~voirdire.judges.api.base` -- :class:`APIJudge`, what every provider shares:
  concurrency (at most ``concurrency`` requests in flight per worker), the cache, the
  context-window check, cost, one SDK call per query.
- :mod:`~voirdire.judges.api.preflight` -- :class:`APIPreflight`, its class-level side
  (driver): the key and the checks before anything is sent, the rate-limit key, prices,
  the dry-run estimate.
- :mod:`~voirdire.judges.api.openai`, :mod:`~voirdire.judges.api.anthropic` -- one per
  provider: only the request/response (and batch) wire format;
  :mod:`~voirdire.judges.api.compatible` -- OpenAI-compatible servers, with vLLM-style
  structured and log-probability verdict modes.
- :mod:`~voirdire.judges.api.settings` -- the ``[[judges]]`` keys (:class:`APISettings`).
- :mod:`~voirdire.judges.api.ratelimit` -- RPM/TPM limits shared across the cluster (one
  detached Ray actor per limit key), kept where requests arrive.
- :mod:`~voirdire.judges.api.transport` -- the SDK's HTTP client with our hooks: every
  attempt counted and given its rate-limit slot before it leaves.
- :mod:`~voirdire.judges.api.errors` -- SDK exceptions to failure classes, redaction.
- :mod:`~voirdire.judges.api.cache` -- successful replies in SQLite, keyed by content.
- :mod:`~voirdire.judges.api.pricing` -- prices and context windows (genai-prices, the
  judge's overrides, an offline fallback file), cost in USD.
- :mod:`~voirdire.judges.api.tokens` -- token estimates before sending.
- :mod:`~voirdire.judges.api.batch` -- batch mode (OpenAI Batch, Anthropic Message Batches).

Retries live in one place: the official SDK's (``max_retries``; it honours Retry-After);
every HTTP attempt, retries included, reserves its rate-limit slot first. Every query ends
as an output or a :class:`~voirdire.core.FailureClass` with a message (secrets redacted).
Importing this package imports no SDK; the provider modules need ``voirdire[api]``.
"""
