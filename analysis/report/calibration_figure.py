"""The reliability diagram of the judges' probabilities against the gold labels (PNG).

Drawn from :func:`voirdire.analysis.position.calibration_error.reliability_table` (computed
apart): per judge, the share of labels naming the candidate (``mean_y``) against the mean
stated probability (``mean_p``) of each non-empty bin, marker area by the bin's count, and
the diagonal a calibrated judge follows (Guo et al. 2017, fig. 1; DeGroot and Fienberg 1983).
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from voirdire.analysis.report.plotting import _save, _short, judge_colors, plt

__all__ = ["reliability_figure"]


def reliability_figure(
    table: pl.DataFrame, path: str | os.PathLike, title: str = ""
) -> Path:
    """Draw the reliability diagram of ``table`` (``benchmark``, ``judge``, ``bin``, ``n``,
    ``mean_p``, ``mean_y``: one row per non-empty bin) to ``path``; one line per
    (benchmark, judge). Returns the path written."""
    fig, ax = plt.subplots(figsize=(5.2, 5.0))
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="calibrated")
    colors = judge_colors(table.get_column("judge").unique().to_list())
    several = table.get_column("benchmark").n_unique() > 1
    for (bm, j), g in table.sort("bin").group_by(
        "benchmark", "judge", maintain_order=True
    ):
        label = _short(f"{j} ({bm})" if several else j, 30)
        ax.plot(g["mean_p"], g["mean_y"], color=colors[j], lw=1.2, label=label)
        size = 12 + 140 * g["n"].to_numpy() / max(int(table["n"].max()), 1)
        ax.scatter(g["mean_p"], g["mean_y"], s=size, color=colors[j], alpha=0.7)
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="stated probability that the candidate is better (bin mean)",
           ylabel="share of labels naming the candidate", title=title or "reliability")  # fmt: skip
    ax.set_aspect("equal")
    ax.legend(fontsize=7, loc="upper left")
    return _save(fig, path)
