"""Submission plumbing that needs no cluster: staging, addresses, validation, placement
options, output directories. (The Jobs API itself is exercised in test_cluster.py.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from voirdire.engine import submit as sub
from voirdire.engine.spec import ResolvedJudge, parse_job

from voirdire.core import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def _job(**over):
    data = {
        "name": "t",
        "output_dir": "/tmp/out",
        "benchmark": {"name": "mtbench"},
        "judges": [{"name": "s", "backend": "simulated", "resources": {"worker_node": 0.5}, "scheduling": "SPREAD"}],
    }
    data.update(over)
    return data


def test_stage_has_code_and_job(tmp_path):
    job = tmp_path / "my job.toml"
    job.write_text("x = 1\n")
    staged, rel = sub.stage(job, tmp_path / "stage")
    assert rel == "job/my job.toml" and (staged / rel).read_text() == "x = 1\n"
    for name in ("pyproject.toml", "voirdire/__init__.py", "voirdire/cli.py", "judges/base.py", "benchmarks/templates/listwise.json", "analysis/listwise.py"):
        assert (staged / name).is_file(), name
    assert not list(staged.rglob("__pycache__")) and not (staged / "tests").exists()


def test_resolve_address(monkeypatch):
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")  # a GCS address is not the Jobs API
    assert sub.resolve_address(None) == "http://127.0.0.1:8265"
    monkeypatch.setenv("RAY_ADDRESS", "http://head:8265")
    assert sub.resolve_address(None) == "http://head:8265"
    monkeypatch.setenv("RAY_API_SERVER_ADDRESS", "https://jobs.example:443")
    assert sub.resolve_address(None) == "https://jobs.example:443"
    assert sub.resolve_address("http://x:1") == "http://x:1"


def test_placement_options_stay_out_of_identity():
    job = parse_job(_job())
    rj = ResolvedJudge(job.judges[0], job)
    assert rj.actor_options == {"resources": {"worker_node": 0.5}, "scheduling_strategy": "SPREAD"}
    plain = parse_job(_job(judges=[{"name": "s", "backend": "simulated"}]))
    assert ResolvedJudge(plain.judges[0], plain).identity_hash == rj.identity_hash
    with pytest.raises(ConfigError, match="scheduling"):
        parse_job(_job(judges=[{"name": "s", "backend": "simulated", "scheduling": "PACK"}]))


def test_output_dir_uris():
    with pytest.raises(ConfigError, match="object-store URIs"):
        parse_job(_job(output_dir="s3://bucket/x"))
    assert parse_job(_job(output_dir="file:///shared/x")).output_dir == "/shared/x"


def test_submit_refuses_invalid_job_before_connecting(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\noutput_dir = "o"\n[benchmark]\nname = "mtbench"\n[[judges]]\nname = "j"\nbackend = "nope"\n')
    with pytest.raises(ConfigError, match="unknown judge backend"):
        sub.submit(bad, "http://127.0.0.1:9")  # nothing listens there: validation comes first
    r = subprocess.run([sys.executable, "-m", "voirdire", "submit", str(bad), "--address", "http://127.0.0.1:9"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "unknown judge backend" in r.stderr


def test_submit_without_jobs_api(tmp_path):
    job = tmp_path / "ok.toml"
    job.write_text('name = "x"\noutput_dir = "/tmp/o"\n[benchmark]\nname = "mtbench"\n[[judges]]\nname = "j"\nbackend = "simulated"\n')
    r = subprocess.run([sys.executable, "-m", "voirdire", "submit", str(job), "--address", "http://127.0.0.1:9"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 1 and "no Ray Jobs API at http://127.0.0.1:9" in r.stderr


def test_run_output_dir_override(tmp_path, data_dir):
    job = tmp_path / "j.toml"
    job.write_text(
        'name = "x"\noutput_dir = "/nonexistent/o"\n[benchmark]\nname = "mtbench"\nmax_instances = 1\n'
        '[comparison]\nmode = "listwise"\nlist_size = 3\npermutations = "latin"\n[[judges]]\nname = "j"\nbackend = "simulated"\n'
    )
    r = subprocess.run(
        [sys.executable, "-m", "voirdire", "run", str(job), "--dry-run", "--output-dir", "s3://b/o"], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 2 and "object-store URIs" in r.stderr
    r = subprocess.run([sys.executable, "-m", "voirdire", "run", str(job), "--dry-run", "--output-dir", str(tmp_path / "o")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0 and "6 queries" in r.stdout, r.stderr
