"""The simulated judge on judgment pairs: its draws, its expected class rates, and settings.

The judge model of :mod:`voirdire.judges.simulated` (its decision rule
:func:`~voirdire.judges.simulated.decide`) applied to whole arrays of pairs shown in both
orders: :func:`pair_slots` draws the chosen slots (used by
:func:`voirdire.analysis.position.simulate.simulate_judgments` and
:func:`~voirdire.analysis.position.simulate.power_table`), :func:`expected_pair_rates`
gives the class probabilities in closed form, :func:`settings_for` the settings of a judge
with a target PC and PF. :func:`expected_pair_rates` and :func:`settings_for` are
importable from :mod:`voirdire.analysis.position.simulate` too.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from voirdire.judges.simulated import SimulatedSettings, decide

__all__ = ["as_settings", "pair_slots", "expected_pair_rates", "settings_for"]


def as_settings(s: SimulatedSettings | Mapping) -> SimulatedSettings:
    """``s`` as :class:`~voirdire.judges.simulated.SimulatedSettings` (a mapping: its fields)."""
    return s if isinstance(s, SimulatedSettings) else SimulatedSettings(**dict(s))


def pair_slots(
    s: SimulatedSettings,
    cand_better: np.ndarray,
    gap: np.ndarray,
    repetitions: int,
    tie_offered: bool,
    rng: np.random.Generator,
) -> np.ndarray:
    """Chosen slot index for both orders and every repetition of N pairs.

    ``cand_better`` (bool, N), ``gap`` (float, N). Returns int array (N, 2, R): order 0
    shows the candidate in slot A, order 1 in slot B; value 2 is the tie option.
    """
    n = gap.shape[0]
    best = np.stack(
        [np.where(cand_better, 0, 1), np.where(cand_better, 1, 0)], axis=1
    )  # (N, 2)
    u = rng.random((3, n, 2, repetitions))
    if repetitions > 1:
        fresh = rng.random((n, 2, repetitions)) < s.repetition_noise
        fresh[:, :, 0] = False
        u = np.where(fresh[None], u, u[:, :, :, :1])
    shape = (n, 2, repetitions)
    return decide(
        s,
        np.broadcast_to(best[:, :, None], shape),
        np.broadcast_to(gap[:, None, None], shape),
        u[0],
        u[1],
        u[2],
        slots=2,
        tie_offered=tie_offered,
    )


def expected_pair_rates(
    s: SimulatedSettings | Mapping, gap: np.ndarray, option_mode: int = 3
) -> dict[str, np.ndarray]:
    """Expected class probabilities of a judgment pair under the judge model (no failures).

    For a pair whose better model leads by ``gap`` (array): per order the judge is sure
    with ``σ = 1 − exp(−sensitivity·gap)``; unsure it ties with ``t`` (three-option mode),
    else picks ``A`` with ``π`` (primacy). The two orders are independent. Returns arrays
    ``consistent``, ``primacy``, ``recency`` (probabilities, same shape as ``gap``); the
    pair's expected PF contribution is ``recency − primacy`` since PF_cell = (rcn − pcn)/n
    exactly (``docs/metrics.md``: rcn·irr − pcn·ipr = (rcn² − pcn²)/(rcn + pcn)).
    """
    s = as_settings(s)
    gap = np.asarray(gap, dtype=float)
    sure = 1.0 - np.exp(-s.sensitivity * gap)
    u = 1.0 - sure
    t = s.tie_rate if option_mode == 3 else 0.0
    pi = s.primacy
    # order 0: better model in A; order 1: better model in B (the classes are symmetric in
    # which model is better, so "better in A" is enough)
    a0, b0, c0 = sure + u * (1 - t) * pi, u * (1 - t) * (1 - pi), u * t
    a1, b1, c1 = u * (1 - t) * pi, sure + u * (1 - t) * (1 - pi), u * t
    consistent = a0 * b1 + b0 * a1 + c0 * c1
    primacy = a0 * a1 + a0 * c1 + c0 * a1
    recency = b0 * b1 + b0 * c1 + c0 * b1
    return {"consistent": consistent, "primacy": primacy, "recency": recency}


def settings_for(pc: float, pf: float) -> SimulatedSettings:
    """Simulator settings (no ties, every pair with quality gap 1) whose expected PC and PF
    are ``pc`` and ``pf``.

    With ``u`` the probability of being unsure in one order and ``π`` the primacy:
    ``PF = u(1 − 2π)`` and the inconsistent share ``I = u(σ + u(π² + (1 − π)²))`` with
    ``σ = 1 − u`` (from :func:`expected_pair_rates`); solved for ``u`` by bisection.

    Raises:
        ValueError: no such judge (``|pf| > 1 − pc`` or out of range).
    """
    if not (0.0 <= pc <= 1.0 and -1.0 <= pf <= 1.0) or abs(pf) > 1.0 - pc + 1e-12:
        raise ValueError(f"no judge has PC={pc} and PF={pf} (need |PF| <= 1 - PC)")

    def inconsistent(u: float) -> float:
        pi = (1.0 - pf / u) / 2.0 if u > 0 else 0.5
        return u * ((1 - u) + u * (pi**2 + (1 - pi) ** 2))

    lo, hi = max(abs(pf), 1e-9), 1.0
    if inconsistent(hi) < 1.0 - pc - 1e-12:
        raise ValueError(f"no judge has PC={pc} and PF={pf}")
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if inconsistent(mid) < 1.0 - pc else (lo, mid)
    u = (lo + hi) / 2
    pi = (1.0 - pf / u) / 2.0
    sens = -np.log(u) if u < 1 else 0.0
    return SimulatedSettings(
        primacy=float(pi), tie_rate=0.0, sensitivity=float(sens), question_noise=0.0
    )
