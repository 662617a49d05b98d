"""People's intervals clustered by question: the clustered variances equal independent
computations (statsmodels' cluster-robust covariances, an explicit sum over the clusters), and
by simulation with pairs sharing questions the 90 % intervals cover the population's truth
(questions drawn afresh every study) where the unclustered ones do not."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tests.people_simulate import shared_questions, shared_questions_truth
from voirdire.analysis.people.boards import (
    bt_estimate,
    cluster_codes,
    people_boards,
    win_rate_estimate,
)
from voirdire.analysis.people.rank_sets import point_ranks

sm = pytest.importorskip("statsmodels.api")

K, TIE, TAU = 5, 0.1, 1.5
STRENGTHS = np.linspace(0.6, -0.6, K)


def _design(rng, questions):
    return shared_questions(rng, questions, strengths=STRENGTHS, tie=TIE, tau=TAU)


def _truth():
    return shared_questions_truth(STRENGTHS, tie=TIE, tau=TAU)


def _pairs(q, a, b, y, yhat, labelled):
    names = np.array([f"m{m}" for m in range(K)])
    return pl.DataFrame({
        "question_id": [f"q{x}" for x in q], "candidate": names[a], "reference": names[b],
        "yhat": yhat, "y": np.where(labelled, y, np.nan),
    }).with_columns(pl.col("y").fill_nan(None))  # fmt: skip


def test_clustered_win_rate_variance_equals_statsmodels_and_a_sum_over_clusters():
    rng = np.random.default_rng(1)
    q, a, b, y, yhat = _design(rng, 30)
    cl = cluster_codes(q)
    every = np.ones(q.size, dtype=bool)
    # labels alone with every label: per model the mean of its scores, whose cluster-robust
    # variance is statsmodels' OLS on a constant with groups (CR1: G/(G - 1), one parameter)
    est = win_rate_estimate(a, b, y, yhat, every, K, 0.0, clusters=cl)
    for m in range(K):
        inm = (a == m) | (b == m)
        s = np.where(a == m, y, 1 - y)[inm]
        fit = sm.OLS(s, np.ones(s.size)).fit(
            cov_type="cluster", cov_kwds={"groups": cl[inm]}
        )
        assert np.isclose(est.theta[m], fit.params[0], atol=1e-12)
        assert np.isclose(est.cov[m, m], fit.cov_params()[0, 0], rtol=1e-10)
    # PPI at a fixed λ on 30 % of the labels: an explicit sum over the clusters, labelled and
    # unlabelled pairs of a question together, the cross-covariance of two models too
    lab = rng.random(q.size) < 0.3
    lam = 0.6
    est = win_rate_estimate(a, b, y, yhat, lab, K, lam, clusters=cl)
    infl = np.zeros((q.size, K))
    for m in range(K):
        inm = (a == m) | (b == m)
        s, h = np.where(a == m, y, 1 - y), np.where(a == m, yhat, 1 - yhat)
        r, n, big_n = s - lam * h, (inm & lab).sum(), (inm & ~lab).sum()
        rbar, hbar = r[inm & lab].mean(), h[inm & ~lab].mean()
        infl[:, m] = np.where(
            inm, np.where(lab, (r - rbar) / n, lam * (h - hbar) / big_n), 0.0
        )
    by_hand = np.zeros((K, K))
    for m1 in range(K):
        for m2 in range(K):
            g1 = {int(g) for g in q[(a == m1) | (b == m1)]}
            g2 = {int(g) for g in q[(a == m2) | (b == m2)]}
            f = np.sqrt(len(g1) / (len(g1) - 1) * len(g2) / (len(g2) - 1))
            by_hand[m1, m2] = f * sum(
                infl[q == g, m1].sum() * infl[q == g, m2].sum() for g in range(30)
            )
    assert np.allclose(est.cov, by_hand, rtol=1e-10, atol=1e-15)
    # the product's jackknife: each labelled pair's delete-one deviation, turned into its
    # influence (at λ fixed (r − r̄)/sqrt(n(n − 1))), summed with its question's unlabelled
    # pairs: the same sum over clusters with that labelled term (a wrong sign would not be)
    jk = win_rate_estimate(a, b, y, yhat, lab, K, lam, jackknife=True, clusters=cl)
    infl_jk = infl.copy()
    for m in range(K):
        inm = (a == m) | (b == m)
        n = (inm & lab).sum()
        infl_jk[inm & lab, m] *= np.sqrt(n / (n - 1))
    for m in range(K):
        g1 = {int(g) for g in q[(a == m) | (b == m)]}
        f = len(g1) / (len(g1) - 1)
        want = f * sum(infl_jk[q == g, m].sum() ** 2 for g in range(30))
        assert np.isclose(jk.cov[m, m], want, rtol=1e-10)
    # every pair its own cluster: the unclustered (ppi-python's) covariance, × G/(G − 1)
    single = win_rate_estimate(a, b, y, yhat, lab, K, lam, clusters=np.arange(q.size))
    plain = win_rate_estimate(a, b, y, yhat, lab, K, lam)
    g = np.bincount(np.r_[a, b], minlength=K)
    f = np.sqrt(np.outer(g / (g - 1), g / (g - 1)))
    assert np.allclose(np.diag(single.cov), np.diag(plain.cov * f), rtol=1e-10)


def test_clustered_board_covariance_equals_statsmodels_glm():
    """People alone with every label: the board is a logistic GLM on ``e_a − e_b``, whose
    cluster-robust covariance in statsmodels is CR1 with its small-sample factor
    ``(n − 1)/(n − d)`` on top of ``G/(G − 1)``."""
    q, a, b, y, yhat = _design(np.random.default_rng(2), 40)
    cl = cluster_codes(q)
    every = np.ones(q.size, dtype=bool)
    est = bt_estimate(a, b, y, yhat, every, K, 0, 0.0, clusters=cl)
    x = np.zeros((q.size, K))
    x[np.arange(q.size), a] += 1
    x[np.arange(q.size), b] -= 1
    x = x[:, 1:]
    fit = sm.GLM(y, x, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": cl}
    )
    n, d = q.size, K - 1
    assert np.allclose(est.theta[1:], fit.params, atol=1e-8)
    assert np.allclose(
        est.cov[1:, 1:] * (n - 1) / (n - d), fit.cov_params(), rtol=1e-6, atol=1e-12
    )


def _cover(board, kind, truth, skip_first):
    ppi = board.filter((pl.col("kind") == kind) & (pl.col("estimator") == "ppi"))
    lo, hi = ppi["lo"].to_numpy(), ppi["hi"].to_numpy()
    hit = (lo <= truth) & (truth <= hi)
    rank = point_ranks(truth)
    held = np.all(
        (ppi["rank_lo"].to_numpy() <= rank) & (rank <= ppi["rank_hi"].to_numpy())
    )
    return (hit[1:] if skip_first else hit).mean(), held


@pytest.mark.slow
def test_clustered_intervals_cover_the_population_when_pairs_share_questions():
    """400 studies of 60 questions × 10 pairs, each drawn afresh (new questions), 20 % and
    all labels: the 90 % intervals of the win rates and of the board (``unit="question"``,
    the default) cover the population's truth within three binomial standard errors of 0.9
    (a draw's mean over the models: SE ≤ sqrt(0.09/400) = 0.015, so ±0.045), and the rank
    sets hold every rank at once in at least 0.855; the pair-level intervals (``unit="pair"``)
    fall below that with all labels (the failure the clustering fixes)."""
    true_wr, true_bt = _truth()
    rng, draws = np.random.default_rng(0), 400
    hits = {(s, u): [] for s in (0.2, 1.0) for u in ("question", "pair")}
    for _ in range(draws):
        q, a, b, y, yhat = _design(rng, 60)
        for share in (0.2, 1.0):
            lab = np.zeros(q.size, dtype=bool)
            lab[rng.choice(q.size, round(share * q.size), replace=False)] = True
            pairs = _pairs(q, a, b, y, yhat, lab)
            for unit in ("question", "pair"):
                board = people_boards(pairs, anchor="m0", unit=unit)
                wr, rs = _cover(board, "win_rate", true_wr, False)
                bt, _ = _cover(board, "bt", true_bt, True)
                hits[share, unit].append((wr, bt, rs))
    tol = 3 * np.sqrt(0.09 / draws)
    for share in (0.2, 1.0):
        wr, bt, rs = np.mean(hits[share, "question"], axis=0)
        assert abs(wr - 0.9) <= tol and abs(bt - 0.9) <= tol, (share, wr, bt)
        assert rs >= 0.9 - tol, (share, rs)
    wr, bt, _ = np.mean(hits[1.0, "pair"], axis=0)
    assert wr < 0.9 - tol and bt < 0.9 - tol, (wr, bt)


def test_a_study_draws_the_declared_questions_and_names_the_unit():
    """``people_study`` puts a benchmark's declared clusters (``question_id`` → question) on
    the pairs and clusters by them; ``unit`` is written to the settings; an unknown unit is
    refused."""
    from tests.people_simulate import study, truth
    from voirdire.analysis.people.study import people_study
    from voirdire.core import ConfigError

    j = study(np.random.default_rng(4), k=4, questions=30)
    labels = truth(j)
    qids = j["question_id"].unique()
    declared = pl.DataFrame(
        {"benchmark": "sim", "question_id": qids, "cluster": qids.str.slice(0, 4)}
    )
    by_q = people_study(j, labels, share=0.5, clusters=declared)
    by_pair = people_study(j, labels, share=0.5, unit="pair")
    assert by_q.settings["unit"] == "question" and by_pair.settings["unit"] == "pair"
    own = by_pair.pairs.filter(pl.col("judge") == "judge").with_columns(
        cluster=pl.col("question_id").str.slice(0, 4)
    )
    want = people_boards(own, unit="question").sort("kind", "estimator", "model")
    got = by_q.boards.sort("kind", "estimator", "model")
    assert np.allclose(got["se"].to_numpy(), want["se"].to_numpy(), equal_nan=True)
    assert not np.allclose(
        got["se"].to_numpy(),
        by_pair.boards.sort("kind", "estimator", "model")["se"].to_numpy(),
        equal_nan=True,
    )
    with pytest.raises(ConfigError, match="unit"):
        people_study(j, labels, share=0.5, unit="item")
    from voirdire.analysis.report.people import people_markdown
    from voirdire.analysis.report.people_files import people_tables

    assert "clustered by question" in people_markdown(people_tables(by_q))
    assert "as independent" in people_markdown(people_tables(by_pair))


@pytest.mark.slow
def test_few_questions_need_cr1_and_t_on_the_labelled_questions():
    """Few clusters (Cameron and Miller 2015, §VI): 8 questions × 10 pairs, questions drawn
    afresh every study, all and half of the labels. The product's win-rate intervals (CR1's
    ``G/(G − 1)`` and Student's t on ``G_lab − 1`` degrees of freedom, :func:`interval` with
    :func:`cluster_dof`) cover the population's truth within three binomial standard errors of
    0.9 (a draw's mean over the models: SE ≤ sqrt(0.09/800) ≈ 0.011, so ±0.032); the same
    cluster sums without either correction (``z``, no ``G/(G − 1)``) fall below that band, and
    so does ``z`` with CR1 alone: the t quantile is what few clusters need."""
    from scipy.stats import norm

    from voirdire.analysis.people.boards import cluster_dof, interval

    true_wr, _ = _truth()
    rng, draws, questions = np.random.default_rng(5), 800, 8
    z = norm.ppf(0.95)
    hits = {s: [] for s in (1.0, 0.5)}
    for _ in range(draws):
        q, a, b, y, yhat = _design(rng, questions)
        g = np.array([np.unique(q[(a == m) | (b == m)]).size for m in range(K)])
        for share in hits:
            lab = np.zeros(q.size, dtype=bool)
            lab[rng.choice(q.size, round(share * q.size), replace=False)] = True
            nm = np.bincount(np.r_[a[lab], b[lab]], minlength=K)
            est = win_rate_estimate(a, b, y, yhat, lab, K, jackknife=True, clusters=q)
            dof = cluster_dof(a, b, lab, q, K)
            g_lab = [np.unique(q[lab & ((a == m) | (b == m))]).size for m in range(K)]
            assert np.all(dof == np.minimum(nm, g_lab) - 1)
            lo, hi, se, _ = interval(est, nm, 0.9, unbiased=False, dof=dof)
            err = np.abs(est.theta - true_wr)
            hits[share].append((
                ((lo <= true_wr) & (true_wr <= hi)).mean(),
                (err <= z * se / np.sqrt(g / (g - 1))).mean(),  # neither correction
                (err <= z * se).mean(),  # CR1, z
            ))  # fmt: skip
    tol = 3 * np.sqrt(0.09 / draws)
    for share, h in hits.items():
        both, neither, cr1_only = np.mean(h, axis=0)
        assert abs(both - 0.9) <= tol, (share, both)
        assert neither < 0.9 - tol and cr1_only < 0.9 - tol, (share, neither, cr1_only)
