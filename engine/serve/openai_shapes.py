"""OpenAI's shapes for ``voirdire serve``: a chat-completions request read and bounded, the
completion, the model list and errors (``{"error": {"message", "type", "param", "code"}}``
with an HTTP status), so that the official SDKs and the harnesses read them as they read
OpenAI's.

A request is refused in one 4xx before any judge is asked: larger than
:data:`MAX_REQUEST_BYTES` (413), not a JSON object, no ``model`` text, ``messages`` not a
non-empty list of ``{role, content}`` (400), and what is not served yet: ``stream``,
``n > 1``, ``logprobs`` (400, code ``unsupported``). A judge's failure reaches the client as
the status a provider gives it (:func:`failure_error`): a rate limit 429, a timeout 504
(both retried by the SDKs), a prompt too long 400, the rest 502.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from voirdire.redaction import redact_message

__all__ = [
    "MAX_REQUEST_BYTES",
    "ChatRequest",
    "ServeError",
    "completion_body",
    "failure_error",
    "models_body",
    "parse_request",
]

#: the largest request body read (bytes): a judge request of two long answers is well below
MAX_REQUEST_BYTES = 4 * 1024 * 1024


class ServeError(Exception):
    """An error for the client, in OpenAI's shape.

    Args:
        status: the HTTP status (400, 404, 413, 429, 502, 504...).
        message: one line for the client (no secret, no prompt text).
        type: OpenAI's error type (``invalid_request_error``, ``server_error``...).
        code: a short code (``unsupported``, ``model_not_found``...), or ``None``.
        param: the request key at fault, or ``None``.
    """

    def __init__(
        self,
        status: int,
        message: str,
        type: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type = status, message, type
        self.code, self.param = code, param

    def body(self) -> dict[str, Any]:
        """The response body: ``{"error": {"message", "type", "param", "code"}}``."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


@dataclass(frozen=True)
class ChatRequest:
    """A chat-completions request as read: ``model`` and ``messages`` checked, ``body``
    the whole JSON object (recorded as received)."""

    model: str
    messages: list[dict[str, Any]]
    body: dict[str, Any]


def _bad(message: str, param: str | None = None, code: str | None = None) -> ServeError:
    return ServeError(400, message, code=code, param=param)


def parse_request(
    raw: bytes, max_bytes: int = MAX_REQUEST_BYTES, declared: int | None = None
) -> ChatRequest:
    """Read a chat-completions request body (``declared``: its ``Content-Length``, when
    the body was left unread for it).

    Raises:
        ServeError: 413 over ``max_bytes``; 400 not JSON, not an object, a missing or
            malformed ``model`` or ``messages``, or ``stream``, ``n > 1`` or ``logprobs``
            (not served yet).
    """
    size = max(len(raw), declared or 0)
    if size > max_bytes:
        raise ServeError(
            413,
            f"the request has {size:,} bytes; at most {max_bytes:,}",
            code="request_too_large",
        )
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise _bad("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise _bad("the request body is not a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("'model' must be a non-empty string", "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("'messages' must be a non-empty list", "messages")
    for i, m in enumerate(messages):
        if not (
            isinstance(m, dict)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str | list)
        ):
            raise _bad(
                f"messages[{i}] must be an object with a 'role' and a 'content'",
                "messages",
            )
    if body.get("stream"):
        raise _bad("streaming is not served yet", "stream", "unsupported")
    if body.get("n") not in (None, 1):
        raise _bad(
            "n > 1 is not served yet: one verdict per request", "n", "unsupported"
        )
    if body.get("logprobs"):
        raise _bad("logprobs are not served yet", "logprobs", "unsupported")
    return ChatRequest(model=model, messages=messages, body=body)


def completion_body(
    model: str,
    content: str,
    *,
    request_id: str,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``chat.completion`` object with one choice holding ``content``; ``extra`` goes
    under the ``voirdire`` key beside ``choices`` (never in the message)."""
    out: dict[str, Any] = {
        "id": f"chatcmpl-{request_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    if extra is not None:
        out["voirdire"] = extra
    return out


def models_body(names: list[str]) -> dict[str, Any]:
    """The ``/v1/models`` list: one model per served judge, by its name."""
    return {
        "object": "list",
        "data": [
            {"id": n, "object": "model", "created": 0, "owned_by": "voirdire"}
            for n in names
        ],
    }


#: a judge's failure class -> (HTTP status, OpenAI error type, code)
_FAILURES = {
    "rate_limited": (429, "rate_limit_error", "rate_limit_exceeded"),
    "timeout": (504, "timeout", "judge_timeout"),
    "context_too_long": (400, "invalid_request_error", "context_length_exceeded"),
    "content_filtered": (400, "invalid_request_error", "content_filter"),
    "refused": (400, "invalid_request_error", "refused"),
}


def failure_error(judge: str, failure: str, message: str | None) -> ServeError:
    """The client's error for a judge's recorded failure (a
    :class:`~voirdire.core.FailureClass` value): 429, 504 and 502 are retried by the
    SDKs; a prompt the judge cannot take is 400. The judge's message is redacted of
    secrets (:func:`voirdire.redaction.redact_message`) and cut at 500 characters."""
    status, kind, code = _FAILURES.get(failure, (502, "server_error", failure))
    said = f": {redact_message(message)[:500]}" if message else ""
    return ServeError(status, f"judge {judge!r} failed ({failure}){said}", kind, code)
