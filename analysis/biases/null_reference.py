"""Null references: what a judge with *no* effect reads on the same pairs.

Source: ``docs/biases.md`` and ``docs/bias-metrics.md`` (ours). Two figures of the bias
suite are not centred on 0 for a judge the perturbation does not move, because they are
non-linear in noisy win rates:

- the susceptibility ``Δ / (1 − p_control)`` for Δ ≥ 0, ``Δ / p_control`` for Δ < 0: a
  null judge's Δ scatters around 0, and the two denominators differ, so the mean reading is
  pulled toward the side with the smaller denominator (negative when ``p_control`` is
  small: −0.028 at ``p_control`` = 0.14 in the audit of issue 15);
- CALM's error rates, absolute values ``|ȳ_1 − ȳ_0| / ȳ_0``: never below 0, so a null
  judge reads the mean absolute noise (0.079 in the same audit), not 0.

The reference here is a *within-pair permutation null* on the very pairs measured. Under
"the perturbation has no effect", the control asking and the perturbed asking of one
(instance, order, repetition) are two exchangeable askings of the same query, so swapping
them is as likely as not. Each of ``replicates`` draws swaps every pair with probability
1/2 and recomputes the figure; the mean over replicates is the null reference (the figure
a null judge is expected to read on these pairs), and the central ``level`` share of
replicates its null band. An estimate inside the band is no evidence of an effect; read
``estimate − null`` as the effect beyond the reading's bias. Only discordant pairs (the
two scores differ) move under a swap, so a deterministic null judge (temperature 0, no
discordant pair) has null reference and band exactly 0.
"""

from __future__ import annotations

import numpy as np
import polars as pl

__all__ = ["NULL_COLUMNS", "susceptibility_of", "swap_null", "judge_swap_null"]

#: Columns :func:`swap_null` adds per group.
NULL_COLUMNS = [
    "susceptibility_null", "susceptibility_null_lo", "susceptibility_null_hi",
    "error_rate_null", "error_rate_null_lo", "error_rate_null_hi",
]  # fmt: skip


def susceptibility_of(
    n: np.ndarray, s_control: np.ndarray, s_perturbed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Susceptibility and the refinement-aware error rate from sums (same shapes).

    ``n`` pairs, ``s_control``/``s_perturbed`` the sums of the target's scores (1 win,
    1/2 tie, 0 loss). ``p = s_control/n``, ``Δ = (s_perturbed − s_control)/n``;
    susceptibility ``Δ/(1 − p)`` when Δ ≥ 0 else ``Δ/p``; error rate ``|Δ|/p`` (CALM's
    ``|ȳ_told − ȳ_untold| / ȳ_untold`` with win rates). NaN where a denominator is 0.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        p = s_control / n
        d = (s_perturbed - s_control) / n
        sus = np.where(d >= 0, d / (1.0 - p), d / p)
        err = np.abs(d) / p
    return np.where(np.isfinite(sus), sus, np.nan), np.where(
        np.isfinite(err), err, np.nan
    )


def _band(x: np.ndarray, level: float) -> tuple[float, float, float]:
    x = x[np.isfinite(x)]
    if x.size == 0:
        return (np.nan, np.nan, np.nan)
    a = (1.0 - level) / 2.0
    return (float(x.mean()), float(np.quantile(x, a)), float(np.quantile(x, 1.0 - a)))


def swap_null(
    rows: pl.DataFrame,
    key: str = "_key",
    *,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """The within-pair permutation null of the susceptibility and the error rate, per group.

    Args:
        rows: one row per valid (control, perturbed) pair: ``key`` (the group, str),
            ``s_control``, ``s_perturbed`` (float target scores; rows with a null score,
            i.e. variants without a target, are ignored).
        key: the group column.
        replicates: permutation replicates.
        level: coverage of the null band.
        seed: numpy seed (one generator for all groups, in sorted key order).

    Returns:
        ``key`` and :data:`NULL_COLUMNS` (float): the mean over replicates (the null
        reference) and the band's ends, for the susceptibility and the error rate. NaN
        where undefined (e.g. ``p_control`` 0 in every replicate).
    """
    ok = rows.filter(
        pl.col("s_control").is_not_null() & pl.col("s_perturbed").is_not_null()
    )
    rng = np.random.default_rng(seed)
    out = []
    for (k,), part in sorted(ok.group_by(key), key=lambda t: str(t[0][0])):
        a = part.get_column("s_control").to_numpy().astype(float)
        b = part.get_column("s_perturbed").to_numpy().astype(float)
        d = np.sort(
            (b - a)[a != b]
        )  # only discordant pairs move under a swap; sorted: same draw whatever the row order
        z = rng.random((replicates, d.size)) < 0.5
        shift = z.astype(float) @ d if d.size else np.zeros(replicates)
        n = np.full(replicates, float(a.size))
        sus, err = susceptibility_of(n, a.sum() + shift, b.sum() - shift)
        out.append((k, *_band(sus, level), *_band(err, level)))
    schema = {key: pl.String, **{c: pl.Float64 for c in NULL_COLUMNS}}
    return pl.DataFrame(out, schema=schema, orient="row")


def judge_swap_null(
    scores: np.ndarray,
    judge: int,
    *,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """The null reference of CALM's self-enhancement error rate ``|owr_j − owr_others| /
    owr_others`` (pairwise form, :mod:`voirdire.analysis.biases.self_enhancement`).

    Under "judge ``judge`` judges its own model like the others do", the judges' scores of
    one pair are exchangeable: each replicate gives the judge, pair by pair, the score of a
    judge drawn at random (the others share the rest), and recomputes the error rate.

    Args:
        scores: (P, J) the candidate's score (1 win, 1/2 tie or inconsistent, 0 loss) per
            pair and judge, on pairs every judge classified; J ≥ 2.
        judge: column of the judge examined.
        replicates, level, seed: permutation draws, band coverage, numpy seed.

    Returns:
        ``(mean, lo, hi)`` of the error rate over the replicates (NaN when undefined).
    """
    s = np.asarray(scores, dtype=float)
    p, nj = s.shape
    if p == 0 or nj < 2:
        return (np.nan, np.nan, np.nan)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, nj, size=(replicates, p))
    pick = s[np.arange(p)[None, :], idx]
    own = pick.mean(1)
    others = (s.sum(1)[None, :] - pick).mean(1) / (nj - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        err = np.abs(own - others) / others
    return _band(np.where(np.isfinite(err), err, np.nan), level)
