"""Analysing a finished output directory: judgments, metrics tables and ``report.md``.

Reads what the engine wrote (``job.json``, ``raw/``) and calls no judge.
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

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from voirdire.analysis.biases.effects import bias_effects, control_rows, has_perturbations
from voirdire.analysis.biases.self_enhancement import has_own_models, self_enhancement
from voirdire.analysis.mitigation.pass_kappa import PASS_KAPPA_COLUMNS, pass_kappa
from voirdire.analysis.position.gold import with_gold
from voirdire.analysis.position.listwise import slot_shares
from voirdire.analysis.position.metrics import summarize
from voirdire.analysis.position.uncertainty import with_metric_columns
from voirdire.engine.job import JOB_FILE, load_judgments

__all__ = ["JUDGE_METRIC_COLUMNS", "CELL_METRIC_COLUMNS", "DirTables", "compute_dir", "with_pass_kappa"]

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
        judge_metrics: :func:`voirdire.analysis.position.metrics.judge_metrics` columns plus
            the inter-pass kappa (:func:`voirdire.analysis.mitigation.pass_kappa.pass_kappa`:
            ``pass_kappa``, ``_lo``, ``_hi``, ``pass_kappa_pairs``, ``pass_kappa_gate``;
            null for list-wise judges), plus :data:`~voirdire.analysis.position.gold.GOLD_JUDGE_COLUMNS`
            where judgments carry gold labels, plus a column per registered metric other
            than pc, pf and rs (:func:`~voirdire.analysis.position.uncertainty.with_metric_columns`).
        cell_metrics: :func:`voirdire.analysis.position.metrics.cell_metrics` columns, plus
            :data:`~voirdire.analysis.position.gold.GOLD_CELL_COLUMNS` likewise.
        slot_shares: :func:`voirdire.analysis.position.listwise.slot_shares` for a job with list-wise
            rows, else ``None``.
        bias_effects: :func:`voirdire.analysis.biases.effects.bias_effects` for a job with
            perturbations, else ``None``.
        self_enhancement: :func:`voirdire.analysis.biases.self_enhancement.self_enhancement` when a
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
    jm = with_metric_columns(jm, position)  # registered metrics other than pc, pf, rs
    shares = slot_shares(position) if position.filter(pl.col("mode") == "listwise").height else None
    effects = bias_effects(judgments) if has_perturbations(judgments) else None
    own = self_enhancement(judgments) if has_own_models(judgments) else None
    return DirTables(meta, judgments, jm, cm, shares, effects, own)


def with_pass_kappa(jm: pl.DataFrame, judgments: pl.DataFrame, replicates: int = 1000) -> pl.DataFrame:
    """``jm`` (one row per benchmark × judge) with the inter-pass kappa columns of
    :func:`voirdire.analysis.mitigation.pass_kappa.pass_kappa` joined on (null where a judge has no
    pairwise pair judged in both orders)."""
    return jm.join(pass_kappa(judgments, replicates=replicates), on=["benchmark", "judge"], how="left")
