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

__all__ = ["DPI", "LITERAL", "plt", "judge_colors", "literal_texts"]

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
    literal_texts(fig)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with LITERAL:
        fig.savefig(p, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return p


class _Literal:
    """A context in which matplotlib creates every text without mathtext (tick labels are
    made as the figure is laid out or drawn): ``with LITERAL: fig.savefig(...)``."""

    def __enter__(self):
        self._rc = matplotlib.rc_context({"text.parse_math": False})
        return self._rc.__enter__()

    def __exit__(self, *exc):
        return self._rc.__exit__(*exc)


LITERAL = _Literal()


def literal_texts(fig) -> None:
    """Every text of ``fig`` drawn as written: its tick labels, legend entries, titles and
    annotations without control characters (:func:`voirdire.escape.drawn`) and never
    parsed as mathtext (a judge named ``judge $\\foo$ x`` made ``people`` fail with
    matplotlib's parse error). Texts made later: :data:`LITERAL`."""
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    from voirdire.escape import drawn

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            f = axis.get_major_formatter()  # set_ticks(..., labels): a FuncFormatter
            if isinstance(f, FixedFormatter):
                f.seq = [drawn(t) for t in f.seq]
            elif isinstance(f, FuncFormatter) and not getattr(f, "_drawn", False):
                f.func = lambda x, pos=None, g=f.func: drawn(g(x, pos))
                f._drawn = True
    for text in fig.findobj(Text):
        text.set_parse_math(False)
        shown = text.get_text()
        if drawn(shown) != shown:
            text.set_text(drawn(shown))
