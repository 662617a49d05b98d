"""Which output directories are ours: the ownership rules of the directories
:mod:`voirdire.layout` declares, applied before anything is written, by a run
(:func:`claim_output_dir`), by ``analyze``, ``report``, ``mitigate`` and ``rank``
(:func:`claim_report_dir`, :func:`distinct_dirs`).

voirdire writes only into a directory it can tell is its own, and never through a symbolic
link inside it (``docs/security.md``):

- a **job's output directory** (``voirdire run``, ``voirdire analyze``) is ours when it does
  not exist, is empty (no file and no link in it, at most empty folders), or holds our
  marker: a ``job.json`` that is a regular file (not a link) whose JSON is an object with
  the keys the engine writes (:data:`JOB_RECORD_KEYS`:
  ``job`` an object with ``name`` and ``output_dir`` strings, ``benchmark`` a string,
  ``judges`` and ``verdict_patterns`` objects, ``units_per_judge`` an integer);
- a **report or mitigation directory** (``voirdire report --out``, ``voirdire mitigate
  --out``) is ours under the same rule, or when everything in it is something a report or
  a mitigation writes (:data:`REPORT_FILES`, ``metrics/*.csv``, ``figures/*.png`` and ``*.svg``);
- in either, no entry below the directory may be a symbolic link (a link is refused, with
  its path, before anything is written; the directory itself may be a link the user made,
  to a directory: a link to nothing, itself or on the path to it, is refused, never
  followed to create its target).

Every refusal is a :class:`~voirdire.exceptions.ConfigError` of one line naming the path.
:func:`check_path_text` refuses output paths holding NUL or longer than the system allows.
The names written inside (judges' folders) are :mod:`voirdire.engine.judge_names`'.
This module imports no engine and no Ray.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from voirdire.core import ConfigError
from voirdire.file_set import is_staged
from voirdire.layout import (
    FIGURES_DIR,
    JOB_FILE,
    METRICS_DIR,
    REPORT_FILES,
    read_job_record,
)

_REPORT_DIRS = {METRICS_DIR: (".csv",), FIGURES_DIR: (".png", ".svg")}
#: the longest output path (bytes, UTF-8) and path component (Linux's PATH_MAX and NAME_MAX)
MAX_PATH, MAX_COMPONENT = 4096, 255


def distinct_dirs(dirs: Iterable[str | os.PathLike]) -> list[Path]:
    """``dirs`` as paths, each directory once.

    Raises:
        ConfigError: a directory given twice (also through another path to it).
    """
    seen: dict[Path, Path] = {}
    for d in map(Path, dirs):
        key = d.resolve()
        if key in seen:
            raise ConfigError(
                f"output directory {d} is given twice (also as {seen[key]}); "
                "its results would count twice"
            )
        seen[key] = d
    return list(seen.values())


def check_path_text(path: str) -> str:
    """``path`` when it can name an output directory: no NUL byte, at most :data:`MAX_PATH`
    bytes, each component at most :data:`MAX_COMPONENT` bytes (UTF-8).

    Raises:
        ValueError: naming the problem (not echoing a very long path whole).
    """
    if "\x00" in path:
        raise ValueError("output_dir may not hold a NUL byte")
    size = len(path.encode("utf-8", "surrogateescape"))
    if size > MAX_PATH:
        raise ValueError(
            f"output_dir is {size} bytes long; the system allows {MAX_PATH}"
        )
    long = [
        c
        for c in Path(path).parts
        if len(c.encode("utf-8", "surrogateescape")) > MAX_COMPONENT
    ]
    if long:
        raise ValueError(
            f"output_dir has a component of {len(long[0].encode())} bytes ({long[0][:40]}...); "
            f"the system allows {MAX_COMPONENT}"
        )
    return path


def find_link(root: str | os.PathLike) -> Path | None:
    """The first symbolic link below ``root`` (not following links), or None."""
    for here, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs + files):
            if os.path.islink(os.path.join(here, name)):
                return Path(here) / name
    return None


def _check_dir(path: Path, what: str) -> bool:
    """False when ``path`` does not exist or is empty: it holds no file and no link, at
    most empty folders (nothing to overwrite); refuses a path that is not a directory, and
    a path to be created through a symbolic link to nothing (:func:`_refuse_dangling`)."""
    if not path.exists():
        _refuse_dangling(path, what)
        return False
    if not path.is_dir():
        raise ConfigError(f"{what} {path} exists and is not a directory")
    for here, dirs, files in os.walk(path, followlinks=False):
        if files or any(os.path.islink(os.path.join(here, d)) for d in dirs):
            return True
    return False


def _refuse_dangling(path: Path, what: str) -> None:
    """Refuse a ``path`` that does not exist when it, or the nearest of its parents that
    is there, is a symbolic link to nothing (or a loop): creating it would fail midway
    (``FileExistsError``), or create the link's target wherever it points; a parent that
    is a file is refused too.

    Raises:
        ConfigError: one line naming the link and where it points.
    """
    for p in (path, *path.parents):
        if p.is_symlink() and not p.exists():
            try:
                target = os.readlink(p)
            except OSError:
                target = "?"
            raise ConfigError(
                f"{what} {path}: {p} is a symbolic link to nothing ({target!r}); "
                "create its target directory or choose another path"
            )
        if p.exists():
            if not p.is_dir():
                raise ConfigError(f"{what} {path}: {p} exists and is not a directory")
            return


def _refuse_links(path: Path, what: str) -> None:
    link = find_link(path)
    if link is not None:
        raise ConfigError(
            f"{what} {path} holds a symbolic link, {link}; voirdire writes through no links "
            "(remove it, or choose another directory)"
        )


def claim_output_dir(output_dir: str | os.PathLike) -> Path:
    """Check that a job may write into ``output_dir`` (module docstring); writes nothing.

    Raises:
        ConfigError: the path is a file, a non-empty directory without our ``job.json``, or
            a directory holding a symbolic link (one line naming it).
    """
    out = Path(output_dir)
    if _check_dir(out, "output_dir"):
        if not (out / JOB_FILE).exists() and not (out / JOB_FILE).is_symlink():
            raise ConfigError(
                f"output_dir {out} is not empty and holds no voirdire {JOB_FILE}: not a voirdire output "
                "directory; choose a new or empty directory"
            )
        read_job_record(out)
        _refuse_links(out, "output_dir")
    return out


def claim_report_dir(out_dir: str | os.PathLike) -> Path:
    """Check that a report or mitigation may write into ``out_dir`` (module docstring).

    Raises:
        ConfigError: the path is a file, holds something no report writes, or holds a
            symbolic link (one line naming it).
    """
    out = Path(out_dir)
    if not _check_dir(out, "report directory"):
        return out
    if (out / JOB_FILE).exists() or (out / JOB_FILE).is_symlink():
        read_job_record(out)
    else:
        for entry in sorted(out.iterdir()):
            ext = _REPORT_DIRS.get(entry.name)
            ok = (
                entry.name in REPORT_FILES and entry.is_file()
                if ext is None
                else entry.is_dir()
                and all(f.suffix in ext and f.is_file() for f in entry.iterdir())
            )
            # a temporary file a killed writer left (voirdire.file_set): removed by the next
            ok = ok or (is_staged(entry.name) and entry.is_file())
            if not ok and not entry.is_symlink():
                raise ConfigError(
                    f"{out} holds {entry.name}, which no voirdire report writes: not a voirdire "
                    "directory; choose a new or empty directory"
                )
    _refuse_links(out, "report directory")
    return out
