"""Analysing a finished output directory: judgments, metrics tables and ``report.md``.

Reads what the engine wrote (``job.json``, ``raw/``) and calls no judge.
:func:`compute_dir` computes every table in memory and writes nothing (the input may sit
on a read-only filesystem); :func:`write_dir` writes ``judgments.parquet``,
``metrics/judge_metrics.csv``, ``metrics/cell_metrics.csv`` (with accuracy against gold
labels where the benchmark has them: :mod:`voirdire.analysis.gold`), for list-wise jobs
``metrics/slot_shares.csv``, for jobs with perturbations ``metrics/bias_effects.csv``,
when a judge's own model is among the candidates ``metrics/self_enhancement.csv``
(``docs/bias-metrics.md``), and ``report.md``; :func:`analyze_dir` does both, in place.
Position-bias figures are computed on the control (unperturbed) queries only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from voirdire.analysis.biases import bias_effects, control_rows, has_perturbations
from voirdire.analysis.gold import GOLD_CELL_COLUMNS, GOLD_JUDGE_COLUMNS, with_gold
from voirdire.analysis.listwise import slot_shares
from voirdire.analysis.metrics import summarize
from voirdire.analysis.pass_kappa import PASS_KAPPA_COLUMNS, pass_kappa
from voirdire.analysis.report import write_markdown_report
from voirdire.analysis.self_enhancement import has_own_models, self_enhancement
from voirdire.engine.job import JOB_FILE, load_judgments

__all__ = ["JUDGE_METRIC_COLUMNS", "CELL_METRIC_COLUMNS", "DirTables", "compute_dir", "with_pass_kappa", "write_dir", "analyze_dir"]

#: columns of metrics/judge_metrics.csv and metrics/cell_metrics.csv
JUDGE_METRIC_COLUMNS = [
    "benchmark", "judge", "pc", "pc_std", "pf", "pf_std", "error_rate", "rs", "rs_spread", *PASS_KAPPA_COLUMNS[2:],
]  # fmt: skip
CELL_METRIC_COLUMNS = [
    "benchmark", "judge", "candidate", "task", "n", "consistent", "primacy", "recency", "balanced",
    "pcn", "rcn", "pc", "pf", "owr", "quality_gap",
]  # fmt: skip


@dataclass(frozen=True)
class DirTables:
    """The analysis of one output directory, in memory.

    Attributes:
        meta: the job record (``job.json``).
        judgments: ``voirdire.engine.schema.JUDGMENT_SCHEMA`` rows with verdicts extracted.
        judge_metrics: :func:`voirdire.analysis.metrics.judge_metrics` columns plus the
            inter-pass kappa (:func:`voirdire.analysis.pass_kappa.pass_kappa`:
            ``pass_kappa``, ``_lo``, ``_hi``, ``pass_kappa_pairs``, ``pass_kappa_gate``;
            null for list-wise judges), plus :data:`~voirdire.analysis.gold.GOLD_JUDGE_COLUMNS`
            where judgments carry gold labels.
        cell_metrics: :func:`voirdire.analysis.metrics.cell_metrics` columns, plus
            :data:`~voirdire.analysis.gold.GOLD_CELL_COLUMNS` likewise.
        slot_shares: :func:`voirdire.analysis.listwise.slot_shares` for a job with list-wise
            rows, else ``None``.
        bias_effects: :func:`voirdire.analysis.biases.bias_effects` for a job with
            perturbations, else ``None``.
        self_enhancement: :func:`voirdire.analysis.self_enhancement.self_enhancement` when a
            judge's own model is among the candidates, else ``None``.

    ``judge_metrics``, ``cell_metrics`` and ``slot_shares`` are computed on the control
    (unperturbed) queries; ``judgments`` holds every row.
    """

    meta: dict[str, Any]
    judgments: pl.DataFrame
    judge_metrics: pl.DataFrame
    cell_metrics: pl.DataFrame
    slot_shares: pl.DataFrame | None
    bias_effects: pl.DataFrame | None = None
    self_enhancement: pl.DataFrame | None = None


def compute_dir(output_dir: str | os.PathLike) -> DirTables:
    """Judgments and metrics of a finished (or partly finished) directory; writes nothing.

    Raises:
        FileNotFoundError: the directory has no ``job.json`` (not a voirdire output directory).
    """
    out = Path(output_dir)
    judgments = load_judgments(out)
    meta = json.loads((out / JOB_FILE).read_text())
    position = control_rows(judgments)  # position-bias metrics: the unperturbed queries
    jm, cm = summarize(position)
    jm = with_pass_kappa(jm, position)
    jm, cm = with_gold(position, jm, cm)  # accuracy where the benchmark has gold labels
    shares = slot_shares(position) if position.filter(pl.col("mode") == "listwise").height else None
    effects = bias_effects(judgments) if has_perturbations(judgments) else None
    own = self_enhancement(judgments) if has_own_models(judgments) else None
    return DirTables(meta, judgments, jm, cm, shares, effects, own)


def with_pass_kappa(jm: pl.DataFrame, judgments: pl.DataFrame, replicates: int = 1000) -> pl.DataFrame:
    """``jm`` (one row per benchmark × judge) with the inter-pass kappa columns of
    :func:`voirdire.analysis.pass_kappa.pass_kappa` joined on (null where a judge has no
    pairwise pair judged in both orders)."""
    return jm.join(pass_kappa(judgments, replicates=replicates), on=["benchmark", "judge"], how="left")


def write_dir(tables: DirTables, out: str | os.PathLike) -> None:
    """Write ``judgments.parquet``, ``metrics/*.csv`` and ``report.md`` of ``tables`` under
    ``out`` (created if needed)."""
    out = Path(out)
    (out / "metrics").mkdir(parents=True, exist_ok=True)
    tables.judgments.write_parquet(out / "judgments.parquet", compression="zstd")
    jm, cm = tables.judge_metrics, tables.cell_metrics
    jm.select(JUDGE_METRIC_COLUMNS + [c for c in GOLD_JUDGE_COLUMNS if c in jm.columns]).write_csv(out / "metrics" / "judge_metrics.csv")
    cm.select(CELL_METRIC_COLUMNS + [c for c in GOLD_CELL_COLUMNS if c in cm.columns]).write_csv(out / "metrics" / "cell_metrics.csv")
    for name, table in (("slot_shares", tables.slot_shares), ("bias_effects", tables.bias_effects), ("self_enhancement", tables.self_enhancement)):
        if table is not None:
            table.write_csv(out / "metrics" / f"{name}.csv")
    write_markdown_report(
        out / "report.md", tables.meta, control_rows(tables.judgments), tables.judge_metrics, tables.cell_metrics, tables.slot_shares
    )


def analyze_dir(output_dir: str | os.PathLike) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Recompute judgments, metrics and the report of a finished directory, in place
    (:func:`compute_dir` then :func:`write_dir` into the same directory).

    Returns:
        ``(judge_metrics, cell_metrics)`` as computed by :func:`voirdire.analysis.metrics.summarize`.

    Raises:
        FileNotFoundError: the directory has no ``job.json`` (not a voirdire output directory).
    """
    tables = compute_dir(output_dir)
    write_dir(tables, output_dir)
    return tables.judge_metrics, tables.cell_metrics
