"""The shared API judge: what the OpenAI, OpenAI-compatible and Anthropic backends have in
common (see :mod:`voirdire.judges.api` for the overview).

A provider subclass sets ``name``, ``sdk`` (the SDK module: exception types, HTTP
client), ``client_cls`` (its async client), ``provider`` (the genai-prices provider id),
``default_key_env``, ``uses_tiktoken``, ``filter_stops`` and implements
:meth:`APIJudge.request_body`, :meth:`APIJudge.endpoint`, :meth:`APIJudge.parse` (plus the
``batch_*`` wire format of :mod:`voirdire.judges.api.batch`).
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import math
import os
import time
from typing import Any, ClassVar

from voirdire.core import FailureClass, content_hash, letters
from voirdire.exceptions import MalformedResponse
from voirdire.judges.api.batch import run_batch
from voirdire.judges.api.cache import ResponseCache, cache_path
from voirdire.judges.api.errors import (
    classify_exception,
    describe_exception,
    redact,
)
from voirdire.judges.api.preflight import AS, APIPreflight
from voirdire.judges.api.pricing import cost_usd
from voirdire.judges.api.ratelimit import get_limiter
from voirdire.judges.api.sdk import sdk_call_kwargs
from voirdire.judges.api.settings import Reply
from voirdire.judges.api.tokens import estimate_prompt_tokens
from voirdire.judges.api.transport import attempts, http_client
from voirdire.judges.base import (
    JudgeContext,
    Query,
    Result,
    option_probabilities,
    system_text,
)
from voirdire.judges.capabilities import Rewrites


class APIJudge(Rewrites, APIPreflight[AS]):
    """Base of the API backends, generic over their settings (``APIJudge[APISettings]``;
    see the module docstring for what a subclass provides; its class-level side, before
    anything is sent: :class:`~voirdire.judges.api.preflight.APIPreflight`). A model
    answers a rewrite prompt as it is (:class:`~voirdire.judges.capabilities.Rewrites`:
    itself)."""

    sdk: ClassVar[Any]
    client_cls: ClassVar[Any]
    filter_stops: ClassVar[frozenset[str]] = frozenset()
    #: settings that do not change what the judge answers (left out of its identity)
    identity_exclude = (
        "base_url",
        "api_key_env",
        "workers",
        "rpm",
        "tpm",
        "rate_burst_s",
        "rate_jitter_s",
        "rate_limit_key",
        "timeout_s",
        "max_retries",
        "context_window",
        "price_input_per_mtok",
        "price_output_per_mtok",
        "cache",
        "batch",
        "batch_poll_s",
        "batch_timeout_s",
    )
    #: settings added after 0.1: in the identity only when set (unit ids of before kept)
    identity_if_set = ("logprobs",)
    #: the provider answers ``n`` samples of one prompt in one request
    offers_n: ClassVar[bool] = False

    # -- worker side ---------------------------------------------------------------------

    def __init__(self, settings: AS, context: JudgeContext) -> None:
        super().__init__(settings, context)
        s = settings
        env = self.key_env(s)
        self._api_key = os.environ.get(env, "").strip() if env else ""
        self.sampling = context.sampling
        facts = self.facts(s)
        self.prices, self.window = facts.prices, facts.context_window
        self._sem = asyncio.Semaphore(
            max(1, int(getattr(context, "concurrency", None) or self.concurrency(s)))
        )
        self.identity_hash = context.identity_hash or content_hash(
            self.identity(s, context.sampling)
        )
        path = cache_path(s.cache, context.output_dir)
        self.cache = ResponseCache(path) if path is not None else None
        self.limiter = None
        if s.rpm or s.tpm:
            self.limiter = get_limiter(
                self.limit_key(s), s.rpm, s.tpm, s.rate_burst_s, s.rate_jitter_s
            )
            self.limiter.configure.remote(s.rpm, s.tpm, s.rate_burst_s, s.rate_jitter_s)
        self.client = self.make_client(
            self._api_key or "no-key-needed", http_client(self.sdk, self.limiter)
        )

    def make_client(self, api_key: str, http_client: Any) -> Any:
        """The SDK's async client (``client_cls``) for ``base_url`` with ``timeout_s``,
        ``max_retries`` (the one retry layer) and our HTTP client."""
        s = self.settings
        return self.client_cls(
            api_key=api_key,
            base_url=s.base_url,
            timeout=s.timeout_s,
            max_retries=s.max_retries,
            http_client=http_client,
        )

    @abc.abstractmethod
    def request_body(
        self, prompt: str, system: str | None = None, option_mode: int = 3
    ) -> dict[str, Any]:
        """The wire-format request body of one query (also one batch item's body);
        ``system``: the query's system turn (:attr:`Query.system`), sent after the judge's
        own ``system_prompt`` (:func:`~voirdire.judges.base.system_text`); ``option_mode``:
        the number of option letters the query offers."""

    @abc.abstractmethod
    def endpoint(self, client: Any = None) -> Any:
        """The SDK's bound method that sends one request (e.g. ``client.messages.create``)
        of ``client`` (default: the judge's)."""

    async def send(
        self,
        prompt: str,
        n: int = 1,
        system: str | None = None,
        option_mode: int = 3,
        max_retries: int | None = None,
    ) -> Any:
        """Send one request (:meth:`request_body` through :meth:`endpoint`; ``n`` samples of
        the prompt where :attr:`offers_n`; ``max_retries``: the SDK's retries for this
        request, default the judge's); returns the SDK's response."""
        client = (
            None
            if max_retries is None
            else self.client.with_options(max_retries=max_retries)
        )
        create = self.endpoint(client)
        body = self.request_body(prompt, system, option_mode)
        if n > 1:
            body["n"] = n
        return await create(**sdk_call_kwargs(create, body))

    async def send_parsed(self, q0: Query, n: int, att: Any) -> list[Reply]:
        """Send one request and parse its ``n`` replies. A 2xx whose body is not the
        protocol's (an HTML page from a proxy, a cut body: ``malformed_response``) is
        transient: asked again, with backoff, while the query's attempt budget lasts (at
        most ``max_retries + 1`` HTTP attempts in all, the SDK's own retries counted by
        ``att``); the last malformed reply's exception is raised when it is spent."""
        budget = self.settings.max_retries + 1
        while True:
            left = budget - att.count - 1  # SDK retries the next request may still make
            try:
                response = await self.send(
                    q0.prompt or "",
                    n=n,
                    system=q0.system,
                    option_mode=q0.option_mode,
                    max_retries=None if att.count == 0 else left,
                )
                return self.parse_checked(response, n=n)
            except Exception as exc:  # noqa: BLE001 - transient only when malformed and budget left
                if (
                    classify_exception(exc, self.sdk)
                    is not FailureClass.MALFORMED_RESPONSE
                    or att.count >= budget
                ):
                    raise
            await asyncio.sleep(min(4.0, 0.25 * 2 ** (att.count - 1)))

    @abc.abstractmethod
    def parse(self, response: Any) -> Reply:
        """Map the SDK's response (or a batch result's body as a dict) to a :class:`Reply`."""

    def parse_samples(self, response: Any) -> list[Reply]:
        """One :class:`Reply` per sample of a response (providers with :attr:`offers_n`
        override it); the default: :meth:`parse`'s one."""
        return [self.parse(response)]

    def parse_checked(self, response: Any, n: int = 1) -> list[Reply]:
        """The ``n`` replies of a response (:meth:`parse`'s one when ``n == 1``, else
        :meth:`parse_samples`), with any shape error, or a wrong number of samples, raised
        as :class:`MalformedResponse`."""
        try:
            replies = [self.parse(response)] if n == 1 else self.parse_samples(response)
        except Exception as exc:  # noqa: BLE001 - the body is not what the protocol documents
            raise MalformedResponse(
                f"unexpected response shape: {type(exc).__name__}: {exc}"
            ) from exc
        if len(replies) != n:
            raise MalformedResponse(
                f"asked for {n} samples, the response has {len(replies)}"
            )
        return replies

    # -- answering -------------------------------------------------------------------------

    async def judge(self, queries: list[Query]) -> list[Result]:
        """Answer a batch concurrently (bounded by the worker's semaphore); never raises.

        The repetitions of one prompt go as one request with ``n`` samples where the
        provider offers it (:attr:`offers_n`) and sampling is random (temperature > 0): one
        prompt charged once for k samples, as MEC wants."""
        if self.settings.batch:
            return await run_batch(self, queries)
        groups: dict[str, list[Query]] = {}
        for q in queries:
            key = (
                q.query_id
                if self.offers_n and self.sampling.temperature > 0
                else q.unit_id
            )
            groups.setdefault(key, []).append(q)
        done = await asyncio.gather(*(self._safe_ask(g) for g in groups.values()))
        return [r for g in done for r in g]

    async def _safe_ask(self, qs: list[Query]) -> list[Result]:
        try:
            return await self._ask(qs)
        except Exception as exc:  # noqa: BLE001 - a query never escapes unrecorded
            return [
                Result.failed(
                    q.unit_id, FailureClass.ERROR, self.redact(describe_exception(exc))
                )
                for q in qs
            ]

    def redact(self, text: str | None) -> str | None:
        return redact(text, self._api_key)

    def cache_key(self, q: Query) -> str:
        return ResponseCache.key(
            self.identity_hash,
            system_text(self.settings.system_prompt, q.system),
            q.prompt or "",
            q.repetition,
        )

    def from_cache(self, q: Query) -> Result | None:
        hit = self.cache.get(self.cache_key(q)) if self.cache is not None else None
        if hit is None:
            return None
        mode = (
            {"verdict_mode": "logprobs", "option_probs": hit["option_probs"]}
            if hit["option_probs"]
            else {}
        )
        return Result(
            unit_id=q.unit_id,
            output=hit["output"],
            input_tokens=hit["input_tokens"],
            output_tokens=hit["output_tokens"],
            cost_usd=0.0,
            cached=True,
            latency_s=0.0,
            **mode,
        )

    def too_long(self, q: Query) -> tuple[int, Result | None]:
        """Estimated input tokens, and a CONTEXT_TOO_LONG failure if prompt + max_tokens do
        not fit the context window (decided before any call)."""
        est = estimate_prompt_tokens(
            q.prompt or "",
            system_text(self.settings.system_prompt, q.system),
            self.settings.model,
            self.uses_tiktoken,
        )
        if self.window is not None and est + self.sampling.max_tokens > self.window:
            return est, Result.failed(
                q.unit_id,
                FailureClass.CONTEXT_TOO_LONG,
                f"estimated {est} prompt tokens + max_tokens {self.sampling.max_tokens} exceed the context "
                f"window of {self.window} tokens of {self.settings.model}; not sent",
            )
        return est, None

    def finish(
        self, q: Query, reply: Reply, latency: float, batch: bool = False
    ) -> Result:
        """Turn a reply into a Result (content filter, empty output -> failures; cost; cache)."""
        cost = cost_usd(
            self.prices, reply.input_tokens, reply.output_tokens, batch=batch
        )
        kw = {
            "latency_s": latency,
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cost_usd": cost,
        }
        if reply.stop in self.filter_stops:
            return Result.failed(
                q.unit_id,
                FailureClass.CONTENT_FILTERED,
                f"the provider stopped the reply: {reply.stop}",
                **kw,
            )
        if not reply.text:
            return Result.failed(
                q.unit_id,
                FailureClass.MALFORMED_RESPONSE,
                f"the response has no text (stop reason {reply.stop!r})",
                **kw,
            )
        if reply.letter_logprobs is not None:
            options = letters(q.option_mode)
            kw["option_probs"] = option_probabilities(
                {L: reply.letter_logprobs.get(L, -math.inf) for L in options}
            )
            kw["verdict_mode"] = "logprobs"
        if self.cache is not None:
            self.cache.put(
                self.cache_key(q),
                reply.text,
                reply.input_tokens,
                reply.output_tokens,
                cost,
                self.settings.model,
                kw.get("option_probs"),
            )
        return Result(unit_id=q.unit_id, output=reply.text, **kw)

    async def _ask(self, qs: list[Query]) -> list[Result]:
        """Queries of one prompt (one, or the repetitions sent as ``n`` samples): cache,
        context check, then one SDK call (its own retries, plus :meth:`send_parsed`'s for
        malformed 2xx bodies, within one budget: at most ``max_retries + 1`` HTTP attempts
        per request)."""
        q0 = qs[0]
        if q0.prompt is None:
            return [
                Result.failed(
                    q.unit_id, FailureClass.ERROR, "the query carries no prompt"
                )
                for q in qs
            ]
        hits = {q.unit_id: self.from_cache(q) for q in qs}
        todo = [q for q in qs if hits[q.unit_id] is None]
        est, failed = self.too_long(q0) if todo else (0, None)
        if failed is not None:
            return [
                hits[q.unit_id] or dataclasses.replace(failed, unit_id=q.unit_id)
                for q in qs
            ]
        got: dict[str, Result] = {}
        if todo:
            async with self._sem:
                t0 = time.perf_counter()
                with attempts(est + len(todo) * self.sampling.max_tokens) as att:
                    try:
                        replies = await self.send_parsed(q0, len(todo), att)
                    except Exception as exc:  # noqa: BLE001 - classified and recorded
                        msg = self.redact(
                            f"{describe_exception(exc)} (after {att.count} attempt(s))"
                        )
                        cls = classify_exception(exc, self.sdk)
                        return [
                            hits[q.unit_id]
                            or Result.failed(
                                q.unit_id, cls, msg, latency_s=time.perf_counter() - t0
                            )
                            for q in qs
                        ]
            got = {
                q.unit_id: self.finish(q, r, time.perf_counter() - t0)
                for q, r in zip(todo, replies, strict=True)
            }
        return [hits[q.unit_id] or got[q.unit_id] for q in qs]

    async def aclose(self) -> None:
        try:
            await self.client.close()
        finally:
            if self.cache is not None:
                self.cache.close()
