"""The agreement section of the report: agreement between judges as heatmaps, judge ×
judge, and the disagreement histogram (Vega-Altair; :mod:`voirdire.analysis.report.vega`),
after Shi et al., and the section's view for the page (:func:`agreement_view`).

Up to :data:`~voirdire.analysis.report.vega.MAX_LEGEND` judges, three matrices with their
values written in: agreement with ties, without ties, Cohen's kappa. Beyond that one matrix
of Cohen's kappa, each pair once (the lower triangle, judges in the summary's order), its
three figures on hover, the searched judges' rows and columns outlined.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import altair as alt
import polars as pl

from voirdire.analysis.report.coverage import directory_reasons, figure_caption
from voirdire.analysis.report.judge_charts import pair_href
from voirdire.analysis.report.vega import MAX_LEGEND, WIDTH, in_order, search_param
from voirdire.analysis.report.views import F3, PCT, chart_view, table_view

if TYPE_CHECKING:
    from voirdire.analysis.study import Study

__all__ = [
    "PAIRS_SHOWN", "agreement_heatmap", "disagreement_chart", "kappa_distribution", "agreement_view", "agreement_key",
    "directory_labels",
]  # fmt: skip

#: the most judge pairs the page lists (more: the CSV, and the heatmap's hover)
PAIRS_SHOWN = 500

_PANELS = (("agreement", "agreement (ties count)"), ("agreement_no_tie", "agreement without ties"), ("kappa", "Cohen's kappa"))  # fmt: skip
_HIT2 = "search != '' && (indexof(lower(datum.judge_a), lower(search)) >= 0 || indexof(lower(datum.judge_b), lower(search)) >= 0)"  # fmt: skip


def agreement_key(kind: str, i: int, benchmark: str) -> str:
    """The figure key of the ``kind`` figure (``"agreement"`` or ``"disagreement"``) of
    the study's directory ``i`` (its place in ``study.dirs``) on ``benchmark``:
    ``"<kind>:<i>:<benchmark>"``. By place and benchmark, not by name: a directory judged
    on two benchmarks has a figure for each, and two directories of one folder name are
    two."""
    return f"{kind}:{i}:{benchmark}"


def directory_labels(dirs: Sequence[Any]) -> list[str]:
    """How the page names each of ``dirs`` (objects with ``name`` and ``output_dir``): its
    folder name, or its whole path where another directory has the same folder name."""
    names = [d.name for d in dirs]
    return [str(d.output_dir) if names.count(d.name) > 1 else d.name for d in dirs]


def agreement_heatmap(
    matrix: pl.DataFrame,
    order: Sequence[str],
    title: str,
    viewer: Collection[str] = (),
) -> alt.TopLevelMixin:
    """The agreement heatmaps of one benchmark. ``matrix``: judge_a, judge_b, agreement,
    agreement_no_tie, kappa (both orders of each pair); ``order``: the judges' order;
    ``viewer``: the judges the verdict viewer holds pairs of (judged in both orders): a
    click on the cell of two of them opens their flipped pairs
    (:func:`~voirdire.analysis.report.judge_charts.pair_href`), other cells link nowhere."""
    judges = in_order(order, matrix.get_column("judge_a"))
    judges += sorted(set(matrix.get_column("judge_a").to_list()) - set(judges))
    n = len(judges)
    pos = {j: i for i, j in enumerate(judges)}
    linked = set(viewer)
    m = matrix.select(
        "judge_a", "judge_b", *(pl.col(c).round(3) for c, _ in _PANELS)
    ).filter(pl.col("judge_a") != pl.col("judge_b"))
    tip = [
        "judge_a:N",
        "judge_b:N",
        *(alt.Tooltip(f"{c}:Q", format=".3f", title=t) for c, t in _PANELS),
    ]
    if n <= MAX_LEGEND:
        href = pl.struct("judge_a", "judge_b").map_elements(
            lambda r: (
                pair_href(r["judge_a"], r["judge_b"])
                if r["judge_a"] in linked and r["judge_b"] in linked
                else None
            ),
            return_dtype=pl.String,
        )
        cells = m.with_columns(verdicts=href)
        side = min((WIDTH - 200) // 3, max(160, 30 * n))
        charts = []
        for i, (c, label) in enumerate(_PANELS):
            enc = {
                "x": alt.X("judge_b:N", sort=judges, title=None, axis=alt.Axis(labelAngle=-60, labelLimit=120)),
                "y": alt.Y("judge_a:N", sort=judges, title=None, axis=alt.Axis(labelLimit=200) if i == 0 else None),
            }  # fmt: skip
            scale = alt.Scale(domain=[-0.2 if c == "kappa" else 0, 1], scheme="viridis")
            base = alt.Chart(cells).encode(**enc)
            rect = base.mark_rect().encode(color=alt.Color(f"{c}:Q", scale=scale, title=None, legend=alt.Legend(orient="bottom", gradientLength=side - 20)), tooltip=tip, href="verdicts:N")  # fmt: skip
            text = base.mark_text(
                fontSize=9
            ).encode(  # over the cell: its hover, its link
                text=alt.Text(f"{c}:Q", format=".2f"),
                tooltip=tip,
                href="verdicts:N",
                color=alt.condition(
                    f"datum.{c} < 0.6", alt.value("white"), alt.value("black")
                ),
            )
            charts.append(
                alt.layer(rect, text).properties(width=side, height=side, title=label)
            )
        return alt.hconcat(*charts).resolve_scale(color="independent").add_params(search_param()).properties(title=title)  # fmt: skip
    # each pair once, judges as their index (names joined back in the page: a smaller page)
    idx = m.with_columns(
        a=pl.col("judge_a").replace_strict(pos, return_dtype=pl.Int64),
        b=pl.col("judge_b").replace_strict(pos, return_dtype=pl.Int64),
    ).filter(pl.col("a") > pl.col("b"))
    lower = idx.select("a", "b", *(pl.col(c).round(2) for c, _ in _PANELS))
    # each judge's part of the viewer's address (empty: no pairs), joined per cell
    names = pl.DataFrame({
        "i": list(range(n)), "judge": judges,
        "q": [quote(j, safe="") if j in linked else "" for j in judges],
    })  # fmt: skip
    side = min(WIDTH - 300, max(360, 11 * n))
    return (
        alt.Chart(lower)
        # judge_name: the name beside its key (vega.keyed_by_index), for hover and search
        .transform_lookup(lookup="a", from_=alt.LookupData(names, "i", ["judge", "judge_name", "q"]), as_=["judge_a", "judge_a_name", "qa"])
        .transform_lookup(lookup="b", from_=alt.LookupData(names, "i", ["judge", "judge_name", "q"]), as_=["judge_b", "judge_b_name", "qb"])
        .transform_calculate(verdicts="datum.qa && datum.qb ? 'verdicts.html#judge=' + datum.qa + '&judge=' + datum.qb : null")
        .mark_rect()
        .encode(
            x=alt.X("judge_b:N", sort=judges, title=None, axis=alt.Axis(labels=n <= 80, labelAngle=-60, labelFontSize=9, labelLimit=180)),
            y=alt.Y("judge_a:N", sort=judges, title=None, axis=alt.Axis(labels=n <= 80, labelFontSize=9, labelLimit=220)),
            color=alt.Color("kappa:Q", scale=alt.Scale(domain=[-0.2, 1], scheme="viridis"), title="Cohen's κ"),
            stroke=alt.condition(_HIT2, alt.value("red"), alt.value(None)),
            strokeWidth=alt.condition(_HIT2, alt.value(1), alt.value(0)),
            tooltip=tip, href="verdicts:N",
        )
        .add_params(search_param())
        .properties(width=side, height=side, title=title + " (Cohen's kappa; hover for the agreement)")
    )  # fmt: skip


def kappa_distribution(matrix: pl.DataFrame, title: str, bins: int = 48) -> alt.Chart:
    """Bars: how many judge pairs of ``matrix`` (judge_a, judge_b, kappa; both orders of
    each pair, each pair counted once) have Cohen's κ in each of ``bins`` bins over
    [−1, 1]: the agreement heatmap's aggregate form past
    :data:`~voirdire.analysis.report.scale.AGREEMENT_JUDGES` judges (no judge named)."""
    w = 2 / bins
    h = (
        matrix.filter((pl.col("judge_a") < pl.col("judge_b")) & pl.col("kappa").is_not_null())
        .select(b=((pl.col("kappa") + 1) / w).floor().clip(0, bins - 1))
        .group_by("b")
        .len("pairs")
        .select(lo=-1 + pl.col("b") * w, hi=-1 + (pl.col("b") + 1) * w, pairs="pairs")
        .sort("lo")
    )  # fmt: skip
    return (
        alt.Chart(h)
        .mark_rect(color="#4c72b0")
        .encode(
            x=alt.X("lo:Q", title="Cohen's κ", scale=alt.Scale(domain=[-1, 1])),
            x2="hi:Q",
            y=alt.Y("pairs:Q", title="judge pairs"),
            tooltip=[
                alt.Tooltip("lo:Q", format=".2f", title="κ from"),
                alt.Tooltip("pairs:Q", format=","),
            ],
        )  # fmt: skip
        .properties(width=min(WIDTH // 2, 460), height=220, title=title)
    )


def disagreement_chart(hist: pl.DataFrame, title: str) -> alt.LayerChart:
    """Bars: the share of queries per disagreement level (judges differing from the most
    frequent choice); line (right axis): the cumulative share. ``hist``: disagreement,
    queries, share, cumulative_share (one benchmark)."""
    h = hist.sort("disagreement").select(
        "disagreement", "queries", "share", "cumulative_share"
    )
    x = alt.X("disagreement:O", title="disagreement (judges differing from the most frequent choice)",
              axis=alt.Axis(labelAngle=0, labelOverlap=True))  # fmt: skip
    tip = ["disagreement:O", alt.Tooltip("queries:Q", format=","), alt.Tooltip("share:Q", format=".1%"),
           alt.Tooltip("cumulative_share:Q", format=".1%", title="cumulative")]  # fmt: skip
    base = alt.Chart(h).encode(x=x, tooltip=tip)
    bars = base.mark_bar(color="#4c72b0").encode(
        y=alt.Y("share:Q", title="share of queries", axis=alt.Axis(format="%"))
    )
    line = base.mark_line(color="#dd8452", point=True).encode(
        y=alt.Y("cumulative_share:Q", title="cumulative share", scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%", titleColor="#dd8452"))
    )  # fmt: skip
    return (
        alt.layer(bars, line)
        .resolve_scale(y="independent")
        .add_params(search_param())
        .properties(width=min(WIDTH // 2, 460), height=260, title=title)
    )


def agreement_view(
    study: Study, charts: dict[str, Any], n: list[int], csv: Sequence[str]
) -> list[dict[str, Any]]:
    """The page's agreement section, one entry per (directory with two judges or more,
    benchmark): the heatmaps and the histogram (``charts``' :func:`agreement_key`),
    Fleiss' kappa, the majority vote, the histogram's table and the judge pairs of that
    benchmark (listed up to :data:`PAIRS_SHOWN`, else named by their file: ``csv``, the
    file name under ``metrics/`` of each directory, in ``study.dirs``' order). Each figure
    carries its caption of the report's judges on that benchmark it leaves out
    (:mod:`voirdire.analysis.report.coverage`; None: it draws them all)."""
    out = []
    labels = directory_labels(study.dirs)
    for i, d in enumerate(study.dirs):
        if d.agreement is None:
            continue
        benches = sorted(d.agreement.get_column("benchmark").unique().to_list())
        for b in benches:
            mine = pl.col("benchmark") == b
            agreement = d.agreement.filter(mine)
            pairs = agreement.filter(pl.col("judge_a") < pl.col("judge_b"))
            reasons = directory_reasons(study, d, b)
            heat = chart_view(charts, agreement_key("agreement", i, b), n)
            hist = chart_view(charts, agreement_key("disagreement", i, b), n)
            if heat is not None:
                heat["caption"] = figure_caption(heat["spec"], reasons)
            if (
                hist is not None
            ):  # its data counts queries: it covers the heatmaps' judges
                judges = agreement.get_column("judge_a").unique().to_list()
                hist["caption"] = figure_caption(hist["spec"], reasons, judges)
            out.append({
                "name": labels[i] if len(benches) == 1 else f"{labels[i]}: {b}",
                "heatmaps": heat,
                "histogram": hist,
                "fleiss": table_view(_of(d.fleiss, b), {"kappa": F3}),
                "majority": table_view(_of(d.majority, b), {"majority_share": PCT, "unanimous_share": PCT}),
                "disagreement": table_view(_of(d.disagreement, b), {"share": PCT, "cumulative_share": PCT}),
                "pairs": table_view(pairs, {"agreement": F3, "agreement_no_tie": F3, "kappa": F3}) if pairs.height <= PAIRS_SHOWN else None,
                "n_pairs": pairs.height, "csv": csv[i] if i < len(csv) else "",
            })  # fmt: skip
    return out


def _of(table: pl.DataFrame, benchmark: str) -> pl.DataFrame:
    """The rows of ``table`` on ``benchmark`` (all of them where it has no such column)."""
    if "benchmark" not in table.columns:
        return table
    return table.filter(pl.col("benchmark") == benchmark)
