"""JudgeBench's figures for :mod:`perf.log_findings`, read from what ``voirdire audit`` wrote
(``metrics/judge_metrics.csv``, ``judgments.parquet``) on the two ``arena_hard`` files
together and on each alone, and JudgeBench's own score rule (``utils/metrics.py``,
``compute_final_metrics`` with ``reverse_order``) applied both to the command's judgments and
to the files' own decisions, to compare."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

__all__ = ["alone_vs_together", "file_scores", "judges", "score", "split"]

COLUMNS = ["pc", "pf", "pass_kappa", "error_rate", "accuracy", "accuracy_shown",
           "accuracy_swapped", "both_correct"]  # fmt: skip


def judges(audit: Path) -> pl.DataFrame:
    """Per judge: its own pairs, PC, flip rate, PF, first-shown picks (of the decided
    verdicts), κ between the orders, errors (judgments without a verdict), accuracy against
    the label (each verdict; shown first, swapped, both orders right) and the score by
    JudgeBench's rule (:func:`score`)."""
    jm = pl.read_csv(audit / "metrics" / "judge_metrics.csv")
    j = pl.read_parquet(audit / "judgments.parquet")
    own = j.group_by("judge").agg(
        pairs=pl.col("question_id").n_unique(),
        judgments=pl.len(),
        no_verdict=pl.col("failed").sum(),
        first_picks=(pl.col("choice") == "A").filter(pl.col("choice").is_in(["A", "B"])).mean(),
    )  # fmt: skip
    return (
        jm.select("judge", *COLUMNS)
        .with_columns(flip=1 - pl.col("pc"))
        .join(own, on="judge")
        .join(score(j), on="judge")
        .join(split(j), on="judge")
        .sort("judge")
    )


def _votes(j: pl.DataFrame) -> pl.DataFrame:
    """Per judgment +1 (the label's response chosen), −1 (the other), 0 (a tie or none)."""
    return j.with_columns(
        vote=pl.when(pl.col("chosen") == pl.col("gold")).then(1)
        .when(pl.col("chosen").is_not_null()).then(-1).otherwise(0)
    )  # fmt: skip


def score(j: pl.DataFrame) -> pl.DataFrame:
    """JudgeBench's score per judge from the judgments: per pair the votes of its two
    orders summed, correct when > 0; ``100 × correct / pairs``."""
    per = _votes(j).group_by("judge", "question_id").agg(s=pl.col("vote").sum())
    return per.group_by("judge").agg(score=100 * (pl.col("s") > 0).mean())


def split(j: pl.DataFrame) -> pl.DataFrame:
    """Shares of a judge's pairs: right in both orders, right in one and a tie (or no
    verdict) in the other, right in one and wrong in the other."""
    per = (
        _votes(j)
        .group_by("judge", "question_id")
        .agg(right=(pl.col("vote") == 1).sum(), wrong=(pl.col("vote") == -1).sum())
    )
    return per.group_by("judge").agg(
        right_both=(pl.col("right") == 2).mean(),
        right_tie=((pl.col("right") == 1) & (pl.col("wrong") == 0)).mean(),
        right_wrong=((pl.col("right") == 1) & (pl.col("wrong") == 1)).mean(),
    )


def _flip(d):
    return {"A>B": "B>A", "B>A": "A>B"}.get(d, d)


def file_scores(files: list[Path]) -> pl.DataFrame:
    """``compute_final_metrics``' score and null decisions per file, from the file's own
    records (its decisions, the second flipped back; a null judgment a null decision), with
    the judge named as the audit names it (``<judge_name>:<judge_model>``)."""
    rows = []
    for f in files:
        n = correct = nulls = 0
        name = ""
        for line in f.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            pair = json.loads(line)
            j1, j2 = pair["judgments"]
            d1 = j1["decision"] if j1 is not None else None
            d2 = _flip(j2["decision"] if j2 is not None else None)
            nulls += (d1 is None) + (d2 is None)
            counter = sum(
                1 if d == pair["label"] else -1 if d == _flip(pair["label"]) else 0
                for d in (d1, d2)
            )
            n += 1
            correct += counter > 0
            model = next((x["judgment"]["judge_model"] for x in (j1, j2) if x), "")
            name = f"{pair['judge_name']}:{model}"
        rows.append((name, n, nulls, 100 * correct / n))
    return pl.DataFrame(
        rows,
        schema=["judge", "file_pairs", "null_decisions", "file_score"],
        orient="row",
    )


def alone_vs_together(together: Path, alone: list[Path]) -> pl.DataFrame:
    """Each judge's figures audited with the other file and alone; the largest |difference|
    over :data:`COLUMNS`."""
    t = pl.read_csv(together / "metrics" / "judge_metrics.csv").select(
        "judge", *COLUMNS
    )
    a = pl.concat(
        [pl.read_csv(d / "metrics" / "judge_metrics.csv").select("judge", *COLUMNS) for d in alone]
    )  # fmt: skip
    both = t.join(a, on="judge", suffix="_alone")
    diff = pl.max_horizontal(
        [(pl.col(c) - pl.col(f"{c}_alone")).abs() for c in COLUMNS]
    )
    return both.select("judge", "accuracy_shown", "accuracy_shown_alone", "accuracy_swapped",
                       "accuracy_swapped_alone", "pf", "pf_alone", "error_rate",
                       "error_rate_alone", largest_diff=diff)  # fmt: skip
