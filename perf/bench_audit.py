"""Time ``voirdire audit`` on a generated Arena-Hard log (``docs/audit.md``).

    python -m perf.bench_audit              # 50,000 items x 2 games = 100,000 verdicts
    python -m perf.bench_audit --smoke      # 500 items (CI)

The log is written first (not timed) in Arena-Hard's exact format (``tests/audit_logs.py``:
10 model files of ``items / 10`` questions each, one judge). Timed, in this fresh process:
reading the logs into the normalised copy alone, then the whole audit
(:func:`voirdire.audit`: reading the logs again, planning, Ray start-up, replaying every
verdict through the engine, the analysis and the files). Target: <= 10 s for 100,000
verdicts on the 2-core development machine, Ray start-up included.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from tests.audit_logs import draws, write_arena_hard


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=50_000)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.items = 500
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["VOIRDIRE_LOG_CACHE"] = str(root / "cache")
        logs = root / "model_judgment" / "judge"
        logs.mkdir(parents=True)
        per = a.items // 10
        for m in range(10):
            write_arena_hard(
                logs / f"model-{m}.jsonl", draws(per, m), model=f"model-{m}", seed=m
            )
        import voirdire
        from voirdire.benchmarks.logs.arena_hard import ArenaHard

        t0 = time.perf_counter()
        ArenaHard([logs], data_dir=root / "read-only-copy")
        read = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = voirdire.audit([logs], "arena-hard", out=root / "audit")
        wall = time.perf_counter() - t0
        print(
            f"{per * 10:,} items x 2 games ({res.judgments.height:,} verdicts): reading the logs "
            f"{read:.2f} s; the whole audit (reading, planning, Ray start-up, replay, analysis) "
            f"{wall:.2f} s wall, {res.stats.seconds:.2f} s in the scheduler "
            f"(load {os.getloadavg()[0]:.2f})"
        )


if __name__ == "__main__":
    main()
