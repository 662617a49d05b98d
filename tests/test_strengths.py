"""Strengths without an anchor (analysis/ranking/strengths.py): parts of the win graph,
infinite and undefined differences, the fit inside parts (docs/ranking.md)."""

from __future__ import annotations

import numpy as np
import pytest

from voirdire.analysis.ranking import strengths
from voirdire.analysis.ranking.bt import fit_bt, fit_davidson
from voirdire.analysis.ranking.strengths import fit_strengths, win_parts

A, B, C, D, E, G = range(6)


def _table() -> tuple[np.ndarray, np.ndarray]:
    """a beats b twice; b and c win once each and tie once; c beats d three times; g beats b
    once; e meets nobody."""
    w, t = np.zeros((6, 6)), np.zeros((6, 6))
    w[A, B], w[B, C], w[C, B], w[C, D], w[G, B] = 2, 1, 1, 3, 1
    t[B, C] = t[C, B] = 1
    return w, t


def test_parts_and_differences_follow_the_win_graph():
    w, t = _table()
    part, above = win_parts(w[None], t[None])
    assert part[0].tolist() == [A, B, B, D, E, G]  # {b, c} one part, the others alone
    s = fit_strengths(fit_bt, w, t)
    d = s.differences(np.arange(6))[0]  # d[i, j] = θ_j − θ_i
    assert d[B, C] == pytest.approx(0.0, abs=1e-9)  # 1–1 and a tie: equal
    for hi, lo in [(A, B), (A, C), (A, D), (B, D), (C, D), (G, B), (G, D)]:
        assert d[lo, hi] == np.inf and d[hi, lo] == -np.inf
    for x, y in [
        (A, G),
        (E, A),
        (E, B),
        (E, D),
    ]:  # never ordered: above both, or never met
        assert np.isnan(d[x, y]) and np.isnan(d[y, x])
    assert np.allclose(s.relative(B)[0, [B, C]], 0.0) and s.relative(B)[0, A] == np.inf


def test_inside_a_part_the_fit_is_the_methods_own():
    rng = np.random.default_rng(0)
    w = rng.integers(1, 6, (4, 5, 5)).astype(float)  # every pair both ways: one part
    w[:, np.arange(5), np.arange(5)] = 0
    t = np.zeros_like(w)
    s = fit_strengths(fit_bt, w, t)
    assert s.above is None and (s.part == 0).all()
    ref = fit_bt(w, t, anchor=2)
    assert np.abs(s.relative(2) - ref).max() < 1e-9
    assert np.abs(s.theta.sum(axis=1)).max() < 1e-9  # no anchor: summing to 0
    t2 = np.triu(rng.integers(0, 3, (5, 5)), 1).astype(float)
    sd = fit_strengths(fit_davidson, w[0], t2 + t2.T)
    assert (
        np.abs(sd.relative(0)[0] - fit_davidson(w[0], t2 + t2.T, anchor=0)).max() < 1e-9
    )


def test_the_two_ways_to_reachability_agree(monkeypatch):
    rng = np.random.default_rng(1)
    w = (rng.random((6, 30, 30)) < 0.06).astype(float)  # sparse, one-way edges
    part, above = win_parts(w, np.zeros_like(w))  # batched squaring
    monkeypatch.setattr(
        strengths, "_SQUARE_K", 0
    )  # one breadth-first search per replicate
    part2, above2 = win_parts(w, np.zeros_like(w))
    assert np.array_equal(part, part2) and np.array_equal(above, above2)
    assert above is not None and len(np.unique(part[0])) > 3
