"""Prediction-powered inference (PPI++) for a mean and for a logistic regression.

Sources: Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, *Prediction-powered inference*,
Science 382 (2023); Angelopoulos, Duchi and Zrnic, *PPI++: Efficient prediction-powered
inference*, arXiv:2311.01453 (2023), whose reference implementation is ``ppi-python``
(``ppi_py.ppi_mean_ci``, ``ppi_py.ppi_logistic_ci``, ``ppi_py.ppi._calc_lam_glm``). The
functions here compute what those compute, with the same conventions (population variances
``ddof = 0`` for the mean, ``ddof = 1`` for the GLM's gradients, the power-tuning ``λ``
clipped to [0, 1]), so that ``tests/test_people_ppi.py`` checks them against ``ppi-python``
on fixed data; they take ties (a label of 0.5) where ``ppi-python``'s logistic start
(scikit-learn's classifier) does not.

Notation: ``n`` labelled items with human label ``y`` and the judge's prediction
``ŷ``; ``N`` unlabelled items with the prediction ``ŷ_u`` only (disjoint from the labelled
ones). With ``λ = 0`` the estimates are human labels alone (the classical estimate);
with ``λ = 1`` PPI; PPI++ picks the ``λ`` that minimises the estimate's variance.

- **Mean**: ``θ̂ = λ·mean(ŷ_u) + mean(y − λ·ŷ)``, variance
  ``λ²·var(ŷ_u)/N + var(y − λ·ŷ)/n``; ``λ̂ = cov(y, ŷ) / ((1 + n/N)·var(ŷ ∪ ŷ_u))``.
- **Logistic regression** (no intercept; ``y ∈ [0, 1]``): ``θ̂`` minimises
  ``(1/n)Σ ℓ(θ; x, y) − λ·(1/n)Σ ℓ(θ; x, ŷ) + λ·(1/N)Σ ℓ(θ; x_u, ŷ_u)`` with the logistic
  loss ``ℓ = −y·xᵀθ + log(1 + e^{xᵀθ})`` (convex for λ ∈ [0, 1]: its Hessian is
  ``(1 − λ)·H_lab + λ·H_unlab``), by Newton's method; covariance
  ``H⁻¹ (n/N·Cov(λ·∇ℓ_u) + Cov(∇ℓ − λ·∇ℓ̂)) H⁻¹ / n`` (the sandwich).

Intervals are Wald intervals ``θ̂ ± z_{1−a/2}·se`` at the level asked (two-sided). No
function here reads a table: :mod:`voirdire.analysis.people.boards` applies them to pairs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import expit
from scipy.stats import norm

__all__ = [
    "Estimate",
    "mean_lambda",
    "mean_leave_one_out",
    "ppi_mean",
    "ppi_logistic",
    "wald",
]

#: Newton's method: at most this many steps, each capped at this size in any coordinate,
#: and ``|θ|`` bounded (a coefficient without a finite optimum stops there)
_STEPS, _CAP, _BOUND = 100, 5.0, 25.0


class Estimate(NamedTuple):
    """An estimate with its covariance: ``theta`` (d,), ``cov`` (d, d) (the estimate's, not
    the data's: already divided by the sample sizes) and ``lam`` (the power tuning used: one
    number, or one per coordinate, (d,), where each coordinate was tuned alone)."""

    theta: np.ndarray
    cov: np.ndarray
    lam: float | np.ndarray


def wald(
    theta: np.ndarray, se: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Wald interval ``θ ± z·se`` at ``level`` (e.g. 0.9)."""
    z = norm.ppf(0.5 + level / 2)
    return theta - z * se, theta + z * se


def mean_lambda(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray) -> float:
    """PPI++'s power tuning of a mean (``ppi_py.ppi._calc_lam_glm`` with an identity Hessian):
    ``cov₀(y, ŷ) / ((1 + n/N)·var₁(ŷ ∪ ŷ_u))`` clipped to [0, 1]; 0 without unlabelled items
    or without spread in the predictions."""
    n, big_n = y.size, yhat_u.size
    if big_n == 0 or n < 2:
        return 0.0
    var = np.var(np.concatenate([yhat, yhat_u]), ddof=1)
    if not var > 0:
        return 0.0
    cov = np.mean((y - y.mean()) * (yhat - yhat.mean()))
    return float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0))


def mean_leave_one_out(
    y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray, lam: float | None = None
) -> np.ndarray:
    """The PPI++ mean without each labelled item in turn (n,), λ tuned again each time
    (:func:`mean_lambda` on the ``n − 1`` items; ``lam`` fixed: not tuned): the jackknife's
    replicates (Quenouille 1956; Tukey 1958). Their spread carries the variability of the
    tuned λ, which the plug-in variance leaves out (with a few tens of labels it reads
    intervals too narrow). Closed form from the sums, no refit. NaN for fewer than two items."""
    y, yhat, yhat_u = (np.asarray(v, dtype=float) for v in (y, yhat, yhat_u))
    n, big_n = y.size, yhat_u.size
    if n < 2:
        return np.full(n, np.nan)
    m = n - 1
    sy, sh = y.sum() - y, yhat.sum() - yhat
    if lam is not None or big_n == 0:
        lam_i = np.full(n, 0.0 if big_n == 0 else float(lam))
    else:
        syh, shh = (y * yhat).sum() - y * yhat, (yhat * yhat).sum() - yhat * yhat
        tot, totsq, size = sh + yhat_u.sum(), shh + (yhat_u**2).sum(), m + big_n
        var = (totsq - tot**2 / size) / (size - 1)
        cov = syh / m - (sy / m) * (sh / m)
        with np.errstate(divide="ignore", invalid="ignore"):
            raw = np.where(var > 1e-15, cov / ((1 + m / big_n) * var), 0.0)
        lam_i = np.where(m < 2, 0.0, np.clip(raw, 0.0, 1.0))
    imputed = lam_i * yhat_u.mean() if big_n else 0.0
    return imputed + (sy - lam_i * sh) / m


def ppi_mean(
    y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray, lam: float | None = None
) -> Estimate:
    """The PPI++ estimate of a mean (module docstring) and its variance.

    Args:
        y, yhat: (n,) human labels and the judge's predictions on the labelled items.
        yhat_u: (N,) the judge's predictions on the unlabelled items.
        lam: the power tuning; None: PPI++'s (:func:`mean_lambda`); 0: labels alone.

    Returns:
        :class:`Estimate` with ``theta`` (1,), ``cov`` (1, 1).

    Raises:
        ValueError: no labelled item, or ``y`` and ``yhat`` of different lengths.
    """
    y, yhat, yhat_u = (np.asarray(v, dtype=float) for v in (y, yhat, yhat_u))
    if y.size == 0 or y.shape != yhat.shape:
        raise ValueError("a mean needs labelled items with one prediction each")
    lam = mean_lambda(y, yhat, yhat_u) if lam is None else float(lam)
    if yhat_u.size == 0:
        lam = 0.0
    imputed = lam * yhat_u.mean() if yhat_u.size else 0.0
    theta = imputed + np.mean(y - lam * yhat)
    var = np.var(y - lam * yhat) / y.size
    if yhat_u.size:
        var += lam**2 * np.var(yhat_u) / yhat_u.size
    return Estimate(np.array([theta]), np.array([[var]]), lam)


def _newton(
    x: np.ndarray, y: np.ndarray, yhat: np.ndarray, xu: np.ndarray, yhat_u: np.ndarray, lam: float
) -> np.ndarray:  # fmt: skip
    """The minimiser of the rectified logistic loss (module docstring) at ``lam``."""
    n, big_n, d = x.shape[0], xu.shape[0], x.shape[1]
    theta = np.zeros(d)
    for _ in range(_STEPS):
        mu, mu_u = expit(x @ theta), expit(xu @ theta) if big_n else np.zeros(0)
        grad = x.T @ ((1 - lam) * mu - y + lam * yhat) / n
        hess = (x.T * ((1 - lam) * mu * (1 - mu))) @ x / n
        if big_n and lam:
            grad += lam * xu.T @ (mu_u - yhat_u) / big_n
            hess += (xu.T * (lam * mu_u * (1 - mu_u))) @ xu / big_n
        step = np.linalg.lstsq(hess + 1e-12 * np.eye(d), grad, rcond=None)[0]
        step = np.clip(step, -_CAP, _CAP)
        theta = np.clip(theta - step, -_BOUND, _BOUND)
        if np.max(np.abs(step)) < 1e-12:
            break
    return theta


def _stats(
    theta, x, y, yhat, xu, yhat_u, use_unlabelled: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``ppi_py.ppi._logistic_get_stats``: the per-item gradients on the labels, on the
    predictions, on the unlabelled predictions, and the inverse Hessian (over both sets, or
    the labelled alone)."""
    n, big_n = x.shape[0], xu.shape[0]
    mu, mu_u = expit(x @ theta), expit(xu @ theta)
    if use_unlabelled:
        hess = ((xu.T * (mu_u * (1 - mu_u))) @ xu + (x.T * (mu * (1 - mu))) @ x) / (
            big_n + n
        )
    else:
        hess = (x.T * (mu * (1 - mu))) @ x / n
    grads = x * (mu - y)[:, None]
    grads_hat = x * (mu - yhat)[:, None]
    grads_u = xu * (mu_u - yhat_u)[:, None] if use_unlabelled else np.zeros_like(xu)
    return grads, grads_hat, grads_u, np.linalg.pinv(hess)


def _glm_lambda(grads, grads_hat, grads_u, inv_h) -> float:
    """``ppi_py.ppi._calc_lam_glm`` (``optim_mode="overall"``, clipped to [0, 1])."""
    n, big_n, d = grads.shape[0], grads_u.shape[0], inv_h.shape[0]
    gc, hc = grads - grads.mean(0), grads_hat - grads_hat.mean(0)
    cov = (gc.T @ hc + hc.T @ gc) / n
    var = np.cov(np.concatenate([grads_hat, grads_u]).T).reshape(d, d)
    num = np.trace(inv_h @ cov @ inv_h)
    den = 2 * (1 + n / big_n) * np.trace(inv_h @ var @ inv_h)
    return float(np.clip(num / den, 0.0, 1.0)) if den > 0 else 0.0


def ppi_logistic(
    x: np.ndarray,
    y: np.ndarray,
    yhat: np.ndarray,
    xu: np.ndarray,
    yhat_u: np.ndarray,
    lam: float | None = None,
    clusters: tuple[np.ndarray, np.ndarray] | None = None,
) -> Estimate:
    """The PPI++ estimate of a logistic regression without intercept (module docstring) and
    its covariance, as ``ppi_py.ppi_logistic_ci`` computes them: with ``lam=None`` the fit at
    λ = 1, λ tuned there, refitted, tuned again at that fit and refitted (the centre of
    ``ppi_logistic_ci``'s interval); the covariance at the final fit.

    Args:
        x: (n, d) covariates of the labelled items; y, yhat: (n,) labels and predictions in
            [0, 1] (a tie 0.5).
        xu: (N, d) and yhat_u (N,): the unlabelled items.
        lam: the power tuning; None: PPI++'s; 0: labels alone (the unlabelled items unused).
        clusters: ``(c, c_u)``, (n,) and (N,) int cluster codes of the labelled and the
            unlabelled items in one code space (0..G−1): the cluster-robust covariance
            (Liang and Zeger 1986; CR1 in Cameron and Miller 2015) of PPI++'s influence
            function, ``H⁻¹ (G/(G − 1)) Σ_g s_g s_gᵀ H⁻¹`` with
            ``s_g = Σ_{i∈g, labelled} (∇ℓ_i − λ∇ℓ̂_i − mean)/n + Σ_{i∈g, unlabelled}
            λ(∇ℓ_u,i − mean)/N`` (labelled and unlabelled items of one cluster together;
            the same λ and fit). None: items independent (``ppi-python``'s covariance).

    Returns:
        :class:`Estimate`: ``theta`` (d,), ``cov`` (d, d).

    Raises:
        ValueError: no labelled item, or shapes that do not match.
    """
    x, xu = np.asarray(x, dtype=float), np.asarray(xu, dtype=float)
    y, yhat, yhat_u = (np.asarray(v, dtype=float) for v in (y, yhat, yhat_u))
    if y.size == 0 or x.shape[0] != y.size or yhat.shape != y.shape:
        raise ValueError("a logistic fit needs labelled items with one prediction each")
    if xu.shape[0] != yhat_u.size:
        raise ValueError("unlabelled covariates and predictions differ in length")
    if xu.shape[0] == 0:
        lam = 0.0
    if lam is None:
        for start in (
            1.0,
            None,
        ):  # ppi_logistic_pointestimate, then ppi_logistic_ci's step
            theta = _newton(x, y, yhat, xu, yhat_u, 1.0 if start else lam)
            lam = _glm_lambda(*_stats(theta, x, y, yhat, xu, yhat_u, True))
    lam = float(lam)
    theta = _newton(x, y, yhat, xu, yhat_u, lam)
    n, big_n, d = x.shape[0], xu.shape[0], x.shape[1]
    grads, grads_hat, grads_u, inv_h = _stats(theta, x, y, yhat, xu, yhat_u, lam != 0)
    if clusters is not None:
        c, c_u = (np.asarray(v, dtype=np.int64) for v in clusters)
        if c.shape != (n,) or c_u.shape != (big_n,):
            raise ValueError("cluster codes do not match the items")
        g = int(max(c.max(initial=-1), c_u.max(initial=-1))) + 1
        infl = grads - lam * grads_hat
        sums = np.zeros((g, d))
        np.add.at(sums, c, (infl - infl.mean(0)) / n)
        if big_n and lam:
            np.add.at(sums, c_u, lam * (grads_u - grads_u.mean(0)) / big_n)
        used = np.unique(np.r_[c, c_u] if big_n and lam else c).size
        meat = sums.T @ sums * (used / (used - 1) if used > 1 else np.nan)
        return Estimate(theta, inv_h @ meat @ inv_h, lam)
    var = (
        np.cov((grads - lam * grads_hat).T).reshape(d, d) if n > 1 else np.zeros((d, d))
    )
    if big_n > 1 and lam:
        var = var + n / big_n * np.cov((lam * grads_u).T).reshape(d, d)
    return Estimate(theta, inv_h @ var @ inv_h / n, lam)
