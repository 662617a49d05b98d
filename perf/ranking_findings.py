"""The order-alone leaderboard figures the docs state, from ``voirdire rank``'s own output.

    voirdire rank runs/mtbench-position-bias runs/devbench-position-bias --out /tmp/rk
    python -m perf.ranking_findings /tmp/rk runs/mtbench-position-bias runs/devbench-position-bias
    python -m perf.ranking_findings --smoke   # a simulated judge, ranked and read back

Prints, for every judge and strategy with a first-order and a swapped-order board, the row
of ``docs/ranking.md``'s "order alone" table (then ``docs/findings.md``'s, the ``single``
rows), read from the command's ``RANK/metrics/rank_flips.csv`` (no figure typed by hand):
flipped pairs, the
order-blind mean and p-value of the count, the significant flips (of them between two
candidates), τ, its order-blind mean and p-value, ρ. Then each row's significant flips with
their adjusted p-values and family, from the order tests recomputed on the directories'
judgments as the command computes them (its strategies, ``--replicates`` draws, seed 0),
checked against the CSV's counts.
"""

from __future__ import annotations

import argparse
import tempfile
from itertools import combinations
from pathlib import Path

import numpy as np
import polars as pl

from voirdire.analysis.ranking.order_test import order_test, order_units
from voirdire.analysis.ranking.order_views import order_views
from voirdire.analysis.ranking.rank import _pairwise_rows


def _f(x, p: str = "{:.3f}") -> str:
    return (
        "–"
        if x is None or (isinstance(x, float) and np.isnan(x))
        else p.format(x).replace("-", "−")
    )


def table(flips: pl.DataFrame) -> pl.DataFrame:
    """The first-vs-swapped rows of a ``rank_flips.csv``."""
    return flips.filter(
        (pl.col("view") == "first") & (pl.col("view_b") == "swapped")
    ).sort("benchmark", "judge", "strategy")


def print_table(rows: pl.DataFrame) -> None:
    print(
        "| benchmark (models) | judge | strategy | flipped | order-blind | p (flips) | significant (between "
        "candidates) | τ | order-blind τ | p (τ) | ρ |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows.iter_rows(named=True):
        print(
            f"| {r['benchmark']} ({r['models']}) | {r['judge']} | {r['strategy']} | {r['flips']} / {r['pairs']} | "
            f"{_f(r['flips_null'], '{:.1f}')} | {_f(r['flips_p'])} | {r['flips_significant']} "
            f"({r['flips_significant_candidates']}) | {_f(r['kendall_tau'])} | {_f(r['tau_null'])} | "
            f"{_f(r['tau_p'])} | {_f(r['spearman_rho'])} |"
        )


def _p(x: float) -> str:
    return f"{x:.2f}" if x >= 0.01 else f"{x:.3f}"


def print_findings(rows: pl.DataFrame) -> None:
    """``docs/findings.md``'s table: each judge's own verdicts (``single``)."""
    print(
        "| benchmark (models) | judge | flipped pairs | order-blind | p | significant (between candidates) "
        "| τ first/swapped (order-blind) |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows.filter(pl.col("strategy") == "single").iter_rows(named=True):
        print(
            f"| {r['benchmark']} ({r['models']}) | {r['judge']} | {r['flips']} / {r['pairs']} | "
            f"{_f(r['flips_null'], '{:.1f}')} | {_p(r['flips_p'])} | {r['flips_significant']} "
            f"({r['flips_significant_candidates']}) | {_f(r['kendall_tau'], '{:.2f}')} ({_f(r['tau_null'], '{:.2f}')}) |"
        )


def significant_pairs(
    judgments: pl.DataFrame, rows: pl.DataFrame, replicates: int, strategies
) -> None:
    """Each row's significant flips, from the order tests as ``voirdire rank`` runs them."""
    units = order_units(order_views(_pairwise_rows(judgments), strategies))
    for key, u in units.group_by(
        ["benchmark", "judge", "strategy"], maintain_order=True
    ):
        row = rows.filter(
            (pl.col("benchmark") == key[0])
            & (pl.col("judge") == key[1])
            & (pl.col("strategy") == key[2])
        )
        if row.height == 0:
            continue
        t = order_test(u, permutations=replicates, seed=0)
        assert t.significant() == row.item(0, "flips_significant"), (
            key,
            t.significant(),
        )
        assert t.significant(between_candidates=True) == row.item(
            0, "flips_significant_candidates"
        )
        hits = [
            f"{a}–{b} ({'candidates' if cand else 'reference'}, p̃ {p:.3f})"
            for (a, b), f, p, cand in zip(
                combinations(t.models, 2), t.flipped, t.p_adjusted, t.between_candidates
            )
            if f and p <= 0.05
        ]
        print(
            f"{' / '.join(key)}: {len(hits)} significant: {'; '.join(hits) or 'none'}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rank_out", nargs="?", help="the --out of `voirdire rank DIR...`")
    ap.add_argument("dirs", nargs="*", help="the directories it ranked")
    ap.add_argument(
        "--replicates", type=int, default=1000, help="the command's --replicates"
    )
    ap.add_argument(
        "--strategies",
        default=None,
        help="the command's --strategies (default: its default)",
    )
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    strategies = a.strategies.split(",") if a.strategies else None
    if a.smoke or not a.rank_out:
        from tests.ranking_sim import order_judgments
        from voirdire.analysis.ranking.rank import rank_judgments
        from voirdire.analysis.report.ranking import write_ranking

        judgments = order_judgments(
            np.linspace(-1, 1, 5), 12, np.random.default_rng(0), bias=1.0
        )
        a.replicates, strategies = 50, []
        out = Path(tempfile.mkdtemp()) / "rk"
        write_ranking(
            rank_judgments(judgments, strategies=strategies, replicates=a.replicates),
            out,
        )
        a.rank_out = str(out)
    else:
        from voirdire.analysis.stages import analyse_dirs

        tables = analyse_dirs([Path(d) for d in a.dirs], ["judgments"])
        judgments = pl.concat([t.judgments for t in tables], how="diagonal_relaxed")
    rows = table(pl.read_csv(Path(a.rank_out) / "metrics" / "rank_flips.csv"))
    print_table(rows)
    print()
    print_findings(rows)
    print()
    significant_pairs(judgments, rows, a.replicates, strategies)


if __name__ == "__main__":
    main()
