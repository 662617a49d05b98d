"""Ranks and intervals of the leaderboards (analysis/ranking/ranks.py, boards.py): anchor
invariance, rank inside its interval, NaN for a model absent from a replicate, the bound of θ
flagged, and the memory guard (docs/ranking.md)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import polars as pl
import pytest

from tests.ranking_sim import round_robin
from voirdire.analysis.position.uncertainty import cluster_bootstrap
from voirdire.analysis.ranking.boards import fit_boards
from voirdire.analysis.ranking.bt import CLIP, SCALE
from voirdire.core import ConfigError

RANK_COLS = ["model", "rank", "rank_lo", "rank_hi"]


def _close_models(seed: int = 3) -> pl.DataFrame:
    """12 models close together (many overlapping intervals), 15 questions, both orders."""
    return round_robin(
        np.linspace(-0.6, 0.6, 12), 15, np.random.default_rng(seed), orders=2
    )


def test_ranks_do_not_depend_on_the_anchor():
    comps = _close_models()
    a = fit_boards(comps, anchor="m00", replicates=200).table
    b = fit_boards(comps, anchor="m07", replicates=200).table
    assert a.select(RANK_COLS).sort("model").equals(b.select(RANK_COLS).sort("model"))
    # the ratings themselves move with the anchor by one constant, as they should
    d = a.sort("model").get_column("rating") - b.sort("model").get_column("rating")
    assert np.ptp(d.to_numpy()) < 1e-6


def test_rank_lies_in_its_interval_and_follows_the_pairwise_differences():
    comps = pl.concat(
        [_close_models(s).with_columns(strategy=pl.lit(f"s{s}")) for s in range(4)]
    )
    boards = fit_boards(comps, anchor="m00", replicates=150)
    lb = boards.table
    bad = lb.filter(
        (pl.col("rank") < pl.col("rank_lo")) | (pl.col("rank") > pl.col("rank_hi"))
    )
    assert bad.height == 0, bad
    for (_, _, s, v), (models, boot, _) in boards.theta.items():
        d = boot[:, None, :] - boot[:, :, None]  # θ_j − θ_i, no model absent here
        lo, hi = np.quantile(d, [0.025, 0.975], axis=0)
        rank = 1 + (lo > 1e-9).sum(axis=1)
        rank_hi = len(models) - (hi < -1e-9).sum(axis=1)
        got = lb.filter((pl.col("strategy") == s) & (pl.col("view") == v))
        got = got.sort(pl.col("model").replace_strict(models, list(range(len(models)))))
        assert got.get_column("rank").to_list() == rank.tolist()
        assert got.get_column("rank_hi").to_list() == rank_hi.tolist()
    # the anchor has no interval (its rating is fixed), the others do
    anchor = lb.filter(pl.col("model") == "m00")
    assert (
        anchor.get_column("lo").is_nan().all()
        and anchor.get_column("hi").is_nan().all()
    )
    others = lb.filter(pl.col("model") != "m00")
    assert (others.get_column("hi") > others.get_column("lo")).all()


def test_a_model_absent_from_a_replicate_is_nan_there():
    comps = round_robin(np.linspace(-1, 1, 5), 12, np.random.default_rng(1))
    rare = ["q000", "q001"]  # m04 is compared on these two questions only
    comps = comps.filter(
        ~((pl.col("a") == "m04") | (pl.col("b") == "m04"))
        | pl.col("question_id").is_in(rare)
    )
    r = 300
    boards = fit_boards(comps, anchor="m00", replicates=r, seed=11)
    models, boot, est = boards.theta[("sim", "sim", "single", "pooled")]
    # the engine's draws: one generator seeded 11, questions sorted, one stratum
    nq = 12
    draws = np.random.default_rng(11).multinomial(nq, np.full(nq, 1 / nq), size=r)
    absent = draws[:, :2].sum(axis=1) == 0
    assert 0 < absent.sum() < r
    k = models.index("m04")
    np.testing.assert_array_equal(np.isnan(boot[:, k]), absent)
    assert not np.isnan(np.delete(boot, k, axis=1)).any() and np.isfinite(est).all()
    row = boards.table.filter(pl.col("model") == "m04")
    ok = 1000 + SCALE * boot[~absent, k]
    lo, hi = np.quantile(ok, [0.025, 0.975])
    assert row.item(0, "lo") == pytest.approx(lo) and row.item(
        0, "hi"
    ) == pytest.approx(hi)


def test_a_rating_at_the_bound_is_flagged_not_exact():
    comps = round_robin(np.array([0.0, 0.3, 0.6, 0.2]), 8, np.random.default_rng(5))
    undefeated = (
        pl.when(pl.col("a") == "m00").then(1.0).when(pl.col("b") == "m00").then(0.0)
    )
    comps = comps.with_columns(win=undefeated.otherwise(pl.col("win")))
    lb = fit_boards(comps, anchor="m01", replicates=60).table
    top = lb.filter(pl.col("model") == "m00")
    assert top.item(0, "bounded") and top.item(0, "hi") == np.inf
    # undefeated in every replicate: no finite end at all, nothing that reads as exact
    assert top.item(0, "lo") == np.inf
    assert top.item(0, "rank") == 1
    rest = lb.filter(pl.col("model") != "m00")
    assert not rest.get_column("bounded").any()
    assert np.isfinite(
        rest.filter(pl.col("model") != "m01").get_column("hi").to_numpy()
    ).all()
    assert CLIP == 25.0


def test_too_many_models_for_the_replicates_is_refused_before_allocating():
    k = 400  # a star: 400 candidates against one reference on one question
    comps = pl.DataFrame({
        "benchmark": "sim", "judge": "big", "strategy": "single", "view": "pooled", "question_id": "q0",
        "a": [f"c{i:03d}" for i in range(k)], "b": "ref", "win": 1.0, "tie": 0.0,
    })  # fmt: skip
    limit = 256 * 2**20  # the stated limit on one replicates × models² float64 array
    reps = limit // (8 * (k + 1) ** 2) + 1
    tracemalloc.start()
    with pytest.raises(ConfigError) as e:
        fit_boards(comps, replicates=reps)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    msg = str(e.value)
    assert "\n" not in msg and "401 models" in msg and "limit 256 MiB" in msg
    assert f"at most {reps - 1} replicates" in msg
    assert peak < 50 * 2**20, peak


def test_chunked_bootstrap_equals_the_one_call():
    rng = np.random.default_rng(2)
    rows = pl.DataFrame({
        "benchmark": "b", "question_id": [f"q{i % 9}" for i in range(40)], "cell": rng.integers(0, 4, 40),
        "x": rng.random(40), "y": rng.random(40),
    })  # fmt: skip

    def stat(s):
        return {"ratio": s["x"] / (s["x"] + s["y"]), "total": s["x"].sum(axis=1)}

    one = cluster_bootstrap(rows, ["x", "y"], stat, cells=["cell"], replicates=50)
    parts = cluster_bootstrap(
        rows, ["x", "y"], stat, cells=["cell"], replicates=50, chunk=7
    )
    assert one.equals(parts)
