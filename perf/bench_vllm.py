"""Throughput of voirdire's vLLM judge actors against plain ``vllm.LLM.generate``.

The same MT-Bench pairwise prompts (both orders, ``--reps`` repetitions each, the model's
chat template) go (1) through plain ``vllm.LLM.generate`` in one call, repetitions as
``n``-sample requests (vLLM at its best), and (2) through voirdire: a
:class:`~voirdire.engine.worker.JudgeWorker` Ray actor hosting the ``vllm`` backend, fed
whole-instance batches as the scheduler does, ``--concurrency`` batches in flight.
Prints generated tokens per second for both and the ratio voirdire / plain (aim >= 0.9),
and the prefill tokens that ``n`` sampling saved (prompt tokens of all units minus prompt
tokens the engine was asked to prefill). Each side runs in its own process (clean engine).

Without ``--model`` a tiny random Llama is built with the test suite's builder
(``tests.tiny_llama``; CPU smoke figures only: such numbers say nothing about GPU
throughput). Run from the repository root as a module, so that ``tests`` imports::

    python -m perf.bench_vllm                                    # CPU, tiny model
    python -m perf.bench_vllm --smoke                            # 2 questions x 2 reps (CI)
    python -m perf.bench_vllm --model meta-llama/Llama-3.1-8B-Instruct \\
        --device gpu --questions 80 --reps 3 --max-tokens 256 --gpu-memory-utilization 0.9
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


def _prompts(args) -> list[tuple[str, str, tuple[str, str]]]:
    from voirdire.benchmarks.data import resolve_data_dir
    from voirdire.benchmarks.registry import load_benchmark
    from voirdire.engine.units import query_id

    bench = load_benchmark("mtbench", resolve_data_dir(args.data_dir), sample="repetition")
    qids = bench.questions["question_id"].to_list()[: args.questions]
    out = []
    for q in qids:
        for shown in ((args.candidate, bench.reference), (bench.reference, args.candidate)):
            out.append((query_id(bench.name, q, shown, "pairwise", 3), q, shown))
    return [(qid, q, shown, bench.build_prompt(q, shown, 3)) for qid, q, shown in out]


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
    """Plain vLLM: one ``LLM.generate`` call over every prompt, ``n = reps``."""
    from transformers import AutoTokenizer
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    tok = AutoTokenizer.from_pretrained(args.model)
    prompts = _prompts(args)
    llm = LLM(seed=0, **_engine_kwargs(args))
    sp = SamplingParams(n=args.reps, temperature=1.0, max_tokens=args.max_tokens)
    first = tok.apply_chat_template([{"role": "user", "content": prompts[0][-1]}], tokenize=False, add_generation_prompt=True)
    llm.generate([TokensPrompt(prompt_token_ids=tok(first, add_special_tokens=False)["input_ids"])], sp, use_tqdm=False)  # warm-up
    t = time.perf_counter()  # from text prompts, as voirdire's side: chat template + tokenize included
    ids = [
        tok(tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True), add_special_tokens=False)["input_ids"]
        for *_, p in prompts
    ]
    ids = [i for i in ids if len(i) + args.max_tokens <= args.max_model_len]
    outs = llm.generate([TokensPrompt(prompt_token_ids=i) for i in ids], sp, use_tqdm=False)
    dt = time.perf_counter() - t
    gen = sum(len(c.token_ids) for o in outs for c in o.outputs)
    return {"seconds": dt, "generated_tokens": gen, "units": len(ids) * args.reps, "prompt_tokens": sum(map(len, ids))}


def run_voirdire(args) -> dict:
    """voirdire: one JudgeWorker actor (vllm backend), whole-instance batches in flight."""
    import ray
    from voirdire.engine.worker import JudgeWorker
    from voirdire.judges.base import JudgeContext, Query, Sampling
    from voirdire.judges.vllm_judge import VllmJudge, VllmSettings

    settings = VllmSettings(
        **_engine_kwargs(args), device=args.device, num_cpus=1, verdict_mode="free"
    )
    ctx = JudgeContext(judge="bench", benchmark="MTBench", data_dir=None, output_dir=None, sampling=Sampling(temperature=1.0, max_tokens=args.max_tokens), verdict_cue="[[", verdict_closing="]]")
    queries = [
        Query(unit_id=f"{qid}-{r}", query_id=qid, benchmark="MTBench", question_id=q, shown=shown, repetition=r, option_mode=3, prompt=p)
        for qid, q, shown, p in _prompts(args)
        for r in range(1, args.reps + 1)
    ]
    per_batch = 2 * args.reps * args.instances_per_batch  # whole instances, as iter_unit_batches cuts them
    batches = [queries[i : i + per_batch] for i in range(0, len(queries), per_batch)]
    ray.init(num_cpus=max(2, args.concurrency), include_dashboard=False, logging_level="ERROR")
    try:
        opts = VllmJudge.worker_options(settings)
        actor = ray.remote(JudgeWorker).options(max_concurrency=args.concurrency, **opts).remote("vllm", settings.model_dump(mode="json"), ctx)
        ray.get(actor.judge.remote(batches[0][: args.reps]))  # warm-up (engine start excluded)
        before = ray.get(actor.backend_stats.remote())
        t = time.perf_counter()
        # JudgeWorker.judge returns result columns (Result.as_row() keys -> lists, query order)
        columns = ray.get([actor.judge.remote(b) for b in batches])
        rows = [dict(zip(c, values)) for c in columns for values in zip(*c.values())]
        dt = time.perf_counter() - t
        after = ray.get(actor.backend_stats.remote())
        ray.get(actor.close.remote())
    finally:
        ray.shutdown()
    ok = [r for r in rows if not r["failure"]]
    delta = {k: after[k] - before.get(k, 0) for k in after}
    unit_prompt_tokens = sum(r["input_tokens"] or 0 for r in ok)
    return {
        "seconds": dt,
        "generated_tokens": sum(r["output_tokens"] or 0 for r in ok),
        "units": len(ok),
        "failures": len(rows) - len(ok),
        "unit_prompt_tokens": unit_prompt_tokens,
        "prefilled_prompt_tokens": delta["prompt_tokens"],
        "cached_tokens": delta["cached_tokens"],
        "requests": delta["requests"],
    }


def _argv(args: argparse.Namespace) -> list[str]:
    """The parsed options as a command line for a phase's own process (smoke sizes included)."""
    out = []
    for key, value in vars(args).items():
        if key in ("phase", "smoke") or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        out += [flag] if value is True else [flag, str(value)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="model name or directory (default: build a tiny random Llama)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu", "auto"])
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--max-model-len", type=int, default=4096)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.1)
    ap.add_argument("--enforce-eager", action="store_true")
    ap.add_argument("--questions", type=int, default=12)
    ap.add_argument("--candidate", default="llama-13b")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--instances-per-batch", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--data-dir")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (about a minute, two engine starts): figures meaningless")
    ap.add_argument("--phase", choices=["plain", "voirdire"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.smoke:
        args.questions, args.reps, args.max_tokens, args.concurrency, args.instances_per_batch = 2, 2, 8, 2, 1
        args.max_model_len, args.enforce_eager = min(args.max_model_len, 2048), True
    if args.phase:
        res = run_plain(args) if args.phase == "plain" else run_voirdire(args)
        print("RESULT " + json.dumps(res))
        return
    tmp = None
    if not args.model:
        from tests.tiny_llama import build_tiny_llama

        tmp = tempfile.TemporaryDirectory()
        texts = [p for *_, p in _prompts(args)]
        args.model = str(build_tiny_llama(Path(tmp.name) / "tiny", texts))
        print(f"tiny random Llama built in {args.model} (CPU smoke figures, not GPU throughput)")
    results = {}
    for phase in ("plain", "voirdire"):
        cmd = [sys.executable, "-m", "perf.bench_vllm", *_argv(args), "--phase", phase]
        out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            sys.stderr.write(out.stdout[-3000:] + out.stderr[-5000:])
            raise SystemExit(f"{phase} run failed")
        results[phase] = json.loads(line[len("RESULT ") :])
    p, v = results["plain"], results["voirdire"]
    if not v["units"] or v["failures"] or not p["units"]:
        raise SystemExit(f"no units answered, or failures: plain {p}, voirdire {v}")
    tps_p = p["generated_tokens"] / p["seconds"]
    tps_v = v["generated_tokens"] / v["seconds"]
    saved = v["unit_prompt_tokens"] - v["prefilled_prompt_tokens"]
    print(f"device: {args.device}; model: {args.model}; units: {p['units']} (reps {args.reps}, max_tokens {args.max_tokens})")
    print(f"plain vllm.LLM.generate : {tps_p:10.1f} generated tokens/s ({p['generated_tokens']} tokens in {p['seconds']:.2f} s)")
    print(f"voirdire JudgeWorker    : {tps_v:10.1f} generated tokens/s ({v['generated_tokens']} tokens in {v['seconds']:.2f} s, {v['failures']} failures)")
    print(f"ratio voirdire / plain  : {tps_v / tps_p:10.3f}")
    print(
        f"prefill saved by n-sampling: {saved} of {v['unit_prompt_tokens']} prompt tokens "
        f"({saved / max(1, v['unit_prompt_tokens']):.1%}; {v['requests']} engine requests for {v['units']} units); "
        f"prefix-cache hits on top: {v['cached_tokens']} tokens"
    )
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
