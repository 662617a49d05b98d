"""Getting the data: download a public release, verify it, convert it once.

Each release is a small :class:`Release` record (repository, pinned commit, package
manifest, where its data goes, its converter), brought by the benchmark that reads it (its
``release`` attribute, :mod:`voirdire.benchmarks.registry`); :func:`get_release` finds a
release by name among the registered benchmarks'. The first one is defined here:

- ``judging-the-judges``: Shi et al. (2024), "Judging the Judges: A Systematic Study of
  Position Bias in LLM-as-a-Judge", GitHub ``Slimshilin/Position-Bias-Analyzer`` (MIT,
  copyright 2024 Slimshilin); converter :mod:`voirdire.benchmarks.release_jtj`; read by
  MT-Bench and DevBench.

:func:`fetch_release` downloads, file by file from the raw-content URLs of the pinned commit
(or a mirror serving the same paths, or a local copy), only the files voirdire reads (the
release's package manifest lists them with their git blob ids), verifies every file against
its blob id (a download is cut off past the size the manifest gives, plus a margin; a
manifest path that would leave the temporary directory is refused before anything is
written: :mod:`voirdire.benchmarks.mirror`), and converts them into the layout the readers use. Everything happens in a
temporary directory beside the destination, renamed into place only when all of it
succeeded: a corrupted or truncated download leaves no half-written data directory.

A partial mirror: the outputs of a judge (first release: a judge in one study and benchmark;
another release: what its converter calls a judge) that the mirror has in no form are skipped
and named in :attr:`FetchReport.skipped` (and ``RELEASE.json``); ``strict=True`` makes any
skip an error. The benchmark tables themselves are always required.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from voirdire.benchmarks import mirror, release_jtj
from voirdire.benchmarks.data import DATA_ENV, default_data_dir, resolve_data_dir
from voirdire.benchmarks.http_guard import redact_url
from voirdire.benchmarks.mirror import HTTPMirror, LocalCopy, NotOnMirror, blob_id
from voirdire.benchmarks.release_jtj import (
    QA_FILES,
    RecordSource,
    load_plain_pickle,
    load_record_tsv,
    plan_records,
)
from voirdire.core import ConfigError, DataError

_HERE = Path(__file__).resolve().parent
#: The provenance file written into a fetched data directory.
MARKER = "RELEASE.json"


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
    manifest); see :func:`voirdire.benchmarks.mirror.read_manifest`."""
    return mirror.read_manifest(path)


def releases() -> dict[str, Release]:
    """The releases by name: those the registered benchmarks read (their ``release``
    attribute), in the benchmarks' order (imports every built-in benchmark module)."""
    from voirdire.benchmarks.registry import BENCHMARKS

    out: dict[str, Release] = {}
    for cls in BENCHMARKS.items().values():
        rel = getattr(cls, "release", None)
        if rel is not None:
            out.setdefault(rel.name, rel)
    return out


def get_release(name: str | Release) -> Release:
    """The :class:`Release` of a name (:func:`releases`). Raises ConfigError naming the known ones."""
    if isinstance(name, Release):
        return name
    known = releases()
    if name not in known:
        raise ConfigError(
            f"unknown release {name!r}; known releases: {', '.join(known)}"
        )
    return known[name]


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
    release: str | Release = JTJ,
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
        release: a :class:`Release` or its name (default: the first release).
        source: a local copy of the release to read instead of downloading (files at their
            paths, or gzip-compressed under ``files/``); verified the same way.
        prefer: first release: ``"tsv"`` or ``"pkl"``, the form of the judges' outputs
            fetched first (the other where the mirror lacks it).
        manifest: the release paths and blob ids to use (a path or a dict); default the
            release's package manifest.
        sizes: ``{release path: bytes}``, each download's cap (plus
            :data:`~voirdire.benchmarks.mirror.SIZE_MARGIN`); default the manifest file's size
            column; a path without a size has the cap
            :data:`~voirdire.benchmarks.mirror.UNSIZED_CAP`.
        strict: a judge whose outputs the mirror lacks is an error, not a skip.
        progress: show pooch's download progress bars (stderr).
        log: called with one line per step (a URL's user and password redacted).
        deadline: seconds each file's download may take in all (a slow trickle is cut off).

    Raises:
        ConfigError: unknown release or ``prefer``.
        DataError: a download failed (the URL is named), a file does not match its blob id,
            a benchmark table is not on the mirror, a pickle was refused, a table lacks its
            columns, a download ran past its size cap, a manifest path is absolute or holds
            ``..`` (refused before anything is written), ``strict`` and a judge was
            skipped, or ``dest`` is a non-empty directory not written by a fetch. ``dest``
            is either the complete new data or as it was.
    """
    rel = get_release(release)
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
    if target.exists() and (
        not target.is_dir()
        or (any(target.iterdir()) and not (target / MARKER).is_file())
    ):
        raise DataError(
            f"{target} exists and was not written by `voirdire data fetch` (no {MARKER}); "
            "choose another --dest or remove it"
        )
    base = _base_url(base_url, rel) if source is None else str(source)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(
            tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent)
        )
    except OSError as exc:
        raise DataError(
            f"cannot write beside the data directory {target}: {exc}; choose another --dest"
        ) from None
    try:
        if source is not None:
            src: LocalCopy | HTTPMirror = LocalCopy(Path(source), man, sizes)
        else:
            src = HTTPMirror(base, work / "raw", man, progress, sizes, deadline)
        out = work / "data"
        log(f"fetching the release {rel.repo}@{rel.commit[:7]} from {redact_url(base)}")
        done = rel.convert(src.get, man, out, prefer=prefer, log=log)
        if done.skipped:
            if strict:
                raise DataError(
                    f"strict fetch: {len(done.skipped)} judge output(s) not on the mirror; the first: {done.skipped[0]}"
                )
            for s in done.skipped:
                log(f"skipped: {s}")
        report = FetchReport(target, src.bytes, done.files, done.judges, done.skipped)
        record = {
            "release": rel.name,
            "repository": rel.repo,
            "commit": rel.commit,
            "base_url": redact_url(base),
            "files": report.files,
            "skipped": report.skipped,
        }
        (out / MARKER).write_text(
            json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        _swap_into_place(out, target, work)
    except OSError as exc:  # disk full, permissions: nothing was put in place
        raise DataError(f"cannot write the data directory {target}: {exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"wrote {target} ({report.downloaded_bytes / 1e6:.1f} MB read)")
    return report


def _base_url(base_url: str | None, rel: Release) -> str:
    base = base_url or os.environ.get(rel.url_env) or rel.default_base_url
    return base if base.endswith("/") else base + "/"


def _swap_into_place(new: Path, target: Path, work: Path) -> None:
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
    """The ``RELEASE.json`` of a data directory written by a fetch, or None."""
    try:
        return json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


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


def locate(
    release: str | Release, explicit: str | os.PathLike[str] | None = None
) -> Path:
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
    rel = get_release(release)
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
    release: str | Release = JTJ,
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
    rel = get_release(release)
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
    "DEFAULT_BASE_URL",
    "JTJ",
    "MANIFEST",
    "MARKER",
    "QA_FILES",
    "RELEASE_COMMIT",
    "RELEASE_REPO",
    "URL_ENV",
    "FetchReport",
    "NotOnMirror",
    "RecordSource",
    "Release",
    "blob_id",
    "data_dir_of",
    "fetch_release",
    "get_release",
    "load_plain_pickle",
    "load_record_tsv",
    "locate",
    "locate_or_fetch",
    "plan_records",
    "read_manifest",
    "releases",
]
