"""Where a public release's files come from, verified: a mirror over HTTP (pooch) or a local copy.

Both answer :meth:`get` with a file's bytes, checked against the git blob id the release's
manifest gives for its path; a file the source does not have raises :class:`NotOnMirror`
(the caller decides whether that is fatal, another form of the file is tried, or the
file's judge is skipped). Used by :mod:`voirdire.benchmarks.releases.catalogue` for every release.

A mirror is not trusted: a manifest path that is absolute, holds ``..``, a backslash or a
NUL, or would resolve outside the download directory is refused before anything is written
(:func:`check_paths`), and each download is cut off past its manifest size plus
:data:`SIZE_MARGIN` bytes (:data:`UNSIZED_CAP` where the manifest gives no size); a gzip
file of a local copy is cut off the same way when it is decompressed. Over HTTP
(:mod:`~voirdire.benchmarks.releases.http_guard`), a redirect to another origin is refused, each
file has an overall deadline, and a URL's user and password never appear in a message.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath

from voirdire.benchmarks.releases.http_guard import (
    DEFAULT_DEADLINE,
    DownloadGuard,
    redact_url,
)
from voirdire.core import DataError

#: bytes a download may run past its manifest size before it is cut off
SIZE_MARGIN = 64 * 1024
#: the cap on a file whose size the manifest does not give (the largest release file voirdire
#: reads is under 4 MB)
UNSIZED_CAP = 256 * 1024 * 1024


class NotOnMirror(Exception):
    """The source does not have a file (HTTP 404, or absent from a local copy)."""


def blob_id(data: bytes) -> str:
    """The git blob id of a file's content: ``sha1(b"blob <size>\\0" + content)``, hex.

    This is git's object id (an external definition), not a voirdire content key, hence
    SHA-1 here rather than :func:`voirdire.core.content_hash`.
    """
    h = hashlib.sha1(b"blob %d\0" % len(data))  # noqa: S324 - git's object id, not security
    h.update(data)
    return h.hexdigest()


def _parse_manifest(
    path: str | os.PathLike[str],
) -> tuple[dict[str, str], dict[str, int]]:
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataError(f"release manifest {str(p)!r} cannot be read: {exc}") from exc
    path_first = bool(lines) and lines[0].split("\t")[:2] == ["path", "git_blob_id"]
    blobs: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        if (
            not line.strip()
            or line.startswith("#")
            or line.startswith("blob_sha1\t")
            or (n == 1 and path_first)
        ):
            continue
        parts = line.split("\t")
        ok = len(parts) >= 2 if path_first else len(parts) in (2, 3)
        cols = parts + ["", ""]
        rel, blob, size = (
            (cols[0], cols[1], cols[2]) if path_first else (cols[1], cols[0], cols[2])
        )
        if (
            not ok
            or not re.fullmatch(r"[0-9a-f]{40}", blob)
            or not re.fullmatch(r"[0-9]*", size)
        ):
            raise DataError(
                f"release manifest {str(p)!r} line {n} is not 'blob_sha1<TAB>path[<TAB>size]': {line[:120]!r}"
            )
        why = bad_path(rel)
        if why:
            raise DataError(
                f"release manifest {str(p)!r} line {n}: path {rel[:120]!r} {why}; refused"
            )
        blobs[rel] = blob
        if size:
            sizes[rel] = int(size)
    return blobs, sizes


def read_manifest(path: str | os.PathLike[str]) -> dict[str, str]:
    """``{release path: git blob id}`` from a manifest: TSV lines ``blob_sha1<TAB>path[<TAB>size]``
    (voirdire's package manifests; ``#`` comments and a ``blob_sha1`` header skipped) or,
    with a ``path<TAB>git_blob_id[<TAB>size]`` header, the column order of a release copy's
    ``release-manifest.tsv`` (``../shared/data/<copy_name>``).

    Raises:
        DataError: the file is missing, a line is malformed, or a path is unsafe
            (:func:`bad_path`); the line's number is named.
    """
    return _parse_manifest(path)[0]


def read_sizes(path: str | os.PathLike[str]) -> dict[str, int]:
    """``{release path: size in bytes}`` of the manifest lines that give a size (the third
    column); same format and errors as :func:`read_manifest`."""
    return _parse_manifest(path)[1]


def bad_path(path: str) -> str | None:
    """Why a release path is unsafe to write under a directory, or ``None`` when it is a
    plain relative path: empty, a NUL, absolute (POSIX or Windows, a drive), a backslash,
    or a ``..`` part."""
    if not path or "\x00" in path:
        return "is empty or holds a NUL byte"
    if (
        PurePosixPath(path).is_absolute()
        or PureWindowsPath(path).is_absolute()
        or PureWindowsPath(path).drive
    ):
        return "is absolute"
    if "\\" in path:
        return "holds a backslash"
    if ".." in PurePosixPath(path).parts:
        return "holds '..'"
    return None


def check_paths(paths, root: Path) -> None:
    """Check every release path (:func:`bad_path`) and that ``root / path`` resolves inside
    ``root`` (no symlink out of it).

    Raises:
        DataError: naming the first unsafe path, before anything is written.
    """
    top = root.resolve()
    for rel in paths:
        why = bad_path(rel)
        if why is None and not (top / rel).resolve().is_relative_to(top):
            why = f"resolves outside {top}"
        if why:
            raise DataError(
                f"release path {rel[:120]!r} {why}; refused (nothing was written)"
            )


class _Capped:
    """A file that refuses to grow past ``cap`` bytes or its guard's deadline (what pooch's
    downloader writes to)."""

    def __init__(self, f, cap: int, name: str, guard: DownloadGuard) -> None:
        self.f, self.cap, self.name, self.n, self.guard = f, cap, name, 0, guard

    def write(self, chunk: bytes) -> int:
        self.guard.check()
        self.n += len(chunk)
        if self.n > self.cap:
            raise DataError(
                f"{self.name}: the download ran past {self.cap:,} bytes (its manifest size and a margin); "
                "cut off, nothing was written"
            )
        return self.f.write(chunk)

    def flush(self) -> None:
        self.f.flush()


@functools.cache
def _downloader_class() -> type:
    """The downloader class below, made on first use: pooch and requests are imported only
    by a fetch (a Ray worker replaying a release imports this module, never downloads)."""
    import pooch
    import requests

    class _HTTPDownloader(pooch.HTTPDownloader):
        """pooch's HTTP downloader, with a 404 raised as :class:`NotOnMirror` at once (pooch
        retries network errors, not a file the mirror does not have), and the download cut off
        past ``cap`` bytes, at a redirect to another origin, or past ``deadline`` seconds (each
        a :class:`DataError` naming ``name``, not retried; :class:`DownloadGuard`)."""

        def __init__(
            self, *args, cap: int, name: str, guard: DownloadGuard, **kwargs
        ) -> None:
            super().__init__(*args, hooks={"response": [guard.hook]}, **kwargs)
            self.cap, self.name, self.guard = cap, name, guard

        def __call__(self, url, output_file, pooch, check_only=False):  # type: ignore[override]
            if check_only:
                return super().__call__(url, output_file, pooch, check_only=True)
            self.guard.start()
            try:
                with open(output_file, "w+b") as f:
                    out = _Capped(f, self.cap, self.name, self.guard)
                    result = super().__call__(url, out, pooch)
                self.guard.check()
                return result
            except requests.exceptions.HTTPError as exc:
                if exc.response is not None and exc.response.status_code == 404:
                    raise NotOnMirror(redact_url(url)) from None
                raise
            except DataError:
                raise
            except Exception:
                if self.guard.expired:
                    raise self.guard.error() from None
                raise
            finally:
                self.guard.stop()

    return _HTTPDownloader


class _Source:
    """Common part of the sources: blob-id verification and the byte count."""

    where: str
    manifest: dict[str, str]

    def __init__(self, sizes: Mapping[str, int] | None) -> None:
        self.bytes = 0
        self.sizes = dict(sizes or {})

    def cap(self, path: str) -> int:
        """The most bytes ``path`` may have: its manifest size plus :data:`SIZE_MARGIN`, else
        :data:`UNSIZED_CAP`."""
        size = self.sizes.get(path)
        return size + SIZE_MARGIN if size is not None else UNSIZED_CAP

    def _verified(self, path: str, data: bytes, origin: str) -> bytes:
        got, want = blob_id(data), self.manifest[path]
        if got != want:
            raise DataError(
                f"{path}: the downloaded file ({len(data):,} bytes, from {origin}) has git blob id {got}, "
                f"expected {want}: it is corrupted or truncated. Nothing was written; run the fetch again "
                "(or use another mirror)"
            )
        self.bytes += len(data)
        return data


class HTTPMirror(_Source):
    """Files under a base URL (the raw-content URLs of a pinned commit, or a mirror serving
    the same paths), downloaded by pooch (3 tries each, progress bar) into ``raw``, each cut
    off past its cap (:meth:`cap`).

    Raises:
        DataError: an unsafe manifest path (:func:`check_paths`), before anything is written.
    """

    def __init__(
        self,
        base: str,
        raw: Path,
        manifest: dict[str, str],
        progress: bool,
        sizes: Mapping[str, int] | None = None,
        deadline: float = DEFAULT_DEADLINE,
    ) -> None:
        super().__init__(sizes)
        import pooch

        check_paths(manifest, raw)
        pooch.get_logger().setLevel("WARNING")
        self.where, self.manifest, self.progress = base, manifest, progress
        self.deadline = deadline
        self.pooch = pooch.create(
            path=raw,
            base_url=base,
            registry={p: None for p in manifest},
            retry_if_failed=2,
        )

    def get(self, path: str) -> bytes:
        """The verified bytes of ``path``.

        Raises:
            NotOnMirror: HTTP 404.
            DataError: any other download failure (the URL is named), a download past its cap,
                or a blob-id mismatch.
        """
        url = self.where + path
        guard = DownloadGuard(url, path, self.deadline)
        wait = min(60.0, self.deadline)
        downloader = _downloader_class()(
            progressbar=self.progress,
            timeout=(wait, wait),
            cap=self.cap(path),
            name=path,
            guard=guard,
        )
        try:
            local = self.pooch.fetch(path, downloader=downloader)
        except (NotOnMirror, DataError):
            raise
        except Exception as exc:  # noqa: BLE001 - connection errors, timeouts: named with the URL
            raise DataError(redact_url(f"cannot download {url}: {exc}")) from None
        return self._verified(path, Path(local).read_bytes(), redact_url(url))


class LocalCopy(_Source):
    """Files of a local release copy: ``<root>/<path>``, or gzip-compressed as
    ``<root>/files/<path>.gz`` (the layout of a release copy, ``../shared/data/<copy_name>``)."""

    def __init__(
        self,
        root: Path,
        manifest: dict[str, str],
        sizes: Mapping[str, int] | None = None,
    ) -> None:
        super().__init__(sizes)
        check_paths(manifest, root)
        check_paths([f"{p}.gz" for p in manifest], root / "files")
        self.where, self.root, self.manifest = str(root), root, manifest

    def get(self, path: str) -> bytes:
        """The verified bytes of ``path``.

        Raises:
            NotOnMirror: the copy has neither form of the file.
            DataError: unreadable file, a file past its cap (decompressed), or a blob-id
                mismatch.
        """
        plain, packed = self.root / path, self.root / "files" / f"{path}.gz"
        cap = self.cap(path)
        try:
            if packed.is_file():
                with gzip.open(packed, "rb") as f:
                    data = f.read(cap + 1)
                return self._verified(
                    path, self._within(path, data, cap, packed), str(packed)
                )
            if plain.is_file():
                with open(plain, "rb") as f:
                    data = f.read(cap + 1)
                return self._verified(
                    path, self._within(path, data, cap, plain), str(plain)
                )
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise DataError(
                f"{path}: cannot read it from the copy at {self.root}: {exc}"
            ) from None
        raise NotOnMirror(str(packed))

    @staticmethod
    def _within(path: str, data: bytes, cap: int, origin: Path) -> bytes:
        if len(data) > cap:
            raise DataError(
                f"{path}: {origin} holds more than {cap:,} bytes (its manifest size and a margin); refused"
            )
        return data


__all__ = [
    "SIZE_MARGIN",
    "UNSIZED_CAP",
    "HTTPMirror",
    "LocalCopy",
    "NotOnMirror",
    "bad_path",
    "blob_id",
    "check_paths",
    "read_manifest",
    "read_sizes",
]
