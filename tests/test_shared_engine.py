"""Judges of one engine take turns on it (``SharesEngine``): the scheduler opens them one
after another on the workers the last one released, each worker lending its engine to the
next judge, so an engine (a vLLM engine: tens of seconds and the model's memory) starts
once per engine, not once per judge; judges of another engine, or none, keep their own.

The turns run on the real scheduler and Ray workers with ``tests.backends:EngineSimulated``,
whose stand-in engine goes through the vLLM judge's own lend and borrow; the vLLM judge's
engine key is checked on its settings. The real vLLM engine is lent in ``test_vllm.py``
and ``test_real_model.py`` (three verdict modes of one model, every unit answered).
"""

from __future__ import annotations

from collections import Counter

import polars as pl
import pytest

import voirdire
from voirdire.engine.spec import parse_job
from voirdire.judges.base import JudgeContext, Sampling
from voirdire.judges.vllm_judge import VllmJudge, VllmSettings

ENGINE = "tests.backends:EngineSimulated"


def _context(seed: int | None = 0) -> JudgeContext:
    return JudgeContext(
        judge="j",
        benchmark="mtbench",
        data_dir=None,
        output_dir=None,
        sampling=Sampling(seed=seed),
    )


def test_vllm_judges_differing_only_in_what_they_ask_share_an_engine():
    base = dict(model="/m", device="cpu", dtype="float32", max_model_len=2048)
    key = VllmJudge.engine_key
    one = key(VllmSettings(**base, verdict_mode="free"), _context())
    assert one is not None
    for same in (
        {"verdict_mode": "logprobs"},
        {"verdict_mode": "structured", "reasoning_tokens": 4},
        {"system_prompt": "You are fair.", "verdict_letters": "ab"},
        {"chat_template": "{{ messages }}"},
    ):
        assert key(VllmSettings(**base, **same), _context()) == one, same
    for other in (
        {"dtype": "bfloat16"},
        {"max_model_len": 4096},
        {"num_cpus": 2.0},
        {"engine_kwargs": {"kv_cache_memory_bytes": 1 << 28}},
        {"model": "/other"},
    ):
        assert key(VllmSettings(**{**base, **other}), _context()) != one, other
    assert key(VllmSettings(**base), _context(seed=1)) != one  # the engine's seed
    assert key(VllmSettings(**base, share_engine=False), _context()) is None


def test_share_engine_is_not_part_of_the_judges_identity():
    a = VllmJudge.identity(VllmSettings(model="m"), Sampling())
    b = VllmJudge.identity(VllmSettings(model="m", share_engine=False), Sampling())
    assert a == b


@pytest.mark.ray
def test_judges_of_one_engine_take_turns_on_one_engine_started_once(
    tmp_path, data_dir, ray_local
):
    log = tmp_path / "engines.log"
    log.touch()
    common = {"backend": ENGINE, "latency_s": 0.001, "engine_log": str(log)}
    judges = [
        {"name": "a", "engine": "one", "primacy": 0.8, **common},
        {"name": "b", "engine": "one", "primacy": 0.5, **common},
        {"name": "c", "engine": "one", "primacy": 0.2, **common},
        {"name": "d", "engine": "two", **common},
        {"name": "e", "engine": "", **common},  # an engine of its own
    ]
    job = {
        "name": "turns",
        "output_dir": str(tmp_path / "out"),
        "benchmark": {
            "name": "mtbench",
            "data_dir": str(data_dir),
            "questions": ["81", "111"],
            "candidates": ["alpaca-13b", "gpt-4", "llama-13b"],
        },
        "comparison": {"option_mode": 3, "permutations": "both", "repetitions": 1},
        "run": {"batch_size": 4, "flush_seconds": 0.05},
        "judges": judges,
    }
    res = voirdire.run(parse_job(job))
    j = res.judgments
    per_judge = dict(j.group_by("judge").len().iter_rows())
    assert set(per_judge) == set("abcde") and len(set(per_judge.values())) == 1
    assert res.stats.failures == 0 and j.filter(pl.col("failed")).height == 0
    # the judges differ, so a worker answering as the judge before would be seen
    wins = dict(
        j.group_by("judge")
        .agg((pl.col("chosen") == pl.col("shown").list.first()).mean())
        .iter_rows()
    )
    assert wins["a"] > wins["b"] > wins["c"]

    lines = [ln.split() for ln in log.read_text().splitlines()]
    starts = Counter(ln[2] if len(ln) > 2 else "" for ln in lines if ln[0] == "start")
    shutdowns = Counter(
        ln[2] if len(ln) > 2 else "" for ln in lines if ln[0] == "shutdown"
    )
    assert starts == {"one": 1, "two": 1, "None": 1}, lines
    assert shutdowns == starts, lines  # each engine shut down once, at the end
    hosts = {ln[2]: ln[1] for ln in lines if ln[0] == "judge"}
    assert hosts["a"] == hosts["b"] == hosts["c"]  # one worker, in turns
    order = [ln[2] for ln in lines if ln[0] == "judge" and ln[2] in "abc"]
    assert order == ["a", "b", "c"]  # job order


@pytest.mark.ray
def test_without_sharing_each_judge_starts_its_own_engine(
    tmp_path, data_dir, ray_local
):
    """The same three judges with no engine key: three engines (what the test above
    would see if the scheduler or the worker did not lend)."""
    log = tmp_path / "engines.log"
    log.touch()
    judges = [
        {
            "name": n,
            "backend": ENGINE,
            "latency_s": 0.001,
            "engine_log": str(log),
        }
        for n in "abc"
    ]
    job = {
        "name": "own",
        "output_dir": str(tmp_path / "out"),
        "benchmark": {
            "name": "mtbench",
            "data_dir": str(data_dir),
            "questions": ["81"],
            "candidates": ["alpaca-13b", "gpt-4"],
        },
        "comparison": {"option_mode": 3, "permutations": "both", "repetitions": 1},
        "judges": judges,
    }
    res = voirdire.run(parse_job(job))
    assert res.stats.failures == 0
    lines = [ln.split() for ln in log.read_text().splitlines()]
    assert sum(ln[0] == "start" for ln in lines) == 3
