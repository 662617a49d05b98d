"""How ``voirdire rank`` scales: its time at 10⁵ and 10⁶ verdicts and the exponent between them.

    python -m perf.bench_scaling                      # 20 and 200 models x 2,500 questions x 2 orders
    python -m perf.bench_scaling --work /tmp/scaling  # keep (and reuse) the two audits
    python -m perf.bench_scaling --smoke              # 3 and 12 models x 15 questions, 20 replicates (CI)

Each size is an Arena-Hard log (``tests/audit_logs.py``, the synthetic of
``perf/bench_analysis_memory.py``) of ``--small`` and ``--large`` models against one baseline
on ``--questions`` questions, both games, read by ``voirdire audit`` (made once, not timed).
Timed: ``python -m voirdire rank AUDIT --out ...`` as a fresh process (default replicates:
1,000), its wall seconds and its CPU seconds (user + system of the child, every thread).
Printed: both sizes' figures, the load average before each run, and the exponent
``log(t_large / t_small) / log(n_large / n_small)`` of wall and of CPU time (1: linear; the
issue's bound, 1.1). Under load the wall figures move with the other work on the machine;
the CPU figures much less.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perf.bench_analysis_memory import _synthetic


def audited(work: Path, models: int, questions: int, env: dict) -> Path:
    """The audit directory of the synthetic log of ``models`` models (made once)."""
    audit = work / f"audit-{models}x{questions}"
    if not (audit / "judgments.parquet").is_file():
        logs = _synthetic(work / f"logs-{models}x{questions}", models, questions)
        cmd = [sys.executable, "-m", "voirdire", "audit", str(logs)]
        cmd += ["--format", "arena-hard", "--out", str(audit)]
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return audit


def timed_rank(
    audit: Path, out: Path, replicates: int | None, env: dict
) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of ``voirdire rank audit`` in a fresh process.

    Raises:
        subprocess.CalledProcessError: the command failed.
    """
    cmd = [sys.executable, "-m", "voirdire", "rank", str(audit), "--out", str(out)]
    if replicates is not None:
        cmd += ["--replicates", str(replicates)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def exponent(t_small: float, t_large: float, n_small: int, n_large: int) -> float:
    """``log(t_large / t_small) / log(n_large / n_small)``: 1 for a linear cost."""
    return math.log(t_large / t_small) / math.log(n_large / n_small)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=20, help="models at the small size")
    ap.add_argument("--large", type=int, default=200, help="models at the large size")
    ap.add_argument("--questions", type=int, default=2500)
    ap.add_argument(
        "--replicates", type=int, default=None, help="default: the command's own"
    )
    ap.add_argument("--work", type=Path, default=None, help="where audits are kept")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.small, a.large, a.questions, a.replicates = 3, 12, 15, 20
    with tempfile.TemporaryDirectory() as tmp:
        work = a.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "VOIRDIRE_LOG_CACHE": str(work / "log-cache")}
        rows = []
        for models in (a.small, a.large):
            audit = audited(work, models, a.questions, env)
            load = os.getloadavg()[0]
            wall, cpu = timed_rank(audit, work / f"rank-{models}", a.replicates, env)
            n = 2 * models * a.questions
            rows.append((n, wall, cpu))
            print(f"rank on {n:>9,} verdicts ({models} models x {a.questions} questions x 2): "
                  f"{wall:7.2f} s wall {cpu:7.2f} s CPU (load {load:.1f} on {os.cpu_count()} cores)",
                  flush=True)  # fmt: skip
        (n1, w1, c1), (n2, w2, c2) = rows
        print(f"exponent {n1:,} -> {n2:,} verdicts: {exponent(w1, w2, n1, n2):.2f} wall, "
              f"{exponent(c1, c2, n1, n2):.2f} CPU (1: linear)")  # fmt: skip


if __name__ == "__main__":
    main()
