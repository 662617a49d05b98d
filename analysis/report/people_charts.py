"""The human figure of one benchmark (Vega-Altair; :mod:`voirdire.analysis.report.vega`):
the three boards side by side (PPI++, labels alone, the judge alone: each model's estimate
and interval, one row per model in PPI++'s order) and the selective-judging curve (agreement
with people against the share of labelled pairs kept), from ``voirdire people``'s tables.

The boards show one judge at a time: a menu above the figure picks it (the first judge of
the tables by default; the static files show that one) and, where the benchmark's models
are named, a second picks the board (win rates, or Bradley–Terry ratings on Arena's scale).
The curve draws every judge: up to :data:`~voirdire.analysis.report.vega.MAX_LEGEND` a
colour each with its legend; beyond, faint lines without a legend, the picked judge drawn
over them in black and the judges the page's search finds thicker. Hover names the model,
the board and the judge.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import polars as pl

from voirdire.analysis.report.vega import (
    HIT,
    MAX_LEGEND,
    judge_color,
    row_height,
    search_param,
)

__all__ = [
    "JUDGE",
    "KIND",
    "BOARD_TITLES",
    "KIND_TITLES",
    "board_rows",
    "people_chart",
]

#: the figure's parameters: the judge whose boards are drawn, the board (kind) drawn
JUDGE, KIND = "people_judge", "people_kind"
#: each estimator's column title, in the figure's order
BOARD_TITLES = {
    "ppi": "PPI++ (labels + judge)",
    "classical": "labels alone",
    "judge": "judge alone",
}
#: each kind's name in the menu and in the tables
KIND_TITLES = {"win_rate": "win rates", "bt": "Bradley–Terry ratings"}
_COLOURS = {"ppi": "#4c78a8", "classical": "#7f7f7f", "judge": "#f58518"}
_PICKED = f"datum.judge == {JUDGE}"


def board_rows(boards: pl.DataFrame) -> pl.DataFrame:
    """The boards as the figure draws them: per (judge, kind, estimator, model) ``value``,
    ``lo``, ``hi`` (the win rate and its interval, or the rating and its interval),
    ``board`` (the estimator's title), ``shown`` (``value [lo, hi]`` as text), ``ranks``
    (``rank [rank_lo–rank_hi]``), ``n_labels``, and ``order`` (the model's place on
    PPI++'s board of that judge and kind, best first)."""
    bt = pl.col("kind") == "bt"
    b = boards.with_columns(
        value=pl.when(bt).then(pl.col("rating")).otherwise(pl.col("estimate")),
        lo=pl.when(bt).then(pl.col("rating_lo")).otherwise(pl.col("lo")),
        hi=pl.when(bt).then(pl.col("rating_hi")).otherwise(pl.col("hi")),
    )
    text = {
        c: pl.when(bt).then(pl.col(c).round(0).cast(pl.Int64).cast(pl.String)).otherwise(pl.col(c).round(3).cast(pl.String))
        for c in ("value", "lo", "hi")
    }  # fmt: skip
    order = (
        b.filter(pl.col("estimator") == "ppi")
        .sort("judge", "kind", "value", "model", descending=[False, False, True, False])
        .select("judge", "kind", "model", order=pl.int_range(pl.len()).over("judge", "kind"))
    )  # fmt: skip
    return b.join(order, on=["judge", "kind", "model"], how="left").select(
        "judge", "kind", "estimator", "model", "value", "lo", "hi", "n_labels", "order",
        board=pl.col("estimator").replace_strict(BOARD_TITLES, default=pl.col("estimator")),
        shown=pl.format("{} [{}, {}]", text["value"], text["lo"], text["hi"]),
        ranks=pl.format("{} [{}–{}]", "rank", "rank_lo", "rank_hi"),
    )  # fmt: skip


def _boards(rows: pl.DataFrame, n_models: int) -> alt.FacetChart:
    """The three boards side by side of the picked judge and kind."""
    y = alt.Y(
        "model:N",
        sort=alt.EncodingSortField("order", op="min"),
        title=None,
        axis=alt.Axis(labelLimit=150),
    )
    x = alt.X(
        "value:Q", title="estimate and interval", scale=alt.Scale(zero=False, nice=True)
    )
    colour = alt.Color(
        "estimator:N",
        scale=alt.Scale(domain=list(_COLOURS), range=list(_COLOURS.values())),
        legend=None,
    )
    tip = [
        alt.Tooltip("model:N"), alt.Tooltip("board:N"), alt.Tooltip("shown:N", title="estimate [interval]"),
        alt.Tooltip("ranks:N", title="rank [rank set]"), alt.Tooltip("n_labels:Q", title="labels"),
        alt.Tooltip("judge:N"),
    ]  # fmt: skip
    base = alt.Chart().encode(y=y, color=colour)
    rule = base.mark_rule(strokeWidth=2, opacity=0.7).encode(
        x=alt.X("lo:Q", scale=alt.Scale(zero=False, nice=True), title="estimate and interval"),
        x2="hi:Q",
        tooltip=tip,
    )  # fmt: skip
    point = base.mark_point(filled=True, size=70, stroke="black", strokeWidth=0.5).encode(x=x, tooltip=tip)  # fmt: skip
    title = alt.expr(
        f"'Boards of ' + {JUDGE} + ({KIND} == 'bt' ? ': Bradley–Terry ratings (Arena scale)' : ': win rates (ties half)')"
    )
    return (
        alt.layer(rule, point, data=rows)
        .transform_filter(f"{_PICKED} && datum.kind == {KIND}")
        .properties(width=170, height=max(80, row_height(n_models) * n_models))
        .facet(
            column=alt.Column(
                "board:N",
                sort=list(BOARD_TITLES.values()),
                title=None,
                header=alt.Header(labelFontWeight="bold", labelFontSize=12),
            )
        )
        .resolve_scale(x="shared")
        .properties(title=alt.TitleParams(title, anchor="start", fontSize=12))
    )


def _curve(
    curve: pl.DataFrame, judges: Sequence[str], target: float | None, height: int
) -> alt.LayerChart:
    """Agreement with people against the share of labelled pairs kept, per judge."""
    n = len(judges)
    c = curve.select(
        "judge", "threshold", "share_kept", "agreement", "p_value", "certified",
        certificate=pl.when(pl.col("certified")).then(pl.lit("certified")).otherwise(pl.lit("not certified")),
    )  # fmt: skip
    x = alt.X("share_kept:Q", title="share of labelled pairs kept", scale=alt.Scale(domain=[0, 1]))  # fmt: skip
    y = alt.Y("agreement:Q", title="agreement with people", scale=alt.Scale(zero=False, nice=True))  # fmt: skip
    tip = [
        "judge:N", alt.Tooltip("threshold:Q", format=".3f", title="confidence ≥"),
        alt.Tooltip("share_kept:Q", format=".3f", title="share kept"), alt.Tooltip("agreement:Q", format=".3f"),
        alt.Tooltip("certificate:N", title="guarantee"), alt.Tooltip("p_value:Q", format=".2g", title="p"),
    ]  # fmt: skip
    many = n > MAX_LEGEND
    colour = alt.value("#9aa5b1") if many else judge_color(judges)
    if not many:
        colour.legend = alt.Legend(
            title="judge", orient="bottom", columns=2, labelLimit=200
        )
    base = alt.Chart(c).encode(x=x, y=y)
    width = alt.condition(HIT, alt.value(3), alt.value(1 if many else 1.8))
    layers = [
        base.mark_line(opacity=0.35 if many else 0.9).encode(
            color=colour, detail="judge:N", strokeWidth=width, tooltip=tip
        ),
        base.mark_point(size=26, opacity=0.35 if many else 0.9).encode(
            color=colour,
            fill=alt.condition("datum.certified", colour, alt.value("white")),
            tooltip=tip,
        ),
    ]
    picked = base.transform_filter(_PICKED)
    layers += [
        picked.mark_line(color="black", strokeWidth=2.5),
        picked.mark_point(color="black", size=60, filled=False, strokeWidth=1.5).encode(
            fill=alt.condition("datum.certified", alt.value("black"), alt.value("white")),
            tooltip=tip,
        ),
    ]  # fmt: skip
    if target is not None:
        layers.insert(
            0,
            alt.Chart(pl.DataFrame({"target": [target]}))
            .mark_rule(color="grey", strokeDash=[4, 4])
            .encode(y="target:Q", tooltip=[alt.Tooltip("target:Q", title="agreement asked")]),
        )  # fmt: skip
    return alt.layer(*layers).properties(
        width=250,
        height=height,
        title=alt.TitleParams(
            "Selective judging (filled: certified)",
            subtitle=f"black: the judge picked{'; dashed: the agreement asked' if target is not None else ''}",
            fontSize=12,
        ),
    )


def people_chart(
    boards: pl.DataFrame,
    curve: pl.DataFrame,
    title: str,
    *,
    target: float | None = None,
    judges: Sequence[str] | None = None,
) -> alt.HConcatChart:
    """The human figure of one benchmark (module docstring).

    Args:
        boards: ``people_boards.csv``'s rows of the benchmark (every judge, both kinds).
        curve: ``people_curve.csv``'s rows of the benchmark.
        title: the figure's title.
        target: the agreement asked (1 − α), drawn dashed; None: not drawn.
        judges: the judges in the menu's order (default: the order of ``boards``); the
            first is drawn until another is picked.
    """
    judges = list(
        dict.fromkeys(judges if judges is not None else boards["judge"].to_list())
    )
    kinds = [k for k in KIND_TITLES if k in set(boards["kind"].to_list())] or ["win_rate"]  # fmt: skip
    rows = board_rows(boards)
    n_models = max(1, rows["model"].n_unique())
    judge = alt.param(name=JUDGE, value=judges[0] if judges else "")
    if len(judges) > 1:
        judge.param.bind = alt.binding_select(options=judges, name="judge ")
    kind = alt.param(name=KIND, value=kinds[0])
    if len(kinds) > 1:
        kind.param.bind = alt.binding_radio(
            options=kinds, labels=[KIND_TITLES[k] for k in kinds], name="board "
        )
    height = max(180, row_height(n_models) * n_models)
    # the parameters on the whole figure, set by hand: Altair's add_params would push them
    # into the faceted layer, which it cannot name
    return alt.HConcatChart(
        hconcat=[_boards(rows, n_models), _curve(curve, judges, target, height)],
        params=[judge.param, kind.param, search_param().param],
        spacing=24,
        title=alt.TitleParams(title, anchor="start"),
    ).resolve_scale(color="independent", fill="independent")
