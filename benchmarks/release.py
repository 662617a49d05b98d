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

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from voirdire.benchmarks import fetch_steps, mirror, release_jtj
from voirdire.benchmarks.data import DATA_ENV
from voirdire.benchmarks.fetch_steps import MARKER, fetched_release
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
    attribute), in the benchmarks' order (imports every built-in benchmark module), then
    the public judgment logs (:data:`voirdire.benchmarks.log_release.LOG_RELEASES`)."""
    from voirdire.benchmarks.log_release import LOG_RELEASES
    from voirdire.benchmarks.registry import BENCHMARKS

    out: dict[str, Release] = {}
    for cls in BENCHMARKS.items().values():
        rel = getattr(cls, "release", None)
        if rel is not None:
            out.setdefault(rel.name, rel)
    for name, rel in LOG_RELEASES.items():
        out.setdefault(name, rel)
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
    fetch_steps.check_target(target)
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
        _check_skipped(done.skipped, strict, log)
        report = FetchReport(target, src.bytes, done.files, done.judges, done.skipped)
        fetch_steps.write_marker(out, _record(rel, base, report))
        fetch_steps.swap_into_place(out, target, work)
    except OSError as exc:  # disk full, permissions: nothing was put in place
        raise DataError(f"cannot write the data directory {target}: {exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"wrote {target} ({report.downloaded_bytes / 1e6:.1f} MB read)")
    return report


def _check_skipped(
    skipped: list[str], strict: bool, log: Callable[[str], None]
) -> None:
    """Log each file the mirror lacked; with ``strict``, raise DataError naming the first."""
    if skipped and strict:
        raise DataError(
            f"strict fetch: {len(skipped)} judge output(s) not on the mirror; the first: {skipped[0]}"
        )
    for s in skipped:
        log(f"skipped: {s}")


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


# the data directory lookup, split off (it calls fetch_release): re-exported here
from voirdire.benchmarks.release_locate import (  # noqa: E402
    data_dir_of,
    local_copies,
    locate,
    locate_or_fetch,
)

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
    "fetched_release",
    "get_release",
    "load_plain_pickle",
    "local_copies",
    "load_record_tsv",
    "locate",
    "locate_or_fetch",
    "plan_records",
    "read_manifest",
    "releases",
]
