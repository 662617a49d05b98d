"""The prompt cache of the unit generator: each distinct prompt built once, within bounds.

A job's judges share one :class:`PromptCache`; a perturbed prompt whose change is an
instruction sentence is made from the control prompt just built (units come control
first, then the variants of the same order).
"""

from __future__ import annotations

from collections import OrderedDict

from voirdire.benchmarks.base import Benchmark
from voirdire.benchmarks.prompt_edits import PromptEdit


class PromptCache:
    """Builds prompts once per distinct query and remembers them, within bounds.

    Two LRU caches shared by a job's judges: prompt texts, bounded by ``max_chars``
    characters in all (list-wise prompts with 8 answers run to tens of kB, so a count
    bound alone would not bound memory), and ``(prompt_chars, output_chars)`` per query,
    bounded by ``maxsize`` entries. A benchmark with the optional hook
    ``query_lengths(question_id, shown, option_mode, mode) -> (prompt_chars, output_chars)``
    (the log formats: :meth:`~voirdire.benchmarks.logs.base.LogBenchmark.query_lengths`)
    counts a control prompt that no judge sends (:meth:`lengths`) without building it, and
    such a count is not kept (counting costs less than the bookkeeping: most queries of a
    log audit are counted once).
    """

    def __init__(
        self,
        bench: Benchmark,
        maxsize: int = 65_536,
        max_chars: int = 16_000_000,
        score_style: str = "evidence_first",
    ) -> None:
        self.bench = bench
        self.score_style = score_style
        self.maxsize = maxsize
        self.max_chars = max_chars
        self._texts: OrderedDict[tuple, str] = OrderedDict()
        self._chars = 0
        self._lens: OrderedDict[tuple, tuple[int, int]] = OrderedDict()
        self._last: tuple[tuple, str] | None = None  # the last control prompt built
        # the benchmark's count of a control prompt without building it, where it has one
        self._counts = getattr(bench, "query_lengths", None)

    def _build(
        self, key: tuple, keep_text: bool = True, edit: PromptEdit | None = None
    ) -> str:
        question_id, shown, option_mode, mode = key[:4]
        if edit is not None and not edit.answers:
            # an instruction/name edit of the control prompt, which was just built (units
            # come control first, then the variants of the same order): edit that text
            base_key = key[:4]
            if self._last is not None and self._last[0] == base_key:
                base = self._last[1]
            else:
                base = self._texts.get(base_key) or self._build(
                    base_key, keep_text=False
                )
            prompt = self.bench.apply_edit(base, edit)
        else:
            if mode == "score":
                prompt = self.bench.apply_edit(
                    self.bench.build_score_prompt(question_id, shown, self.score_style),
                    edit,
                )
            else:
                prompt = self.bench.build_prompt(
                    question_id, shown, option_mode, mode=mode, edit=edit
                )
            if edit is None:
                self._last = (key, prompt)
        if keep_text and len(prompt) <= self.max_chars:
            self._texts[key] = prompt
            self._chars += len(prompt)
            while self._chars > self.max_chars:
                _, old = self._texts.popitem(last=False)
                self._chars -= len(old)
        if edit is None or edit.answers:
            out_chars = self.bench.output_chars(
                question_id, shown, edit.answers if edit else None
            )
        else:  # the answers are the control's
            got = self._lens.get(key[:4])
            out_chars = (
                got[1]
                if got is not None
                else self.bench.output_chars(question_id, shown)
            )
        self._lens[key] = (len(prompt), out_chars)
        if len(self._lens) > self.maxsize:
            self._lens.popitem(last=False)
        return prompt

    def get(
        self,
        question_id: str,
        shown: tuple[str, ...],
        option_mode: int,
        mode: str,
        variant: str | None = None,
        edit: PromptEdit | None = None,
    ) -> tuple[str, int]:
        """``(prompt, output_chars)`` for a query (``variant``: the perturbation's label,
        with its ``edit``; ``None`` for the control)."""
        key = (
            (question_id, shown, option_mode, mode)
            if variant is None
            else (question_id, shown, option_mode, mode, variant)
        )
        prompt = self._texts.get(key)
        if prompt is None:
            prompt = self._build(key, edit=edit)
        else:
            self._texts.move_to_end(key)
        return prompt, self.lengths(
            question_id, shown, option_mode, mode, variant, edit
        )[1]

    def lengths(
        self,
        question_id: str,
        shown: tuple[str, ...],
        option_mode: int,
        mode: str,
        variant: str | None = None,
        edit: PromptEdit | None = None,
    ) -> tuple[int, int]:
        """``(prompt_chars, output_chars)`` for a query (builds the prompt on a miss)."""
        key = (
            (question_id, shown, option_mode, mode)
            if variant is None
            else (question_id, shown, option_mode, mode, variant)
        )
        got = self._lens.get(key)
        if (
            got is None
            and edit is None
            and self._counts is not None
            and mode != "score"
        ):
            # counted afresh each time (cheaper than keeping it: most are asked once)
            return self._counts(question_id, shown, option_mode, mode)
        elif got is None:
            self._build(
                key, keep_text=False, edit=edit
            )  # a judge that needs the text builds it again
            got = self._lens[key]
        else:
            self._lens.move_to_end(key)
        return got
