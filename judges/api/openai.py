"""OpenAI chat-completions judges: ``backend = "openai"`` (and the base of
``"openai_compatible"``, :mod:`voirdire.judges.api.compatible`).

``openai`` talks to OpenAI (or a gateway given as ``base_url``), key from
``OPENAI_API_KEY`` unless ``api_key_env`` names another variable; prompt tokens are
counted with tiktoken where its encoding loads. ``openai_compatible`` talks to any server
that speaks the chat-completions protocol -- vLLM's and llama.cpp's servers, Ollama,
Gemini's (``https://generativelanguage.googleapis.com/v1beta/openai/``) and OpenRouter's
(``https://openrouter.ai/api/v1``) endpoints: ``base_url`` is required, ``api_key_env``
is optional (no key is sent without it), ``base_url`` is part of the judge's identity,
tokens are estimated conservatively (chars/3).
Wire format only; the rest is :mod:`voirdire.judges.api.base`'s.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import openai

from voirdire.judges.api.base import AS, APIJudge
from voirdire.judges.api.errors import status_failure
from voirdire.judges.api.settings import APISettings, Reply
from voirdire.judges.base import register, system_text

#: top log-probabilities asked per output token (OpenAI allows up to 20)
TOP_LOGPROBS = 20


def verdict_logprobs(
    content: list[dict[str, Any]], cue: str
) -> dict[str, float] | None:
    """The log-probabilities of the candidate verdict letters at the verdict position of a
    chat completion's ``logprobs.content`` (one dict per output token: ``token``,
    ``logprob``, ``top_logprobs`` [{``token``, ``logprob``}]).

    The verdict position is the first token that is a single capital letter (spaces
    stripped) and follows the benchmark's verdict ``cue`` in the text so far (``[[`` for
    MT-Bench, ``Choice: `` for DevBench; with no cue, the first such token). Returns
    letter -> log-probability over the letters among that token's top log-probabilities,
    or ``None`` when no verdict position is found.
    """
    text = ""
    want = cue.rstrip()
    for tok in content:
        t = tok.get("token") or ""
        if len(t.strip()) == 1 and t.strip().isupper() and text.rstrip().endswith(want):
            lp = {
                c["token"].strip(): c["logprob"]
                for c in tok.get("top_logprobs") or []
                if len(c["token"].strip()) == 1
            }
            lp.setdefault(t.strip(), tok.get("logprob", 0.0))
            return {k: v for k, v in lp.items() if k.isupper()}
        text += t
    return None


class ChatCompletionsJudge(APIJudge[AS]):
    """A judge behind a chat-completions API (one user message per query), generic over its
    settings: OpenAI's (:class:`OpenAIJudge`) and any compatible server's
    (:class:`~voirdire.judges.api.compatible.OpenAICompatibleJudge`)."""

    sdk = openai
    client_cls = openai.AsyncOpenAI
    provider: ClassVar[str | None] = "openai"
    default_key_env: ClassVar[str | None] = "OPENAI_API_KEY"
    uses_tiktoken = True
    filter_stops = frozenset({"content_filter"})
    offers_logprobs = True
    offers_n = True
    #: the request field capping output tokens (OpenAI's current name; o-series need it)
    max_tokens_field = "max_completion_tokens"

    @property
    def wants_logprobs(self) -> bool:
        """Whether replies carry token log-probabilities (``logprobs = true``)."""
        return bool(self.settings.logprobs)

    def logprob_cue(self) -> str:
        """The text the verdict letter follows in the reply (the benchmark's verdict cue)."""
        return self.context.verdict_cue or ""

    def request_body(
        self, prompt: str, system: str | None = None, option_mode: int = 3
    ) -> dict[str, Any]:
        """The chat-completions request body for a prompt (also one batch line's ``body``):
        a system message (the judge's ``system_prompt`` and the query's ``system``) and the
        prompt as the user message."""
        s, sp = self.settings, self.sampling
        sys_text = system_text(s.system_prompt, system)
        messages = [{"role": "system", "content": sys_text}] if sys_text else []
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {
            "model": s.model,
            "messages": messages,
            "temperature": sp.temperature,
            self.max_tokens_field: sp.max_tokens,
        }
        if sp.seed is not None:
            body["seed"] = sp.seed
        if sp.top_p is not None:
            body["top_p"] = sp.top_p
        if self.wants_logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = TOP_LOGPROBS
        return body

    def endpoint(self, client: Any = None) -> Any:
        return (client or self.client).chat.completions.create

    def parse(self, response: Any) -> Reply:
        return self.parse_samples(response)[0]

    def parse_samples(self, response: Any) -> list[Reply]:
        """One Reply per choice. Usage is reported per request: the prompt's tokens go to
        the first sample (one prompt for all), the completion tokens are shared out evenly
        (the remainder to the first), so their sum is the request's."""
        d = response if isinstance(response, dict) else response.model_dump()
        usage = d.get("usage") or {}
        choices = sorted(d["choices"], key=lambda c: c.get("index", 0))
        total_out = usage.get("completion_tokens")
        out = []
        for i, choice in enumerate(choices):
            text = (choice.get("message") or {}).get("content")
            if text is not None and not isinstance(text, str):
                raise TypeError(f"message content is {type(text).__name__}, not text")
            letter_lp = None
            if self.wants_logprobs:
                content = (choice.get("logprobs") or {}).get("content") or []
                letter_lp = verdict_logprobs(content, self.logprob_cue())
            share = (
                None
                if total_out is None
                else total_out // len(choices)
                + (total_out % len(choices) if i == 0 else 0)
            )
            out.append(
                Reply(
                    text=text,
                    input_tokens=usage.get("prompt_tokens") if i == 0 else 0,
                    output_tokens=share,
                    stop=choice.get("finish_reason"),
                    letter_logprobs=letter_lp,
                )
            )
        return out

    # -- OpenAI Batch API (files + /v1/batches) --------------------------------------------

    async def batch_submit(self, items: list[tuple[str, dict[str, Any]]]) -> str:
        lines = [
            json.dumps(
                {
                    "custom_id": cid,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": body,
                }
            )
            for cid, body in items
        ]
        f = await self.client.files.create(
            file=("voirdire-batch.jsonl", ("\n".join(lines) + "\n").encode()),
            purpose="batch",
        )
        b = await self.client.batches.create(
            input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        return b.id

    async def batch_poll(self, batch_id: str) -> str:
        b = await self.client.batches.retrieve(batch_id)
        if b.status in ("completed", "failed", "expired", "cancelled"):
            return b.status
        return "running"

    async def batch_results(self, batch_id: str) -> dict[str, Any]:
        b = await self.client.batches.retrieve(batch_id)
        out: dict[str, Any] = {}
        for fid in (b.error_file_id, b.output_file_id):
            if not fid:
                continue
            content = await self.client.files.content(fid)
            for line in content.text.splitlines():
                if not line.strip():
                    continue
                rec = json.loads(line)
                resp, err = rec.get("response") or {}, rec.get("error")
                if resp.get("status_code") == 200 and resp.get("body"):
                    out[rec["custom_id"]] = resp["body"]
                else:
                    msg = json.dumps(err or resp.get("body"))[:400]
                    out[rec["custom_id"]] = (
                        status_failure(resp.get("status_code")),
                        f"batch item failed (HTTP {resp.get('status_code')}): {msg}",
                    )
        return out


@register
class OpenAIJudge(ChatCompletionsJudge[APISettings]):
    """A judge behind OpenAI's chat-completions API (one user message per query)."""

    name = "openai"
    Settings = APISettings
