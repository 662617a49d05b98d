"""One exchange of ``voirdire serve``: a request body in; the judge asked the request and its
swapped twin at once (a recognised template) or the request alone (passed through); the
response body, its status and the line recorded out.

The judge is a :class:`~voirdire.engine.worker.JudgeWorker`, the host the engine's
scheduler runs each backend in, built from the job's judge as the engine builds it
(:func:`served_judges`). Each order is one :class:`~voirdire.judges.base.Query`, named as
a work unit is: ``query_id`` the content hash of (template, system turn, user turn),
``unit_id`` that of (judge identity, query id, repetition 1); ``shown`` names each answer
by the hash of its text (``answer-<12 hex>``), ``question_id`` the instruction's hash, so
a prompt-free judge (the simulated one) answers a pair in both orders as it would in a job.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from voirdire.core import content_hash
from voirdire.engine.serve.gate import Pair, combine, recognise, reply_text
from voirdire.engine.serve.openai_shapes import (
    MAX_REQUEST_BYTES,
    ChatRequest,
    ServeError,
    completion_body,
    failure_error,
    parse_request,
)
from voirdire.judges.base import Query, Result

__all__ = [
    "Exchange",
    "JudgeHost",
    "ServedJudge",
    "answer",
    "exchange",
    "served_judges",
]


@dataclass(frozen=True)
class ServedJudge:
    """A judge the server answers with: its name (the ``model`` clients ask for), its
    identity hash (as in its unit ids) and its host (``JudgeWorker``: ``await
    worker.judge(queries)`` gives result columns)."""

    name: str
    identity_hash: str
    worker: Any


@dataclass
class Exchange:
    """One exchange's outcome: HTTP ``status``, response ``body`` (a completion or an
    error), ``headers`` to add, and the ``record`` line (JSON-ready)."""

    status: int
    body: dict[str, Any]
    record: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeHost:
    """What builds one served judge's host, as plain data (it crosses to Ray): ``name``,
    ``identity_hash``, ``backend`` (registry name or ``module:Class``), ``settings`` (a
    plain dict), ``context`` and ``actor_options`` (the backend's ``worker_options`` with
    the job's ``resources`` and ``scheduling`` over them, as the engine's pools merge
    them)."""

    name: str
    identity_hash: str
    backend: str
    settings: dict[str, Any]
    context: Any
    actor_options: dict[str, Any]

    def local(self) -> ServedJudge:
        """The judge hosted in this process (a :class:`JudgeWorker` built here)."""
        from voirdire.engine.worker import JudgeWorker

        worker = JudgeWorker(self.backend, self.settings, self.context)
        return ServedJudge(self.name, self.identity_hash, worker)


def served_judges(
    job: Any, names: list[str] | None = None, out: str | None = None
) -> list[JudgeHost]:
    """The job's judges (``names``: those only, in the job's order), each bound and checked
    as ``voirdire run`` binds and checks it (:func:`voirdire.engine.bind.resolve_judges`,
    the backend's ``preflight`` and ``check_secrets``), as :class:`JudgeHost` records.

    Raises:
        ConfigError: a name the job does not have, a judge that stands for several or
            answers only recorded prompts, bad settings, a missing key.
    """
    from voirdire.core import ConfigError
    from voirdire.engine.bind import resolve_judges
    from voirdire.judges.base import backend_ref
    from voirdire.judges.capabilities import Expands, Recording

    resolved = resolve_judges(job)
    if names:
        known = {rj.name: rj for rj in resolved}
        if missing := [n for n in names if n not in known]:
            raise ConfigError(
                f"--judge {missing[0]!r}: the job has no such judge; it has "
                + ", ".join(known)
            )
        resolved = [rj for rj in resolved if rj.name in names]
    hosts = []
    for rj in resolved:
        if issubclass(rj.backend, Expands | Recording):
            raise ConfigError(
                f"judge {rj.name!r} (backend {rj.spec.backend!r}) answers from recordings; "
                "voirdire serve needs a judge that reads prompts"
                + (
                    "; serve the others with --judge " + " --judge ".join(others)
                    if (
                        others := [
                            o.name
                            for o in resolved
                            if not issubclass(o.backend, Expands | Recording)
                        ]
                    )
                    else ""
                )
            )
        ctx = rj.context("serve", None, out)
        rj.backend.preflight(rj.settings, ctx)
        rj.backend.check_secrets(rj.settings, ctx)
        opts = dict(rj.backend.worker_options(rj.settings))
        extra = dict(rj.actor_options)
        if "resources" in extra:
            extra["resources"] = {**(opts.get("resources") or {}), **extra["resources"]}
        opts.update(extra)
        opts["max_concurrency"] = max(2, 2 * rj.concurrency)  # both orders at once
        hosts.append(
            JudgeHost(
                rj.name,
                rj.identity_hash,
                backend_ref(rj.backend),
                rj.settings.model_dump(mode="json"),
                ctx,
                opts,
            )
        )
    return hosts


def _query(identity_hash: str, benchmark: str, system, user, qid, shown) -> Query:
    query_id = content_hash("serve", benchmark, system or "", user)
    return Query(
        unit_id=content_hash(identity_hash, query_id, 1),
        query_id=query_id,
        benchmark=benchmark,
        question_id=qid,
        shown=shown,
        repetition=1,
        option_mode=3,
        prompt=user,
        system=system,
    )


def _name(text: str) -> str:
    return "answer-" + content_hash(text, size=6)


async def _ask(judge: ServedJudge, queries: list[Query]) -> list[Result]:
    """Each query asked on its own, all at once; results in query order."""
    cols = await asyncio.gather(*(judge.worker.judge([q]) for q in queries))
    return [Result(**{k: v[0] for k, v in c.items()}) for c in cols]


def _order_record(q: Query, r: Result) -> dict[str, Any]:
    return {
        "unit_id": q.unit_id,
        "query_id": q.query_id,
        "shown": list(q.shown),
        **{k: v for k, v in r.as_row().items() if k != "unit_id"},
    }


def _usage(results: list[Result]) -> dict[str, int]:
    return {
        "prompt_tokens": sum(r.input_tokens or 0 for r in results),
        "completion_tokens": sum(r.output_tokens or 0 for r in results),
    }


async def answer(
    request: ChatRequest, judge: ServedJudge, strategy: str = "tie"
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The completion for a request, and each order's record.

    A recognised template: both orders asked at once and combined
    (:func:`voirdire.engine.serve.gate.combine`); otherwise the request's system and user
    turns asked as they are (a request of other turns is refused: the judge interface
    takes a system and a user turn).

    Raises:
        ServeError: an order the judge failed (its status: :func:`failure_error`), or a
            request that cannot be passed through.
    """
    rid = uuid.uuid4().hex
    found = recognise(request.messages)
    if isinstance(found, Pair):
        shown = (_name(found.output_1), _name(found.output_2))
        qid = content_hash(found.instruction, size=8)
        queries = [
            _query(judge.identity_hash, found.template, found.system, found.user(),
                   qid, shown),
            _query(judge.identity_hash, found.template, found.system,
                   found.user(swapped=True), qid, shown[::-1]),
        ]  # fmt: skip
    else:
        turns = {m["role"]: m.get("content") for m in request.messages}
        roles = [m["role"] for m in request.messages]
        if roles not in (["user"], ["system", "user"]) or not all(
            isinstance(t, str) for t in turns.values()
        ):
            raise ServeError(
                400,
                "voirdire serve passes through a text system turn and one text user turn "
                f"only (this request is not gated: {found})",
                param="messages",
                code="unsupported",
            )
        system, user = turns.get("system"), turns["user"]
        queries = [
            _query(judge.identity_hash, "passthrough", system, user,
                   content_hash(user, size=8), ("slot-A", "slot-B"))
        ]  # fmt: skip
    results = await _ask(judge, queries)
    orders = [_order_record(q, r) for q, r in zip(queries, results)]
    for r in results:
        if r.failure is not None:
            err = failure_error(judge.name, r.failure, r.failure_message)
            err.orders = orders  # type: ignore[attr-defined]
            raise err
    if isinstance(found, Pair):
        outcome = combine(
            found.template,
            (results[0].output, results[0].choice),
            (results[1].output, results[1].choice),
            strategy,
        )
        content = reply_text(outcome)
        extra = {**outcome.as_dict(), "judge": judge.name, "calls": 2}
        for o, r in zip(extra["orders"], results):
            o.update(latency_s=r.latency_s, cost_usd=r.cost_usd)
    else:
        content = results[0].output or ""
        extra = {"gated": False, "reason": found, "judge": judge.name, "calls": 1}
    body = completion_body(
        request.model, content, request_id=rid, **_usage(results), extra=extra
    )
    return body, orders


def _pick(judges: Mapping[str, ServedJudge], model: str) -> ServedJudge:
    """The judge a request's ``model`` names; the one judge when there is one.

    Raises:
        ServeError: 404 with several judges and a name that is none of them.
    """
    if model in judges:
        return judges[model]
    if len(judges) == 1:
        return next(iter(judges.values()))
    raise ServeError(
        404,
        f"no judge named {model[:200]!r}; served: {', '.join(judges)}",
        code="model_not_found",
        param="model",
    )


async def exchange(
    raw: bytes,
    judges: Mapping[str, ServedJudge],
    *,
    strategy: str = "tie",
    max_bytes: int = MAX_REQUEST_BYTES,
    declared: int | None = None,
) -> Exchange:
    """One exchange from the request's bytes to the response and its record line (never
    raises for a client's or a judge's fault: each is an OpenAI-shaped error).
    ``declared``: the request's ``Content-Length`` when its body was not read for it
    (over ``max_bytes``: a 413).

    The record: ``id``, ``at`` (Unix seconds), ``status``, ``judge``, ``request`` (the body
    as received; ``None`` when it was not read, with ``request_bytes``), ``response`` and
    ``orders`` (per order asked: unit and query ids, ``shown``, the judge's raw output,
    failure, latency, tokens and cost, as a results directory's raw rows hold them).
    """
    at = time.time()
    record: dict[str, Any] = {
        "id": uuid.uuid4().hex,
        "at": at,
        "request_bytes": max(len(raw), declared or 0),
        "request": None,
        "judge": None,
        "orders": [],
    }
    try:
        request = parse_request(raw, max_bytes, declared)
        record["request"] = request.body
        judge = _pick(judges, request.model)
        record["judge"] = judge.name
        body, record["orders"] = await answer(request, judge, strategy)
        status = 200
    except ServeError as exc:
        status, body = exc.status, exc.body()
        record["orders"] = getattr(exc, "orders", [])
    record.update(status=status, response=body, seconds=time.time() - at)
    extra = body.get("voirdire", {})
    headers = {"x-voirdire-gated": "true" if extra.get("gated") else "false"}
    if extra.get("outcome"):
        headers["x-voirdire-outcome"] = extra["outcome"]
    return Exchange(status, body, record, headers)
