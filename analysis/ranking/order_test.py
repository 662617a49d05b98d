"""Does the order the answers were shown in change a leaderboard? A permutation test.

Null hypothesis (an *order-blind* judge): within every unit — one (question, candidate,
reference) of a judge and strategy — the verdicts given in the first order and in the
swapped order are exchangeable. Under it, swapping which order a unit's verdicts belong to
changes nothing in distribution, so the first- and swapped-order leaderboards refitted
after independent random swaps (probability ½ per unit) draw the statistics' null
distribution on the very verdicts observed (Fisher's randomization test; Good 2005,
*Permutation, Parametric and Bootstrap Tests of Hypotheses*, §3).

Statistics, for the ``K`` models common to both boards and their ``K(K−1)/2`` pairs:

- ``flips``: pairs ordered one way by the first board's θ and the other way by the swapped
  board's (a difference below 1e-9 is a tie, no flip); its p-value
  ``(1 + #{π: flips_π ≥ flips}) / (1 + B)`` is the overall test "is there any order effect
  on the leaderboard";
- Kendall τ-b between the two boards' θ; p-value ``(1 + #{π: τ_π ≤ τ}) / (1 + B)``;
- per pair the change ``c_ij = (θ_i − θ_j)_first − (θ_i − θ_j)_swapped``, studentized by its
  permutation root mean square (its permutation mean is 0: swapping every unit negates
  it), and adjusted for the family of pairs by the single-step max-T method (Westfall &
  Young 1993, *Resampling-Based Multiple Testing*, §2.6; algorithm 4.1):
  ``p̃_ij = (1 + #{π: max_kl |z_kl,π| ≥ |z_ij|}) / (1 + B)``. A flip is *significant* when
  ``p̃_ij ≤ α``: the chance of calling any flip significant for an order-blind judge is at
  most α (strong control of the family-wise error rate; ``perf/bench_flip_test.py``
  measures it by simulation).

When the units whose two orders' verdicts differ are few (2^U ≤ the permutations asked
for), every swap is enumerated instead and the p-values are exact.

The permutations refit both boards with the leaderboards' own method (θ differences do not
depend on the anchor) in chunks, so memory grows with chunk × K², not B × K².
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix

from voirdire.analysis.ranking.registry import ranking_method

__all__ = ["TIE_EPS", "OrderTest", "order_units", "order_test", "pair_stats"]

#: θ differences below this are a tie in a board (no flip): equal records fit to equal θ
#: only up to the solver's rounding
TIE_EPS = 1e-9
_CHUNK_CELLS = (
    4_000_000  # permutations per chunk × K² (two boards): about 64 MB of float64
)


@dataclass(frozen=True)
class OrderTest:
    """The permutation test of one (benchmark, judge, strategy)'s first vs swapped boards.

    Attributes:
        models: the K models compared (sorted).
        flips: observed flipped pairs (int); flips_null: their mean over the permutations
            (what an order-blind judge gives on these verdicts); flips_p: the permutation
            p-value of ``flips`` (one-sided, large).
        tau: Kendall τ-b of the two boards' θ; tau_null: its permutation mean; tau_p: the
            p-value (one-sided, small).
        flipped, p_adjusted: (P,) per pair ``(i, j)`` of ``np.triu_indices(K, 1)``: whether
            it flips, and its max-T adjusted p-value.
        permutations: B, the swaps drawn (or enumerated).
        exact: whether every one of the 2^U swaps of the U discordant units (those whose two
            orders' verdicts differ; swapping the others changes nothing) was enumerated,
            when 2^U ≤ the permutations asked for: p-values ``#{π: ...} / 2^U``, the observed
            swap among them; else B random swaps and ``(1 + #{π: ...}) / (1 + B)``.
    """

    models: list[str]
    flips: int
    flips_null: float
    flips_p: float
    tau: float
    tau_null: float
    tau_p: float
    flipped: np.ndarray
    p_adjusted: np.ndarray
    permutations: int
    exact: bool

    def significant(self, alpha: float = 0.05) -> int:
        """Flipped pairs whose adjusted p-value is at most ``alpha`` (int)."""
        return int((self.flipped & (self.p_adjusted <= alpha)).sum())


def order_units(comps: pl.DataFrame) -> pl.DataFrame:
    """Per unit (benchmark, judge, strategy, question_id, a, b) and order view (``first``,
    ``swapped``) the summed ``win``, ``tie`` and ``loss`` (float) of ``a`` against ``b``.

    Args:
        comps: :data:`~voirdire.analysis.ranking.order_views.COMPARISON_SCHEMA` rows (other views
            are ignored).
    """
    return (
        comps.filter(pl.col("view").is_in(["first", "swapped"]))
        .group_by("benchmark", "judge", "strategy", "question_id", "a", "b", "view")
        .agg(
            pl.col("win").sum(),
            pl.col("tie").sum(),
            loss=(1.0 - pl.col("win") - pl.col("tie")).sum(),
        )
    )


def _counts(units: pl.DataFrame, ix: dict[str, int], k: int):
    """(K², ) win/tie count vectors of the first and swapped boards, and the sparse (U, K²)
    changes a swap of each discordant unit makes to the first board's wins and ties."""
    wide = units.pivot(
        on="view", index=["question_id", "a", "b"], values=["win", "tie", "loss"]
    ).sort(
        "question_id", "a", "b"
    )  # the swaps' draws follow the units, whatever the row order
    for c in (f"{s}_{v}" for s in ("win", "tie", "loss") for v in ("first", "swapped")):
        wide = (
            wide.with_columns(pl.col(c).fill_null(0.0))
            if c in wide.columns
            else wide.with_columns(pl.lit(0.0).alias(c))
        )
    a = np.array([ix[m] for m in wide.get_column("a").to_list()], dtype=np.int64)
    b = np.array([ix[m] for m in wide.get_column("b").to_list()], dtype=np.int64)
    g = {c: wide.get_column(c).to_numpy().astype(float) for c in wide.columns[3:]}
    ab, ba = a * k + b, b * k + a

    def board(v):
        w = np.bincount(np.r_[ab, ba], np.r_[g[f"win_{v}"], g[f"loss_{v}"]], k * k)
        t = np.bincount(np.r_[ab, ba], np.r_[g[f"tie_{v}"], g[f"tie_{v}"]], k * k)
        return w, t

    dw, dl, dt = (g[f"{s}_swapped"] - g[f"{s}_first"] for s in ("win", "loss", "tie"))
    keep = np.flatnonzero(
        (dw != 0) | (dl != 0) | (dt != 0)
    )  # concordant units: a swap changes nothing
    u = np.arange(keep.size)
    rows, cols = np.r_[u, u], np.r_[ab[keep], ba[keep]]
    d_w = csr_matrix(
        (np.r_[dw[keep], dl[keep]], (rows, cols)), shape=(keep.size, k * k)
    )
    d_t = csr_matrix(
        (np.r_[dt[keep], dt[keep]], (rows, cols)), shape=(keep.size, k * k)
    )
    return board("first"), board("swapped"), d_w, d_t


def _fit(
    fit, w: np.ndarray, t: np.ndarray, k: int, anchor: int, prior: float
) -> np.ndarray:
    w, t = w.reshape(-1, k, k), t.reshape(-1, k, k)
    if prior:  # as the leaderboards: pseudo-ties between every two models that met
        t = t + prior * ((w + w.transpose(0, 2, 1) + t) > 0)
    return fit(w, t, anchor=anchor)


def pair_stats(tf: np.ndarray, ts: np.ndarray, i: np.ndarray, j: np.ndarray):
    """Per row of two (R, K) θ arrays, over the pairs ``(i, j)``: flipped (R, P) bool, τ-b
    (R,) and the change ``c = (θ_i − θ_j)_first − (θ_i − θ_j)_second`` (R, P); a difference
    below :data:`TIE_EPS` is a tie."""
    df, ds = tf[:, i] - tf[:, j], ts[:, i] - ts[:, j]
    sf, ss = np.sign(df) * (np.abs(df) > TIE_EPS), np.sign(ds) * (np.abs(ds) > TIE_EPS)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (sf * ss).sum(1) / np.sqrt((sf**2).sum(1) * (ss**2).sum(1))
    return sf * ss < 0, tau, df - ds


def _swapped_thetas(
    fit,
    boards: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    changes: tuple,
    model: tuple[int, int, float],
    keep: np.ndarray,
    permutations: int,
    chunk: int,
    exact: bool,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """θ of the ``keep`` models on the first and the swapped boards under each of the
    ``permutations`` swaps, ``(B, len(keep))`` each.

    ``boards``: the first and swapped boards' win and tie counts ``(wf, tf, ws, ts)``;
    ``changes``: the sparse ``(d_w, d_t)`` a swap of each discordant unit makes; ``model``:
    ``(K, anchor index, prior)``. Swap ``b`` of an exact test is the bits of ``b``; else
    each unit swaps with probability 1/2, drawn from ``rng`` ``chunk`` swaps at a time.
    """
    wf, tf, ws, ts = boards
    d_w, d_t = changes
    k, anc, prior = model
    u = d_w.shape[0]
    th_f, th_s = (
        np.empty((permutations, keep.size)),
        np.empty((permutations, keep.size)),
    )
    for lo in range(0, permutations, chunk):
        n = min(chunk, permutations - lo)
        if exact:
            s = ((np.arange(lo, lo + n)[:, None] >> np.arange(u)) & 1).astype(float)
        else:
            s = (rng.random((n, u)) < 0.5).astype(float)
        dw, dt = (d_w.T @ s.T).T, (d_t.T @ s.T).T  # (n, K²): what the swaps move
        th = _fit(fit, np.r_[wf + dw, ws - dw], np.r_[tf + dt, ts - dt], k, anc, prior)
        th_f[lo : lo + n], th_s[lo : lo + n] = th[:n, keep], th[n:, keep]
    return th_f, th_s


def _null_counts(
    th_f: np.ndarray,
    th_s: np.ndarray,
    pairs: tuple[np.ndarray, np.ndarray],
    observed: tuple[np.ndarray, np.ndarray, np.ndarray],
    chunk: int,
) -> tuple[int, int, int, np.ndarray, np.ndarray]:
    """The permutation nulls of the swapped θ ``th_f``, ``th_s`` against the ``observed``
    ``(flipped, τ, c)`` of :func:`pair_stats` over ``pairs`` ``(i, j)``.

    Returns ``(flips_p, flips_sum, tau_p, tau_all, exceed)``: the swaps with at least as
    many flips, the flips over all swaps, the swaps with τ at most the observed (NaN
    counts as 1), every swap's τ, and per pair the swaps whose max-T (|c| over its
    permutation RMS, the largest over pairs) reaches the pair's observed value.
    """
    i, j = pairs
    flip0, tau0, c0 = observed
    permutations = th_f.shape[0]
    flips_p, tau_p, sq, flips_sum, taus = 0, 0, np.zeros(i.size), 0, []
    for lo in range(
        0, permutations, chunk
    ):  # pass 1: flips, τ; the permutation RMS of c
        f, tau, c = pair_stats(th_f[lo : lo + chunk], th_s[lo : lo + chunk], i, j)
        flips_p += int((f.sum(1) >= flip0.sum()).sum())
        flips_sum += int(f.sum())
        tau_p += int((np.nan_to_num(tau, nan=1.0) <= tau0[0]).sum())
        taus.append(tau)
        sq += (c**2).sum(0)
    rms = np.sqrt(sq / permutations)
    scale = np.where(
        rms > 0, rms, np.inf
    )  # a pair no swap can move: z = 0, never significant
    z0 = np.abs(c0[0]) / scale
    maxes = [  # pass 2: the max-T null
        (
            np.abs(pair_stats(th_f[lo : lo + chunk], th_s[lo : lo + chunk], i, j)[2])
            / scale
        ).max(1, initial=0.0)
        for lo in range(0, permutations, chunk)
    ]
    tau_all = np.concatenate(taus)
    mx = np.sort(np.concatenate(maxes))
    exceed = permutations - np.searchsorted(mx, z0 - 1e-12, side="left")
    return flips_p, flips_sum, tau_p, tau_all, exceed


def order_test(
    units: pl.DataFrame,
    *,
    method: str = "bt",
    prior: float = 0.0,
    anchor: str | None = None,
    permutations: int = 1000,
    seed: int = 0,
) -> OrderTest:
    """The order-swap permutation test of one judge and strategy (module docstring).

    Args:
        units: :func:`order_units` rows of one (benchmark, judge, strategy).
        method, prior: the leaderboards' (:func:`~voirdire.analysis.ranking.boards.fit_boards`).
        anchor: the model fixed at θ = 0 (default: the first by name; differences of θ, and
            so every statistic, do not depend on it).
        permutations: B (≥ 1), the random swaps; when the 2^U swaps of the U discordant units
            are no more, all of them instead (exact); seed: of the random swaps.

    Raises:
        ConfigError: an unknown ranking method; ValueError: ``permutations`` < 1 or no
            units.
    """
    if permutations < 1 or units.height == 0:
        raise ValueError("order_test needs at least one permutation and one unit")
    fit = ranking_method(method).fit
    present = {
        v: set(p.get_column("a").to_list()) | set(p.get_column("b").to_list())
        for (v,), p in units.group_by(["view"])
    }
    models = sorted(set().union(*present.values()))
    common = sorted(set.intersection(*present.values())) if len(present) == 2 else []
    k, ix = len(models), {m: n for n, m in enumerate(models)}
    anc = ix.get(anchor, 0) if anchor else 0
    (wf, tf), (ws, ts), d_w, d_t = _counts(units, ix, k)
    keep = np.array([ix[m] for m in common], dtype=np.int64)
    i, j = np.triu_indices(keep.size, 1)
    obs = _fit(fit, np.stack([wf, ws]), np.stack([tf, ts]), k, anc, prior)[:, keep]
    flip0, tau0, c0 = pair_stats(obs[:1], obs[1:], i, j)
    rng, u = np.random.default_rng(seed), d_w.shape[0]
    exact = u < 31 and 2**u <= permutations  # few discordant units: every swap, once
    if exact:
        permutations = 2**u
    chunk = max(1, _CHUNK_CELLS // (2 * k * k))
    th_f, th_s = _swapped_thetas(
        fit, (wf, tf, ws, ts), (d_w, d_t), (k, anc, prior), keep, permutations, chunk,
        exact, rng,
    )  # fmt: skip
    flips_p, flips_sum, tau_p, tau_all, exceed = _null_counts(
        th_f, th_s, (i, j), (flip0, tau0, c0), chunk
    )
    plus = (
        0 if exact else 1
    )  # the enumeration holds the observed swap; a random draw adds it
    return OrderTest(
        models=common,
        flips=int(flip0.sum()),
        flips_null=flips_sum / permutations,
        flips_p=(plus + flips_p) / (plus + permutations),
        tau=float(tau0[0]),
        tau_null=float(np.nanmean(tau_all))
        if np.isfinite(tau_all).any()
        else float("nan"),
        tau_p=(plus + tau_p) / (plus + permutations),
        flipped=flip0[0],
        p_adjusted=(plus + exceed) / (plus + permutations),
        permutations=permutations,
        exact=exact,
    )
