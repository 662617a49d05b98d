"""Writing the leaderboards of ``voirdire rank``: ``metrics/leaderboard.csv``,
``metrics/rank_flips.csv``, ``figures/ranking_<benchmark>_<judge>.png``, ``ranking.md`` and
``ranking.html``."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from voirdire.analysis.ranking.rank import Ranking
from voirdire.analysis.report.files import (
    file_part,
    write_csv,
    write_html,
    write_text,
)
from voirdire.analysis.report.ranking import (
    ranking_figure,
    ranking_html,
    ranking_markdown,
)

__all__ = ["write_ranking"]


def write_ranking(ranking: Ranking, out: str | os.PathLike) -> dict[str, Path]:
    """Write the ranking's files under ``out`` (created).

    Returns:
        Paths by name: ``leaderboard``, ``rank_flips``, ``markdown``, ``html`` and one
        ``figure:<benchmark>/<judge>`` per judge.
    """
    out = Path(out)
    (out / "metrics").mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    paths = {
        "leaderboard": out / "metrics" / "leaderboard.csv",
        "rank_flips": out / "metrics" / "rank_flips.csv",
    }
    write_csv(ranking.leaderboard, paths["leaderboard"])
    write_csv(ranking.flips, paths["rank_flips"])
    if ranking.style is not None and ranking.length is not None:
        paths["style"], paths["lc_win_rate"] = (
            out / "metrics" / "leaderboard_style.csv",
            out / "metrics" / "lc_win_rate.csv",
        )
        write_csv(ranking.style, paths["style"])
        write_csv(ranking.length, paths["lc_win_rate"])
    lb = ranking.leaderboard
    figs: dict[str, Path] = {}
    for (bench, judge), part in lb.filter(pl.col("judge") != "people").group_by(
        ["benchmark", "judge"], maintain_order=True
    ):
        rows = pl.concat(
            [
                part,
                lb.filter(
                    (pl.col("benchmark") == bench) & (pl.col("judge") == "people")
                ),
            ]
        )
        name = f"{bench}/{judge}"
        figs[name] = ranking_figure(
            rows,
            out / "figures" / f"ranking_{file_part(bench)}_{file_part(judge)}.png",
            title=f"{bench} · {judge}",
        )
    summary = ranking.summary()
    paths["markdown"] = write_text(out / "ranking.md", ranking_markdown(summary, figs))
    page = f"<!doctype html><meta charset='utf-8'><title>Leaderboards</title>{ranking_html(summary, figs)}"
    paths["html"] = write_html(out / "ranking.html", page)
    return paths | {f"figure:{k}": v for k, v in figs.items()}
