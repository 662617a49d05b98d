"""Ranks, rank intervals and rating intervals from a board's bootstrap replicates.

Everything here is computed from the anchor-free fits of
:mod:`~voirdire.analysis.ranking.strengths`, or says where the anchor enters:

- **Differences**: in a replicate, ``θ_j − θ_i`` is finite when the two models are in one
  strongly connected part of the win graph, ``±∞`` when one's part lies above the other's,
  NaN when neither does (never linked by comparisons in the replicate, absent from it, or
  linked only through a part above or below both).
- **Rank** (Chatbot Arena's rule, on pairwise differences): ``rank = 1 +`` the number of
  models ``j`` whose percentile interval of ``θ_j − θ_i`` over the replicates lies wholly
  above 0; ``rank_hi = K −`` the number whose interval lies wholly below 0; ``rank_lo =
  rank``. A pair counts in the replicates where its difference is defined (not NaN); an
  infinite difference counts as one. No anchor enters, so the ranks are the same whatever
  model is the anchor, on a connected or a disconnected design; ``rank_lo ≤ rank ≤
  rank_hi`` by construction. A model that no replicate orders against another (two
  separate tournaments) leaves that place open in both directions.
- **Rating interval**: of ``θ_m − θ_anchor`` (the display's anchor), NaN replicates left
  out, ``±∞`` kept: an interval reaching an infinite difference has an infinite end.
- Percentiles are numpy's linear ones (as :func:`numpy.quantile`) over the non-NaN
  replicates; ``±inf`` enter as ±1e300 and leave as ±inf.
"""

from __future__ import annotations

import numpy as np

from voirdire.analysis.ranking.strengths import Strengths

__all__ = ["percentile", "percentiles", "rating_interval", "pairwise_ranks"]

_BIG = 1e300
_TOL = 1e-9  # a difference interval ending within this of 0 (Newton's tolerance) is not "above 0"


def percentile(a: np.ndarray, q: float, axis: int = 0) -> np.ndarray:
    """Linear-interpolation percentile (``q`` in [0, 1]) along ``axis`` over the non-NaN
    values, ``±inf`` kept; NaN where every value is NaN. Equals :func:`numpy.quantile` on
    finite data."""
    a = np.moveaxis(np.asarray(a, dtype=float), axis, 0)
    a = np.sort(np.clip(a, -_BIG, _BIG), axis=0)  # NaN sorts last
    n = (~np.isnan(a)).sum(axis=0)
    pos = q * np.maximum(n - 1, 0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    x0 = np.take_along_axis(a, lo[None], 0)[0]
    x1 = np.take_along_axis(a, hi[None], 0)[0]
    t = pos - lo
    with np.errstate(invalid="ignore", over="ignore"):  # numpy's _lerp, as np.quantile
        diff = x1 - x0
        out = np.where(t >= 0.5, x1 - diff * (1 - t), x0 + diff * t)
        out = np.where(x0 == x1, x0, out)
    out = np.where(out >= _BIG / 10, np.inf, np.where(out <= -_BIG / 10, -np.inf, out))
    return np.where(n == 0, np.nan, out)


def _lerp(x0: np.ndarray, x1: np.ndarray, t: float | np.ndarray) -> np.ndarray:
    """numpy's ``_lerp`` (as :func:`numpy.quantile`), ``±inf`` back from ±1e300."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = x1 - x0
        out = np.where(t >= 0.5, x1 - diff * (1 - t), x0 + diff * t)
        out = np.where(x0 == x1, x0, out)
    return np.where(out >= _BIG / 10, np.inf, np.where(out <= -_BIG / 10, -np.inf, out))


def percentiles(a: np.ndarray, qs: tuple[float, ...]) -> list[np.ndarray]:
    """:func:`percentile` along axis 0 at each of ``qs``, the same numbers: where no value is
    NaN (every column has all R) the order statistics come from one
    :func:`numpy.partition` (linear time) instead of a sort."""
    a = np.asarray(a, dtype=float)
    if a.shape[0] == 0 or np.isnan(a).any():
        return [percentile(a, q) for q in qs]
    r = a.shape[0]
    at = []
    for q in qs:
        pos = q * (r - 1)
        lo = int(np.floor(pos))
        at.append((lo, min(lo + 1, r - 1), pos - lo))
    kth = sorted({i for lo, hi, _ in at for i in (lo, hi)})
    part = np.partition(np.clip(a, -_BIG, _BIG), kth, axis=0)
    return [_lerp(part[lo], part[hi], t) for lo, hi, t in at]


def rating_interval(
    relative: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """(K,) lower and upper percentile ends of ``θ_m − θ_anchor`` over the replicates
    ((R, K), :meth:`~voirdire.analysis.ranking.strengths.Strengths.relative`: NaN where
    undefined, left out), ``±inf`` where the replicates reach an infinite difference."""
    a = (1.0 - level) / 2.0
    lo, hi = percentiles(relative, (a, 1.0 - a))
    return lo, hi


def pairwise_ranks(
    fitted: Strengths, level: float, max_bytes: int = 64 * 2**20
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ranks from the percentile intervals of the pairwise differences (module docstring).

    A pair's interval end is compared with ``±_TOL`` by counting: the lower end lies
    between the order statistics ``x_(L)`` and ``x_(L+1)`` of its replicates, so the count
    of replicates ``≤ _TOL`` decides ``lo > _TOL`` unless it is exactly ``L + 1`` (likewise
    the upper end); only those pairs' percentiles are computed (:func:`percentiles`, the
    same numbers). A block with an undefined (NaN) difference takes every percentile.

    Args:
        fitted: the board's replicates (R, K models).
        level: interval coverage (0.95).
        max_bytes: memory for one block of differences and its temporaries; the (R, K, K)
            differences are taken ``max(1, max_bytes // (4·R·K·8))`` rows at a time.

    Returns:
        (K,) int arrays ``rank``, ``rank_lo`` (= ``rank``), ``rank_hi``.
    """
    r, k = fitted.theta.shape
    a = (1.0 - level) / 2.0
    above, below = np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64)
    step = max(1, int(max_bytes // max(4 * r * k * 8, 1)))
    for s in range(0, k, step):
        rows = np.arange(s, min(s + step, k))
        d = fitted.differences(rows)  # (R, b, K): θ_j − θ_i
        if r == 0 or np.isnan(d).any():
            lo, hi = percentiles(d, (a, 1.0 - a))
            above[rows] = (lo > _TOL).sum(axis=1)
            below[rows] = (hi < -_TOL).sum(axis=1)
            continue
        up, down = _beyond(d, a, _TOL, True), _beyond(d, 1.0 - a, -_TOL, False)
        above[rows] = up.sum(axis=1)
        below[rows] = down.sum(axis=1)
    rank = 1 + above
    return rank, rank.copy(), k - below


def _beyond(d: np.ndarray, q: float, tol: float, greater: bool) -> np.ndarray:
    """(b, K) bool: the ``q`` percentile over axis 0 of ``d`` (R, b, K; no NaN) ``> tol``
    (``greater``) or ``< tol``, as :func:`percentiles` gives it. The percentile lies between
    the order statistics ``L = ⌊q(R−1)⌋`` and ``L + 1``: counting the replicates on the
    other side of ``tol`` decides every pair but those with exactly ``L + 1`` there, whose
    percentile is computed."""
    r = d.shape[0]
    lo = int(np.floor(q * (r - 1)))
    hi = min(lo + 1, r - 1)
    c = (d <= tol if greater else d < tol).sum(
        axis=0
    )  # replicates not beyond (greater)
    # greater: x_(lo) > tol iff c <= lo; x_(hi) <= tol iff c > hi
    # not greater: x_(hi) < tol iff c > hi; x_(lo) >= tol iff c <= lo
    out = c <= lo if greater else c > hi
    open_ = (c > lo) & (c <= hi)
    if open_.any():
        at = np.nonzero(open_)
        x = percentiles(d[:, at[0], at[1]], (q,))[0]
        out[at] = x > tol if greater else x < tol
    return out
