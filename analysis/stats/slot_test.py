"""The slot-choice test of the list-wise analysis: a cluster-robust Wald test of uniform slots.

:func:`voirdire.analysis.position.listwise.slot_shares` reports it per (benchmark, judge,
list size, option mode), questions as clusters (``docs/metrics.md``, *List-wise*).
:func:`cluster_wald` is importable from :mod:`voirdire.analysis.position.listwise` too.
"""

from __future__ import annotations

import numpy as np
import polars as pl

__all__ = ["cluster_wald", "question_wald"]


def question_wald(rows: pl.LazyFrame, keys: list[str]) -> pl.DataFrame:
    """:func:`cluster_wald` over the slot choices of annotated list-wise ``rows``, per question.

    ``rows``: the annotated judgments of :mod:`voirdire.analysis.position.listwise`
    (``_slot`` bool: the verdict picks a slot; ``_code`` int: its 0-based index), with
    ``keys`` (``list_size`` and ``option_mode`` among them) and ``question_id``. Returns the
    frame of :func:`cluster_wald`."""
    per_question = (
        rows.filter(pl.col("_slot"))
        .group_by(
            [
                *keys,
                "question_id",
                (pl.col("_code") + 1).cast(pl.Int64).alias("position"),
            ]
        )
        .agg(choices=pl.len().cast(pl.Int64))
        .collect()
    )
    return cluster_wald(
        per_question.cast({"list_size": pl.Int64, "option_mode": pl.Int64}), keys
    )


def cluster_wald(
    per_cluster: pl.DataFrame, keys: list[str], cluster: str = "question_id"
) -> pl.DataFrame:
    """Cluster-robust Wald test of uniform slot choices (ours; the standard sandwich form,
    e.g. Cameron & Miller, "A Practitioner's Guide to Cluster-Robust Inference", 2015).

    For cluster ``i`` (a question: all its lists, orders and repetitions) with ``n_i`` slot
    choices and ``x_ij`` of them at slot ``j``, ``d_i = x_i − n_i/p``. A judge without
    position bias under a design balanced within each instance (cyclic, all orders, Latin
    squares) has ``E[d_i] = 0`` in every cluster, however its choices within the cluster
    are correlated. With ``D = Σ d_i`` and ``V = Σ d_i d_iᵀ`` over the first ``p − 1``
    slots (the last is implied), ``W = Dᵀ V⁺ D`` (Moore–Penrose inverse) is
    asymptotically χ² with ``p − 1`` degrees of freedom as the clusters grow.
    Repetitions, identical or partly correlated, change neither its size nor, when
    identical, its value (``D`` and ``V`` scale by ``r`` and ``r²``). ``W ≤`` the number
    of clusters, so with few questions (about 6 at p = 3) it cannot reject at α = 0.05:
    that is the evidence few questions hold.

    Args:
        per_cluster: ``keys``, ``cluster``, ``position`` (int, 1-based), ``choices`` (int);
            ``list_size`` (int) among the keys.
        keys: the test's groups (one test each).
        cluster: the clustering column.

    Returns:
        ``keys``, ``chi2`` (float ``W``; null without a slot choice), ``clusters`` (int).
    """
    frames = []
    for part in per_cluster.partition_by(keys, maintain_order=True):
        p = int(part["list_size"][0])
        ids, inv = np.unique(part[cluster].to_numpy().astype(str), return_inverse=True)
        x = np.zeros((len(ids), p))
        np.add.at(x, (inv, part["position"].to_numpy() - 1), part["choices"].to_numpy())
        d = (x - x.sum(1, keepdims=True) / p)[:, : p - 1]
        total = d.sum(0)
        w = float(total @ np.linalg.pinv(d.T @ d) @ total) if x.sum() > 0 else None
        frames.append(
            part.select(keys)
            .head(1)
            .with_columns(
                chi2=pl.lit(w, dtype=pl.Float64),
                clusters=pl.lit(len(ids), dtype=pl.Int64),
            )
        )
    schema = {
        **{k: per_cluster.schema[k] for k in keys},
        "chi2": pl.Float64,
        "clusters": pl.Int64,
    }
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)
