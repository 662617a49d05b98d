"""The replay judge: answers a query with a judge's recorded output from the release.

The public release of Shi et al. (2024), "Judging the Judges", ships the raw outputs of nine
commercial judges (``judgments/<study>/<Benchmark>/<judge>.jsonl.gz``, one JSON object a
line: ``cmp_index`` = ``"<question id>;<model shown first>;<model shown second>"``,
``judgment`` = the full text or null, and ``repetition`` 1-3 in the repetition study).
Replaying them runs the whole pipeline on real input with no API key and no GPU. A query
the release lacks is recorded as a failure with the reason "no recorded output"; a
recorded null (the original call failed) as "the recorded call failed".

LLMBar (Zeng et al., 2024; :mod:`voirdire.benchmarks.llmbar`) ships the outputs of six
evaluators under up to fifteen prompting strategies (``outputs.parquet`` of the converted
release); ``recorded = "GPT-4/Vanilla"`` replays one evaluator/strategy (``"*"``: one judge
per pair found in the job's subsets). ``swap = False`` answers permutation 0 (the outputs as
the dataset lists them) and ``swap = True`` permutation 1. A comparison strategy's
completion is the output, and its verdict letter is read here by the rule LLMEvaluator's
config used for that strategy (:func:`voirdire.benchmarks.llmbar.verdict_rules`), so the
benchmark's own pattern is not applied again (a completion in which the release read no
verdict has ``choice = ""``, a failed judgment). A rating strategy (``Rating*``: each output
scored alone, 0-9) is a score-mode judge: its two recorded ratings are replayed as one
output, ``Score of Output (a): <rating>`` and ``Score of Output (b): <rating>`` in slot
order, read by the score-mode extraction into ``slot_scores``.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import polars as pl
from voirdire.benchmarks.base import score_patterns, score_range
from voirdire.benchmarks.llmbar import CANDIDATE, DEFAULT_SUBSETS, REFERENCE, read_verdict, verdict_rules
from voirdire.judges.base import JudgeBackend, JudgeContext, JudgeSettings, Query, Result, Sampling, register
from voirdire.judges.capabilities import Expands, OwnComparisonMode, PromptFree, QualitySource, Recording
from voirdire.judges.extract import extract_scores, extract_verdicts

from voirdire.core import ConfigError, FailureClass


#: ``recorded = "*"`` of a replay judge: one judge per recorded output found
ALL_RECORDED = "*"


class ReplaySettings(JudgeSettings):
    """``recorded``: the release's judge whose outputs are replayed (file stem; ``"*"`` in a job
    file expands to one judge per recorded output, see :meth:`ReplayJudge.expand`);
    ``study``: ``position_bias`` or ``repetition``; ``data_dir``: overrides the job's."""

    recorded: str
    study: Literal["position_bias", "repetition"] = "position_bias"
    data_dir: str | None = None


#: the benchmark whose outputs are read from the LLMBar release
LLMBAR = "LLMBar"


def is_rating(recorded: str) -> bool:
    """Whether an LLMBar ``evaluator/strategy`` is a rating strategy (each output scored
    alone: a score-mode judge)."""
    return "/" in recorded and recorded.split("/", 1)[1].startswith("Rating")


def load_llmbar(path: Path, recorded: str) -> dict[tuple[str, tuple[str, ...]], Result]:
    """``(question id, shown) -> Result`` (``unit_id`` empty) of one LLMBar evaluator/strategy
    (see the module docstring). Raises ConfigError: nothing recorded for it."""
    evaluator, _, strategy = recorded.partition("/")
    df = pl.read_parquet(path).filter((pl.col("evaluator") == evaluator) & (pl.col("strategy") == strategy))
    if df.height == 0:
        raise ConfigError(f"no recorded outputs of {recorded!r} in {path} (recorded names are evaluator/strategy)")
    out = {}
    rating = is_rating(recorded)
    for r in df.iter_rows(named=True):
        qid = f"{r['subset']}/{r['item']}"
        shown = (CANDIDATE, REFERENCE) if r["order"] == 0 else (REFERENCE, CANDIDATE)
        if rating:
            a, b = (r["score_1"], r["score_2"]) if r["order"] == 0 else (r["score_2"], r["score_1"])
            text = f"Score of Output (a): {(a or '').strip()}\nScore of Output (b): {(b or '').strip()}"
            out[(qid, shown)] = Result(unit_id="", output=text, verdict_mode="replay")
        elif r["completion"] is None:
            out[(qid, shown)] = Result.failed("", FailureClass.MISSING, "the recorded call failed (no completion)")
        else:
            letter = read_verdict(r["completion"], verdict_rules(evaluator, strategy, r["stage"]))
            out[(qid, shown)] = Result(unit_id="", output=r["completion"], choice=letter or "", verdict_mode="replay")
    return out


def recorded_path(settings: ReplaySettings, context: JudgeContext) -> Path:
    """Path of the recorded outputs file for a judge and benchmark.

    Raises:
        ConfigError: no data directory, or the file does not exist (lists what exists).
    """
    root = settings.data_dir or context.data_dir
    if not root:
        raise ConfigError(f"judge {context.judge!r}: replay needs a data directory")
    if context.benchmark == LLMBAR:
        have = recorded_judges(root, settings.study, LLMBAR, [])
        if settings.recorded not in have:
            raise ConfigError(
                f"judge {context.judge!r}: no recorded outputs of {settings.recorded!r} in {root}"
                + (f"; recorded there (evaluator/strategy): {', '.join(have)}" if have else "")
            )
        return Path(root) / "outputs.parquet"
    d = Path(root) / "judgments" / settings.study / context.benchmark
    path = d / f"{settings.recorded}.jsonl.gz"
    if not path.is_file():
        have = sorted(p.name.removesuffix(".jsonl.gz") for p in d.glob("*.jsonl.gz")) if d.is_dir() else []
        raise ConfigError(
            f"judge {context.judge!r}: no recorded outputs for {settings.recorded!r} in {d}"
            + (f"; recorded judges there: {', '.join(have)}" if have else "")
        )
    return path


def recorded_judges(data_dir: str | Path, study: str, benchmark: str, subsets: Sequence[str] | None = None) -> list[str]:
    """The judges with recorded outputs in ``data_dir`` for a study and benchmark (release
    name, e.g. ``MTBench``): the stems of ``judgments/<study>/<benchmark>/*.jsonl.gz``,
    sorted; for LLMBar every ``evaluator/strategy`` with outputs on one of ``subsets``
    (default: the benchmark's default subsets; ``[]``: all). Empty when there are none."""
    if benchmark == LLMBAR:
        path = Path(data_dir) / "outputs.parquet"
        if not path.is_file():
            return []
        lf = pl.scan_parquet(path)
        subsets = DEFAULT_SUBSETS if subsets is None else subsets
        if subsets:
            lf = lf.filter(pl.col("subset").is_in(list(subsets)))
        got = lf.select((pl.col("evaluator") + "/" + pl.col("strategy")).alias("j")).unique().collect()
        return sorted(got["j"].to_list())
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


def recorded_letters(recorded: str, bench: Any, data_dir: str) -> pl.DataFrame:
    """The verdict letter of every recorded pairwise output (position-bias study, first
    repetition) of a release judge, read as its judgments are read
    (:func:`~voirdire.judges.extract.extract_verdicts` with the benchmark's pattern and
    labels; LLMBar: the release's own rules, a rating strategy's scores by
    :func:`~voirdire.judges.extract.extract_scores`).

    Returns:
        Columns ``cmp_index`` (str, ``"<question id>;<first>;<second>"``) and ``letter``
        (str, null where no verdict was read).

    Raises:
        ConfigError: no recorded outputs of that judge.
    """
    ctx = JudgeContext(judge=f"quality source replay:{recorded}", benchmark=bench.name, data_dir=data_dir, output_dir=None)
    path = recorded_path(ReplaySettings(recorded=recorded), ctx)
    schema = {"cmp_index": pl.String, "output": pl.String, "choice": pl.String}
    if bench.name == LLMBAR:
        got = load_llmbar(path, recorded)
        rows = [(";".join((q, *shown)), r.output, r.choice) for (q, shown), r in got.items()]
    else:
        rows = [(k, text, None) for (k, rep), text in load_recorded(path).items() if rep == 1]
    raw = pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        benchmark=pl.lit(bench.name), mode=pl.lit("score" if is_rating(recorded) else "pairwise"),
        shown=pl.col("cmp_index").str.split(";").list.slice(-2, 2), option_mode=pl.lit(2),
    )
    if is_rating(recorded):
        raw = extract_scores(raw, {bench.name: [*score_patterns(bench.name), *score_range(bench.name)]})
    labels = {bench.name: bench.verdict_labels} if bench.verdict_labels else None
    judged = extract_verdicts(raw, {bench.name: bench.verdict_pattern_for("pairwise")}, labels)
    return judged.select("cmp_index", letter="extracted")


@register
class ReplayJudge(PromptFree, Recording, Expands, QualitySource, OwnComparisonMode[ReplaySettings],
                  JudgeBackend[ReplaySettings]):
    """Replays recorded outputs; see the module docstring. Needs no prompt text."""

    name = "replay"
    Settings = ReplaySettings

    def __init__(self, settings: ReplaySettings, context: JudgeContext) -> None:
        super().__init__(settings, context)
        path = recorded_path(settings, context)
        self.llmbar = load_llmbar(path, settings.recorded) if context.benchmark == LLMBAR else None
        self.recorded = load_recorded(path) if self.llmbar is None else {}

    @classmethod
    def comparison_mode(cls, settings: ReplaySettings) -> str | None:
        # an LLMBar rating strategy scores each output: its judgments are score-mode
        return "score" if is_rating(settings.recorded) else None

    @classmethod
    def identity(cls, settings: ReplaySettings, sampling: Sampling) -> dict[str, Any]:
        # the recorded judge and study are what the answers are; data_dir is a location
        return {"backend": cls.name, "recorded": settings.recorded, "study": settings.study}

    @classmethod
    def preflight(cls, settings: ReplaySettings, context: JudgeContext) -> None:
        recorded_path(settings, context)

    @classmethod
    def worker_options(cls, settings: ReplaySettings) -> dict[str, Any]:
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
        found = recorded_judges(root, study, benchmark, getattr(spec, "subsets", None))
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
        df = recorded_letters(arg, bench, data_dir)
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
            if self.llmbar is not None:
                got = self.llmbar.get((q.question_id, tuple(q.shown))) if q.repetition == 1 else None
                if got is None:
                    out.append(Result.failed(q.unit_id, FailureClass.MISSING, "no recorded output"))
                else:
                    out.append(dataclasses.replace(got, unit_id=q.unit_id))
                continue
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
