"""The figures of a study, by benchmark and directory, as Vega-Altair charts (nothing is
written here: :mod:`voirdire.analysis.report.files` writes their static forms, the page
embeds their specifications).

Which figure, by the number of judges on it (:data:`~voirdire.analysis.report.vega.MAX_LEGEND`):

=========================  ===============================  ==============================
what                       up to 12 judges                  more judges
=========================  ===============================  ==============================
PC, PF (accuracy) by task  radar of PC, grouped bars of PF  heatmaps judge × task
PC against PF              colours and legend, cells faint  one colour, hover and search
accuracy against PC        colours and legend               one colour, hover and search
PC, PF vs win rate         the top few judges (picked)      the top few judges (picked)
RS, registered metrics     a bar per judge                  a bar per judge (rows)
families                   small multiples by model         small multiples by model
agreement                  three matrices, values written   Cohen's kappa, lower triangle
disagreement               a histogram per directory        a histogram per directory
=========================  ===============================  ==============================

Keys are ``"<kind>:<benchmark>"`` (the agreement and disagreement figures
``"<kind>:<i>:<benchmark>"``, ``i`` the directory's place in the study:
:func:`~voirdire.analysis.report.agreement.agreement_key`), each kind's title in
:data:`KIND_TITLES`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import altair as alt
import polars as pl

from voirdire.analysis.families import judge_families
from voirdire.analysis.position.registry import added_metrics
from voirdire.analysis.report import scale
from voirdire.analysis.report.agreement import (
    agreement_heatmap,
    agreement_key,
    directory_labels,
    disagreement_chart,
    kappa_distribution,
)
from voirdire.analysis.report.curve_charts import default_picks, win_rate_curves
from voirdire.analysis.report.judge_charts import (
    family_multiples,
    judge_bars,
    judge_density,
    judge_scatter,
)
from voirdire.analysis.report.task_charts import by_task_charts
from voirdire.analysis.report.vega import in_order

if TYPE_CHECKING:
    from voirdire.analysis.choice import Choice
    from voirdire.analysis.study import Study

__all__ = ["KIND_TITLES", "study_charts", "task_accuracy"]

#: each figure kind's title in the page (the benchmark's name goes before it)
KIND_TITLES = {
    "radar": "PC by task", "pf_bars": "PF by task", "task_heatmaps": "PC, PF and accuracy by judge and task",
    "pc_pf": "PC against PF", "accuracy_pc": "accuracy against PC", "families": "judge families",
    "owr": "PC and PF against the win rate", "rs": "RS per judge", "agreement": "agreement between judges",
    "disagreement": "disagreement per query",
}  # fmt: skip

_PF = "PF (−1 primacy … +1 recency)"


def task_accuracy(study: Study) -> pl.DataFrame:
    """Accuracy against the gold labels per (benchmark, judge, task) from each judge's PC/PF
    source directory (the panel's ``source``): ``benchmark``, ``judge``, ``task``,
    ``accuracy``; empty without gold labels."""
    from voirdire.analysis.biases.perturbed import control_rows
    from voirdire.analysis.position.gold import gold_accuracy, has_gold

    src = (
        study.panel.select("benchmark", "judge", "source")
        if "source" in study.panel.columns
        else None
    )
    out = []
    for d in study.dirs:
        j = control_rows(d.judgments)
        if not j.height or not has_gold(j):
            continue
        if src is not None:
            j = j.join(
                src.filter(pl.col("source") == d.name).drop("source"),
                on=["benchmark", "judge"],
                how="semi",
            )
        acc = gold_accuracy(j, keys=["benchmark", "judge", "task"])
        if acc.height:
            out.append(acc.select("benchmark", "judge", "task", "accuracy"))
    schema = {
        "benchmark": pl.String,
        "judge": pl.String,
        "task": pl.String,
        "accuracy": pl.Float64,
    }
    return (
        pl.concat(out, how="diagonal_relaxed") if out else pl.DataFrame(schema=schema)
    )


def _benchmark(
    study: Study, b: str, jt: pl.DataFrame, cells: pl.DataFrame, order: list[str],
    judges: list[str], families: pl.DataFrame,
) -> dict[str, Any]:  # fmt: skip
    charts: dict[str, Any] = {}
    pb = study.panel.filter(pl.col("benchmark") == b)
    total = pb.get_column("judge").n_unique()
    whole = pb
    if total > scale.JUDGES_DRAWN:  # one mark per judge: only the most judged (scale)
        top = scale.most_judged(
            cells.filter(pl.col("benchmark") == b), scale.JUDGES_DRAWN
        )
        drawn = pl.col("judge").is_in(top)
        pb, jt, cells = pb.filter(drawn), jt.filter(drawn), cells.filter(drawn)
        judges = scale.keep(judges, top)
        families = families.filter(drawn) if "judge" in families.columns else families
    mine = in_order(order, pb.get_column("judge"))
    if jt.height:
        charts |= {
            f"{k}:{b}": c for k, c in by_task_charts(jt, judges, mine, b).items()
        }
    # a judge judged in one order has no PC or PF: its cells' zeros are not points
    two = pb.filter(pl.col("pc").is_not_null()).select("judge")
    u = cells.filter(pl.col("benchmark") == b).join(two, on="judge", how="semi")
    if u.height and total > scale.JUDGES_DRAWN:  # the distribution over every judge
        charts[f"pc_pf:{b}"] = judge_density(
            whole, "pf", "pc", f"{b}: PC against PF, the distribution over {total:,} judges",
            x_title=_PF, y_title="PC", x_domain=(-1, 1),
        )  # fmt: skip
    elif u.height:
        charts[f"pc_pf:{b}"] = judge_scatter(
            pb, "pf", "pc", judges, f"{b}: PC against PF", x_title=_PF, y_title="PC",
            x_domain=(-1, 1), cells=u.filter(pl.col("n") > 0).select("judge", "pf", "pc"),
        )  # fmt: skip
    if "accuracy" in pb.columns and pb.get_column("accuracy").is_not_null().any():
        charts[f"accuracy_pc:{b}"] = judge_scatter(
            pb, "pc", "accuracy", judges, f"{b}: accuracy against PC", x_title="PC (position consistency)",
            y_title="accuracy against gold labels", x_domain=(0, 1.02), extra=("both_correct",),
        )  # fmt: skip
    fam = family_multiples(
        pb, families, f"{b}: judges by family (model), PC against PF"
    )
    if fam is not None:
        charts[f"families:{b}"] = fam
    if u.height:
        picked = default_picks(u, mine)  # judges with a curve only
        charts[f"owr:{b}"] = win_rate_curves(u, picked, f"{b}: PC and PF against the candidate's overall win rate (picked judges)", judges)  # fmt: skip
    if pb.get_column("rs").is_not_null().any():
        charts[f"rs:{b}"] = judge_bars(
            pb,
            "rs",
            mine,
            judges,
            f"{b}: repetition stability",
            axis_title="RS",
            threshold=study.rs_min,
        )
    for name, m in added_metrics().items():
        if name in pb.columns and pb.get_column(name).is_not_null().any():
            charts[f"metric_{name}:{b}"] = judge_bars(
                pb, name, mine, judges, f"{b}: {m.label} per judge",
                axis_title=f"{m.label} ({m.direction_text})", zero=m.direction == "zero",
            )  # fmt: skip
    if total > scale.JUDGES_DRAWN:  # each figure says what it draws (its caption)
        k = pb.get_column("judge").n_unique()
        charts = {
            key: c.properties(usermeta={scale.BOUND_META: {"drawn": total if key.startswith("pc_pf:") else k, "of": total}})
            for key, c in charts.items()
        }  # fmt: skip
    return charts


def study_charts(study: Study, choice: Choice) -> dict[str, alt.TopLevelMixin]:
    """Every figure of the study's position-bias sections, by key (module docstring);
    judges ordered as ``choice`` ranks them (:func:`voirdire.analysis.choice.choose_judges`)."""
    judges = sorted(study.panel.get_column("judge").unique().to_list())
    order = choice.table.get_column("judge").unique(maintain_order=True).to_list()
    families = judge_families(judges, [d.job for d in study.dirs])
    cells = study.reg_cells if study.reg_cells is not None else study.cells
    jt = (
        study.figure_judge_task
        if study.figure_judge_task is not None
        else study.judge_task
    )
    acc = task_accuracy(study)
    if acc.height:
        jt = jt.join(acc, on=["benchmark", "judge", "task"], how="left")
    if "n" not in jt.columns and "n_cells" in jt.columns:
        jt = jt.with_columns(n=pl.col("n_cells"))
    charts: dict[str, Any] = {}
    for b in study.benchmarks:
        charts |= _benchmark(
            study,
            b,
            jt.filter(pl.col("benchmark") == b),
            cells,
            order,
            judges,
            families,
        )
    labels = directory_labels(study.dirs)
    for i, d in enumerate(study.dirs):
        if d.agreement is None:
            continue
        benches = sorted(d.agreement.get_column("benchmark").unique().to_list())
        for b in benches:
            two = study.panel.filter(  # the judges the viewer holds pairs of
                (pl.col("benchmark") == b) & pl.col("pc").is_not_null()
            )
            name = labels[i] if len(benches) == 1 else f"{labels[i]}, {b}"
            matrix = d.agreement.filter(pl.col("benchmark") == b)
            total = matrix.get_column("judge_a").n_unique()
            heat = agreement_heatmap(
                matrix if total <= scale.AGREEMENT_JUDGES else matrix.filter(
                    pl.col("judge_a").is_in(top := scale.most_judged(
                        d.cell_metrics.filter(pl.col("benchmark") == b), scale.AGREEMENT_JUDGES))
                    & pl.col("judge_b").is_in(top)
                ),
                order,
                f"{name}: agreement between judges",
                two.get_column("judge").to_list(),
            )  # fmt: skip
            if total > scale.AGREEMENT_JUDGES:  # the most judged, and κ over every pair
                heat = alt.vconcat(
                    heat, kappa_distribution(matrix, f"{name}: Cohen's κ over all {total:,} judges' pairs")
                ).properties(usermeta={scale.BOUND_META: {"drawn": len(top), "of": total}})  # fmt: skip
            charts[agreement_key("agreement", i, b)] = heat
            charts[agreement_key("disagreement", i, b)] = disagreement_chart(
                d.disagreement.filter(pl.col("benchmark") == b),
                f"{name}: disagreement per query",
            )
    return charts
