"""The replay judge: answers a query with a judge's recorded output from the release.

The public release of Shi et al. (2024), "Judging the Judges", ships the raw outputs of nine
commercial judges (``judgments/<study>/<Benchmark>/<judge>.jsonl.gz``, one JSON object a
line: ``cmp_index`` = ``"<question id>;<model shown first>;<model shown second>"``,
``judgment`` = the full text or null, and ``repetition`` 1-3 in the repetition study).
Replaying them runs the whole pipeline on real input with no API key and no GPU. A query
the release lacks is recorded as a failure with the reason "no recorded output"; a
recorded null (the original call failed) as "the recorded call failed".
"""

from __future__ import annotations

import gzip
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import polars as pl

from voirdire.judges.base import (
    ConfigError,
    FailureClass,
    JudgeBackend,
    JudgeContext,
    JudgeSettings,
    Query,
    Result,
    register,
)


#: ``recorded = "*"`` of a replay judge: one judge per recorded output found
ALL_RECORDED = "*"


class ReplaySettings(JudgeSettings):
    """``recorded``: the release's judge whose outputs are replayed (file stem; ``"*"`` in a job
    file expands to one judge per recorded output, see :meth:`ReplayJudge.expand`);
    ``study``: ``position_bias`` or ``repetition``; ``data_dir``: overrides the job's."""

    recorded: str
    study: Literal["position_bias", "repetition"] = "position_bias"
    data_dir: str | None = None


def recorded_path(settings: ReplaySettings, context: JudgeContext) -> Path:
    """Path of the recorded outputs file for a judge and benchmark.

    Raises:
        ConfigError: no data directory, or the file does not exist (lists what exists).
    """
    root = settings.data_dir or context.data_dir
    if not root:
        raise ConfigError(f"judge {context.judge!r}: replay needs a data directory")
    d = Path(root) / "judgments" / settings.study / context.benchmark
    path = d / f"{settings.recorded}.jsonl.gz"
    if not path.is_file():
        have = sorted(p.name.removesuffix(".jsonl.gz") for p in d.glob("*.jsonl.gz")) if d.is_dir() else []
        raise ConfigError(
            f"judge {context.judge!r}: no recorded outputs for {settings.recorded!r} in {d}"
            + (f"; recorded judges there: {', '.join(have)}" if have else "")
        )
    return path


def recorded_judges(data_dir: str | Path, study: str, benchmark: str) -> list[str]:
    """The judges with recorded outputs in ``data_dir`` for a study and benchmark (release
    name, e.g. ``MTBench``): the stems of ``judgments/<study>/<benchmark>/*.jsonl.gz``,
    sorted; empty when there are none."""
    d = Path(data_dir) / "judgments" / study / benchmark
    return sorted(p.name.removesuffix(".jsonl.gz") for p in d.glob("*.jsonl.gz")) if d.is_dir() else []


def load_recorded(path: Path) -> dict[tuple[str, int], str | None]:
    """``(cmp_index, repetition) -> judgment text`` (None where the recorded call failed)."""
    out: dict[tuple[str, int], str | None] = {}
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            out[(rec["cmp_index"], int(rec.get("repetition") or 1))] = rec.get("judgment")
    return out


@register
class ReplayJudge(JudgeBackend):
    """Replays recorded outputs; see the module docstring. Needs no prompt text."""

    name = "replay"
    Settings = ReplaySettings
    needs_prompt = False

    is_recording = True

    def __init__(self, settings: ReplaySettings, context: JudgeContext) -> None:
        super().__init__(settings, context)
        self.recorded = load_recorded(recorded_path(settings, context))

    @classmethod
    def identity(cls, settings, sampling):  # type: ignore[override]
        # the recorded judge and study are what the answers are; data_dir is a location
        return {"backend": cls.name, "recorded": settings.recorded, "study": settings.study}

    @classmethod
    def preflight(cls, settings, context) -> None:  # type: ignore[override]
        recorded_path(settings, context)

    @classmethod
    def worker_options(cls, settings):  # type: ignore[override]
        return {"num_cpus": 0}

    @classmethod
    def expand(cls, settings: Mapping[str, Any], *, judge: str, benchmark: str, data_dir: str | os.PathLike[str],
               spec: Any = None) -> list[tuple[str, dict[str, Any]]] | None:
        """``recorded = "*"``: one judge per recorded output in the data directory for the
        study and benchmark, in name order, named after it (or the entry's name with ``*``
        replaced by it: ``name = "replay-*"``). Raises ConfigError when none is found."""
        if settings.get("recorded") != ALL_RECORDED:
            return None
        study = str(settings.get("study", "position_bias"))
        root = Path(settings.get("data_dir") or data_dir)
        found = recorded_judges(root, study, benchmark)
        if not found:
            raise ConfigError(
                f"judge {judge!r}: recorded = \"*\" found no recorded outputs in {root / 'judgments' / study / benchmark}"
            )
        return [(judge.replace("*", rec) if "*" in judge else rec, {"recorded": rec}) for rec in found]

    @classmethod
    def quality(cls, arg: str, inst: pl.DataFrame, *, bench: Any, judges: Mapping[str, Any], data_dir: str) -> pl.DataFrame:
        """``benchmark.quality = "replay:<recorded judge>"``: the better candidate is the one
        that judge's recorded verdicts (position-bias study) choose in both orders; other
        instances have none (pairwise only).

        Raises:
            ConfigError: a list-wise job, or no recorded outputs of that judge.
        """
        if inst.height and inst["candidates"].list.len().max() != 2:
            raise ConfigError("benchmark.quality = 'replay:...' serves pairwise jobs only")
        ctx = JudgeContext(judge=f"quality source replay:{arg}", benchmark=bench.name, data_dir=data_dir, output_dir=None)
        rec = load_recorded(recorded_path(ReplaySettings(recorded=arg), ctx))
        df = pl.DataFrame(
            {"cmp_index": [k[0] for k in rec if k[1] == 1], "text": [v for k, v in rec.items() if k[1] == 1]},
            schema={"cmp_index": pl.String, "text": pl.String},
        ).with_columns(letter=pl.col("text").str.extract(bench.verdict_pattern, 1))
        a = df.select(pl.col("cmp_index").alias("k_ab"), pl.col("letter").alias("l_ab"))
        b = df.select(pl.col("cmp_index").alias("k_ba"), pl.col("letter").alias("l_ba"))
        c0, c1 = pl.col("candidates").list.get(0), pl.col("candidates").list.get(1)
        out = inst.with_columns(
            k_ab=pl.col("question_id") + ";" + c0 + ";" + c1,
            k_ba=pl.col("question_id") + ";" + c1 + ";" + c0,
        ).join(a, on="k_ab", how="left").join(b, on="k_ba", how="left")
        better = (
            pl.when((pl.col("l_ab") == "A") & (pl.col("l_ba") == "B")).then(c0)
            .when((pl.col("l_ab") == "B") & (pl.col("l_ba") == "A")).then(c1)
            .otherwise(None)
        )
        worst = pl.when(better == c0).then(c1).when(better == c1).then(c0).otherwise(None)
        return out.with_columns(better=better, worst=worst).drop("k_ab", "k_ba", "l_ab", "l_ba")

    async def judge(self, queries: list[Query]) -> list[Result]:
        out: list[Result] = []
        t = time.perf_counter()
        for q in queries:
            key = (";".join((q.question_id, *q.shown)), q.repetition)
            if key not in self.recorded:
                out.append(Result.failed(q.unit_id, FailureClass.MISSING, "no recorded output"))
                continue
            text = self.recorded[key]
            if text is None:
                out.append(Result.failed(q.unit_id, FailureClass.MISSING, "the recorded call failed (null judgment)"))
            else:
                out.append(Result(unit_id=q.unit_id, output=text, verdict_mode="replay"))
        dt = (time.perf_counter() - t) / max(1, len(queries))
        for r in out:
            r.latency_s = dt
        return out
