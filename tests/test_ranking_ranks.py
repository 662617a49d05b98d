"""Ranks and intervals of the leaderboards (analysis/ranking/ranks.py, boards.py): anchor
invariance, rank inside its interval, NaN for a model absent from a replicate, the bound of θ
flagged, and the memory guard (docs/ranking.md)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import polars as pl
import pytest

from tests.ranking_sim import round_robin
from voirdire.analysis.ranking.boards import fit_boards
from voirdire.analysis.ranking.bt import CLIP, SCALE
from voirdire.analysis.stats.bootstrap import cluster_bootstrap
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
    for (_, _, s, v), board in boards.fitted.items():
        models, boot = board.models, board.replicates.relative(board.anchor)
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
    board = boards.fitted[("sim", "sim", "single", "pooled")]
    models, boot = board.models, board.replicates.relative(board.anchor)
    est = board.estimate.relative(board.anchor)[0]
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
    limit = 320 * 2**20  # the stated limit on one replicates × models² float64 array
    reps = limit // (8 * (k + 1) ** 2) + 1
    tracemalloc.start()
    with pytest.raises(ConfigError) as e:
        fit_boards(comps, replicates=reps)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    msg = str(e.value)
    assert "\n" not in msg and "401 models" in msg and "limit 320 MiB" in msg
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


def _sparse(seed: int = 4) -> pl.DataFrame:
    """A ring of 7 models, each neighbouring pair on its own 3 questions (a replicate that
    leaves out a pair's questions cuts the ring; two cuts split it), and m07, which beats
    m02 and m05 on every one of its questions: no finite rating."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(-0.8, 0.8, 7)
    rows = []
    pairs = [(i, (i + 1) % 7) for i in range(7)] + [(7, 2), (7, 5)]
    for n, (i, j) in enumerate(pairs):
        for q in range(3):
            for _ in range(2):  # both orders, as a pooled board holds them
                win = (
                    1.0
                    if i == 7
                    else float(rng.random() < 1 / (1 + np.exp(theta[j] - theta[i])))
                )
                rows.append(
                    (
                        "sim",
                        "sim",
                        "single",
                        "pooled",
                        f"q{n}-{q}",
                        f"m{i:02d}",
                        f"m{j:02d}",
                        win,
                        0.0,
                    )
                )
    cols = [
        "benchmark",
        "judge",
        "strategy",
        "view",
        "question_id",
        "a",
        "b",
        "win",
        "tie",
    ]
    return pl.DataFrame(rows, schema=cols, orient="row")


def _ranks_under_every_anchor(
    comps: pl.DataFrame, replicates: int = 200
) -> list[pl.DataFrame]:
    models = sorted(set(comps.get_column("a")) | set(comps.get_column("b")))
    return [
        fit_boards(comps, anchor=m, replicates=replicates, seed=7)
        .table.select(RANK_COLS)
        .sort("model")
        for m in models
    ]


def test_rank_intervals_do_not_depend_on_the_anchor_on_a_sparse_design():
    """Replicates of a sparse design cut the comparison graph and leave an undefeated model:
    the ranks come from differences fitted without an anchor, so every anchor gives the same
    rank intervals (at a39b5b0 the ±25 bound around the anchor and the models not linked to
    it moved them)."""
    comps = _sparse()
    tables = _ranks_under_every_anchor(comps)
    assert all(t.equals(tables[0]) for t in tables[1:]), tables
    lb = fit_boards(comps, anchor="m00", replicates=200, seed=7).table
    top = lb.filter(
        pl.col("model") == "m07"
    )  # wins every comparison: infinitely above m02, m05
    assert (
        top.item(0, "bounded")
        and top.item(0, "rating") == np.inf
        and top.item(0, "win_rate") == 1.0
    )
    assert top.item(0, "rank") == 1  # nobody is above it; its place below is left open
    assert lb.filter(pl.col("model") != "m07").get_column("rating").is_finite().all()


def test_rank_intervals_do_not_depend_on_the_anchor_on_a_disconnected_design():
    """Two tournaments that never meet: each is rated against the anchor when it holds it,
    the other has no rating (NaN), and the ranks, from the pairs each replicate can order,
    are the same whatever the anchor."""
    rng = np.random.default_rng(8)
    one = round_robin(np.array([-0.5, 0.0, 0.5]), 6, rng, orders=2)
    two = round_robin(np.array([-0.3, 0.3, 0.9]), 6, rng, orders=2).with_columns(
        a=pl.col("a").str.replace("m", "n"), b=pl.col("b").str.replace("m", "n"),
        question_id=pl.col("question_id") + "b",
    )  # fmt: skip
    undefeated = pl.when(pl.col("a") == "n02").then(1.0).otherwise(pl.col("win"))
    comps = pl.concat([one, two.with_columns(win=undefeated)])
    tables = _ranks_under_every_anchor(comps)
    assert all(t.equals(tables[0]) for t in tables[1:]), tables
    lb = fit_boards(comps, anchor="m00", replicates=200, seed=7).table
    other = lb.filter(pl.col("model").str.starts_with("n"))
    assert (
        other.get_column("rating").is_nan().all() and other.get_column("bounded").all()
    )
    # no pair across the tournaments is ever ordered: each model's interval spans the other's places
    assert (lb.get_column("rank_hi") - lb.get_column("rank") >= 3).all()


# --------------------------------------------------------------------------------------
# Style-controlled boards (analysis/ranking/style.py): the same anchor-free ranks
# --------------------------------------------------------------------------------------

STYLE_COLS = ["term", "rank", "rank_lo", "rank_hi"]


def _features(
    comps: pl.DataFrame, seed: int = 0, constant: bool = False
) -> pl.DataFrame:
    """Answer lengths per (question, model): drawn at random, or all equal (``constant``:
    the covariate is then a column of 0 and the model plain Bradley–Terry)."""
    keys = pl.concat([comps.select("benchmark", "question_id", model="a"),
                      comps.select("benchmark", "question_id", model="b")]).unique().sort(pl.all())  # fmt: skip
    rng = np.random.default_rng(seed)
    length = (
        np.full(keys.height, 500.0) if constant else rng.lognormal(6, 0.6, keys.height)
    )
    return keys.with_columns(length=pl.Series(length))


def _style_ranks(comps: pl.DataFrame, feats: pl.DataFrame, anchor: str) -> pl.DataFrame:
    from voirdire.analysis.ranking.style import style_controlled

    sc = style_controlled(
        comps, feats, names=("length",), anchor=anchor, replicates=150, seed=7
    )
    return (
        sc.filter(~pl.col("term").str.starts_with("style:"))
        .select(STYLE_COLS)
        .sort("term")
    )


def _style_under_every_anchor(
    comps: pl.DataFrame, feats: pl.DataFrame
) -> list[pl.DataFrame]:
    models = sorted(set(comps.get_column("a")) | set(comps.get_column("b")))
    return [_style_ranks(comps, feats, m) for m in models]


def test_style_controlled_ranks_do_not_depend_on_the_anchor():
    """``rank --style``'s ranks come from the pairwise differences of fits free of any
    anchor, as the leaderboards' (at 8e88b73 they came from rating intervals with the anchor
    fixed, so its zero-width interval moved them), and its ratings move by one constant."""
    from voirdire.analysis.ranking.style import style_controlled

    comps = _close_models()
    feats = _features(comps)
    tables = _style_under_every_anchor(comps, feats)
    assert all(t.equals(tables[0]) for t in tables[1:]), tables
    a = style_controlled(
        comps, feats, names=("length",), anchor="m00", replicates=150, seed=7
    )
    b = style_controlled(
        comps, feats, names=("length",), anchor="m07", replicates=150, seed=7
    )
    ma, mb = (
        t.filter(pl.col("term").str.starts_with("m")).sort("term") for t in (a, b)
    )
    assert np.ptp((ma.get_column("rating") - mb.get_column("rating")).to_numpy()) < 1e-6
    ga, gb = (t.filter(pl.col("term") == "style:length") for t in (a, b))
    assert ga.select("rating", "lo", "hi").row(0) == pytest.approx(
        gb.select("rating", "lo", "hi").row(0)
    )
    assert ma.filter(pl.col("term") == "m00").select(
        pl.col("lo", "hi").is_nan().all()
    ).row(0) == (True, True)


def test_style_controlled_without_style_is_the_leaderboard():
    """With a feature that never varies the style model is Bradley–Terry: the same draws of
    questions give the leaderboard's ratings, intervals and rank intervals."""
    comps = _sparse()
    lb = fit_boards(comps, anchor="m03", replicates=150, seed=7).table.sort("model")
    from voirdire.analysis.ranking.style import style_controlled

    sc = style_controlled(comps, _features(comps, constant=True), names=("length",), anchor="m03",
                          replicates=150, seed=7).filter(pl.col("term").str.starts_with("m")).sort("term")  # fmt: skip
    assert sc.get_column("term").to_list() == lb.get_column("model").to_list()
    for c in ("rank", "rank_lo", "rank_hi"):
        assert sc.get_column(c).to_list() == lb.get_column(c).to_list(), c
    for c in ("rating", "lo", "hi"):
        np.testing.assert_allclose(
            sc.get_column(c).to_numpy(), lb.get_column(c).to_numpy(), atol=1e-4
        )


def test_style_controlled_ranks_on_sparse_and_disconnected_designs():
    """A ring cut by the replicates with an undefeated model, and two tournaments that never
    meet (refused at 8e88b73): every anchor gives the same rank intervals; the undefeated
    model is infinitely above, the other tournament has no rating."""
    from voirdire.analysis.ranking.style import style_controlled

    comps = _sparse()
    feats = _features(comps, seed=1)
    tables = _style_under_every_anchor(comps, feats)
    assert all(t.equals(tables[0]) for t in tables[1:]), tables
    top = style_controlled(comps, feats, names=("length",), anchor="m00", replicates=150).filter(
        pl.col("term") == "m07"
    )  # fmt: skip
    assert top.item(0, "rating") == np.inf and top.item(0, "rank") == 1
    rng = np.random.default_rng(8)
    one = round_robin(np.array([-0.5, 0.0, 0.5]), 6, rng, orders=2)
    two = round_robin(np.array([-0.3, 0.3, 0.9]), 6, rng, orders=2).with_columns(
        a=pl.col("a").str.replace("m", "n"), b=pl.col("b").str.replace("m", "n"),
        question_id=pl.col("question_id") + "b",
    )  # fmt: skip
    comps = pl.concat([one, two])
    feats = _features(comps, seed=2)
    tables = _style_under_every_anchor(comps, feats)
    assert all(t.equals(tables[0]) for t in tables[1:]), tables
    sc = style_controlled(comps, feats, names=("length",), anchor="m00", replicates=150)
    other = sc.filter(pl.col("term").str.starts_with("n"))
    assert other.get_column("rating").is_nan().all()
    assert (tables[0].get_column("rank_hi") - tables[0].get_column("rank") >= 3).all()


def test_ranks_by_counting_equal_the_percentiles_at_the_tolerance():
    """pairwise_ranks counts replicates beyond ±tolerance instead of taking every pair's
    percentile; pairs whose count sits between the two order statistics (values placed at
    the tolerance itself, ±inf, a few replicates) must give what the percentiles give."""
    from voirdire.analysis.ranking.ranks import _TOL, _beyond, percentiles

    rng = np.random.default_rng(7)
    for r in (1, 2, 5, 40, 1000):
        d = rng.normal(size=(r, 3, 6)) * rng.choice([1e-9, 1.0], size=(1, 3, 6))
        for value, share in (
            (_TOL, 0.1),
            (-_TOL, 0.05),
            (np.inf, 0.05),
            (-np.inf, 0.05),
        ):
            d[rng.random(d.shape) < share] = value
        for q in (0.025, 0.975, 0.5):
            p = percentiles(d, (q,))[0]
            assert np.array_equal(_beyond(d, q, _TOL, True), p > _TOL)
            assert np.array_equal(_beyond(d, q, -_TOL, False), p < -_TOL)


def test_boards_drawing_clusters_equal_the_questions_renamed_to_their_clusters():
    """With clusters the bootstrap draws clusters: the same as naming each question after its
    cluster (clusters whose names sort against their questions' order, ties, a prior, and
    questions no cluster lists, which stay their own)."""
    rng = np.random.default_rng(5)
    comps = pl.concat(
        [
            round_robin(np.linspace(-1, 1, 6), 30, rng, orders=2, board=v)
            for v in ("first", "pooled")
        ]
    ).with_columns(tie=(pl.int_range(pl.len()) % 7 == 0).cast(pl.Float64))
    comps = comps.with_columns(win=pl.col("win") * (1 - pl.col("tie")))
    clusters = pl.DataFrame({
        "benchmark": "sim", "question_id": [f"q{x:03d}" for x in range(24)],
        "cluster": [f"c{(23 - x) // 3}" for x in range(24)],
    })  # fmt: skip
    renamed = comps.join(
        clusters, on=["benchmark", "question_id"], how="left", maintain_order="left"
    ).with_columns(question_id=pl.coalesce("cluster", "question_id"))
    common = dict(replicates=50, prior=0.5)
    drawn = fit_boards(comps, clusters=clusters, **common).table
    assert drawn.equals(fit_boards(renamed.drop("cluster"), **common).table)
    assert not drawn.equals(fit_boards(comps, **common).table)
