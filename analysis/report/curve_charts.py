"""PC and PF against the overall win rate, for the judges the reader picks (Vega-Altair;
:mod:`voirdire.analysis.report.vega`).

Shi et al. draw each judge's cells (one per candidate and task) against the candidate's
overall win rate with a quadratic fit per judge; 65 such curves are a tangle. The figure
carries every judge's cells and fit but draws only the judges in its :data:`PICKED`
parameter: the top few of the summary by default, set by the summary's check boxes on the
page (its legend names only those, at most
:data:`~voirdire.analysis.report.vega.MAX_LEGEND`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import polars as pl

from voirdire.analysis.report.vega import (
    HIT,
    MAX_LEGEND,
    WIDTH,
    judge_color,
    search_param,
)

__all__ = [
    "PICKED", "DEFAULT_PICKED", "win_rate_fits", "default_picks", "win_rate_curves", "picked_judges",
]  # fmt: skip

#: the page's parameter: the judges whose curves are drawn
PICKED = "picked"
#: how many judges the figure draws before the reader picks
DEFAULT_PICKED = 5


def win_rate_fits(cells: pl.DataFrame, points: int = 21) -> pl.DataFrame:
    """Per judge and metric (pc, pf) the quadratic least-squares fit (``numpy.polyfit``,
    degree 2, as Shi et al.) of the metric on the cell's overall win rate, evaluated on
    ``points`` win rates across the judge's range; judges with fewer than 3 cells or one
    win rate get none. ``cells``: judge, owr, pc, pf, n (n > 0 used).

    Returns:
        ``judge``, ``metric`` (``PC``/``PF``), ``owr``, ``value`` (floats).
    """
    u = cells.filter(pl.col("n") > 0)
    rows: list[tuple[str, str, float, float]] = []
    for (j,), g in u.group_by("judge", maintain_order=True):
        x = g.get_column("owr").to_numpy()
        for m in ("pc", "pf"):
            yv = g.get_column(m).to_numpy()
            ok = np.isfinite(x) & np.isfinite(yv)
            if ok.sum() < 3 or np.ptp(x[ok]) == 0:
                continue
            coef = np.polyfit(x[ok], yv[ok], 2)
            grid = np.linspace(x[ok].min(), x[ok].max(), points)
            rows += [
                (j, m.upper(), float(a), float(b))
                for a, b in zip(grid, np.polyval(coef, grid))
            ]
    return pl.DataFrame(rows, schema={"judge": pl.String, "metric": pl.String, "owr": pl.Float64, "value": pl.Float64}, orient="row")  # fmt: skip


def default_picks(
    cells: pl.DataFrame, order: Sequence[str], k: int = DEFAULT_PICKED
) -> list[str]:
    """The judges :func:`win_rate_curves` draws before the reader picks: the first ``k``
    of ``order`` that have a curve (:func:`win_rate_fits`); a judge judged in one order
    only has none (its cells have no owr, PC or PF), nor one with fewer than 3 cells."""
    fitted = set(win_rate_fits(cells).get_column("judge").to_list())
    return [j for j in order if j in fitted][:k]


def win_rate_curves(
    cells: pl.DataFrame,
    picked: Sequence[str],
    title: str,
    judges: Sequence[str] = (),
) -> alt.HConcatChart:
    """PC (left) and PF (right) of each cell against its overall win rate with the quadratic
    fit per judge, drawn for the judges in :data:`PICKED` (default ``picked``). ``cells``:
    judge, owr, pc, pf, n; ``judges``: the report's judges in their colour order (up to
    :data:`~voirdire.analysis.report.vega.MAX_LEGEND` each keeps its colour of the other
    figures; beyond, the picked judges take the first colours)."""
    fits = win_rate_fits(cells)
    # a one-order cell has no owr, PC or PF: no point
    pts = cells.filter((pl.col("n") > 0) & pl.col("owr").is_not_null())
    pts = pts.select("judge", "owr", "pc", "pf")
    long = pl.concat(
        [pts.select("judge", "owr", pl.lit(m.upper()).alias("metric"), pl.col(m).alias("value")) for m in ("pc", "pf")]
    )  # fmt: skip
    param = alt.param(name=PICKED, value=list(picked))
    keep = f"indexof({PICKED}, datum.judge) >= 0"
    panels = []
    for m, domain, label in (
        ("PC", [0, 1.02], "PC"),
        ("PF", [-1, 1], "PF (−1 primacy … +1 recency)"),
    ):
        x = alt.X(
            "owr:Q",
            title="overall win rate of the candidate",
            scale=alt.Scale(domain=[0, 1]),
        )
        y = alt.Y("value:Q", title=label, scale=alt.Scale(domain=domain))
        legend = alt.Legend(
            title="picked judges", labelLimit=300, orient="bottom", columns=3
        )
        color = (
            judge_color(judges)
            if 0 < len(judges) <= MAX_LEGEND
            else alt.Color("judge:N", legend=legend)
        )
        dots = (
            alt.Chart(long.filter(pl.col("metric") == m))
            .transform_filter(keep)
            .mark_circle(size=22, opacity=0.35)
            .encode(x=x, y=y, color=color, tooltip=["judge:N", alt.Tooltip("owr:Q", format=".3f"), alt.Tooltip("value:Q", format=".3f", title=m)])
        )  # fmt: skip
        lines = (
            alt.Chart(fits.filter(pl.col("metric") == m))
            .transform_filter(keep)
            .mark_line()
            .encode(
                x=x, y=y, color=color, detail="judge:N",
                strokeWidth=alt.condition(HIT, alt.value(4), alt.value(2)),
                tooltip=["judge:N"],
            )
        )  # fmt: skip
        rule = (
            alt.Chart(pl.DataFrame({"x": [0.5]}))
            .mark_rule(color="grey", strokeDash=[4, 4])
            .encode(x="x:Q")
        )
        panels.append(
            alt.layer(rule, dots, lines).properties(
                width=(WIDTH - 120) // 2, height=300, title=m
            )
        )
    return (
        alt.hconcat(*panels).add_params(search_param(), param).properties(title=title)
    )


def picked_judges(spec: Mapping[str, Any]) -> list[str] | None:
    """The judges a :func:`win_rate_curves` specification (Vega-Lite, as a dict) draws
    before the reader picks (its :data:`PICKED` parameter's value); None without one."""
    for p in spec.get("params", []):
        if p.get("name") == PICKED:
            return list(p.get("value") or [])
    return None
