"""The vLLM judge on vLLM's real engine on the CPU, inside Ray actors, with a tiny random Llama.

One job (module-scoped, run once) carries most checks: MT-Bench pairwise queries from the
bundled data, 3 repetitions asked as ``n``-sample requests, one vLLM judge per verdict mode
(free, structured, logprobs) next to a replay judge, a context window small enough that some
real prompts overflow, and the free-mode replica crashing once mid-job. The tests below
read its outputs. Engine starts: three replicas plus one restart.

The pure parts (request planning, probability normalisation, settings, preflight, lazy
import) are tested without an engine.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import voirdire
from tests.backends import CrashingVllm
from tests.tiny_llama import build_tiny_llama
from voirdire.core import ConfigError
from voirdire.judges.base import JudgeContext, Query, Sampling
from voirdire.judges.vllm_judge import (
    VllmJudge,
    VllmSettings,
    option_probabilities,
    plan_requests,
)

HAVE_VLLM = (
    importlib.util.find_spec("vllm") is not None
    and importlib.util.find_spec("transformers") is not None
)
if (
    os.environ.get("CI") == "true" and not HAVE_VLLM
):  # CI installs voirdire[vllm]: never skip there
    raise RuntimeError(
        "CI must run the vLLM tests, but vLLM is not installed (make install-dev)"
    )
needs_vllm = pytest.mark.skipif(
    not HAVE_VLLM, reason="vLLM (voirdire[vllm]) is not installed"
)

#: the engine job crashes a vLLM replica (its EngineCore process may outlive it): the
#: module's engine tests get a Ray cluster of their own (tests/conftest.py ``ray_local``)
pytestmark = pytest.mark.ray_fresh

QUESTIONS = ["112", "102", "106", "92"]
CANDIDATE = "llama-13b"
REPS = 3
CRASH_AFTER = 6  # queries the free-mode replica answers before it crashes (once)


# ---------------------------------------------------------------------- no engine needed


def _q(qid: str, rep: int) -> Query:
    return Query(
        unit_id=f"{qid}-{rep}",
        query_id=qid,
        benchmark="MTBench",
        question_id="1",
        shown=("x", "y"),
        repetition=rep,
        option_mode=3,
        prompt="p",
    )


def test_plan_requests_groups_repetitions_into_one_n_sample_request():
    batch = [_q("a", 2), _q("b", 1), _q("a", 1), _q("a", 3), _q("b", 2)]
    plans = plan_requests(batch, temperature=1.0)
    assert [(p.query_id, p.n, p.requests) for p in plans] == [("a", 3, 1), ("b", 2, 1)]
    assert [q.repetition for q in plans[0].queries] == [
        1,
        2,
        3,
    ]  # sample i answers repetition i+1
    greedy = plan_requests(
        batch, temperature=0.0
    )  # vLLM refuses n > 1 for greedy sampling
    assert [(p.query_id, p.n, p.requests) for p in greedy] == [("a", 1, 3), ("b", 1, 2)]


def test_option_probabilities_normalise_over_the_options():
    p = option_probabilities({"A": math.log(0.2), "B": math.log(0.1), "C": -math.inf})
    assert (
        p["A"] == pytest.approx(2 / 3)
        and p["B"] == pytest.approx(1 / 3)
        and p["C"] == 0.0
    )
    with pytest.raises(ValueError):
        option_probabilities({})


def test_settings_validation_and_identity():
    with pytest.raises(ValueError, match="needs GPUs"):
        VllmSettings(model="m", device="cpu", tensor_parallel_size=2)
    with pytest.raises(ValueError, match="engine_kwargs may not set"):
        VllmSettings(model="m", engine_kwargs={"max_model_len": 10})
    a = VllmJudge.identity(VllmSettings(model="m"), Sampling())
    b = VllmJudge.identity(
        VllmSettings(
            model="m", num_cpus=4, gpu_memory_utilization=0.5, tensor_parallel_size=2
        ),
        Sampling(),
    )
    assert a == b  # deployment settings do not change what a judge answers
    crashing = CrashingVllm.identity(
        CrashingVllm.Settings(model="m", crash_after=3, crash_marker="/x"), Sampling()
    )
    assert (
        crashing == a
    )  # nor do the test suite's faults: a resumed run asks the same units
    with pytest.raises(ValueError):
        VllmSettings(
            model="m", crash_after=3
        )  # fault injection is not a product setting
    c = VllmJudge.identity(VllmSettings(model="m", verdict_mode="logprobs"), Sampling())
    assert c != a
    gpu = VllmJudge.worker_options(VllmSettings(model="m", device="gpu"))
    tp4 = VllmJudge.worker_options(
        VllmSettings(model="m", device="gpu", tensor_parallel_size=4, num_cpus=2)
    )
    assert gpu == {"num_cpus": 1.0, "num_gpus": 1} and tp4 == {
        "num_cpus": 2,
        "num_gpus": 0,
    }
    assert VllmJudge.worker_options(
        VllmSettings(model="m", device="cpu", num_cpus=0.5)
    ) == {"num_cpus": 0.5}


def test_verdict_cue_comes_from_the_benchmark_via_the_context():
    from voirdire.judges.vllm_judge.settings import verdict_format

    def ctx(**kw):
        return JudgeContext(
            judge="j", benchmark="Whatever", data_dir=None, output_dir=None, **kw
        )

    mt = ctx(verdict_cue="[[", verdict_closing="]]")
    assert verdict_format(VllmSettings(model="m"), mt) == ("[[", "]]")
    # the benchmark's name plays no part: only the cue it hands over
    assert verdict_format(VllmSettings(model="m"), ctx(verdict_cue="Choice: ")) == (
        "Choice: ",
        "",
    )
    assert verdict_format(VllmSettings(model="m"), ctx()) == ("Verdict: ", "")
    assert verdict_format(VllmSettings(model="m", verdict_cue="Answer: "), mt) == (
        "Answer: ",
        "",
    )


@needs_vllm
def test_preflight_refuses_bad_settings_before_anything_runs(tmp_path):
    ctx = JudgeContext(
        judge="j",
        benchmark="MTBench",
        data_dir=None,
        output_dir=None,
        sampling=Sampling(max_tokens=64),
    )
    with pytest.raises(ConfigError, match="directory not found"):
        VllmJudge.preflight(VllmSettings(model=str(tmp_path / "nope")), ctx)
    with pytest.raises(ConfigError, match="leaves no room"):
        VllmJudge.preflight(
            VllmSettings(model="org/remote-model", max_model_len=64), ctx
        )


@pytest.mark.process
def test_importing_the_backend_does_not_import_vllm():
    code = "import sys, voirdire.judges.vllm_judge, voirdire.engine.job; print('vllm' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------- the engine job


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, data_dir):
    if not HAVE_VLLM:
        pytest.skip("vLLM (voirdire[vllm]) is not installed")
    from voirdire.benchmarks.registry import load_benchmark

    bench = load_benchmark("mtbench", data_dir, sample="repetition")
    texts = [
        bench.build_prompt(q, (m, bench.reference), 3)
        for q in QUESTIONS
        for m in bench.models
        if m != bench.reference
    ]
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"), texts)


@pytest.fixture(scope="module")
def context_limit(tiny_model, data_dir):
    """A max_model_len that some of the job's real prompts exceed and some fit in."""
    from transformers import AutoTokenizer

    from voirdire.benchmarks.registry import load_benchmark

    tok = AutoTokenizer.from_pretrained(tiny_model)
    bench = load_benchmark("mtbench", data_dir, sample="repetition")
    lens = []
    for q in QUESTIONS:
        for shown in ((CANDIDATE, bench.reference), (bench.reference, CANDIDATE)):
            text = tok.apply_chat_template(
                [{"role": "user", "content": bench.build_prompt(q, shown, 3)}],
                tokenize=False,
                add_generation_prompt=True,
            )
            lens.append(len(tok(text, add_special_tokens=False)["input_ids"]))
    lens.sort()
    # the widest gap in the middle of the distribution: prompts below fit, prompts above overflow
    i = max(range(2, len(lens) - 2), key=lambda k: lens[k] - lens[k - 1])
    assert lens[i] - lens[i - 1] > 40, f"prompt lengths too close to split: {lens}"
    return (lens[i - 1] + lens[i]) // 2 + 16, lens


@pytest.fixture(scope="module")
def job_run(tiny_model, context_limit, data_dir, tmp_path_factory, ray_local):
    from voirdire.analysis.results_dir import load_judgments
    from voirdire.engine.spec import parse_job

    out = tmp_path_factory.mktemp("vllm-job")
    marker = out / "crashed.marker"
    limit, _ = context_limit
    engine = dict(
        backend="vllm",
        model=str(tiny_model),
        dtype="float32",
        max_model_len=limit,
        gpu_memory_utilization=0.1,
        enforce_eager=True,
        device="cpu",
        num_cpus=0.5,
    )
    job = parse_job(
        {
            "name": "vllm-cpu-test",
            "output_dir": str(out / "run"),
            "benchmark": {
                "name": "mtbench",
                "sample": "repetition",
                "data_dir": str(data_dir),
                "questions": QUESTIONS,
                "candidates": [CANDIDATE],
            },
            "comparison": {
                "mode": "pairwise",
                "option_mode": 3,
                "permutations": "both",
                "repetitions": REPS,
            },
            "sampling": {"temperature": 1.0, "max_tokens": 8},
            "run": {"batch_size": 6, "flush_seconds": 0.5},
            "judges": [
                {
                    "name": "tiny-free",
                    **engine,
                    "backend": "tests.backends:CrashingVllm",
                    "crash_after": CRASH_AFTER,
                    "crash_marker": str(marker),
                },
                {
                    "name": "tiny-structured",
                    **engine,
                    "verdict_mode": "structured",
                    "reasoning_tokens": 4,
                },
                {"name": "tiny-logprobs", **engine, "verdict_mode": "logprobs"},
                {
                    "name": "gpt-4-0613",
                    "backend": "replay",
                    "recorded": "gpt-4-0613",
                    "study": "repetition",
                },
            ],
        }
    )
    outcome = voirdire.run(job)
    judgments = load_judgments(outcome.output_dir)
    return {
        "outcome": outcome,
        "judgments": judgments,
        "marker": marker,
        "limit": limit,
        "job": job,
    }


def _rows(judgments: pl.DataFrame, judge: str) -> pl.DataFrame:
    return judgments.filter(pl.col("judge") == judge)


UNITS = len(QUESTIONS) * 2 * REPS


@pytest.mark.vllm
@pytest.mark.ray
@pytest.mark.slow
def test_every_unit_answered_once_across_vllm_and_replay_judges(job_run):
    j = job_run["judgments"]
    counts = dict(j.group_by("judge").len().iter_rows())
    assert counts == {
        "tiny-free": UNITS,
        "tiny-structured": UNITS,
        "tiny-logprobs": UNITS,
        "gpt-4-0613": UNITS,
    }
    assert j["unit_id"].n_unique() == j.height
    replay = _rows(j, "gpt-4-0613")
    assert set(replay["verdict_mode"].to_list()) == {"replay"}
    assert replay.filter(~pl.col("failed")).height > 0
    meta = json.loads((Path(job_run["outcome"].output_dir) / "job.json").read_text())
    assert meta["judges"]["tiny-free"]["identity"]["backend"] == "vllm"
    assert (
        Path(job_run["outcome"].output_dir) / "metrics" / "judge_metrics.csv"
    ).is_file()


@pytest.mark.vllm
@pytest.mark.ray
@pytest.mark.slow
def test_context_window_overflow_is_a_recorded_failure_not_a_truncation(job_run):
    j = job_run["judgments"]
    for judge in ("tiny-free", "tiny-structured", "tiny-logprobs"):
        rows = _rows(j, judge)
        long = rows.filter(pl.col("failure") == "context_too_long")
        assert 0 < long.height < rows.height, judge
        assert long["output"].null_count() == long.height
        for msg, n in zip(
            long["failure_message"].to_list(), long["input_tokens"].to_list()
        ):
            assert (
                f"prompt is {n} tokens" in msg
                and f"context window of {job_run['limit']} tokens" in msg
            )
            assert n > job_run["limit"] - 32
        answered = rows.filter(pl.col("failure").is_null())
        assert (answered["input_tokens"] <= job_run["limit"]).all()
        # a query either fits for all its repetitions or for none
        per_query = rows.group_by("query_id").agg(
            (pl.col("failure") == "context_too_long")
            .fill_null(False)
            .n_unique()
            .alias("k")
        )
        assert per_query["k"].max() == 1


@pytest.mark.vllm
@pytest.mark.ray
@pytest.mark.slow
def test_free_mode_samples_repetitions_of_one_prompt(job_run):
    rows = _rows(job_run["judgments"], "tiny-free").filter(pl.col("failure").is_null())
    assert set(rows["verdict_mode"].to_list()) == {"free"}
    assert rows["output"].str.len_chars().min() > 0
    assert (rows["output_tokens"] <= 8).all()
    by_query = rows.group_by("query_id").agg(
        pl.col("repetition").sort(), pl.col("output").n_unique().alias("distinct")
    )
    assert all(r == [1, 2, 3] for r in by_query["repetition"].to_list())
    # temperature 1: the n samples of one request differ (a copied answer would repeat)
    assert by_query["distinct"].min() > 1


@pytest.mark.vllm
@pytest.mark.ray
@pytest.mark.slow
def test_structured_verdicts_never_fail_extraction(job_run):
    rows = _rows(job_run["judgments"], "tiny-structured").filter(
        pl.col("failure").is_null()
    )
    assert rows.height > 0
    assert set(rows["verdict_mode"].to_list()) == {"structured"}
    assert rows["failed"].sum() == 0  # 0 % extraction failures, on a random model
    assert set(rows["choice"].to_list()) <= {"A", "B", "C"}
    assert (rows["extracted"] == rows["choice"]).all()
    # the output text carries the verdict in the benchmark's own format too
    assert rows["output"].str.extract(r"\[\[([ABC])\]\]$", 1).eq(rows["choice"]).all()


@pytest.mark.vllm
@pytest.mark.ray
@pytest.mark.slow
def test_logprob_verdicts_store_option_probabilities(job_run):
    rows = _rows(job_run["judgments"], "tiny-logprobs").filter(
        pl.col("failure").is_null()
    )
    assert rows.height > 0
    assert set(rows["verdict_mode"].to_list()) == {"logprobs"}
    assert rows["failed"].sum() == 0
    for choice, probs in zip(rows["choice"].to_list(), rows["option_probs"].to_list()):
        p = (
            dict(probs)
            if isinstance(probs, dict)
            else {e["key"]: e["value"] for e in probs}
        )
        assert set(p) == {"A", "B", "C"}
        assert sum(p.values()) == pytest.approx(1.0)
        assert all(
            0.0 < v < 1.0 for v in p.values()
        )  # a random model is unsure of everything
        assert choice == max(p, key=p.__getitem__)


@pytest.mark.vllm
@pytest.mark.ray
@pytest.mark.slow
def test_replica_crash_mid_job_loses_and_duplicates_nothing(job_run):
    assert job_run["marker"].read_text() == "crashed once\n"  # the replica did crash
    stats = job_run["outcome"].stats
    assert (
        stats.retried_batches + stats.resent_batches >= 1
    )  # the interrupted batch went out again
    rows = _rows(job_run["judgments"], "tiny-free")
    assert rows.height == UNITS and rows["unit_id"].n_unique() == UNITS
    assert rows.filter(pl.col("failure") == "actor_crashed").height == 0
    # the scheduler recorded each unit exactly once (the store's dedup would hide a double)
    assert stats.per_judge["tiny-free"]["queries"] == UNITS


# ---------------------------------------------------------------------- score mode (BPC, MEC)

SCORE_QUESTIONS = QUESTIONS[:2]
SCORE_K = 2


@pytest.fixture(scope="module")
def score_run(tiny_model, data_dir, tmp_path_factory, ray_local):
    """A score-mode job (Wang et al.'s BPC and MEC): both orders, k = 2 evidence samples per
    order asked as one n = 2 request, the two score lines constrained by a regular
    expression (one engine more)."""
    from voirdire.engine.spec import parse_job

    out = tmp_path_factory.mktemp("vllm-score")
    job = parse_job(
        {
            "name": "vllm-cpu-score", "output_dir": str(out / "run"),
            "benchmark": {"name": "mtbench", "sample": "repetition", "data_dir": str(data_dir), "questions": SCORE_QUESTIONS, "candidates": [CANDIDATE]},
            "comparison": {"mode": "score", "permutations": "both", "repetitions": SCORE_K},
            "sampling": {"temperature": 1.0, "max_tokens": 8},
            "judges": [{"name": "tiny-score", "backend": "vllm", "model": str(tiny_model), "dtype": "float32",
                        "max_model_len": 8192, "gpu_memory_utilization": 0.1, "enforce_eager": True, "device": "cpu",
                        "num_cpus": 0.5, "verdict_mode": "structured", "reasoning_tokens": 4}],
        }
    )  # fmt: skip
    return voirdire.run(job)


@pytest.mark.vllm
@pytest.mark.ray
@pytest.mark.slow
def test_score_mode_bpc_and_mec_end_to_end_on_vllm(score_run):
    from voirdire.analysis.mitigation import scores as sc

    j = score_run.judgments
    units = len(SCORE_QUESTIONS) * 2 * SCORE_K
    assert j.height == units and score_run.stats.queries == units
    assert j["failed"].sum() == 0  # the constrained score lines always parse
    scores = j["slot_scores"].explode()
    assert scores.is_between(1, 10).all() and j[
        "slot_scores"
    ].list.len().unique().to_list() == [2]
    assert set(j["extracted"].to_list()) <= {"A", "B", "C"}
    cost = {"score-single": 1, "bpc": 2, "mec": SCORE_K, "mec+bpc": 2 * SCORE_K}
    for name, per_verdict in cost.items():
        v = sc.strategy_verdicts(j, name)
        per_order = (
            1 if name in ("bpc", "mec+bpc") else 2
        )  # score and mec: a verdict per order
        assert (
            v.height == per_order * len(SCORE_QUESTIONS)
            and v["queries"].to_list() == [per_verdict] * v.height
        )
        assert set(v["verdict"].to_list()) <= {"win", "tie", "loss"}
    # the k samples of one order came from one n-sample request: they differ at temperature 1
    texts = j.group_by("query_id").agg(pl.col("output").n_unique().alias("distinct"))
    assert texts["distinct"].max() >= 2


@pytest.mark.vllm
@pytest.mark.ray
@pytest.mark.slow
def test_logprob_calibration_runs_on_vllm_option_probabilities(job_run):
    from voirdire.analysis.mitigation import calibration, registry
    from voirdire.analysis.mitigation import verdicts as M

    j = _rows(job_run["judgments"], "tiny-logprobs")
    keys = [*M.VERDICT_KEYS, "side"]
    raw = registry.apply_strategies(j, ["logprob-raw"]).join(
        M.normalise(j), on=keys, suffix="_letter"
    )
    answered = raw.filter(pl.col("verdict_letter") != "undecided")
    assert (
        answered.height > 0
        and (answered["verdict"] == answered["verdict_letter"]).all()
    )  # argmax = the recorded choice
    prior = calibration.slot_prior(j)
    assert prior["prior"].sum() == pytest.approx(1.0) and prior["instances"].min() > 0
    both = (
        j.filter(pl.col("option_probs").is_not_null())
        .group_by(M.VERDICT_KEYS)
        .len()
        .filter(pl.col("len") == 2)
        .height
    )
    cal = calibration.logprob_calibrated(j)
    assert (
        cal.filter(pl.col("verdict") != "undecided").height == both
        and cal["side"].null_count() == cal.height
    )
    assert calibration.pf_removed(j).height == 1
