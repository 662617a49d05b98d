"""The report at scale: time, peak memory and page size of ``voirdire report`` on a
simulated study of many judges.

    python -m perf.bench_report [--judges 200] [--tasks 4] [--questions 25]
        [--replicates 1000] [--figures png] [--out DIR] [--audit DIR] [--smoke]

The study (:func:`tests.study_simulate.simulated_study_log`: ``--judges`` judges named
``<model>/<template>-<k>`` over ``--tasks`` tasks, 2 candidates per question against a
reference, both orders) is written as a plain verdict log and audited as a user audits one
(``voirdire audit LOG --format logtable``, a subprocess), then reported on
(``voirdire report DIR --out ...``, a subprocess timed from outside, its peak RSS from
``resource.getrusage`` of the children). Prints the verdicts, the seconds and peak RSS of
each command, the page's size (MB; the budget is 12 MB at 200 judges) and the number of
figures. ``--smoke``: 5 judges, 2 tasks, 50 replicates. ``--audit DIR``: report on that
audited directory (no audit run; its judges are what they are).

The bounds at scale (``analysis/report/scale.py``, issue 43 item 7): 10,000 judges is
``--judges 10000 --tasks 2 --questions 2`` (160,000 verdicts, under the pairs reader's
200,000 rows); the audit alone takes about 8 minutes on 2 shared cores. Measured (2 shared
cores, 1,000 replicates, ``--figures png``): 1,000 judges, before the bounds: killed
after 1:45 (vl-convert's V8 out of heap on the 1,000 × 1,000 agreement heatmap; peak RSS
3.2 GB, no page); with them: 2:46, peak RSS 1.05 GB, an 8.2 MB page. 10,000 judges still
end in the analysis (``agreement_matrix``, 50 M pairs) after 7:21, before any figure.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.study_simulate import simulated_study_log

COLUMNS = ("instance", "model_a", "model_b", "first", "verdict", "judge", "label", "task", "cluster")  # fmt: skip


def _timed(args: list[str]) -> tuple[float, float]:
    """Run ``voirdire ARGS`` (exit 0 required); seconds and the children's peak RSS (GiB)."""
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "voirdire", *args], capture_output=True, text=True
    )
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"voirdire {args[0]} failed ({r.returncode}): {r.stderr[-2000:]}")
    return dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--judges", type=int, default=200)
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--questions", type=int, default=25)
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--figures", default="png")
    ap.add_argument(
        "--out", type=Path, default=None, help="keep the audit and report here"
    )
    ap.add_argument(
        "--audit", type=Path, default=None, help="report on this audited directory"
    )
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.judges, a.tasks, a.replicates = 5, 2, 50
    root = a.out or Path(tempfile.mkdtemp(prefix="bench-report-"))
    root.mkdir(parents=True, exist_ok=True)
    audit = a.audit or root / "audit"
    if a.audit is None:
        log = root / "study.parquet"
        study = simulated_study_log(a.judges, tasks=a.tasks, questions=a.questions)
        study.write_parquet(log)
        opts = [x for c in COLUMNS for x in ("--option", f"columns.{c}={c}")]
        t_audit, rss_audit = _timed(["audit", str(log), "--format", "logtable", *opts, "--out", str(audit), "--no-progress"])  # fmt: skip
        print(f"{a.judges} judges × {a.tasks} tasks: {study.height:,} verdicts")
        print(f"audit   {t_audit:7.1f} s  peak RSS ≤ {rss_audit:.2f} GiB")
    t_report, rss_report = _timed(["report", str(audit), "--out", str(root / "report"),
                                   "--replicates", str(a.replicates), "--figures", a.figures])  # fmt: skip
    page = root / "report" / "report.html"
    figures = page.read_text(encoding="utf-8").count('class="vega"')
    print(
        f"report  {t_report:7.1f} s  peak RSS ≤ {rss_report:.2f} GiB  ({a.replicates} replicates, figures: {a.figures})"
    )
    print(f"page    {page.stat().st_size / 1e6:7.2f} MB  {figures} figures  → {page}")


if __name__ == "__main__":
    main()
