"""The leaderboard figure draws every board, whatever its intervals hold."""

from __future__ import annotations

import math

import polars as pl

from voirdire.analysis.report.ranking import ranking_figure


def _board(rows: list[tuple[str, float, float, float]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "strategy": ["single"] * len(rows),
            "view": ["pooled"] * len(rows),
            "model": [r[0] for r in rows],
            "rating": [r[1] for r in rows],
            "lo": [r[2] for r in rows],
            "hi": [r[3] for r in rows],
            "win_rate": ([0.5, 0.6, 0.3, 0.8] * 2)[: len(rows)],
        }
    )


def test_an_interval_that_leaves_out_its_point_is_drawn(tmp_path):
    """A bootstrap percentile interval can lie wholly on one side of the point estimate
    (found on the PandaLM example with 12 questions: matplotlib refused the negative
    error bar and `voirdire rank` stopped with "'yerr' must not contain negative values").
    The figure is written; the anchor (NaN ends) and bound ends (±inf) are still drawn."""
    lb = _board(
        [
            ("a", 1000.0, math.nan, math.nan),  # the anchor
            ("b", 1100.0, 1120.0, 1180.0),  # interval above the point
            ("c", 900.0, 820.0, 880.0),  # interval below the point
            ("d", 1300.0, 1250.0, math.inf),  # upper end at the bound
        ]
    )
    path = ranking_figure(lb, tmp_path / "board.png", title="t")
    assert path.exists() and path.stat().st_size > 1000


def test_the_figure_is_the_same_every_run(tmp_path):
    """Models of equal mean rating (a bounded board: several undefeated) get their colour in
    the same order every run: the figure's bytes do not depend on polars' group order."""
    lb = _board(
        [(m, 1000.0 if m != "a" else 900.0, math.inf, math.inf) for m in "abcdefgh"]
    )
    digests = {
        ranking_figure(lb, tmp_path / f"b{i}.png").read_bytes() for i in range(6)
    }
    assert len(digests) == 1
