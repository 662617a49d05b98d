"""ECE and Brier score of a calibrated and a miscalibrated judge, by simulation.

    python -m perf.bench_calibration [--tables 200] [--questions 100] [--models 3]
        [--bootstrap 500] [--smoke]

Tables from :func:`tests.audit_simulate.calibration_table`: per (question, model) pair the
true probability that the candidate is better is ``σ(z)``, ``z ~ N(0, 1.5²)``, the gold
label drawn from it, each pair judged once in a random order, the judge stating
``σ(slope · z)`` as option probabilities (slope 1: calibrated; 3: overconfident). Printed
for :func:`voirdire.analysis.position.calibration_error.calibration_error`: the mean ECE and
the mean ``ece_calibrated`` (a calibrated judge's small-sample ECE with the same
forecasts), the share of tables whose ECE interval holds ``ece_calibrated`` (calibrated:
should be ≈ 0.95 or above) and whose interval lies above it (miscalibrated: power), the
population ECE (10 bins, from 10⁶ forecasts) and Brier score, and the share of Brier
intervals holding the population Brier score; Monte Carlo standard errors beside.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from tests.audit_simulate import calibration_table
from voirdire.analysis.position.calibration_error import (
    brier_of,
    calibration_error,
    ece_of,
)


def _population(slope: float, draws: int = 1_000_000) -> tuple[float, float]:
    """The ECE and Brier score of a judge of ``slope`` over 10⁶ forecasts (≈ the limit)."""
    rng = np.random.default_rng(7)
    z = rng.normal(0.0, 1.5, draws)
    y = (rng.random(draws) < 1 / (1 + np.exp(-z))).astype(float)
    p = 1 / (1 + np.exp(-slope * z))
    return ece_of(p, y), brier_of(p, y)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--models", type=int, default=3)
    ap.add_argument("--bootstrap", type=int, default=500)
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes (seconds): proves the script still runs",
    )
    a = ap.parse_args()
    if a.smoke:
        a.tables, a.questions, a.bootstrap = 5, 20, 50
    print(
        f"{a.tables} tables × {a.questions} questions × {a.models} models; bootstrap {a.bootstrap}"
    )
    print(f"{'slope':>5} {'ECE':>7} {'calibrated':>10} {'pop ECE':>8} {'holds cal.':>10} {'above cal.':>10} "
          f"{'Brier':>7} {'pop Brier':>9} {'Brier cov.':>10} {'s/table':>8}")  # fmt: skip
    for slope in (1.0, 3.0):
        pop_ece, pop_brier = _population(slope)
        ece, cal, holds, above, brier, bcov = [], [], 0, 0, [], 0
        t0 = time.perf_counter()
        for s in range(a.tables):
            t, _ = calibration_table(a.questions, a.models, slope=slope, seed=s)
            r = calibration_error(t, replicates=a.bootstrap, draws=200, seed=s).row(
                0, named=True
            )
            ece.append(r["ece"])
            cal.append(r["ece_calibrated"])
            holds += r["ece_lo"] <= r["ece_calibrated"] <= r["ece_hi"]
            above += r["ece_lo"] > r["ece_calibrated"]
            brier.append(r["brier"])
            bcov += r["brier_lo"] <= pop_brier <= r["brier_hi"]
        n, dt = a.tables, (time.perf_counter() - t0) / a.tables
        print(f"{slope:>5.1f} {np.mean(ece):>7.4f} {np.mean(cal):>10.4f} {pop_ece:>8.4f} {holds / n:>10.3f} "
              f"{above / n:>10.3f} {np.mean(brier):>7.4f} {pop_brier:>9.4f} {bcov / n:>10.3f} {dt:>8.3f}")  # fmt: skip
    print(
        f"Monte Carlo standard error of a share near 0.95: {math.sqrt(0.05 * 0.95 / a.tables):.3f}"
    )


if __name__ == "__main__":
    main()
