"""Peak memory and time of ``voirdire rank``'s leaderboards and rank flips on many models.

    python -m perf.bench_ranking_memory                 # 300 models x 80 questions, 1,000 replicates
    python -m perf.bench_ranking_memory --replicates 100
    python -m perf.bench_ranking_memory --smoke         # 8 models x 6 questions, 20 replicates (CI)

Every pair of the models on every question in both orders (Bradley–Terry outcomes,
``tests/ranking_sim.py``): the first order is the ``first`` board, the second ``swapped``,
both together ``pooled`` (what ``rank`` fits per judge), then the rank flips
(:func:`~voirdire.analysis.ranking.flips.rank_flips`, first against swapped). Printed: wall
and CPU seconds of the fits and of the flips, and the process's peak resident memory
(``resource.getrusage``, the whole process: the simulated comparisons included). Sizes whose
``replicates × models² × 8`` bytes pass
:data:`~voirdire.analysis.ranking.board_checks.MAX_PAIRWISE_BYTES` are refused in one line before
anything is fitted (printed, with the peak memory at that point).
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np
import polars as pl

from tests.ranking_sim import round_robin
from voirdire.analysis.ranking.board_checks import MAX_PAIRWISE_BYTES
from voirdire.analysis.ranking.boards import fit_boards
from voirdire.analysis.ranking.flips import rank_flips
from voirdire.core import ConfigError


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=300)
    ap.add_argument("--questions", type=int, default=80)
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.models, a.questions, a.replicates = 8, 6, 20
    both = round_robin(
        np.linspace(-2, 2, a.models), a.questions, np.random.default_rng(0), orders=2
    )
    half = (
        both.height // 2
    )  # round_robin lays out the orders one after the other per question
    order = pl.Series(
        np.tile(np.repeat(["first", "swapped"], half // a.questions), a.questions)
    )
    first_swapped = both.with_columns(view=order)
    comps = pl.concat([first_swapped, both.with_columns(view=pl.lit("pooled"))])
    need = a.replicates * a.models**2 * 8
    print(
        f"{a.models} models x {a.questions} questions x 2 orders ({both.height:,} comparisons), {a.replicates} "
        f"replicates: replicates x models^2 x 8 B = {need / 2**30:.2f} GiB (limit "
        f"{MAX_PAIRWISE_BYTES / 2**30:.2f} GiB); peak RSS after simulating {_peak_gib():.2f} GiB"
    )  # fmt: skip
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        boards = fit_boards(comps, replicates=a.replicates)
    except ConfigError as e:
        print(
            f"refused in {time.perf_counter() - t0:.3f} s, peak RSS {_peak_gib():.2f} GiB: {e}"
        )
        return
    t1, c1 = time.perf_counter(), time.process_time()
    flips = rank_flips(boards)
    t2, c2 = time.perf_counter(), time.process_time()
    print(
        f"boards: {t1 - t0:.1f} s wall, {c1 - c0:.1f} s CPU; flips: {t2 - t1:.1f} s wall, {c2 - c1:.1f} s CPU; "
        f"peak RSS {_peak_gib():.2f} GiB (load {os.getloadavg()[0]:.1f}); {boards.table.height} leaderboard rows, "
        f"{flips.height} flip rows"
    )  # fmt: skip


if __name__ == "__main__":
    main()
