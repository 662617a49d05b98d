"""The layout of an output directory, declared once: file names and the job record.

The engine writes a directory and the analysis reads it; both take the names from here::

    job.json                     the validated job (JOB_FILE; no secrets): the job record
    raw/<judge>/part-*.parquet   raw outputs and recorded failures (RAW_DIR; RAW_SCHEMA)
    raw/<judge>/quarantine/      unreadable parts moved aside (QUARANTINE; ``*.parquet.corrupt``)
    judgments.parquet            the analysis: one row per query with its verdict (JUDGMENTS_FILE)
    metrics/<table>.csv          the analysis' tables (METRICS_DIR, METRIC_FILES)
    figures/<name>.png           a report's figures (FIGURES_DIR)
    report.md, report.html       the reports (REPORT_MD, REPORT_HTML)
    verdicts.html                a report's flipped pairs, opened one by one (VERDICTS_HTML)

The row schemas (raw rows, judgments) are :mod:`voirdire.schema`'s. A directory is ours when
its ``job.json`` is a regular file whose JSON object has the keys the engine writes
(:data:`JOB_RECORD_KEYS`; :func:`read_job_record`). This module imports no engine and no Ray.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from voirdire.bounds import check_json_depth
from voirdire.core import ConfigError

__all__ = [
    "JOB_FILE",
    "RAW_DIR",
    "QUARANTINE",
    "JUDGMENTS_FILE",
    "METRICS_DIR",
    "FIGURES_DIR",
    "METRIC_FILES",
    "REPORT_MD",
    "REPORT_HTML",
    "VERDICTS_HTML",
    "REPORT_FILES",
    "PEOPLE_MANIFEST",
    "ANALYSIS_MANIFEST",
    "REPORT_MANIFEST",
    "MITIGATION_MANIFEST",
    "RANKING_MANIFEST",
    "JOB_RECORD_KEYS",
    "is_job_record",
    "read_job_record",
]

#: the marker of a job's output directory: the job record
JOB_FILE = "job.json"
#: the folder of the raw parts (``raw/<slug(judge)>/part-*.parquet``)
RAW_DIR = "raw"
#: the folder (inside a judge's ``raw/<judge>/``) where unreadable parts are moved
QUARANTINE = "quarantine"
#: the judgments the analysis writes (JUDGMENT_SCHEMA rows)
JUDGMENTS_FILE = "judgments.parquet"
#: the folders of the analysis' tables (CSV) and a report's figures (PNG)
METRICS_DIR, FIGURES_DIR = "metrics", "figures"
#: the tables of one directory's analysis, by name: ``metrics/<name>.csv``
METRIC_FILES = (
    "judge_metrics",
    "cell_metrics",
    "slot_shares",
    "bias_effects",
    "self_enhancement",
)
#: the reports
REPORT_MD, REPORT_HTML = "report.md", "report.html"
#: the verdict viewer beside report.html (voirdire.analysis.report.verdicts)
VERDICTS_HTML = "verdicts.html"
#: what a report or a mitigation writes at the top of its directory (besides metrics/, figures/)
REPORT_FILES = frozenset(
    {
        REPORT_HTML,
        REPORT_MD,
        VERDICTS_HTML,
        "mitigation.csv",
        "mitigation.md",
        "bpde_annotation.csv",
        JUDGMENTS_FILE,
        "ranking.html",
        "ranking.md",
        "people.md",
        "people_pairs.parquet",
        "people_to_label.csv",
        "people_manifest.json",
        "analysis_manifest.json",
        "report_manifest.json",
        "mitigation_manifest.json",
        "ranking_manifest.json",
    }
)
#: the file ``voirdire people`` writes last, naming the set of files it wrote (their sizes
#: and SHA-256): a reader refuses a set without it or that does not match it
PEOPLE_MANIFEST = "people_manifest.json"
#: the file a directory's analysis (``run``, ``audit``, ``analyze``, ``report`` of the directory
#: itself) writes last, naming judgments.parquet, its metrics/*.csv and report.md
ANALYSIS_MANIFEST = "analysis_manifest.json"
#: the file ``voirdire report`` writes last, naming every file of the report and, in its
#: ``meta``, the digests of the analyses it was built beside (:mod:`voirdire.file_set`)
REPORT_MANIFEST = "report_manifest.json"
#: the files ``voirdire mitigate`` and ``voirdire rank`` write last, naming their sets (a
#: report that draws either writes its files into its own set instead)
MITIGATION_MANIFEST, RANKING_MANIFEST = (
    "mitigation_manifest.json",
    "ranking_manifest.json",
)
#: keys of job.json (the engine's record) and the type each must have
JOB_RECORD_KEYS: dict[str, type] = {
    "job": dict,
    "benchmark": str,
    "judges": dict,
    "verdict_patterns": dict,
    "units_per_judge": int,
}


def is_job_record(obj: Any) -> bool:
    """Whether ``obj`` (parsed JSON) has the shape of the engine's ``job.json`` record."""
    if not isinstance(obj, dict) or not all(
        isinstance(obj.get(k), t) for k, t in JOB_RECORD_KEYS.items()
    ):
        return False
    job = obj["job"]
    return isinstance(job.get("name"), str) and isinstance(job.get("output_dir"), str)


def read_job_record(output_dir: str | os.PathLike) -> dict[str, Any]:
    """The ``job.json`` record of an output directory.

    Raises:
        FileNotFoundError: no ``job.json`` (not a voirdire output directory).
        ConfigError: a ``job.json`` that is a link, unreadable, nested too deep
            (:mod:`voirdire.bounds`), or not our record.
    """
    out = Path(output_dir)
    path = out / JOB_FILE
    if not path.is_file() and not path.is_symlink():
        raise FileNotFoundError(
            f"{out} is not a voirdire output directory (no {JOB_FILE})"
        )
    if path.is_symlink():
        raise ConfigError(
            f"{path} is a symbolic link; voirdire reads and writes no links in an output directory"
        )
    try:
        data = path.read_bytes()
        check_json_depth(data, str(path))  # received: bounded before it is decoded
        obj = json.loads(data.decode("utf-8"))
    except ConfigError:
        raise
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(
            f"{path}: not a voirdire job record ({type(exc).__name__}); {out} is not ours"
        ) from None
    if not is_job_record(obj):
        raise ConfigError(
            f"{path} is not a voirdire job record; {out} is not a voirdire output directory"
        )
    return obj
