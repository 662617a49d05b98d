"""The whole AlpacaEval release an audited log belongs to: every model's comparisons with the
baseline for the same annotator, the data AlpacaEval's instruction difficulty is fitted on.

AlpacaEval's length-controlled win rate reads one fixed difficulty table per annotator
(``instruction_difficulty.csv``), whichever models are evaluated; voirdire fits it by
AlpacaEval's procedure (:mod:`~voirdire.analysis.ranking.difficulty`) once on every model of
the release the audited logs come from, so that auditing a subset gives its models the LC
win rate they have in the whole release (``docs/ranking.md``, *Where the difficulty comes
from*). This module finds those files and reads the rows the fit needs; the fit and its
cache are the analysis's (:mod:`~voirdire.analysis.ranking.release_difficulty`).

**The release's files.** A log at ``<root>/results/<model>/<annotator>/annotations.json``:
the files of ``<root>`` that its fetch record (``RELEASE.json``, written and blob-verified by
``voirdire data fetch alpaca_eval``, :func:`~voirdire.benchmarks.logs.reading.fetched_logs`)
lists at ``results/*/<annotator>/annotations.json``; a folder without one (a checkout): the
files at that path. The files are found beside the logs as the shipped weights are
(:func:`~voirdire.benchmarks.logs.alpaca_eval.weights_file`); each is bounded by the
log's ``max_bytes`` before it is read.

**The rows** (:data:`RELEASE_SCHEMA`), one per decided annotation of a model against the
baseline (a failed annotation, null, is left out; the baseline's own file, itself against
itself, holds no pair): ``judge`` (the annotator), ``baseline`` (``generator_1``), ``model``
(``generator_2``), ``question_id`` and ``cluster`` (the audit's: instruction hash and
pair, instruction hash), ``y`` (the probability that the model won: the annotator's
continuous preference, a draw ½, as the audit's verdicts carry it), ``len_m``, ``len_b``
(the outputs' lengths in characters, as the audit's answer features count them), and
``order`` (the row's place in the release: files sorted, annotations in file order; the
first row's instruction is the difficulty's reference, AlpacaEval's index 0).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import polars as pl

from voirdire.benchmarks.logs.reading import MAX_BYTES_SETTING, fetched_logs
from voirdire.bounds import check_size

__all__ = ["RELEASE_SCHEMA", "release_files", "release_rows"]

#: columns of :func:`release_rows`
RELEASE_SCHEMA = {
    "judge": pl.String, "baseline": pl.String, "model": pl.String, "question_id": pl.String,
    "cluster": pl.String, "y": pl.Float64, "len_m": pl.Float64, "len_b": pl.Float64,
    "order": pl.Int64,
}  # fmt: skip


def release_files(log: Path) -> list[Path]:
    """Every model's annotation file of the annotator of ``log``
    (``<root>/results/<model>/<annotator>/annotations.json``) in the release beside it
    (module docstring), sorted, ``log`` among them; ``[]`` when ``log`` is not at such a
    path."""
    log = Path(log).resolve()
    if len(log.parts) < 5 or log.parents[2].name != "results":
        return []
    root, ann = log.parents[3], log.parent.name
    listed = fetched_logs(root, ("annotations.json",))
    if listed is not None:
        found = [
            f for f in listed
            if f.parent.name == ann and f.parents[2] == root / "results"
        ]  # fmt: skip
    else:
        found = sorted((root / "results").glob(f"*/{ann}/annotations.json"))
    return sorted({f.resolve() for f in found} | {log})


def release_rows(
    files: list[Path],
    annotations: Callable[[Path], Iterable[tuple]],
    fmt: str,
    max_bytes: int,
) -> pl.DataFrame:
    """The rows of :data:`RELEASE_SCHEMA` of ``files`` (module docstring), in their order;
    ``annotations``: a file's annotations as
    :func:`~voirdire.benchmarks.logs.alpaca_eval.annotations` yields them.

    Raises:
        ConfigError: a file over ``max_bytes``; an annotation the format refuses (naming
            the file, the JSON index and the field)."""
    cols: dict[str, list[Any]] = {c: [] for c in RELEASE_SCHEMA}
    for f in files:
        check_size(f.stat().st_size, f"{fmt} log {f}", max_bytes, "on disk", MAX_BYTES_SETTING)  # fmt: skip
        for _, obj, qid, shown, _, _, p_first, _ in annotations(f):
            if p_first is None:
                continue
            g1, g2 = obj["generator_1"], obj["generator_2"]
            y = p_first if shown[0] == g2 else 1.0 - p_first
            row = (obj["annotator"], g1, g2, qid, qid.split("|", 1)[0], y,
                   float(len(obj["output_2"])), float(len(obj["output_1"])), len(cols["order"]))  # fmt: skip
            for c, v in zip(cols, row):
                cols[c].append(v)
    return pl.DataFrame(cols, schema=RELEASE_SCHEMA)
