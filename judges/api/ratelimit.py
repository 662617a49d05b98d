"""Rate limits shared by every worker of every job on the cluster: one named, detached
Ray actor per limit key (:class:`RateLimiter`) holding GCRA token buckets.

The guarantee is stated where the provider counts: at the server, where requests ARRIVE.
See :func:`bucket_for` for the margin that keeps it with arrival-time jitter.
"""

from __future__ import annotations

import math
import time
from typing import Any

import ray

from voirdire.core import content_hash


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


#: Default arrival-time jitter budget (seconds): how much later than its granted slot a
#: request may reach the server (the limiter actor's reply, the event loop, the HTTP send).
DEFAULT_JITTER_S = 0.1


def bucket_for(per_minute: float, burst_s: float, jitter_s: float = 0.0) -> TokenBucket:
    """The bucket that keeps a per-minute limit where requests arrive, in every window of
    one second or more, when each arrives up to ``jitter_s`` seconds after its slot.

    With ``p = per_minute / 60`` per second: capacity ``c = max(1, p * burst_s)``, refill
    rate ``r = max(p - c, min(p, 1)) / (1 + jitter_s)``. Requests granted within any ``T``
    seconds number at most ``c + r * T`` (GCRA); those ARRIVING within a window of ``W``
    seconds were granted within ``W + jitter_s`` seconds, so at most
    ``c + r * (W + jitter_s) <= c + (p - c) * (W + jitter_s) / (1 + jitter_s) <= p * W``
    for ``W >= 1`` (for ``p <= 1 + c``: one request per ``1 + jitter_s`` seconds, i.e. at
    most one in any second). Tokens alike (plus the excess of a single request larger than
    ``c``). So both per-minute limits and providers that quantize them per second (OpenAI:
    "60,000 RPM may be enforced as 1,000 requests per second") are respected at the
    server. Sustained throughput: ``r / p``, e.g. 82 % at rpm 600 and 89 % at rpm 6,000
    with the defaults (``burst_s`` 0.02, ``jitter_s`` 0.1): the margin is the price of the
    guarantee holding under jitter.
    """
    p = per_minute / 60.0
    c = max(1.0, p * burst_s)
    return TokenBucket(max(p - c, min(p, 1.0)) / (1.0 + jitter_s), c)


class RateLimiter:
    """RPM and TPM limits of one limit key, as a Ray actor.

    Every HTTP attempt (the SDK's retries included) reserves a slot before it is sent; a
    429 pauses the limiter for the server's Retry-After. Tokens reserved per request: the
    prompt's estimated tokens plus ``max_tokens`` -- the rule OpenAI documents for its TPM
    limit (never refunded).

    Args:
        rpm: requests per minute, or ``None`` for no request limit.
        tpm: tokens per minute (prompt estimate + ``max_tokens`` per request), or ``None``.
        burst_s: burst tolerance as a fraction of one second's rate (see :func:`bucket_for`).
        jitter_s: arrival-time jitter budget in seconds (see :func:`bucket_for`).
    """

    def __init__(
        self,
        rpm: float | None,
        tpm: float | None,
        burst_s: float = 0.02,
        jitter_s: float = DEFAULT_JITTER_S,
    ) -> None:
        self.configure(rpm, tpm, burst_s, jitter_s)
        self.granted = 0
        self.tokens = 0
        self.waited_s = 0.0
        self.pauses = 0

    def configure(
        self,
        rpm: float | None,
        tpm: float | None,
        burst_s: float = 0.02,
        jitter_s: float = DEFAULT_JITTER_S,
    ) -> None:
        """Set the limits (kept state is reset only when they change)."""
        cfg = (rpm, tpm, burst_s, jitter_s)
        if getattr(self, "_cfg", None) == cfg:
            return
        self._cfg = cfg
        self.req = bucket_for(rpm, burst_s, jitter_s) if rpm else None
        self.tok = bucket_for(tpm, burst_s, jitter_s) if tpm else None

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
        return {
            "granted": self.granted,
            "tokens": self.tokens,
            "waited_s": self.waited_s,
            "pauses": self.pauses,
        }


#: Ray namespace of the shared limiter actors (one per limit key, detached).
LIMITER_NAMESPACE = "voirdire"


def limiter_name(key: str) -> str:
    """The Ray actor name of a limit key's limiter."""
    return "voirdire-ratelimit-" + content_hash(key, size=8)


def get_limiter(
    key: str,
    rpm: float | None,
    tpm: float | None,
    burst_s: float,
    jitter_s: float = DEFAULT_JITTER_S,
) -> Any:
    """The cluster's limiter actor for ``key`` (created detached on first use, then shared)."""
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
        .remote(rpm, tpm, burst_s, jitter_s)
    )
    return actor


def retry_after_s(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (numeric form), else ``None``."""
    for name, div in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        v = headers.get(name)
        if v:
            try:
                return float(v) / div
            except ValueError:
                continue
    return None
