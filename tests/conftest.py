"""Shared pytest fixtures."""

from __future__ import annotations

import os
import pathlib

import pytest

# Ray reads its authentication mode once per process, when it is imported, and every
# process of a cluster must agree. The tests start several clusters on 127.0.0.1 (local
# ones, a two-node one, CLI subprocesses), so the whole session runs without token
# authentication, set before anything imports Ray; subprocesses inherit it.
os.environ.setdefault("RAY_AUTH_MODE", "disabled")


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
    """The "Judging the Judges" data directory (``resolve_data_dir()``); skips the test if none.

    Only a :class:`~voirdire.judges.base.ConfigError` from the resolver (no directory
    configured or found) skips; any other error fails the test.
    """
    from voirdire.benchmarks.data import resolve_data_dir

    from voirdire.core import ConfigError

    try:
        return resolve_data_dir()
    except ConfigError as exc:
        if os.environ.get("CI") == "true":  # CI has shared/ beside the clone: never skip there
            raise
        pytest.skip(f"benchmark data not available: {exc}")


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray cluster (2 CPUs, no dashboard) for one test module, shut down after it.

    Any cluster left from an earlier module is shut down first, so every module starts from
    a known state (modules with clusters of their own do the same).
    """
    import ray

    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", configure_logging=True)
    yield ray
    ray.shutdown()
