"""``voirdire people``: human boards from a few labels and selective judges, from finished
directories (no judge is called; ``docs/people.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from voirdire.cli.common import Progress, app, console, fail, stage_progress
from voirdire.cli.options import bounded
from voirdire.core import ConfigError


@app.command()
def people(
    dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Finished output directories (a run's or an audit's), analysed together."
        ),
    ],
    labels: Annotated[
        str,
        typer.Option(
            help="gold (the benchmark's gold labels) or a CSV of human labels: question_id, candidate, reference, winner (candidate/reference/tie)[, benchmark]."
        ),
    ] = "gold",
    share: Annotated[
        float | None,
        bounded(
            "share",
            "Use a random share of the labels, e.g. 0.1 (what a study with only these would get).",
        ),
    ] = None,
    rows: Annotated[
        int | None, bounded("rows", "Use this many of the labels, drawn at random.")
    ] = None,
    level: Annotated[
        float, bounded("probability", "Coverage of the intervals and the rank sets.")
    ] = 0.9,
    alpha: Annotated[
        float,
        bounded(
            "alpha",
            "Selective judges: agreement with people >= 1 - alpha on the pairs kept...",
        ),
    ] = 0.1,
    delta: Annotated[
        float, bounded("alpha", "... with probability >= 1 - delta.")
    ] = 0.1,
    confidence: Annotated[
        str,
        typer.Option(help="orders, jury, probability, several joined by '+', or auto."),
    ] = "auto",
    cascade: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated judges in the cascade's order; default: cheapest first."
        ),
    ] = None,
    anchor: Annotated[
        str | None,
        typer.Option(help="The board's fixed model; default: the most compared."),
    ] = None,
    anchor_rating: Annotated[
        float, bounded("rating", "The anchor's rating (Arena scale).")
    ] = 1000.0,
    seed: Annotated[
        int, bounded("seed", "Seed of the random labels kept (--share, --rows).")
    ] = 0,
    unit: Annotated[
        str,
        typer.Option(
            help="The intervals' resampling unit: question (clustered by question, default) or pair (pairs independent)."
        ),
    ] = "question",
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where to write; default: <dir>-people next to the first directory, named after the inputs."
        ),
    ] = None,
    progress: Progress = True,
) -> None:
    """Human win rates and board from a few labels (PPI++), rank sets, selective judges with a guaranteed agreement, their cascade, the pairs for people."""  # fmt: skip
    from voirdire import api, escape
    from voirdire.analysis.report.people import print_people

    order = [s.strip() for s in cascade.split(",") if s.strip()] if cascade else None
    try:
        with stage_progress("people", progress):
            study, paths = api.people(
                dirs, labels=labels, share=share, rows=rows, level=level, alpha=alpha, delta=delta, confidence=confidence,
                cascade=order, anchor=anchor, anchor_rating=anchor_rating, seed=seed, out=out,
                unit=unit,
            )  # fmt: skip
    except (FileNotFoundError, ValueError, ConfigError) as exc:
        fail(str(exc))
    print_people(study, console)
    console.print(
        "wrote "
        + ", ".join(
            escape.terminal(p) for k, p in paths.items() if not k.startswith("figure:")
        )
    )
