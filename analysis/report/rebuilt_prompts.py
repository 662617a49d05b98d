"""The prompts a judge was shown, rebuilt from its benchmark for the verdict viewer
(``verdicts.html``: pairs in :mod:`~voirdire.analysis.report.verdicts`, list-wise series in
:mod:`~voirdire.analysis.report.list_verdicts`): the benchmark's own ``build_prompt`` and
``system_prompt`` for the order shown, and its question text. A benchmark that cannot
rebuild one says so with the errors it documents, and the viewer shows the verdicts
without it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from voirdire.benchmarks.base import Benchmark

__all__ = ["rebuilt_prompt", "question_text"]


def rebuilt_prompt(
    bench: Benchmark | None,
    qid: str,
    shown: Sequence[str] | None,
    mode: str | None,
    option_mode: int,
) -> str | None:
    """The prompt ``bench`` builds for question ``qid`` with the candidates ``shown`` in
    that order (``mode``: ``pairwise`` or ``listwise``), its system turn first where it has
    one (``[system]``/``[user]`` headed); None where there is no benchmark, order or mode,
    or the benchmark documents it cannot rebuild it (KeyError, ValueError,
    NotImplementedError: a recorded log without the answers, an unknown question)."""
    if bench is None or shown is None or mode is None:
        return None
    try:
        user = bench.build_prompt(qid, list(shown), option_mode, mode)
        system = bench.system_prompt(qid, list(shown), option_mode)
    except (KeyError, ValueError, NotImplementedError):
        return None
    return user if system is None else f"[system]\n{system}\n\n[user]\n{user}"


def question_text(bench: Benchmark | None, qid: str) -> str | None:
    """The text of question ``qid`` as ``bench`` holds it; None as :func:`rebuilt_prompt`."""
    if bench is None:
        return None
    try:
        return bench.question_text(qid)
    except (KeyError, ValueError, NotImplementedError):
        return None
