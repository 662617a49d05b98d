"""Time ``voirdire audit`` on a generated Arena-Hard log (``docs/audit.md``).

    python -m perf.bench_audit              # 50,000 items x 2 games = 100,000 verdicts
    python -m perf.bench_audit --smoke      # 500 items (CI)

The log is written first (not timed) in Arena-Hard's exact format (``tests/audit_logs.py``:
10 model files of ``items / 10`` questions each, one judge). Timed, in this fresh process:
reading the logs into the normalised copy alone, then the whole audit
(:func:`voirdire.audit`: reading the logs again, planning, Ray start-up, replaying every
verdict through the engine, the analysis and the files); then the command a user runs,
``voirdire audit LOGS --format arena-hard``, in a fresh process with a log cache of its own
(its Ray node starts while it reads the logs, and stops while it analyses; the audit's node
is stopped first). Target: <= 10 s for 100,000 verdicts on the
2-core development machine, Ray start-up included.

The audit's wall time is also split by phase (seconds in each step of ``voirdire.run``,
timed by wrapping the engine's functions in this process): planning (reading the logs,
instances, units counted), the rerun check (the data key), Ray start-up, the scheduler,
compaction, and the analysis (its imports, the metrics and bootstraps, writing the files);
``other`` is what is left (job record, progress, the API's own work).
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.audit_logs import draws, write_arena_hard

#: (module, attribute, phase): the engine's steps that a run goes through, timed in place
PHASES = [
    ("voirdire.engine.job", "plan_job", "planning"),
    ("voirdire.engine.job", "_check_rerun", "rerun check"),
    ("voirdire.engine.job", "init_ray", "Ray start-up (waiting)"),
    ("voirdire.engine.job", "execute", "scheduler"),
    ("voirdire.engine.store", "ResultStore.compact", "compaction"),
    ("voirdire.api.jobs", "analyze", "analysis"),
]


def _timed(
    fn: Callable[..., Any], phase: str, spent: dict[str, float], cpu: dict[str, float]
) -> Callable:
    @functools.wraps(fn)
    def wrapper(*a: Any, **kw: Any) -> Any:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return fn(*a, **kw)
        finally:
            spent[phase] = spent.get(phase, 0.0) + time.perf_counter() - t0
            cpu[phase] = cpu.get(phase, 0.0) + time.process_time() - c0

    return wrapper


def time_phases() -> tuple[dict[str, float], dict[str, float]]:
    """Wrap the functions of :data:`PHASES`; returns the dicts the wall seconds and the
    driver's CPU seconds (this process; Ray's workers run elsewhere) accumulate in."""
    import importlib

    spent: dict[str, float] = {}
    cpu: dict[str, float] = {}
    for module, attr, phase in PHASES:
        owner: Any = importlib.import_module(module)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, name, _timed(getattr(owner, name), phase, spent, cpu))
    return spent, cpu


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
        t0, c0 = time.perf_counter(), time.process_time()
        spent, cpu = time_phases()  # imports the engine and the API, as the audit would
        spent["engine imports"] = time.perf_counter() - t0
        cpu["engine imports"] = time.process_time() - c0
        res = voirdire.audit([logs], "arena-hard", out=root / "audit")
        wall = time.perf_counter() - t0
        print(
            f"{per * 10:,} items x 2 games ({res.judgments.height:,} verdicts): reading the logs "
            f"{read:.2f} s; the whole audit (reading, planning, Ray start-up, replay, analysis) "
            f"{wall:.2f} s wall, {res.stats.seconds:.2f} s in the scheduler "
            f"(load {os.getloadavg()[0]:.2f})"
        )
        from voirdire.engine.ray_start import stop_ray

        stop_ray()  # the command starts a node of its own: this one would take CPU
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "voirdire", "audit", str(logs)]
        cmd += ["--format", "arena-hard", "--out", str(root / "audit-cli")]
        env = {
            **os.environ,
            "VOIRDIRE_LOG_CACHE": str(root / "cache-cli"),
        }  # read afresh
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        print(
            f"`voirdire audit` as a user runs it (a fresh process: imports, reading, Ray's "
            f"start and stop, replay, analysis, the table): {time.perf_counter() - t0:.2f} s "
            f"wall (load {os.getloadavg()[0]:.2f})"
        )
        spent["other"] = wall - sum(spent.values())
        cpu["other"] = time.process_time() - c0 - sum(cpu.values())
        print(
            "by phase, wall (driver CPU): "
            + ", ".join(f"{k} {v:.2f} s ({cpu[k]:.2f} s)" for k, v in spent.items())
        )


if __name__ == "__main__":
    main()
