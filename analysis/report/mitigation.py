"""What the mitigation shows beyond its table: the strategies' cost (queries per final
verdict) against their agreement with a reference (Cohen's kappa), a PNG drawn with
matplotlib (:mod:`voirdire.analysis.report.plotting`) for ``voirdire mitigate``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl

from voirdire.analysis.report.plotting import _save, plt

__all__ = ["cost_agreement_figure"]


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
