"""The shared machinery of the report's figures: the Agg backend, judge colours, saving.

Colours are fixed per judge (sorted names over ``tab10``/``tab20``, or the whole report's
judges after :func:`set_judges`) so a judge looks the same in every figure. Every name here
is importable from :mod:`voirdire.analysis.report.figures` too.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["DPI", "plt", "set_judges", "judge_colors"]

DPI = 100


_PALETTE: dict[str, tuple] = {}


def set_judges(judges: Sequence[str]) -> None:
    """Fix the colours of a whole report: every later figure colours these judges alike,
    whichever subset it shows."""
    _PALETTE.clear()
    _PALETTE.update(judge_colors(judges, fixed=False))


def judge_colors(judges: Sequence[str], fixed: bool = True) -> dict[str, tuple]:
    """A colour per judge: from :func:`set_judges` when it covers them all, else by sorted
    name over tab10 (up to 10 judges) or tab20."""
    names = sorted(set(judges))
    if fixed and _PALETTE and all(n in _PALETTE for n in names):
        return {n: _PALETTE[n] for n in names}
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    return {j: cmap(i % cmap.N) for i, j in enumerate(names)}


def _short(label: str, n: int = 22) -> str:
    """``label`` cut to ``n`` characters, an ellipsis last when cut."""
    return label if len(label) <= n else label[: n - 1] + "…"


def _save(fig, path: str | os.PathLike) -> Path:
    """Save ``fig`` as PNG at ``path`` (folder created) and close it. Every text in it is
    drawn literally: a label holding ``$`` (a judge named ``judge $\\foo$ x``) is not
    parsed as matplotlib mathtext, which would fail or render something else."""
    for text in fig.findobj(matplotlib.text.Text):
        text.set_parse_math(False)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return p


def _frame(
    ax, xlim: tuple[float, float], xlabel: str, ylabel: str, title: str, legend: str
) -> None:
    """A scatter of judges on [.., ..] × [0, 1.02]: limits, labels, title, legend, grid."""
    ax.set_xlim(*xlim)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, frameon=False, loc=legend)
    ax.grid(alpha=0.3)
