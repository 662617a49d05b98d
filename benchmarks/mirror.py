"""Where a public release's files come from, verified: a mirror over HTTP (pooch) or a local copy.

Both answer :meth:`get` with a file's bytes, checked against the git blob id the release's
manifest gives for its path; a file the source does not have raises :class:`NotOnMirror`
(the caller decides whether that is fatal, another form of the file is tried, or the
file's judge is skipped). Used by :mod:`voirdire.benchmarks.release` for every release.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
from pathlib import Path

import pooch
import requests

from voirdire.core import DataError


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


def read_manifest(path: str | os.PathLike[str]) -> dict[str, str]:
    """``{release path: git blob id}`` from a manifest: TSV lines ``blob_sha1<TAB>path``
    (voirdire's package manifests; ``#`` comments and a ``blob_sha1`` header skipped) or,
    with a ``path<TAB>git_blob_id[<TAB>size]`` header, the column order of a release copy's
    ``release-manifest.tsv`` (``../shared/data/<copy_name>``).

    Raises:
        DataError: the file is missing or a line is malformed (its number is named).
    """
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataError(f"release manifest {str(p)!r} cannot be read: {exc}") from exc
    path_first = bool(lines) and lines[0].split("\t")[:2] == ["path", "git_blob_id"]
    out: dict[str, str] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#") or line.startswith("blob_sha1\t") or (n == 1 and path_first):
            continue
        parts = line.split("\t")
        ok = len(parts) >= 2 if path_first else len(parts) == 2
        blob, rel = (parts[1], parts[0]) if path_first else (parts[0], parts[-1])
        if not ok or not re.fullmatch(r"[0-9a-f]{40}", blob):
            raise DataError(f"release manifest {str(p)!r} line {n} is not 'blob_sha1<TAB>path': {line[:120]!r}")
        out[rel] = blob
    return out


class _HTTPDownloader(pooch.HTTPDownloader):
    """pooch's HTTP downloader, with a 404 raised as :class:`NotOnMirror` at once (pooch
    retries network errors, not a file the mirror does not have)."""

    def __call__(self, url, output_file, pooch, check_only=False):  # type: ignore[override]
        try:
            return super().__call__(url, output_file, pooch, check_only=check_only)
        except requests.exceptions.HTTPError as exc:
            if exc.response is not None and exc.response.status_code == 404:
                raise NotOnMirror(url) from None
            raise


class _Source:
    """Common part of the sources: blob-id verification and the byte count."""

    where: str
    manifest: dict[str, str]

    def __init__(self) -> None:
        self.bytes = 0

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
    the same paths), downloaded by pooch (3 tries each, progress bar) into ``raw``."""

    def __init__(self, base: str, raw: Path, manifest: dict[str, str], progress: bool) -> None:
        super().__init__()
        pooch.get_logger().setLevel("WARNING")
        self.where, self.manifest = base, manifest
        self.pooch = pooch.create(path=raw, base_url=base, registry={p: None for p in manifest}, retry_if_failed=2)
        self.downloader = _HTTPDownloader(progressbar=progress, timeout=60)

    def get(self, path: str) -> bytes:
        """The verified bytes of ``path``.

        Raises:
            NotOnMirror: HTTP 404.
            DataError: any other download failure (the URL is named), or a blob-id mismatch.
        """
        url = self.where + path
        try:
            local = self.pooch.fetch(path, downloader=self.downloader)
        except NotOnMirror:
            raise
        except Exception as exc:  # noqa: BLE001 - connection errors, timeouts: named with the URL
            raise DataError(f"cannot download {url}: {exc}") from None
        return self._verified(path, Path(local).read_bytes(), url)


class LocalCopy(_Source):
    """Files of a local release copy: ``<root>/<path>``, or gzip-compressed as
    ``<root>/files/<path>.gz`` (the layout of a release copy, ``../shared/data/<copy_name>``)."""

    def __init__(self, root: Path, manifest: dict[str, str]) -> None:
        super().__init__()
        self.where, self.root, self.manifest = str(root), root, manifest

    def get(self, path: str) -> bytes:
        """The verified bytes of ``path``.

        Raises:
            NotOnMirror: the copy has neither form of the file.
            DataError: unreadable file or a blob-id mismatch.
        """
        plain, packed = self.root / path, self.root / "files" / f"{path}.gz"
        try:
            if packed.is_file():
                return self._verified(path, gzip.decompress(packed.read_bytes()), str(packed))
            if plain.is_file():
                return self._verified(path, plain.read_bytes(), str(plain))
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise DataError(f"{path}: cannot read it from the copy at {self.root}: {exc}") from None
        raise NotOnMirror(str(packed))


__all__ = ["HTTPMirror", "LocalCopy", "NotOnMirror", "blob_id", "read_manifest"]
