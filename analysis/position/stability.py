"""Repetition stability (RS): how often a judge gives the same verdict to the same query.

Source: Shi et al., "Judging the Judges"; ``docs/metrics.md``, *Repetition stability*.
Mode-agnostic (pairwise, list-wise and score letters alike); pure polars.
"""

from __future__ import annotations

import polars as pl

from voirdire.analysis.position.formulas import JUDGE_KEYS, no_verdict

__all__ = ["QUERY_KEYS", "RS_COLUMNS", "query_stability", "repetition_stability"]

#: One query: the same prompt, asked once per repetition.
QUERY_KEYS = ["benchmark", "judge", "query_id"]
#: Columns of :func:`repetition_stability`.
RS_COLUMNS = [*JUDGE_KEYS, "rs", "rs_spread", "n_queries"]


def _query_stability(lf: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """``(used, scored)``: queries asked at least twice (``n_j``, ``m_j``), and those with
    an extracted choice with ``rs_j`` and ``sd_j`` (see :func:`repetition_stability`)."""
    ok = ~no_verdict()
    per_query = lf.group_by(QUERY_KEYS).agg(
        n_j=pl.len().cast(pl.Int64), question_id=pl.col("question_id").first()
    )
    largest = (
        lf.filter(ok)
        .group_by([*QUERY_KEYS, "extracted"])
        .agg(c=pl.len().cast(pl.Int64))
        .group_by(QUERY_KEYS)
        .agg(m_j=pl.col("c").max())
    )
    n, m = pl.col("n_j"), pl.col("m_j")
    used = (
        per_query.filter(n >= 2)
        .join(largest, on=QUERY_KEYS, how="left")
        .with_columns(m.fill_null(0))
    )
    scored = used.filter(m > 0).with_columns(
        rs_j=m.cast(pl.Float64) / n,
        sd_j=((m * (n - m)).cast(pl.Float64) / (n * (n - 1))).sqrt(),
    )
    return used, scored


def query_stability(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per query asked at least twice with an extracted choice: ``benchmark``, ``judge``,
    ``query_id``, ``question_id`` (str), ``n_j``, ``m_j`` (int), ``rs_j``, ``sd_j``
    (float); the terms that :func:`repetition_stability` averages."""
    _, scored = _query_stability(_repeated(judgments).lazy())
    return scored.sort(QUERY_KEYS).collect()


def _repeated(judgments: pl.DataFrame) -> pl.DataFrame:
    """``judgments``, or none of its rows where no ``query_id`` occurs twice (no query
    asked twice: nothing for RS; a hash of one column, not the three group-bys over
    every row)."""
    if (
        judgments.height
        and judgments.select(pl.col("query_id").is_duplicated().any()).item()
    ):
        return judgments
    return judgments.head(0)


def repetition_stability(judgments: pl.DataFrame) -> pl.DataFrame:
    """Repetition stability (RS) and its spread per (benchmark, judge).

    Source: Shi et al., "Judging the Judges"; ``docs/metrics.md``, *Repetition stability*.
    Mode-agnostic: a query is a ``(benchmark, judge, query_id)`` and its choices are the
    extracted letters (ties and out-of-option letters are choices like any other).

    For query ``j`` with ``n_j`` repetitions (rows; failed ones count in ``n_j`` as no
    choice) and ``m_j = max_k |C_k|`` the size of its largest group of identical extracted
    choices: ``RS_j = m_j / n_j``. ``rs`` = mean of ``RS_j`` over the judge's queries.

    ``rs_spread``: per query, the sample std (ddof 1) over its repetitions of the indicator
    "this repetition's choice equals the query's most frequent extracted choice" (failed
    repetitions: 0), averaged over queries. The indicator has ``m_j`` ones and
    ``n_j − m_j`` zeros whichever letter wins a tie for most frequent, so the std is
    computed in closed form: ``sqrt(m_j (n_j − m_j) / (n_j (n_j − 1)))``.

    Readings of the spec (documented choices):

    - Only queries asked more than once (``n_j ≥ 2``) are used, for both figures: a query
      asked once carries no information on stability (``RS_j`` would be 1 by construction
      and its ddof-1 std undefined), so a job that repeats only a sample of its queries
      gets the RS of that sample. A judge with no such query gets ``rs`` and ``rs_spread``
      null and ``n_queries`` 0.
    - Queries whose every repetition failed (``m_j = 0``) are left out of both figures (the
      spread's "queries with no extracted choice skipped" is the same set). If none is
      left, ``rs`` and ``rs_spread`` are null: nothing measured, the rule of every
      registered figure (:func:`voirdire.analysis.position.metrics.metric_estimates`).
      The registered ``rs`` (``builtin_metrics.py``) is the one that the tables show.
    - One row per (query, repetition) is assumed (the engine's unit ids guarantee it).

    Output columns (:data:`RS_COLUMNS`): benchmark, judge, ``rs`` (float), ``rs_spread``
    (float), ``n_queries`` (int: queries used).
    """
    lf = judgments.lazy()
    used, scored = _query_stability(_repeated(judgments).lazy())
    # the terms sorted: the mean's float sum runs in one order (it varied from run to run)
    stats = scored.group_by(JUDGE_KEYS).agg(
        rs=pl.col("rs_j").sort().cum_sum().last() / pl.len(),
        rs_spread=pl.col("sd_j").sort().cum_sum().last() / pl.len(),
        n_queries=pl.len().cast(pl.Int64),
    )
    judges = lf.select(JUDGE_KEYS).unique()
    return (
        judges.join(stats, on=JUDGE_KEYS, how="left")
        .with_columns(n_queries=pl.col("n_queries").fill_null(0))
        .select(RS_COLUMNS)
        .sort(JUDGE_KEYS)
        .collect()
    )
