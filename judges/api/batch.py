"""Batch mode for API judges (``batch = true``): OpenAI Batch and Anthropic Message Batches.

One call of ``judge(queries)`` becomes one provider batch (after the cache and the
context-window check took their share). Flow: submit -> write
``<output_dir>/api_batches/<judge>/<batch id>.json`` (batch id, unit ids, submission time)
-> poll every ``batch_poll_s`` seconds -> collect -> map every unit to an output or a
failure. A resumed job (same units) finds the record and re-attaches to the submitted
batch instead of paying again; a unit answered and collected before is in the cache.
Backends provide ``batch_submit``, ``batch_poll`` and ``batch_results`` (wire format
only); everything else is here.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any, Protocol

from voirdire.core import FailureClass, slug
from voirdire.judges.api.errors import classify_exception, describe_exception
from voirdire.judges.base import Query, Result


class APIJudge(Protocol):
    """What batch mode needs of its host, :class:`voirdire.judges.api.base.APIJudge` (a
    protocol, so this module never imports the judge that calls it)."""

    name: str
    context: Any
    settings: Any
    sdk: Any

    def request_body(
        self, prompt: str, system: str | None = None, option_mode: int = 3
    ) -> dict[str, Any]: ...
    def parse_checked(self, response: Any, n: int = 1) -> list[Any]: ...
    def finish(
        self, q: Query, reply: Any, latency: float, batch: bool = False
    ) -> Result: ...
    def from_cache(self, q: Query) -> Result | None: ...
    def too_long(self, q: Query) -> tuple[int, Result | None]: ...
    def redact(self, text: str | None) -> str | None: ...
    async def batch_submit(self, items: list[tuple[str, dict[str, Any]]]) -> str: ...
    async def batch_poll(self, batch_id: str) -> str: ...
    async def batch_results(self, batch_id: str) -> dict[str, Any]: ...


def batch_dir(judge: APIJudge) -> Path | None:
    """Where a judge's batch records live (``None`` without an output directory)."""

    out = judge.context.output_dir
    return Path(out) / "api_batches" / slug(judge.context.judge) if out else None


def _records(d: Path | None) -> dict[str, dict[str, Any]]:
    if d is None or not d.is_dir():
        return {}
    recs = {}
    for p in sorted(d.glob("*.json")):
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        recs[rec["batch_id"]] = rec
    return recs


def _write_record(d: Path | None, rec: dict[str, Any]) -> None:
    if d is None:
        return
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{rec['batch_id']}.json.tmp"
    tmp.write_text(json.dumps(rec))
    os.replace(tmp, d / f"{rec['batch_id']}.json")


async def run_batch(judge: APIJudge, queries: list[Query]) -> list[Result]:
    """Answer ``queries`` through the provider's batch API; never raises.

    Returns one :class:`Result` per query (cache hits and over-long prompts first, then
    the batch's items; items missing from the output are recorded as failures).
    """
    s = judge.settings
    results: dict[str, Result] = {}
    pending: list[Query] = []
    for q in queries:
        if q.prompt is None:
            results[q.unit_id] = Result.failed(
                q.unit_id, FailureClass.ERROR, "the query carries no prompt"
            )
            continue
        hit = judge.from_cache(q)
        if hit is not None:
            results[q.unit_id] = hit
            continue
        _, failed = judge.too_long(q)
        if failed is not None:
            results[q.unit_id] = failed
            continue
        pending.append(q)
    d = batch_dir(judge)
    owner = {u: bid for bid, rec in _records(d).items() for u in rec["unit_ids"]}
    groups: dict[str, list[Query]] = {}
    fresh = []
    for q in pending:
        if q.unit_id in owner:
            groups.setdefault(owner[q.unit_id], []).append(q)
        else:
            fresh.append(q)
    if fresh:
        try:
            bid = await judge.batch_submit(
                [
                    (q.unit_id, judge.request_body(q.prompt, q.system, q.option_mode))
                    for q in fresh
                ]
            )
        except Exception as exc:  # noqa: BLE001 - recorded per unit
            msg = judge.redact(f"batch submission failed: {describe_exception(exc)}")
            for q in fresh:
                results[q.unit_id] = Result.failed(
                    q.unit_id, classify_exception(exc, judge.sdk), msg
                )
        else:
            _write_record(
                d,
                {
                    "batch_id": bid,
                    "unit_ids": [q.unit_id for q in fresh],
                    "submitted_at": time.time(),
                    "backend": judge.name,
                    "model": s.model,
                },
            )
            groups[bid] = fresh
    for bid, qs in groups.items():
        results.update(await _collect(judge, bid, qs))
    return [
        results.get(q.unit_id)
        or Result.failed(q.unit_id, FailureClass.ERROR, "no result from the batch")
        for q in queries
    ]


async def _collect(judge: APIJudge, bid: str, qs: list[Query]) -> dict[str, Result]:
    s = judge.settings
    t0 = time.perf_counter()
    deadline = time.monotonic() + s.batch_timeout_s
    state, last_error = "running", ""
    while time.monotonic() < deadline:
        try:
            state = await judge.batch_poll(bid)
        except Exception as exc:  # noqa: BLE001 - polling errors are retried until the deadline
            last_error = judge.redact(describe_exception(exc)) or ""
            state = "running"
        if state != "running":
            break
        await asyncio.sleep(s.batch_poll_s)
    if state == "running":
        return {
            q.unit_id: Result.failed(
                q.unit_id,
                FailureClass.TIMEOUT,
                f"batch {bid} not finished after {s.batch_timeout_s:.0f} s {last_error}".strip(),
            )
            for q in qs
        }
    try:
        items = await judge.batch_results(bid)
    except Exception as exc:  # noqa: BLE001
        msg = judge.redact(f"collecting batch {bid} failed: {describe_exception(exc)}")
        return {
            q.unit_id: Result.failed(q.unit_id, classify_exception(exc, judge.sdk), msg)
            for q in qs
        }
    latency = time.perf_counter() - t0
    out = {}
    for q in qs:
        item = items.get(q.unit_id)
        if item is None:
            out[q.unit_id] = Result.failed(
                q.unit_id,
                FailureClass.SERVER_ERROR,
                f"batch {bid} ({state}) returned nothing for this request",
            )
        elif isinstance(item, tuple):  # (failure class, message)
            out[q.unit_id] = Result.failed(
                q.unit_id, item[0], judge.redact(item[1]) or ""
            )
        else:
            try:
                reply = judge.parse_checked(item)[0]
            except Exception as exc:  # noqa: BLE001
                out[q.unit_id] = Result.failed(
                    q.unit_id, FailureClass.MALFORMED_RESPONSE, str(exc)[:500]
                )
            else:
                out[q.unit_id] = judge.finish(q, reply, latency, batch=True)
    return out
