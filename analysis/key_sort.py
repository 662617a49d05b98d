"""Sorting a frame by many key columns through one integer key.

Polars sorts on several string columns by comparing the strings row against row: 9 s of
CPU for 2 × 10⁶ rows on six key columns (benchmark, strategy, judge, candidate, task,
question). The keys of the analysis' tables hold few distinct values each (hundreds of
candidates, thousands of questions), so each column is replaced by its value's place among
the column's sorted distinct values, and the places are packed into one unsigned 64-bit
integer (mixed radix, the first key the most significant), sorted once: the same order,
about 1 s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

__all__ = ["sort_by_keys"]

_LIMIT = 2**63


def _places(
    s: pl.Series, descending: bool, nulls_last: bool
) -> tuple[np.ndarray, int] | None:
    """Each row's place in the order of ``s`` (uint64, 0-based) and the number of
    places; None where a place cannot be had this way (a NaN, a nested type)."""
    if s.dtype.is_nested() or (s.dtype.is_float() and s.is_nan().any()):
        return None
    values = s.drop_nulls().unique().sort()
    m = values.len()
    nulls = s.null_count() > 0
    if m and s.dtype in (pl.String, pl.Categorical, pl.Enum, pl.Binary):
        # a hash join of the rows on the distinct values: 4 × faster than a binary
        # search per row among 500,000 question ids
        table = pl.DataFrame({"v": values, "_at": np.arange(m, dtype=np.uint64)})
        at = (
            s.alias("v")
            .to_frame()
            .join(table, on="v", how="left", maintain_order="left")
            .get_column("_at")
            .fill_null(0)
            .to_numpy()
        )
    elif m:
        at = values.search_sorted(s.fill_null(values[0]), side="left").to_numpy()
        at = at.astype(np.uint64)
    else:
        at = np.zeros(s.len(), dtype=np.uint64)
    if descending:
        at = np.uint64(max(m - 1, 0)) - at
    if nulls:
        is_null = s.is_null().to_numpy()
        if nulls_last:
            at = np.where(is_null, np.uint64(m), at)
        else:
            at = np.where(is_null, np.uint64(0), at + np.uint64(1))
    return at.astype(np.uint64, copy=False), m + int(nulls)


def sort_by_keys(
    df: pl.DataFrame,
    keys: Sequence[str],
    *,
    descending: bool | Sequence[bool] = False,
    nulls_last: bool = False,
) -> pl.DataFrame:
    """``df`` sorted by ``keys`` as ``df.sort(keys, descending=..., nulls_last=...)``
    sorts it, rows of equal keys in their order in ``df`` (a stable sort).

    Each key column becomes its rows' places among its sorted distinct values, packed into
    one uint64 (the first key the most significant); where the places' product passes
    2⁶³, or a key column holds a NaN or a nested type, it falls back to ``df.sort``
    (``maintain_order=True``).

    Args:
        df: any frame holding ``keys``.
        keys: the columns to sort by, the first the most significant.
        descending: one flag for every key, or one per key.
        nulls_last: nulls after the values (else before), in every key.

    Returns:
        ``df``'s rows in order, its columns unchanged.
    """
    keys = list(keys)
    flags = (
        [bool(descending)] * len(keys)
        if isinstance(descending, bool)
        else [bool(d) for d in descending]
    )
    if len(flags) != len(keys):
        raise ValueError(f"{len(flags)} descending flags for {len(keys)} keys")

    def fallback() -> pl.DataFrame:
        return df.sort(
            keys, descending=flags, nulls_last=nulls_last, maintain_order=True
        )

    if df.height < 2 or not keys:
        return fallback()
    packed = np.zeros(df.height, dtype=np.uint64)
    span = 1
    for key, flag in zip(keys, flags, strict=True):
        got = _places(df.get_column(key), flag, nulls_last)
        if got is None:
            return fallback()
        at, m = got
        m = max(m, 1)
        span *= m
        if span >= _LIMIT:
            return fallback()
        packed = packed * np.uint64(m) + at
    order = np.argsort(packed, kind="stable")
    return df[order]
