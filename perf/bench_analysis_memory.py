"""Peak memory and time of ``voirdire report``, ``mitigate`` and ``rank`` on full-size audits.

    python -m perf.bench_analysis_memory --alpaca-eval /work/data/alpaca_eval/results
    python -m perf.bench_analysis_memory --alpaca-eval DIR --synthetic   # both cases
    python -m perf.bench_analysis_memory --synthetic --work /tmp/big     # keep (and reuse) the audit
    python -m perf.bench_analysis_memory --smoke                         # tiny sizes (CI)

Two audits (``docs/audit.md``, "Memory"), each made first with ``voirdire audit`` (the
command, a fresh process; its own peak is printed too, not held to the bound):

- **AlpacaEval 2**: every ``results/<model>/weighted_alpaca_eval_gpt4_turbo/annotations.json``
  under ``--alpaca-eval`` (a fetched ``voirdire data fetch alpaca_eval`` directory, or its
  ``results/``; not in CI): 45,875 verdicts of 57 models at the pinned commit, each pair in
  one order.
- **Synthetic**: an Arena-Hard log (``tests/audit_logs.py``) of ``--models`` models (200)
  against one baseline on ``--questions`` questions (2,500), both games: 10⁶ verdicts.

Then each command on the audit, a fresh process each (``python -m voirdire report|mitigate|rank
AUDIT --out ...``, default replicates: 1,000). Printed per command: its wall seconds and the
peak resident memory of its process tree (every process the command started, summed,
sampled from ``/proc`` every 0.1 s), against the bound of 4 GiB. A watchdog kills the
tree past ``--kill-gib`` (6 GiB: the machine is shared), and the row says so. ``--smoke``:
a 12-model synthetic audit and a 3-model AlpacaEval-format one written here, 20 replicates.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perf.log_commands import tree_rss
from tests.audit_logs import draws, write_arena_hard

BOUND_GIB = 4.0
ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"


def watched(
    cmd: list[str], env: dict, kill_gib: float
) -> tuple[int, float, float, str]:
    """Run ``cmd``; returns its exit status, wall seconds, peak tree RSS (GiB) and the tail
    of its error output. Killed (status −9) when the tree passes ``kill_gib``."""
    t0, peak = time.perf_counter(), 0
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
        while proc.poll() is None:
            peak = max(peak, tree_rss(proc.pid))
            if peak > kill_gib * 2**30:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.1)
        rc = proc.wait()
        err.seek(0)
        tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
    return rc, time.perf_counter() - t0, peak / 2**30, " / ".join(tail)


def _synthetic(root: Path, models: int, questions: int) -> Path:
    logs = root / "synthetic-logs" / "model_judgment" / "judge"
    if not logs.is_dir():
        logs.mkdir(parents=True)
        for m in range(models):
            write_arena_hard(logs / f"model-{m:03d}.jsonl", draws(questions, m),
                             model=f"model-{m:03d}", seed=m)  # fmt: skip
    return logs


def _alpaca_files(path: Path) -> list[Path]:
    results = path / "results" if (path / "results").is_dir() else path
    return sorted(results.glob(f"*/{ANNOTATOR}/annotations.json"))


def _tiny_alpaca(root: Path) -> list[Path]:
    from tests.test_audit_logs2 import write_alpaca_eval

    files = [
        root / f"tiny-ae/results/m{i}/{ANNOTATOR}/annotations.json" for i in range(3)
    ]
    for i, f in enumerate(files):
        write_alpaca_eval(f, f"m{i}", 20, seed=i)
    return files


def _case(name: str, logs: list[Path], fmt: str, work: Path, a, env: dict) -> None:
    audit = work / f"audit-{name}"
    voirdire = [sys.executable, "-m", "voirdire"]
    if (audit / "judgments.parquet").is_file():
        print(f"{name}: the audit in {audit} (reused)")
    else:
        cmd = [
            *voirdire,
            "audit",
            *map(str, logs),
            "--format",
            fmt,
            "--out",
            str(audit),
        ]
        rc, wall, peak, err = watched(cmd, env, a.kill_gib)
        print(f"{name}: voirdire audit ({len(logs)} logs) {wall:.1f} s, peak {peak:.2f} GiB"
              + ("" if rc == 0 else f" FAILED (exit {rc}): {err}"))  # fmt: skip
        if rc != 0:
            return
    print(f"  {'command':<9} {'wall s':>8} {'peak GiB':>9}  within {BOUND_GIB:g} GiB")
    for command in ("report", "mitigate", "rank"):
        out = work / f"{command}-{name}"
        cmd = [*voirdire, command, str(audit), "--out", str(out)]
        if a.replicates is not None:
            cmd += ["--replicates", str(a.replicates)]
        rc, wall, peak, err = watched(cmd, env, a.kill_gib)
        verdict = "yes" if rc == 0 and peak <= BOUND_GIB else "NO"
        note = (
            ""
            if rc == 0
            else (
                f"  killed past {a.kill_gib:g} GiB"
                if rc == -9
                else f"  exit {rc}: {err}"
            )
        )
        print(f"  {command:<9} {wall:>8.1f} {peak:>9.2f}  {verdict}{note}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--alpaca-eval", type=Path, help="fetched AlpacaEval directory or its results/"
    )
    ap.add_argument("--synthetic", action="store_true", help="the 10^6-verdict audit")
    ap.add_argument("--models", type=int, default=200)
    ap.add_argument("--questions", type=int, default=2500)
    ap.add_argument(
        "--replicates", type=int, default=None, help="default: the commands' own"
    )
    ap.add_argument(
        "--work", type=Path, default=None, help="where logs and audits are kept"
    )
    ap.add_argument("--kill-gib", type=float, default=6.0)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.synthetic, a.models, a.questions, a.replicates = True, 12, 15, 20
    if not a.synthetic and a.alpaca_eval is None:
        ap.error("name --alpaca-eval DIR, --synthetic, or --smoke")
    with tempfile.TemporaryDirectory() as tmp:
        work = a.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "VOIRDIRE_LOG_CACHE": str(work / "log-cache")}
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        if a.alpaca_eval is not None or a.smoke:
            files = _tiny_alpaca(work) if a.smoke else _alpaca_files(a.alpaca_eval)
            if not files:
                sys.exit(
                    f"no results/*/{ANNOTATOR}/annotations.json under {a.alpaca_eval}"
                )
            _case("alpacaeval", files, "alpacaeval", work, a, env)
        if a.synthetic:
            logs = _synthetic(work, a.models, a.questions)
            print(f"synthetic: {a.models} models x {a.questions} questions x 2 orders "
                  f"({2 * a.models * a.questions:,} verdicts)")  # fmt: skip
            _case("synthetic", [logs], "arena-hard", work, a, env)


if __name__ == "__main__":
    main()
