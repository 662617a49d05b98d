"""Figures of agreement: between judges (heatmaps, the disagreement histogram) and of
mitigation strategies with a reference (cost against Cohen's kappa).

The agreement heatmaps and the disagreement histogram follow Shi et al., "Judging the
Judges"; matplotlib, Agg backend, PNG (:mod:`voirdire.analysis.report.plotting`). Every
function is importable from :mod:`voirdire.analysis.report.figures` too.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl

from voirdire.analysis.report.plotting import _save, _short, plt

__all__ = ["agreement_heatmaps", "disagreement_histogram", "cost_agreement_figure"]


def agreement_heatmaps(
    matrix: pl.DataFrame, path: str | os.PathLike, title: str = ""
) -> Path:
    """Heatmaps of mutual agreement with ties, without ties, and Cohen's kappa (one
    benchmark). ``matrix``: judge_a, judge_b, agreement, agreement_no_tie, kappa."""
    judges = sorted(matrix.get_column("judge_a").unique().to_list())
    n = len(judges)
    idx = {j: i for i, j in enumerate(judges)}
    panels = [
        ("agreement", "agreement (ties count)"),
        ("agreement_no_tie", "agreement without ties"),
        ("kappa", "Cohen's kappa"),
    ]
    side = 0.55 * n + 2.4
    fig, axes = plt.subplots(1, 3, figsize=(3 * side + 1.5, side))
    for ax, (col, label) in zip(axes, panels):
        m = np.full((n, n), np.nan)
        for a, b, v in matrix.select("judge_a", "judge_b", col).iter_rows():
            if v is not None:
                m[idx[a], idx[b]] = v
        im = ax.imshow(m, vmin=0 if col != "kappa" else -0.2, vmax=1, cmap="viridis")
        for i in range(n):
            for k in range(n):
                if np.isfinite(m[i, k]):
                    ax.text(
                        k,
                        i,
                        f"{m[i, k]:.2f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white" if m[i, k] < 0.6 else "black",
                    )
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
        ax.set_xticklabels(
            [_short(j, 16) for j in judges], rotation=60, ha="right", fontsize=7
        )
        ax.set_yticklabels(
            [_short(j, 16) for j in judges] if col == "agreement" else [], fontsize=7
        )
        ax.set_title(label, fontsize=10)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
    fig.subplots_adjust(wspace=0.25)
    fig.suptitle(title or "Agreement between judges")
    return _save(fig, path)


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
