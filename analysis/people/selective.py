"""Selective judging with a guaranteed agreement with people: the judge keeps a verdict only
when its confidence passes a threshold calibrated on the labelled pairs, and passes the rest.

Source: Jung, Brahman and Choi, *Trust or Escalate: LLM Judges with Provable Guarantees for
Human Agreement*, ICLR 2025 (arXiv:2407.18370), §3: the threshold by fixed-sequence testing
(Bauer 1991; Angelopoulos, Bates, Candès, Jordan and Lei, *Learn then Test*, 2021) with the
exact binomial p-value. For a threshold ``t`` the risk is ``R(t) = P(judge ≠ people | c ≥ t)``.
The thresholds are tested from the most confident down, each the null ``R(t) > α`` with
``p(t) = P(Binomial(n_t, α) ≤ e_t)`` (``n_t`` labelled pairs with confidence ≥ t, ``e_t``
of them where the judge disagrees with people); the walk stops at the first ``p > δ`` and
``t̂`` is the last threshold rejected. The walk starts at the most confident threshold that
keeps at least :func:`min_labels` labelled pairs: a threshold with fewer cannot be certified
whatever the labels say (its p-value exceeds δ even without an error), and testing it first
would end the walk there (a few very confident pairs would block every threshold below them).
Where it starts depends on the confidences alone, never on the agreements (ours; Trust or
Escalate's thresholds are a fixed grid). Then, for labelled pairs drawn at random from the
pairs (exchangeable with the rest), ``P(R(t̂) ≤ α) ≥ 1 − δ``: on the pairs the judge keeps,
its agreement with people is at least ``1 − α`` with probability at least ``1 − δ``. No
threshold rejected: the judge keeps nothing (every pair goes to people or the next judge).

Even a judge that always agrees needs ``n ≥ log δ / log(1 − α)`` labelled pairs before any
threshold can be certified (:func:`min_labels`); fewer is refused.

*Agreement* is equality of the judge's verdict (win, tie or loss of the candidate) with
human label; a tie is its own verdict. The confidence comes from what the study holds
(:mod:`voirdire.analysis.people.pairs`: the share of the judge's verdicts across orders and
repetitions that agree with its final verdict, a jury's agreement, the verdict's
probability).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from scipy.stats import binom

__all__ = ["CURVE_COLUMNS", "LOW_SHARE", "min_labels", "fixed_sequence", "selective_curve",
           "certifiable_agreement", "labels_needed"]  # fmt: skip

#: a selective judge keeping less than this share of the pairs is said to keep almost nothing
LOW_SHARE = 0.05
CURVE_COLUMNS = ["threshold", "kept", "share_kept", "agreement", "p_value", "certified"]


def min_labels(alpha: float, delta: float) -> int:
    """The fewest labelled pairs with which any threshold can be certified: the smallest
    ``n`` with ``(1 − α)^n ≤ δ`` (``n`` pairs, all agreeing)."""
    _check(alpha, delta)
    return math.ceil(math.log(delta) / math.log1p(-alpha) - 1e-12)


def _check(alpha: float, delta: float) -> None:
    if not 0.0 < alpha < 1.0 or not 0.0 < delta < 1.0:
        raise ValueError(f"alpha and delta must be in (0, 1), not {alpha} and {delta}")


def _walk(conf: np.ndarray, agree: np.ndarray, alpha: float):
    """Per distinct confidence, most confident first: the threshold, the pairs at or above
    it, the agreeing ones and the binomial p-value of ``R > α``."""
    order = np.argsort(-conf, kind="stable")
    c, ok = conf[order], agree[order].astype(float)
    kept = np.arange(1, c.size + 1)
    good = np.cumsum(ok)
    last = np.r_[c[1:] != c[:-1], True]  # the last pair of each distinct confidence
    t, n, g = c[last], kept[last], good[last]
    return t, n, g, binom.cdf(n - g, n, alpha)


def fixed_sequence(
    conf: np.ndarray, agree: np.ndarray, alpha: float, delta: float
) -> float:
    """The calibrated threshold ``t̂`` (module docstring); ``inf`` when none is certified.

    Args:
        conf: (n,) the judge's confidence on the labelled pairs (larger: surer).
        agree: (n,) bool, the judge's verdict equals human label.
        alpha: the disagreement allowed (agreement ≥ 1 − α); delta: the chance allowed
            that the guarantee fails.

    Raises:
        ValueError: ``alpha`` or ``delta`` outside (0, 1), shapes that differ.
    """
    _check(alpha, delta)
    conf, agree = np.asarray(conf, dtype=float), np.asarray(agree, dtype=bool)
    if conf.shape != agree.shape:
        raise ValueError("confidences and agreements differ in length")
    if conf.size == 0:
        return math.inf
    t, n, _, p = _walk(conf, agree, alpha)
    tested = n >= min_labels(alpha, delta)
    t, p = t[tested], p[tested]
    fails = np.flatnonzero(p > delta)
    stop = fails[0] if fails.size else t.size
    return float(t[stop - 1]) if stop else math.inf


def selective_curve(
    conf: np.ndarray, agree: np.ndarray, alpha: float, delta: float
) -> pl.DataFrame:
    """The selective-judging curve on the labelled pairs: per distinct confidence (most
    confident first) the pairs kept at that threshold, their agreement with people, the
    binomial p-value of ``R > α`` and whether the fixed sequence certifies it.

    Returns:
        :data:`CURVE_COLUMNS`: ``threshold`` (f64), ``kept`` (int: labelled pairs with
        confidence ≥ threshold), ``share_kept`` (f64, of the labelled pairs), ``agreement``
        (f64), ``p_value`` (f64), ``certified`` (bool: within the fixed sequence's walk;
        false for the thresholds above its start, which keep too few pairs to be tested).
    """
    _check(alpha, delta)
    conf, agree = np.asarray(conf, dtype=float), np.asarray(agree, dtype=bool)
    if conf.size == 0:
        return pl.DataFrame(schema=dict.fromkeys(CURVE_COLUMNS, pl.Float64))
    t, n, g, p = _walk(conf, agree, alpha)
    tested = n >= min_labels(alpha, delta)  # the walk's start (module docstring)
    certified = np.cumprod(np.where(tested, p <= delta, True)).astype(bool) & tested
    return pl.DataFrame({
        "threshold": t, "kept": n.astype(np.int64), "share_kept": n / conf.size, "agreement": g / n,
        "p_value": p, "certified": certified,
    })  # fmt: skip


def certifiable_agreement(
    conf: np.ndarray, agree: np.ndarray, delta: float, share: float = LOW_SHARE
) -> float | None:
    """The highest agreement ``1 − α`` (on a grid of 0.01, 0.99 down to 0.01) at which
    :func:`fixed_sequence` certifies a threshold keeping at least ``share`` of the labelled
    pairs at this ``delta``: what the judge can promise while keeping that share. None: no
    such α (too few labels, or too little agreement anywhere). Raises as :func:`fixed_sequence`."""
    conf, agree = np.asarray(conf, dtype=float), np.asarray(agree, dtype=bool)
    if conf.size == 0:
        return None
    for target in np.round(np.arange(99, 0, -1) / 100, 2):
        t = fixed_sequence(conf, agree, 1 - target, delta)
        if np.mean(conf >= t) >= share - 1e-12:
            return float(target)
    return None


def labels_needed(
    conf: np.ndarray,
    agree: np.ndarray,
    alpha: float,
    delta: float,
    share: float = LOW_SHARE,
) -> int | None:
    """About how many labelled pairs would certify agreement ``1 − α`` on the most confident
    ``share`` of the pairs, if the labelled pairs' agreement there held: at ``t_s``, the most
    confident threshold keeping at least ``share`` of the labelled pairs (its share ``s``,
    its disagreement ``e``), the fewest kept pairs ``m`` whose binomial test rejects
    (``P(Binomial(m, α) ≤ ⌊e·m⌋) ≤ δ``, the p-value of the module docstring), over ``s``.
    The thresholds above ``t_s`` are assumed to pass too (the walk's other tests): a guide,
    not a guarantee. None: ``e ≥ α`` (more labels would not help: on those pairs the judge
    disagrees with people more than α allows) or no labelled pair. Raises as
    :func:`fixed_sequence`."""
    _check(alpha, delta)
    conf, agree = np.asarray(conf, dtype=float), np.asarray(agree, dtype=bool)
    if conf.size == 0:
        return None
    t, n, g, _ = _walk(conf, agree, alpha)
    at = int(np.flatnonzero(n >= share * conf.size - 1e-9)[0])
    e, s = 1 - g[at] / n[at], n[at] / conf.size
    if e >= alpha:
        return None
    m = np.arange(1, 1_000_001)
    ok = np.flatnonzero(binom.cdf(np.floor(e * m + 1e-9), m, alpha) <= delta)
    return int(math.ceil(m[ok[0]] / s)) if ok.size else None
