"""What ``voirdire people`` leaves in a directory, as the tables a report shows, and where a
report finds them (``docs/people.md``, "In the report").

``voirdire people DIR…`` writes ``metrics/people_{boards,selective,curve,cascade,settings}.csv``
(:data:`PEOPLE_TABLES`), ``people_pairs.parquet`` and ``people_to_label.csv`` into ``--out``,
by default ``people/`` next to the first directory (:data:`PEOPLE_DIR`). A later ``voirdire
report`` of the same directories finds them (:func:`find_people`) in its own output directory,
else in that default folder, and reads them back (:func:`read_people`) as
:class:`PeopleTables`, the record :func:`people_tables` makes of a fresh
:class:`~voirdire.analysis.people.study.PeopleStudy`: the section is rendered from the same
record either way.

The files are data from a directory possibly received from others: each table is read with
its declared column types, and a table that is missing, cannot be read or lacks a column is
refused in one line. The analysis' CSV writer quotes a text starting like a formula
(``=x`` is written ``'=x``); the names are restored from ``people_pairs.parquet``, which
holds them exactly.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from voirdire import bounds
from voirdire.core import ConfigError
from voirdire.escape import unquote_table
from voirdire.file_set import check_set
from voirdire.layout import METRICS_DIR, PEOPLE_MANIFEST

__all__ = [
    "PEOPLE_DIR",
    "PEOPLE_TABLES",
    "SETTINGS_COLUMNS",
    "PeopleTables",
    "people_tables",
    "settings_table",
    "find_people",
    "read_people",
    "check_manifest",
    "judge_summary",
    "MIN_LABELS",
    "few_labels",
]

#: where ``voirdire people`` writes without ``--out``: this folder next to the first directory
PEOPLE_DIR = "people"

_S, _F, _I, _B = pl.String, pl.Float64, pl.Int64, pl.Boolean
#: the tables ``voirdire people`` writes as ``metrics/people_<name>.csv``, with their columns' types
PEOPLE_TABLES: dict[str, dict[str, Any]] = {
    "boards": {
        "benchmark": _S, "judge": _S, "kind": _S, "estimator": _S, "model": _S, "estimate": _F, "lo": _F,
        "hi": _F, "se": _F, "rating": _F, "rating_lo": _F, "rating_hi": _F, "rank": _I, "rank_lo": _I,
        "rank_hi": _I, "n_labels": _I, "n_pairs": _I, "lam": _F, "n_eff": _F,
    },
    "selective": {
        "benchmark": _S, "judge": _S, "confidence": _S, "pairs": _I, "labels": _I, "alpha": _F, "delta": _F,
        "target_agreement": _F, "threshold": _F, "share_kept": _F, "kept": _I, "agreement_labelled": _F,
        "agreement_all_labelled": _F, "kept_unlabelled": _I, "guarantee": _S, "certifiable_agreement": _F,
        "labels_needed": _I, "note": _S,
    },
    "curve": {
        "benchmark": _S, "judge": _S, "threshold": _F, "kept": _I, "share_kept": _F, "agreement": _F,
        "p_value": _F, "certified": _B,
    },
    "cascade": {
        "benchmark": _S, "stage": _I, "judge": _S, "threshold": _F, "reached": _I, "kept": _I,
        "share_kept": _F, "labelled_kept": _I, "agreement_labelled": _F, "usd_per_pair": _F,
        "cost_usd": _F, "queries": _F,
    },
    "settings": {
        "level": _F, "alpha": _F, "delta": _F, "confidence": _S, "share": _F, "rows": _I, "seed": _I,
        "labels": _I, "unit": _S,
    },
}  # fmt: skip
#: the study's settings, one row of ``metrics/people_settings.csv``
SETTINGS_COLUMNS = list(PEOPLE_TABLES["settings"])
#: the text columns holding received names (restored from people_pairs.parquet)
_NAMES = ("benchmark", "judge", "model")


@dataclass(frozen=True)
class PeopleTables:
    """What the human section shows (``people.md``, the report's section and figure).

    Attributes:
        boards, selective, curve, cascade: the tables of
            :class:`~voirdire.analysis.people.study.PeopleStudy` (columns of :data:`PEOPLE_TABLES`).
        settings: level, alpha, delta, confidence, share, rows, seed, labels (the labels
            used: int).
        to_label: the number of pairs to send to people (``people_to_label.csv``'s rows).
        source: the folder they were read from (its name only; "" for a fresh study).
        figures: the section's figures by caption (a benchmark), their paths relative to
            the Markdown that shows them (a report's ``figures/people_<benchmark>.png``).
    """

    boards: pl.DataFrame
    selective: pl.DataFrame
    curve: pl.DataFrame
    cascade: pl.DataFrame
    settings: dict[str, Any]
    to_label: int
    source: str = ""
    figures: dict[str, str] = field(default_factory=dict)

    @property
    def judges(self) -> set[tuple[str, str]]:
        """The (benchmark, judge) pairs the tables are about."""
        return set(self.selective.select("benchmark", "judge").iter_rows())


def people_tables(study: Any, source: str = "") -> PeopleTables:
    """The :class:`PeopleTables` of a fresh :class:`~voirdire.analysis.people.study.PeopleStudy`."""
    return PeopleTables(
        study.boards, study.selective, study.curve, study.cascade,
        {k: study.settings.get(k) for k in SETTINGS_COLUMNS}, study.to_label.height, source,
    )  # fmt: skip


def settings_table(settings: dict[str, Any]) -> pl.DataFrame:
    """``settings`` as the one-row ``metrics/people_settings.csv``."""
    return pl.DataFrame(
        [[settings.get(k) for k in SETTINGS_COLUMNS]],
        schema=PEOPLE_TABLES["settings"],
        orient="row",
    )


def find_people(
    out_dir: str | os.PathLike, dirs: Sequence[str | os.PathLike]
) -> Path | None:
    """Where a report of ``dirs`` written to ``out_dir`` finds ``voirdire people``'s
    outputs: ``out_dir`` when it holds ``metrics/people_boards.csv``, else
    the folder ``voirdire people`` of the same directories writes by default
    (:func:`~voirdire.analysis.together.default_out`: ``<dir>-people`` next to the first),
    then an older default, :data:`PEOPLE_DIR` next to the first directory, when it does;
    else None. Nothing is read."""
    from voirdire.analysis.together import default_out

    places = [Path(out_dir)]
    if dirs:
        places += [default_out(dirs, PEOPLE_DIR), Path(dirs[0]).parent / PEOPLE_DIR]
    for p in places:
        if (p / METRICS_DIR / "people_boards.csv").is_file():
            return p
    return None


def _read(path: Path, schema: dict[str, Any]) -> pl.DataFrame:
    """One table with its declared columns and types.

    Raises:
        ConfigError: missing, unreadable, or a column missing or of another type.
    """
    if not path.is_file():
        raise ConfigError(
            f"{path} is missing: the outputs of voirdire people are incomplete (run it again)"
        )
    bounds.check_text_table(path, str(path))  # size, encoding, fields: before polars
    bounds.check_ends_whole(path, str(path))
    table = _read_csv(path, schema)
    bounds.check_table(table, str(path), schema, nan=_MAY_BE_NAN)
    return table


#: the columns where ``voirdire people`` writes NaN for a value it did not estimate (a
#: rating, an effective size); elsewhere a NaN or an infinity is refused
_MAY_BE_NAN = ("rating", "rating_lo", "rating_hi", "n_eff", "lam", "se",
               "agreement", "agreement_labelled", "agreement_all_labelled", "threshold", "p_value",
               "share_kept", "usd_per_pair", "cost_usd")  # fmt: skip


def _read_csv(path: Path, schema: dict[str, Any]) -> pl.DataFrame:
    """The table at ``path`` with ``schema``'s columns and types, names unquoted."""
    try:
        head = pl.read_csv(path, n_rows=0).columns
        missing = [c for c in schema if c not in head]
        if missing:
            raise ConfigError(
                f"{path} is not voirdire people's table: no column {missing[0]!r}"
            )
        return unquote_table(  # names as they were before the writer quoted them
            pl.read_csv(
                path,
                schema_overrides=schema,
                infer_schema_length=0,
                columns=list(schema),
            )
        )
    except (pl.exceptions.PolarsError, UnicodeDecodeError, OSError) as exc:
        first = (
            str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        )
        raise ConfigError(
            f"{path} cannot be read as voirdire people's table: {first}"
        ) from None


def _restore_names(
    tables: dict[str, pl.DataFrame], where: Path
) -> dict[str, pl.DataFrame]:
    """The names the CSV writer quoted (``'=x`` for ``=x``) as they are, from the exact
    names of ``people_pairs.parquet`` (left as read without it)."""
    from voirdire.analysis.report.files import FORMULA_START

    pairs = where / "people_pairs.parquet"
    if not pairs.is_file():
        return tables
    try:
        cols = ["benchmark", "judge", "candidate", "reference"]
        p = pl.read_parquet(pairs, columns=cols)
    except Exception:  # noqa: BLE001 - the names stay as the CSVs hold them
        return tables
    names = set().union(
        *(p.get_column(c).drop_nulls().unique().to_list() for c in cols)
    )
    quoted = {"'" + n: n for n in names if n.startswith(FORMULA_START)}
    if not quoted:
        return tables
    return {
        k: t.with_columns(pl.col(c).replace(quoted) for c in _NAMES if c in t.columns)
        for k, t in tables.items()
    }


def check_manifest(where: str | os.PathLike) -> None:
    """Refuse a set of ``voirdire people``'s files without its manifest (a run cut short,
    or killed between two tables, leaves none: the writer removes the old one first) or
    whose files do not match it (a mix of two runs): :func:`voirdire.file_set.check_set`
    with every table of :data:`PEOPLE_TABLES` required.

    Raises:
        ConfigError: one line naming the directory or the file.
    """
    required = [f"{METRICS_DIR}/people_{t}.csv" for t in PEOPLE_TABLES]
    check_set(where, PEOPLE_MANIFEST, "voirdire people", required)


def read_people(where: str | os.PathLike) -> PeopleTables:
    """``voirdire people``'s outputs in ``where`` (:func:`find_people`) as
    :class:`PeopleTables` (module docstring).

    Raises:
        ConfigError: one line naming the file: a table missing, unreadable, without one of
            its columns or with a value of another type; no settings row.
    """
    d = Path(where)
    tables = {
        name: _read(d / METRICS_DIR / f"people_{name}.csv", schema)
        for name, schema in PEOPLE_TABLES.items()
    }
    check_manifest(d)  # each table read and valid: the set, one run's
    settings = tables.pop("settings")
    if settings.height != 1:
        raise ConfigError(
            f"{d / METRICS_DIR / 'people_settings.csv'} holds {settings.height} rows, not one"
        )
    tables = _restore_names(tables, d)
    to_label = d / "people_to_label.csv"
    try:
        n = (
            pl.scan_csv(to_label, infer_schema_length=0)
            .select(pl.len())
            .collect()
            .item()
            if to_label.is_file()
            else 0
        )
    except pl.exceptions.PolarsError:
        n = 0
    return PeopleTables(
        tables["boards"], tables["selective"], tables["curve"], tables["cascade"],
        settings.row(0, named=True), int(n), d.name,
    )  # fmt: skip


def judge_summary(tables: PeopleTables) -> pl.DataFrame:
    """Per (benchmark, judge), the selective table with ``width_ratio`` (mean standard
    error of PPI++'s win rates over classical's (the human labels alone): below 1, the judge
    narrows the human intervals) and ``n_eff`` (the effective labels of PPI++'s win rates, summed over the
    models and halved: each pair enters two models' means)."""
    w = (
        tables.boards.filter(pl.col("kind") == "win_rate")
        .group_by("benchmark", "judge", maintain_order=True)
        .agg(
            width_ratio=pl.col("se").filter(pl.col("estimator") == "ppi").mean()
            / pl.col("se").filter(pl.col("estimator") == "classical").mean(),
            n_eff=pl.col("n_eff").filter(pl.col("estimator") == "ppi").sum() / 2,
        )
    )
    return tables.selective.join(
        w, on=["benchmark", "judge"], how="left", maintain_order="left"
    )


#: the labelled pairs per model below which its interval is flagged: PRD at 5 % labels (16
#: per model) covers 0.87 of the asked 0.90 with questions resampled, at 10 % (32) 0.90
#: (``docs/people.md``, *Coverage*; ``perf/people_validation.py``)
MIN_LABELS = 30


def few_labels(
    tables: PeopleTables, least: int = MIN_LABELS
) -> list[tuple[str, str, str]]:
    """One line per (benchmark, judge) whose human win rates rest on fewer than ``least``
    labelled pairs for some model (the people-alone rows' ``n_labels``):
    ``(benchmark, judge, text)``, the text plain (names as written: the caller escapes it
    for its output), the models fewest labels first, at most 5 named."""
    b = tables.boards.filter(
        (pl.col("kind") == "win_rate")
        & (pl.col("estimator") == "classical")
        & (pl.col("n_labels") < least)
    )
    out = []
    for (bench, judge), g in b.group_by("benchmark", "judge", maintain_order=True):
        g = g.sort("n_labels", "model")
        total = tables.boards.filter(
            (pl.col("benchmark") == bench)
            & (pl.col("judge") == judge)
            & (pl.col("kind") == "win_rate")
            & (pl.col("estimator") == "classical")
        ).height
        named = ", ".join(
            f"{m} {n}" for m, n in g.select("model", "n_labels").head(5).iter_rows()
        )
        more = f" and {g.height - 5} more" if g.height > 5 else ""
        out.append((bench, judge, (
            f"{bench} / {judge}: {g.height} of {total} models have fewer than {least} labelled "
            f"pairs ({named}{more}): their intervals may cover less than asked (PRD with 16 "
            "labelled pairs per model: 0.87 for 0.90); label more of their pairs"
        )))  # fmt: skip
    return out
