"""The null of "k of n candidates differ" (``OrderTest.count_null`` in
``analysis/stats/order_randomisation.py``): against full enumeration of the design's
assignments, per question (AlpacaEval's shared switch) and per pair, and its size in a
simulation of judges without a position effect whose candidates share hard questions."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl

from voirdire.analysis.stats.order_randomisation import cluster_test, pair_test

ALPHA = 0.32  # between the exact p-values' steps (k/20): no tie at the level


def _diff(scores, first):
    """win_first − win_second of one candidate (independent of the module)."""
    a, b = scores[first], scores[~first]
    return a.mean() - b.mean()


def _exact_counts(stats, alpha):
    """Over all equally likely assignments (rows of ``stats``: (A, C) statistics), each
    assignment's count of candidates with exact p ≤ alpha."""
    t = np.abs(stats)
    p = (t[None, :, :] >= t[:, None, :] - 1e-12).sum(axis=1) / t.shape[0]  # (A, C)
    return (p <= alpha).sum(axis=1)


def _observed(counts):
    """The assignment taken as observed: one with the largest count (the null's tail)."""
    at = int(np.argmax(counts))
    k = int(counts[at])
    return at, k, float(np.mean(counts >= k))


def test_count_null_per_question_equals_enumeration():
    rng = np.random.default_rng(3)
    units, cands = 6, 3
    scores = rng.choice([0.0, 0.5, 1.0], size=(units, cands))
    assignments = [
        np.isin(np.arange(units), c) for c in itertools.combinations(range(units), 3)
    ]
    stats = np.array(
        [[_diff(scores[:, c], a) for c in range(cands)] for a in assignments]
    )
    at, k_exact, p_exact = _observed(_exact_counts(stats, ALPHA))
    observed = assignments[at]
    rows = pl.DataFrame(
        {
            "unit": np.repeat(np.arange(units), cands),
            "candidate": [f"m{c}" for _ in range(units) for c in range(cands)],
            "first": np.repeat(observed, cands),
            "score": scores.ravel(),
        }
    )
    test = cluster_test(rows, 40_000, np.random.default_rng(0))
    assert test is not None
    k, p = test.count_null(ALPHA)
    assert k == k_exact
    assert abs(p - p_exact) < 0.01, (p, p_exact)
    assert 0 < p_exact < 1  # a design where the count's null is not trivial


def test_count_null_per_pair_equals_enumeration():
    rng = np.random.default_rng(5)
    n, cands = (
        6,
        2,
    )  # per candidate 6 pairs, 3 shown first: 20 assignments each, 400 jointly
    scores = rng.choice([0.0, 0.5, 1.0], size=(cands, n))
    while any(len(set(s)) < 2 for s in scores):  # each candidate's statistic varies
        scores = rng.choice([0.0, 0.5, 1.0], size=(cands, n))
    per = [np.isin(np.arange(n), c) for c in itertools.combinations(range(n), 3)]
    joint = list(itertools.product(range(len(per)), repeat=cands))
    stats = np.array(
        [[_diff(scores[c], per[a[c]]) for c in range(cands)] for a in joint]
    )
    at, k_exact, p_exact = _observed(_exact_counts(stats, ALPHA))
    observed = joint[at]
    rows = pl.DataFrame(
        {
            "candidate": [f"m{c}" for c in range(cands) for _ in range(n)],
            "first": np.concatenate([per[observed[c]] for c in range(cands)]),
            "score": scores.ravel(),
        }
    )
    k, p = pair_test(rows, 40_000, np.random.default_rng(1)).count_null(ALPHA)
    assert k == k_exact
    assert abs(p - p_exact) < 0.01, (p, p_exact)
    assert 0 < p_exact < 1


def test_count_null_holds_its_size_without_an_effect():
    """Judges with no position effect whose 12 candidates share hard and easy questions (the
    AlpacaEval case: the models' tests share one assignment): the count's p is at most 0.05 in
    at most 5 % of 300 judges (plus twice the binomial error)."""
    rng = np.random.default_rng(11)
    sims, units, cands, draws = 300, 40, 12, 199
    alpha, rejected = 0.05, 0
    for _ in range(sims):
        hard = rng.normal(0, 2.0, size=(units, 1))  # shared by every candidate
        win = 1 / (1 + np.exp(-(hard + rng.normal(0, 0.5, size=(units, cands)))))
        scores = (rng.random((units, cands)) < win).astype(float)
        first = rng.permutation(np.repeat([True, False], units // 2))
        rows = pl.DataFrame(
            {
                "unit": np.repeat(np.arange(units), cands),
                "candidate": [f"m{c:02d}" for _ in range(units) for c in range(cands)],
                "first": np.repeat(first, cands),
                "score": scores.ravel(),
            }
        )
        test = cluster_test(rows, draws, rng)
        assert test is not None
        k, p = test.count_null(alpha)
        rejected += p <= 0.05
    se = np.sqrt(0.05 * 0.95 / sims)
    assert rejected / sims <= 0.05 + 2 * se, rejected / sims
    assert rejected > 0  # not a test that never rejects
