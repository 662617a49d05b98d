"""A user's own pairs as a benchmark: ``[benchmark] name = "pairs"`` (``docs/own-data.md``).

The data (:mod:`voirdire.benchmarks.own_pairs.data`) is a table with one row per item; the
job's column mapping (:class:`PairColumns`) names its columns. Two forms:

- **two outputs** (``output_a``, ``output_b``): one pairwise instance per row, the first
  output shown first in permutation 0 (``candidate`` = the first output's model,
  ``reference`` = the second's). The models are named per row by ``model_a``/``model_b``
  columns, or for every row by ``models = ["x", "y"]``, else by the two output columns'
  names. An optional ``gold`` column labels the better output
  (:func:`~voirdire.benchmarks.own_pairs.checks.gold_labels`: 1/2, a/b, the model's name, tie).
- **one answer column per model** (``answers = {model = column, ...}``): like MT-Bench,
  every candidate is compared with a ``reference`` model (default: the first listed);
  no gold label in this form.

Prompts are chat messages (system and user turns) from a Jinja2 template
(:mod:`voirdire.benchmarks.own_pairs.prompts`): the built-in ``"mtbench"`` (FastChat's
``pair-v2``) or the user's own file with a declared verdict pattern and labels.
"""

from __future__ import annotations

import json
import os
import pathlib
from collections import OrderedDict
from collections.abc import Sequence

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, model_validator

from voirdire.benchmarks.base import Benchmark
from voirdire.benchmarks.own_pairs.checks import (
    checked_columns,
    gold_labels,
    unique_ids,
)
from voirdire.benchmarks.own_pairs.data import read_source
from voirdire.benchmarks.own_pairs.limits import MAX_BYTES, MAX_ROWS
from voirdire.benchmarks.own_pairs.prompts import (
    MAX_PROMPT_CHARS,
    PairTemplate,
    check_fields,
    check_renders,
    load_template,
)
from voirdire.benchmarks.registry import BENCHMARKS, PAIRS
from voirdire.core import ConfigError, content_hash

#: the task of every pair when the data names none
DEFAULT_TASK = "all"


class PairColumns(BaseModel):
    """Which columns hold what (values are column names of the data)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instruction: str
    id: str | None = None
    output_a: str | None = None
    output_b: str | None = None
    model_a: str | None = None
    model_b: str | None = None
    answers: dict[str, str] | None = None
    gold: str | None = None
    task: str | None = None

    @model_validator(mode="after")
    def _form(self) -> PairColumns:
        two = self.output_a is not None or self.output_b is not None
        if two and self.answers:
            raise ValueError(
                "give output_a/output_b (two outputs per row) or answers (one column per model), not both"
            )
        if not two and not self.answers:
            raise ValueError(
                "name the outputs: output_a and output_b, or answers = {model = column, ...}"
            )
        if two and (self.output_a is None or self.output_b is None):
            raise ValueError("output_a and output_b go together")
        if (self.model_a is None) != (self.model_b is None):
            raise ValueError("model_a and model_b go together")
        if self.answers is not None:
            if len(self.answers) < 2:
                raise ValueError("answers needs at least two models")
            if self.model_a or self.gold:
                raise ValueError(
                    "model_a/model_b and gold belong to the two-output form (output_a, output_b)"
                )
        return self


class PairsSpec(BaseModel):
    """``[benchmark.pairs]``: where the pairs are, how to read them, how to ask.

    ``path`` (file or dataset directory) or ``dataset`` (a Hugging Face name), with
    ``split``/``config``; ``label``: the benchmark's name in outputs (default: the file's
    stem or the dataset's name); ``columns``: :class:`PairColumns`; ``models``: the two
    outputs' model names for every row; ``reference``: the answers form's reference
    model; ``template``: ``"mtbench"`` or a Jinja2 file; ``verdict_pattern`` (regex, group
    1 the label) and ``verdict_labels`` (slot 1, slot 2[, tie]) for an own template;
    bounds (``docs/security.md``): ``max_rows`` rows and ``max_bytes`` bytes per source
    (:mod:`~voirdire.benchmarks.own_pairs.limits`), ``max_prompt_chars`` characters per
    rendered turn (:mod:`~voirdire.benchmarks.own_pairs.prompts`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str | None = None
    dataset: str | None = None
    split: str | None = None
    config: str | None = None
    label: str | None = Field(default=None, min_length=1)
    columns: PairColumns
    models: list[str] | None = None
    reference: str | None = None
    template: str = "mtbench"
    verdict_pattern: str | None = None
    verdict_labels: list[str] | None = None
    max_rows: int = Field(default=MAX_ROWS, gt=0)
    max_bytes: int = Field(default=MAX_BYTES, gt=0)
    max_prompt_chars: int = Field(default=MAX_PROMPT_CHARS, gt=0)


@BENCHMARKS.register(name=PAIRS)
class OwnPairs(Benchmark):
    """A user's own pairs (module docstring): ``[benchmark] name = "pairs"``, reading no
    release (``release = None``) and taking the option ``pairs``.

    Args:
        spec: the ``[benchmark.pairs]`` settings.
        base: the directory relative paths (data, template) start from (the working
            directory when ``None``).

    Attributes (besides :class:`~voirdire.benchmarks.base.Benchmark`'s):
        template: the :class:`~voirdire.benchmarks.own_pairs.prompts.PairTemplate`.
        verdict_labels: label -> position letter (``docs/own-data.md``).
        source: where the data came from.
        reference: the answers form's reference model; ``""`` in the two-output form.

    Raises:
        ConfigError: see :mod:`voirdire.benchmarks.own_pairs.data`, :mod:`voirdire.benchmarks.own_pairs.checks` and
            :mod:`voirdire.benchmarks.own_pairs.prompts` (the template is rendered once per row
            here, :func:`~voirdire.benchmarks.own_pairs.prompts.check_renders`); also ``models``
            not two distinct names, a row showing one model twice, an unknown ``reference``.
    """

    comparison_modes = ("pairwise",)
    instruction_anchor = ""
    FILES: dict[str, str] = {}
    options = ("pairs",)

    @classmethod
    def load(
        cls, data_dir: object, sample: str = "full", **options: object
    ) -> OwnPairs:
        """The pairs of ``options["pairs"]`` (a :class:`PairsSpec`), read afresh; ``data_dir``
        and ``sample`` play no part."""
        return cls(options["pairs"])  # type: ignore[arg-type]

    def __init__(
        self, spec: PairsSpec, base: str | os.PathLike[str] | None = None
    ) -> None:
        self.spec = spec
        self.sample = "full"
        df, self.source = read_source(
            spec.path,
            spec.dataset,
            split=spec.split,
            config=spec.config,
            base=base,
            max_rows=spec.max_rows,
            max_bytes=spec.max_bytes,
        )
        self.path = pathlib.Path(self.source) if spec.path else None
        self.data_dir = (
            self.path.parent if self.path is not None else pathlib.Path.cwd()
        )
        self.name = spec.label or (
            self.path.stem
            if self.path is not None
            else str(spec.dataset).rsplit("/", 1)[-1]
        )
        self.template: PairTemplate = load_template(
            spec.template,
            base,
            verdict_pattern=spec.verdict_pattern,
            verdict_labels=spec.verdict_labels,
            max_chars=spec.max_prompt_chars,
        )
        check_fields(self.template, df.columns)
        self.verdict_pattern = self.template.verdict_pattern
        self.verdict_labels = self.template.letter_map
        tie = len(self.template.verdict_labels) == 3
        self.option_modes = (2, 3) if tie else (2,)
        self.default_option_mode = 3 if tie else 2
        self.verdict_cue, self.verdict_closing = (
            ("[[", "]]") if spec.template == "mtbench" else ("", "")
        )
        self._system: OrderedDict[tuple, str | None] = OrderedDict()
        self._load(df)
        check_renders(self.template, self._trial_values())

    # ------------------------------------------------------------------ loading

    def _load(self, df: pl.DataFrame) -> None:
        c, where = self.spec.columns, repr(self.source)
        roles = {"instruction": c.instruction}
        if c.id:
            roles["id"] = c.id
        if c.task:
            roles["task"] = c.task
        if c.answers:
            roles |= {f"answer of {m}": col for m, col in c.answers.items()}
        else:
            roles |= {"output_a": c.output_a, "output_b": c.output_b}  # type: ignore[dict-item]
            if c.model_a:
                roles |= {"model_a": c.model_a, "model_b": c.model_b}  # type: ignore[dict-item]
        if c.gold:
            roles["gold"] = c.gold
        cols = checked_columns(
            df, roles, [r for r in roles if r not in ("gold", "task")], where
        )
        ids = (
            cols["id"]
            if c.id
            else pl.Series("id", [str(i) for i in range(1, df.height + 1)])
        )
        unique_ids(ids, c.id or "(row number)", where)
        tasks = (
            cols["task"].fill_null(DEFAULT_TASK)
            if c.task
            else pl.Series("task", [DEFAULT_TASK] * df.height)
        )
        instr = cols["instruction"]
        self.questions = pl.DataFrame(
            {
                "question_id": ids,
                "task": tasks,
                "input_chars": instr.str.len_chars().cast(pl.Int64),
            },
            schema={
                "question_id": pl.String,
                "task": pl.String,
                "input_chars": pl.Int64,
            },
        )
        # the rows as Python values (a template may loop over a list column); their content
        # enters the query ids (prompt_key)
        self._rows = {
            q: (text, row)
            for q, text, row in zip(ids.to_list(), instr.to_list(), df.to_dicts())
        }
        tpl = (
            self.template.source,
            self.verdict_pattern,
            *self.template.verdict_labels,
        )
        self._keys = {
            q: content_hash(*tpl, json.dumps(r, sort_keys=True, default=str))
            for q, (_, r) in self._rows.items()
        }
        self._answers = {}
        if c.answers:
            self._load_answers_form(ids, cols)
        else:
            self._load_two_outputs(ids, cols, where)

    def _load_answers_form(self, ids: pl.Series, cols: dict[str, pl.Series]) -> None:
        models = list(self.spec.columns.answers or {})
        self.models = tuple(models)
        self.reference = self.spec.reference or models[0]
        if self.reference not in models:
            raise ConfigError(
                f"benchmark.pairs.reference {self.reference!r} is not among the answers' models: {', '.join(models)}"
            )
        for m in models:
            for q, a in zip(ids.to_list(), cols[f"answer of {m}"].to_list()):
                self._answers[(q, m)] = a
        self._pairs = None

    def _load_two_outputs(
        self, ids: pl.Series, cols: dict[str, pl.Series], where: str
    ) -> None:
        c, n = self.spec.columns, len(ids)
        if c.model_a:
            first, second = cols["model_a"], cols["model_b"]
        else:
            names = self.spec.models or [c.output_a, c.output_b]
            if len(names) != 2 or names[0] == names[1]:
                raise ConfigError(
                    f"benchmark.pairs.models must be two distinct names, not {names}"
                )
            first, second = pl.Series([names[0]] * n), pl.Series([names[1]] * n)
        same = (first == second).arg_true()
        if len(same):
            raise ConfigError(
                f"pairs data {where}: row {int(same[0]) + 1} names model {first[int(same[0])]!r} for both outputs"
            )
        for q, m1, m2, a, b in zip(
            ids, first, second, cols["output_a"], cols["output_b"]
        ):
            self._answers[(q, m1)] = a
            self._answers[(q, m2)] = b
        self.models = tuple(dict.fromkeys([*first.to_list(), *second.to_list()]))
        self.reference = ""
        gold = (
            gold_labels(cols["gold"], first, second, c.gold, where)
            if c.gold
            else pl.Series([None] * n, dtype=pl.String)
        )
        self._pairs = self.questions.with_columns(
            candidate=first.alias("candidate"),
            reference=second.alias("reference"),
            gold=gold.alias("gold"),
        )

    def _trial_values(self):
        """``(row label, values)`` to render once at load time (:func:`check_renders`): every
        row in its first order and the default option mode, the first row in every option
        mode too (the answers form: the first candidate against the reference)."""
        first = [m for m in self.models if m != self.reference][:1] or list(
            self.models[:1]
        )
        if self._pairs is not None:
            pairs = self._pairs.select(
                "question_id", "candidate", "reference"
            ).iter_rows()
        else:
            pairs = (
                (q, first[0], self.reference) for q in self.questions["question_id"]
            )
        for n, (q, a, b) in enumerate(pairs, 1):
            for om in self.option_modes if n == 1 else (self.default_option_mode,):
                yield f"row {n} (id {q!r})", self._values(q, a, b, om)

    # ------------------------------------------------------------------ the engine's hooks

    def fixed_instances(self) -> pl.DataFrame | None:
        """The two-output form's instances, one per row (``question_id``, ``task``,
        ``input_chars``, ``candidate``, ``reference``, ``gold``); ``None`` in the answers
        form (instances are then candidate × question against the reference)."""
        return self._pairs

    def prompt_key(self, question_id: str) -> str:
        """H(template, verdict pattern and labels, the row's content): enters the query
        ids, so an edited row or template is asked again, never answered from old results."""
        return self._keys[question_id]

    def question_text(self, question_id: str) -> str:
        """The instruction."""
        return self._rows[question_id][0]

    def _values(self, qid: str, a: str, b: str, option_mode: int, answers=None) -> dict:
        instruction, row = self._rows[qid]
        out = {k: v for k, v in row.items() if k.isidentifier()}
        out.update(
            instruction=instruction, id=qid, task=self.task_of(qid), option_mode=option_mode, tie=option_mode == 3,
            output_1=(answers[a] if answers and a in answers else self.answers(qid, a))[0],
            output_2=(answers[b] if answers and b in answers else self.answers(qid, b))[0],
            model_1=a, model_2=b, row=row,
        )  # fmt: skip
        return out

    def _build_pairwise(
        self, qid: str, a: str, b: str, option_mode: int, answers=None
    ) -> str:
        """The template's user turn with ``a`` in the first slot; its system turn is kept
        for :meth:`system_prompt`."""
        system, user = self.template.render(
            self._values(qid, a, b, option_mode, answers)
        )
        if not answers:
            self._system[(qid, a, b, option_mode)] = system
            while len(self._system) > 65_536:
                self._system.popitem(last=False)
        return user

    def system_prompt(
        self, question_id: str, shown: Sequence[str], option_mode: int
    ) -> str | None:
        """The template's system turn for this order (``None`` without a system block)."""
        key = (question_id, shown[0], shown[1], option_mode)
        if key not in self._system:
            system, _ = self.template.render(
                self._values(question_id, shown[0], shown[1], option_mode)
            )
            return system
        return self._system[key]
