"""The shared machinery of the figures still drawn as PNG by matplotlib (the disagreement
histogram, the mitigation's cost against agreement, the bias, calibration and leaderboard
figures): the Agg backend, judge colours, saving. The report's interactive figures are
:mod:`voirdire.analysis.report.vega`'s.

Colours are by sorted judge name over ``tab10``/``tab20``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["DPI", "plt", "judge_colors"]

DPI = 100


def judge_colors(judges: Sequence[str]) -> dict[str, tuple]:
    """A colour per judge, by sorted name over tab10 (up to 10 judges) or tab20."""
    names = sorted(set(judges))
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
