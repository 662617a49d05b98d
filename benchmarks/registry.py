"""Benchmarks by name: ``load_benchmark("mtbench")`` → a loaded, cached :class:`Benchmark`."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence

from voirdire.benchmarks.base import SAMPLES, Benchmark
from voirdire.benchmarks.data import resolve_data_dir
from voirdire.benchmarks.devbench import DevBench
from voirdire.benchmarks.llmbar import LLMBar
from voirdire.benchmarks.mtbench import MTBench
from voirdire.benchmarks.pairs import OwnPairs, PairsSpec
from voirdire.benchmarks.pandalm import PandaLM
from voirdire.benchmarks.release import LLMBAR, PANDALM, locate

from voirdire.core import ConfigError

#: Canonical key (lower case, letters and digits only) → benchmark class.
BENCHMARKS: dict[str, type[Benchmark]] = {"mtbench": MTBench, "devbench": DevBench, "llmbar": LLMBar, "pandalm": PandaLM}
#: the registry key of a user's own pairs (``[benchmark] name = "pairs"``, read from
#: ``[benchmark.pairs]``, not from the release's data directory)
PAIRS = "pairs"


def canonical_name(name: str) -> str:
    """The registry key of a benchmark name: case and ``-``/``_``/space/``.`` ignored.

    ``"MT-Bench"``, ``"mt_bench"``, ``"MTBench"`` → ``"mtbench"``.

    Raises:
        ConfigError: no benchmark of that name (the message lists the known ones).
    """
    key = re.sub(r"[^0-9a-z]", "", str(name).lower())
    if key not in BENCHMARKS and key != PAIRS:
        known = ", ".join([*(cls.name for cls in BENCHMARKS.values()), PAIRS])
        raise ConfigError(f"unknown benchmark {name!r}; known benchmarks: {known}")
    return key


@functools.lru_cache(maxsize=16)
def _load(key: str, data_dir: str, sample: str, subsets: tuple[str, ...] | None, prompt: str | None) -> Benchmark:
    if key == "llmbar":
        return LLMBar(data_dir=data_dir, sample=sample, subsets=subsets, prompt=prompt)
    if key == "pandalm":
        return PandaLM(data_dir=data_dir, sample=sample, prompt=prompt)
    return BENCHMARKS[key](data_dir=data_dir, sample=sample)


def data_dir_for(name: str, data_dir: str | os.PathLike[str] | None = None) -> os.PathLike[str]:
    """The data directory a benchmark reads: the first release's
    (:func:`~voirdire.benchmarks.data.resolve_data_dir`) for MT-Bench and DevBench, LLMBar's
    (:func:`~voirdire.benchmarks.release.locate`) for LLMBar.

    Raises:
        ConfigError: unknown benchmark, or no data directory.
    """
    key = canonical_name(name)
    if key in ("llmbar", "pandalm"):
        return locate(LLMBAR if key == "llmbar" else PANDALM, data_dir)
    return resolve_data_dir(data_dir)


def load_benchmark(
    name: str, data_dir: str | os.PathLike[str] | None = None, sample: str = "full",
    subsets: Sequence[str] | None = None, prompt: str | None = None, pairs: PairsSpec | None = None,
) -> Benchmark:
    """A loaded benchmark, cached per (benchmark, resolved data directory, sample).

    Args:
        name: benchmark name, case-insensitive, punctuation ignored (``"mtbench"``,
            ``"MT-Bench"``, ``"DevBench"``...).
        data_dir: data directory of the release's layout; ``None``: resolved by
            :func:`~voirdire.benchmarks.data.resolve_data_dir` (``$VOIRDIRE_DATA``, then
            the default locations).
        sample: ``"full"`` or ``"repetition"`` (the repetition-study subset table).
        subsets, prompt: LLMBar's subsets (release folders) and live-judge prompt; other
            benchmarks have neither.
        pairs: for ``name = "pairs"``, the ``[benchmark.pairs]`` settings (a user's own
            pairs, :class:`~voirdire.benchmarks.pairs.OwnPairs`, read afresh each time;
            ``data_dir`` and ``sample`` play no part).

    Returns:
        The same object for the same (name, directory, sample): treat it as read-only.

    Raises:
        ConfigError: unknown benchmark or sample, no data directory, or a malformed table.
    """
    key = canonical_name(name)
    if key == PAIRS:
        if pairs is None:
            raise ConfigError('benchmark "pairs" needs a [benchmark.pairs] table (path or dataset, columns, template)')
        return OwnPairs(pairs)
    if pairs is not None:
        raise ConfigError(f"[benchmark.pairs] belongs to name = \"pairs\", not to benchmark {name!r}")
    if sample not in SAMPLES:
        raise ConfigError(f"unknown benchmark sample {sample!r}; known: {', '.join(SAMPLES)}")
    if (key != "llmbar" and subsets) or (key not in ("llmbar", "pandalm") and prompt):
        raise ConfigError(f"benchmark {BENCHMARKS[key].name} has no {'subsets' if subsets else 'prompt'} choice")
    resolved = data_dir_for(name, data_dir)
    return _load(key, str(resolved), sample, tuple(subsets) if subsets else None, prompt)


def clear_cache() -> None:
    """Forget every loaded benchmark (tests; a data directory rewritten in place)."""
    _load.cache_clear()
