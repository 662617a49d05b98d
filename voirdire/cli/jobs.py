"""``voirdire run`` and ``voirdire audit``: running jobs (or replaying logs), then their tables."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import polars as pl
import typer

from voirdire.cli import common
from voirdire.cli.common import (
    app,
    console,
    ends_on_sigterm,
    err_console,
    fail,
    print_tables,
    redacted,
)
from voirdire.core import ConfigError
from voirdire.escape import terminal


@app.command()
@ends_on_sigterm
def run(
    jobs: Annotated[list[Path], typer.Argument(help="Job files (TOML).")],
    address: Annotated[
        str | None, typer.Option(help="Ray cluster address; default: a local cluster.")
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Validate and count queries; send nothing."),
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Ask again units recorded as failed.")
    ] = False,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    output_dir: Annotated[
        str | None,
        typer.Option(
            "--output-dir", help="Override the job's output_dir (one job only)."
        ),
    ] = None,
) -> None:
    """Run (or resume) position-bias jobs and print the per-judge metrics."""
    from voirdire import api
    from voirdire.api.jobs import needs_ray
    from voirdire.engine.rewrite import RewriteFailed
    from voirdire.exceptions import JobInterrupted

    if not dry_run:
        _check_address(address)  # before Ray starts and before any job.json is written
        _check_keys(jobs, output_dir)  # a missing API key: one line, before Ray starts
    try:
        if output_dir is not None and len(jobs) != 1:
            raise ConfigError("--output-dir applies to one job file at a time")
        specs = [api.load_job_spec(p, output_dir=output_dir) for p in jobs]
        if not dry_run and any(needs_ray(s, address) for s in specs):
            _start_ray_early(address)  # a job answered by recorded tables alone: no Ray
        plans = [
            api.plan(s, dry_run=dry_run) for s in specs
        ]  # every job validated before anything is sent
    except ConfigError as exc:
        fail(str(exc))
    if dry_run:
        _print_dry_run(specs, plans)
        return
    finished: list = []  # the jobs whose queries are done, analysed after the last one
    ends = common.process_ends_with_command
    try:
        for i, (spec, plan) in enumerate(zip(specs, plans)):
            console.rule(f"[bold]{terminal(spec.name)}")
            outcome = api.run_queries(
                spec,
                address=address,
                show_progress=progress,
                retry_failed=retry_failed,
                console=console,
                job_plan=plan,
                release_ray=ends and i == len(specs) - 1,  # stops while analysing
            )
            s = outcome.stats
            console.print(
                f"{s.queries:,} queries in {s.seconds:.1f} s ({s.queries / max(s.seconds, 1e-9):,.0f} q/s), "
                f"{s.failures:,} recorded failures → {terminal(outcome.output_dir)}"
            )
            finished.append(outcome)
    except (ConfigError, RewriteFailed) as exc:
        _analyse(finished)  # the jobs before this one keep their metrics and report
        fail(str(exc))
    except JobInterrupted as exc:
        _analyse(finished)
        fail(str(exc), 130)
    print_tables(*_analyse(finished))


def _analyse(finished: list) -> tuple[list[pl.DataFrame], ...]:
    """Analyse the directories of the jobs ``run`` finished (``voirdire.api.analyze``), in
    order; returns their per-judge tables, bias-effect tables, cost tables, judgments and
    one-order effects for :func:`print_tables`. A directory the analysis refuses (``ConfigError``) is one line,
    exit 2."""
    from voirdire import api
    from voirdire.analysis.choice import judge_costs

    tables, effects, costs, judgments, one_order = [], [], [], [], []
    try:
        for outcome in finished:
            res = api.analyze(outcome.output_dir)
            tables.append(res.judge_metrics)
            judgments.append(res.judgments)
            one_order.append(res.one_order())
            costs.append(judge_costs(res.judgments))
            if res.bias_effects is not None:
                effects.append(res.bias_effects)
    except ConfigError as exc:
        fail(str(exc))
    return tables, effects, costs, judgments, one_order


#: a setting's name in ``--option KEY=VALUE`` (dotted parts nest: ``columns.instance``)
_OPTION_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
#: the most digits a number of ``--option`` has; the most characters of a value
MAX_OPTION_DIGITS, MAX_OPTION_CHARS = 18, 4096


def log_options(items: list[str]) -> dict:
    """``voirdire audit``'s ``--option KEY=VALUE`` items as the ``[benchmark.log]`` table:
    dotted keys nest (``columns.instance=item``), a value of ASCII digits is a number (at
    most :data:`MAX_OPTION_DIGITS` of them), any other value text (at most
    :data:`MAX_OPTION_CHARS` characters); the format's options model validates them after.

    Raises:
        ConfigError: one line naming the item: not ``KEY=VALUE``, a key that is no setting
            name, a key given twice, a key given both a value and keys below it
            (``columns=x`` and ``columns.instance=item``), a number or a text too long.
    """
    log: dict = {}
    given: dict[str, str] = {}  # dotted key -> its item (shortened)
    for item in items:
        shown = item if len(item) <= 80 else item[:60] + "..."
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--option {shown!r}: write KEY=VALUE")
        if not _OPTION_KEY.fullmatch(key):
            raise ConfigError(
                f"--option {shown!r}: {key[:60]!r} is not a setting name (letters, digits "
                "and _, dots between the parts of a nested key)"
            )
        number = value.isascii() and value.isdigit()
        if number and len(value) > MAX_OPTION_DIGITS:
            raise ConfigError(
                f"--option {key}: a number of {len(value):,} digits; at most {MAX_OPTION_DIGITS}"
            )
        if len(value) > MAX_OPTION_CHARS:
            raise ConfigError(
                f"--option {key}: the value has {len(value):,} characters; at most "
                f"{MAX_OPTION_CHARS:,}"
            )
        # the same key, a key above it or below it: given once, as a value or as a table
        clash = [
            v
            for k, v in given.items()
            if k == key or key.startswith(k + ".") or k.startswith(key + ".")
        ]
        if clash:
            raise ConfigError(
                f"--option {shown!r} and --option {clash[0]!r}: a setting is given once, "
                "as a value or as keys below it"
            )
        given[key] = shown
        *parents, last = key.split(".")
        node = log
        for k in parents:
            node = node.setdefault(k, {})
        node[last] = int(value) if number else value
    return log


def _check_address(address: str | None) -> None:
    """Refuse in one line (exit 2) a cluster ``address`` where nothing accepts a connection
    (:func:`voirdire.engine.ray_start.check_address`), as ``voirdire audit`` does: before
    Ray starts, a job is read or an output directory is written."""
    from voirdire.engine.ray_start import check_address

    try:
        check_address(address)
    except ConfigError as exc:
        fail(str(exc))


def _check_keys(jobs: list[Path], output_dir: str | None) -> None:
    """Refuse in one line (exit 2) a job whose API judge has no key in the environment
    (:func:`voirdire.engine.plan.check_keys`), before Ray starts: reading the job files
    is quick; an unreadable one is left to the plan, which names it."""
    from voirdire import api
    from voirdire.engine.plan import check_keys

    for p in jobs:
        try:
            spec = api.load_job_spec(p, output_dir=output_dir)
        except ConfigError:
            continue
        try:
            check_keys(spec)
        except ConfigError as exc:
            fail(str(exc))


def _start_ray_early(address: str | None) -> None:
    """In the console script (the process ends with the command), begin Ray's start in the
    background before the inputs are read (:func:`voirdire.engine.ray_start.init_ray`): reading
    and planning a job, or reading an audit's logs, overlap Ray's 3 to 4 s. A bad input still
    ends in one line, with nothing sent; the Ray node ends with the process. Callers of
    ``app`` (tests, notebooks) start Ray once their inputs are validated."""
    if common.process_ends_with_command:
        from voirdire.engine.ray_start import init_ray

        init_ray(address, background=True)


def _print_dry_run(specs: list, plans: list) -> None:
    """Per job: its instances, variants, and per judge (and rewriter) the queries it would
    send with the backend's estimate of tokens and cost (``voirdire run --dry-run``)."""
    from voirdire.engine.completion import asked_note
    from voirdire.engine.job import estimate_job

    for spec, plan in zip(specs, plans):
        console.print(
            f"[bold]{terminal(spec.name)}[/]: {plan.instances.height} instances"
        )
        for w in plan.warnings:  # a dry run sends nothing: a missing key only warns
            err_console.print(
                f"[yellow]warning:[/] {terminal(redacted(w))}", soft_wrap=True
            )
        estimates = estimate_job(spec, plan)
        if len(plan.variants) > 1:
            console.print(
                f"  {len(plan.variants) - 1} perturbation variant(s) and the control"
            )
        rewrites = (
            plan.rewrites
            if plan.rewrites is not None
            else pl.DataFrame({"rewriter": [], "unit_id": []})
        )
        rows = [
            (
                f"rewriter {n}",
                r.spec.backend,
                rewrites.filter(pl.col("rewriter") == n)["unit_id"].n_unique(),
                "rewrites",
                estimates.get(f"rewriter:{n}"),
            )
            for n, r in (plan.rewriters or {}).items()
        ]
        rows += [
            (
                rj.name,
                rj.spec.backend,
                plan.units_of(rj.name) - plan.recorded.get(rj.name, 0),
                terminal(asked_note(plan, rj)),  # "queries", and what a log answers
                estimates.get(rj.name),
            )
            for rj in plan.judges
        ]
        for label, backend, count, what, est in rows:
            console.print(
                f"  {terminal(label)} ({terminal(backend)}): {count:,} {what}"
            )
            if est:
                cost = est["cost_usd_max"]
                console.print(
                    f"    ~{est['input_tokens']:,} input tokens ({est['counting']}), "
                    f"<= {est['max_output_tokens']:,} output tokens (max_tokens per query), "
                    + (
                        f"cost <= ${cost:,.2f}"
                        if cost is not None
                        else "cost unknown (no price: set "
                        "price_input_per_mtok / price_output_per_mtok)"
                    )
                    + (
                        f"; {est['too_long']:,} queries exceed the context window and would be recorded "
                        "as failures without a call"
                        if est["too_long"]
                        else ""
                    )
                )


@app.command()
@ends_on_sigterm
def audit(
    logs: Annotated[
        list[Path], typer.Argument(help="Judgment log files or directories.")
    ],
    format: Annotated[
        str,
        typer.Option(
            "--format",
            help=(
                "The log's format: alpacaeval, anthropic-batch, arena-hard, autoj, "
                "fastchat, inspect, judgebench, logtable, openai-batch, prd."
            ),
        ),
    ],
    out: Annotated[
        str | None,
        typer.Option(help="Output directory (default: runs/audit-<format>)."),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(help="Audit this judge of the logs only (default: every one)."),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            help="A format setting KEY=VALUE ([benchmark.log]; dotted keys nest: columns.instance=item).",
        ),
    ] = None,
    address: Annotated[
        str | None, typer.Option(help="Ray cluster address; default: a local cluster.")
    ] = None,
    progress: Annotated[
        bool, typer.Option(help="Show progress bars (on a terminal).")
    ] = True,
) -> None:
    """Audit judgment logs other tools wrote (both orders recorded, or one): no query is
    sent."""
    from voirdire import api
    from voirdire.exceptions import JobInterrupted

    try:  # what can be refused is refused before Ray starts and before a log is read
        log = log_options(option or [])
        api.check_audit(format, out=out, judge=judge, log=log, address=address)
    except ConfigError as exc:
        fail(str(exc))
    if (
        address is not None
    ):  # an audit's judges answer from the logs: Ray only to join a cluster
        _start_ray_early(address)
    try:
        with common.stage_progress("audit", progress):
            res = api.audit(
                logs, format, out=out, judge=judge, log=log or None, address=address,
                show_progress=progress and console.is_terminal, console=console,
                release_ray=common.process_ends_with_command,
            )  # fmt: skip
    except ConfigError as exc:
        fail(str(exc))
    except JobInterrupted as exc:
        fail(str(exc), 130)
    console.print(
        f"audited {res.judgments.height:,} judgments → {terminal(res.output_dir)}"
    )
    from voirdire.analysis.choice import judge_costs

    print_tables(
        [res.judge_metrics],
        [],
        [judge_costs(res.judgments)],
        [res.judgments],
        [res.one_order()],
    )
