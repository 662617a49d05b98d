"""Rank sets with a joint coverage guarantee, from an estimate and its covariance.

Source: Chatzi, Straitouri, Thejaswi and Gomez-Rodriguez, *Prediction-Powered Ranking of
Large Language Models*, NeurIPS 2024 (arXiv:2402.17826), Algorithm 1. Given an estimate
``θ̂`` of k models' strengths (win rates, or Bradley–Terry log-strengths) and its covariance
``Σ̂``, the confidence ellipsoid ``C = {θ : (θ − θ̂)ᵀ Σ̂⁻¹ (θ − θ̂) ≤ χ²_{df, level}}`` covers
the true θ with probability ``level`` (asymptotically; ``df`` = the number of free
coordinates: k for win rates, k − 1 for a board with its anchor fixed). Model ``j`` is
*surely above* ``i`` when ``θ_j > θ_i`` for every θ in C, i.e. ``θ̂_j − θ̂_i >
sqrt(χ²·Var(θ̂_j − θ̂_i))`` (the ellipsoid's extent along ``e_j − e_i``). The rank set of
``i`` is ``[1 + #{j surely above i}, k − #{j surely below i}]``: whenever C covers θ, every
model's true rank (1 = the strongest) lies in its set, all at once. The sets are wider than
per-pair intervals (Arena's rule, ``docs/ranking.md``), whose guarantee holds pair by pair.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import chi2

__all__ = ["point_ranks", "rank_sets"]


def point_ranks(theta: np.ndarray) -> np.ndarray:
    """``1 + #{j : θ_j > θ_i}`` per model (ties share the better rank); int (k,)."""
    t = np.asarray(theta, dtype=float)
    return 1 + (t[None, :] > t[:, None]).sum(axis=1)


def rank_sets(
    theta: np.ndarray, cov: np.ndarray, level: float, df: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The point ranks and the rank sets of Chatzi et al. (module docstring).

    Args:
        theta: (k,) estimates (larger is better); cov: (k, k) their covariance (a fixed
            coordinate, e.g. a board's anchor, has zero variance).
        level: the joint coverage asked, e.g. 0.9.
        df: the ellipsoid's degrees of freedom (default k).

    Returns:
        ``(rank, rank_lo, rank_hi)``: int (k,) each; ``rank_lo ≤ rank ≤ rank_hi``.

    Raises:
        ValueError: ``level`` outside (0, 1), or shapes that do not match.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), not {level}")
    t, c = np.asarray(theta, dtype=float), np.asarray(cov, dtype=float)
    k = t.size
    if c.shape != (k, k):
        raise ValueError(f"covariance of shape {c.shape} for {k} estimates")
    q = chi2.ppf(level, k if df is None else df)
    d = np.diag(c)
    var_diff = d[:, None] + d[None, :] - 2 * c  # Var(θ_i − θ_j)
    diff = t[:, None] - t[None, :]  # θ_i − θ_j
    above = diff < -np.sqrt(np.maximum(var_diff, 0.0) * q)  # j surely above i: [i, j]
    np.fill_diagonal(above, False)
    below = above.T  # j surely below i
    rank = point_ranks(t)
    lo = 1 + above.sum(axis=1)
    hi = k - below.sum(axis=1)
    return rank, np.minimum(lo, rank), np.maximum(hi, rank)
