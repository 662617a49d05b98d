"""Quality sources: which candidate of an instance is truly better.

Perturbation targets ``better``/``worse`` and the accuracy of ``fallacy``/``cot`` need to
know it. ``[benchmark] quality`` names the source (``docs/biases.md``):

- ``"<backend>:<argument>"``: a judge backend that is a quality source
  (:meth:`voirdire.judges.capabilities.QualitySource.quality`): ``"simulated:<judge>"``, the latent
  quality of that simulated judge of the job, so tests know the truth exactly;
  ``"replay:<recorded judge>"``, the release's recorded verdicts of that judge (position-
  bias study) where both orders agree on one model; other instances have no known better
  candidate (pairwise only);
- ``"labels:<file.csv>"``: a CSV with columns ``instance_id`` and ``better`` (a model of
  the instance; relative paths against the working directory).

Instances whose better candidate is unknown get no unit of a variant whose target rule is
``better``/``worse``; their ``better`` column is null everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from voirdire.benchmarks.base import Benchmark
from voirdire.bounds import check_text_table
from voirdire.core import ConfigError
from voirdire.judges.base import JudgeBackend, get_backend
from voirdire.judges.capabilities import QualitySource

_FORMS = "use <backend>:<argument> with a judge backend that is a quality source, or labels:<file.csv> (docs/biases.md)"


def _source_backend(form: str, source: str) -> type[QualitySource]:
    """The backend a source ``<backend>:<argument>`` names. Raises ConfigError: an unknown
    backend, or one that is no quality source (:class:`~voirdire.judges.capabilities.QualitySource`)."""
    try:
        backend: type[JudgeBackend[Any]] = get_backend(form)
    except ConfigError:
        raise ConfigError(f"benchmark.quality = {source!r}: {_FORMS}") from None
    if not issubclass(backend, QualitySource):
        raise ConfigError(f"judge backend {backend.name!r} is no quality source")
    return backend


def quality_identity(source: str | None, judges: dict[str, Any]) -> str | None:
    """What the quality source is, for ids: the source string, or what its backend says
    instead (:meth:`~voirdire.judges.capabilities.QualitySource.quality_identity`: a simulated
    judge's identity hash in place of its label)."""
    if not source or ":" not in source or source.startswith("labels:"):
        return source
    form, _, arg = source.partition(":")
    try:
        backend = get_backend(form)
    except ConfigError:
        return source  # with_quality says what is wrong
    if not issubclass(backend, QualitySource):
        return source  # with_quality says what is wrong
    return backend.quality_identity(arg, judges) or source


def with_quality(
    inst: pl.DataFrame,
    source: str | None,
    *,
    bench: Benchmark,
    judges: dict[str, Any],
    data_dir: str,
) -> pl.DataFrame:
    """``inst`` with columns ``better`` and ``worst`` (str, null where unknown or without a
    source): the truly best and worst candidate of each instance.

    Args:
        judges: the job's resolved judges by label (``simulated:<judge>`` looks there).

    Raises:
        ConfigError: an unknown source form, a backend that is no quality source, an
            argument it does not know (not a simulated judge of the job, no recorded
            outputs), a missing labels file, a label naming a model outside its instance.
    """
    if not source:
        return inst.with_columns(
            pl.lit(None, pl.String).alias("better"),
            pl.lit(None, pl.String).alias("worst"),
        )
    form, _, arg = source.partition(":")
    if form == "labels":
        return _labels(inst, Path(arg))
    return _source_backend(form, source).quality(
        arg, inst, bench=bench, judges=judges, data_dir=data_dir
    )


def _labels(inst: pl.DataFrame, path: Path) -> pl.DataFrame:
    """``labels:<file.csv>``: columns ``instance_id`` and ``better``; pairwise only."""
    if not path.is_file():
        raise ConfigError(f"benchmark.quality: labels file not found: {path}")
    check_text_table(path, f"benchmark.quality: {path}")  # bounded before polars
    labels = pl.read_csv(
        path, schema_overrides={"instance_id": pl.String, "better": pl.String}
    )
    missing = {"instance_id", "better"} - set(labels.columns)
    if missing:
        raise ConfigError(
            f"benchmark.quality: {path} lacks column(s) {', '.join(sorted(missing))}"
        )
    out = inst.join(
        labels.select("instance_id", "better"), on="instance_id", how="left"
    )
    bad = out.filter(
        pl.col("better").is_not_null()
        & ~pl.col("candidates").list.contains(pl.col("better"))
    )
    if bad.height:
        raise ConfigError(
            f"benchmark.quality: {path}: better {bad['better'][0]!r} is not a candidate of {bad['instance_id'][0]!r}"
        )
    if out.height and out["candidates"].list.len().max() != 2:
        raise ConfigError(
            "benchmark.quality = 'labels:...' gives the best candidate of a pair; list-wise jobs need a "
            "quality source that ranks every candidate ('<backend>:<argument>')"
        )
    worst = (
        pl.when(pl.col("better") == pl.col("candidates").list.get(0))
        .then(pl.col("candidates").list.get(1))
        .when(pl.col("better").is_not_null())
        .then(pl.col("candidates").list.get(0))
        .otherwise(None)
    )
    return out.with_columns(worst=worst)
