"""Which judges of the report each figure leaves out, and why (issue 40, item 6): a
figure that does not draw every judge of its scope says so in a caption under it.

A figure's judges are read from its specification's data (:func:`drawn_judges`: what the
page draws, not what it was meant to draw). Its scope is the report's judges of its
benchmark (a by-benchmark figure) or of its directory's benchmarks (the agreement
figures, one per directory). Each judge left out is given the first reason that holds
(:func:`benchmark_reasons`, :func:`directory_reasons`): judged in one order only (no PC
or PF), measured only in a repetition study (its sample of tasks), no gold labels, no
repeated queries, judged in another directory; else "no data this figure draws". The
caption (:func:`caption`) names at most :data:`NAMED` judges per reason, then a count,
and carries the whole list for its hover; the page's template escapes both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

from voirdire.analysis.report import scale
from voirdire.analysis.report.vega import data_rows, shown_text

if TYPE_CHECKING:
    from voirdire.analysis.outputs import Results
    from voirdire.analysis.study import Study

__all__ = [
    "NAMED",
    "ONE_ORDER",
    "REPETITION_ONLY",
    "NO_GOLD",
    "NO_RS",
    "OTHER_DIRECTORY",
    "NO_DATA",
    "drawn_judges",
    "repetition_only",
    "benchmark_reasons",
    "directory_reasons",
    "caption",
    "figure_caption",
]

#: the most judges a caption names per reason (the rest counted, all on hover)
NAMED = 3
#: the reasons, as the caption gives them
ONE_ORDER = (
    "judged in one order only, so no position consistency or preference fairness"
)
REPETITION_ONLY = "measured only in a repetition study, on its sample of tasks"
NO_GOLD = "no gold labels, so no accuracy"
NO_RS = "no repeated queries, so no repetition stability"
OTHER_DIRECTORY = (
    "judged in another directory (agreement is over one directory's queries)"
)
NO_DATA = "no data this figure draws"

#: the fields of a figure's data that name judges
_JUDGE_FIELDS = ("judge", "judge_a", "judge_b")
#: the figure kinds that draw PC or PF (a one-order judge has neither)
_NEEDS_PC = ("radar", "pf_bars", "task_heatmaps", "pc_pf", "accuracy_pc", "families", "owr")  # fmt: skip
#: the kinds drawn from the by-task table (a repetition study's judges are not in it)
_BY_TASK = ("radar", "pf_bars", "task_heatmaps", "owr")


def drawn_judges(spec: Mapping[str, Any]) -> set[str]:
    """The judges' names in a figure's data (a specification of
    :func:`~voirdire.analysis.report.vega.spec_of`: each keyed name's ``<field>_name``),
    as the specification holds them (:func:`~voirdire.analysis.report.vega.shown_text`)."""
    out: set[str] = set()
    for r in data_rows(dict(spec)):
        for f in _JUDGE_FIELDS:
            v = r.get(f"{f}_name", r.get(f))
            if isinstance(v, str):
                out.add(v)
    return out


def repetition_only(study: Study, benchmark: str) -> list[str]:
    """The judges of ``benchmark``'s tables that its by-task figures, win-rate curves and
    regression leave out: those measured only in a repetition study (its sample of tasks),
    when a single-repetition directory measured other judges on the whole table; sorted."""
    drawn = (
        study.figure_judge_task
        if study.figure_judge_task is not None
        else study.judge_task
    )
    at = pl.col("benchmark") == benchmark
    have = set(drawn.filter(at).get_column("judge").to_list())
    judges = study.panel.filter(at).get_column("judge").to_list()
    return sorted(j for j in judges if j not in have)


def benchmark_reasons(study: Study, benchmark: str, kind: str) -> dict[str, str]:
    """Every judge of ``benchmark`` in the report's panel -> why a figure of ``kind``
    (:data:`~voirdire.analysis.report.study_charts.KIND_TITLES`, ``metric_<name>``) would
    not draw it (the first that holds; :data:`NO_DATA` where none does)."""
    from voirdire.analysis.position.registry import added_metrics

    rows = study.panel.filter(pl.col("benchmark") == benchmark)
    rep = set(repetition_only(study, benchmark)) if kind in _BY_TASK else set()
    metric = kind.removeprefix("metric_") if kind.startswith("metric_") else None
    out: dict[str, str] = {}
    for r in rows.iter_rows(named=True):
        if kind in _NEEDS_PC and r.get("pc") is None:
            why = ONE_ORDER
        elif kind == "accuracy_pc" and r.get("accuracy") is None:
            why = NO_GOLD
        elif r["judge"] in rep:
            why = REPETITION_ONLY
        elif kind == "rs" and r.get("rs") is None:
            why = NO_RS
        elif metric is not None and r.get(metric) is None:
            m = added_metrics().get(metric)
            why = f"no {m.label if m is not None else metric}"
        else:
            why = NO_DATA
        out.setdefault(r["judge"], why)
    return out


def directory_reasons(
    study: Study, d: Results, benchmark: str | None = None
) -> dict[str, str]:
    """Every judge of the report on ``d``'s benchmarks (``benchmark``: that one only) ->
    why ``d``'s agreement figures would not draw it: :data:`OTHER_DIRECTORY` where ``d``
    did not judge it, else :data:`NO_DATA`."""
    mine = d.judgments.select("benchmark", "judge").unique()
    if benchmark is not None:
        mine = mine.filter(pl.col("benchmark") == benchmark)
    benches = mine.get_column("benchmark").unique().to_list()
    here = set(mine.get_column("judge").to_list())
    judges = (
        study.panel.filter(pl.col("benchmark").is_in(benches))
        .get_column("judge")
        .unique()
        .sort()
    )
    return {j: NO_DATA if j in here else OTHER_DIRECTORY for j in judges}


def caption(left_out: Mapping[str, str]) -> dict[str, str] | None:
    """The caption of a figure that leaves out ``left_out`` (judge -> reason): ``text``
    ("Leaves out A, B and 2 more: reason; C: other reason."), at most :data:`NAMED`
    names per reason in sorted order, and ``all`` (every name, for the hover); None where
    it leaves out none. Plain text: the template escapes it."""
    if not left_out:
        return None
    by: dict[str, list[str]] = {}
    for j in sorted(left_out):
        by.setdefault(left_out[j], []).append(j)
    parts = []
    for why, names in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(names[:NAMED])
        more = len(names) - NAMED
        parts.append(f"{shown}{f' and {more} more' if more > 0 else ''}: {why}")
    return {
        "text": "Leaves out " + "; ".join(parts) + ".",
        "all": "Left out: " + ", ".join(sorted(left_out)),
    }


def figure_caption(
    spec: Mapping[str, Any] | None,
    reasons: Mapping[str, str],
    drawn: Iterable[str] | None = None,
) -> dict[str, str] | None:
    """The :func:`caption` of one figure: the judges of ``reasons`` (its scope, judge ->
    why it would be left out) that its specification ``spec`` does not draw
    (:func:`drawn_judges`; ``drawn``: the judges it covers where its data names none, as
    a histogram over a directory's judges). None without ``spec`` or where it draws them
    all."""
    if spec is None:
        return None
    bound = scale.bound_of(dict(spec))
    if bound is not None and bound["drawn"] >= bound["of"]:  # a distribution over all
        text = (
            f"Draws the distribution over all {bound['of']:,} judges, not one mark per "
            f"judge (past the report's bound of {scale.JUDGES_DRAWN:,}); each judge's "
            "numbers: the CSVs in metrics/."
        )
        return {"text": text, "all": text}
    have = {shown_text(j) for j in drawn} if drawn is not None else drawn_judges(spec)
    left = {j: w for j, w in reasons.items() if shown_text(j) not in have}
    if bound is not None:  # judges it left out for the bound alone say so
        past = scale.bound_reason(bound["drawn"], bound["of"])
        left = {j: past if w == NO_DATA else w for j, w in left.items()}
    return caption(left)
