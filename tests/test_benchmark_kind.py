"""A benchmark is one module with one decorator (``benchmarks/registry.py``): a benchmark of
this test's own, registered by ``@BENCHMARKS.register``, runs a job end to end with
simulated judges; named by its import path it is found the same; the replay judge reads its
recorded outputs through its hooks; its options are checked before anything is loaded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import polars as pl
import pytest

from voirdire.analysis.results_dir import load_judgments
from voirdire.benchmarks.base import Benchmark
from voirdire.benchmarks.recorded import Recorded, record_key
from voirdire.benchmarks.registry import (
    BENCHMARKS,
    benchmark_class,
    canonical_name,
    load_benchmark,
)
from voirdire.core import ConfigError
from voirdire.engine.plan import plan_job
from voirdire.engine.shipping import release_for
from voirdire.engine.spec import parse_job
from voirdire.judges.base import JudgeContext, Query
from voirdire.judges.replay import ReplayJudge, ReplaySettings, recorded_judges

QUESTIONS = {
    "q1": "Name a prime.",
    "q2": "Add 2 and 2.",
    "q3": "Spell cat.",
    "q4": "Name a colour.",
}
ANSWERS = {"ref": "I do not know.", "good": "A fine answer.", "bad": "No."}


@BENCHMARKS.register
class TinyBench(Benchmark):
    """Four questions, three models, answers and prompt in code: a user's own benchmark
    reading no release; its release's recorded outputs are one judge, ``always-a``."""

    name = "Tiny-Bench"
    reference = "ref"
    default_option_mode = 3
    option_modes = (2, 3)
    verdict_pattern = r"\[\[([ABC])\]\]"
    verdict_cue, verdict_closing = "[[", "]]"
    instruction_anchor = "\n\n[Assistant A]"

    def __init__(self, data_dir=None, sample: str = "full") -> None:
        self.sample, self.data_dir, self.path = sample, Path(data_dir or "."), None
        self.models = tuple(ANSWERS)
        self.questions = pl.DataFrame(
            {
                "question_id": list(QUESTIONS),
                "task": ["t"] * len(QUESTIONS),
                "input_chars": [len(q) for q in QUESTIONS.values()],
            }
        )
        self._rows = dict(QUESTIONS)
        self._answers = {(q, m): a for q in QUESTIONS for m, a in ANSWERS.items()}

    def _build_pairwise(self, qid, a, b, option_mode, answers=None) -> str:
        tie = " or [[C]]" if option_mode == 3 else ""
        return (
            f"Question: {self._rows[qid]}\n\n[Assistant A]\n{self._answers[(qid, a)]}\n\n"
            f"[Assistant B]\n{self._answers[(qid, b)]}\n\nAnswer [[A]] or [[B]]{tie}."
        )

    @classmethod
    def recorded_judges(cls, data_dir, study, subsets=None):
        return ["always-a"]

    @classmethod
    def recorded_file(cls, data_dir, study, recorded, judge):
        if recorded != "always-a":
            raise ConfigError(f"judge {judge!r}: nothing recorded for {recorded!r}")
        return data_dir

    @classmethod
    def read_recorded(cls, path, recorded):
        out = {
            record_key(q, (c, "ref")): Recorded("Verdict: [[A]]")
            for q in QUESTIONS
            for c in ("good", "bad")
        }
        out[record_key("q1", ("ref", "good"))] = Recorded(
            None, why="recorded call failed"
        )
        return out


def _job(tmp_path, name="tiny bench", **over):
    d = {
        "name": "tiny",
        "output_dir": str(tmp_path / "out"),
        "benchmark": {"name": name},
        "comparison": {"repetitions": 2},
        "judges": [{"name": "sim", "backend": "simulated", "primacy": 0.7, "seed": 3}],
    }
    d.update(over)
    return parse_job(d)


def test_one_decorator_registers_it_under_its_normalised_name():
    assert "tinybench" in BENCHMARKS.names()
    # the built-in ones come from voirdire's own entry points (pyproject.toml), then the registered
    assert set(BENCHMARKS.names()[:15]) == {
        "mtbench",
        "devbench",
        "llmbar",
        "pairs",
        "pandalm",
        "arenahard",
        "fastchat",
        "judgebench",
        "logtable",
        "prd",
        "alpacaeval",
        "openaibatch",
        "anthropicbatch",
        "inspect",
        "autoj",
    }
    assert (
        benchmark_class("Tiny-Bench") is TinyBench
        and canonical_name("TINY_BENCH") == "tinybench"
    )
    assert benchmark_class("tests.test_benchmark_kind:TinyBench") is TinyBench
    with pytest.raises(TypeError, match="not a Benchmark subclass"):
        BENCHMARKS.register(type("NotABenchmark", (), {"name": "nab"}))
    with pytest.raises(
        ConfigError,
        match=r"unknown benchmark 'tiny-bench-2' \(did you mean 'Tiny-Bench'\?\); known benchmarks: AlpacaEval, AnthropicBatch, ArenaHard, AutoJ, DevBench, FastChat, Inspect, JudgeBench, LLMBar, LogTable, MTBench, OpenAIBatch, pairs, PandaLM, PRD",
    ):
        benchmark_class("tiny-bench-2")


def test_its_options_are_checked_and_it_reads_no_release(tmp_path):
    assert TinyBench.release is None and release_for(_job(tmp_path)) is None
    with pytest.raises(ConfigError, match="benchmark Tiny-Bench has no subsets choice"):
        load_benchmark("tinybench", subsets=["x"])
    with pytest.raises(
        ConfigError, match=r"\[benchmark.pairs\] belongs to name = \"pairs\""
    ):
        load_benchmark("tinybench", pairs=object())
    bench = load_benchmark("tinybench", tmp_path)
    assert isinstance(bench, TinyBench) and bench.data_dir == tmp_path


def test_a_registered_benchmark_runs_a_job_end_to_end(tmp_path, ray_local):
    import voirdire

    job = _job(tmp_path)
    plan = plan_job(job)
    assert (
        plan.bench.name == "Tiny-Bench" and plan.instances.height == 4 * 2
    )  # questions x candidates
    voirdire.run(job, show_progress=False)
    j = load_judgments(job.output_dir)
    assert j.height == 8 * 2 * 2  # instances x orders x repetitions
    assert (
        set(j["benchmark"]) == {"Tiny-Bench"}
        and j["extracted"].is_in(["A", "B", "C"]).all()
    )
    by_path = plan_job(_job(tmp_path / "p", name="tests.test_benchmark_kind:TinyBench"))
    assert by_path.bench.name == "Tiny-Bench" and by_path.instances.height == 8


def test_replay_reads_the_recorded_outputs_through_the_benchmark(tmp_path):
    assert recorded_judges(tmp_path, "position_bias", "Tiny-Bench") == ["always-a"]
    ctx = JudgeContext(
        judge="r", benchmark="Tiny-Bench", data_dir=str(tmp_path), output_dir=None
    )
    with pytest.raises(ConfigError, match="judge 'r': nothing recorded for 'other'"):
        ReplayJudge(ReplaySettings(recorded="other"), ctx)
    judge = ReplayJudge(ReplaySettings(recorded="always-a"), ctx)

    def query(qid, shown, rep=1):
        return Query(
            unit_id=f"{qid}{shown}{rep}",
            query_id="x",
            benchmark="Tiny-Bench",
            question_id=qid,
            shown=shown,
            repetition=rep,
            option_mode=3,
        )

    got = asyncio.run(
        judge.judge(
            [
                query("q2", ("good", "ref")),
                query("q1", ("ref", "good")),
                query("q2", ("ref", "good")),
                query("q2", ("good", "ref"), 2),
            ]
        )
    )
    assert (
        got[0].output == "Verdict: [[A]]"
        and got[0].failure is None
        and got[0].choice is None
    )
    assert got[1].output is None and got[1].failure_message == "recorded call failed"
    assert [r.failure_message for r in got[2:]] == [
        "no recorded output",
        "no recorded output",
    ]


def test_replay_reads_an_unregistered_benchmark_by_the_first_releases_layout(tmp_path):
    """A name no registered class has (a user's own pairs labelled ``pairs``, whose class
    has no name of its own): the recorded files under that name, as before."""
    d = tmp_path / "judgments" / "position_bias" / "pairs"
    d.mkdir(parents=True)
    import gzip
    import json

    with gzip.open(d / "j1.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"cmp_index": "r1;x;y", "judgment": "[[B]]"}) + "\n")
    assert recorded_judges(tmp_path, "position_bias", "pairs") == ["j1"]
    ctx = JudgeContext(
        judge="r", benchmark="pairs", data_dir=str(tmp_path), output_dir=None
    )
    judge = ReplayJudge(ReplaySettings(recorded="j1"), ctx)
    q = Query(
        unit_id="u",
        query_id="x",
        benchmark="pairs",
        question_id="r1",
        shown=("x", "y"),
        repetition=1,
        option_mode=2,
    )
    assert asyncio.run(judge.judge([q]))[0].output == "[[B]]"
