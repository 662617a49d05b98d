"""Every figure says which judges it draws (issue 40, item 6): a judge's colour comes from
one scale over every judge of the report, and a legend lists only the judges the figure
has data of, each by its name (names keyed by index: ``vega.keyed_by_index``)."""

from __future__ import annotations

import polars as pl

from voirdire.analysis.report.task_charts import by_task_charts
from voirdire.analysis.report.vega import NAMES_PARAM, spec_of

JUDGES = ["alpha-1", "beta-2", "gamma-3", "delta-4", "epsilon-5"]


def _walk(node, path=()):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _walk(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, (*path, i))


def test_a_legend_lists_the_judges_drawn_and_names_each_of_them():
    drawn = JUDGES[:2]  # the others are judges of the report this figure has no data of
    jt = pl.DataFrame(
        [(j, t, 0.6 + 0.1 * i, 0.1 * i, 40) for i, j in enumerate(drawn) for t in ("a", "b", "c")],
        schema=["judge", "task", "pc", "pf", "n"], orient="row",
    )  # fmt: skip
    charts = by_task_charts(jt, JUDGES, JUDGES, "B")
    assert charts, "no figure drawn"
    seen = 0
    for kind, chart in charts.items():
        spec = spec_of(chart)
        names = next(p["value"] for p in spec["params"] if p["name"] == NAMES_PARAM)
        assert sorted(names) == sorted(JUDGES)  # every judge keyed: colours stay fixed
        legends = [n for _, n in _walk(spec) if isinstance(n.get("legend"), dict)]
        for enc in legends:
            keys = enc["legend"]["values"]
            assert [names[int(k[1:])] for k in keys] == sorted(drawn), kind
            domain = enc["scale"]["domain"]
            assert all(d not in JUDGES for d in domain), "a raw name left in a domain"
            assert len(domain) == len(JUDGES)
            seen += 1
    assert seen >= 2  # the radar's and the PF bars' legends at least
