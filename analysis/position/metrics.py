"""Position-bias metrics: judgments table in, metric tables out.

Pure functions over polars DataFrames (no I/O, no Python row loops). The definitions are
those of ``docs/metrics.md`` (the contract), which follows Shi et al., "Judging the
Judges: A Systematic Study of Position Bias in LLM-as-a-Judge", and the conventions of its
public release, so that the release's raw judge outputs reproduce the paper's tables.

Input
-----
A judgments table (``voirdire.schema.JUDGMENT_SCHEMA``); the columns read are

==============  ===========  =====================================================
benchmark       str
judge           str
question_id     str
task            str
candidate       str          pairwise: the model compared with the reference
reference       str          pairwise: the reference model
shown           list[str]    the models in slot order (slot ``A`` first)
repetition      int          1-based
mode            str          ``"pairwise"`` | ``"listwise"``
option_mode     int          pairwise: 2 (A/B) or 3 (A/B/C = tie)
query_id        str          the same for all repetitions of one prompt
extracted       str | null   the extracted letter, null when failed
failed          bool         no verdict (the call failed or nothing was extracted)
input_chars     int          question(s), summed over turns
output_chars    int          the shown answers, summed over turns
prompt_chars    int          the full prompt sent to the judge
==============  ===========  =====================================================

A row counts as *failed* (no verdict) when ``failed`` is true **or** ``extracted`` is null;
the two agree in tables written by the engine.

Modes
-----
Pairwise rows are handled here; list-wise rows (``mode == "listwise"``) by
:mod:`voirdire.analysis.position.listwise`. Each mode has a *cell builder* (:data:`CELL_BUILDERS`:
the rows of one mode in, per-cell counts of :data:`voirdire.analysis.position.formulas.COUNT_COLUMNS`
out); the figures (PC, PF, owr) come from the one set of formulas in
:mod:`voirdire.analysis.position.formulas`; the per-judge pooling, error rate and repetition
stability are mode-agnostic. Rows of a mode with no builder are skipped with a warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from voirdire.analysis.position.formulas import (
    CELL_COLUMNS,
    CELL_KEYS,
    CELL_SCHEMA,
    JUDGE_KEYS,
    LENGTHS,
    no_verdict,
    safe_div,
    valid,
    with_cell_figures,
)
from voirdire.analysis.position.listwise import listwise_cell_counts
from voirdire.analysis.position.pairing import PAIR_KEYS, PAIRWISE_MODES, judgment_pairs
from voirdire.analysis.position.registry import BUILTIN_METRICS, Metric, metric, metrics
from voirdire.analysis.position.stability import repetition_stability
from voirdire.analysis.position.uncertainty import bootstrap_ci

__all__ = [
    "PAIR_KEYS", "PAIRWISE_MODES", "PAIR_COLUMNS", "CELL_KEYS", "CELL_COLUMNS", "JUDGE_COLUMNS",
    "CELL_BUILDERS", "pairwise_pairs", "pairwise_cell_counts", "cell_metrics",
    "judge_from_cells", "metric_estimates", "judge_metrics", "summarize",
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
JUDGE_COLUMNS = [
    *JUDGE_KEYS, "pc", "pc_std", "pf", "pf_std", "error_rate", "rs", "rs_spread", "n_cells", "n_judgments",
]  # fmt: skip

# --------------------------------------------------------------------------------------
# Pairwise
# --------------------------------------------------------------------------------------


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
    (:func:`pairwise_pairs`), with the columns of
    :data:`~voirdire.analysis.position.formulas.COUNT_COLUMNS` and the mean lengths."""
    return _cell_counts_from_pairs(pairwise_pairs(rows))


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
      with repetitions, one pair per repetition, all counted.
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
    return _cells(judgments)


def _shared_pairs(judgments: pl.DataFrame) -> pl.DataFrame | None:
    """:func:`judgment_pairs` of ``judgments`` when its rows of :data:`PAIRWISE_MODES`
    are all of one mode (they are then the pairs :func:`cell_metrics` makes of that mode's
    rows, and those :func:`metric_estimates` sums), else None: made once, read twice."""
    modes = set(judgments.get_column("mode").unique().to_list()) & set(PAIRWISE_MODES)
    return judgment_pairs(judgments) if len(modes) == 1 else None


def _cells(judgments: pl.DataFrame, pairs: pl.DataFrame | None = None) -> pl.DataFrame:
    """:func:`cell_metrics`; the pairwise cells counted from ``pairs`` where given
    (:func:`_shared_pairs`)."""
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


# --------------------------------------------------------------------------------------
# Per judge
# --------------------------------------------------------------------------------------


def judge_from_cells(
    cells: pl.DataFrame, keys: list[str] | None = None
) -> pl.DataFrame:
    """Pool cell metrics per (benchmark, judge) (or per ``keys``, e.g. adding ``task``).

    Source: ``docs/metrics.md``, *Per judge*. Cells with ``n = 0`` are left out of every
    figure **(ours)**. Output columns: benchmark, judge,

    - ``pc`` (float): pooled ``Σ ccn / Σ v`` over the cells (null when ``Σ v = 0``, the
      rule of :func:`metric_estimates`);
    - ``pc_std`` (float): population std (ddof 0) of the cells' ``pc``;
    - ``pf`` (float): the registered PF statistic (:func:`_pf_by`: the one definition,
      as :func:`metric_estimates`) of the cells' ``n``, ``d = rcn − pcn`` and ``v``, i.e.
      the unweighted mean over the cells of ``d / n``; ``pf_std``: population std of the
      cells' ``pf``;
    - ``n_cells`` (int): cells used (``n > 0``).

    ``pc``, ``pf`` and their std are null where ``Σ v = 0`` (every pair an error, as for a
    one-order judge: nothing measured). Judges whose cells all have ``n = 0`` have no row.
    """
    keys = keys or JUDGE_KEYS
    # sorted eagerly (a lazy sort before group_by is dropped): sums' last digits fixed
    used = cells.filter(pl.col("n") > 0).sort(list(dict.fromkeys([*keys, *CELL_KEYS])))
    pooled = (
        used.lazy()
        .group_by(keys)
        .agg(
            _ccn=pl.col("consistent").sum(),
            _v=valid().sum(),
            _pc_std=pl.col("pc").std(ddof=0),
            _pf_std=pl.col("pf").std(ddof=0),
            n_cells=pl.len().cast(pl.Int64),
        )
        .with_columns(
            pl.when(pl.col("_v") > 0).then(e).alias(c)
            for c, e in (
                ("pc", safe_div(pl.col("_ccn"), pl.col("_v"))),
                ("pc_std", pl.col("_pc_std")),
                ("pf_std", pl.col("_pf_std")),
            )
        )
        .sort(keys)
        .collect()
    )
    return pooled.join(
        _pf_by(cells, keys), on=keys, how="left", maintain_order="left"
    ).select(*keys, "pc", "pc_std", "pf", "pf_std", "n_cells")


def _pf_by(cells: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """PF per ``keys`` group of ``cells`` (those with ``n > 0``): the registered ``pf``
    statistic of the cells' sums ``n``, ``d = rcn − pcn`` and ``v``, the cells in
    :data:`CELL_KEYS` order (the order :func:`metric_estimates` reads them in, so a judge
    with one task has the same PF per task as per judge). Columns: ``keys``, ``pf``
    (float)."""
    stat = metric("pf").statistic_fn
    order = list(dict.fromkeys([*keys, *CELL_KEYS]))
    used = cells.filter(pl.col("n") > 0).sort(order)
    out = []
    for key, g in used.group_by(keys, maintain_order=True):
        sums = {
            "n": g.get_column("n").cast(pl.Float64).to_numpy()[None, :],
            "d": (g.get_column("rcn") - g.get_column("pcn")).to_numpy()[None, :],
            "v": g.select(valid().cast(pl.Float64)).to_series().to_numpy()[None, :],
        }
        with np.errstate(invalid="ignore", divide="ignore"):
            value = float(np.asarray(stat(sums))[0])
        out.append((*key, None if np.isnan(value) else value))
    schema = {k: cells.schema[k] for k in keys} | {"pf": pl.Float64}
    return pl.DataFrame(out, schema=schema, orient="row")


def metric_estimates(
    judgments: pl.DataFrame,
    names: Sequence[str] | None = None,
    pairs: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The point estimate of registered metrics per (benchmark, judge): the one definition
    of each figure (its :class:`~voirdire.analysis.position.registry.Metric` statistic on
    its sums, the one-replicate case of :func:`~voirdire.analysis.position.uncertainty.
    bootstrap_ci`, so the same number as the ``estimate`` of ``bootstrap_*.csv``).

    Edge-case rule, the same for every metric: a figure with nothing to measure (PC: no
    pair consistent or inconsistent, ``Σ v = 0``; PF: no cell with a pair, or ``Σ v = 0``
    as for PC; RS: no query asked twice with an extracted choice) is undefined: NaN from
    the statistic, null here (a one-order judge: every pair an error, no PC, no PF).

    Args:
        judgments: JUDGMENT_SCHEMA rows.
        names: the metrics (default: every registered one).
        pairs: :func:`~voirdire.analysis.position.pairing.judgment_pairs` of
            ``judgments`` where the caller has it (not made again).

    Returns:
        ``benchmark``, ``judge`` (str) and one float column per metric, named after it;
        one row per (benchmark, judge) of ``judgments``.

    Raises:
        ConfigError: an unknown metric name.
    """
    chosen: dict[str, Metric] = (
        metrics() if names is None else {n: metric(n) for n in names}
    )
    out = judgments.select(JUDGE_KEYS).unique().sort(JUDGE_KEYS)
    est = bootstrap_ci(judgments, replicates=1, metrics=chosen, pairs=pairs)
    for name in chosen:
        col = est.filter(pl.col("metric") == name).select(
            *JUDGE_KEYS, pl.col("estimate").fill_nan(None).alias(name)
        )
        out = out.join(col, on=JUDGE_KEYS, how="left", maintain_order="left")
    return out.with_columns(pl.col(n).cast(pl.Float64) for n in chosen)


def _judge_metrics(
    judgments: pl.DataFrame, cells: pl.DataFrame, pairs: pl.DataFrame | None = None
) -> pl.DataFrame:
    errors = (
        judgments.lazy()
        .group_by(JUDGE_KEYS)
        .agg(n_judgments=pl.len().cast(pl.Int64), _failed=no_verdict().sum())
        .with_columns(
            error_rate=pl.col("_failed").cast(pl.Float64) / pl.col("n_judgments")
        )
    )
    spread = repetition_stability(judgments).lazy().select(*JUDGE_KEYS, "rs_spread")
    pooled = judge_from_cells(cells).lazy().drop("pc", "pf")
    figures = metric_estimates(judgments, BUILTIN_METRICS, pairs).lazy()
    return (
        errors.join(pooled, on=JUDGE_KEYS, how="left")
        .join(spread, on=JUDGE_KEYS, how="left")
        .join(figures, on=JUDGE_KEYS, how="left")
        .with_columns(pl.col("n_cells").fill_null(0))
        .select(JUDGE_COLUMNS)
        .sort(JUDGE_KEYS)
        .collect()
    )


def judge_metrics(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per (benchmark, judge) position-bias figures.

    Source: Shi et al., "Judging the Judges"; ``docs/metrics.md``, *Per judge* and
    *Repetition stability*. One row per (benchmark, judge) present in ``judgments``.

    Output columns (:data:`JUDGE_COLUMNS`):

    - ``pc``, ``pf``, ``rs`` (float): the registered metrics' point estimates
      (:func:`metric_estimates`: the one definition of each, the same numbers as
      ``bootstrap_*.csv``); null where undefined (PC and PF: no pair consistent or
      inconsistent, as for a one-order judge; PF: no cell; RS: no query asked twice with
      an extracted choice).
    - ``pc_std``, ``pf_std`` (float), ``n_cells`` (int): see :func:`judge_from_cells` over
      :func:`cell_metrics` (cells with ``n = 0`` left out); null (``n_cells`` 0) for a
      judge with no cell (e.g. rows of a mode with no builder), and null where PC is.
    - ``error_rate`` (float): judgments without a verdict / all judgments, counted over the
      rows of ``judgments`` (every mode; an absent row is not a judgment).
    - ``rs_spread`` (float): from :func:`repetition_stability`; null when the judge
      has no query asked more than once with an extracted choice.
    - ``n_judgments`` (int): rows of ``judgments`` for the judge.
    """
    return summarize(judgments)[0]


def summarize(judgments: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(judge_metrics(judgments), cell_metrics(judgments))``, the cells computed once
    and the pairing table made once where the pairwise rows are of one mode."""
    pairs = _shared_pairs(judgments)
    cells = _cells(judgments, pairs)
    return _judge_metrics(judgments, cells, pairs), cells
