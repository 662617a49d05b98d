"""Benchmarks by name: ``load_benchmark("mtbench")`` → a loaded, cached :class:`Benchmark`."""

from __future__ import annotations

import functools
import os
import re

from voirdire.benchmarks.base import SAMPLES, Benchmark
from voirdire.benchmarks.data import resolve_data_dir
from voirdire.benchmarks.devbench import DevBench
from voirdire.benchmarks.mtbench import MTBench

from voirdire.core import ConfigError

#: Canonical key (lower case, letters and digits only) → benchmark class.
BENCHMARKS: dict[str, type[Benchmark]] = {"mtbench": MTBench, "devbench": DevBench}


def canonical_name(name: str) -> str:
    """The registry key of a benchmark name: case and ``-``/``_``/space/``.`` ignored.

    ``"MT-Bench"``, ``"mt_bench"``, ``"MTBench"`` → ``"mtbench"``.

    Raises:
        ConfigError: no benchmark of that name (the message lists the known ones).
    """
    key = re.sub(r"[^0-9a-z]", "", str(name).lower())
    if key not in BENCHMARKS:
        known = ", ".join(cls.name for cls in BENCHMARKS.values())
        raise ConfigError(f"unknown benchmark {name!r}; known benchmarks: {known}")
    return key


@functools.lru_cache(maxsize=16)
def _load(key: str, data_dir: str, sample: str) -> Benchmark:
    return BENCHMARKS[key](data_dir=data_dir, sample=sample)


def load_benchmark(
    name: str, data_dir: str | os.PathLike[str] | None = None, sample: str = "full"
) -> Benchmark:
    """A loaded benchmark, cached per (benchmark, resolved data directory, sample).

    Args:
        name: benchmark name, case-insensitive, punctuation ignored (``"mtbench"``,
            ``"MT-Bench"``, ``"DevBench"``...).
        data_dir: data directory of the release's layout; ``None``: resolved by
            :func:`~voirdire.benchmarks.data.resolve_data_dir` (``$VOIRDIRE_DATA``, then
            the default locations).
        sample: ``"full"`` or ``"repetition"`` (the repetition-study subset table).

    Returns:
        The same object for the same (name, directory, sample): treat it as read-only.

    Raises:
        ConfigError: unknown benchmark or sample, no data directory, or a malformed table.
    """
    key = canonical_name(name)
    if sample not in SAMPLES:
        raise ConfigError(f"unknown benchmark sample {sample!r}; known: {', '.join(SAMPLES)}")
    resolved = resolve_data_dir(data_dir)
    return _load(key, str(resolved), sample)


def clear_cache() -> None:
    """Forget every loaded benchmark (tests; a data directory rewritten in place)."""
    _load.cache_clear()
