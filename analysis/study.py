"""The whole analysis of one or more finished output directories, as tables and figures.

:func:`analyze_study` reads each directory's judgments, computes every table of the deep
analysis (per-judge figures with bootstrap intervals and sign tests, factor regressions,
agreement, disagreement, a power table);
:func:`voirdire.analysis.report.files.write_study` writes them as CSV and PNG next to the HTML
report (:mod:`voirdire.analysis.report.html`).

Several directories (e.g. a position-bias job and a repetition job per benchmark, as in
Shi et al.) are combined per (benchmark, judge) **(ours)**: PC, PF and the error rate come
from the directory with the most judgments of that judge (the position-bias study), RS
from the directory with the most repeated queries; each figure names its source. The
factor regression uses, per (benchmark, judge), the cells of that PC/PF source, per
benchmark and combined. Agreement is computed within a directory (its judges answered the
same queries).

The input directories are read only: :func:`analyze_study` computes in memory
(:func:`voirdire.analysis.outputs.compute_dir`); :mod:`voirdire.analysis.report.files` writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from voirdire.analysis.biases.perturbed import control_rows
from voirdire.analysis.outputs import Results, compute_dir
from voirdire.analysis.position.formulas import CELL_KEYS
from voirdire.analysis.position.lengths import (
    cell_token_lengths,
    load_tokenizer,
    query_token_lengths,
)
from voirdire.analysis.position.metrics import judge_from_cells
from voirdire.analysis.position.pair_model import settings_for
from voirdire.analysis.position.pairing import judgment_pairs
from voirdire.analysis.position.registry import added_metrics
from voirdire.analysis.position.regression import StepResult, factor_regressions
from voirdire.analysis.position.simulate import power_table
from voirdire.analysis.position.uncertainty import bootstrap_ci, sign_test
from voirdire.analysis.results_dir import dir_benchmark
from voirdire.analysis.settings import DEFAULTS
from voirdire.analysis.stats import agreement as agr

__all__ = ["Study", "analyze_study", "RS_MIN", "MAX_ERROR"]

#: Default reading thresholds (ours): below this RS, or above this error rate, a judge's
#: PC and PF are flagged as not readable (its verdicts change from one asking to the next,
#: or too many are missing), as Shi et al. caution for unstable judges.
RS_MIN, MAX_ERROR = DEFAULTS.rs_min, DEFAULTS.max_error


@dataclass
class Study:
    """Everything the report shows; see :func:`analyze_study` for the tables' columns."""

    dirs: list[Results]
    panel: pl.DataFrame
    cells: pl.DataFrame
    judge_task: pl.DataFrame
    regressions: list[StepResult]
    power: pl.DataFrame
    rs_min: float
    max_error: float
    tokenizer: str | None = None
    reg_cells: pl.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    #: the by-task figures' PC/PF per (benchmark, judge, task), from the regression's
    #: cells (see :func:`figure_judge_task`); None: ``judge_task``
    figure_judge_task: pl.DataFrame | None = None

    @property
    def benchmarks(self) -> list[str]:
        return sorted(self.panel.get_column("benchmark").unique().to_list())


def _load_dir(path: Path, replicates: int, tokenizer: str | None) -> Results:
    """The directory's tables (:func:`compute_dir`) with the study's: token lengths per cell
    (with a tokenizer), bootstrap intervals, sign test and, with two judges or more, agreement."""
    d = compute_dir(path)
    position = control_rows(
        d.judgments
    )  # position-bias figures: the unperturbed queries
    tok = tokenizer or (d.job.get("job", {}).get("analysis") or {}).get("tokenizer")
    if tok:
        d.cell_tokens = _cell_tokens(d.judgments, d.job, tok)
    pairs = judgment_pairs(position)  # once: both intervals and the sign test read it
    d.ci = bootstrap_ci(
        position, replicates=replicates, clusters=d.clusters, pairs=pairs
    )
    d.ci_task = bootstrap_ci(
        position, replicates=replicates, by_task=True, clusters=d.clusters, pairs=pairs
    )
    d.sign = sign_test(position, pairs=pairs)
    if position.get_column("judge").n_unique() >= 2:
        ch = agr.choices(position)
        per_query = agr.query_disagreement(position, ch=ch)
        d.agreement = agr.agreement_matrix(position, ch=ch)
        d.fleiss = agr.fleiss_panel(position, ch=ch)
        d.disagreement = agr.disagreement_histogram(per_query)
        d.majority = agr.majority_share(per_query)
    return d


def _study_cells(d: Results) -> pl.DataFrame:
    """The directory's cell metrics, with its token lengths per cell where counted."""
    return (
        d.cell_metrics
        if d.cell_tokens is None
        else d.cell_metrics.join(d.cell_tokens, on=CELL_KEYS, how="left")
    )


def _cell_tokens(judgments: pl.DataFrame, meta: dict, tokenizer: str) -> pl.DataFrame:
    bench = dir_benchmark(meta)  # registered benchmarks only: job.json is data
    per_query = query_token_lengths(judgments, bench, load_tokenizer(tokenizer))
    return cell_token_lengths(judgments, per_query)


def _pick(frames: list[pl.DataFrame], score: str) -> pl.DataFrame:
    """Per (benchmark, judge) the row with the highest ``score`` over the directories."""
    df = pl.concat(frames, how="diagonal_relaxed")
    return df.sort(score, descending=True, nulls_last=True).unique(
        ["benchmark", "judge"], keep="first"
    )


def _wide_ci(
    ci: pl.DataFrame, metric: str, keys: tuple[str, ...] = ("benchmark", "judge")
) -> pl.DataFrame:
    """The ``lo``/``hi`` of one metric of a :func:`bootstrap_ci` table as ``<metric>_lo``/``_hi``."""
    return ci.filter(pl.col("metric") == metric).select(
        *keys, pl.col("lo").alias(f"{metric}_lo"), pl.col("hi").alias(f"{metric}_hi")
    )


def _panel(
    ds: list[Results], rs_min: float, max_error: float
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(panel, main)``: one row per (benchmark, judge), PC/PF (with intervals and sign
    test) from the directory with most judgments, RS from the one with most repeated
    queries, flagged when unreadable; ``main`` the PC/PF rows with their ``source``."""
    pcpf, rsf = [], []
    for d in ds:
        jm = d.judge_metrics.filter(pl.col("n_cells") > 0).with_columns(
            source=pl.lit(d.name)
        )
        for m in ("pc", "pf", *[n for n in added_metrics() if n in jm.columns]):
            jm = jm.join(_wide_ci(d.ci, m), on=["benchmark", "judge"], how="left")
        jm = jm.join(
            d.sign.select(
                "benchmark", "judge", "primacy", "recency", "p_value", "direction"
            ),
            on=["benchmark", "judge"],
            how="left",
        )
        pcpf.append(jm.drop("rs", "rs_spread"))
        rs = d.judge_metrics.filter(pl.col("rs").is_not_null()).select(
            "benchmark", "judge", "rs", "rs_spread"
        )
        rs = rs.join(_wide_ci(d.ci, "rs"), on=["benchmark", "judge"], how="left")
        nq = d.judgments.group_by("benchmark", "judge").agg(
            _nq=pl.col("query_id").n_unique()
        )
        rsf.append(
            rs.join(nq, on=["benchmark", "judge"], how="left").with_columns(
                rs_source=pl.lit(d.name)
            )
        )
    main = _pick(pcpf, "n_judgments")
    rs_tab = _pick(rsf, "_nq").drop("_nq") if any(f.height for f in rsf) else None
    panel = (
        main
        if rs_tab is None
        else main.join(rs_tab, on=["benchmark", "judge"], how="full", coalesce=True)
    )
    for c in ("rs", "rs_spread", "rs_lo", "rs_hi", "rs_source"):
        if c not in panel.columns:
            panel = panel.with_columns(
                pl.lit(None, dtype=pl.String if c == "rs_source" else pl.Float64).alias(
                    c
                )
            )
    low_rs = pl.col("rs").is_not_null() & (pl.col("rs") < rs_min)
    high_err = pl.col("error_rate").is_not_null() & (pl.col("error_rate") > max_error)
    panel = (
        panel.with_columns(
            flag=pl.concat_str(
                pl.when(low_rs).then(
                    pl.format("RS {} < {}", pl.col("rs").round(3), pl.lit(rs_min))
                ),
                pl.when(high_err).then(
                    pl.format(
                        "error rate {} > {}",
                        pl.col("error_rate").round(3),
                        pl.lit(max_error),
                    )
                ),
                separator="; ",
                ignore_nulls=True,
            ),
        )
        .with_columns(
            flag=pl.when(pl.col("flag") == "").then(None).otherwise(pl.col("flag")),
            readable=~(low_rs | high_err),
        )
        .sort("benchmark", "judge")
    )
    return panel, main


def _sourced_cells(
    ds: list[Results], main: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(cells, judge_task)``: the cells and per-task figures (with bootstrap intervals)
    of each (benchmark, judge)'s PC/PF source directory."""
    src = main.select("benchmark", "judge", "source")
    cells = pl.concat(
        [_study_cells(d).with_columns(source=pl.lit(d.name)) for d in ds],
        how="diagonal_relaxed",
    ).join(src, on=["benchmark", "judge", "source"], how="semi")
    ci_task = pl.concat(
        [d.ci_task.with_columns(source=pl.lit(d.name)) for d in ds],
        how="diagonal_relaxed",
    ).join(src, on=["benchmark", "judge", "source"], how="semi")
    jt = judge_from_cells(cells, keys=["benchmark", "judge", "task"])
    for m in ("pc", "pf"):
        jt = jt.join(
            _wide_ci(ci_task, m, ("benchmark", "judge", "task")),
            on=["benchmark", "judge", "task"],
            how="left",
        )
    return cells, jt


def _regression_cells(ds: list[Results], cells: pl.DataFrame) -> pl.DataFrame:
    """Per benchmark, the cells of single-repetition (position-bias) directories when the
    benchmark has any, else all (repetition studies re-ask a sample)."""
    reps = pl.DataFrame(
        {
            "source": [d.name for d in ds],
            "_reps": [int(d.settings["repetitions"] or 1) for d in ds],
        }
    )
    reg = cells.join(reps, on="source", how="left").with_columns(
        _has1=(pl.col("_reps") == 1).any().over("benchmark")
    )
    return reg.filter(~pl.col("_has1") | (pl.col("_reps") == 1)).drop("_reps", "_has1")


def _power(panel: pl.DataFrame, replicates: int) -> pl.DataFrame:
    """The sign test's power table at the median PC of the readable judges (0.7 if none)."""
    # a judge with nothing measured (one order per pair) has a null PC: it sets no level
    pcs = panel.filter(pl.col("readable")).get_column("pc").drop_nulls().drop_nans()
    med_pc = float(pcs.median()) if pcs.len() else 0.7
    pc_level = round(min(0.95, max(0.3, med_pc)) * 20) / 20
    pfs = [
        p
        for p in (0.05, 0.1, 0.2, 0.3)
        if p <= 1 - pc_level and _simulable(pc_level, p)
    ]
    return (
        power_table(pfs, pc=pc_level, replicates=replicates) if pfs else pl.DataFrame()
    )


def _simulable(pc: float, pf: float) -> bool:
    """Whether the simulated judge can have this PC and PF (a list-wise study's median PC
    may be one no pairwise judge of the simulator reaches; its power row is left out)."""
    try:
        settings_for(pc, pf)
    except ValueError:
        return False
    return True


def analyze_study(
    dirs: list[str | Path],
    *,
    judge_attributes: pl.DataFrame | None = None,
    replicates: int = 1000,
    rs_min: float = RS_MIN,
    max_error: float = MAX_ERROR,
    tokenizer: str | None = None,
    power_replicates: int = DEFAULTS.power_replicates,
) -> Study:
    """Analyse finished output directories together; reads them only (writing is
    :mod:`voirdire.analysis.report.files`').

    Args:
        dirs: output directories (each with ``job.json`` and ``raw/``).
        judge_attributes: optional per-judge attributes for the regression (column
            ``judge`` plus attribute columns).
        replicates: bootstrap replicates.
        rs_min, max_error: reading thresholds (see :data:`RS_MIN`, :data:`MAX_ERROR`).
        tokenizer: overrides the jobs' ``[analysis] tokenizer``.
        power_replicates: simulated tables per cell of the power table.

    Returns:
        :class:`Study` with ``panel`` (one row per (benchmark, judge): ``pc``, ``pc_std``,
        ``pf``, ``pf_std``, ``error_rate``, ``n_judgments``, ``source`` (directory of
        PC/PF), ``pc_lo``/``pc_hi``/``pf_lo``/``pf_hi`` (bootstrap), ``primacy``,
        ``recency``, ``p_value``, ``direction`` (sign test), ``rs``, ``rs_spread``,
        ``rs_lo``/``rs_hi``, ``rs_source``, ``readable`` (bool) and ``flag`` (str reason), and
        per registered metric other than pc, pf and rs its column with ``<name>_lo``/``_hi``);
        ``cells`` (cell metrics of each judge's PC/PF source, with ``source``);
        ``reg_cells`` (the regression's cells: per benchmark those of single-repetition
        directories when it has any); ``judge_task`` (PC/PF per (benchmark, judge, task)
        with bootstrap intervals); ``regressions``; ``power`` (sign-test power table at the
        median PC of the readable judges).

    Raises:
        FileNotFoundError: a directory is not a voirdire output directory.
        ValueError: no directory given.
    """
    if not dirs:
        raise ValueError("no output directory given")
    ds = [_load_dir(Path(p), replicates, tokenizer) for p in dirs]
    panel, main = _panel(ds, rs_min, max_error)
    cells, jt = _sourced_cells(ds, main)
    reg_cells = _regression_cells(ds, cells)
    regs = factor_regressions(reg_cells, judge_attributes) if reg_cells.height else []
    power = _power(panel, power_replicates)
    return Study(
        ds,
        panel,
        cells,
        jt,
        regs,
        power,
        rs_min,
        max_error,
        tokenizer,
        reg_cells=reg_cells,
        figure_judge_task=figure_judge_task(reg_cells, jt),
    )


def figure_judge_task(
    reg_cells: pl.DataFrame, judge_task: pl.DataFrame
) -> pl.DataFrame:
    """PC/PF per (benchmark, judge, task) for the by-task figures and the win-rate fits:
    from the regression's cells (per benchmark the position-bias directories when there
    are any: a repetition study's sample has other tasks and few cells, and would leave
    broken lines on the radar), else ``judge_task``."""
    if not reg_cells.height:
        return judge_task
    return judge_from_cells(reg_cells, keys=["benchmark", "judge", "task"])
