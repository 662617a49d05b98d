"""Bradley–Terry and Davidson fits, batched over bootstrap replicates (numpy Newton).

Both fits take (R, K, K) arrays of counts, one K × K table per replicate: ``wins[r, i, j]``
the decisive wins of model ``i`` over model ``j`` and ``ties[r, i, j]`` (symmetric) the
ties between them, and return (R, K) log-strengths ``θ`` (natural-log scale) summing to 0
over each connected piece of the comparison graph: no model is fixed, so nothing depends
on an anchor (with ``anchor``, θ is shifted so that the anchor's is 0 instead). Ratings on
Chatbot Arena's scale are ``anchor_rating + 400/ln 10 · (θ − θ_anchor)`` (:func:`to_rating`).

- **Bradley–Terry** (Bradley & Terry 1952; Zermelo 1929): ``P(i beats j) = σ(θ_i − θ_j)``,
  a tie counted as half a win and half a loss (Chatbot Arena's convention). The weighted
  logistic log-likelihood ``Σ_ij W_ij log σ(θ_i − θ_j)``, ``W = wins + ties/2``, is
  maximised by Newton's method; ``tests/test_ranking.py`` checks it against statsmodels'
  ``Logit`` on the expanded design to 1e-6.
- **Davidson** (Davidson 1970, JASA 65:317): ``P(i beats j) = π_i / D``, ``P(tie) =
  ν √(π_i π_j) / D``, ``D = π_i + π_j + ν √(π_i π_j)``, ``π = e^θ``; ``ν`` is fitted with the
  strengths (on ``log ν``). Checked against a direct scipy maximisation.

Newton steps are solved for all replicates at once (``np.linalg.solve`` on (R, P, P)), the
Hessian of θ completed by the projector on each piece's constant vector (the direction the
likelihood does not see; the steps keep each piece's sum at 0). A step is capped at 5 in any
coordinate and ``θ`` at ±:data:`CLIP`, a guard only: counts whose maximum likelihood is not
finite (a model that wins, or loses, every comparison) are fitted through
:func:`~voirdire.analysis.ranking.strengths.fit_strengths`, which gives the method only the
comparisons inside strongly connected parts and keeps the infinite differences apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from voirdire.analysis.ranking.registry import RANKINGS
from voirdire.analysis.ranking.strengths import forest_levels, forest_strengths, pieces

__all__ = [
    "SCALE",
    "CLIP",
    "Method",
    "BT",
    "DAVIDSON",
    "fit_bt",
    "fit_davidson",
    "to_rating",
]

#: Chatbot Arena's Elo-like scale: 400 / ln 10 rating points per unit of θ
SCALE = 400.0 / np.log(10.0)
#: bound on |θ| in the Newton iterations (a guard: :mod:`~voirdire.analysis.ranking.strengths`
#: keeps infinite differences apart), and what an infinite difference of θ counts as in the
#: flip statistics (about ±10,900 rating points)
CLIP = 25.0
_STEP = 5.0


def to_rating(theta: np.ndarray, anchor_rating: float = 1000.0) -> np.ndarray:
    """Ratings on the Arena scale: ``anchor_rating + 400/ln 10 · θ`` (θ measured from the
    anchor's: :meth:`~voirdire.analysis.ranking.strengths.Strengths.relative`)."""
    return anchor_rating + SCALE * np.asarray(theta)


def _projector(n: np.ndarray) -> np.ndarray:
    """(R, K, K): per replicate the projector on the constant vector of each connected piece
    of the comparison graph (``n > 0``: models that met)."""
    lab = pieces(n > 0)
    same = lab[:, :, None] == lab[:, None, :]
    return same / same.sum(axis=2, keepdims=True)


def _newton(
    grad_hess: Callable, x0: np.ndarray, extra: np.ndarray, max_iter: int, tol: float
) -> np.ndarray:
    """Maximise a concave log-likelihood of ``x`` (R, P), batched; ``grad_hess(x)`` gives
    the gradient (R, P) and Hessian (R, P, P); ``extra`` (R, P, P) is added to the negated
    Hessian (the pieces' projectors: zero along the gradient, so the steps keep the sums)."""
    x = x0.copy()
    eye = np.eye(x.shape[1])
    for _ in range(max_iter):
        g, h = grad_hess(x)
        h = extra - h
        damp = 1e-10 * (np.trace(h, axis1=1, axis2=2) / max(x.shape[1], 1) + 1.0)
        step = np.linalg.solve(h + damp[:, None, None] * eye, g[:, :, None])[:, :, 0]
        big = np.abs(step).max(axis=1, keepdims=True)
        step = np.where(big > _STEP, step * (_STEP / np.maximum(big, 1e-300)), step)
        new = np.clip(x + step, -CLIP, CLIP)
        moved = np.abs(new - x).max() if new.size else 0.0
        x = new
        if moved < tol:
            break
    return x


def _forest_bt(w: np.ndarray, n: np.ndarray) -> np.ndarray | None:
    """Bradley–Terry's maximum likelihood in closed form where every replicate's comparisons
    form a forest (the union over the replicates is one: a one-baseline board is a star),
    or None (a cycle, or a comparison won one way only: Newton's clipped path decides):
    :func:`~voirdire.analysis.ranking.strengths.forest_strengths`'s θ, centred over each
    connected piece as :func:`_newton`'s (``w``: (R, K, K) ``wins + ties/2``, ``n``:
    ``w + wᵀ``)."""
    levels = forest_levels((n > 0).any(axis=0))
    if levels is None:
        return None
    if not levels:  # no comparison: every model its own piece
        return np.zeros(w.shape[:2])
    got = forest_strengths(levels, w.shape[1], lambda c, p: (w[:, c, p], w[:, p, c]))
    return None if got is None else got.theta


def _tables(
    wins: np.ndarray, ties: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, bool]:
    """(R, K, K) float wins and ties (zeros when None), and whether one table was given."""
    w = np.asarray(wins, dtype=float)
    single = w.ndim == 2
    w = w[None] if single else w
    t = (
        np.zeros_like(w)
        if ties is None
        else np.asarray(ties, dtype=float).reshape(w.shape)
    )
    return w, t, single


def _shifted(th: np.ndarray, anchor: int | None, single: bool) -> np.ndarray:
    if anchor is not None:
        th = th - th[:, anchor : anchor + 1]
    return th[0] if single else th


def fit_bt(
    wins: np.ndarray,
    ties: np.ndarray | None = None,
    anchor: int | None = None,
    *,
    start: np.ndarray | None = None,
    max_iter: int = 100,
    tol: float = 1e-10,
) -> np.ndarray:
    """Bradley–Terry maximum-likelihood log-strengths, ties as half a win and half a loss.

    Args:
        wins: (R, K, K) or (K, K) decisive wins of row model over column model.
        ties: same shape, symmetric tie counts (None: no ties).
        anchor: None (θ sums to 0 over each connected piece of the comparisons) or the index
            of the model whose θ is shifted to 0 (meaningful within its piece).
        start: (K,) or (R, K) θ Newton starts from (None: 0), e.g. the full data's fit for
            the bootstrap replicates (the maximum is the same; a start not summing to 0 over
            a piece gives θ summing to its sum there).

    Returns:
        (R, K) or (K,) θ (float), within ±:data:`CLIP`.

    Where the comparisons form a forest and every one is won both ways (a one-baseline
    board's star) the maximum is in closed form (:func:`_forest_bt`), else Newton's.
    """
    w, t, single = _tables(wins, ties)
    w = w + 0.5 * t
    n = w + w.transpose(0, 2, 1)
    closed = _forest_bt(w, n)
    if closed is not None:
        return _shifted(closed, anchor, single)

    def grad_hess(th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = expit(th[:, :, None] - th[:, None, :])
        g = (w - n * p).sum(axis=2)
        c = n * p * (1.0 - p)
        h = c - np.einsum("rk,kl->rkl", c.sum(axis=2), np.eye(c.shape[1]))
        return g, h

    x0 = np.zeros(w.shape[:2])
    if start is not None:
        x0 = x0 + np.asarray(start, dtype=float)
    th = _newton(grad_hess, x0, _projector(n), max_iter, tol)
    return _shifted(th, anchor, single)


#: Bradley–Terry's likelihood: :func:`~voirdire.analysis.ranking.strengths.fit_strengths` may
#: fit a forest in closed form for it
fit_bt.bt_forest = True  # type: ignore[attr-defined]


def fit_davidson(
    wins: np.ndarray,
    ties: np.ndarray | None = None,
    anchor: int | None = None,
    *,
    max_iter: int = 100,
    tol: float = 1e-10,
    return_nu: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Davidson (1970) maximum-likelihood log-strengths and tie parameter ``ν``.

    Args and return as :func:`fit_bt`; with ``return_nu`` also ``ν`` ((R,) or scalar).
    Without any tie ``ν`` goes to 0 (``log ν`` stops at −:data:`CLIP`) and the strengths
    are Bradley–Terry's.
    """
    w, t, single = _tables(wins, ties)
    k = w.shape[1]
    dw = w - w.transpose(0, 2, 1)
    n = w + w.transpose(0, 2, 1) + t
    off = 1.0 - np.eye(k)

    def grad_hess(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        th, lg = z[:, :k], z[:, k]
        x = 0.5 * (th[:, :, None] - th[:, None, :])
        ex, emx, en = np.exp(x), np.exp(-x), np.exp(lg)[:, None, None]
        s = ex + emx + en
        pw, pl, pt = ex / s, emx / s, en / s
        fx, fxx = pw - pl, pw + pl - (pw - pl) ** 2
        g = np.empty_like(z)
        g[:, :k] = 0.5 * (dw - n * fx).sum(axis=2)
        g[:, k] = 0.5 * ((t - n * pt) * off).sum(axis=(1, 2))
        h = np.empty((z.shape[0], k + 1, k + 1))
        c = 0.25 * n * fxx * off
        h[:, :k, :k] = c - np.einsum("rk,kl->rkl", c.sum(axis=2), np.eye(k))
        cross = 0.5 * (n * fx * pt * off).sum(axis=2)
        h[:, :k, k] = cross
        h[:, k, :k] = cross
        h[:, k, k] = -0.5 * (n * pt * (1.0 - pt) * off).sum(axis=(1, 2))
        return g, h

    extra = np.zeros((w.shape[0], k + 1, k + 1))
    extra[:, :k, :k] = _projector(n)
    z = _newton(grad_hess, np.zeros((w.shape[0], k + 1)), extra, max_iter, tol)
    th, nu = _shifted(z[:, :k], anchor, single), np.exp(z[:, k])
    if single:
        nu = nu[0]
    return (th, nu) if return_nu else th


@dataclass(frozen=True)
class Method:
    """A ranking method: ``fit(wins, ties) -> θ``, (R, K, K) counts to (R, K) log-strengths
    identified up to a constant in each connected piece of the comparisons (see
    :func:`fit_bt`), registered on :data:`~voirdire.analysis.ranking.registry.RANKINGS`.
    voirdire calls it through :func:`~voirdire.analysis.ranking.strengths.fit_strengths`:
    only with comparisons inside strongly connected parts (every piece has a finite
    maximum), and centres what it returns over each part."""

    name: str
    fit: Callable[..., np.ndarray]
    doc: str = ""


BT = RANKINGS.register(
    Method("bt", fit_bt, "Bradley–Terry, a tie half a win (Chatbot Arena)")
)
DAVIDSON = RANKINGS.register(
    Method(
        "davidson", fit_davidson, "Davidson (1970): ties modelled with a parameter ν"
    )
)
