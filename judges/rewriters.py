"""Offline rewriters for answer-side perturbations: ``template`` and ``simulated``.

A rewriter is a judge backend used as a generator: its queries carry a rewrite prompt
(:func:`voirdire.benchmarks.prompt_edits.rewrite_prompt`, the rewrite's content address) and
``perturbation_kind`` and ``perturbation_param`` of the rewrite; the output is the rewritten answer.
Model backends (OpenAI, Anthropic, compatible, vLLM) answer the prompt as it is. The two
backends here need no model; they read the original answer back from the prompt:

- ``template`` (job files: ``backend = "template"``): ``authority`` inserts one of a small
  fixed set of fake citations (URL, famous person's quote, book reference; chosen by a hash
  of the answer) after the answer's first paragraph; ``verbosity`` is a *template
  lengthening* -- the answer followed by labelled restatements of its paragraphs up to the
  length ratio -- **not** CALM's model rewrite (no new wording, so a judge may see through
  it); other biases are not offered (:data:`TemplateRewriter.rewrite_biases`; the job is
  refused before anything runs).
- ``simulated`` (``backend = "simulated"``): every answer bias, deterministically (a marker
  line naming the bias; verbosity padded to the ratio), for tests.
"""

from __future__ import annotations

import asyncio
from typing import Any

from voirdire.benchmarks.prompt_edits import original_of
from voirdire.core import stable_int
from voirdire.judges.base import JudgeBackend, JudgeSettings, Query, Result, register
from voirdire.judges.capabilities import RewriterOnly

#: fake citations of the template rewriter (ours; the sources do not exist)
CITATIONS = {
    "url": (
        "(Source: https://www.encyclopedia-of-science.org/articles/reference-overview-2021)",
        "(See https://journals.academic-review.net/2020/vol-14/comprehensive-analysis)",
        "(Reference: https://www.knowledge-institute.edu/reports/2019/expert-consensus)",
    ),
    "quote": (
        'As Albert Einstein is said to have put it, "A well-reasoned answer is the shortest path to understanding."',
        'In the words of Marie Curie, "Nothing in a careful answer is to be feared, only to be understood."',
        'As Richard Feynman remarked, "The best explanation is the one you can check step by step."',
    ),
    "book": (
        "(Reference: Harrington, J. (2018). Principles of Sound Reasoning, 3rd ed. Cambridge: Meridian Press, p. 112.)",
        "(See Alvarez, M. & Chen, L. (2020). The Practitioner's Handbook. New York: Northfield Academic, ch. 4.)",
        "(Reference: Okafor, D. (2016). Foundations and Methods, 2nd ed. London: Kestrel University Press, p. 57.)",
    ),
}

_RESTATE = "[Restated for completeness] "


def add_citation(answer: str, style: str) -> str:
    """``answer`` with a fake citation of ``style`` (url, quote, book) after its first
    paragraph (the same answer always gets the same citation)."""
    options = CITATIONS[style]
    cite = options[stable_int("citation", style, answer) % len(options)]
    head, sep, tail = answer.partition("\n\n")
    return f"{head} {cite}{sep}{tail}" if sep else f"{answer} {cite}"


def lengthen(answer: str, ratio: float) -> str:
    """Template lengthening (not a model rewrite): ``answer`` followed by restatements of
    its paragraphs, each marked ``[Restated for completeness]``, until it is at least
    ``ratio`` times as long (an empty answer stays empty)."""
    if not answer.strip() or ratio <= 1.0:
        return answer
    paras = [p for p in answer.split("\n\n") if p.strip()] or [answer]
    out = [answer]
    size, i = len(answer), 0
    while size < ratio * len(answer):
        extra = _RESTATE + paras[i % len(paras)]
        out.append(extra)
        size += len(extra) + 2
        i += 1
    return "\n\n".join(out)


class OfflineRewriterSettings(JudgeSettings):
    """``latency_s``: seconds of delay per batch (tests of interrupted rewrite stages; not
    part of the rewriter's identity)."""

    latency_s: float = 0.0


class _OfflineRewriter(RewriterOnly, JudgeBackend[OfflineRewriterSettings]):
    Settings = OfflineRewriterSettings
    identity_exclude = ("latency_s",)

    @classmethod
    def worker_options(cls, settings: OfflineRewriterSettings) -> dict[str, Any]:
        return {"num_cpus": 0}

    def rewrite(self, bias: str, param: str | None, answer: str) -> str:
        raise NotImplementedError

    async def judge(self, queries: list[Query]) -> list[Result]:
        if self.settings.latency_s:
            await asyncio.sleep(self.settings.latency_s)
        out = []
        for q in queries:
            bias, param = q.perturbation_kind or "", q.perturbation_param
            if self.rewrite_biases is not None and bias not in self.rewrite_biases:
                out.append(
                    Result.failed(
                        q.unit_id,
                        "error",
                        f"the {self.name} rewriter cannot do {bias!r}",
                    )
                )
                continue
            out.append(
                Result(
                    unit_id=q.unit_id,
                    output=self.rewrite(bias, param, original_of(q.prompt or "")),
                    latency_s=0.0,
                )
            )
        return out


@register
class TemplateRewriter(_OfflineRewriter):
    """The offline ``template`` rewriter; see the module docstring."""

    name = "template_rewriter"
    aliases = ("template",)
    rewrite_biases = ("authority", "verbosity")

    def rewrite(self, bias: str, param: str | None, answer: str) -> str:
        if bias == "authority":
            return add_citation(answer, param or "url")
        return lengthen(answer, float(param or 2.0))


@register
class SimulatedRewriter(_OfflineRewriter):
    """The ``simulated`` rewriter for tests; see the module docstring."""

    name = "simulated_rewriter"

    def rewrite(self, bias: str, param: str | None, answer: str) -> str:
        if bias == "verbosity":
            return lengthen(answer, float(param or 2.0))
        return f"{answer}\n\n[simulated {bias} rewrite{': ' + param if param else ''}]"
