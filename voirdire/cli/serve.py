"""``voirdire serve``: a job's judges behind an OpenAI-compatible endpoint on 127.0.0.1, both
orders asked for every pairwise judge request a harness sends (``docs/serve.md``)."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Annotated

import typer

from voirdire.cli.common import app, console, fail
from voirdire.core import ConfigError
from voirdire.escape import terminal


@app.command()
def serve(
    job: Annotated[
        Path, typer.Argument(help="A job file (TOML): its judges are served.")
    ],
    judges: Annotated[
        list[str] | None,
        typer.Option(
            "--judge", help="Serve this judge of the job (repeat; default: every one)."
        ),
    ] = None,
    port: Annotated[
        int, typer.Option(help="The port on 127.0.0.1.", min=1, max=65535)
    ] = 8000,
    host: Annotated[
        str, typer.Option(help="A loopback address to listen on.")
    ] = "127.0.0.1",
    out: Annotated[
        str | None,
        typer.Option(help="Record every exchange here (exchanges.jsonl)."),
    ] = None,
    strategy: Annotated[
        str, typer.Option(help="What a disagreement between the two orders gives: tie.")
    ] = "tie",
    address: Annotated[
        str | None, typer.Option(help="Ray cluster address; default: a local cluster.")
    ] = None,
) -> None:
    """Serve a job's judges at an OpenAI-compatible endpoint (/v1/chat/completions,
    /v1/models) on Ray Serve: a request in a known judge template (Arena-Hard, JudgeBench,
    FastChat pair-v2, PRD) is asked in both orders, and the verdict comes back in the
    harness's own format only when both agree (else a tie); any other request is passed
    through. Ctrl-C or SIGTERM stops it; with --out, every exchange is recorded while
    serving and, once stopped, the gated ones are written as a results directory that
    report, rank, mitigate and people read."""
    from voirdire import api

    try:
        server = api.serve(
            job, judges=judges or None, host=host, port=port, out=out,
            strategy=strategy, address=address,
        )  # fmt: skip
    except ConfigError as exc:
        fail(str(exc))
    console.print(
        f"serving {terminal(', '.join(server.judges))} at {terminal(server.base_url)}"
        + (f"; exchanges recorded in {terminal(server.out)}" if server.out else ""),
        soft_wrap=True,
    )
    before = signal.signal(signal.SIGTERM, _stop)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, before)
        server.stop()
    console.print("stopped")
    if server.out:
        _write_results(server.out)


def _write_results(out: str) -> None:
    """The record as a results directory (:func:`voirdire.api.serving.served_results`),
    its path printed; a record without gated exchanges says so (the record stays)."""
    from voirdire.api.serving import served_results

    try:
        res = served_results(out)
    except ConfigError as exc:
        console.print(f"no results directory: {terminal(str(exc))}")
        return
    console.print(
        f"results → {terminal(str(res.output_dir))} "
        f"(voirdire report {terminal(str(res.output_dir))})",
        soft_wrap=True,
    )


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the server as Ctrl-C does
