"""Rank flips between the two orders: the order-swap permutation test (family-wise size by
simulation, power against a known position bias, the null by exact enumeration) and the
flip table's columns (docs/ranking.md). Larger simulations: perf/bench_flip_test.py."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.ranking_sim import order_judgments, round_robin
from voirdire.analysis.ranking.boards import fit_boards
from voirdire.analysis.ranking.bt import fit_bt
from voirdire.analysis.ranking.flips import FLIP_COLUMNS, compare
from voirdire.analysis.ranking.order_test import order_test, order_units
from voirdire.analysis.ranking.order_views import order_views
from voirdire.analysis.ranking.rank import rank_judgments

THETA = np.linspace(-1.0, 1.0, 8)


def _order_rows(bias: float, tables: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    j = pl.concat(
        [
            order_judgments(THETA, 20, rng, bias=bias, judge=f"j{n:03d}")
            for n in range(tables)
        ]
    )
    r = rank_judgments(j, strategies=[], replicates=100, seed=seed)
    return r.flips.filter((pl.col("view") == "first") & (pl.col("view_b") == "swapped"))


@pytest.mark.slow
def test_an_order_blind_judge_gets_a_significant_flip_in_few_tables():
    """60 tables of an order-blind judge (8 models, round robin, 20 questions, both orders):
    with the family-wise error held at 5 %, tables with any 'significant' flip are
    Binomial(60, ≤ 0.05); 7 or more has probability ≤ 0.03. The overall tests (flip count,
    τ) reject at 5 % as rarely."""
    f = _order_rows(0.0, 60, seed=11)
    assert f.height == 60
    assert (f.get_column("flips_significant") > 0).sum() <= 6, f
    assert (f.get_column("flips").sum()) > 30  # flips there are: noise, not order
    assert (f.get_column("flips_p") <= 0.05).sum() <= 6
    assert (f.get_column("tau_p") <= 0.05).sum() <= 6
    # the flips an order-blind judge gives on the same verdicts: about as many as observed
    assert abs(f.get_column("flips_null").mean() - f.get_column("flips").mean()) < 0.5


def test_a_position_biased_judge_is_found():
    """The first-shown answer wins more (logit +1.2): the first-order board favours the
    low-numbered models (always the candidate), the swapped board the others."""
    f = _order_rows(1.2, 3, seed=5)
    assert (f.get_column("flips_p") <= 0.01).all()
    assert (f.get_column("tau_p") <= 0.01).all()
    assert (f.get_column("flips_significant") >= 1).all()
    assert (f.get_column("flips") > f.get_column("flips_null")).all()
    assert (f.get_column("test") == "order-permutation").all()


def _exact(units: pl.DataFrame) -> tuple[float, float, np.ndarray]:
    """The order-blind test by enumerating every swap of the discordant units (independent
    code: counts rebuilt per configuration, fit_bt, flips, max-T over the pairs with the
    reference, the model never shown as the candidate)."""
    wide = units.pivot(on="view", index=["question_id", "a", "b"], values="win")
    models = sorted(set(wide.get_column("a")) | set(wide.get_column("b")))
    ix = {m: n for n, m in enumerate(models)}
    a = [ix[m] for m in wide.get_column("a")]
    b = [ix[m] for m in wide.get_column("b")]
    v0, v1 = wide.get_column("first").to_list(), wide.get_column("swapped").to_list()
    disc = [u for u in range(len(a)) if v0[u] != v1[u]]
    i, j = np.triu_indices(len(models), 1)
    res = []
    for swap in itertools.product([0, 1], repeat=len(disc)):
        s = dict(zip(disc, swap))
        boards = np.zeros((2, len(models), len(models)))
        for u in range(len(a)):
            f, g = (v1[u], v0[u]) if s.get(u) else (v0[u], v1[u])
            for board, win in ((0, f), (1, g)):
                boards[board, a[u], b[u]] += win
                boards[board, b[u], a[u]] += 1 - win
        th = fit_bt(boards, anchor=0)
        d0, d1 = th[0, i] - th[0, j], th[1, i] - th[1, j]
        res.append((int((d0 * d1 < -1e-18).sum()), d0 - d1))
    flips = np.array([r[0] for r in res])
    ref = np.array([models[x] not in set(wide.get_column("a")) or models[y] not in set(wide.get_column("a"))
                    for x, y in zip(i, j)])  # fmt: skip
    c = np.array([r[1] for r in res])[:, ref]
    obs = res[0][0], res[0][1][ref]  # the all-zero swap is the observed data
    rms = np.sqrt((c**2).mean(0))
    z = np.abs(c) / np.where(rms > 0, rms, np.inf)
    p_adj = (z.max(1)[:, None] >= z[0][None, :] - 1e-12).mean(0)
    return flips.mean(), float((flips >= obs[0]).mean()), p_adj, ref


def test_the_permutation_null_equals_exact_enumeration():
    rng = np.random.default_rng(3)
    j = order_judgments(np.array([0.0, 0.4, 0.8]), 4, rng, bias=0.8)
    units = order_units(order_views(j, []))
    disc = units.pivot(on="view", index=["question_id", "a", "b"], values="win")
    u = int((disc.get_column("first") != disc.get_column("swapped")).sum())
    assert 8 <= u <= 12
    null, p, p_adj, ref = _exact(units)
    t = order_test(units, permutations=2**u)  # every swap: exact
    assert t.exact and t.permutations == 2**u
    assert abs(t.flips_null - null) < 1e-9 and abs(t.flips_p - p) < 1e-9
    assert t.between_candidates.tolist() == (~ref).tolist() and ref.sum() == 2
    # two families (with the reference, between candidates): Bonferroni's factor 2
    assert np.abs(t.p_adjusted[ref] - np.minimum(1, 2 * p_adj)).max() < 1e-9
    mc = order_test(units, permutations=2**u - 1, seed=1)  # random swaps: close
    assert not mc.exact
    assert abs(mc.flips_null - null) < 0.1 and abs(mc.flips_p - p) < 0.05
    shuffled = order_test(
        units.sample(fraction=1.0, shuffle=True, seed=2), permutations=200, seed=1
    )
    again = order_test(units, permutations=200, seed=1)
    assert np.array_equal(
        shuffled.p_adjusted, again.p_adjusted
    )  # the draws of both nulls follow the units


def test_every_flip_column_is_documented():
    doc = (Path(__file__).parents[1] / "docs" / "ranking.md").read_text()
    assert [c for c in FLIP_COLUMNS if f"`{c}`" not in doc] == []


def test_a_pair_without_a_finite_difference_is_not_wald_tested():
    """Board b leaves m00 winless (infinitely below everyone it met): its flips with the
    others are real but have no finite maximum likelihood, so the bootstrap Wald test (whose
    replicates there are all infinite) does not call them significant; the finite pairs keep
    their test."""
    rng = np.random.default_rng(4)
    a = round_robin(np.array([0.8, 0.0, 0.2, 0.4]), 30, rng, orders=2, strategy="raw")
    b = a.with_columns(
        strategy=pl.lit("gated"),
        win=pl.when(pl.col("a") == "m00").then(0.0).otherwise(pl.col("win")),
    )
    boards = fit_boards(pl.concat([a, b]), anchor="m01", replicates=100)
    row = compare(
        boards, ("sim", "sim", "raw", "pooled"), ("sim", "sim", "gated", "pooled")
    )
    assert row["flips"] >= 2 and row["test"] == "bootstrap-holm"
    assert row["flips_significant"] == 0
    gated = boards.table.filter(
        (pl.col("strategy") == "gated") & (pl.col("model") == "m00")
    )
    assert gated.item(0, "rating") == -np.inf and gated.item(0, "bounded")
