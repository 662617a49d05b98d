"""L1-penalised logistic regression with cross-validated strength, batched over weight rows.

The fit behind AlpacaEval 2's length-controlled win rate (``alpaca_eval/metrics/glm_winrate.py``,
``fit_LogisticRegressionCV``): scikit-learn's ``LogisticRegressionCV(penalty="l1",
solver="liblinear", fit_intercept=False)`` on fractional outcomes, with its default grid of
ten strengths ``C = 10^-4 … 10^4``, five group folds, the held-out log loss as the score, and
a refit on all the data at the best ``C``. liblinear minimises, for each ``C``,

    ``Σ_p |β_p| + C Σ_i w_i [y_i log(1 + e^{−x_i β}) + (1 − y_i) log(1 + e^{x_i β})]``

— every coefficient penalised, the constant column included (there is no free intercept).
:func:`l1_logit` minimises the same objective (proximal Newton: the L1 problem on the quadratic
model solved exactly over sign patterns — fine for the few coefficients here —, then the
best of a few step lengths); it
solves to ``tol`` rather than liblinear's default 1e-4, so coefficients agree to about that.
:func:`cv_l1_logit` chooses ``C`` as ``LogisticRegressionCV`` does (the largest summed score
over folds, the first — smallest — ``C`` on a tie). scikit-learn is not a dependency.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import expit

from voirdire.analysis.ranking.bt import CLIP

__all__ = [
    "LC_CS",
    "LC_FOLDS",
    "l1_objective",
    "l1_logit",
    "group_folds",
    "cv_l1_logit",
]

#: scikit-learn's LogisticRegressionCV default grid (``Cs=10``: ``np.logspace(-4, 4, 10)``)
LC_CS = np.logspace(-4, 4, 10)
#: AlpacaEval's ``n_splits`` (GroupKFold)
LC_FOLDS = 5
_STEPS = np.r_[2.0 ** -np.arange(0, 12, 1.5), 0.0]
_CHUNK = 2048


def l1_objective(
    beta: np.ndarray, x: np.ndarray, y: np.ndarray, w: np.ndarray, c: np.ndarray
) -> np.ndarray:
    """liblinear's L1 objective (module docstring) per row: beta (R, P), x (N, P), y (N,),
    w (R, N), c (R,) → (R,)."""
    s = beta @ x.T
    loss = (
        np.maximum(s, 0.0) + np.log1p(np.exp(-np.abs(s))) - y * s
    )  # −[y log σ(s) + (1−y) log σ(−s)]
    return np.abs(beta).sum(axis=-1) + c * (w * loss).sum(axis=-1)


def _l1_qp(h: np.ndarray, lin: np.ndarray) -> np.ndarray:
    """Exact minimiser of ``½uᵀHu + linᵀu + |u|₁`` per row (h (R, P, P) positive definite,
    lin (R, P)): the best of the sign patterns (each coordinate 0, + or −) whose stationary
    point keeps its signs — the minimiser is one of them."""
    r, p = lin.shape
    best_u, best_f = np.zeros((r, p)), np.zeros(r)
    for pattern in itertools.product((0.0, 1.0, -1.0), repeat=p):
        s = np.array(pattern)
        free = np.flatnonzero(s)
        if free.size == 0:
            continue
        hf = h[:, free[:, None], free[None, :]]
        uf = -np.linalg.solve(hf, (lin[:, free] + s[free])[:, :, None])[:, :, 0]
        ok = np.all(np.sign(uf) == s[free], axis=1)
        u = np.zeros((r, p))
        u[:, free] = uf
        f = (
            0.5 * np.einsum("rp,rpq,rq->r", u, h, u)
            + (lin * u).sum(axis=1)
            + np.abs(u).sum(axis=1)
        )
        take = ok & (f < best_f)
        best_u[take], best_f[take] = u[take], f[take]
    return best_u


def _solve(x, y, w, c, max_iter, tol):
    r, p = w.shape[0], x.shape[1]
    beta = np.zeros((r, p))
    f = l1_objective(beta, x, y, w, c)
    for _ in range(max_iter):
        q = expit(beta @ x.T)
        g = c[:, None] * ((w * (q - y)) @ x)
        h = c[:, None, None] * np.einsum(
            "rn,np,nq->rpq", w * q * (1 - q), x, x, optimize=True
        )
        h = h + 1e-12 * np.eye(p)
        lin = g - np.einsum("rpq,rq->rp", h, beta)
        u = _l1_qp(h, lin)
        d = u - beta
        new, f_new = beta + d, l1_objective(beta + d, x, y, w, c)
        bad = np.flatnonzero(
            f_new > f
        )  # the full step overshoots: the best of shorter ones
        if bad.size:
            cand = beta[bad][None] + _STEPS[1:, None, None] * d[bad][None]
            fs = np.stack([l1_objective(b_, x, y, w[bad], c[bad]) for b_ in cand])
            k = fs.argmin(axis=0)
            new[bad], f_new[bad] = (
                cand[k, np.arange(bad.size)],
                fs[k, np.arange(bad.size)],
            )
        new = np.clip(new, -CLIP, CLIP)
        moved = np.abs(new - beta).max() if r else 0.0
        beta, f = new, f_new
        if moved < tol:
            break
    return beta


def l1_logit(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    c: np.ndarray | float,
    *,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> np.ndarray:
    """Minimise liblinear's L1 objective (module docstring) for every row of weights.

    Args:
        x: (N, P) design (float); y: (N,) outcomes in [0, 1] (fractional: the probability that
            the row's first answer wins); w: (R, N) non-negative weights; c: the inverse
            penalty strength, a scalar or (R,).

    Returns:
        (R, P) coefficients (float), clipped at ±:data:`~voirdire.analysis.ranking.bt.CLIP`.
    """
    w = np.atleast_2d(np.asarray(w, dtype=float))
    c = np.broadcast_to(np.asarray(c, dtype=float), (w.shape[0],))
    parts = [
        _solve(x, y, w[i : i + _CHUNK], c[i : i + _CHUNK], max_iter, tol)
        for i in range(0, w.shape[0], _CHUNK)
    ]
    return np.concatenate(parts) if parts else np.zeros((0, x.shape[1]))


def group_folds(groups: list[str], n_splits: int = LC_FOLDS) -> np.ndarray:
    """Fold of each row, rows of one group together: scikit-learn's ``GroupKFold`` rule (groups
    by size, largest first, each to the fold with the fewest rows so far; equal sizes in the
    order of their names, the first such fold on a tie). Returns (N,) int."""
    names, inv, size = np.unique(
        np.asarray(groups, dtype=object), return_inverse=True, return_counts=True
    )
    order = sorted(range(names.size), key=lambda i: (-size[i], names[i]))
    load, fold_of = np.zeros(n_splits), np.zeros(names.size, dtype=int)
    for i in order:
        fold_of[i] = int(load.argmin())
        load[fold_of[i]] += size[i]
    return fold_of[inv]


def cv_l1_logit(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    folds: np.ndarray,
    *,
    cs: np.ndarray = LC_CS,
) -> tuple[np.ndarray, np.ndarray]:
    """``LogisticRegressionCV``'s choice of ``C`` and its refit, for every row of weights.

    Args:
        x, y, w: as :func:`l1_logit` (w: (R, N)).
        folds: (N,) int fold of each row (0 … F−1); rows of one group share a fold.
        cs: the grid of ``C``.

    Returns:
        ((R, P) coefficients refitted on all rows at the chosen ``C``, (R,) the chosen ``C``).
        The score of a ``C`` is the sum over folds of the fold's held-out mean log loss
        (weighted by ``w``; predictions clipped to [1e-15, 1 − 1e-15] as AlpacaEval's
        ``logloss``); a fold whose held-out weight is 0 in a row is left out of that row's sum.
    """
    w = np.atleast_2d(np.asarray(w, dtype=float))
    r, n, k = w.shape[0], x.shape[0], len(cs)
    nf = int(folds.max()) + 1
    test = folds[None, :] == np.arange(nf)[:, None]  # (F, N)
    train_w = (w[:, None, None, :] * ~test[None, :, None, :]).repeat(
        k, axis=2
    )  # (R, F, K, N)
    c_all = np.broadcast_to(cs, (r, nf, k))
    beta = l1_logit(x, y, train_w.reshape(-1, n), c_all.reshape(-1)).reshape(
        r, nf, k, -1
    )
    q = np.clip(expit(np.einsum("rfkp,np->rfkn", beta, x)), 1e-15, 1 - 1e-15)
    loss = -(y * np.log(q) + (1 - y) * np.log(1 - q))
    tw = w[:, None, :] * test[None]  # (R, F, N)
    tot = tw.sum(axis=-1)  # (R, F)
    with np.errstate(invalid="ignore", divide="ignore"):
        fold_loss = np.einsum("rfn,rfkn->rfk", tw, loss) / tot[:, :, None]
    score = np.where(tot[:, :, None] > 0, fold_loss, 0.0).sum(axis=1)  # (R, K)
    chosen = np.asarray(cs)[score.argmin(axis=1)]
    return l1_logit(x, y, w, chosen), chosen
