"""Failures of API calls: every exception of the official SDKs mapped to a
:class:`~voirdire.core.FailureClass`, described in one line, with secrets redacted.

Classes: rate limited (429), timeout (the SDK's timeout, 408, 504), server error (5xx,
Anthropic's 529, dropped or refused connections), context too long (400/413/422 naming
the context length), content filtered (400 naming the content policy), malformed response
(a 2xx whose body is not the documented shape), refused (every other 4xx), error
(anything else).
"""

from __future__ import annotations

import asyncio
from typing import Any

from voirdire.core import FailureClass

# the project's one redaction (the core's: a log's failure messages are redacted as they are
# read, in the benchmarks' room); the patterns keep their names here
from voirdire.redaction import KEY_PATTERN as _KEY_PATTERN  # noqa: F401
from voirdire.redaction import MASKED as _MASKED  # noqa: F401
from voirdire.redaction import redact  # noqa: F401  (judges and tests import it here)

_CONTEXT_HINTS = (
    "context_length_exceeded",
    "context length",
    "prompt is too long",
    "too many tokens",
    "maximum context",
    "input is too long",
)
_FILTER_HINTS = (
    "content_filter",
    "content_policy",
    "content management policy",
    "safety",
    "responsible ai",
)


def classify_exception(exc: BaseException, sdk: Any) -> FailureClass:
    """The failure class of an exception raised by the official SDK ``sdk`` (the ``openai``
    or ``anthropic`` module: both define the same exception names)."""
    if isinstance(exc, sdk.APITimeoutError) or isinstance(exc, asyncio.TimeoutError):
        return FailureClass.TIMEOUT
    if isinstance(exc, sdk.APIConnectionError):
        return FailureClass.SERVER_ERROR  # dropped connection, refused connect, reset
    if isinstance(exc, (sdk.APIResponseValidationError, ValueError)):
        return (
            FailureClass.MALFORMED_RESPONSE
        )  # 2xx whose body is not JSON / not the documented shape
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        text = f"{getattr(exc, 'body', '')} {exc}".lower()
        if status == 429:
            return FailureClass.RATE_LIMITED
        if status in (408, 504):
            return FailureClass.TIMEOUT
        if status >= 500:
            return (
                FailureClass.SERVER_ERROR
            )  # 500/502/503 and Anthropic's 529 overloaded
        if status in (400, 413, 422) and any(h in text for h in _CONTEXT_HINTS):
            return FailureClass.CONTEXT_TOO_LONG
        if status == 400 and any(h in text for h in _FILTER_HINTS):
            return FailureClass.CONTENT_FILTERED
        return (
            FailureClass.REFUSED
        )  # 400/401/403/404/413/422: the provider refused the request
    return FailureClass.ERROR


def describe_exception(exc: BaseException) -> str:
    """A one-line description: type, HTTP status and the provider's message."""
    status = getattr(exc, "status_code", None)
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    head = type(exc).__name__ + (f" (HTTP {status})" if status else "")
    return f"{head}: {msg}"[:500] if msg else head


def status_failure(status: int | None) -> FailureClass:
    """The failure class of a batch item's HTTP status."""
    if status == 429:
        return FailureClass.RATE_LIMITED
    if status is not None and status >= 500:
        return FailureClass.SERVER_ERROR
    return FailureClass.REFUSED
