"""An API rewriter and an API judge of the bias suite against the loopback server (real
OpenAI wire protocol through the official SDK): rewrites are stored with provenance and
judged in the perturbed prompts; a rerun sends nothing; the dry run prices the rewrites."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import polars as pl
import pytest

from tests.cli import voirdire as voirdire_cli

sys.path.insert(0, str(Path(__file__).parent))
from fake_api_server import FakeAPIServer  # noqa: E402

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.ray, pytest.mark.slow]

KEY = "sk-test-BIAS-openai-SECRET-9191919191"
ENV = "VOIRDIRE_BIASTEST_OPENAI_KEY"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server(data_dir):
    old = os.environ.get(ENV)
    os.environ[ENV] = KEY  # before Ray starts, so its workers inherit it
    os.environ["VOIRDIRE_DATA"] = str(data_dir)
    srv = FakeAPIServer(
        keys={"openai": KEY, "anthropic": "unused-key-0000000000"}, latency_s=0.01
    ).start()
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield srv
    ray.shutdown()
    srv.stop()
    if old is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = old


def _job(tmp_path: Path, srv: FakeAPIServer) -> Path:
    api = f"""backend = "openai"
model = "gpt-4o"
base_url = "{srv.url}/v1"
api_key_env = "{ENV}"
timeout_s = 2.0
sdk_max_retries = 1
concurrency = 4"""
    text = f"""
name = "bias-api-test"
output_dir = "{tmp_path / "out"}"
[benchmark]
name = "mtbench"
questions = ["81", "82"]
candidates = ["gpt-4", "alpaca-13b"]
[run]
batch_size = 4
flush_seconds = 0.2
[sampling]
max_tokens = 64
[[rewriters]]
name = "rw"
{api}
[[perturbations]]
kind = "sentiment"
target = "candidate"
emotions = ["angry"]
rewriter = "rw"
[[perturbations]]
kind = "bandwagon"
shares = [90]
[[judges]]
name = "gpt-4o"
{api}
"""
    path = tmp_path / "job.toml"
    path.write_text(text)
    return path


def test_api_rewriter_and_judge_through_loopback(server, tmp_path):
    import voirdire
    from voirdire.analysis.results_dir import load_judgments
    from voirdire.engine.plan import plan_job
    from voirdire.engine.rewrite import rewrite_store
    from voirdire.engine.spec import load_job

    srv = server
    srv.reset()
    path = _job(tmp_path, srv)
    job = load_job(path)
    plan = plan_job(job)
    n_rewrites = plan.rewrites["unit_id"].n_unique()
    assert n_rewrites == 4  # 2 questions x 2 candidates (target = candidate)
    voirdire.run(job, show_progress=False)
    rw = rewrite_store(tmp_path / "out").read_raw()
    assert rw.height == n_rewrites and rw["failure"].null_count() == rw.height
    assert (
        rw["prompt"].str.contains("angry tone").all() and (rw["rewriter"] == "rw").all()
    )
    assert rw["rewriter_identity"].str.contains('"model":"gpt-4o"').all()
    assert (
        srv.stats["ok"]["openai"] == n_rewrites + plan.units_per_judge
    )  # one call per rewrite and per unit
    j = load_judgments(tmp_path / "out")
    assert j.height == plan.units_per_judge and j["failure"].null_count() == j.height
    sent = j.filter(pl.col("perturbation_kind") == "sentiment")
    assert sent.height == 8 and (sent["target"] == sent["candidate"]).all()
    # a rerun asks nothing and rewrites nothing
    before = srv.stats["requests"]
    voirdire.run(load_job(path), show_progress=False)
    assert srv.stats["requests"] == before
    # the dry run prices the rewrites next to the judge
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    dry = voirdire_cli("run", str(path), "--dry-run", env=env)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert (
        "rewriter rw" in dry.stdout
        and f"{n_rewrites} rewrites" in dry.stdout
        and "cost <=" in dry.stdout
    )
    assert KEY not in dry.stdout + dry.stderr
