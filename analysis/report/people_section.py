"""The report's section "Human boards from a few labels" (``report.html``, ``report.md``),
built from what ``voirdire people`` wrote (``docs/people.md``, "In the report").

A report looks for those files (:func:`~voirdire.analysis.report.people_files.find_people`:
its own output directory, else ``people/`` next to the first directory), reads them back
(:func:`~voirdire.analysis.report.people_files.read_people`) and keeps the (benchmark,
judge) pairs of its own study: a ``people/`` folder of other judges shows nothing. Per
benchmark the section shows the three boards side by side (PPI++ from human labels and
the judge, labels alone, the judge alone: :func:`~voirdire.analysis.report.people_charts.people_chart`,
with a menu of judges) and the selective-judging curve, a table per judge (labels, width
against labels alone, effective labels, threshold, share kept, agreement), the boards as
tables and the cascade. Nothing is computed again here.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from voirdire.analysis.report.files import file_part
from voirdire.analysis.report.people_files import (
    PeopleTables,
    few_labels,
    find_people,
    judge_summary,
    read_people,
)
from voirdire.analysis.report.views import F3, chart_view, table_view

__all__ = ["report_people", "people_specs", "write_people_figures", "people_view"]


def report_people(
    out_dir: str | os.PathLike,
    dirs: Sequence[str | os.PathLike],
    judges: set[tuple[str, str]],
) -> PeopleTables | None:
    """``voirdire people``'s tables for a report of ``dirs`` written to ``out_dir``
    (module docstring), kept to the (benchmark, judge) pairs ``judges``; None when there
    are none or none of those judges.

    Raises:
        ConfigError: the files are there but one cannot be read (one line naming it).
    """
    where = find_people(out_dir, dirs)
    if where is None:
        return None
    t = read_people(where)
    keys = pl.DataFrame(
        sorted(judges),
        schema={"benchmark": pl.String, "judge": pl.String},
        orient="row",
    )

    def ours(df: pl.DataFrame) -> pl.DataFrame:
        return df.join(
            keys, on=["benchmark", "judge"], how="semi", maintain_order="left"
        )

    selective = ours(t.selective)
    if not selective.height:
        return None
    benches = selective.get_column("benchmark").unique().to_list()
    return dataclasses.replace(
        t,
        boards=ours(t.boards),
        selective=selective,
        curve=ours(t.curve),
        cascade=t.cascade.filter(pl.col("benchmark").is_in(benches)),
    )


def _benchmarks(tables: PeopleTables) -> list[str]:
    return list(dict.fromkeys(tables.selective.get_column("benchmark").to_list()))


def people_specs(tables: PeopleTables) -> dict[str, dict[str, Any]]:
    """The human figure of each benchmark as a Vega-Lite specification, keys
    ``"people:<benchmark>"``."""
    from voirdire.analysis.report.people_charts import people_chart
    from voirdire.analysis.report.vega import spec_of

    target = 1 - float(tables.settings["alpha"])
    out = {}
    for b in _benchmarks(tables):
        boards = tables.boards.filter(pl.col("benchmark") == b)
        curve = tables.curve.filter(pl.col("benchmark") == b)
        judges = tables.selective.filter(pl.col("benchmark") == b)["judge"].to_list()
        chart = people_chart(
            boards, curve, f"{b}: human boards and selective judges", target=target, judges=judges
        )  # fmt: skip
        out[f"people:{b}"] = spec_of(chart)
    return out


def write_people_figures(
    specs: dict[str, dict[str, Any]], fdir: Path, formats: Sequence[str]
) -> dict[str, Path]:
    """The static files of :func:`people_specs`' figures, ``fdir/people_<benchmark>.png``
    (``.svg``); the first file of each by its key."""
    from voirdire.analysis.report.vega import write_static

    out = {}
    for key, spec in specs.items():
        static = write_static(spec, fdir / f"people_{file_part(key.partition(':')[2])}", formats)  # fmt: skip
        if static:
            out[key] = next(iter(static.values()))
    return out


_SUMMARY = {"judge": "judge", "confidence": "confidence", "labels": "labels", "pairs": "pairs",
            "width_ratio": "width PPI++ / labels alone", "n_eff": "effective labels", "threshold": "threshold",
            "share_kept": "share kept", "kept": "labelled kept", "agreement_labelled": "agreement on labelled kept (calibration, not the guarantee)",
            "agreement_all_labelled": "agreement on all labelled"}  # fmt: skip
_BOARD = ["judge", "kind", "estimator", "model", "estimate", "lo", "hi", "rating", "rating_lo", "rating_hi",
          "rank", "rank_lo", "rank_hi", "n_labels", "lam", "n_eff"]  # fmt: skip
_CASCADE = ["stage", "judge", "threshold", "reached", "kept", "share_kept", "labelled_kept", "agreement_labelled",
            "usd_per_pair", "cost_usd", "queries"]  # fmt: skip


def people_view(
    tables: PeopleTables, charts: dict[str, Any], n: list[int]
) -> dict[str, Any]:
    """The section as the template ``people.html.j2`` takes it: ``settings`` (level,
    alpha, delta, confidence, labels, target), ``source`` (the folder read), ``to_label``,
    and per benchmark its ``chart`` (``charts["people:<benchmark>"]``), ``summary`` (one
    row per judge), ``boards`` and ``cascade`` tables; ``n``: the page's figure counter."""
    s = dict(tables.settings)
    summary = judge_summary(tables)
    few = few_labels(tables)
    out = []
    for b in _benchmarks(tables):

        def of(df: pl.DataFrame, b: str = b) -> pl.DataFrame:
            return df.filter(pl.col("benchmark") == b)

        sm = of(summary).select(list(_SUMMARY))
        boards = of(tables.boards).sort(
            "judge", "kind", "estimator", "rank", "model", maintain_order=True
        )
        fmt = {c: F3 for c in ("estimate", "lo", "hi", "threshold", "share_kept", "agreement_labelled",
                               "agreement_all_labelled", "width_ratio", "lam")}  # fmt: skip
        out.append({
            "name": b, "chart": chart_view(charts, f"people:{b}", n),
            "summary": table_view(sm, fmt | {"n_eff": "{:.0f}"}, rename=_SUMMARY),
            "boards": table_view(boards.select(_BOARD), fmt | {c: "{:.0f}" for c in ("rating", "rating_lo", "rating_hi", "n_eff")}),
            "n_boards": boards.height,
            "few_labels": [text for bench, _, text in few if bench == b],
            "cascade": table_view(of(tables.cascade).select(_CASCADE), fmt | {"usd_per_pair": "{:.5f}", "cost_usd": "{:.4f}", "queries": "{:.0f}"}),
        })  # fmt: skip
    return {
        "settings": s
        | {"target": 1 - float(s["alpha"]), "sure": 1 - float(s["delta"])},
        "source": tables.source,
        "to_label": tables.to_label,
        "benchmarks": out,
    }
