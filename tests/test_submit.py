"""Submission plumbing that needs no cluster: staging, addresses, validation, placement
options, output directories. (The Jobs API itself is exercised in test_cluster.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repo import REPO
from voirdire.core import ConfigError
from voirdire.engine import shipping
from voirdire.engine import submit as sub
from voirdire.engine.bind import ResolvedJudge
from voirdire.engine.spec import parse_job

ROOT = Path(__file__).resolve().parents[1]

#: every test here starts a Python process or Ray in a way that is its point
pytestmark = pytest.mark.process


def _job(**over):
    data = {
        "name": "t",
        "output_dir": "/tmp/out",
        "benchmark": {"name": "mtbench"},
        "judges": [
            {
                "name": "s",
                "backend": "simulated",
                "resources": {"worker_node": 0.5},
                "scheduling": "SPREAD",
            }
        ],
    }
    data.update(over)
    return data


def test_stage_ships_the_installed_package_and_the_job(tmp_path):
    job = tmp_path / "my job.toml"
    job.write_text("x = 1\n")
    pkg, work, rel = shipping.stage(job, tmp_path / "stage")
    assert rel == "job/my job.toml" and (work / rel).read_text() == "x = 1\n"
    assert pkg.name == "voirdire"
    # the package as installed: the rooms are subpackages, package data included
    for name in (
        "__init__.py",
        "cli/__init__.py",
        "core.py",
        "judges/base.py",
        "engine/submit.py",
        "benchmarks/releases/catalogue.py",
        "benchmarks/templates/listwise.json",
        "benchmarks/releases/release-manifest.tsv",
        "analysis/position/listwise.py",
    ):
        assert (pkg / name).is_file(), name
    assert (
        not list(pkg.rglob("__pycache__"))
        and not (pkg / "tests").exists()
        and not (pkg / "pyproject.toml").exists()
    )
    assert sorted(p.name for p in work.iterdir()) == ["job"]
    # importable from the staged copy alone, from a directory that is not the checkout
    code = (
        "import voirdire, voirdire.engine.job, voirdire.benchmarks.releases.fetch as r; "
        "from voirdire.benchmarks.data import load_templates; load_templates(); "
        "print(voirdire.engine.job.__file__, r.MANIFEST.is_file())"
    )
    env = {**os.environ, "PYTHONPATH": str(pkg.parent)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(pkg / "engine" / "job.py"), "True"]
    # the built-in benchmarks (entry points of the distribution) travel in the copy, so a
    # cluster with the copy but not voirdire's metadata still knows them
    code = (
        "import voirdire.registry as g; "
        "print(g.__file__, sorted(g.shipped_entry_points('voirdire.benchmarks')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert (
        out.stdout.strip() == f"{pkg / 'registry.py'} {sorted(_declared_benchmarks())}"
    )
    assert {"mtbench", "devbench", "pairs", "arenahard", "prd"} <= set(
        _declared_benchmarks()
    )


def _declared_benchmarks() -> list[str]:
    """The ``voirdire.benchmarks`` entry points pyproject.toml declares."""
    import tomllib

    with open(REPO / "pyproject.toml", "rb") as fh:
        meta = tomllib.load(fh)
    return list(meta["project"]["entry-points"]["voirdire.benchmarks"])


def test_data_location_handed_to_the_job(tmp_path, data_dir, monkeypatch):
    monkeypatch.delenv("VOIRDIRE_DATA", raising=False)
    job = parse_job(_job())
    here = shipping.data_location(job)
    assert here == str(data_dir) and os.path.isabs(
        here
    )  # resolved on the client, absolute
    assert (
        shipping.data_location(job, {"VOIRDIRE_DATA": "/cluster/data"}) is None
    )  # the user's choice wins
    assert (
        shipping.data_location(
            parse_job(_job(benchmark={"name": "mtbench", "data_dir": "/d"}))
        )
        is None
    )
    entry = shipping.entrypoint("job/j.toml", "/out dir", "/shared data/jtj")
    assert entry == (
        "VOIRDIRE_DATA=\"$(python -m voirdire data fetch --if-missing --no-progress --try '/shared data/jtj')\" || exit 3; "
        "export VOIRDIRE_DATA; python -m voirdire run job/j.toml --no-progress --output-dir '/out dir'"
    )
    assert (
        shipping.entrypoint("job/j.toml", None, None, needs_data=False)
        == "python -m voirdire run job/j.toml --no-progress"
    )


def test_entrypoint_data_step_runs_in_a_shell(tmp_path, data_dir):
    """The data step of the entrypoint, run by a POSIX shell as Ray runs it: the handed-over
    directory is exported when it exists; when it does not and no fetch is possible, the
    step exits 3 and the log names the directory and the failed fetch."""
    env = {k: v for k, v in os.environ.items() if k != "VOIRDIRE_DATA"}
    env.update(
        VOIRDIRE_RELEASE_URL="http://127.0.0.1:9/", XDG_DATA_HOME=str(tmp_path / "xdg")
    )
    py = sys.executable
    ok = shipping.entrypoint("j.toml", None, str(data_dir)).replace(
        "python -m voirdire run j.toml --no-progress", 'echo "$VOIRDIRE_DATA"'
    )
    r = subprocess.run(
        ["/bin/sh", "-c", ok.replace("python ", f"{py} ")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and r.stdout.strip() == str(data_dir), r.stderr
    bad = shipping.entrypoint("j.toml", None, "/nowhere/data").replace(
        "python -m voirdire run j.toml --no-progress", "echo ran"
    )
    env["VOIRDIRE_DATA"] = str(
        tmp_path / "nodata"
    )  # nothing found on "the cluster" either
    r = subprocess.run(
        ["/bin/sh", "-c", bad.replace("python ", f"{py} ")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = " ".join(r.stderr.split())  # the terminal wraps long lines
    assert r.returncode == 3 and "ran" not in r.stdout
    assert (
        "the data directory handed over (/nowhere/data) is not a directory on this machine"
        in log
    )
    assert (
        "cannot download http://127.0.0.1:9/" in log
        and "voirdire data fetch" in log
        and "VOIRDIRE_DATA" in log
    )


def test_resolve_address(monkeypatch):
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)
    monkeypatch.setenv(
        "RAY_ADDRESS", "10.0.0.1:6379"
    )  # a GCS address is not the Jobs API
    assert sub.resolve_address(None) == "http://127.0.0.1:8265"
    monkeypatch.setenv("RAY_ADDRESS", "http://head:8265")
    assert sub.resolve_address(None) == "http://head:8265"
    monkeypatch.setenv("RAY_API_SERVER_ADDRESS", "https://jobs.example:443")
    assert sub.resolve_address(None) == "https://jobs.example:443"
    assert sub.resolve_address("http://x:1") == "http://x:1"


def test_placement_options_stay_out_of_identity():
    job = parse_job(_job())
    rj = ResolvedJudge(job.judges[0], job)
    assert rj.actor_options == {
        "resources": {"worker_node": 0.5},
        "scheduling_strategy": "SPREAD",
    }
    plain = parse_job(_job(judges=[{"name": "s", "backend": "simulated"}]))
    assert ResolvedJudge(plain.judges[0], plain).identity_hash == rj.identity_hash
    with pytest.raises(ConfigError, match="scheduling"):
        parse_job(
            _job(judges=[{"name": "s", "backend": "simulated", "scheduling": "PACK"}])
        )


def test_output_dir_uris():
    with pytest.raises(ConfigError, match="object-store URIs"):
        parse_job(_job(output_dir="s3://bucket/x"))
    assert parse_job(_job(output_dir="file:///shared/x")).output_dir == "/shared/x"


def test_submit_refuses_invalid_job_before_connecting(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'name = "x"\noutput_dir = "o"\n[benchmark]\nname = "mtbench"\n[[judges]]\nname = "j"\nbackend = "nope"\n'
    )
    with pytest.raises(ConfigError, match="unknown judge backend"):
        sub.submit(
            bad, "http://127.0.0.1:9"
        )  # nothing listens there: validation comes first
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "voirdire",
            "submit",
            str(bad),
            "--address",
            "http://127.0.0.1:9",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "unknown judge backend" in r.stderr


def test_submit_without_jobs_api(tmp_path):
    job = tmp_path / "ok.toml"
    job.write_text(
        'name = "x"\noutput_dir = "/tmp/o"\n[benchmark]\nname = "mtbench"\n[[judges]]\nname = "j"\nbackend = "simulated"\n'
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "voirdire",
            "submit",
            str(job),
            "--address",
            "http://127.0.0.1:9",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and "no Ray Jobs API at http://127.0.0.1:9" in r.stderr


def test_run_output_dir_override(tmp_path, data_dir):
    job = tmp_path / "j.toml"
    job.write_text(
        'name = "x"\noutput_dir = "/nonexistent/o"\n[benchmark]\nname = "mtbench"\nmax_instances = 1\n'
        '[comparison]\nmode = "listwise"\nlist_size = 3\npermutations = "latin"\n[[judges]]\nname = "j"\nbackend = "simulated"\n'
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "voirdire",
            "run",
            str(job),
            "--dry-run",
            "--output-dir",
            "s3://b/o",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "object-store URIs" in r.stderr
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "voirdire",
            "run",
            str(job),
            "--dry-run",
            "--output-dir",
            str(tmp_path / "o"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and "6 queries" in r.stdout, r.stderr


def test_own_pairs_ship_with_the_job_and_resolve_on_the_head_node(
    tmp_path, monkeypatch
):
    """A user's pairs and template, named by relative paths (one climbing out of the working
    directory), and a labels file are staged so that the same paths resolve from where the
    entrypoint runs; no release is fetched for them; a missing file fails before connecting."""
    client_dir, shared = tmp_path / "client", tmp_path / "shared"
    (client_dir / "tpl").mkdir(parents=True)
    shared.mkdir()
    (shared / "pairs.jsonl").write_bytes(
        (ROOT / "examples" / "own_pairs.jsonl").read_bytes()
    )
    (client_dir / "tpl" / "p.jinja").write_bytes(
        (ROOT / "examples" / "own_pairs_prompt.jinja").read_bytes()
    )
    (client_dir / "labels.csv").write_text("instance_id,better\n")
    spec = (ROOT / "examples" / "own_pairs.toml").read_text()
    spec = (
        spec.replace('"examples/own_pairs.jsonl"', '"../shared/pairs.jsonl"')
        .replace('"examples/own_pairs_prompt.jinja"', '"tpl/p.jinja"')
        .replace('output_dir = "runs/own-pairs"', f'output_dir = "{tmp_path / "o"}"')
    )
    spec = spec.replace('label = "OwnPairs"', 'label = "OwnPairs"').replace(
        '[benchmark]\nname = "pairs"',
        '[benchmark]\nname = "pairs"\nquality = "labels:labels.csv"',
    )
    job_file = client_dir / "job.toml"
    job_file.write_text(spec)
    monkeypatch.chdir(client_dir)
    job = sub.validate_for_submission(job_file)
    pkg, work, entry = shipping.prepare(job, job_file, tmp_path / "stage")
    assert (
        entry == "cd _ || exit 2; python -m voirdire run ../job/job.toml --no-progress"
    )  # no data step
    assert (work / "shared" / "pairs.jsonl").is_file() and (
        work / "_" / "tpl" / "p.jinja"
    ).is_file()
    assert (work / "_" / "labels.csv").is_file()
    # the entrypoint's directory and paths, as on the head node: the job plans from the copies alone
    check = (
        'python -c "from voirdire.engine.plan import plan_job; from voirdire.engine.spec import load_job; '
        "print(plan_job(load_job('../job/job.toml')).instances.height)\""
    )
    cmd = entry.replace(
        "python -m voirdire run ../job/job.toml --no-progress", check
    ).replace("python ", f"{sys.executable} ")
    env = {**os.environ, "PYTHONPATH": str(pkg.parent)}
    r = subprocess.run(
        ["/bin/sh", "-c", cmd],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and r.stdout.split()[-1] == "12", r.stderr[-2000:]
    (shared / "pairs.jsonl").unlink()
    with pytest.raises(
        ConfigError,
        match="the job reads '../shared/pairs.jsonl', which does not exist here",
    ):
        sub.submit(
            job_file, "http://127.0.0.1:9"
        )  # nothing listens there: the check comes first


def test_llmbar_job_gets_llmbar_data(tmp_path, monkeypatch):
    """An LLMBar job is handed LLMBar's data directory (not the first release's) and its
    entrypoint finds or fetches LLMBar, exported as VOIRDIRE_LLMBAR_DATA."""
    from voirdire.benchmarks.releases.steps import MARKER

    data = tmp_path / "llmbar"
    data.mkdir()
    (data / MARKER).write_text('{"release": "llmbar"}')
    monkeypatch.setenv("VOIRDIRE_LLMBAR_DATA", str(data))
    job = parse_job(_job(benchmark={"name": "llmbar"}))
    assert shipping.data_location(job) == str(data.resolve())
    assert (
        shipping.data_location(job, {"VOIRDIRE_LLMBAR_DATA": "/cluster/llmbar"}) is None
    )
    entry = shipping.entrypoint("j.toml", None, str(data), release="llmbar")
    assert (
        "python -m voirdire data fetch llmbar --if-missing --no-progress --try" in entry
    )
    monkeypatch.delenv("VOIRDIRE_LLMBAR_DATA")
    ok = entry.replace(
        "python -m voirdire run j.toml --no-progress", 'echo "$VOIRDIRE_LLMBAR_DATA"'
    )
    r = subprocess.run(
        ["/bin/sh", "-c", ok.replace("python ", f"{sys.executable} ")],
        cwd=tmp_path,
        env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and r.stdout.strip() == str(data.resolve()), r.stderr


@pytest.mark.parametrize(
    "example", sorted(p.name for p in (ROOT / "examples").glob("*.toml"))
)
def test_every_example_passes_the_submit_check(example):
    """Issue 26: the check before sending validates what the cluster will run; an entry
    standing for several judges (replay's ``name = "*"``) is named there, from its data."""
    job = sub.validate_for_submission(ROOT / "examples" / example)
    assert job.judges


def test_submit_check_still_refuses_a_nameless_judge(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'name = "x"\noutput_dir = "/tmp/o"\n[benchmark]\nname = "mtbench"\n'
        '[[judges]]\nname = "*"\nbackend = "simulated"\n'
    )
    with pytest.raises(ConfigError, match="no letter or digit"):
        sub.validate_for_submission(bad)
    # a replay entry standing for several judges still has its settings checked
    bad.write_text(
        'name = "x"\noutput_dir = "/tmp/o"\n[benchmark]\nname = "mtbench"\n'
        '[[judges]]\nname = "*"\nbackend = "replay"\nrecorded = "*"\nnope = 1\n'
    )
    with pytest.raises(ConfigError, match="nope"):
        sub.validate_for_submission(bad)
