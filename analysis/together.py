"""Several finished output directories read together: the one door through which
``report``, ``mitigate``, ``rank`` and ``people`` take their inputs.

Each command names the directories and what it needs of each (outputs of
:data:`voirdire.analysis.stages.ANALYSIS_STAGES`: ``rank`` the judgments, the jobs and the
bootstrap's clusters, ``mitigate`` the judgments only); the door checks that no directory
is given twice (:func:`voirdire.ownership.distinct_dirs`), runs only the stages those
outputs need on each directory (:func:`~voirdire.analysis.stages.analyse_dirs`: the inputs
are read, never written) and hands over what is read together: the judgments of all of
them, their clusters, and for style-controlled leaderboards the answers' features from each
job's benchmark. :func:`destination` is where a command writes when no ``--out`` is given
(a folder next to the first directory named after the inputs: :func:`default_out`), claimed
by the ownership rules before anything is written.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl

from voirdire.analysis.settings import DEFAULTS, AnalysisSettings
from voirdire.analysis.stages import DirAnalysis, analyse_dirs
from voirdire.core import ConfigError
from voirdire.engine.judge_names import check_reserved
from voirdire.ownership import claim_output_dir, claim_report_dir, distinct_dirs

__all__ = ["Together", "read_together", "default_out", "destination", "report_dirs"]

#: the longest input-name part of a default output folder's name (longer: the first name,
#: the count of the others and a hash of all)
MAX_DEFAULT_NAME = 60


@dataclass(frozen=True)
class Together:
    """Finished directories read together.

    Attributes:
        dirs: each directory's :class:`~voirdire.analysis.stages.DirAnalysis` (``path`` and
            the outputs asked for, read as attributes), in the order given.
    """

    dirs: list[DirAnalysis]

    @cached_property
    def judgments(self) -> pl.DataFrame:
        """The judgments of every directory (:data:`voirdire.schema.JUDGMENT_SCHEMA`
        columns, concatenated; a column one lacks is null there)."""
        return pl.concat([d.judgments for d in self.dirs], how="diagonal_relaxed")

    @property
    def clusters(self) -> pl.DataFrame | None:
        """The bootstrap's clusters of every directory (``clusters`` asked for), or None."""
        from voirdire.analysis.ranking.rank import dir_clusters

        return dir_clusters(self.dirs)

    @cached_property
    def benchmarks(self) -> list[Any]:
        """Each directory's benchmark, loaded again from its job record (``job`` asked
        for; registered benchmarks only: ``job.json`` is data,
        :func:`~voirdire.analysis.results_dir.dir_benchmark`)."""
        from voirdire.analysis.results_dir import dir_benchmark

        return [dir_benchmark(d.job) for d in self.dirs]

    def features(self) -> pl.DataFrame:
        """Style features (lengths, markdown) of the answers each directory's judgments
        compare, read from its benchmark (:func:`~voirdire.analysis.ranking.style.answer_features`)."""
        from voirdire.analysis.mitigation.verdicts import normalise
        from voirdire.analysis.ranking.order_views import comparisons
        from voirdire.analysis.ranking.style import answer_features

        return pl.concat(
            [
                answer_features(b, comparisons(normalise(d.judgments)))
                for d, b in zip(self.dirs, self.benchmarks)
            ]
        )

    def length_control_weights(self) -> dict[str, Any]:
        """AlpacaEval's fitted length-control weights per benchmark, where a directory's
        benchmark data carries them (``length_control_weights`` of its class)."""
        return {
            b.name: w
            for b in self.benchmarks
            if (w := type(b).length_control_weights(getattr(b, "data_dir", None)))
            is not None
        }

    def length_control_release(self) -> dict[str, Any]:
        """Per benchmark the whole release's comparisons its data carries
        (``length_control_release`` of its class: what the LC v1 instruction difficulty is
        fitted on), where a directory's benchmark has them."""
        return {
            b.name: r
            for b in self.benchmarks
            if (r := type(b).length_control_release(getattr(b, "data_dir", None)))
            is not None
        }


def read_together(
    output_dirs: Sequence[str | os.PathLike],
    outputs: Sequence[str],
    settings: AnalysisSettings = DEFAULTS,
    *,
    own_names: bool = True,
) -> Together:
    """Read ``output_dirs`` for ``outputs`` (module docstring).

    Args:
        own_names: refuse a judge named as the analysis names its own rows (``gold``,
            ``people``, ``panel-N``: :func:`~voirdire.engine.judge_names.check_reserved`); needs
            ``judgments``.

    Raises:
        ConfigError: no directory, a directory given twice, its ``job.json`` a link or not
            ours, a judge named ``gold``, ``people`` or ``panel-N``.
        FileNotFoundError: a directory is not a voirdire output directory.
    """
    if not output_dirs:
        raise ConfigError("no output directory given")
    found = Together(analyse_dirs(distinct_dirs(output_dirs), outputs, settings))
    if own_names and "judgments" in outputs:
        check_reserved(found.judgments["judge"].unique().sort())
    return found


def default_out(output_dirs: Sequence[str | os.PathLike], name: str) -> Path:
    """The folder a command (``name``: ``mitigation``, ``ranking``, ``people``) writes by
    default: next to the first directory, named after the inputs, so that two commands on
    other inputs never write into one folder: ``<dir>-<name>`` for one directory,
    ``<dir1>+<dir2>-<name>`` for several (the directories' names, each once, in order), or
    ``<dir1>+<k>-<hash>-<name>`` where those exceed :data:`MAX_DEFAULT_NAME` characters
    (``hash``: 8 hex digits of the resolved paths).

    Raises:
        ConfigError: no directory."""
    if not output_dirs:
        raise ConfigError("no output directory given")
    paths = [Path(d) for d in output_dirs]
    names = list(dict.fromkeys(p.resolve().name or "root" for p in paths))
    stem = "+".join(names)
    if len(stem) > MAX_DEFAULT_NAME:
        import hashlib

        h = hashlib.sha256(
            "\0".join(str(p.resolve()) for p in paths).encode(
                "utf-8", "surrogateescape"
            )
        ).hexdigest()[:8]
        stem = f"{names[0][: MAX_DEFAULT_NAME // 2]}+{len(names) - 1}-{h}"
    return paths[0].parent / f"{stem}-{name}"


def destination(
    output_dirs: Sequence[str | os.PathLike], out: str | os.PathLike | None, name: str
) -> Path:
    """Where a command writes: ``out``, else :func:`default_out` (a folder named after the
    inputs next to the first directory); claimed as a report directory
    (:func:`voirdire.ownership.claim_report_dir`: ours, or only what reports write, no
    link), nothing written.

    Raises:
        ConfigError: no directory, or a destination that is not ours (the message names
            the ``--out`` to give instead where the default was refused).
    """
    if not output_dirs:
        raise ConfigError("no output directory given")
    if out is not None:
        return claim_report_dir(Path(out))
    dest = default_out(output_dirs, name)
    try:
        return claim_report_dir(dest)
    except ConfigError as exc:
        raise ConfigError(
            f"{exc}; give another folder with --out (e.g. --out {dest.parent / (dest.name + '-2')})"
        ) from None


def report_dirs(
    output_dirs: Sequence[str | os.PathLike], out: str | os.PathLike | None
) -> list[Path]:
    """The directories a report reads, each once, after claiming where it writes: with no
    ``out`` each directory is rewritten too (its files refreshed: claimed as a job's output
    directory); the report goes into ``out``, or into ``report/`` next to the first of
    several (claimed as a report directory). Nothing is written.

    Raises:
        ConfigError: a directory given twice, or a directory to write that is not ours.
    """
    dirs = distinct_dirs(output_dirs)
    if out is None:
        for d in dirs:
            claim_output_dir(d)
    if out is not None or len(dirs) > 1:
        claim_report_dir(out if out is not None else dirs[0].parent / "report")
    return dirs
