"""The gold board: the benchmark's ``gold`` labels on the same pairs the judges saw.

Where judgments carry ``gold`` (a human label, or the dataset's: PandaLM's test set's
majority of three annotators, LLMBar's), each pair's label becomes one comparison of the
board :data:`GOLD` / ``gold`` / ``gold`` (judge, strategy, view); it is fitted with the judges' boards, on the same
bootstrap draws, and every judge's pooled and order-invariant boards are compared with it
(:func:`~voirdire.analysis.ranking.flips.default_pairs`: τ, ρ with intervals, flips).
LLMBar's pairs are two anonymous outputs, not named models: no leaderboard exists there.
"""

from __future__ import annotations

import polars as pl

from voirdire.analysis.ranking.order_views import COMPARISON_SCHEMA

__all__ = ["GOLD", "OLD_GOLD", "gold_comparisons", "read_gold"]

#: the gold board's judge and view (and strategy) in ``voirdire rank``'s tables
GOLD = "gold"
#: the name the gold board had before (``people``): still read in older results
OLD_GOLD = "people"
#: the columns of rank's tables that can name the gold board
_NAMED = ("judge", "view", "judge_b", "view_b")


def read_gold(table: pl.DataFrame) -> pl.DataFrame:
    """``table`` (``metrics/leaderboard.csv`` or ``rank_flips.csv`` as read back) with the
    gold board named :data:`GOLD` where an older ``voirdire rank`` wrote
    :data:`OLD_GOLD` (in ``judge``, ``view``, ``judge_b``, ``view_b``); same shape."""
    return table.with_columns(
        pl.col(c).replace(OLD_GOLD, GOLD) for c in _NAMED if c in table.columns
    )


def gold_comparisons(judgments: pl.DataFrame) -> pl.DataFrame:
    """The gold board's comparisons: each pair's ``gold`` label once (judges, orders and
    repetitions share it), as judge, strategy and view :data:`GOLD`. A gold
    equal to the candidate is a win, to the reference a loss, ``"tie"`` a tie; pairs without
    a gold label are left out (an empty table when the benchmark has none).

    Returns:
        :data:`COMPARISON_SCHEMA` rows.
    """
    if "gold" not in judgments.columns:
        return pl.DataFrame(schema=COMPARISON_SCHEMA)
    g = (
        judgments.filter(
            pl.col("gold").is_not_null()
            & pl.col("candidate").is_not_null()
            & pl.col("reference").is_not_null()
        )
        .unique(["benchmark", "question_id", "candidate", "reference"], keep="first")
        .filter(
            pl.col("gold").is_in(["tie"])
            | (pl.col("gold") == pl.col("candidate"))
            | (pl.col("gold") == pl.col("reference"))
        )
    )
    return g.select(
        "benchmark",
        judge=pl.lit(GOLD), strategy=pl.lit(GOLD), view=pl.lit(GOLD),
        question_id="question_id", a="candidate", b="reference",
        win=(pl.col("gold") == pl.col("candidate")).cast(pl.Float64),
        tie=(pl.col("gold") == "tie").cast(pl.Float64),
    ).sort("benchmark", "question_id", "a", "b").cast(COMPARISON_SCHEMA)  # type: ignore[arg-type]  # fmt: skip
