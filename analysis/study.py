"""The whole analysis of one or more finished output directories, as tables and figures.

:func:`analyze_study` reads each directory's judgments, computes every table of the deep
analysis (per-judge figures with bootstrap intervals and sign tests, factor regressions,
agreement, disagreement, a power table) and :func:`write_study` writes them as CSV and PNG
next to the HTML report (:mod:`voirdire.analysis.html_report`).

Several directories (e.g. a position-bias job and a repetition job per benchmark, as in
Shi et al.) are combined per (benchmark, judge) **(ours)**: PC, PF and the error rate come
from the directory with the most judgments of that judge (the position-bias study), RS
from the directory with the most repeated queries; each figure names its source. The
factor regression uses, per (benchmark, judge), the cells of that PC/PF source, per
benchmark and combined. Agreement is computed within a directory (its judges answered the
same queries).

The input directories are read only: :func:`analyze_study` computes in memory
(:func:`voirdire.analysis.outputs.compute_dir`) and, with ``refresh=True``, rewrites each
directory's own ``judgments.parquet``, ``metrics/*.csv`` and ``report.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from voirdire.analysis import agreement as agr
from voirdire.analysis import figures as fig
from voirdire.analysis.bias_report import write_bias
from voirdire.analysis.biases import control_rows
from voirdire.analysis.formulas import CELL_KEYS
from voirdire.analysis.lengths import (
    cell_token_lengths,
    load_tokenizer,
    query_token_lengths,
)
from voirdire.analysis.metrics import judge_from_cells
from voirdire.analysis.outputs import compute_dir, write_dir
from voirdire.analysis.regression import StepResult, drop1_tables, factor_regressions
from voirdire.analysis.simulate import power_table
from voirdire.analysis.uncertainty import bootstrap_ci, sign_test
from voirdire.benchmarks.pairs import PairsSpec
from voirdire.benchmarks.registry import load_benchmark

__all__ = ["DirAnalysis", "Study", "analyze_study", "write_study", "RS_MIN", "MAX_ERROR"]

#: Default reading thresholds (ours): below this RS, or above this error rate, a judge's
#: PC and PF are flagged as not readable (its verdicts change from one asking to the next,
#: or too many are missing), as Shi et al. caution for unstable judges.
RS_MIN = 0.90
MAX_ERROR = 0.05


@dataclass
class DirAnalysis:
    """One output directory: its job record, judgments and per-directory tables."""

    path: Path
    name: str
    meta: dict[str, Any]
    judgments: pl.DataFrame
    judge_metrics: pl.DataFrame
    cell_metrics: pl.DataFrame
    ci: pl.DataFrame
    ci_task: pl.DataFrame
    sign: pl.DataFrame
    agreement: pl.DataFrame | None = None
    fleiss: pl.DataFrame | None = None
    disagreement: pl.DataFrame | None = None
    majority: pl.DataFrame | None = None
    #: the bias suite's tables, as :func:`~voirdire.analysis.outputs.compute_dir` computed
    #: them (``None``: no perturbations / no judge's own model among the candidates)
    bias_effects: pl.DataFrame | None = None
    self_enhancement: pl.DataFrame | None = None

    @property
    def settings(self) -> dict[str, Any]:
        job = self.meta.get("job", {})
        comp, samp, bench = job.get("comparison", {}), job.get("sampling", {}), job.get("benchmark", {})
        failed = self.judgments.filter(pl.col("failed").fill_null(False) | pl.col("extracted").is_null()).height
        no_output = self.judgments.filter(pl.col("failure").is_not_null()).height
        return {
            "directory": self.name,
            "job": job.get("name", self.name),
            "benchmark": self.meta.get("benchmark", bench.get("name")),
            "sample": bench.get("sample", "full"),
            "instances": self.meta.get("instances"),
            "mode": comp.get("mode", "pairwise"),
            "option mode": self.meta.get("option_mode"),
            "permutations": comp.get("permutations"),
            "repetitions": comp.get("repetitions", 1),
            "temperature": samp.get("temperature"),
            "max tokens": samp.get("max_tokens"),
            "judges": self.judge_metrics.height,
            "judgments": self.judgments.height,
            "failed": failed,
            "no output": no_output,
            "no verdict extracted": failed - no_output,
        }


@dataclass
class Study:
    """Everything the report shows; see :func:`analyze_study` for the tables' columns."""

    dirs: list[DirAnalysis]
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

    @property
    def benchmarks(self) -> list[str]:
        return sorted(self.panel.get_column("benchmark").unique().to_list())


def _load_dir(path: Path, replicates: int, tokenizer: str | None, refresh: bool) -> DirAnalysis:
    tables = compute_dir(path)
    if refresh:
        write_dir(tables, path)
    meta, judgments, jm, cm = tables.meta, tables.judgments, tables.judge_metrics, tables.cell_metrics
    position = control_rows(judgments)  # position-bias figures: the unperturbed queries
    tok = tokenizer or (meta.get("job", {}).get("analysis") or {}).get("tokenizer")
    if tok:
        cm = _with_tokens(cm, judgments, meta, tok)
    d = DirAnalysis(
        path=path,
        name=path.name,
        meta=meta,
        judgments=judgments,
        judge_metrics=jm,
        cell_metrics=cm,
        ci=bootstrap_ci(position, replicates=replicates),
        ci_task=bootstrap_ci(position, replicates=replicates, by_task=True),
        sign=sign_test(position),
        bias_effects=tables.bias_effects,
        self_enhancement=tables.self_enhancement,
    )
    if position.get_column("judge").n_unique() >= 2:
        ch = agr.choices(position)
        per_query = agr.query_disagreement(position, ch=ch)
        d.agreement = agr.agreement_matrix(position, ch=ch)
        d.fleiss = agr.fleiss_panel(position, ch=ch)
        d.disagreement = agr.disagreement_histogram(per_query)
        d.majority = agr.majority_share(per_query)
    return d


def _with_tokens(cm: pl.DataFrame, judgments: pl.DataFrame, meta: dict, tokenizer: str) -> pl.DataFrame:
    job = meta.get("job", {})
    b = job["benchmark"]
    if b.get("pairs"):  # a user's own pairs: read again from where the job read them
        bench = load_benchmark(b["name"], pairs=PairsSpec(**b["pairs"]))
    else:
        bench = load_benchmark(b["name"], meta.get("data_dir"), sample=b.get("sample", "full"))
    per_query = query_token_lengths(judgments, bench, load_tokenizer(tokenizer))
    return cm.join(cell_token_lengths(judgments, per_query), on=CELL_KEYS, how="left")


def _pick(frames: list[pl.DataFrame], score: str) -> pl.DataFrame:
    """Per (benchmark, judge) the row with the highest ``score`` over the directories."""
    df = pl.concat(frames, how="diagonal_relaxed")
    return df.sort(score, descending=True, nulls_last=True).unique(["benchmark", "judge"], keep="first")


def analyze_study(
    dirs: list[str | Path],
    *,
    judge_attributes: pl.DataFrame | None = None,
    replicates: int = 1000,
    rs_min: float = RS_MIN,
    max_error: float = MAX_ERROR,
    tokenizer: str | None = None,
    power_replicates: int = 300,
    refresh: bool = False,
) -> Study:
    """Analyse finished output directories together.

    Args:
        dirs: output directories (each with ``job.json`` and ``raw/``).
        judge_attributes: optional per-judge attributes for the regression (column
            ``judge`` plus attribute columns).
        replicates: bootstrap replicates.
        rs_min, max_error: reading thresholds (see :data:`RS_MIN`, :data:`MAX_ERROR`).
        tokenizer: overrides the jobs' ``[analysis] tokenizer``.
        refresh: also rewrite each directory's own ``judgments.parquet``,
            ``metrics/*.csv`` and ``report.md``; when false (the default) the directories
            are only read.

    Returns:
        :class:`Study` with ``panel`` (one row per (benchmark, judge): ``pc``, ``pc_std``,
        ``pf``, ``pf_std``, ``error_rate``, ``n_judgments``, ``source`` (directory of
        PC/PF), ``pc_lo``/``pc_hi``/``pf_lo``/``pf_hi`` (bootstrap), ``primacy``,
        ``recency``, ``p_value``, ``direction`` (sign test), ``rs``, ``rs_spread``,
        ``rs_lo``/``rs_hi``, ``rs_source``, ``readable`` (bool) and ``flag`` (str reason));
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
    ds = [_load_dir(Path(p), replicates, tokenizer, refresh) for p in dirs]

    def wide_ci(ci: pl.DataFrame, metric: str) -> pl.DataFrame:
        return ci.filter(pl.col("metric") == metric).select(
            "benchmark", "judge", pl.col("lo").alias(f"{metric}_lo"), pl.col("hi").alias(f"{metric}_hi")
        )

    pcpf = []
    rsf = []
    for d in ds:
        jm = d.judge_metrics.filter(pl.col("n_cells") > 0).with_columns(source=pl.lit(d.name))
        for m in ("pc", "pf"):
            jm = jm.join(wide_ci(d.ci, m), on=["benchmark", "judge"], how="left")
        jm = jm.join(d.sign.select("benchmark", "judge", "primacy", "recency", "p_value", "direction"), on=["benchmark", "judge"], how="left")
        pcpf.append(jm.drop("rs", "rs_spread"))
        rs = d.judge_metrics.filter(pl.col("rs").is_not_null()).select("benchmark", "judge", "rs", "rs_spread")
        rs = rs.join(wide_ci(d.ci, "rs"), on=["benchmark", "judge"], how="left")
        nq = d.judgments.group_by("benchmark", "judge").agg(_nq=pl.col("query_id").n_unique())
        rsf.append(rs.join(nq, on=["benchmark", "judge"], how="left").with_columns(rs_source=pl.lit(d.name)))
    main = _pick(pcpf, "n_judgments")
    rs_tab = _pick(rsf, "_nq").drop("_nq") if any(f.height for f in rsf) else None
    panel = main if rs_tab is None else main.join(rs_tab, on=["benchmark", "judge"], how="full", coalesce=True)
    for c in ("rs", "rs_spread", "rs_lo", "rs_hi", "rs_source"):
        if c not in panel.columns:
            panel = panel.with_columns(pl.lit(None, dtype=pl.String if c == "rs_source" else pl.Float64).alias(c))
    low_rs = pl.col("rs").is_not_null() & (pl.col("rs") < rs_min)
    high_err = pl.col("error_rate").is_not_null() & (pl.col("error_rate") > max_error)
    panel = panel.with_columns(
        flag=pl.concat_str(
            pl.when(low_rs).then(pl.format("RS {} < {}", pl.col("rs").round(3), pl.lit(rs_min))),
            pl.when(high_err).then(pl.format("error rate {} > {}", pl.col("error_rate").round(3), pl.lit(max_error))),
            separator="; ",
            ignore_nulls=True,
        ),
    ).with_columns(
        flag=pl.when(pl.col("flag") == "").then(None).otherwise(pl.col("flag")),
        readable=~(low_rs | high_err),
    ).sort("benchmark", "judge")

    # cells and per-task figures from each (benchmark, judge)'s PC/PF source
    src = main.select("benchmark", "judge", "source")
    cells = pl.concat(
        [d.cell_metrics.with_columns(source=pl.lit(d.name)) for d in ds], how="diagonal_relaxed"
    ).join(src, on=["benchmark", "judge", "source"], how="semi")
    ci_task = pl.concat([d.ci_task.with_columns(source=pl.lit(d.name)) for d in ds], how="diagonal_relaxed").join(
        src, on=["benchmark", "judge", "source"], how="semi"
    )
    jt = judge_from_cells(cells, keys=["benchmark", "judge", "task"])
    for m in ("pc", "pf"):
        c = ci_task.filter(pl.col("metric") == m).select("benchmark", "judge", "task", pl.col("lo").alias(f"{m}_lo"), pl.col("hi").alias(f"{m}_hi"))
        jt = jt.join(c, on=["benchmark", "judge", "task"], how="left")

    # the regression: per benchmark, the cells of single-repetition (position-bias)
    # directories when the benchmark has any, else all (repetition studies re-ask a sample)
    reps = pl.DataFrame(
        {"source": [d.name for d in ds], "_reps": [int(d.settings["repetitions"] or 1) for d in ds]}
    )
    reg_cells = cells.join(reps, on="source", how="left").with_columns(
        _has1=(pl.col("_reps") == 1).any().over("benchmark")
    )
    reg_cells = reg_cells.filter(~pl.col("_has1") | (pl.col("_reps") == 1)).drop("_reps", "_has1")
    regs = factor_regressions(reg_cells, judge_attributes) if reg_cells.height else []
    readable = panel.filter(pl.col("readable"))
    med_pc = float(readable.get_column("pc").median()) if readable.height else 0.7
    pc_level = round(min(0.95, max(0.3, med_pc)) * 20) / 20
    pfs = [p for p in (0.05, 0.1, 0.2, 0.3) if p <= 1 - pc_level]
    power = power_table(pfs, pc=pc_level, replicates=power_replicates) if pfs else pl.DataFrame()
    return Study(ds, panel, cells, jt, regs, power, rs_min, max_error, tokenizer, reg_cells=reg_cells)


def write_study(study: Study, out: str | Path) -> dict[str, Any]:
    """Write the study's CSV tables under ``out/metrics/`` and PNG figures under
    ``out/figures/``. Returns ``{"tables": {name: path}, "figures": {key: path}}`` where
    figure keys are ``(kind, scope)`` tuples rendered as ``"kind:scope"`` strings."""
    out = Path(out)
    mdir, fdir = out / "metrics", out / "figures"
    mdir.mkdir(parents=True, exist_ok=True)
    fdir.mkdir(parents=True, exist_ok=True)
    tables: dict[str, Path] = {}

    def csv(name: str, df: pl.DataFrame) -> None:
        p = mdir / f"{name}.csv"
        df.write_csv(p)
        tables[name] = p

    csv("panel", study.panel)
    csv("judge_task", study.judge_task)
    csv("cells", study.cells)
    if study.reg_cells is not None:
        csv("regression_cells", study.reg_cells)
    if study.regressions:
        csv("regression_drop1", drop1_tables(study.regressions))
        for r in study.regressions:
            csv(f"regression_drop1_{_slug(r.scope)}_{r.response}", r.drop1)
            csv(f"regression_path_{_slug(r.scope)}_{r.response}", r.path)
            csv(f"regression_coefficients_{_slug(r.scope)}_{r.response}", r.coefficients)
    if study.power.height:
        csv("power", study.power)
    for d in study.dirs:
        s = _slug(d.name)
        csv(f"bootstrap_{s}", d.ci)
        csv(f"bootstrap_task_{s}", d.ci_task)
        csv(f"sign_test_{s}", d.sign)
        if d.agreement is not None:
            csv(f"agreement_{s}", d.agreement)
            csv(f"fleiss_{s}", d.fleiss)
            csv(f"disagreement_{s}", d.disagreement)
            csv(f"majority_{s}", d.majority)

    figs: dict[str, Path] = {}
    fig.set_judges(study.panel.get_column("judge").unique().to_list())
    # the by-task figures and the win-rate fits use the regression's cells (per benchmark,
    # the position-bias directories when there are any): a repetition study's sample has
    # other tasks and few cells, and would leave broken lines on the radar
    fig_cells = study.reg_cells if study.reg_cells is not None else study.cells
    fig_jt = judge_from_cells(fig_cells, keys=["benchmark", "judge", "task"]) if fig_cells.height else study.judge_task
    for b in study.benchmarks:
        jt = fig_jt.filter(pl.col("benchmark") == b)
        u = fig_cells.filter(pl.col("benchmark") == b)
        pb = study.panel.filter(pl.col("benchmark") == b)
        s = _slug(b)
        if jt.height:
            figs[f"radar:{b}"] = fig.pc_radar(jt, fdir / f"pc_radar_{s}.png", f"{b}: position consistency by task")
            figs[f"pf_bars:{b}"] = fig.pf_bars(jt, fdir / f"pf_bars_{s}.png", f"{b}: preference fairness by task")
        if u.height:
            ci = pb.select("judge", pl.lit(None, dtype=pl.String).alias("task"), *[pl.col(c) for c in ("pc_lo", "pc_hi", "pf_lo", "pf_hi")])
            ci_long = pl.concat(
                [ci.select("judge", "task", pl.lit(m).alias("metric"), pl.col(f"{m}_lo").alias("lo"), pl.col(f"{m}_hi").alias("hi")) for m in ("pc", "pf")]
            )
            figs[f"pc_pf:{b}"] = fig.pc_vs_pf(u, pb.select("judge", "pc", "pf"), fdir / f"pc_vs_pf_{s}.png", ci_long, f"{b}: PC against PF")
            figs[f"owr:{b}"] = fig.vs_win_rate(u, fdir / f"vs_win_rate_{s}.png", f"{b}: PC and PF against the overall win rate")
        if "accuracy" in pb.columns and pb.get_column("accuracy").is_not_null().any():  # gold labels (docs/gold-labels.md)
            figs[f"accuracy_pc:{b}"] = fig.accuracy_vs_pc(pb, fdir / f"accuracy_vs_pc_{s}.png", f"{b}: accuracy against PC")
        rs = pb.filter(pl.col("rs").is_not_null())
        if rs.height:
            ci_rs = rs.select("judge", pl.lit(None, dtype=pl.String).alias("task"), pl.lit("rs").alias("metric"), pl.col("rs_lo").alias("lo"), pl.col("rs_hi").alias("hi"))
            figs[f"rs:{b}"] = fig.rs_bars(rs, fdir / f"rs_{s}.png", ci_rs, f"{b}: repetition stability", rs_min=study.rs_min)
    for d in study.dirs:
        if d.agreement is None:
            continue
        for b in sorted(d.agreement.get_column("benchmark").unique().to_list()):
            s = _slug(d.name)
            figs[f"agreement:{d.name}"] = fig.agreement_heatmaps(d.agreement.filter(pl.col("benchmark") == b), fdir / f"agreement_{s}.png", f"{d.name}: agreement between judges")
            figs[f"disagreement:{d.name}"] = fig.disagreement_histogram(d.disagreement.filter(pl.col("benchmark") == b), fdir / f"disagreement_{s}.png", f"{d.name}: disagreement per query")
    bias = write_bias(study.dirs, mdir, fdir)  # CALM biases and self-enhancement (docs/bias-metrics.md)
    return {"tables": tables | bias["tables"], "figures": figs | bias["figures"]}


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in s)

