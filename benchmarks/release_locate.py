"""Where a release's data directory is, fetching it when allowed (split from
:mod:`voirdire.benchmarks.release`, which re-exports every name here).

:func:`data_dir_of` and :func:`locate` find a fetched data directory (an explicit one, the
release's environment variable, the user data directory, a local copy beside the checkout
converted once); :func:`locate_or_fetch` fetches the release when none is found.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import platformdirs

from voirdire.benchmarks import mirror
from voirdire.benchmarks.data import DATA_ENV, default_data_dir, resolve_data_dir
from voirdire.benchmarks.fetch_steps import MARKER, fetched_release
from voirdire.benchmarks.release import (
    JTJ,
    Release,
    fetch_release,
    get_release,
)
from voirdire.core import ConfigError, DataError


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


__all__ = ["data_dir_of", "local_copies", "locate", "locate_or_fetch"]
