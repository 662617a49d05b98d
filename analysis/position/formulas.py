"""The per-cell formulas of position consistency (PC), preference fairness (PF) and the
overall win rate (owr), written once and shared by the pairwise and list-wise paths.

Source: Shi et al., "Judging the Judges: A Systematic Study of Position Bias in
LLM-as-a-Judge"; ``docs/metrics.md``, *Per cell* and *List-wise*. A *cell* is a
(benchmark, judge, candidate, task) group (:data:`CELL_KEYS`).

Both builders (:func:`voirdire.analysis.position.metrics.pairwise_cell_counts` and
:func:`voirdire.analysis.position.listwise.listwise_cell_counts`) reduce their judgments to the
counts of :data:`COUNT_COLUMNS` per cell; :func:`with_cell_figures` turns the counts into
the figures. Pure polars expressions, no I/O.

The per-judge figures with an interval are statistics over per-question sums (numpy):
:func:`pc_statistic`, :func:`pf_statistic` and :func:`ratio_statistic` are the one
definition that every bootstrap (:func:`voirdire.analysis.position.uncertainty.cluster_bootstrap`)
and every evaluation uses; the point estimate is their one-replicate case.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import polars as pl

__all__ = [
    "LENGTHS",
    "JUDGE_KEYS",
    "CELL_KEYS",
    "COUNT_COLUMNS",
    "CELL_COLUMNS",
    "CELL_SCHEMA",
    "no_verdict",
    "safe_div",
    "with_cell_figures",
    "ratio_statistic",
    "pc_statistic",
    "pf_statistic",
    "rs_statistic",
]

LENGTHS = ["input_chars", "output_chars", "prompt_chars"]
#: A judge's figures are per (benchmark, judge).
JUDGE_KEYS = ["benchmark", "judge"]
#: A cell: one judge's judgments of one candidate on one task of one benchmark.
CELL_KEYS = ["benchmark", "judge", "candidate", "task"]

#: What a builder hands to :func:`with_cell_figures`, per cell (besides the keys and lengths):
#:
#: - ``n`` (int): all judgment pairs / series of the cell, error and "other" ones included;
#: - ``both_orders`` (int): those of them judged in both orders (pairwise: both rows
#:   present, with or without a verdict; list-wise: every series, whose missing orders are
#:   its error class); 0 for a cell of a one-order log, whose figures are then null;
#: - ``consistent`` (int): ``ccn``;
#: - ``primacy``, ``recency`` (int): inconsistent pairs / series leaning to the first slot
#:   (``s < 0``) or the last (``s > 0``); ``balanced`` (int): inconsistent with ``s = 0``
#:   (list-wise only; always 0 for pairs);
#: - ``pcn``, ``rcn`` (float): the fractional counts ``Σ max(−s, 0)`` and ``Σ max(s, 0)``
#:   (pairwise: equal to ``primacy`` and ``recency``, since ``s = ±1``);
#: - ``wins`` (int): ``C_w``, consistent pairs / series the candidate wins; ``ties`` (int):
#:   ``C_t``, consistent all-tie pairs / series;
#: - ``p`` (int): the number of candidates compared (2 for pairs).
COUNT_COLUMNS = [
    "n",
    "both_orders",
    "consistent",
    "primacy",
    "recency",
    "balanced",
    "pcn",
    "rcn",
    "wins",
    "ties",
    "p",
]

#: Columns of :func:`voirdire.analysis.position.metrics.cell_metrics`. ``n``, ``consistent``,
#: ``primacy``, ``recency``, ``pc``, ``pf``, ``owr`` and ``quality_gap`` are the paper's.
CELL_COLUMNS = [
    *CELL_KEYS,
    "n",
    "both_orders",
    "consistent",
    "primacy",
    "recency",
    "balanced",
    "pcn",
    "rcn",
    "pc",
    "pf",
    "owr",
    "quality_gap",
    *LENGTHS,
]

CELL_SCHEMA = {
    "benchmark": pl.String,
    "judge": pl.String,
    "candidate": pl.String,
    "task": pl.String,
    "n": pl.Int64,
    "both_orders": pl.Int64,
    "consistent": pl.Int64,
    "primacy": pl.Int64,
    "recency": pl.Int64,
    "balanced": pl.Int64,
    "pcn": pl.Float64,
    "rcn": pl.Float64,
    "pc": pl.Float64,
    "pf": pl.Float64,
    "owr": pl.Float64,
    "quality_gap": pl.Float64,
    "input_chars": pl.Float64,
    "output_chars": pl.Float64,
    "prompt_chars": pl.Float64,
}


def no_verdict() -> pl.Expr:
    """True for a judgment without a verdict: ``failed``, or no letter ``extracted``."""
    return pl.col("failed").fill_null(False) | pl.col("extracted").is_null()


def safe_div(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    """``num / den`` as float, 0 where ``den == 0``."""
    return pl.when(den == 0).then(pl.lit(0.0)).otherwise(num.cast(pl.Float64) / den)


def valid() -> pl.Expr:
    """``v``: the cell's pairs / series that are consistent or inconsistent (not error or
    other): ``consistent + primacy + recency + balanced``."""
    return (
        pl.col("consistent")
        + pl.col("primacy")
        + pl.col("recency")
        + pl.col("balanced")
    )


def with_cell_figures(counts: pl.LazyFrame) -> pl.LazyFrame:
    """Add ``pc``, ``pf``, ``owr`` and ``quality_gap`` (float) to per-cell counts
    (:data:`COUNT_COLUMNS`).

    Source: ``docs/metrics.md``, *Per cell* (pairwise, Shi et al.) and *List-wise*:

    - ``pc = ccn / v`` (0 when ``v = 0``), ``v`` = :func:`valid`;
    - ``pf = PF_raw / n`` (0 when ``n = 0``) with ``PF_raw = rcn·irr − pcn·ipr``,
      ``ipr = pcn/(pcn+rcn)``, ``irr = rcn/(pcn+rcn)`` (both 0 when ``pcn + rcn = 0``); this
      is the paper's form and equals ``rcn − pcn`` for any non-negative ``pcn``, ``rcn``
      (the list-wise rule, with fractional counts);
    - ``owr = (C_w + (C_t + C_I)/p) / v`` with ``C_I = primacy + recency + balanced`` the
      inconsistent pairs / series (0 when ``v = 0``);
    - ``quality_gap = |owr − 1/p|``.

    All four are null where ``both_orders = 0`` (every pair of the cell judged in one order
    only: nothing about position was measured, which is not a PC of 0); the counts stay.
    """
    pcn, rcn, n, p = pl.col("pcn"), pl.col("rcn"), pl.col("n"), pl.col("p")
    v = valid()
    inc = pl.col("primacy") + pl.col("recency") + pl.col("balanced")
    leaning = pcn + rcn
    ipr, irr = safe_div(pcn, leaning), safe_div(rcn, leaning)
    measured = pl.col("both_orders") > 0
    return counts.with_columns(
        pc=pl.when(measured).then(safe_div(pl.col("consistent"), v)),
        pf=pl.when(measured).then(safe_div(rcn * irr - pcn * ipr, n)),
        owr=pl.when(measured).then(
            safe_div(pl.col("wins") + (pl.col("ties") + inc) / p, v)
        ),
    ).with_columns(quality_gap=(pl.col("owr") - 1.0 / p).abs())


#: A statistic over sums: ``{value: (R, U) array}`` (R replicates, U cells) -> (R,) array.
SumStatistic = Callable[[Mapping[str, np.ndarray]], np.ndarray]


def ratio_statistic(num: str | Sequence[str], den: str | Sequence[str]) -> SumStatistic:
    """The pooled ratio ``Σ num / Σ den`` over the cells, per replicate (``num``/``den``: a
    summed column, or several added together); NaN where ``Σ den = 0``. PC is
    ``ratio_statistic("ccn", "v")`` (``docs/metrics.md``, *Per judge*)."""
    nums = [num] if isinstance(num, str) else list(num)
    dens = [den] if isinstance(den, str) else list(den)

    def ratio(s: Mapping[str, np.ndarray]) -> np.ndarray:
        a = sum(s[c].sum(1) for c in nums)
        b = sum(s[c].sum(1) for c in dens)
        return np.where(b > 0, a / np.where(b > 0, b, 1), np.nan)

    return ratio


#: PC = Σ ccn / Σ v over the cells (``docs/metrics.md``, *Per judge*).
pc_statistic = ratio_statistic("ccn", "v")
#: RS = Σ RS_j / (queries), from per-question sums ``s`` of RS_j and ``c`` of 1
#: (``docs/metrics.md``, *Repetition stability*).
rs_statistic = ratio_statistic("s", "c")


def pf_statistic(s: Mapping[str, np.ndarray]) -> np.ndarray:
    """PF of a judge per replicate: the unweighted mean over its cells with ``n > 0`` of
    ``PF_cell = d / n`` (``d = rcn − pcn``; list-wise the sum of the series' position
    scores), which equals :func:`with_cell_figures`' ``(rcn·irr − pcn·ipr) / n``
    (``docs/metrics.md``, *Per cell* and *Per judge*). NaN for a replicate with no such
    cell, and, as PC, for one with no pair consistent or inconsistent (``Σ v = 0``: every
    pair an error, e.g. a judge that judged each pair in one order only): nothing was
    measured, which is not a fair judge's 0.

    ``s``: ``{"n": (R, U), "d": (R, U), "v": (R, U)}`` sums per cell."""
    n, d = s["n"], s["d"]
    per = np.where(n > 0, d / np.where(n > 0, n, 1), np.nan)
    ok = (n > 0).any(1) & (s["v"].sum(1) > 0)
    out = np.full(n.shape[0], np.nan)
    out[ok] = np.nanmean(per[ok], axis=1)
    return out
