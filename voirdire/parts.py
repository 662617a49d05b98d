"""Reading the raw parts of an output directory: the reader both the engine's store and the
analysis use (it imports no engine and no Ray).

Parts are ``raw/<judge>/part-*.parquet`` (:mod:`voirdire.layout`) of one schema
(:data:`voirdire.schema.RAW_SCHEMA`). Reading deduplicates by ``(judge, unit_id)`` (the last
written row wins), so a unit is present exactly once even if a crash fell between writing a
compacted part and removing the parts it replaced. A part that cannot be read (truncated or
corrupted) is skipped and named in one :class:`~voirdire.exceptions.CorruptPartWarning`; a
reader writes, creates and moves nothing (the engine's
:class:`~voirdire.engine.store.ResultStore`, the writer, moves such parts aside).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from voirdire.core import ConfigError, slug
from voirdire.exceptions import CorruptPartWarning
from voirdire.layout import RAW_DIR
from voirdire.schema import RAW_SCHEMA

__all__ = ["READ_ERRORS", "PartReader", "dedup"]

#: what reading a damaged Parquet file raises (polars' "File out of specification" is a
#: ComputeError; pyarrow raises ArrowInvalid/ArrowIOError, an OSError)
READ_ERRORS = (
    pl.exceptions.PolarsError,
    pl.exceptions.PanicException,
    pa.ArrowException,
    OSError,
)

T = TypeVar("T")


class PartReader:
    """Reads the part files under ``<output_dir>/<subdir>``; writes, creates and moves nothing.

    Args:
        output_dir: the job's output directory.
        subdir: the folder of the parts (``raw``; the rewrite stage uses ``rewrites``).
        schema: the table schema of the rows (``RAW_SCHEMA``; rewrites: ``REWRITE_SCHEMA``).

    Unreadable parts are skipped and listed in :attr:`skipped` (one
    :class:`CorruptPartWarning` per :meth:`read_raw`).
    """

    readonly = True

    def __init__(
        self,
        output_dir: str | os.PathLike,
        subdir: str = RAW_DIR,
        schema: pa.Schema = RAW_SCHEMA,
    ) -> None:
        self.root = Path(output_dir)
        self.schema = schema
        self.raw_dir = self.root / subdir
        self._checked: dict[
            Path, tuple[int, int]
        ] = {}  # part -> (size, mtime_ns) whose footer was read
        self._unreadable: set[Path] = (
            set()
        )  # parts that could not be moved aside (read-only)
        #: unreadable parts a reader skipped (left where they are)
        self.skipped: list[Path] = []

    def _parts(self, judge: str | None = None) -> list[Path]:
        """The readable part files of one judge (or all): each part's Parquet footer is
        read once (per size and modification time); unreadable ones are quarantined."""
        base = self.raw_dir / slug(judge) if judge else self.raw_dir
        if not base.exists():
            return []
        parts = []
        for p in sorted(base.rglob("part-*.parquet")):
            if p in self._unreadable:
                continue
            st = p.stat()
            if self._checked.get(p) != (st.st_size, st.st_mtime_ns):
                try:
                    pq.read_metadata(p)
                except READ_ERRORS as exc:
                    self._quarantine(p, exc)
                    continue
                self._checked[p] = (st.st_size, st.st_mtime_ns)
            parts.append(p)
        return parts

    def _quarantine(self, part: Path, exc: BaseException) -> None:
        """Skip an unreadable part from now on, and leave it where it is (the writer,
        :class:`~voirdire.engine.store.ResultStore`, moves it aside)."""
        self._checked.pop(part, None)
        self._unreadable.add(part)
        self.skipped.append(part)

    def _collect(self, judge: str | None, read: Callable[[list[Path]], T]) -> T:
        """``read(parts)`` over the readable parts; when a part's footer was fine but its
        data is damaged, find it (reading each part alone), quarantine it and read again."""
        while True:
            parts = self._parts(judge)
            if not parts:
                return read([])
            try:
                return read(parts)
            except pl.exceptions.SchemaError:
                self._retyped(parts)
                raise
            except READ_ERRORS:
                bad = []
                for p in parts:
                    try:
                        pq.read_table(p)
                    except READ_ERRORS as exc:
                        bad.append((p, exc))
                if not bad:
                    raise
                for p, exc in bad:
                    self._quarantine(p, exc)

    def _retyped(self, parts: list[Path]) -> None:
        """Raise ConfigError naming the first part with a column of another type than this
        store's schema (a part edited or made by hand: ``repetition`` as text)."""
        for p in parts:
            try:
                found = pq.read_schema(p)
            except READ_ERRORS:
                continue
            for f in self.schema:
                i = found.get_field_index(f.name)
                if i >= 0 and not found.field(i).type.equals(f.type):
                    raise ConfigError(
                        f"{p}: column {f.name!r} has type {found.field(i).type}, not "
                        f"{f.type}; not a voirdire result file (remove or restore it)"
                    ) from None

    def _empty(self) -> pl.DataFrame:
        """No rows, the store's columns (an empty Arrow table made from no batches:
        ``Schema.empty_table`` would import pandas, 0.2 s)."""
        return pl.from_arrow(pa.Table.from_batches([], schema=self.schema))  # type: ignore[return-value]

    def _scan(self, parts: list[Path]) -> pl.LazyFrame:
        # parts written before a column was added to the schema (e.g. ``gold``) read it as null
        schema = self._empty().schema
        # a column no voirdire writes (a part edited or made by hand) is not ours: ignored
        return pl.scan_parquet(
            parts, schema=schema, missing_columns="insert", extra_columns="ignore"
        )

    def read_raw(self, columns: list[str] | None = None) -> pl.DataFrame:
        """All raw rows, one per (judge, unit id) (the latest written wins).

        Returns a DataFrame with RAW_SCHEMA's columns (or ``columns``); empty when nothing
        was written. Unreadable parts are quarantined (:class:`CorruptPartWarning`) and
        their rows are missing from the result.
        """

        def read(parts: list[Path]) -> pl.DataFrame:
            if not parts:
                return self._empty()
            return dedup(self._scan(parts).collect())

        before = len(self.skipped)
        df = self._collect(None, read)
        if len(self.skipped) > before:
            self._warn_skipped(self.skipped[before:])
        return df.select(columns) if columns else df

    def _warn_skipped(self, parts: list[Path]) -> None:
        """One warning naming the unreadable parts a readonly store skipped."""
        names = ", ".join(str(p.relative_to(self.raw_dir)) for p in parts[:5])
        more = f" and {len(parts) - 5} more" if len(parts) > 5 else ""
        warnings.warn(
            f"{len(parts)} unreadable result file(s) in {self.raw_dir} skipped: {names}{more}; "
            "their rows are missing from these results (left as they are: a reader moves "
            "nothing; running the job again asks their units again)",
            CorruptPartWarning,
            stacklevel=3,
        )


def dedup(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with one row per (judge or rewriter, unit id), the last; ``df`` itself when
    no unit is there twice."""
    # per judge: two judges of the same identity (same backend, model and sampling, other
    # labels) share unit ids by design (a cache hit for one is a hit for the other)
    # (rewrites: per rewriter)
    who = "judge" if "judge" in df.columns else "rewriter"
    if not df.select(who, "unit_id").is_duplicated().any():
        return df  # what unique gives, without a copy of every row (a compacted part)
    return df.unique(subset=[who, "unit_id"], keep="last", maintain_order=True)
