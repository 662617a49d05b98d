"""Benchmarks by name: ``load_benchmark("mtbench")`` → a loaded, cached :class:`Benchmark`.

:data:`BENCHMARKS` is the benchmark kind on the generic registry
(:class:`voirdire.registry.Registry`): a benchmark is one module whose
:class:`~voirdire.benchmarks.base.Benchmark` subclass carries ``@BENCHMARKS.register`` (it
registers under its ``name``); the built-in ones are listed below and imported on first use; a
job file may name a user's own class by an import path, ``name = "mypackage.bench:MyBench"``.
Names are keys with case and ``-``/``_``/space/``.`` ignored (``"MT-Bench"`` → ``"mtbench"``).
See ``docs/contributing.md``, *Add a benchmark*.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from typing import Any

from voirdire.benchmarks.base import SAMPLES, Benchmark
from voirdire.core import ConfigError, did_you_mean
from voirdire.import_paths import describe, is_import_path
from voirdire.registry import Registry

#: the registry key of a user's own pairs (``[benchmark] name = "pairs"``, read from
#: ``[benchmark.pairs]``, not from a release's data directory)
PAIRS = "pairs"


def _key(name: str) -> str:
    """Lower case, letters and digits only; an import path is kept as written."""
    return name if is_import_path(name) else re.sub(r"[^0-9a-z]", "", str(name).lower())


def _check(obj: Any) -> None:
    if not (isinstance(obj, type) and issubclass(obj, Benchmark)):
        raise TypeError(f"{describe(obj)} is not a Benchmark subclass")


#: Benchmark classes by key.
BENCHMARKS: Registry[type[Benchmark]] = Registry(
    "benchmark", check=_check, normalise=_key, entry_points="voirdire.benchmarks"
)
# The built-in benchmarks are the entry points voirdire's own pyproject.toml declares in the
# group "voirdire.benchmarks" (read on first use), as any installed package declares its own:
# the benchmark room names no benchmark.


def benchmark_class(name: str, *, allow_import: bool = True) -> type[Benchmark]:
    """The class of a benchmark name (registered, built-in, or an import path
    ``"package.module:Class"``; with ``allow_import=False``, for a name read from a results
    directory, registered ones only: :meth:`voirdire.registry.Registry.get`).

    Raises:
        ConfigError: no benchmark of that name (the message lists the known ones), a known
            one whose module does not load (its optional dependency missing, a broken
            plugin), or a path that does not name a Benchmark subclass (or, without
            ``allow_import``, is not registered).
    """
    try:
        return BENCHMARKS.get(str(name), allow_import=allow_import)
    except ConfigError as exc:
        if ":" in str(name) or BENCHMARKS.known(str(name)):
            raise
        shown = str(name) if len(str(name)) <= 80 else str(name)[:80] + "..."
        raise ConfigError(
            f"unknown benchmark {shown!r}{did_you_mean(str(name), _known())}; "
            f"known benchmarks: {', '.join(_known())}"
        ) from exc


def _known() -> list[str]:
    found = BENCHMARKS.available()
    return [
        getattr(found.get(k), "name", k) if k != PAIRS else k
        for k in BENCHMARKS.names()
    ]


def canonical_name(name: str) -> str:
    """The registry key of a benchmark name: case and ``-``/``_``/space/``.`` ignored
    (``"MT-Bench"``, ``"mt_bench"``, ``"MTBench"`` → ``"mtbench"``); an import path is its
    own key.

    Raises:
        ConfigError: no benchmark of that name (the message lists the known ones).
    """
    benchmark_class(name)
    return _key(name)


def find_benchmark(name: str) -> type[Benchmark] | None:
    """The class registered under ``name`` (a benchmark's ``name`` as written in units and
    outputs, ``"MTBench"``), or None: not registered in this process (a user's class known
    only in the driver). Imports built-in modules as needed; follows no import path."""
    return BENCHMARKS.find(name) if not is_import_path(name) else None


def recorded_mode(recorded: str, benchmark: str | None = None) -> str | None:
    """The comparison mode a recorded judge's outputs have (``"score"``), or None: asked of
    the benchmark ``benchmark`` when given and known, else of every registered benchmark
    with a release that loads (the first answer wins; :meth:`Registry.available`)."""
    cls = find_benchmark(benchmark) if benchmark else None
    if cls is not None:
        return cls.recorded_mode(recorded)
    for c in BENCHMARKS.available().values():
        if c.release is not None and c.recorded_mode(recorded):
            return c.recorded_mode(recorded)
    return None


@functools.lru_cache(maxsize=16)
def _load(
    cls: type[Benchmark],
    data_dir: str,
    sample: str,
    options: tuple[tuple[str, Any], ...],
) -> Benchmark:
    return cls.load(data_dir, sample, **dict(options))


def data_dir_for(name: str, data_dir: str | os.PathLike[str] | None = None) -> Any:
    """The data directory a benchmark reads (its class's
    :meth:`~voirdire.benchmarks.kind.BenchmarkKind.locate`: its release's, or ``data_dir``
    as given when it reads none).

    Raises:
        ConfigError: unknown benchmark, or no data directory.
    """
    return benchmark_class(name).locate(data_dir)


def _options(
    cls: type[Benchmark],
    name: str,
    subsets: Sequence[str] | None,
    prompt: str | None,
    pairs: Any,
    logs: Sequence[str] | None = None,
    log: Any = None,
) -> dict[str, Any]:
    """The options the job set, checked against the class's :attr:`options`."""
    given = {
        "subsets": tuple(subsets) if subsets else None,
        "prompt": prompt,
        "pairs": pairs,
        "logs": list(logs) if logs else None,
        "log": log,
    }
    given = {k: v for k, v in given.items() if v is not None}
    if "pairs" in cls.options and "pairs" not in given:
        raise ConfigError(
            f'benchmark "{name}" needs a [benchmark.pairs] table (path or dataset, columns, template)'
        )
    if "pairs" in given and "pairs" not in cls.options:
        raise ConfigError(
            f'[benchmark.pairs] belongs to name = "pairs", not to benchmark {name!r}'
        )
    extra = [k for k in given if k not in cls.options]
    if extra:
        have = [
            c.name
            for c in BENCHMARKS.available().values()
            if set(extra) <= set(c.options)
        ]
        raise ConfigError(
            f"benchmark {cls.name} has no {' or '.join(extra)} choice"
            + (f" ({', '.join(have)} has)" if have else "")
        )
    return given


def load_benchmark(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    sample: str = "full",
    subsets: Sequence[str] | None = None,
    prompt: str | None = None,
    pairs: Any = None,
    logs: Sequence[str] | None = None,
    log: Any = None,
    *,
    allow_import: bool = True,
) -> Benchmark:
    """A loaded benchmark, cached per (benchmark, resolved data directory, sample, options).

    Args:
        name: benchmark name, case-insensitive, punctuation ignored (``"mtbench"``,
            ``"MT-Bench"``, ``"DevBench"``...), or an import path ``"package.module:Class"``.
        data_dir: the job's data directory; ``None``: the class finds its release's
            (:meth:`~voirdire.benchmarks.kind.BenchmarkKind.locate`).
        sample: ``"full"`` or ``"repetition"`` (the repetition-study subset table).
        subsets, prompt, pairs: options only some benchmarks take (their class's
            ``options``): a release's subsets and live-judge prompt; for ``name = "pairs"``
            the ``[benchmark.pairs]`` settings (:class:`~voirdire.benchmarks.own_pairs.benchmark.PairsSpec`).
        allow_import: False for a name read from a results directory: registered
            benchmarks only, no import path followed (:func:`benchmark_class`).

    Returns:
        The same object for the same arguments when the benchmark reads a release: treat it
        as read-only. A benchmark that reads no release (a user's own pairs) is read afresh.

    Raises:
        ConfigError: unknown benchmark or sample, an option the benchmark does not take, no
            data directory, or a malformed table.
    """
    cls = benchmark_class(name, allow_import=allow_import)
    given = _options(cls, name, subsets, prompt, pairs, logs, log)
    if "pairs" in given:
        return cls.load(None, sample, **given)
    if sample not in SAMPLES:
        raise ConfigError(
            f"unknown benchmark sample {sample!r}; known: {', '.join(SAMPLES)}"
        )
    resolved = cls.locate(data_dir)
    if cls.release is None:
        return cls.load(resolved, sample, **given)
    return _load(cls, str(resolved), sample, tuple(sorted(given.items())))


def clear_cache() -> None:
    """Forget every loaded benchmark (tests; a data directory rewritten in place)."""
    _load.cache_clear()


__all__ = [
    "BENCHMARKS",
    "PAIRS",
    "benchmark_class",
    "canonical_name",
    "clear_cache",
    "data_dir_for",
    "find_benchmark",
    "load_benchmark",
    "recorded_mode",
]
