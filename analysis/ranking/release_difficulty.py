"""Where the LC v1 formula's instruction difficulty comes from: the whole release, fitted once
and cached, or the audited models (``voirdire rank --style --lc-difficulty``).

AlpacaEval reads one fixed difficulty table per annotator, whichever models it evaluates.
Refitting it on the audited models (``audited``) makes a model's LC win rate move with the
others audited beside it: 8 of AlpacaEval 2's models audited alone move by up to a few
points (``docs/ranking.md``, *Where the difficulty comes from*). ``release`` fits it, by
the same procedure (:func:`~voirdire.analysis.ranking.difficulty.instruction_difficulty`), on
every model of the release the audited logs belong to (the benchmark's
:meth:`~voirdire.benchmarks.kind.BenchmarkKind.length_control_release` rows), so a subset's
models get exactly the LC win rate they have in the audit of the whole release. ``auto``
(the default): ``release`` where the benchmark's data holds the release, else ``audited``.

The fit is a pure function of its rows (:func:`board_difficulty`); :func:`cached_difficulty`
wraps it with a file cache (``$VOIRDIRE_LC_CACHE``, else ``<user cache
dir>/voirdire/lc-difficulty``), one Parquet file per fit named by :func:`difficulty_key`,
the hash of everything the fit reads (the rows, the baseline, the reference instruction, the
fit's version): a changed annotation is another key, and the full release's fit (57 models:
about a minute of one core) is paid once per annotator.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

import platformdirs
import polars as pl

from voirdire.analysis.ranking.difficulty import instruction_difficulty
from voirdire.core import ConfigError

__all__ = [
    "DIFFICULTY_SOURCES",
    "FIT_COLUMNS",
    "board_difficulty",
    "cache_dir",
    "cached_difficulty",
    "check_source",
    "difficulty_key",
    "release_fit_rows",
]

#: the sources ``voirdire rank --lc-difficulty`` takes (module docstring)
DIFFICULTY_SOURCES = ("auto", "release", "audited")
#: the columns a difficulty fit reads, per comparison with the baseline
FIT_COLUMNS = ["model", "cluster", "y", "len_m", "len_b"]
#: enters every cache key: a change to the fit's procedure is another key
FIT_VERSION = "instruction_difficulty/1"


def board_difficulty(
    rows: pl.DataFrame, baseline: str, reference: object
) -> dict[object, float]:
    """Each instruction's fitted difficulty (``reference``'s is 0) from ``rows``
    (:data:`FIT_COLUMNS`, one per decided comparison with ``baseline``, lengths known), the
    baseline against itself on every instruction counted as a tie at equal length, as the
    notebook's data hold it (AlpacaEval's leaderboard lists the baseline at 50 %)."""
    fit = rows.select(FIT_COLUMNS)
    own = (
        fit.select("cluster")
        .unique(maintain_order=True)
        .select(
            model=pl.lit(baseline),
            cluster="cluster",
            y=pl.lit(0.5),
            len_m=pl.lit(0.0),
            len_b=pl.lit(0.0),
        )
    )
    both = pl.concat([fit, own], how="vertical_relaxed")
    return dict(instruction_difficulty(both, reference).iter_rows())


def release_fit_rows(
    release: pl.DataFrame | None, judge: str, baseline: str
) -> tuple[pl.DataFrame, str] | None:
    """``(rows, reference)`` of the release's fit for one judge and baseline: the release's
    comparisons (:data:`~voirdire.benchmarks.logs.alpaca_eval_release.RELEASE_SCHEMA`) of
    ``judge`` against ``baseline``, in the order an audit of the whole release sorts its
    board (model, question), and the instruction of its first row in release order (the
    reference, ``d = 0``); None where the release holds none."""
    if release is None:
        return None
    r = release.filter((pl.col("judge") == judge) & (pl.col("baseline") == baseline))
    if r.height == 0:
        return None
    ref = r.sort("order").get_column("cluster")[0]
    return r.sort("model", "question_id").select(FIT_COLUMNS), ref


def difficulty_key(rows: pl.DataFrame, baseline: str, reference: str) -> str:
    """The cache key of a fit: SHA-256 (hex, 32 characters) of :data:`FIT_VERSION`, the
    baseline, the reference and ``rows``' :data:`FIT_COLUMNS` as CSV (their order too: the
    fit's folds follow it)."""
    h = hashlib.sha256()
    for part in (FIT_VERSION, baseline, reference):
        h.update(part.encode() + b"\x1f")
    h.update(rows.select(FIT_COLUMNS).write_csv().encode())
    return h.hexdigest()[:32]


def cache_dir() -> Path:
    """Where fitted difficulties are kept: ``$VOIRDIRE_LC_CACHE``, else
    ``<user cache dir>/voirdire/lc-difficulty``."""
    env = os.environ.get("VOIRDIRE_LC_CACHE")
    return (
        Path(env)
        if env
        else Path(platformdirs.user_cache_dir("voirdire")) / "lc-difficulty"
    )


def cached_difficulty(
    rows: pl.DataFrame,
    baseline: str,
    reference: str,
    directory: Path | None = None,
) -> dict[object, float]:
    """:func:`board_difficulty` of ``rows``, read from ``directory`` (default
    :func:`cache_dir`) as ``<key>.parquet`` (:func:`difficulty_key`) where an earlier fit
    wrote it, else fitted and written there (atomically; a cache that cannot be written is
    passed over). A cached file that is no table of ``cluster`` (str), ``difficulty``
    (float) is fitted again."""
    d = cache_dir() if directory is None else Path(directory)
    path = d / f"{difficulty_key(rows, baseline, reference)}.parquet"
    if path.is_file() and not path.is_symlink():
        try:
            got = pl.read_parquet(path)
            if got.schema == pl.Schema(
                {"cluster": pl.String, "difficulty": pl.Float64}
            ):
                return dict(got.iter_rows())
        except (pl.exceptions.PolarsError, OSError):
            pass
    fitted = board_difficulty(rows, baseline, reference)
    try:
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp"
        pl.DataFrame(
            {"cluster": list(fitted), "difficulty": list(fitted.values())},
            schema={"cluster": pl.String, "difficulty": pl.Float64},
        ).write_parquet(tmp)
        os.replace(tmp, path)
    except OSError:
        pass
    return fitted


def check_source(source: str) -> None:
    """Raises:
    ConfigError: ``source`` is not one of :data:`DIFFICULTY_SOURCES`."""
    if source not in DIFFICULTY_SOURCES:
        raise ConfigError(
            f"unknown LC difficulty source {source!r}; known: {', '.join(DIFFICULTY_SOURCES)}"
        )
