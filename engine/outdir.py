"""Output directories that are ours, and names and paths that are safe to write.

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
Judge names become folder names (``raw/<slug(name)>/``): :func:`check_judge_name` refuses
names without a letter or digit (whose folder would be ``.``, ``..``, ``_``: empty), names
over :data:`MAX_NAME` characters, names holding NUL, names shaped like an API key (a key
pasted as a name would reach folder names, ``job.json``, the tables and the terminal) and
the analysis's own names; names are compared as shown (:func:`name_key`: trimmed, invisible
characters dropped), so ``"people "`` is ``people``. :func:`check_path_text` refuses output
paths holding NUL or longer than the system allows.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from voirdire.core import ConfigError
from voirdire.layout import (  # the layout is declared in core: the analysis reads it too
    FIGURES_DIR,
    JOB_FILE,
    METRICS_DIR,
    REPORT_FILES,
    read_job_record,
)

_REPORT_DIRS = {METRICS_DIR: (".csv",), FIGURES_DIR: (".png", ".svg")}
#: judge names the analysis gives its own rows: the people's leaderboard (``voirdire rank``)
#: and the jury panels (``panel-N``, ``voirdire mitigate``); a judge may not take one
RESERVED_NAMES = re.compile(r"people|panel-[0-9]+")
#: the longest judge name (characters)
MAX_NAME = 200
#: the longest output path (bytes, UTF-8) and path component (Linux's PATH_MAX and NAME_MAX)
MAX_PATH, MAX_COMPONENT = 4096, 255


def check_judge_name(name: str) -> str:
    """``name`` when it is a safe judge (or rewriter) name; its folder is ``slug(name)``.
    Checked on the resolved judges, after entries standing for several (``name = "*"`` of
    a replay judge) were expanded.

    Raises:
        ConfigError: empty, over :data:`MAX_NAME` characters, holding NUL, without a
            letter or digit (its folder would be ``.``, ``..``, ``_``), shaped like an API
            key (:func:`check_not_key`), or one of the analysis's own names
            (:data:`RESERVED_NAMES`: ``people``, ``panel-N``, compared by :func:`name_key`).
    """
    if "\x00" in name:
        raise ConfigError(
            f"judge name {name.replace(chr(0), '<NUL>')[:60]!r} holds a NUL byte"
        )
    if len(name) > MAX_NAME:
        raise ConfigError(
            f"judge name {name[:40]!r}... has {len(name)} characters; at most {MAX_NAME} are allowed"
        )
    if not re.search(
        "[A-Za-z0-9]", name
    ):  # its folder, slug(name), would be ".", "..", "_" or such
        raise ConfigError(
            f"judge name {name!r} has no letter or digit: it names no folder of its own"
        )
    check_not_key(name)
    check_reserved([name])
    return name


def name_key(name: str) -> str:
    """A name as it is compared: as shown, so Unicode compatibility forms folded (NFKC),
    invisible format characters (zero-width spaces, direction marks) and control
    characters dropped, and whitespace trimmed: ``"people "`` and ``"people\u200b"`` are
    ``"people"``."""
    text = unicodedata.normalize("NFKC", name)
    return "".join(
        c for c in text if unicodedata.category(c) not in ("Cf", "Cc")
    ).strip()


def check_not_key(name: str) -> None:
    """Refuse a name shaped like an API key: ``sk-...`` (OpenAI, ``sk-ant-...`` Anthropic),
    ``AIza...`` (Google), a masked echo (``abc1****wxyz``) or holding the value of a
    secret environment variable (:func:`voirdire.engine.secrets.redact_message`'s rule). A
    key pasted as a judge's name (``--option judge=sk-...``) would land in the folder name,
    ``job.json``, the tables and the terminal.

    Raises:
        ConfigError: one line, the name shown redacted.
    """
    from voirdire.engine.secrets import redact_message

    shown = redact_message(name)
    if shown != name:
        raise ConfigError(
            f"judge name {shown[:60]!r} looks like an API key (sk-..., AIza..., or the value of "
            "a secret environment variable); a key is never a name: name the judge by its model"
        )


def check_reserved(judges: Iterable[str]) -> None:
    """Refuse judge names the analysis uses for its own rows (:data:`RESERVED_NAMES`),
    compared as shown (:func:`name_key`): a judge named ``people`` (or ``"people "``) would
    be read as, or shown as, the people's leaderboard, ``panel-2`` as a jury.

    Raises:
        ConfigError: one line naming the first such judge.
    """
    for name in judges:
        if isinstance(name, str) and RESERVED_NAMES.fullmatch(name_key(name)):
            raise ConfigError(
                f"judge name {name!r} is voirdire's own (the people's leaderboard is 'people', "
                "a jury panel 'panel-N'); rename the judge"
            )


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
            if not ok and not entry.is_symlink():
                raise ConfigError(
                    f"{out} holds {entry.name}, which no voirdire report writes: not a voirdire "
                    "directory; choose a new or empty directory"
                )
    _refuse_links(out, "report directory")
    return out
