"""AlpacaEval's instruction difficulty, fitted across models as AlpacaEval computes it.

Source: ``alpaca_eval`` ``notebooks/instruction_difficulty.ipynb`` (the term the
length-controlled v1 formula reads, :mod:`~voirdire.analysis.ranking.length_control_v1`):
one L1-penalised logistic regression over every model's annotations against the baseline,

    ``logit P(model beats baseline on i) = γ_m tanh(Δ_mi / sd_m) + b_m + d_i``,

``Δ_mi`` the baseline's minus the model's length (characters; ``sd_m`` its sd over the
model's rows, ddof 1), ``γ_m`` and ``b_m`` one per model, ``d_i`` one per instruction
(treatment coding: the first instruction is the reference, ``d = 0``; AlpacaEval's
``C(index)`` with index 0 its first instruction), fitted as ``fit_LogisticRegressionCV``
does (:mod:`~voirdire.analysis.ranking.glm`: liblinear's objective, every coefficient
penalised, fractional outcomes, C chosen over the default grid by five group folds of the
rows). ``d_i`` is the instruction difficulty (larger: the models beat the baseline more
often there).

AlpacaEval's published length-controlled win rates read a precomputed difficulty
(``instruction_difficulty.csv`` of its Hugging Face dataset, "computed on fewer models in
early 2024", the notebook says) which its repository does not hold; voirdire computes it by
the notebook's procedure from the models audited (``docs/ranking.md``: how far that moves
the published figures). The notebook's gamed baselines (``not_gamed_baseline``) are not
among AlpacaEval's published annotations, so that column (constant for the rest) is left
out.

Solver: the same objective with each coefficient split into its positive and negative
parts (smooth, with bounds: scipy's L-BFGS-B), warm-started along the grid of C; it solves
further than liblinear's default tolerance (1e-4): on AlpacaEval 2's 57 models at liblinear's
chosen C its objective is lower and the difficulties differ from scikit-learn's by at most
0.03 (``docs/ranking.md``).
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.optimize import minimize
from scipy.special import expit

from voirdire.analysis.ranking.glm import LC_CS, LC_FOLDS, group_folds

__all__ = ["DIFFICULTY_COLUMNS", "instruction_difficulty", "joint_fit"]

#: columns of :func:`instruction_difficulty`
DIFFICULTY_COLUMNS = ["cluster", "difficulty"]


def _loss(eta: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta))) - y * eta


class _Design:
    """The rows of the joint fit: per row its model ``m``, instruction ``i`` (0 the
    reference), slope feature ``t``, outcome ``y``."""

    def __init__(self, m, i, t, y, n_models, n_inst):
        self.m, self.i, self.t, self.y = m, i, t, y
        self.nm, self.ni = n_models, n_inst

    def eta(self, beta):
        s, b, e = self.split(beta)
        return s[self.m] * self.t + b[self.m] + e[self.i]

    def split(self, beta):
        nm = self.nm
        return beta[:nm], beta[nm : 2 * nm], np.r_[0.0, beta[2 * nm :]]


def _objective(des, beta, w, c):
    return np.abs(beta).sum() + c * (w * _loss(des.eta(beta), des.y)).sum()


def _solve(des, w, c, beta, tol=1e-9):
    """liblinear's L1 objective at ``c`` minimised from ``beta`` (``w``: row weights): the
    coefficients split into their positive and negative parts, ``β = u − v``, ``u, v ≥ 0``,
    so the objective ``Σ (u + v) + c Σ w ℓ`` is smooth and bounded (L-BFGS-B, scipy; ``tol``
    its relative reduction to stop at); at its minimum no coefficient has both parts. Each
    part is scaled by ``√(c · Σ w x² / 4 + 1)`` (the Hessian's diagonal at β = 0: the
    instruction effects see ~60 rows, the models ~800), which halves the iterations."""
    p, nm = beta.size, des.nm
    diag = np.r_[
        np.bincount(des.m, w * des.t**2, nm),
        np.bincount(des.m, w, nm),
        np.bincount(des.i, w, des.ni)[1:],
    ]
    scale = np.sqrt(c * 0.25 * diag + 1.0)
    scale = np.r_[scale, scale]

    def fg(z):
        uv = z / scale
        eta = des.eta(uv[:p] - uv[p:])
        r = c * w * (expit(eta) - des.y)
        g = np.r_[
            np.bincount(des.m, r * des.t, nm),
            np.bincount(des.m, r, nm),
            np.bincount(des.i, r, des.ni)[1:],
        ]
        f = uv.sum() + c * (w * _loss(eta, des.y)).sum()
        return f, np.r_[1.0 + g, 1.0 - g] / scale

    start = np.r_[np.maximum(beta, 0.0), np.maximum(-beta, 0.0)] * scale
    res = minimize(fg, start, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * (2 * p),
                   options={"maxiter": 20_000, "ftol": tol, "gtol": 1e-9, "maxcor": 20})  # fmt: skip
    uv = res.x / scale
    return uv[:p] - uv[p:]


def joint_fit(des: _Design, folds: np.ndarray, cs: np.ndarray = LC_CS):
    """``(coefficients at the chosen C, the chosen C)`` of the joint fit: every C of ``cs``
    fitted on each fold's training rows (warm-started along ``cs``), scored by the held-out
    mean continuous log loss summed over folds (predictions clipped to [1e-15, 1 − 1e-15]),
    the smallest C of the best score refitted on all rows (``LogisticRegressionCV``)."""
    p = 2 * des.nm + des.ni - 1
    scores = np.zeros(len(cs))
    for f in range(int(folds.max()) + 1):
        train = (folds != f).astype(float)
        test = folds == f
        beta = np.zeros(p)
        for k, c in enumerate(cs):
            beta = _solve(des, train, float(c), beta)
            q = np.clip(expit(des.eta(beta)[test]), 1e-15, 1 - 1e-15)
            y = des.y[test]
            scores[k] += -np.mean(y * np.log(q) + (1 - y) * np.log(1 - q))
    best = float(cs[int(np.argmin(scores))])
    beta, ones = np.zeros(p), np.ones(des.y.size)
    for c in cs[: int(np.argmin(scores)) + 1]:
        beta = _solve(des, ones, float(c), beta)
    return _solve(des, ones, best, beta, tol=1e-12), best


def instruction_difficulty(
    rows: pl.DataFrame, reference: str | None = None
) -> pl.DataFrame:
    """The instruction difficulty of the module docstring from every model's comparisons
    with one baseline.

    Args:
        rows: one row per decided comparison: ``model`` (str), ``cluster`` (str: the
            instruction), ``y`` (float in
            [0, 1]: the probability, or share, that the model beat the baseline),
            ``len_m``, ``len_b`` (float: the model's and the baseline's answer lengths).
        reference: the instruction whose difficulty is 0 (AlpacaEval's first instruction:
            the frame its published weights were fitted in); None or absent from ``rows``:
            the first one met.

    Returns:
        :data:`DIFFICULTY_COLUMNS`: ``cluster`` (str), ``difficulty`` (float, logit units),
        one row per instruction in ``rows``, in the order first met.
    """
    if rows.height == 0:
        return pl.DataFrame(schema={"cluster": pl.String, "difficulty": pl.Float64})
    insts = rows.get_column("cluster").unique(maintain_order=True)
    if reference is not None and reference in insts:
        insts = pl.concat(
            [pl.Series("cluster", [reference]), insts.filter(insts != reference)]
        )
    models = rows.get_column("model").unique(maintain_order=True)
    r = rows.with_columns(
        delta=(pl.col("len_b") - pl.col("len_m")).cast(pl.Float64)
    ).with_columns(sd=pl.col("delta").std(ddof=1).over("model"))
    t = (
        r.select(
            pl.when(pl.col("sd") > 0).then((pl.col("delta") / pl.col("sd")).tanh()).otherwise(0.0)
        )
        .to_series()
        .fill_null(0.0)
        .to_numpy()
    )  # fmt: skip
    m_ix = {v: k for k, v in enumerate(models.to_list())}
    i_ix = {v: k for k, v in enumerate(insts.to_list())}
    des = _Design(
        np.array([m_ix[v] for v in r.get_column("model").to_list()]),
        np.array([i_ix[v] for v in r.get_column("cluster").to_list()]),
        t,
        r.get_column("y").cast(pl.Float64).to_numpy(),
        len(m_ix),
        len(i_ix),
    )
    folds = group_folds([str(k) for k in range(r.height)], LC_FOLDS)
    beta, _ = joint_fit(des, folds)
    return pl.DataFrame({"cluster": insts, "difficulty": des.split(beta)[2]})
