"""Size and power of the rank-flip test between the two orders, by simulation (``docs/ranking.md``).

    python -m perf.bench_flip_test            # 200 order-blind tables + 3 x 50 biased, 20 models x 80 questions
    python -m perf.bench_flip_test --tables 0 --biases 1.0  # power alone
    python -m perf.bench_flip_test --smoke    # 4 + 3 x 2 tables, 5 models x 10 questions (CI)

Each table: a round robin of ``--models`` models (strengths evenly spaced on [−1, 1],
natural-log scale) on ``--questions`` questions in both orders, each verdict drawn from
Bradley–Terry with ``bias`` added to the logit of the answer shown first (``tests/ranking_sim.py``:
the candidate is always the lower-numbered model, so a bias favours the low-numbered models
in the first-order board and the others in the swapped one: a known order effect on the
leaderboard: model ``i`` is the candidate against the ``K − 1 − i`` models above it, so its
first-order θ moves by about ``bias · (K − 1 − 2i)/(K − 1)`` and its swapped-order θ by the
opposite; with strengths ``2/(K − 1)`` apart, the first-order board's expected order is
flattened at ``bias`` 1 and reversed beyond). ``bias`` 0 is an order-blind judge: every
rejection is an error.

For each table :func:`~voirdire.analysis.ranking.order_test.order_test` (``--permutations``
random swaps) gives the family-wise significant flips (max-T at α = 0.05), the p-value of
the flip count and of τ. Printed per bias: the share of tables with at least one
significant flip (the family-wise error rate when bias = 0; target ≤ 0.06 over ≥ 200
tables), the shares with ``flips_p`` and ``tau_p`` ≤ 0.05, each with its exact binomial 95 %
interval, the mean flips, order-blind flips and significant flips, and the seconds per table.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl
from scipy.stats import binomtest

from tests.ranking_sim import round_robin
from voirdire.analysis.ranking.order_test import order_test, order_units

ALPHA = 0.05


def table(theta: np.ndarray, questions: int, bias: float, rng: np.random.Generator):
    """One judge's comparisons in both orders (``COMPARISON_SCHEMA``)."""
    first = round_robin(theta, questions, rng, board="first", bias=bias)
    swapped = round_robin(theta, questions, rng, board="swapped", bias=-bias)
    return pl.concat([first, swapped])


def _share(hits: list[bool]) -> str:
    k, n = int(sum(hits)), len(hits)
    ci = binomtest(k, n).proportion_ci(0.95)
    return f"{k / n:.3f} ({k}/{n}) [{ci.low:.3f}, {ci.high:.3f}]"


def run(bias: float, tables: int, a, rng) -> None:
    theta = np.linspace(-1.0, 1.0, a.models)
    any_sig, fp, tp, flips, null, sig = [], [], [], [], [], []
    t0 = time.perf_counter()
    for n in range(tables):
        t = order_test(
            order_units(table(theta, a.questions, bias, rng)),
            permutations=a.permutations,
            seed=n,
        )
        any_sig.append(t.significant(ALPHA) > 0)
        fp.append(t.flips_p <= ALPHA)
        tp.append(t.tau_p <= ALPHA)
        flips.append(t.flips)
        null.append(t.flips_null)
        sig.append(t.significant(ALPHA))
    per = (time.perf_counter() - t0) / tables
    print(
        f"bias {bias:+.2f}: tables with a significant flip {_share(any_sig)}; flips_p <= 0.05 {_share(fp)}; "
        f"tau_p <= 0.05 {_share(tp)}; mean flips {np.mean(flips):.1f}, order-blind {np.mean(null):.1f}, "
        f"significant {np.mean(sig):.2f}; {per:.2f} s/table"
    )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--questions", type=int, default=80)
    ap.add_argument("--tables", type=int, default=200, help="order-blind tables (size)")
    ap.add_argument(
        "--power-tables", type=int, default=50, help="tables per bias (power)"
    )
    ap.add_argument(
        "--biases",
        default="0.5,1.0,1.5",
        help="logit biases for the first-shown answer",
    )
    ap.add_argument("--permutations", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.models, a.questions, a.tables, a.power_tables, a.permutations = (
            5,
            10,
            4,
            2,
            20,
        )
    rng = np.random.default_rng(a.seed)
    print(
        f"{a.models} models round robin x {a.questions} questions x 2 orders, {a.permutations} permutations, "
        f"alpha {ALPHA}"
    )
    if a.tables:
        run(0.0, a.tables, a, rng)
    for b in (float(x) for x in a.biases.split(",")):
        run(b, a.power_tables, a, rng)


if __name__ == "__main__":
    main()
