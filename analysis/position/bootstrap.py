"""The cluster-bootstrap engine of voirdire (ours, beyond Shi et al.).

The clusters are the benchmark's *questions*: a replicate draws them with replacement (one
draw per stratum, shared by every group and cell of it) and recomputes a figure from
per-question sums. Replicates are weighted sums, a (B × Q) matrix of multinomial counts
times the (cell × question) sums, no Python loop over replicates; the point estimate is
the one-replicate case of the same code (every weight 1). Every table with an interval
uses it: PC, PF and RS (:func:`voirdire.analysis.position.uncertainty.bootstrap_ci`), the
mitigation evaluation, the bias suite's RR, Δ and susceptibility, and self-enhancement.

- :func:`cluster_bootstrap`: percentile intervals of figures built from per-question sums.
- :func:`in_clusters`: a benchmark's declared clusters in place of its questions.

Both are importable from :mod:`voirdire.analysis.position.uncertainty` as well.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from voirdire.analysis.position.draws import DRAW_ROWS, Draws

__all__ = ["DRAW_ROWS", "Statistic", "cluster_bootstrap", "in_clusters"]

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


def _dense(
    rows: pl.DataFrame,
    q_index: pl.DataFrame,
    n_q: int,
    cells: pl.DataFrame,
    cell_cols: list[str],
    values: Sequence[str],
) -> dict[str, np.ndarray]:
    """(U, Q) matrices of ``values`` summed per (cell, question), the cells as rows;
    ``q_index``: ``question_id`` and ``_q``, its column (0..Q-1).

    Raises:
        KeyError: a row's question is not in ``q_index``."""
    if cell_cols:
        rows = rows.join(
            cells.with_row_index("_u"), on=cell_cols, how="left", nulls_equal=True
        )
        u = rows.get_column("_u").to_numpy()
    else:
        u = np.zeros(rows.height, dtype=np.int64)
    q = (
        rows.select("question_id")
        .join(
            q_index,
            on="question_id",
            how="left",
            maintain_order="left",
            nulls_equal=True,
        )
        .get_column("_q")
    )
    if q.null_count():
        missing = rows.filter(q.is_null()).get_column("question_id")[0]
        raise KeyError(missing)
    q = q.to_numpy().astype(np.int64)
    out = {}
    for c in values:
        m = np.zeros((max(cells.height, 1), n_q))
        np.add.at(m, (u, q), rows.get_column(c).to_numpy())
        out[c] = m
    return out


def _interval(boot: np.ndarray, level: float) -> tuple[float, float]:
    """The ``level`` percentile interval of the finite replicates (NaN, NaN if none)."""
    boot = boot[np.isfinite(boot)]
    if boot.size == 0:
        return float("nan"), float("nan")
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(boot, [a, 1.0 - a])
    return float(lo), float(hi)


def _chunked(stat: Statistic, sums: dict, chunk: int | None) -> dict:
    """``stat`` of the replicates' sums (``{value: (B, U)}``), ``chunk`` replicates at a
    time, the parts joined along the replicates."""
    n = next(iter(sums.values())).shape[0] if sums else 0
    if chunk is None or chunk >= n:
        return stat(sums)
    parts = [
        stat({c: x[s : s + chunk] for c, x in sums.items()})
        for s in range(0, n, max(int(chunk), 1))
    ]
    return {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parts[0]}


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


def _whole(mats: Sequence[dict[str, np.ndarray]], nq: int) -> bool:
    """True when every sum of ``mats`` is a whole number and every weighted sum of a
    replicate (at most ``nq`` times the largest column total) is exact in float64, so
    that it does not depend on the order of the additions."""
    for m in (m for ms in mats for m in ms.values()):
        if not np.array_equal(m, np.round(m)):
            return False
        if m.size and float(np.abs(m).sum(axis=-1).max()) * nq >= 2.0**52:
            return False
    return True


#: The most bytes :func:`_replicates` copies the per-question sums into, to take each block
#: of weights in one product (a product per matrix above it).
JOINT_BYTES = 64 * 2**20


def _replicates(
    stat: Statistic,
    mats: Sequence[dict[str, np.ndarray]],
    nq: int,
    replicates: int,
    draws: Draws,
    chunk: int | None,
) -> list[dict]:
    """``stat`` of every replicate, for each group's (U × Q) sums of ``mats``: the
    stratum's (B × Q) multinomial counts (questions with replacement) taken from ``draws``,
    shared by the groups. Taken :data:`DRAW_ROWS` replicates at a time where the sums are
    whole numbers (:func:`_whole`): the same numbers from the generator in the same order,
    and exact sums, joined before ``stat`` sees them, so the same figures (also for a
    statistic that is not computed row by row, e.g. a board fitted to every replicate at
    once)."""
    if replicates <= DRAW_ROWS or not _whole(mats, nq):
        w = draws.take(nq, replicates)
        return [_chunked(stat, {c: w @ x.T for c, x in m.items()}, chunk) for m in mats]
    # every (group, value) matrix side by side, so that one product reads each block of
    # weights once (exact sums: the same figures as a product per matrix)
    stacked = [x for m in mats for x in m.values()]
    joint = np.concatenate(stacked) if stacked else np.zeros((0, nq))
    if joint.nbytes > JOINT_BYTES:
        joint = None  # as large as the sums themselves again: a product per matrix
    blocks: list[list[np.ndarray]] = [[] for _ in stacked]
    for s in range(0, replicates, DRAW_ROWS):
        w = draws.take(nq, min(DRAW_ROWS, replicates - s))
        if joint is None:
            for got, x in zip(blocks, stacked):
                got.append(w @ x.T)
            continue
        prod, at = w @ joint.T, 0
        for got, x in zip(blocks, stacked):
            got.append(prod[:, at : at + x.shape[0]])
            at += x.shape[0]
    sums = iter([np.concatenate(b) for b in blocks])
    return [_chunked(stat, {c: next(sums) for c in m}, chunk) for m in mats]


def _group_sums(
    grp: pl.DataFrame,
    stat: Statistic,
    q_index: pl.DataFrame,
    nq: int,
    cells: list[str],
    values: Sequence[str],
) -> tuple[pl.DataFrame, dict[str, np.ndarray], dict]:
    """One group's cells (in the order of their first appearance), its (U × Q) sums of
    ``values`` per (cell, question) and its estimate (``stat`` with every weight 1)."""
    cell_keys = (
        grp.select(cells).unique(maintain_order=True) if cells else pl.DataFrame()
    )
    mats = _dense(grp, q_index, nq, cell_keys, cells, values)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = stat({c: np.ones((1, nq)) @ m.T for c, m in mats.items()})
    return cell_keys, mats, est


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
    question index)``): each group's sums and estimate, the stratum's counts from ``draws``
    (taken even without rows, so that the next strata's draws stay put), the intervals.
    ``how``: :func:`cluster_bootstrap`'s ``groups``, ``cells``, ``values``,
    ``replicates``, ``level`` and ``chunk``."""
    (nq, q_index), groups = questions, how["groups"]
    found = (
        part.group_by(groups, maintain_order=True)
        if groups
        else ([((), part)] if part.height else [])
    )
    sums = {
        (*key, *gkey): _group_sums(grp, stat, q_index, nq, how["cells"], how["values"])
        for gkey, grp in found
    }
    with np.errstate(invalid="ignore", divide="ignore"):
        boots = _replicates(
            stat, [m for _, m, _ in sums.values()], nq, how["replicates"], draws,
            how["chunk"],
        )  # fmt: skip
    per_group: list[tuple] = []
    per_cell: list[tuple] = []
    for (head, (cell_keys, _, est)), boot in zip(sums.items(), boots):
        g, c = _group_rows(head, cell_keys, est, boot, how["replicates"], how["level"])
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
) -> pl.DataFrame:
    """Cluster-bootstrap percentile intervals (questions resampled) of figures built from sums.

    Per stratum (sorted; by default the benchmark) the questions are drawn with replacement
    once, the draw shared by every group of the stratum; each ``values`` column is summed
    per (cell, question) into a (U × Q) matrix ``M`` and a replicate's sums are ``w @ M.T``
    with ``w`` the (B × Q) multinomial counts (:data:`DRAW_ROWS` rows at a time where the
    sums are whole numbers: the same figures, less memory). The estimate is the same
    statistic with one replicate of weights 1. One numpy generator seeded ``seed`` draws the
    strata in order (:class:`~voirdire.analysis.position.draws.Draws`: or a thread drew the
    same counts ahead, :func:`~voirdire.analysis.position.draws.prepare`).

    Args:
        rows: columns ``question_id``, the ``strata``, ``groups`` and ``cells`` columns and
            the ``values`` columns (numeric; nulls count as 0).
        values: the columns summed per question.
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
            (the sums of a call are ``chunk × cells × len(values)`` floats).

    Returns:
        One row per (stratum, group, metric) or (stratum, group, cell, metric): the
        ``strata``, ``groups`` and (for per-cell metrics) ``cells`` columns, ``metric``
        (str), ``estimate`` (float), ``lo``, ``hi`` (float; NaN when no replicate is
        finite), ``replicates`` (int).
    """
    strata, groups, cells = list(strata), list(groups), list(cells)
    stat = _as_statistic(statistic)
    qs = (
        (questions if questions is not None else rows)
        .select(*strata, "question_id")
        .unique()
    )
    rows = rows.with_columns([pl.col(c).fill_null(0).cast(pl.Float64) for c in values])
    found = list(_strata(qs, strata))
    draws = Draws(seed, [nq for _, _, nq, _ in found], replicates)
    per_group: list[tuple] = []
    per_cell: list[tuple] = []
    for key, where, nq, q_index in found:
        g, c = _stratum_rows(
            key, rows.filter(where), (nq, q_index), stat, draws,
            groups=groups, cells=cells, values=values, replicates=replicates,
            level=level, chunk=chunk,
        )  # fmt: skip
        per_group += g
        per_cell += c
    keys = {
        c: (qs.schema[c] if c in strata else rows.schema[c]) for c in [*strata, *groups]
    }
    return _result_frame(per_group, per_cell, keys, {c: rows.schema[c] for c in cells})
