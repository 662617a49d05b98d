"""Grading labels for judging the mitigation strategies: human verdicts or a judge's.

Source: ``docs/mitigation.md``, *Evaluation against a reference*. Named *grading* here: in
the analysis ``reference`` is the answer a candidate is compared with (the ``reference``
column), never these labels (the CLI's ``--reference`` option and the evaluation's
``reference`` argument and ``reference_source`` column keep their names). A grading table
has one row per pair: ``benchmark`` (str | null: null matches every benchmark), ``question_id``,
``candidate``, ``reference`` (str), ``ref_verdict`` (str: ``win`` | ``tie`` | ``loss``,
from the candidate's side) and a ``source`` (str) that says what the labels are: human
verdicts, or agreement with a judge (not with people).
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from voirdire.analysis.mitigation.verdicts import normalise, swap_and_tie
from voirdire.analysis.position.gold import gold_grading
from voirdire.bounds import check_cells, check_text_table
from voirdire.core import ConfigError
from voirdire.escape import unquote_table

__all__ = [
    "GRADING_COLUMNS",
    "judge_grading",
    "human_grading",
    "load_grading",
    "check_grading",
]

GRADING_COLUMNS = [
    "benchmark",
    "question_id",
    "candidate",
    "reference",
    "ref_verdict",
    "source",
]
_WINNER = {"candidate": "win", "reference": "loss", "tie": "tie"}


def judge_grading(
    judgments: pl.DataFrame, judge: str, repetition: int = 1
) -> pl.DataFrame:
    """A reference judge's *consistent* verdicts: pairs where its two orders agree (win,
    tie or loss), at ``repetition``; inconsistent and failed pairs have no reference.
    ``source`` = ``"judge <name> (agreement with a judge, not with people)"``.

    Raises:
        ConfigError: ``judge`` is not among the judgments' judges (the known ones named),
            or it has no consistent pair.
    """
    known = sorted(judgments.get_column("judge").unique().to_list())
    if judge not in known:
        raise ConfigError(
            f"reference judge {judge!r} matches no judge of these jobs; judges: {', '.join(known)}"
        )
    rows = judgments.filter(
        (pl.col("judge") == judge) & (pl.col("repetition") == repetition)
    )
    v = swap_and_tie(normalise(rows), on_conflict="undecided").filter(
        pl.col("verdict") != "undecided"
    )
    if v.height == 0:
        raise ConfigError(
            f"reference judge {judge!r} has no consistent verdict (repetition {repetition})"
        )
    src = f"judge {judge} (agreement with a judge, not with people)"
    return v.select(
        "benchmark",
        "question_id",
        "candidate",
        "reference",
        ref_verdict="verdict",
        source=pl.lit(src),
    ).unique(["benchmark", "question_id", "candidate", "reference"], keep="first")


def human_grading(
    labels: pl.DataFrame | str | os.PathLike, name: str = "labels"
) -> pl.DataFrame:
    """Human verdicts from a table or CSV: columns ``question_id`` (or ``question``),
    ``candidate``, ``reference``, ``winner`` ∈ {candidate, reference, tie}, optionally
    ``benchmark``. Several rows per pair: the majority; no strict majority → ``tie``
    (ours). Blank ``winner`` rows (an annotation CSV not yet filled) are skipped.

    Raises:
        ConfigError: unreadable file, a missing column, an unknown winner value, or no
            labelled row (naming the file/table and the culprit).
    """
    df, name = _read_labels(labels, name)
    keys = ["benchmark", "question_id", "candidate", "reference"]
    votes = (
        df.with_columns(ref_verdict=pl.col("winner").replace_strict(_WINNER))
        .group_by([*keys, "ref_verdict"])
        .len()
    )
    return (
        votes.with_columns(
            total=pl.col("len").sum().over(keys), top=pl.col("len").max().over(keys)
        )
        .filter(pl.col("len") == pl.col("top"))
        .group_by(keys)
        .agg(
            n_top=pl.len(),
            v=pl.col("ref_verdict").first(),
            total=pl.col("total").first(),
            top=pl.col("top").first(),
        )
        .select(
            *keys,
            ref_verdict=pl.when(
                (pl.col("n_top") == 1) & (pl.col("top") * 2 > pl.col("total"))
            )
            .then(pl.col("v"))
            .otherwise(pl.lit("tie")),
            source=pl.lit(f"human labels ({name})"),
        )
        .sort(keys)
    )


def _read_labels(
    labels: pl.DataFrame | str | os.PathLike, name: str
) -> tuple[pl.DataFrame, str]:
    """The labelled rows of a human-labels table or CSV (``benchmark``, ``question_id``,
    ``candidate``, ``reference``, ``winner``: str, winner lower-cased) and the name that
    errors use (the file's path for a file); see :func:`human_grading` for the errors."""
    if not isinstance(labels, pl.DataFrame):
        name = str(labels)
        if not Path(labels).is_file():
            raise ConfigError(f"reference labels file not found: {name}")
        check_text_table(labels, name)  # size, encoding, fields: before polars
        try:
            labels = pl.read_csv(labels, infer_schema_length=0)
        except Exception as exc:  # noqa: BLE001 - polars raises several kinds
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConfigError(f"{name}: not a readable CSV ({first[:300]})") from None
        check_cells(labels, name)
        # a people_to_label.csv we wrote, filled: its names as they were ('-1 is -1)
        labels = unquote_table(labels)
    df = (
        labels.rename({"question": "question_id"})
        if "question" in labels.columns and "question_id" not in labels.columns
        else labels
    )
    missing = [
        c
        for c in ("question_id", "candidate", "reference", "winner")
        if c not in df.columns
    ]
    if missing:
        raise ConfigError(
            f"{name}: missing column(s) {', '.join(missing)} (need question_id, candidate, reference, winner)"
        )
    if "benchmark" not in df.columns:
        df = df.with_columns(benchmark=pl.lit(None, dtype=pl.String))
    df = df.select(
        pl.col("benchmark").cast(pl.String),
        *[pl.col(c).cast(pl.String) for c in ("question_id", "candidate", "reference")],
        winner=pl.col("winner").cast(pl.String).str.strip_chars().str.to_lowercase(),
    ).filter(pl.col("winner").is_not_null() & (pl.col("winner") != ""))
    bad = (
        df.filter(~pl.col("winner").is_in(list(_WINNER)))
        .get_column("winner")
        .unique()
        .sort()
        .to_list()
    )
    if bad:
        raise ConfigError(f"{name}: winner values {bad} not in {sorted(_WINNER)}")
    if df.height == 0:
        raise ConfigError(f"{name}: no labelled row (fill the 'winner' column)")
    return df, name


def check_grading(ref: pl.DataFrame, judgments: pl.DataFrame) -> None:
    """Check a reference table against the judgments it is to grade.

    Raises:
        ConfigError: labels naming candidates (or references) absent from the judgments
            (named), or labelled pairs that match no judged pair (the first few named).
    """
    pairs = judgments.select(
        "benchmark", "question_id", "candidate", "reference"
    ).unique()
    for col in ("candidate", "reference"):
        unknown = sorted(
            set(ref.get_column(col).to_list()) - set(pairs.get_column(col).to_list())
        )
        if unknown:
            raise ConfigError(
                f"reference labels name unknown {col}(s): {', '.join(map(str, unknown[:10]))}"
            )
    on = ["question_id", "candidate", "reference"]
    r = ref.with_columns(_i=pl.int_range(pl.len()))
    hit = r.join(pairs, on=on, how="inner").filter(
        pl.col("benchmark").is_null()
        | (pl.col("benchmark") == pl.col("benchmark_right"))
    )
    orphan = r.filter(~pl.col("_i").is_in(hit.get_column("_i").implode()))
    if orphan.height:
        shown = "; ".join(
            f"{q}/{c} vs {x}" for q, c, x in orphan.select(on).head(5).iter_rows()
        )
        raise ConfigError(
            f"{orphan.height} reference label(s) match no judged pair (question/candidate vs reference): {shown}"
        )


def load_grading(spec: str | pl.DataFrame, judgments: pl.DataFrame) -> pl.DataFrame:
    """The reference of ``--reference``: ``gold`` (the benchmark's gold labels carried by
    the judgments, :func:`voirdire.analysis.position.gold.gold_grading`), ``judge:NAME``
    (:func:`judge_grading`: agreement with a judge) or a labels CSV path / table
    (:func:`human_grading`), checked with :func:`check_grading`. Columns
    :data:`GRADING_COLUMNS`.

    Raises:
        ConfigError: see the functions above.
    """
    if isinstance(spec, str) and spec == "gold":
        ref = gold_grading(judgments)
    elif isinstance(spec, str) and spec.startswith("judge:"):
        ref = judge_grading(judgments, spec.split(":", 1)[1])
    else:
        ref = human_grading(spec)
    check_grading(ref, judgments)
    return ref.select(GRADING_COLUMNS)
