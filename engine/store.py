"""The result store: append-only Parquet parts in the job's output directory.

The directory's layout (``job.json``, ``raw/<judge>/part-*.parquet``, ``quarantine/``, the
analysis' files) is declared once in :mod:`voirdire.layout`; reading the parts is
:class:`voirdire.parts.PartReader`'s, which this writer extends.

Each flush writes one new part file atomically (temporary name, then rename), so a crash
loses at most the results not yet flushed (in flight, or younger than ``flush_seconds``)
and never leaves a half-written file behind. Reading deduplicates by ``(judge, unit_id)`` (the last
written row wins), so a unit is present exactly once even if a crash fell between writing
a compacted part and removing the parts it replaced.

A part that cannot be read (truncated or corrupted: a full disk, a partial copy) is moved
aside to ``raw/<judge>/quarantine/<name>.corrupt`` with a :class:`CorruptPartWarning`
naming it; its units are then simply not recorded, so the next run asks them again. Only
the writer (``voirdire run``, in its own output directory) moves parts: a store opened
``readonly`` (``analyze``, ``report``, ``rank``, ``mitigate``, ``load``: readers of a
directory that may have come from anyone) skips them, names them in one warning, and
writes nothing, creates nothing and moves nothing in the directory.
"""

from __future__ import annotations

import os
import time
import uuid
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from voirdire.core import ConfigError, slug
from voirdire.engine.secrets import redact_table
from voirdire.exceptions import CorruptPartWarning
from voirdire.layout import QUARANTINE, RAW_DIR
from voirdire.parts import READ_ERRORS, PartReader, dedup
from voirdire.schema import RAW_SCHEMA


class ResultStore(PartReader):
    """Append-only store of raw results under ``<output_dir>/raw``.

    Args:
        output_dir: the job's output directory (created if missing).
        flush_rows: buffered rows (per judge) that trigger a flush.
        flush_seconds: age in seconds of the oldest buffered row that triggers a flush.
        subdir: the folder of the parts (``raw``; the rewrite stage uses ``rewrites``).
        schema: the table schema of the rows (``RAW_SCHEMA``; rewrites: ``REWRITE_SCHEMA``).
        secrets: values redacted from the rows' failure messages before they are written
            (the job's API keys, :mod:`voirdire.engine.secrets`).
        readonly: a reader's store: nothing is created, written or moved (unreadable parts
            are skipped and listed in :attr:`skipped`, with one
            :class:`CorruptPartWarning`); writing raises ``RuntimeError``.

    Parts are written only into real folders: a symbolic link in the place of ``raw/``,
    a judge's folder or its ``quarantine/`` is never written through (ConfigError, or the
    part is left where it is).
    """

    def __init__(
        self,
        output_dir: str | os.PathLike,
        flush_rows: int = 20_000,
        flush_seconds: float = 2.0,
        subdir: str = RAW_DIR,
        schema: pa.Schema = RAW_SCHEMA,
        secrets: tuple[str, ...] = (),
        readonly: bool = False,
    ) -> None:
        super().__init__(output_dir, subdir, schema)
        self.secrets = tuple(secrets)
        self.readonly = readonly
        if not readonly:
            self.raw_dir.mkdir(parents=True, exist_ok=True)
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self._buf: dict[str, list[pa.Table]] = {}
        self._rows: dict[str, int] = {}
        self._since: dict[str, float] = {}
        self.rows_written = 0
        #: parts moved aside by this store (their new paths)
        self.quarantined: list[Path] = []

    def _quarantine(self, part: Path, exc: BaseException) -> None:
        """Move an unreadable part to ``<its judge dir>/quarantine/<name>.corrupt`` and warn
        (a readonly store: skip it from now on, and leave it where it is)."""
        if self.readonly:
            super()._quarantine(part, exc)
            return
        self._checked.pop(part, None)
        dest = part.parent / QUARANTINE / f"{part.name}.corrupt"
        try:
            if dest.parent.is_symlink():
                raise OSError(f"{dest.parent} is a symbolic link")
            dest.parent.mkdir(exist_ok=True)
            os.replace(part, dest)
            where = f"moved to {dest}"
        except (
            OSError
        ) as move_exc:  # a read-only directory: leave it, skip it from now on
            dest = part
            self._unreadable.add(part)
            where = (
                f"could not be moved aside ({move_exc.strerror or move_exc}); skipped"
            )
        self.quarantined.append(dest)
        warnings.warn(
            f"unreadable result file {part} ({type(exc).__name__}: {' '.join(str(exc).split())}); {where}. "
            "Its units count as not done: running the job asks them again.",
            CorruptPartWarning,
            stacklevel=3,
        )

    def completed_ids(self, judge: str, include_failures: bool = True) -> set[str]:
        """Unit ids already recorded for a judge (outputs and, by default, failures).

        Unreadable parts are quarantined (:class:`CorruptPartWarning`): their units are not
        counted, so a resumed run asks them again.
        """

        def read(parts: list[Path]) -> set[str]:
            if not parts:
                return set()
            lf = self._scan(parts).select("unit_id", "failure")
            if not include_failures:
                lf = lf.filter(pl.col("failure").is_null())
            return set(lf.collect()["unit_id"].to_list())

        return self._collect(judge, read)

    def append(self, judge: str, table: pa.Table) -> None:
        """Buffer finished rows (RAW_SCHEMA) of a judge; flushes when the buffer is due.

        Raises:
            RuntimeError: a readonly store.
        """
        if self.readonly:
            raise RuntimeError("a readonly result store writes nothing")
        if table.num_rows == 0:
            return
        self._buf.setdefault(judge, []).append(table)
        self._rows[judge] = self._rows.get(judge, 0) + table.num_rows
        self._since.setdefault(judge, time.monotonic())
        if (
            self._rows[judge] >= self.flush_rows
            or time.monotonic() - self._since[judge] >= self.flush_seconds
        ):
            self.flush(judge)

    def flush(self, judge: str | None = None) -> None:
        """Write buffered rows of one judge (or all) as new part files."""
        for j in [judge] if judge else list(self._buf):
            tables = self._buf.pop(j, [])
            self._rows.pop(j, None)
            self._since.pop(j, None)
            if tables:
                self._write_part(j, pa.concat_tables(tables))

    def _write_part(
        self, judge: str, table: pa.Table | Iterable[pa.Table], prefix: str = "part"
    ) -> Path:
        """Write ``table`` (or the tables of an iterable, one after another, each read when
        written: a merge holds one part at a time) as one new part file of ``judge``."""
        d = self.raw_dir / slug(judge)
        d.mkdir(parents=True, exist_ok=True)
        if link := next((p for p in (self.raw_dir, d) if p.is_symlink()), None):
            raise ConfigError(
                f"{link} is a symbolic link; voirdire writes through no links in an output directory"
            )
        name = f"{prefix}-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = d / f".{name}.tmp"
        if isinstance(table, pa.Table):
            if self.secrets:
                table = redact_table(table, self.secrets)
            pq.write_table(table, tmp, compression="zstd")
            self.rows_written += table.num_rows
        else:
            n = 0
            try:
                with pq.ParquetWriter(tmp, self.schema, compression="zstd") as w:
                    for t in table:
                        w.write_table(
                            redact_table(t, self.secrets) if self.secrets else t
                        )
                        n += t.num_rows
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            self.rows_written += n
        os.replace(tmp, d / name)
        return d / name

    def compact(self) -> None:
        """Merge each judge's parts into one (deduplicated) part file.

        Raises:
            RuntimeError: a readonly store.
        """
        if self.readonly:
            raise RuntimeError("a readonly result store writes nothing")
        self.flush()
        for d in sorted(p for p in self.raw_dir.iterdir() if p.is_dir()):
            parts = self._parts(d.name)
            if len(parts) <= 1:
                continue
            new = None
            if self._collect(d.name, self._distinct):  # no unit twice: streamed
                parts = self._parts(d.name)  # without any quarantined while reading
                try:
                    new = self._write_part(
                        d.name, (pq.read_table(p) for p in parts), prefix="part-z"
                    )
                except READ_ERRORS:  # a part damaged past its footer: found below
                    new = None
            if new is None:
                df = self._collect(d.name, lambda ps: dedup(self._scan(ps).collect()))
                parts = self._parts(d.name)
                new = self._write_part(
                    d.name, df.to_arrow().cast(self.schema), prefix="part-z"
                )
                del df
            for p in parts:
                if p != new:
                    p.unlink(missing_ok=True)

    def _distinct(self, parts: list[Path]) -> bool:
        """Whether ``parts`` can be merged as they are, one at a time, giving what
        :func:`~voirdire.parts.dedup` of them gives: each of this store's schema (no column
        to insert) and no (judge, unit id) in two rows (nothing to drop). Reads only
        those two columns."""
        if not parts or any(
            not pq.read_schema(p).equals(self.schema, check_metadata=False)
            for p in parts
        ):
            return False
        who = "judge" if "judge" in self.schema.names else "rewriter"
        keys = self._scan(parts).select(who, "unit_id").collect()
        return not keys.is_duplicated().any()

    def to_table(
        self, unit_columns: dict[str, list[Any]], result_columns: dict[str, list[Any]]
    ) -> pa.Table:
        """A finished batch as a table of this store's schema (:func:`rows_to_table`)."""
        return rows_to_table(unit_columns, result_columns, self.schema)


def warm_arrow() -> None:
    """Build one Arrow array from a Python list: pyarrow imports pandas there, where it is
    installed (0.2 s on the development machine), and a run does it while Ray starts
    rather than on its first finished batch."""
    pa.array([0], pa.int64())


def rows_to_table(
    unit_columns: dict[str, list[Any]],
    result_columns: dict[str, list[Any]],
    schema: pa.Schema = RAW_SCHEMA,
) -> pa.Table:
    """Join a batch's unit columns with its result columns (same order) into ``schema``
    (RAW_SCHEMA by default).

    Raises:
        ValueError: the two do not describe the same units in the same order.
    """
    if result_columns.get("unit_id") != unit_columns["unit_id"]:
        raise ValueError("result columns do not match the batch's units")
    n = len(unit_columns["unit_id"])
    data: dict[str, Any] = dict(unit_columns)
    for field in schema:
        if field.name in data:
            continue
        if field.name == "finished_at":
            # built from integers: converting tz-aware datetimes would make pyarrow import pandas
            data[field.name] = pa.array([time.time_ns() // 1000] * n, pa.int64()).view(
                field.type
            )
        elif field.name == "option_probs":
            data[field.name] = [
                list(p.items()) if p else None for p in result_columns["option_probs"]
            ]
        else:
            data[field.name] = result_columns[field.name]
    return pa.Table.from_pydict(data, schema=schema)
