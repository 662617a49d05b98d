"""Time the analysis stage on synthetic judgment tables of 10^4, 10^5 and 10^6 pairs.

    python -m perf.bench_analysis [--sizes 1e4 1e5 1e6] [--bootstrap 200]
    python -m perf.bench_analysis --smoke     # 2,000 pairs, 10 bootstrap replicates (CI)

The table comes from the judge simulator (:mod:`voirdire.analysis.position.simulate`): 10 judges,
20 candidates, 8 tasks, both orders, 2 repetitions (so RS is computed too); the number of
questions grows with the size. Timed, in seconds of wall time:

- metrics: ``summarize`` (pairs, units, per-judge PC/PF/error rate, RS);
- agreement: mutual agreement + Cohen's kappa for every judge pair, Fleiss' kappa,
  per-query disagreement, its histogram and the majority share;
- regression: stepwise AIC for PC and PF over the units (1,600 units at every size);
- sign test; bootstrap: cluster bootstrap per judge with ``--bootstrap`` replicates.

Prints a table (wall seconds, and the process CPU seconds of the core three, which are
less sensitive to other load on a shared machine); the target is 10^6 pairs in <= 10 s (metrics + agreement + regression)
and linear growth.
"""

from __future__ import annotations

import argparse
import time

from voirdire.analysis.position.metrics import summarize
from voirdire.analysis.position.regression import factor_regressions
from voirdire.analysis.position.simulate import simulate_judgments
from voirdire.analysis.position.uncertainty import bootstrap_ci, sign_test
from voirdire.analysis.stats.agreement import (
    agreement_matrix,
    choices,
    disagreement_histogram,
    fleiss_panel,
    majority_share,
    query_disagreement,
)

JUDGES, CANDIDATES, TASKS, REPS = 10, 20, 8, 2


def _table(pairs: int):
    nq = max(TASKS, pairs // (JUDGES * CANDIDATES * REPS))
    judges = {
        f"judge-{i}": dict(
            primacy=0.3 + 0.04 * i,
            tie_rate=0.1,
            sensitivity=1.0 + 0.2 * i,
            repetition_noise=0.1 * (i % 4),
            fail_rate=0.01,
        )
        for i in range(JUDGES)
    }
    return simulate_judgments(
        judges,
        n_questions=nq,
        candidates=CANDIDATES,
        tasks=TASKS,
        repetitions=REPS,
        seed=0,
    )


CPU: dict[str, float] = {}


def _timed(fn, key: str = ""):
    """``(result, wall seconds)``; the process CPU seconds go to ``CPU[key]``."""
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    CPU[key] = time.process_time() - c
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e4, 1e5, 1e6])
    ap.add_argument(
        "--bootstrap", type=int, default=200, help="bootstrap replicates (0: skip)"
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes (seconds): every step runs, figures meaningless",
    )
    args = ap.parse_args()
    if args.smoke:
        args.sizes, args.bootstrap = [2e3], 10
    # warm-up (imports of statsmodels/scipy, polars plan caches): not timed
    w = _table(2_000)
    (
        summarize(w),
        agreement_matrix(w),
        fleiss_panel(w),
        factor_regressions(summarize(w)[1]),
        sign_test(w),
    )
    head = f"{'pairs':>10} {'rows':>10} {'gen s':>7} {'metrics s':>10} {'agree s':>8} {'regr s':>7} {'sign s':>7} {'boot s':>7} {'core s':>7} {'core cpu s':>10} {'core µs/pair':>13}"
    print(head)
    print("-" * len(head))
    for size in args.sizes:
        df, t_gen = _timed(lambda size=size: _table(int(size)))
        n_pairs = df.height // 2
        (jm, um), t_m = _timed(lambda df=df: summarize(df), "m")

        def agree(df=df):
            ch = choices(df)
            agreement_matrix(df, ch=ch)
            fleiss_panel(df, ch=ch)
            q = query_disagreement(df, ch=ch)
            disagreement_histogram(q)
            majority_share(q)

        _, t_a = _timed(agree, "a")
        _, t_r = _timed(lambda um=um: factor_regressions(um), "r")
        _, t_s = _timed(lambda df=df: sign_test(df))
        t_b = (
            _timed(lambda df=df: bootstrap_ci(df, replicates=args.bootstrap))[1]
            if args.bootstrap
            else float("nan")
        )
        core = t_m + t_a + t_r
        print(
            f"{n_pairs:>10,} {df.height:>10,} {t_gen:>7.2f} {t_m:>10.2f} {t_a:>8.2f} {t_r:>7.2f} {t_s:>7.2f} {t_b:>7.2f} {core:>7.2f} {CPU['m'] + CPU['a'] + CPU['r']:>10.2f} {core / n_pairs * 1e6:>13.2f}"
        )


if __name__ == "__main__":
    main()
