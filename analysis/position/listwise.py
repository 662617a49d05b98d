"""List-wise position-bias metrics: judgments of p >= 3 candidates in, metric tables out.

Definitions: ``docs/metrics.md``, section *List-wise*, extending Shi et al., "Judging the
Judges: A Systematic Study of Position Bias in LLM-as-a-Judge" (list-wise section; the
paper shows p = 3 candidates in their p cyclic orders). Pure polars expressions, no row
loops. :func:`listwise_cell_counts` is the ``"listwise"`` cell builder of
:data:`voirdire.analysis.position.metrics.CELL_BUILDERS`; the figures (PC, PF, owr) come from the
formulas shared with the pairwise path (:mod:`voirdire.analysis.position.formulas`).

Terms
-----
- A **series** is the judgments of one judge on one instance (question + candidate list)
  over all its permutations, in one repetition (pairwise: a judgment pair).
- A judgment's letter names a slot (``A`` first); with option mode p + 1 the letter after
  the last slot is the tie. Any other extracted letter is *other* (chooses nothing).
- The **position score** of slot ``j`` (1-based) of ``p`` is ``c_j = 2(j−1)/(p−1) − 1``:
  slot 1 → −1, the last slot → +1, evenly spaced between.

Series classes (:func:`listwise_series`)
---------------------------------------
- ``error``: a judgment failed (no verdict), or the series has fewer judgments than the
  largest series of its (benchmark, judge, list size, option mode) (an order is missing).
- ``other``: a judgment extracted a letter outside the options (the release's rule: such
  a series is neither consistent nor biased, but counts in ``n``).
- ``consistent``: every choice selects the same candidate, or every choice is a tie.
- otherwise inconsistent, with ``s`` the mean position score of its non-tie choices (0 if
  it has none): ``primacy`` (``s < 0``), ``recency`` (``s > 0``) or ``balanced``
  (``s = 0``) **(ours, revised; it reduces exactly to the pairwise classes at p = 2)**.

Cells
-----
The cell is (benchmark, judge, candidate, task) as in the pairwise analysis: a series
counts in the cell of **each** of its p candidates. For candidate ``i``: ``n`` series (all
classes), ``ccn`` consistent series, ``primacy`` / ``recency`` / ``balanced`` series,
fractional ``pcn = Σ max(−s, 0)`` and ``rcn = Σ max(s, 0)`` over its inconsistent series;
``PC = ccn / v`` with ``v = ccn + primacy + recency + balanced``; ``PF = (rcn − pcn) / n``;
``owr = (C_w + (C_t + C_I)/p) / v`` with ``C_w`` consistent series won by ``i``, ``C_t``
consistent all-tie series, ``C_I`` the inconsistent series; ``quality_gap = |owr − 1/p|``.
Per-judge PC pools ``Σccn/Σv`` over cells, so each series weighs p times, equally for all
series.

A judge whose choices do not depend on the slot has expected PF exactly 0 under any design
balanced within a series (cyclic, all orders, Latin squares), with or without ties; with
``sample:k`` orders only on average over the drawn orders. PF is a first-versus-last axis:
a preference for middle slots reads ≈ 0, which :func:`slot_shares` (shares and a
chi-square test against uniform, clustered by question: :func:`cluster_wald`) shows.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from voirdire.analysis.position.formulas import (
    CELL_COLUMNS,
    CELL_KEYS,
    LENGTHS,
    no_verdict,
    safe_div,
    with_cell_figures,
)
from voirdire.analysis.stats.slot_test import question_wald
from voirdire.core import LETTERS

__all__ = [
    "SERIES_KEYS",
    "SERIES_COLUMNS",
    "SLOT_COLUMNS",
    "listwise_series",
    "candidate_series",
    "listwise_cell_counts",
    "listwise_cell_metrics",
    "slot_shares",
]

#: One series: a judge's judgments of one instance (question + list) in one repetition.
SERIES_KEYS = [
    "benchmark",
    "judge",
    "task",
    "question_id",
    "candidates",
    "repetition",
    "option_mode",
]
SERIES_COLUMNS = [
    *SERIES_KEYS,
    "p",
    "n_judgments",
    "klass",
    "winner",
    "all_tie",
    "s",
    *LENGTHS,
]
SLOT_COLUMNS = [
    "benchmark", "judge", "list_size", "option_mode", "slot", "position",
    "choices", "n_choices", "share", "expected", "excess", "tie_share",
    "chi2", "chi2_dof", "chi2_p", "clusters", "pearson_chi2",
]  # fmt: skip


def _slot_code() -> pl.Expr:
    """0-based slot index of the extracted letter (``A`` = 0), null when none or not one
    upper-case letter."""
    letter = pl.col("extracted")
    one = letter.str.len_bytes().eq(1) & letter.is_not_null()
    code = letter.str.encode("hex").str.to_integer(base=16, strict=False).cast(
        pl.Int32
    ) - ord("A")
    return pl.when(one & ~no_verdict()).then(code).otherwise(None)


def _annotated(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Rows with ``_p``, ``_code``, ``_fail``, ``_tie``, ``_slot`` (in a slot), ``_other``,
    ``_chosen`` (the model in the chosen slot), ``_score2`` (int: ``(p−1)·c_j`` = ``2·code −
    (p − 1)`` for a slot choice, else 0; integer so that the sign of ``s`` is exact)."""
    p = pl.col("shown").list.len().cast(pl.Int32)
    code = pl.col("_code")
    return (
        rows.with_columns(_p=p, _code=_slot_code(), _fail=no_verdict())
        .with_columns(
            _tie=(code == pl.col("_p")) & (pl.col("option_mode") > pl.col("_p")),
            _slot=(code >= 0) & (code < pl.col("_p")),
        )
        .with_columns(
            _tie=pl.col("_tie").fill_null(False),
            _slot=pl.col("_slot").fill_null(False),
            _other=(
                ~pl.col("_fail")
                & ~pl.col("_tie").fill_null(False)
                & ~pl.col("_slot").fill_null(False)
            ),
            _chosen=pl.when(pl.col("_slot")).then(
                pl.col("shown").list.get(code.clip(0, 64), null_on_oob=True)
            ),
            _score2=pl.when(pl.col("_slot"))
            .then(2 * code - (pl.col("_p") - 1))
            .otherwise(0)
            .cast(pl.Int64),
        )
    )


def listwise_series(judgments: pl.DataFrame) -> pl.DataFrame:
    """Form and classify the list-wise series (see the module docstring).

    Rows with ``mode != "listwise"`` are ignored. Reads ``benchmark``, ``judge``, ``task``,
    ``question_id``, ``candidates`` (list[str]), ``shown`` (list[str]), ``repetition``,
    ``option_mode``, ``extracted``, ``failed`` and the lengths.

    Output columns (:data:`SERIES_COLUMNS`), one row per series:

    - the keys (``candidates`` as list[str]); ``p`` (int): list size;
    - ``n_judgments`` (int): judgments in the series;
    - ``klass`` (str): ``error`` | ``other`` | ``consistent`` | ``primacy`` | ``recency`` |
      ``balanced``;
    - ``winner`` (str | null): the candidate a consistent series chose (null for ties and
      other classes);
    - ``all_tie`` (bool): consistent because every choice is a tie;
    - ``s`` (float | null): the mean position score ``c_j = 2(j−1)/(p−1) − 1`` of the
      series' non-tie choices (0 when it has none) for inconsistent series; 0 for
      consistent series; null for error and other series;
    - ``input_chars``, ``output_chars``, ``prompt_chars`` (float): means over the series.
    """
    rows = _annotated(judgments.lazy().filter(pl.col("mode") == "listwise"))
    series = rows.group_by(SERIES_KEYS).agg(
        *[pl.col(c).mean().cast(pl.Float64) for c in LENGTHS],
        p=pl.col("_p").max(),
        n_judgments=pl.len().cast(pl.Int64),
        _failed=pl.col("_fail").sum(),
        _other=pl.col("_other").sum(),
        _ties=pl.col("_tie").sum(),
        _picks=pl.col("_slot").sum(),
        _distinct=pl.col("_chosen").drop_nulls().n_unique(),
        _first_pick=pl.col("_chosen").drop_nulls().first(),
        _score2=pl.col("_score2").sum(),
    )
    group = ["benchmark", "judge", "p", "option_mode"]
    series = series.with_columns(_expected=pl.col("n_judgments").max().over(group))
    n, ties, picks, score2 = (
        pl.col("n_judgments"),
        pl.col("_ties"),
        pl.col("_picks"),
        pl.col("_score2"),
    )
    all_tie = (ties == n) & (n > 0)
    same = (ties == 0) & (picks == n) & (pl.col("_distinct") == 1)
    klass = (
        pl.when((pl.col("_failed") > 0) | (n < pl.col("_expected")))
        .then(pl.lit("error"))
        .when(pl.col("_other") > 0)
        .then(pl.lit("other"))
        .when(all_tie | same)
        .then(pl.lit("consistent"))
        .when(score2 < 0)
        .then(pl.lit("primacy"))
        .when(score2 > 0)
        .then(pl.lit("recency"))
        .otherwise(pl.lit("balanced"))
    )
    # s = Σ (p−1)·c_j / ((p−1) · picks); its sign is that of the integer numerator
    s = safe_div(score2, (pl.col("p") - 1) * picks)
    inconsistent = pl.col("klass").is_in(["primacy", "recency", "balanced"])
    return (
        series.with_columns(klass=klass)
        .with_columns(
            winner=pl.when((pl.col("klass") == "consistent") & same).then(
                pl.col("_first_pick")
            ),
            all_tie=(pl.col("klass") == "consistent") & all_tie,
            s=pl.when(inconsistent)
            .then(s)
            .when(pl.col("klass") == "consistent")
            .then(pl.lit(0.0)),
        )
        .select(SERIES_COLUMNS)
        .sort(
            ["benchmark", "judge", "task", "question_id", "repetition", "option_mode"]
        )
        .collect()
    )


def candidate_series(judgments: pl.DataFrame) -> pl.DataFrame:
    """:func:`listwise_series` with one row per (series, candidate) (column ``candidate``):
    a series counts in the cell of each of its p candidates."""
    return (
        listwise_series(judgments)
        .with_columns(candidate=pl.col("candidates"))
        .explode("candidate")
    )


def listwise_cell_counts(rows: pl.DataFrame) -> pl.LazyFrame:
    """The list-wise cell builder: per (benchmark, judge, candidate, task) the counts of
    :data:`voirdire.analysis.position.formulas.COUNT_COLUMNS` over the series of ``rows`` (a series
    counts in the cell of each of its candidates), with the mean lengths.

    Source: ``docs/metrics.md``, *List-wise*. ``primacy`` / ``recency`` / ``balanced``
    (int): inconsistent series with ``s < 0`` / ``s > 0`` / ``s = 0``; ``pcn``, ``rcn``
    (float): ``Σ max(−s, 0)``, ``Σ max(s, 0)``; ``wins`` the consistent series the candidate
    won, ``ties`` the consistent all-tie series; ``p`` (int) the list size (the largest in
    the cell: a job has one list size). The figures come from
    :func:`voirdire.analysis.position.formulas.with_cell_figures`.
    """
    k = pl.col("klass")
    s = pl.col("s").fill_null(0.0)
    return (
        candidate_series(rows)
        .lazy()
        .group_by(CELL_KEYS)
        .agg(
            *[pl.col(c).mean().cast(pl.Float64) for c in LENGTHS],
            n=pl.len().cast(pl.Int64),
            # a series' missing orders are its error class, not a one-order cell
            both_orders=pl.len().cast(pl.Int64),
            consistent=(k == "consistent").sum().cast(pl.Int64),
            primacy=(k == "primacy").sum().cast(pl.Int64),
            recency=(k == "recency").sum().cast(pl.Int64),
            balanced=(k == "balanced").sum().cast(pl.Int64),
            pcn=(-s).clip(lower_bound=0.0).sum().cast(pl.Float64),
            rcn=s.clip(lower_bound=0.0).sum().cast(pl.Float64),
            wins=(
                (k == "consistent")
                & (pl.col("winner") == pl.col("candidate")).fill_null(False)
            )
            .sum()
            .cast(pl.Int64),
            ties=((k == "consistent") & pl.col("all_tie")).sum().cast(pl.Int64),
            p=pl.col("p").max().cast(pl.Int64),
        )
    )


def listwise_cell_metrics(rows: pl.DataFrame) -> pl.DataFrame:
    """Per-cell list-wise metrics of ``rows`` (:data:`voirdire.analysis.position.formulas.CELL_COLUMNS`,
    sorted by cell): :func:`listwise_cell_counts` through the shared formulas. Source:
    ``docs/metrics.md``, *List-wise*."""
    return (
        with_cell_figures(listwise_cell_counts(rows))
        .select(CELL_COLUMNS)
        .sort(CELL_KEYS)
        .collect()
    )


def _slot_counts(rows: pl.LazyFrame, keys: list[str]) -> pl.DataFrame:
    """Per group ``keys`` and slot of annotated list-wise ``rows`` (column ``list_size``):
    the slot counts, shares and Pearson's chi-square (column ``chi2``, null for a group
    with no slot choice), every slot a row, sorted by ``keys`` and position; the columns of
    :func:`slot_shares` but ``chi2_p`` and ``clusters``, plus the helper columns
    ``_ties``, ``_verdicts`` and ``_term``."""
    totals = rows.group_by(keys).agg(
        n_choices=pl.col("_slot").sum().cast(pl.Int64),
        _ties=pl.col("_tie").sum(),
        _verdicts=(~pl.col("_fail")).sum(),
    )
    slots = (
        totals.select(keys)
        .with_columns(position=pl.int_ranges(1, pl.col("list_size") + 1))
        .explode("position")
        .with_columns(pl.col("position").cast(pl.Int32))
    )
    picks = (
        rows.filter(pl.col("_slot"))
        .group_by([*keys, (pl.col("_code") + 1).cast(pl.Int32).alias("position")])
        .agg(choices=pl.len().cast(pl.Int64))
    )
    expected_n = pl.col("n_choices").cast(pl.Float64) / pl.col("list_size")
    return (
        slots.join(picks, on=[*keys, "position"], how="left")
        .join(totals, on=keys, how="left")
        .with_columns(
            pl.col("choices").fill_null(0),
            slot=pl.lit(LETTERS).str.slice(pl.col("position") - 1, 1),
        )
        .with_columns(
            share=safe_div(pl.col("choices"), pl.col("n_choices")),
            expected=1.0 / pl.col("list_size").cast(pl.Float64),
            tie_share=safe_div(pl.col("_ties"), pl.col("_verdicts")),
            _term=(pl.col("choices") - expected_n) ** 2 / expected_n,
        )
        .with_columns(
            excess=pl.col("share") - pl.col("expected"),
            chi2=pl.when(pl.col("n_choices") > 0).then(
                pl.col("_term").sum().over(keys)
            ),
            chi2_dof=(pl.col("list_size") - 1).cast(pl.Int64),
        )
        .with_columns(
            pl.col("list_size").cast(pl.Int64),
            pl.col("option_mode").cast(pl.Int64),
            pl.col("position").cast(pl.Int64),
        )
        .sort(keys + ["position"])
        .collect()
    )


def slot_shares(judgments: pl.DataFrame) -> pl.DataFrame:
    """How often each slot is chosen, against the 1/p of a judge without position bias,
    with a chi-square goodness-of-fit test of the slot counts against uniform.

    Source: ``docs/metrics.md``, *List-wise* (PF reads a first-versus-last preference only;
    a preference for middle slots shows here). Over the list-wise judgments whose verdict
    picks a slot (ties, failures and other letters excluded), per (benchmark, judge, list
    size p, option mode) and slot. The uniform expectation holds for a judge without
    position bias under a design balanced over slots (cyclic, all orders, Latin squares;
    approximately for ``sample:k``).

    Output columns (:data:`SLOT_COLUMNS`): benchmark, judge, ``list_size`` (int),
    ``option_mode`` (int), ``slot`` (str, ``A``..), ``position`` (int, 1-based),
    ``choices`` (int: judgments picking the slot), ``n_choices`` (int: judgments picking
    any slot), ``share`` (float: choices / n_choices, 0 when none), ``expected`` (float:
    1/p), ``excess`` (float: share − 1/p; > 0 at slot A is a primacy preference, at the
    last slot a recency preference), ``tie_share`` (float: ties / judgments with a
    verdict), ``chi2`` (float: the cluster-robust Wald statistic of :func:`cluster_wald`,
    questions as clusters), ``chi2_dof`` (int: p − 1), ``chi2_p`` (float: its upper-tail
    p-value, ``scipy.stats.chi2.sf``), ``clusters`` (int: questions with a slot choice),
    ``pearson_chi2`` (float: Pearson's ``Σ (choices − n_choices/p)² / (n_choices/p)``,
    which treats every judgment as independent: descriptive only, since the orders and
    repetitions of one question are not independent, and three identical repetitions
    triple it); the last six are the same on every slot row of a group, and the
    chi-square columns are null for a group with no slot choice. Every slot has a row,
    chosen or not.
    """
    rows = _annotated(judgments.lazy().filter(pl.col("mode") == "listwise"))
    keys = ["benchmark", "judge", "list_size", "option_mode"]
    rows = rows.with_columns(list_size=pl.col("_p"))
    out = _slot_counts(rows, keys)
    out = out.rename({"chi2": "pearson_chi2"}).join(
        question_wald(rows, keys), on=keys, how="left"
    )
    from scipy.stats import chi2  # lazily: scipy.stats is ~0.5 s of imports

    stat = out.get_column("chi2").fill_null(np.nan).to_numpy().astype(float)
    dof = out.get_column("chi2_dof").to_numpy()
    pval = np.where(
        np.isnan(stat), np.nan, chi2.sf(np.nan_to_num(stat), np.maximum(dof, 1))
    )
    return out.with_columns(
        chi2_p=pl.Series(pval, dtype=pl.Float64).fill_nan(None)
    ).select(SLOT_COLUMNS)
