"""Starting a local Ray node on a loaded machine, in the background, and stopping it."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest
import ray

from tests.processes import marked_env, no_process_marked
from voirdire.engine import job, ray_start

#: every test here starts a Python process or Ray in a way that is its point
pytestmark = [pytest.mark.process, pytest.mark.ray]


def test_a_local_node_that_misses_rays_start_up_wait_is_started_again(monkeypatch):
    """Ray waits a fixed 30 s for a local raylet and raises a bare Exception when a busy
    machine misses it; the engine starts the node again (up to RAY_START_ATTEMPTS) rather
    than losing the run. Other errors, and a cluster address, are raised at once."""
    calls: list[str | None] = []

    def init(address=None, **kw):
        calls.append(address)
        if len(calls) < ray_start.RAY_START_ATTEMPTS:
            raise Exception(
                "The current node timed out during startup. This could happen"
            )

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    monkeypatch.setattr(ray_start, "check_address", lambda address: None)  # no cluster
    ray_start.init_ray()
    assert calls == [None] * ray_start.RAY_START_ATTEMPTS

    calls.clear()
    with pytest.raises(Exception, match="timed out"):
        ray_start.init_ray("ray://10.0.0.1:10001")
    assert len(calls) == 1

    def broken(address=None, **kw):
        calls.append(address)
        raise RuntimeError("no such thing")

    calls.clear()
    monkeypatch.setattr(ray, "init", broken)
    with pytest.raises(RuntimeError):
        ray_start.init_ray()
    assert len(calls) == 1


def test_a_background_start_returns_at_once_and_the_next_call_waits_for_it(
    monkeypatch,
):
    """``background=True`` returns before Ray is up; the next ``init_ray`` waits for the
    start and raises what it raised; the start runs on another thread, which keeps the
    caller's SIGTERM handler."""
    gate, seen = threading.Event(), []

    def init(address=None, **kw):
        seen.append(threading.current_thread().name)
        assert gate.wait(30)
        raise RuntimeError("no such cluster")

    def mine(signum, frame):  # the CLI's: stop as on Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    before = signal.signal(signal.SIGTERM, mine)
    ray_start.init_ray(background=True)
    assert ray_start.ray_starting()
    ray_start.init_ray(background=True)  # a start under way: not begun twice
    gate.set()
    with pytest.raises(RuntimeError, match="no such cluster"):
        ray_start.init_ray()
    assert seen == ["voirdire-ray-start"] and not ray_start.ray_starting()
    assert signal.getsignal(signal.SIGTERM) is mine

    # with no handler of the caller's, Ray's own is set (exit, running finally blocks)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        ray_start.init_ray(background=True)
        with pytest.raises(RuntimeError):
            ray_start.init_ray()
        with pytest.raises(SystemExit):
            signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
    finally:
        signal.signal(signal.SIGTERM, before)


def test_prefetching_keeps_every_batch_in_order(monkeypatch):
    """The batches built while Ray starts come first, then the rest of the lazy stream:
    the same batches in the same order whatever Ray's start-up takes."""
    from voirdire.engine.pools import JudgeRun

    for ticks in (0, 2, 10):
        left = [ticks]

        def starting(left=left):
            left[0] -= 1
            return left[0] >= 0

        monkeypatch.setattr(job, "ray_starting", starting)
        stream = iter(range(5))
        run = JudgeRun("j", object, "b", {}, None, 1, 1, stream, 5)  # type: ignore[arg-type]
        got = job._prefetched(run)
        assert list(got.batches) == [0, 1, 2, 3, 4]
        assert left[0] <= 0 or ticks > 5  # prefetched until Ray was up (or all built)


def test_a_run_that_releases_ray_stops_it_and_the_next_run_starts_it_again(
    data_dir, tmp_path, monkeypatch
):
    """``release_ray`` (the console script's last job) stops the local node while the
    directory is analysed, its autoscaler monitor ended first (Ray would wait 1 s for
    it): afterwards no Ray session is left in the process, the results are whole, and a
    later run starts Ray again and gets the same verdicts."""
    import tomllib
    from pathlib import Path

    from ray._private.node import Node

    import voirdire

    if ray.is_initialized():
        ray.shutdown()
    ended: list[bool] = []
    real_kill = Node.kill_monitor

    def kill_monitor(self, check_alive=True):
        ended.append(self.is_head())
        return real_kill(self, check_alive=check_alive)

    monkeypatch.setattr(Node, "kill_monitor", kill_monitor)
    job = tomllib.loads(
        (Path(__file__).parents[1] / "examples/mtbench_position_bias.toml").read_text()
    )
    job["benchmark"]["max_instances"] = 4
    # a simulated judge: recorded verdicts alone are joined without Ray (engine/recorded.py)
    job["judges"] = [{"name": "sim", "backend": "simulated", "primacy": 0.6, "seed": 1}]
    first = voirdire.run({**job, "output_dir": str(tmp_path / "a")}, release_ray=True)
    ray_start._wait_for_stop()
    assert not ray.is_initialized()
    assert ended == [True]
    second = voirdire.run({**job, "output_dir": str(tmp_path / "b")})
    assert ray.is_initialized()
    ray.shutdown()
    cols = ["judge", "question_id", "candidate", "permutation", "choice"]
    assert first.judgments.height == second.judgments.height > 0
    assert (
        first.judgments.select(cols)
        .sort(cols)
        .equals(second.judgments.select(cols).sort(cols))
    )


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="/proc")
def test_the_command_starts_ray_early_and_a_bad_job_leaves_no_ray_process(tmp_path):
    """The console script begins Ray's start, for a job that needs it (a live judge),
    before planning it; a job that fails validation still ends in one line (exit 2, nothing written) and leaves no Ray
    process behind, whether Ray had come up or not. Before Ray is up the process ends
    without finalising its interpreter under ``ray.init`` (no ``atexit`` hook runs: a
    finalisation there ended in SIGSEGV on a CI machine); once Ray is up it exits as usual."""
    import subprocess
    import sys

    bad = tmp_path / "bad.toml"  # a live judge (Ray needed) on data that is not there
    bad.write_text(BAD_LIVE_JOB)
    mark, env = marked_env()
    for up in (False, True):  # exit at once; exit once Ray is up (the job read slowly)
        hooked = tmp_path / f"atexit-{up}"
        code = (
            f"import atexit, pathlib; atexit.register(pathlib.Path({str(hooked)!r}).touch)\n"
            "import time, voirdire.cli.jobs as j\n"
            "from voirdire.engine.ray_start import ray_starting\n"
            "start = j._start_ray_early\n"
            "def early(a):\n"
            "    start(a)\n"
            f"    while {up} and ray_starting(): time.sleep(0.05)\n"
            "j._start_ray_early = early\n"
            "from voirdire.cli import main\nmain()\n"
        )
        r = subprocess.run(
            [sys.executable, "-c", code, "run", str(bad)],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith("error: ") and "does not exist" in r.stderr
        assert not (tmp_path / "job-out").exists()
        assert hooked.exists() == up
        assert no_process_marked(mark)


def test_what_ray_init_imports_is_imported_before_the_start_thread():
    """Every name of ``RAY_INIT_IMPORTS`` exists in this Ray, and once they are imported a
    local ``ray.init`` imports next to nothing more (without them: some 275 modules, in
    the start thread, sharing the interpreter lock with the run's own work)."""
    import subprocess
    import sys

    code = (
        "import importlib, sys, ray\n"
        "from voirdire.engine.ray_start import RAY_INIT_IMPORTS\n"
        "for n in RAY_INIT_IMPORTS: importlib.import_module(n)\n"
        "before = set(sys.modules)\n"
        "ray.init(include_dashboard=False, logging_level='ERROR', num_cpus=1)\n"
        "print(len(set(sys.modules) - before))\n"
        "ray.shutdown()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.split()[-1]) < 25, out.stdout


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="/proc")
def test_an_interpreter_that_exits_during_a_background_start_waits_for_it(tmp_path):
    """A program that begins Ray's start in the background (``voirdire.audit`` does, before
    reading its logs) and exits at once is not finalised under ``ray.init``: the exit waits
    for the start (``atexit``), Ray's own shutdown then stops the node, and no Ray process
    is left. Before, the exit came while the start was under way."""
    import subprocess
    import sys

    mark, env = marked_env()
    code = (
        "import atexit, ray\n"
        "from voirdire.engine.ray_start import init_ray, ray_starting\n"
        "atexit.register(lambda: print('at exit, starting:', ray_starting(),"
        " 'up:', ray.is_initialized(), flush=True))\n"
        "init_ray(background=True)\n"
        "print('starting:', ray_starting(), flush=True)\n"
        "raise SystemExit(3)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True,
        text=True, timeout=180,
    )  # fmt: skip
    assert r.returncode == 3, r.stderr[-2000:]
    assert r.stdout.split("\n")[:2] == [
        "starting: True",
        "at exit, starting: False up: True",
    ], r.stdout
    assert no_process_marked(mark)


def _table_log(path: Path) -> tuple[Path, list[str]]:
    """A small ``logtable`` CSV (two judges, both orders) and the ``--option`` arguments
    that read it."""
    rows = ["instance,model_a,model_b,first,verdict,judge"]
    rows += [
        f"q{q},a,b,{first},{'AB'[(q + len(first) + j) % 2]},judge{j}"
        for q in range(8) for first in ("a", "b") for j in range(2)
    ]  # fmt: skip
    path.write_text("\n".join(rows) + "\n")
    opts = []
    for c in ("instance", "model_a", "model_b", "first", "verdict", "judge"):
        opts += ["--option", f"columns.{c}={c}"]
    return path, opts


#: a job file that loads, asks a live judge (so the command starts Ray early) and is
#: refused while it is planned: its data directory does not exist
BAD_LIVE_JOB = (
    'name = "x"\noutput_dir = "job-out"\n[benchmark]\nname = "mtbench"\n'
    'data_dir = "/nonexistent-voirdire-data"\n[[judges]]\nname = "s"\nbackend = "simulated"\n'
)

#: where a stage of ``voirdire audit`` is held (the subprocess's code): ``pause()`` touches
#: the ready file and sleeps, so that SIGTERM lands there
_PAUSE = {
    "reading": "from voirdire.benchmarks.logs.table import LogTable as C\n"
    "f = C.read.__func__\n"
    "C.read = classmethod(lambda cls, *a: (pause(), f(cls, *a))[1])\n",
    "ray-starting": "import voirdire.cli.jobs as j\n"
    "start = j._start_ray_early\n"
    "j._start_ray_early = lambda a: (start(a), pause())\n",
    "scheduler": "from voirdire.engine.scheduler import Scheduler as C\n"
    "f = C._loop\n"
    "C._loop = lambda self, *a, **k: (pause(), f(self, *a, **k))[1]\n",
    "analysis": "import voirdire.api.jobs as j\n"
    "f = j.analyze\n"
    "j.analyze = lambda *a, **k: (pause(), f(*a, **k))[1]\n",
}


@pytest.mark.slow
@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="/proc")
@pytest.mark.parametrize("stage", list(_PAUSE))
def test_sigterm_ends_audit_as_it_ends_run(tmp_path, stage, data_dir):
    """SIGTERM (a stopped Ray job, a killed terminal) ends ``voirdire audit`` as it ends
    ``voirdire run``, wherever it lands: reading the logs, while Ray starts in the
    background, in the scheduler, in the analysis: one line (``error: interrupted: ...``),
    exit 130, no traceback or abort, and no Ray process left (the stages of Ray, which an
    audit without ``--address`` does not start, are held in ``voirdire run`` of a live
    judge). Before, audit set no
    handler: Ray's own (exit) or the default ended it with -6 and a stack dump, or -15
    silently."""
    import signal
    import subprocess
    import sys
    import time

    log, opts = _table_log(tmp_path / "log.csv")
    live = stage in (
        "ray-starting",
        "scheduler",
    )  # an audit starts no Ray: a live job does
    ready = tmp_path / "ready"
    code = (
        "import pathlib, time\n"
        f"def pause():\n    pathlib.Path({str(ready)!r}).touch()\n    time.sleep(600)\n"
        + _PAUSE[stage]
        + "from voirdire.cli import main\nmain()\n"
    )
    mark, env = marked_env()
    env["VOIRDIRE_LOG_CACHE"] = str(tmp_path / "cache")
    args = ["audit", str(log), "--format", "logtable", *opts, "--out", str(tmp_path / "o")]  # fmt: skip
    if live:
        job = tmp_path / "live.toml"
        job.write_text(
            f'name = "live"\noutput_dir = {str(tmp_path / "o")!r}\n'
            f'[benchmark]\nname = "mtbench"\ndata_dir = {str(data_dir)!r}\nmax_instances = 4\n'
            '[[judges]]\nname = "s"\nbackend = "simulated"\nseed = 1\n'
        )
        args = ["run", str(job), "--no-progress"]
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args], env=env, cwd=tmp_path, stdout=out, stderr=err
        )  # fmt: skip
        try:
            deadline = time.time() + 300
            while not ready.exists() and proc.poll() is None and time.time() < deadline:
                time.sleep(0.1)
            assert ready.exists(), (tmp_path / "err").read_text()[-2000:]
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    stderr = (tmp_path / "err").read_text()
    assert rc == 130, (rc, stderr[-3000:])
    assert "Traceback" not in stderr and "SIGABRT" not in stderr, stderr[-3000:]
    lines = [x for x in stderr.splitlines() if x.strip()]
    assert lines[-1].startswith("error: interrupted:"), stderr[-3000:]
    assert "run the same" in lines[-1] and "to resume" in lines[-1]
    assert no_process_marked(mark)


@pytest.mark.slow
@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="/proc")
def test_a_refusal_under_load_leaves_no_ray_process(tmp_path):
    """A job refused (exit 2) while Ray starts, on a loaded CPU (busy loops
    pinned to the command's CPU), once the raylet has started its dashboard and
    runtime-environment agents: when the command has exited, none of its Ray processes is
    left. Before, the agents (still starting, their parent gone) ran on with parent PID 1
    for tens of seconds (39.6 s here, 11 to 75 s in the issue)."""
    import subprocess
    import sys

    from tests.processes import busy_cpu, end_marked, processes_marked

    bad = tmp_path / "bad.toml"  # refused while planned, once Ray's start has begun
    bad.write_text(BAD_LIVE_JOB)
    mark, env = marked_env()
    with busy_cpu(3) as cpu:
        code = (
            f"import os, time\nos.sched_setaffinity(0, {{{cpu}}})\n"
            "from tests.processes import agents_started as agents\n"
            "import voirdire.cli.jobs as j\n"
            "start = j._start_ray_early\n"
            "def early(a):\n"
            "    start(a)\n"
            "    t = time.time()\n"
            "    while agents() < 2 and time.time() - t < 240: time.sleep(0.02)\n"
            "    print('agents:', agents(), flush=True)\n"
            "j._start_ray_early = early\n"
            "from voirdire.cli import main\nmain()\n"
        )
        with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
            rc = subprocess.run(
                [sys.executable, "-c", code, "run", str(bad)],
                env=env, cwd=tmp_path, stdout=out, stderr=err, timeout=600,
            ).returncode  # fmt: skip
        try:
            stderr = (tmp_path / "err").read_text()
            assert rc == 2 and "does not exist" in stderr, stderr[-2000:]
            agents = (tmp_path / "out").read_text()
            assert agents.startswith("agents: ") and int(agents.split()[1]) >= 1, agents
            # a killed process may take a moment to go; one left by its parent stays
            assert no_process_marked(mark, wait_s=5), processes_marked(mark)
        finally:
            end_marked(mark)


def test_a_stopped_ray_leaves_the_excepthook_it_wrapped():
    """Ray wraps ``sys.excepthook`` when imported, to record a driver's uncaught exception
    through its core worker; once Ray is stopped that worker is gone and Ray's C++ side
    ended the process before the traceback was printed (an error after the console script
    released Ray: exit 1, no line but Ray's). ``stop_ray`` puts back the hook Ray wrapped."""
    import sys

    from ray._private import worker

    if ray.is_initialized():
        ray.shutdown()
    before = sys.excepthook
    sys.excepthook = worker.custom_excepthook  # as in a process that imported Ray
    try:
        ray_start.init_ray()
        ray_start.stop_ray()
        assert sys.excepthook is worker.normal_excepthook
    finally:
        sys.excepthook = before
        if ray.is_initialized():
            ray.shutdown()
