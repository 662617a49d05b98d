"""The one door of the analysis into a finished output directory.

Every reader of a directory (``voirdire analyze``, ``report``, ``rank``, ``mitigate``,
``voirdire.load``, the study) comes in here: the directory's layout is
:mod:`voirdire.layout`'s (``job.json``, ``raw/<judge>/part-*.parquet``), its rows are
:data:`voirdire.schema.RAW_SCHEMA` read by :class:`voirdire.parts.PartReader`, and its verdicts
are extracted with the patterns the job record carries (:mod:`voirdire.judges.extract`).
``job.json`` is parsed once per directory. Reading imports nothing of the engine and no Ray
(``tests/test_results_dir.py``), writes, creates and moves nothing: the directory may sit on a
read-only filesystem.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from voirdire.judges.extract import extract_scores, extract_verdicts
from voirdire.layout import read_job_record
from voirdire.parts import PartReader

if TYPE_CHECKING:
    from voirdire.benchmarks.base import Benchmark

__all__ = ["FinishedDir", "read_dir", "load_judgments", "dir_benchmark"]


@dataclass(frozen=True)
class FinishedDir:
    """A finished (or partly finished) output directory, read.

    Attributes:
        path: the directory.
        job: its job record (``job.json``: dict, no secrets; :data:`voirdire.layout.JOB_RECORD_KEYS`).
        judgments: one row per query with its extracted verdict
            (:data:`voirdire.schema.JUDGMENT_SCHEMA` columns).
    """

    path: Path
    job: dict[str, Any]
    judgments: pl.DataFrame


def read_dir(output_dir: str | os.PathLike) -> FinishedDir:
    """The job record and the judgments of a directory; ``job.json`` is read once.

    Raises:
        FileNotFoundError: the directory has no job.json (not a voirdire output directory).
        ConfigError: its job.json is a link or not our record
            (:func:`~voirdire.layout.read_job_record`).

    Unreadable parts are skipped with one :class:`~voirdire.exceptions.CorruptPartWarning`
    naming them; nothing in the directory is created, written or moved.
    """
    out = Path(output_dir)
    meta = read_job_record(out)
    return FinishedDir(out, meta, _judgments(out, meta))


def load_judgments(output_dir: str | os.PathLike) -> pl.DataFrame:
    """Raw rows of a finished directory with verdicts extracted (JUDGMENT_SCHEMA columns):
    :func:`read_dir`'s ``judgments``. Raises as :func:`read_dir`."""
    return read_dir(output_dir).judgments


def _judgments(out: Path, meta: dict[str, Any]) -> pl.DataFrame:
    raw = PartReader(out).read_raw()  # a reader: writes and moves nothing
    if meta.get("score_patterns"):
        raw = extract_scores(raw, meta["score_patterns"])
    else:
        raw = raw.with_columns(slot_scores=pl.lit(None, dtype=pl.List(pl.Float64)))
    return extract_verdicts(raw, meta["verdict_patterns"], meta.get("verdict_labels"))


def dir_benchmark(meta: dict[str, Any]) -> Benchmark:
    """The benchmark a directory's job record (``job.json``) names, loaded again as the job
    loaded it (its data directory, sample, ``subsets`` and ``prompt``, or
    ``[benchmark.pairs]``) for what the judgments do not carry (prompts and answers: token
    lengths, style features).

    The record is data from a directory that may come from anyone: its benchmark name
    resolves only among registered benchmarks (built-in or an installed package's entry
    point), never as an import path (``docs/security.md``).

    Raises:
        ConfigError: the name is not a registered benchmark, or its settings are malformed.
    """
    from pydantic import ValidationError

    from voirdire.benchmarks.own_pairs.benchmark import PairsSpec
    from voirdire.benchmarks.registry import load_benchmark
    from voirdire.core import ConfigError

    b = (meta.get("job") or {}).get("benchmark") or {}
    name = b.get("name") if isinstance(b, dict) else None
    if not isinstance(name, str):
        raise ConfigError("job.json names no benchmark (job.benchmark.name)")
    if b.get("pairs"):  # a user's own pairs: read again from where the job read them
        try:
            pairs = PairsSpec(**b["pairs"])
        except (TypeError, ValidationError) as exc:
            raise ConfigError(
                f"job.json: job.benchmark.pairs is malformed ({type(exc).__name__})"
            ) from None
        return load_benchmark(name, pairs=pairs, allow_import=False)
    subsets, prompt = b.get("subsets"), b.get("prompt")
    if not (
        subsets is None
        or (isinstance(subsets, list) and all(isinstance(s, str) for s in subsets))
    ):
        raise ConfigError("job.json: job.benchmark.subsets is not a list of names")
    if not (prompt is None or isinstance(prompt, str)):
        raise ConfigError("job.json: job.benchmark.prompt is not a name")
    return load_benchmark(
        name, meta.get("data_dir"), sample=b.get("sample", "full"), subsets=subsets,
        prompt=prompt, allow_import=False,
    )  # fmt: skip
