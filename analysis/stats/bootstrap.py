"""The cluster-bootstrap engine of voirdire (ours, beyond Shi et al.).

The clusters are the benchmark's *questions*: a replicate draws them with replacement (one
draw per stratum, shared by every group and cell of it) and recomputes a figure from
per-question sums. A replicate's sums weight each question's sums by the multinomial count
of its draws; the point estimate is the one-replicate case of the same code (every weight
1). The per-question sums are held sparse, a row per (value, group, cell) with its nonzero
questions only (:mod:`~voirdire.analysis.stats.sparse_sums`), and the replicates are
taken a block at a time, so memory grows with the rows of the data and the replicates a
statistic is handed at once, never with cells × questions or replicates × questions. Every
table with an interval uses it: PC, PF and RS
(:func:`voirdire.analysis.position.uncertainty.bootstrap_ci`), the mitigation evaluation,
the bias suite's RR, Δ and susceptibility, self-enhancement and the leaderboards.

- :func:`cluster_bootstrap`: percentile intervals of figures built from per-question sums.
- :func:`in_clusters`: a benchmark's declared clusters in place of its questions.

Both are importable from :mod:`voirdire.analysis.position.uncertainty` as well.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from voirdire.analysis.stats.draws import Draws
from voirdire.analysis.stats.sparse_sums import (
    StratumSums,
    replicate_blocks,
    stratum_sums,
)

__all__ = ["Statistic", "cluster_bootstrap", "in_clusters"]

#: ``{value: (R, U) array of sums}`` -> ``{metric: (R,) or (R, U) array}``
Statistic = Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]


def in_clusters(rows: pl.DataFrame, clusters: pl.DataFrame | None) -> pl.DataFrame:
    """``rows`` with each ``question_id`` replaced by its bootstrap cluster, so that
    :func:`cluster_bootstrap` draws clusters (e.g. PandaLM's questions, each shared by up to
    10 items) and sums per (cell, cluster); row order kept.

    Args:
        rows: columns ``benchmark`` and ``question_id`` (str), any others.
        clusters: ``benchmark``, ``question_id``, ``cluster`` (str), as a benchmark declares
            them (:meth:`~voirdire.benchmarks.kind.BenchmarkKind.clusters`); None, or a
            question it does not list: the question is its own cluster (``rows`` unchanged).
    """
    if clusters is None or clusters.height == 0:
        return rows
    c = clusters.select("benchmark", "question_id", "cluster")
    out = rows.join(
        c, on=["benchmark", "question_id"], how="left", maintain_order="left"
    )
    return out.with_columns(question_id=pl.coalesce("cluster", "question_id")).drop(
        "cluster"
    )


def _interval(boot: np.ndarray, level: float) -> tuple[float, float]:
    """The ``level`` percentile interval of the finite replicates (NaN, NaN if none)."""
    boot = boot[np.isfinite(boot)]
    if boot.size == 0:
        return float("nan"), float("nan")
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(boot, [a, 1.0 - a])
    return float(lo), float(hi)


def _as_statistic(
    statistic: Statistic
    | Mapping[str, Callable[[Mapping[str, np.ndarray]], np.ndarray]],
) -> Statistic:
    """``statistic`` as one function (a mapping metric -> function becomes one call)."""
    if callable(statistic):
        return statistic
    return lambda s: {m: f(s) for m, f in statistic.items()}


def _strata(
    qs: pl.DataFrame, strata: list[str]
) -> Iterator[tuple[tuple, pl.Expr, int, pl.DataFrame]]:
    """Per stratum of ``qs`` (sorted): its key, the filter selecting it, its number of
    questions Q and their index (``question_id`` and ``_q``: the sorted question ids ->
    0..Q-1; polars sorts strings by their UTF-8 bytes, which is Python's order of code
    points)."""
    for key in qs.select(strata).unique().sort(strata).iter_rows():
        where = pl.all_horizontal([pl.col(c) == v for c, v in zip(strata, key)])
        qids = qs.filter(where).select("question_id").sort("question_id")
        yield key, where, qids.height, qids.with_row_index("_q")


def _joined(parts: list[Mapping[str, np.ndarray]]) -> dict:
    """The calls' results of one group joined along the replicates (one call: as it is)."""
    if len(parts) == 1:
        return dict(parts[0])
    return {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parts[0]}


def _replicates(
    stat: Statistic,
    sums: StratumSums,
    nq: int,
    replicates: int,
    draws: Draws,
    chunk: int | None,
) -> list[dict]:
    """``stat`` of every replicate, for each group of ``sums``: the stratum's multinomial
    counts (questions with replacement) taken from ``draws`` a block at a time
    (:func:`~voirdire.analysis.stats.sparse_sums.replicate_blocks`), shared by the groups.
    ``stat`` sees the replicates ``chunk`` at a time (the calls' boundaries at multiples of
    ``chunk``, each group's calls in order) or, with ``chunk`` None, all at once; only the
    replicates not yet handed to it are held."""
    size = replicates if chunk is None else max(int(chunk), 1)
    parts: list[list] = [[] for _ in sums.groups]
    held: list[np.ndarray] = []

    def hand(rows: np.ndarray) -> None:
        for got, group in zip(parts, sums.groups):
            got.append(stat(sums.dense(group, rows)))

    for block in replicate_blocks(sums.matrix, draws, nq, replicates):
        held.append(block)
        n = sum(len(b) for b in held)
        while n >= size and n:
            joined = held[0] if len(held) == 1 else np.concatenate(held)
            hand(joined[:size])
            held, n = ([joined[size:]] if n > size else []), n - size
    if held or not any(parts):  # the rest, or the one call of no replicate
        hand(np.concatenate(held) if held else np.zeros((0, sums.matrix.shape[0])))
    return [_joined(p) for p in parts]


def _group_rows(
    head: tuple,
    cell_keys: pl.DataFrame,
    est: dict,
    boot: dict,
    replicates: int,
    level: float,
) -> tuple[list[tuple], list[tuple]]:
    """The result rows of one group: ``(per-group rows, per-cell rows)``.

    ``head`` is the (stratum, group) key the rows start with; ``est`` the estimate and
    ``boot`` the replicates of each metric; a metric whose estimate is 1-D gives one row, a
    2-D one a row per cell.
    """
    per_group: list[tuple] = []
    per_cell: list[tuple] = []
    for metric, e in est.items():
        b = np.asarray(boot[metric], dtype=float)
        if np.ndim(e) == 1:
            per_group.append(
                (*head, metric, float(e[0]), *_interval(b, level), replicates)
            )
        else:
            per_cell += [
                (
                    *head,
                    *ck,
                    metric,
                    float(e[0, u]),
                    *_interval(b[:, u], level),
                    replicates,
                )
                for u, ck in enumerate(cell_keys.iter_rows())
            ]
    return per_group, per_cell


def _stratum_rows(
    key: tuple,
    part: pl.DataFrame,
    questions: tuple[int, pl.DataFrame],
    stat: Statistic,
    draws: Draws,
    **how: Any,
) -> tuple[list[tuple], list[tuple]]:
    """The result rows of one stratum (its ``key``, its rows ``part``, its ``(Q,
    question index)``): the groups' sparse sums and estimates, the stratum's counts from
    ``draws`` (taken even without rows, so that the next strata's draws stay put), the
    intervals. ``how``: :func:`cluster_bootstrap`'s ``groups``, ``cells``, ``values``,
    ``long``, ``replicates``, ``level`` and ``chunk``."""
    nq, q_index = questions
    sums = stratum_sums(
        part, q_index, nq, how["groups"], how["cells"], how["values"], how["long"]
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        totals = (sums.matrix @ np.ones(nq))[None, :]
        ests = [stat(sums.dense(g, totals)) for g in sums.groups]
        boots = _replicates(stat, sums, nq, how["replicates"], draws, how["chunk"])
    per_group: list[tuple] = []
    per_cell: list[tuple] = []
    for group, est, boot in zip(sums.groups, ests, boots):
        g, c = _group_rows(
            (*key, *group.key), group.cells, est, boot, how["replicates"], how["level"]
        )
        per_group += g
        per_cell += c
    return per_group, per_cell


def _result_frame(
    per_group: list[tuple],
    per_cell: list[tuple],
    keys: dict[str, pl.DataType],
    cell_schema: dict[str, pl.DataType],
) -> pl.DataFrame:
    """The rows of :func:`cluster_bootstrap` as one frame: the key columns ``keys``
    (strata, groups), the ``cell_schema`` columns where a metric is per cell, then
    ``metric``, ``estimate``, ``lo``, ``hi``, ``replicates``."""
    tail = {
        "metric": pl.String,
        "estimate": pl.Float64,
        "lo": pl.Float64,
        "hi": pl.Float64,
        "replicates": pl.Int64,
    }
    out = pl.DataFrame(per_group, schema=keys | tail, orient="row")
    if per_cell:
        with_cells = pl.DataFrame(
            per_cell, schema=keys | cell_schema | tail, orient="row"
        )
        out = (
            pl.concat([out, with_cells], how="diagonal").select(with_cells.columns)
            if out.height
            else with_cells
        )
    return out


def _each_stratum(
    rows: pl.DataFrame,
    qs: pl.DataFrame,
    strata: list[str],
    stat: Statistic,
    seed: int,
    **how: Any,
) -> tuple[list[tuple], list[tuple]]:
    """:func:`cluster_bootstrap`'s rows per group and per cell, stratum by stratum (the
    strata's draws from one generator seeded ``seed``); ``how``: :func:`_stratum_rows`'
    keywords (groups, cells, values, long, replicates, level, chunk)."""
    found = list(_strata(qs, strata))
    draws = Draws(seed, [nq for _, _, nq, _ in found], how["replicates"])
    per_group: list[tuple] = []
    per_cell: list[tuple] = []
    for key, where, nq, q_index in found:
        part = (
            rows
            if len(found) == 1 and rows.select(where.fill_null(False).all()).item()
            else rows.filter(where)
        )
        g, c = _stratum_rows(key, part, (nq, q_index), stat, draws, **how)
        per_group += g
        per_cell += c
    return per_group, per_cell


def cluster_bootstrap(
    rows: pl.DataFrame,
    values: Sequence[str],
    statistic: Statistic
    | Mapping[str, Callable[[Mapping[str, np.ndarray]], np.ndarray]],
    *,
    groups: Sequence[str] = (),
    cells: Sequence[str] = (),
    strata: Sequence[str] = ("benchmark",),
    questions: pl.DataFrame | None = None,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    chunk: int | None = None,
    long: bool = False,
) -> pl.DataFrame:
    """Cluster-bootstrap percentile intervals (questions resampled) of figures built from sums.

    Per stratum (sorted; by default the benchmark) the questions are drawn with replacement
    once, the draw shared by every group of the stratum; each value is summed per (cell,
    question), and a replicate's sum of a cell is ``Σ_q w_q · M[cell, q]`` with ``w`` the
    replicate's multinomial counts, taken a block of at most :data:`DRAW_ROWS` replicates
    at a time; the sums are held sparse (:mod:`~voirdire.analysis.stats.sparse_sums`:
    exact where the values are whole numbers). The estimate is the same statistic with one
    replicate of weights 1. One numpy generator seeded ``seed`` draws the
    strata in order (:class:`~voirdire.analysis.stats.draws.Draws`: or a thread drew the
    same counts ahead, :func:`~voirdire.analysis.stats.draws.prepare`).

    Args:
        rows: columns ``question_id``, the ``strata``, ``groups`` and ``cells`` columns and
            the ``values`` columns (numeric; nulls count as 0), or with ``long`` a column
            ``value`` (str: which of ``values``, or int: its index) and ``amount`` (numeric)
            instead, a row per
            nonzero amount (e.g. a leaderboard's wins against each of hundreds of models).
        values: the values summed per question (the columns, or the names of ``value``).
        statistic: ``{value: (R, U) sums}`` -> ``{metric: array}`` (R replicates, U cells of
            one group in the order of their first appearance), or a mapping metric ->
            function of the sums; an (R,) array gives one row per group, an (R, U) array one
            row per (group, cell). It must work row by row (R = 1 gives the estimate);
            NaN where undefined.
        groups: columns of one figure (e.g. strategy, judge); none: the stratum is one group.
        cells: columns of the sub-units a figure may average over or report (e.g. candidate,
            task); none: one cell.
        strata: columns within which questions are drawn (``("benchmark", "task")`` draws
            within each task).
        questions: the clusters, columns ``strata`` and ``question_id`` (default: those of
            ``rows``); a question without rows still counts in Q.
        replicates: bootstrap replicates B; level: interval coverage (0.95: the 2.5 % and
            97.5 % quantiles); seed: numpy seed.
        chunk: replicates per call of ``statistic`` (None: all at once); the draws are the
            same, so a statistic that works row by row gives the same figures with less memory
            (the sums of a call are ``chunk × cells × len(values)`` floats, and only the
            replicates not yet handed to ``statistic`` are held). With several groups, the
            calls go chunk by chunk, every group's in turn.
        long: ``rows`` in long form (above).

    Returns:
        One row per (stratum, group, metric) or (stratum, group, cell, metric): the
        ``strata``, ``groups`` and (for per-cell metrics) ``cells`` columns, ``metric``
        (str), ``estimate`` (float), ``lo``, ``hi`` (float; NaN when no replicate is
        finite), ``replicates`` (int).
    """
    strata, groups, cells = list(strata), list(groups), list(cells)
    qs = (
        (questions if questions is not None else rows)
        .select(*strata, "question_id")
        .unique()
    )
    per_group, per_cell = _each_stratum(
        rows, qs, strata, _as_statistic(statistic), seed, groups=groups, cells=cells,
        values=list(values), long=long, replicates=replicates, level=level, chunk=chunk,
    )  # fmt: skip
    keys = {
        c: (qs.schema[c] if c in strata else rows.schema[c]) for c in [*strata, *groups]
    }
    return _result_frame(per_group, per_cell, keys, {c: rows.schema[c] for c in cells})
