"""Speed of the scheduler and of the whole bundled replay.

Prints:
1. queries/s through the scheduler (Ray actors, batching, Parquet appends) with the replay
   judge on MT-Bench (3 judges, 14,400 queries) and with an instant simulated judge on a
   larger job (MT-Bench x 10 repetitions, 2 judges, 96,000 queries); the scheduler's own
   wall time, Ray start-up excluded;
2. the wall time of the whole bundled replay (`voirdire run examples/{4 replay jobs}` in a
   fresh process: Ray start-up, data loading, all queries, extraction, metrics, reports).

Targets (issue 2): >= 5,000 queries/s; the whole replay in <= 60 s on a 2-core machine.

    python -m perf.bench_scheduler
    python -m perf.bench_scheduler --smoke    # small jobs, seconds (CI): the same code paths
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import tomli_w

import voirdire
from voirdire.benchmarks.data import resolve_data_dir

REPO = Path(__file__).resolve().parents[1]
REPLAY_JOBS = [
    "mtbench_position_bias",
    "devbench_position_bias",
    "mtbench_repetition",
    "devbench_repetition",
]


def scheduler_rate(tmp: Path, smoke: bool = False) -> list[tuple[str, int, float]]:
    from voirdire.engine.ray_start import init_ray
    from voirdire.engine.spec import load_job, parse_job

    init_ray()
    rows = []
    job = load_job(REPO / "examples" / "mtbench_position_bias.toml")
    job.output_dir = str(tmp / "replay")
    if smoke:
        job.benchmark.max_instances = 20
    out = voirdire.run(job)
    rows.append(("replay, MT-Bench, 3 judges", out.stats.queries, out.stats.seconds))
    sim = parse_job(
        {
            "name": "sim",
            "output_dir": str(tmp / "sim"),
            "benchmark": {
                "name": "mtbench",
                **({"max_instances": 40} if smoke else {}),
            },
            "comparison": {"repetitions": 2 if smoke else 10},
            "run": {"batch_size": 1000},
            "judges": [
                {"name": "fair", "backend": "simulated", "concurrency": 4},
                {
                    "name": "primacy",
                    "backend": "simulated",
                    "primacy": 0.8,
                    "concurrency": 4,
                },
            ],
        }
    )
    out = voirdire.run(sim)
    rows.append(
        (
            f"simulated, MT-Bench x{2 if smoke else 10} reps, 2 judges",
            out.stats.queries,
            out.stats.seconds,
        )
    )
    return rows


def _small_job(tmp: Path) -> Path:
    """A 10-instance copy of the first replay example (smoke mode), as a TOML file."""
    data = tomllib.loads((REPO / "examples" / f"{REPLAY_JOBS[0]}.toml").read_text())
    data["benchmark"]["max_instances"] = 10
    path = tmp / "small.toml"
    path.write_text(tomli_w.dumps(data))
    return path


def whole_replay(tmp: Path, smoke: bool = False) -> tuple[float, int]:
    jobs = (
        [str(_small_job(tmp))]
        if smoke
        else [str(REPO / "examples" / f"{j}.toml") for j in REPLAY_JOBS]
    )
    cmd = [sys.executable, "-m", "voirdire", "run", *jobs, "--no-progress"]
    # the fresh process runs in a scratch directory: hand it the data directory found here
    # (the data-location rules: VOIRDIRE_DATA, ../shared, a fetched copy)
    env = {**os.environ, "VOIRDIRE_DATA": str(resolve_data_dir())}
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if r.returncode:
        raise SystemExit(r.stdout + r.stderr)
    n = sum(
        int(line.split()[0].replace(",", ""))
        for line in r.stdout.splitlines()
        if " queries in " in line
    )
    return wall, n


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="small jobs (seconds): every step runs, figures meaningless",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        wall, n = whole_replay(tmp, args.smoke)
        rows = scheduler_rate(tmp, args.smoke)
    if args.smoke and (n == 0 or any(q == 0 for _, q, _ in rows)):
        raise SystemExit(f"smoke run asked no queries: replay {n}, scheduler {rows}")
    print(
        f"{'run':<42} {'queries':>9} {'seconds':>8} {'queries/s':>10} {'vs 5,000 q/s':>12}"
    )
    for name, q, s in rows:
        print(f"{name:<42} {q:>9,} {s:>8.2f} {q / s:>10,.0f} {q / s / 5000:>11.1f}x")
    what = (
        "one 10-instance replay job (smoke)"
        if args.smoke
        else "whole bundled replay (4 jobs, fresh process)"
    )
    print(
        f"{what}: {n:,} queries in {wall:.1f} s wall "
        f"({wall / 60:.0%} of the 60 s target)"
    )


if __name__ == "__main__":
    main()
