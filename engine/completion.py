"""A judgment log's units: a log's judge is asked what its records hold; a live judge
completing the log only what they lack.

**Own units.** On a benchmark whose kind
:attr:`~voirdire.benchmarks.kind.BenchmarkKind.asks_own_records` (every judgment log format),
a judge answering from recordings (:class:`~voirdire.judges.capabilities.Recording`: the
replay judge) is asked exactly the units of the job's scheme that its own records hold
(:func:`own_keys`; the plan's ``own``): the pairs of another judge's file are not its
units (not its failures, not its wrong answers, not in its PF), and a pair the log holds in
one order is asked in that order. A record of a failed call is a unit (a failure). A
judge's units, and so its figures, do not depend on which other logs are audited beside it.

**Completing.** A job whose benchmark is a judgment log format (:class:`~voirdire.benchmarks.logs.base.LogBenchmark`,
``docs/audit.md``) may name a live judge (an API, an OpenAI-compatible server, vLLM) with
``recorded_as = "<a judge in the log>"`` (:class:`~voirdire.engine.spec.JudgeSpec`): that
judge's recorded verdicts then count as the live judge's answers in the order(s) the log
holds, and the live judge is asked only the rest, with the prompt of the tool that made the
log (:mod:`voirdire.benchmarks.logs.tool_prompts`). The judge's identity carries
``recorded_as`` (``job.json``: ``judges.<name>.identity.recorded_as``), so its unit ids are
not those of the live judge alone; each recorded row keeps ``verdict_mode = "replay"`` and
the tool's own reading of the verdict, each asked row the live judge's text.

- planning (:func:`plan_completion`, the plan's ``completion`` stage): refuses, in one line
  before anything is sent, a live judge on a log without ``recorded_as``, ``recorded_as``
  on another benchmark or a replay judge, a name the log does not hold, perturbations,
  repetitions, list-wise or score mode, and a log that keeps no texts to show; counts the
  units the log answers per judge (``JobPlan.recorded``);
- running (:func:`fill_from_log`): the log's answers are written into the store as that
  judge's results before the scheduler starts, so they count as done (the engine's resume)
  and only the missing order is sent; a rerun finds everything done and asks nothing;
- a dry run's estimate covers the asked units only (:func:`live_batches`).
"""

from __future__ import annotations

from collections.abc import Iterator, Set
from typing import Any, NamedTuple

import polars as pl

from voirdire.benchmarks.recorded import Recorded, RecordKey, record_key
from voirdire.core import ConfigError
from voirdire.engine.bind import ResolvedJudge
from voirdire.engine.permutations import permutations_for
from voirdire.engine.spec import JobSpec
from voirdire.engine.unit_records import UnitBatch
from voirdire.engine.units import iter_unit_batches
from voirdire.engine.worker import results_to_columns
from voirdire.judges.capabilities import Recording
from voirdire.judges.replay import as_result

__all__ = [
    "OwnUnits",
    "asked_note",
    "fill_from_log",
    "live_batches",
    "own_keys",
    "plan_completion",
    "recorded_answers",
]

#: the study whose recorded verdicts a log holds
_STUDY = "position_bias"


def _is_log(bench: Any) -> bool:
    from voirdire.benchmarks.logs.base import LogBenchmark

    return isinstance(bench, LogBenchmark)


class OwnUnits(NamedTuple):
    """The units a judge's records hold (:func:`own_keys`): ``keys``, and ``count``, how
    many units of the job's instances and scheme they are."""

    keys: Set[RecordKey]
    count: int


def own_keys(bench: Any, data_dir: Any, rj: ResolvedJudge) -> Set[RecordKey] | None:
    """The record keys that are ``rj``'s units where the benchmark's kind
    ``asks_own_records`` and ``rj``'s backend answers from recordings
    (:meth:`~voirdire.judges.capabilities.Recording.recorded_keys`); None: every unit of
    the job's scheme is its.

    Raises:
        ConfigError: nothing recorded for that judge.
    """
    if not getattr(bench, "asks_own_records", False) or not issubclass(
        rj.backend, Recording
    ):
        return None
    ctx = rj.context(bench.name, str(data_dir), None)
    return rj.backend.recorded_keys(rj.settings, ctx)


def recorded_answers(
    bench: Any, data_dir: Any, rj: ResolvedJudge
) -> dict[RecordKey, Recorded]:
    """The verdicts of the log's judge ``rj.recorded_as``: ``(";".join((question id,
    *shown)), 1) ->`` :class:`~voirdire.benchmarks.recorded.Recorded`, read from the
    normalised copy each time (it may have been written afresh since).

    Raises:
        ConfigError: the log holds no verdict of that judge (its judges are listed).
    """
    cls, name = type(bench), str(rj.recorded_as)
    return cls.read_recorded(cls.recorded_file(data_dir, _STUDY, name, rj.name), name)


def _check_judge(job: JobSpec, bench: Any, data_dir: Any, rj: ResolvedJudge) -> None:
    """Refuse what a completing judge cannot be (module docstring), naming the judge."""
    who = f"judge {rj.name!r} (recorded_as = {rj.recorded_as!r})"
    if not _is_log(bench):
        raise ConfigError(
            f"{who}: recorded_as counts a judgment log's verdicts as this judge's; "
            f"benchmark {bench.name!r} is not a log format (docs/audit.md)"
        )
    if issubclass(rj.backend, Recording):
        raise ConfigError(
            f"{who}: recorded_as completes a log with a live judge; backend {rj.spec.backend!r} "
            f'already answers from recordings (use recorded = "{rj.recorded_as}")'
        )
    have = bench.recorded_judges(data_dir, _STUDY)
    if rj.recorded_as not in have:
        raise ConfigError(
            f"{who}: the {bench.name} log holds no verdicts of {rj.recorded_as!r}; "
            f"judges in it: {', '.join(have) or '(none)'}"
        )
    c = rj.comparison_for(job.comparison)
    if c.mode != "pairwise" or c.repetitions != 1 or job.perturbations:
        raise ConfigError(
            f"{who}: a log records one answer per order of the unperturbed pair; completing it "
            "needs comparison.mode = 'pairwise', repetitions = 1 and no [[perturbations]]"
        )
    empty = bench.pairs.filter(
        (pl.col("output_a") == "") & (pl.col("output_b") == "")
    ).height
    if empty:
        raise ConfigError(
            f"{who}: {empty} of the {bench.name} log's {bench.pairs.height} pairs have no answer "
            "texts to show a live judge (the log keeps none; docs/audit.md)"
        )


def answered_units(
    inst: pl.DataFrame, job: JobSpec, rj: ResolvedJudge, keys: Any
) -> int:
    """How many of ``rj``'s pairwise units (instance x order of the job's scheme x
    repetition) ``keys`` hold: those whose ``("<question id>;<first>;<second>",
    repetition)`` is among them."""
    c = rj.comparison_for(job.comparison)
    orders = permutations_for(c.mode, c.permutations, 2, c.permutation_seed)
    n = 0
    for r in range(1, c.repetitions + 1):
        have = pl.Series([k for k, rep in keys if rep == r], dtype=pl.String)
        for perm in orders:
            first, second = (pl.col("candidates").list.get(i) for i in perm)
            key = pl.col("question_id") + ";" + first + ";" + second
            n += int(inst.select(key.is_in(have).sum()).item())
    return n


def plan_completion(
    job: JobSpec, bench: Any, data_dir: Any, judges: tuple[ResolvedJudge, ...],
    instances: pl.DataFrame,
) -> dict[str, Any]:  # fmt: skip
    """The plan's ``completion`` stage: ``recorded`` (judge name -> units its log answers;
    only judges with ``recorded_as``) and ``own`` (judge name -> :class:`OwnUnits`; only
    judges asked their own records: :func:`own_keys`).

    Raises:
        ConfigError: see the module docstring (one line, naming the judge).
    """
    out: dict[str, int] = {}
    own: dict[str, OwnUnits] = {}
    for rj in judges:
        keys = own_keys(bench, data_dir, rj)
        if keys is not None:
            own[rj.name] = OwnUnits(keys, answered_units(instances, job, rj, keys))
        if rj.recorded_as is None:
            if _is_log(bench) and not issubclass(rj.backend, Recording):
                have = bench.recorded_judges(data_dir, _STUDY)
                raise ConfigError(
                    f"judge {rj.name!r} (backend {rj.spec.backend!r}): a live judge on the "
                    f"{bench.name} log counts the log's verdicts as its own only when the job "
                    f'says so: set recorded_as = "<judge in the log>" ({", ".join(have)}), '
                    "and it asks only the missing orders; nothing was sent"
                )
            continue
        _check_judge(job, bench, data_dir, rj)
        keys = recorded_answers(bench, data_dir, rj)
        out[rj.name] = answered_units(instances, job, rj, keys)
    return {"recorded": out, "own": own}


def _split(
    batch: UnitBatch, recorded: dict[RecordKey, Recorded], done: set[str] = frozenset()
) -> tuple[UnitBatch, UnitBatch]:
    """``(answered by the log and not yet done, not answered by the log)``."""
    keys = [record_key(u.question_id, u.shown, u.repetition) for u in batch.units]
    hit = [k in recorded for k in keys]
    fresh = [h and u.unit_id not in done for h, u in zip(hit, batch.units)]
    return batch.select(fresh), batch.select([not h for h in hit])


def live_batches(
    plan: Any, rj: ResolvedJudge, batches: Iterator[UnitBatch]
) -> Iterator[UnitBatch]:
    """``batches`` without the units the log answers for ``rj`` (all of them when ``rj``
    completes no log): what the live judge is asked."""
    if rj.recorded_as is None:
        yield from batches
        return
    recorded = recorded_answers(plan.bench, plan.data_dir, rj)
    for b in batches:
        rest = _split(b, recorded)[1]
        if len(rest):
            yield rest


def fill_from_log(job: JobSpec, plan: Any, store: Any) -> dict[str, int]:
    """Write the log's answers of every completing judge into ``store`` as that judge's
    results (each unit once: those already there are skipped), then flush: the scheduler
    counts them as done. Returns judge name -> rows written (0 on a rerun)."""
    written: dict[str, int] = {}
    for rj in plan.judges:
        if rj.recorded_as is None:
            continue
        recorded = recorded_answers(plan.bench, plan.data_dir, rj)
        done = store.completed_ids(rj.name)
        n = 0
        for batch in iter_unit_batches(
            plan.bench, plan.instances, rj.comparison_for(job.comparison),
            judge=rj.name, identity_hash=rj.identity_hash, needs_prompt=False,
            batch_size=job.run.batch_size,
        ):  # fmt: skip
            got = _split(batch, recorded, done)[0]
            if not len(got):
                continue
            results = [
                as_result(u.unit_id, recorded[record_key(u.question_id, u.shown, u.repetition)])
                for u in got.units
            ]  # fmt: skip
            store.append(
                rj.name,
                store.to_table(got.columns, results_to_columns(got.queries, results)),
            )
            n += len(got)
        store.flush(rj.name)
        written[rj.name] = n
    return written


def asked_note(plan: Any, rj: ResolvedJudge) -> str:
    """What a dry run calls a judge's count: ``"queries"``, and for a judge completing a
    log how many units the log answers (``"queries (8 answered by the log's X)"``)."""
    n = plan.recorded.get(rj.name)
    return (
        "queries"
        if n is None
        else f"queries ({n:,} answered by the log's {rj.recorded_as})"
    )
