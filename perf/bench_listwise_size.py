"""Size (and power) of the list-wise slot-share test under repetitions, by simulation.

For a judge without position bias (primacy 1/p, the simulated judge's model) in the p
cyclic orders, the share of simulated tables the slot-share test rejects at α = 0.05:
``clustered`` is ``slot_shares``' cluster-robust Wald test (questions as clusters, what
``chi2_p`` reports), ``pearson`` Pearson's χ² treating every judgment as independent
(what ``chi2_p`` was before). Rows: list size p, questions, repetitions and
``repetition_noise`` (0: identical repetitions; 0.5: partly correlated). A last block
gives the power against a mild primacy (slot A chosen with 0.45 instead of 1/3 when the
judge is unsure). The Monte Carlo error of a share near 0.05 is about
``sqrt(0.05 · 0.95 / tables)`` (0.005 at 2,000 tables).

    python -m perf.bench_listwise_size [--tables 2000] [--seed 0]
    python -m perf.bench_listwise_size --smoke     # 50 tables (seconds; CI)
"""

from __future__ import annotations

import argparse
import time

from tests.listwise_simulate import simulate_listwise_tables, slot_test_size
from voirdire.judges.simulated import SimulatedSettings

CONFIGS = [  # (p, questions, repetitions, repetition_noise)
    (3, 100, 1, 0.0),
    (3, 100, 3, 0.0),
    (3, 100, 3, 0.5),
    (3, 30, 1, 0.0),
    (3, 30, 3, 0.0),
    (3, 30, 3, 0.5),
    (4, 100, 1, 0.0),
    (4, 100, 3, 0.0),
    (4, 100, 3, 0.5),
]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args(argv)
    tables = 50 if a.smoke else a.tables
    t0 = time.perf_counter()
    print(f"slot-share test at alpha = 0.05, {tables} tables per row")
    print(
        f"{'judge':>14} {'p':>2} {'questions':>9} {'reps':>4} {'rep_noise':>9} {'clustered':>9} {'pearson':>8}"
    )
    for label, primacy in (("position-free", None), ("primacy 0.45", 0.45)):
        for i, (p, nq, reps, noise) in enumerate(CONFIGS):
            if primacy is not None and p != 3:
                continue
            s = SimulatedSettings(
                primacy=primacy or 1 / p, sensitivity=1.0, repetition_noise=noise
            )
            df = simulate_listwise_tables(
                s, tables=tables, n_questions=nq, p=p, repetitions=reps, seed=a.seed + i
            )
            size = slot_test_size(df)
            print(
                f"{label:>14} {p:>2} {nq:>9} {reps:>4} {noise:>9.1f} {size['clustered']:>9.3f} {size['pearson']:>8.3f}"
            )
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
