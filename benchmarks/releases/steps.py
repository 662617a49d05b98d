"""The steps every fetch shares, whatever it fetches (a release, a public judgment log).

A fetch writes into a temporary directory beside its destination and renames it into place
only when all of it succeeded (:func:`work_dir`, :func:`swap_into_place`), refuses a
destination that a fetch did not write (:func:`check_target`: a non-empty directory without
:data:`MARKER`), and records what it fetched in :data:`MARKER` (:func:`write_marker`,
:func:`fetched_release`). Used by :mod:`voirdire.benchmarks.releases.catalogue`.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from voirdire.core import DataError

#: The provenance file written into a fetched data directory.
MARKER = "RELEASE.json"


def check_target(target: Path) -> None:
    """Refuse a destination a fetch may not replace.

    Raises:
        DataError: ``target`` is a file, or a non-empty directory without :data:`MARKER`.
    """
    if target.exists() and (
        not target.is_dir()
        or (any(target.iterdir()) and not (target / MARKER).is_file())
    ):
        raise DataError(
            f"{target} exists and was not written by `voirdire data fetch` (no {MARKER}); "
            "choose another --dest or remove it"
        )


def work_dir(target: Path) -> Path:
    """A new temporary directory beside ``target`` (same filesystem: the final rename is atomic).

    Raises:
        DataError: the parent of ``target`` cannot be written.
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return Path(
            tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent)
        )
    except OSError as exc:
        raise DataError(
            f"cannot write beside the data directory {target}: {exc}; choose another --dest"
        ) from None


def write_marker(out: Path, record: dict[str, Any]) -> None:
    """Write ``record`` as :data:`MARKER` in ``out`` (JSON, keys sorted, one space indent)."""
    (out / MARKER).write_text(
        json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )


def swap_into_place(new: Path, target: Path, work: Path) -> None:
    """Rename ``new`` to ``target``; an earlier fetch there is moved aside first and removed
    after (both renames stay on one filesystem: ``work`` is beside ``target``)."""
    old = None
    if target.exists():
        old = work / "previous"
        os.replace(target, old)
    try:
        os.replace(new, target)
    except OSError:
        if old is not None:
            os.replace(old, target)
        raise


def fetched_release(path: Path) -> dict[str, Any] | None:
    """The :data:`MARKER` (``RELEASE.json``) of a data directory written by a fetch, or None."""
    try:
        return json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


__all__ = [
    "MARKER",
    "check_target",
    "fetched_release",
    "local_source",
    "swap_into_place",
    "work_dir",
    "write_marker",
]


def local_source(base: str | os.PathLike[str] | None) -> Path | None:
    """A local release copy named as a base URL: a ``file://`` URL or a plain path (a clone
    of the release's repository at its pinned commit, or a folder of its files in the same
    paths, or gzipped under ``files/``: :class:`~voirdire.benchmarks.releases.mirror.LocalCopy`);
    None for a network URL or nothing.

    Raises:
        DataError: a ``file://`` URL or path that is no directory.
    """
    if base is None:
        return None
    text = str(base)
    if text.startswith("file://"):
        from urllib.parse import unquote, urlparse

        u = urlparse(text)
        if u.netloc not in ("", "localhost"):
            raise DataError(
                f"{text}: a file:// URL names a path on this machine (file:///path)"
            )
        path = Path(unquote(u.path))
    elif "://" in text:
        return None
    else:
        path = Path(text).expanduser()
    if not path.is_dir():
        raise DataError(
            f"{text}: no such directory (a local copy of the release: a clone of its "
            "repository at the pinned commit, or a folder of its files)"
        )
    return path.absolute()
