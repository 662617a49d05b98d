"""Analysing a finished output directory: judgments, metrics tables and ``report.md``.

Reads what the engine wrote (``job.json``, ``raw/``) through the one door
(:mod:`voirdire.analysis.results_dir`) and calls no judge; the tables are the stages of
:mod:`voirdire.analysis.stages`.
:func:`compute_dir` computes every table in memory and writes nothing (the input may sit
on a read-only filesystem); :func:`voirdire.analysis.report.files.write_dir` writes ``judgments.parquet``,
``metrics/judge_metrics.csv``, ``metrics/cell_metrics.csv`` (with accuracy against gold
labels where the benchmark has them: :mod:`voirdire.analysis.position.gold`), for list-wise jobs
``metrics/slot_shares.csv``, for jobs with perturbations ``metrics/bias_effects.csv``,
when a judge's own model is among the candidates ``metrics/self_enhancement.csv``
(``docs/bias-metrics.md``), and ``report.md`` (``voirdire.api.analyze`` does both, in place).
Position-bias figures are computed on the control (unperturbed) queries only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from voirdire.analysis.mitigation.pass_kappa import PASS_KAPPA_COLUMNS, pass_kappa
from voirdire.analysis.results_dir import read_dir
from voirdire.analysis.settings import DEFAULTS, AnalysisSettings
from voirdire.analysis.stages import DIR_OUTPUTS, analyse

if TYPE_CHECKING:
    from voirdire.engine.stats import RunStats

__all__ = [
    "JUDGE_METRIC_COLUMNS",
    "CELL_METRIC_COLUMNS",
    "Results",
    "compute_dir",
    "with_pass_kappa",
]

#: columns of metrics/judge_metrics.csv and metrics/cell_metrics.csv
JUDGE_METRIC_COLUMNS = [
    "benchmark", "judge", "pc", "pc_std", "pf", "pf_std", "error_rate", "rs", "rs_spread", *PASS_KAPPA_COLUMNS[2:],
]  # fmt: skip
CELL_METRIC_COLUMNS = [
    "benchmark", "judge", "candidate", "task", "n", "both_orders", "consistent", "primacy", "recency", "balanced",
    "pcn", "rcn", "pc", "pf", "owr", "quality_gap",
]  # fmt: skip


@dataclass
class Results:
    """One output directory as tables: the one result type of :func:`compute_dir`,
    ``voirdire.load``/``analyze``/``run`` (``voirdire.Results``) and the study's directories
    (:func:`voirdire.analysis.study.analyze_study`), which fill the study's fields.

    Attributes:
        output_dir: the directory (``Path``).
        job: the job record (``job.json``: dict; no secrets).
        judgments: one row per query with its extracted verdict
            (``voirdire.schema.JUDGMENT_SCHEMA``: ``unit_id``, ``judge``,
            ``benchmark``, ``question_id``, ``candidate``, ``shown``, ``repetition``,
            ``output``, ``failure``, ``extracted``, ``chosen``, ``tie``, ``failed``, ...).
        judge_metrics: one row per (benchmark, judge):
            :func:`voirdire.analysis.position.metrics.judge_metrics` columns (``pc``,
            ``pc_std``, ``pf``, ``pf_std``, ``error_rate``, ``rs``, ``rs_spread``: floats,
            shares in [0, 1], PF in [-1, 1]), the inter-pass kappa
            (:func:`voirdire.analysis.mitigation.pass_kappa.pass_kappa`: ``pass_kappa``,
            ``_lo``, ``_hi``, ``pass_kappa_pairs`` (int), ``pass_kappa_gate`` (``pass`` at
            κ ≥ 0.6, else ``fail``); null for list-wise judges), plus
            :data:`~voirdire.analysis.position.gold.GOLD_JUDGE_COLUMNS` where judgments carry
            gold labels, plus a column per registered metric other than pc, pf and rs
            (:func:`~voirdire.analysis.position.uncertainty.with_metric_columns`).
        cell_metrics: one row per (benchmark, judge, candidate, task) cell:
            :func:`voirdire.analysis.position.metrics.cell_metrics` columns (``n``,
            ``both_orders``, ``consistent``, ``primacy``, ``recency``, ``balanced`` counts;
            ``pcn``, ``rcn``; ``pc``, ``pf``, ``owr``, ``quality_gap``, null in a cell judged
            in one order only: ``docs/metrics.md``), plus
            :data:`~voirdire.analysis.position.gold.GOLD_CELL_COLUMNS` likewise.
        slot_shares: :func:`voirdire.analysis.position.listwise.slot_shares` for a job with
            list-wise rows, else ``None``.
        bias_effects: :func:`voirdire.analysis.biases.effects.bias_effects` (RR, CR, Δ with its
            interval and McNemar p per judge × variant × slot) for a job with
            ``[[perturbations]]``, else ``None``.
        self_enhancement: :func:`voirdire.analysis.biases.self_enhancement.self_enhancement`
            when a judge's own model is among the candidates, else ``None``.
        stats: the scheduler's counts (``voirdire.engine.scheduler.RunStats``) when the
            results come from ``voirdire.run``, else ``None``.
        clusters: what every bootstrap of the directory draws where its benchmark declares it
            (:func:`~voirdire.analysis.position.clusters.job_clusters`: ``benchmark``,
            ``question_id``, ``cluster``; PandaLM's questions), else ``None`` (questions).
        cell_tokens, ci, ci_task, sign, agreement, fleiss, disagreement, majority: the
            study's per-directory tables (``None`` until
            :func:`~voirdire.analysis.study.analyze_study` fills them; see there).

    ``judge_metrics``, ``cell_metrics`` and ``slot_shares`` are computed on the control
    (unperturbed) queries; ``judgments`` holds every row. :meth:`order_design`,
    :meth:`one_order`, :meth:`calibration` and :meth:`reliability` are computed when first
    asked (``docs/one-order-and-calibration.md``), then kept.
    """

    output_dir: Path
    job: dict[str, Any]
    judgments: pl.DataFrame
    judge_metrics: pl.DataFrame
    cell_metrics: pl.DataFrame
    slot_shares: pl.DataFrame | None = None
    bias_effects: pl.DataFrame | None = None
    self_enhancement: pl.DataFrame | None = None
    stats: RunStats | None = None
    clusters: pl.DataFrame | None = None
    cell_tokens: pl.DataFrame | None = None
    ci: pl.DataFrame | None = None
    ci_task: pl.DataFrame | None = None
    sign: pl.DataFrame | None = None
    agreement: pl.DataFrame | None = None
    fleiss: pl.DataFrame | None = None
    disagreement: pl.DataFrame | None = None
    majority: pl.DataFrame | None = None
    _lazy: dict[tuple, pl.DataFrame] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def _kept(self, key: tuple, make) -> pl.DataFrame:
        if key not in self._lazy:
            self._lazy[key] = make()
        return self._lazy[key]

    def order_design(self) -> pl.DataFrame:
        """Per (benchmark, judge) whether its pairs were judged in both orders, one
        randomised order or one fixed order:
        :func:`voirdire.analysis.position.one_order.order_design`."""
        from voirdire.analysis.position.one_order import order_design

        return self._kept(("design",), lambda: order_design(self.judgments))

    def one_order(
        self, *, replicates: int = 1000, permutations: int = 2000, seed: int = 0
    ) -> pl.DataFrame:
        """The position effect of the judges that judged each pair in one order (win rate
        shown first − shown second, per candidate and pooled, with its cluster-bootstrap
        interval and randomisation p; for a fixed order a message, no figure):
        :func:`voirdire.analysis.position.one_order.one_order_effect`. Empty when every
        judge has both orders (PC and PF apply)."""
        from voirdire.analysis.position.clusters import job_order_units
        from voirdire.analysis.position.one_order import one_order_effect

        return self._kept(
            ("one_order", replicates, permutations, seed),
            lambda: one_order_effect(
                self.judgments,
                replicates=replicates,
                permutations=permutations,
                seed=seed,
                clusters=self.clusters,
                units=job_order_units(self.judgments, self.job),
            ),  # fmt: skip
        )

    def calibration(self, *, replicates: int = 1000, seed: int = 0) -> pl.DataFrame:
        """ECE and Brier score of the judges' probabilities against the gold labels, with
        intervals: :func:`voirdire.analysis.position.calibration_error.calibration_error`.
        Empty without probabilities (``option_probs`` or ``p_candidate``) and labels.

        Raises:
            ConfigError: ``p_candidate`` holds a value outside [0, 1]."""
        from voirdire.analysis.position.calibration_error import calibration_error

        return self._kept(
            ("calibration", replicates, seed),
            lambda: calibration_error(
                self.judgments, replicates=replicates, seed=seed, clusters=self.clusters
            ),
        )

    def reliability(self) -> pl.DataFrame:
        """The reliability diagram's points per judge and bin:
        :func:`voirdire.analysis.position.calibration_error.reliability_table`."""
        from voirdire.analysis.position.calibration_error import reliability_table

        return self._kept(("reliability",), lambda: reliability_table(self.judgments))

    @property
    def name(self) -> str:
        """The directory's name (the study's ``source`` of a figure)."""
        return self.output_dir.name

    @property
    def settings(self) -> dict[str, Any]:
        """The job's settings and counts, for the report's settings table (str -> value)."""
        job = self.job.get("job", {})
        comp, samp, bench = (
            job.get("comparison", {}),
            job.get("sampling", {}),
            job.get("benchmark", {}),
        )
        failed = self.judgments.filter(
            pl.col("failed").fill_null(False) | pl.col("extracted").is_null()
        ).height
        no_output = self.judgments.filter(pl.col("failure").is_not_null()).height
        # replayed verdicts (an audit, a replay): the log's judge ran with settings of its
        # own, and its orders are what it recorded, not what the job would have asked
        from voirdire.analysis.position.one_order import recorded_orders

        judges = job.get("judges") or []
        recorded = bool(judges) and all(j.get("backend") == "replay" for j in judges)
        ran = "as the log's judge ran" if recorded else None
        perms = (
            recorded_orders(judges, self.judgments, self.order_design())
            if recorded
            else None
        ) or comp.get("permutations")
        return {
            "directory": self.name,
            "job": job.get("name", self.name),
            "benchmark": self.job.get("benchmark", bench.get("name")),
            "sample": bench.get("sample", "full"),
            "instances": self.job.get("instances"),
            "mode": comp.get("mode", "pairwise"),
            "option mode": self.job.get("option_mode"),
            "permutations": perms,
            "repetitions": comp.get("repetitions", 1),
            "temperature": ran or samp.get("temperature"),
            "max tokens": ran or samp.get("max_tokens"),
            "judges": self.judge_metrics.height,
            "judgments": self.judgments.height,
            "failed": failed,
            "no output": no_output,
            "no verdict extracted": failed - no_output,
        }


def compute_dir(
    output_dir: str | os.PathLike, settings: AnalysisSettings = DEFAULTS
) -> Results:
    """Judgments and metrics of a finished (or partly finished) directory; writes nothing.
    Every stage of :data:`~voirdire.analysis.stages.ANALYSIS_STAGES` runs; ``job.json`` is
    read once (:func:`~voirdire.analysis.results_dir.read_dir`).

    Raises:
        FileNotFoundError: the directory has no ``job.json`` (not a voirdire output directory).
        ConfigError: its ``job.json`` is a link or not our record.
    """
    d = read_dir(output_dir)
    state = analyse(d, DIR_OUTPUTS, settings)
    return Results(d.path, **{k: state[k] for k in DIR_OUTPUTS})


def with_pass_kappa(
    jm: pl.DataFrame, judgments: pl.DataFrame, replicates: int = 1000
) -> pl.DataFrame:
    """``jm`` (one row per benchmark × judge) with the inter-pass kappa columns of
    :func:`voirdire.analysis.mitigation.pass_kappa.pass_kappa` joined on (null where a judge has no
    pairwise pair judged in both orders)."""
    return jm.join(
        pass_kappa(judgments, replicates=replicates),
        on=["benchmark", "judge"],
        how="left",
    )
