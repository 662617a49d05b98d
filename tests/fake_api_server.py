"""A loopback server speaking the OpenAI and Anthropic wire protocols, with fault injection.

Endpoints (what the official SDKs call):
- OpenAI: ``POST /v1/chat/completions``; batch: ``POST /v1/files``, ``GET
  /v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches/{id}``.
- Anthropic: ``POST /v1/messages``; batch: ``POST /v1/messages/batches``, ``GET
  /v1/messages/batches/{id}``, ``GET /v1/messages/batches/{id}/results``.
- Admin: ``GET /_admin/stats``, ``POST /_admin/config`` (JSON, merged into the config),
  ``POST /_admin/reset`` (counters and fault memory).

Replies: the text ends in ``[[X]]`` and ``Choice: X`` with a letter drawn from a hash of the
prompt (deterministic), or, with ``verdicts`` configured (a list of endings such as
``["Output (a)", "Output (b)"]``), in one of those drawn the same way; a score-mode prompt (two ``Score of <label>: <score>`` format lines)
gets the two score lines with scores 1-10 drawn from the prompt's hash. Usage: prompt tokens ``ceil(chars/4)`` of the messages' text,
completion tokens ``ceil(len(reply)/4)``.

Own rate limit (``rpm``/``tpm``/``burst_s``): a token bucket refilled at the full
configured rate with a capacity of ``burst_s`` seconds' worth, widened by ``jitter_s``
seconds of rate for arrival-time jitter between concurrent connections (the
cell-delay-variation tolerance of ITU-T I.371); a request that does not conform gets 429
and counts in ``rate_rejected``. ``arrivals`` logs ``[t, tokens]`` of every admitted
request for window counts (:func:`max_in_window`); ``attempts`` counts every model call
that arrives, per prompt (the messages' text joined by newlines), whatever its answer.
Tokens charged per request: prompt tokens + the request's max tokens (OpenAI's documented
rule).

Faults (``faults``: a list of ``{"kind", "rate", "times", "match"}``): a request whose
prompt hash falls in a rule's share (rules take consecutive shares of [0, 1)), or whose
prompt contains ``match``, gets the fault, at most ``times`` times per prompt (``None``:
always). Kinds: ``429`` (with Retry-After), ``500``, ``503``, ``529``, ``slow`` (sleeps
``slow_s`` before answering), ``drop`` (closes the connection without a response),
``malformed`` (200 with a cut JSON body), ``html`` (200 with a proxy's HTML error page),
``context`` (400 context too long),
``filter`` (content filtered / refusal), ``auth`` (401).

Run standalone: ``python tests/fake_api_server.py --port 0`` prints ``PORT <n>``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import threading
import time
import urllib.request
import uuid
from typing import Any

from aiohttp import web

DEFAULT_CONFIG: dict[str, Any] = {
    "keys": {
        "openai": None,
        "anthropic": None,
    },  # expected API keys (None: not checked)
    "latency_s": 0.0,
    "rpm": None,
    "tpm": None,
    "burst_s": 1.0,
    "jitter_s": 0.25,
    "retry_after_ms": 50,
    "slow_s": 5.0,
    "faults": [],
    "verdicts": None,  # endings of the replies for an own verdict format (None: [[X]] and Choice: X)
    "batch_delay_s": 0.5,
    "record_arrivals": True,
    # how a 401 echoes the wrong key: "full", or "masked" as OpenAI does (first 4 and last 4
    # characters around a run of "*")
    "echo_key": "full",
}


class _Bucket:
    """The provider-side rule: a token bucket of ``capacity`` refilled at ``rate`` per
    second, widened by ``jitter`` seconds of rate; a request needs ``min(n, capacity)``."""

    def __init__(self, rate: float, capacity: float, jitter: float) -> None:
        self.rate = rate
        self.capacity = max(1.0, capacity) + rate * jitter
        self.tat = -math.inf

    def _need(self, n: float) -> float:
        return (self.capacity - min(n, self.capacity)) / self.rate

    def conforms(self, now: float, n: float) -> bool:
        return now >= self.tat - self._need(n)

    def book(self, now: float, n: float) -> None:
        self.tat = max(self.tat, now) + n / self.rate

    def wait(self, now: float, n: float) -> float:
        return max(0.0, self.tat - self._need(n) - now)


def _h(text: str) -> float:
    return (
        int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
        / 2**64
    )


def _token_logprobs(text: str, top: int) -> dict[str, Any]:
    """Chat-completions ``logprobs`` of a reply: the text split into word, space and
    punctuation tokens (``[[`` and ``]]`` whole); a single capital letter gets top
    log-probabilities over A, B, C drawn from a hash of the text, the letter itself the
    most likely; other tokens log-probability 0."""
    out = []
    for tok in re.findall(r"\[\[|\]\]|\w+|\s+|[^\w\s]", text):
        if len(tok) == 1 and tok.isupper() and tok in "ABC":
            p_top = 0.5 + 0.45 * _h("lp" + text)
            rest = (1 - p_top) / 2
            probs = {c: (p_top if c == tok else rest) for c in "ABC"}
            tops = [
                {"token": c, "logprob": math.log(v), "bytes": None}
                for c, v in sorted(probs.items(), key=lambda kv: -kv[1])
            ][:top]
            out.append(
                {
                    "token": tok,
                    "logprob": math.log(p_top),
                    "bytes": None,
                    "top_logprobs": tops,
                }
            )
        else:
            out.append(
                {"token": tok, "logprob": 0.0, "bytes": None, "top_logprobs": []}
            )
    return {"content": out, "refusal": None}


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


class FakeAPIServer:
    """The server (see the module docstring); ``start()`` runs it in a background thread on
    127.0.0.1 and a random port, ``stop()`` shuts it down. ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self, **config: Any) -> None:
        self.config = json.loads(json.dumps(DEFAULT_CONFIG))
        self.config.update(config)
        self.reset()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.port: int | None = None
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}

    # -- state ---------------------------------------------------------------------------

    def reset(self) -> None:
        self.stats: dict[str, Any] = {
            "requests": 0,
            "by_status": {},
            "ok": {"openai": 0, "anthropic": 0},
            "ok_per_prompt_max": 0,
            "rate_rejected": 0,
            "injected": {},
            "auth_failures": 0,
            "arrivals": [],  # [t, tokens] of every request admitted by the rate limit
            "attempts": {},  # prompt -> model calls that arrived with it (every status)
            "batch_requests": 0,
            "batches_created": 0,
        }
        self._ok_per_prompt: dict[str, int] = {}
        self._fault_hits: dict[tuple[str, str], int] = {}
        self._limits: dict[str, _Bucket] | None = None

    def _limit(self) -> dict[str, _Bucket]:
        if self._limits is None:
            c = self.config
            self._limits = {}
            if c["rpm"]:
                self._limits["req"] = _Bucket(
                    c["rpm"] / 60, c["rpm"] / 60 * c["burst_s"], c["jitter_s"]
                )
            if c["tpm"]:
                self._limits["tok"] = _Bucket(
                    c["tpm"] / 60, c["tpm"] / 60 * c["burst_s"], c["jitter_s"]
                )
        return self._limits

    def _count(self, status: int) -> None:
        self.stats["by_status"][str(status)] = (
            self.stats["by_status"].get(str(status), 0) + 1
        )

    def _fault(self, key: str, prompt: str) -> str | None:
        u = _h(key)
        lo = 0.0
        for rule in self.config["faults"]:
            kind = str(rule["kind"])
            hit = False
            if rule.get("match"):
                hit = rule["match"] in prompt
            else:
                hit = lo <= u < lo + float(rule.get("rate", 0.0))
                lo += float(rule.get("rate", 0.0))
            if hit:
                n = self._fault_hits.get((key, kind), 0)
                times = rule.get("times")
                if times is None or n < times:
                    self._fault_hits[(key, kind)] = n + 1
                    self.stats["injected"][kind] = (
                        self.stats["injected"].get(kind, 0) + 1
                    )
                    return kind
                return None
        return None

    # -- protocol helpers -------------------------------------------------------------------

    @staticmethod
    def _error(
        api: str,
        status: int,
        etype: str,
        message: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> web.Response:
        if api == "openai":
            body = {
                "error": {
                    "message": message,
                    "type": etype,
                    "param": None,
                    "code": code,
                }
            }
        else:
            body = {"type": "error", "error": {"type": etype, "message": message}}
        return web.json_response(body, status=status, headers=headers)

    def _echo(self, key: str) -> str:
        """A wrong key as the 401 message shows it (``echo_key``)."""
        if self.config["echo_key"] == "masked" and len(key) > 8:
            return key[:4] + "*" * (len(key) - 8) + key[-4:]
        return key

    def _reply_text(self, prompt: str) -> str:
        labels = re.findall(r"^Score of ([^:\n]+): <score>$", prompt, re.M)
        if (
            len(labels) == 2
        ):  # a score-mode prompt: two scores 1-10 drawn from the prompt's hash
            a, b = (1 + int(_h(f"score{i}" + prompt) * 10) for i in (0, 1))
            return f"Both responses address the request.\nScore of {labels[0]}: {a}\nScore of {labels[1]}: {b}"
        verdicts = self.config.get("verdicts")
        if verdicts:  # an own template's verdict format: one of the given endings
            return (
                "After comparing the two outputs carefully: "
                + verdicts[int(_h("verdict" + prompt) * len(verdicts))]
            )
        letter = "ABC"[int(_h("verdict" + prompt) * 3)]
        return f"After comparing the two answers carefully, my verdict is [[{letter}]]\nChoice: {letter}"

    async def _handle(
        self, request: web.Request, api: str, body: dict[str, Any]
    ) -> web.StreamResponse:
        """One model call (chat completion or message), with auth, rate limit and faults."""
        c = self.config
        self.stats["requests"] += 1
        key = _key_of(request, api)
        expected = c["keys"].get(api)
        if api == "openai":
            texts = [m.get("content") or "" for m in body.get("messages", [])]
            max_tokens = (
                body.get("max_completion_tokens") or body.get("max_tokens") or 0
            )
        else:
            texts = [body.get("system") or ""] + [
                m.get("content") or "" for m in body.get("messages", [])
            ]
            max_tokens = body.get("max_tokens") or 0
        prompt = "\n".join(t if isinstance(t, str) else json.dumps(t) for t in texts)
        self.stats["attempts"][prompt] = self.stats["attempts"].get(prompt, 0) + 1
        if expected is not None and key != expected:
            self.stats["auth_failures"] += 1
            self._count(401)
            # like the real services, the message echoes the (wrong) key
            return self._error(
                api,
                401,
                "authentication_error"
                if api == "anthropic"
                else "invalid_request_error",
                f"Incorrect API key provided: {self._echo(key)}",
                code="invalid_api_key",
            )
        now = time.monotonic()
        limits = self._limit()
        charge = _tokens(prompt) + int(max_tokens)
        if limits:
            need = {"req": 1, "tok": charge}
            late = [
                (g, need[name])
                for name, g in limits.items()
                if not g.conforms(now, need[name])
            ]
            if late:
                self.stats["rate_rejected"] += 1
                self._count(429)
                wait = max(g.wait(now, n) for g, n in late)
                return self._error(
                    api,
                    429,
                    "rate_limit_error" if api == "anthropic" else "requests",
                    "Rate limit reached (fake server's own limit)",
                    code="rate_limit_exceeded",
                    headers={"retry-after-ms": str(max(1, int(wait * 1000)))},
                )
            for name, g in limits.items():
                g.book(now, 1 if name == "req" else charge)
        if c["record_arrivals"]:
            self.stats["arrivals"].append([now, charge])
        fault = self._fault(api + "\x1f" + prompt, prompt)
        if c["latency_s"]:
            await asyncio.sleep(c["latency_s"])
        if fault == "auth":
            self._count(401)
            return self._error(
                api,
                401,
                "authentication_error",
                f"Incorrect API key provided: {self._echo(key)}",
                code="invalid_api_key",
            )
        if fault in ("429", "500", "503", "529"):
            status = int(fault)
            self._count(status)
            etype = {
                429: "rate_limit_error",
                500: "api_error",
                503: "api_error",
                529: "overloaded_error",
            }[status]
            hdrs = (
                {"retry-after-ms": str(c["retry_after_ms"]), "retry-after": "1"}
                if status == 429
                else None
            )
            return self._error(api, status, etype, f"injected {status}", headers=hdrs)
        if fault == "slow":
            await asyncio.sleep(c["slow_s"])
        if fault == "drop":
            self._count(0)
            assert request.transport is not None
            request.transport.abort()
            raise asyncio.CancelledError()
        if fault == "html":
            self._count(200)
            return web.Response(
                status=200,
                text="<html><head><title>502 Bad Gateway</title></head><body>"
                "<center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>",
                content_type="text/html",
            )
        if fault == "malformed":
            self._count(200)
            return web.Response(
                status=200,
                text='{"id": "chatcmpl-x", "choices": [{"message": ',
                content_type="application/json",
            )
        if fault == "context":
            self._count(400)
            msg = (
                "This model's maximum context length is 8192 tokens. However, your messages resulted in "
                "99999 tokens."
                if api == "openai"
                else "prompt is too long: 250000 tokens > 200000 maximum"
            )
            return self._error(
                api, 400, "invalid_request_error", msg, code="context_length_exceeded"
            )
        text = self._reply_text(prompt)
        out_tokens = min(_tokens(text), int(max_tokens) or 10**9)
        in_tokens = _tokens(prompt)
        self._count(200)
        if fault != "filter":
            self.stats["ok"][api] += 1
            k = api + "\x1f" + prompt + "\x1f" + str(body.get("seed"))
            self._ok_per_prompt[k] = self._ok_per_prompt.get(k, 0) + 1
            self.stats["ok_per_prompt_max"] = max(
                self.stats["ok_per_prompt_max"], self._ok_per_prompt[k]
            )
        return web.json_response(
            self._body(api, body, text, in_tokens, out_tokens, fault == "filter")
        )

    @staticmethod
    def _body(
        api: str,
        req: dict[str, Any],
        text: str,
        in_tok: int,
        out_tok: int,
        filtered: bool,
    ) -> dict[str, Any]:
        if api == "openai":
            n = max(
                1, int(req.get("n") or 1)
            )  # n samples of the prompt in one response
            return {
                "id": "chatcmpl-" + uuid.uuid4().hex[:12],
                "object": "chat.completion",
                "created": int(time.time()),
                "model": req.get("model"),
                "choices": [
                    {
                        "index": i,
                        "message": {
                            "role": "assistant",
                            "content": None if filtered else text,
                            "refusal": None,
                        },
                        "finish_reason": "content_filter" if filtered else "stop",
                        "logprobs": _token_logprobs(
                            text, int(req.get("top_logprobs") or 0)
                        )
                        if req.get("logprobs") and not filtered
                        else None,
                    }
                    for i in range(n)
                ],
                "usage": {
                    "prompt_tokens": in_tok,
                    "completion_tokens": 0 if filtered else n * out_tok,
                    "total_tokens": in_tok + (0 if filtered else n * out_tok),
                },
            }
        return {
            "id": "msg_" + uuid.uuid4().hex[:12],
            "type": "message",
            "role": "assistant",
            "model": req.get("model"),
            "content": [] if filtered else [{"type": "text", "text": text}],
            "stop_reason": "refusal" if filtered else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": in_tok,
                "output_tokens": 0 if filtered else out_tok,
            },
        }

    # -- routes ----------------------------------------------------------------------------

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, "openai", await request.json())

    async def messages(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, "anthropic", await request.json())

    async def admin_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats)

    async def admin_config(self, request: web.Request) -> web.Response:
        self.config.update(await request.json())
        self._limits = None
        return web.json_response(self.config)

    async def admin_reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})

    # -- batch APIs --------------------------------------------------------------------------

    def _check_key(self, request: web.Request, api: str) -> web.Response | None:
        expected = self.config["keys"].get(api)
        key = _key_of(request, api)
        if expected is not None and key != expected:
            self.stats["auth_failures"] += 1
            return self._error(
                api, 401, "authentication_error", "Incorrect API key provided"
            )
        return None

    async def files_create(self, request: web.Request) -> web.Response:
        if (bad := self._check_key(request, "openai")) is not None:
            return bad
        data = await request.post()
        f = data["file"]
        content = f.file.read() if hasattr(f, "file") else bytes(f)
        fid = "file-" + uuid.uuid4().hex[:16]
        self.files[fid] = content
        return web.json_response(
            {
                "id": fid,
                "object": "file",
                "bytes": len(content),
                "created_at": int(time.time()),
                "filename": getattr(f, "filename", "batch.jsonl"),
                "purpose": data.get("purpose", "batch"),
                "status": "processed",
            }
        )

    async def files_content(self, request: web.Request) -> web.Response:
        if (bad := self._check_key(request, "openai")) is not None:
            return bad
        fid = request.match_info["fid"]
        if fid not in self.files:
            return self._error(
                "openai", 404, "invalid_request_error", f"No such File object: {fid}"
            )
        return web.Response(
            body=self.files[fid], content_type="application/octet-stream"
        )

    async def _run_batch_items(
        self, api: str, items: list[tuple[str, dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        out = []
        for custom_id, body in items:
            self.stats["batch_requests"] += 1
            prompt = "\n".join(
                ([body.get("system") or ""] if api == "anthropic" else [])
                + [m.get("content") or "" for m in body.get("messages", [])]
            )
            text = self._reply_text(prompt)
            max_tokens = (
                body.get("max_completion_tokens") or body.get("max_tokens") or 10**9
            )
            resp = self._body(
                api,
                body,
                text,
                _tokens(prompt),
                min(_tokens(text), int(max_tokens)),
                False,
            )
            self.stats["ok"][api] += 1
            k = api + "\x1f" + prompt + "\x1f" + str(body.get("seed"))
            self._ok_per_prompt[k] = self._ok_per_prompt.get(k, 0) + 1
            self.stats["ok_per_prompt_max"] = max(
                self.stats["ok_per_prompt_max"], self._ok_per_prompt[k]
            )
            out.append({"custom_id": custom_id, "body": resp})
        return out

    def _openai_batch_view(self, b: dict[str, Any]) -> dict[str, Any]:
        done = time.time() >= b["ready_at"]
        if done and b.get("output_file_id") is None:
            fid = "file-" + uuid.uuid4().hex[:16]
            lines = [
                json.dumps(
                    {
                        "id": "batch_req_" + uuid.uuid4().hex[:8],
                        "custom_id": r["custom_id"],
                        "response": {
                            "status_code": 200,
                            "request_id": "req",
                            "body": r["body"],
                        },
                        "error": None,
                    }
                )
                for r in b["results"]
            ]
            self.files[fid] = ("\n".join(lines) + "\n").encode()
            b["output_file_id"] = fid
        n = len(b["results"])
        return {
            "id": b["id"],
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": None,
            "input_file_id": b["input_file_id"],
            "completion_window": "24h",
            "status": "completed" if done else "in_progress",
            "output_file_id": b.get("output_file_id"),
            "error_file_id": None,
            "created_at": int(b["created"]),
            "in_progress_at": int(b["created"]),
            "completed_at": int(time.time()) if done else None,
            "request_counts": {"total": n, "completed": n if done else 0, "failed": 0},
            "metadata": None,
        }

    async def batches_create(self, request: web.Request) -> web.Response:
        if (bad := self._check_key(request, "openai")) is not None:
            return bad
        req = await request.json()
        content = self.files[req["input_file_id"]].decode()
        items = []
        for line in content.splitlines():
            if line.strip():
                rec = json.loads(line)
                items.append((rec["custom_id"], rec["body"]))
        bid = "batch_" + uuid.uuid4().hex[:16]
        self.stats["batches_created"] += 1
        self.batches[bid] = {
            "id": bid,
            "api": "openai",
            "input_file_id": req["input_file_id"],
            "created": time.time(),
            "ready_at": time.time() + self.config["batch_delay_s"],
            "results": await self._run_batch_items("openai", items),
        }
        return web.json_response(self._openai_batch_view(self.batches[bid]))

    async def batches_get(self, request: web.Request) -> web.Response:
        if (bad := self._check_key(request, "openai")) is not None:
            return bad
        b = self.batches.get(request.match_info["bid"])
        if b is None:
            return self._error("openai", 404, "invalid_request_error", "No such batch")
        return web.json_response(self._openai_batch_view(b))

    def _anthropic_batch_view(self, b: dict[str, Any]) -> dict[str, Any]:
        done = time.time() >= b["ready_at"]
        n = len(b["results"])
        return {
            "id": b["id"],
            "type": "message_batch",
            "processing_status": "ended" if done else "in_progress",
            "request_counts": {
                "processing": 0 if done else n,
                "succeeded": n if done else 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "ended_at": _iso(time.time()) if done else None,
            "created_at": _iso(b["created"]),
            "expires_at": _iso(b["created"] + 86400),
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.url}/v1/messages/batches/{b['id']}/results"
            if done
            else None,
        }

    async def messages_batches_create(self, request: web.Request) -> web.Response:
        if (bad := self._check_key(request, "anthropic")) is not None:
            return bad
        req = await request.json()
        items = [(r["custom_id"], r["params"]) for r in req["requests"]]
        bid = "msgbatch_" + uuid.uuid4().hex[:16]
        self.stats["batches_created"] += 1
        self.batches[bid] = {
            "id": bid,
            "api": "anthropic",
            "created": time.time(),
            "ready_at": time.time() + self.config["batch_delay_s"],
            "results": await self._run_batch_items("anthropic", items),
        }
        return web.json_response(self._anthropic_batch_view(self.batches[bid]))

    async def messages_batches_get(self, request: web.Request) -> web.Response:
        if (bad := self._check_key(request, "anthropic")) is not None:
            return bad
        b = self.batches.get(request.match_info["bid"])
        if b is None:
            return self._error("anthropic", 404, "not_found_error", "No such batch")
        return web.json_response(self._anthropic_batch_view(b))

    async def messages_batches_results(self, request: web.Request) -> web.Response:
        if (bad := self._check_key(request, "anthropic")) is not None:
            return bad
        b = self.batches[request.match_info["bid"]]
        lines = [
            json.dumps(
                {
                    "custom_id": r["custom_id"],
                    "result": {"type": "succeeded", "message": r["body"]},
                }
            )
            for r in b["results"]
        ]
        return web.Response(
            text="\n".join(lines) + "\n", content_type="application/binary"
        )

    # -- lifecycle -------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024**2)
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.router.add_post("/v1/messages", self.messages)
        app.router.add_post("/v1/files", self.files_create)
        app.router.add_get("/v1/files/{fid}/content", self.files_content)
        app.router.add_post("/v1/batches", self.batches_create)
        app.router.add_get("/v1/batches/{bid}", self.batches_get)
        app.router.add_post("/v1/messages/batches", self.messages_batches_create)
        app.router.add_get("/v1/messages/batches/{bid}", self.messages_batches_get)
        app.router.add_get(
            "/v1/messages/batches/{bid}/results", self.messages_batches_results
        )
        app.router.add_get("/_admin/stats", self.admin_stats)
        app.router.add_post("/_admin/config", self.admin_config)
        app.router.add_post("/_admin/reset", self.admin_reset)
        return app

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _start(self, port: int = 0) -> None:
        self._runner = web.AppRunner(
            self.app(), access_log=None, handler_cancellation=True
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def start(self) -> FakeAPIServer:
        """Serve in a daemon thread; returns self once the port is bound."""
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._start())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fake-api-server", daemon=True)
        self._thread.start()
        ready.wait(30)
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        fut = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)  # type: ignore[union-attr]
        fut.result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(30)
        self._loop = None


def _key_of(request: web.Request, api: str) -> str:
    """The API key a request carries: ``Authorization: Bearer`` (OpenAI; Anthropic's SDK
    too) or ``x-api-key`` (Anthropic)."""
    bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
    return (
        bearer if (api == "openai" or bearer) else request.headers.get("x-api-key", "")
    )


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def admin(url: str, path: str, payload: dict[str, Any] | None = None) -> Any:
    """Call an admin endpoint of a server at ``url`` (GET without payload, POST with)."""
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(
        url + path,
        data=data,
        method="POST" if data is not None else "GET",
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def max_in_window(
    arrivals: list[list[float]], window_s: float, tokens: bool = False
) -> float:
    """The most requests (or tokens) that arrived within any ``window_s`` seconds."""
    ts = [a[0] for a in arrivals]
    ws = [a[1] if tokens else 1 for a in arrivals]
    best = 0.0
    j = 0
    acc = 0.0
    for i in range(len(ts)):
        acc += ws[i]
        while ts[i] - ts[j] >= window_s:
            acc -= ws[j]
            j += 1
        best = max(best, acc)
    return best


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--config", default="{}", help="JSON config overrides")
    args = ap.parse_args()
    server = FakeAPIServer(**json.loads(args.config))

    async def main() -> None:
        await server._start(args.port)
        print(f"PORT {server.port}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
