"""Where the benchmark data lives, and reading its tables.

The question/answer tables and the judge outputs of the "Judging the Judges" release are
never copied into the project: they are read from a configured data directory in one
layout (``qa/*.xlsx``, ``judgments/<study>/<benchmark>/<judge>.jsonl.gz``), the one
``voirdire data fetch`` writes from the public release (:mod:`voirdire.benchmarks.releases.catalogue`).
Only the prompt templates are package data (``benchmarks/templates/prompts.json``).
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
from typing import Any

import platformdirs
import polars as pl

from voirdire.core import ConfigError

#: Environment variable naming the data directory (the release's layout).
DATA_ENV = "VOIRDIRE_DATA"

#: Relative location of the data directory next to a checkout.
_DATA_REL = pathlib.Path("shared") / "data" / "judging-the-judges"

_RELEASE_HINT = (
    "The public release is the Position-Bias-Analyzer repository of Shi et al., "
    '"Judging the Judges: A Systematic Study of Position Bias in LLM-as-a-Judge" '
    "(MIT licence, copyright 2024 Slimshilin): run `voirdire data fetch` to download it, or point "
    f"the job's data_dir or the {DATA_ENV} environment variable at a directory with its qa/ tables."
)

#: the package's prompt templates (package data)
TEMPLATE_DIR = pathlib.Path(__file__).resolve().parent / "templates"


def default_data_dir() -> pathlib.Path:
    """Where ``voirdire data fetch`` writes the release by default: the user data directory
    of ``platformdirs`` (``~/.local/share/voirdire/judging-the-judges`` on Linux,
    ``~/Library/Application Support/voirdire/...`` on macOS)."""
    return pathlib.Path(platformdirs.user_data_dir("voirdire")) / "judging-the-judges"


def candidate_data_dirs() -> list[pathlib.Path]:
    """The fallback locations tried, in order, when no explicit path or env var is set.

    ``<cwd>/../shared/data/judging-the-judges``, ``<cwd>/shared/data/judging-the-judges`` (a
    local copy beside a checkout, run from its root), then :func:`default_data_dir` (what
    ``voirdire data fetch`` wrote). Nothing is looked up relative to where the package is
    installed.
    """
    cwd = pathlib.Path.cwd()
    return [cwd.parent / _DATA_REL, cwd / _DATA_REL, default_data_dir()]


def _given_dir(path: str | os.PathLike[str], where: str) -> pathlib.Path:
    """A data directory named by the user (``where``: how), resolved. Raises ConfigError."""
    p = pathlib.Path(path).expanduser()
    if not p.is_dir():
        raise ConfigError(
            f"benchmark data directory {str(p)!r} ({where}) does not exist or is not a directory. {_RELEASE_HINT}"
        )
    return p.resolve()


def resolve_data_dir(explicit: str | os.PathLike[str] | None = None) -> pathlib.Path:
    """The data directory holding the release's ``qa/`` tables and judge outputs.

    Order: ``explicit`` (the job file's ``data_dir``), then the ``VOIRDIRE_DATA``
    environment variable, then the first existing of :func:`candidate_data_dirs`. An
    explicit path or an env var that names a missing directory is an error (it never falls
    through to the defaults, so a typo is not silently replaced by another data set).

    Returns:
        The resolved absolute directory.

    Raises:
        ConfigError: the explicit/env path is not a directory, or none of the defaults
            exists; the message lists what was tried and where the public release is.
    """
    if explicit is not None and str(explicit) != "":
        return _given_dir(explicit, "given explicitly")
    env = os.environ.get(DATA_ENV)
    if env:
        return _given_dir(env, f"from ${DATA_ENV}")
    tried = candidate_data_dirs()
    for p in tried:
        if p.is_dir():
            return p.resolve()
    listing = ", ".join(str(p) for p in tried)
    raise ConfigError(
        f"no benchmark data directory found: no explicit data_dir, ${DATA_ENV} unset, and "
        f"none of these exists: {listing}. {_RELEASE_HINT}"
    )


def require_file(data_dir: str | os.PathLike[str], relpath: str) -> pathlib.Path:
    """``data_dir / relpath``, checked to be an existing file.

    Raises:
        ConfigError: the file does not exist (the message names it and the directory).
    """
    p = pathlib.Path(data_dir) / relpath
    if not p.is_file():
        raise ConfigError(
            f"required benchmark file {relpath!r} not found in data directory "
            f"{str(data_dir)!r} (looked for {str(p)!r}). {_RELEASE_HINT}"
        )
    return p


def require_columns(
    df: pl.DataFrame, columns: list[str] | tuple[str, ...], path: os.PathLike[str] | str
) -> None:
    """Check that ``df`` (read from ``path``) has every column in ``columns``.

    Raises:
        ConfigError: naming the file and the first missing column (all missing ones listed).
    """
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ConfigError(
            f"benchmark table {str(path)!r} lacks required column {missing[0]!r}"
            + (
                f" (also missing: {', '.join(map(repr, missing[1:]))})"
                if len(missing) > 1
                else ""
            )
            + f"; its columns are: {', '.join(df.columns)}"
        )


@functools.lru_cache(maxsize=32)
def _read_excel_cached(path: str, mtime_ns: int, size: int) -> pl.DataFrame:
    del mtime_ns, size  # cache key only: a rewritten file is read again
    try:
        # infer_schema_length=0: every column as String (no float ids, no dtype guessing
        # warnings for all-empty columns); empty cells are null.
        return pl.read_excel(path, engine="calamine", infer_schema_length=0)
    except Exception as exc:  # corrupt or non-xlsx file
        raise ConfigError(f"cannot read benchmark table {path!r}: {exc}") from exc


def read_table(path: str | os.PathLike[str]) -> pl.DataFrame:
    """A published xlsx table (first sheet), every column as ``pl.String``, nulls for empty cells.

    Read with polars/fastexcel (calamine) and cached per (path, mtime, size), so loading a
    benchmark again is free. Numeric cells come back as their text (``81``, not ``81.0``).

    Raises:
        ConfigError: missing or unreadable file.
    """
    p = pathlib.Path(path)
    if not p.is_file():
        raise ConfigError(f"benchmark table {str(p)!r} not found. {_RELEASE_HINT}")
    st = p.stat()
    return _read_excel_cached(str(p.resolve()), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4)
def package_templates(name: str) -> dict[str, Any]:
    """A JSON file of prompt templates shipped with the package (``templates/<name>``).

    Raises:
        ConfigError: the package data is missing (a broken install).
    """
    path = TEMPLATE_DIR / name
    if not path.is_file():
        raise ConfigError(f"prompt templates missing from the package: {path}")
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def load_templates() -> dict[str, Any]:
    """The release's judge prompt templates (package data ``templates/prompts.json``).

    Keys: ``mtbench`` (``general``, ``math``, ``verdict_pattern``), ``devbench``
    (``prefix``, ``options`` {"2","3","4"}, ``suffix``, ``question_block``,
    ``response_1_block``, ``response_2_block``, ``reference_block``,
    ``verdict_pattern``). Source: Position-Bias-Analyzer (MIT); the MT-Bench templates are
    FastChat's pairwise multi-turn judge prompts (Apache-2.0); see templates/NOTICE.txt.

    Raises:
        ConfigError: the package data is missing (a broken install).
    """
    return package_templates("prompts.json")


def normalise_id(value: str) -> str:
    """A question id as text: integral numbers lose a float suffix (``"81.0"`` → ``"81"``)."""
    s = value.strip()
    if s.endswith(".0") and s[:-2].lstrip("-").isdigit():
        return s[:-2]
    return s
