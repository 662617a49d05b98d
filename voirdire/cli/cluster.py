"""``voirdire submit``, ``status`` and ``stop``: jobs on a Ray cluster through its Jobs API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from voirdire.cli.common import app, console, err_console, fail, redacted
from voirdire.core import ConfigError
from voirdire.escape import cell, terminal


def _parse_env(pairs: list[str] | None) -> dict[str, str]:
    env = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"--env takes KEY=VALUE, not {item!r}")
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
            warn=lambda m: err_console.print(f"[yellow]warning:[/] {terminal(redacted(m))}", soft_wrap=True),
        )  # fmt: skip
    except ConfigError as exc:
        fail(str(exc))
    except ConnectionError as exc:
        fail(str(exc), 1)
    console.print(f"submitted [bold]{terminal(s.job_id)}[/] to {terminal(s.address)}")
    if not wait:
        console.print(
            f"follow it with: voirdire status {terminal(s.job_id)} --address {terminal(s.address)}"
        )
        return
    final = sub.follow(
        s.job_id,
        s.address,
        write=lambda chunk: console.out(chunk, end="", highlight=False),
    )
    console.print(f"job {terminal(s.job_id)}: [bold]{terminal(final)}[/]")
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
        fail(str(exc), 1)
    table = Table(title="Ray jobs")
    for col in ("job id", "status", "job", "message"):
        table.add_column(col)
    for r in rows:
        table.add_row(  # what the cluster answers: shown as text
            cell(r["job_id"] or ""),
            cell(r["status"]),
            cell(r["metadata"].get("voirdire_job", r["entrypoint"] or "")),
            cell((r["message"] or "")[:80]),
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
        fail(str(exc), 1)
    console.print(
        f"job {terminal(job_id)}: {'stop requested' if stopped else 'not running'}"
    )
