"""What a benchmark is to the engine: questions, candidate answers, prompts, verdicts.

A :class:`Benchmark` is loaded once in the driver (``load_benchmark``) and answers, for a
question and an order of models, the exact prompt the judge sees and the lengths the
analysis needs; it also turns a judge's text into a position letter (verdict extraction).
One module per benchmark (``mtbench.py``, ``devbench.py``) subclasses it.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

import polars as pl


class Benchmark(abc.ABC):
    """A loaded benchmark.

    Attributes:
        name: release name, used in units and outputs (``"MTBench"``, ``"DevBench"``).
        reference: the reference (baseline) model of pairwise comparisons.
        default_option_mode: the release's option mode (MT-Bench 3, DevBench 2).
        verdict_pattern: regular expression whose first group is the verdict letter.
        models: every answer source in the table, the reference included, in table order.
        questions: one row per question: ``question_id`` (str), ``task`` (str),
            ``input_chars`` (int, the question text(s) summed over turns).
    """

    name: str
    reference: str
    default_option_mode: int
    verdict_pattern: str
    models: tuple[str, ...]
    questions: pl.DataFrame

    @abc.abstractmethod
    def build_prompt(
        self, question_id: str, shown: Sequence[str], option_mode: int, mode: str = "pairwise"
    ) -> str:
        """The full judge prompt with ``shown[0]``'s answer in slot A, ``shown[1]``'s in B...

        Raises:
            KeyError: unknown question or model.
            ValueError: option mode or comparison mode this benchmark does not offer.
        """

    @abc.abstractmethod
    def output_chars(self, question_id: str, shown: Sequence[str]) -> int:
        """Characters of the shown models' answers, summed over models and turns."""

    def extract(self, text: str | None) -> str | None:
        """The first verdict letter in ``text`` by the release's pattern, else ``None``."""
        import re

        if text is None:
            return None
        m = re.search(self.verdict_pattern, text)
        return m.group(1) if m else None

    def extract_expr(self, output: pl.Expr) -> pl.Expr:
        """Vectorised :meth:`extract` over a string column (null where no match)."""
        return output.str.extract(self.verdict_pattern, 1)
