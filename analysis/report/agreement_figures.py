"""Figures of agreement drawn as PNG (matplotlib, Agg backend;
:mod:`voirdire.analysis.report.plotting`): the disagreement histogram between judges (Shi
et al., "Judging the Judges") and, of the mitigation strategies, cost against Cohen's kappa
with a reference. The agreement heatmaps are interactive:
:mod:`voirdire.analysis.report.agreement_charts`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl

from voirdire.analysis.report.plotting import _save, plt

__all__ = ["disagreement_histogram", "cost_agreement_figure"]


def disagreement_histogram(
    hist: pl.DataFrame, path: str | os.PathLike, title: str = ""
) -> Path:
    """Bars: share of queries per disagreement level; line (right axis): cumulative share.
    ``hist``: disagreement, queries, share, cumulative_share (one benchmark)."""
    h = hist.sort("disagreement")
    x = h.get_column("disagreement").to_numpy()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.bar(x, h.get_column("share").to_numpy(), color="#4c72b0", alpha=0.85)
    for xi, q in zip(x, h.get_column("queries").to_list()):
        ax.text(
            xi, 0.005, f"{q:,}", ha="center", va="bottom", fontsize=7, color="white"
        )
    ax.set_xlabel("disagreement (judges differing from the most frequent choice)")
    ax.set_ylabel("share of queries")
    ax.set_xticks(x)
    ax2 = ax.twinx()
    ax2.plot(x, h.get_column("cumulative_share").to_numpy(), "o-", color="#dd8452")
    ax2.set_ylim(0, 1.02)
    ax2.set_ylabel("cumulative share", color="#dd8452")
    ax.set_title(title or "Disagreement between judges per query")
    return _save(fig, path)


def cost_agreement_figure(
    table: pl.DataFrame, path: str | os.PathLike, title: str = ""
) -> Path:
    """Cost (queries per final verdict, x) against Cohen's kappa with the reference (y,
    95 % interval bars), one panel per benchmark, one colour per strategy (kappa against a
    reference is an agreement figure: no gate line; the 0.6 gate is on the inter-pass
    kappa). PNG at ``path``."""
    benches = sorted(table.get_column("benchmark").unique().to_list())
    strategies = sorted(table.get_column("strategy").unique().to_list())
    cmap = plt.get_cmap("tab10")
    color = {s: cmap(i % 10) for i, s in enumerate(strategies)}
    fig, axes = plt.subplots(
        1, max(1, len(benches)), figsize=(6 * max(1, len(benches)), 4.5), squeeze=False
    )
    for ax, b in zip(axes[0], benches):
        part = table.filter(pl.col("benchmark") == b)
        for s in strategies:
            p = part.filter(pl.col("strategy") == s)
            if not p.height:
                continue
            y, lo, hi = (
                p.get_column(c).to_numpy().astype(float)
                for c in ("kappa", "kappa_lo", "kappa_hi")
            )
            # a small horizontal offset per strategy keeps strategies of equal cost apart
            x = p.get_column("cost").to_numpy().astype(float) * (
                1 + 0.04 * (strategies.index(s) - (len(strategies) - 1) / 2)
            )
            err = np.vstack([np.nan_to_num(y - lo), np.nan_to_num(hi - y)])
            ax.errorbar(
                x, y, yerr=err, fmt="o", color=color[s], label=s, alpha=0.8, capsize=2
            )
        ax.set_xscale("log")
        costs = sorted({float(c) for c in part.get_column("cost").to_list() if c == c})
        ax.set_xticks(costs, [f"{c:g}" for c in costs])
        ax.minorticks_off()
        ax.set_xlabel("queries per final verdict")
        ax.set_ylabel("Cohen's kappa with the reference")
        ax.set_title(b)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    return _save(fig, path)
