"""voirdire's public Python API: what the CLI does, as functions a notebook can call.

    import voirdire
    result = voirdire.run("examples/mtbench_position_bias.toml")   # run or resume, then analyse
    result.judge_metrics                                          # polars DataFrame
    done = voirdire.load("runs/mtbench-position-bias")            # a finished directory (read-only)
    voirdire.report([done.output_dir], out="runs/report")         # report.html, report.md, CSVs

Every function validates before anything is sent and raises
:class:`voirdire.core.ConfigError` (invalid job, data or judge) with a message naming the
culprit; :class:`voirdire.engine.scheduler.JobInterrupted` on Ctrl-C (what finished is
saved: run again to resume).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from voirdire.core import ConfigError
from voirdire.engine.job import (
    RunOutcome,
    estimate_job,
    run_job,
)
from voirdire.engine.outdir import (
    check_reserved,
    claim_output_dir,
    claim_report_dir,
    distinct_dirs,
)
from voirdire.engine.plan import JobPlan, plan_job
from voirdire.engine.spec import JobSpec, load_job, parse_job

# The analysis (scipy, statsmodels, matplotlib: seconds to import) is imported by the
# functions that use it, when they use it: a run starts Ray first (issue 28.6).
if TYPE_CHECKING:
    from voirdire.analysis.outputs import Results

__all__ = [
    "Results",
    "load",
    "load_job_spec",
    "plan",
    "estimate",
    "run",
    "analyze",
    "report",
    "mitigate",
    "audit",
    "audit_job",
]


def __getattr__(name: str) -> Any:
    if name == "Results":  # voirdire.api.Results, imported on first use
        from voirdire.analysis.outputs import Results

        return Results
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def load(output_dir: str | os.PathLike) -> Results:
    """A finished (or partly finished) output directory as
    :class:`~voirdire.analysis.outputs.Results` (``voirdire.Results``), recomputed from
    its raw outputs (no judge is called). Read-only: nothing in the directory is written
    (it may sit on a read-only filesystem); :func:`analyze` also refreshes its files.

    Raises:
        FileNotFoundError: not a voirdire output directory.
    """
    from voirdire.analysis.outputs import compute_dir

    out = Path(output_dir)
    return compute_dir(out)


def analyze(output_dir: str | os.PathLike) -> Results:
    """:func:`load`, then rewrite the directory's ``judgments.parquet``, ``metrics/*.csv`` and
    ``report.md`` from what it computed (what ``voirdire analyze DIR`` does).

    Raises:
        FileNotFoundError: not a voirdire output directory.
        ConfigError: a directory that is not ours or holds a symbolic link
            (:func:`voirdire.engine.outdir.claim_output_dir`); nothing is written.
    """
    from voirdire.analysis.outputs import compute_dir
    from voirdire.analysis.report.files import write_dir

    out = claim_output_dir(output_dir)
    res = compute_dir(out)
    write_dir(res, out)
    return res


def run(
    job: str | os.PathLike | Mapping[str, Any] | JobSpec,
    *,
    address: str | None = None,
    output_dir: str | None = None,
    retry_failed: bool = False,
    show_progress: bool = False,
    console: Any = None,
    job_plan: JobPlan | None = None,
) -> Results:
    """Run (or resume) a job on Ray, then analyse its directory.

    Args:
        job: a TOML path, a dict of the job file's keys, or a :class:`JobSpec`.
        address: a Ray cluster address; ``None`` starts or joins a local cluster.
        output_dir: overrides the job's ``output_dir``.
        retry_failed: ask again the units recorded as failures.
        show_progress: draw progress bars (rich).
        job_plan: the job's :func:`plan` when the caller validated it already.

    Raises:
        ConfigError: before anything is sent, when the job is invalid.
        JobInterrupted: on Ctrl-C or SIGTERM; finished results are saved.
    """
    spec = load_job_spec(job, output_dir=output_dir)
    outcome: RunOutcome = run_job(
        spec,
        address=address,
        show_progress=show_progress,
        retry_failed=retry_failed,
        console=console,
        plan=job_plan,
    )
    res = analyze(outcome.output_dir)
    return dataclasses.replace(res, stats=outcome.stats)


def report(
    output_dirs: list[str | os.PathLike],
    *,
    out: str | os.PathLike | None = None,
    judge_attributes: pl.DataFrame | None = None,
    replicates: int = 1000,
    rs_min: float | None = None,
    max_error: float | None = None,
    tokenizer: str | None = None,
    leaderboards: bool = False,
) -> Path:
    """Analyse finished directories together and write ``report.html`` (self-contained),
    ``report.md``, ``metrics/*.csv`` and ``figures/*.png`` under ``out``; returns the path of
    ``report.html``. With ``out`` given, nothing is written outside it (the input
    directories are only read). With ``leaderboards``, also the "Leaderboards" section
    (``docs/ranking.md``). See :func:`voirdire.analysis.build.build_report`.

    Raises:
        FileNotFoundError: a directory is not a voirdire output directory.
        ConfigError: a directory given twice, an invalid judge-attributes table, or a directory to write that is not
            ours (:mod:`voirdire.engine.outdir`; nothing is written).
    """
    from voirdire.analysis.build import build_report

    if judge_attributes is not None and "judge" not in judge_attributes.columns:
        raise ConfigError("judge attributes need a 'judge' column")
    output_dirs = list(distinct_dirs(output_dirs))
    if out is None:  # each directory is rewritten too, the report goes beside several
        for d in output_dirs:
            claim_output_dir(d)
    if out is not None or len(output_dirs) > 1:
        claim_report_dir(
            out if out is not None else Path(output_dirs[0]).parent / "report"
        )
    return build_report(
        [str(d) for d in output_dirs], out, judge_attributes=judge_attributes, replicates=replicates,
        rs_min=rs_min, max_error=max_error, tokenizer=tokenizer, leaderboards=leaderboards,
    )  # fmt: skip


def mitigate(
    output_dirs: list[str | os.PathLike],
    *,
    reference: str | None = None,
    out: str | os.PathLike | None = None,
    strategies: list[str] | None = None,
    replicates: int = 1000,
    beta: float = 0.2,
    labels: str | os.PathLike | None = None,
) -> dict[str, Path]:
    """Apply the mitigation strategies that need no new query to finished directories
    (analysed together) and evaluate them (``docs/mitigation.md``); no judge is called.

    Args:
        output_dirs: finished output directories.
        reference: ``"gold"`` (the benchmark's gold labels, carried by the judgments:
            accuracy), ``"judge:NAME"`` (that judge's consistent verdicts: agreement with a
            judge, not with people) or a CSV of people's labels (question_id, candidate,
            reference, winner); None: no accuracy or kappa.
        out: where to write (default: ``mitigation/`` next to the first directory).
        strategies: registered strategy names (default: every no-query strategy).
        replicates: cluster-bootstrap replicates; beta: share of pairs chosen by BPDE for
            people.
        labels: the filled ``bpde_annotation.csv`` (people's verdicts): adds
            ``gate+labels`` and ``swap-tie+labels``, whose labelled pairs take people's verdict.

    Returns:
        Paths by name: ``table`` (mitigation.csv), ``markdown`` (mitigation.md), ``figure``
        (cost versus agreement, PNG), ``annotation`` (bpde_annotation.csv).

    Raises:
        FileNotFoundError: a directory is not a voirdire output directory.
        ConfigError: a directory given twice; a judge named ``people`` or ``panel-N``;
            a directory to write that is not ours (:mod:`voirdire.engine.outdir`),
            an unknown strategy, a strategy's missing need (e.g. option_probs), a reference
            that matches no judge or pair, labels with unknown candidates.
    """
    from voirdire.analysis.mitigation.evaluation import run_mitigation
    from voirdire.analysis.report.files import write_mitigation
    from voirdire.analysis.stages import analyse_dirs

    if not output_dirs:
        raise ConfigError("no output directory given")
    found = analyse_dirs(distinct_dirs(output_dirs), ["judgments"])  # inputs untouched
    judgments = pl.concat([d.judgments for d in found], how="diagonal_relaxed")
    check_reserved(judgments["judge"].unique().sort())
    table, annotation, _ = run_mitigation(
        judgments,
        reference=reference,
        strategies=strategies,
        replicates=replicates,
        beta=beta,
        labels=labels,
    )
    dest = claim_report_dir(
        Path(out) if out is not None else Path(output_dirs[0]).parent / "mitigation"
    )
    return write_mitigation(table, annotation, dest)


def rank(
    output_dirs: list[str | os.PathLike],
    *,
    out: str | os.PathLike | None = None,
    method: str = "bt",
    strategies: list[str] | None = None,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    prior: float = 0.0,
    replicates: int = 1000,
    seed: int = 0,
    style: bool = False,
) -> tuple[Any, dict[str, Path]]:
    """Leaderboards of finished directories (analysed together; ``docs/ranking.md``): per
    judge, strategy and order view Bradley–Terry (or Davidson) ratings with cluster-bootstrap
    intervals over questions, the people's leaderboard where judgments carry gold labels,
    and the rank flips between views; no judge is called.

    Args:
        output_dirs: finished output directories.
        out: where to write (default: ``ranking/`` next to the first directory).
        method: ``"bt"``, ``"davidson"`` or a registered method / import path.
        strategies: mitigation strategies ranked besides each order's own verdicts
            (default: every no-query strategy the judgments allow).
        anchor, anchor_rating: the model fixed at ``anchor_rating`` on Arena's 400/ln 10
            scale (default: the model in the most comparisons).
        prior: pseudo-ties added between every two models that met (0: the plain maximum
            likelihood; 1 keeps undefeated or winless models at a finite rating).
        replicates, seed: the cluster bootstrap's.
        style: also style-controlled ratings (Chatbot Arena) and length-controlled win rates
            (AlpacaEval 2) from the answers' lengths and markdown, read from each job's
            benchmark (``metrics/leaderboard_style.csv``, ``metrics/lc_win_rate.csv``).

    Returns:
        ``(ranking, paths)``: the :class:`~voirdire.analysis.ranking.study.Ranking`
        (``leaderboard``, ``flips``, ``summary()``) and the written files by name
        (``leaderboard``, ``rank_flips``, ``markdown``, ``html``, ``figure:...``).

    Raises:
        FileNotFoundError: a directory is not a voirdire output directory.
        ConfigError: a directory given twice; a judge named ``people`` or ``panel-N``
            (the analysis's own names); ``out`` holds something no voirdire report writes (or a link); no
            pairwise judgments, a board with one model or a disconnected
            comparison graph, an anchor that is not a candidate, an unknown method or strategy.
    """
    from voirdire.analysis.ranking.study import dir_clusters, rank_judgments
    from voirdire.analysis.report.ranking_files import write_ranking
    from voirdire.analysis.stages import analyse_dirs

    if not output_dirs:
        raise ConfigError("no output directory given")
    dest = claim_report_dir(
        Path(out) if out is not None else Path(output_dirs[0]).parent / "ranking"
    )  # before any work
    # the judgments and the bootstrap's clusters only: no metric, no kappa bootstrap
    tables = analyse_dirs(distinct_dirs(output_dirs), ["job", "judgments", "clusters"])
    judgments = pl.concat([t.judgments for t in tables], how="diagonal_relaxed")
    features = pl.concat([_answer_features(t) for t in tables]) if style else None
    ranking = rank_judgments(
        judgments, method=method, strategies=strategies, anchor=anchor, anchor_rating=anchor_rating,
        prior=prior, replicates=replicates, seed=seed, features=features, clusters=dir_clusters(tables),
    )  # fmt: skip
    return ranking, write_ranking(ranking, dest)


def _answer_features(tables: Any) -> pl.DataFrame:
    """Style features of the answers a directory's judgments compare, read from its job's benchmark."""
    from voirdire.analysis.mitigation.verdicts import normalise
    from voirdire.analysis.ranking.style import answer_features
    from voirdire.analysis.ranking.views import comparisons
    from voirdire.analysis.results_dir import dir_benchmark

    bench = dir_benchmark(tables.job)  # registered benchmarks only: job.json is data
    return answer_features(bench, comparisons(normalise(tables.judgments)))


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
    (the order shown only, ``"original"``, for a format whose logs hold one: ``orders = "one"``),
    option mode 3 (A / B / C = tie), one repetition; output directory ``out`` (default
    ``runs/audit-<format>``).

    Raises:
        ConfigError: ``format`` is not a log format (the message lists them), no logs.
    """
    from voirdire.benchmarks.logs.base import LogBenchmark
    from voirdire.benchmarks.registry import BENCHMARKS, benchmark_class

    cls = benchmark_class(format)
    if not issubclass(cls, LogBenchmark):
        known = [
            c.name
            for c in map(BENCHMARKS.find, BENCHMARKS.names())
            if isinstance(c, type) and issubclass(c, LogBenchmark)
        ]
        raise ConfigError(
            f"{format!r} is not a judgment log format; formats: {', '.join(sorted(known))}"
        )
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
                # a one-order log (AlpacaEval) shows model_a first: ask that order only
                "permutations": "original" if cls.orders == "one" else "both",
                "repetitions": 1,
            },
            "judges": [
                {"name": judge or "*", "backend": "replay", "recorded": judge or "*"}
            ],
        },
        f"voirdire audit --format {format}",
    )


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
) -> Results:
    """Audit judgment logs another tool wrote, holding both orders or one (``docs/audit.md``): read
    them in ``format`` (``"arena-hard"``, ``"fastchat"``, ``"judgebench"``, ``"logtable"``,
    ``"prd"``, ``"alpacaeval"``),
    replay every recorded verdict through the engine (:func:`audit_job`, :func:`run`) and
    analyse the output directory, which ``report``, ``mitigate`` and ``rank`` read like any
    other. No query is sent and no key is needed.

    Raises:
        ConfigError: not a log format, an unreadable log (file, line and field named), an
            output directory that is not ours.
    """
    spec = audit_job(logs, format, out=out, judge=judge, log=log, data_dir=data_dir)
    return run(spec, address=address, show_progress=show_progress, console=console)
