"""A real two-node Ray cluster on one machine: job submission through the Jobs API, and a
job that survives losing a node.

The head (custom resource ``head_node``, dashboard and Jobs API on) and a worker node
(``worker_node``) are started with ``ray start --block`` as subprocesses in their own
process groups and temp dirs, on free ports, so the test never touches another Ray on the
machine (no ``ray stop``: it is global). Token authentication is off
(``RAY_AUTH_MODE=disabled`` for every process): Ray turns it on by default when
``~/.ray/auth_token`` exists, but reads the mode once per process, at import, so a test
process that imported Ray before the cluster existed could not join it with a token.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import tomli_w

import voirdire
from tests.pandalm_synthetic import synthetic_data_dir

ROOT = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).parent / "ray")

pytestmark = [pytest.mark.ray, pytest.mark.cluster, pytest.mark.timeout(600)]

#: faster detection of a dead node than Ray's defaults (which allow ~a minute)
FAST_FAILURE = {
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
    "RAY_timeout_ms_task_wait_for_death_info": "2000",
}


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class Node:
    """One ``ray start --block`` process group."""

    def __init__(
        self, args: list[str], temp_dir: Path, env: dict[str, str], log: Path
    ) -> None:
        self.temp_dir = temp_dir
        self.log = log
        self._fh = open(log, "wb")
        self.proc = subprocess.Popen(
            [RAY, "start", "--block", f"--temp-dir={temp_dir}", "--disable-usage-stats", *args],
            env=env, stdout=self._fh, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def pids(self) -> set[int]:
        """Every process of this node: its session (``ray start`` leads one; Ray's worker
        processes put themselves in process groups of their own but stay in it), and any
        process whose command line names this node's temp dir (in case one left it)."""
        out = set()
        marker = str(self.temp_dir)
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                if os.getsid(int(d.name)) == self.proc.pid or marker in (
                    d / "cmdline"
                ).read_bytes().decode(errors="replace"):
                    out.add(int(d.name))
            except (ProcessLookupError, PermissionError, FileNotFoundError, OSError):
                continue
        out.discard(os.getpid())
        return out

    def kill(self, sig: int = signal.SIGKILL) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.kill(signal.SIGTERM)
        deadline = time.monotonic() + 5
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.3)
        self.kill(signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self._fh.close()

    def tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return ""


def _wait(cond, timeout: float, what: str, nodes=()) -> None:
    deadline = time.monotonic() + timeout
    errors: dict[str, int] = {}  # every distinct error seen, with its count
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except _Premise:
            raise
        except Exception as exc:  # noqa: BLE001 - not up yet
            errors[repr(exc)[:300]] = errors.get(repr(exc)[:300], 0) + 1
        time.sleep(0.5)
    logs = "\n".join(n.tail() for n in nodes)
    seen = "; ".join(f"{n}x {e}" for e, n in errors.items()) or "none"
    raise AssertionError(
        f"timed out after {timeout:.0f} s waiting for {what} (errors seen: {seen})\n{logs}"
    )


class _Premise(AssertionError):
    """The situation a test waits for can no longer happen (e.g. the job already ended)."""


@pytest.fixture(scope="module")
def cluster(data_dir):
    """A head and a worker node on 127.0.0.1; yields a dict with ``gcs`` (address),
    ``jobs`` (Jobs API URL), ``head`` / ``worker`` (:class:`Node`) and ``env``."""
    import ray

    base = Path(
        tempfile.mkdtemp(prefix="vd-", dir="/tmp")
    )  # short: Ray's socket paths must fit
    gcs, dash, client_port, *agent = _free_ports(11)
    saved = {
        k: os.environ.get(k)
        for k in ["RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED", *FAST_FAILURE]
    }
    extra = {
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
        **FAST_FAILURE,
    }
    env = {
        **os.environ,
        **extra,
        "PYTHONPATH": str(ROOT),
        "VOIRDIRE_DATA": str(data_dir),
    }
    # the nodes' `python` (the Jobs entrypoint's) is this interpreter, as on a real cluster image
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("RAY_ADDRESS", None)
    head = Node(
        [
            "--head", "--node-ip-address=127.0.0.1", f"--port={gcs}", "--num-cpus=1",
            '--resources={"head_node": 1}', "--include-dashboard=true", "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dash}", f"--ray-client-server-port={client_port}",
            f"--dashboard-agent-listen-port={agent[0]}", f"--dashboard-agent-grpc-port={agent[1]}",
            f"--metrics-export-port={agent[2]}", f"--runtime-env-agent-port={agent[3]}",
        ],
        base / "h", env, base / "head.log",
    )  # fmt: skip
    worker = None
    os.environ.update(extra)
    try:
        from ray.job_submission import JobSubmissionClient

        jobs = f"http://127.0.0.1:{dash}"
        _wait(
            lambda: JobSubmissionClient(jobs).list_jobs() is not None,
            120,
            "the head's Jobs API",
            [head],
        )
        worker = Node(
            [
                f"--address=127.0.0.1:{gcs}", "--node-ip-address=127.0.0.1", "--num-cpus=1",
                '--resources={"worker_node": 1}', f"--dashboard-agent-listen-port={agent[4]}",
                f"--dashboard-agent-grpc-port={agent[5]}", f"--metrics-export-port={agent[6]}",
                f"--runtime-env-agent-port={agent[7]}",
            ],
            base / "w", env, base / "worker.log",
        )  # fmt: skip
        if ray.is_initialized():
            ray.shutdown()  # the test run's shared local cluster: this driver joins the two nodes
        ray.init(
            address=f"127.0.0.1:{gcs}", configure_logging=False, log_to_driver=False
        )
        _wait(
            lambda: sum(n["Alive"] for n in ray.nodes()) == 2,
            120,
            "the worker node to join",
            [head, worker],
        )
        yield {
            "gcs": f"127.0.0.1:{gcs}",
            "jobs": jobs,
            "head": head,
            "worker": worker,
            "env": env,
            "base": base,
        }
    finally:
        ray.shutdown()
        for node in (worker, head):
            if node is not None:
                node.terminate()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(base, ignore_errors=True)


def _job(out: Path, name: str, **judge) -> dict:
    """A small list-wise MT-Bench job with two simulated judges of two workers each."""
    judges = [
        {
            "name": "primacy",
            "backend": "simulated",
            "primacy": 0.8,
            "workers": 2,
            "concurrency": 1,
            **judge,
        },
        {
            "name": "fair",
            "backend": "simulated",
            "primacy": 1 / 3,
            "workers": 2,
            "concurrency": 1,
            **judge,
        },
    ]
    return {
        "name": name,
        "output_dir": str(out),
        "benchmark": {
            "name": "mtbench",
            "candidates": ["gpt-4", "claude-v1", "llama-13b"],
            "max_instances": 40,
        },
        "comparison": {"mode": "listwise", "list_size": 3, "permutations": "cyclic"},
        "run": {"batch_size": 6, "flush_seconds": 0.2, "max_attempts": 5},
        "judges": judges,
    }


def _write_toml(path: Path, job: dict) -> Path:
    path.write_text(tomli_w.dumps(job))
    return path


def _cli(
    *args: str, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "voirdire", *args],
        env=env,
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_submit_status_stop(cluster, tmp_path):
    """``voirdire submit`` runs a job on the cluster through the Jobs API, streams its log
    and exits 0; results land in the (shared) output directory; ``status`` and ``stop``
    manage jobs."""
    out = tmp_path / "submitted"
    job = _write_toml(tmp_path / "lw.toml", _job(out, "submit-test"))
    env = {**cluster["env"], "COLUMNS": "200"}
    # as the README writes it: the client hands its data location to the job
    r = _cli(
        "submit", str(job), "--address", cluster["jobs"], "--id", "vd-submit-1", env=env
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "submitted vd-submit-1" in r.stdout and "SUCCEEDED" in r.stdout
    assert "240 queries" in r.stdout  # the driver's log, streamed back
    jm = pl.read_csv(out / "metrics" / "judge_metrics.csv")
    assert sorted(jm["judge"].to_list()) == ["fair", "primacy"]
    assert (out / "metrics" / "slot_shares.csv").is_file() and (
        out / "report.md"
    ).is_file()
    st = _cli("status", "vd-submit-1", "--address", cluster["jobs"], env=env)
    assert st.returncode == 0 and "SUCCEEDED" in st.stdout, st.stdout + st.stderr

    # a slow job, submitted without waiting, then stopped
    slow = _write_toml(
        tmp_path / "slow.toml", _job(tmp_path / "slow-out", "slow", latency_s=5.0)
    )
    r = _cli(
        "submit",
        str(slow),
        "--address",
        cluster["jobs"],
        "--id",
        "vd-slow-1",
        "--no-wait",
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    from voirdire.engine import submit as sub

    _wait(
        lambda: sub.status("vd-slow-1", cluster["jobs"])[0]["status"] == "RUNNING",
        120,
        "the slow job to run",
    )
    r = _cli("stop", "vd-slow-1", "--address", cluster["jobs"], env=env)
    assert r.returncode == 0 and "stop requested" in r.stdout, r.stdout + r.stderr
    assert sub.wait("vd-slow-1", cluster["jobs"], timeout_s=120) == "STOPPED"
    listed = _cli("status", "--address", cluster["jobs"], env=env)
    assert "vd-submit-1" in listed.stdout and "vd-slow-1" in listed.stdout
    bad = _cli(
        "submit", str(tmp_path / "missing.toml"), "--address", cluster["jobs"], env=env
    )
    assert bad.returncode == 2 and "not found" in bad.stderr


def _hosts_judge_actor(node: Node) -> bool:
    """Whether ``node`` runs a judge worker actor: one of its processes carries the title
    Ray gives an actor's worker process (``ray::JudgeWorker...``). Read from ``/proc``, so
    it costs nothing and needs no dashboard round trip (the state API can take seconds on
    a loaded two-core machine, longer than the job it is asked about)."""
    for pid in node.pids():
        try:
            if (
                Path(f"/proc/{pid}/cmdline")
                .read_bytes()
                .startswith(b"ray::JudgeWorker")
            ):
                return True
        except OSError:
            continue
    return False


def test_job_survives_losing_a_node(cluster, tmp_path):
    """Judge actors spread over both nodes; the worker node is killed mid-job; the job
    finishes on the head node with every unit recorded exactly once and no failure.

    Ray's ``SPREAD`` is best effort: when every actor of a run lands on the head node the
    job ends before the node can be killed (a premise, not the property tested), and the
    run is made once more in a fresh directory."""
    for attempt in (1, 2):
        try:
            out, outcome, expected = _lose_the_worker_node(
                cluster, tmp_path / f"survive-{attempt}"
            )
            break
        except _Premise as exc:
            if attempt == 2 or "finished before" not in str(exc):
                raise
    s = outcome.stats
    assert s.failures == 0
    assert s.queries == 240  # every unit recorded once: no batch recorded twice
    # the node took work in flight with it: sent again (actor restarting) or retried (actor dead)
    assert s.retried_batches + s.resent_batches >= 1
    raw = pl.read_parquet(sorted((out / "raw").rglob("part-*.parquet")))
    assert raw.height == 240 and raw["unit_id"].n_unique() == 240
    for judge, ids in expected.items():
        assert set(raw.filter(pl.col("judge") == judge)["unit_id"]) == ids
    assert raw["failure"].null_count() == 240


def _lose_the_worker_node(cluster, out: Path) -> tuple[Path, Any, dict]:
    """Run the job on both nodes, kill the worker node once both host judge actors and
    results are saved; returns the directory, the run's outcome and the unit ids expected
    per judge. Raises _Premise when the job ends (or fails) before that."""
    import ray

    from voirdire.engine.plan import plan_job
    from voirdire.engine.spec import parse_job
    from voirdire.engine.units import iter_unit_batches

    job = parse_job(
        _job(out, "survive", latency_s=8.0, scheduling="SPREAD"), "survive"
    )  # ~80 s of work: room for a slow worker node to start its actors
    worker_node = next(
        n["NodeID"]
        for n in ray.nodes()
        if n["Alive"] and "worker_node" in n["Resources"]
    )
    # warm the worker node's process pool first: on a loaded machine its first worker
    # process can take longer to start than the head's, and the head would do all the work
    ray.get(
        ray.remote(lambda: 1).options(resources={"worker_node": 0.01}).remote(),
        timeout=120,
    )
    plan = plan_job(job)
    expected = {
        rj.name: {
            u
            for b in iter_unit_batches(plan.bench, plan.instances, job.comparison, judge=rj.name, identity_hash=rj.identity_hash, needs_prompt=False, batch_size=100)
            for u in b.columns["unit_id"]
        }
        for rj in plan.judges
    }  # fmt: skip
    assert all(len(v) == 120 for v in expected.values())

    result: dict = {}

    def _run() -> None:
        try:
            result["outcome"] = voirdire.run(job, address=cluster["gcs"])
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            result["error"] = exc

    t = threading.Thread(target=_run, daemon=True)
    t.start()

    # both nodes host judge actors, and some results are already saved
    def _spread() -> bool:
        if "error" in result:
            raise _Premise(f"the job failed: {result['error']!r}")
        if "outcome" in result:
            raise _Premise("the job finished before its actors were seen on both nodes")
        return _hosts_judge_actor(cluster["worker"]) and _hosts_judge_actor(
            cluster["head"]
        )

    _wait(_spread, 120, "actors on both nodes", [cluster["head"], cluster["worker"]])
    _wait(lambda: any((out / "raw").rglob("part-*.parquet")), 120, "the first results")
    assert "outcome" not in result, "the job finished before the node could be killed"
    cluster["worker"].kill()
    _wait(
        lambda: not any(n["Alive"] for n in ray.nodes() if n["NodeID"] == worker_node),
        120,
        "the node's death to be noticed",
    )
    t.join(timeout=400)
    assert not t.is_alive(), "the job did not finish after losing a node"
    if "error" in result:
        raise result["error"]
    return out, result["outcome"], expected


#: backends that need no API key, GPU or vLLM: the examples that run anywhere
OFFLINE_BACKENDS = frozenset({"replay", "simulated", "template"})


def _offline_examples() -> list[Path]:
    """``examples/*.toml`` whose judges and rewriters all use :data:`OFFLINE_BACKENDS`."""
    out = []
    for path in sorted((ROOT / "examples").glob("*.toml")):
        job = tomllib.loads(path.read_text())
        tables = job.get("judges", []) + job.get("rewriters", [])
        if tables and {t["backend"] for t in tables} <= OFFLINE_BACKENDS:
            out.append(path)
    return out


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_every_offline_example_submits_and_succeeds(cluster, tmp_path):
    """Issue 26: ``voirdire submit`` accepts every offline example as shipped (the main one,
    ``mtbench_position_bias.toml``, stands for its judges with ``name = "*"``), and each
    job SUCCEEDS on the cluster. A copy of ``examples/`` with ``max_instances = 2`` added
    keeps the jobs small; relative paths (own pairs, templates) resolve as in the original."""
    from ray.job_submission import JobSubmissionClient

    examples = _offline_examples()
    names = [p.name for p in examples]
    assert "mtbench_position_bias.toml" in names and len(names) >= 8, names
    copy = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", copy)
    env = {**cluster["env"], "COLUMNS": "200"}
    # PandaLM's data is never committed: a synthetic release stands in (as in test_engine)
    pandalm = f"VOIRDIRE_PANDALM_DATA={synthetic_data_dir(tmp_path / 'pandalm')}"
    ids = {}
    for i, name in enumerate(names):
        path = copy / name
        job = tomllib.loads(path.read_text())
        job["benchmark"]["max_instances"] = 2
        path.write_text(tomli_w.dumps(job))
        out = tmp_path / "out" / path.stem
        jid = f"vd-example-{i}"
        r = _cli(
            "submit", str(path), "--address", cluster["jobs"], "--id", jid,
            "--output-dir", str(out), "--env", pandalm, "--no-wait", env=env,
        )  # fmt: skip
        assert r.returncode == 0, f"{name}: {r.stdout}{r.stderr}"
        assert f"submitted {jid}" in r.stdout, r.stdout
        ids[jid] = (name, out)
    jobs = JobSubmissionClient(cluster["jobs"])
    status = {}
    deadline = time.monotonic() + 1200
    while time.monotonic() < deadline:
        status = {jid: str(jobs.get_job_status(jid)).split(".")[-1] for jid in ids}
        if all(s in ("SUCCEEDED", "FAILED", "STOPPED") for s in status.values()):
            break
        time.sleep(2)
    failed = {
        ids[jid][0]: (s, jobs.get_job_logs(jid)[-1500:])
        for jid, s in status.items()
        if s != "SUCCEEDED"
    }
    assert not failed, failed
    for name, out in ids.values():
        assert (out / "job.json").is_file(), name
