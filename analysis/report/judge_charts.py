"""The report's figures of judges against each other: PC against PF, accuracy against PC,
RS and the registered metrics per judge, and small multiples by judge family (Vega-Altair;
:mod:`voirdire.analysis.report.vega`).

Every point names its judge on hover; the page's search draws the judges found larger, in
black, with their names. Up to :data:`~voirdire.analysis.report.vega.MAX_LEGEND` judges a
colour per judge with its legend (the same colour in every figure); beyond that one colour,
no legend. Bars per judge run horizontally, one row per judge in the summary's order, so
200 judges stay legible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import altair as alt
import polars as pl

from voirdire.analysis.report.vega import (
    HIT,
    MAX_LEGEND,
    SHOWN,
    WIDTH,
    in_order,
    judge_color,
    row_height,
    search_param,
)

__all__ = [
    "verdicts_href",
    "pair_href",
    "with_verdicts",
    "judge_scatter",
    "judge_density",
    "judge_bars",
    "family_multiples",
    "FAMILY_FIELDS",
]

_PF = "PF (−1 primacy … +1 recency)"
#: the parts of a judge's family, in the order they are parsed from its name
FAMILY_FIELDS = ("model", "strategy")


def verdicts_href(judge: str, task: str | None = None) -> str:
    """The verdict viewer's address of one judge beside the report (``verdicts.html``,
    :mod:`voirdire.analysis.report.verdicts`), its name percent-encoded; with ``task``,
    of that judge's pairs on that task only (``#judge=NAME&task=TASK``)."""
    href = "verdicts.html#judge=" + quote(judge, safe="")
    return href if task is None else f"{href}&task={quote(task, safe='')}"


def pair_href(judge_a: str, judge_b: str) -> str:
    """The verdict viewer's address of two judges' pairs (``#judge=A&judge=B``: the
    flipped pairs of either), the names percent-encoded."""
    return f"{verdicts_href(judge_a)}&judge={quote(judge_b, safe='')}"


def with_verdicts(rows: pl.DataFrame, *, by_task: bool = False) -> pl.DataFrame:
    """``rows`` (judge, and ``task`` where ``by_task``) with ``verdicts``: the viewer's
    address of each row's pairs (:func:`verdicts_href`), the ``href`` a click on its mark
    opens."""
    if not by_task:
        href = pl.col("judge").map_elements(verdicts_href, return_dtype=pl.String)
    else:
        href = pl.struct("judge", "task").map_elements(
            lambda r: verdicts_href(r["judge"], r["task"]), return_dtype=pl.String
        )
    return rows.with_columns(verdicts=href)


def _color(judges: Sequence[str], n: int) -> Any:
    return judge_color(judges) if n <= MAX_LEGEND else alt.value("#4c78a8")


def judge_scatter(
    rows: pl.DataFrame,
    x: str,
    y: str,
    judges: Sequence[str],
    title: str,
    *,
    x_title: str,
    y_title: str,
    x_domain: tuple[float, float],
    y_domain: tuple[float, float] = (0.0, 1.02),
    cells: pl.DataFrame | None = None,
    extra: Sequence[str] = (),
) -> alt.LayerChart:
    """One point per judge at (``x``, ``y``) with its intervals where ``rows`` has
    ``<x>_lo``/``<x>_hi`` and ``<y>_lo``/``<y>_hi``; ``cells`` (judge, x, y): faint points of
    each judge's cells, drawn up to :data:`MAX_LEGEND` judges. ``extra``: more columns in the
    tooltip. A click on a judge's point opens its flipped pairs (:func:`verdicts_href`)."""
    r = rows.filter(pl.col(x).is_not_null() & pl.col(y).is_not_null())
    n = r.height
    keep = [
        "judge",
        x,
        y,
        *(
            c
            for c in (f"{x}_lo", f"{x}_hi", f"{y}_lo", f"{y}_hi", *extra)
            if c in r.columns
        ),
    ]
    r = with_verdicts(r.select(list(dict.fromkeys(keep))))
    sx, sy = alt.Scale(domain=list(x_domain)), alt.Scale(domain=list(y_domain))
    fx, fy = (
        alt.X(f"{x}:Q", title=x_title, scale=sx),
        alt.Y(f"{y}:Q", title=y_title, scale=sy),
    )
    tip = ["judge:N", alt.Tooltip(f"{x}:Q", format=".3f", title=x_title.split(" (")[0]),
           alt.Tooltip(f"{y}:Q", format=".3f", title=y_title.split(" (")[0]),
           *(alt.Tooltip(f"{c}:Q", format=".3f") for c in extra if c in r.columns)]  # fmt: skip
    base = alt.Chart(r)
    layers = []
    if cells is not None and n <= MAX_LEGEND and cells.height:
        layers.append(
            alt.Chart(cells.select("judge", x, y))
            .mark_circle(size=14, opacity=0.22)
            .encode(x=fx, y=fy, color=judge_color(judges, legend=False))
        )
    for a, lo, hi in ((x, f"{x}_lo", f"{x}_hi"), (y, f"{y}_lo", f"{y}_hi")):
        if lo in r.columns and hi in r.columns and n <= 3 * MAX_LEGEND:
            enc = {"x": alt.X(f"{lo}:Q", scale=sx), "x2": f"{hi}:Q", "y": fy} if a == x else {"y": alt.Y(f"{lo}:Q", scale=sy), "y2": f"{hi}:Q", "x": fx}  # fmt: skip
            layers.append(
                base.mark_rule(opacity=0.5).encode(color=_color(judges, n), opacity=alt.condition(SHOWN, alt.value(0.6), alt.value(0.1)), **enc)
            )  # fmt: skip
    layers.append(
        base.mark_point(filled=True, stroke="black", strokeWidth=0.6)
        .encode(
            x=fx, y=fy, color=_color(judges, n), tooltip=tip, href="verdicts:N",
            size=alt.condition(HIT, alt.value(220), alt.value(90 if n <= MAX_LEGEND else 50)),
            opacity=alt.condition(SHOWN, alt.value(0.95), alt.value(0.15)),
        )
    )  # fmt: skip
    found = base.transform_filter(HIT).encode(x=fx, y=fy, text="judge:N")
    label = {"align": "left", "dx": 8, "dy": -8, "fontSize": 12, "fontWeight": "bold"}
    layers.append(
        found.mark_text(stroke="white", strokeWidth=4, strokeOpacity=0.9, **label)
    )  # a halo
    layers.append(found.mark_text(**label))
    return (
        alt.layer(*layers)
        .add_params(search_param())
        .properties(width=min(WIDTH // 2, 520), height=380, title=title)
    )


def judge_density(
    rows: pl.DataFrame,
    x: str,
    y: str,
    title: str,
    *,
    x_title: str,
    y_title: str,
    x_domain: tuple[float, float],
    y_domain: tuple[float, float] = (0.0, 1.02),
    bins: int = 40,
) -> alt.Chart:
    """The distribution of judges over (``x``, ``y``): a heatmap of how many of ``rows``'
    judges fall in each of ``bins`` × ``bins`` cells, no mark per judge (the form past
    :data:`~voirdire.analysis.report.scale.JUDGES_DRAWN` judges); its data holds the
    counts only, never the judges' names."""
    r = rows.filter(pl.col(x).is_not_null() & pl.col(y).is_not_null())
    (x0, x1), (y0, y1) = x_domain, y_domain
    wx, wy = (x1 - x0) / bins, (y1 - y0) / bins
    cells = (
        r.select(
            bx=((pl.col(x) - x0) / wx).floor().clip(0, bins - 1),
            by=((pl.col(y) - y0) / wy).floor().clip(0, bins - 1),
        )
        .group_by("bx", "by")
        .len("judges")
        .select(
            x0=x0 + pl.col("bx") * wx,
            x1=x0 + (pl.col("bx") + 1) * wx,
            y0=y0 + pl.col("by") * wy,
            y1=y0 + (pl.col("by") + 1) * wy,
            judges="judges",
        )  # fmt: skip
        .sort("x0", "y0")
    )
    return (
        alt.Chart(cells)
        .mark_rect()
        .encode(
            x=alt.X("x0:Q", title=x_title, scale=alt.Scale(domain=list(x_domain))),
            x2="x1:Q",
            y=alt.Y("y0:Q", title=y_title, scale=alt.Scale(domain=list(y_domain))),
            y2="y1:Q",
            color=alt.Color(
                "judges:Q",
                scale=alt.Scale(type="log", scheme="viridis"),
                title="judges",
            ),
            tooltip=[
                alt.Tooltip("judges:Q", format=","),
                alt.Tooltip("x0:Q", format=".2f", title=f"{x} from"),
                alt.Tooltip("y0:Q", format=".2f", title=f"{y} from"),
            ],
        )  # fmt: skip
        .add_params(search_param())
        .properties(width=min(WIDTH - 320, 560), height=420, title=title)
    )


def judge_bars(
    rows: pl.DataFrame,
    col: str,
    order: Sequence[str],
    judges: Sequence[str],
    title: str,
    *,
    axis_title: str,
    fmt: str = ".3f",
    threshold: float | None = None,
    zero: bool = False,
) -> alt.LayerChart:
    """A bar per judge of ``col`` (horizontal, rows in ``order``), its interval where
    ``rows`` has ``<col>_lo``/``<col>_hi``; ``threshold`` draws a dashed red line (RS's
    reading threshold), ``zero`` a line at 0. A click on a judge's bar opens its flipped
    pairs (:func:`verdicts_href`)."""
    r = rows.filter(pl.col(col).is_not_null() & pl.col(col).is_not_nan())
    names = in_order(order, r.get_column("judge"))
    n = len(names)
    keep = ["judge", col, *(c for c in (f"{col}_lo", f"{col}_hi") if c in r.columns)]
    r = with_verdicts(r.select(keep))
    y = alt.Y(
        "judge:N",
        sort=names,
        title=None,
        axis=alt.Axis(labelLimit=260, labelFontSize=10 if n > 40 else 11),
    )
    base = alt.Chart(r)
    layers = [
        base.mark_bar().encode(
            y=y, x=alt.X(f"{col}:Q", title=axis_title), color=_color(judges, n),
            opacity=alt.condition(SHOWN, alt.value(1.0), alt.value(0.2)),
            stroke=alt.condition(HIT, alt.value("black"), alt.value(None)),
            strokeWidth=alt.condition(HIT, alt.value(2), alt.value(0)),
            tooltip=["judge:N", alt.Tooltip(f"{col}:Q", format=fmt, title=axis_title)],
            href="verdicts:N",
        )
    ]  # fmt: skip
    if f"{col}_lo" in r.columns:
        layers.append(
            base.mark_rule(color="black").encode(y=y, x=f"{col}_lo:Q", x2=f"{col}_hi:Q")
        )
    if threshold is not None:
        layers.append(
            alt.Chart(pl.DataFrame({"t": [threshold]}))
            .mark_rule(color="red", strokeDash=[5, 4])
            .encode(x="t:Q")
        )
    if zero:
        layers.append(
            alt.Chart(pl.DataFrame({"t": [0.0]}))
            .mark_rule(color="black")
            .encode(x="t:Q")
        )
    return (
        alt.layer(*layers)
        .add_params(search_param())
        .properties(width=min(WIDTH - 320, 560), height=row_height(n) * n, title=title)
    )


def family_multiples(
    rows: pl.DataFrame,
    families: pl.DataFrame,
    title: str,
    *,
    y: str = "pc",
    y_title: str = "PC",
) -> alt.FacetChart | None:
    """Small multiples by judge family: one panel per model, the judges of that model at
    (PF, ``y``), coloured by strategy when a model has at most :data:`MAX_LEGEND` of them.
    ``families``: judge, model, strategy (:func:`voirdire.analysis.report.families.judge_families`).
    None when no family holds two judges or there is only one family."""
    r = rows.filter(pl.col(y).is_not_null() & pl.col("pf").is_not_null()).select(
        "judge", "pf", y
    )
    r = r.join(families, on="judge", how="inner")
    sizes = r.group_by("model").len()
    if sizes.height < 2 or sizes.get_column("len").max() < 2:
        return None
    strategies = r.get_column("strategy").n_unique()
    color: Any = (
        alt.Color("strategy:N", legend=alt.Legend(title="strategy", labelLimit=200))
        if strategies <= MAX_LEGEND
        else alt.value("#4c78a8")
    )
    cols = min(5, sizes.height)
    w = max(
        150,
        min(210, (WIDTH - 60 - (170 if strategies <= MAX_LEGEND else 0)) // cols - 20),
    )
    base = alt.Chart(r).encode(
        x=alt.X("pf:Q", title=_PF, scale=alt.Scale(domain=[-1, 1])),
        y=alt.Y(f"{y}:Q", title=y_title, scale=alt.Scale(domain=[0, 1.02])),
    )
    points = base.mark_point(filled=True, stroke="black", strokeWidth=0.5).encode(
        color=color,
        size=alt.condition(HIT, alt.value(160), alt.value(45)),
        opacity=alt.condition(SHOWN, alt.value(0.9), alt.value(0.15)),
        tooltip=["judge:N", "model:N", "strategy:N", alt.Tooltip("pf:Q", format="+.3f", title="PF"),
                 alt.Tooltip(f"{y}:Q", format=".3f", title=y_title)],
    )  # fmt: skip
    names = (
        base.transform_filter(HIT)
        .mark_text(align="left", dx=6, dy=-6, fontSize=11)
        .encode(text="strategy:N")
    )
    return (
        alt.layer(points, names, data=r)
        .add_params(search_param())
        .properties(width=w, height=w)
        .facet(facet=alt.Facet("model:N", title=None, header=alt.Header(labelFontSize=12, labelFontWeight="bold")), columns=cols)
        .properties(title=title)
    )  # fmt: skip
