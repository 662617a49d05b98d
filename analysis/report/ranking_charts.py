"""The leaderboard figure of one judge (Vega-Altair; :mod:`voirdire.analysis.report.vega`):
each model's rating and 95 % interval in every board the page reads first (its order views
and the gold board, :func:`~voirdire.analysis.report.leaderboard.shown_boards`), one row per
model sorted by the pooled rating (best on top), a colour per view (a legend of at most
five entries). Infinite ratings (a model undefeated or winless) and interval ends are drawn
at the figure's edge, their text in the tooltip; the anchor has no interval. The page's
model search (:data:`MODEL_SEARCH`) draws the models whose names contain it larger and
the others faint."""

from __future__ import annotations

import math
from collections.abc import Sequence

import altair as alt
import polars as pl

from voirdire.analysis.ranking.gold import GOLD
from voirdire.analysis.report.leaderboard import interval, number
from voirdire.analysis.report.vega import row_height, search_param, spec_of

__all__ = ["MODEL_SEARCH", "board_chart"]

#: the page's model-search parameter (a model's name or part of one; "" finds none)
MODEL_SEARCH = "model_search"
_FOUND = (
    f"{MODEL_SEARCH} != '' && indexof(lower(datum.model), lower({MODEL_SEARCH})) >= 0"
)
_DIM = f"{MODEL_SEARCH} != '' && indexof(lower(datum.model), lower({MODEL_SEARCH})) < 0"
_X_TITLE = "rating (Arena scale), 95% interval"
_COLOURS = {"first": "#4c78a8", "swapped": "#f58518", "pooled": "#54a24b",
            "combined": "#b279a2", GOLD: "#000000"}  # fmt: skip


def _edge(lo: float, hi: float, x: float) -> float | None:
    """``x`` drawn within ``[lo, hi]`` (an infinite value at its edge; NaN: none)."""
    if math.isnan(x):
        return None
    return min(max(x, lo), hi)


def board_chart(
    rows: pl.DataFrame, views: Sequence[str], title: str
) -> dict[str, object]:
    """The figure's Vega-Lite specification (:func:`~voirdire.analysis.report.vega.spec_of`).

    Args:
        rows: :data:`~voirdire.analysis.ranking.boards.LEADERBOARD_COLUMNS` rows of the
            boards drawn (one judge's, plus the gold board), with ``shown`` (the view's name
            as the legend shows it).
        views: the ``shown`` names in the legend's order, the last one sorting the models.
        title: the figure's title (a judge's name: data, never markup).
    """
    finite = [
        x
        for c in ("rating", "lo", "hi")
        for x in rows.get_column(c).to_list()
        if x is not None and math.isfinite(x)
    ] or [1000.0]
    lo, hi = min(finite) - 50, max(finite) + 50
    order = (
        rows.filter(pl.col("shown") == views[-1])
        .with_columns(_r=pl.col("rating").fill_nan(None))
        .sort(["_r", "model"], descending=[True, False], nulls_last=True)
        .get_column("model")
        .to_list()
    )
    order += sorted(set(rows.get_column("model").to_list()) - set(order))
    data = [
        {
            "model": r["model"], "view": r["shown"], "rating_x": _edge(lo, hi, r["rating"]),
            "lo_x": _edge(lo, hi, r["lo"]), "hi_x": _edge(lo, hi, r["hi"]),
            "rating_text": number(r["rating"]), "interval": interval(r["lo"], r["hi"]),
            "ranks": f"{r['rank_lo']}–{r['rank_hi']}", "n": r["n"],
        }
        for r in rows.iter_rows(named=True)
    ]  # fmt: skip
    shown = list(views)
    colour = alt.Color(
        "view:N",
        scale=alt.Scale(domain=shown, range=[_COLOURS.get(v.split(" ")[0], "#7f7f7f") for v in shown]),
        legend=alt.Legend(title="board", orient="right", labelLimit=260),
    )  # fmt: skip
    y = alt.Y("model:N", sort=order, title=None, axis=alt.Axis(labelLimit=220))
    offset = alt.YOffset("view:N", sort=shown)
    x = alt.X(
        "rating_x:Q",
        title=_X_TITLE,
        scale=alt.Scale(domain=[lo, hi], zero=False),
    )
    tip = [alt.Tooltip("model:N"), alt.Tooltip("view:N", title="board"),
           alt.Tooltip("rating_text:N", title="rating"), alt.Tooltip("interval:N", title="95% interval"),
           alt.Tooltip("ranks:N", title="rank set"), alt.Tooltip("n:Q", title="comparisons")]  # fmt: skip
    fade = alt.condition(_DIM, alt.value(0.15), alt.value(0.9))
    base = alt.Chart(alt.Data(values=data)).encode(y=y, yOffset=offset, color=colour)
    rule = base.mark_rule(strokeWidth=2).encode(
        x=alt.X("lo_x:Q", scale=alt.Scale(domain=[lo, hi], zero=False), title=_X_TITLE),
        x2="hi_x:Q", opacity=fade, tooltip=tip,
    )  # fmt: skip
    point = base.mark_point(filled=True, stroke="black", strokeWidth=0.5).encode(
        x=x, opacity=fade, tooltip=tip,
        size=alt.condition(_FOUND, alt.value(160), alt.value(50)),
    )  # fmt: skip
    n = len(order)
    chart = (
        alt.layer(rule, point)
        .add_params(search_param(), alt.param(name=MODEL_SEARCH, value=""))
        .properties(
            width=560,
            height=max(80, row_height(n) * n * max(1, min(len(shown), 3)) // 2),
            title=alt.TitleParams(title, anchor="start", fontSize=12),
        )
    )
    return spec_of(chart)
