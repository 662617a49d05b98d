"""Checking a user's pairs once read (:mod:`voirdire.benchmarks.own_pairs.data`): the mapped
columns, the ids and the gold labels.

:func:`checked_columns`: every mapped column exists and is not empty (all null/blank);
required cells (id, instruction, outputs, model names) are not null. :func:`unique_ids`:
ids are unique. :func:`gold_labels`: gold labels are in the allowed values (each number as
written, ``2.0`` as ``2``). Every failure is a one-line :class:`~voirdire.core.ConfigError`
naming the source, the column and the row (1-based data row, in source order), before
anything is sent.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from voirdire.benchmarks.own_pairs.data import as_text
from voirdire.core import ConfigError

#: gold values naming the first / second output, and ties (compared lower case, stripped)
GOLD_FIRST = ("1", "a", "model_a", "output_a")
GOLD_SECOND = ("2", "b", "model_b", "output_b")
GOLD_TIE = ("tie", "tie (bothbad)")


def checked_columns(
    df: pl.DataFrame, columns: dict[str, str], required: Sequence[str], where: str
) -> dict[str, pl.Series]:
    """The mapped columns as text, checked.

    Args:
        columns: role -> column name (e.g. ``{"instruction": "prompt", ...}``).
        required: roles whose cells may not be null.

    The ``gold`` role's numbers are read each on its own (:func:`as_text` with ``each``).

    Raises:
        ConfigError: a missing column, an empty column (every cell null or blank), or a
            null cell in a required column (naming the role's column and the 1-based row).
    """
    if df.height == 0:
        raise ConfigError(f"pairs data {where}: no rows")
    out = {}
    for role, col in columns.items():
        s = as_text(df, col, where, each=role == "gold")
        blank = s.is_null() | (s.str.strip_chars() == "")
        if bool(blank.all()):
            raise ConfigError(f"pairs data {where}: column {col!r} ({role}) is empty")
        if role in required:
            nulls = s.is_null().arg_true()
            if len(nulls):
                raise ConfigError(
                    f"pairs data {where}: empty {col!r} ({role}) in row {int(nulls[0]) + 1}"
                )
        out[role] = s
    return out


def unique_ids(ids: pl.Series, column: str, where: str) -> None:
    """Raises ConfigError naming the first id that appears twice and both rows (1-based)."""
    blank = (ids.str.strip_chars() == "").arg_true()
    if len(blank):
        raise ConfigError(
            f"pairs data {where}: empty id in column {column!r}, row {int(blank[0]) + 1}"
        )
    dup = ids.is_duplicated().arg_true()
    if len(dup):
        first = ids[int(dup[0])]
        rows = (ids == first).arg_true()
        raise ConfigError(
            f"pairs data {where}: duplicate id {first!r} in column {column!r} (rows {int(rows[0]) + 1} and {int(rows[1]) + 1})"
        )


def gold_labels(
    labels: pl.Series, first: pl.Series, second: pl.Series, column: str, where: str
) -> pl.Series:
    """Gold labels as the name of the better model, ``"tie"``, or null (no label).

    Allowed values (case and surrounding spaces ignored): :data:`GOLD_FIRST` (``1``,
    ``a``, ``model_a``, ``output_a``: the first output), :data:`GOLD_SECOND` (``2``,
    ``b``, ``model_b``, ``output_b``), :data:`GOLD_TIE` (``tie``, ``tie (bothbad)``), or
    the row's model name itself (exact); a null or blank cell is no label.

    Args:
        labels, first, second: the gold column and the two outputs' model names, as text.

    Raises:
        ConfigError: a value outside those, naming it, the column and the row (1-based).
    """
    low = labels.str.strip_chars().str.to_lowercase()
    frame = pl.DataFrame(
        {"raw": labels.str.strip_chars(), "low": low, "a": first, "b": second}
    )
    out = frame.select(
        gold=pl.when(pl.col("low").is_null() | (pl.col("low") == ""))
        .then(None)
        .when(pl.col("low").is_in(GOLD_TIE))
        .then(pl.lit("tie"))
        .when(pl.col("low").is_in(GOLD_FIRST) | (pl.col("raw") == pl.col("a")))
        .then(pl.col("a"))
        .when(pl.col("low").is_in(GOLD_SECOND) | (pl.col("raw") == pl.col("b")))
        .then(pl.col("b"))
        .otherwise(pl.lit("\x00bad"))
    ).get_column("gold")
    bad = (out == "\x00bad").arg_true()
    if len(bad):
        i = int(bad[0])
        raise ConfigError(
            f"pairs data {where}: gold label {labels[i]!r} in column {column!r}, row {i + 1}, is not one of "
            f"1/2, a/b, model_a/model_b, tie or the row's model names ({first[i]!r}, {second[i]!r})"
        )
    return out


__all__ = [
    "GOLD_FIRST",
    "GOLD_SECOND",
    "GOLD_TIE",
    "checked_columns",
    "gold_labels",
    "unique_ids",
]
