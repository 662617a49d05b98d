"""An OpenAI Batch API batch (also what ``vllm run-batch`` reads and writes): the input JSONL
and the output (and error) JSONL, joined on ``custom_id``.

One JSON object a line. **Input** (the Batch API's "request input object", vLLM's
``BatchRequestInput``): ``custom_id``, ``method`` (``POST``), ``url``
(``/v1/chat/completions``) and ``body``, the request (``model``, ``messages``). **Output**
(the Batch API's "request output object", vLLM's ``BatchRequestOutput``): ``id``,
``custom_id``, ``response`` (null, or ``status_code``, ``request_id`` and ``body``, the chat
completion) and ``error`` (null, or ``code`` and ``message``; vLLM writes a message string or
an ``ErrorResponse``, ``{"error": {"message", "type", "code"}}``). A line is a request when it
has ``body``, a result when it has ``response`` or ``error``; the files may come in any order
and the input is optional.

**Text**: ``response.body.choices[0].message.content`` (``choices[0].text`` for
``/v1/completions``). **Failures** (recorded with their reason): a non-null ``error``, a null
``response``, a ``status_code`` other than 200, a null content (the ``finish_reason`` named),
a request without a result. **Judge**: ``[benchmark.log] judge``, else the request's
``body.model``, else the response's ``body.model``. The pair and order of each ``custom_id``
and the reading of the verdict: :mod:`voirdire.benchmarks.logs.batch_ids`.
"""

from __future__ import annotations

from typing import Any

from voirdire.benchmarks.logs.batch_ids import BatchLog, Result, need_at
from voirdire.benchmarks.logs.reading import need
from voirdire.benchmarks.registry import BENCHMARKS


def error_text(err: Any) -> str:
    """The message of an output line's ``error``: OpenAI's ``{"code", "message"}``, vLLM's
    string or ``ErrorResponse`` (``{"error": {"message", ...}}``), else as JSON."""
    if isinstance(err, str):
        return err
    if isinstance(err, dict):
        inner = err.get("error") if isinstance(err.get("error"), dict) else err
        msg, code = inner.get("message"), inner.get("code") or inner.get("type")
        if msg:
            return f"{code}: {msg}" if code else str(msg)
    return repr(err)


def result_of(obj: dict[str, Any], where: str, fmt: str) -> Result:
    """One output line's outcome (module docstring).

    Raises:
        ConfigError: a 200 response without ``body.choices[0]`` or its content."""
    resp, err = obj.get("response"), obj.get("error")
    model = ""
    if isinstance(resp, dict) and isinstance(resp.get("body"), dict):
        model = str(resp["body"].get("model") or "")
    if err is not None:
        return Result(None, f"the request failed ({error_text(err)})", model, where)
    if resp is None:
        return Result(None, "the output line holds no response", model, where)
    status = need_at(obj, "response.status_code", where, fmt, int)
    if status != 200:
        body = resp.get("body")
        why = error_text(body) if body else "no body"
        return Result(
            None, f"the request failed with status {status} ({why})", model, where
        )
    choice = need_at(obj, "response.body.choices.0", where, fmt, dict)
    if "message" not in choice and "text" in choice:
        text = choice["text"]
    else:
        text = need_at(
            choice, "message.content", f"{where}, response.body.choices[0]", fmt
        )
    if not isinstance(text, str):
        why = f"no message content (finish_reason {choice.get('finish_reason')!r})"
        return Result(None, why, model, where)
    return Result(text, "", model, where)


@BENCHMARKS.register
class OpenAIBatch(BatchLog):
    """An OpenAI Batch API (or ``vllm run-batch``) batch (module docstring);
    ``[benchmark.log]``: :class:`~voirdire.benchmarks.logs.batch_ids.BatchOptions`."""

    name = "OpenAIBatch"
    #: a record of the format (:meth:`~voirdire.benchmarks.logs.base.LogBenchmark.owns`)
    record_keys = (
        frozenset({"custom_id", "body"}),
        frozenset({"custom_id", "response"}),
    )

    @classmethod
    def request_model(cls, obj: dict[str, Any], where: str) -> str | None:
        """A request holds ``url`` and ``body`` (chat ``messages`` or a completion's
        ``prompt``); a result holds ``response`` or ``error``."""
        f = cls.name
        if "body" not in obj and "url" not in obj:
            if "response" not in obj and "error" not in obj:
                need(obj, "response", where, f)
            return None
        body = need(obj, "body", where, f, dict)
        need(obj, "url", where, f, str)
        need(body, "messages" if "messages" in body or "prompt" not in body
             else "prompt", f"{where}, body", f)  # fmt: skip
        return str(body.get("model") or "")

    @classmethod
    def result_of(cls, obj: dict[str, Any], where: str) -> Result:
        """The module's :func:`result_of`."""
        return result_of(obj, where, cls.name)


__all__ = ["OpenAIBatch", "error_text", "result_of"]
