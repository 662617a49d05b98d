"""How a perturbation changes one prompt: the :class:`PromptEdit` a benchmark applies, and
the prompt that asks a model to rewrite an answer.

A perturbation changes the judge's prompt ``P = (I, Q, R)`` (instruction, question,
responses) in one of three ways (``docs/biases.md``), its kind's family
(:mod:`voirdire.benchmarks.biases`): an **instruction** kind adds one sentence to the
instruction, before the first answer block; a **names** kind adds one and shows each slot's
label with the model's real name (the verdict letters are unchanged); an **answer** kind
replaces the target's answer (the judged, i.e. last, turn) by a rewritten one.

The control prompt is never touched: a benchmark builds it exactly as before when no
:class:`PromptEdit` is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from voirdire.benchmarks.biases import get_kind

_RESPONSE_START = "[The Start of Response]\n"
_RESPONSE_END = "\n[The End of Response]"


@dataclass(frozen=True)
class PromptEdit:
    """How a perturbation changes one prompt.

    Attributes:
        instruction: a sentence added to the instruction (before the first answer block).
        names: per slot, the real model name shown with its label (the names family).
        answers: model -> its answer per turn, replacing the table's (answer kinds).
    """

    instruction: str | None = None
    names: tuple[str, ...] | None = None
    answers: Mapping[str, tuple[str, ...]] | None = None


def rewrite_prompt(kind: str, param: str | None, question: str, answer: str) -> str:
    """The prompt that asks a model to rewrite ``answer`` for an answer kind: the kind's
    rewrite instruction (:meth:`~voirdire.benchmarks.biases.BiasKind.rewrite_instruction`),
    then the question, then the answer between ``[The Start of Response]`` and
    ``[The End of Response]`` (:func:`original_of` reads it back).

    Raises:
        ConfigError: an unknown kind, or one that rewrites no answer.
    """
    head = get_kind(kind).rewrite_instruction(param)
    return (
        f"{head}\n\n[Question]\n{question}\n\n{_RESPONSE_START}{answer}{_RESPONSE_END}"
    )


def original_of(prompt: str) -> str:
    """The answer inside a prompt made by :func:`rewrite_prompt` (offline rewriters read
    their input from it, so the prompt stays the rewrite's one content address).

    Raises:
        ValueError: the prompt has no response block.
    """
    start = prompt.find(_RESPONSE_START)
    end = prompt.rfind(_RESPONSE_END)
    if start < 0 or end < start:
        raise ValueError("not a rewrite prompt (no response block)")
    return prompt[start + len(_RESPONSE_START) : end]


def insert_instruction(prompt: str, anchor: str, text: str) -> str:
    """``prompt`` with ``text`` inserted before the first ``anchor``, separated from what
    follows by a blank line (the anchor's own when it opens with a line break).

    Raises:
        ValueError: the anchor is not in the prompt.
    """
    i = prompt.find(anchor)
    if i < 0:
        raise ValueError(f"instruction anchor {anchor!r} not found in the prompt")
    if anchor.startswith(
        "\n"
    ):  # the anchor opens with the blank line: the text goes before it
        return prompt[:i] + "\n\n" + text + prompt[i:]
    return prompt[:i] + text + "\n\n" + prompt[i:]
