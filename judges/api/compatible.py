"""OpenAI-compatible servers: ``backend = "openai_compatible"``, with vLLM-style verdict modes.

Any server that speaks the chat-completions protocol (vLLM's and llama.cpp's servers,
Ollama, Gemini's and OpenRouter's compatible endpoints): ``base_url`` is required and part of
the judge's identity (the server decides what model answers), ``api_key_env`` optional,
tokens estimated conservatively (chars/3).

``verdict_mode`` mirrors the in-process vLLM judge's
(:mod:`voirdire.judges.vllm_judge`) on a vLLM server
(``python -m vllm.entrypoints.openai.api_server``):

- ``free`` (default): the reply as written; the benchmark's pattern extracts the verdict.
- ``structured``: the assistant turn is opened with the benchmark's verdict cue (``[[``,
  ``Choice: ``; vLLM's ``continue_final_message``) and the reply is constrained to one
  option letter by the server's structured outputs (``structured_outputs = {"choice":
  [letters]}``, sent in ``extra_body``): it cannot fail to parse.
- ``logprobs``: the same cue and constraint, one token, with ``logprobs``/``top_logprobs``;
  the option probabilities are the letters' among the top log-probabilities (vLLM returns
  them before the constraint's masking, as the in-process judge's ``logprob_token_ids``),
  normalised over the options; a letter outside the top 20 counts as probability 0.

With ``temperature = 0`` the served judge's constrained verdicts are the in-process judge's
with ``reasoning_tokens = 0`` on the same model and prompts (the same chat template, the
same token ids; ``tests/test_served_vllm.py`` checks it). The constrained modes need a
server that knows ``continue_final_message`` and ``structured_outputs`` (vLLM >= 0.11).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from voirdire.core import ConfigError, letters
from voirdire.judges.api.openai import (
    ChatCompletionsJudge,
    OpenAIJudge,
)
from voirdire.judges.api.settings import APISettings, Reply
from voirdire.judges.base import JudgeContext, Query, Result, register
from voirdire.judges.verdict_modes import (
    VERDICT_TOKENS,
    VerdictLetters,
    VerdictMode,
    option_texts,
    read_verdict,
)


class CompatibleSettings(APISettings):
    """:class:`~voirdire.judges.api.settings.APISettings` plus ``verdict_mode`` (``free``,
    ``structured``, ``logprobs``: see the module docstring), ``verdict_tokens`` (the
    cap on a constrained verdict's tokens; a letter is one) and ``verdict_letters`` (what
    the judge writes for each position, e.g. ``"ab"`` for a prompt's ``Output (a)``; default
    the position letters), as the in-process vLLM judge's (:mod:`voirdire.judges.verdict_modes`)."""

    verdict_mode: VerdictMode = "free"
    verdict_tokens: int = Field(default=VERDICT_TOKENS, ge=1, le=16)
    verdict_letters: VerdictLetters = None


@register
class OpenAICompatibleJudge(ChatCompletionsJudge[CompatibleSettings]):
    """A judge behind any OpenAI-compatible chat-completions server (``base_url`` required)."""

    name = "openai_compatible"
    Settings = CompatibleSettings
    provider = None  # any provider whose model name matches (genai-prices), else the fallback file
    default_key_env = None
    uses_tiktoken = False
    max_tokens_field = (
        "max_tokens"  # what vLLM, llama.cpp, Ollama and the gateways all accept
    )
    # the server decides what model answers: its address is part of the identity
    identity_exclude = tuple(k for k in OpenAIJudge.identity_exclude if k != "base_url")
    identity_if_set = (
        *OpenAIJudge.identity_if_set,
        "verdict_mode",
        "verdict_tokens",
        "verdict_letters",
    )

    @classmethod
    def preflight(cls, settings: CompatibleSettings, context: JudgeContext) -> None:
        """Raises :class:`ConfigError`: no ``base_url``; a constrained verdict mode with
        ``logprobs = true`` or batch mode."""
        if not settings.base_url:
            raise ConfigError(
                f"judge {context.judge!r} (openai_compatible) needs base_url, e.g. "
                f'"http://localhost:8000/v1"'
            )
        if settings.verdict_mode != "free" and settings.batch:
            raise ConfigError(
                f"judge {context.judge!r}: verdict_mode {settings.verdict_mode!r} is not offered in batch mode"
            )
        super().preflight(settings, context)

    # -- the wire format -------------------------------------------------------------------

    @property
    def wants_logprobs(self) -> bool:
        return bool(self.settings.logprobs or self.settings.verdict_mode == "logprobs")

    def cue(self) -> tuple[str, str]:
        """``(cue, closing)`` around the verdict letter: the benchmark's, else ``("", "")``."""
        return self.context.verdict_cue or "", self.context.verdict_closing or ""

    def request_body(
        self, prompt: str, system: str | None = None, option_mode: int = 3
    ) -> dict[str, Any]:
        """The chat-completions body; in a constrained mode the assistant turn opened with
        the verdict cue and the reply constrained to the option letters."""
        body = super().request_body(prompt, system, option_mode)
        mode = self.settings.verdict_mode
        if mode == "free":
            return body
        cue = self.cue()[0]
        if cue:
            body["messages"].append({"role": "assistant", "content": cue})
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        body["structured_outputs"] = {
            "choice": list(option_texts(self.settings.verdict_letters, option_mode))
        }
        body[self.max_tokens_field] = (
            1 if mode == "logprobs" else self.settings.verdict_tokens
        )
        if mode == "logprobs":
            body["logprobs"] = True
            body["top_logprobs"] = 20
        return body

    def logprob_cue(self) -> str:
        """The cue the verdict token follows in the reply's text: none when the assistant
        turn was opened with it (constrained modes)."""
        return (
            ""
            if self.settings.verdict_mode != "free"
            else (self.context.verdict_cue or "")
        )

    def parse_samples(self, response: Any) -> list[Reply]:
        """As the OpenAI judge's; in the logprobs mode the verdict is the reply's first
        token (the cue was prefilled): ``letter_logprobs`` maps each position letter to the
        log-probability of what the judge writes for it (``verdict_letters``) among that
        token's top log-probabilities."""
        replies = super().parse_samples(response)
        if self.settings.verdict_mode != "logprobs":
            return replies
        d = response if isinstance(response, dict) else response.model_dump()
        written = option_texts(
            self.settings.verdict_letters,
            min(8, len(self.settings.verdict_letters or "ABC")),
        )
        choices = sorted(d["choices"], key=lambda c: c.get("index", 0))
        for reply, choice in zip(replies, choices, strict=True):
            content = (choice.get("logprobs") or {}).get("content") or []
            if not content:
                reply.letter_logprobs = None
                continue
            top = {
                c["token"].strip(): c["logprob"]
                for c in content[0].get("top_logprobs") or []
            }
            top.setdefault(
                (content[0].get("token") or "").strip(), content[0].get("logprob", 0.0)
            )
            reply.letter_logprobs = {
                letters(8)[i]: top[w] for i, w in enumerate(written) if w in top
            }
        return replies

    def decide(self, q: Query, r: Result) -> Result:
        """A constrained mode's result: the output in the benchmark's format (cue, letter,
        closing), ``choice`` the letter (structured) or the most probable option
        (logprobs), ``verdict_mode`` set. Free mode and failures: unchanged."""
        mode = self.settings.verdict_mode
        if mode == "free" or r.failure is not None or r.output is None:
            return r
        cue, closing = self.cue()
        choice, text, r.option_probs = read_verdict(
            mode, r.output, q.option_mode, self.settings.verdict_letters, r.option_probs
        )
        r.choice = choice
        r.output = f"{cue}{text}{closing}"
        r.verdict_mode = mode
        return r

    def finish(
        self, q: Query, reply: Reply, latency: float, batch: bool = False
    ) -> Result:
        return self.decide(q, super().finish(q, reply, latency, batch))

    def from_cache(self, q: Query) -> Result | None:
        hit = super().from_cache(q)
        return None if hit is None else self.decide(q, hit)


__all__ = ["CompatibleSettings", "OpenAICompatibleJudge"]
