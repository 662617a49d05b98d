"""The constrained verdict modes of the vLLM judge: ``structured`` and ``logprobs``.

Both ask for optional free reasoning (stopped at the verdict cue), then the cue and one
option letter: ``structured`` constrains the letter with vLLM's structured outputs
(``StructuredOutputsParams(choice=letters)``); ``logprobs`` samples one token restricted
to the option letters and keeps the log-probabilities of every option letter at that
position (vLLM's default ``raw_logprobs``: before temperature and masking), normalised over
the options. See :mod:`voirdire.judges.vllm_judge` for the design.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from voirdire.benchmarks.scoring import load_score_templates
from voirdire.core import FailureClass, letters
from voirdire.exceptions import ContextTooLong
from voirdire.judges.base import Result, option_probabilities
from voirdire.judges.verdict_modes import VERDICT_TOKENS, option_texts, read_verdict
from voirdire.judges.vllm_judge.engine import RequestPlan
from voirdire.judges.vllm_judge.settings import VllmSettings

#: tokens for both constrained score lines after the first ("7" newline "Score of ...: 8")
SCORE_TOKENS = 24


class ConstrainedVerdicts:
    """Mixin of :class:`~voirdire.judges.vllm_judge.judge.VllmJudge`: the structured and
    log-probability verdicts. Needs from the host: ``settings``, ``sampling``,
    ``max_model_len``, ``_encode(text) -> ids`` and ``_sample(ids, n, requests, **params)``."""

    settings: Any
    sampling: Any
    max_model_len: int

    def _encode(self, text: str) -> list[int]:  # provided by the host
        raise NotImplementedError

    async def _sample(
        self, ids: list[int], n: int, requests: int, **params: Any
    ) -> list[Any]:  # provided by the host
        raise NotImplementedError

    def letter_ids(self, cue: str, option_mode: int) -> list[int]:
        """Token id of each option as the judge writes it after the cue (``A``, ``B``, ...,
        or its ``verdict_letters``), in position order.

        Raises:
            ValueError: a letter is not a single token of the tokenizer.
        """
        cache: dict[tuple[str, int], list[int]] = self.__dict__.setdefault(
            "_letter_ids", {}
        )
        key = (cue, option_mode)
        if key not in cache:
            base = self._encode(cue)
            ids = []
            for letter in option_texts(self.settings.verdict_letters, option_mode):
                joined = self._encode(cue + letter)
                if joined[: len(base)] == base and len(joined) == len(base) + 1:
                    ids.append(joined[-1])
                    continue
                alone = self._encode(letter)
                if len(alone) != 1:
                    raise ValueError(
                        f"option letter {letter!r} is not a single token of this tokenizer"
                    )
                ids.append(alone[0])
            cache[key] = ids
        return cache[key]

    async def _constrained(
        self,
        plan: RequestPlan,
        ids: list[int],
        cue: str,
        closing: str,
        reasoning_cap: int,
    ) -> list[Result]:
        """Answer one prompt's repetitions with a constrained verdict (module docstring).

        Raises:
            ContextTooLong: reasoning plus the verdict would overflow the context window.
        """
        from vllm.sampling_params import StructuredOutputsParams

        s: VllmSettings = self.settings
        k = len(plan.queries)
        option_mode = plan.queries[0].option_mode
        opts = letters(option_mode)
        written = option_texts(s.verdict_letters, option_mode)
        # 1. reasoning (k samples in one request), stopped at the verdict cue
        if reasoning_cap > 0:
            comps = await self._sample(
                ids, plan.n, plan.requests, max_tokens=reasoning_cap, stop=[cue]
            )
            texts = [c.text for c in comps]
            used = [len(c.token_ids) for c in comps]
            sep = ["" if (t.endswith(("\n", " ")) or not t) else "\n" for t in texts]
            verdict_prompts = [
                ids + self._encode(t + sp + cue) for t, sp in zip(texts, sep)
            ]
            texts = [t + sp for t, sp in zip(texts, sep)]
            shape = [
                (p, 1, 1) for p in verdict_prompts
            ]  # each reasoning has its own prefix
        else:
            texts, used = [""] * k, [0] * k
            shape = [(ids + self._encode(cue), plan.n, plan.requests)]
        # 2. the verdict, constrained to the option letters
        if s.verdict_mode == "structured":
            params: dict[str, Any] = dict(
                max_tokens=VERDICT_TOKENS,
                structured_outputs=StructuredOutputsParams(choice=list(written)),
            )
        else:
            lid = self.letter_ids(cue, option_mode)
            params = dict(max_tokens=1, allowed_token_ids=lid, logprob_token_ids=lid)
        for prompt, _, _ in shape:
            if len(prompt) + params["max_tokens"] > self.max_model_len:
                raise ContextTooLong(
                    f"reasoning plus verdict prompt is {len(prompt)} tokens; with {params['max_tokens']} verdict "
                    f"tokens that exceeds the context window of {self.max_model_len} tokens"
                )
        got = await asyncio.gather(
            *(self._sample(p, n, r, **params) for p, n, r in shape)
        )
        verdicts = [v for g in got for v in g]
        out = []
        for q, text, n_used, v in zip(plan.queries, texts, used, verdicts, strict=True):
            probs = None
            if s.verdict_mode == "logprobs":
                lp = v.logprobs[0] if v.logprobs else {}
                raw = {
                    L: (lp[t].logprob if t in lp else -math.inf)
                    for L, t in zip(opts, self.letter_ids(cue, option_mode))
                }
                probs = option_probabilities(raw)
            choice, letter, probs = read_verdict(
                s.verdict_mode, v.text, option_mode, s.verdict_letters, probs
            )
            out.append(
                Result(
                    unit_id=q.unit_id,
                    output=f"{text}{cue}{letter}{closing}",
                    choice=choice,
                    option_probs=probs,
                    verdict_mode=s.verdict_mode,
                    input_tokens=len(ids),
                    output_tokens=n_used + len(v.token_ids),
                )
            )
        return out

    async def _scored(
        self, plan: RequestPlan, ids: list[int], reasoning_cap: int
    ) -> list[Result]:
        """Score mode with ``verdict_mode = "structured"``: free reasoning (up to
        ``reasoning_cap`` tokens) stopped at the first score line, then both score lines
        constrained by a regular expression (scores 1-10), so every sample parses. The
        ``logprobs`` mode has no score analogue: recorded as a failure with the reason.

        Raises:
            ContextTooLong: the prompt plus the score lines would overflow the context window.
        """
        from vllm.sampling_params import StructuredOutputsParams

        s: VllmSettings = self.settings
        if s.verdict_mode != "structured":
            msg = "verdict_mode 'logprobs' is not offered in score mode; use 'structured' or 'free'"
            return [
                Result.failed(
                    q.unit_id, FailureClass.ERROR, msg, verdict_mode=s.verdict_mode
                )
                for q in plan.queries
            ]
        t = load_score_templates()
        first, second = (
            t["score_line"].format(label=lab)
            for lab in t["labels"][plan.queries[0].benchmark]
        )
        k = len(plan.queries)
        texts, used = [""] * k, [0] * k
        if reasoning_cap > 0:
            comps = await self._sample(
                ids,
                plan.n,
                plan.requests,
                max_tokens=reasoning_cap,
                stop=[first.strip()],
            )
            texts = [
                c.text if (c.text.endswith("\n") or not c.text) else c.text + "\n"
                for c in comps
            ]
            used = [len(c.token_ids) for c in comps]
            shape = [(ids + self._encode(tx + first), 1, 1) for tx in texts]
        else:
            shape = [(ids + self._encode(first), plan.n, plan.requests)]
        params = dict(
            max_tokens=SCORE_TOKENS,
            structured_outputs=StructuredOutputsParams(
                regex="(10|[1-9])\n" + second + "(10|[1-9])"
            ),
        )
        for prompt, _, _ in shape:
            if len(prompt) + SCORE_TOKENS > self.max_model_len:
                raise ContextTooLong(
                    f"score prompt is {len(prompt)} tokens; with {SCORE_TOKENS} score tokens that exceeds the context window of {self.max_model_len} tokens"
                )
        got = await asyncio.gather(
            *(self._sample(p, n, r, **params) for p, n, r in shape)
        )
        tails = [v for g in got for v in g]
        return [
            Result(
                unit_id=q.unit_id,
                output=f"{tx}{first}{v.text}",
                verdict_mode="structured",
                input_tokens=len(ids),
                output_tokens=u + len(v.token_ids),
            )
            for q, tx, u, v in zip(plan.queries, texts, used, tails, strict=True)
        ]


__all__ = ["ConstrainedVerdicts", "ContextTooLong"]
