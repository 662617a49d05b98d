"""Start-up: a command imports what it uses when it uses it (issue 28.6).

``voirdire run`` validates its jobs and starts Ray before anything is analysed, so the
analysis stack (scipy, statsmodels, matplotlib, pandas: seconds to import on a loaded
2-core machine) must not be imported before then; writing one directory's files draws no
figure and fits no regression, so it imports neither matplotlib nor statsmodels' models.
Each check runs in a fresh interpreter and reads its ``sys.modules``.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

from tests.repo import modules_after

#: the analysis stack: none of these before Ray starts
HEAVY = ("scipy", "statsmodels", "matplotlib", "pandas")

#: every test here starts a Python process or Ray in a way that is its point
pytestmark = pytest.mark.process


def _heavy(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if m.split(".")[0] in HEAVY)


def test_importing_the_cli_and_the_api_imports_no_analysis():
    mods = modules_after(
        "import voirdire, voirdire.cli, voirdire.api\n"
        "import voirdire.engine.scheduler, voirdire.engine.rewrite, voirdire.engine.job\n"
        "voirdire.run, voirdire.load_job_spec"
    )
    assert not _heavy(mods), _heavy(mods)[:10]
    assert not [m for m in mods if m.startswith("voirdire.analysis")]


def test_run_dry_run_imports_no_analysis(data_dir, tmp_path):
    """What ``voirdire run`` does before Ray starts (load, plan every job), through the CLI
    with ``--dry-run``, on a bundled example's benchmark and judges."""
    job = tmp_path / "job.toml"
    job.write_text(
        'name = "startup"\noutput_dir = ' + json.dumps(str(tmp_path / "out")) + "\n"
        '[benchmark]\nname = "mtbench"\ndata_dir = ' + json.dumps(str(data_dir)) + "\n"
        '[[judges]]\nname = "*"\nbackend = "replay"\nrecorded = "*"\n',
        encoding="utf-8",
    )
    mods = modules_after(
        "from voirdire.cli import app\n"
        f"app(['run', '--dry-run', {str(job)!r}], standalone_mode=False)"
    )
    assert "voirdire.engine.plan" in mods  # the job was planned
    # pandas excepted: pyarrow imports it, when installed, on converting Python objects
    heavy = [m for m in _heavy(mods) if m.split(".")[0] != "pandas"]
    assert not heavy, heavy[:10]
    assert not (tmp_path / "out").exists()


def test_writing_a_directory_imports_no_figures_or_models():
    mods = modules_after(
        "import voirdire.api, voirdire.analysis.outputs, voirdire.analysis.report.files\n"
        "import voirdire.analysis.position.release_stats, voirdire.analysis.report.terminal"
    )
    assert "voirdire.analysis.report.files" in mods
    assert not [m for m in mods if m.split(".")[0] == "matplotlib"]
    assert "statsmodels.api" not in mods
    assert "voirdire.analysis.study" not in mods


def _replay_job(data_dir, out, recorded: list[str]) -> dict:
    return {
        "name": out.name,
        "output_dir": str(out),
        "benchmark": {
            "name": "mtbench",
            "data_dir": str(data_dir),
            "candidates": ["gpt-4", "alpaca-13b"],
            "tasks": ["writing"],
        },
        "judges": [
            {"name": n, "backend": "replay", "recorded": r}
            for n, r in zip(("first", "second"), recorded)
        ],
    }


@pytest.fixture
def no_idle_workers(ray_local):
    """The shared cluster with no idle worker left by an earlier module's jobs in this
    process (under xdist a worker runs many modules): the counts below are this test's."""
    from voirdire.engine import scheduler

    scheduler._IDLE.clear()  # the handles dropped: Ray ends those actors
    yield ray_local
    scheduler._IDLE.clear()


@pytest.mark.ray
def test_a_later_job_reuses_idle_workers_as_its_own_judges(
    data_dir, tmp_path, no_idle_workers
):
    """A second job in the same process starts no worker process: it takes the first job's
    idle workers, which build its judges' backends (the names swapped over the recorded
    judges, so a worker still answering as its first judge would be seen)."""
    import ray

    import voirdire
    from voirdire.engine import scheduler

    def pids() -> list[int]:
        idle = [w for ws in scheduler._IDLE.values() for w in ws]
        return sorted(ray.get([w.pid.remote() for w in idle], timeout=60))

    def outputs(res, judge: str) -> pl.DataFrame:
        return (
            res.judgments.filter(pl.col("judge") == judge)
            .select("question_id", pl.col("shown").list.join("|"), "output")
            .sort("question_id", "shown")
        )

    # replay judges alone are answered without Ray (engine/recorded.py): naming the
    # cluster sends their units through the scheduler
    address = ray.get_runtime_context().gcs_address
    a = voirdire.run(
        _replay_job(data_dir, tmp_path / "a", ["gpt-4-0613", "gemini-pro"]),
        address=address,
    )
    first = pids()
    assert len(first) == 2  # one worker per judge, kept idle
    b = voirdire.run(
        _replay_job(data_dir, tmp_path / "b", ["gemini-pro", "gpt-4-0613"]),
        address=address,
    )
    assert pids() == first  # the same two processes served the second job
    assert b.stats.queries == a.stats.queries == 2 * 10 * 2 * 2
    assert not outputs(a, "first").equals(outputs(a, "second"))  # the judges differ
    assert outputs(b, "first").equals(outputs(a, "second"))
    assert outputs(b, "second").equals(outputs(a, "first"))


@pytest.mark.ray
def test_judges_that_share_workers_take_turns_on_as_many_workers_as_cpus(
    data_dir, tmp_path, no_idle_workers
):
    """The repetition study's eight replayed judges run on at most as many worker
    processes as the cluster has CPUs (2 here), each judge's pool opening as one
    finishes, not on one new process each; every unit still gets its verdict."""
    import ray

    import voirdire
    from voirdire.engine import scheduler

    job = {
        "name": "turns",
        "output_dir": str(tmp_path / "turns"),
        "benchmark": {
            "name": "mtbench",
            "data_dir": str(data_dir),
            "sample": "repetition",
        },
        "comparison": {"repetitions": 3},
        "judges": [
            {"name": "*", "backend": "replay", "recorded": "*", "study": "repetition"}
        ],
    }
    # through the scheduler: a cluster named (replay judges alone are joined without Ray)
    res = voirdire.run(job, address=ray.get_runtime_context().gcs_address)
    judges = res.judgments["judge"].n_unique()
    idle = [w for ws in scheduler._IDLE.values() for w in ws]
    cpus = int(ray.cluster_resources()["CPU"])
    assert judges >= 3 * cpus  # enough judges that one process each would show
    assert len({ray.get(w.pid.remote(), timeout=60) for w in idle}) <= cpus
    assert res.stats.failures == 0 and res.judgments.height == res.stats.queries


#: what a replay-only job or an audit never needs: no query is sent, no figure drawn
NOT_FOR_REPLAY = ("ray", "vllm", "torch", "matplotlib")


def _unneeded(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if m.split(".")[0] in NOT_FOR_REPLAY)


def test_an_audit_imports_no_ray_vllm_torch_or_matplotlib(tmp_path):
    """``voirdire audit`` of a log through the CLI, in a fresh interpreter: its verdicts are
    joined with the planned units without Ray (``engine/recorded.py``), and nothing of
    Ray, vLLM, torch or matplotlib is imported."""
    from tests.audit_logs import draws, write_arena_hard

    logs = tmp_path / "model_judgment" / "judge"
    logs.mkdir(parents=True)
    write_arena_hard(logs / "m.jsonl", draws(20, 0), model="m")
    out = tmp_path / "out"
    mods = modules_after(
        "import os\n"
        f"os.environ['VOIRDIRE_LOG_CACHE'] = {str(tmp_path / 'cache')!r}\n"
        "from voirdire.cli import app\n"
        f"app(['audit', {str(logs)!r}, '--format', 'arena-hard', '--out', {str(out)!r}],"
        " standalone_mode=False)"
    )
    assert (out / "judgments.parquet").is_file()  # the audit ran
    assert not _unneeded(mods), _unneeded(mods)[:10]


def test_a_replay_only_run_imports_no_ray(data_dir, tmp_path):
    """``voirdire run`` of a job of replay judges alone, through the CLI, in a fresh
    interpreter: answered by the join, with no Ray imported (nor vLLM, torch, matplotlib)."""
    job = tmp_path / "job.toml"
    job.write_text(
        'name = "replay-only"\noutput_dir = ' + json.dumps(str(tmp_path / "out")) + "\n"
        '[benchmark]\nname = "mtbench"\ndata_dir = ' + json.dumps(str(data_dir)) + "\n"
        'tasks = ["writing"]\n'
        '[[judges]]\nname = "*"\nbackend = "replay"\nrecorded = "*"\n',
        encoding="utf-8",
    )
    mods = modules_after(
        "from voirdire.cli import app\n"
        f"app(['run', '--no-progress', {str(job)!r}], standalone_mode=False)"
    )
    assert (tmp_path / "out" / "judgments.parquet").is_file()
    assert not _unneeded(mods), _unneeded(mods)[:10]
