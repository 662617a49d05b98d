"""Time ``voirdire audit`` on a generated Arena-Hard log (``docs/audit.md``), beside the floor.

    python -m perf.bench_audit              # 50,000 items x 2 games = 100,000 verdicts
    python -m perf.bench_audit --smoke      # 500 items (CI; seconds)

The log is written first (not timed) in Arena-Hard's exact format (``tests/audit_logs.py``:
10 model files of ``items / 10`` questions each, one judge). Timed:

- **the floor**: a fresh process that reads the same log files with plain polars
  (``read_ndjson``), maps each game's ``score`` to the letter shown and joins the two games
  of every (model, question) into one row with its PC (:data:`FLOOR`): what no audit can
  beat;
- **the command** a user runs, ``voirdire audit LOGS --format arena-hard``, in a fresh
  process with a log cache of its own (imports, reading the logs into the normalised copy,
  planning, the verdicts joined with the units: no Ray, the analysis, the files and the
  table), wall and CPU seconds (``getrusage`` of the children), and its ratio to the floor;
- in this process: reading the logs into the normalised copy alone, then the whole audit
  through the API (:func:`voirdire.audit`), split by phase (seconds in each step, timed by
  wrapping the engine's functions): planning (reading the logs, instances, units counted),
  the rerun check (the data key), answering (the units built and joined with the
  recording, the rows written), compaction, the analysis (its imports, the metrics and
  bootstraps, writing the files); ``other`` is what is left (job record, progress, the
  API's own work).

Each line gives the 1-minute load average (the machine is shared). Target: the command
<= 5 s for 100,000 verdicts on the 2-core development machine.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
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
    ("voirdire.engine.job", "answer_recorded", "answering"),
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


#: the floor: read the log files with plain polars and join each question's two games (the
#: baseline shown first in game 1, the model in game 2), printing the pairs and their PC
FLOOR = """
import sys, time
t0 = time.perf_counter()
import polars as pl
files = sys.argv[1:]
df = pl.concat([pl.read_ndjson(f, infer_schema_length=100) for f in files])
g = (df.select("uid", "model", pl.col("games"))
     .with_columns(game=pl.int_ranges(pl.col("games").list.len()))
     .explode("games", "game")
     .with_columns(letter=pl.col("games").struct.field("score").replace_strict(
         {"A>B": "A", "A>>B": "A", "B<A": "A", "B<<A": "A", "A=B": "C", "B=A": "C",
          "A<B": "B", "A<<B": "B", "B>A": "B", "B>>A": "B"}, default=None)))
one = g.filter(pl.col("game") == 0).select("uid", "model", first=pl.col("letter"))
two = g.filter(pl.col("game") == 1).select("uid", "model", second=pl.col("letter"))
pairs = one.join(two, on=["uid", "model"])
pc = pairs.select(((pl.col("first") == "A") & (pl.col("second") == "B")
                   | (pl.col("first") == "B") & (pl.col("second") == "A")
                   | (pl.col("first") == "C") & (pl.col("second") == "C")).mean()).item()
print(pairs.height, pc, time.perf_counter() - t0)
"""


def _fresh(
    cmd: list[str], env: dict[str, str] | None = None
) -> tuple[float, float, str]:
    """Run ``cmd`` as a fresh process: (wall seconds, CPU seconds of it and its children,
    its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stdout


def _load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


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
        files = sorted(str(p) for p in logs.glob("*.jsonl"))
        floor, floor_cpu, said = _fresh([sys.executable, "-c", FLOOR, *files])
        pairs, pc, floor_in = said.split()
        print(
            f"the floor, plain polars in a fresh process (import, read {len(files)} files, "
            f"join the two games of {int(pairs):,} pairs, PC {float(pc):.3f}): "
            f"{floor:.2f} s wall, {floor_cpu:.2f} s CPU ({float(floor_in):.2f} s after "
            f"the interpreter's start) ({_load()})"
        )
        cmd = [sys.executable, "-m", "voirdire", "audit", str(logs)]
        cmd += ["--format", "arena-hard", "--out", str(root / "audit-cli")]
        env = {**os.environ, "VOIRDIRE_LOG_CACHE": str(root / "cache-cli")}  # afresh
        wall, cpu, _ = _fresh(cmd, env)
        print(
            f"`voirdire audit` as a user runs it (a fresh process: imports, reading, "
            f"planning, the join, analysis, the table): {wall:.2f} s wall, {cpu:.2f} s CPU "
            f"({_load()}); {wall / floor:.1f}x the floor's wall, {cpu / floor_cpu:.1f}x "
            "its CPU"
        )

        import voirdire
        from voirdire.benchmarks.logs.arena_hard import ArenaHard

        t0 = time.perf_counter()
        ArenaHard([logs], data_dir=root / "read-only-copy")
        read = time.perf_counter() - t0
        t0, c0 = time.perf_counter(), time.process_time()
        spent, cpu_by = (
            time_phases()
        )  # imports the engine and the API, as the audit would
        spent["engine imports"] = time.perf_counter() - t0
        cpu_by["engine imports"] = time.process_time() - c0
        res = voirdire.audit([logs], "arena-hard", out=root / "audit")
        api_wall, api_cpu = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"{per * 10:,} items x 2 games ({res.judgments.height:,} verdicts): reading the "
            f"logs {read:.2f} s; the whole audit through the API (reading, planning, the "
            f"join, analysis) {api_wall:.2f} s wall, {api_cpu:.2f} s CPU, "
            f"{res.stats.seconds:.2f} s answering; Ray imported: {'ray' in sys.modules} "
            f"({_load()})"
        )
        spent["other"] = api_wall - sum(spent.values())
        cpu_by["other"] = api_cpu - sum(cpu_by.values())
        print(
            "by phase, wall (CPU): "
            + ", ".join(f"{k} {v:.2f} s ({cpu_by[k]:.2f} s)" for k, v in spent.items())
        )


if __name__ == "__main__":
    main()
