"""Accuracy against gold labels: is the judge right, in each order and in both?

Source: ``docs/gold-labels.md`` (the definitions are ours; the per-order accuracies and
both-orders-correct are the figures Zeng et al. (ICLR 2024) report for their release as
``correct_False``, ``correct_True`` and ``correct_both``, with its convention for a failed
verdict: not correct, over all items).

Input: judgments (``voirdire.schema.JUDGMENT_SCHEMA``) with a ``gold`` column
(str | null: the candidate the dataset labels better, ``"tie"``, or null = no label).
Pairwise and score-mode rows only; list-wise rows carry no gold.

Definitions, per judgment pair (one instance, one repetition; :data:`PAIR_KEYS`):

- *correct* (one order): the verdict chose the gold candidate, or the gold label is
  ``"tie"`` and the verdict is the tie option. A tie verdict against a labelled winner, a
  winner against a tie label, a letter outside the options and a **failed verdict** (no
  output, nothing extracted) are not correct: failures count in the denominator, so a
  judge cannot gain accuracy by failing on the hard items (its error rate is reported
  beside).
- Unlabelled pairs (gold null) are left out of every figure.
- ``shown`` order = the candidates as the data lists them (``shown[0] == candidate``:
  permutation 0 of ``permutations = "both"``); ``swapped`` = the other order. An order
  that was not asked (no row: ``permutations = "original"``) is left out of that order's
  figure and of both-orders-correct.

Figures per cell (benchmark, judge, candidate, task) and per (benchmark, judge), as ratios
of sums over pairs (pooled, like PC):

- ``accuracy`` = (correct shown + correct swapped) / (asked shown + asked swapped);
- ``accuracy_shown`` = correct shown / asked shown; ``accuracy_swapped`` likewise;
- ``both_correct`` = pairs correct in both orders / pairs asked in both orders;
- ``n_gold`` = labelled pairs.

Intervals: the project's cluster bootstrap over questions
(:func:`voirdire.analysis.position.uncertainty.cluster_bootstrap`), 95 % percentile.
"""

from __future__ import annotations

import polars as pl

from voirdire.analysis.position.formulas import ratio_statistic
from voirdire.analysis.position.pairing import (
    PAIR_KEYS,
    PAIRWISE_MODES,
    meet_orders,
    side,
)
from voirdire.analysis.stats.bootstrap import cluster_bootstrap, in_clusters
from voirdire.core import ConfigError

__all__ = [
    "GOLD_FIGURES", "GOLD_CELL_COLUMNS", "GOLD_JUDGE_COLUMNS", "has_gold", "gold_pairs", "gold_sums",
    "gold_accuracy", "gold_cells", "gold_judges", "with_gold", "gold_grading",
]  # fmt: skip

CELL_KEYS = ["benchmark", "judge", "candidate", "task"]
JUDGE_KEYS = ["benchmark", "judge"]
#: the figures (estimates; the judge table adds ``<figure>_lo``/``_hi``)
GOLD_FIGURES = ["accuracy", "accuracy_shown", "accuracy_swapped", "both_correct"]
GOLD_CELL_COLUMNS = ["n_gold", *GOLD_FIGURES]
GOLD_JUDGE_COLUMNS = [
    "n_gold",
    *(c for f in GOLD_FIGURES for c in (f, f"{f}_lo", f"{f}_hi")),
]
#: summed per question: asked and correct per order, asked both, correct both, pairs
_SUMS = [
    "asked1",
    "correct1",
    "asked2",
    "correct2",
    "asked_both",
    "correct_both",
    "pairs",
]


def has_gold(judgments: pl.DataFrame) -> bool:
    """Whether any pairwise judgment carries a gold label."""
    if "gold" not in judgments.columns:
        return False
    return (
        judgments.filter(
            pl.col("mode").is_in(PAIRWISE_MODES) & pl.col("gold").is_not_null()
        ).height
        > 0
    )


def gold_pairs(judgments: pl.DataFrame) -> pl.DataFrame:
    """One row per labelled judgment pair (:data:`PAIR_KEYS` plus ``gold``):
    ``asked1``/``asked2`` (bool: the shown / swapped order has a row), ``correct1``/
    ``correct2`` (bool: that order's verdict is correct; false when not asked).

    Correctness of a row: ``chosen == gold`` for a labelled winner, ``tie`` for a tie
    label; failed rows are not correct (module docstring). Duplicate rows of one order:
    the first counts (the one pairing: :func:`voirdire.analysis.position.pairing.meet_orders`)."""
    if "gold" not in judgments.columns:
        return pl.DataFrame(
            schema={
                **{k: judgments.schema.get(k, pl.String) for k in PAIR_KEYS},
                "gold": pl.String,
                "asked1": pl.Boolean,
                "correct1": pl.Boolean,
                "asked2": pl.Boolean,
                "correct2": pl.Boolean,
            }
        )
    rows = judgments.filter(
        pl.col("mode").is_in(PAIRWISE_MODES) & pl.col("gold").is_not_null()
    )
    ok = ~(pl.col("failed").fill_null(True) | pl.col("extracted").is_null())
    is_tie = pl.col("gold") == "tie"
    correct = ok & pl.when(is_tie).then(pl.col("tie").fill_null(False)).otherwise(
        pl.col("chosen").eq_missing(pl.col("gold"))
    )
    per_order = rows.lazy().select(
        *PAIR_KEYS, "gold", _c=correct.fill_null(False), side=side()
    )
    return (
        meet_orders(per_order, PAIR_KEYS, {"_c": "correct"}, pl.col("gold").first())
        .select(
            *PAIR_KEYS,
            "gold",
            "asked1",
            pl.col("correct1").fill_null(False),
            "asked2",
            pl.col("correct2").fill_null(False),
        )
        .collect()
    )


def gold_sums(judgments: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per ``keys`` the integer sums of :data:`_SUMS` over the labelled pairs."""
    p = gold_pairs(judgments)
    both = pl.col("asked1") & pl.col("asked2")
    return p.group_by(keys).agg(
        asked1=pl.col("asked1").sum().cast(pl.Int64),
        correct1=(pl.col("asked1") & pl.col("correct1")).sum().cast(pl.Int64),
        asked2=pl.col("asked2").sum().cast(pl.Int64),
        correct2=(pl.col("asked2") & pl.col("correct2")).sum().cast(pl.Int64),
        asked_both=both.sum().cast(pl.Int64),
        correct_both=(both & pl.col("correct1") & pl.col("correct2"))
        .sum()
        .cast(pl.Int64),
        pairs=pl.len().cast(pl.Int64),
    )


def _ratio(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    return pl.when(b > 0).then(a.cast(pl.Float64) / b).otherwise(None)


def _figures(sums: pl.DataFrame) -> pl.DataFrame:
    c = pl.col
    return sums.with_columns(
        n_gold=c("pairs"),
        accuracy=_ratio(c("correct1") + c("correct2"), c("asked1") + c("asked2")),
        accuracy_shown=_ratio(c("correct1"), c("asked1")),
        accuracy_swapped=_ratio(c("correct2"), c("asked2")),
        both_correct=_ratio(c("correct_both"), c("asked_both")),
    )


def gold_accuracy(
    judgments: pl.DataFrame, keys: list[str] | None = None
) -> pl.DataFrame:
    """The gold figures (:data:`GOLD_CELL_COLUMNS`) per ``keys`` (default benchmark,
    judge), without intervals; empty when no judgment carries a label."""
    keys = keys or JUDGE_KEYS
    return (
        _figures(gold_sums(judgments, keys))
        .select(*keys, *GOLD_CELL_COLUMNS)
        .sort(keys)
    )


def gold_cells(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per cell (benchmark, judge, candidate, task) with labelled pairs:
    :data:`GOLD_CELL_COLUMNS` (module docstring)."""
    return gold_accuracy(judgments, CELL_KEYS)


#: figure -> its ratio of per-question sums (for the bootstrap)
_STATISTICS = {
    "accuracy": ratio_statistic(["correct1", "correct2"], ["asked1", "asked2"]),
    "accuracy_shown": ratio_statistic(["correct1"], ["asked1"]),
    "accuracy_swapped": ratio_statistic(["correct2"], ["asked2"]),
    "both_correct": ratio_statistic(["correct_both"], ["asked_both"]),
}


def gold_judges(
    judgments: pl.DataFrame,
    *,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    clusters: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per (benchmark, judge) with labelled pairs: :data:`GOLD_JUDGE_COLUMNS`, the
    figures pooled over the judge's pairs with cluster-bootstrap percentile intervals
    (questions resampled, or the ``clusters`` a benchmark declares:
    :func:`~voirdire.analysis.position.uncertainty.in_clusters`;
    :func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`)."""
    per_q = gold_sums(judgments, [*JUDGE_KEYS, "question_id"])
    if per_q.height == 0:
        return pl.DataFrame(
            schema={
                "benchmark": pl.String,
                "judge": pl.String,
                "n_gold": pl.Int64,
                **{c: pl.Float64 for c in GOLD_JUDGE_COLUMNS[1:]},
            }
        )
    vals = in_clusters(
        per_q.with_columns([pl.col(c).cast(pl.Float64) for c in _SUMS]), clusters
    )
    ci = cluster_bootstrap(
        vals,
        _SUMS,
        _STATISTICS,
        groups=["judge"],
        replicates=replicates,
        level=level,
        seed=seed,
    )
    est = gold_accuracy(judgments, JUDGE_KEYS)
    wide = ci.pivot(on="metric", index=JUDGE_KEYS, values=["lo", "hi"])
    wide = wide.rename(
        {f"{s}_{f}": f"{f}_{s}" for f in GOLD_FIGURES for s in ("lo", "hi")}
    )
    out = est.join(wide, on=JUDGE_KEYS, how="left")
    nan_to_null = [
        pl.when(pl.col(c).is_nan()).then(None).otherwise(pl.col(c)).alias(c)
        for c in GOLD_JUDGE_COLUMNS[1:]
    ]
    return (
        out.with_columns(nan_to_null)
        .select(*JUDGE_KEYS, *GOLD_JUDGE_COLUMNS)
        .sort(JUDGE_KEYS)
    )


def with_gold(
    judgments: pl.DataFrame,
    judge_metrics: pl.DataFrame,
    cell_metrics: pl.DataFrame,
    *,
    replicates: int = 1000,
    clusters: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The judge and cell tables with the gold columns joined (left: a judge or cell
    without labelled pairs gets nulls); unchanged when no judgment carries a label (the
    release benchmarks: no gold columns at all)."""
    if not has_gold(judgments):
        return judge_metrics, cell_metrics
    jm = judge_metrics.join(
        gold_judges(judgments, replicates=replicates, clusters=clusters),
        on=JUDGE_KEYS,
        how="left",
    )
    cm = cell_metrics.join(gold_cells(judgments), on=CELL_KEYS, how="left")
    return jm, cm


def gold_grading(judgments: pl.DataFrame) -> pl.DataFrame:
    """The judgments' gold labels as mitigation grading labels
    (:data:`voirdire.analysis.mitigation.grading.GRADING_COLUMNS`): per (benchmark, question,
    candidate, reference) ``ref_verdict`` ``win`` (gold = the candidate), ``loss`` (gold =
    the reference) or ``tie``; ``source`` = ``"gold labels (<benchmark>)"``.

    Raises:
        ConfigError: no judgment carries a gold label.
    """
    if not has_gold(judgments):
        raise ConfigError(
            "--reference gold: these judgments carry no gold label (the benchmark has none); "
            "use --reference judge:NAME (agreement with a judge) or a labels CSV"
        )
    rows = judgments.filter(
        pl.col("mode").is_in(PAIRWISE_MODES) & pl.col("gold").is_not_null()
    )
    g = pl.col("gold")
    verdict = pl.when(g == "tie").then(pl.lit("tie")).when(g == pl.col("candidate")).then(pl.lit("win")).when(
        g == pl.col("reference")).then(pl.lit("loss")).otherwise(None)  # fmt: skip
    out = rows.select(
        "benchmark", "question_id", "candidate", "reference", ref_verdict=verdict
    ).drop_nulls("ref_verdict")
    out = out.unique(
        ["benchmark", "question_id", "candidate", "reference"],
        keep="first",
        maintain_order=True,
    )
    return out.with_columns(source=pl.format("gold labels ({})", pl.col("benchmark")))
