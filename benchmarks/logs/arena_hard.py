"""Arena-Hard-Auto's judgment logs (lmarena/arena-hard-auto): ``model_judgment/<judge>/<model>.jsonl``.

One JSON object a line, as ``gen_judgment.py`` writes it: ``uid`` (v2; ``question_id`` in
v0.1), ``category`` (v2), ``judge``, ``model``, ``baseline`` (v2; v0.1 files have none: the
``baseline`` setting, default ``gpt-4-0314``, ``show_result.py``'s default) and ``games``, two
games. **Order shown** (``gen_judgment.py``, ``judgment()``): game 1 shows the baseline as
assistant A and the model as B; game 2 shows the model as A and the baseline as B. Each game
holds ``score`` (the label the tool read from the judge's text with its regex: ``A>>B``,
``A>B``, ``A=B``, ``B>A``, ``B>>A``, or null), ``judgment`` (the judge's output: v2 a dict
whose ``answer`` is the text, v0.1 the text itself) and the prompt; a null game is a failed
call. **Reading** (``show_result.py``, ``label_to_score``): ``A>B``, ``A>>B``, ``B<A``,
``B<<A`` → A (the answer shown first wins); ``A=B``, ``B=A`` → C (tie); ``A<B``, ``A<<B``,
``B>A``, ``B>>A`` → B; any other or null score → no verdict. The strength (``>>``) stays in
the recorded text; PC, PF and the flips count each verdict once.

**Arena-Hard's score** (:func:`battles`, :func:`battle_scores`): ``show_result.py``'s
``load_judgments(judge_names, benchmark, weight=3)`` (v2; v0.1's ``--weight``, default 3)
counts a strong verdict ``weight`` times: ``label_to_score`` gives ``A>B`` [1], ``A>>B`` [1] ×
weight, ``A=B``/``B=A`` [0.5], ``A<B``/``B>A`` [0], ``A<<B``/``B>>A`` [0] × weight, ``B<A`` [1],
``B<<A`` [1] × weight; an item's scores are game 2's list (the model as A) and 1 − each of
game 1's (the baseline as A); an item with a null game or score is dropped; the model's score
is the mean of its items' scores, all lists concatenated (the leaderboard's "Scores (%)" is
the mean of 100 bootstrap means of the same).

Instances: one per line, ``question_id`` = ``"<uid>|<model>|<baseline>"``, the model as the
candidate (``model_a``) and the baseline as the reference (``model_b``), as voirdire's cells
and win rates take them (the candidate against the reference, like MT-Bench's release), so
permutation 0 is game 2 and permutation 1 game 1; the question (``uid``) is its bootstrap cluster, ``task`` the ``category``
(``"all"`` in v0.1). The log holds no question or answer text apart from the prompt it sent:
``instruction`` and the outputs are empty.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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

#: Arena-Hard's labels (show_result.py's label_to_score) as voirdire's letters, A = shown first
LETTERS = {
    "A>B": "A", "A>>B": "A", "B<A": "A", "B<<A": "A",
    "A=B": "C", "B=A": "C",
    "A<B": "B", "A<<B": "B", "B>A": "B", "B>>A": "B",
}  # fmt: skip


class ArenaHardOptions(LogLimits):
    """``[benchmark.log]``: ``baseline``, the baseline model of lines without a ``baseline``
    field (v0.1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    baseline: str = "gpt-4-0314"


def game_text(game: dict[str, Any], where: str, i: int) -> str:
    """The judge's text of a game: ``judgment`` itself (v0.1) or its ``answer`` (v2).

    Raises:
        ConfigError: no ``judgment``, or a v2 one without a text ``answer``.
    """
    j = need(game, "judgment", f"{where}, games[{i}]", ArenaHard.name)
    if isinstance(j, str):
        return j
    if isinstance(j, dict) and isinstance(j.get("answer"), str):
        return j["answer"]
    raise ConfigError(
        f"{ArenaHard.name} log {where}: field 'games[{i}].judgment' is neither the judge's text nor an object with a text 'answer'"
    )


@BENCHMARKS.register
class ArenaHard(LogBenchmark):
    """Arena-Hard-Auto's judgment logs (module docstring); ``[benchmark.log]``: :class:`ArenaHardOptions`."""

    name = "ArenaHard"
    #: a record of the format (:meth:`~voirdire.benchmarks.logs.base.LogBenchmark.owns`)
    record_keys = (frozenset({"model", "judge", "games"}),)
    Options = ArenaHardOptions

    @classmethod
    def read(cls, path: Path, options: Any, rows: Rows) -> None:
        """The pairs and both games' verdicts of one ``model_judgment`` file."""
        for n, obj in iter_jsonl(path, cls.name):
            where = f"{path}: line {n}"
            uid = obj.get("uid", obj.get("question_id"))
            if uid is None:
                need(obj, "uid", where, cls.name)
            model = str(need(obj, "model", where, cls.name, (str, int)))
            judge = str(need(obj, "judge", where, cls.name, (str, int)))
            base = obj.get("baseline") or options.baseline
            games = need(obj, "games", where, cls.name, list)
            if len(games) != 2:
                raise ConfigError(
                    f"{cls.name} log {where}: field 'games' holds {len(games)} games, not 2"
                )
            qid = f"{uid}|{model}|{base}"
            rows.pair(
                qid, str(uid), model, base, task=str(obj.get("category") or "all")
            )
            for i, (game, shown) in enumerate(
                zip(games, ((base, model), (model, base)))
            ):
                if game is None:  # the call failed: show_result drops the item
                    rows.verdict(qid, judge, shown, None, "", where)
                    continue
                if not isinstance(game, dict):
                    raise ConfigError(
                        f"{cls.name} log {where}: field 'games[{i}]' is not an object"
                    )
                score = need(game, "score", f"{where}, games[{i}]", cls.name)
                text = game_text(game, where, i)
                rows.verdict(
                    qid,
                    judge,
                    shown,
                    text,
                    LETTERS.get(str(score), "") if score else "",
                    where,
                )


#: show_result.py's label_to_score, without the weight: (score of the answer shown first, strong)
LABEL_SCORE = {
    "A>B": (1.0, False), "A>>B": (1.0, True), "A=B": (0.5, False), "A<<B": (0.0, True),
    "A<B": (0.0, False), "B>A": (0.0, False), "B>>A": (0.0, True), "B=A": (0.5, False),
    "B<<A": (1.0, True), "B<A": (1.0, False),
}  # fmt: skip
BATTLE_SCHEMA = {
    "uid": pl.String, "judge": pl.String, "model": pl.String, "baseline": pl.String,
    "category": pl.String, "game": pl.Int8, "label": pl.String, "score": pl.Float64,
    "weight": pl.Int64,
}  # fmt: skip


def battles(
    paths: Sequence[str | os.PathLike[str]],
    *,
    weight: int = 3,
    baseline: str = "gpt-4-0314",
) -> pl.DataFrame:
    """Arena-Hard's battles of ``model_judgment`` files (module docstring, "Arena-Hard's
    score"): one row per game of every item whose two games hold a score.

    Args:
        paths: files or directories (their ``.jsonl`` files).
        weight: how many times a strong verdict counts (Arena-Hard's default 3; 1: once).
        baseline: the baseline of lines without a ``baseline`` field (v0.1).

    Returns:
        :data:`BATTLE_SCHEMA`: ``game`` 1 or 2, ``label`` as logged, ``score`` the model's
        (0, 0.5 or 1), ``weight`` (``weight`` for a strong label, else 1).

    Raises:
        ConfigError: an unreadable file, a missing field, or a label Arena-Hard's table lacks
            (naming the file, the line and the field).
    """
    if weight < 1:
        raise ConfigError(f"{ArenaHard.name}: weight must be >= 1, not {weight}")
    rows = []
    for path in log_files(paths, ArenaHard.suffixes, ArenaHard.name):
        for n, obj in iter_jsonl(path, ArenaHard.name):
            where = f"{path}: line {n}"
            games = need(obj, "games", where, ArenaHard.name, list)
            if len(games) != 2 or any(
                not isinstance(g, dict) or g.get("score") is None for g in games
            ):
                continue  # show_result: a null game or score drops the item
            uid = obj.get("uid", obj.get("question_id"))
            model = str(need(obj, "model", where, ArenaHard.name, (str, int)))
            judge = str(need(obj, "judge", where, ArenaHard.name, (str, int)))
            for game, g in ((1, games[0]), (2, games[1])):
                label = str(g["score"])
                if label not in LABEL_SCORE:
                    raise ConfigError(
                        f"{ArenaHard.name} log {where}: field 'games[{game - 1}].score' is {label[:20]!r}, "
                        f"not one of Arena-Hard's labels ({', '.join(LABEL_SCORE)})"
                    )
                first, strong = LABEL_SCORE[label]
                rows.append((str(uid), judge, model, obj.get("baseline") or baseline,
                             str(obj.get("category") or "all"), game, label,
                             first if game == 2 else 1.0 - first, weight if strong else 1))  # fmt: skip
    return pl.DataFrame(rows, schema=BATTLE_SCHEMA, orient="row")


def battle_scores(b: pl.DataFrame) -> pl.DataFrame:
    """Arena-Hard's score per (judge, model) from :func:`battles`: ``score`` = Σ score ×
    weight / Σ weight (the mean of the concatenated lists), ``battles`` = Σ weight, ``items``."""
    return (
        b.group_by("judge", "model")
        .agg(
            score=(pl.col("score") * pl.col("weight")).sum() / pl.col("weight").sum(),
            battles=pl.col("weight").sum(),
            items=pl.col("uid").n_unique(),
        )
        .sort("judge", "model")
    )


__all__ = [
    "BATTLE_SCHEMA", "LABEL_SCORE", "LETTERS", "ArenaHard", "ArenaHardOptions", "battle_scores",
    "battles", "game_text",
]  # fmt: skip
