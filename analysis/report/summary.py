"""The answer first, in the page and in the terminal: per benchmark the line naming the
judge to trust first and the judges ranked (:class:`~voirdire.analysis.choice.Choice`,
computed by :mod:`voirdire.analysis.choice`; nothing is computed here).

The page's view (:func:`summary_view`: every judge, the first :data:`SUMMARY_ROWS` shown,
a check box per row picking the win-rate curves) and the terminal's table
(:func:`print_choice`: the best :data:`CHOICE_ROWS`, after ``run``, ``audit`` and
``report``) show the same columns, those no judge has left out.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
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
_CHOICE = [("rank", "#", None), ("judge", "judge", None), ("shared", "on shared units", F3), ("shared_ci", "95% CI (shared)", None),
           ("tied_text", "vs pick", None), ("n_own", "own units", "{:,}"), ("accuracy", "accuracy", F3), ("accuracy_ci", "95% CI", None),
           ("pc", "PC", F3), ("pf", "PF", SIGNED), ("pass_kappa", "κ orders", F3), ("rs", "RS", F3),
           ("error_rate", "errors", PCT), ("usd_per_1k", "USD / 1k", "{:,.3g}"), ("judgments_per_s", "judgments/s", "{:,.3g}"),
           ("gates", "fails", None)]  # fmt: skip


def _shared_columns(t: pl.DataFrame) -> pl.DataFrame:
    """``shared_ci`` (str: ``[lo, hi]``) and ``tied_text`` (``tied`` / ``differs`` /
    ``pick``) of a choice table compared like with like; the table as given otherwise."""
    if "shared" not in t.columns or t.get_column("shared").is_null().all():
        return t.drop(
            [
                c
                for c in ("shared", "shared_lo", "shared_hi", "tied", "n_own")
                if c in t.columns
            ]
        )
    f3 = {"return_dtype": pl.String}
    out = t.with_columns(
        shared_ci=pl.when(pl.col("shared_lo").is_not_null()).then(
            pl.format("[{}, {}]", *(pl.col(c).map_elements("{:.3f}".format, **f3) for c in ("shared_lo", "shared_hi")))
        ),
    )  # fmt: skip
    if "tied" in out.columns:
        pick = (
            pl.col("p_vs_pick").is_null()
            & pl.col("shared").is_not_null()
            & pl.col("passes")
        )
        first_pick = pick & (pick.cum_sum() == 1)
        out = out.with_columns(
            tied_text=pl.when(first_pick).then(pl.lit("pick"))
            .when(pl.col("tied")).then(pl.lit("tied"))
            .when(pl.col("tied").not_()).then(pl.lit("differs"))
        )  # fmt: skip
    return out


def _board(table: pl.DataFrame) -> str:
    """The column a choice table's lines are keyed by: ``board`` where it has one."""
    return "board" if "board" in table.columns else "benchmark"


#: the summary's rows shown before "show all" (the search finds any judge)
SUMMARY_ROWS = 15


def summary_view(
    choice: Choice | None, picked: Mapping[str, Collection[str]] | None = None
) -> list[dict[str, Any]]:
    """Per benchmark: the line naming the judge to trust first, what the rank is by, and
    the ranked judges (a check box per row picks its win-rate curves). ``picked``:
    benchmark -> the judges its win-rate figure draws at first
    (:func:`~voirdire.analysis.report.curve_charts.picked_judges`), whose boxes are checked
    (a benchmark absent: none); None: the first
    :data:`~voirdire.analysis.report.curve_charts.DEFAULT_PICKED` rows."""
    from voirdire.analysis.report.curve_charts import DEFAULT_PICKED

    if choice is None:
        return []
    out = []
    for b, line in choice.lines.items():
        t = choice.table.filter(pl.col(_board(choice.table)) == b)
        if "accuracy_lo" in t.columns:
            t = t.with_columns(
                accuracy_ci=pl.when(pl.col("accuracy_lo").is_not_null())
                .then(pl.format("[{}, {}]", *(pl.col(c).map_elements("{:.3f}".format, return_dtype=pl.String) for c in ("accuracy_lo", "accuracy_hi"))))
            )  # fmt: skip
        t = _shared_columns(t)
        cols = [c for c, _, _ in _CHOICE if c in t.columns]
        view = table_view(
            t.select(cols), {c: f for c, _, f in _CHOICE if f}, rename={c: h for c, h, _ in _CHOICE}, flag_col="gates",
        )  # fmt: skip
        view["head"] = ["curve", *view["head"]]
        if picked is None:
            checked = [i < DEFAULT_PICKED for i in range(t.height)]
        else:  # the figure's picks: a judge without a curve is not checked
            benches = t.get_column("benchmark").to_list()
            judges = t.get_column("judge").to_list()
            checked = [j in picked.get(x, ()) for x, j in zip(benches, judges)]
        for i, r in enumerate(view["rows"]):
            r["more"] = i >= SUMMARY_ROWS
            r["cells"].insert(0, {"pick": True, "checked": checked[i], "judge": r["judge"], "text": "", "v": "1" if checked[i] else "0", "num": False})  # fmt: skip
        passing = t.filter(pl.col("passes")).height
        out.append({
            "name": b, "line": line, "key": "accuracy against the gold labels" if choice.key[b] == "accuracy" else "PC (no gold labels)",
            "table": view, "n": t.height, "passing": passing, "collapsed": t.height > SUMMARY_ROWS,
            "answered": "answer" in t.columns and t.get_column("answer").is_not_null().any(),
        })  # fmt: skip
    return out


def print_choice(
    choice: Any,
    console: Console | None = None,
    rows: int = CHOICE_ROWS,
    lines: bool = True,
) -> None:
    """Print the summary read first (:class:`~voirdire.analysis.choice.Choice`): per
    benchmark its line, then its best ``rows`` judges with what they are ranked by, PF, κ
    between the orders, RS, errors, cost, throughput and the gates they fail (columns no
    judge has are left out). Compared like with like, the key on the board's shared units
    comes first, its interval, whether the judge is tied with the pick, and the judge's own
    units and figures. With ``lines`` every benchmark's line is printed first (the
    answer), else only the tables (the caller printed the lines); a benchmark answered by
    its one-order effect (``answer``) has no table: its judges have no PC to rank by."""
    console = console or Console(highlight=False)
    if lines:
        for line in choice.lines.values():
            console.print(cell(line))
    cols = [("shared", "on shared", "{:.3f}"), ("shared_ci", "95% CI", "{}"), ("tied_text", "vs pick", "{}"),
            ("n_own", "own units", "{:,}"), ("accuracy", "accuracy (own)", "{:.3f}"), ("pc", "PC (own)", "{:.3f}"), ("pf", "PF", "{:+.3f}"),
            ("pass_kappa", "κ orders", "{:.3f}"), ("rs", "RS", "{:.3f}"), ("error_rate", "errors", "{:.1%}"),
            ("usd_per_1k", "USD/1k", "{:,.3g}"), ("judgments_per_s", "judg./s", "{:,.3g}")]  # fmt: skip
    for b in choice.lines:
        t = _shared_columns(
            choice.table.filter(pl.col(_board(choice.table)) == b).sort("rank")
        )
        if "answer" in t.columns and t.get_column("answer").is_not_null().any():
            continue
        shown = [
            (c, h, f)
            for c, h, f in cols
            if c in t.columns and t.get_column(c).is_not_null().any()
        ]
        # no like-with-like figure: the own ones are the key; else the own figures are the
        # report's and the judge table's, and the names get the room
        if "shared" not in t.columns:
            shown = [(c, h.removesuffix(" (own)"), f) for c, h, f in shown]
        else:
            shown = [x for x in shown if x[0] not in ("n_own", "accuracy", "pc")]
        more = t.height - rows
        table = Table(title=cell(f"Which judge to trust first: {b} ({t.height} judges)"),
                      caption=f"… {more} more in the report" if more > 0 else None)  # fmt: skip
        table.add_column("#", justify="right")
        table.add_column("judge", overflow="fold", ratio=1, min_width=14)
        for _, h, _ in shown:
            table.add_column(h, justify="right", no_wrap=True)
        table.add_column("fails", overflow="fold")
        for r in t.head(rows).iter_rows(named=True):
            table.add_row(
                str(r["rank"]), cell(r["judge"]),
                *[fmt_value(r[c], f) for c, _, f in shown], r.get("gates") or "",
            )  # fmt: skip
        console.print(table)
