"""What a benchmark is to the engine: questions, candidate answers, prompts, verdicts.

A :class:`Benchmark` is loaded once in the driver (``load_benchmark``) and answers, for a
question and an order of models, the exact prompt the judge sees and the lengths the
analysis needs; it also names the verdict format (the pattern :mod:`voirdire.judges.extract` reads a
judge's text with, and the cue around the letter).
One module per benchmark (``mtbench.py``, ``devbench.py``) subclasses it and registers the
class by decorator (``@BENCHMARKS.register``, :mod:`voirdire.benchmarks.registry`). Class-level
hooks tell the engine, before anything is loaded, where the data lies (:attr:`Benchmark.release`,
:meth:`Benchmark.locate`), which ``[benchmark]`` settings it takes (:attr:`Benchmark.options`,
:meth:`Benchmark.load`), how the replay judge reads a release's recorded outputs
(:meth:`Benchmark.recorded_judges` ...) and how a release counts its own statistics
(:meth:`Benchmark.release_readings`). :func:`check_shape` says whether a prompt request fits
the benchmark's comparison modes (the mode offered, its option mode, as many models as it has
slots, none twice).
"""

from __future__ import annotations

import abc
import os
from collections.abc import Sequence

import polars as pl

from voirdire.benchmarks.data import normalise_id, require_file, resolve_data_dir
from voirdire.benchmarks.kind import BenchmarkKind
from voirdire.benchmarks.prompt_edits import PromptEdit, PromptEditing
from voirdire.benchmarks.scoring import SCORE_OPTION_MODE, ScoreMode
from voirdire.core import ConfigError

#: Number of models shown per comparison mode (``None``: any number >= 2).
SLOTS_PER_MODE: dict[str, int | None] = {"pairwise": 2, "score": 2, "listwise": None}
#: List sizes list-wise prompts support (verdict letters A..H, tie up to I).
LISTWISE_SIZES = range(3, 9)


def check_shape(
    name: str,
    mode: str,
    shown: Sequence[str],
    option_mode: int,
    comparison_modes: Sequence[str],
    option_modes: Sequence[int],
) -> None:
    """Validate the shape of a request to benchmark ``name`` (offering ``comparison_modes``
    and pairwise ``option_modes``): ``mode`` offered; its option mode (score: 3; list-wise
    of p models: p or p + 1; pairwise: one of ``option_modes``); as many models as the mode
    has slots (list-wise: 3 to 8); no model twice.

    Raises:
        ValueError: any of these fails (the message names the benchmark and the value).
    """
    if mode not in comparison_modes:
        raise ValueError(
            f"{name}: comparison mode {mode!r} is not offered "
            f"(offered: {', '.join(comparison_modes)})"
        )
    if isinstance(shown, str):
        raise ValueError(
            f"{name}: shown must be a sequence of model names, not a string"
        )
    if mode == "score":
        if option_mode != SCORE_OPTION_MODE:
            raise ValueError(
                f"{name}: score mode offers option mode {SCORE_OPTION_MODE}, not {option_mode!r}"
            )
    elif mode == "listwise":
        p = len(shown)
        if p not in LISTWISE_SIZES:
            raise ValueError(
                f"{name}: listwise shows {LISTWISE_SIZES.start} to {LISTWISE_SIZES.stop - 1} models, got {p}"
            )
        if option_mode not in (p, p + 1):
            raise ValueError(
                f"{name}: list-wise option mode {option_mode!r} is not offered for {p} candidates "
                f"(offered: {p}, {p + 1} with a tie)"
            )
    elif option_mode not in option_modes:
        raise ValueError(
            f"{name}: option mode {option_mode!r} is not offered "
            f"(offered: {', '.join(map(str, option_modes))})"
        )
    slots = SLOTS_PER_MODE.get(mode)
    if slots is not None and len(shown) != slots:
        raise ValueError(f"{name}: {mode} shows {slots} models, got {len(shown)}")
    if slots is None and len(shown) < 2:
        raise ValueError(f"{name}: {mode} needs at least 2 models, got {len(shown)}")
    if len(set(shown)) != len(shown):
        raise ValueError(f"{name}: a model is shown twice in {tuple(shown)!r}")


#: Sample names accepted by the loaders: the full table, or the repetition-study subset.
SAMPLES = ("full", "repetition")


class Benchmark(BenchmarkKind, PromptEditing, ScoreMode, abc.ABC):
    """A loaded benchmark (its class-level hooks: :class:`~voirdire.benchmarks.kind.BenchmarkKind`;
    how a perturbation edits its prompts: :class:`~voirdire.benchmarks.prompt_edits.PromptEditing`;
    its score mode: :class:`~voirdire.benchmarks.scoring.ScoreMode`).

    Attributes:
        name: release name, used in units and outputs (``"MTBench"``, ``"DevBench"``).
        reference: the reference (baseline) model of pairwise comparisons.
        default_option_mode: the release's option mode (MT-Bench 3, DevBench 2).
        verdict_pattern: regular expression whose first group is the verdict letter (read
            by :func:`voirdire.judges.extract.extract_verdicts`, the one extraction stage).
        verdict_cue, verdict_closing: the text right before and after the verdict letter in
            the benchmark's answer format (MT-Bench ``[[``/``]]``, DevBench ``Choice: ``/``""``).
        models: every answer source in the table, the reference included, in table order.
        questions: one row per question: ``question_id`` (str), ``task`` (str),
            ``input_chars`` (int, the question text(s) summed over turns).
    """

    name: str
    reference: str
    default_option_mode: int
    verdict_pattern: str
    verdict_cue: str
    verdict_closing: str = ""
    models: tuple[str, ...]
    questions: pl.DataFrame

    #: Option modes (number of letters offered) the benchmark's templates support.
    option_modes: tuple[int, ...] = ()
    #: Comparison modes with a template. A subclass offering list-wise adds ``"listwise"``
    #: and implements ``_build_listwise``; list-wise option modes are p and p + 1.
    comparison_modes: tuple[str, ...] = ("pairwise",)
    #: List-wise default: offer a tie option (option mode p + 1) or not (p).
    listwise_tie: bool = False
    #: List-wise verdict pattern (group 1 = letter A..I); ``None``: no list-wise mode.
    listwise_verdict_pattern: str | None = None
    #: Which published table was loaded: ``"full"`` or ``"repetition"``.
    sample: str = "full"
    #: Candidates are named models (a leaderboard of them means something); False where a
    #: pair's two answers are anonymous slots (``voirdire rank`` refuses those).
    named_models: bool = True

    #: sample name -> the table's path in the data directory (release layout)
    FILES: dict[str, str] = {}

    def __init__(
        self, data_dir: str | os.PathLike[str] | None = None, sample: str = "full"
    ) -> None:
        """Locate the benchmark's table: sets :attr:`sample`, ``data_dir`` (resolved by
        :func:`~voirdire.benchmarks.data.resolve_data_dir`) and ``path`` (``FILES[sample]``
        in it). Subclasses load their templates and the table after this.

        Raises:
            ConfigError: unknown ``sample``, no data directory, or the table missing.
        """
        if sample not in SAMPLES:
            raise ConfigError(
                f"{self.name}: unknown sample {sample!r} (known: {', '.join(SAMPLES)})"
            )
        self.sample = sample
        self.data_dir = resolve_data_dir(data_dir)
        self.path = require_file(self.data_dir, self.FILES[sample])

    def _question_table(self, df: pl.DataFrame, input_chars: pl.Expr) -> pl.DataFrame:
        """The :attr:`questions` frame of a published table (columns ``index``, ``task``),
        one row per table row in order: ``question_id`` (the normalised ``index``), ``task``
        and ``input_chars`` (the expression, over the table's columns).

        Raises:
            ConfigError: an empty ``index`` or ``task`` (naming the data row, 1-based), or a
                question id that appears twice.
        """
        where = f"benchmark table {str(self.path)!r}"
        empty_id = pl.col("index").is_null() | (pl.col("index").str.strip_chars() == "")
        bad = df.with_row_index("_row", offset=1).filter(
            empty_id | pl.col("task").is_null()
        )
        if bad.height:
            row = bad.row(0, named=True)
            column = (
                "index" if row["index"] is None or not row["index"].strip() else "task"
            )
            raise ConfigError(f"{where}: empty {column!r} in data row {row['_row']}")
        questions = pl.DataFrame(
            {
                "question_id": [normalise_id(v) for v in df.get_column("index")],
                "task": df.get_column("task"),
                "input_chars": df.select(input_chars.cast(pl.Int64)).to_series(),
            },
            schema={
                "question_id": pl.String,
                "task": pl.String,
                "input_chars": pl.Int64,
            },
        )
        dup = questions.filter(pl.col("question_id").is_duplicated())
        if dup.height:
            raise ConfigError(
                f"{where}: duplicate question id {dup['question_id'][0]!r}"
            )
        return questions

    def build_prompt(
        self,
        question_id: str,
        shown: Sequence[str],
        option_mode: int,
        mode: str = "pairwise",
        edit: PromptEdit | None = None,
    ) -> str:
        """The full judge prompt (one user message) with ``shown[0]``'s answer in the first
        slot (A / Response 1), ``shown[1]``'s in the second, ...: pairwise by the
        subclass's :meth:`_build_pairwise`, list-wise (3 to 8 models, option mode p or
        p + 1) by its :meth:`_build_listwise`. The request is checked first
        (:meth:`check_request`).

        ``edit`` (a perturbation, see :mod:`voirdire.benchmarks.prompt_edits`): answers
        replaced, an instruction sentence added, slot labels shown with real names. Without
        it the prompt is the release's (byte-identical).

        Raises:
            ValueError: unknown or not offered ``mode``; pairwise: ``option_mode`` not in
                :attr:`option_modes`, not exactly two models; list-wise: not 3..8 models,
                option mode not p or p + 1; a model shown twice.
            KeyError: unknown question or model.
        """
        self.check_request(question_id, shown, option_mode, mode)
        answers = (edit.answers or None) if edit is not None else None
        if mode == "score":
            if answers:
                raise ValueError(f"{self.name}: score mode takes no rewritten answers")
            prompt = self.build_score_prompt(question_id, shown)
        elif mode == "listwise":
            prompt = self._build_listwise(question_id, shown, option_mode, answers)
        else:
            prompt = self._build_pairwise(
                question_id, shown[0], shown[1], option_mode, answers
            )
        return self.apply_edit(prompt, edit)

    @abc.abstractmethod
    def _build_pairwise(
        self,
        qid: str,
        a: str,
        b: str,
        option_mode: int,
        answers: dict[str, tuple[str, ...]] | None = None,
    ) -> str:
        """The pairwise prompt with model ``a`` in the first slot (request already checked);
        ``answers``: rewritten answers by model (one string per turn) shown instead of the
        table's."""

    def _build_listwise(
        self,
        qid: str,
        shown: Sequence[str],
        option_mode: int,
        answers: dict[str, tuple[str, ...]] | None = None,
    ) -> str:
        """The list-wise prompt (request already checked; ``answers`` as for
        :meth:`_build_pairwise`); benchmarks that offer ``"listwise"`` in
        :attr:`comparison_modes` implement it."""
        raise ValueError(f"{self.name}: comparison mode 'listwise' is not offered")

    #: (question id, model) -> the answer as inserted into prompts: one string per turn
    #: (a tuple), or one string for single-turn benchmarks; filled by the subclass loader
    _answers: dict[tuple[str, str], str | tuple[str, ...]]
    _rows: dict

    def answers(self, question_id: str, model: str) -> tuple[str, ...]:
        """The model's answer per turn, as inserted into prompts (an empty cell is ``""``).

        Raises:
            KeyError: unknown question or model.
        """
        try:
            value = self._answers[(question_id, model)]
        except KeyError:
            if question_id not in self._rows:
                raise KeyError(
                    f"{self.name}: unknown question {question_id!r}"
                ) from None
            raise KeyError(f"{self.name}: unknown model {model!r}") from None
        return value if isinstance(value, tuple) else (value,)

    def output_chars(
        self,
        question_id: str,
        shown: Sequence[str],
        answers: dict[str, tuple[str, ...]] | None = None,
    ) -> int:
        """Characters (Unicode code points) of the shown models' answers as shown in the
        prompt, summed over models and turns (``answers``: rewritten answers by model,
        counted instead of the table's).

        Raises:
            KeyError: unknown question or model.
        """
        if answers:
            return sum(
                len(t)
                for m in shown
                for t in (answers.get(m) or self.answers(question_id, m))
            )
        return sum(len(t) for m in shown for t in self.answers(question_id, m))

    def question_text(self, question_id: str) -> str:
        """The question of the judged turn (what a rewriter is shown with the answer)."""
        raise NotImplementedError

    def system_prompt(
        self, question_id: str, shown: Sequence[str], option_mode: int
    ) -> str | None:
        """The system turn sent before the prompt (chat messages), or ``None``: the release
        benchmarks send their prompt as one user message; a user's own pairs may have a
        system turn (:mod:`voirdire.benchmarks.own_pairs.benchmark`)."""
        return None

    def fixed_instances(self) -> pl.DataFrame | None:
        """Instances the data fixes itself (a user's pairs: one per row, with ``gold``),
        or ``None``: candidates × questions against the reference
        (:func:`voirdire.engine.instances.instances`)."""
        return None

    def prompt_key(self, question_id: str) -> str:
        """Extra content of a question's query ids (``""``: none; the release benchmarks'
        prompts are fixed by their version, a user's data and template are not)."""
        return ""

    #: verdict label -> position letter where the verdict pattern reads other labels than
    #: the letters (a user's template: ``{"1": "A", "2": "B"}``); ``None``: the letters
    verdict_labels: dict[str, str] | None = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(sample={getattr(self, 'sample', None)!r}, questions={self.questions.height}, "
            f"models={len(self.models)}, path={str(getattr(self, 'path', ''))!r})"
        )

    def listwise_option_mode(self, p: int) -> int:
        """The default list-wise option mode for lists of ``p``: p + 1 (tie offered) when
        :attr:`listwise_tie`, else p."""
        return p + 1 if self.listwise_tie else p

    def verdict_pattern_for(self, mode: str) -> str:
        """The verdict regex for a comparison mode (pairwise: the release's pattern).

        Raises:
            ValueError: a mode this benchmark does not offer.
        """
        if mode == "pairwise":
            return self.verdict_pattern
        if (
            mode == "listwise"
            and self.listwise_verdict_pattern
            and mode in self.comparison_modes
        ):
            return self.listwise_verdict_pattern
        raise ValueError(f"{self.name}: comparison mode {mode!r} is not offered")

    @property
    def verdict_format(self) -> tuple[str, str]:
        """``(verdict_cue, verdict_closing)``: the text around the verdict letter in the
        benchmark's answer format (every comparison mode), for judges that write or
        constrain the verdict themselves (the engine hands it over in the judge's context)."""
        return self.verdict_cue, self.verdict_closing

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
        check_shape(
            self.name,
            mode,
            shown,
            option_mode,
            self.comparison_modes,
            self.option_modes,
        )
        if question_id not in self._task_by_id():
            raise KeyError(f"{self.name}: unknown question {question_id!r}")
        known = self.__dict__.get("_known_models")
        if known is None:
            known = self.__dict__["_known_models"] = frozenset(self.models)
        for m in shown:
            if m not in known:
                raise KeyError(
                    f"{self.name}: unknown model {m!r} (known: {', '.join(self.models)})"
                )


__all__ = ["SAMPLES", "Benchmark"]
