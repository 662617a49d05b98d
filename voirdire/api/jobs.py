"""Jobs through the public API: load and validate a job, plan it, estimate its cost, run it,
audit another tool's judgment logs (each run ends with :func:`voirdire.api.results.analyze`)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from voirdire.api.results import analyze, prepare_analysis
from voirdire.core import ConfigError
from voirdire.engine.job import RunOutcome, estimate_job, run_job
from voirdire.engine.plan import JobPlan, plan_job
from voirdire.engine.spec import JobSpec, load_job, parse_job

if TYPE_CHECKING:
    from voirdire.analysis.outputs import Results

__all__ = [
    "load_job_spec",
    "plan",
    "estimate",
    "run",
    "run_queries",
    "audit_job",
    "check_audit",
    "audit",
    "needs_ray",
]


def load_job_spec(
    job: str | os.PathLike | Mapping[str, Any] | JobSpec,
    *,
    output_dir: str | None = None,
) -> JobSpec:
    """A validated job from a TOML path, a dict of the same keys, or a :class:`JobSpec`;
    ``output_dir`` overrides the job's.

    Raises:
        ConfigError: unreadable file, unknown keys, invalid values.
    """
    if isinstance(job, JobSpec):
        spec = job
    elif isinstance(job, Mapping):
        spec = parse_job(dict(job), "job")
    else:
        spec = load_job(Path(job))
    if output_dir is not None:
        spec = parse_job(
            {
                **spec.model_dump(mode="json", exclude_none=True),
                "output_dir": output_dir,
            },
            f"{spec.name} (output_dir)",
        )
    return spec


def needs_ray(
    job: str | os.PathLike | Mapping[str, Any] | JobSpec, address: str | None = None
) -> bool:
    """Whether running ``job`` starts or joins Ray: a cluster ``address``, or a judge that
    is asked queries (API, vLLM, simulated, a log completed by a live judge), a rewriter;
    a job whose judges all answer from recordings (replay, every audit) is answered by a
    table join without Ray (:mod:`voirdire.engine.recorded`).

    Raises:
        ConfigError: an invalid job (as :func:`load_job_spec`).
    """
    from voirdire.engine.recorded import spec_needs_ray

    return spec_needs_ray(load_job_spec(job), address)


def plan(
    job: str | os.PathLike | Mapping[str, Any] | JobSpec, dry_run: bool = False
) -> JobPlan:
    """Validate a job against its data and judges (backend preflight included); sends nothing.
    With ``dry_run``, missing API keys are warnings (``JobPlan.warnings``), not errors.

    Raises:
        ConfigError: naming the culprit.
    """
    return plan_job(load_job_spec(job), dry_run=dry_run)


def estimate(
    job: str | os.PathLike | Mapping[str, Any] | JobSpec,
) -> dict[str, dict[str, Any] | None]:
    """Dry run: per judge, the backend's estimate of tokens and cost (USD) over every prompt
    the job would send, or ``None`` for judges that cost nothing per query. Sends nothing."""
    spec = load_job_spec(job)
    return estimate_job(spec, plan_job(spec, dry_run=True))


def run(
    job: str | os.PathLike | Mapping[str, Any] | JobSpec,
    *,
    address: str | None = None,
    output_dir: str | None = None,
    retry_failed: bool = False,
    show_progress: bool = False,
    console: Any = None,
    job_plan: JobPlan | None = None,
    release_ray: bool = False,
) -> Results:
    """Run (or resume) a job (on Ray, unless its judges all answer from recordings:
    :func:`needs_ray`), then analyse its directory: :func:`run_queries`, then
    :func:`~voirdire.api.results.analyze`; the tables with the run's counts as ``stats``.

    Args: as :func:`run_queries`'s; with ``release_ray`` Ray stops while the directory is
    analysed.

    Raises:
        ConfigError: before anything is sent, when the job is invalid.
        JobInterrupted: on Ctrl-C or SIGTERM; finished results are saved.
    """
    outcome = run_queries(
        job,
        address=address,
        output_dir=output_dir,
        retry_failed=retry_failed,
        show_progress=show_progress,
        console=console,
        job_plan=job_plan,
        release_ray=release_ray,
    )
    res = analyze(outcome.output_dir)
    return dataclasses.replace(res, stats=outcome.stats)


def run_queries(
    job: str | os.PathLike | Mapping[str, Any] | JobSpec,
    *,
    address: str | None = None,
    output_dir: str | None = None,
    retry_failed: bool = False,
    show_progress: bool = False,
    console: Any = None,
    job_plan: JobPlan | None = None,
    release_ray: bool = False,
) -> RunOutcome:
    """Run (or resume) a job (on Ray unless :func:`needs_ray` says no), leaving its
    analysis to the caller: the output
    directory (every unit in ``raw/`` as an output or a recorded failure, ``job.json``) and
    the scheduler's counts (``RunOutcome.stats``: queries, failures, seconds).

    Args:
        job: a TOML path, a dict of the job file's keys, or a :class:`JobSpec`.
        address: a Ray cluster address; ``None`` starts or joins a local cluster.
        output_dir: overrides the job's ``output_dir``.
        retry_failed: ask again the units recorded as failures.
        show_progress: draw progress bars (rich).
        job_plan: the job's :func:`plan` when the caller validated it already.
        release_ray: stop Ray (in the background) once the queries are done: the caller
            runs no more jobs (the CLI's last job). Ray starts again if asked later.

    Raises:
        ConfigError: before anything is sent, when the job is invalid; before anything is
            written, when nothing accepts a connection at ``address``
            (:func:`~voirdire.engine.ray_start.check_address`).
        JobInterrupted: on Ctrl-C or SIGTERM; finished results are saved.
    """
    from voirdire.engine.ray_start import check_address

    check_address(address)  # job.json is written before Ray is joined
    spec = load_job_spec(job, output_dir=output_dir)
    return run_job(
        spec,
        address=address,
        show_progress=show_progress,
        retry_failed=retry_failed,
        console=console,
        plan=job_plan,
        meanwhile=prepare_analysis,  # while Ray starts
        release_ray=release_ray,
    )


def audit_job(
    logs: list[str | os.PathLike] | tuple[str | os.PathLike, ...],
    format: str,
    *,
    out: str | os.PathLike | None = None,
    judge: str | None = None,
    log: Mapping[str, Any] | None = None,
    data_dir: str | os.PathLike | None = None,
) -> JobSpec:
    """The job that audits judgment logs (``docs/audit.md``): ``[benchmark] name = format``
    with ``logs`` (made absolute) and ``log`` (the format's settings), one replay judge per
    judge in the logs (``recorded = "*"``; ``judge``: that one only), pairwise, both orders
    planned (each replay judge is asked the (pair, order) units its own records hold: one
    order of a pair where the log holds one, none of another judge's pairs;
    :mod:`voirdire.engine.completion`), option mode 3 (A / B / C = tie), one repetition;
    output directory ``out`` (default ``runs/audit-<format>``).

    Raises:
        ConfigError: ``format`` is not a log format (the message lists them), no logs.
    """
    cls = _log_format(format)
    if not logs:
        raise ConfigError("voirdire audit: give at least one log file or directory")
    key = cls.name.lower()
    bench: dict[str, Any] = {
        "name": cls.name,
        "logs": [str(Path(p).absolute()) for p in logs],
    }
    if log:
        bench["log"] = dict(log)
    if data_dir is not None:
        bench["data_dir"] = str(data_dir)
    return parse_job(
        {
            "name": f"audit-{key}",
            "output_dir": str(out or f"runs/audit-{key}"),
            "benchmark": bench,
            "comparison": {
                "mode": "pairwise",
                "option_mode": 3,
                # each judge is asked the orders its own records hold (engine.completion)
                "permutations": "both",
                "repetitions": 1,
            },
            "judges": [
                {"name": judge or "*", "backend": "replay", "recorded": judge or "*"}
            ],
        },
        f"voirdire audit --format {format}",
    )


def _log_format(format: str) -> Any:
    """The log format (a :class:`~voirdire.benchmarks.logs.base.LogBenchmark` class) named
    ``format``. Raises ConfigError: not a log format (the formats listed, the closest
    named: :func:`~voirdire.core.did_you_mean`)."""
    from voirdire.benchmarks.logs.base import LogBenchmark
    from voirdire.benchmarks.registry import BENCHMARKS, benchmark_class
    from voirdire.core import did_you_mean

    def formats() -> list[str]:
        return sorted(
            c.name
            for c in BENCHMARKS.available().values()
            if isinstance(c, type) and issubclass(c, LogBenchmark)
        )

    try:
        cls = benchmark_class(format)
    except ConfigError:
        if ":" in str(format):
            raise
        cls = None
    if cls is None or not issubclass(cls, LogBenchmark):
        known = formats()
        shown = str(format) if len(str(format)) <= 80 else str(format)[:80] + "..."
        raise ConfigError(
            f"{shown!r} is not a judgment log format{did_you_mean(str(format), known)}; "
            f"formats: {', '.join(known)}"
        )
    return cls


def check_audit(
    format: str,
    *,
    out: str | os.PathLike | None = None,
    judge: str | None = None,
    log: Mapping[str, Any] | None = None,
    address: str | None = None,
) -> None:
    """What an audit can refuse before Ray starts and before a log is read (``voirdire
    audit`` calls it first): the format, its settings ``log`` (``[benchmark.log]``, the
    format's options model: unknown keys, wrong types), the judge names given (``judge``
    and the setting ``judge``: :func:`~voirdire.engine.judge_names.check_judge_name`, which
    refuses the analysis's own names after trimming and names shaped like API keys), the
    output directory (:func:`~voirdire.ownership.claim_output_dir`: ours, no link
    below it, not a link to nothing) and the cluster ``address``
    (:func:`~voirdire.engine.ray_start.check_address`: something accepts a connection
    there, within 5 s). Reads no log and writes nothing.

    Raises:
        ConfigError: one line naming the format, setting, name, directory or address.
    """
    from voirdire.benchmarks.logs.reading import log_settings
    from voirdire.engine.judge_names import check_judge_name
    from voirdire.engine.ray_start import check_address
    from voirdire.ownership import claim_output_dir

    cls = _log_format(format)
    settings = log_settings(cls.Options, dict(log or {}), cls.name)
    for name in (judge, getattr(settings, "judge", None)):
        if isinstance(name, str) and name != "*":  # "*": every judge of the logs
            check_judge_name(name)
    claim_output_dir(out or f"runs/audit-{cls.name.lower()}")
    check_address(address)


def audit(
    logs: list[str | os.PathLike] | tuple[str | os.PathLike, ...],
    format: str,
    *,
    out: str | os.PathLike | None = None,
    judge: str | None = None,
    log: Mapping[str, Any] | None = None,
    data_dir: str | os.PathLike | None = None,
    address: str | None = None,
    show_progress: bool = False,
    console: Any = None,
    release_ray: bool = False,
) -> Results:
    """Audit judgment logs another tool wrote, holding both orders or one (``docs/audit.md``): read
    them in ``format`` (``"arena-hard"``, ``"fastchat"``, ``"judgebench"``, ``"logtable"``,
    ``"prd"``, ``"alpacaeval"``, ``"openai-batch"``, ``"anthropic-batch"``, ``"inspect"``,
    ``"autoj"``), replay every recorded verdict through the engine (:func:`audit_job`, :func:`run`) and
    analyse the output directory, which ``report``, ``mitigate`` and ``rank`` read like any
    other. No query is sent and no key is needed.

    ``release_ray``: as :func:`run`'s. The recorded verdicts are joined with the planned
    units in this process, without Ray (:mod:`voirdire.engine.recorded`); only with a
    cluster ``address`` is Ray joined, in the background once the format and the log list
    are valid (:func:`~voirdire.engine.ray_start.init_ray`), so that reading the logs
    overlaps it.

    Raises:
        ConfigError: not a log format, an unreadable log (file, line and field named), an
            output directory that is not ours.
    """
    check_audit(format, out=out, judge=judge, log=log, address=address)
    spec = audit_job(logs, format, out=out, judge=judge, log=log, data_dir=data_dir)
    if needs_ray(spec, address):  # a cluster named: joined while the logs are read
        from voirdire.engine.ray_start import init_ray

        init_ray(address, background=True)
    return run(
        spec,
        address=address,
        show_progress=show_progress,
        console=console,
        release_ray=release_ray,
    )
