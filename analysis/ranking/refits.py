"""Cluster-bootstrap refits of a model weighted by comparison rows.

The style-controlled Bradley–Terry (:mod:`voirdire.analysis.ranking.style`) and the
length-controlled win rate (:mod:`voirdire.analysis.ranking.length_control`) refit a
weighted model once per replicate: each comparison row is a cell of
:func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`, so its weight in a
replicate is the number of times its question (or cluster) was drawn.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from voirdire.analysis.stats.bootstrap import cluster_bootstrap, in_clusters

__all__ = ["bootstrap_fit", "percentile_interval"]


def bootstrap_fit(
    rows: pl.DataFrame,
    questions: pl.DataFrame,
    fit,
    replicates: int,
    seed: int,
    clusters: pl.DataFrame | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(estimate (P,), replicates (B, P)) of ``fit(weights (R, N))``, the weights each
    comparison row gets in each cluster-bootstrap replicate (``clusters``: drawn instead
    of questions, :func:`~voirdire.analysis.position.uncertainty.in_clusters`)."""
    kept: list[np.ndarray] = []

    def statistic(sums):
        kept.append(fit(sums["one"]))
        return {}

    rows = in_clusters(
        rows.with_row_index("row").with_columns(one=pl.lit(1.0)), clusters
    )
    cluster_bootstrap(rows, ["one"], statistic, cells=["row"], questions=in_clusters(questions, clusters),
                      replicates=replicates, seed=seed)  # fmt: skip
    return kept[0][0], kept[1]


def percentile_interval(b: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The central ``level`` percentile interval of the replicates ``b`` along axis 0."""
    return np.quantile(b, (1 - level) / 2, axis=0), np.quantile(
        b, (1 + level) / 2, axis=0
    )
