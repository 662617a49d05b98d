"""Fetching one release: its record (:class:`Release`), the first release (:data:`JTJ`) and
:func:`fetch_release`, which downloads, verifies and converts a given :class:`Release`
and where a release's data directory is (:func:`data_dir_of`, :func:`locate`,
:func:`locate_or_fetch`: an explicit one, the release's environment variable, the user data
directory, a local copy beside the checkout converted once; fetching when allowed). Split
from :mod:`voirdire.benchmarks.releases.catalogue`, which re-exports these names and resolves a
release's name: see its docstring for the whole story).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from voirdire.benchmarks.data import DATA_ENV, default_data_dir, resolve_data_dir
from voirdire.benchmarks.releases import jtj as release_jtj
from voirdire.benchmarks.releases import mirror
from voirdire.benchmarks.releases import steps as fetch_steps
from voirdire.benchmarks.releases.http_guard import redact_url
from voirdire.benchmarks.releases.mirror import HTTPMirror, LocalCopy
from voirdire.benchmarks.releases.steps import MARKER, fetched_release
from voirdire.core import ConfigError, DataError

_HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Release:
    """One public release voirdire can fetch.

    Attributes:
        name: the name on the command line (``voirdire data fetch NAME``).
        repo, commit: the GitHub repository and the pinned commit whose files are fetched.
        manifest: package data, ``blob_sha1<TAB>path`` of every file voirdire reads.
        dir_name: the data directory's name under the user data directory.
        data_env: environment variable naming the data directory.
        url_env: environment variable overriding the base URL (a mirror).
        convert: ``(get, manifest, out, *, prefer, log) -> Converted``: writes the layout.
        copy_name: a local copy of the release beside a checkout
            (``../shared/data/<copy_name>``, files gzip-compressed under ``files/``), or None.
    """

    name: str
    repo: str
    commit: str
    manifest: Path
    dir_name: str
    data_env: str
    url_env: str
    convert: Callable[..., release_jtj.Converted]
    copy_name: str | None = None

    @property
    def default_base_url(self) -> str:
        """Raw-content URL of the pinned commit; a file's URL is this plus its path."""
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/"

    def data_dir(self, explicit: str | os.PathLike[str] | None = None) -> Path:
        """Where this release's data is: :func:`data_dir_of`."""
        return data_dir_of(self, explicit)

    def default_dir(self) -> Path:
        """``$<data_env>``, else the user data directory of ``platformdirs``
        (``~/.local/share/voirdire/<dir_name>`` on Linux)."""
        env = os.environ.get(self.data_env)
        return (
            Path(env)
            if env
            else Path(platformdirs.user_data_dir("voirdire")) / self.dir_name
        )


JTJ = Release(
    name="judging-the-judges",
    repo="Slimshilin/Position-Bias-Analyzer",
    commit="9f8b7e8e83862cf1ffd9dd2c33f589262efc66ee",
    manifest=_HERE / "release-manifest.tsv",
    dir_name="judging-the-judges",
    data_env=DATA_ENV,
    url_env="VOIRDIRE_RELEASE_URL",
    convert=release_jtj.convert,
)
# the first release's names, as before there were two
RELEASE_REPO, RELEASE_COMMIT, URL_ENV, MANIFEST = (
    JTJ.repo,
    JTJ.commit,
    JTJ.url_env,
    JTJ.manifest,
)
DEFAULT_BASE_URL = JTJ.default_base_url


def read_manifest(path: str | os.PathLike[str] = MANIFEST) -> dict[str, str]:
    """``{release path: git blob id}`` of a manifest (default: the first release's package
    manifest); see :func:`voirdire.benchmarks.releases.mirror.read_manifest`."""
    return mirror.read_manifest(path)


@dataclass
class FetchReport:
    """What :func:`fetch_release` did: the data directory written, the bytes downloaded, the
    release files used (``{release path: blob id}``), the judges per group and what the
    mirror lacked (``skipped``: one line per judge and group left out)."""

    dest: Path
    downloaded_bytes: int = 0
    files: dict[str, str] = field(default_factory=dict)
    judges: dict[str, list[str]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def fetch_release(
    dest: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    *,
    release: Release = JTJ,
    source: str | os.PathLike[str] | None = None,
    prefer: str = "pkl",
    manifest: str | os.PathLike[str] | dict[str, str] | None = None,
    sizes: dict[str, int] | None = None,
    strict: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = lambda s: None,
    deadline: float = mirror.DEFAULT_DEADLINE,
) -> FetchReport:
    """Download, verify and convert a release into ``dest`` (replacing an earlier fetch).

    Args:
        dest: the data directory to write; default :meth:`Release.default_dir`.
        base_url: where the release's files are (paths appended as in the repository);
            default ``$<url_env>``, else the raw-content URL of the pinned commit.
        release: the :class:`Release` (default: the first release).
        source: a local copy of the release to read instead of downloading (files at their
            paths, or gzip-compressed under ``files/``); verified the same way.
        prefer: first release: ``"tsv"`` or ``"pkl"``, the form of the judges' outputs
            fetched first (the other where the mirror lacks it).
        manifest: the release paths and blob ids to use (a path or a dict); default the
            release's package manifest.
        sizes: ``{release path: bytes}``, each download's cap (plus
            :data:`~voirdire.benchmarks.releases.mirror.SIZE_MARGIN`); default the manifest file's size
            column; a path without a size has the cap
            :data:`~voirdire.benchmarks.releases.mirror.UNSIZED_CAP`.
        strict: a judge whose outputs the mirror lacks is an error, not a skip.
        progress: show pooch's download progress bars (stderr).
        log: called with one line per step (a URL's user and password redacted).
        deadline: seconds each file's download may take in all (a slow trickle is cut off).

    Raises:
        ConfigError: an unknown ``prefer``.
        DataError: a download failed (the URL is named), a file does not match its blob id,
            a benchmark table is not on the mirror, a pickle was refused, a table lacks its
            columns, a download ran past its size cap, a manifest path is absolute or holds
            ``..`` (refused before anything is written), ``strict`` and a judge was
            skipped, or ``dest`` is a non-empty directory not written by a fetch. ``dest``
            is either the complete new data or as it was.
    """
    rel = release
    if prefer not in ("tsv", "pkl"):
        raise ConfigError(f"prefer must be 'tsv' or 'pkl', not {prefer!r}")
    man = (
        dict(manifest)
        if isinstance(manifest, dict)
        else read_manifest(manifest or rel.manifest)
    )
    if sizes is None and not isinstance(manifest, dict):
        sizes = mirror.read_sizes(manifest or rel.manifest)
    target = Path(dest or rel.default_dir()).expanduser().absolute()
    fetch_steps.check_target(target)
    if source is None:
        source = fetch_steps.local_source(base_url or os.environ.get(rel.url_env))
    base = _base_url(base_url, rel) if source is None else str(source)
    work = fetch_steps.work_dir(target)
    try:
        if source is not None:
            src: LocalCopy | HTTPMirror = LocalCopy(Path(source), man, sizes)
        else:
            src = HTTPMirror(base, work / "raw", man, progress, sizes, deadline)
        out = work / "data"
        log(f"fetching the release {rel.repo}@{rel.commit[:7]} from {redact_url(base)}")
        done = rel.convert(src.get, man, out, prefer=prefer, log=log)
        _check_skipped(done.skipped, strict, log, out, target)
        report = FetchReport(target, src.bytes, done.files, done.judges, done.skipped)
        fetch_steps.write_marker(out, _record(rel, base, report))
        fetch_steps.swap_into_place(out, target, work)
    except OSError as exc:  # disk full, permissions: nothing was put in place
        raise DataError(f"cannot write the data directory {target}: {exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"wrote {target} ({report.downloaded_bytes / 1e6:.1f} MB read)")
    return report


#: the file of a data directory listing what the mirror lacked (one line each)
SKIPPED_FILE = "skipped.txt"


def _check_skipped(
    skipped: list[str],
    strict: bool,
    log: Callable[[str], None],
    out: Path | None = None,
    target: Path | None = None,
) -> None:
    """The files the mirror lacked in one line, their list written to ``out``'s
    :data:`SKIPPED_FILE` (named as it will be under ``target``); with ``strict``, raise
    DataError naming the first."""
    if skipped and strict:
        raise DataError(
            f"strict fetch: {len(skipped)} judge output(s) not on the mirror; the first: {skipped[0]}"
        )
    if not skipped:
        return
    where = ""
    if out is not None:
        (out / SKIPPED_FILE).write_text("".join(f"{s}\n" for s in skipped), "utf-8")
        where = f"; the list is in {(target or out) / SKIPPED_FILE}"
    log(
        f"skipped {len(skipped):,} file(s) the mirror does not have (their judges are left "
        f"out; --strict makes this an error){where}"
    )


def _record(rel: Release, base: str, report: FetchReport) -> dict[str, Any]:
    """The :data:`MARKER` record of a fetch (a log release adds its licence terms)."""
    record = {
        "release": rel.name,
        "repository": rel.repo,
        "commit": rel.commit,
        "base_url": redact_url(base),
        "files": report.files,
        "skipped": report.skipped,
    }
    record.update(getattr(rel, "marker_extra", dict)())
    return record


def _base_url(base_url: str | None, rel: Release) -> str:
    base = base_url or os.environ.get(rel.url_env) or rel.default_base_url
    return base if base.endswith("/") else base + "/"


# ---- where a release's data directory is, fetching it when allowed


def data_dir_of(
    release: Release, explicit: str | os.PathLike[str] | None = None
) -> Path:
    """The data directory of a release: the first release's by
    :func:`~voirdire.benchmarks.data.resolve_data_dir`, another's by :func:`locate`
    (``explicit``: a job's ``data_dir``, checked).

    Raises:
        ConfigError: no data directory found, or an explicit one that is not one.
    """
    return (
        Path(resolve_data_dir(explicit))
        if release is JTJ
        else locate(release, explicit)
    )


def local_copies(rel: Release) -> list[Path]:
    """Where a local copy of the release may lie beside a checkout:
    ``<cwd>/../shared/data/<copy_name>`` and ``<cwd>/shared/data/<copy_name>``."""
    if rel.copy_name is None:
        return []
    cwd = Path.cwd()
    return [
        cwd.parent / "shared" / "data" / rel.copy_name,
        cwd / "shared" / "data" / rel.copy_name,
    ]


def locate(release: Release, explicit: str | os.PathLike[str] | None = None) -> Path:
    """The data directory of a release other than the first, converting a local
    copy once when that is all there is.

    Order: ``explicit`` (a job's ``data_dir``); ``$<data_env>``; the user data directory a
    fetch wrote; a local copy beside the checkout (:func:`local_copies`, e.g.
    ``../shared/data/<copy_name>``), converted once, verified against the package
    manifest, into ``<user cache dir>/voirdire/<dir_name>-<commit7>`` and reused after.

    Raises:
        ConfigError: an explicit or environment path that is not a fetched data directory,
            or nothing found (the message names ``voirdire data fetch <name>``).
    """
    rel = release
    hint = f"run `voirdire data fetch {rel.name}` (or set {rel.data_env} to the directory it wrote)"
    for p, why in (
        (explicit, "given explicitly"),
        (os.environ.get(rel.data_env), f"from ${rel.data_env}"),
    ):
        if p:
            path = Path(p).expanduser()
            if fetched_release(path) is None:
                raise ConfigError(
                    f"{rel.name} data directory {str(path)!r} ({why}) holds no fetched release ({MARKER}); {hint}"
                )
            return path.resolve()
    user = Path(platformdirs.user_data_dir("voirdire")) / rel.dir_name
    if fetched_release(user) is not None:
        return user.resolve()
    cache = (
        Path(platformdirs.user_cache_dir("voirdire"))
        / f"{rel.dir_name}-{rel.commit[:7]}"
    )
    for copy in local_copies(rel):
        if (copy / "files").is_dir():
            if (fetched_release(cache) or {}).get("commit") != rel.commit:
                fetch_release(cache, release=rel, source=copy, progress=False)
            return cache.resolve()
    raise ConfigError(
        f"no {rel.name} data found (no {rel.data_env}, nothing at {user}, no local copy); {hint}"
    )


def locate_or_fetch(
    try_dir: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    *,
    release: Release = JTJ,
    fetch: bool = True,
    prefer: str = "pkl",
    progress: bool = True,
    log: Callable[[str], None] = lambda s: None,
    manifest: str | os.PathLike[str] | dict[str, str] | None = None,
    deadline: float = mirror.DEFAULT_DEADLINE,
) -> Path:
    """The data directory to use, fetching the release when none is found.

    Order: ``try_dir`` when it is a directory on this machine (the location a cluster client
    handed over); the usual lookup (first release:
    :func:`~voirdire.benchmarks.data.resolve_data_dir`; another: :func:`locate`); else, with
    ``fetch``, :func:`fetch_release` into :meth:`Release.default_dir` (``manifest`` and
    ``deadline`` as there).

    Raises:
        DataError: nothing was found and the fetch failed (or was not allowed); the message
            says what was tried and names both ways out.
    """
    rel = release
    tried = []
    if try_dir:
        p = Path(try_dir).expanduser()
        if p.is_dir():
            return p.resolve()
        tried.append(
            f"the data directory handed over ({p}) is not a directory on this machine"
        )
    try:
        return data_dir_of(rel)
    except ConfigError as exc:
        tried.append(str(exc).split(". The public release")[0])
    fetch_cmd = "voirdire data fetch" + ("" if rel is JTJ else f" {rel.name}")
    ways_out = (
        f"Ways out: run `{fetch_cmd}` where the release can be downloaded (or with --base-url "
        f"pointing at a mirror), or set {rel.data_env} to a directory holding the data."
    )
    if not fetch:
        raise DataError("; ".join(tried) + ". " + ways_out)
    dest = (
        rel.default_dir()
        if rel is not JTJ
        else Path(os.environ.get(DATA_ENV) or default_data_dir())
    )
    log(f"no {rel.name} data found; fetching the public release into {dest}")
    try:
        return fetch_release(
            dest,
            base_url,
            release=rel,
            prefer=prefer,
            manifest=manifest,
            progress=progress,
            log=log,
            deadline=deadline,
        ).dest
    except DataError as exc:
        raise DataError(
            "; ".join(tried + [f"fetching the release into {dest} failed: {exc}"])
            + ". "
            + ways_out
        ) from None


__all__ = [
    "DEFAULT_BASE_URL", "JTJ", "MANIFEST", "RELEASE_COMMIT", "RELEASE_REPO", "URL_ENV",
    "SKIPPED_FILE", "FetchReport", "Release", "data_dir_of", "fetch_release", "local_copies",
    "locate", "locate_or_fetch", "read_manifest",
]  # fmt: skip
