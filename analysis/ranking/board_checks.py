"""The checks a leaderboard passes before anything is fitted, and its default anchor.

:func:`~voirdire.analysis.ranking.boards.fit_boards` refuses a board with one model
(:func:`check_graph`; style control, :mod:`~voirdire.analysis.ranking.style`, also a
disconnected comparison graph) and a judge too large for memory (:func:`check_size`,
:data:`MAX_PAIRWISE_BYTES`), in one line naming the board, before any fit. Both import
these names from here (no module re-exports them).
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from voirdire.core import ConfigError

__all__ = ["MAX_PAIRWISE_BYTES", "default_anchor", "check_graph", "check_size"]

#: refuse a judge whose ``replicates × models²`` float64 array would pass this (320 MiB: the
#: rank flips hold about three such arrays at once; 205 models allow 1,000 replicates, 300
#: models 466)
MAX_PAIRWISE_BYTES = 320 * 2**20


def default_anchor(comps: pl.DataFrame) -> str:
    """The model in the most comparisons (ties: the first by name) — the reference of a
    candidates-vs-reference benchmark."""
    counts = pl.concat([
        comps.group_by(m="a").len(), comps.group_by(m="b").len()
    ]).group_by("m").agg(pl.col("len").sum())  # fmt: skip
    return counts.sort(["len", "m"], descending=[True, False]).item(0, "m")


def check_graph(comps: pl.DataFrame, where: str, connected: bool = True) -> list[str]:
    """The models of one board's comparisons, sorted, after checking them.

    Args:
        connected: also refuse a comparison graph in several pieces (the leaderboards do
            not: :mod:`~voirdire.analysis.ranking.strengths` rates each piece on its own).

    Raises:
        ConfigError: fewer than two models, or (``connected``) a comparison graph in several
            pieces (naming the board and a model of the second piece).
    """
    pairs = comps.select("a", "b").unique()  # at most K² rows, whatever the data's size
    models = sorted(
        set(pairs.get_column("a").to_list()) | set(pairs.get_column("b").to_list())
    )
    if len(models) < 2:
        raise ConfigError(
            f"{where}: a leaderboard needs at least two models; the comparisons name {models or 'none'}"
        )
    if not connected:
        return models
    ix = {m: i for i, m in enumerate(models)}
    a = np.array([ix[x] for x in pairs.get_column("a").to_list()], dtype=np.int64)
    b = np.array([ix[x] for x in pairs.get_column("b").to_list()], dtype=np.int64)
    n, lab = connected_components(
        coo_matrix((np.ones(a.size), (a, b)), shape=(len(models),) * 2), directed=False
    )
    if n > 1:
        other = next(m for m, c in zip(models, lab) if c != lab[0])
        raise ConfigError(
            f"{where}: the comparison graph is disconnected ({n} pieces; {models[0]!r} and {other!r} are never linked "
            f"by comparisons), so their ratings cannot be compared"
        )
    return models


def check_size(comps: pl.DataFrame, replicates: int) -> None:
    """Refuse, before anything is fitted, a (benchmark, judge) whose models ``K`` make one
    ``replicates × K × K`` float64 array larger than :data:`MAX_PAIRWISE_BYTES`.

    Raises:
        ConfigError: naming the benchmark, judge, sizes and the largest replicates allowed.
    """
    per: dict[tuple, set] = {}
    for bn, jd, a, b in (
        comps.select("benchmark", "judge", "a", "b").unique().iter_rows()
    ):
        per.setdefault((bn, jd), set()).update((a, b))  # the distinct pairs only
    (bench, judge), k = max(((g, len(m)) for g, m in per.items()), key=lambda r: r[1])
    need = int(replicates) * k * k * 8
    if need > MAX_PAIRWISE_BYTES:
        raise ConfigError(
            f"{bench} / {judge}: {k} models x {replicates} replicates needs {need / 2**20:,.0f} MiB for one "
            f"replicates x models^2 array (limit {MAX_PAIRWISE_BYTES / 2**20:.0f} MiB); use at most "
            f"{max(MAX_PAIRWISE_BYTES // (8 * k * k), 0)} replicates, or rank fewer models"
        )  # fmt: skip
