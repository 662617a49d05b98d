"""Time the bias metrics on synthetic judgment tables with perturbations.

    python -m perf.bench_biases [--questions 100 1000] [--bootstrap 1000] [--smoke]

Tables from :func:`tests.bias_simulate.simulate_bias_judgments`: 4 judges, 10
candidates, both orders, 2 repetitions, a control and 5 variants (so 5/6 of the rows are
perturbed). Timed, in seconds of wall time: the generator, and
:func:`voirdire.analysis.biases.effects.bias_effects` (pairing, RR, CR, Δ per variant and slot,
the cluster bootstrap with ``--bootstrap`` replicates, McNemar tests).
"""

from __future__ import annotations

import argparse
import time

from tests.bias_simulate import simulate_bias_judgments
from voirdire.analysis.biases.effects import bias_effects

VARIANTS = [
    (f"bandwagon-{p}", "bandwagon", str(p), "worse") for p in (60, 70, 80, 90)
] + [("verbosity-2.0", "verbosity", "2.0", "worse")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes (seconds): proves the script still runs",
    )
    a = ap.parse_args()
    if a.smoke:
        a.questions, a.bootstrap = [20], 50
    judges = {
        f"judge-{i}": ({"repetition_noise": 0.2}, {"bandwagon": 0.1 * i})
        for i in range(4)
    }
    print(f"{'rows':>10} {'perturbed':>10} {'simulate s':>11} {'bias_effects s':>15}")
    for nq in a.questions:
        t = time.perf_counter()
        df = simulate_bias_judgments(
            judges, VARIANTS, n_questions=nq, candidates=10, repetitions=2
        )
        t_sim = time.perf_counter() - t
        t = time.perf_counter()
        eff = bias_effects(df, replicates=a.bootstrap)
        t_eff = time.perf_counter() - t
        if eff.height == 0:
            raise SystemExit("bias_effects returned no rows")
        print(f"{df.height:>10} {df.height * 5 // 6:>10} {t_sim:>11.2f} {t_eff:>15.2f}")


if __name__ == "__main__":
    main()
