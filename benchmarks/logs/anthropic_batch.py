"""An Anthropic Message Batch: its results JSONL and, optionally, its requests, joined on
``custom_id``.

One JSON object a line. **Results** (what ``GET /v1/messages/batches/{id}/results`` returns,
the SDK's ``MessageBatchIndividualResponse``): ``custom_id`` and ``result``, whose ``type`` is
``succeeded`` (with ``message``, a Message: ``model``, ``content``, a list of blocks,
``stop_reason``), ``errored`` (with ``error``, an ErrorResponse: ``{"type": "error", "error":
{"type", "message"}}``), ``canceled`` or ``expired``. **Requests** (a batch's ``requests[]``,
the SDK's ``Request``), one a line: ``custom_id`` and ``params`` (``model``, ``max_tokens``,
``messages``). A line is a request when it has ``params``, a result when it has ``result``.

**Text**: the ``text`` of the message's ``text`` blocks, joined by newlines (thinking and
tool-use blocks are left out). **Failures** (recorded with their reason): ``errored`` (the
error's type and message), ``canceled``, ``expired``, a message without a text block, a
request without a result. **Judge**: ``[benchmark.log] judge``, else the request's
``params.model``, else the message's ``model``. The pair and order of each ``custom_id`` and
the reading of the verdict: :mod:`voirdire.benchmarks.logs.batch_ids`.
"""

from __future__ import annotations

from typing import Any

from voirdire.benchmarks.logs.batch_ids import BatchLog, Result, need_at
from voirdire.benchmarks.logs.openai_batch import error_text
from voirdire.benchmarks.logs.reading import need
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.core import ConfigError

#: why a result of each unfinished type is a failure
NOT_RUN = {
    "canceled": "the batch was canceled before this request ran (result.type 'canceled')",
    "expired": "the batch expired before this request ran (result.type 'expired')",
}


def result_of(obj: dict[str, Any], where: str, fmt: str) -> Result:
    """One results line's outcome (module docstring).

    Raises:
        ConfigError: an unknown ``result.type``, a succeeded result without
            ``message.content``."""
    kind = need_at(obj, "result.type", where, fmt, str)
    if kind in NOT_RUN:
        return Result(None, NOT_RUN[kind], "", where)
    if kind == "errored":
        err = need_at(obj, "result.error", where, fmt)
        return Result(None, f"the request errored ({error_text(err)})", "", where)
    if kind != "succeeded":
        raise ConfigError(
            f"{fmt} log {where}: field 'result.type' is {kind!r}, not succeeded, errored, canceled or expired"
        )
    blocks = need_at(obj, "result.message.content", where, fmt, list)
    model = str(obj["result"]["message"].get("model") or "")
    texts = [
        b["text"]
        for b in blocks
        if isinstance(b, dict)
        and b.get("type") == "text"
        and isinstance(b.get("text"), str)
    ]
    if not texts:
        stop = obj["result"]["message"].get("stop_reason")
        return Result(
            None,
            f"the message holds no text block (stop_reason {stop!r})",
            model,
            where,
        )
    return Result("\n".join(texts), "", model, where)


@BENCHMARKS.register
class AnthropicBatch(BatchLog):
    """An Anthropic Message Batch (module docstring); ``[benchmark.log]``:
    :class:`~voirdire.benchmarks.logs.batch_ids.BatchOptions`."""

    name = "AnthropicBatch"
    #: a record of the format (:meth:`~voirdire.benchmarks.logs.base.LogBenchmark.owns`)
    record_keys = (
        frozenset({"custom_id", "params"}),
        frozenset({"custom_id", "result"}),
    )

    @classmethod
    def request_model(cls, obj: dict[str, Any], where: str) -> str | None:
        """A request holds ``params`` with its ``messages``; a result holds ``result``."""
        f = cls.name
        if "params" not in obj:
            need(obj, "result", where, f, dict)
            return None
        params = need(obj, "params", where, f, dict)
        need(params, "messages", f"{where}, params", f, list)
        return str(params.get("model") or "")

    @classmethod
    def result_of(cls, obj: dict[str, Any], where: str) -> Result:
        """The module's :func:`result_of`."""
        return result_of(obj, where, cls.name)


__all__ = ["NOT_RUN", "AnthropicBatch", "result_of"]
