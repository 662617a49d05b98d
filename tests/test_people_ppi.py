"""PPI++ estimates against ``ppi-python`` (Angelopoulos et al.'s reference implementation) on
fixed data, rank sets by hand, and the intervals' coverage by simulation with a known truth."""

from __future__ import annotations

import numpy as np
import pytest

from tests.people_simulate import study, truth
from voirdire.analysis.people.boards import (
    bt_estimate,
    design,
    interval,
    people_boards,
    win_rate_estimate,
)
from voirdire.analysis.people.pairs import judge_pairs, with_labels
from voirdire.analysis.people.ppi import (
    mean_leave_one_out,
    ppi_logistic,
    ppi_mean,
    wald,
)
from voirdire.analysis.people.rank_sets import point_ranks, rank_sets

ppi_py = pytest.importorskip("ppi_py")


def _ci(est, level=0.9):
    return wald(est.theta, np.sqrt(np.diag(est.cov)), level)


@pytest.mark.parametrize("lam", [None, 0.0, 0.4, 1.0])
def test_mean_equals_ppi_python(lam):
    rng = np.random.default_rng(3)
    y = rng.choice([0.0, 0.5, 1.0], 60)
    yhat = np.clip(0.6 * y + 0.4 * rng.random(60), 0, 1)
    yhat_u = rng.random(500)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.1, lam=lam)
    mine = ppi_mean(y, yhat, yhat_u, lam)
    l2, h2 = _ci(mine)
    assert np.allclose([l2[0], h2[0]], [lo[0], hi[0]], atol=1e-12)
    assert np.isclose(
        mine.theta[0], ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam)[0]
    )


@pytest.mark.slow
@pytest.mark.parametrize("lam", [None, 0.0, 0.5, 1.0])
def test_logistic_equals_ppi_python(lam):
    rng = np.random.default_rng(4)
    beta = np.array([0.8, -0.4, 0.2])
    x, xu = rng.normal(size=(120, 3)), rng.normal(size=(900, 3))
    p, pu = 1 / (1 + np.exp(-x @ beta)), 1 / (1 + np.exp(-xu @ beta))
    y = (rng.random(120) < p).astype(float)  # ppi-python's start cannot take ties
    yhat, yhat_u = (
        np.clip(p + rng.normal(0, 0.15, 120), 0, 1),
        np.clip(pu + rng.normal(0, 0.15, 900), 0, 1),
    )
    lo, hi = ppi_py.ppi_logistic_ci(x, y, yhat, xu, yhat_u, alpha=0.1, lam=lam)
    l2, h2 = _ci(ppi_logistic(x, y, yhat, xu, yhat_u, lam))
    assert np.allclose(l2, lo, atol=1e-6) and np.allclose(h2, hi, atol=1e-6)


def test_win_rates_are_ppi_python_means_per_model():
    judgments = study(np.random.default_rng(5), k=4, questions=20)
    pairs = judge_pairs(judgments)
    pairs = with_labels(pairs, truth(judgments).sample(fraction=0.3, seed=1))
    models, a, b = design(pairs)
    y = pairs["y"].fill_null(np.nan).to_numpy()
    yhat = pairs["yhat"].to_numpy()
    lab = ~np.isnan(y)
    est = win_rate_estimate(a, b, y, yhat, lab, len(models))
    for m in range(len(models)):
        s = np.where(a == m, y, 1 - y)
        h = np.where(a == m, yhat, 1 - yhat)
        inm = (a == m) | (b == m)
        lo, hi = ppi_py.ppi_mean_ci(
            s[inm & lab], h[inm & lab], h[inm & ~lab], alpha=0.1
        )
        l2, h2 = wald(est.theta[m], np.sqrt(est.cov[m, m]), 0.9)
        assert np.isclose(l2, lo[0], atol=1e-12) and np.isclose(h2, hi[0], atol=1e-12)
    board = people_boards(pairs, level=0.9)
    ppi = board.filter((board["kind"] == "win_rate") & (board["estimator"] == "ppi"))
    assert np.allclose(ppi["estimate"].to_numpy(), est.theta)


def test_rank_sets_by_hand():
    # three models; 1 and 2 close, 0 far above: 0 is surely first, 1 and 2 share [2, 3]
    theta = np.array([1.0, 0.0, 0.05])
    cov = np.diag([0.01, 0.01, 0.01])
    rank, lo, hi = rank_sets(theta, cov, 0.9)
    assert (
        rank.tolist() == [1, 3, 2]
        and lo.tolist() == [1, 2, 2]
        and hi.tolist() == [1, 3, 3]
    )
    # sqrt(chi2_3(0.9) * 0.02) = 0.352: a gap of 0.36 separates, 0.34 does not
    assert rank_sets(np.array([0.36, 0.0, -5]), cov, 0.9)[2].tolist() == [1, 2, 3]
    assert rank_sets(np.array([0.34, 0.0, -5]), cov, 0.9)[2].tolist() == [2, 2, 3]
    assert point_ranks(np.array([2.0, 2.0, 1.0])).tolist() == [1, 1, 3]


def _population(seed):
    """A population of pairs (people's labels known on all) and a judge with order bias."""
    judgments = study(
        np.random.default_rng(seed), k=5, questions=60, judges={"j": (0.6, 0.75)}
    )
    pairs = with_labels(judge_pairs(judgments), truth(judgments))
    models, a, b = design(pairs)
    return len(models), a, b, pairs["y"].to_numpy(), pairs["yhat"].to_numpy()


def test_intervals_and_rank_sets_cover_the_truth_in_simulation():
    """Hide all but 10 % of a population's labels 300 times: the 90 % intervals of the win
    rates and the board (small-sample t intervals, :func:`interval`), and the rank sets, cover
    the full-label truth in at least 90 % of the draws less three binomial standard errors
    (0.052); the judge alone does not."""
    k, a, b, y, yhat = _population(11)
    every = np.ones(y.size, dtype=bool)
    true_wr = win_rate_estimate(a, b, y, yhat, every, k, 0.0).theta
    true_bt = bt_estimate(a, b, y, yhat, every, k, 0, 0.0).theta
    true_rank = point_ranks(true_wr)
    rng = np.random.default_rng(0)
    draws, hits = 300, {"wr": 0, "bt": 0, "judge": 0, "ranks": 0}
    widths = []
    for _ in range(draws):
        lab = np.zeros(y.size, dtype=bool)
        lab[rng.choice(y.size, size=y.size // 10, replace=False)] = True
        wr = win_rate_estimate(a, b, y, yhat, lab, k, jackknife=True)
        nm = np.bincount(np.r_[a[lab], b[lab]], minlength=k)
        lo, hi, _, cov = interval(wr, nm, 0.9, unbiased=False)
        hits["wr"] += np.mean((lo <= true_wr) & (true_wr <= hi))
        bt = bt_estimate(a, b, y, yhat, lab, k, 0)
        lo, hi, _, _ = interval(bt, nm, 0.9, k - 1)
        hits["bt"] += np.mean(((lo <= true_bt) & (true_bt <= hi))[1:])
        _, rlo, rhi = rank_sets(wr.theta, cov, 0.9)
        hits["ranks"] += np.all((rlo <= true_rank) & (true_rank <= rhi))
        lo, hi, _, _ = interval(
            win_rate_estimate(a, b, yhat, yhat, every, k, 0.0, jackknife=True),
            np.bincount(np.r_[a, b]),
            0.9,
        )
        hits["judge"] += np.mean((lo <= true_wr) & (true_wr <= hi))
        widths.append(
            np.mean(
                np.sqrt(np.diag(wr.cov))
                / np.sqrt(np.diag(win_rate_estimate(a, b, y, yhat, lab, k, 0.0).cov))
            )
        )
    floor = 0.9 - 3 * np.sqrt(0.9 * 0.1 / draws)
    assert (
        hits["wr"] / draws >= floor
        and hits["bt"] / draws >= floor
        and hits["ranks"] / draws >= floor
    )
    assert hits["judge"] / draws < 0.5  # the judge's own interval ignores its errors
    assert np.nanmedian(widths) < 1.0  # the judge's verdicts narrow people's intervals


@pytest.mark.parametrize("lam", [None, 0.0, 0.6])
def test_leave_one_out_equals_refitting_without_each_item(lam):
    rng = np.random.default_rng(8)
    y = rng.choice([0.0, 0.5, 1.0], 25)
    yhat = np.clip(0.5 * y + 0.5 * rng.random(25), 0, 1)
    yhat_u = rng.random(300)
    loo = mean_leave_one_out(y, yhat, yhat_u, lam)
    brute = [
        ppi_mean(np.delete(y, i), np.delete(yhat, i), yhat_u, lam).theta[0]
        for i in range(25)
    ]
    assert np.allclose(loo, brute, atol=1e-12)
    # with λ fixed the jackknife variance is the unbiased variance of y − λŷ over n
    if lam is not None:
        jk = 24 / 25 * np.sum((loo - loo.mean()) ** 2)
        assert np.isclose(jk, np.var(y - lam * yhat, ddof=1) / 25)
