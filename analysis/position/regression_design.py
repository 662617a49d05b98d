"""The design matrices and least-squares fits of the factor regression.

:mod:`voirdire.analysis.position.regression` selects terms by AIC; the designs and fits
it compares are built here: :func:`design_blocks` (per-term columns: treatment-coded
dummies or a z-scored numeric), :class:`Gram` (every submodel's RSS and rank from one
cross-product matrix; :func:`scorer` adds R's AIC, :func:`aic`) and :func:`final_fit`
(the selected model by statsmodels OLS). :func:`aic` is importable from
:mod:`voirdire.analysis.position.regression` too.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl
import statsmodels.api as sm

__all__ = ["aic", "design_blocks", "design", "Gram", "scorer", "ols_fit", "final_fit"]


def aic(rss: float, n: int, k: int) -> float:
    """R's ``extractAIC`` for a linear model: ``n·ln(RSS/n) + 2k`` (``-inf`` when RSS = 0)."""
    if rss <= 0:
        return -math.inf
    return n * math.log(rss / n) + 2 * k


def design_blocks(
    df: pl.DataFrame, terms: Sequence[str]
) -> dict[str, tuple[np.ndarray, list[str]]]:
    """Design columns per term: dummies (treatment coding) or a standardised numeric."""
    out = {}
    for t in terms:
        s = df.get_column(t)
        if s.dtype == pl.String or s.dtype == pl.Categorical or s.dtype == pl.Boolean:
            s = s.cast(pl.String)
            levels = sorted(s.unique().to_list())
            vals = s.to_numpy()
            cols = [(vals == lv).astype(float) for lv in levels[1:]]
            out[t] = (
                np.column_stack(cols) if cols else np.zeros((len(vals), 0)),
                [f"{t}[{lv}]" for lv in levels[1:]],
            )
        else:
            x = s.cast(pl.Float64).to_numpy()
            sd = x.std()
            out[t] = (((x - x.mean()) / (sd if sd > 0 else 1.0))[:, None], [t])
    return out


def design(n: int, blocks: dict, terms: Sequence[str]) -> np.ndarray:
    """The (n × 1 + Σ block widths) design: an intercept column, then ``terms``' blocks."""
    return np.column_stack([np.ones(n), *[blocks[t][0] for t in terms]])


class Gram:
    """Cross-products of the full design, computed once: every submodel's RSS and rank
    come from its block of ``Z'Z`` and ``Z'y`` (O(k³) per model, independent of n).

    RSS = y'y − c'G⁺c with ``G = X'X``, ``c = X'y`` and ``G⁺`` the pseudo-inverse over the
    eigenvalues above ``λ_max · 1e-10`` (their count is the rank of ``X``).
    """

    def __init__(self, y: np.ndarray, blocks: dict, terms: Sequence[str]) -> None:
        z = design(len(y), blocks, terms)
        self.g = z.T @ z
        self.c = z.T @ y
        self.yy = float(y @ y)
        self.cols: dict[str, np.ndarray] = {}
        start = 1
        for t in terms:
            w = blocks[t][0].shape[1]
            self.cols[t] = np.arange(start, start + w)
            start += w

    def rss_rank(self, terms: Sequence[str]) -> tuple[float, int]:
        """``(RSS, rank)`` of the submodel with the intercept and ``terms``."""
        idx = np.concatenate(
            [np.zeros(1, dtype=np.int64), *[self.cols[t] for t in terms]]
        )
        g, c = self.g[np.ix_(idx, idx)], self.c[idx]
        lam, vec = np.linalg.eigh(g)
        keep = lam > max(lam.max(), 0.0) * 1e-10
        proj = vec[:, keep].T @ c
        return max(self.yy - float(proj @ (proj / lam[keep])), 0.0), int(keep.sum())


def scorer(
    gram: Gram, terms: Sequence[str], n: int
) -> Callable[[Sequence[str]], tuple[float, int, float]]:
    """``score(model) -> (RSS, rank, AIC)`` of a submodel of ``terms`` (its terms in the
    order of ``terms``), each set of terms computed once."""
    cache: dict[frozenset, tuple[float, int]] = {}

    def score(model: Sequence[str]) -> tuple[float, int, float]:
        key = frozenset(model)
        if key not in cache:
            cache[key] = gram.rss_rank([t for t in terms if t in key])
        rss, k = cache[key]
        return rss, k, aic(rss, n, k)

    return score


def ols_fit(y: np.ndarray, blocks: dict, terms: Sequence[str]):
    """The final model, fitted by statsmodels OLS (pseudo-inverse: aliased columns share)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm.OLS(y, design(len(y), blocks, terms)).fit()


def final_fit(
    y: np.ndarray, blocks: dict, model: list[str]
) -> tuple[pl.DataFrame, float]:
    """The selected model fitted by OLS (statsmodels): its coefficients (``name``,
    ``estimate``, ``std_error``, ``p_value``) and R² (NaN when undefined)."""
    res = ols_fit(y, blocks, model)
    names = ["(Intercept)", *[nm for t in model for nm in blocks[t][1]]]
    coef = pl.DataFrame(
        {
            "name": names,
            "estimate": np.asarray(res.params, dtype=float),
            "std_error": np.asarray(res.bse, dtype=float),
            "p_value": np.asarray(res.pvalues, dtype=float),
        }
    )
    return coef, float(res.rsquared) if np.isfinite(res.rsquared) else float("nan")
