"""The HTTP client under the official SDKs: every attempt counted and rate-limited.

The SDK retries on its own (``max_retries``, honouring Retry-After): that is the one retry
layer. To keep the limiter's guarantee where the provider counts (at arrival), each HTTP
attempt, retries included, reserves its slot through an httpx request hook before it
leaves, and a 429 pauses the shared limiter for its Retry-After. The attempt count of the
request in flight from one asyncio task lives in a context variable (:func:`attempts`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from voirdire.judges.api.ratelimit import retry_after_s


@dataclass
class Attempts:
    """The HTTP request in flight from one task: ``tokens`` to reserve per attempt (prompt
    plus the output bound), ``count`` of attempts made so far."""

    tokens: int
    count: int = 0


_ATTEMPTS: contextvars.ContextVar[Attempts | None] = contextvars.ContextVar(
    "voirdire_attempts", default=None
)


@contextlib.contextmanager
def attempts(tokens: int) -> Iterator[Attempts]:
    """Count (and rate-limit) the HTTP attempts made inside the block by this task."""
    att = Attempts(tokens=tokens)
    token = _ATTEMPTS.set(att)
    try:
        yield att
    finally:
        _ATTEMPTS.reset(token)


def http_client(sdk: Any, limiter: Any | None) -> Any:
    """The SDK's default async HTTP client (``sdk.DefaultAsyncHttpxClient``) with our hooks:
    before each attempt, count it and wait for the limiter's slot (``limiter``: the shared
    limiter actor, or ``None``); after a 429, pause the limiter (at most 60 s)."""

    async def on_request(request: Any) -> None:
        att = _ATTEMPTS.get()
        if att is None:
            return
        att.count += 1
        if limiter is not None:
            delay = await limiter.reserve.remote(att.tokens)
            if delay > 0:
                await asyncio.sleep(delay)

    async def on_response(response: Any) -> None:
        if limiter is None or response.status_code != 429:
            return
        wait = retry_after_s(response.headers)
        if wait:
            limiter.pause.remote(min(wait, 60.0))

    return sdk.DefaultAsyncHttpxClient(
        event_hooks={"request": [on_request], "response": [on_response]}
    )
