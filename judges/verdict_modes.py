"""Verdict modes, written once for every backend that offers them: the in-process vLLM
judge (:mod:`voirdire.judges.vllm_judge`) and OpenAI-compatible servers
(:mod:`voirdire.judges.api.compatible`).

- ``free`` (default): the reply as written; the benchmark's pattern extracts the verdict.
- ``structured``: the verdict cue, then one option constrained to what the judge writes for
  the positions (:func:`option_texts`): it cannot fail to parse.
- ``logprobs``: the cue, then one token restricted to the options; the option
  probabilities are the softmax of their log-probabilities at that token
  (:func:`~voirdire.judges.base.option_probabilities`), the verdict the most probable.

A backend declares the two settings with the types here (``verdict_mode: VerdictMode =
"free"``, ``verdict_letters: VerdictLetters = None``), asks its engine or server for the
constrained token, and reads it with :func:`read_verdict`.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field

from voirdire.core import letters
from voirdire.judges.base import option_probabilities

__all__ = [
    "VERDICT_MODES",
    "VERDICT_TOKENS",
    "VerdictLetters",
    "VerdictMode",
    "option_texts",
    "read_verdict",
]

#: a judge's ``verdict_mode`` setting
VerdictMode = Literal["free", "structured", "logprobs"]
VERDICT_MODES: tuple[str, ...] = ("free", "structured", "logprobs")
#: a judge's ``verdict_letters`` setting: what it writes for each position, one character a
#: position (``"ab"`` for a prompt's ``Output (a)``); ``None``: the position letters
VerdictLetters = Annotated[str | None, Field(min_length=2, max_length=8)]
#: tokens allowed for a structured verdict (a letter is one or two tokens)
VERDICT_TOKENS = 4


def option_texts(written: str | None, option_mode: int) -> str:
    """What a constrained verdict writes for each of ``option_mode`` positions: the first
    ``option_mode`` characters of ``written`` (a judge's ``verdict_letters``), else the
    position letters (``"AB"``, ``"ABC"``).

    Raises:
        ValueError: ``written`` has fewer characters than positions, or repeats one.
    """
    if written is None:
        return letters(option_mode)
    if len(written) < option_mode or len(set(written[:option_mode])) < option_mode:
        raise ValueError(
            f"verdict_letters {written!r} must name {option_mode} distinct options"
        )
    return written[:option_mode]


def read_verdict(
    mode: str,
    text: str,
    option_mode: int,
    written: str | None = None,
    option_probs: dict[str, float] | None = None,
) -> tuple[str | None, str, dict[str, float] | None]:
    """Read a constrained verdict: ``(choice, text, option_probs)``.

    Args:
        mode: ``structured`` or ``logprobs``.
        text: what the judge wrote at the verdict position (stripped here).
        option_mode: the number of positions.
        written: the judge's ``verdict_letters`` (:func:`option_texts`).
        option_probs: position letter -> probability (``logprobs``); ``None`` where the
            server returned none: the written option, if one, has probability 1.

    Returns:
        ``choice``: the position letter (``None``: the text names no option);
        ``text``: what the verdict writes (in ``logprobs`` the most probable option's
        text); ``option_probs``: as given, or the one-hot of a written option
        (``logprobs`` only).

    Raises:
        ValueError: ``written`` does not name ``option_mode`` distinct options.
    """
    opts = letters(option_mode)
    shown = option_texts(written, option_mode)
    text = text.strip()
    choice = opts[shown.index(text)] if len(text) == 1 and text in shown else None
    if mode == "logprobs":
        if option_probs is None and choice is not None:
            option_probs = option_probabilities(
                {L: (0.0 if L == choice else -math.inf) for L in opts}
            )
        if option_probs is not None:
            choice = max(option_probs, key=option_probs.__getitem__)
            text = shown[opts.index(choice)]
    return choice, text, option_probs
