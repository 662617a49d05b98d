"""Per-cell position-bias counts and figures: judgments in, one row per (benchmark, judge,
candidate, task) cell out.

Each mode has a *cell builder* (:data:`CELL_BUILDERS`: the rows of one mode in, per-cell
counts of :data:`~voirdire.analysis.position.formulas.COUNT_COLUMNS` out); the figures
(PC, PF, owr) come from the one set of formulas in
:mod:`voirdire.analysis.position.formulas`. The pairwise builder classifies the judgment
pairs of :func:`~voirdire.analysis.position.pairing.judgment_pairs`; the list-wise one is
:mod:`voirdire.analysis.position.listwise`'s. The per-judge pooling is
:mod:`voirdire.analysis.position.metrics`'. Definitions: ``docs/metrics.md``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import polars as pl

from voirdire.analysis.position.formulas import (
    CELL_COLUMNS,
    CELL_KEYS,
    CELL_SCHEMA,
    LENGTHS,
    with_cell_figures,
)
from voirdire.analysis.position.listwise import listwise_cell_counts
from voirdire.analysis.position.pairing import PAIR_KEYS, PAIRWISE_MODES, judgment_pairs

__all__ = [
    "PAIR_COLUMNS", "CELL_BUILDERS", "pairwise_pairs", "pairwise_cell_counts", "cell_metrics",
    "shared_pairs", "cells_of",
]  # fmt: skip

PAIR_COLUMNS = [
    *PAIR_KEYS,
    "c1",
    "c2",
    "klass",
    "candidate_wins",
    "consistent_tie",
    *LENGTHS,
]


def pairwise_pairs(judgments: pl.DataFrame) -> pl.DataFrame:
    """Form the judgment pairs of the pairwise rows and classify them.

    Source: Shi et al., "Judging the Judges"; ``docs/metrics.md``, *Pairwise classification
    of a judgment pair*. Rows of other modes than :data:`PAIRWISE_MODES` are ignored.

    One row per pair key (:data:`PAIR_KEYS`: benchmark, judge, candidate, task, question_id,
    repetition, and reference / option_mode, which are constant in ordinary tables). Pairs
    are formed per repetition: repetition ``k`` of the candidate-first order pairs with
    repetition ``k`` of the candidate-second order.

    Output columns (:data:`PAIR_COLUMNS`):

    - the keys;
    - ``c1`` (str | null): the letter extracted with the candidate shown first
      (``shown[0] == candidate``); ``c2``: with the candidate shown second. Null when that
      judgment failed or its row is absent. If an order has several rows (duplicates), the
      first is taken.
    - ``klass`` (str): ``"error"`` if either side is null (failed or missing: a pair with
      only one of its two orders present is an error pair); else ``"consistent"`` for
      (A,B), (B,A), (C,C); ``"primacy"`` for (A,A), (A,C), (C,A); ``"recency"`` for (B,B),
      (B,C), (C,B); ``"other"`` for extracted letters in no class (``D``; ``C`` in two-option
      mode, where ``C`` is not an option). ``C`` is the tie letter only when
      ``option_mode == 3``; ties are read from the letters, not the ``tie`` column.
    - ``candidate_wins`` (bool): consistent and the candidate chosen in both orders, i.e.
      ``(c1, c2) == ("A", "B")``.
    - ``consistent_tie`` (bool): (C,C) in three-option mode.
    - ``input_chars``, ``output_chars``, ``prompt_chars`` (float): means over the pair's rows.

    The pairing table of :func:`voirdire.analysis.position.pairing.judgment_pairs` (the one
    place the two orders meet), without its verdict columns ``v1``/``v2``.
    """
    return judgment_pairs(judgments).select(PAIR_COLUMNS)


def _cell_counts_from_pairs(pairs: pl.DataFrame) -> pl.LazyFrame:
    """Per-cell counts (:data:`~voirdire.analysis.position.formulas.COUNT_COLUMNS`) from classified
    pairs: a primacy pair has ``s = −1``, a recency pair ``s = +1``."""
    k = pl.col("klass")
    return (
        pairs.lazy()
        .group_by(CELL_KEYS)
        .agg(
            *[pl.col(c).mean().cast(pl.Float64) for c in LENGTHS],
            n=pl.len().cast(pl.Int64),
            both_orders=pl.col("both_orders").sum().cast(pl.Int64),
            consistent=(k == "consistent").sum().cast(pl.Int64),
            primacy=(k == "primacy").sum().cast(pl.Int64),
            recency=(k == "recency").sum().cast(pl.Int64),
            balanced=pl.lit(0, dtype=pl.Int64),
            pcn=(k == "primacy").sum().cast(pl.Float64),
            rcn=(k == "recency").sum().cast(pl.Float64),
            wins=pl.col("candidate_wins").sum().cast(pl.Int64),
            ties=pl.col("consistent_tie").sum().cast(pl.Int64),
            p=pl.lit(2, dtype=pl.Int64),
        )
    )


def pairwise_cell_counts(rows: pl.DataFrame) -> pl.LazyFrame:
    """The pairwise cell builder: per-cell counts of the judgment pairs of ``rows``
    (:func:`~voirdire.analysis.position.pairing.judgment_pairs`), with the columns of
    :data:`~voirdire.analysis.position.formulas.COUNT_COLUMNS` and the mean lengths."""
    return _cell_counts_from_pairs(judgment_pairs(rows))


def _pairwise_cell_metrics(rows: pl.DataFrame) -> pl.DataFrame:
    """Per-cell pairwise metrics of ``rows`` (CELL_COLUMNS, sorted by cell)."""
    return (
        with_cell_figures(pairwise_cell_counts(rows))
        .select(CELL_COLUMNS)
        .sort(CELL_KEYS)
        .collect()
    )


#: mode -> builder of per-cell counts (COUNT_COLUMNS, CELL_KEYS, LENGTHS) from that mode's
#: judgments; the figures are added by :func:`voirdire.analysis.position.formulas.with_cell_figures`.
CELL_BUILDERS: dict[str, Callable[[pl.DataFrame], pl.LazyFrame]] = {
    "pairwise": pairwise_cell_counts,
    "listwise": listwise_cell_counts,
    "score": pairwise_cell_counts,  # verdict letters derived from the two scores
}


def cell_metrics(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per-cell (benchmark, judge, candidate, task) position-bias metrics.

    Source: Shi et al., "Judging the Judges"; ``docs/metrics.md``, *Per cell* and
    *List-wise*. Formulas: :func:`voirdire.analysis.position.formulas.with_cell_figures`, the same
    for both modes.

    Output columns (:data:`~voirdire.analysis.position.formulas.CELL_COLUMNS`), one row per cell:

    - ``n`` (int): all judgment pairs (list-wise: series), error and "other" ones included;
      with repetitions, one pair per repetition, all counted. A pair with only one of its
      orders asked counts (as an error pair).
    - ``both_orders`` (int): the pairs of ``n`` with both orders asked (list-wise: ``n``).
      Where it is 0 (a one-order log's cell) ``pc``, ``pf``, ``owr`` and ``quality_gap``
      are null: nothing about position was measured.
    - ``consistent``, ``primacy``, ``recency`` (int): ``ccn`` and the inconsistent pairs /
      series leaning to the first / last slot; ``balanced`` (int): inconsistent series with
      position score ``s = 0`` (list-wise; 0 for pairs).
    - ``pcn``, ``rcn`` (float): ``Σ max(−s, 0)``, ``Σ max(s, 0)`` (pairwise: the integer
      ``primacy``, ``recency``).
    - ``pc`` (float): ``ccn / v``, ``v = consistent + primacy + recency + balanced``.
    - ``pf`` (float): ``(rcn·irr − pcn·ipr) / n`` (= ``(rcn − pcn)/n``); −1 all primacy,
      +1 all recency.
    - ``owr`` (float): ``(C_w + (C_t + C_I)/p) / v``; ``quality_gap``: ``|owr − 1/p|``.
    - ``input_chars``, ``output_chars``, ``prompt_chars`` (float): the mean over the cell's
      pairs (series) of their mean length.

    Rows of modes with no builder in :data:`CELL_BUILDERS` are skipped with a
    ``UserWarning``.
    """
    return cells_of(judgments)


def shared_pairs(judgments: pl.DataFrame) -> pl.DataFrame | None:
    """:func:`judgment_pairs` of ``judgments`` when its rows of :data:`PAIRWISE_MODES`
    are all of one mode (they are then the pairs :func:`cell_metrics` makes of that mode's
    rows, and those :func:`~voirdire.analysis.position.metrics.metric_estimates` sums), else None: made once, read twice."""
    modes = set(judgments.get_column("mode").unique().to_list()) & set(PAIRWISE_MODES)
    return judgment_pairs(judgments) if len(modes) == 1 else None


def cells_of(
    judgments: pl.DataFrame, pairs: pl.DataFrame | None = None
) -> pl.DataFrame:
    """:func:`cell_metrics`; the pairwise cells counted from ``pairs`` where given
    (:func:`shared_pairs`)."""
    frames = []
    for mode in judgments.get_column("mode").unique().sort().to_list():
        builder = CELL_BUILDERS.get(mode)
        if builder is None:
            warnings.warn(
                f"cell_metrics: no cell builder for mode {mode!r}; its rows are skipped",
                stacklevel=2,
            )
            continue
        if pairs is not None and builder is pairwise_cell_counts:
            counts = _cell_counts_from_pairs(pairs)
        else:
            counts = builder(judgments.filter(pl.col("mode") == mode))
        frames.append(with_cell_figures(counts).select(CELL_COLUMNS).collect())
    empty = pl.DataFrame(schema=CELL_SCHEMA)
    cells = pl.concat([empty, *[f.cast(CELL_SCHEMA) for f in frames]])
    return cells.sort(CELL_KEYS)
