"""DevBench as the "Judging the Judges" release judged it.

Data: ``qa/devbench.xlsx`` (112 rows: 8 software projects × 14 tasks — UML class ×4,
UML sequence ×5, architecture design ×5 metrics — answers of 11 sources, reference
``human``) or ``qa/devbench_repetition_sample.xlsx`` (18 rows; its tasks include the
``*-general`` metric, which the full table does not have), read from the configured data
directory (:func:`voirdire.benchmarks.data.resolve_data_dir`).

Prompts (templates ``devbench.*`` in ``templates/prompts.json``; the release's
``build_prompt``): ``prefix`` with ``<Evaluating Guidance>`` replaced by the row's
``evaluating_guidance`` (left as is when the cell is empty) + ``options[n]`` + ``suffix``,
then the question block, the two response blocks and, only when the row has a reference
answer, the reference block. The answers are inserted with surrounding whitespace stripped
(``str.strip()``): the release's prompts show them so (checked byte for byte against its
expected prompts); the question, guidance and reference answer are inserted verbatim.

List-wise prompts (ours; ``templates/listwise.json``, key ``devbench``): the release's
prefix reworded for p responses (Response 1, ..., Response p), options ``A. Response 1 is
the best.`` ... (and ``D. Tie.`` after the last slot in option mode p + 1), the suffix
asking for the same attention to all responses, the release's question block, one
response block per slot and the reference block when the row has one. The verdict format
is the release's ``Choice: X`` (pattern ``(?:选择：|Choice: )([A-I])``); option letter X
names slot X (A = Response 1). Default option mode p (no tie), as the release judged
DevBench pairwise without a tie.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

from voirdire.benchmarks.base import Benchmark
from voirdire.benchmarks.data import load_templates, read_table, require_columns
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.benchmarks.releases.fetch import JTJ
from voirdire.benchmarks.templating import load_listwise_templates
from voirdire.core import LETTERS, ConfigError

_GUIDANCE = "<Evaluating Guidance>"


def _split_block(template: str, field: str) -> tuple[str, str]:
    """``template`` split around its single ``{field}`` placeholder: (before, after)."""
    marker = "{" + field + "}"
    if template.count(marker) != 1:
        raise ConfigError(
            f"DevBench template block must contain {marker} exactly once: {template!r}"
        )
    before, after = template.split(marker)
    return before, after


@BENCHMARKS.register
class DevBench(Benchmark):
    """DevBench software-design tasks, pairwise against the ``human`` reference design.

    Args:
        data_dir: the data directory (release layout); ``None`` resolves it with
            :func:`~voirdire.benchmarks.data.resolve_data_dir`.
        sample: ``"full"`` (``qa/devbench.xlsx``) or ``"repetition"``
            (``qa/devbench_repetition_sample.xlsx``).

    Attributes (besides :class:`~voirdire.benchmarks.base.Benchmark`'s):
        option_modes: ``(2, 3, 4)`` (the release's templates; it judged in two-option mode).
        path: the xlsx file read.

    ``questions`` columns: ``question_id`` (Utf8, the table's ``index``, e.g.
    ``"idcenter_uml_class-complexity"``), ``task`` (Utf8, exactly as written, e.g.
    ``"UML_sequence-faithfulness"`` / ``"uml_class-complexity"``: the casing differs by
    diagram kind in the release), ``input_chars`` (Int64: characters of ``question``).

    Raises:
        ConfigError: data directory or table missing, a required column missing
            (``index``, ``task``, ``question``), no ``answer-<model>`` columns, the
            reference model absent, duplicate or empty ids, unknown ``sample``.
    """

    name = "DevBench"
    release = JTJ
    reference = "human"
    default_option_mode = 2
    verdict_cue = "Choice: "
    verdict_closing = ""
    option_modes = (2, 3, 4)
    comparison_modes = ("pairwise", "listwise", "score")
    listwise_tie = False

    FILES = {
        "full": "qa/devbench.xlsx",
        "repetition": "qa/devbench_repetition_sample.xlsx",
    }
    REQUIRED_COLUMNS = ("index", "task", "question")
    #: Read when present (the release's prompt builder treats both as optional).
    OPTIONAL_COLUMNS = ("evaluating_guidance", "reference_answer")

    def __init__(
        self, data_dir: str | os.PathLike[str] | None = None, sample: str = "full"
    ):
        super().__init__(data_dir, sample)
        t = load_templates()["devbench"]
        self.verdict_pattern = t["verdict_pattern"]
        self._prefix: str = t["prefix"]
        if _GUIDANCE not in self._prefix:
            raise ConfigError(
                f"DevBench prefix template lacks the {_GUIDANCE} placeholder"
            )
        self._options: dict[int, str] = {int(k): v for k, v in t["options"].items()}
        missing = [n for n in self.option_modes if n not in self._options]
        if missing:
            raise ConfigError(
                f"DevBench templates lack options for option modes {missing}"
            )
        self._suffix: str = t["suffix"]
        self._question_block = _split_block(t["question_block"], "question")
        self._response_blocks = (
            _split_block(t["response_1_block"], "answer1"),
            _split_block(t["response_2_block"], "answer2"),
        )
        self._reference_block = _split_block(t["reference_block"], "reference_answer")
        self._lw = load_listwise_templates()["devbench"]
        self._lw_words = load_listwise_templates()["number_words"]
        self.listwise_verdict_pattern = self._lw["verdict_pattern"]
        if _GUIDANCE not in self._lw["prefix"]:
            raise ConfigError(
                f"DevBench list-wise prefix template lacks the {_GUIDANCE} placeholder"
            )
        self._lw_blocks: dict[int, tuple[str, str]] = {}
        self._lw_heads: dict[tuple[str, int, int], str] = {}
        self._load(read_table(self.path))

    # ------------------------------------------------------------------ loading

    def _load(self, df: pl.DataFrame) -> None:
        require_columns(df, self.REQUIRED_COLUMNS, self.path)
        models: list[str] = []
        for col in df.columns:
            if col.startswith("answer-"):
                m = col[len("answer-") :]
                if m and m not in models:
                    models.append(m)
        if not models:
            raise ConfigError(
                f"benchmark table {str(self.path)!r} lacks required column 'answer-<model>' "
                "(no answer columns found)"
            )
        if self.reference not in models:
            raise ConfigError(
                f"benchmark table {str(self.path)!r} lacks required column "
                f"'answer-{self.reference}' (the reference model's answers)"
            )
        self.models = tuple(models)
        has_guidance = "evaluating_guidance" in df.columns
        has_reference = "reference_answer" in df.columns

        self.questions = self._question_table(
            df, pl.col("question").fill_null("").str.len_chars()
        )
        # Per question: (guidance or None, question block text, reference block text or "").
        self._rows: dict[str, tuple[str | None, str, str]] = {}
        # Per question and option mode: the fixed head of the prompt (built lazily).
        self._heads: dict[tuple[str, int], str] = {}
        # Per (question, model): the answer as shown in prompts (stripped; null cell: "").
        self._answers: dict[tuple[str, str], str] = {}
        qb, qa = self._question_block
        rb, ra = self._reference_block
        for qid, row in zip(
            self.questions.get_column("question_id"), df.iter_rows(named=True)
        ):
            reference = row["reference_answer"] if has_reference else None
            self._rows[qid] = (
                row["evaluating_guidance"] if has_guidance else None,
                qb + (row["question"] or "") + qa,
                "" if reference is None else rb + reference + ra,
            )
            for m in models:
                ans = row[f"answer-{m}"]
                self._answers[(qid, m)] = "" if ans is None else ans.strip()

    # ------------------------------------------------------------------ prompts

    def _head(self, qid: str, option_mode: int) -> str:
        """prefix (guidance filled) + options[option_mode] + suffix + question block."""
        key = (qid, option_mode)
        head = self._heads.get(key)
        if head is None:
            guidance, question_block, _ = self._rows[qid]
            prefix = (
                self._prefix
                if guidance is None
                else self._prefix.replace(_GUIDANCE, guidance)
            )
            head = prefix + self._options[option_mode] + self._suffix + question_block
            self._heads[key] = head
        return head

    instruction_anchor = "Question: \n\n<Question Start>"
    slot_label_template = "Response {k}"

    def question_text(self, question_id: str) -> str:
        """The question as shown in the prompt's question block."""
        before, after = self._question_block
        return self._rows[question_id][1][
            len(before) : len(self._rows[question_id][1]) - len(after)
        ]

    def rename_slots(self, prompt: str, names: Sequence[str]) -> str:
        """Each ``Response k:`` heading becomes ``Response k (<model>):``."""
        for k, name in enumerate(names, start=1):
            prompt = prompt.replace(
                f"Response {k}: \n\n<Response {k} Start>",
                f"Response {k} ({name}): \n\n<Response {k} Start>",
                1,
            )
        return prompt

    def _lw_head(self, qid: str, p: int, option_mode: int) -> str:
        """List-wise prefix (guidance filled) + options + suffix + question block."""
        key = (qid, p, option_mode)
        head = self._lw_heads.get(key)
        if head is None:
            lw = self._lw
            guidance, question_block, _ = self._rows[qid]
            labels = ", ".join(lw["label"].format(k=k) for k in range(1, p + 1))
            prefix = (
                lw["prefix"]
                .replace("{n}", self._lw_words[str(p)])
                .replace("{labels}", labels)
            )
            if guidance is not None:
                prefix = prefix.replace(_GUIDANCE, guidance)
            options = lw["options_head"].format(m=option_mode) + "".join(
                lw["option_item"].format(letter=LETTERS[k], k=k + 1) for k in range(p)
            )
            if option_mode == p + 1:
                options += lw["option_tie"].format(letter=LETTERS[p])
            head = prefix + options + lw["suffix"] + question_block
            self._lw_heads[key] = head
        return head

    def _lw_block(self, k: int) -> tuple[str, str]:
        """The k-th (1-based) response block split around its answer."""
        block = self._lw_blocks.get(k)
        if block is None:
            block = _split_block(
                self._lw["response_block"].replace("{k}", str(k)), "answer"
            )
            self._lw_blocks[k] = block
        return block

    def _build_listwise(
        self, qid: str, shown: Sequence[str], option_mode: int, answers=None
    ) -> str:
        """See the module docstring: the list-wise head, one response block per slot, the
        reference block when the row has a reference answer."""
        parts = [self._lw_head(qid, len(shown), option_mode)]
        for k, m in enumerate(shown, start=1):
            before, after = self._lw_block(k)
            parts += (
                before,
                answers[m][0] if answers and m in answers else self._answers[(qid, m)],
                after,
            )
        parts.append(self._rows[qid][2])
        return "".join(parts)

    def score_material(self, question_id: str, shown: Sequence[str]) -> str:
        """Score-mode body: the question block, ``Response 1`` / ``Response 2`` blocks
        (the list-wise blocks of ``templates/listwise.json``) and the reference block when
        the row has a reference answer."""
        parts = [self._rows[question_id][1]]
        for k, m in enumerate(shown, start=1):
            before, after = self._lw_block(k)
            parts += (before, self._answers[(question_id, m)], after)
        parts.append(self._rows[question_id][2])
        return "".join(parts).strip()

    def _build_pairwise(
        self, qid: str, a: str, b: str, option_mode: int, answers=None
    ) -> str:
        """The release's DevBench prompt: prefix (``<Evaluating Guidance>`` replaced by the
        row's guidance) + ``options[option_mode]`` + suffix + question block + response 1
        block (``a``) + response 2 block (``b``) + the reference block when the row has a
        reference answer. Byte-identical to the release's prompts."""
        (r1b, r1a), (r2b, r2a) = self._response_blocks
        if answers:
            return "".join(
                (
                    self._head(qid, option_mode),
                    r1b,
                    answers[a][0] if a in answers else self._answers[(qid, a)],
                    r1a,
                    r2b,
                    answers[b][0] if b in answers else self._answers[(qid, b)],
                    r2a,
                    self._rows[qid][2],
                )
            )
        return "".join(
            (
                self._head(qid, option_mode),
                r1b,
                self._answers[(qid, a)],
                r1a,
                r2b,
                self._answers[(qid, b)],
                r2a,
                self._rows[qid][2],
            )
        )
