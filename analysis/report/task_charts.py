"""The report's figures by task: how each judge's PC, PF and accuracy vary across a
benchmark's tasks (Vega-Altair; :mod:`voirdire.analysis.report.vega`).

Up to :data:`~voirdire.analysis.report.vega.MAX_LEGEND` judges, Shi et al.'s forms: the
radar of PC by task (one polygon per judge) and grouped bars of PF by task. Beyond that, one
figure of heatmaps, judge × task, for PC, PF and accuracy side by side (rows in the
summary's order, best first; hover gives the judge, task, value and pairs; the search
outlines the judges found): 200 judges × 13 tasks stay legible where 200 polygons do not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import altair as alt
import polars as pl

from voirdire.analysis.report.judge_charts import with_verdicts
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

__all__ = ["pc_radar", "pf_bars", "task_heatmaps", "by_task_charts"]

_PF_TITLE = "PF (−1 primacy … +1 recency)"


def pc_radar(jt: pl.DataFrame, judges: Sequence[str], title: str) -> alt.LayerChart:
    """Radar of PC by task, one polygon per judge (``jt``: judge, task, pc; ``judges``: the
    report's judges in their colour order). A click on a judge's polygon or point opens its
    flipped pairs (the verdict viewer)."""
    tasks = sorted(jt.get_column("task").unique().to_list())
    ang = {t: 2 * math.pi * i / len(tasks) for i, t in enumerate(tasks)}
    pts = (
        jt.filter(pl.col("pc").is_not_null())
        .select("judge", "task", "pc")
        .with_columns(
            k=pl.col("task").replace_strict({t: i for i, t in enumerate(tasks)})
        )
    )
    first = pts.filter(pl.col("k") == pl.col("k").min().over("judge"))
    closed = pl.concat([pts, first.with_columns(k=pl.lit(len(tasks), dtype=pts.schema["k"]))]).with_columns(
        x=pl.col("pc") * pl.col("task").replace_strict({t: math.sin(a) for t, a in ang.items()}, return_dtype=pl.Float64),
        y=pl.col("pc") * pl.col("task").replace_strict({t: math.cos(a) for t, a in ang.items()}, return_dtype=pl.Float64),
    )  # fmt: skip
    rings = pl.DataFrame(
        [
            {"r": r, "i": i, "x": r * math.sin(2 * math.pi * i / 72), "y": r * math.cos(2 * math.pi * i / 72)}
            for r in (0.25, 0.5, 0.75, 1.0)
            for i in range(73)
        ]
    )  # fmt: skip
    spokes = pl.DataFrame(
        [{"task": t, "i": e, "x": e * math.sin(a), "y": e * math.cos(a)} for t, a in ang.items() for e in (0, 1)]
    )  # fmt: skip
    labels = pl.DataFrame(
        [{"task": t, "x": 1.2 * math.sin(a), "y": 1.1 * math.cos(a)} for t, a in ang.items()]
    )  # fmt: skip
    ax = None
    sc = alt.Scale(domain=[-1.3, 1.3])
    xy = {"x": alt.X("x:Q", axis=ax, scale=sc), "y": alt.Y("y:Q", axis=ax, scale=sc)}
    grid = (
        alt.Chart(rings)
        .mark_line(color="#ddd", strokeWidth=1)
        .encode(detail="r:N", order="i:Q", **xy)
    )
    spoke = (
        alt.Chart(spokes)
        .mark_line(color="#ddd")
        .encode(detail="task:N", order="i:Q", **xy)
    )
    text = (
        alt.Chart(labels)
        .mark_text(fontSize=11, color="#444")
        .encode(text="task:N", **xy)
    )
    lines = (
        alt.Chart(with_verdicts(closed))
        .mark_line(strokeWidth=1.8, point=alt.OverlayMarkDef(size=30))
        .encode(
            color=judge_color(judges),
            order="k:Q",
            opacity=alt.condition(SHOWN, alt.value(0.95), alt.value(0.12)),
            tooltip=[
                "judge:N",
                "task:N",
                alt.Tooltip("pc:Q", format=".3f", title="PC"),
            ],
            href="verdicts:N",
            **xy,
        )
    )
    return (
        alt.layer(grid, spoke, text, lines)
        .add_params(search_param())
        .properties(width=440, height=440, title=title)
    )


def pf_bars(jt: pl.DataFrame, judges: Sequence[str], title: str) -> alt.Chart:
    """Grouped bars of PF by task (x) and judge (bars); ``jt``: judge, task, pf. A click on
    a bar opens that judge's flipped pairs on that task (the verdict viewer)."""
    tasks = jt.get_column("task").n_unique()
    bars = jt.filter(pl.col("pf").is_not_null()).select("judge", "task", "pf")
    return (
        alt.Chart(with_verdicts(bars, by_task=True))
        .mark_bar()
        .encode(
            x=alt.X(
                "task:N", title=None, axis=alt.Axis(labelAngle=-30, labelLimit=200)
            ),
            xOffset=alt.XOffset("judge:N", sort=list(judges)),
            y=alt.Y("pf:Q", title=_PF_TITLE, scale=alt.Scale(domain=[-1, 1])),
            color=judge_color(judges),
            opacity=alt.condition(SHOWN, alt.value(1.0), alt.value(0.15)),
            tooltip=[
                "judge:N",
                "task:N",
                alt.Tooltip("pf:Q", format="+.3f", title="PF"),
            ],
            href="verdicts:N",
        )
        .add_params(search_param())
        .properties(
            width=min(WIDTH - 320, max(360, 70 * tasks)), height=300, title=title
        )
    )


def task_heatmaps(
    jt: pl.DataFrame, order: Sequence[str], title: str, *, n_col: str | None = None
) -> alt.HConcatChart:
    """Heatmaps judge × task of PC, PF and (where ``jt`` has it) accuracy, side by side.

    Args:
        jt: judge, task, pc, pf and optionally ``accuracy`` (one benchmark) and ``n_col``
            (pairs per cell, shown on hover).
        order: the judges top to bottom (the summary's ranking).

    A click on a cell opens that judge's flipped pairs on that task (the verdict viewer).
    """
    metrics = [("pc", "PC", alt.Scale(domain=[0, 1], scheme="viridis"), ".3f"),
               ("pf", "PF", alt.Scale(domain=[-1, 1], scheme="redblue", domainMid=0), "+.3f")]  # fmt: skip
    if "accuracy" in jt.columns and jt.get_column("accuracy").is_not_null().any():
        metrics.append(
            ("accuracy", "accuracy", alt.Scale(domain=[0, 1], scheme="viridis"), ".3f")
        )
    tasks = jt.get_column("task").n_unique()
    names = in_order(order, jt.get_column("judge"))
    label_w = min(260, 7 * max((len(j) for j in names), default=10))
    cell_w = max(
        14,
        min(60, (WIDTH - label_w - 60 * len(metrics)) // max(1, tasks * len(metrics))),
    )
    y = alt.Y(
        "judge:N",
        sort=names,
        title=None,
        axis=alt.Axis(labelLimit=260, labelFontSize=10),
    )
    hidden_y = alt.Y("judge:N", sort=names, title=None, axis=None)
    charts = []
    for i, (col, label, scale, fmt) in enumerate(metrics):
        tip = ["judge:N", "task:N", alt.Tooltip(f"{col}:Q", format=fmt, title=label)]
        if n_col and n_col in jt.columns:
            tip.append(alt.Tooltip(f"{n_col}:Q", title="pairs"))
        cells = jt.select(
            "judge", "task", col, *([n_col] if n_col and n_col in jt.columns else [])
        )
        base = alt.Chart(with_verdicts(cells, by_task=True))
        charts.append(
            base.mark_rect(stroke="white", strokeWidth=0.5)
            .encode(
                x=alt.X("task:N", title=None, axis=alt.Axis(labelAngle=-45, labelLimit=160, orient="top")),
                y=y if i == 0 else hidden_y,
                color=alt.Color(f"{col}:Q", scale=scale, title=label,
                                legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=120)),
                opacity=alt.condition(SHOWN, alt.value(1.0), alt.value(0.25)),
                strokeWidth=alt.condition(HIT, alt.value(2.5), alt.value(0.5)),
                stroke=alt.condition(HIT, alt.value("black"), alt.value("white")),
                tooltip=tip, href="verdicts:N",
            )
            .add_params(search_param())
            .properties(width=cell_w * tasks, height=row_height(len(names)) * len(names), title=label)
        )  # fmt: skip
    return (
        alt.hconcat(*charts, spacing=14)
        .resolve_scale(color="independent")
        .properties(title=title)
    )


def by_task_charts(
    jt: pl.DataFrame, judges: Sequence[str], order: Sequence[str], bench: str
) -> dict[str, alt.TopLevelMixin]:
    """The by-task figures of one benchmark by kind: ``radar`` and ``pf_bars`` up to
    :data:`MAX_LEGEND` judges, else ``task_heatmaps``; ``judges``: the report's judges (colour
    order), ``order``: the summary's ranking."""
    n = jt.get_column("judge").n_unique()
    if n <= MAX_LEGEND:
        return {
            "radar": pc_radar(jt, judges, f"{bench}: position consistency by task"),
            "pf_bars": pf_bars(jt, judges, f"{bench}: preference fairness by task"),
        }
    return {
        "task_heatmaps": task_heatmaps(
            jt, order, f"{bench}: PC, PF and accuracy by judge and task", n_col="n"
        )
    }
