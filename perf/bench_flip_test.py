"""Size and power of the order tests of rank flips, by simulation (``docs/ranking.md``).

    python -m perf.bench_flip_test            # 200 tables per common preference 0, 1, 2, then power
    python -m perf.bench_flip_test --tables 0 # power alone
    python -m perf.bench_flip_test --smoke    # 4 tables each, 5 candidates x 10 questions (CI)

Each table: one judge on a star, as MT-Bench and DevBench are (``tests/ranking_sim.py:
star_orders``): ``--candidates`` candidates, strengths evenly spaced on [−s, s] (natural-log
scale, ``--spread``), each against a reference of strength 0 on ``--questions`` questions in
both orders. :func:`~voirdire.analysis.ranking.order_test.order_test` (``--permutations``
draws of each null) gives the significant flips (family-wise at α = 0.05).

**Size**: the judge's only order effect is one slot preference common to every model: the
answer shown first gains δ in logit (``--deltas``, 0, 1 and 2). Every flip between two
candidates is then a true null — the preference moves every candidate against the reference
alike —, and the share of tables that call any of them significant must stay ≤ 0.05 (target:
≥ 200 tables each). Printed per δ with its exact binomial 95 % interval, next to the former
test (a39b5b0: order-blind permutations, max-T over every pair), which the same tables
reject far more often as δ grows: its permutation variance is that of shares pulled towards
½, smaller than the real one as shares approach 0 or 1. Also per δ: the share calling a flip
with the reference significant (at δ = 0 an error, with the overall share of any significant
flip and of ``flips_p``/``tau_p`` ≤ 0.05; at δ > 0 the order really moves the reference:
power), and the seconds per table.

**Power**: model-specific order effects — candidate ``c`` gains ``own[c] = ±a`` (alternating
signs along the strengths, ``--own``) on top of a common δ of 1, so neighbours in strength
lean to opposite sides in the swapped order: the share of tables with a significant flip
between candidates, and the mean flips and significant flips between candidates.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import binomtest

from tests.ranking_sim import star_orders
from voirdire.analysis.ranking import order_test as ot
from voirdire.analysis.ranking.order_nulls import blind_swaps
from voirdire.analysis.ranking.order_test import order_test, order_units
from voirdire.analysis.ranking.registry import ranking_method

ALPHA = 0.05


def _share(hits: list[bool]) -> str:
    k, n = int(sum(hits)), len(hits)
    ci = binomtest(k, n).proportion_ci(0.95)
    return f"{k / n:.3f} ({k}/{n}) [{ci.low:.3f}, {ci.high:.3f}]"


def former_calls_a_candidate_flip(units, permutations: int, seed: int) -> bool:
    """a39b5b0's test on the same table: order-blind draws, |c| over its permutation root
    mean square, max-T over every pair; whether it calls a flip between two candidates
    significant (built from the module's own pieces, which it shared)."""
    models = sorted(set(units.get_column("a")) | set(units.get_column("b")))
    cands = set(units.get_column("a"))
    ix, k = {m: n for n, m in enumerate(models)}, len(models)
    counts = ot._counts(units, ix, k)
    fit = ranking_method("bt").fit
    i, j = np.triu_indices(k, 1)
    obs = ot._fit(
        fit,
        np.stack([counts[0][0], counts[1][0]]),
        np.stack([counts[0][1], counts[1][1]]),
        k,
        0.0,
    )
    flip0, _, c0 = ot.pair_stats(
        obs.rows(slice(0, 1)).pair_differences(i, j),
        obs.rows(slice(1, 2)).pair_differences(i, j),
    )
    draws = blind_swaps(counts[2].units, permutations, np.random.default_rng(seed))
    chunk = max(1, ot._CHUNK_CELLS // (2 * k * k))
    boards = ot._refits(fit, counts, (k, 0.0), draws, chunk)
    p = ot._max_t(ot._stats(boards, (i, j), chunk), None, c0[0], draws, centre=False)
    between = np.array(
        [models[x] in cands and models[y] in cands for x, y in zip(i, j)]
    )
    return bool((flip0[0] & (p <= ALPHA) & between).any())


def size(delta: float, tables: int, a, rng) -> None:
    theta = np.linspace(-a.spread, a.spread, a.candidates)
    cand, former, ref, any_sig, fp, tp = [], [], [], [], [], []
    t0 = time.perf_counter()
    for n in range(tables):
        units = order_units(star_orders(theta, a.questions, rng, bias=delta))
        t = order_test(units, permutations=a.permutations, seed=n)
        cand.append(t.significant(ALPHA, between_candidates=True) > 0)
        ref.append(t.significant(ALPHA, between_candidates=False) > 0)
        any_sig.append(t.significant(ALPHA) > 0)
        fp.append(t.flips_p <= ALPHA)
        tp.append(t.tau_p <= ALPHA)
        if a.former:
            former.append(former_calls_a_candidate_flip(units, a.permutations, n))
    per = (time.perf_counter() - t0) / tables
    line = f"common preference {delta:+.2f}: tables calling a flip between candidates significant {_share(cand)}"
    if former:
        line += f"; former test {_share(former)}"
    line += f"; a flip with the reference {_share(ref)}"
    if delta == 0:
        line += f"; any flip {_share(any_sig)}; flips_p <= 0.05 {_share(fp)}; tau_p <= 0.05 {_share(tp)}"
    print(f"{line}; {per:.2f} s/table", flush=True)


def power(own: float, tables: int, a, rng) -> None:
    theta = np.linspace(-a.spread, a.spread, a.candidates)
    mine = own * (-1.0) ** np.arange(a.candidates)
    hit, flips, sig = [], [], []
    for n in range(tables):
        t = order_test(
            order_units(star_orders(theta, a.questions, rng, bias=1.0, own=mine)),
            permutations=a.permutations,
            seed=n,
        )
        hit.append(t.significant(ALPHA, between_candidates=True) > 0)
        flips.append(int((t.flipped & t.between_candidates).sum()))
        sig.append(t.significant(ALPHA, between_candidates=True))
    print(
        f"own order effects ±{own:.2f} (common 1.00): tables with a significant flip between "
        f"candidates {_share(hit)}; mean flips between candidates {np.mean(flips):.1f}, significant {np.mean(sig):.2f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", type=int, default=20)
    ap.add_argument("--questions", type=int, default=80)
    ap.add_argument(
        "--spread", type=float, default=1.5, help="candidate strengths on [-s, s]"
    )
    ap.add_argument(
        "--tables", type=int, default=200, help="tables per common preference (size)"
    )
    ap.add_argument("--deltas", default="0,1,2", help="common slot preferences (logit)")
    ap.add_argument(
        "--power-tables",
        type=int,
        default=50,
        help="tables per own-effect size (power)",
    )
    ap.add_argument(
        "--own",
        default="0.1,0.25,0.5",
        help="sizes of the model-specific order effects (logit)",
    )
    ap.add_argument("--permutations", type=int, default=200)
    ap.add_argument(
        "--no-former", dest="former", action="store_false", help="skip the former test"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.candidates, a.questions, a.tables, a.power_tables, a.permutations = (
            5,
            10,
            4,
            2,
            20,
        )
    rng = np.random.default_rng(a.seed)
    print(
        f"star: {a.candidates} candidates (strengths on [-{a.spread}, {a.spread}]) vs a reference x {a.questions} "
        f"questions x 2 orders, {a.permutations} draws per null, alpha {ALPHA}"
    )
    if a.tables:
        for d in (float(x) for x in a.deltas.split(",")):
            size(d, a.tables, a, rng)
    if a.power_tables:
        for o in (float(x) for x in a.own.split(",")):
            power(o, a.power_tables, a, rng)


if __name__ == "__main__":
    main()
