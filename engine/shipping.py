"""What a submitted job needs besides its job file: the benchmark's data.

A release benchmark reads a release's data directory (its class's ``release``; MT-Bench and
DevBench the first release's): :func:`release_for` names it, and the submission hands its
location over or has the cluster fetch it. A user's own pairs (``[benchmark.pairs]``) and a
``labels:<file.csv>`` quality source name files by paths relative to the working directory:
:func:`job_inputs` lists them and :func:`stage_inputs` copies them into the staged working
directory so that the same relative paths resolve on the head node.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from voirdire.benchmarks.pair_prompts import is_builtin
from voirdire.benchmarks.registry import benchmark_class
from voirdire.benchmarks.release import Release

from voirdire.core import ConfigError

#: the folder name repeated to seat the job's working directory below the staged root when
#: its inputs are named by paths that climb out of it (``../data/pairs.jsonl``)
SEAT = "_"


def release_for(job: Any) -> Release | None:
    """The release whose data directory the job's benchmark reads (its class's ``release``:
    the first release's for MT-Bench and DevBench), or None: a benchmark that reads no
    release (a user's own pairs).

    Raises:
        ConfigError: an unknown benchmark name.
    """
    return benchmark_class(job.benchmark.name).release


def job_inputs(job: Any) -> list[str]:
    """The relative paths of files (or dataset directories) the job reads besides the
    release: ``[benchmark.pairs]`` ``path`` and a ``template`` file (not a built-in name),
    and a ``labels:<file.csv>`` quality source, in that order. Absolute paths are left out
    (they must be readable on the head node, like an absolute ``output_dir``); a Hugging
    Face dataset by name is fetched there."""
    out = []
    pairs = job.benchmark.pairs
    if pairs is not None:
        if pairs.path:
            out.append(pairs.path)
        if not is_builtin(pairs.template):
            out.append(pairs.template)
    quality = job.benchmark.quality or ""
    if quality.startswith("labels:"):
        out.append(quality.split(":", 1)[1])
    return [p for p in out if not os.path.isabs(p)]


def _climb(path: str) -> int:
    """How many leading ``..`` a relative path has once normalised."""
    parts = Path(os.path.normpath(path)).parts
    return next((i for i, part in enumerate(parts) if part != ".."), len(parts))


def stage_inputs(paths: list[str], work: Path, base: Path | None = None) -> str:
    """Copy each of ``paths`` (relative to ``base``, default the working directory) into
    ``work`` so that it resolves by the same relative path from the returned directory
    (relative to ``work``: ``"."``, or ``"_/_"`` when a path climbs two levels with ``..``).

    Raises:
        ConfigError: a path that does not exist here (naming it).
    """
    base = Path(base or Path.cwd())
    depth = max((_climb(p) for p in paths), default=0)
    seat = "/".join([SEAT] * depth) or "."
    (work / seat).mkdir(parents=True, exist_ok=True)
    for p in paths:
        src = base / p
        if not src.exists():
            raise ConfigError(f"the job reads {p!r}, which does not exist here ({src}); relative paths are from the working directory")
        dest = Path(os.path.normpath(work / seat / p))
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest)
    return seat


__all__ = ["SEAT", "job_inputs", "release_for", "stage_inputs"]
