"""What a benchmark is to the engine: questions, candidate answers, prompts, verdicts.

A :class:`Benchmark` is loaded once in the driver (``load_benchmark``) and answers, for a
question and an order of models, the exact prompt the judge sees and the lengths the
analysis needs; it also turns a judge's text into a position letter (verdict extraction).
One module per benchmark (``mtbench.py``, ``devbench.py``) subclasses it.
"""

from __future__ import annotations

import abc
import functools
import json
import pathlib
import string
from collections.abc import Sequence

import polars as pl

from voirdire.benchmarks.perturb import PromptEdit, insert_instruction, names_text

from voirdire.core import LETTERS, ConfigError

#: Sample names accepted by the loaders: the full table, or the repetition-study subset.
SAMPLES = ("full", "repetition")

#: Number of models shown per comparison mode (``None``: any number >= 2).
SLOTS_PER_MODE: dict[str, int | None] = {"pairwise": 2, "listwise": None}
#: List sizes list-wise prompts support (verdict letters A..H, tie up to I).
LISTWISE_SIZES = range(3, 9)

_LISTWISE_TEMPLATES = pathlib.Path(__file__).parent / "templates" / "listwise.json"


@functools.lru_cache(maxsize=1)
def load_listwise_templates() -> dict:
    """voirdire's list-wise prompt templates (package data ``templates/listwise.json``).

    Keys: ``number_words`` ({"3": "three", ...}), ``mtbench`` (``general_head``,
    ``math_head``, ``label``, ``verdict_item``, ``verdict_tie``, ``reference_block``,
    ``conversation_block``, ``verdict_pattern``), ``devbench`` (``prefix``, ``label``,
    ``options_head``, ``option_item``, ``option_tie``, ``suffix``, ``response_block``,
    ``verdict_pattern``). Adapted from the release's pairwise templates (see NOTICE.txt).

    Raises:
        ConfigError: the package data is missing (a broken install).
    """
    if not _LISTWISE_TEMPLATES.is_file():
        raise ConfigError(f"list-wise prompt templates missing from the package: {_LISTWISE_TEMPLATES}")
    with _LISTWISE_TEMPLATES.open(encoding="utf-8") as f:
        return json.load(f)


def compile_fields(template: str, fields: Sequence[str]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Parse a ``str.format`` template once into literal pieces and field indices (into
    ``fields``; ``-1`` after the last piece), for filling by ``"".join`` (:func:`fill_fields`).

    Raises:
        ConfigError: a field not in ``fields``, or a format spec/conversion.
    """
    literals: list[str] = []
    idx: list[int] = []
    for literal, field, spec, conversion in string.Formatter().parse(template):
        literals.append(literal)
        if field is None:
            idx.append(-1)
            continue
        if field not in fields or spec or conversion:
            raise ConfigError(f"template has an unsupported field {{{field}}}")
        idx.append(list(fields).index(field))
    return tuple(literals), tuple(idx)


def fill_fields(compiled: tuple[tuple[str, ...], tuple[int, ...]], values: Sequence[str]) -> str:
    """Fill a template compiled by :func:`compile_fields` (equal to ``str.format``)."""
    literals, idx = compiled
    parts: list[str] = []
    for lit, f in zip(literals, idx):
        parts.append(lit)
        if f >= 0:
            parts.append(values[f])
    return "".join(parts)


def join_options(items: Sequence[str], tie: str | None) -> str:
    """English enumeration of verdict options: ``"a, b, and t"`` with a tie option ``t``,
    else ``"a, b, or c"``."""
    if tie is not None:
        return ", ".join(items) + ", and " + tie
    return ", ".join(items[:-1]) + ", or " + items[-1]


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
    #: Comparison modes with a template. A subclass offering list-wise adds ``"listwise"``
    #: and implements ``_build_listwise``; list-wise option modes are p and p + 1.
    comparison_modes: tuple[str, ...] = ("pairwise",)
    #: List-wise default: offer a tie option (option mode p + 1) or not (p).
    listwise_tie: bool = False
    #: List-wise verdict pattern (group 1 = letter A..I); ``None``: no list-wise mode.
    listwise_verdict_pattern: str | None = None
    #: Which published table was loaded: ``"full"`` or ``"repetition"``.
    sample: str = "full"
    #: Perturbations: instruction sentences go before the first occurrence of this text.
    instruction_anchor: str = ""
    #: Perturbations: how the prompt names slot ``i`` (``{letter}`` / ``{k}`` = i + 1).
    slot_label_template: str = "Assistant {letter}"

    @abc.abstractmethod
    def build_prompt(
        self,
        question_id: str,
        shown: Sequence[str],
        option_mode: int,
        mode: str = "pairwise",
        edit: PromptEdit | None = None,
    ) -> str:
        """The full judge prompt with ``shown[0]``'s answer in slot A, ``shown[1]``'s in B...

        ``edit`` (a perturbation, see :mod:`voirdire.benchmarks.perturb`): answers
        replaced, an instruction sentence added, slot labels shown with real names. Without
        it the prompt is the release's (byte-identical).

        Raises:
            KeyError: unknown question or model.
            ValueError: option mode or comparison mode this benchmark does not offer.
        """

    #: (question id, model) -> the answer as inserted into prompts: one string per turn
    #: (a tuple), or one string for single-turn benchmarks; filled by the subclass loader
    _answers: dict[tuple[str, str], "str | tuple[str, ...]"]
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
                raise KeyError(f"{self.name}: unknown question {question_id!r}") from None
            raise KeyError(f"{self.name}: unknown model {model!r}") from None
        return value if isinstance(value, tuple) else (value,)

    def output_chars(
        self, question_id: str, shown: Sequence[str], answers: "dict[str, tuple[str, ...]] | None" = None
    ) -> int:
        """Characters (Unicode code points) of the shown models' answers as shown in the
        prompt, summed over models and turns (``answers``: rewritten answers by model,
        counted instead of the table's).

        Raises:
            KeyError: unknown question or model.
        """
        if answers:
            return sum(len(t) for m in shown for t in (answers.get(m) or self.answers(question_id, m)))
        return sum(len(t) for m in shown for t in self.answers(question_id, m))

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
        (answers are replaced while building). ``None``: the prompt unchanged."""
        if edit is None:
            return prompt
        parts = []
        if edit.names:
            prompt = self.rename_slots(prompt, edit.names)
            labels = tuple(self.slot_label(i) for i in range(len(edit.names)))
            parts.append(names_text(labels, edit.names))
        if edit.instruction:
            parts.append(edit.instruction)
        if parts:
            prompt = insert_instruction(prompt, self.instruction_anchor, " ".join(parts))
        return prompt

    def question_text(self, question_id: str) -> str:
        """The question of the judged turn (what a rewriter is shown with the answer)."""
        raise NotImplementedError

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
        if mode == "listwise" and self.listwise_verdict_pattern and mode in self.comparison_modes:
            return self.listwise_verdict_pattern
        raise ValueError(f"{self.name}: comparison mode {mode!r} is not offered")

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
        if isinstance(shown, str):
            raise ValueError(f"{self.name}: shown must be a sequence of model names, not a string")
        if mode == "listwise":
            p = len(shown)
            if p not in LISTWISE_SIZES:
                raise ValueError(
                    f"{self.name}: listwise shows {LISTWISE_SIZES.start} to {LISTWISE_SIZES.stop - 1} models, got {p}"
                )
            if option_mode not in (p, p + 1):
                raise ValueError(
                    f"{self.name}: list-wise option mode {option_mode!r} is not offered for {p} candidates "
                    f"(offered: {p}, {p + 1} with a tie)"
                )
        elif option_mode not in self.option_modes:
            raise ValueError(
                f"{self.name}: option mode {option_mode!r} is not offered "
                f"(offered: {', '.join(map(str, self.option_modes))})"
            )
        slots = SLOTS_PER_MODE.get(mode)
        if slots is not None and len(shown) != slots:
            raise ValueError(f"{self.name}: {mode} shows {slots} models, got {len(shown)}")
        if slots is None and len(shown) < 2:
            raise ValueError(f"{self.name}: {mode} needs at least 2 models, got {len(shown)}")
        if len(set(shown)) != len(shown):
            raise ValueError(f"{self.name}: a model is shown twice in {tuple(shown)!r}")
        if question_id not in self._task_by_id():
            raise KeyError(f"{self.name}: unknown question {question_id!r}")
        known = self.__dict__.get("_known_models")
        if known is None:
            known = self.__dict__["_known_models"] = frozenset(self.models)
        for m in shown:
            if m not in known:
                raise KeyError(f"{self.name}: unknown model {m!r} (known: {', '.join(self.models)})")
