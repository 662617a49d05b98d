"""Getting the data: download a public release, verify it, convert it once.

Each release is a small :class:`Release` record (repository, pinned commit, package
manifest, where its data goes, its converter), brought by the benchmark that reads it (its
``release`` attribute, :mod:`voirdire.benchmarks.registry`); :func:`get_release` finds a
release by name among the registered benchmarks'. The first one is defined here:

- ``judging-the-judges``: Shi et al. (2024), "Judging the Judges: A Systematic Study of
  Position Bias in LLM-as-a-Judge", GitHub ``Slimshilin/Position-Bias-Analyzer`` (MIT,
  copyright 2024 Slimshilin); converter :mod:`voirdire.benchmarks.releases.jtj`; read by
  MT-Bench and DevBench.

:func:`fetch_release` downloads, file by file from the raw-content URLs of the pinned commit
(or a mirror serving the same paths, or a local copy), only the files voirdire reads (the
release's package manifest lists them with their git blob ids), verifies every file against
its blob id (a download is cut off past the size the manifest gives, plus a margin; a
manifest path that would leave the temporary directory is refused before anything is
written: :mod:`voirdire.benchmarks.releases.mirror`), and converts them into the layout the readers use. Everything happens in a
temporary directory beside the destination, renamed into place only when all of it
succeeded: a corrupted or truncated download leaves no half-written data directory.

A partial mirror: the outputs of a judge (first release: a judge in one study and benchmark;
another release: what its converter calls a judge) that the mirror has in no form are skipped
and named in :attr:`FetchReport.skipped` (and ``RELEASE.json``); ``strict=True`` makes any
skip an error. The benchmark tables themselves are always required.

The pieces: :mod:`~voirdire.benchmarks.releases.fetch` (the :class:`Release` record, the first
release, the fetch itself, finding a data directory and fetching when none is found), :mod:`~voirdire.benchmarks.releases.steps` (the steps
every fetch shares) and :mod:`~voirdire.benchmarks.releases.logs` (public judgment logs fetched
unchanged for ``voirdire audit``). This module re-exports them and resolves names.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from voirdire.benchmarks.releases import fetch as release_fetch
from voirdire.benchmarks.releases.fetch import (
    JTJ,
    FetchReport,
    Release,
)
from voirdire.benchmarks.releases.logs import LOG_RELEASES
from voirdire.core import ConfigError


def releases() -> dict[str, Release]:
    """The releases by name: those the registered benchmarks read (their ``release``
    attribute), in the benchmarks' order (imports every built-in benchmark module), then
    the public judgment logs (:data:`voirdire.benchmarks.releases.logs.LOG_RELEASES`). A
    benchmark that does not load (a broken plugin) is left out."""
    from voirdire.benchmarks.registry import BENCHMARKS

    out: dict[str, Release] = {}
    for cls in BENCHMARKS.available().values():
        rel = getattr(cls, "release", None)
        if rel is not None:
            out.setdefault(rel.name, rel)
    for name, rel in LOG_RELEASES.items():
        out.setdefault(name, rel)
    return out


def get_release(name: str | Release) -> Release:
    """The :class:`Release` of a name (:func:`releases`; a public log source's without loading
    the benchmarks). Raises ConfigError naming the known ones."""
    if isinstance(name, Release):
        return name
    if name in LOG_RELEASES:
        return LOG_RELEASES[name]
    known = releases()
    if name not in known:
        raise ConfigError(
            f"unknown release {name!r}; known releases: {', '.join(known)}"
        )
    return known[name]


def fetch_release(
    dest: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    *,
    release: str | Release = JTJ,
    **kwargs: Any,
) -> FetchReport:
    """Download, verify and convert a release (a :class:`Release` or its name, default the
    first release) into ``dest``: :func:`voirdire.benchmarks.releases.fetch.fetch_release`,
    whose keyword arguments (``source``, ``prefer``, ``manifest``, ``sizes``, ``strict``,
    ``progress``, ``log``, ``deadline``) and errors it takes.

    Raises:
        ConfigError: an unknown release (the known ones named), or as there.
        DataError: as there.
    """
    return release_fetch.fetch_release(
        dest, base_url, release=get_release(release), **kwargs
    )


def data_dir_of(
    release: str | Release, explicit: str | os.PathLike[str] | None = None
) -> Path:
    """The data directory of a release (or its name):
    :func:`voirdire.benchmarks.releases.fetch.data_dir_of`."""
    return release_fetch.data_dir_of(get_release(release), explicit)


def locate(
    release: str | Release, explicit: str | os.PathLike[str] | None = None
) -> Path:
    """The data directory of a release other than the first (or its name):
    :func:`voirdire.benchmarks.releases.fetch.locate`."""
    return release_fetch.locate(get_release(release), explicit)


def locate_or_fetch(
    try_dir: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    *,
    release: str | Release = JTJ,
    **kwargs: Any,
) -> Path:
    """The data directory to use, fetching the release (or its name) when none is found:
    :func:`voirdire.benchmarks.releases.fetch.locate_or_fetch` (keyword arguments ``fetch``,
    ``prefer``, ``progress``, ``log``, ``manifest``, ``deadline``)."""
    return release_fetch.locate_or_fetch(
        try_dir, base_url, release=get_release(release), **kwargs
    )


__all__ = [ "data_dir_of", "fetch_release", "get_release", "locate", "locate_or_fetch", "releases",
]  # fmt: skip
