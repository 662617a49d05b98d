r"""MT-Bench as the "Judging the Judges" release judged it.

Data: ``qa/mtbench.xlsx`` (80 two-turn questions, ids 81–160, 8 tasks, answers of 31
models) or ``qa/mtbench_repetition_sample.xlsx`` (the repetition-study subset), read from
the configured data directory (:func:`voirdire.benchmarks.data.resolve_data_dir`).

Prompts: FastChat's pairwise multi-turn judge templates as the release used them
(``templates/prompts.json``, keys ``mtbench.general`` / ``mtbench.math``): the whole
two-turn conversation of each assistant is shown and the judge is asked about the answers
to the second question; the ``math`` template (with the reference answers) is used when the
row's ``task`` is exactly ``"math"``, the ``general`` one otherwise. Filled with
``str.format``; answers are inserted verbatim (no whitespace stripping: the release's
MT-Bench prompts keep the table text as is).

List-wise prompts (ours; ``templates/listwise.json``, key ``mtbench``): the same
instructions reworded for p assistants, labelled by slot letters (Assistant A, B, C, ...),
one conversation block per slot, and the verdict format ``"[[A]]" if assistant A is the
best, ..., and "[[D]]" for a tie`` (option mode p + 1, the default) or ``..., or "[[C]]"
if assistant C is the best`` (option mode p). Verdict pattern ``\[\[([A-I])\]\]``: the
tie is the letter after the last slot.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

from voirdire.benchmarks.base import Benchmark
from voirdire.benchmarks.data import load_templates, read_table, require_columns
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.benchmarks.releases.fetch import JTJ
from voirdire.benchmarks.templating import (
    compile_fields,
    fill_fields,
    join_options,
    load_listwise_templates,
)
from voirdire.core import LETTERS, ConfigError

_TURNS = (1, 2)


#: Placeholders the MT-Bench templates may use.
_FIELDS = (
    "question_1",
    "question_2",
    "answer_a_1",
    "answer_a_2",
    "answer_b_1",
    "answer_b_2",
    "ref_answer_1",
    "ref_answer_2",
)


def _text(value: str | None) -> str:
    """A table cell as prompt text: empty cells (null) become ``""``."""
    return "" if value is None else value


@BENCHMARKS.register
class MTBench(Benchmark):
    """MT-Bench (FastChat), 2 turns per question, pairwise against ``vicuna-13b-v1.3``.

    Args:
        data_dir: the data directory (release layout); ``None`` resolves it with
            :func:`~voirdire.benchmarks.data.resolve_data_dir`.
        sample: ``"full"`` (``qa/mtbench.xlsx``) or ``"repetition"``
            (``qa/mtbench_repetition_sample.xlsx``).

    Attributes (besides :class:`~voirdire.benchmarks.base.Benchmark`'s):
        option_modes: ``(2, 3)``. The release judged MT-Bench in three-option mode
            (A, B, C = tie). Two-option mode uses the same template (the release has no
            two-option MT-Bench template; FastChat's prompt offers ``[[C]]`` for a tie, and
            a ``C`` in two-option mode is an extracted letter outside the option mode).
        path: the xlsx file read.

    ``questions`` columns: ``question_id`` (Utf8, the table's ``index``, e.g. ``"81"``),
    ``task`` (Utf8, as written in the table), ``input_chars`` (Int64: characters of
    ``question_1`` + ``question_2``).

    Empty answer cells (the full table has one: ``answer_1-llama-13b`` of question 127)
    are shown as empty text; the release's judges describe that answer as missing.

    Raises:
        ConfigError: data directory or table missing, a required column missing
            (``index``, ``task``, ``question_1``, ``question_2``, ``reference_answer_1``,
            ``reference_answer_2``), an answer column without its other turn, the
            reference model absent, duplicate or empty question ids, unknown ``sample``.
    """

    name = "MTBench"
    release = JTJ
    reference = "vicuna-13b-v1.3"
    default_option_mode = 3
    verdict_cue = "[["
    verdict_closing = "]]"
    option_modes = (2, 3)
    comparison_modes = ("pairwise", "listwise", "score")
    listwise_tie = True

    FILES = {
        "full": "qa/mtbench.xlsx",
        "repetition": "qa/mtbench_repetition_sample.xlsx",
    }
    REQUIRED_COLUMNS = (
        "index",
        "task",
        "question_1",
        "question_2",
        "reference_answer_1",
        "reference_answer_2",
    )
    #: Tasks judged with the math template (reference answers shown), as in the release.
    MATH_TASKS = frozenset({"math"})

    def __init__(
        self, data_dir: str | os.PathLike[str] | None = None, sample: str = "full"
    ):
        super().__init__(data_dir, sample)
        templates = load_templates()["mtbench"]
        self._templates = {
            k: compile_fields(templates[k], _FIELDS) for k in ("general", "math")
        }
        self.verdict_pattern = templates["verdict_pattern"]
        lw = load_listwise_templates()
        self._lw = lw["mtbench"]
        self._lw_words = lw["number_words"]
        self.listwise_verdict_pattern = self._lw["verdict_pattern"]
        self._lw_conv = compile_fields(
            self._lw["conversation_block"],
            ("letter", "question_1", "answer_1", "question_2", "answer_2"),
        )
        self._lw_ref = compile_fields(
            self._lw["reference_block"],
            ("question_1", "ref_answer_1", "question_2", "ref_answer_2"),
        )
        self._lw_heads: dict[tuple[str, int, int], str] = {}
        #: (question, slot letter, model) -> that slot's conversation block (list-wise)
        self._lw_blocks: dict[tuple[str, str, str], str] = {}
        self._load(read_table(self.path))

    # ------------------------------------------------------------------ loading

    def _load(self, df: pl.DataFrame) -> None:
        require_columns(df, self.REQUIRED_COLUMNS, self.path)
        models: list[str] = []
        for col in df.columns:
            for t in _TURNS:
                prefix = f"answer_{t}-"
                if col.startswith(prefix):
                    m = col[len(prefix) :]
                    if m and m not in models:
                        models.append(m)
        for m in models:
            for t in _TURNS:
                require_columns(df, [f"answer_{t}-{m}"], self.path)
        if self.reference not in models:
            raise ConfigError(
                f"benchmark table {str(self.path)!r} has no answers of the reference model "
                f"{self.reference!r} (columns answer_1-{self.reference}, answer_2-{self.reference})"
            )
        self.models = tuple(models)

        self.questions = self._question_table(
            df,
            pl.col("question_1").fill_null("").str.len_chars()
            + pl.col("question_2").fill_null("").str.len_chars(),
        )
        # Per question: (compiled template, question_1, question_2, reference_1, reference_2).
        self._rows: dict[
            str, tuple[tuple[tuple[str, ...], tuple[int, ...]], str, str, str, str]
        ] = {}
        # Per (question, model): (answer turn 1, answer turn 2), null cells as "".
        self._answers: dict[tuple[str, str], tuple[str, str]] = {}
        for qid, row in zip(
            self.questions.get_column("question_id"), df.iter_rows(named=True)
        ):
            template_set = "math" if row["task"] in self.MATH_TASKS else "general"
            self._rows[qid] = (
                self._templates[template_set],
                _text(row["question_1"]),
                _text(row["question_2"]),
                _text(row["reference_answer_1"]),
                _text(row["reference_answer_2"]),
            )
            for m in models:
                self._answers[(qid, m)] = (
                    _text(row[f"answer_1-{m}"]),
                    _text(row[f"answer_2-{m}"]),
                )

    # ------------------------------------------------------------------ prompts

    instruction_anchor = "\n\n<|The Start of "
    slot_label_template = "Assistant {letter}"

    def question_text(self, question_id: str) -> str:
        """The second question (the judged turn)."""
        return self._rows[question_id][2]

    def rename_slots(self, prompt: str, names: Sequence[str]) -> str:
        """Each ``Assistant X`` of the conversation blocks becomes ``Assistant X (<model>)``."""
        for letter, name in zip(LETTERS, names):
            prompt = (
                prompt.replace(
                    f"<|The Start of Assistant {letter}'s",
                    f"<|The Start of Assistant {letter} ({name})'s",
                )
                .replace(
                    f"<|The End of Assistant {letter}'s",
                    f"<|The End of Assistant {letter} ({name})'s",
                )
                .replace(
                    f"### Assistant {letter}:", f"### Assistant {letter} ({name}):"
                )
            )
        return prompt

    def _lw_head(self, template_set: str, p: int, option_mode: int) -> str:
        key = (template_set, p, option_mode)
        head = self._lw_heads.get(key)
        if head is None:
            lw = self._lw
            slots = LETTERS[:p]
            items = [lw["verdict_item"].format(letter=x) for x in slots]
            tie = (
                lw["verdict_tie"].format(letter=LETTERS[p])
                if option_mode == p + 1
                else None
            )
            labels = [lw["label"].format(letter=x) for x in slots]
            head = lw[f"{template_set}_head"].format(
                n=self._lw_words[str(p)],
                verdicts=join_options(items, tie),
                labels=", ".join(labels[:-1]) + " and " + labels[-1],
            )
            self._lw_heads[key] = head
        return head

    def _build_listwise(
        self, qid: str, shown: Sequence[str], option_mode: int, answers=None
    ) -> str:
        """See the module docstring: the list-wise head, the reference block (math), one
        conversation block per slot."""
        template, q1, q2, r1, r2 = self._rows[qid]
        template_set = "math" if template is self._templates["math"] else "general"
        blocks = []
        if template_set == "math":
            blocks.append(fill_fields(self._lw_ref, (q1, r1, q2, r2)))
        cache = self._lw_blocks
        for letter, m in zip(LETTERS, shown):
            if (
                answers and m in answers
            ):  # a rewritten answer (perturbation): not cached here
                blocks.append(
                    fill_fields(
                        self._lw_conv,
                        (letter, q1, *answers[m][:1], q2, *answers[m][1:]),
                    )
                )
                continue
            block = cache.get((qid, letter, m))
            if block is None:  # bounded by questions x slots x models of the table
                a1, a2 = self._answers[(qid, m)]
                block = cache[(qid, letter, m)] = fill_fields(
                    self._lw_conv, (letter, q1, a1, q2, a2)
                )
            blocks.append(block)
        return (
            self._lw_head(template_set, len(shown), option_mode)
            + "\n\n"
            + "\n\n\n".join(blocks)
        )

    def score_material(self, question_id: str, shown: Sequence[str]) -> str:
        """Score-mode body: the reference conversation for math questions, then each
        assistant's two-turn conversation under ``Assistant A`` / ``Assistant B`` (the
        list-wise blocks of ``templates/listwise.json``)."""
        template, q1, q2, r1, r2 = self._rows[question_id]
        blocks = (
            [fill_fields(self._lw_ref, (q1, r1, q2, r2))]
            if template is self._templates["math"]
            else []
        )
        for letter, m in zip(LETTERS, shown):
            a1, a2 = self._answers[(question_id, m)]
            blocks.append(fill_fields(self._lw_conv, (letter, q1, a1, q2, a2)))
        return "\n\n\n".join(blocks)

    def _build_pairwise(
        self, qid: str, a: str, b: str, option_mode: int, answers=None
    ) -> str:
        """FastChat's ``pair-v2-multi-turn`` (general) or ``pair-math-v1-multi-turn`` (task
        ``math``) template, as carried in ``templates/prompts.json``, filled with
        ``question_1/2``, ``answer_a_1/2`` (``a``), ``answer_b_1/2`` (``b``) and, for math,
        ``ref_answer_1/2``. Byte-identical to the release's prompts; the same text in both
        option modes (see the class docstring)."""
        template, q1, q2, r1, r2 = self._rows[qid]
        a1, a2 = answers[a] if answers and a in answers else self._answers[(qid, a)]
        b1, b2 = answers[b] if answers and b in answers else self._answers[(qid, b)]
        # Same order as _FIELDS; equal to template.format(question_1=q1, ...) (parsed once).
        return fill_fields(template, (q1, q2, a1, a2, b1, b2, r1, r2))
