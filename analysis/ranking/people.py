"""The people's leaderboard: the benchmark's ``gold`` labels on the same pairs the judges saw.

Where judgments carry ``gold`` (people's label, or the dataset's: PandaLM's test set's
majority of three annotators, LLMBar's), each pair's label becomes one comparison of the
board ``people`` / ``gold`` / ``people``; it is fitted with the judges' boards, on the same
bootstrap draws, and every judge's pooled and order-invariant boards are compared with it
(:func:`~voirdire.analysis.ranking.flips.default_pairs`: τ, ρ with intervals, flips).
LLMBar's pairs are two anonymous outputs, not named models: no leaderboard exists there.
"""

from __future__ import annotations

import polars as pl

from voirdire.analysis.ranking.order_views import COMPARISON_SCHEMA

__all__ = ["people_comparisons"]


def people_comparisons(judgments: pl.DataFrame) -> pl.DataFrame:
    """The people's comparisons: each pair's ``gold`` label once (judges, orders and
    repetitions share it), as judge ``people``, strategy ``gold``, view ``people``. A gold
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
        judge=pl.lit("people"), strategy=pl.lit("gold"), view=pl.lit("people"),
        question_id="question_id", a="candidate", b="reference",
        win=(pl.col("gold") == pl.col("candidate")).cast(pl.Float64),
        tie=(pl.col("gold") == "tie").cast(pl.Float64),
    ).sort("benchmark", "question_id", "a", "b").cast(COMPARISON_SCHEMA)  # type: ignore[arg-type]  # fmt: skip
