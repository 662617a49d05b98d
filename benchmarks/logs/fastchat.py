"""FastChat's MT-Bench pairwise judgment logs (lm-sys/FastChat, ``fastchat/llm_judge``):
``data/<bench>/model_judgment/<judge>_pair.jsonl``.

One JSON object a line, as ``common.py``'s ``play_a_match_pair`` writes it: ``question_id``,
``model_1``, ``model_2``, ``g1_winner``, ``g2_winner``, ``judge`` (``[judge model, prompt
name]``), ``g1_user_prompt``, ``g1_judgment``, ``g2_user_prompt``, ``g2_judgment``, ``turn``
(1, or 2 for the multi-turn prompt) and ``tstamp``. **Order shown** (``play_a_match_pair``):
game 1 calls ``run_judge_pair(question, answer_1, answer_2, ...)``, so ``model_1`` is
assistant A; game 2 calls it with ``answer_2, answer_1``, so ``model_2`` is A. **Reading**:
``run_judge_pair`` reads ``[[A]]`` → ``"A"``, ``[[B]]`` → ``"B"``, ``[[C]]`` → ``"tie"``, else
``"error"``, and the winners are stored mapped back to the models (``g1_map = {"A":
"model_1", "B": "model_2"}``, ``g2_map = {"A": "model_2", "B": "model_1"}``); voirdire maps
them to the order shown again: game 1 ``model_1`` → A, ``model_2`` → B; game 2 ``model_2`` →
A, ``model_1`` → B; ``tie`` → C; ``error`` (or another value) → no verdict.

Instances: one per (question, turn, model pair): ``question_id`` =
``"<question_id>|t<turn>|<model_1>|<model_2>"``, ``model_1`` first (``model_a``; in
``pairwise-baseline`` mode the baseline is ``model_2``), the question its bootstrap cluster,
``task`` ``"turn <turn>"``. The judge is the judge model (``judge[0]``; its prompt, ``pair-v2``
or ``pair-math-v1``, follows the question's category). The file holds the prompts, not the
question and answers apart: ``instruction`` and the outputs are empty. ``[benchmark.log] turn``
(1 or 2) keeps one turn.

**Single-answer files** (``<judge>_single.jsonl``, ``play_a_match_single``): ``question_id``,
``model``, ``judge``, ``user_prompt``, ``judgment``, ``score`` (the ``[[rating]]`` read by
``run_judge_single``, -1 where none was read), ``turn``, ``tstamp``. Each answer is judged
alone, so there is no order to audit: :func:`read_single` reads them (:data:`SINGLE_SCHEMA`)
and :func:`single_scores` gives FastChat's table (``show_result.py``,
``display_result_single``: scores of -1 dropped, the mean per model and turn, and over both
turns). Given to the pairwise reader, such a file is one error line saying so.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import ConfigDict

from voirdire.benchmarks.logs.base import LogBenchmark
from voirdire.benchmarks.logs.reading import (
    LogLimits,
    Rows,
    iter_jsonl,
    log_files,
    need,
)
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.core import ConfigError

#: the stored winner of each game as voirdire's letter, A = the answer shown first
GAME1 = {"model_1": "A", "model_2": "B", "tie": "C"}
GAME2 = {"model_2": "A", "model_1": "B", "tie": "C"}


class FastChatOptions(LogLimits):
    """``[benchmark.log]``: ``turn``, the one turn kept (None: both)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: Literal[1, 2] | None = None


@BENCHMARKS.register
class FastChat(LogBenchmark):
    """FastChat's ``*_pair.jsonl`` judgments (module docstring); ``[benchmark.log]``:
    :class:`FastChatOptions`."""

    name = "FastChat"
    #: a record of the format (:meth:`~voirdire.benchmarks.logs.base.LogBenchmark.owns`)
    record_keys = (frozenset({"question_id", "judge", "turn"}),)
    Options = FastChatOptions

    @classmethod
    def read(cls, path: Path, options: Any, rows: Rows) -> None:
        """The pairs and both games' verdicts of one ``*_pair.jsonl`` file."""
        f = cls.name
        for n, obj in iter_jsonl(path, f):
            where = f"{path}: line {n}"
            if "model_1" not in obj and "model" in obj and "score" in obj:
                raise ConfigError(
                    f"{f} log {where}: a single-answer judgment (field 'score' of one 'model', no order shown), "
                    "not a pair: read *_single.jsonl with voirdire.benchmarks.logs.fastchat.read_single"
                )
            q = need(obj, "question_id", where, f, (str, int))
            m1 = str(need(obj, "model_1", where, f, str))
            m2 = str(need(obj, "model_2", where, f, str))
            w1, w2 = need(obj, "g1_winner", where, f), need(obj, "g2_winner", where, f)
            t1 = need(obj, "g1_judgment", where, f, (str, type(None)))
            t2 = need(obj, "g2_judgment", where, f, (str, type(None)))
            judge = need(obj, "judge", where, f, (list, str))
            turn = need(obj, "turn", where, f, int)
            if options.turn is not None and turn != options.turn:
                continue
            name = str(judge[0]) if isinstance(judge, list) and judge else str(judge)
            qid = f"{q}|t{turn}|{m1}|{m2}"
            rows.pair(qid, str(q), m1, m2, task=f"turn {turn}")
            rows.verdict(qid, name, (m1, m2), t1, GAME1.get(str(w1), ""), where)
            rows.verdict(qid, name, (m2, m1), t2, GAME2.get(str(w2), ""), where)


SINGLE_SCHEMA = {
    "question_id": pl.String, "model": pl.String, "judge": pl.String, "turn": pl.Int8,
    "score": pl.Float64, "judgment": pl.String,
}  # fmt: skip


def read_single(paths: Sequence[str | os.PathLike[str]]) -> pl.DataFrame:
    """FastChat's single-answer judgments (module docstring): one row per line.

    Args:
        paths: ``*_single.jsonl`` files or directories (their ``.jsonl`` files).

    Returns:
        :data:`SINGLE_SCHEMA`; ``judge`` the judge model (``judge[0]``), ``score`` as logged
        (-1: FastChat read no rating).

    Raises:
        ConfigError: not JSON, a missing or mistyped field (the file, the line and the field
            named), or a pair file (``model_1``: read it with the ``fastchat`` format).
    """
    f, rows = FastChat.name, []
    for path in log_files(paths, FastChat.suffixes, f):
        for n, obj in iter_jsonl(path, f):
            where = f"{path}: line {n}"
            if "model_1" in obj:
                raise ConfigError(
                    f"{f} log {where}: a pair judgment (field 'model_1'), not a single answer: audit it with --format fastchat"
                )
            q = need(obj, "question_id", where, f, (str, int))
            model = need(obj, "model", where, f, str)
            judge = need(obj, "judge", where, f, (list, str))
            turn = need(obj, "turn", where, f, int)
            score = need(obj, "score", where, f, (int, float))
            text = need(obj, "judgment", where, f, (str, type(None)))
            name = str(judge[0]) if isinstance(judge, list) and judge else str(judge)
            rows.append((str(q), model, name, turn, float(score), text))
    return pl.DataFrame(rows, schema=SINGLE_SCHEMA, orient="row")


def single_scores(single: pl.DataFrame) -> pl.DataFrame:
    """FastChat's single-answer table (``display_result_single``) from :func:`read_single`:
    per judge, model and turn (``turn`` null: both turns) the mean ``score`` and the number
    of answers ``n``, scores of -1 dropped; sorted by judge, turn, score descending."""
    ok = single.filter(pl.col("score") != -1)
    per_turn = ok.group_by("judge", "model", "turn").agg(
        score=pl.col("score").mean(), n=pl.len()
    )
    both = ok.group_by("judge", "model").agg(score=pl.col("score").mean(), n=pl.len())
    both = both.with_columns(turn=pl.lit(None, pl.Int8)).select(per_turn.columns)
    return pl.concat([per_turn, both]).sort(
        ["judge", "turn", "score"], descending=[False, False, True], nulls_last=True
    )


__all__ = [
    "GAME1", "GAME2", "SINGLE_SCHEMA", "FastChat", "FastChatOptions", "read_single", "single_scores",
]  # fmt: skip
