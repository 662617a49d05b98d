"""Recorded verdicts answered as a table join in the driver, without Ray.

A judge whose backend's recorded outputs are one table
(:class:`~voirdire.judges.capabilities.RecordedTable`: the replay judge, so every judge of
``voirdire audit``) answers a unit by its record key alone. Sending such units as queries
through Ray actors costs a Ray node's start (seconds of CPU on two cores), a worker process
per pool, and pickling every unit twice, to do a dictionary lookup. A job all of whose judges
are such (and that names no cluster address, needs no rewrite and completes no log with a
live judge: :func:`answered_in_driver`) is answered here instead: each batch of the judge's
planned units (the very units the scheduler would send, from the same generator, with the
units already recorded skipped) is joined with the recording on (key, repetition), and the
result columns are those the judge's worker gives for it (:func:`recorded_columns`): the
recorded text with the recording's letter, probabilities and verdict mode; a recorded
failed call a ``missing`` failure with the recording's reason; a unit the
recording lacks a ``missing`` failure, "no recorded output". The rows go to the store as
the scheduler's do, so resume, compaction and the analysis are the same, and every unit
ends as a verdict or a recorded failure.

A job that also asks a live judge (API, vLLM, a simulated judge; a judge completing a log)
or names a cluster is run by the scheduler on Ray, replay judges included;
:func:`spec_needs_ray` tells from the job file alone, before planning, whether Ray is to be
started at all (the CLI starts it early only then).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import polars as pl
import pyarrow as pa

from voirdire.core import FailureClass
from voirdire.engine.stats import RunStats, judge_counts
from voirdire.engine.unit_records import UnitBatch
from voirdire.exceptions import JobInterrupted
from voirdire.judges.base import Result, get_backend
from voirdire.judges.capabilities import RecordedTable
from voirdire.schema import RAW_SCHEMA

__all__ = [
    "NO_RECORD",
    "answer_recorded",
    "answered_in_driver",
    "recorded_columns",
    "spec_needs_ray",
]

#: the failure message of a unit the recording lacks (the replay judge's)
NO_RECORD = "no recorded output"
#: the verdict mode of a failure (``Result``'s default: no verdict mode of the backend's)
_FAILED_MODE = Result(unit_id="").verdict_mode


def _joins(backend: type, recorded_as: str | None) -> bool:
    """Whether a judge of ``backend`` is answered by the join: its backend's recorded
    outputs are a table and it completes no log (``recorded_as``: a live judge)."""
    return issubclass(backend, RecordedTable) and recorded_as is None


def answered_in_driver(plan: Any, address: str | None) -> bool:
    """Whether a planned job (a :class:`~voirdire.engine.plan.JobPlan`) is answered by
    :func:`answer_recorded` rather than on Ray: no cluster ``address``, at least one judge,
    every judge :class:`~voirdire.judges.capabilities.RecordedTable` without
    ``recorded_as``, and no rewrite to make."""
    rewrites = plan.rewrites
    return (
        address is None
        and bool(plan.judges)
        and all(_joins(rj.backend, rj.recorded_as) for rj in plan.judges)
        and (rewrites is None or rewrites.height == 0)
    )


def spec_needs_ray(job: Any, address: str | None = None) -> bool:
    """Whether running ``job`` (a :class:`~voirdire.engine.spec.JobSpec`) starts or joins
    Ray, read from the job file alone (before it is planned): a cluster ``address``,
    rewriters or perturbations, or a judge whose backend is not
    :class:`~voirdire.judges.capabilities.RecordedTable` (or is unknown: planning then
    refuses it) or that completes a log (``recorded_as``). Agrees with
    :func:`answered_in_driver` on every job that plans."""
    if address is not None or job.perturbations or job.rewriters or not job.judges:
        return True
    for spec in job.judges:
        try:
            backend = get_backend(spec.backend)
        except Exception:  # noqa: BLE001 - an unknown backend: planning says so
            return True
        if not _joins(backend, spec.recorded_as):
            return True
    return False


def recorded_columns(
    unit_ids: list[str],
    keys: list[str],
    repetitions: list[int],
    table: pl.DataFrame | None,
    error: str | None = None,
) -> dict[str, list[Any]]:
    """The result columns (``Result.as_row`` keys, one value per unit in unit order) of the
    units with these ``unit_ids``, record ``keys`` (``";".join((question id, *shown))``) and
    ``repetitions``, joined with ``table`` (the judge's
    :meth:`~voirdire.judges.capabilities.RecordedTable.recorded_table`): what its worker
    returns for them (module docstring). ``latency_s`` is the join's seconds per unit.
    ``table`` None: the recording could not be read; every unit is an ``error`` failure
    with the message ``error``."""
    t0 = time.perf_counter()
    n = len(unit_ids)
    if table is None:
        fail = FailureClass.ERROR.value
        cols: dict[str, list[Any]] = {
            "unit_id": unit_ids,
            "output": [None] * n,
            "failure": [fail] * n,
            "failure_message": [error] * n,
            "choice": [None] * n,
            "option_probs": [None] * n,
            "verdict_mode": [_FAILED_MODE] * n,
        }
    else:
        asked = pl.DataFrame(
            {"key": keys, "repetition": repetitions},
            schema={"key": pl.String, "repetition": pl.Int64},
        )
        got = asked.join(
            table.with_columns(found=pl.lit(True)),
            on=["key", "repetition"],
            how="left",
            maintain_order="left",
        )
        answered = pl.col("output").is_not_null()
        got = got.select(
            "output",
            failure=pl.when(answered)
            .then(None)
            .otherwise(pl.lit(FailureClass.MISSING.value)),
            failure_message=pl.when(answered)
            .then(None)
            .when(pl.col("found"))
            .then(pl.col("why"))
            .otherwise(pl.lit(NO_RECORD)),
            choice=pl.when(answered).then(pl.col("choice")),
            probs=pl.when(answered).then(pl.col("probs")),
            verdict_mode=pl.when(answered)
            .then(pl.col("verdict_mode"))
            .otherwise(pl.lit(_FAILED_MODE)),
        )
        probs = got["probs"]
        cols = {
            "unit_id": unit_ids,
            "output": got["output"].to_list(),
            "failure": got["failure"].to_list(),
            "failure_message": got["failure_message"].to_list(),
            "choice": got["choice"].to_list(),
            "option_probs": [None] * n
            if probs.null_count() == n
            else [
                None if p is None else {d["key"]: d["value"] for d in p}
                for p in probs.to_list()
            ],
            "verdict_mode": got["verdict_mode"].to_list(),
        }
    dt = (time.perf_counter() - t0) / max(1, n)
    cols.update(
        latency_s=[dt] * n,
        input_tokens=[None] * n,
        output_tokens=[None] * n,
        cost_usd=[None] * n,
        cached=[False] * n,
    )
    return cols


def _answer_batch(
    name: str,
    batch: UnitBatch,
    done: set[str],
    table: pl.DataFrame | None,
    error: str | None,
    store: Any,
) -> tuple[int, int]:
    """Append the rows of ``batch``'s units not in ``done`` (skipped as the scheduler's pools
    skip them); returns (units answered, failures among them)."""
    if done:
        keep = [u not in done for u in batch.columns["unit_id"]]
        if not all(keep):
            batch = batch.select(keep)
    if not len(batch):
        return 0, 0
    cols = batch.columns
    keys = [";".join((q, *sh)) for q, sh in zip(cols["question_id"], cols["shown"])]
    res = recorded_columns(cols["unit_id"], keys, cols["repetition"], table, error)
    store.append(name, store.to_table(cols, res))
    return len(batch), len(batch) - res["failure"].count(None)


def _answer_frame(
    units: pl.DataFrame,
    done: set[str],
    table: pl.DataFrame | None,
    error: str | None,
) -> pa.Table | None:
    """The raw rows (``RAW_SCHEMA``) of the units of a frame of
    :func:`~voirdire.engine.unit_table.unit_frames` not in ``done``, joined with ``table``
    (None: every unit an ``error`` failure with ``error``): the rows
    :func:`recorded_columns` and :func:`~voirdire.engine.store.rows_to_table` give for the
    same units, by columns. None when every unit is done."""
    t0 = time.perf_counter()
    if done:
        units = units.filter(
            ~pl.col("unit_id").is_in(pl.Series(list(done), dtype=pl.String))
        )
    n = units.height
    if n == 0:
        return None
    key = pl.col("question_id") + ";" + pl.col("shown").list.join(";")
    asked = units.with_columns(_key=key, _rep=pl.col("repetition").cast(pl.Int64))
    if table is None:
        got = asked.with_columns(
            output=pl.lit(None, pl.String),
            failure=pl.lit(FailureClass.ERROR.value),
            failure_message=pl.lit(error, pl.String),
            choice=pl.lit(None, pl.String),
            probs=pl.lit(None, _PROBS),
            verdict_mode=pl.lit(_FAILED_MODE),
        )
    else:
        rec = table.rename({"key": "_key", "repetition": "_rep"}).with_columns(
            _found=pl.lit(True)
        )
        answered = pl.col("output").is_not_null()
        got = asked.join(
            rec, on=["_key", "_rep"], how="left", maintain_order="left"
        ).with_columns(
            failure=pl.when(answered)
            .then(None)
            .otherwise(pl.lit(FailureClass.MISSING.value)),
            failure_message=pl.when(answered)
            .then(None)
            .when(pl.col("_found"))
            .then(pl.col("why"))
            .otherwise(pl.lit(NO_RECORD)),
            choice=pl.when(answered).then(pl.col("choice")),
            probs=pl.when(answered & (pl.col("probs").list.len() > 0)).then(
                pl.col("probs")
            ),
            verdict_mode=pl.when(answered)
            .then(pl.col("verdict_mode"))
            .otherwise(pl.lit(_FAILED_MODE)),
        )
    dt = (time.perf_counter() - t0) / n
    got = got.with_columns(
        latency_s=pl.lit(dt, pl.Float64),
        input_tokens=pl.lit(None, pl.Int64),
        output_tokens=pl.lit(None, pl.Int64),
        cost_usd=pl.lit(None, pl.Float64),
        cached=pl.lit(False),
        finished_at=pl.lit(time.time_ns() // 1000, pl.Int64),
    )
    return _raw_table(got)


#: the letters' probabilities as :meth:`RecordedTable.recorded_table` gives them
_PROBS = pl.List(pl.Struct({"key": pl.String, "value": pl.Float64}))


def _raw_table(df: pl.DataFrame) -> pa.Table:
    """``df`` (every column of ``RAW_SCHEMA``, ``probs`` in place of ``option_probs`` and
    ``finished_at`` in microseconds since the epoch) as a table of ``RAW_SCHEMA``."""
    arrays = []
    for f in RAW_SCHEMA:
        if f.name == "option_probs":
            probs = df["probs"]
            if probs.null_count() == df.height:
                arrays.append(pa.nulls(df.height, f.type))
            else:
                items = [None if p is None else [(d["key"], d["value"]) for d in p]
                         for p in probs.to_list()]  # fmt: skip
                arrays.append(pa.array(items, f.type))
        elif f.name == "finished_at":
            arrays.append(df[f.name].to_arrow().cast(pa.int64()).view(f.type))
        else:
            arrays.append(df[f.name].to_arrow().cast(f.type))
    return pa.Table.from_arrays(arrays, schema=RAW_SCHEMA)


def answer_recorded(
    judges: Iterable[tuple[str, Any, Iterable[UnitBatch], set[str]]],
    store: Any,
    *,
    progress: Any = None,
) -> RunStats:
    """Answer every unit of every judge by the join (module docstring) and append the rows
    to ``store`` (a :class:`~voirdire.engine.store.ResultStore`), flushed at the end.

    Args:
        judges: per judge ``(name, read, units, done)``: ``read()`` returns its
            :meth:`~voirdire.judges.capabilities.RecordedTable.recorded_table` (called once,
            after the judges before it are answered); ``units`` its planned units, as
            :class:`~voirdire.engine.units.UnitBatch` records or as DataFrames of
            :func:`~voirdire.engine.unit_table.unit_frames`; ``done`` the unit ids already
            recorded (skipped).
        progress: a :class:`~voirdire.engine.progress.JobProgress` or None.

    Returns:
        The counts, as the scheduler's (no batch is retried or resent).

    Raises:
        JobInterrupted: on KeyboardInterrupt, after saving what finished.
    """
    t0 = time.perf_counter()
    stats = RunStats()
    try:
        for name, read, batches, done in judges:
            s = stats.per_judge[name] = judge_counts()
            table, error = None, None
            try:
                table = read()
            except Exception as exc:  # noqa: BLE001 - recorded as each unit's failure
                lines = str(exc).strip().splitlines() or [""]
                error = f"{type(exc).__name__}: {lines[0]}"[:500]
            for units in batches:
                if isinstance(units, pl.DataFrame):
                    got = _answer_frame(units, done, table, error)
                    if got is None:
                        continue
                    store.append(name, got)
                    n, n_fail = got.num_rows, got.num_rows - got["failure"].null_count
                else:
                    n, n_fail = _answer_batch(name, units, done, table, error, store)
                    if not n:
                        continue
                s["queries"] += n
                s["failures"] += n_fail
                stats.queries += n
                stats.failures += n_fail
                if progress is not None:
                    progress.advance(name, n, s)
    except KeyboardInterrupt as exc:
        raise JobInterrupted(
            "interrupted: finished results are saved; run the same job again to resume"
        ) from exc
    finally:
        store.flush()
        stats.seconds = time.perf_counter() - t0
    return stats
