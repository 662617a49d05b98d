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
        s: VllmSettings = self.settings
        option_mode = plan.queries[0].option_mode
        # 1. reasoning (k samples in one request), stopped at the verdict cue
        texts, used, shape = await self._reasoning(plan, ids, cue, reasoning_cap)
        # 2. the verdict, constrained to the option letters
        params = self._verdict_params(cue, option_mode)
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
            choice, letter, probs = self._read(v, cue, option_mode)
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

    async def _reasoning(
        self, plan: RequestPlan, ids: list[int], cue: str, reasoning_cap: int
    ) -> tuple[list[str], list[int], list[tuple[list[int], int, int]]]:
        """The free reasoning before a constrained verdict: ``k`` samples of the prompt
        ``ids`` in one request, each stopped at the verdict ``cue`` (none when
        ``reasoning_cap`` is 0).

        Returns:
            ``(texts, used, shape)``: each sample's reasoning text (with a line break
            added where it does not end in one or a space), its token count, and the
            verdict requests as ``(prompt token ids, samples, requests)``: one per
            reasoning (each has its own prefix), or one for all ``k`` without reasoning.
        """
        k = len(plan.queries)
        if reasoning_cap <= 0:
            return [""] * k, [0] * k, [(ids + self._encode(cue), plan.n, plan.requests)]
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
        return texts, used, [(p, 1, 1) for p in verdict_prompts]

    def _verdict_params(self, cue: str, option_mode: int) -> dict[str, Any]:
        """vLLM sampling parameters of the verdict after ``cue``: ``structured``: up to
        ``VERDICT_TOKENS`` tokens restricted to the written option letters; ``logprobs``:
        one token among the option letters' tokens, with their log-probabilities."""
        from vllm.sampling_params import StructuredOutputsParams

        s: VllmSettings = self.settings
        if s.verdict_mode == "structured":
            written = option_texts(s.verdict_letters, option_mode)
            return dict(
                max_tokens=VERDICT_TOKENS,
                structured_outputs=StructuredOutputsParams(choice=list(written)),
            )
        lid = self.letter_ids(cue, option_mode)
        return dict(max_tokens=1, allowed_token_ids=lid, logprob_token_ids=lid)

    def _read(
        self, v: Any, cue: str, option_mode: int
    ) -> tuple[Any, str, dict[str, float] | None]:
        """Read one constrained verdict completion ``v``: ``(choice, letter, option
        probabilities)`` (:func:`~voirdire.judges.verdict_modes.read_verdict`); in
        ``logprobs`` mode the probabilities are the option letters' log-probabilities at the
        verdict token (``-inf`` for a letter not among them), normalised over the options."""
        s: VllmSettings = self.settings
        probs = None
        if s.verdict_mode == "logprobs":
            lp = v.logprobs[0] if v.logprobs else {}
            raw = {
                L: (lp[t].logprob if t in lp else -math.inf)
                for L, t in zip(letters(option_mode), self.letter_ids(cue, option_mode))
            }
            probs = option_probabilities(raw)
        return read_verdict(
            s.verdict_mode, v.text, option_mode, s.verdict_letters, probs
        )

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


__all__ = ["ConstrainedVerdicts"]
