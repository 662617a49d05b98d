"""The leaderboards' fast fitting paths (issue 42): each equals the slow path it replaces."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from voirdire.analysis.ranking import bt
from voirdire.analysis.ranking.bt import fit_bt
from voirdire.analysis.ranking.strengths import forest_levels


def _star(rng, r: int, k: int, extra: tuple[int, int] | None = None) -> np.ndarray:
    """(r, k, k) wins: every model against model 0 (plus an ``extra`` edge)."""
    w = np.zeros((r, k, k))
    edges = [(m, 0) for m in range(1, k)] + ([extra] if extra else [])
    for i, j in edges:
        w[:, i, j] = rng.integers(1, 30, r)
        w[:, j, i] = rng.integers(1, 30, r)
    return w


def _newton(w, t):
    """fit_bt with the closed form switched off (Newton's path)."""
    saved = bt._forest_bt
    bt._forest_bt = lambda w, n: None
    try:
        return fit_bt(w, t)
    finally:
        bt._forest_bt = saved


def _scipy(w: np.ndarray, t: np.ndarray) -> np.ndarray:
    """One table's BT maximum by L-BFGS (θ summing to 0), the reference fit."""
    ww = w + 0.5 * t
    k = w.shape[0]

    def nll(x):
        d = x[:, None] - x[None, :]
        p = 1 / (1 + np.exp(-d))
        g = (ww - (ww + ww.T) * p).sum(1)
        return -(ww * np.log(p)).sum(), -g

    x = minimize(nll, np.zeros(k), jac=True, method="L-BFGS-B", tol=1e-14).x
    return x - x.mean()


def test_forest_levels_root_each_tree_at_its_lowest_model_and_refuse_a_cycle():
    met = np.zeros((6, 6), dtype=bool)
    for i, j in [(0, 2), (2, 4), (1, 3)]:  # two trees and a lone model (5)
        met[i, j] = met[j, i] = True
    levels = forest_levels(met)
    assert [(c.tolist(), p.tolist()) for c, p in levels] == [
        ([2, 3], [0, 1]),
        ([4], [2]),
    ]
    met[0, 4] = met[4, 0] = True  # 0-2-4-0: a cycle
    assert forest_levels(met) is None
    assert forest_levels(np.zeros((3, 3), dtype=bool)) == []


@pytest.mark.parametrize("seed", range(5))
def test_closed_form_star_equals_newton_and_a_per_replicate_scipy_fit(seed):
    rng = np.random.default_rng(seed)
    w = _star(rng, 6, 7)
    t = np.zeros_like(w)
    t[:, 0, 3] = t[:, 3, 0] = rng.integers(0, 5, 6)
    w[2, 4, 0] = w[2, 0, 4] = 0  # model 4 absent from replicate 2: its own piece
    assert bt._forest_bt(w + 0.5 * t, w + w.transpose(0, 2, 1) + t) is not None
    got = fit_bt(w, t)
    np.testing.assert_allclose(got, _newton(w, t), atol=1e-9)
    for r in (0, 1, 3):
        np.testing.assert_allclose(got[r], _scipy(w[r], t[r]), atol=1e-5)
    assert abs(got[2, 4]) < 1e-12 and abs(got[2, [0, 1, 2, 3, 5, 6]].sum()) < 1e-9


def test_a_forest_deeper_than_a_star_and_an_anchor():
    rng = np.random.default_rng(7)
    w = _star(rng, 4, 6)
    w[:, 5, 0] = w[:, 0, 5] = 0
    w[:, 5, 3], w[:, 3, 5] = (
        rng.integers(1, 9, 4),
        rng.integers(1, 9, 4),
    )  # 5 hangs off 3
    got = fit_bt(w, anchor=2)
    np.testing.assert_allclose(
        got, _newton(w, None) - _newton(w, None)[:, 2:3], atol=1e-9
    )
    np.testing.assert_allclose(got[:, 5] - got[:, 3], np.log(w[:, 5, 3] / w[:, 3, 5]))


def test_a_cycle_or_a_one_way_win_takes_newtons_path():
    rng = np.random.default_rng(3)
    cyc = _star(rng, 3, 5, extra=(2, 3))
    assert bt._forest_bt(cyc, cyc + cyc.transpose(0, 2, 1)) is None
    one_way = _star(rng, 3, 5)
    one_way[1, 0, 2] = 0  # model 2 won every game against 0 in replicate 1
    assert bt._forest_bt(one_way, one_way + one_way.transpose(0, 2, 1)) is None
    np.testing.assert_allclose(fit_bt(one_way), _newton(one_way, None))


def _dense_strengths(w, t):
    """fit_strengths on its dense path (win parts, then the fit), the closed forms off."""
    from voirdire.analysis.ranking import strengths

    saved_f, saved_b = strengths.forest_strengths, bt._forest_bt
    strengths.forest_strengths = lambda *a: None
    bt._forest_bt = lambda w, n: None
    try:
        return strengths.fit_strengths(fit_bt, w, t)
    finally:
        strengths.forest_strengths, bt._forest_bt = saved_f, saved_b


@pytest.mark.parametrize("seed", range(4))
def test_forest_strengths_equal_the_dense_path_parts_included(seed):
    from voirdire.analysis.ranking.strengths import fit_strengths

    rng = np.random.default_rng(seed)
    w = _star(rng, 8, 9)
    t = np.zeros_like(w)
    t[:, 0, 5] = t[:, 5, 0] = rng.integers(0, 4, 8)
    for r, m in [(1, 1), (3, 4), (3, 6), (5, 0)]:  # models absent from replicates
        w[r, m, :] = w[r, :, m] = t[r, m, :] = t[r, :, m] = 0
    got, want = fit_strengths(fit_bt, w, t), _dense_strengths(w, t)
    np.testing.assert_array_equal(got.part, want.part)
    assert got.above is None and want.above is None
    np.testing.assert_allclose(got.theta, want.theta, atol=1e-9)
    d = got.relative(2)
    assert np.isnan(d[5]).sum() == 8  # replicate 5 has no baseline: nobody ordered vs 2


@pytest.mark.parametrize("r", [1, 2, 7, 40, 1000])
def test_percentiles_by_partition_equal_the_sorted_percentile_and_numpy(r):
    from voirdire.analysis.ranking.ranks import percentile, percentiles

    rng = np.random.default_rng(r)
    a = rng.normal(size=(r, 3, 5))
    a[rng.random(a.shape) < 0.1] = np.inf
    a[rng.random(a.shape) < 0.1] = -np.inf
    a[:, 0, 0] = 1.5  # equal values
    for q, got in zip((0.025, 0.5, 0.975), percentiles(a, (0.025, 0.5, 0.975))):
        np.testing.assert_array_equal(got, percentile(a, q))
    finite = rng.normal(size=(r, 4))
    np.testing.assert_allclose(
        percentiles(finite, (0.025,))[0], np.quantile(finite, 0.025, axis=0)
    )
    with_nan = a.copy()
    with_nan[0, 1, 1] = np.nan  # the sorted path, the same answers
    np.testing.assert_array_equal(
        percentiles(with_nan, (0.1,))[0], percentile(with_nan, 0.1)
    )


def test_style_logit_by_blocks_equals_the_dense_hessian_and_a_scipy_fit():
    from voirdire.analysis.ranking.style import weighted_logit

    rng = np.random.default_rng(11)
    k, f, n, r = 6, 3, 400, 4
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    x = np.zeros((n, k + f))
    x[np.arange(n), a] += 1
    x[np.arange(n), b] -= 1
    x[:, k:] = rng.normal(size=(n, f))
    y = rng.choice([0.0, 0.5, 1.0], n)
    w = rng.poisson(1.0, (r, n)).astype(float)
    extra = np.zeros((r, k + f, k + f))
    extra[:, :k, :k] = 1.0 / k  # the constant θ direction
    dense = weighted_logit(x, y, w, extra=extra)
    blocks = weighted_logit(x, y, w, extra=extra, pairs=(a, b, k))
    np.testing.assert_allclose(blocks, dense, atol=1e-9)
    warm = weighted_logit(x, y, w, extra=extra, pairs=(a, b, k), start=dense[0])
    np.testing.assert_allclose(warm, dense, atol=1e-9)

    def nll(beta, wr):
        eta = x @ beta
        return -(wr * (y * eta - np.logaddexp(0, eta))).sum(), -(
            wr * (y - 1 / (1 + np.exp(-eta)))
        ) @ x

    for i in range(r):
        got = minimize(
            nll, np.zeros(k + f), args=(w[i],), jac=True, method="L-BFGS-B", tol=1e-14
        ).x
        got[:k] -= got[:k].mean()
        np.testing.assert_allclose(blocks[i], got, atol=1e-4)


def test_newton_warm_started_from_the_estimate_reaches_the_same_maximum():
    rng = np.random.default_rng(5)
    w = rng.integers(1, 20, (6, 7, 7)).astype(float)
    w[:, np.arange(7), np.arange(7)] = 0
    est = fit_bt(w.sum(0))
    np.testing.assert_allclose(fit_bt(w, start=est), fit_bt(w), atol=1e-9)


def test_no_comparison_is_every_model_its_own_piece_at_zero():
    """The closed form with no edge at all (forest_strengths has none to fit): θ = 0."""
    w = np.zeros((2, 3, 3))
    assert np.array_equal(bt._forest_bt(w, w), np.zeros((2, 3)))
    assert np.array_equal(fit_bt(w), np.zeros((2, 3)))
