"""Analysing a finished output directory: judgments, metrics tables and ``report.md``.

Reads what the engine wrote (``job.json``, ``raw/``) and calls no judge. Writes
``judgments.parquet``, ``metrics/judge_metrics.csv``, ``metrics/unit_metrics.csv``, for
list-wise jobs ``metrics/slot_shares.csv``, for jobs with perturbations
``metrics/bias_effects.csv``, when a judge's own model is among the candidates
``metrics/self_enhancement.csv`` (``docs/bias-metrics.md``), and ``report.md``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
from voirdire.analysis.biases import bias_effects, control_rows, has_perturbations
from voirdire.analysis.listwise import slot_shares
from voirdire.analysis.metrics import summarize
from voirdire.analysis.report import write_markdown_report
from voirdire.analysis.self_enhancement import has_own_models, self_enhancement
from voirdire.engine.job import JOB_FILE, load_judgments

#: columns of metrics/judge_metrics.csv and metrics/unit_metrics.csv
JUDGE_METRIC_COLUMNS = ["benchmark", "judge", "pc", "pc_std", "pf", "pf_std", "error_rate", "rs", "rs_spread"]
UNIT_METRIC_COLUMNS = [
    "benchmark", "judge", "candidate", "task", "n", "consistent", "primacy", "recency", "pc", "pf", "owr", "quality_gap",
]


def analyze_dir(output_dir: str | os.PathLike) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Recompute judgments, metrics and the report of a finished directory, in place.

    Returns:
        ``(judge_metrics, unit_metrics)`` as computed by :func:`voirdire.analysis.metrics.summarize`.

    Raises:
        FileNotFoundError: the directory has no ``job.json`` (not a voirdire output directory).
    """
    out = Path(output_dir)
    judgments = load_judgments(out)
    judgments.write_parquet(out / "judgments.parquet", compression="zstd")
    position = control_rows(judgments)  # position-bias metrics: the unperturbed queries
    jm, um = summarize(position)
    (out / "metrics").mkdir(exist_ok=True)
    jm.select(JUDGE_METRIC_COLUMNS).write_csv(out / "metrics" / "judge_metrics.csv")
    um.select(UNIT_METRIC_COLUMNS).write_csv(out / "metrics" / "unit_metrics.csv")
    if position.filter(pl.col("mode") == "listwise").height:
        slot_shares(position).write_csv(out / "metrics" / "slot_shares.csv")
    if has_perturbations(judgments):
        bias_effects(judgments).write_csv(out / "metrics" / "bias_effects.csv")
    if has_own_models(judgments):
        self_enhancement(judgments).write_csv(out / "metrics" / "self_enhancement.csv")
    meta = json.loads((out / JOB_FILE).read_text())
    write_markdown_report(out / "report.md", meta, position, jm, um)
    return jm, um
