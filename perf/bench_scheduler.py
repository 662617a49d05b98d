"""Speed of the scheduler and of the whole bundled replay.

Prints:
1. queries/s through the scheduler (Ray actors, batching, Parquet appends) with the replay
   judge on MT-Bench (3 judges, 14,400 queries) and with an instant simulated judge on a
   larger job (MT-Bench x 10 repetitions, 2 judges, 96,000 queries); the scheduler's own
   wall time, Ray start-up excluded;
2. the wall time of the whole bundled replay (`voirdire run examples/{4 replay jobs}` in a
   fresh process: Ray start-up, data loading, all queries, extraction, metrics, reports).

Targets (issue 2): >= 5,000 queries/s; the whole replay in <= 60 s on a 2-core machine.

    python perf/bench_scheduler.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import voirdire

REPO = Path(__file__).resolve().parents[1]
REPLAY_JOBS = ["mtbench_position_bias", "devbench_position_bias", "mtbench_repetition", "devbench_repetition"]


def scheduler_rate(tmp: Path) -> list[tuple[str, int, float]]:
    from voirdire.engine.job import init_ray
    from voirdire.engine.spec import load_job, parse_job

    init_ray()
    rows = []
    job = load_job(REPO / "examples" / "mtbench_position_bias.toml")
    job.output_dir = str(tmp / "replay")
    out = voirdire.run(job)
    rows.append(("replay, MT-Bench, 3 judges", out.stats.queries, out.stats.seconds))
    sim = parse_job(
        {
            "name": "sim",
            "output_dir": str(tmp / "sim"),
            "benchmark": {"name": "mtbench"},
            "comparison": {"repetitions": 10},
            "run": {"batch_size": 1000},
            "judges": [
                {"name": "fair", "backend": "simulated", "concurrency": 4},
                {"name": "primacy", "backend": "simulated", "primacy": 0.8, "concurrency": 4},
            ],
        }
    )
    out = voirdire.run(sim)
    rows.append(("simulated, MT-Bench x10 reps, 2 judges", out.stats.queries, out.stats.seconds))
    return rows


def whole_replay(tmp: Path) -> tuple[float, int]:
    cmd = [sys.executable, "-m", "voirdire", "run", *[str(REPO / "examples" / f"{j}.toml") for j in REPLAY_JOBS], "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode:
        raise SystemExit(r.stdout + r.stderr)
    n = sum(int(line.split()[0].replace(",", "")) for line in r.stdout.splitlines() if " queries in " in line)
    return wall, n


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        wall, n = whole_replay(tmp)
        rows = scheduler_rate(tmp)
    print(f"{'run':<42} {'queries':>9} {'seconds':>8} {'queries/s':>10} {'vs 5,000 q/s':>12}")
    for name, q, s in rows:
        print(f"{name:<42} {q:>9,} {s:>8.2f} {q / s:>10,.0f} {q / s / 5000:>11.1f}x")
    print(f"whole bundled replay (4 jobs, fresh process): {n:,} queries in {wall:.1f} s wall "
          f"({wall / 60:.0%} of the 60 s target)")


if __name__ == "__main__":
    main()
