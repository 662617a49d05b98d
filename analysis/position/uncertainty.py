"""Uncertainty of the figures: one cluster-bootstrap engine, and the position-bias intervals.

- :func:`cluster_bootstrap` and :func:`in_clusters`: **the** cluster bootstrap of voirdire
  (ours, beyond Shi et al.), defined in :mod:`voirdire.analysis.stats.bootstrap` and
  importable from here. Every table with an interval uses it: PC, PF and RS here, the
  mitigation evaluation, the bias suite's RR, Δ and susceptibility, and self-enhancement.
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

from collections.abc import Mapping

import polars as pl

from voirdire.analysis.key_sort import sort_by_keys
from voirdire.analysis.position import registry
from voirdire.analysis.position.listwise import candidate_series
from voirdire.analysis.position.pairing import judgment_pairs, pair_sums
from voirdire.analysis.position.stability import query_stability
from voirdire.analysis.stats.bootstrap import Statistic as Statistic
from voirdire.analysis.stats.bootstrap import cluster_bootstrap, in_clusters

__all__ = [
    "CI_COLUMNS", "question_sums", "stability_sums", "bootstrap_ci",
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


def question_sums(
    judgments: pl.DataFrame, pairs: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per (benchmark, judge, candidate, task, question_id) the sufficient statistics of PC
    and PF (float): ``n`` pairs / series, ``ccn`` consistent, ``v`` consistent or
    inconsistent, ``d`` the PF numerator ``rcn − pcn`` (list-wise: ``Σ s``, fractional).
    Pairwise pairs and list-wise series (a series counts for each of its candidates) alike.
    ``pairs``: :func:`~voirdire.analysis.position.pairing.judgment_pairs` of ``judgments``
    where the caller has it (else it is made here)."""
    k = pl.col("klass")
    keys = ["benchmark", "judge", "candidate", "task", "question_id"]
    if pairs is None:
        pairs = judgment_pairs(judgments)
    pairwise = pair_sums(pairs, keys)
    if (
        "mode" not in judgments.columns
        or not judgments.filter(pl.col("mode") == "listwise").height
    ):
        return sort_by_keys(
            pairwise, keys
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
    return sort_by_keys(pl.concat([pairwise, listwise], how="vertical_relaxed"), keys)


def _metric_batches(
    metrics: Mapping[str, registry.Metric] | None,
) -> dict[tuple, list[registry.Metric]]:
    """``metrics`` (default: every registered one) grouped by their (sums function, cells),
    in the order of first appearance: the metrics of a group share one bootstrap pass (the
    draw is the same for all: one seed)."""
    batches: dict[tuple, list[registry.Metric]] = {}
    for m in (registry.metrics() if metrics is None else metrics).values():
        batches.setdefault((m.sums_fn, m.cells), []).append(m)
    return batches


def _empty_ci() -> pl.DataFrame:
    """No rows, the :data:`CI_COLUMNS` with their types."""
    types = {
        "replicates": pl.Int64,
        "estimate": pl.Float64,
        "lo": pl.Float64,
        "hi": pl.Float64,
    }
    return pl.DataFrame(schema={c: types.get(c, pl.String) for c in CI_COLUMNS})


def bootstrap_ci(
    judgments: pl.DataFrame,
    *,
    replicates: int = 1000,
    level: float = 0.95,
    by_task: bool = False,
    seed: int = 0,
    metrics: Mapping[str, registry.Metric] | None = None,
    clusters: pl.DataFrame | None = None,
    pairs: pl.DataFrame | None = None,
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
        pairs: :func:`~voirdire.analysis.position.pairing.judgment_pairs` of
            ``judgments`` where the caller has it (:func:`question_sums` reads it).

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
    parts = []
    for (sums, cells), ms in _metric_batches(metrics).items():
        rows = (
            question_sums(judgments, pairs)
            if sums is question_sums and pairs is not None
            else sums(judgments)
        )
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
        return _empty_ci()
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


def sign_test(
    judgments: pl.DataFrame, pairs: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Exact binomial (sign) test of primacy against recency per (benchmark, judge).
    ``pairs``: :func:`~voirdire.analysis.position.pairing.judgment_pairs` of
    ``judgments`` where the caller has it (else it is made here).

    Columns: ``benchmark``, ``judge``, ``primacy``, ``recency`` (int: pcn, rcn),
    ``primacy_share`` (float: pcn / (pcn + rcn), null without inconsistent pairs),
    ``p_value`` (float: two-sided, ``scipy.stats.binomtest(pcn, pcn + rcn, 0.5)``; 1 without
    inconsistent pairs), ``direction`` (``"primacy"``, ``"recency"`` or ``"none"``).
    """
    from scipy.stats import binomtest  # lazily: scipy.stats is ~0.5 s of imports

    k = pl.col("klass")
    counts = (
        (judgment_pairs(judgments) if pairs is None else pairs)
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
