"""The bootstrap clusters a benchmark declares, gathered for the analysis.

Every interval comes from :func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`,
which draws ``question_id``\\ s; a benchmark whose questions are not independent declares
the clusters to draw instead (:meth:`~voirdire.benchmarks.kind.BenchmarkKind.clusters`:
PandaLM's items grouped by their question), and
:func:`~voirdire.analysis.position.uncertainty.in_clusters` puts them in place of the
``question_id``. Every other benchmark declares none: its figures are unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from voirdire.benchmarks.registry import find_benchmark

__all__ = [
    "benchmark_clusters",
    "benchmark_order_units",
    "job_order_units",
    "job_clusters",
]


def benchmark_clusters(
    benchmarks: Sequence[str], data_dirs: Mapping[str, str] | None = None
) -> pl.DataFrame | None:
    """The bootstrap clusters the benchmarks named declare, read from ``data_dirs[name]`` or
    the located data: ``benchmark``, ``question_id``, ``cluster`` (str), or None when every
    question of every one is its own cluster (a name no class has, e.g. own pairs: none).

    Raises:
        ConfigError: a benchmark declares clusters whose data cannot be found.
    """
    parts = []
    for b in sorted(set(benchmarks)):
        cls = find_benchmark(b)
        c = cls.clusters((data_dirs or {}).get(b)) if cls is not None else None
        if c is not None:
            parts.append(
                c.select(pl.lit(b).alias("benchmark"), "question_id", "cluster")
            )
    return pl.concat(parts) if parts else None


def benchmark_order_units(
    benchmarks: Sequence[str], settings: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, str]:
    """The unit each named benchmark's order shown was randomised over: its registered
    class's record under the job's settings
    (:meth:`~voirdire.benchmarks.kind.BenchmarkKind.order_unit_for` of ``settings[name]``,
    the job's ``[benchmark]`` table; absent: the defaults): ``"pair"``, ``"cluster"``,
    ``"none"``; a name no class has (a user's own pairs): ``"pair"``.

    Raises:
        ConfigError: a class declares a unit outside
            :data:`~voirdire.analysis.stats.order_randomisation.ORDER_UNITS`."""
    from voirdire.analysis.stats.order_randomisation import ORDER_UNITS
    from voirdire.core import ConfigError

    out = {}
    for b in sorted(set(benchmarks)):
        cls = find_benchmark(b)
        unit = "pair"
        if cls is not None:
            record = getattr(cls, "order_unit_for", None)
            got = (settings or {}).get(b)
            unit = record(got) if record else getattr(cls, "order_unit", "pair")
        if unit not in ORDER_UNITS:
            raise ConfigError(
                f"benchmark {b}: order_unit {unit!r} is none of {', '.join(ORDER_UNITS)}"
            )
        out[b] = unit
    return out


def job_order_units(judgments: pl.DataFrame, job: Mapping[str, Any]) -> dict[str, str]:
    """:func:`benchmark_order_units` of a directory's judgments (``benchmark`` column), the
    job's benchmark under its ``[benchmark]`` settings (``job.json``: ``benchmark``, and
    ``job.benchmark``), any other under the defaults."""
    names = (
        judgments.get_column("benchmark").unique().to_list() if judgments.height else []
    )
    table = (job.get("job") or {}).get("benchmark")
    mine = job.get("benchmark")
    return benchmark_order_units(
        names, {mine: table} if mine and isinstance(table, Mapping) else None
    )


def job_clusters(
    judgments: pl.DataFrame, job: Mapping[str, Any]
) -> pl.DataFrame | None:
    """:func:`benchmark_clusters` of a directory's judgments (``benchmark`` column), each
    read from the data directory its job record (``job.json``: ``data_dir``) names."""
    names = (
        judgments.get_column("benchmark").unique().to_list() if judgments.height else []
    )
    return benchmark_clusters(
        names, {b: job["data_dir"] for b in names} if job.get("data_dir") else None
    )
