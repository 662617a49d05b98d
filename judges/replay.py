"""The replay judge: answers a query with a judge's recorded output from the release.

The public release of Shi et al. (2024), "Judging the Judges", ships the raw outputs of nine
commercial judges (``judgments/<study>/<Benchmark>/<judge>.jsonl.gz``, one JSON object a
line: ``cmp_index`` = ``"<question id>;<model shown first>;<model shown second>"``,
``judgment`` = the full text or null, and ``repetition`` 1-3 in the repetition study).
Replaying them runs the whole pipeline on real input with no API key and no GPU. A query
the release lacks is recorded as a failure with the reason "no recorded output"; a
recorded null (the original call failed) as "the recorded call failed".

The release's format is read through the benchmark (its class's hooks,
:class:`~voirdire.benchmarks.kind.BenchmarkKind`: ``recorded_judges``, ``recorded_file``,
``read_recorded``, ``recorded_mode``); the defaults read the layout above, and a benchmark
whose release records its outputs otherwise overrides them in its own module (which may also
give the verdict letter the release read, so the benchmark's pattern is not applied again,
and name judges whose outputs are score-mode). A benchmark not registered in this process
(a user's class known only to the driver) is read with the defaults.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, Literal

import polars as pl

from voirdire.benchmarks.kind import BenchmarkKind
from voirdire.benchmarks.recorded import Recorded, RecordKey, record_key
from voirdire.benchmarks.registry import find_benchmark, recorded_mode
from voirdire.benchmarks.scoring import score_patterns, score_range
from voirdire.core import ConfigError, FailureClass
from voirdire.judges.base import (
    JudgeBackend,
    JudgeContext,
    JudgeSettings,
    Query,
    Result,
    Sampling,
    register,
)
from voirdire.judges.capabilities import (
    AnswersRows,
    Expands,
    OwnComparisonMode,
    PromptFree,
    QualitySource,
    RecordedTable,
    SharesWorkers,
)
from voirdire.judges.extract import extract_scores, extract_verdicts

#: ``recorded = "*"`` of a replay judge: one judge per recorded output found
ALL_RECORDED = "*"


class ReplaySettings(JudgeSettings):
    """``recorded``: the release's judge whose outputs are replayed (file stem; ``"*"`` in a job
    file expands to one judge per recorded output, see :meth:`ReplayJudge.expand`);
    ``study``: ``position_bias`` or ``repetition``; ``data_dir``: overrides the job's."""

    recorded: str
    study: Literal["position_bias", "repetition"] = "position_bias"
    data_dir: str | None = None


def release_format(benchmark: str) -> type[BenchmarkKind]:
    """The class whose hooks read the recorded outputs of a benchmark (its name as in
    units: ``"MTBench"``): the registered class of that very name, else the defaults
    (:class:`~voirdire.benchmarks.kind.BenchmarkKind`, the first release's layout, under that
    name: a user's own pairs, a class not registered in this process)."""
    cls = find_benchmark(benchmark)
    if cls is not None and getattr(cls, "name", None) == benchmark:
        return cls
    return type("UnregisteredRelease", (BenchmarkKind,), {"name": benchmark})


def recorded_path(settings: ReplaySettings, context: JudgeContext) -> Path:
    """Path of the recorded outputs file for a judge and benchmark
    (the benchmark's ``recorded_file``).

    Raises:
        ConfigError: no data directory, or nothing recorded for that judge (lists what is).
    """
    root = settings.data_dir or context.data_dir
    if not root:
        raise ConfigError(f"judge {context.judge!r}: replay needs a data directory")
    return release_format(context.benchmark).recorded_file(
        root, settings.study, settings.recorded, context.judge
    )


def recorded_judges(
    data_dir: str | Path,
    study: str,
    benchmark: str,
    subsets: Sequence[str] | None = None,
) -> list[str]:
    """The judges with recorded outputs in ``data_dir`` for a study and benchmark (release
    name, e.g. ``MTBench``), sorted, as the benchmark's ``recorded_judges`` lists them
    (``subsets``: the job's, where the benchmark has them). Empty when there are none."""
    return release_format(benchmark).recorded_judges(data_dir, study, subsets)


def load_recorded(
    path: Path, benchmark: str, recorded: str
) -> dict[RecordKey, Recorded]:
    """``(";".join((question id, *shown)), repetition) ->`` :class:`~voirdire.benchmarks.recorded.Recorded`
    of one recorded judge, read by the benchmark's ``read_recorded``."""
    return release_format(benchmark).read_recorded(path, recorded)


def as_result(unit_id: str, rec: Recorded) -> Result:
    """A recorded output as a judge's result: a failure (``MISSING``, its reason) where the
    recorded call failed, else the text with the release's letter where it read one and its
    probabilities (``option_probs``) where it records them."""
    if rec.output is None:
        return Result.failed(unit_id, FailureClass.MISSING, rec.why)
    return Result(
        unit_id=unit_id, output=rec.output, choice=rec.choice, verdict_mode="replay",
        option_probs=dict(rec.probs) if rec.probs is not None else None,
    )  # fmt: skip


#: the columns of :func:`recorded_frame`
RECORDED_SCHEMA = {
    "key": pl.String,
    "repetition": pl.Int64,
    "output": pl.String,
    "choice": pl.String,
    "why": pl.String,
    "verdict_mode": pl.String,
    "probs": pl.List(pl.Struct({"key": pl.String, "value": pl.Float64})),
}


def recorded_frame(recorded: Mapping[RecordKey, Recorded]) -> pl.DataFrame:
    """``recorded`` (:func:`load_recorded`'s) as a table of :data:`RECORDED_SCHEMA`, one row
    per key in its order: what :func:`as_result` reads of each record, as columns."""
    recs = list(recorded.values())
    probs = None
    if any(r.probs is not None for r in recs):
        probs = [
            None
            if r.probs is None
            else [{"key": k, "value": float(p)} for k, p in r.probs.items()]
            for r in recs
        ]
    return pl.DataFrame(
        {
            "key": [k for k, _ in recorded],
            "repetition": [r for _, r in recorded],
            "output": [r.output for r in recs],
            "choice": [r.choice for r in recs],
            "why": [r.why for r in recs],
            "verdict_mode": ["replay"] * len(recs),  # as_result's
            "probs": probs if probs is not None else [None] * len(recs),
        },
        schema=RECORDED_SCHEMA,
    )


def recorded_letters(recorded: str, bench: Any, data_dir: str) -> pl.DataFrame:
    """The verdict letter of every recorded pairwise output (position-bias study, first
    repetition) of a release judge, read as its judgments are read
    (:func:`~voirdire.judges.extract.extract_verdicts` with the benchmark's pattern and
    labels, or the letter the release itself read; a score-mode recorded judge's scores by
    :func:`~voirdire.judges.extract.extract_scores`).

    Returns:
        Columns ``cmp_index`` (str, ``"<question id>;<first>;<second>"``) and ``letter``
        (str, null where no verdict was read).

    Raises:
        ConfigError: no recorded outputs of that judge.
    """
    ctx = JudgeContext(
        judge=f"quality source replay:{recorded}",
        benchmark=bench.name,
        data_dir=data_dir,
        output_dir=None,
    )
    path = recorded_path(ReplaySettings(recorded=recorded), ctx)
    schema = {"cmp_index": pl.String, "output": pl.String, "choice": pl.String}
    rows = [
        (k, rec.output, rec.choice)
        for (k, rep), rec in load_recorded(path, bench.name, recorded).items()
        if rep == 1
    ]
    score = release_format(bench.name).recorded_mode(recorded) == "score"
    raw = pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        benchmark=pl.lit(bench.name),
        mode=pl.lit("score" if score else "pairwise"),
        shown=pl.col("cmp_index").str.split(";").list.slice(-2, 2),
        option_mode=pl.lit(2),
    )
    if score:
        raw = extract_scores(
            raw, {bench.name: [*score_patterns(bench.name), *score_range(bench.name)]}
        )
    labels = {bench.name: bench.verdict_labels} if bench.verdict_labels else None
    judged = extract_verdicts(
        raw, {bench.name: bench.verdict_pattern_for("pairwise")}, labels
    )
    return judged.select("cmp_index", letter="extracted")


@register
class ReplayJudge(
    PromptFree,
    RecordedTable,
    Expands,
    QualitySource,
    OwnComparisonMode[ReplaySettings],
    SharesWorkers,
    AnswersRows,
    JudgeBackend[ReplaySettings],
):
    """Replays recorded outputs; see the module docstring. Needs no prompt text."""

    name = "replay"
    Settings = ReplaySettings

    def __init__(self, settings: ReplaySettings, context: JudgeContext) -> None:
        super().__init__(settings, context)
        path = recorded_path(settings, context)
        self.recorded = load_recorded(path, context.benchmark, settings.recorded)

    @classmethod
    def comparison_mode(cls, settings: ReplaySettings) -> str | None:
        # a recorded judge that scores each output (as its benchmark says): score-mode judgments
        return recorded_mode(settings.recorded)

    @classmethod
    def identity(cls, settings: ReplaySettings, sampling: Sampling) -> dict[str, Any]:
        # the recorded judge and study are what the answers are; data_dir is a location
        return {
            "backend": cls.name,
            "recorded": settings.recorded,
            "study": settings.study,
        }

    @classmethod
    def preflight(cls, settings: ReplaySettings, context: JudgeContext) -> None:
        recorded_path(settings, context)

    @classmethod
    def recorded_keys(
        cls, settings: ReplaySettings, context: JudgeContext
    ) -> set[RecordKey]:
        """The keys of the outputs recorded for ``settings.recorded`` (the benchmark's
        ``recorded_keys``). Raises ConfigError: see :func:`recorded_path`."""
        path = recorded_path(settings, context)
        return release_format(context.benchmark).recorded_keys(path, settings.recorded)

    @classmethod
    def recorded_table(
        cls, settings: ReplaySettings, context: JudgeContext
    ) -> pl.DataFrame:
        """The outputs recorded for ``settings.recorded``, as the worker loads them
        (:func:`load_recorded`), one row per record key: see
        :meth:`~voirdire.judges.capabilities.RecordedTable.recorded_table` for the columns.
        Raises ConfigError: see :func:`recorded_path`."""
        path = recorded_path(settings, context)
        return recorded_frame(load_recorded(path, context.benchmark, settings.recorded))

    @classmethod
    def worker_options(cls, settings: ReplaySettings) -> dict[str, Any]:
        return {"num_cpus": 0}

    @classmethod
    def expand(
        cls,
        settings: Mapping[str, Any],
        *,
        judge: str,
        benchmark: str,
        data_dir: str | os.PathLike[str],
        spec: Any = None,
    ) -> list[tuple[str, dict[str, Any]]] | None:
        """``recorded = "*"``: one judge per recorded output in the data directory for the
        study and benchmark, in name order, named after it (or the entry's name with ``*``
        replaced by it: ``name = "replay-*"``). Raises ConfigError when none is found."""
        if settings.get("recorded") != ALL_RECORDED:
            return None
        study = str(settings.get("study", "position_bias"))
        root = Path(settings.get("data_dir") or data_dir)
        found = recorded_judges(root, study, benchmark, getattr(spec, "subsets", None))
        if not found:
            raise ConfigError(
                f'judge {judge!r}: recorded = "*" found no recorded outputs in {root / "judgments" / study / benchmark}'
            )
        return [
            (judge.replace("*", rec) if "*" in judge else rec, {"recorded": rec})
            for rec in found
        ]

    @classmethod
    def quality(
        cls,
        arg: str,
        inst: pl.DataFrame,
        *,
        bench: Any,
        judges: Mapping[str, Any],
        data_dir: str,
    ) -> pl.DataFrame:
        """``benchmark.quality = "replay:<recorded judge>"``: the better candidate is the one
        that judge's recorded verdicts (position-bias study) choose in both orders; other
        instances have none (pairwise only).

        Raises:
            ConfigError: a list-wise job, or no recorded outputs of that judge.
        """
        if inst.height and inst["candidates"].list.len().max() != 2:
            raise ConfigError(
                "benchmark.quality = 'replay:...' serves pairwise jobs only"
            )
        df = recorded_letters(arg, bench, data_dir)
        a = df.select(pl.col("cmp_index").alias("k_ab"), pl.col("letter").alias("l_ab"))
        b = df.select(pl.col("cmp_index").alias("k_ba"), pl.col("letter").alias("l_ba"))
        c0, c1 = pl.col("candidates").list.get(0), pl.col("candidates").list.get(1)
        out = (
            inst.with_columns(
                k_ab=pl.col("question_id") + ";" + c0 + ";" + c1,
                k_ba=pl.col("question_id") + ";" + c1 + ";" + c0,
            )
            .join(a, on="k_ab", how="left")
            .join(b, on="k_ba", how="left")
        )
        better = (
            pl.when((pl.col("l_ab") == "A") & (pl.col("l_ba") == "B"))
            .then(c0)
            .when((pl.col("l_ab") == "B") & (pl.col("l_ba") == "A"))
            .then(c1)
            .otherwise(None)
        )
        worst = (
            pl.when(better == c0).then(c1).when(better == c1).then(c0).otherwise(None)
        )
        return out.with_columns(better=better, worst=worst).drop(
            "k_ab", "k_ba", "l_ab", "l_ba"
        )

    async def judge(self, queries: list[Query]) -> list[Result]:
        return self._answer(
            [(q.unit_id, q.question_id, q.shown, q.repetition) for q in queries]
        )

    async def judge_rows(self, rows: Sequence[tuple[Any, ...]]) -> list[Result]:
        """:meth:`judge` of the queries ``Query(*row)`` without building them (the rows the
        scheduler sends, in :class:`~voirdire.judges.base.Query`'s field order; the worker
        uses this where a backend has it)."""
        u, q, s, r = _ROW_AT
        return self._answer([(row[u], row[q], row[s], row[r]) for row in rows])

    def _answer(
        self, asked: list[tuple[str, str, tuple[str, ...], int]]
    ) -> list[Result]:
        """The recorded result of each ``(unit id, question id, shown, repetition)``; a
        query the release lacks is a ``MISSING`` failure."""
        out: list[Result] = []
        t = time.perf_counter()
        recorded = self.recorded
        for unit_id, question_id, shown, repetition in asked:
            rec = recorded.get(record_key(question_id, shown, repetition))
            if rec is None:
                out.append(
                    Result.failed(unit_id, FailureClass.MISSING, "no recorded output")
                )
            else:
                out.append(as_result(unit_id, rec))
        dt = (time.perf_counter() - t) / max(1, len(asked))
        for res in out:
            res.latency_s = dt
        return out


#: where a query row (:class:`~voirdire.judges.base.Query`'s fields in order) holds the
#: unit id, question id, models shown and repetition
_ROW_AT = tuple(
    [f.name for f in fields(Query)].index(k)
    for k in ("unit_id", "question_id", "shown", "repetition")
)
