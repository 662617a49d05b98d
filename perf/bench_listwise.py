"""Throughput and driver memory of list-wise unit generation + scheduling at scale.

Generates list-wise MT-Bench units (default: lists of 8 candidates in all 8! = 40,320
orders, 25 instances = 1,008,000 units) and schedules them through the real scheduler
(:func:`voirdire.engine.scheduler.execute`) on a local Ray, to an instant simulated judge,
into a real result store (Parquet). Prints units/s and the driver's memory: peak RSS
(``resource.getrusage``, the high-water mark of the whole driver process, Ray's core
worker included) and RSS sampled along the run, which stays flat if nothing grows with the
number of units. Analysis (verdict extraction, metrics) is not part of the timing.

    python -m perf.bench_listwise [--units 1000000] [--p 8] [--scheme all]
        [--batch-size 4096] [--workers 2] [--out DIR]
    python -m perf.bench_listwise --smoke     # 2,400 units of p = 4 (seconds; CI)

With ``--units`` below a whole number of instances the last instance is cut short (the
scheduler stops the stream there). Needs the MT-Bench data (``VOIRDIRE_DATA``).
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path


def rss_mb() -> float:
    """Current resident set size of this process in MiB (``/proc/self/status``)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (``ru_maxrss`` is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--units", type=int, default=1_000_000)
    ap.add_argument("--p", type=int, default=8)
    ap.add_argument("--scheme", default="all")
    ap.add_argument("--batch-size", type=int, default=4096)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--out",
        default=None,
        help="output directory (default: a temporary one, removed after)",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes (seconds): every step runs, figures meaningless",
    )
    args = ap.parse_args(argv)
    if args.smoke:
        args.units, args.p, args.batch_size, args.workers = 2_400, 4, 256, 1

    import ray

    from voirdire.engine.permutations import scheme_size
    from voirdire.engine.plan import plan_job
    from voirdire.engine.pools import JudgeRun
    from voirdire.engine.prompts import PromptCache
    from voirdire.engine.scheduler import execute
    from voirdire.engine.spec import parse_job
    from voirdire.engine.store import ResultStore
    from voirdire.engine.units import iter_unit_batches
    from voirdire.judges.capabilities import needs_prompt

    orders = scheme_size(args.scheme, args.p)
    n_inst = math.ceil(args.units / orders)
    out = Path(args.out or tempfile.mkdtemp(prefix="vd-bench-"))
    models = [
        "gpt-4",
        "claude-v1",
        "gpt-3.5-turbo",
        "vicuna-33b-v1.3",
        "wizardlm-30b",
        "vicuna-13b-v1.3",
        "alpaca-13b",
        "llama-13b",
    ]
    job = parse_job(
        {
            "name": "bench-listwise",
            "output_dir": str(out),
            "benchmark": {
                "name": "mtbench",
                "candidates": models[: max(args.p, 3)],
                "max_instances": n_inst,
            },
            "comparison": {
                "mode": "listwise",
                "list_size": args.p,
                "permutations": args.scheme,
            },
            "run": {
                "batch_size": args.batch_size,
                "flush_rows": 50_000,
                "flush_seconds": 5.0,
            },
            "judges": [
                {
                    "name": "instant",
                    "backend": "simulated",
                    "primacy": 0.6,
                    "workers": args.workers,
                    "concurrency": 2,
                }
            ],
        },
        "bench",
    )
    plan = plan_job(job)
    rj = plan.judges[0]
    total = min(args.units, plan.units_per_judge)
    batches = iter_unit_batches(
        plan.bench, plan.instances, job.comparison, judge=rj.name, identity_hash=rj.identity_hash,
        needs_prompt=needs_prompt(rj.backend), batch_size=args.batch_size, prompts=PromptCache(plan.bench),
    )  # fmt: skip

    def _capped():  # stop the stream at exactly `total` units
        left = total
        for b in batches:
            if left <= 0:
                return
            if len(b) > left:
                b = b.select([True] * left + [False] * (len(b) - left))
            left -= len(b)
            yield b

    if not ray.is_initialized():  # perf.smoke runs the scripts in one process
        ray.init(
            num_cpus=max(2, os.cpu_count() or 2),
            include_dashboard=False,
            configure_logging=False,
            log_to_driver=False,
        )
    run = JudgeRun(
        name=rj.name, backend=rj.backend, backend_name=rj.spec.backend, settings=rj.settings.model_dump(mode="json"),
        context=rj.context(plan.bench.name, str(plan.data_dir), str(out)), workers=rj.workers,
        concurrency=rj.concurrency, batches=_capped(), total=total,
    )  # fmt: skip

    class Sampler:
        """Driver RSS at 10%, 25%, 50%, 75% and 100% of the units."""

        def __init__(self) -> None:
            self.done = 0
            self.marks = {int(total * f): f for f in (0.1, 0.25, 0.5, 0.75)}
            self.samples: list[tuple[int, float]] = []
            self.lock = threading.Lock()

        def advance(self, judge: str, n: int, stats=None) -> None:
            before = self.done
            self.done += n
            for m in self.marks:
                if before < m <= self.done:
                    self.samples.append((self.done, rss_mb()))

    sampler = Sampler()
    base_rss, base_peak = rss_mb(), peak_rss_mb()
    store = ResultStore(out, flush_rows=50_000, flush_seconds=5.0)
    print(
        f"list-wise MT-Bench, p = {args.p}, scheme {args.scheme!r} ({orders:,} orders/instance), {n_inst} instances, "
        f"{total:,} units, batch {args.batch_size}, {args.workers} simulated workers; driver RSS before: {base_rss:,.0f} MiB",
        flush=True,
    )
    t0 = time.perf_counter()
    stats = execute([run], store, progress=sampler)
    secs = time.perf_counter() - t0
    sampler.samples.append((sampler.done, rss_mb()))
    peak = peak_rss_mb()
    rows = store.rows_written
    ray.shutdown()
    if stats.queries != total or rows != total:
        raise SystemExit(
            f"scheduled {stats.queries:,} and stored {rows:,} of {total:,} units"
        )
    print(
        f"units scheduled and stored: {stats.queries:,} (rows written {rows:,}, failures {stats.failures})"
    )
    print(f"wall time: {secs:,.1f} s  ->  {stats.queries / secs:,.0f} units/s")
    print(
        "driver RSS along the run: "
        + ", ".join(f"{d:,} units: {m:,.0f} MiB" for d, m in sampler.samples)
    )
    print(
        f"driver peak RSS (ru_maxrss): {peak:,.0f} MiB (before scheduling: {base_peak:,.0f} MiB; growth {peak - base_peak:,.0f} MiB)"
    )
    if total < 1_000_000:
        est = 1_000_000 / (stats.queries / secs)
        print(f"EXTRAPOLATED (not measured) to 10^6 units at this rate: {est:,.0f} s")
    if not args.out:
        shutil.rmtree(out, ignore_errors=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
