"""The engine end to end: job spec validation, work units, the store, the Ray scheduler,
crash recovery and resume, on a slice of the real MT-Bench data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import tomli_w

import voirdire
from tests.cli import voirdire as voirdire_cli
from tests.pandalm_synthetic import synthetic_data_dir
from tests.repo import REPO, repo_pythonpath
from voirdire.analysis.results_dir import load_judgments
from voirdire.core import ConfigError
from voirdire.engine.plan import plan_job
from voirdire.engine.prompts import PromptCache
from voirdire.engine.spec import load_job, parse_job
from voirdire.engine.store import ResultStore
from voirdire.engine.unit_records import query_id, unit_id
from voirdire.engine.units import iter_unit_batches

#: the test suite's crashing simulated judge (tests/backends.py), loaded by import path
CRASHING = "tests.backends:CrashingSimulated"


def job_dict(tmp_path: Path, **over) -> dict:
    """A small MT-Bench job: 2 questions x 3 candidates, both orders."""
    job = {
        "name": "slice",
        "output_dir": str(tmp_path / "out"),
        "benchmark": {
            "name": "mtbench",
            "questions": ["81", "111"],
            "candidates": ["alpaca-13b", "gpt-4", "llama-13b"],
        },
        "comparison": {"option_mode": 3, "permutations": "both", "repetitions": 1},
        "run": {"batch_size": 4, "flush_seconds": 0.05},
        "judges": [
            {"name": "gpt-4-0613", "backend": "replay", "recorded": "gpt-4-0613"},
            {"name": "gemini-pro", "backend": "replay", "recorded": "gemini-pro"},
        ],
    }
    for k, v in over.items():
        job[k] = v
    return job


# --------------------------------------------------------------------------- spec


def test_unknown_key_is_named(tmp_path, data_dir):
    d = job_dict(tmp_path)
    d["comparison"]["repetitons"] = 3
    with pytest.raises(ConfigError, match=r"comparison\.repetitons: unknown key"):
        parse_job(d, "job.toml")


def test_unknown_backend_lists_known(tmp_path, data_dir):
    d = job_dict(tmp_path)
    d["judges"][0]["backend"] = "gpt5-magic"
    job = parse_job(d)
    with pytest.raises(
        ConfigError, match=r"unknown judge backend 'gpt5-magic'.*replay"
    ):
        plan_job(job)


def test_bad_backend_setting_names_judge(tmp_path, data_dir):
    d = job_dict(tmp_path)
    d["judges"][1]["recordedd"] = "x"
    with pytest.raises(
        ConfigError,
        match=r"judge 'gemini-pro' \(backend 'replay'\): recordedd: unknown key",
    ):
        plan_job(parse_job(d))


def test_unknown_recorded_judge_lists_available(tmp_path, data_dir):
    d = job_dict(tmp_path)
    d["judges"][0]["recorded"] = "gpt-5"
    with pytest.raises(
        ConfigError, match=r"no recorded outputs for 'gpt-5'.*gpt-4-0613"
    ):
        plan_job(parse_job(d))


def test_unknown_candidate_and_question(tmp_path, data_dir):
    d = job_dict(tmp_path)
    d["benchmark"]["candidates"] = ["alpaca-13b", "gpt-7"]
    with pytest.raises(ConfigError, match=r"unknown candidate model\(s\) 'gpt-7'"):
        plan_job(parse_job(d))
    d = job_dict(tmp_path)
    d["benchmark"]["questions"] = ["81", "999"]
    with pytest.raises(ConfigError, match=r"unknown question id\(s\) 999"):
        plan_job(parse_job(d))


def test_missing_data_dir_is_clear(tmp_path):
    d = job_dict(tmp_path)
    d["benchmark"]["data_dir"] = str(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="nowhere"):
        plan_job(parse_job(d))


def test_duplicate_judges_and_bad_toml(tmp_path):
    d = job_dict(tmp_path)
    d["judges"][1]["name"] = "gpt-4-0613"
    with pytest.raises(ConfigError, match="repeated: gpt-4-0613"):
        parse_job(d)
    p = tmp_path / "bad.toml"
    p.write_text("name = 'x'\n[benchmark\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_job(p)
    with pytest.raises(ConfigError, match="job file not found"):
        load_job(tmp_path / "absent.toml")


def test_examples_validate(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv(
        "VOIRDIRE_PANDALM_DATA", str(synthetic_data_dir(tmp_path))
    )  # PandaLM's is never committed
    for path in sorted((REPO / "examples").glob("*.toml")):
        job = load_job(path)
        if all(j.backend in ("replay", "simulated") for j in job.judges):
            plan = plan_job(job)
            assert plan.units_per_judge > 0, path


# --------------------------------------------------------------------------- units


def test_units_stable_and_complete(tmp_path, data_dir):
    job = parse_job(job_dict(tmp_path, comparison={"option_mode": 3, "repetitions": 2}))
    plan = plan_job(job)
    rj = plan.judges[0]
    bench = plan.bench

    def ids():
        out = []
        for b in iter_unit_batches(
            bench,
            plan.instances,
            job.comparison,
            judge=rj.name,
            identity_hash=rj.identity_hash,
            needs_prompt=True,
            batch_size=5,
            prompts=PromptCache(bench),
        ):
            # never split an instance across batches
            assert len(set(b.columns["instance_id"])) * 4 == len(b)
            out += b.columns["unit_id"]
            assert all(q.prompt for q in b.queries)
        return out

    first = ids()
    assert first == ids()  # deterministic
    assert len(first) == len(set(first)) == 2 * 3 * 2 * 2 == plan.units_per_judge
    # the id depends on the judge's identity (and sampling), not on its label
    qid = query_id("MTBench", "81", ("alpaca-13b", "vicuna-13b-v1.3"), "pairwise", 3)
    assert unit_id("a" * 32, qid, 1) != unit_id("b" * 32, qid, 1)
    assert unit_id("a" * 32, qid, 1) != unit_id("a" * 32, qid, 2)
    job2 = parse_job(job_dict(tmp_path, sampling={"temperature": 0.7}))
    sim = [
        r.identity_hash
        for r in plan_job(
            parse_job(
                {
                    **job_dict(tmp_path),
                    "judges": [{"name": "s", "backend": "simulated"}],
                }
            )
        ).judges
    ]
    sim_t = [
        r.identity_hash
        for r in plan_job(
            parse_job(
                {
                    **job_dict(tmp_path, sampling={"temperature": 0.7}),
                    "judges": [{"name": "s", "backend": "simulated"}],
                }
            )
        ).judges
    ]
    assert sim != sim_t
    assert job2.sampling.temperature == 0.7


def test_instances_pairwise(data_dir, tmp_path):
    job = parse_job(job_dict(tmp_path))
    plan = plan_job(job)
    inst = plan.instances
    assert inst.height == 6
    assert inst["candidates"].to_list()[0][1] == "vicuna-13b-v1.3"
    assert set(inst["task"]) == {"writing", "math"}  # question 81 is writing, 111 math


# --------------------------------------------------------------------------- store


def test_store_atomic_parts_and_dedup(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from polars.testing import assert_frame_equal

    from voirdire.schema import RAW_SCHEMA

    store = ResultStore(tmp_path, flush_rows=2, flush_seconds=100)

    def rows(ids, out):
        data = {f.name: [None] * len(ids) for f in RAW_SCHEMA}
        data.update(
            unit_id=ids,
            query_id=ids,
            judge=["j"] * len(ids),
            benchmark=["B"] * len(ids),
            question_id=["1"] * len(ids),
            task=["t"] * len(ids),
            instance_id=["i"] * len(ids),
            candidates=[["a", "b"]] * len(ids),
            shown=[["a", "b"]] * len(ids),
            permutation=[0] * len(ids),
            repetition=[1] * len(ids),
            mode=["pairwise"] * len(ids),
            option_mode=[3] * len(ids),
            input_chars=[1] * len(ids),
            output_chars=[1] * len(ids),
            prompt_chars=[1] * len(ids),
            output=[out] * len(ids),
            perturbation=["control"] * len(ids),
            perturbation_kind=["control"] * len(ids),
        )
        return pa.Table.from_pydict(data, schema=RAW_SCHEMA)

    store.append("j", rows(["u1"], "x"))
    assert store.completed_ids("j") == set()  # buffered, not yet flushed
    store.append("j", rows(["u2"], "x"))  # reaches flush_rows
    assert store.completed_ids("j") == {"u1", "u2"}
    store.append("j", rows(["u2", "u3"], "y"))
    store.compact()
    df = store.read_raw()
    assert sorted(df["unit_id"]) == ["u1", "u2", "u3"]
    assert df.filter(pl.col("unit_id") == "u2")["output"].item() == "y"  # latest wins
    assert len(list((tmp_path / "raw" / "j").glob("part-*.parquet"))) == 1
    assert not list((tmp_path / "raw" / "j").glob(".*tmp"))
    # parts holding no unit twice are merged one part at a time (an audit's 2 × 10⁶
    # rows within its memory bound): the same rows, in the same order, as dedup gives
    for i in range(4, 9):
        store.append("j", rows([f"u{i}", f"v{i}"], f"o{i}"))
    store.flush()
    before = store.read_raw()
    assert store._collect("j", store._distinct)
    store.compact()
    (part,) = (tmp_path / "raw" / "j").glob("part-*.parquet")
    assert pq.read_table(part).num_rows == 13
    assert_frame_equal(store.read_raw(), before)
    assert not list((tmp_path / "raw" / "j").glob(".*tmp"))


def test_store_reads_parts_written_before_a_column_was_added(tmp_path):
    """A run directory of an older voirdire (raw parts without ``gold``) still resumes and
    reads: the missing column comes back as null, and compaction writes the new schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from voirdire.schema import RAW_SCHEMA

    def rows(ids, schema):
        data = {f.name: [None] * len(ids) for f in schema}
        data.update(
            unit_id=ids,
            query_id=ids,
            judge=["j"] * len(ids),
            benchmark=["B"] * len(ids),
            question_id=["1"] * len(ids),
            task=["t"] * len(ids),
            instance_id=["i"] * len(ids),
            candidates=[["a", "b"]] * len(ids),
            shown=[["a", "b"]] * len(ids),
            permutation=[0] * len(ids),
            repetition=[1] * len(ids),
            mode=["pairwise"] * len(ids),
            option_mode=[3] * len(ids),
            input_chars=[1] * len(ids),
            output_chars=[1] * len(ids),
            prompt_chars=[1] * len(ids),
            output=["x"] * len(ids),
            perturbation=["control"] * len(ids),
            perturbation_kind=["control"] * len(ids),
        )
        return pa.Table.from_pydict(data, schema=schema)

    old_schema = pa.schema([f for f in RAW_SCHEMA if f.name != "gold"])
    (tmp_path / "raw" / "j").mkdir(parents=True)
    pq.write_table(
        rows(["u1"], old_schema),
        tmp_path / "raw" / "j" / "part-00000000000000000001-aaaaaaaa.parquet",
    )
    store = ResultStore(tmp_path, flush_rows=1, flush_seconds=100)
    new = rows(["u2"], RAW_SCHEMA).set_column(
        RAW_SCHEMA.get_field_index("gold"), "gold", pa.array(["a"])
    )
    store.append("j", new)
    assert store.completed_ids("j") == {"u1", "u2"}
    df = store.read_raw().sort("unit_id")
    assert df["gold"].to_list() == [None, "a"]
    store.compact()
    assert store.read_raw().sort("unit_id")["gold"].to_list() == [None, "a"]


def test_store_quarantines_part_with_damaged_data(tmp_path):
    """A part whose footer reads but whose first page is damaged (polars: "File out of
    specification") is found, moved aside with a warning naming it, and its units are not
    counted as done; the other parts are read as before."""
    import pyarrow as pa

    from voirdire.engine.store import CorruptPartWarning
    from voirdire.schema import RAW_SCHEMA

    store = ResultStore(tmp_path, flush_rows=1, flush_seconds=100)
    for i in range(3):
        data = {f.name: [None] for f in RAW_SCHEMA}
        data.update(
            unit_id=[f"u{i}"],
            query_id=["q"],
            judge=["j"],
            benchmark=["B"],
            question_id=["1"],
            task=["t"],
            instance_id=["i"],
            candidates=[["a", "b"]],
            shown=[["a", "b"]],
            permutation=[0],
            repetition=[1],
            mode=["pairwise"],
            option_mode=[3],
            input_chars=[1],
            output_chars=[1],
            prompt_chars=[1],
            output=["x"],
            perturbation=["control"],
            perturbation_kind=["control"],
        )
        store.append("j", pa.Table.from_pydict(data, schema=RAW_SCHEMA))
    parts = sorted((tmp_path / "raw" / "j").glob("part-*.parquet"))
    damaged = bytearray(parts[1].read_bytes())
    damaged[4:60] = b"\xff" * 56  # the first page header, after the magic bytes
    parts[1].write_bytes(bytes(damaged))
    with pytest.raises(pl.exceptions.ComputeError):  # what the rerun died of before
        pl.scan_parquet(parts).collect()

    fresh = ResultStore(tmp_path)
    with pytest.warns(CorruptPartWarning, match=parts[1].name):
        assert fresh.completed_ids("j") == {"u0", "u2"}
    aside = tmp_path / "raw" / "j" / "quarantine" / f"{parts[1].name}.corrupt"
    assert aside.read_bytes() == bytes(damaged)  # kept, byte for byte, out of the way
    assert not parts[1].exists()
    assert sorted(fresh.read_raw()["unit_id"]) == ["u0", "u2"]


# --------------------------------------------------------------------------- jobs on Ray


def test_replay_job_end_to_end(tmp_path, data_dir, ray_local):
    job = parse_job(job_dict(tmp_path))
    outcome = voirdire.run(job)
    out = outcome.output_dir
    j = load_judgments(out)
    assert j.height == 2 * 12
    assert j["unit_id"].n_unique() == j.height
    # replayed outputs are the release's text for exactly that order of models
    row = j.filter(
        (pl.col("judge") == "gpt-4-0613") & (pl.col("question_id") == "81")
    ).row(0, named=True)
    assert row["output"] and row["verdict_mode"] == "replay"
    assert row["extracted"] in ("A", "B", "C")
    jm = pl.read_csv(out / "metrics" / "judge_metrics.csv")
    assert jm.columns == ["benchmark", "judge", "pc", "pc_std", "pf", "pf_std", "error_rate", "rs", "rs_spread",
                          "pass_kappa", "pass_kappa_lo", "pass_kappa_hi", "pass_kappa_pairs", "pass_kappa_gate"]  # fmt: skip
    um = pl.read_csv(out / "metrics" / "cell_metrics.csv")
    assert um.columns[:4] == ["benchmark", "judge", "candidate", "task"]
    assert (out / "report.md").read_text().count("gpt-4-0613") >= 2
    assert (out / "judgments.parquet").exists()
    # rerun: nothing is asked again
    again = voirdire.run(job)
    assert again.stats.queries == 0
    assert load_judgments(out).height == j.height


def test_missing_recorded_output_is_recorded_failure(tmp_path, data_dir, ray_local):
    # gpt-4 is a candidate in the position-bias study, but never compared with itself
    d = job_dict(
        tmp_path,
        benchmark={
            "name": "mtbench",
            "questions": ["81"],
            "candidates": ["gpt-4"],
            "reference": "alpaca-13b",
        },
    )
    outcome = voirdire.run(parse_job(d))
    j = load_judgments(outcome.output_dir)
    assert j.height == 4
    assert set(j["failure"]) == {"missing"}
    assert set(j["failure_message"]) == {"no recorded output"}
    assert j["failed"].all()
    assert outcome.judge_metrics["error_rate"].to_list() == [1.0, 1.0]


def test_worker_crash_midjob_loses_nothing(tmp_path, data_dir, ray_local):
    marker = tmp_path / "crashed"
    d = job_dict(tmp_path)
    d["judges"] = [
        {
            "name": "sim",
            "backend": CRASHING,
            "primacy": 0.8,
            "crash_after": 7,
            "crash_marker": str(marker),
        },
        {"name": "gpt-4-0613", "backend": "replay", "recorded": "gpt-4-0613"},
    ]
    outcome = voirdire.run(parse_job(d))
    assert marker.exists(), "the worker did not crash: the test tests nothing"
    # the batch in flight was sent again: to the restarting actor (resent) or after it died (retried)
    assert outcome.stats.retried_batches + outcome.stats.resent_batches >= 1
    j = load_judgments(outcome.output_dir)
    sim = j.filter(pl.col("judge") == "sim")
    assert sim.height == 12 and sim["unit_id"].n_unique() == 12
    assert sim["failure"].is_null().all()


def _write_toml(path: Path, d: dict) -> Path:
    path.write_text(tomli_w.dumps(d))
    return path


@pytest.mark.slow
@pytest.mark.process
def test_killed_driver_then_resume_every_unit_once(tmp_path, data_dir):
    """A judge kills the driver process (SIGKILL) mid-job; the rerun resumes and ends with
    every unit exactly once, asking only what was not saved."""
    d = job_dict(tmp_path)
    d["benchmark"] = {"name": "mtbench", "max_instances": 60}
    d["run"] = {"batch_size": 4, "flush_seconds": 0.01}
    d["judges"] = [
        {
            "name": "sim",
            "backend": CRASHING,
            "primacy": 0.7,
            "kill_driver_after": 100,
            "concurrency": 1,
        }
    ]
    job_path = _write_toml(tmp_path / "job.toml", d)
    env = {**os.environ, "PYTHONPATH": repo_pythonpath()}
    cmd = [sys.executable, "-m", "voirdire", "run", str(job_path), "--no-progress"]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == -9, first.stdout + first.stderr  # killed by SIGKILL
    store = ResultStore(tmp_path / "out")
    saved = store.read_raw()
    assert 0 < saved.height < 120, saved.height
    assert saved["unit_id"].n_unique() == saved.height

    # faults are not part of the judge's identity: the plain simulated judge resumes the job
    d["judges"][0].pop("kill_driver_after")
    d["judges"][0]["backend"] = "simulated"
    _write_toml(job_path, d)
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stdout + second.stderr
    final = load_judgments(tmp_path / "out")
    assert final.height == 120 and final["unit_id"].n_unique() == 120
    assert f"{120 - saved.height:,} queries in" in second.stdout
    # what was saved before the crash was kept, not asked again
    kept = final.join(
        saved.select("unit_id", "finished_at"), on="unit_id", suffix="_before"
    )
    assert kept.height == saved.height
    assert (kept["finished_at"] == kept["finished_at_before"]).all()


def test_cli_errors_before_sending(tmp_path, data_dir):
    d = job_dict(tmp_path)
    d["judges"][0]["backend"] = "nope"
    job_path = _write_toml(tmp_path / "job.toml", d)
    env = {**os.environ, "PYTHONPATH": repo_pythonpath()}
    r = voirdire_cli("run", str(job_path), env=env)
    assert r.returncode == 2
    assert "unknown judge backend 'nope'" in r.stderr
    assert not (tmp_path / "out" / "raw").exists()
    dry = voirdire_cli(
        "run",
        str(REPO / "examples" / "mtbench_position_bias.toml"),
        "--dry-run",
        env=env,
    )
    assert dry.returncode == 0, dry.stderr
    assert "gpt-4-0613 (replay): 4,800 queries" in dry.stdout


@pytest.mark.slow
@pytest.mark.process
def test_ctrl_c_stops_cleanly_and_resumes(tmp_path, data_dir):
    """SIGINT mid-job: exit code 130, what finished is saved; the rerun completes the job."""
    import signal
    import time

    d = job_dict(tmp_path)
    d["benchmark"] = {"name": "mtbench", "max_instances": 40}
    d["run"] = {"batch_size": 2, "flush_seconds": 0.01}
    d["judges"] = [
        {"name": "slow", "backend": "simulated", "latency_s": 0.2, "concurrency": 1}
    ]
    job_path = _write_toml(tmp_path / "job.toml", d)
    env = {**os.environ, "PYTHONPATH": repo_pythonpath()}
    cmd = [sys.executable, "-m", "voirdire", "run", str(job_path), "--no-progress"]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    raw = tmp_path / "out" / "raw" / "slow"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (
        raw.exists() and list(raw.glob("part-*.parquet"))
    ):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    assert "interrupted" in err and "resume" in err
    saved = ResultStore(tmp_path / "out").read_raw().height
    assert 0 < saved < 80
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stdout + second.stderr
    final = load_judgments(tmp_path / "out")
    assert final.height == 80 and final["unit_id"].n_unique() == 80


def test_two_judges_of_one_identity_keep_their_rows(tmp_path, data_dir, ray_local):
    """Two labels for the same judge identity share unit ids; both keep all their rows."""
    d = job_dict(tmp_path)
    d["judges"] = [
        {"name": "gpt-4-a", "backend": "replay", "recorded": "gpt-4-0613"},
        {"name": "gpt-4-b", "backend": "replay", "recorded": "gpt-4-0613"},
    ]
    outcome = voirdire.run(parse_job(d))
    j = load_judgments(outcome.output_dir)
    assert j.group_by("judge").len().sort("judge")["len"].to_list() == [12, 12]
    a, b = (
        set(j.filter(pl.col("judge") == n)["unit_id"]) for n in ("gpt-4-a", "gpt-4-b")
    )
    assert a == b  # same identity, same unit ids


def test_truncated_part_is_quarantined_and_its_units_asked_again(
    tmp_path, data_dir, ray_local
):
    """A part cut short (a full disk, a partial copy) makes the rerun warn with its name,
    move it aside, and ask exactly its units again: every unit ends up once; the analysis
    of such a directory (``voirdire analyze``) warns and skips it instead of a traceback,
    moving nothing (a reader never writes into its input)."""
    from voirdire.engine.store import CorruptPartWarning

    job = parse_job(job_dict(tmp_path))
    first = voirdire.run(job)
    assert first.stats.queries == 24
    out = first.output_dir
    (part,) = (out / "raw" / "gpt-4-0613").glob(
        "part-*.parquet"
    )  # compacted: one part per judge
    gemini_before = (
        load_judgments(out)
        .filter(pl.col("judge") == "gemini-pro")
        .select("unit_id", "finished_at")
    )
    cut = part.read_bytes()[: part.stat().st_size // 2]
    part.write_bytes(cut)

    with pytest.warns(CorruptPartWarning, match=part.name):
        again = voirdire.run(job)
    assert again.stats.queries == 12  # gpt-4-0613's units, and only those
    aside = part.parent / "quarantine" / f"{part.name}.corrupt"
    assert aside.read_bytes() == cut
    j = load_judgments(out)
    assert (
        j.height == 24 and j.select("judge", "unit_id").n_unique() == 24
    )  # every unit exactly once
    assert j.group_by("judge").len().sort("judge")["len"].to_list() == [12, 12]
    kept = j.filter(pl.col("judge") == "gemini-pro").join(
        gemini_before, on="unit_id", suffix="_before"
    )
    assert (
        kept.height == 12 and (kept["finished_at"] == kept["finished_at_before"]).all()
    )

    # the analysis stage on a damaged directory: a warning naming the file, not a traceback;
    # a reader moves nothing (only the run, above, puts a part aside)
    (part2,) = (out / "raw" / "gemini-pro").glob("part-*.parquet")
    part2.write_bytes(part2.read_bytes()[:100])
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    r = voirdire_cli("analyze", str(out), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "warning: 1 unreadable result file(s)" in r.stderr
    assert f"gemini-pro/{part2.name}" in r.stderr and "skipped" in r.stderr
    assert part2.is_file() and not (part2.parent / "quarantine").exists()
    assert pl.read_parquet(out / "judgments.parquet")["judge"].unique().to_list() == [
        "gpt-4-0613"
    ]


def test_a_worker_whose_engine_died_by_a_signal_records_one_line(
    tmp_path, data_dir, ray_local
):
    """Issue 26: a judge whose engine dies by SIGILL at start records, for its units, the
    one line naming the signal, the judge and the dtype to try, not Ray's creation-task
    preamble or vLLM's traces."""
    d = job_dict(tmp_path)
    d["run"] = {"batch_size": 12, "flush_seconds": 0.05, "max_attempts": 1}
    d["judges"] = [{"name": "tiny", "backend": "tests.backends:DiesAtStart"}]
    outcome = voirdire.run(parse_job(d))
    j = load_judgments(outcome.output_dir)
    assert j.height == 12 and (j["failure"] == "actor_crashed").all()
    messages = set(j["failure_message"].to_list())
    assert len(messages) == 1
    (message,) = messages
    assert "\n" not in message
    assert message.startswith("ActorDiedError: ") and message.endswith(
        "EngineDied: judge 'tiny': the vLLM engine died by SIGILL in dtype bfloat16; "
        'try dtype = "float32" (after 1 attempts)'
    ), message
