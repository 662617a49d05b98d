"""Human win rates and Bradley–Terry board, estimated from a few labels and a judge (PPI++).

The input is one judge's *pairs table* (:mod:`voirdire.analysis.people.pairs`): every pair
the judge judged, with the judge's score ``yhat`` (the candidate's side: 1 win, 0.5 tie, 0
loss, averaged over the judge's verdicts on the pair) and, on the labelled pairs, the human
score ``y``. Three estimators of human preferences, side by side:

- ``ppi``: PPI++ (:mod:`voirdire.analysis.people.ppi`), human labels and the judge's
  verdicts on every pair; unbiased for human preference whatever the judge's errors;
- ``classical``: the human labels alone (PPI++ with λ = 0: classical inference);
- ``judge``: the judge's verdicts alone, as if they were human labels (its interval ignores the
  judge's errors: it is what a judge's leaderboard claims, not a valid interval for people).

**Win rates** (``kind = "win_rate"``): a model's mean score over the pairs it is in (ties
half), a PPI++ mean per model (λ tuned per model), with the joint covariance of the k
estimates (each pair enters two models' means) for the rank sets. Chatzi et al. (2024)
estimate the win rate against an opponent drawn uniformly; on a design where every model
meets every other equally often (a balanced round robin) the two coincide.

**Board** (``kind = "bt"``): Bradley–Terry (``P(a ≻ b) = σ(θ_a − θ_b)``, a tie half a win)
as a logistic regression without intercept on ``x = e_a − e_b`` with the anchor's column
dropped (its θ is 0); ``rating = anchor_rating + 400/ln 10 · θ`` (Arena's scale,
:mod:`voirdire.analysis.ranking.bt`). PPI++ for a GLM with the sandwich covariance.

**Small samples.** ``ppi-python``'s intervals are normal (``z``) with population variances; with
tens of labels per model they cover less than they claim (in the simulation of
``perf/people_validation.py``, 0.74 at 8 labels per model for 0.9 asked). The intervals here
use Student's t on ``n − 1`` degrees of freedom (``n``: the model's labelled pairs) and the
unbiased variance (``× n/(n − 1)``; for the board HC1's ``× n/(n − d)``, ``d`` free
coefficients, Hinkley 1977), :func:`interval`; the estimates and their covariance before it are
exactly ``ppi-python``'s, and the correction vanishes as the labels grow.

**Clustered by question** (the default, ``clusters`` given): pairs that share a question are
correlated (one hard question moves every pair on it), and a team's next study draws new
questions. The variance is then the cluster-robust sandwich (Liang and Zeger 1986; Cameron and
Miller, *A Practitioner's Guide to Cluster-Robust Inference*, J. Human Resources 2015) of
PPI++'s influence function: each pair's term (labelled: ``(y − λŷ − mean)/n``; unlabelled:
``λ(ŷ − mean)/N``; for the board the gradients' terms, ``H⁻¹`` outside) summed within its
question before squaring, labelled and unlabelled pairs of one question together (they are
correlated too), scaled by ``G/(G − 1)`` (``G`` the model's questions: CR1), and the t
quantile on ``min(n, G_lab) − 1`` degrees of freedom (``G_lab`` the questions with a label of
the model). With every pair its own question it is the unclustered variance. The interval is
then about human preference on the population of *questions* the study's are drawn from
(and the pairs on them), not only on the pairs at hand.

**Effective labels** ``n_eff = n · Var(people) / Var(ppi)``: the number of human labels
that alone would give the PPI++ interval's width (Angelopoulos et al. 2023's measure); the
judge is worth ``n_eff − n`` labels.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.stats import t as student

from voirdire.analysis.people.ppi import (
    Estimate,
    mean_lambda,
    mean_leave_one_out,
    ppi_logistic,
)
from voirdire.analysis.people.rank_sets import rank_sets
from voirdire.analysis.ranking.bt import SCALE

__all__ = ["BOARD_COLUMNS", "ESTIMATORS", "UNITS", "design", "interval", "bt_estimate", "win_rate_estimate", "people_boards", "cluster_codes", "cluster_dof", "cluster_sums"]  # fmt: skip

ESTIMATORS = ("ppi", "classical", "judge")
#: the resampling unit of the intervals: ``question`` (clustered, the default) or ``pair``
UNITS = ("question", "pair")
#: one row per (kind, estimator, model)
BOARD_COLUMNS = [
    "kind", "estimator", "model", "estimate", "lo", "hi", "se", "rating", "rating_lo", "rating_hi",
    "rank", "rank_lo", "rank_hi", "n_labels", "n_pairs", "lam", "n_eff",
]  # fmt: skip


def design(pairs: pl.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The models (sorted) and each pair's candidate and reference as model indices."""
    models = sorted(
        set(pairs["candidate"].to_list()) | set(pairs["reference"].to_list())
    )
    code = {m: i for i, m in enumerate(models)}
    a = np.array([code[m] for m in pairs["candidate"].to_list()], dtype=np.int64)
    b = np.array([code[m] for m in pairs["reference"].to_list()], dtype=np.int64)
    return models, a, b


def cluster_codes(labels) -> np.ndarray:
    """(pairs,) int64 codes 0..G−1 of the clusters named by ``labels`` (any hashable values)."""
    return (
        np.unique(np.asarray(labels), return_inverse=True)[1].astype(np.int64).ravel()
    )


def cluster_sums(rows: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """(G, d) the sums of the (pairs, d) ``rows`` within each cluster (codes 0..G−1)."""
    out = np.zeros((int(clusters.max()) + 1 if clusters.size else 0, rows.shape[1]))
    np.add.at(out, clusters, rows)
    return out


def cluster_dof(
    a: np.ndarray, b: np.ndarray, labelled: np.ndarray, clusters: np.ndarray, k: int
) -> np.ndarray:
    """(k,) the clustered t quantile's degrees of freedom per model: ``min(n, G_lab) − 1``,
    ``n`` its labelled pairs and ``G_lab`` the clusters holding one of them."""
    mask = _scores(a, b, np.zeros(a.size), k)[1].astype(float) * labelled[:, None]
    return np.minimum(mask.sum(0), (cluster_sums(mask, clusters) > 0).sum(0)) - 1


def _cr1(present: np.ndarray) -> np.ndarray:
    """Per coordinate ``G/(G − 1)`` (NaN for G < 2) from the (G, d) mask of the clusters
    each coordinate appears in."""
    g = present.sum(0).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(g > 1, g / (g - 1), np.nan)


def _scores(a, b, s, k) -> tuple[np.ndarray, np.ndarray]:
    """(pairs, k) scores of each model in each pair (``s`` for the candidate, ``1 − s`` for
    the reference, 0 elsewhere) and the mask of the models in each pair."""
    rows = np.arange(a.size)
    out, mask = np.zeros((a.size, k)), np.zeros((a.size, k), dtype=bool)
    out[rows, a], out[rows, b] = s, 1.0 - s
    mask[rows, a] = mask[rows, b] = True
    return out, mask


def win_rate_estimate(
    a: np.ndarray, b: np.ndarray, y: np.ndarray, yhat: np.ndarray, labelled: np.ndarray,
    k: int, lam: float | None = None, jackknife: bool = False, clusters: np.ndarray | None = None,
) -> Estimate:  # fmt: skip
    """Per model the PPI++ mean of its scores (module docstring) and the joint covariance.

    Args:
        a, b: (pairs,) model indices of the candidate and the reference; y: (pairs,)
            human score (read where ``labelled``); yhat: (pairs,) the judge's score;
            labelled: (pairs,) bool; k: the number of models.
        lam: the power tuning for every model; None: PPI++'s, per model; 0: labels alone.
        jackknife: the labelled part of the covariance from the delete-one jackknife over
            each model's labelled pairs, λ tuned again without each
            (:func:`~voirdire.analysis.people.ppi.mean_leave_one_out`; cross-covariances
            from the pairs two models share), instead of ``ppi-python``'s plug-in
            (population variances at the tuned λ). Already unbiased: :func:`interval` takes
            it with ``unbiased=False``.
        clusters: (pairs,) int cluster codes (:func:`cluster_codes`, e.g. the pairs'
            questions): the covariance clustered (module docstring: each pair's term summed
            within its cluster, labelled and unlabelled together, × ``G/(G − 1)`` per model);
            None: every pair its own cluster, no correction (``ppi-python``'s). With
            ``jackknife`` a labelled pair's term is ``−sqrt((n − 1)/n)·(θ₋ᵢ − mean θ₋)``, its
            delete-one deviation turned into its influence (for λ fixed exactly
            ``(r_i − r̄)/sqrt(n(n − 1))``), summed with the unlabelled pairs' of its cluster.

    Returns:
        :class:`~voirdire.analysis.people.ppi.Estimate`: ``theta`` (k,), ``cov`` (k, k),
        ``lam`` (k,); NaN for a model without a labelled pair.
    """
    lab, unl = labelled, ~labelled
    s_l, m_l = _scores(a[lab], b[lab], y[lab], k)
    h_l, _ = _scores(a[lab], b[lab], yhat[lab], k)
    h_u, m_u = _scores(a[unl], b[unl], yhat[unl], k)
    theta, lams = np.full(k, np.nan), np.zeros(k)
    r_l, r_u = np.zeros_like(s_l), np.zeros_like(h_u)
    n_m, big_m = m_l.sum(0), m_u.sum(0)
    for m in range(k):
        if not n_m[m]:
            continue
        ys, hs, hu = s_l[m_l[:, m], m], h_l[m_l[:, m], m], h_u[m_u[:, m], m]
        lam_m = (mean_lambda(ys, hs, hu) if lam is None else lam) if hu.size else 0.0
        rect = ys - lam_m * hs
        theta[m] = rect.mean() + (lam_m * hu.mean() if hu.size else 0.0)
        if jackknife:  # (n − 1)/n · Σ (θ₋ᵢ − θ̄₋)², as a product of per-pair deviations
            loo = mean_leave_one_out(ys, hs, hu, None if lam is None else lam_m)
            # θ₋ᵢ − θ̄ is minus pair i's influence: the sign kept so that it adds to the
            # unlabelled pairs' terms of its cluster
            r_l[m_l[:, m], m] = -np.sqrt((n_m[m] - 1) / n_m[m]) * (loo - loo.mean())
        else:
            r_l[m_l[:, m], m] = (rect - rect.mean()) / n_m[m]
        if hu.size:
            r_u[m_u[:, m], m] = lam_m * (hu - hu.mean()) / big_m[m]
        lams[m] = lam_m
    if clusters is None:
        cov = r_l.T @ r_l + r_u.T @ r_u
    else:
        full = np.zeros((a.size, k))
        full[lab], full[unl] = r_l, r_u
        sums = cluster_sums(full, np.asarray(clusters, dtype=np.int64))
        present = (
            cluster_sums(_scores(a, b, np.zeros(a.size), k)[1].astype(float), clusters)
            > 0
        )
        scale = _cr1(present)
        cov = sums.T @ sums * np.sqrt(np.outer(scale, scale))
    cov[np.isnan(theta)] = np.nan
    cov[:, np.isnan(theta)] = np.nan
    return Estimate(theta, cov, lams)


def bt_estimate(
    a: np.ndarray, b: np.ndarray, y: np.ndarray, yhat: np.ndarray, labelled: np.ndarray,
    k: int, anchor: int, lam: float | None = None, clusters: np.ndarray | None = None,
) -> Estimate:  # fmt: skip
    """The Bradley–Terry board by PPI++ (module docstring): ``theta`` (k,) with the anchor's
    0, ``cov`` (k, k) with the anchor's row and column 0, ``lam`` one number. Arguments as
    :func:`win_rate_estimate`'s; ``anchor`` the fixed model's index; ``clusters`` (pairs,)
    int codes: the sandwich's meat summed per cluster
    (:func:`~voirdire.analysis.people.ppi.ppi_logistic`)."""
    x = np.zeros((a.size, k))
    rows = np.arange(a.size)
    x[rows, a] += 1.0
    x[rows, b] -= 1.0
    x = np.delete(x, anchor, axis=1)
    cl = None if clusters is None else np.asarray(clusters, dtype=np.int64)
    est = ppi_logistic(
        x[labelled], y[labelled], yhat[labelled], x[~labelled], yhat[~labelled], lam,
        clusters=None if cl is None else (cl[labelled], cl[~labelled]),
    )  # fmt: skip
    theta, cov = np.insert(est.theta, anchor, 0.0), np.zeros((k, k))
    free = np.delete(np.arange(k), anchor)
    cov[np.ix_(free, free)] = est.cov
    return Estimate(theta, cov, est.lam)


def interval(
    est: Estimate,
    n_model: np.ndarray,
    level: float,
    free: int | None = None,
    unbiased: bool = True,
    dof: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The small-sample interval (module docstring) of every coordinate of ``est``.

    Args:
        est: an estimate (``theta``, ``cov``); n_model: (k,) each coordinate's labelled pairs.
        level: the coverage asked. free: a board's free coefficients ``d`` (its covariance is
            scaled by ``n/(n − d)``, ``n`` the labelled pairs: ``n_model.sum() / 2``); None:
            win rates (each scaled by ``n_m/(n_m − 1)``, unless ``unbiased`` is False: a
            jackknife covariance, already unbiased).
        dof: (k,) the t quantile's degrees of freedom per coordinate; None: ``n_model − 1``
            (clustered: ``min(n, G_lab) − 1``, :func:`people_boards`).

    Returns:
        ``(lo, hi, se, cov)``: the interval, the standard errors and the covariance used (the
        rank sets read it); NaN where a coordinate has fewer than two labels.
    """
    n = np.asarray(n_model, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if free is None:
            scale = np.where(n > 1, n / (n - 1) if unbiased else 1.0, np.nan)
        else:
            total = n.sum() / 2
            scale = np.full(n.shape, total / (total - free) if total > free else np.nan)
        cov = est.cov * np.sqrt(np.outer(scale, scale))
        se = np.sqrt(np.maximum(np.diag(cov), 0.0))
        df = n - 1 if dof is None else np.asarray(dof, dtype=float)
        q = np.where(
            (n > 1) & (df >= 1), student.ppf(0.5 + level / 2, np.maximum(df, 1)), np.nan
        )
    return est.theta - q * se, est.theta + q * se, se, cov


def _rows(
    kind,
    estimator,
    models,
    est: Estimate,
    level,
    df,
    n_lab,
    n_pairs,
    var_classical,
    anchor_rating,
    dof=None,
):
    """The :data:`BOARD_COLUMNS` rows of one estimate."""  # fmt: skip
    bt = kind == "bt"
    lo, hi, se, cov = interval(
        est, n_lab, level, df if bt else None, unbiased=bt, dof=dof
    )
    if kind == "bt":  # the anchor: fixed, no interval of its own
        fixed = np.diag(est.cov) == 0
        lo = np.where(fixed, est.theta, lo)
        hi = np.where(fixed, est.theta, hi)
        se = np.where(fixed, 0.0, se)
    rank, rlo, rhi = rank_sets(
        np.nan_to_num(est.theta, nan=-np.inf), np.nan_to_num(cov), level, df
    )
    lam = np.broadcast_to(np.asarray(est.lam, dtype=float), est.theta.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = np.diag(est.cov)
        n_eff = np.where(raw > 0, n_lab * var_classical / raw, np.nan)
    bt = kind == "bt"
    return pl.DataFrame({
        "kind": kind, "estimator": estimator, "model": models, "estimate": est.theta, "lo": lo, "hi": hi,
        "se": se, "rating": anchor_rating + SCALE * est.theta if bt else np.full(len(models), np.nan),
        "rating_lo": anchor_rating + SCALE * lo if bt else np.nan, "rating_hi": anchor_rating + SCALE * hi if bt else np.nan,
        "rank": rank, "rank_lo": rlo, "rank_hi": rhi, "n_labels": n_lab, "n_pairs": n_pairs, "lam": lam,
        "n_eff": n_eff if estimator == "ppi" else np.where(estimator == "classical", n_lab * 1.0, np.nan),
    })  # fmt: skip


def people_boards(
    pairs: pl.DataFrame,
    *,
    level: float = 0.9,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    board: bool = True,
    unit: str = "question",
) -> pl.DataFrame:
    """The three estimators' win rates and Bradley–Terry boards of one judge's pairs.

    Args:
        pairs: one (benchmark, judge)'s pairs: ``candidate``, ``reference`` (str), ``yhat``
            (f64, in [0, 1]), ``y`` (f64 in [0, 1]; null where unlabelled); for
            ``unit="question"`` also ``cluster`` (str: the pair's question, e.g. PandaLM's
            items grouped by their instruction) or, without it, ``question_id``.
        level: the intervals' and the rank sets' coverage (e.g. 0.9).
        anchor: the board's fixed model (default: the model in the most pairs).
        anchor_rating: its rating on Arena's scale.
        board: also the Bradley–Terry board (False for anonymous answers).
        unit: the intervals' resampling unit (:data:`UNITS`): ``question`` clusters every
            variance by question (module docstring), ``pair`` treats the pairs as
            independent (``ppi-python``'s).

    Returns:
        :data:`BOARD_COLUMNS`: ``kind`` (``win_rate`` | ``bt``), ``estimator`` (``ppi`` |
        ``classical`` | ``judge``), ``model``, ``estimate`` (win rate in [0, 1], or θ in logits
        with the anchor's 0), ``lo``/``hi`` (Wald interval at ``level``), ``se``, ``rating``
        (and its interval; Arena scale, boards only, else NaN), ``rank``, ``rank_lo``,
        ``rank_hi`` (int: Chatzi et al.'s rank sets, :mod:`~voirdire.analysis.people.rank_sets`),
        ``n_labels`` (int: labelled pairs of the model; for ``judge`` all its pairs),
        ``n_pairs`` (int), ``lam`` (the power tuning; 0 for classical, NaN for the judge's),
        ``n_eff`` (f64: effective labels, ``ppi`` rows; the labels themselves for ``classical``).

    Raises:
        ValueError: no labelled pair; ``anchor`` not among the models; an unknown ``unit``.
    """
    if unit not in UNITS:
        raise ValueError(f"unit {unit!r} is none of {', '.join(UNITS)}")
    models, a, b = design(pairs)
    k = len(models)
    y = pairs["y"].fill_null(np.nan).to_numpy().astype(float)
    yhat = pairs["yhat"].to_numpy().astype(float)
    labelled = ~np.isnan(y)
    if not labelled.any():
        raise ValueError("no labelled pair")
    every = np.ones_like(labelled)
    n_pairs = np.bincount(np.r_[a, b], minlength=k)
    n_lab = np.bincount(np.r_[a[labelled], b[labelled]], minlength=k)
    cl, dof = None, {"judge": None, "ppi": None, "classical": None}
    if unit == "question":
        cl = cluster_codes(
            pairs["cluster" if "cluster" in pairs.columns else "question_id"].to_numpy()
        )
        lab_dof = cluster_dof(a, b, labelled, cl, k)
        dof = {
            "judge": cluster_dof(a, b, every, cl, k),
            "ppi": lab_dof,
            "classical": lab_dof,
        }
    parts = []
    wr = {e: win_rate_estimate(a, b, *((yhat, yhat, every) if e == "judge" else (y, yhat, labelled)), k,
                               0.0 if e != "ppi" else None, jackknife=True, clusters=cl) for e in ESTIMATORS}  # fmt: skip
    var_classical = np.diag(wr["classical"].cov)
    for e in ESTIMATORS:
        n = n_pairs if e == "judge" else n_lab
        parts.append(_rows("win_rate", e, models, wr[e], level, k, n, n_pairs, var_classical, anchor_rating, dof[e]))  # fmt: skip
    if board and k > 1:
        if anchor and anchor not in models:
            raise ValueError(f"anchor {anchor!r} is not among the models")
        anc = models.index(anchor) if anchor else int(np.argmax(n_pairs))
        bt = {e: bt_estimate(a, b, *((yhat, yhat, every) if e == "judge" else (y, yhat, labelled)), k, anc,
                             0.0 if e != "ppi" else None, clusters=cl) for e in ESTIMATORS}  # fmt: skip
        var_classical = np.diag(bt["classical"].cov)
        for e in ESTIMATORS:
            n = n_pairs if e == "judge" else n_lab
            parts.append(_rows("bt", e, models, bt[e], level, k - 1, n, n_pairs, var_classical, anchor_rating, dof[e]))  # fmt: skip
    out = pl.concat(parts, how="vertical_relaxed")
    return out.with_columns(
        lam=pl.when(pl.col("estimator") == "judge").then(None).otherwise(pl.col("lam")),
        **{c: pl.col(c).cast(pl.Int64) for c in ("rank", "rank_lo", "rank_hi", "n_labels", "n_pairs")},
    ).select(BOARD_COLUMNS)  # fmt: skip
