"""What a submission ships to the cluster (:mod:`voirdire.engine.submit`): the installed
package, the job file, the data files it names, and the command the head node runs.

:func:`prepare` stages all of it under one temporary root: :func:`stage_package` copies the
installed ``voirdire`` package (package data included) for Ray's ``py_modules``,
:func:`stage` the job file into the working directory, and :func:`entrypoint` writes the
shell command that finds the benchmark's data on the head node and runs the job.

A release benchmark reads a release's data directory (its class's ``release``; MT-Bench and
DevBench the first release's): :func:`release_for` names it, and the submission hands its
location over (:func:`data_location`) or has the cluster fetch it. A user's own pairs (``[benchmark.pairs]``) and a
``labels:<file.csv>`` quality source name files by paths relative to the working directory:
:func:`job_inputs` lists them and :func:`stage_inputs` copies them into the staged working
directory so that the same relative paths resolve on the head node.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from voirdire import core
from voirdire.benchmarks.own_pairs.prompts import is_builtin
from voirdire.benchmarks.registry import benchmark_class
from voirdire.benchmarks.releases.catalogue import data_dir_of, get_release
from voirdire.benchmarks.releases.fetch import JTJ, Release
from voirdire.core import ConfigError
from voirdire.registry import SHIPPED_ENTRY_POINTS

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
            raise ConfigError(
                f"the job reads {p!r}, which does not exist here ({src}); relative paths are from the working directory"
            )
        dest = Path(os.path.normpath(work / seat / p))
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(
                src,
                dest,
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("__pycache__"),
            )
        else:
            shutil.copy2(src, dest)
    return seat


#: the subpackages of ``voirdire`` (the rooms); with the package itself they are what ships
ROOMS = ("benchmarks", "judges", "engine", "analysis")


def stage_package(dest: Path) -> Path:
    """Copy the installed ``voirdire`` package into ``dest/voirdire`` as it is laid out when
    installed (``voirdire/``, ``voirdire/engine/``, ...), from wherever this process imports
    it (a wheel install, or an editable install of a checkout, whose rooms sit at the
    repository's top level). Package data (templates, the release manifest) comes along;
    caches do not.

    Returns:
        ``dest/voirdire``, a directory for Ray's ``py_modules``.
    """
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    pkg = dest / "voirdire"
    base = Path(core.__file__).resolve().parent
    shutil.copytree(base, pkg, ignore=ignore)
    for room in ROOMS:
        # located, not imported: engine must not import the rooms to its right
        spec = importlib.util.find_spec(f"voirdire.{room}")
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(
                f"the installed voirdire package lacks its {room!r} room; reinstall voirdire"
            )
        src = Path(next(iter(spec.submodule_search_locations))).resolve()
        if (
            src != base / room
        ):  # an editable install: the room lives outside the package dir
            shutil.copytree(src, pkg / room, ignore=ignore, dirs_exist_ok=True)
    # the distribution's entry points (the built-in benchmarks among them) travel with the copy:
    # a cluster that has the copy but not voirdire's metadata still finds them
    try:
        eps = importlib.metadata.distribution("voirdire").read_text("entry_points.txt")
    except importlib.metadata.PackageNotFoundError:
        eps = None
    if eps:
        (pkg / SHIPPED_ENTRY_POINTS).write_text(eps, encoding="utf-8")
    return pkg


def stage(job_path: Path, dest: Path | None = None) -> tuple[Path, Path, str]:
    """Stage what a submission uploads: the installed package and the job file.

    Returns:
        ``(package directory, job directory, job file path relative to the job directory)``;
        the job file is ``job/<name>``.
    """
    dest = Path(dest or tempfile.mkdtemp(prefix="voirdire-submit-"))
    dest.mkdir(parents=True, exist_ok=True)
    pkg = stage_package(dest / "py_modules")
    work = dest / "working_dir"
    (work / "job").mkdir(parents=True, exist_ok=True)
    shutil.copy2(job_path, work / "job" / job_path.name)
    return pkg, work, f"job/{job_path.name}"


def data_location(job: Any, env: dict[str, str] | None = None) -> str | None:
    """The data directory the client hands to the job: the absolute path found here by the
    usual lookup of the release the benchmark reads (:func:`release_for`:
    :func:`~voirdire.benchmarks.releases.catalogue.data_dir_of`), or None when the job names its
    own ``data_dir``, ``env`` sets the release's variable (its ``data_env``,
    ``VOIRDIRE_DATA`` for the first release) for the job, the benchmark reads no release (a user's own
    pairs), or nothing is found here (the job then fetches the release on the cluster)."""
    rel = release_for(job)
    if rel is None or job.benchmark.data_dir or (env and env.get(rel.data_env)):
        return None
    try:
        return str(data_dir_of(rel))
    except ConfigError:
        return None


def entrypoint(
    job_rel: str,
    output_dir: str | None,
    data_dir: str | None,
    needs_data: bool = True,
    release: str = "judging-the-judges",
    workdir: str = ".",
) -> str:
    """The shell command run on the head node: find the data of ``release`` (the client's
    ``data_dir`` when readable there, the cluster's own lookup, else a fetch of the release)
    and export it as the release's variable (its ``data_env``: ``VOIRDIRE_DATA`` ...),
    then ``python -m voirdire run``; first ``cd workdir`` when the job's inputs are staged
    below it (:func:`stage_inputs`; ``job_rel`` is then relative to
    it). Exit code 3 when no data can be had (the log says why).

    Raises:
        ConfigError: an unknown release name.
    """
    rel = get_release(release)
    run = f"python -m voirdire run {_quote(job_rel)} --no-progress"
    if output_dir:
        run += f" --output-dir {_quote(output_dir)}"
    cd = "" if workdir in ("", ".") else f"cd {_quote(workdir)} || exit 2; "
    if not needs_data:
        return cd + run
    find = (
        "python -m voirdire data fetch"
        + ("" if rel is JTJ else f" {rel.name}")
        + " --if-missing --no-progress"
    )
    if data_dir:
        find += f" --try {_quote(data_dir)}"
    var = rel.data_env
    return f'{cd}{var}="$({find})" || exit 3; export {var}; {run}'


def prepare(
    job: Any,
    job_path: Path,
    root: Path,
    output_dir: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[Path, Path, str]:
    """Stage a validated job under ``root`` (:func:`stage`, then the data files it names by
    relative paths: :func:`stage_inputs`) and write its entrypoint
    (the data step of the release its benchmark reads, none for a user's own pairs).

    Returns:
        ``(package directory, working directory, entrypoint)``.

    Raises:
        ConfigError: a data file the job names is missing here.
    """
    pkg, work, rel = stage(job_path, root)
    seat = stage_inputs(job_inputs(job), work)
    release = release_for(job)
    entry = entrypoint(
        os.path.relpath(rel, seat),
        output_dir,
        data_location(job, env),
        needs_data=release is not None and not job.benchmark.data_dir,
        release=release.name if release else "judging-the-judges",
        workdir=seat,
    )
    return pkg, work, entry


def _quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


__all__ = [
    "ROOMS",
    "SEAT",
    "data_location",
    "entrypoint",
    "job_inputs",
    "prepare",
    "release_for",
    "stage",
    "stage_inputs",
    "stage_package",
]
