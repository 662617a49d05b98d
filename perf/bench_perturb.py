"""Cost of the bias suite on the engine: perturbed units streaming through the scheduler.

Prints:
1. driver memory (RSS, MiB) sampled over a job of >= 10^5 perturbed units (MT-Bench, 80
   questions x 30 candidates, both orders, 15 instruction-side variants + the control,
   2 repetitions: 153,600 units, 144,000 of them perturbed) with a simulated judge through
   the scheduler: flat memory means the units stream (no table of units in the driver);
2. the per-query cost of perturbing on the replay/simulated path (``needs_prompt = False``),
   on equal workloads of 19,200 units: the driver's unit generation (``iter_unit_batches``)
   in microseconds per unit (4,800 distinct prompts x 4 repetitions either way), and the
   scheduler's wall time per query on the same 150 instances (simulated judge, Ray start-up
   excluded), control-only vs perturbed.
   Target: perturbing adds <= 10 % per query.

    python -m perf.bench_perturb            # the full figures (about a minute on 2 cores)
    python -m perf.bench_perturb --smoke    # the memory job at a tenth of the size, one run each
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import voirdire  # noqa: F401  (the public API loads the engine)
from voirdire.engine.job import run_job
from voirdire.engine.plan import plan_job
from voirdire.engine.prompts import PromptCache
from voirdire.engine.ray_start import init_ray
from voirdire.engine.spec import parse_job
from voirdire.engine.units import iter_unit_batches

PERTURBATIONS = [
    {"kind": "bandwagon", "target": "candidate"},  # 4 shares
    {"kind": "distraction", "target": ["candidate", "reference"]},  # 2
    {"kind": "diversity", "target": "candidate"},  # 6 identities
    {"kind": "compassion_fade"},
    {"kind": "cot"},
    {"kind": "refinement_aware"},
]  # 15 variants


def _rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def job(tmp: Path, name: str, *, perturbed: bool, questions: int, reps: int) -> dict:
    return {
        "name": name,
        "output_dir": str(tmp / name),
        "benchmark": {"name": "mtbench", "max_instances": questions * 30},
        "comparison": {"repetitions": reps},
        "run": {"batch_size": 1000, "flush_rows": 50_000},
        "perturbations": PERTURBATIONS if perturbed else [],
        "judges": [
            {
                "name": "sim",
                "backend": "simulated",
                "primacy": 0.6,
                "concurrency": 4,
                "susceptibility": {"bandwagon": 0.3},
            }
        ],
    }


def generation_us(spec: dict) -> tuple[int, float]:
    """Units and microseconds per unit of the driver's unit generation (no prompt text)."""
    j = parse_job(spec)
    plan = plan_job(j)
    rj = plan.judges[0]
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        n = sum(
            len(b)
            for b in iter_unit_batches(
                plan.bench,
                plan.instances,
                j.comparison,
                judge=rj.name,
                identity_hash=rj.identity_hash,
                needs_prompt=False,
                batch_size=1000,
                prompts=PromptCache(plan.bench),
                variants=plan.variants,
            )
        )
        best = min(best, time.perf_counter() - t)
    return n, best / n * 1e6


def worker_us(specs: dict[str, dict], rounds: int) -> dict[str, float]:
    """Best microseconds per query of one judge worker actor answering each job's batches
    (Ray round trip, the simulated judge, result columns; no scheduler, no store)."""
    import ray

    from voirdire.engine.worker import JudgeWorker

    data = {}
    for name, spec in specs.items():
        j = parse_job(spec)
        plan = plan_job(j)
        rj = plan.judges[0]
        data[name] = list(
            iter_unit_batches(
                plan.bench,
                plan.instances,
                j.comparison,
                judge=rj.name,
                identity_hash=rj.identity_hash,
                needs_prompt=False,
                batch_size=1000,
                prompts=PromptCache(plan.bench),
                variants=plan.variants,
            )
        )
    actor = (
        ray.remote(JudgeWorker)
        .options(max_concurrency=4, num_cpus=0)
        .remote(
            "simulated",
            rj.settings.model_dump(mode="json"),
            rj.context(plan.bench.name, None, None),
        )
    )
    ray.get(actor.judge.remote(data[name][0].queries))  # started
    best = {name: float("inf") for name in data}
    for _ in range(rounds):
        for name, batches in data.items():
            t = time.perf_counter()
            ray.get([actor.judge.remote(b.queries) for b in batches])
            best[name] = min(
                best[name],
                (time.perf_counter() - t) / sum(len(b) for b in batches) * 1e6,
            )
    ray.kill(actor)
    return best


def through_scheduler(
    spec: dict, sample_rss: bool
) -> tuple[int, float, list[tuple[float, float]]]:
    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    t0 = time.perf_counter()

    def sampler() -> None:
        while not stop.is_set():
            samples.append((time.perf_counter() - t0, _rss_mib()))
            stop.wait(0.5)

    th = threading.Thread(target=sampler, daemon=True)
    if sample_rss:
        th.start()
    out = run_job(parse_job(spec), show_progress=False)
    stop.set()
    if sample_rss:
        th.join()
    return out.stats.queries, out.stats.seconds, samples


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--smoke", action="store_true", help="a tenth of the size (memory part)"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        big = job(tmp, "big", perturbed=True, questions=8 if args.smoke else 80, reps=2)
        # 19,200 units each. Generation: equal distinct prompts (4,800, 4 repetitions each):
        # control-only on 80 questions vs perturbed (16 variants) on 5 questions.
        # Scheduler: the same 150 instances: control-only with 64 repetitions vs perturbed
        # with 4 (the simulated judge's cost depends on the instances, not on the prompt)
        control = job(tmp, "control", perturbed=False, questions=80, reps=4)
        perturbed = job(tmp, "perturbed", perturbed=True, questions=5, reps=4)
        control_same = job(tmp, "control-same", perturbed=False, questions=5, reps=64)
        n_c, us_c = generation_us(control)
        n_p, us_p = generation_us(perturbed)
        init_ray()
        through_scheduler(
            job(tmp, "warm", perturbed=True, questions=2, reps=1), False
        )  # actor start, imports
        worker = worker_us(
            {"control": control_same, "perturbed": perturbed}, 1 if args.smoke else 3
        )
        runs: dict[str, list[float]] = {"control": [], "perturbed": []}
        for i in range(1 if args.smoke else 3):
            order = (("control", control_same), ("perturbed", perturbed))
            for name, spec in (
                order if i % 2 == 0 else order[::-1]
            ):  # alternate: no order effect
                q, s, _ = through_scheduler(
                    {**spec, "output_dir": str(tmp / f"{name}-{i}")}, False
                )
                runs[name].append(s / q * 1e6)
        q_big, s_big, rss = through_scheduler(big, True)
    print("measured under load (shared 2-core machine)")
    print(
        f"memory: a job of {q_big:,} units ({q_big - q_big // 16:,} perturbed) through the scheduler in "
        f"{s_big:.1f} s ({q_big / s_big:,.0f} q/s); driver RSS (s, MiB):"
    )
    rss = [
        x for x in rss if x[0] <= s_big
    ]  # within the scheduler's run (the final compaction reads every part)
    step = max(1, len(rss) // 12)
    print("  " + "  ".join(f"{t:5.1f}s {m:4.0f}" for t, m in rss[::step]))
    if rss:
        rest = [m for _, m in rss[len(rss) // 5 :]] or [rss[-1][1]]
        print(
            f"  after the first fifth: min {min(rest):.0f} MiB, max {max(rest):.0f} MiB (spread {max(rest) - min(rest):.0f} MiB)"
        )
    print(
        f"unit generation, replay/simulated path ({n_c:,} vs {n_p:,} units): control {us_c:.2f} us/unit, "
        f"perturbed {us_p:.2f} us/unit ({us_p / us_c - 1:+.1%})"
    )
    print(
        f"per query in a judge worker (Ray round trip + simulated judge, same 150 instances): control "
        f"{worker['control']:.1f} us, perturbed {worker['perturbed']:.1f} us ({worker['perturbed'] / worker['control'] - 1:+.1%})"
    )
    c, p = min(runs["control"]), min(runs["perturbed"])
    print(
        f"per query through the scheduler (simulated judge, same 150 instances, 19,200 units, best of "
        f"{len(runs['control'])}): control {c:.1f} us, "
        f"perturbed {p:.1f} us: {p / c - 1:+.1%} (target <= +10 %)"
    )


if __name__ == "__main__":
    main()
