"""Running a job end to end, and re-analysing a finished output directory.

``plan_job`` (:mod:`voirdire.engine.plan`, named stages) validates everything (benchmark
data, candidates, judges, backend preflight) before any query is sent; ``run_job`` starts or
joins Ray and streams work units through the scheduler into the store (resuming whatever the
directory already holds), or, for a job of recorded judges alone, joins their units with the
recordings in this process without Ray (:mod:`voirdire.engine.recorded`);
``load_judgments`` reads the raw outputs back with their verdicts extracted. Metrics and
reports belong to the analysis stage (:mod:`voirdire.analysis.outputs`).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from voirdire.benchmarks.scoring import score_patterns, score_range
from voirdire.engine.bind import ResolvedJudge
from voirdire.engine.completion import fill_from_log, live_batches
from voirdire.engine.plan import JobPlan, plan_job
from voirdire.engine.progress import JobProgress
from voirdire.engine.prompts import PromptCache
from voirdire.engine.ray_start import init_ray, ray_starting, stop_ray
from voirdire.engine.recorded import answer_recorded, answered_in_driver
from voirdire.engine.rerun import check_rerun, configuration
from voirdire.engine.rewrite import (
    iter_rewrite_batches,
    plan_rewrites,
    rewrite_store,
    rewrites_for_units,
)
from voirdire.engine.secrets import configured_secrets, redact_record
from voirdire.engine.spec import JobSpec
from voirdire.engine.stats import RunStats
from voirdire.engine.store import ResultStore, warm_arrow
from voirdire.engine.unit_table import unit_frames
from voirdire.engine.units import batch_size_for, iter_unit_batches, option_mode_for
from voirdire.judges.base import backend_ref
from voirdire.judges.capabilities import Estimates, needs_prompt
from voirdire.layout import JOB_FILE, read_job_record
from voirdire.ownership import claim_output_dir

if TYPE_CHECKING:  # the scheduler imports Ray: only a job that runs on Ray imports it
    from voirdire.engine.pools import JudgeRun

__all__ = [
    "RunOutcome",
    "estimate_job",
    "run_job",
]


#: the scheduler's names this module uses, imported on first use: the scheduler imports Ray
_SCHEDULER_NAMES = ("JudgeRun", "execute")


def _scheduler(name: str) -> Any:
    """The scheduler's ``name`` (:data:`_SCHEDULER_NAMES`), as this module holds it
    (imported on first use, or set in its place)."""
    if name not in globals():
        from voirdire.engine import scheduler

        globals()[name] = getattr(scheduler, name)
    return globals()[name]


def __getattr__(name: str) -> Any:
    if name in _SCHEDULER_NAMES:
        return _scheduler(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class RunOutcome:
    """What a run produced: the output directory (raw outputs in ``raw/``, ``job.json``)
    and the scheduler's counts. Metrics are the analysis stage's
    (:func:`voirdire.analysis.outputs.compute_dir`)."""

    output_dir: Path
    stats: RunStats


def estimate_job(job: JobSpec, plan: JobPlan) -> dict[str, dict[str, Any] | None]:
    """Per judge, the backend's dry-run estimate over every prompt the job would send
    (``Estimates.estimate``: for API judges ``queries``, ``input_tokens``,
    ``max_output_tokens``, ``too_long``, ``cost_usd_max`` in USD, ``counting``), or
    ``None`` for judges that cost nothing per query. Sends nothing."""
    bench = plan.bench
    prompts = PromptCache(bench, score_style=job.comparison.score_style)
    out: dict[str, dict[str, Any] | None] = {}
    needed = (
        plan.rewrites
        if plan.rewrites is not None
        else plan_rewrites(bench, plan.instances, (), {})
    )
    for name, rw in (plan.rewriters or {}).items():
        sent = needed.filter(pl.col("rewriter") == name).unique("unit_id")
        if sent.height:
            out[f"rewriter:{name}"] = _estimate(rw, iter(sent["prompt"].to_list()))
    # perturbed prompts are estimated with the original answers (the rewrites do not exist yet)
    rewrites = {
        (q, m, lab): bench.answers(q, m)
        for q, m, lab in needed.select("question_id", "model", "variant").iter_rows()
    }
    for rj in plan.judges:
        batches = iter_unit_batches(
            bench,
            plan.instances,
            rj.comparison_for(job.comparison),
            judge=rj.name,
            identity_hash=rj.identity_hash,
            needs_prompt=True,
            batch_size=job.run.batch_size,
            prompts=prompts,
            variants=plan.variants,
            rewrites=rewrites,
            only=_own(plan, rj),
        )
        texts = (
            q.prompt if not q.system else q.system + "\n\n" + (q.prompt or "")
            for b in live_batches(plan, rj, batches)  # a completed log: the asked units
            for q in b.queries
        )
        out[rj.name] = _estimate(rj, texts)
    return out


def _own(plan: JobPlan, rj: ResolvedJudge) -> Any:
    """The record keys that are ``rj``'s only units (``plan.own``), or None: all of them."""
    own = plan.own.get(rj.name)
    return None if own is None else own.keys


def _estimate(rj: ResolvedJudge, prompts: Any) -> dict[str, Any] | None:
    """A judge's dry-run estimate over ``prompts`` (its backend's, when it
    :class:`~voirdire.judges.capabilities.Estimates`), else None."""
    return (
        rj.backend.estimate(rj.settings, rj.sampling, prompts)
        if issubclass(rj.backend, Estimates)
        else None
    )


def _job_record(
    job: JobSpec, plan: JobPlan, config: dict[str, Any] | None = None
) -> dict[str, Any]:
    bench = plan.bench
    return {
        "configuration": config or configuration(job, plan),
        "job": job.model_dump(mode="json"),
        "benchmark": bench.name,
        "data_dir": str(plan.data_dir),
        "option_mode": option_mode_for(bench, job.comparison, plan.list_size),
        "list_size": plan.list_size,
        "verdict_patterns": {
            bench.name: bench.verdict_pattern_for(
                "pairwise" if job.comparison.mode == "score" else job.comparison.mode
            )
        },
        "verdict_labels": {bench.name: bench.verdict_labels}
        if bench.verdict_labels
        else {},
        "score_patterns": (
            {bench.name: [*score_patterns(bench.name), *score_range(bench.name)]}
            if job.comparison.mode == "score"
            or any(rj.mode == "score" for rj in plan.judges)
            else {}
        ),
        "judges": {
            rj.name: {"identity": rj.identity, "identity_hash": rj.identity_hash}
            for rj in plan.judges
        },
        "units_per_judge": plan.units_per_judge,
        "instances": plan.instances.height,
        "perturbations": [v.label for v in plan.variants],
        "rewriters": {
            n: {"identity": r.identity, "identity_hash": r.identity_hash}
            for n, r in (plan.rewriters or {}).items()
        },
    }


def run_job(
    job: JobSpec,
    *,
    address: str | None = None,
    show_progress: bool = True,
    retry_failed: bool = False,
    console: Any = None,
    plan: JobPlan | None = None,
    meanwhile: Callable[[JobPlan], Any] | None = None,
    release_ray: bool = False,
) -> RunOutcome:
    """Run (or resume) a job: every work unit ends in ``raw/`` as an output or a recorded
    failure. Metrics and the report are the analysis stage's (``voirdire.run`` does both).

    A job whose judges all answer from a recorded table, with no ``address``
    (:func:`~voirdire.engine.recorded.answered_in_driver`: replayed releases and logs) is
    answered by a table join in this process and starts no Ray
    (:mod:`voirdire.engine.recorded`); any other runs through the scheduler on Ray.

    Args:
        job: the validated job spec.
        address: Ray cluster address; ``None`` starts/joins a local cluster.
        show_progress: draw progress bars.
        retry_failed: ask again the units whose recorded result is a failure.
        plan: the job's :func:`plan_job` result when the caller already validated it.
        meanwhile: work of the caller's to do with the plan while Ray starts (the API
            imports the analysis and starts drawing its bootstrap counts), once the job is
            validated and its directory claimed.
        release_ray: stop Ray once the queries are done, in the background
            (:func:`~voirdire.engine.ray_start.stop_ray`): the caller runs no more jobs.

    Raises:
        ConfigError: before anything is sent, when the job is invalid, or when its
            output directory holds results of another configuration
            (:mod:`voirdire.engine.rerun`).
        JobInterrupted: on Ctrl-C (finished results are saved; rerun to resume).
    """
    plan = plan or plan_job(job)
    out = claim_output_dir(
        job.output_dir
    )  # again: the directory may have changed since the plan
    secrets = configured_secrets([*plan.judges, *(plan.rewriters or {}).values()])
    config = _check_rerun(out, job, plan)
    _write_job_file(out, redact_record(_job_record(job, plan, config), secrets))
    store = ResultStore(
        out,
        flush_rows=job.run.flush_rows,
        flush_seconds=job.run.flush_seconds,
        secrets=secrets,
    )
    if answered_in_driver(plan, address):
        return _run_recorded(job, plan, store, out, retry_failed=retry_failed,
                             show_progress=show_progress, console=console,
                             meanwhile=meanwhile, release_ray=release_ray)  # fmt: skip
    init_ray(address, background=True)  # Ray starts while the units are built
    rewrites = _rewrite_stage(
        job, plan, out, address=address, show_progress=show_progress, console=console
    )
    fill_from_log(job, plan, store)  # a log's verdicts, where a judge completes one
    runs = _judge_runs(job, plan, store, out, rewrites, retry_failed=retry_failed)
    if meanwhile is not None:
        meanwhile(plan)
    warm_arrow()
    runs = [_prefetched(r) for r in runs]
    init_ray(address)
    execute = _scheduler("execute")
    with JobProgress(
        {r.name: r.total for r in runs}, console=console, enabled=show_progress
    ) as progress:
        stats = execute(
            runs, store, max_attempts=job.run.max_attempts, progress=progress
        )
    if release_ray:
        stop_ray(background=True)
    store.compact()
    return RunOutcome(out, stats)


def _run_recorded(
    job: JobSpec,
    plan: JobPlan,
    store: ResultStore,
    out: Path,
    *,
    retry_failed: bool,
    show_progress: bool,
    console: Any,
    meanwhile: Callable[[JobPlan], Any] | None,
    release_ray: bool,
) -> RunOutcome:
    """:func:`run_job` of a job answered in the driver
    (:func:`~voirdire.engine.recorded.answer_recorded`): each judge's planned units not yet
    in ``store`` (built by columns where :func:`~voirdire.engine.unit_table.unit_frames`
    serves the design, else by the generator), joined with its recording; no Ray (one an
    earlier job of this process started is stopped with ``release_ray``, as after a run
    on it)."""
    import sys

    if meanwhile is not None:
        meanwhile(plan)
    bench = plan.bench
    prompts = PromptCache(bench, score_style=job.comparison.score_style)
    judges, totals = [], {}
    for rj in plan.judges:
        done = store.completed_ids(rj.name, include_failures=not retry_failed)
        ctx = rj.context(bench.name, str(plan.data_dir), str(out), bench.verdict_format)
        read = functools.partial(rj.backend.recorded_table, rj.settings, ctx)
        frames = (
            None
            if needs_prompt(rj.backend)
            else unit_frames(
                bench, plan.instances, rj.comparison_for(job.comparison),
                judge=rj.name, identity_hash=rj.identity_hash, prompts=prompts,
                variants=plan.variants, only=_own(plan, rj),
            )
        )  # fmt: skip
        units = (
            frames if frames is not None else _unit_batches(job, plan, rj, prompts, {})
        )
        judges.append((rj.name, read, units, done))
        totals[rj.name] = max(0, plan.units_of(rj.name) - len(done))
    with JobProgress(totals, console=console, enabled=show_progress) as progress:
        stats = answer_recorded(judges, store, progress=progress)
    if release_ray and "ray" in sys.modules:
        stop_ray(background=True)
    store.compact()
    return RunOutcome(out, stats)


def _unit_batches(
    job: JobSpec,
    plan: JobPlan,
    rj: ResolvedJudge,
    prompts: PromptCache,
    rewrites: Any,
) -> Any:
    """The lazy stream of judge ``rj``'s planned unit batches (every unit of the job's
    scheme and variants that is its own, :func:`_own`), ``prompts`` shared by the judges."""
    return iter_unit_batches(
        plan.bench,
        plan.instances,
        rj.comparison_for(job.comparison),
        judge=rj.name,
        identity_hash=rj.identity_hash,
        needs_prompt=needs_prompt(rj.backend),
        batch_size=batch_size_for(job.run, not needs_prompt(rj.backend)),
        prompts=prompts,
        variants=plan.variants,
        rewrites=rewrites,
        only=_own(plan, rj),  # a log's judge: what its records hold
    )


def _prefetched(run: JudgeRun) -> JudgeRun:
    """``run`` with the unit batches built while Ray is still starting (none once it is up)
    put in front of its lazy stream: the driver's own work overlaps Ray's start-up."""
    ready: list[Any] = []
    while ray_starting():
        batch = next(run.batches, None)
        if batch is None:
            break
        ready.append(batch)
    if not ready:
        return run
    return dataclasses.replace(run, batches=itertools.chain(ready, run.batches))


def _judge_runs(
    job: JobSpec,
    plan: JobPlan,
    store: ResultStore,
    out: Path,
    rewrites: Any,
    *,
    retry_failed: bool = False,
) -> list[JudgeRun]:
    """One :class:`~voirdire.engine.scheduler.JudgeRun` per judge of the plan: its settings,
    context and placement, and a lazy stream of its work units not yet recorded in
    ``store`` (recorded failures asked again when ``retry_failed``), in batches of
    ``run.batch_size``, one prompt cache shared by all judges; ``rewrites``: the rewritten
    answers of :func:`_rewrite_stage`."""
    JudgeRun = _scheduler("JudgeRun")
    bench = plan.bench
    prompts = PromptCache(bench, score_style=job.comparison.score_style)
    runs = []
    for rj in plan.judges:
        done = store.completed_ids(rj.name, include_failures=not retry_failed)
        ctx = rj.context(bench.name, str(plan.data_dir), str(out), bench.verdict_format)
        settings = rj.settings.model_dump(mode="json")
        runs.append(
            JudgeRun(
                name=rj.name,
                backend=rj.backend,
                backend_name=backend_ref(rj.backend),
                settings=settings,
                context=ctx,
                workers=rj.workers,
                concurrency=rj.concurrency,
                batches=_unit_batches(job, plan, rj, prompts, rewrites),
                total=max(0, plan.units_of(rj.name) - len(done)),
                done=done,
                actor_options=rj.actor_options,
            )
        )
    return runs


def _check_rerun(out: Path, job: JobSpec, plan: JobPlan) -> dict[str, Any]:
    """The job's ``configuration`` record, after refusing a rerun into a directory whose
    results belong to another configuration (:func:`~voirdire.engine.rerun.check_rerun`)."""
    if not (out / JOB_FILE).is_file():
        return configuration(job, plan)
    record = read_job_record(out)
    old = record.get("configuration")
    config = configuration(job, plan, old if isinstance(old, dict) else None)
    check_rerun(out, record, config)
    return config


def _write_job_file(out: Path, record: dict[str, Any]) -> None:
    """Write ``job.json`` under a temporary name, then rename it into place (a link there
    is replaced, never written through)."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{JOB_FILE}.tmp"
    tmp.unlink(missing_ok=True)
    tmp.write_text(json.dumps(record, indent=2))
    os.replace(tmp, out / JOB_FILE)


def _rewrite_stage(
    job: JobSpec,
    plan: JobPlan,
    out: Path,
    *,
    address: str | None,
    show_progress: bool,
    console: Any,
) -> dict[tuple[str, str, str], tuple[str, ...]]:
    """Run the rewrites the job needs and not yet stored (through the scheduler), then
    return them by (question id, model, variant label). Raises RewriteFailed."""
    needed = plan.rewrites
    if needed is None or needed.height == 0:
        return {}
    JudgeRun, execute = _scheduler("JudgeRun"), _scheduler("execute")
    store = rewrite_store(
        out,
        flush_rows=job.run.flush_rows,
        flush_seconds=job.run.flush_seconds,
        secrets=configured_secrets((plan.rewriters or {}).values()),
    )
    runs = []
    for name, rw in (plan.rewriters or {}).items():
        mine = needed.filter(pl.col("rewriter") == name)
        if mine.height == 0:
            continue
        done = store.completed_ids(name, include_failures=False)
        todo = mine.filter(~pl.col("unit_id").is_in(list(done)))["unit_id"].n_unique()
        runs.append(
            JudgeRun(
                name=name,
                backend=rw.backend,
                backend_name=backend_ref(rw.backend),
                settings=rw.settings.model_dump(mode="json"),
                context=rw.context(plan.bench.name, str(plan.data_dir), str(out)),
                workers=rw.workers,
                concurrency=rw.concurrency,
                batches=iter_rewrite_batches(mine, name, job.run.batch_size),
                total=todo,
                done=done,
                actor_options=rw.actor_options,
            )
        )
    if any(r.total for r in runs):
        init_ray(address)
        with JobProgress(
            {f"rewrite {r.name}": r.total for r in runs},
            console=console,
            enabled=show_progress,
        ) as progress:
            execute(
                runs,
                store,
                max_attempts=job.run.max_attempts,
                progress=_Renamed(progress, "rewrite "),
            )
        store.compact()
    return rewrites_for_units(plan.bench, needed, store)


class _Renamed:
    """A progress display whose task names carry a prefix."""

    def __init__(self, progress: JobProgress, prefix: str) -> None:
        self.progress, self.prefix = progress, prefix

    def advance(self, name: str, n: int, stats: Any = None) -> None:
        self.progress.advance(self.prefix + name, n, stats)
