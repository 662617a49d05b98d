"""Anthropic messages judges: ``backend = "anthropic"``.

Key from ``ANTHROPIC_API_KEY`` unless ``api_key_env`` names another variable; ``base_url``
for gateways. The messages API has no sampling seed (``seed`` is ignored) and requires
``max_tokens``. A reply stopped with ``stop_reason = "refusal"`` is recorded as content
filtered. Prompt tokens are estimated conservatively (chars/3): Anthropic's tokenizer is
not public.
Wire format only; the rest is :mod:`voirdire.judges.api.base`'s.
"""

from __future__ import annotations

from typing import Any

import anthropic

from voirdire.core import FailureClass
from voirdire.judges.api.base import APIJudge
from voirdire.judges.api.settings import APISettings, Reply
from voirdire.judges.base import register, system_text


@register
class AnthropicJudge(APIJudge[APISettings]):
    """A judge behind Anthropic's messages API (one user message per query)."""

    name = "anthropic"
    Settings = APISettings
    sdk = anthropic
    client_cls = anthropic.AsyncAnthropic
    provider = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"
    filter_stops = frozenset({"refusal"})

    def request_body(
        self, prompt: str, system: str | None = None, option_mode: int = 3
    ) -> dict[str, Any]:
        """The messages request body for a prompt (also one batch request's ``params``):
        ``system`` = the judge's ``system_prompt`` and the query's ``system``."""
        s, sp = self.settings, self.sampling
        body: dict[str, Any] = {
            "model": s.model,
            "max_tokens": sp.max_tokens,
            "temperature": sp.temperature,
            "messages": [{"role": "user", "content": prompt}],
        }
        sys_text = system_text(s.system_prompt, system)
        if sys_text:
            body["system"] = sys_text
        if sp.top_p is not None:
            body["top_p"] = sp.top_p
        return body

    def endpoint(self, client: Any = None) -> Any:
        return (client or self.client).messages.create

    def parse(self, response: Any) -> Reply:
        d = response if isinstance(response, dict) else response.model_dump()
        blocks = d["content"]
        texts = [b["text"] for b in blocks if b.get("type") == "text"]
        if any(not isinstance(t, str) for t in texts):
            raise TypeError("a text block carries no text")
        usage = d.get("usage") or {}
        return Reply(
            text="".join(texts) if texts else None,
            input_tokens=usage.get("input_tokens"),
            output_tokens=usage.get("output_tokens"),
            stop=d.get("stop_reason"),
        )

    # -- Message Batches API ---------------------------------------------------------------

    async def batch_submit(self, items: list[tuple[str, dict[str, Any]]]) -> str:
        b = await self.client.messages.batches.create(
            requests=[{"custom_id": cid, "params": body} for cid, body in items]
        )
        return b.id

    async def batch_poll(self, batch_id: str) -> str:
        b = await self.client.messages.batches.retrieve(batch_id)
        return "ended" if b.processing_status == "ended" else "running"

    async def batch_results(self, batch_id: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        async for item in await self.client.messages.batches.results(batch_id):
            r = item.result
            if r.type == "succeeded":
                out[item.custom_id] = r.message.model_dump()
            elif r.type == "errored":
                err = (
                    r.error.model_dump() if hasattr(r.error, "model_dump") else r.error
                )
                out[item.custom_id] = (
                    FailureClass.SERVER_ERROR
                    if "api_error" in str(err) or "overloaded" in str(err)
                    else FailureClass.REFUSED,
                    f"batch item errored: {str(err)[:400]}",
                )
            else:  # expired / canceled
                out[item.custom_id] = (
                    FailureClass.TIMEOUT if r.type == "expired" else FailureClass.ERROR,
                    f"batch item {r.type}",
                )
        return out
