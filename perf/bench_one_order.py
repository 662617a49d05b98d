"""Size, power and coverage of the one-order position effect, by simulation.

    python -m perf.bench_one_order [--tables 200] [--questions 100] [--models 4]
        [--switch pair|question] [--tau 1] [--delta 0.3] [--bootstrap 500]
        [--permutations 500] [--smoke]

Tables from :func:`tests.audit_simulate.one_order_table`: ``--questions`` instructions, each
judged for ``--models`` models against one baseline (strengths spread over [-1, 1]), one
order per pair drawn by a fair coin per pair (``--switch pair``) or one coin per
instruction shared by every model (``--switch question``: AlpacaEval's seeded switch), a
question effect of sd ``--tau`` (the clusters), 10 % ties, 2 % failed verdicts. The judge
picks the candidate with probability ``σ(s + u ± δ)``, ``+δ`` when it is shown first.
Printed for :func:`voirdire.analysis.position.one_order.one_order_effect`, pooled row:

- size (δ = 0): the share of tables where the randomisation p < 0.05 — with the order
  labels shuffled per pair (``p pair``, the unit of a user's own pairs) and per whole
  question (``p question``, AlpacaEval's declared unit) —, and where the cluster-bootstrap
  95 % interval excludes 0 (all should be ≈ 0.05 where the test's unit is the design's; the
  pair shuffle on a per-question switch is not);
- power (δ = ``--delta``): the same shares;
- coverage: the share of intervals holding the true effect (0 at δ = 0; at δ > 0
  :func:`tests.audit_simulate.true_effect` × 0.9, ties counting ½ in both halves),
  should be ≈ 0.95;

each with its Monte Carlo standard error, and the seconds per table.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import polars as pl

from tests.audit_simulate import one_order_table, true_effect
from voirdire.analysis.position.one_order import one_order_effect

TIES, FAILS = 0.10, 0.02


def _run(a, delta: float) -> dict[str, float]:
    strengths = list(np.linspace(-1.0, 1.0, a.models))
    truth = true_effect(strengths, delta, 1.0) * (1 - TIES)
    rej_p = rej_q = rej_ci = cover = 0
    t0 = time.perf_counter()
    for s in range(a.tables):
        t = one_order_table(a.questions, strengths, delta=delta, tau=a.tau, tie_rate=TIES, fail_rate=FAILS,
                            seed=10_000 * (delta > 0) + s, switch=a.switch)  # fmt: skip
        r = one_order_effect(
            t, replicates=a.bootstrap, permutations=a.permutations, seed=s
        )
        r = r.filter(pl.col("candidate").is_null()).row(0, named=True)
        q = one_order_effect(t, replicates=2, permutations=a.permutations, seed=s,
                             units={"B": "cluster"})  # fmt: skip
        rej_q += q.filter(pl.col("candidate").is_null())["p_value"][0] < 0.05
        rej_p += r["p_value"] < 0.05
        rej_ci += not (r["effect_lo"] <= 0.0 <= r["effect_hi"])
        cover += r["effect_lo"] <= truth <= r["effect_hi"]
    n = a.tables
    return {"truth": truth, "p<0.05": rej_p / n, "q<0.05": rej_q / n, "CI excludes 0": rej_ci / n,
            "coverage": cover / n, "s/table": (time.perf_counter() - t0) / n}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--models", type=int, default=4)
    ap.add_argument("--switch", choices=["pair", "question"], default="pair")
    ap.add_argument("--tau", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=0.3)
    ap.add_argument("--bootstrap", type=int, default=500)
    ap.add_argument("--permutations", type=int, default=500)
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes (seconds): proves the script still runs",
    )
    a = ap.parse_args()
    if a.smoke:
        a.tables, a.questions, a.bootstrap, a.permutations = 5, 20, 50, 50
    print(f"{a.tables} tables × {a.questions} questions × {a.models} models, one order per pair, "
          f"a coin per {a.switch}, question sd {a.tau}; bootstrap {a.bootstrap}, permutations {a.permutations}")  # fmt: skip
    print(
        f"{'δ':>5} {'true effect':>12} {'p pair<.05':>11} {'p question<.05':>15} {'CI excl 0':>10} {'coverage':>9} {'s/table':>8}"
    )
    for delta in (0.0, a.delta):
        r = _run(a, delta)
        print(f"{delta:>5.2f} {r['truth']:>12.4f} {r['p<0.05']:>11.3f} {r['q<0.05']:>15.3f} "
              f"{r['CI excludes 0']:>10.3f} {r['coverage']:>9.3f} {r['s/table']:>8.3f}")  # fmt: skip
    se = math.sqrt(0.05 * 0.95 / a.tables)
    print(
        f"Monte Carlo standard error of a share near 0.05: {se:.3f}; near 0.95: the same"
    )


if __name__ == "__main__":
    main()
