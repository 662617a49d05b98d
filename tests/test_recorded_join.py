"""Recorded verdicts answered as a table join in the driver (``engine/recorded.py``).

A job whose judges all answer from recordings (replay, every audit) starts no Ray and
gives the rows the Ray scheduler gives; a job that also asks a live judge still runs on
Ray, replay judges included. Every unit ends as a verdict or a recorded failure; a rerun
asks nothing again.
"""

from __future__ import annotations

import asyncio

import polars as pl
import pytest

import voirdire
from tests.repo import in_fresh_interpreter
from voirdire.benchmarks.recorded import Recorded

#: what differs between two runs of the same units: when and how fast they were answered
TIMING = ["latency_s", "finished_at"]


def _replay_job(data_dir, out, *, live: bool = False) -> dict:
    judges = [
        {"name": "gpt4", "backend": "replay", "recorded": "gpt-4-0613"},
        {"name": "gemini", "backend": "replay", "recorded": "gemini-pro"},
    ]
    if live:  # a simulated judge that waits: a live judge, asked through Ray
        judges.append({"name": "sim", "backend": "simulated", "latency_s": 0.001})
    return {
        "name": out.name,
        "output_dir": str(out),
        "benchmark": {
            "name": "mtbench",
            "data_dir": str(data_dir),
            "candidates": ["gpt-4", "alpaca-13b", "llama-13b"],
            "tasks": ["writing", "coding"],
        },
        "judges": judges,
    }


def _rows(out, judge: str) -> pl.DataFrame:
    """The judge's raw rows, timing aside, in unit order."""
    from voirdire.engine.store import ResultStore

    df = ResultStore(out, readonly=True).read_raw()
    return df.filter(pl.col("judge") == judge).drop(TIMING).sort("unit_id")


def _in_fresh_process(code: str) -> dict:
    """Run ``code`` (which sets ``result``, a JSON-able dict) in a fresh interpreter; its
    ``result`` with ``ray`` (whether Ray was imported)."""
    return in_fresh_interpreter(code, "{**result, 'ray': 'ray' in sys.modules}", 600)


def test_the_join_gives_what_the_replay_worker_gives():
    """The result columns of the join, for a recorded text with the recording's letter and
    probabilities, a recorded failed call and a unit the recording lacks, are those of the
    replay judge's own answer (``ReplayJudge._answer``, what its worker returns)."""
    from voirdire.engine.recorded import recorded_columns
    from voirdire.engine.worker import results_to_columns
    from voirdire.judges.base import JudgeContext, Query
    from voirdire.judges.replay import ReplayJudge, ReplaySettings, recorded_frame

    recorded = {
        ("q1;a;b", 1): Recorded("[[A]]"),
        ("q1;b;a", 1): Recorded("text", choice="B", probs={"A": 0.25, "B": 0.75}),
        ("q2;a;b", 1): Recorded(None, why="the log records no judgment for this order"),
        ("q2;b;a", 2): Recorded("[[C]]", choice=""),
    }
    asked = [("u1", "q1", ("a", "b"), 1), ("u2", "q1", ("b", "a"), 1),
             ("u3", "q2", ("a", "b"), 1), ("u4", "q2", ("b", "a"), 1),
             ("u5", "q2", ("b", "a"), 2), ("u6", "q3", ("a", "b"), 1)]  # fmt: skip
    judge = object.__new__(ReplayJudge)  # the worker's lookup over these records
    judge.settings = ReplaySettings(recorded="x")
    judge.context = JudgeContext(
        judge="x", benchmark="B", data_dir=None, output_dir=None
    )
    judge.recorded = recorded
    queries = [
        Query(unit_id=u, query_id=u, benchmark="B", question_id=q, shown=s,
              repetition=r, option_mode=3)
        for u, q, s, r in asked
    ]  # fmt: skip
    want = results_to_columns(queries, asyncio.run(judge.judge(queries)))
    got = recorded_columns(
        [u for u, *_ in asked],
        [";".join((q, *s)) for _, q, s, _ in asked],
        [r for *_, r in asked],
        recorded_frame(recorded),
    )
    assert set(got) == set(want)
    for key in want:
        if key != "latency_s":
            assert got[key] == want[key], key
    assert got["failure_message"][2:] == [
        "the log records no judgment for this order",
        "no recorded output",
        None,
        "no recorded output",
    ]


@pytest.mark.process
def test_a_replay_only_run_starts_no_ray_and_resumes_without_asking(data_dir, tmp_path):
    """Through ``voirdire.run`` in a fresh process: Ray is never imported, every unit has
    its row, and a rerun asks nothing (the same rows, the same bytes of judgments)."""
    out = tmp_path / "replay"
    job = _replay_job(data_dir, out)
    code = (
        "import voirdire\n"
        f"res = voirdire.run({job!r})\n"
        "result = {'queries': res.stats.queries, 'rows': res.judgments.height}"
    )
    first = _in_fresh_process(code)
    assert first["ray"] is False
    # 2 judges x 20 questions (2 tasks) x 3 candidates x 2 orders
    assert first["queries"] == first["rows"] == 2 * 20 * 3 * 2
    rows = {j: _rows(out, j) for j in ("gpt4", "gemini")}
    judged = (out / "judgments.parquet").read_bytes()
    again = _in_fresh_process(code)
    assert again == {**first, "queries": 0}
    for j, df in rows.items():
        assert _rows(out, j).equals(df)
    assert (out / "judgments.parquet").read_bytes() == judged


@pytest.mark.ray
def test_a_mixed_job_runs_on_ray_and_its_replay_judges_match_the_join(
    data_dir, tmp_path, ray_local
):
    """A job that also asks a live judge (simulated, with latency) runs on Ray: its judges'
    workers are left idle for the next pool; its replay judges' rows are the rows of the
    replay-only job answered by the join, unit for unit."""
    from voirdire.engine import scheduler

    scheduler._IDLE.clear()
    joined = voirdire.run(_replay_job(data_dir, tmp_path / "joined"))
    assert not scheduler._IDLE  # no worker asked: the join
    mixed = voirdire.run(_replay_job(data_dir, tmp_path / "mixed", live=True))
    assert scheduler._IDLE  # the scheduler's workers, kept after the run
    assert mixed.stats.queries == joined.stats.queries * 3 // 2
    for j in ("gpt4", "gemini"):
        assert _rows(tmp_path / "mixed", j).equals(_rows(tmp_path / "joined", j))
    keep = ["judge", "unit_id", "extracted", "chosen", "tie", "failed", "output"]
    assert (
        mixed.judgments.filter(pl.col("judge") != "sim")
        .select(keep)
        .sort("judge", "unit_id")
        .equals(joined.judgments.select(keep).sort("judge", "unit_id"))
    )


def test_needs_ray_reads_the_judges_capabilities(data_dir, tmp_path):
    """Ray is started for a live judge, a cluster address or a log completed by a live
    judge, never for replay judges alone."""
    from voirdire.api.jobs import needs_ray

    replay = _replay_job(data_dir, tmp_path / "a")
    assert not needs_ray(replay)
    assert needs_ray(replay, "127.0.0.1:6379")
    assert needs_ray(_replay_job(data_dir, tmp_path / "b", live=True))


@pytest.mark.parametrize(
    "variant", ["replay", "live", "address", "bandwagon", "no-such-backend"]
)
def test_the_job_file_and_the_plan_agree_on_ray(data_dir, tmp_path, variant):
    """Ray is decided twice, from the job file before planning (``spec_needs_ray``, which
    the CLI reads to check keys before Ray starts) and from the plan
    (``answered_in_driver``, which the engine follows): the two agree on every job that
    plans, and a job that does not plan is sent the Ray way, where planning refuses it."""
    from voirdire.api.jobs import load_job_spec
    from voirdire.core import ConfigError
    from voirdire.engine.plan import plan_job
    from voirdire.engine.recorded import answered_in_driver, spec_needs_ray

    job = _replay_job(data_dir, tmp_path / variant, live=variant == "live")
    address = "127.0.0.1:6379" if variant == "address" else None
    if variant == "bandwagon":
        job["perturbations"] = [{"kind": "bandwagon"}]
    if variant == "no-such-backend":
        job["judges"][0]["backend"] = "no-such-backend"
    try:
        spec = load_job_spec(job)
    except ConfigError:
        assert variant == "no-such-backend"
        return
    before = spec_needs_ray(spec, address)
    try:
        plan = plan_job(spec, dry_run=True)
    except ConfigError:
        assert before, "a job that does not plan is sent the Ray way"
        return
    assert before == (not answered_in_driver(plan, address))
    assert before == (variant != "replay")


def _units_both_ways(job_dict: dict) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every judge's units of a planned job by the generator (``iter_unit_batches``) and
    by columns (``unit_frames``), as DataFrames of the same schema."""
    import pyarrow as pa

    from voirdire.api.jobs import load_job_spec
    from voirdire.engine.job import _own, _unit_batches
    from voirdire.engine.plan import plan_job
    from voirdire.engine.prompts import PromptCache
    from voirdire.engine.unit_table import unit_frames
    from voirdire.schema import WORK_UNIT_SCHEMA

    spec = load_job_spec(job_dict)
    plan = plan_job(spec)
    gen, cols = [], []
    for rj in plan.judges:
        prompts = PromptCache(plan.bench, score_style=spec.comparison.score_style)
        for b in _unit_batches(spec, plan, rj, prompts, {}):
            gen.append(pa.Table.from_pydict(b.columns, schema=WORK_UNIT_SCHEMA))
        frames = unit_frames(
            plan.bench, plan.instances, rj.comparison_for(spec.comparison),
            judge=rj.name, identity_hash=rj.identity_hash,
            prompts=PromptCache(plan.bench, score_style=spec.comparison.score_style),
            variants=plan.variants, only=_own(plan, rj), per_frame=7,
        )  # fmt: skip
        assert frames is not None
        cols += list(frames)
    a = pl.from_arrow(pa.concat_tables(gen))
    b = pl.concat(cols).cast(a.schema)
    return a, b


@pytest.mark.parametrize(
    ("study", "mode"),
    [
        ("position_bias", "pairwise"),
        ("repetition", "pairwise"),
        ("position_bias", "score"),
    ],
)
@pytest.mark.slow
def test_units_built_by_columns_are_the_generators(data_dir, tmp_path, study, mode):
    """The same units, ids, columns and order as the generator, on the release's MT-Bench
    and DevBench (both orders; the repetition study's three repetitions; score mode, whose
    query ids carry the prompt style)."""
    for bench in ("mtbench", "devbench"):
        job = {
            "name": "u",
            "output_dir": str(tmp_path / f"{bench}-{study}"),
            "benchmark": {"name": bench, "data_dir": str(data_dir)}
            | ({"sample": "repetition"} if study == "repetition" else {}),
            "comparison": {
                "repetitions": 3 if study == "repetition" else 1,
                "mode": mode,
            },
            "judges": [
                {"name": "*", "backend": "replay", "recorded": "*", "study": study}
            ],
        }
        gen, cols = _units_both_ways(job)
        assert gen.height > 1000
        assert cols.equals(gen), bench


def test_a_logs_units_built_by_columns_are_the_generators(tmp_path, monkeypatch):
    """On an audit's log, where each judge is asked only what its records hold (one model
    file's games given in one order only), the same units as the generator."""
    from tests.audit_logs import draws, write_arena_hard
    from voirdire.api.jobs import audit_job

    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    logs = tmp_path / "model_judgment" / "judge"
    logs.mkdir(parents=True)
    write_arena_hard(logs / "m1.jsonl", draws(30, 1), model="m1", seed=1)
    write_arena_hard(logs / "m2.jsonl", draws(20, 2), model="m2", seed=2)
    lines = (logs / "m2.jsonl").read_text().splitlines()
    (logs / "m2.jsonl").write_text("\n".join(lines[:10]) + "\n")
    spec = audit_job([logs], "arena-hard", out=tmp_path / "out")
    gen, cols = _units_both_ways(spec.model_dump(mode="json", exclude_none=True))
    assert gen.height == 2 * 30 + 2 * 10
    assert cols.equals(gen)


def test_a_frame_is_answered_as_its_batches_are(data_dir, tmp_path):
    """The raw rows of a frame of units answered at once (``_answer_frame``: probabilities,
    a recorded failed call, a key the recording lacks, units already done) are those of the
    same units answered as a batch (``recorded_columns`` into ``rows_to_table``)."""
    import dataclasses

    from voirdire.api.jobs import load_job_spec
    from voirdire.engine.job import _own
    from voirdire.engine.plan import plan_job
    from voirdire.engine.prompts import PromptCache
    from voirdire.engine.recorded import _answer_frame, recorded_columns
    from voirdire.engine.store import rows_to_table
    from voirdire.engine.unit_table import unit_frames
    from voirdire.judges.replay import load_recorded, recorded_frame, recorded_path

    spec = load_job_spec(_replay_job(data_dir, tmp_path / "f"))
    plan = plan_job(spec)
    rj = plan.judges[0]
    ctx = rj.context(plan.bench.name, str(plan.data_dir), None)
    recorded = load_recorded(
        recorded_path(rj.settings, ctx), plan.bench.name, "gpt-4-0613"
    )
    (frame,) = unit_frames(
        plan.bench, plan.instances, rj.comparison_for(spec.comparison),
        judge=rj.name, identity_hash=rj.identity_hash, prompts=PromptCache(plan.bench),
        only=_own(plan, rj),
    )  # fmt: skip
    asked = frame.slice(3, 3).select(
        pl.col("question_id") + ";" + pl.col("shown").list.join(";"), "repetition"
    )
    keys = [(k, r) for k, r in asked.iter_rows()]  # three units not done
    recorded[keys[0]] = dataclasses.replace(
        recorded[keys[0]], probs={"A": 0.4, "B": 0.6}
    )
    recorded[keys[1]] = dataclasses.replace(recorded[keys[1]], output=None, why="gone")
    del recorded[keys[2]]
    table = recorded_frame(recorded)
    done = set(frame["unit_id"].head(3).to_list())
    got = pl.from_arrow(_answer_frame(frame, done, table, None))
    rest = frame.filter(~pl.col("unit_id").is_in(list(done)))
    cols = {c: rest[c].to_list() for c in rest.columns}
    cols["shown"] = [tuple(s) for s in cols["shown"]]
    keys_asked = [";".join((q, *s)) for q, s in zip(cols["question_id"], cols["shown"])]
    want = pl.from_arrow(
        rows_to_table(
            cols,
            recorded_columns(cols["unit_id"], keys_asked, cols["repetition"], table),
        )
    )
    assert got.height == frame.height - 3
    assert got.drop(TIMING).equals(want.drop(TIMING))
    assert got["option_probs"].drop_nulls().len() == 1
    assert set(got["failure_message"].drop_nulls()) == {"gone", "no recorded output"}
