"""Rank flips and rank agreement between two leaderboards on the same models.

For two boards ``A`` and ``B`` (e.g. one judge's first-order and swapped-order boards, or a
judge's and the people's) over their common models:

- **flips**: pairs of models ordered one way by ``A``'s ratings and the other way by
  ``B``'s (ties in either board are no flip); a flip is **significant** when the
  percentile interval, over the joint bootstrap replicates, of the change of the pair's
  rating difference ``(θ_i − θ_j)_A − (θ_i − θ_j)_B`` excludes 0 (ours; the replicates are
  the same question draws for both boards, :mod:`~voirdire.analysis.ranking.boards`);
- **Kendall τ** (τ-b) and **Spearman ρ** between the two rating vectors
  (``scipy.stats.kendalltau``/``spearmanr``), with percentile intervals over the replicates
  (τ-b and ρ recomputed per replicate, vectorised; equal to scipy's, checked in the tests);
- **largest rating move**: the model whose rating changes most (Arena points; both boards
  share the anchor), among models with a finite rating in both (not at the bound of θ:
  undefeated or winless models are left out; NaN when none is left).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl
from scipy.stats import kendalltau, rankdata, spearmanr

from voirdire.analysis.ranking.boards import Boards
from voirdire.analysis.ranking.bt import CLIP, SCALE

__all__ = [
    "FLIP_COLUMNS",
    "tau_b",
    "spearman",
    "compare",
    "default_pairs",
    "rank_flips",
]

FLIP_COLUMNS = [
    "benchmark", "judge", "strategy", "view", "judge_b", "strategy_b", "view_b", "models", "pairs", "flips",
    "flips_significant", "share_significant", "kendall_tau", "tau_lo", "tau_hi", "spearman_rho", "rho_lo", "rho_hi",
    "max_move", "max_move_model",
]  # fmt: skip


def tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ-b of each row of ``x`` against the same row of ``y`` ((R, K) -> (R,))."""
    iu = np.triu_indices(x.shape[1], 1)
    sx = np.sign(x[:, :, None] - x[:, None, :])[:, iu[0], iu[1]]
    sy = np.sign(y[:, :, None] - y[:, None, :])[:, iu[0], iu[1]]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(1) / np.sqrt((sx**2).sum(1) * (sy**2).sum(1))


def spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's ρ (Pearson on average ranks) row by row ((R, K) -> (R,))."""
    rx, ry = rankdata(x, axis=1), rankdata(y, axis=1)
    rx, ry = rx - rx.mean(1, keepdims=True), ry - ry.mean(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(1) / np.sqrt((rx**2).sum(1) * (ry**2).sum(1))


def _q(a: np.ndarray, level: float) -> tuple[float, float]:
    a = a[np.isfinite(a)]
    if a.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(a, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def compare(boards: Boards, a: tuple, b: tuple, level: float = 0.95) -> dict | None:
    """One row of :data:`FLIP_COLUMNS` for boards ``a`` and ``b`` (keys (benchmark, judge,
    strategy, view)), or None when they share fewer than two models."""
    ma, ba, ea = boards.theta[a]
    mb, bb, eb = boards.theta[b]
    common = sorted(set(ma) & set(mb))
    if len(common) < 2:
        return None
    ia, ib = [ma.index(m) for m in common], [mb.index(m) for m in common]
    xa, xb, ra, rb = ea[ia], eb[ib], ba[:, ia], bb[:, ib]
    i, j = np.triu_indices(len(common), 1)
    flip = np.sign(xa[i] - xa[j]) * np.sign(xb[i] - xb[j]) < 0
    change = (ra[:, i] - ra[:, j]) - (rb[:, i] - rb[:, j])
    lo, hi = np.quantile(change, [(1 - level) / 2, (1 + level) / 2], axis=0)
    sig = flip & ((lo > 0) | (hi < 0))
    finite = (np.abs(xa) < CLIP - 0.5) & (
        np.abs(xb) < CLIP - 0.5
    )  # a model at the bound has no finite rating
    move = np.where(finite, SCALE * (xb - xa), np.nan)
    k = int(np.nanargmax(np.abs(move))) if finite.any() else 0
    tau = kendalltau(xa, xb).statistic
    rho = spearmanr(xa, xb).statistic
    return dict(
        zip(
            FLIP_COLUMNS,
            [
                *a,
                *b[1:],
                len(common),
                int(i.size),
                int(flip.sum()),
                int(sig.sum()),
                float(sig.sum() / flip.sum()) if flip.sum() else float("nan"),
                float(tau),
                *_q(tau_b(ra, rb), level),
                float(rho),
                *_q(spearman(ra, rb), level),
                float(move[k]),
                common[k] if finite.any() else None,
            ],
        )  # fmt: skip
    )


def default_pairs(boards: Boards) -> list[tuple[tuple, tuple]]:
    """The comparisons reported: per (benchmark, judge, strategy) with ordered verdicts its
    first against its swapped board (order alone); each order-invariant board against the
    judge's raw pooled board (``single``/``pooled``: what the strategy moves); each judge's
    pooled and combined boards against the people's (``people``/``gold``/``people``)."""
    keys = list(boards.theta)
    out = []
    for k in keys:
        bench, judge, s, v = k
        if v == "first" and (bench, judge, s, "swapped") in boards.theta:
            out.append((k, (bench, judge, s, "swapped")))
        if v == "combined" and (bench, judge, "single", "pooled") in boards.theta:
            out.append(((bench, judge, "single", "pooled"), k))
    people = [k for k in keys if k[1:] == ("people", "gold", "people")]
    for p in people:
        out += [
            (k, p)
            for k in keys
            if k[0] == p[0] and k != p and k[3] in ("pooled", "combined")
        ]
    return out


def rank_flips(
    boards: Boards,
    pairs: Iterable[tuple[tuple, tuple]] | None = None,
    level: float = 0.95,
) -> pl.DataFrame:
    """Rank flips, τ and ρ (with intervals) and the largest move for each pair of boards
    (default :func:`default_pairs`). Columns :data:`FLIP_COLUMNS`: the first board's
    (benchmark, judge, strategy, view), the second's (judge_b, strategy_b, view_b), ``models``
    and ``pairs`` (int: common models, model pairs), ``flips``, ``flips_significant`` (int),
    ``share_significant``, τ, ρ and their ``_lo``/``_hi`` (float), ``max_move`` (float, Arena
    points, second minus first) and ``max_move_model`` (str)."""
    rows = [
        r
        for a, b in (default_pairs(boards) if pairs is None else pairs)
        if (r := compare(boards, a, b, level))
    ]
    schema = dict.fromkeys(FLIP_COLUMNS[:7], pl.String) | dict.fromkeys(
        FLIP_COLUMNS[7:11], pl.Int64
    )
    schema |= dict.fromkeys(FLIP_COLUMNS[11:19], pl.Float64) | {
        "max_move_model": pl.String
    }
    return (
        pl.DataFrame(rows, schema=schema, orient="row")
        if rows
        else pl.DataFrame(schema=schema)
    )
