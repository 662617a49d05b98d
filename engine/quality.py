"""Quality sources: which candidate of an instance is truly better.

Perturbation targets ``better``/``worse`` and the accuracy of ``fallacy``/``cot`` need to
know it. ``[benchmark] quality`` names the source (``docs/biases.md``):

- ``"simulated:<judge>"``: the latent quality of that simulated judge of the job (its
  ``qualities``, ``seed`` and ``question_noise``: the per-question quality the judge itself
  decides by), so tests know the truth exactly;
- ``"replay:<recorded judge>"``: the release's recorded verdicts of that judge (position-
  bias study) where both orders agree on one model; other instances have no known better
  candidate (pairwise only);
- ``"labels:<file.csv>"``: a CSV with columns ``instance_id`` and ``better`` (a model of
  the instance; relative paths against the working directory).

Instances whose better candidate is unknown get no unit of a variant whose target rule is
``better``/``worse``; their ``better`` column is null everywhere.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import polars as pl
from voirdire.benchmarks.base import Benchmark
from voirdire.judges.base import JudgeContext
from voirdire.judges.replay import ReplaySettings, load_recorded, recorded_path
from voirdire.judges.simulated import SimulatedSettings, latent_quality

from voirdire.core import ConfigError, stable_int


def quality_identity(source: str | None, judges: dict[str, Any]) -> str | None:
    """What the quality source is, for ids: the source string, with a simulated judge's
    identity hash in place of its label."""
    if source and source.startswith("simulated:"):
        rj = judges.get(source.split(":", 1)[1])
        return f"simulated:{rj.identity_hash}" if rj is not None else source
    return source


def _simulated_better(s: SimulatedSettings, question_id: str, candidates: list[str]) -> tuple[str, str]:
    qn = random.Random(stable_int("question", str(s.seed), question_id))
    noise = {m: qn.gauss(0.0, s.question_noise) for m in sorted(candidates)}
    q = {m: latent_quality(m, s.qualities, s.seed) + noise[m] for m in candidates}
    order = sorted(candidates, key=lambda m: -q[m])
    return order[0], order[-1]


def _replay_better(bench: Benchmark, recorded: str, data_dir: str, inst: pl.DataFrame) -> pl.DataFrame:
    ctx = JudgeContext(judge=f"quality source replay:{recorded}", benchmark=bench.name, data_dir=data_dir, output_dir=None)
    rec = load_recorded(recorded_path(ReplaySettings(recorded=recorded), ctx))
    df = pl.DataFrame(
        {"cmp_index": [k[0] for k in rec if k[1] == 1], "text": [v for k, v in rec.items() if k[1] == 1]},
        schema={"cmp_index": pl.String, "text": pl.String},
    ).with_columns(letter=pl.col("text").str.extract(bench.verdict_pattern, 1))
    a = df.select(pl.col("cmp_index").alias("k_ab"), pl.col("letter").alias("l_ab"))
    b = df.select(pl.col("cmp_index").alias("k_ba"), pl.col("letter").alias("l_ba"))
    out = inst.with_columns(
        k_ab=pl.col("question_id") + ";" + pl.col("candidates").list.get(0) + ";" + pl.col("candidates").list.get(1),
        k_ba=pl.col("question_id") + ";" + pl.col("candidates").list.get(1) + ";" + pl.col("candidates").list.get(0),
    ).join(a, on="k_ab", how="left").join(b, on="k_ba", how="left")
    c0, c1 = pl.col("candidates").list.get(0), pl.col("candidates").list.get(1)
    better = (
        pl.when((pl.col("l_ab") == "A") & (pl.col("l_ba") == "B")).then(c0)
        .when((pl.col("l_ab") == "B") & (pl.col("l_ba") == "A")).then(c1)
        .otherwise(None)
    )
    worst = pl.when(better == c0).then(c1).when(better == c1).then(c0).otherwise(None)
    return out.with_columns(better=better, worst=worst).drop("k_ab", "k_ba", "l_ab", "l_ba")


def with_quality(inst: pl.DataFrame, source: str | None, *, bench: Benchmark, judges: dict[str, Any],
                 data_dir: str) -> pl.DataFrame:
    """``inst`` with columns ``better`` and ``worst`` (str, null where unknown or without a
    source): the truly best and worst candidate of each instance.

    Args:
        judges: the job's resolved judges by label (``simulated:<judge>`` looks there).

    Raises:
        ConfigError: an unknown source form, a judge that is not a simulated judge of the
            job, a missing recorded file or labels file, a label naming a model outside
            its instance.
    """
    if not source:
        return inst.with_columns(pl.lit(None, pl.String).alias("better"), pl.lit(None, pl.String).alias("worst"))
    form, _, arg = source.partition(":")
    if form == "simulated":
        rj = judges.get(arg)
        if rj is None or rj.backend.name != "simulated":
            raise ConfigError(f"benchmark.quality = {source!r}: {arg!r} is not a simulated judge of this job")
        pairs = [_simulated_better(rj.settings, q, c) for q, c in zip(inst["question_id"], inst["candidates"].to_list())]
        return inst.with_columns(pl.Series("better", [p[0] for p in pairs], pl.String),
                                 pl.Series("worst", [p[1] for p in pairs], pl.String))
    if form == "replay":
        if inst.height and inst["candidates"].list.len().max() != 2:
            raise ConfigError("benchmark.quality = 'replay:...' serves pairwise jobs only")
        return _replay_better(bench, arg, data_dir, inst)
    if form == "labels":
        path = Path(arg)
        if not path.is_file():
            raise ConfigError(f"benchmark.quality: labels file not found: {path}")
        labels = pl.read_csv(path, schema_overrides={"instance_id": pl.String, "better": pl.String})
        missing = {"instance_id", "better"} - set(labels.columns)
        if missing:
            raise ConfigError(f"benchmark.quality: {path} lacks column(s) {', '.join(sorted(missing))}")
        out = inst.join(labels.select("instance_id", "better"), on="instance_id", how="left")
        bad = out.filter(pl.col("better").is_not_null() & ~pl.col("candidates").list.contains(pl.col("better")))
        if bad.height:
            raise ConfigError(f"benchmark.quality: {path}: better {bad['better'][0]!r} is not a candidate of {bad['instance_id'][0]!r}")
        if out.height and out["candidates"].list.len().max() != 2:
            raise ConfigError("benchmark.quality = 'labels:...' gives the best candidate; list-wise jobs need simulated:")
        worst = pl.when(pl.col("better") == pl.col("candidates").list.get(0)).then(pl.col("candidates").list.get(1)) \
            .when(pl.col("better").is_not_null()).then(pl.col("candidates").list.get(0)).otherwise(None)
        return out.with_columns(worst=worst)
    raise ConfigError(f"benchmark.quality = {source!r}: use simulated:<judge>, replay:<recorded judge> or labels:<file.csv>")

