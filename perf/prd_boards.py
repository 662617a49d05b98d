"""PRD's leaderboards for :mod:`perf.log_findings` (not a script of its own): each
reviewer's board and the people's from ``voirdire.rank`` on the PRD audit, and PRD's
notebook's win rates (``peer_rank/peer_ranking.ipynb``) recomputed from the audit's
normalised copy, to compare with what the notebook prints."""

from __future__ import annotations

from pathlib import Path

import polars as pl

__all__ = ["notebook_winrates", "prd_boards"]


def prd_boards(ranking) -> tuple[pl.DataFrame, pl.DataFrame]:
    """PRD's leaderboards from a :class:`~voirdire.analysis.ranking.rank.Ranking`:
    ``(places, flips)``. ``places``: per board (each reviewer's pooled board, the people's)
    each model's place by rating (1 = highest) and its rating in parentheses, Arena points.
    ``flips``: per reviewer against the people (``tau_people``, ``flips_people``,
    ``sig_people``: Holm-significant) and between its orders (``tau_order``,
    ``flips_order``, ``sig_order``: significant under the order permutation test,
    Westfall–Young; ``flips_p``, ``tau_p``: the test's p-values)."""
    lb = ranking.leaderboard.filter(
        (pl.col("judge") == "people")
        | ((pl.col("strategy") == "single") & (pl.col("view") == "pooled"))
    ).with_columns(
        place=pl.col("rating").rank("min", descending=True).over("judge").cast(pl.Int64)
    )
    places = lb.with_columns(
        cell=pl.format("{} ({})", "place", pl.col("rating").round(0).cast(pl.Int64))
    ).pivot("model", index="judge", values="cell", sort_columns=True)
    fl = ranking.flips.filter(pl.col("strategy") == "single")
    vs_people = fl.filter(
        (pl.col("view") == "pooled") & (pl.col("judge_b") == "people")
    )
    orders = fl.filter((pl.col("view") == "first") & (pl.col("view_b") == "swapped"))
    flips = vs_people.select(
        "judge", tau_people="kendall_tau", flips_people="flips", sig_people="flips_significant"
    ).join(
        orders.select("judge", tau_order="kendall_tau", flips_order="flips",
                      sig_order="flips_significant", flips_p="flips_p", tau_p="tau_p"),
        on="judge",
    )  # fmt: skip
    return places.sort("judge"), flips.sort("judge")


def notebook_winrates(data_dir: str) -> pl.DataFrame:
    """PRD's notebook's win rates (``peer_ranking.ipynb``, ``compute_winrates``: per battle
    the winner 1, a tie or an unparsed review ½ to each, over the model's battles) per
    reviewer from the audit's normalised copy (each review a battle), and the people's
    (``judge`` ``people``: one battle per question and pair, the gold label, as the
    notebook's ``human_majority``); columns ``judge`` and one per model."""
    from voirdire.benchmarks.logs.reading import INSTANCES, RECORDED

    rec = pl.read_parquet(Path(data_dir) / RECORDED)
    gold = pl.read_parquet(Path(data_dir) / INSTANCES).filter(
        pl.col("gold").is_not_null()
    )
    s_first = pl.when(pl.col("choice") == "A").then(1.0).when(pl.col("choice") == "B").then(0.0).otherwise(0.5)  # fmt: skip
    s_a = pl.when(pl.col("gold") == pl.col("model_a")).then(1.0).when(pl.col("gold") == pl.col("model_b")).then(0.0).otherwise(0.5)  # fmt: skip
    battles = pl.concat([
        rec.select("judge", m1="first", m2="second", s=s_first),
        gold.select(judge=pl.lit("people"), m1="model_a", m2="model_b", s=s_a),
    ])  # fmt: skip
    both = pl.concat([
        battles.select("judge", model="m1", s="s"),
        battles.select("judge", model="m2", s=1 - pl.col("s")),
    ])  # fmt: skip
    return (
        both.group_by("judge", "model").agg(pl.col("s").mean())
        .pivot("model", index="judge", values="s", sort_columns=True).sort("judge")
    )  # fmt: skip
