"""Order views: the comparisons each leaderboard is fitted on.

A *board* is one (benchmark, judge, strategy, view): the verdicts of a strategy
(:mod:`voirdire.analysis.mitigation`) seen from one order or from both.

- Strategies whose verdicts keep their order (``side`` 0/1: ``single`` — each
  order's own verdict —, ``jury``, ``logprob-debiased``, ...) give three views: ``first``
  (the candidate shown first, ``side`` 0), ``swapped`` (shown second) and ``pooled``
  (both).
- Order-invariant strategies (``side`` null: ``swap-tie``, ``gate``, ``bpc``, ...)
  give one view, ``combined``.

A *comparisons* table (:data:`COMPARISON_SCHEMA`) has one row per decided verdict:
``a`` the candidate, ``b`` the reference, ``win`` (1.0: ``a`` won, else 0.0) and ``tie``
(1.0: a tie, else 0.0); ``undecided`` verdicts (failures, the gate's escalations) are left
out, and ``n`` in the leaderboard counts what remains.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from voirdire.analysis.mitigation.registry import (
    apply_strategies,
    default_strategies,
    strategy,
)

__all__ = ["COMPARISON_SCHEMA", "comparisons", "order_views"]

COMPARISON_SCHEMA = {
    "benchmark": pl.String, "judge": pl.String, "strategy": pl.String, "view": pl.String,
    "question_id": pl.String, "a": pl.String, "b": pl.String, "win": pl.Float64, "tie": pl.Float64,
}  # fmt: skip


def comparisons(verdicts: pl.DataFrame) -> pl.DataFrame:
    """The comparisons of every view of a verdict table.

    Args:
        verdicts: :data:`~voirdire.analysis.mitigation.verdicts.VERDICT_COLUMNS` plus a
            ``strategy`` column (str; ``"single"`` when absent), as
            :func:`~voirdire.analysis.mitigation.registry.apply_strategies` returns.

    Returns:
        :data:`COMPARISON_SCHEMA` rows: per strategy with ordered verdicts the ``first``,
        ``swapped`` and ``pooled`` views, per order-invariant strategy ``combined``.
    """
    v = (
        verdicts
        if "strategy" in verdicts.columns
        else verdicts.with_columns(strategy=pl.lit("single"))
    )
    v = v.filter(pl.col("verdict") != "undecided").select(
        "benchmark", "judge", "strategy", "side", "question_id",
        a="candidate", b="reference",
        win=(pl.col("verdict") == "win").cast(pl.Float64),
        tie=(pl.col("verdict") == "tie").cast(pl.Float64),
    )  # fmt: skip
    p = pl.col("side")
    parts = [
        v.filter(p == 0).with_columns(view=pl.lit("first")),
        v.filter(p == 1).with_columns(view=pl.lit("swapped")),
        v.filter(p.is_not_null()).with_columns(view=pl.lit("pooled")),
        v.filter(p.is_null()).with_columns(view=pl.lit("combined")),
    ]
    out = pl.concat([x.select(list(COMPARISON_SCHEMA)) for x in parts])
    return out.cast(COMPARISON_SCHEMA)  # type: ignore[arg-type]


def order_views(
    judgments: pl.DataFrame, strategies: Sequence[str] | None = None
) -> pl.DataFrame:
    """Comparisons of every view of ``judgments`` (pairwise rows, control queries): the raw
    per-order verdicts (strategy ``single``) and each strategy's.

    Args:
        judgments: ``JUDGMENT_SCHEMA`` rows.
        strategies: registered strategy names (default: those the judgments allow,
            :func:`~voirdire.analysis.mitigation.registry.default_strategies`); ``single`` is
            always included first.

    Raises:
        ConfigError: an unknown strategy, or one whose needs the judgments lack.
    """
    names = list(
        dict.fromkeys(
            [
                "single",
                *(default_strategies(judgments) if strategies is None else strategies),
            ]
        )
    )
    for n in names:
        strategy(n)  # unknown names fail here, naming the strategy
    return comparisons(apply_strategies(judgments, names))
