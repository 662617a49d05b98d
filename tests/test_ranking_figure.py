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


def _wide_board(models: int) -> pl.DataFrame:
    """``models`` models on two boards (single · first, single · swapped)."""
    names = [f"model-{i:03d}" for i in range(models)]
    rating = [1000.0 + 3 * i for i in range(models)]
    return pl.DataFrame(
        {
            "strategy": ["single"] * (2 * models),
            "view": ["first"] * models + ["swapped"] * models,
            "model": names * 2,
            "rating": rating + [r - 40 for r in rating],
            "lo": [r - 10 for r in rating] + [r - 55 for r in rating],
            "hi": [r + 10 for r in rating] + [r - 25 for r in rating],
            "win_rate": [0.5] * (2 * models),
        }
    )


def test_a_200_model_board_names_at_most_12_models(tmp_path, monkeypatch):
    """A board of 200 models: its legend names the 12 highest by mean rating (the report's
    bound, MAX_LEGEND) and its title says of how many; every model is still drawn (one
    point per model and board)."""
    import matplotlib.pyplot as plt

    from voirdire.analysis.report.vega import MAX_LEGEND

    figs = []
    monkeypatch.setattr(plt, "close", figs.append)  # keep the figure to read it back
    path = ranking_figure(_wide_board(200), tmp_path / "wide.png", title="t")
    assert path.stat().st_size > 1000
    (ax,) = figs[0].axes
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert len(labels) == MAX_LEGEND == 12
    assert labels == [f"model-{i:03d}" for i in range(199, 187, -1)]
    assert legend.get_title().get_text() == "the 12 highest of 200 models"
    # a point per model and board (400), a cap at each end of its bar (800)
    drawn = sorted(len(c.get_offsets()) for c in ax.collections if c.get_offsets().size)
    assert drawn[-2:] == [400, 800]


def test_a_small_board_names_every_model(tmp_path, monkeypatch):
    """Up to 12 models the legend names each, with no title."""
    import matplotlib.pyplot as plt

    figs = []
    monkeypatch.setattr(plt, "close", figs.append)
    ranking_figure(_wide_board(5), tmp_path / "small.png")
    legend = figs[0].axes[0].get_legend()
    assert len(legend.get_texts()) == 5 and legend.get_title().get_text() == ""


def test_a_two_line_tick_label_keeps_its_line_break():
    """The figures draw names literally with control characters removed, but a line feed
    is a line break, not a glyph: rank's column labels ``"strategy\\nview"`` stay two lines
    (they read "singlepooled"), while an escape byte in a name is still dropped."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from voirdire.analysis.report.plotting import LITERAL, literal_texts

    fig, ax = plt.subplots()
    ax.set_xticks([0, 1], ["single\npooled", "gpt\x1b[31m-4"])
    literal_texts(fig)
    with LITERAL:
        fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "single\npooled",
        "gpt[31m-4",
    ]
    plt.close(fig)
