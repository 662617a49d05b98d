"""Ranks, rank intervals and rating intervals from a board's bootstrap replicates.

Everything here is computed from quantities that do not depend on the anchor, or says where
they do:

- **Pieces**: in a replicate, a model with no comparison (its questions were not drawn) or
  one whose comparisons never link it to the anchor has no rating there: NaN, not the
  anchor's (:func:`pieces`; models are linked when they met in the replicate).
- **Bound**: a θ at the bound (``|θ| ≥ CLIP − 0.5``, :data:`~voirdire.analysis.ranking.bt.CLIP`)
  has its maximum likelihood at infinity: it counts as ``±inf``, so an interval that reaches
  it has an infinite end instead of a zero-width one read as exact (:func:`unbounded`).
- **Rank** (Chatbot Arena's rule, on pairwise differences): ``rank = 1 +`` the number of
  models ``j`` whose percentile interval of ``θ_j − θ_i`` over the replicates lies wholly
  above 0; ``rank_hi = K −`` the number whose interval lies wholly below 0; ``rank_lo =
  rank``. A difference does not depend on the anchor (the anchor only shifts every θ of a
  replicate by the same amount), so neither do the ranks, and ``rank_lo ≤ rank ≤ rank_hi``
  by construction. A pair is used in the replicates where both models are in the same
  piece; two models at the same bound have no defined difference there (NaN).
- Percentiles are numpy's linear ones (as :func:`numpy.quantile`) over the non-NaN
  replicates; ``±inf`` enter as ±1e300 and leave as ±inf.
"""

from __future__ import annotations

import numpy as np

from voirdire.analysis.ranking.bt import CLIP

__all__ = ["pieces", "unbounded", "percentile", "rating_interval", "pairwise_ranks"]

_BIG = 1e300
_TOL = 1e-9  # a difference interval ending within this of 0 (Newton's tolerance) is not "above 0"


def pieces(met: np.ndarray) -> np.ndarray:
    """Connected pieces of each replicate's comparison graph.

    Args:
        met: (R, K, K) bool, True where models ``i`` and ``j`` met in the replicate.

    Returns:
        (R, K) int: per replicate each model's piece, labelled by its lowest model index; a
        model that met nobody is a piece of its own.
    """
    r, k, _ = met.shape
    lab = np.broadcast_to(np.arange(k), (r, k)).copy()
    for _ in range(k):
        new = np.minimum(lab, np.where(met, lab[:, None, :], k).min(axis=2))
        if np.array_equal(new, lab):
            break
        lab = new
    return lab


def unbounded(theta: np.ndarray) -> np.ndarray:
    """``theta`` with values at the bound of θ (``|θ| ≥ CLIP − 0.5``) replaced by ``±inf``."""
    th = np.asarray(theta, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(th) >= CLIP - 0.5, np.sign(th) * np.inf, th)


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


def rating_interval(theta: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """(K,) lower and upper percentile ends of θ over the replicates ((R, K): NaN where a
    model has no rating in a replicate), ``±inf`` where the replicates reach the bound."""
    th = unbounded(theta)
    a = (1.0 - level) / 2.0
    return percentile(th, a), percentile(th, 1.0 - a)


def pairwise_ranks(
    theta: np.ndarray,
    piece: np.ndarray,
    level: float,
    max_bytes: int = 64 * 2**20,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ranks from the percentile intervals of the pairwise differences (module docstring).

    Args:
        theta: (R, K) θ of the replicates (any anchor; NaN allowed).
        piece: (R, K) int pieces (:func:`pieces`): a pair counts in a replicate when both
            models are in the same piece.
        level: interval coverage (0.95).
        max_bytes: memory for one block of differences; the (R, K, K) differences are
            taken ``max(1, max_bytes // (R·K·8))`` rows at a time.

    Returns:
        (K,) int arrays ``rank``, ``rank_lo`` (= ``rank``), ``rank_hi``.
    """
    th = unbounded(theta)
    r, k = th.shape
    a = (1.0 - level) / 2.0
    above, below = np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64)
    step = max(1, int(max_bytes // max(r * k * 8, 1)))
    for s in range(0, k, step):
        rows = slice(s, min(s + step, k))
        with np.errstate(invalid="ignore"):
            d = th[:, None, :] - th[:, rows, None]  # (R, b, K): θ_j − θ_i
        d[piece[:, None, :] != piece[:, rows, None]] = np.nan
        lo, hi = percentile(d, a), percentile(d, 1.0 - a)
        above[rows] = (lo > _TOL).sum(axis=1)
        below[rows] = (hi < -_TOL).sum(axis=1)
    rank = 1 + above
    return rank, rank.copy(), k - below
