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

#: Sample names accepted by the loaders: the full table, or the repetition-study subset.
SAMPLES = ("full", "repetition")

#: Number of models shown per comparison mode (``None``: any number >= 2).
SLOTS_PER_MODE: dict[str, int | None] = {"pairwise": 2, "listwise": None}


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

    #: Option modes (number of letters offered) the benchmark's templates support.
    option_modes: tuple[int, ...] = ()
    #: Comparison modes with a template. List-wise ("listwise") is planned: a subclass adds
    #: it here and a ``_build_<mode>`` method, and :meth:`check_request` accepts it.
    comparison_modes: tuple[str, ...] = ("pairwise",)
    #: Which published table was loaded: ``"full"`` or ``"repetition"``.
    sample: str = "full"

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

    # ------------------------------------------------------------------ helpers (shared)

    @property
    def question_ids(self) -> tuple[str, ...]:
        """Every question id, in table order (the ``question_id`` column as a tuple)."""
        return tuple(self.questions.get_column("question_id").to_list())

    @property
    def candidates(self) -> tuple[str, ...]:
        """The models compared against the reference: :attr:`models` less the reference."""
        return tuple(m for m in self.models if m != self.reference)

    def task_of(self, question_id: str) -> str:
        """The task (category) of a question, exactly as written in the table.

        Raises:
            KeyError: unknown question.
        """
        tasks = self._task_by_id()
        try:
            return tasks[question_id]
        except KeyError:
            raise KeyError(f"{self.name}: unknown question {question_id!r}") from None

    def _task_by_id(self) -> dict[str, str]:
        cached = self.__dict__.get("_tasks_cache")
        if cached is None:
            cached = dict(
                zip(
                    self.questions.get_column("question_id").to_list(),
                    self.questions.get_column("task").to_list(),
                    strict=True,
                )
            )
            self.__dict__["_tasks_cache"] = cached
        return cached

    def check_request(
        self, question_id: str, shown: Sequence[str], option_mode: int, mode: str
    ) -> None:
        """Validate a prompt request before any template is filled.

        Checks, in order: ``mode`` is one of :attr:`comparison_modes`; ``option_mode`` is
        one of :attr:`option_modes`; ``shown`` has as many models as the mode has slots
        (pairwise: 2) and no model twice; the question exists; every shown model exists.

        Raises:
            ValueError: unsupported comparison mode or option mode, wrong number of models,
                or a model shown twice.
            KeyError: unknown question or model.
        """
        if mode not in self.comparison_modes:
            raise ValueError(
                f"{self.name}: comparison mode {mode!r} is not offered "
                f"(offered: {', '.join(self.comparison_modes)})"
            )
        if option_mode not in self.option_modes:
            raise ValueError(
                f"{self.name}: option mode {option_mode!r} is not offered "
                f"(offered: {', '.join(map(str, self.option_modes))})"
            )
        slots = SLOTS_PER_MODE.get(mode)
        if isinstance(shown, str):
            raise ValueError(f"{self.name}: shown must be a sequence of model names, not a string")
        if slots is not None and len(shown) != slots:
            raise ValueError(f"{self.name}: {mode} shows {slots} models, got {len(shown)}")
        if slots is None and len(shown) < 2:
            raise ValueError(f"{self.name}: {mode} needs at least 2 models, got {len(shown)}")
        if len(set(shown)) != len(shown):
            raise ValueError(f"{self.name}: a model is shown twice in {tuple(shown)!r}")
        if question_id not in self._task_by_id():
            raise KeyError(f"{self.name}: unknown question {question_id!r}")
        known = set(self.models)
        for m in shown:
            if m not in known:
                raise KeyError(f"{self.name}: unknown model {m!r} (known: {', '.join(self.models)})")
