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
The cells are :mod:`voirdire.analysis.position.cells`' (pairwise rows classified there,
list-wise rows (``mode == "listwise"``) by :mod:`voirdire.analysis.position.listwise`),
pooled per judge here and re-exported from here. Each mode has a *cell builder* (:data:`CELL_BUILDERS`:
the rows of one mode in, per-cell counts of :data:`voirdire.analysis.position.formulas.COUNT_COLUMNS`
out); the figures (PC, PF, owr) come from the one set of formulas in
:mod:`voirdire.analysis.position.formulas`; the per-judge pooling, error rate and repetition
stability are mode-agnostic. Rows of a mode with no builder are skipped with a warning.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from voirdire.analysis.position.cells import (
    cells_of,
    shared_pairs,
)
from voirdire.analysis.position.formulas import (
    CELL_KEYS,
    JUDGE_KEYS,
    no_verdict,
    safe_div,
    valid,
)
from voirdire.analysis.position.registry import BUILTIN_METRICS, Metric, metric, metrics
from voirdire.analysis.position.stability import repetition_stability
from voirdire.analysis.position.uncertainty import bootstrap_ci

__all__ = [ "JUDGE_COLUMNS", "judge_from_cells", "metric_estimates", "judge_metrics", "summarize",
]  # fmt: skip

JUDGE_COLUMNS = [
    *JUDGE_KEYS, "pc", "pc_std", "pf", "pf_std", "error_rate", "rs", "rs_spread", "n_cells", "n_judgments",
]  # fmt: skip

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
            _pcs=pl.col("pc"),
            _pfs=pl.col("pf"),
            n_cells=pl.len().cast(pl.Int64),
        )
        # each group's spread from its own list, in the cells' order: a grouped float
        # aggregate merges partial results in the threads' order (the last digit moved)
        .with_columns(
            _pc_std=pl.col("_pcs").list.std(ddof=0),
            _pf_std=pl.col("_pfs").list.std(ddof=0),
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
    pairs = shared_pairs(judgments)
    cells = cells_of(judgments, pairs)
    return _judge_metrics(judgments, cells, pairs), cells
