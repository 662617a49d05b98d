"""Uncertainty of the figures: one cluster-bootstrap engine, and the position-bias intervals.

- :func:`cluster_bootstrap`: **the** cluster bootstrap of voirdire (ours, beyond Shi et al.).
  The clusters are the benchmark's *questions*: a replicate draws them with replacement (one
  draw per stratum, shared by every group and cell of it) and recomputes a figure from
  per-question sums. Replicates are weighted sums, a (B × Q) matrix of multinomial counts
  times the (cell × question) sums, no Python loop over replicates; the point estimate is
  the one-replicate case of the same code (every weight 1). Every table with an interval
  uses it: PC, PF and RS here, the mitigation evaluation, the bias suite's RR, Δ and
  susceptibility, and self-enhancement.
- :func:`question_sums`: the per-question sufficient statistics of PC and PF (``n``,
  ``ccn``, ``v``, ``d``) of pairwise pairs and list-wise series, which the statistics of
  :mod:`voirdire.analysis.position.formulas` turn into figures.
- :func:`bootstrap_ci`: percentile intervals for PC, PF and RS per judge and per
  (judge, task), with the definitions of ``docs/metrics.md`` (PC pooled Σccn/Σv; PF the mean
  over cells of (rcn − pcn)/n, list-wise with the fractional counts; RS the mean of RS_j).
  Per (judge, task) the questions are drawn within the task (stratified).
- :func:`sign_test`: exact two-sided binomial test (scipy) of primacy against recency among
  a judge's inconsistent pairs, H0: P(primacy | inconsistent) = 1/2. Pairs are treated as
  independent (with repetitions, or many candidates per question, they are not quite).
- The power table lives with the simulator: :func:`voirdire.analysis.position.simulate.power_table`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import polars as pl
from scipy.stats import binomtest

from voirdire.analysis.position import registry
from voirdire.analysis.position.listwise import candidate_series
from voirdire.analysis.position.pairing import judgment_pairs, pair_sums
from voirdire.analysis.position.stability import query_stability

__all__ = [
    "CI_COLUMNS", "cluster_bootstrap", "in_clusters", "question_sums", "stability_sums", "bootstrap_ci",
    "with_metric_columns", "sign_test",
]  # fmt: skip

CI_COLUMNS = [
    "benchmark",
    "judge",
    "task",
    "metric",
    "estimate",
    "lo",
    "hi",
    "replicates",
]

#: ``{value: (R, U) array of sums}`` -> ``{metric: (R,) or (R, U) array}``
Statistic = Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]


def question_sums(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per (benchmark, judge, candidate, task, question_id) the sufficient statistics of PC
    and PF (float): ``n`` pairs / series, ``ccn`` consistent, ``v`` consistent or
    inconsistent, ``d`` the PF numerator ``rcn − pcn`` (list-wise: ``Σ s``, fractional).
    Pairwise pairs and list-wise series (a series counts for each of its candidates) alike."""
    k = pl.col("klass")
    keys = ["benchmark", "judge", "candidate", "task", "question_id"]
    pairwise = pair_sums(judgment_pairs(judgments), keys)
    if (
        "mode" not in judgments.columns
        or not judgments.filter(pl.col("mode") == "listwise").height
    ):
        return pairwise.sort(
            keys
        )  # sorted: the cells' order, so the float sums, do not vary from run to run
    listwise = (
        candidate_series(judgments)
        .group_by(keys)
        .agg(
            n=pl.len().cast(pl.Float64),
            ccn=(k == "consistent").sum().cast(pl.Float64),
            v=k.is_in(["consistent", "primacy", "recency", "balanced"])
            .sum()
            .cast(pl.Float64),
            d=pl.col("s").fill_null(0.0).sum().cast(pl.Float64),
        )
    )
    return pl.concat([pairwise, listwise], how="vertical_relaxed").sort(keys)


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
    q_index: dict,
    n_q: int,
    cells: pl.DataFrame,
    cell_cols: list[str],
    values: Sequence[str],
) -> dict[str, np.ndarray]:
    """(U, Q) matrices of ``values`` summed per (cell, question), the cells as rows."""
    if cell_cols:
        rows = rows.join(
            cells.with_row_index("_u"), on=cell_cols, how="left", nulls_equal=True
        )
        u = rows.get_column("_u").to_numpy()
    else:
        u = np.zeros(rows.height, dtype=np.int64)
    q = np.array(
        [q_index[x] for x in rows.get_column("question_id").to_list()], dtype=np.int64
    )
    out = {}
    for c in values:
        m = np.zeros((max(cells.height, 1), n_q))
        np.add.at(m, (u, q), rows.get_column(c).to_numpy())
        out[c] = m
    return out


def _interval(boot: np.ndarray, level: float) -> tuple[float, float]:
    boot = boot[np.isfinite(boot)]
    if boot.size == 0:
        return float("nan"), float("nan")
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(boot, [a, 1.0 - a])
    return float(lo), float(hi)


def _chunked(stat: Statistic, mats: dict, w: np.ndarray, chunk: int | None) -> dict:
    """``stat`` of the replicates' sums ``w @ M.T``, ``chunk`` replicates at a time, the
    parts joined along the replicates."""
    if chunk is None or chunk >= w.shape[0]:
        return stat({c: w @ m.T for c, m in mats.items()})
    parts = [
        stat({c: w[s : s + chunk] @ m.T for c, m in mats.items()})
        for s in range(0, w.shape[0], max(int(chunk), 1))
    ]
    return {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parts[0]}


def _as_statistic(
    statistic: Statistic
    | Mapping[str, Callable[[Mapping[str, np.ndarray]], np.ndarray]],
) -> Statistic:
    if callable(statistic):
        return statistic
    return lambda s: {m: f(s) for m, f in statistic.items()}


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
    with ``w`` the (B × Q) multinomial counts. The estimate is the same statistic with one
    replicate of weights 1. One numpy generator seeded ``seed`` draws the strata in order.

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
    rng = np.random.default_rng(seed)
    per_group: list[tuple] = []
    per_cell: list[tuple] = []
    for key in qs.select(strata).unique().sort(strata).iter_rows():
        where = pl.all_horizontal([pl.col(c) == v for c, v in zip(strata, key)])
        qids = sorted(qs.filter(where).get_column("question_id").to_list())
        nq = len(qids)
        w = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=replicates).astype(float)
        part = rows.filter(where)
        q_index = {q: i for i, q in enumerate(qids)}
        for gkey, grp in (
            part.group_by(groups, maintain_order=True)
            if groups
            else ([((), part)] if part.height else [])
        ):
            cell_keys = (
                grp.select(cells).unique(maintain_order=True)
                if cells
                else pl.DataFrame()
            )
            mats = _dense(grp, q_index, nq, cell_keys, cells, values)
            with np.errstate(invalid="ignore", divide="ignore"):
                est = stat({c: np.ones((1, nq)) @ m.T for c, m in mats.items()})
                boot = _chunked(stat, mats, w, chunk)
            for metric, e in est.items():
                b = np.asarray(boot[metric], dtype=float)
                if np.ndim(e) == 1:
                    per_group.append(
                        (
                            *key,
                            *gkey,
                            metric,
                            float(e[0]),
                            *_interval(b, level),
                            replicates,
                        )
                    )
                else:
                    per_cell += [
                        (
                            *key,
                            *gkey,
                            *ck,
                            metric,
                            float(e[0, u]),
                            *_interval(b[:, u], level),
                            replicates,
                        )
                        for u, ck in enumerate(cell_keys.iter_rows())
                    ]
    tail = {
        "metric": pl.String,
        "estimate": pl.Float64,
        "lo": pl.Float64,
        "hi": pl.Float64,
        "replicates": pl.Int64,
    }
    keys = {
        c: (qs.schema[c] if c in strata else rows.schema[c]) for c in [*strata, *groups]
    }
    out = pl.DataFrame(per_group, schema=keys | tail, orient="row")
    if per_cell:
        with_cells = pl.DataFrame(
            per_cell,
            schema=keys | {c: rows.schema[c] for c in cells} | tail,
            orient="row",
        )
        out = (
            pl.concat([out, with_cells], how="diagonal").select(with_cells.columns)
            if out.height
            else with_cells
        )
    return out


def bootstrap_ci(
    judgments: pl.DataFrame,
    *,
    replicates: int = 1000,
    level: float = 0.95,
    by_task: bool = False,
    seed: int = 0,
    metrics: Mapping[str, registry.Metric] | None = None,
    clusters: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Cluster-bootstrap percentile intervals (questions resampled) for PC, PF, RS and
    every other registered metric.

    Args:
        judgments: JUDGMENT_SCHEMA rows (pairwise pairs and list-wise series for PC/PF;
            any for RS).
        replicates: bootstrap replicates B.
        level: interval coverage (0.95: the 2.5 % and 97.5 % quantiles).
        by_task: per (judge, task) with questions drawn within the task; else per judge
            (``task`` null) with questions drawn over the benchmark.
        seed: numpy seed.
        metrics: the metrics computed (default: every registered one,
            :func:`voirdire.analysis.position.registry.metrics`).
        clusters: drawn instead of the questions where a benchmark declares them
            (:func:`in_clusters`; per task, the clusters of the task's questions).

    Returns:
        :data:`CI_COLUMNS`: ``metric`` in ``pc``, ``pf``, ``rs`` and any metric added to
        :mod:`voirdire.analysis.position.registry`; ``estimate`` (the figure on
        the data, equal to :func:`~voirdire.analysis.position.metrics.judge_metrics`'s when
        ``by_task`` is false), ``lo``/``hi`` (float), ``replicates`` (int). RS rows only for
        judges with queries asked at least twice. The intervals ignore sampling error
        within a question (the judge's own randomness), which RS measures separately.
    """
    strata = ["benchmark", "task"] if by_task else ["benchmark"]
    questions = judgments.select("benchmark", "question_id", "task").unique()
    drawn = questions if clusters is None else in_clusters(questions, clusters).unique()
    common = dict(
        groups=["judge"],
        strata=strata,
        questions=drawn,
        replicates=replicates,
        level=level,
        seed=seed,
    )
    # metrics on the same sums and cells share one pass (the draw is the same for all: one seed)
    batches: dict[tuple, list[registry.Metric]] = {}
    for m in (registry.metrics() if metrics is None else metrics).values():
        batches.setdefault((m.sums_fn, m.cells), []).append(m)
    parts = []
    for (sums, cells), ms in batches.items():
        rows = sums(judgments)
        if by_task and "task" not in rows.columns:
            rows = rows.join(questions, on=["benchmark", "question_id"])
        values = list(dict.fromkeys(v for m in ms for v in m.values))
        rows = in_clusters(rows, clusters)
        ci = cluster_bootstrap(
            rows,
            values,
            {m.name: m.statistic_fn for m in ms},
            cells=list(cells),
            **common,
        )
        parts.append(
            ci.select(CI_COLUMNS)
            if by_task
            else ci.select(
                *CI_COLUMNS[:2],
                pl.lit(None, dtype=pl.String).alias("task"),
                *CI_COLUMNS[3:],
            )
        )
    if not parts:
        types = {
            "replicates": pl.Int64,
            "estimate": pl.Float64,
            "lo": pl.Float64,
            "hi": pl.Float64,
        }
        return pl.DataFrame(schema={c: types.get(c, pl.String) for c in CI_COLUMNS})
    return pl.concat(parts).sort(
        "benchmark", "judge", "task", "metric", nulls_last=False
    )


def with_metric_columns(jm: pl.DataFrame, judgments: pl.DataFrame) -> pl.DataFrame:
    """``jm`` (one row per benchmark × judge) with a column per registered metric it lacks
    (:func:`voirdire.analysis.position.registry.added_metrics`, named after the metric;
    float, null where the judge has no rows for it): the point estimate of
    :func:`bootstrap_ci` on ``judgments``. The built-in pc, pf and rs are already there
    (:func:`~voirdire.analysis.position.metrics.judge_metrics`), so with no other metric
    registered ``jm`` comes back unchanged."""
    added = {n: m for n, m in registry.added_metrics().items() if n not in jm.columns}
    if not added:
        return jm
    est = bootstrap_ci(judgments, replicates=1, metrics=added)
    for name in added:
        col = est.filter(pl.col("metric") == name).select(
            "benchmark", "judge", pl.col("estimate").alias(name)
        )
        jm = jm.join(col, on=["benchmark", "judge"], how="left", maintain_order="left")
    return jm


def stability_sums(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per query asked at least twice with an extracted choice
    (:func:`~voirdire.analysis.position.stability.query_stability`): ``benchmark``,
    ``judge``, ``question_id``, ``s`` (float: ``RS_j``) and ``c`` (1.0), whose ratio of sums
    is RS."""
    return query_stability(judgments).select(
        "benchmark", "judge", "question_id", s="rs_j", c=pl.lit(1.0)
    )


def sign_test(judgments: pl.DataFrame) -> pl.DataFrame:
    """Exact binomial (sign) test of primacy against recency per (benchmark, judge).

    Columns: ``benchmark``, ``judge``, ``primacy``, ``recency`` (int: pcn, rcn),
    ``primacy_share`` (float: pcn / (pcn + rcn), null without inconsistent pairs),
    ``p_value`` (float: two-sided, ``scipy.stats.binomtest(pcn, pcn + rcn, 0.5)``; 1 without
    inconsistent pairs), ``direction`` (``"primacy"``, ``"recency"`` or ``"none"``).
    """
    k = pl.col("klass")
    counts = (
        judgment_pairs(judgments)
        .group_by("benchmark", "judge")
        .agg(
            primacy=(k == "primacy").sum().cast(pl.Int64),
            recency=(k == "recency").sum().cast(pl.Int64),
        )
        .sort("benchmark", "judge")
    )
    p = [
        float(binomtest(a, a + b, 0.5).pvalue) if a + b > 0 else 1.0
        for a, b in zip(
            counts.get_column("primacy").to_list(),
            counts.get_column("recency").to_list(),
        )
    ]
    tot = pl.col("primacy") + pl.col("recency")
    return counts.with_columns(
        primacy_share=pl.when(tot > 0).then(pl.col("primacy") / tot),
        p_value=pl.Series(p, dtype=pl.Float64),
        direction=pl.when(pl.col("primacy") > pl.col("recency"))
        .then(pl.lit("primacy"))
        .when(pl.col("recency") > pl.col("primacy"))
        .then(pl.lit("recency"))
        .otherwise(pl.lit("none")),
    )
