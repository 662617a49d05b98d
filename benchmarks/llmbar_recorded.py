"""LLMBar's recorded judges as the replay names them, and the release's reading of a rating
strategy (:mod:`voirdire.benchmarks.llmbar`, whose replay hooks use them).

A recorded judge is ``"<evaluator>/<strategy>"``; a rating strategy (``Rating*``) may carry
``@tie`` (:data:`TIE_SUFFIX`), voirdire's reading of equal ratings, instead of the
release's (:data:`RATING_TIES`, :func:`split_recorded`). The release's winner of a rated
pair is LLMEvaluator's rule (:func:`release_rating_winner`).
"""

from __future__ import annotations

from voirdire.core import ConfigError

#: The readings of a replayed rating strategy's equal ratings: the release's (the output
#: shown second wins; the default, recorded name ``"GPT-4/Rating"``) and voirdire's (a tie;
#: recorded name ``"GPT-4/Rating@tie"``).
RATING_TIES = ("release", "tie")
TIE_SUFFIX = "@tie"


def split_recorded(recorded: str) -> tuple[str, str, str]:
    """``(evaluator, strategy, rating_ties)`` of a recorded name: ``"GPT-4/Rating"`` ->
    ``("GPT-4", "Rating", "release")``, ``"GPT-4/Rating@tie"`` -> ``(..., "tie")``; a
    comparison strategy's reading is ``"release"``.

    Raises:
        ConfigError: a suffix other than ``@tie``, or ``@tie`` on a strategy that rates no
            outputs (only ``Rating*`` strategies have ties to read).
    """
    name, at, reading = recorded.partition("@")
    evaluator, _, strategy = name.partition("/")
    if at and (reading != "tie" or not strategy.startswith("Rating")):
        raise ConfigError(
            f"recorded LLMBar judge {recorded!r}: only a rating strategy takes a reading, "
            f"and only {TIE_SUFFIX!r} (equal ratings as a tie; without it, the release's reading)"
        )
    return evaluator, strategy, "tie" if at else "release"


def release_rating_winner(score_1: str | None, score_2: str | None, swap: bool) -> str:
    """The winner (``"1"``/``"2"``, the dataset's numbering) LLMEvaluator's ``evaluate.py``
    records for a rating strategy (its ``Rating`` branch): both ratings read with Python's
    ``int()``; in the order shown (``swap`` False) ``"1" if s1 > s2 else "2"``, swapped
    ``"2" if s2 > s1 else "1"``, so equal ratings go to the output shown second; when
    either rating is unreadable, the output shown first (``"1"``, swapped ``"2"``)."""
    try:
        s1, s2 = int(score_1), int(score_2)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "2" if swap else "1"
    if swap:
        return "2" if s2 > s1 else "1"
    return "1" if s1 > s2 else "2"


__all__ = ["RATING_TIES", "TIE_SUFFIX", "release_rating_winner", "split_recorded"]
