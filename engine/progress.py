"""Progress display: one rich progress bar per judge (queries done, rate, ETA, spend), one for
all of them past a few judges.

Without bars (``--no-progress``, e.g. a job submitted to a cluster, whose log is streamed
back), a plain line per judge is printed every ``log_seconds`` seconds instead.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from voirdire.escape import terminal, visible


class RateColumn(ProgressColumn):
    """Queries per second of a task."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(
            f"{speed:,.0f} q/s" if speed else "– q/s", style="progress.data.speed"
        )


#: the most judges drawn with a bar each; more share one bar
MAX_BARS = 8


class JobProgress:
    """A rich progress display with one task per judge (past :data:`MAX_BARS` judges, one
    task for them all, with their summed failures, tokens and cost).

    ``advance(judge, n, stats)`` moves a judge's bar by ``n`` queries; ``stats`` may carry
    ``failures``, ``input_tokens``, ``output_tokens`` and ``cost_usd`` (USD), shown beside it.
    When ``enabled`` is false, progress lines (``progress <judge>: done/total (q/s)``) go to
    stdout every ``log_seconds`` seconds (0: never).
    """

    def __init__(
        self,
        totals: dict[str, int],
        console: Console | None = None,
        enabled: bool = True,
        log_seconds: float = 10.0,
    ) -> None:
        self.enabled = enabled
        self.log_seconds = log_seconds
        self.totals = dict(totals)
        self.done = {j: 0 for j in totals}
        self._t0 = self._last = time.monotonic()
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[extra]}"),
            console=console,
            disable=not enabled,
            refresh_per_second=4,
        )
        # a judge's name is text, never markup (voirdire.escape); past MAX_BARS judges one
        # bar for them all (65 bars would not fit a screen)
        self.pooled = len(totals) > MAX_BARS
        if self.pooled:
            whole = self.progress.add_task(
                f"{len(totals)} judges", total=sum(totals.values()), extra=""
            )
            self.tasks = dict.fromkeys(totals, whole)
        else:
            self.tasks = {
                j: self.progress.add_task(terminal(j), total=t, extra="")
                for j, t in totals.items()
            }
        self._stats: dict[str, dict[str, float]] = {}

    def __enter__(self) -> JobProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def advance(
        self, judge: str, n: int, stats: dict[str, float] | None = None
    ) -> None:
        extra = ""
        if stats and self.pooled:  # the bar shows the judges' sums
            self._stats[judge] = dict(stats)
            stats = {
                k: sum(s.get(k) or 0 for s in self._stats.values())
                for k in ("failures", "input_tokens", "output_tokens", "cost_usd")
            }
        if stats:
            bits = []
            if stats.get("failures"):
                bits.append(f"{int(stats['failures'])} failed")
            tok = (stats.get("input_tokens") or 0) + (stats.get("output_tokens") or 0)
            if tok:
                bits.append(f"{tok:,.0f} tok")
            if stats.get("cost_usd"):
                bits.append(f"${stats['cost_usd']:.2f}")
            extra = " · ".join(bits)
        self.progress.update(self.tasks[judge], advance=n, extra=extra)
        self.done[judge] = self.done.get(judge, 0) + n
        now = time.monotonic()
        if (
            not self.enabled
            and self.log_seconds
            and now - self._last >= self.log_seconds
        ):
            self._last = now
            el = max(now - self._t0, 1e-9)
            for j, d in self.done.items():
                print(
                    f"progress {visible(j)}: {d:,}/{self.totals.get(j, 0):,} queries ({d / el:,.0f} q/s)",
                    file=sys.stdout,
                    flush=True,
                )
