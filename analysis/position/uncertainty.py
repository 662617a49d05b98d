"""Uncertainty of the position-bias figures (ours, beyond Shi et al.).

- :func:`bootstrap_ci`: cluster-bootstrap percentile intervals for PC, PF and RS per judge
  and per (judge, task). The clusters are the benchmark's *questions*: a replicate draws
  the questions with replacement (all judges share the draw) and recomputes each figure
  with the definitions of ``docs/metrics.md`` (PC pooled Σccn/Σv; PF the mean over cells
  of PF_cell = (rcn − pcn)/n, which equals rcn·irr − pcn·ipr over n, list-wise with the
  fractional counts, i.e. the sum of the series' position scores over n; RS the mean of
  RS_j). Per (judge, task) the questions are drawn within the task (stratified).
  Replicates are weighted sums: a (B × Q) matrix of multinomial counts times per-question
  sufficient statistics, no Python loop over replicates.
- :func:`bootstrap_sums`: the same cluster bootstrap for any figure computed from
  per-question sums (ratios of sums, means over cells, a kappa from confusion counts):
  the mitigation evaluation (``docs/mitigation.md``) uses it.
- :func:`sign_test`: exact two-sided binomial test (scipy) of primacy against recency among
  a judge's inconsistent pairs, H0: P(primacy | inconsistent) = 1/2. Pairs are treated as
  independent (with repetitions, or many candidates per question, they are not quite).
- :func:`cluster_bootstrap`: the same question-cluster bootstrap for any figure built from
  per-question sums (the bias suite's RR, CR, Δ and self-enhancement use it).
- The power table lives with the simulator: :func:`voirdire.analysis.position.simulate.power_table`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import polars as pl
from scipy.stats import binomtest
from voirdire.analysis.position.listwise import listwise_series
from voirdire.analysis.position.metrics import pairwise_pairs, query_stability

__all__ = ["CI_COLUMNS", "bootstrap_ci", "bootstrap_sums", "cluster_bootstrap", "sign_test"]

CI_COLUMNS = ["benchmark", "judge", "task", "metric", "estimate", "lo", "hi", "replicates"]


def _pair_stats(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per (benchmark, judge, candidate, task, question) sufficient statistics of the cells:
    ``n`` pairs / series, ``ccn`` consistent, ``v`` consistent or inconsistent, ``d`` the
    PF numerator ``rcn − pcn`` (list-wise: ``Σ s``, fractional). Pairwise pairs and
    list-wise series (a series counts for each of its candidates) alike."""
    k = pl.col("klass")
    keys = ["benchmark", "judge", "candidate", "task", "question_id"]
    pairwise = pairwise_pairs(judgments).group_by(keys).agg(
        n=pl.len().cast(pl.Float64),
        ccn=(k == "consistent").sum().cast(pl.Float64),
        v=k.is_in(["consistent", "primacy", "recency"]).sum().cast(pl.Float64),
        d=((k == "recency").sum().cast(pl.Float64) - (k == "primacy").sum().cast(pl.Float64)),
    )
    if not judgments.filter(pl.col("mode") == "listwise").height:
        return pairwise
    listwise = (
        listwise_series(judgments)
        .with_columns(candidate=pl.col("candidates"))
        .explode("candidate")
        .group_by(keys)
        .agg(
            n=pl.len().cast(pl.Float64),
            ccn=(k == "consistent").sum().cast(pl.Float64),
            v=k.is_in(["consistent", "primacy", "recency", "balanced"]).sum().cast(pl.Float64),
            d=pl.col("s").fill_null(0.0).sum().cast(pl.Float64),
        )
    )
    return pl.concat([pairwise, listwise])


def _dense(rows: pl.DataFrame, q_index: dict[str, int], n_q: int, cell_cols: list[str], values: list[str]):
    """(U, Q) matrices of ``values`` with the cells as rows."""
    cells = rows.select(cell_cols).unique(maintain_order=True) if cell_cols else pl.DataFrame({"_": [0]})
    if cell_cols:
        rows = rows.join(cells.with_row_index("_u"), on=cell_cols, how="left")
        u = rows.get_column("_u").to_numpy()
    else:
        u = np.zeros(rows.height, dtype=np.int64)
    q = np.array([q_index[x] for x in rows.get_column("question_id").to_list()], dtype=np.int64)
    out = {}
    for c in values:
        m = np.zeros((cells.height, n_q))
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


def _estimates(w: np.ndarray, mats: dict, rs: dict | None) -> dict[str, np.ndarray]:
    """Figures for each row of the weight matrix ``w`` (R, Q); R may be 1 (the estimate)."""
    out = {}
    if mats:
        ccn, v = w @ mats["ccn"].sum(0), w @ mats["v"].sum(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out["pc"] = np.where(v > 0, ccn / v, np.nan)
            n_u, d_u = w @ mats["n"].T, w @ mats["d"].T  # (R, U)
            pf_u = np.where(n_u > 0, d_u / np.where(n_u > 0, n_u, 1), np.nan)
            out["pf"] = np.nanmean(np.where(n_u > 0, pf_u, np.nan), axis=1) if pf_u.shape[1] else np.full(w.shape[0], np.nan)
    if rs is not None:
        s, c = w @ rs["s"][0], w @ rs["c"][0]
        with np.errstate(invalid="ignore", divide="ignore"):
            out["rs"] = np.where(c > 0, s / c, np.nan)
    return out


def bootstrap_ci(
    judgments: pl.DataFrame,
    *,
    replicates: int = 1000,
    level: float = 0.95,
    by_task: bool = False,
    seed: int = 0,
) -> pl.DataFrame:
    """Cluster-bootstrap percentile intervals (questions resampled) for PC, PF and RS.

    Args:
        judgments: JUDGMENT_SCHEMA rows (pairwise pairs and list-wise series for PC/PF;
            any for RS).
        replicates: bootstrap replicates B.
        level: interval coverage (0.95: the 2.5 % and 97.5 % quantiles).
        by_task: per (judge, task) with questions drawn within the task; else per judge
            (``task`` null) with questions drawn over the benchmark.
        seed: numpy seed.

    Returns:
        :data:`CI_COLUMNS`: ``metric`` in ``pc``, ``pf``, ``rs``; ``estimate`` (the figure on
        the data, equal to :func:`~voirdire.analysis.position.metrics.judge_metrics`'s when
        ``by_task`` is false), ``lo``/``hi`` (float), ``replicates`` (int). RS rows only for
        judges with queries asked at least twice. The intervals ignore sampling error
        within a question (the judge's own randomness), which RS measures separately.
    """
    rng = np.random.default_rng(seed)
    pairs = _pair_stats(judgments)
    stab = query_stability(judgments).with_columns(s=pl.col("rs_j"), c=pl.lit(1.0))
    rows = []
    benches = sorted(judgments.get_column("benchmark").unique().to_list())
    for bench in benches:
        bq = judgments.filter(pl.col("benchmark") == bench).select("question_id", "task").unique()
        strata = [(None, bq)] if not by_task else [(t, bq.filter(pl.col("task") == t)) for t in sorted(bq.get_column("task").unique().to_list())]
        for task, qs in strata:
            qids = sorted(qs.get_column("question_id").unique().to_list())
            q_index = {q: i for i, q in enumerate(qids)}
            nq = len(qids)
            w = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=replicates).astype(float)
            one = np.ones((1, nq))
            bp = pairs.filter(pl.col("benchmark") == bench)
            bs = stab.filter(pl.col("benchmark") == bench)
            if task is not None:
                bp = bp.filter(pl.col("task") == task)
                bs = bs.filter(pl.col("question_id").is_in(qids))
            judges = sorted(set(bp.get_column("judge").to_list()) | set(bs.get_column("judge").to_list()))
            for judge in judges:
                jp = bp.filter(pl.col("judge") == judge)
                js = bs.filter(pl.col("judge") == judge)
                mats = _dense(jp, q_index, nq, ["candidate", "task"], ["n", "ccn", "v", "d"]) if jp.height else {}
                rs = _dense(js, q_index, nq, [], ["s", "c"]) if js.height else None
                est = _estimates(one, mats, rs)
                boot = _estimates(w, mats, rs)
                for metric in ("pc", "pf", "rs"):
                    if metric in est:
                        lo, hi = _interval(boot[metric], level)
                        rows.append((bench, judge, task, metric, float(est[metric][0]), lo, hi, replicates))
    schema = {
        "benchmark": pl.String,
        "judge": pl.String,
        "task": pl.String,
        "metric": pl.String,
        "estimate": pl.Float64,
        "lo": pl.Float64,
        "hi": pl.Float64,
        "replicates": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort("benchmark", "judge", "task", "metric", nulls_last=False)


def _question_draws(rows: pl.DataFrame, replicates: int, seed: int) -> Iterator[tuple[str, pl.DataFrame, dict[str, int], int, np.ndarray]]:
    """Per benchmark (sorted): its rows, the question index, the number of questions Q and
    the (B × Q) multinomial counts of one cluster-bootstrap draw of its questions."""
    rng = np.random.default_rng(seed)
    for bench in sorted(rows.get_column("benchmark").unique().to_list()):
        part = rows.filter(pl.col("benchmark") == bench)
        qids = sorted(part.get_column("question_id").unique().to_list())
        nq = len(qids)
        w = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=replicates).astype(float)
        yield bench, part, {q: i for i, q in enumerate(qids)}, nq, w


def bootstrap_sums(
    rows: pl.DataFrame,
    *,
    groups: Sequence[str],
    cells: Sequence[str],
    values: Sequence[str],
    statistics: Mapping[str, Callable[[Mapping[str, np.ndarray]], np.ndarray]],
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """Cluster-bootstrap percentile intervals (questions resampled) for figures of sums.

    Args:
        rows: one row per (``benchmark``, *groups*, *cells*, ``question_id``) with the
            numeric ``values`` summed over that question's records.
        groups: columns of one figure (e.g. strategy, judge).
        cells: columns of the sub-units a figure may average over (e.g. candidate, task;
            PF is a mean over cells); may be empty.
        values: the summed columns.
        statistics: metric name -> function of ``{value: (R, U) array}`` (the replicate's
            sums per cell; R replicates, U cells) returning an (R,) array; NaN where
            undefined.
        replicates, level, seed: as in :func:`bootstrap_ci`. Every group of a benchmark
            shares the draw of its questions (all questions in ``rows`` for it).

    Returns:
        ``benchmark``, *groups*, ``metric`` (str), ``estimate`` (float: the statistic on
        the data), ``lo``, ``hi`` (float; NaN when no replicate is defined), ``replicates``.
    """
    out = []
    for bench, part, q_index, nq, w in _question_draws(rows, replicates, seed):
        one = np.ones((1, nq))
        for key, grp in part.group_by(list(groups), maintain_order=True):
            mats = _dense(grp, q_index, nq, list(cells), list(values))
            est = {c: one @ m.T for c, m in mats.items()}
            boot = {c: w @ m.T for c, m in mats.items()}
            for metric, fn in statistics.items():
                with np.errstate(invalid="ignore", divide="ignore"):
                    e = float(np.asarray(fn(est))[0])
                    lo, hi = _interval(np.asarray(fn(boot), dtype=float), level)
                out.append((bench, *key, metric, e, lo, hi, replicates))
    schema = {"benchmark": pl.String, **{g: rows.schema[g] for g in groups}, "metric": pl.String,
              "estimate": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "replicates": pl.Int64}  # fmt: skip
    return pl.DataFrame(out, schema=schema, orient="row")


def cluster_bootstrap(
    rows: pl.DataFrame,
    units: list[str],
    values: list[str],
    stat: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]],
    *,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """Cluster-bootstrap percentile intervals (questions resampled) of figures built from sums.

    The machinery of :func:`bootstrap_ci`, for any figure: per benchmark the questions are
    drawn with replacement (one draw shared by every unit of that benchmark), each value
    column is summed per (unit, question) and a replicate's sums are ``w @ M.T`` with ``w``
    the (B × Q) multinomial counts.

    Args:
        rows: columns ``benchmark``, ``question_id``, the ``units`` columns and the
            ``values`` columns (numeric; nulls count as 0).
        units: columns naming a unit (e.g. judge, perturbation); a figure is computed per unit.
        values: the columns summed per question.
        stat: maps ``{value: (R, U) array of sums}`` (R replicates, U units in the order of
            their first appearance in ``rows``) to ``{metric: (R, U) array}``; it must work
            row by row (R = 1 gives the estimate).
        replicates: bootstrap replicates B.
        level: interval coverage (0.95: the 2.5 % and 97.5 % quantiles).
        seed: numpy seed.

    Returns:
        One row per (benchmark, unit, metric): ``benchmark``, the ``units`` columns,
        ``metric`` (str), ``estimate`` (the figure on the data), ``lo``, ``hi`` (float; NaN
        where no replicate is finite), ``replicates`` (int).
    """
    out = []
    for bench, part, q_index, nq, w in _question_draws(rows, replicates, seed):
        br = part.with_columns([pl.col(c).fill_null(0).cast(pl.Float64) for c in values])
        mats = _dense(br, q_index, nq, units, values)
        keys = br.select(units).unique(maintain_order=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            est = stat({c: np.ones((1, nq)) @ m.T for c, m in mats.items()})
            boot = stat({c: w @ m.T for c, m in mats.items()})
        for metric, e in est.items():
            ci = [_interval(boot[metric][:, u], level) for u in range(keys.height)]
            out.append(
                keys.with_columns(
                    benchmark=pl.lit(bench),
                    metric=pl.lit(metric),
                    estimate=pl.Series(e[0], dtype=pl.Float64),
                    lo=pl.Series([c[0] for c in ci], dtype=pl.Float64),
                    hi=pl.Series([c[1] for c in ci], dtype=pl.Float64),
                    replicates=pl.lit(replicates, dtype=pl.Int64),
                )
            )
    if not out:
        return pl.DataFrame(schema={"benchmark": pl.String, **{u: rows.schema[u] for u in units}, "metric": pl.String, "estimate": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "replicates": pl.Int64})
    return pl.concat(out).select("benchmark", *units, "metric", "estimate", "lo", "hi", "replicates")


def sign_test(judgments: pl.DataFrame) -> pl.DataFrame:
    """Exact binomial (sign) test of primacy against recency per (benchmark, judge).

    Columns: ``benchmark``, ``judge``, ``primacy``, ``recency`` (int: pcn, rcn),
    ``primacy_share`` (float: pcn / (pcn + rcn), null without inconsistent pairs),
    ``p_value`` (float: two-sided, ``scipy.stats.binomtest(pcn, pcn + rcn, 0.5)``; 1 without
    inconsistent pairs), ``direction`` (``"primacy"``, ``"recency"`` or ``"none"``).
    """
    k = pl.col("klass")
    counts = (
        pairwise_pairs(judgments)
        .group_by("benchmark", "judge")
        .agg(primacy=(k == "primacy").sum().cast(pl.Int64), recency=(k == "recency").sum().cast(pl.Int64))
        .sort("benchmark", "judge")
    )
    p = [
        float(binomtest(a, a + b, 0.5).pvalue) if a + b > 0 else 1.0
        for a, b in zip(counts.get_column("primacy").to_list(), counts.get_column("recency").to_list())
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
