"""How a perturbation changes one prompt: the :class:`PromptEdit` a benchmark applies, and
the prompt that asks a model to rewrite an answer.

A perturbation changes the judge's prompt ``P = (I, Q, R)`` (instruction, question,
responses) in one of three ways (``docs/biases.md``), its bias's family
(:mod:`voirdire.benchmarks.biases`): an **instruction** bias adds one sentence to the
instruction, before the first answer block; a **names** bias adds one and shows each slot's
label with the model's real name (the verdict letters are unchanged); an **answer** bias
replaces the target's answer (the judged, i.e. last, turn) by a rewritten one.

The control prompt is never touched: a benchmark builds it exactly as before when no
:class:`PromptEdit` is given. A benchmark applies the instruction and names parts of an edit
to a built prompt through :class:`PromptEditing` (the answer part while building).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from voirdire.benchmarks.biases.registry import get_bias
from voirdire.core import LETTERS

_RESPONSE_START = "[The Start of Response]\n"
_RESPONSE_END = "\n[The End of Response]"


@dataclass(frozen=True)
class PromptEdit:
    """How a perturbation changes one prompt.

    Attributes:
        instruction: a sentence added to the instruction (before the first answer block).
        names: per slot, the real model name shown with its label (the names family).
        answers: model -> its answer per turn, replacing the table's (answer biases).
    """

    instruction: str | None = None
    names: tuple[str, ...] | None = None
    answers: Mapping[str, tuple[str, ...]] | None = None


def rewrite_prompt(bias: str, param: str | None, question: str, answer: str) -> str:
    """The prompt that asks a model to rewrite ``answer`` for an answer bias: the bias's
    rewrite instruction (:meth:`~voirdire.benchmarks.biases.bias.BiasType.rewrite_instruction`),
    then the question, then the answer between ``[The Start of Response]`` and
    ``[The End of Response]`` (:func:`original_of` reads it back).

    Raises:
        ConfigError: an unknown bias, or one that rewrites no answer.
    """
    head = get_bias(bias).rewrite_instruction(param)
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


class PromptEditing:
    """The benchmark side of a perturbation's instruction and names parts, mixed into
    :class:`~voirdire.benchmarks.base.Benchmark`: where the sentence goes
    (:attr:`instruction_anchor`) and how a slot is named (:attr:`slot_label_template`,
    :meth:`rename_slots`)."""

    #: Perturbations: instruction sentences go before the first occurrence of this text.
    instruction_anchor: str = ""
    #: Perturbations: how the prompt names slot ``i`` (``{letter}`` / ``{k}`` = i + 1).
    slot_label_template: str = "Assistant {letter}"

    def slot_label(self, i: int) -> str:
        """How the prompt names slot ``i`` (0-based): ``"Assistant A"``, ``"Response 1"``."""
        return self.slot_label_template.format(letter=LETTERS[i], k=i + 1)

    def rename_slots(self, prompt: str, names: Sequence[str]) -> str:
        """``prompt`` with each slot's label shown with the model's real name
        (``compassion_fade``); a subclass overrides it for its own labels. The default
        returns the prompt unchanged (only the mapping sentence names the models)."""
        return prompt

    def apply_edit(self, prompt: str, edit: PromptEdit | None) -> str:
        """The instruction and name parts of a perturbation applied to a built prompt
        (answers are replaced while building): the slots renamed (``edit.names``), then the
        sentence (``edit.instruction``) inserted before :attr:`instruction_anchor`.
        ``None``: the prompt unchanged."""
        if edit is None:
            return prompt
        if edit.names:
            prompt = self.rename_slots(prompt, edit.names)
        if edit.instruction:
            prompt = insert_instruction(
                prompt, self.instruction_anchor, edit.instruction
            )
        return prompt
