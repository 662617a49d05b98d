"""``voirdire analyze``, ``report``, ``mitigate`` and ``rank``: finished directories in, files out
(no judge is called)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import polars as pl
import typer

from voirdire.cli.common import (
    Progress,
    app,
    console,
    fail,
    print_summary,
    print_tables,
    stage_progress,
)
from voirdire.cli.options import bounded, read_table
from voirdire.core import ConfigError
from voirdire.escape import terminal, unquote_table, visible


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
            fail(str(exc))
        tables.append(res.judge_metrics)
        if res.bias_effects is not None:
            effects.append(res.bias_effects)
        d_ = terminal(d)
        console.print(
            f"wrote {d_}/metrics/judge_metrics.csv, {d_}/metrics/cell_metrics.csv, {d_}/report.md"
        )
    print_tables(tables, effects)


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
    replicates: Annotated[int, bounded("replicates", "Bootstrap replicates.")] = 1000,
    rs_min: Annotated[float, bounded("rate", "Flag judges with RS below this.")] = 0.90,
    max_error: Annotated[
        float, bounded("rate", "Flag judges with an error rate above this.")
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
            help="Add the Leaderboards section (docs/ranking.md; --replicates replicates: the boards of voirdire rank)."
        ),
    ] = False,
    margin: Annotated[
        float,
        bounded(
            "rate",
            "Name the cheapest judge within this much accuracy (PC without gold labels) of the best.",
        ),
    ] = 0.02,
    figures: Annotated[
        str,
        typer.Option(
            help="Static files of each figure under figures/: png, svg, png,svg or none."
        ),
    ] = "png",
    progress: Progress = True,
) -> None:
    """Write report.html (interactive figures, one file), report.md, metrics/*.csv and figures/*.png (no judge is called)."""
    from voirdire import api

    attrs = None
    if judge_attributes is not None:
        if not judge_attributes.is_file():
            fail(f"judge attributes file not found: {judge_attributes}")
        try:
            attrs = read_table(judge_attributes)
        except ConfigError as exc:
            fail(str(exc))
        if "judge" not in attrs.columns:
            fail(f"{judge_attributes}: needs a 'judge' column")
    formats = tuple(f for f in figures.replace(" ", "").split(",") if f and f != "none")
    if not set(formats) <= {"png", "svg"}:
        fail(f"--figures {figures!r}: write png, svg, png,svg or none")
    try:
        with stage_progress("report", progress):
            path = api.report(
                dirs, out=out, judge_attributes=attrs, replicates=replicates, rs_min=rs_min, max_error=max_error,
                tokenizer=tokenizer, leaderboards=leaderboards, margin=margin, figures=formats,
            )  # fmt: skip
    except (FileNotFoundError, ValueError, ConfigError) as exc:
        fail(str(exc))
    from voirdire.analysis.choice import choice_from_table

    choice = path.parent / "metrics" / "choice.csv"
    if choice.is_file():
        table = unquote_table(pl.read_csv(choice, infer_schema_length=None))
        print_summary(choice_from_table(table, margin))  # names as they were: '=x is =x
    console.print(f"wrote {terminal(path)}")


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
            help="Where to write; default: <dir>-mitigation next to the first directory, named after the inputs."
        ),
    ] = None,
    strategies: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated strategy names; default: all that need no query."
        ),
    ] = None,
    replicates: Annotated[int, bounded("replicates", "Bootstrap replicates.")] = 1000,
    beta: Annotated[
        float, bounded("rate", "Share of pairs chosen by BPDE for people.")
    ] = 0.2,
    labels: Annotated[
        Path | None,
        typer.Option(
            help="People's verdicts (filled bpde_annotation.csv): adds gate+labels, swap-tie+labels."
        ),
    ] = None,
    progress: Progress = True,
) -> None:
    """Apply position-bias mitigation strategies to finished judgments; write mitigation.csv, .md and a figure."""
    from voirdire import api

    names = (
        [s.strip() for s in strategies.split(",") if s.strip()] if strategies else None
    )
    try:
        with stage_progress("mitigate", progress):
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
        fail(str(exc))
    # the Markdown as written (its names escaped for Markdown), never read as markup, and
    # without a control byte of its own: a received name cannot reach the terminal
    console.print(
        "\n".join(map(visible, paths["markdown"].read_text().split("\n"))),
        markup=False,
        highlight=False,
        soft_wrap=True,  # its lines as written
    )
    console.print("wrote " + ", ".join(terminal(p) for p in paths.values()))


@app.command()
def rank(
    dirs: Annotated[
        list[Path],
        typer.Argument(help="Finished output directories (ranked together)."),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where to write; default: <dir>-ranking next to the first directory, named after the inputs."
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
            help="Model shown at --anchor-rating (ratings only: the ranks do not depend on it); default: the most compared."
        ),
    ] = None,
    anchor_rating: Annotated[
        float,
        bounded("rating", "The anchor's rating (Arena scale, 400/ln 10 per unit)."),
    ] = 1000.0,
    prior: Annotated[
        float,
        bounded(
            "prior",
            "Pseudo-ties between every two models that met (0: plain maximum likelihood).",
        ),
    ] = 0.0,
    replicates: Annotated[
        int,
        bounded(
            "replicates",
            "Bootstrap replicates (questions resampled); also the random order swaps of the flip test.",
        ),
    ] = 1000,
    seed: Annotated[
        int, bounded("seed", "The bootstrap's and the flip test's random seed.")
    ] = 0,
    style: Annotated[
        bool,
        typer.Option(
            help="Also style-controlled ratings and length-controlled win rates (reads the answers)."
        ),
    ] = False,
    lc_formula: Annotated[
        str,
        typer.Option(
            help="With --style, the LC win rate's formula: v1 (AlpacaEval's published one, from the weights fetched with its logs), minimal, or auto (v1 where weights exist)."
        ),
    ] = "auto",
    lc_difficulty: Annotated[
        str,
        typer.Option(
            help="With --style, where the LC v1 formula's instruction difficulty comes from: release (fitted once on every model of the AlpacaEval release the logs belong to, cached: a model's LC does not move with the others audited), audited (refitted on the audited models), or auto (release where the logs sit in one)."
        ),
    ] = "auto",
    progress: Progress = True,
) -> None:
    """Leaderboards per judge, strategy and order view, with rank flips; write metrics/leaderboard.csv, rank_flips.csv, figures."""
    from voirdire import api
    from voirdire.analysis.report.ranking import (
        lc_source_lines,
        print_boards,
        print_ranking,
    )

    names = (
        [s.strip() for s in strategies.split(",") if s.strip()] if strategies else None
    )
    try:
        with stage_progress("rank", progress):
            ranking, paths = api.rank(
                dirs, out=out, method=method, strategies=names, anchor=anchor, anchor_rating=anchor_rating,
                prior=prior, replicates=replicates, seed=seed, style=style, lc_formula=lc_formula,
                lc_difficulty=lc_difficulty,
            )  # fmt: skip
    except (FileNotFoundError, ValueError, ConfigError) as exc:
        fail(str(exc))
    print_boards(
        ranking, console, str(paths["leaderboard"])
    )  # the path as text, never markup
    print_ranking(ranking.summary(), console)
    if ranking.length is not None:
        for line in lc_source_lines(ranking.length):
            console.print(line)
    console.print(
        "wrote "
        + ", ".join(terminal(paths[k]) for k in ("leaderboard", "rank_flips", "html"))
    )
