"""The ``voirdire`` command line.

    voirdire run JOB.toml [JOB2.toml ...] [--address ADDR] [--dry-run] [--retry-failed]
    voirdire analyze DIR [DIR ...]
    voirdire report DIR [DIR ...] [--out OUT] [--judge-attributes CSV] [--tokenizer PATH]

``run`` validates every job before sending anything, runs them one after another on one
Ray connection, and prints the per-judge table of all of them. Exit codes: 0 success,
2 invalid input (nothing was sent), 130 interrupted (rerun to resume).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import polars as pl
import typer
from rich.console import Console

from voirdire.judges.base import ConfigError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False, help="Examine LLM judges for position bias, on Ray.")
# a terminal sets its own width; piped output (CI logs) gets room for the whole table
console = Console(width=None if sys.stdout.isatty() else 110)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 110)


def _fail(msg: str, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {msg}")
    raise typer.Exit(code)


@app.command()
def run(
    jobs: Annotated[list[Path], typer.Argument(help="Job files (TOML).")],
    address: Annotated[Optional[str], typer.Option(help="Ray cluster address; default: a local cluster.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate and count queries; send nothing.")] = False,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Ask again units recorded as failed.")] = False,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Run (or resume) position-bias jobs and print the per-judge metrics."""
    from voirdire.analysis.report import print_judge_table
    from voirdire.engine.job import plan_job, run_job
    from voirdire.engine.scheduler import JobInterrupted
    from voirdire.engine.spec import load_job

    try:
        specs = [load_job(p) for p in jobs]
        plans = [plan_job(s) for s in specs]  # every job validated before anything is sent
    except ConfigError as exc:
        _fail(str(exc))
    if dry_run:
        from voirdire.engine.job import estimate_job

        for spec, plan in zip(specs, plans):
            console.print(f"[bold]{spec.name}[/]: {plan['instances'].height} instances")
            estimates = estimate_job(spec, plan)
            for rj in plan["judges"]:
                console.print(f"  {rj.name} ({rj.spec.backend}): {plan['units_per_judge']:,} queries")
                est = estimates.get(rj.name)
                if est:
                    cost = est["cost_usd_max"]
                    console.print(
                        f"    ~{est['input_tokens']:,} input tokens ({est['counting']}), "
                        f"<= {est['max_output_tokens']:,} output tokens (max_tokens per query), "
                        + (f"cost <= ${cost:,.2f}" if cost is not None else "cost unknown (no price: set "
                           "price_input_per_mtok / price_output_per_mtok)")
                        + (f"; {est['too_long']:,} queries exceed the context window and would be recorded "
                           "as failures without a call" if est["too_long"] else "")
                    )
        return
    tables = []
    try:
        for spec in specs:
            console.rule(f"[bold]{spec.name}")
            outcome = run_job(spec, address=address, show_progress=progress, retry_failed=retry_failed, console=console)
            s = outcome.stats
            console.print(
                f"{s.queries:,} queries in {s.seconds:.1f} s ({s.queries / max(s.seconds, 1e-9):,.0f} q/s), "
                f"{s.failures:,} recorded failures → {outcome.output_dir}"
            )
            tables.append(outcome.judge_metrics)
    except ConfigError as exc:
        _fail(str(exc))
    except JobInterrupted as exc:
        _fail(str(exc), 130)
    if tables:
        print_judge_table(pl.concat(tables, how="diagonal_relaxed"), console=console)


@app.command()
def analyze(dirs: Annotated[list[Path], typer.Argument(help="Finished output directories.")]) -> None:
    """Recompute judgments, metrics and report.md from output directories (no judge is called)."""
    from voirdire.analysis.report import print_judge_table
    from voirdire.engine.job import analyze_dir

    tables = []
    for d in dirs:
        try:
            jm, _ = analyze_dir(d)
        except FileNotFoundError as exc:
            _fail(str(exc))
        tables.append(jm)
        console.print(f"wrote {d}/metrics/judge_metrics.csv, {d}/metrics/unit_metrics.csv, {d}/report.md")
    print_judge_table(pl.concat(tables, how="diagonal_relaxed"), console=console)


@app.command()
def report(
    dirs: Annotated[list[Path], typer.Argument(help="Finished output directories (several: analysed together).")],
    out: Annotated[Optional[Path], typer.Option(help="Where to write; default: the directory, or report/ next to the first.")] = None,
    judge_attributes: Annotated[Optional[Path], typer.Option(help="CSV with a 'judge' column and attribute columns for the regression.")] = None,
    replicates: Annotated[int, typer.Option(help="Bootstrap replicates.")] = 1000,
    rs_min: Annotated[float, typer.Option(help="Flag judges with RS below this.")] = 0.90,
    max_error: Annotated[float, typer.Option(help="Flag judges with an error rate above this.")] = 0.05,
    tokenizer: Annotated[Optional[str], typer.Option(help="Tokenizer path for lengths in tokens (overrides [analysis] tokenizer).")] = None,
) -> None:
    """Write report.html (figures embedded), report.md, metrics/*.csv and figures/*.png (no judge is called)."""
    from voirdire.analysis.html_report import build_report

    attrs = None
    if judge_attributes is not None:
        if not judge_attributes.is_file():
            _fail(f"judge attributes file not found: {judge_attributes}")
        attrs = pl.read_csv(judge_attributes)
        if "judge" not in attrs.columns:
            _fail(f"{judge_attributes}: needs a 'judge' column")
    try:
        path = build_report([str(d) for d in dirs], out, judge_attributes=attrs, replicates=replicates, rs_min=rs_min, max_error=max_error, tokenizer=tokenizer)
    except (FileNotFoundError, ValueError, ConfigError) as exc:
        _fail(str(exc))
    console.print(f"wrote {path}")


def main() -> None:
    """Entry point of the ``voirdire`` console script."""
    app()


if __name__ == "__main__":
    main()
