"""The answer first, in the page and in the terminal: per benchmark the line naming the
judge to trust first and the judges ranked (:class:`~voirdire.analysis.choice.Choice`,
computed by :mod:`voirdire.analysis.choice`; nothing is computed here).

The page's view (:func:`summary_view`: every judge, the first :data:`SUMMARY_ROWS` shown,
a check box per row picking the win-rate curves) and the terminal's table
(:func:`print_choice`: the best :data:`CHOICE_ROWS`, after ``run``, ``audit`` and
``report``) show the same columns, those no judge has left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl
from rich.console import Console
from rich.table import Table

from voirdire.analysis.report.judge_table import fmt_value
from voirdire.analysis.report.views import F3, PCT, SIGNED, table_view
from voirdire.escape import cell

if TYPE_CHECKING:
    from voirdire.analysis.choice import Choice

__all__ = ["SUMMARY_ROWS", "CHOICE_ROWS", "summary_view", "print_choice"]

#: how many judges per benchmark the terminal's summary lists (the report lists all)
CHOICE_ROWS = 10

#: the summary's columns: name, header, format
_CHOICE = [("rank", "#", None), ("judge", "judge", None), ("accuracy", "accuracy", F3), ("accuracy_ci", "95% CI", None),
           ("pc", "PC", F3), ("pf", "PF", SIGNED), ("pass_kappa", "κ orders", F3), ("rs", "RS", F3),
           ("error_rate", "errors", PCT), ("usd_per_1k", "USD / 1k", "{:,.3g}"), ("judgments_per_s", "judgments/s", "{:,.3g}"),
           ("gates", "fails", None)]  # fmt: skip


#: the summary's rows shown before "show all" (the search finds any judge)
SUMMARY_ROWS = 15


def summary_view(choice: Choice | None) -> list[dict[str, Any]]:
    """Per benchmark: the line naming the judge to trust first, what the rank is by, and
    the ranked judges (a check box per row picks its win-rate curves)."""
    from voirdire.analysis.report.curve_charts import DEFAULT_PICKED

    if choice is None:
        return []
    out = []
    for b, line in choice.lines.items():
        t = choice.table.filter(pl.col("benchmark") == b)
        if "accuracy_lo" in t.columns:
            t = t.with_columns(
                accuracy_ci=pl.when(pl.col("accuracy_lo").is_not_null())
                .then(pl.format("[{}, {}]", *(pl.col(c).map_elements("{:.3f}".format, return_dtype=pl.String) for c in ("accuracy_lo", "accuracy_hi"))))
            )  # fmt: skip
        cols = [c for c, _, _ in _CHOICE if c in t.columns]
        view = table_view(
            t.select(cols), {c: f for c, _, f in _CHOICE if f}, rename={c: h for c, h, _ in _CHOICE}, flag_col="gates",
        )  # fmt: skip
        view["head"] = ["curve", *view["head"]]
        for i, r in enumerate(view["rows"]):
            r["more"] = i >= SUMMARY_ROWS
            r["cells"].insert(0, {"pick": True, "checked": i < DEFAULT_PICKED, "judge": r["judge"], "text": "", "v": "1" if i < DEFAULT_PICKED else "0", "num": False})  # fmt: skip
        passing = t.filter(pl.col("passes")).height
        out.append({
            "name": b, "line": line, "key": "accuracy against the gold labels" if choice.key[b] == "accuracy" else "PC (no gold labels)",
            "table": view, "n": t.height, "passing": passing, "collapsed": t.height > SUMMARY_ROWS,
        })  # fmt: skip
    return out


def print_choice(
    choice: Any, console: Console | None = None, rows: int = CHOICE_ROWS
) -> None:
    """Print the summary read first (:class:`~voirdire.analysis.choice.Choice`): per
    benchmark its line, then its best ``rows`` judges with what they are ranked by, PF, κ
    between the orders, RS, errors, cost, throughput and the gates they fail (columns no
    judge has are left out)."""
    console = console or Console(highlight=False)
    cols = [("accuracy", "accuracy", "{:.3f}"), ("pc", "PC", "{:.3f}"), ("pf", "PF", "{:+.3f}"),
            ("pass_kappa", "κ orders", "{:.3f}"), ("rs", "RS", "{:.3f}"), ("error_rate", "errors", "{:.1%}"),
            ("usd_per_1k", "USD/1k", "{:,.3g}"), ("judgments_per_s", "judg./s", "{:,.3g}")]  # fmt: skip
    for b, line in choice.lines.items():
        t = choice.table.filter(pl.col("benchmark") == b).sort("rank")
        shown = [
            (c, h, f)
            for c, h, f in cols
            if c in t.columns and t.get_column(c).is_not_null().any()
        ]
        more = t.height - rows
        table = Table(title=cell(f"Which judge to trust first: {b} ({t.height} judges)"),
                      caption=f"… {more} more in the report" if more > 0 else None)  # fmt: skip
        table.add_column("#", justify="right")
        table.add_column("judge", overflow="fold", ratio=1)
        for _, h, _ in shown:
            table.add_column(h, justify="right", no_wrap=True)
        table.add_column("fails", overflow="fold")
        for r in t.head(rows).iter_rows(named=True):
            table.add_row(
                str(r["rank"]), cell(r["judge"]),
                *[fmt_value(r[c], f) for c, _, f in shown], r.get("gates") or "",
            )  # fmt: skip
        console.print(table)
        console.print(cell(line))
