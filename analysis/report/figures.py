"""Figures of the position-bias report (matplotlib, Agg backend, PNG).

Each function takes analysis tables (polars) and an output path, draws one figure and
returns the path. Colours are fixed per judge (sorted names over ``tab10``/``tab20``) so a
judge looks the same in every figure. The figures follow Shi et al., "Judging the Judges"
(PC radar by task, PF by task, PC against PF, PC/PF against the overall win rate with
quadratic fits, agreement heatmaps, the disagreement histogram) plus RS per judge, and one
bar figure per registered metric other than pc, pf and rs (:func:`metric_bars`, drawn from
the metric's record: label, format and direction). The agreement figures live in
:mod:`voirdire.analysis.report.agreement_figures`, the colours and saving in
:mod:`voirdire.analysis.report.plotting`; their names are importable from here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from voirdire.analysis.report.agreement_figures import (
    agreement_heatmaps,
    cost_agreement_figure,
    disagreement_histogram,
)
from voirdire.analysis.report.plotting import DPI as DPI
from voirdire.analysis.report.plotting import (
    _frame,
    _save,
    _short,
    judge_colors,
    plt,
    set_judges,
)

__all__ = [
    "judge_colors",
    "set_judges",
    "pc_radar",
    "pf_bars",
    "pc_vs_pf",
    "vs_win_rate",
    "agreement_heatmaps",
    "disagreement_histogram",
    "rs_bars",
    "metric_bars",
    "accuracy_vs_pc",
    "cost_agreement_figure",
]


def pc_radar(
    judge_task: pl.DataFrame, path: str | os.PathLike, title: str = ""
) -> Path:
    """Radar chart of PC by task, one line per judge.

    ``judge_task``: columns ``judge``, ``task``, ``pc`` (one benchmark; e.g.
    ``metrics.judge_from_cells(cells, keys=["benchmark", "judge", "task"])``).
    """
    tasks = sorted(judge_task.get_column("task").unique().to_list())
    judges = sorted(judge_task.get_column("judge").unique().to_list())
    colors = judge_colors(judges)
    ang = np.linspace(0, 2 * np.pi, len(tasks), endpoint=False)
    fig = plt.figure(figsize=(7.5, 7.5))
    ax = fig.add_subplot(projection="polar")
    for j in judges:
        d = dict(
            judge_task.filter(pl.col("judge") == j).select("task", "pc").iter_rows()
        )
        vals = np.array([d.get(t, np.nan) for t in tasks])
        ax.plot(
            np.r_[ang, ang[:1]], np.r_[vals, vals[:1]], color=colors[j], lw=1.6, label=j
        )
        ax.fill(np.r_[ang, ang[:1]], np.r_[vals, vals[:1]], color=colors[j], alpha=0.05)
    ax.set_xticks(ang)
    ax.set_xticklabels([_short(t, 26) for t in tasks], fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_title(title or "Position consistency by task", pad=24)
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.08),
        ncol=2,
        fontsize=8,
        frameon=False,
    )
    return _save(fig, path)


def pf_bars(judge_task: pl.DataFrame, path: str | os.PathLike, title: str = "") -> Path:
    """Grouped bars of PF by task (x) and judge (bars); ``judge_task``: judge, task, pf."""
    tasks = sorted(judge_task.get_column("task").unique().to_list())
    judges = sorted(judge_task.get_column("judge").unique().to_list())
    colors = judge_colors(judges)
    width = 0.8 / max(1, len(judges))
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(tasks) + 3), 4.8))
    x = np.arange(len(tasks))
    for i, j in enumerate(judges):
        d = dict(
            judge_task.filter(pl.col("judge") == j).select("task", "pf").iter_rows()
        )
        ax.bar(
            x + (i - (len(judges) - 1) / 2) * width,
            np.array([d.get(t) for t in tasks], dtype=float),  # no PF (None): no bar
            width,
            color=colors[j],
            label=j,
        )
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels(
        [_short(t, 34) for t in tasks], rotation=35, ha="right", fontsize=8
    )
    ax.set_ylabel("PF  (−1 primacy … +1 recency)")
    ax.set_ylim(-1, 1)
    ax.set_title(title or "Preference fairness by task")
    ax.legend(fontsize=8, ncol=2, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def pc_vs_pf(
    cells: pl.DataFrame,
    judges: pl.DataFrame,
    path: str | os.PathLike,
    ci: pl.DataFrame | None = None,
    title: str = "",
) -> Path:
    """PC against PF: cells as faint points, judges as large markers (with bootstrap
    intervals when ``ci`` is given: columns judge, metric, lo, hi, task null).

    ``cells``: judge, pc, pf, n; ``judges``: judge, pc, pf.
    """
    names = sorted(judges.get_column("judge").to_list())
    colors = judge_colors(names)
    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    u = cells.filter(pl.col("n") > 0)
    for j in names:
        uj = u.filter(pl.col("judge") == j)
        ax.scatter(uj["pf"], uj["pc"], s=8, alpha=0.18, color=colors[j])
    for r in judges.sort("judge").iter_rows(named=True):
        if r["pc"] is None:
            continue
        xerr = yerr = None
        if ci is not None:
            c = ci.filter((pl.col("judge") == r["judge"]) & pl.col("task").is_null())
            get = {
                m: (lo, hi) for m, lo, hi in c.select("metric", "lo", "hi").iter_rows()
            }
            if "pf" in get:
                xerr = [[r["pf"] - get["pf"][0]], [get["pf"][1] - r["pf"]]]
            if "pc" in get:
                yerr = [[r["pc"] - get["pc"][0]], [get["pc"][1] - r["pc"]]]
        ax.errorbar(
            r["pf"],
            r["pc"],
            xerr=xerr,
            yerr=yerr,
            fmt="o",
            ms=9,
            color=colors[r["judge"]],
            mec="black",
            label=r["judge"],
            capsize=3,
        )
    ax.axvline(0, color="black", lw=0.8)
    _frame(
        ax,
        (-1, 1),
        "PF  (−1 primacy … +1 recency)",
        "PC",
        title or "Position consistency against preference fairness",
        "lower left",
    )
    return _save(fig, path)


def vs_win_rate(cells: pl.DataFrame, path: str | os.PathLike, title: str = "") -> Path:
    """PC and PF of each cell against its overall win rate, with a quadratic least-squares
    fit (``numpy.polyfit``, degree 2) per judge. ``cells``: judge, owr, pc, pf, n."""
    u = cells.filter(pl.col("n") > 0)
    names = sorted(u.get_column("judge").unique().to_list())
    colors = judge_colors(names)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharex=True)
    grid = np.linspace(0, 1, 101)
    for ax, metric, label in ((axes[0], "pc", "PC"), (axes[1], "pf", "PF")):
        for j in names:
            uj = u.filter(pl.col("judge") == j)
            x, y = uj.get_column("owr").to_numpy(), uj.get_column(metric).to_numpy()
            ax.scatter(x, y, s=8, alpha=0.25, color=colors[j])
            if len(x) >= 3 and np.ptp(x) > 0:
                coef = np.polyfit(x, y, 2)
                lo, hi = x.min(), x.max()
                g = grid[(grid >= lo) & (grid <= hi)]
                ax.plot(g, np.polyval(coef, g), color=colors[j], lw=2, label=j)
        ax.set_xlabel("overall win rate of the candidate over the reference")
        ax.set_ylabel(label)
        ax.axvline(0.5, color="grey", lw=0.8, ls="--")
        ax.grid(alpha=0.3)
    axes[0].set_ylim(0, 1.02)
    axes[1].set_ylim(-1, 1)
    axes[1].axhline(0, color="black", lw=0.8)
    axes[1].legend(fontsize=8, frameon=False)
    fig.suptitle(title or "PC and PF against the overall win rate (quadratic fits)")
    return _save(fig, path)


def rs_bars(
    judges: pl.DataFrame,
    path: str | os.PathLike,
    ci: pl.DataFrame | None = None,
    title: str = "",
    rs_min: float | None = None,
) -> Path:
    """RS per judge (bars; error bars: the bootstrap interval if ``ci`` has ``rs`` rows,
    else ± RS spread). ``judges``: judge, rs, rs_spread. ``rs_min`` draws the threshold."""
    j = judges.filter(pl.col("rs").is_not_null()).sort("rs", descending=True)
    names = j.get_column("judge").to_list()
    colors = judge_colors(names)
    rs = j.get_column("rs").to_numpy()
    if ci is not None and ci.filter(pl.col("metric") == "rs").height:
        c = {
            a: (lo, hi)
            for a, lo, hi in ci.filter(
                (pl.col("metric") == "rs") & pl.col("task").is_null()
            )
            .select("judge", "lo", "hi")
            .iter_rows()
        }
        err = np.array(
            [
                [r - c.get(n, (r, r))[0] for n, r in zip(names, rs)],
                [c.get(n, (r, r))[1] - r for n, r in zip(names, rs)],
            ]
        )
        elabel = "95% cluster-bootstrap interval"
    else:
        sp = j.get_column("rs_spread").fill_null(0).to_numpy()
        err = np.vstack([sp, sp])
        elabel = "± RS spread"
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(names) + 2), 4.5))
    ax.bar(
        range(len(names)),
        rs,
        yerr=err,
        color=[colors[n] for n in names],
        capsize=3,
        label=elabel,
    )
    if rs_min is not None:
        ax.axhline(
            rs_min, color="red", ls="--", lw=1, label=f"RS threshold {rs_min:.2f}"
        )
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(
        [_short(n, 24) for n in names], rotation=35, ha="right", fontsize=8
    )
    lo = max(0.0, float(np.nanmin(rs - err[0])) - 0.05) if len(rs) else 0.0
    ax.set_ylim(min(lo, 0.8), 1.0)
    ax.set_ylabel("repetition stability")
    ax.legend(fontsize=8, frameon=False, loc="lower left")
    ax.set_title(title or "Repetition stability per judge")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def metric_bars(
    judges: pl.DataFrame, metric: Any, path: str | os.PathLike, title: str = ""
) -> Path:
    """A registered metric per judge (bars, best first by its ``direction``; error bars: the
    95 % cluster-bootstrap interval where ``judges`` has ``<name>_lo``/``_hi``).

    Args:
        judges: ``judge``, the metric's column ``<name>`` (float) and optionally
            ``<name>_lo``, ``<name>_hi`` (the study's panel of one benchmark).
        metric: its :class:`~voirdire.analysis.position.registry.Metric` record (``name``,
            ``label``, ``direction``: ``higher``/``lower``/``zero``, the last drawing a line at 0).
    """
    name = metric.name
    j = judges.filter(pl.col(name).is_not_null() & pl.col(name).is_not_nan())
    order = {
        "higher": pl.col(name),
        "lower": -pl.col(name),
        "zero": -pl.col(name).abs(),
    }[metric.direction]
    j = j.sort(order, "judge", descending=[True, False])
    names = j.get_column("judge").to_list()
    colors = judge_colors(names)
    v = j.get_column(name).to_numpy()
    err = None
    if f"{name}_lo" in j.columns and f"{name}_hi" in j.columns:
        lo = j.get_column(f"{name}_lo").fill_null(np.nan).to_numpy()
        hi = j.get_column(f"{name}_hi").fill_null(np.nan).to_numpy()
        err = np.nan_to_num(np.vstack([v - lo, hi - v]), nan=0.0).clip(min=0.0)
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(names) + 2), 4.5))
    ax.bar(range(len(names)), v, yerr=err, color=[colors[n] for n in names], capsize=3,
           label="95% cluster-bootstrap interval" if err is not None else None)  # fmt: skip
    if metric.direction == "zero":
        ax.axhline(0.0, color="black", lw=0.8)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(
        [_short(n, 24) for n in names], rotation=35, ha="right", fontsize=8
    )
    ax.set_ylabel(f"{metric.label} ({metric.direction_text})")
    if err is not None:
        ax.legend(fontsize=8, frameon=False)
    ax.set_title(title or f"{metric.label} per judge")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def accuracy_vs_pc(
    judges: pl.DataFrame, path: str | os.PathLike, title: str = ""
) -> Path:
    """Accuracy against gold labels (y) against position consistency (x), one marker per
    judge with its 95 % bootstrap intervals where given; hollow markers show
    both-orders-correct (the share of pairs the judge gets right whichever answer comes
    first). A judge that guesses by position sits low on both axes; the dashed line marks
    the accuracy of always choosing the first slot on balanced labels (0.5).

    ``judges``: ``judge``, ``pc``, ``accuracy`` (float) and optionally ``pc_lo``,
    ``pc_hi``, ``accuracy_lo``, ``accuracy_hi``, ``both_correct`` (one benchmark).
    """
    rows = judges.filter(
        pl.col("accuracy").is_not_null() & pl.col("pc").is_not_null()
    ).sort("judge")
    colors = judge_colors(rows.get_column("judge").to_list())
    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    for r in rows.iter_rows(named=True):

        def err(m: str, r: dict = r) -> list[list[float]] | None:
            lo, hi = r.get(f"{m}_lo"), r.get(f"{m}_hi")
            return None if lo is None or hi is None else [[r[m] - lo], [hi - r[m]]]

        ax.errorbar(
            r["pc"],
            r["accuracy"],
            xerr=err("pc"),
            yerr=err("accuracy"),
            fmt="o",
            ms=9,
            color=colors[r["judge"]],
            mec="black",
            capsize=3,
            label=r["judge"],
        )
        if r.get("both_correct") is not None:
            ax.scatter(
                [r["pc"]],
                [r["both_correct"]],
                s=60,
                facecolors="none",
                edgecolors=colors[r["judge"]],
                lw=1.5,
            )
    ax.axhline(0.5, color="gray", lw=0.8, ls="--")
    _frame(ax, (0, 1.02), "PC (position consistency)", "accuracy against gold labels  (○ both orders correct)",
           title or "Accuracy against position consistency", "lower right")  # fmt: skip
    return _save(fig, path)
