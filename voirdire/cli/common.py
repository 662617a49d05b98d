"""What every command of the ``voirdire`` command line shares: the Typer app, the consoles,
the one-line error exit, the per-judge tables and the warnings' one line."""

from __future__ import annotations

import contextlib
import functools
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import polars as pl
import typer
from rich.console import Console

from voirdire.escape import cell, terminal

__all__ = [
    "app",
    "console",
    "err_console",
    "ends_on_sigterm",
    "fail",
    "INTERRUPTED",
    "print_tables",
    "print_summary",
    "redacted",
    "show_warning",
]

#: set by the console script's :func:`voirdire.cli.main`: the process ends with the command,
#: so ``run`` and ``audit`` stop Ray while the last job is analysed; callers of ``app`` (the
#: tests, a notebook) keep their Ray cluster
process_ends_with_command = False

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    help="Examine LLM judges for position bias, on Ray.",
)
# a terminal sets its own width; piped output (CI logs) gets room for the whole table. No
# emoji codes: a judge named ":warning:" prints as written. Every text of a received file
# (names, messages quoting a file) passes voirdire.escape.terminal (markup escaped, control
# characters shown as escapes) or is a voirdire.escape.cell; docs/security.md. No
# highlighter: rich's default one runs patterns that take time quadratic in a line's length
# (a 300 KB name or message quoted in an error took minutes)
console = Console(
    width=None if sys.stdout.isatty() else 140, emoji=False, highlight=False
)
err_console = Console(
    stderr=True,
    width=None if sys.stderr.isatty() else 140,
    emoji=False,
    highlight=False,
)


def redacted(msg: str) -> str:
    """``msg`` with the environment's secrets removed (every error and warning the command
    line prints passes here: :func:`voirdire.engine.secrets.redact_message`)."""
    from voirdire.engine.secrets import redact_message

    return redact_message(msg)


def fail(msg: str, code: int = 2) -> None:
    """Print ``error: msg`` (secrets removed, shown as text: :func:`voirdire.escape.terminal`)
    on stderr as one line, however long (``soft_wrap``: not wrapped at the console's width,
    140 columns off a terminal), and exit with ``code``."""
    err_console.print(f"[bold red]error:[/] {terminal(redacted(msg))}", soft_wrap=True)
    raise typer.Exit(code)


#: the line of a command that Ctrl-C or SIGTERM stopped (the scheduler says its own)
INTERRUPTED = (
    "interrupted: finished results are saved; run the same command again to resume"
)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # a stopped Ray job, a killed terminal: as Ctrl-C


def ends_on_sigterm(command: Callable[..., Any]) -> Callable[..., Any]:
    """A command (``run``, ``audit``) that SIGTERM ends as Ctrl-C does, wherever it lands:
    reading the inputs, while Ray starts in the background, in the scheduler (which saves
    what finished and raises ``JobInterrupted``) or in the analysis: one line on stderr,
    exit 130 (:data:`INTERRUPTED`, or the scheduler's own line). Before, a SIGTERM that
    came before the scheduler ended the process with no line (-15), or through Ray's own
    handler with an abort (-6). The handler is set for the command's time (main thread)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        before = signal.signal(signal.SIGTERM, _interrupt)
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            fail(INTERRUPTED, 130)
        finally:
            signal.signal(signal.SIGTERM, before)

    return wrapper


def print_tables(
    tables: list[pl.DataFrame],
    effects: list[pl.DataFrame],
    costs: list[pl.DataFrame] | None = None,
    judgments: list[pl.DataFrame] | None = None,
    one_order: list[pl.DataFrame] | None = None,
) -> None:
    """The answer first, then what it rests on: each benchmark's line (the judge to trust
    first, or a one-order log's position effect: :func:`~voirdire.analysis.choice.choose_judges`),
    the per-judge tables, accuracy against gold labels where the benchmark has them, the
    one-order effects, the bias suite's effects and the judges ranked (``costs``:
    :func:`~voirdire.analysis.choice.judge_costs` tables; ``judgments``: the judgments
    behind the tables, one table per directory, so that the judges are compared on the
    units they share; ``one_order``: the directories'
    :func:`~voirdire.analysis.position.one_order.one_order_effect` tables)."""
    from voirdire.analysis.report.summary import print_choice
    from voirdire.analysis.report.terminal import (
        print_bias_table,
        print_gold_table,
        print_judge_table,
        print_one_order_table,
    )

    choice = None
    oo = [o for o in one_order or [] if o.height]
    effect = pl.concat(oo, how="diagonal_relaxed") if oo else None
    if tables:
        from voirdire.analysis.choice import choose_judges

        cost = pl.concat(costs, how="diagonal_relaxed") if costs else None
        jm = pl.concat(tables, how="diagonal_relaxed")
        choice = choose_judges(jm, cost, judgments=judgments or None, one_order=effect)
        for line in choice.lines.values():
            console.print(cell(line))
        print_judge_table(jm, console=console)
        print_gold_table(jm, console=console)
    if effect is not None:
        print_one_order_table(effect, console=console)
    if effects:
        print_bias_table(pl.concat(effects, how="diagonal_relaxed"), console=console)
    if choice is not None:
        print_choice(choice, console=console, lines=False)


def print_summary(choice) -> None:
    """The judges to trust first, per benchmark (:func:`~voirdire.analysis.report.summary.print_choice`)."""
    from voirdire.analysis.report.summary import print_choice

    print_choice(choice, console=console)


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` of the command line: the engine's and analysis' warnings
    (e.g. a quarantined raw file) are for the user: one line on stderr, without the source
    location."""
    err_console.print(
        "[yellow]warning:[/] " + terminal(redacted(str(message))), soft_wrap=True
    )


#: ``--progress/--no-progress`` of the analysis commands
Progress = Annotated[
    bool,
    typer.Option(
        help="Show the stage running, how many of the command's stages are done, the time "
        "taken and an estimate of the time left (on a terminal)."
    ),
]


@contextlib.contextmanager
def stage_progress(command: str, enabled: bool = True) -> Iterator[None]:
    """One progress line on stderr while ``command`` runs: the stage running now (any
    :func:`voirdire.stages.run_stages` inside, :func:`voirdire.stages.watching`), the
    outermost run's stages done of all as a bar, the time taken and the time left. Shown
    only on a terminal and when ``enabled``; gone when the command ends (the answer
    follows it)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as Bar

    from voirdire.stages import watching

    if not enabled or not err_console.is_terminal:
        yield
        return
    bar = Bar(
        SpinnerColumn(), TextColumn("[bold]{task.fields[command]}[/] {task.description}"),
        BarColumn(), MofNCompleteColumn(), TextColumn("stages"), TimeElapsedColumn(),
        TextColumn("ETA"), TimeRemainingColumn(), console=err_console, transient=True,
    )  # fmt: skip
    task = bar.add_task("starting", total=None, command=command)
    top = {"name": ""}

    def watch(name: str, i: int, n: int, depth: int) -> None:
        if depth == 0:
            top["name"] = name
            bar.update(task, total=n, completed=i, description=name)
        else:
            bar.update(task, description=f"{top['name']}: {name} ({i + 1}/{n})")

    with bar, watching(watch):
        yield
