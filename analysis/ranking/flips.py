"""Rank flips and rank agreement between two leaderboards on the same models.

For two boards ``A`` and ``B`` (e.g. one judge's first-order and swapped-order boards, or a
judge's and the gold board) over their common models, every difference of θ fitted free of
any anchor (:mod:`~voirdire.analysis.ranking.strengths`: finite, ``±∞`` or undefined):

- **flips**: pairs of models ordered one way by ``A`` and the other way by ``B`` (a θ
  difference below 1e-9 is a tie, an undefined one no order: no flip);
- **significant** flips, with the family-wise error rate held at α = 1 − ``level``:

  - first vs swapped order of one judge and strategy (the order effect): the order tests of
    :mod:`~voirdire.analysis.ranking.order_test` — flips with a reference against an
    order-blind judge, flips between candidates against one slot preference common to
    every model (``flips_significant_candidates`` counts these), max-T within each, a
    Bonferroni split between the two; the row also carries what an order-blind judge gives
    on the same verdicts (``flips_null``, ``tau_null``: the permutation means) and the
    overall tests' p-values (``flips_p``: any order effect on the leaderboard, from the
    number of flips; ``tau_p``: from τ);
  - other pairs of boards (a strategy against the raw pooled board, a judge against the
    gold board): per pair a Wald test of the change of the difference ``(θ_i − θ_j)_A −
    (θ_i − θ_j)_B`` with its standard error over the joint bootstrap replicates (the same
    question draws for both boards, :mod:`~voirdire.analysis.ranking.boards`; replicates
    where a difference is infinite or undefined left out; a pair whose estimated difference
    is infinite or undefined in either board not tested: the Wald approximation needs a
    finite maximum), two-sided normal p-values, Holm's step-down adjustment (Holm 1979;
    ``statsmodels.stats.multitest.multipletests``);

- **Kendall τ** (τ-b) and **Spearman ρ** between the two boards
  (τ-b from the signs of the θ differences, a difference below 1e-9 a tie, equal to
  ``scipy.stats.kendalltau`` on untied ratings; ρ ``scipy.stats.spearmanr`` on each
  model's place: the models it lies above plus half those it ties with or is not ordered
  against, which on a finite board is its average rank, and needs no anchor). No interval: the percentile interval of τ
  over the replicates is not one (noise lowers a rank correlation, so it sits below the
  estimate, and for an order-blind judge it excludes τ = 1, the truth, in most tables). The
  order rows test τ against the order-blind null instead (``tau_p``);
- **largest rating move**: the model whose rating changes most (Arena points; both boards
  share the anchor), among models with a finite difference from the anchor in both
  (undefeated or winless models are left out; NaN when none is left).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl
from scipy.stats import norm, rankdata, spearmanr
from statsmodels.stats.multitest import multipletests

from voirdire.analysis.ranking.boards import Boards
from voirdire.analysis.ranking.bt import SCALE
from voirdire.analysis.ranking.gold import GOLD
from voirdire.analysis.ranking.order_test import (
    TIE_EPS,
    OrderTest,
    order_test,
    order_units,
    pair_stats,
)

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
    "flips_significant", "flips_significant_candidates", "share_significant", "test", "flips_null", "flips_p",
    "kendall_tau", "tau_null", "tau_p", "spearman_rho", "max_move", "max_move_model",
]  # fmt: skip
_INT = FLIP_COLUMNS[7:12]
_FLOAT = ["share_significant", *FLIP_COLUMNS[14:21]]


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


def _places(fitted, idx: np.ndarray) -> np.ndarray:
    """(len(idx),) each model's place among ``idx`` in the first row of ``fitted``: the
    models it lies above, plus half of those it ties with or is not ordered against (a
    difference below 1e-9 or undefined) — its average rank less one when the board is a
    total order, whatever the anchor."""
    d = fitted.pair_differences(np.repeat(idx, idx.size), np.tile(idx, idx.size))[0]
    with np.errstate(invalid="ignore"):
        above = (d > TIE_EPS).reshape(idx.size, idx.size)
        level = ~((np.abs(d) > TIE_EPS) & ~np.isnan(d)).reshape(idx.size, idx.size)
    np.fill_diagonal(level, False)
    return above.sum(1) + 0.5 * level.sum(1)


def _holm(change: np.ndarray, est: np.ndarray, alpha: float) -> np.ndarray:
    """Per pair: whether Holm rejects "no change" (Wald z with the bootstrap standard
    error of ``change`` (B, P); ``est`` (P,) the estimate's change). Replicates where a
    pair's change is not finite (a difference infinite or undefined there) are left out of
    that pair's standard error; a pair whose estimated change is not finite (no finite
    maximum likelihood: the Wald approximation does not apply) or with fewer than two finite
    replicates is not rejected."""
    ok = np.isfinite(change)
    n = ok.sum(axis=0)
    c = np.where(ok, change, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = c.sum(axis=0) / np.maximum(n, 1)
        ss = np.where(ok, (c - mean) ** 2, 0.0).sum(axis=0)
        sd = np.where(n > 1, np.sqrt(ss / np.maximum(n - 1, 1)), 0.0)
        z = np.where((sd > 0) & np.isfinite(est), np.abs(est) / sd, 0.0)
    if est.size == 0:
        return np.zeros(0, dtype=bool)
    return multipletests(2 * norm.sf(z), alpha=alpha, method="holm")[0]


def compare(
    boards: Boards,
    a: tuple,
    b: tuple,
    level: float = 0.95,
    test: OrderTest | None = None,
) -> dict | None:
    """One row of :data:`FLIP_COLUMNS` for boards ``a`` and ``b`` (keys (benchmark, judge,
    strategy, view)), or None when they share fewer than two models. ``test``: the order
    permutation tests of the two boards (first vs swapped), which then decide significance;
    without them, bootstrap Wald tests with Holm's adjustment do (module docstring)."""
    fa, fb = boards.fitted[a], boards.fitted[b]
    common = sorted(set(fa.models) & set(fb.models))
    if len(common) < 2:
        return None
    ia = np.array([fa.models.index(m) for m in common])
    ib = np.array([fb.models.index(m) for m in common])
    i, j = np.triu_indices(len(common), 1)
    da = fa.estimate.pair_differences(ia[i], ia[j])
    db = fb.estimate.pair_differences(ib[i], ib[j])
    flip, tau, _ = pair_stats(da, db)  # τ-b: equal θ up to 1e-9 a tie
    flip, tau = flip[0], float(tau[0])
    alpha = 1.0 - level
    between = None
    if test is not None and test.models == common:
        sig, name = flip & (test.p_adjusted <= alpha), "order-permutation"
        between = int((sig & test.between_candidates).sum())
        null = [test.flips_null, test.flips_p, tau, test.tau_null, test.tau_p]
    else:
        with np.errstate(invalid="ignore"):  # infinite or undefined: not finite
            boot = fa.replicates.pair_differences(
                ia[i], ia[j]
            ) - fb.replicates.pair_differences(ib[i], ib[j])
            est = (da - db)[0]
        sig, name = flip & _holm(boot, est, alpha), "bootstrap-holm"
        null = [None, None, tau, None, None]
    xa = fa.estimate.relative(fa.anchor)[0, ia]  # both boards share the anchor
    xb = fb.estimate.relative(fb.anchor)[0, ib]
    with np.errstate(invalid="ignore"):
        move = SCALE * (xb - xa)
    # a model without a finite rating in a board has no move; the anchor's is 0 by definition
    finite = np.isfinite(move) & (np.array(common) != fa.models[fa.anchor])
    k = int(np.argmax(np.where(finite, np.abs(move), -1.0))) if finite.any() else 0
    n_flip, n_sig = int(flip.sum()), int(sig.sum())
    rho = float(spearmanr(_places(fa.estimate, ia), _places(fb.estimate, ib)).statistic)
    return dict(
        zip(
            FLIP_COLUMNS,
            [
                *a, *b[1:], len(common), int(i.size), n_flip, n_sig, between,
                n_sig / n_flip if n_flip else float("nan"), name, *null, rho,
                float(move[k]) if finite.any() else float("nan"), common[k] if finite.any() else None,
            ],
        )
    )  # fmt: skip


def default_pairs(boards: Boards) -> list[tuple[tuple, tuple]]:
    """The comparisons reported: per (benchmark, judge, strategy) with ordered verdicts its
    first against its swapped board (order alone); each order-invariant board against the
    judge's raw pooled board (``single``/``pooled``: what the strategy moves); each judge's
    pooled and combined boards against the gold board (:data:`GOLD` as judge, strategy
    and view)."""
    keys = list(boards.fitted)
    out = []
    for k in keys:
        bench, judge, s, v = k
        if v == "first" and (bench, judge, s, "swapped") in boards.fitted:
            out.append((k, (bench, judge, s, "swapped")))
        if v == "combined" and (bench, judge, "single", "pooled") in boards.fitted:
            out.append(((bench, judge, "single", "pooled"), k))
    golds = [k for k in keys if k[1:] == (GOLD, GOLD, GOLD)]
    for p in golds:
        out += [
            (k, p)
            for k in keys
            if k[0] == p[0] and k != p and k[3] in ("pooled", "combined")
        ]
    return out


def _order_tests(
    boards: Boards,
    pairs: list,
    comps: pl.DataFrame,
    permutations: int,
    seed: int,
    method: str,
    prior: float,
) -> dict[tuple, OrderTest]:
    """The order permutation test of every first-vs-swapped pair in ``pairs``."""
    wanted = {a[:3] for a, b in pairs if a[3] == "first" and b == (*a[:3], "swapped")}
    if not wanted:
        return {}
    out = {}
    for key, u in order_units(comps).group_by(
        ["benchmark", "judge", "strategy"], maintain_order=True
    ):
        if key in wanted:
            out[key] = order_test(
                u, method=method, prior=prior, permutations=permutations, seed=seed
            )
    return out


def rank_flips(
    boards: Boards,
    pairs: Iterable[tuple[tuple, tuple]] | None = None,
    level: float = 0.95,
    *,
    comps: pl.DataFrame | None = None,
    method: str = "bt",
    prior: float = 0.0,
    permutations: int = 1000,
    seed: int = 0,
) -> pl.DataFrame:
    """Rank flips, their family-wise significance, τ and ρ and the largest move for each
    pair of boards (default :func:`default_pairs`).

    Args:
        boards: the fitted leaderboards.
        pairs: (board key, board key) pairs; level: 1 − α, the family-wise error rate.
        comps: the comparisons the boards were fitted on
            (:data:`~voirdire.analysis.ranking.order_views.COMPARISON_SCHEMA`): with them, each
            first-vs-swapped pair gets the order permutation tests
            (:func:`~voirdire.analysis.ranking.order_test.order_test`, ``permutations``
            draws of each null, ``seed``, refitted with ``method`` and ``prior`` as the boards);
            without them every pair gets the bootstrap Wald tests with Holm's adjustment.

    Returns:
        :data:`FLIP_COLUMNS`: the first board's (benchmark, judge, strategy, view), the
        second's (judge_b, strategy_b, view_b), ``models`` and ``pairs`` (int: common
        models, model pairs), ``flips`` and ``flips_significant`` (int),
        ``flips_significant_candidates`` (int: of them, between two candidates; null for
        the bootstrap-holm rows), ``share_significant`` (float: significant / flips), ``test`` (str:
        ``order-permutation`` or ``bootstrap-holm``), ``flips_null`` (float: mean flips of an
        order-blind judge on the same verdicts), ``flips_p`` (float: permutation p-value of
        the flips), ``kendall_tau``, ``tau_null``, ``tau_p`` (float: likewise for τ-b),
        ``spearman_rho`` (float), ``max_move`` (float, Arena points, second minus first)
        and ``max_move_model`` (str). The ``_null``/``_p`` columns are null for the
        bootstrap-holm rows.
    """
    pairs = list(default_pairs(boards) if pairs is None else pairs)
    tests = (
        {}
        if comps is None
        else _order_tests(boards, pairs, comps, permutations, seed, method, prior)
    )
    rows = [
        r
        for a, b in pairs
        if (
            r := compare(
                boards,
                a,
                b,
                level,
                tests.get(a[:3])
                if (a[3], b) == ("first", (*a[:3], "swapped"))
                else None,
            )
        )
    ]
    schema = dict.fromkeys(FLIP_COLUMNS[:7], pl.String) | dict.fromkeys(_INT, pl.Int64)
    schema |= dict.fromkeys(_FLOAT, pl.Float64) | {
        "test": pl.String,
        "max_move_model": pl.String,
    }
    schema = {c: schema[c] for c in FLIP_COLUMNS}
    return (
        pl.DataFrame(rows, schema=schema, orient="row")
        if rows
        else pl.DataFrame(schema=schema)
    )
