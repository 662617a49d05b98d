"""The ``voirdire`` command line.

    voirdire run JOB.toml [JOB2.toml ...] [--address ADDR] [--dry-run] [--retry-failed] [--output-dir DIR]
    voirdire audit LOG [LOG ...] --format NAME [--out DIR] [--judge NAME] [--option KEY=VALUE]
    voirdire analyze DIR [DIR ...]
    voirdire report DIR [DIR ...] [--out OUT] [--judge-attributes CSV] [--tokenizer PATH]
    voirdire mitigate DIR [DIR ...] [--reference gold | --reference judge:NAME | --reference labels.csv] [--out OUT] [--strategies a,b] [--labels CSV]
    voirdire submit JOB.toml --address http://HEAD:8265 [--env K=V] [--output-dir DIR] [--no-wait]
    voirdire status [JOB_ID] [--address ...]
    voirdire stop JOB_ID [--address ...]
    voirdire data fetch [RELEASE] [--dest DIR] [--base-url URL] [--manifest TSV] [--prefer tsv|pkl] [--strict] [--deadline S] [--if-missing [--try DIR]]

``run`` validates every job before sending anything, runs them one after another on one
Ray connection, and prints the per-judge table of all of them. Exit codes: 0 success,
2 invalid input (nothing was sent), 130 interrupted (Ctrl-C or SIGTERM; rerun to resume).
``submit`` sends a job to a Ray cluster's Jobs API (:mod:`voirdire.engine.submit`) and,
unless ``--no-wait``, streams its log; exit code 0 when the job succeeded, 1 when it
failed or was stopped.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import polars as pl
import typer
from rich.console import Console
from rich.markup import escape

from voirdire.core import ConfigError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    help="Examine LLM judges for position bias, on Ray.",
)
# a terminal sets its own width; piped output (CI logs) gets room for the whole table
console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)


def _redacted(msg: str) -> str:
    """``msg`` with the environment's secrets removed (every error and warning the command
    line prints passes here: :func:`voirdire.engine.secrets.redact_message`)."""
    from voirdire.engine.secrets import redact_message

    return redact_message(msg)


def _fail(msg: str, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {escape(_redacted(msg))}")
    raise typer.Exit(code)


@app.command()
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
    import signal

    def _terminate(
        signum, frame
    ):  # a stopped Ray job gets SIGTERM: save and exit like Ctrl-C
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    from voirdire import api
    from voirdire.engine.rewrite import RewriteFailed
    from voirdire.engine.scheduler import JobInterrupted

    try:
        if output_dir is not None and len(jobs) != 1:
            raise ConfigError("--output-dir applies to one job file at a time")
        specs = [api.load_job_spec(p, output_dir=output_dir) for p in jobs]
        plans = [
            api.plan(s, dry_run=dry_run) for s in specs
        ]  # every job validated before anything is sent
    except ConfigError as exc:
        _fail(str(exc))
    if dry_run:
        from voirdire.engine.job import estimate_job

        for spec, plan in zip(specs, plans):
            console.print(
                f"[bold]{escape(spec.name)}[/]: {plan.instances.height} instances"
            )
            for w in plan.warnings:  # a dry run sends nothing: a missing key only warns
                err_console.print(f"[yellow]warning:[/] {escape(_redacted(w))}")
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
                    plan.units_per_judge,
                    "queries",
                    estimates.get(rj.name),
                )
                for rj in plan.judges
            ]
            for label, backend, count, what, est in rows:
                console.print(f"  {label} ({backend}): {count:,} {what}")
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
        return
    tables, effects = [], []
    try:
        for spec, plan in zip(specs, plans):
            console.rule(f"[bold]{spec.name}")
            outcome = api.run(
                spec,
                address=address,
                show_progress=progress,
                retry_failed=retry_failed,
                console=console,
                job_plan=plan,
            )
            s = outcome.stats
            console.print(
                f"{s.queries:,} queries in {s.seconds:.1f} s ({s.queries / max(s.seconds, 1e-9):,.0f} q/s), "
                f"{s.failures:,} recorded failures → {outcome.output_dir}"
            )
            tables.append(outcome.judge_metrics)
            if outcome.bias_effects is not None:
                effects.append(outcome.bias_effects)
    except ConfigError as exc:
        _fail(str(exc))
    except JobInterrupted as exc:
        _fail(str(exc), 130)
    except RewriteFailed as exc:
        _fail(str(exc))
    _print_tables(tables, effects)


@app.command()
def audit(
    logs: Annotated[
        list[Path], typer.Argument(help="Judgment log files or directories.")
    ],
    format: Annotated[
        str,
        typer.Option(
            "--format",
            help="The log's format: arena-hard, fastchat, judgebench, logtable.",
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
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = False,
) -> None:
    """Audit judgment logs other tools wrote (both orders recorded): no query is sent."""
    from voirdire import api
    from voirdire.engine.scheduler import JobInterrupted

    log: dict = {}
    try:
        for item in option or []:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise ConfigError(f"--option {item!r}: write KEY=VALUE")
            *parents, last = key.split(".")
            node = log
            for k in parents:
                node = node.setdefault(k, {})
            node[last] = int(value) if value.isdigit() else value
        res = api.audit(
            logs, format, out=out, judge=judge, log=log or None, address=address,
            show_progress=progress, console=console,
        )  # fmt: skip
    except ConfigError as exc:
        _fail(str(exc))
    except JobInterrupted as exc:
        _fail(str(exc), 130)
    console.print(f"audited {res.judgments.height:,} judgments → {res.output_dir}")
    _print_tables([res.judge_metrics], [])


def _print_tables(tables: list[pl.DataFrame], effects: list[pl.DataFrame]) -> None:
    """The per-judge tables of finished jobs, accuracy against gold labels where the
    benchmark has them (the judge tables' gold columns), and the bias suite's effects."""
    from voirdire.analysis.report.terminal import (
        print_bias_table,
        print_gold_table,
        print_judge_table,
    )

    if tables:
        jm = pl.concat(tables, how="diagonal_relaxed")
        print_judge_table(jm, console=console)
        print_gold_table(jm, console=console)
    if effects:
        print_bias_table(pl.concat(effects, how="diagonal_relaxed"), console=console)


@app.command()
def analyze(
    dirs: Annotated[list[Path], typer.Argument(help="Finished output directories.")],
) -> None:
    """Recompute judgments, metrics and report.md from output directories (no judge is called)."""
    from voirdire import api

    tables, effects = [], []
    for d in dirs:
        try:
            res = api.analyze(d)
        except (FileNotFoundError, ConfigError) as exc:
            _fail(str(exc))
        tables.append(res.judge_metrics)
        if res.bias_effects is not None:
            effects.append(res.bias_effects)
        console.print(
            f"wrote {d}/metrics/judge_metrics.csv, {d}/metrics/cell_metrics.csv, {d}/report.md"
        )
    _print_tables(tables, effects)


@app.command()
def report(
    dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Finished output directories (several: analysed together)."
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where to write; default: the directory, or report/ next to the first."
        ),
    ] = None,
    judge_attributes: Annotated[
        Path | None,
        typer.Option(
            help="CSV with a 'judge' column and attribute columns for the regression."
        ),
    ] = None,
    replicates: Annotated[int, typer.Option(help="Bootstrap replicates.")] = 1000,
    rs_min: Annotated[
        float, typer.Option(help="Flag judges with RS below this.")
    ] = 0.90,
    max_error: Annotated[
        float, typer.Option(help="Flag judges with an error rate above this.")
    ] = 0.05,
    tokenizer: Annotated[
        str | None,
        typer.Option(
            help="Tokenizer path for lengths in tokens (overrides [analysis] tokenizer)."
        ),
    ] = None,
    leaderboards: Annotated[
        bool,
        typer.Option(
            help="Add the Leaderboards section (docs/ranking.md; 200 replicates at most)."
        ),
    ] = False,
) -> None:
    """Write report.html (figures embedded), report.md, metrics/*.csv and figures/*.png (no judge is called)."""
    from voirdire import api

    attrs = None
    if judge_attributes is not None:
        if not judge_attributes.is_file():
            _fail(f"judge attributes file not found: {judge_attributes}")
        attrs = pl.read_csv(judge_attributes)
        if "judge" not in attrs.columns:
            _fail(f"{judge_attributes}: needs a 'judge' column")
    try:
        path = api.report(
            dirs, out=out, judge_attributes=attrs, replicates=replicates, rs_min=rs_min, max_error=max_error,
            tokenizer=tokenizer, leaderboards=leaderboards,
        )  # fmt: skip
    except (FileNotFoundError, ValueError, ConfigError) as exc:
        _fail(str(exc))
    console.print(f"wrote {path}")


@app.command()
def mitigate(
    dirs: Annotated[
        list[Path],
        typer.Argument(help="Finished output directories (analysed together)."),
    ],
    reference: Annotated[
        str | None,
        typer.Option(
            help="gold (the benchmark's gold labels), judge:NAME (a judge's consistent verdicts: agreement, not accuracy) or a labels CSV."
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where to write; default: mitigation/ next to the first directory."
        ),
    ] = None,
    strategies: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated strategy names; default: all that need no query."
        ),
    ] = None,
    replicates: Annotated[int, typer.Option(help="Bootstrap replicates.")] = 1000,
    beta: Annotated[
        float, typer.Option(help="Share of pairs chosen by BPDE for people.")
    ] = 0.2,
    labels: Annotated[
        Path | None,
        typer.Option(
            help="People's verdicts (filled bpde_annotation.csv): adds gate+labels, swap-tie+labels."
        ),
    ] = None,
) -> None:
    """Apply position-bias mitigation strategies to finished judgments; write mitigation.csv, .md and a figure."""
    from voirdire import api

    names = (
        [s.strip() for s in strategies.split(",") if s.strip()] if strategies else None
    )
    try:
        paths = api.mitigate(
            dirs,
            reference=reference,
            out=out,
            strategies=names,
            replicates=replicates,
            beta=beta,
            labels=labels,
        )
    except (FileNotFoundError, ValueError, ConfigError) as exc:
        _fail(str(exc))
    console.print(paths["markdown"].read_text())
    console.print("wrote " + ", ".join(str(p) for p in paths.values()))


@app.command()
def rank(
    dirs: Annotated[
        list[Path],
        typer.Argument(help="Finished output directories (ranked together)."),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where to write; default: ranking/ next to the first directory."
        ),
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            help="Ranking method: bt (Bradley–Terry, a tie half a win) or davidson."
        ),
    ] = "bt",
    strategies: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated strategy names; default: all that need no query."
        ),
    ] = None,
    anchor: Annotated[
        str | None,
        typer.Option(
            help="Model fixed at --anchor-rating; default: the most compared."
        ),
    ] = None,
    anchor_rating: Annotated[
        float,
        typer.Option(help="The anchor's rating (Arena scale, 400/ln 10 per unit)."),
    ] = 1000.0,
    prior: Annotated[
        float,
        typer.Option(
            help="Pseudo-ties between every two models that met (0: plain maximum likelihood)."
        ),
    ] = 0.0,
    replicates: Annotated[
        int,
        typer.Option(
            help="Bootstrap replicates (questions resampled); also the random order swaps of the flip test."
        ),
    ] = 1000,
    style: Annotated[
        bool,
        typer.Option(
            help="Also style-controlled ratings and length-controlled win rates (reads the answers)."
        ),
    ] = False,
) -> None:
    """Leaderboards per judge, strategy and order view, with rank flips; write metrics/leaderboard.csv, rank_flips.csv, figures."""
    from voirdire import api
    from voirdire.analysis.report.ranking import print_ranking

    names = (
        [s.strip() for s in strategies.split(",") if s.strip()] if strategies else None
    )
    try:
        ranking, paths = api.rank(
            dirs, out=out, method=method, strategies=names, anchor=anchor, anchor_rating=anchor_rating,
            prior=prior, replicates=replicates, style=style,
        )  # fmt: skip
    except (FileNotFoundError, ValueError, ConfigError) as exc:
        _fail(str(exc))
    print_ranking(ranking.summary(), console)
    console.print(
        f"wrote {paths['leaderboard']}, {paths['rank_flips']}, {paths['html']}"
    )


def _parse_env(pairs: list[str] | None) -> dict[str, str]:
    env = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            _fail(f"--env takes KEY=VALUE, not {item!r}")
        env[key] = value
    return env


@app.command()
def submit(
    job: Annotated[Path, typer.Argument(help="Job file (TOML).")],
    address: Annotated[
        str | None,
        typer.Option(
            help="Ray Jobs API, e.g. http://HEAD:8265 (default: $RAY_API_SERVER_ADDRESS, $RAY_ADDRESS, http://127.0.0.1:8265)."
        ),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option("--env", help="KEY=VALUE for the job's processes (repeatable)."),
    ] = None,
    pip: Annotated[
        list[str] | None,
        typer.Option(
            "--pip",
            help="Extra pip requirement for the job's runtime environment (repeatable).",
        ),
    ] = None,
    output_dir: Annotated[
        str | None,
        typer.Option(
            "--output-dir",
            help="Override the job's output_dir (a path as seen from the head node).",
        ),
    ] = None,
    submission_id: Annotated[
        str | None, typer.Option("--id", help="Job id to use.")
    ] = None,
    wait: Annotated[
        bool, typer.Option(help="Stream the job's log until it ends.")
    ] = True,
) -> None:
    """Submit a job to a Ray cluster through the Jobs API (and stream its log)."""
    from voirdire.engine import submit as sub

    try:
        s = sub.submit(
            job, address, output_dir=output_dir, env=_parse_env(env), pip=pip, submission_id=submission_id,
            warn=lambda m: err_console.print(f"[yellow]warning:[/] {escape(_redacted(m))}"),
        )  # fmt: skip
    except ConfigError as exc:
        _fail(str(exc))
    except ConnectionError as exc:
        _fail(str(exc), 1)
    console.print(f"submitted [bold]{s.job_id}[/] to {s.address}")
    if not wait:
        console.print(
            f"follow it with: voirdire status {s.job_id} --address {s.address}"
        )
        return
    final = sub.follow(
        s.job_id,
        s.address,
        write=lambda chunk: console.out(chunk, end="", highlight=False),
    )
    console.print(f"job {s.job_id}: [bold]{final}[/]")
    if final != "SUCCEEDED":
        raise typer.Exit(1)


@app.command()
def status(
    job_id: Annotated[
        str | None, typer.Argument(help="A job id; default: every job on the cluster.")
    ] = None,
    address: Annotated[
        str | None, typer.Option(help="Ray Jobs API (see submit).")
    ] = None,
    logs: Annotated[
        bool, typer.Option("--logs", help="Print the job's log too (with a job id).")
    ] = False,
) -> None:
    """Show submitted jobs and their status."""
    from rich.table import Table

    from voirdire.engine import submit as sub

    try:
        rows = sub.status(job_id, address)
    except (ConnectionError, RuntimeError) as exc:
        _fail(str(exc), 1)
    table = Table(title="Ray jobs")
    for col in ("job id", "status", "job", "message"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["job_id"] or "",
            r["status"],
            r["metadata"].get("voirdire_job", r["entrypoint"] or ""),
            (r["message"] or "")[:80],
        )
    console.print(table)
    if logs and job_id:
        console.out(sub.logs(job_id, address), highlight=False)


@app.command()
def stop(
    job_id: Annotated[str, typer.Argument(help="The job id.")],
    address: Annotated[
        str | None, typer.Option(help="Ray Jobs API (see submit).")
    ] = None,
) -> None:
    """Stop a submitted job (finished results are kept; resubmit to resume)."""
    from voirdire.engine import submit as sub

    try:
        stopped = sub.stop(job_id, address)
    except (ConnectionError, RuntimeError) as exc:
        _fail(str(exc), 1)
    console.print(f"job {job_id}: {'stop requested' if stopped else 'not running'}")


data_app = typer.Typer(
    no_args_is_help=True,
    help="The benchmark data: the public releases the benchmarks read (Shi et al., 2024, and others).",
)
app.add_typer(data_app, name="data")


@data_app.command("fetch")
def data_fetch(
    name: Annotated[
        str,
        typer.Argument(
            help="The release: judging-the-judges (MT-Bench, DevBench) or another benchmark's (an unknown name lists them)."
        ),
    ] = "judging-the-judges",
    dest: Annotated[
        Path | None,
        typer.Option(
            help="Data directory to write (default: $VOIRDIRE_DATA, else the user data directory)."
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="Where the release's files are, paths appended as in the repository (default: $VOIRDIRE_RELEASE_URL, else GitHub's raw URLs of the pinned commit).",
        ),
    ] = None,
    prefer: Annotated[
        str,
        typer.Option(
            help="Form of the judges' outputs fetched first: tsv (record_*.tsv) or pkl (tmp.pkl, loaded without executing); the other is the fallback."
        ),
    ] = "pkl",
    if_missing: Annotated[
        bool,
        typer.Option(
            "--if-missing",
            help="Fetch only when no data directory is found (the usual lookup); print the one in use.",
        ),
    ] = False,
    try_dir: Annotated[
        str | None,
        typer.Option(
            "--try",
            help="With --if-missing: a directory to use first when it exists here (a cluster client's data location).",
        ),
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show download progress bars.")] = True,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Fail when the mirror lacks any judge's outputs (default: take every judge it has, name those skipped).",
        ),
    ] = False,
    manifest: Annotated[
        Path | None,
        typer.Option(
            help="The files and git blob ids to fetch and verify (a manifest TSV) instead of the package's (a mirror of other files)."
        ),
    ] = None,
    deadline: Annotated[
        float,
        typer.Option(
            min=1,
            help="Seconds each file's download may take in all; a slower one is cut off.",
        ),
    ] = 600.0,
) -> None:
    """Download a release, verify every file against its git blob id, and convert it once.

    A mirror lacking some judges' outputs: those judges are skipped and named (exit 0), or,
    with --strict, the fetch fails. Prints the data directory on stdout (messages go to stderr)."""
    from voirdire.benchmarks import release
    from voirdire.benchmarks.http_guard import redact_url
    from voirdire.core import DataError

    def log(msg: str) -> None:
        err_console.print(redact_url(msg), highlight=False)

    try:
        rel = release.get_release(name)
        if if_missing:
            path = release.locate_or_fetch(
                try_dir,
                base_url,
                release=rel,
                prefer=prefer,
                progress=progress,
                log=log,
                manifest=manifest,
                deadline=deadline,
            )
        else:
            path = release.fetch_release(
                dest,
                base_url,
                release=rel,
                prefer=prefer,
                manifest=manifest,
                strict=strict,
                progress=progress,
                log=log,
                deadline=deadline,
            ).dest
    except ConfigError as exc:
        _fail(redact_url(str(exc)))
    except DataError as exc:
        _fail(redact_url(str(exc)), 1)
    typer.echo(str(path))


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    # the engine's and analysis' warnings (e.g. a quarantined raw file) are for the user:
    # one line on stderr, without the source location
    err_console.print(
        "[yellow]warning:[/] " + escape(_redacted(str(message))), soft_wrap=True
    )


def main() -> None:
    """Entry point of the ``voirdire`` console script."""
    import warnings

    warnings.showwarning = _show_warning
    app()


if __name__ == "__main__":
    main()
