"""PRD's Vicuna-80 reviews (bcdnlp/PRD, "Peer Rank and Discussion"):
``data/vicuna80/ratings-<reviewer>/answer_<model 1>-vs-answer_<model 2>-<reviewer>-reviewer[_threeclass].jsonl``.

One file per ordered model pair and reviewer, one JSON object a line, as
``peer_rank/eval_gpt_review.py`` (and its Claude, Bard and Vicuna twins) writes it:
``review_id``, ``question_id``, ``answer1_id``, ``answer2_id``, ``reviewer_id`` (the prompt's
category, not the reviewer), ``metadata``, ``text`` (the reviewer's output) and ``score``.
**Order shown** (``eval_gpt_review.py``, ``gen_prompt``): the file is named
``'-vs-'.join(answer files)``, and the first answer file fills ``{answer_1}``, "Assistant 1",
shown first in ``vicuna_prompt_threeclass.jsonl``'s template; so ``<model 1>`` of the name is
shown first (``answer1_id`` is its answer's id). The reviewers were run on both orders
(``gen_*_reviews_all.sh`` runs ``-a X Y`` and ``-a Y X``), so an audit holds both orders.
**Reading** (``parse_three_class_score``: the last line's number; the Vicuna reviewer's
``parse_score_to_three_score``: the first line's two scores): ``score`` 1 → A (Assistant 1,
shown first, wins), 2 → B, 3 → C (a tie); -1 (PRD could not parse it; its notebook counts it as
a tie) or any other → no verdict.

The reviewer is the directory's name after ``ratings-`` (``[benchmark.log] reviewer`` names it
for files kept elsewhere); the models are the name's parts between ``answer_`` and
``-vs-answer_`` and before ``-<reviewer>-reviewer``. Names with ``answer-`` (hyphen) in
``ratings-gpt35`` are a second run that PRD's notebook (``review_filename``, glob
``answer_<m1>-vs-answer_<m2>-<reviewer>-reviewer*.jsonl``) does not read: skipped likewise.

**Human votes** (``ratings-human``, reviewer ``human``, ``[benchmark.log] human_reviewer``): each line
``question_id``, ``text`` (the question) and ``score``, one line per vote (about three per
question; each question was shown to humans in one order only). They are not a judge: they
give the **gold label**, as PRD's notebook does (``format_df`` and ``human_majority``): each
vote as -1 (model 1 of its file better), +1 (model 2), 0 (a tie, or an unparsed -1); the
votes on a question and model pair (from both files, mapped to the models) averaged; the sign
of the mean names the better model, a mean of 0 (as many votes each way, or only ties) is a
tie. So one vote each way and a tie give a tie; two votes for a model and a tie give it.

Instances: one per (question, unordered model pair): ``question_id`` =
``"<question_id>|<model a>|<model b>"`` with the two models sorted by name (``model_a`` shown
first in permutation 0), the question its bootstrap cluster; ``instruction`` the question's
text where humans voted on it (their files carry it), else ``""``; answers empty (the review
files keep only their ids).
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import AliasChoices, ConfigDict, Field

from voirdire.benchmarks.logs.base import LogBenchmark
from voirdire.benchmarks.logs.reading import (
    INSTANCES,
    LogLimits,
    Rows,
    iter_jsonl,
    need,
    temp_name,
)
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.core import ConfigError

#: PRD's score as voirdire's letter, A = Assistant 1 (shown first)
LETTERS = {1: "A", 2: "B", 3: "C"}
#: a vote as PRD's notebook counts it (format_df): model 1 of the file -1, model 2 +1, tie 0
VOTE = {1: -1, 2: 1, 3: 0, -1: 0}


class PRDOptions(LogLimits):
    """``[benchmark.log]``: ``reviewer``, the reviewer of files not in a ``ratings-<reviewer>``
    directory; ``human_reviewer``, the reviewer whose files are human votes (gold labels;
    ``people``, its former name, is still read)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reviewer: str | None = None
    human_reviewer: str = Field(
        default="human", validation_alias=AliasChoices("human_reviewer", "people")
    )


def reviewer_of(path: Path, options: Any) -> str:
    """The reviewer of a review file: its directory's name after ``ratings-``, else the
    ``reviewer`` setting.

    Raises:
        ConfigError: neither (the file is named)."""
    parent = path.parent.name
    if parent.startswith("ratings-") and len(parent) > len("ratings-"):
        return parent[len("ratings-") :]
    if options.reviewer:
        return options.reviewer
    raise ConfigError(
        f'{PRD.name} log {path}: not in a ratings-<reviewer> directory; name the reviewer: [benchmark.log] reviewer = "..."'
    )


def models_of(path: Path, reviewer: str) -> tuple[str, str] | None:
    """``(model shown first, model shown second)`` from a review file's name; ``None`` for
    PRD's hyphenated second run (``answer-<m1>-vs-answer-<m2>...``, not read).

    Raises:
        ConfigError: a name not in PRD's layout."""
    if path.name.startswith("answer-"):
        return None
    m = re.fullmatch(
        rf"answer_(.+?)-vs-answer_(.+)-{re.escape(reviewer)}-reviewer(?:[_-]threeclass)?\.jsonl",
        path.name,
    )
    if not m:
        raise ConfigError(
            f"{PRD.name} log {path}: the name is not answer_<model 1>-vs-answer_<model 2>-{reviewer}-reviewer[_threeclass].jsonl"
        )
    return m.group(1), m.group(2)


def pair_id(question: Any, m1: str, m2: str) -> tuple[str, str, str]:
    """``(question_id, model_a, model_b)`` of a question and model pair (models sorted)."""
    a, b = sorted((m1, m2))
    return f"{question}|{a}|{b}", a, b


def human_gold(
    files: list[Path], options: Any
) -> tuple[dict[str, str], dict[str, str]]:
    """Human gold labels (module docstring): ``question_id -> model or "tie"``, and the
    questions' text ``question -> text``, from the files of reviewer ``options.human_reviewer``.

    Raises:
        ConfigError: a malformed file (file, line and field named)."""
    votes: dict[str, list[int]] = defaultdict(list)
    names: dict[str, tuple[str, str]] = {}
    texts: dict[str, str] = {}
    for f in files:
        m1, m2 = models_of(f, options.human_reviewer) or (None, None)
        if m1 is None:
            continue
        for n, obj in iter_jsonl(f, PRD.name):
            where = f"{f}: line {n}"
            q = need(obj, "question_id", where, PRD.name, (int, str))
            score = need(obj, "score", where, PRD.name, int)
            if score not in VOTE:
                raise ConfigError(
                    f"{PRD.name} log {where}: field 'score' is {score!r}, not 1, 2, 3 or -1"
                )
            qid, a, b = pair_id(q, m1, m2)
            names[qid] = (a, b)
            # the vote for the sorted pair: +1 = model b better
            votes[qid].append(VOTE[score] if (m1, m2) == (a, b) else -VOTE[score])
            if isinstance(obj.get("text"), str):
                texts[str(q)] = obj["text"]
    gold = {}
    for qid, v in votes.items():
        s = sum(v)
        gold[qid] = "tie" if s == 0 else names[qid][1 if s > 0 else 0]
    return gold, texts


@BENCHMARKS.register
class PRD(LogBenchmark):
    """PRD's Vicuna-80 reviews and human votes (module docstring); ``[benchmark.log]``:
    :class:`PRDOptions`."""

    name = "PRD"
    #: a record of the format (:meth:`~voirdire.benchmarks.logs.base.LogBenchmark.owns`)
    record_keys = (frozenset({"question_id", "text"}),)
    Options = PRDOptions

    @classmethod
    def read(cls, path: Path, options: Any, rows: Rows) -> None:
        """The pairs and verdicts of one review file (human files give no verdicts: they
        are read for the gold labels, :func:`human_gold`)."""
        reviewer = reviewer_of(path, options)
        if reviewer == options.human_reviewer:
            return
        models = models_of(path, reviewer)
        if models is None:
            return
        for n, obj in iter_jsonl(path, cls.name):
            where = f"{path}: line {n}"
            q = need(obj, "question_id", where, cls.name, (int, str))
            text = need(obj, "text", where, cls.name, str)
            score = need(obj, "score", where, cls.name, (int, float))
            qid, a, b = pair_id(q, *models)
            rows.pair(qid, str(q), a, b)
            letter = LETTERS.get(int(score), "") if score == int(score) else ""
            rows.verdict(qid, reviewer, models, text, letter, where)

    def _copy(
        self, files: list[Path], digest: str
    ) -> tuple[pl.DataFrame, dict[str, str]]:
        """The shared normalised copy, with the human gold labels and the questions' text
        set on the pairs (rewritten once when they differ)."""
        humans = [
            f
            for f in files
            if reviewer_of(f, self.settings) == self.settings.human_reviewer
        ]
        gold, texts = human_gold(humans, self.settings)
        pairs, keys = super()._copy(files, digest)
        patched = pairs.with_columns(
            gold=pl.col("question_id").replace_strict(gold, default=None, return_dtype=pl.String),
            instruction=pl.col("cluster").replace_strict(texts, default="", return_dtype=pl.String),
        )  # fmt: skip
        if not patched.equals(pairs):
            tmp = temp_name(self.data_dir / INSTANCES)
            patched.write_parquet(tmp)
            os.replace(tmp, self.data_dir / INSTANCES)
        return patched, keys


__all__ = [
    "LETTERS",
    "PRD",
    "PRDOptions",
    "VOTE",
    "models_of",
    "pair_id",
    "human_gold",
    "reviewer_of",
]
