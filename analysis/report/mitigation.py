"""What the mitigation shows: its table in Markdown (``mitigation.md``,
:func:`mitigation_markdown`; names pass :func:`voirdire.escape.markdown`) and the
strategies' cost (queries per final verdict) against their agreement with a reference
(Cohen's kappa), a PNG drawn with matplotlib (:mod:`voirdire.analysis.report.plotting`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from voirdire.analysis.report.judge_table import gate_words
from voirdire.escape import markdown

__all__ = ["accuracy_label", "mitigation_markdown", "cost_agreement_figure"]


def cost_agreement_figure(
    table: pl.DataFrame, path: str | os.PathLike, title: str = ""
) -> Path:
    """Cost (queries per final verdict, x) against Cohen's kappa with the reference (y,
    95 % interval bars), one panel per benchmark, one colour per strategy (kappa against a
    reference is an agreement figure: no gate line; the 0.6 gate is on the inter-pass
    kappa). PNG at ``path``."""
    from voirdire.analysis.report.plotting import _save, plt  # matplotlib: when drawn

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


def accuracy_label(sources: Sequence[str]) -> str:
    """What the ``accuracy`` column measures, by the reference's ``source``: ``accuracy``
    against gold or human labels; ``agreement with judge X`` where the reference is a
    judge's verdicts (not the truth)."""
    judges = [s.split(" ", 2)[1] for s in sources if s.startswith("judge ")]
    if sources and len(judges) == len(sources):
        return "agreement with judge " + ", ".join(sorted(set(judges)))
    return "accuracy"


def mitigation_markdown(table: pl.DataFrame, notes: Sequence[str] = ()) -> str:
    """The evaluation table as GitHub markdown: per benchmark, strategy and judge the cost
    (queries per verdict), share undecided, PC, PF, flip rate, accuracy and kappa against
    the reference (agreement, no gate), and the inter-pass kappa with its κ ≥ 0.6 gate
    (strategies with per-order verdicts), with their 95 % intervals; then ``notes``, a
    paragraph each, escaped (e.g. :func:`~voirdire.analysis.mitigation.orders.one_order_lines`)."""

    def ci(r, m, f):
        e, lo, hi = r[m], r[f"{m}_lo"], r[f"{m}_hi"]
        if e is None or (isinstance(e, float) and np.isnan(e)):
            return "–"
        if lo is None or np.isnan(lo) or lo == hi:
            return f.format(e)
        return f"{f.format(e)} [{f.format(lo)}, {f.format(hi)}]"

    src = (
        table.get_column("reference_source").drop_nulls().unique().to_list()
        if table.height
        else []
    )
    head = (f"| benchmark | strategy | judge | cost | undecided | PC | PF | flip | {markdown(accuracy_label(src))} | κ vs reference "
            f"| κ passes | {gate_words('κ passes ≥ ')} |")  # fmt: skip
    lines = [head, "|" + "---|" * 12]
    for r in table.iter_rows(named=True):
        lines.append(
            f"| {markdown(r['benchmark'])} | {markdown(r['strategy'])} | {markdown(r['judge'])} | {r['cost']:.2f} | {r['undecided']:.1%} | "
            f"{ci(r, 'pc', '{:.3f}')} | {ci(r, 'pf', '{:+.3f}')} | {ci(r, 'flip', '{:.3f}')} | "
            f"{ci(r, 'accuracy', '{:.3f}')} | {ci(r, 'kappa', '{:.3f}')} | {ci(r, 'pass_kappa', '{:.3f}')} | "
            f"{markdown(r['pass_kappa_gate'] or '–')} |"
        )
    lines.append("")
    lines.append(
        "κ vs reference: Cohen's kappa of the final verdicts against the reference (agreement, no gate). "
        "κ passes: Cohen's kappa between the original and the swapped order's verdicts, pair by pair, "
        f"gate {gate_words()} (practitioners' health metric; – for strategies that combine both orders)."
    )
    if src:
        lines.append("")
        lines.append(f"Reference: {'; '.join(map(markdown, src))}.")
    for note in notes:
        lines += ["", markdown(note)]
    return "\n".join(lines) + "\n"
