"""Outputs of several files written and read as one set: a manifest, written last, names them.

A command that writes several tables (``voirdire people``, a directory's analysis, a report)
writes them as a set (``docs/security.md``, "Sets of files")::

    with FileSet(out, "people_manifest.json", "voirdire people") as s:
        s.add(write_csv(table, out / "metrics" / "people_boards.csv"))  # staged, renamed
        table.write_parquet(s.staged(out / "people_pairs.parquet"))
        s.add(out / "people_pairs.parquet")
        ...

1. the old manifest is removed first (and any temporary file a killed writer left), so a
   run cut short leaves a set no reader takes;
2. each file is written under a temporary name in its own folder (:meth:`FileSet.staged`:
   ``.<name>.<pid>.tmp<suffix>``, the suffix kept, so the folder's ownership rules still hold)
   and renamed in place when written (:func:`os.replace`: whole or absent, never half); a
   file written in place by a library is named with :meth:`FileSet.add` alone;
3. the manifest (every file's path relative to the set's folder, its size and SHA-256, and
   the writer's ``meta``) is written last, itself under a temporary name and renamed.

A reader calls :func:`check_set` before trusting the files: it refuses, in one line naming
the file, a set without its manifest (a writer killed midway), a manifest that is not one,
or a file that is not the one it names (another run's, or changed). :func:`set_digest` is the
manifest's SHA-256: what a set built from another (a report from a directory's analysis)
records of its inputs. This module imports no engine and no Ray.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from voirdire.bounds import check_size
from voirdire.core import ConfigError

__all__ = [
    "MAX_MANIFEST_BYTES",
    "FileSet",
    "atomic_path",
    "staged_name",
    "is_staged",
    "file_digest",
    "check_set",
    "set_digest",
    "write_manifest",
]

#: the largest manifest read (bytes): a manifest names a few hundred files at most
MAX_MANIFEST_BYTES = 4 << 20
#: the part of a temporary name that marks it (``.<name>.<pid>.tmp<suffix>``)
_TMP = ".tmp"


def staged_name(path: str | os.PathLike) -> Path:
    """The temporary name ``path`` is written under before it is renamed in place: in the
    same folder, hidden, with the writer's process id and ``path``'s suffix
    (``metrics/.judge_metrics.csv.4242.tmp.csv``)."""
    p = Path(path)
    return p.with_name(f".{p.name}.{os.getpid()}{_TMP}{p.suffix}")


def is_staged(name: str) -> bool:
    """Whether the file name ``name`` is a temporary name of :func:`staged_name`."""
    if not name.startswith(".") or _TMP not in name:
        return False
    head, _, _ = name.rpartition(_TMP)
    pid = head.rpartition(".")[2]
    return pid.isdigit()


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path (:func:`staged_name`) to write ``path`` under, renamed to ``path``
    when the block ends without an exception (:func:`os.replace`: a reader finds the old
    file or the new one, whole, never half of one), removed when it raises."""
    final = Path(path)
    tmp = staged_name(final)
    try:
        yield tmp
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, final)


def file_digest(path: str | os.PathLike) -> dict[str, Any]:
    """``{"bytes": size, "sha256": hex digest}`` of the file at ``path`` (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    p = Path(path)
    with p.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return {"bytes": p.stat().st_size, "sha256": h.hexdigest()}


def write_manifest(
    where: str | os.PathLike,
    manifest: str,
    paths: Iterable[str | os.PathLike],
    meta: dict[str, Any] | None = None,
) -> Path:
    """Write the manifest ``manifest`` in ``where`` naming ``paths`` (files below ``where``)
    with their sizes and SHA-256 and ``meta`` (JSON values); under a temporary name, then
    renamed: whole or absent. Returns its path.

    Raises:
        ValueError: a path outside ``where``.
    """
    d = Path(where)
    files = {Path(p).relative_to(d).as_posix(): file_digest(p) for p in paths}
    body = {"files": dict(sorted(files.items())), "meta": meta or {}}
    final = d / manifest
    tmp = staged_name(final)
    tmp.write_text(json.dumps(body, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, final)
    return final


class FileSet:
    """The writer of a set of files in ``where`` named by ``manifest`` (module docstring).

    Entering removes the old manifest and the temporary files a killed writer of this set
    left; leaving without an exception writes the manifest of every file added (with
    ``meta``); leaving on an exception writes none and removes the files still staged, so
    the set is refused by :func:`check_set`.

    Attributes:
        where: the set's folder; manifest: the manifest's file name; what: the writer, as
            the refusals name it ("voirdire people").
        meta: recorded in the manifest (JSON values; may be set before leaving).
    """

    def __init__(
        self,
        where: str | os.PathLike,
        manifest: str,
        what: str,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.where, self.manifest, self.what = Path(where), manifest, what
        self.meta: dict[str, Any] = dict(meta or {})
        self._files: dict[Path, None] = {}
        self._staged: dict[Path, Path] = {}
        self.written: Path | None = None

    def __enter__(self) -> FileSet:
        self.where.mkdir(parents=True, exist_ok=True)
        (self.where / self.manifest).unlink(missing_ok=True)  # a run cut short: no set
        for p in _leftovers(self.where):
            p.unlink(missing_ok=True)
        return self

    def staged(self, path: str | os.PathLike) -> Path:
        """The temporary path to write ``path`` under (folder created); :meth:`add` of
        ``path`` (or of the returned path) renames it in place."""
        final = Path(path)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = staged_name(final)
        self._staged[tmp] = final
        return tmp

    def add(self, path: str | os.PathLike) -> Path:
        """Name ``path`` in the set; a staged file (:meth:`staged`, by either name) is
        renamed in place first. Returns the final path.

        Raises:
            FileNotFoundError: nothing was written there.
        """
        p = Path(path)
        final = self._staged.pop(p, None)
        if final is None and staged_name(p) in self._staged:
            final = self._staged.pop(staged_name(p))
            p = staged_name(p)
        if final is not None:
            os.replace(p, final)
            p = final
        if not p.is_file():
            raise FileNotFoundError(f"{p}: not written, cannot join the set")
        self._files[p] = None
        return p

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if kind is not None:
            for tmp in self._staged:
                tmp.unlink(missing_ok=True)
            return
        for tmp in list(self._staged):  # staged and written but not added: added now
            if tmp.is_file():
                self.add(tmp)
        self.written = write_manifest(self.where, self.manifest, self._files, self.meta)


def _leftovers(where: Path) -> list[Path]:
    """The temporary files (:func:`is_staged`) in ``where`` and one folder down (``metrics/``,
    ``figures/``): a writer's that was killed, or that is writing now."""
    folders = [
        where,
        *(p for p in where.iterdir() if p.is_dir() and not p.is_symlink()),
    ]
    return [
        p
        for folder in folders
        for p in folder.iterdir()
        if is_staged(p.name) and p.is_file() and not p.is_symlink()
    ]


def _refuse(where: Path, said: str) -> ConfigError:
    return ConfigError(f"{where}{said}")


def check_set(
    where: str | os.PathLike,
    manifest: str,
    what: str,
    required: Iterable[str] = (),
) -> dict[str, Any]:
    """Refuse the set in ``where`` unless its manifest ``manifest`` is there, is one, names
    every path of ``required`` (relative to ``where``, ``/``-separated) and every file it
    names is there with its size and SHA-256, and no temporary file of a writer lies in
    ``where`` or one folder down (a writer killed, or still writing: :func:`staged_name`).
    ``what`` names the writer to run again.

    Returns:
        The manifest's ``meta`` (a dict).

    Raises:
        ConfigError: one line naming the folder or the file.
    """
    d = Path(where)
    m = d / manifest
    again = f"run {what} again"
    if not m.is_file() or m.is_symlink():
        raise _refuse(
            d,
            f" has no {manifest}: the outputs of {what} are incomplete (a run cut short, "
            f"or an older version's); {again}",
        )
    check_size(m.stat().st_size, str(m), MAX_MANIFEST_BYTES, "on disk",
               "voirdire.file_set.MAX_MANIFEST_BYTES")  # fmt: skip
    try:
        body = json.loads(m.read_text(encoding="utf-8"))
        wanted = {
            str(k): (int(v["bytes"]), str(v["sha256"]))
            for k, v in body["files"].items()
        }
        meta = body.get("meta", {})
        if not isinstance(meta, dict):
            raise TypeError
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        raise _refuse(m, f": not a manifest {what} writes; {again}") from None
    for name in required:
        if name not in wanted:
            raise _refuse(
                m, f" does not name {name}: not the manifest of {what}; {again}"
            )
    for name, (size, sha) in wanted.items():
        f = d / name
        if ".." in Path(name).parts or Path(name).is_absolute():
            raise _refuse(
                m, f" names {name!r}, outside {d}: not a manifest {what} writes"
            )
        if not f.is_file() or f.is_symlink():
            raise _refuse(f, f" is missing, though {manifest} names it; {again}")
        if f.stat().st_size != size or file_digest(f)["sha256"] != sha:
            kind = "table" if f.suffix in (".csv", ".parquet") else "file"
            raise _refuse(
                f,
                f" is not the {kind} {manifest} names (another run's, or changed); {again}",
            )
    left = _leftovers(d)
    if left:
        said = ": a temporary file of a writer killed or still writing here"
        raise _refuse(left[0], f"{said}; {again}")
    return meta


def set_digest(where: str | os.PathLike, manifest: str) -> str | None:
    """The SHA-256 of the manifest ``manifest`` in ``where`` (a set's identity: it names every
    file's digest), or None when there is none."""
    m = Path(where) / manifest
    if not m.is_file():
        return None
    return file_digest(m)["sha256"]
