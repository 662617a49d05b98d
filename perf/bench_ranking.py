"""Time a leaderboard with cluster-bootstrap intervals (``docs/ranking.md``).

    python -m perf.bench_ranking              # 40 models x 80 questions x 2 orders, 1,000 replicates
    python -m perf.bench_ranking --smoke      # 6 models x 10 questions, 20 replicates (CI)

Every pair of the models is compared on every question in both orders (a round robin:
40 models, 780 pairs x 80 questions x 2 orders = 124,800 comparisons), outcomes drawn from
Bradley–Terry (``tests/ranking_sim.py``). Timed (wall and process CPU seconds): one board
(the pooled view) through :func:`~voirdire.analysis.ranking.boards.fit_boards`: the cell
sums, the cluster bootstrap and the batched Newton fits of every replicate. Target: <= 5 s
on the 2-core development machine (``docs/ranking.md`` gives the figure and the load).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from tests.ranking_sim import round_robin
from voirdire.analysis.ranking.boards import fit_boards


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=40)
    ap.add_argument("--questions", type=int, default=80)
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.models, a.questions, a.replicates = 6, 10, 20
    comps = round_robin(
        np.linspace(-2, 2, a.models), a.questions, np.random.default_rng(0), orders=2
    )
    t0, c0 = time.perf_counter(), time.process_time()
    boards = fit_boards(comps, replicates=a.replicates)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"{a.models} models x {a.questions} questions x 2 orders ({comps.height:,} comparisons), "
        f"{a.replicates} replicates: {wall:.2f} s wall, {cpu:.2f} s CPU (load {os.getloadavg()[0]:.2f}); "
        f"{boards.table.height} leaderboard rows"
    )


if __name__ == "__main__":
    main()
