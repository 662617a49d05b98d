"""Shared pytest fixtures."""

from __future__ import annotations

import pathlib

import pytest


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
    """The "Judging the Judges" data directory (``resolve_data_dir()``); skips the test if none.

    Only a :class:`~voirdire.judges.base.ConfigError` from the resolver (no directory
    configured or found) skips; any other error fails the test.
    """
    from voirdire.benchmarks.data import resolve_data_dir
    from voirdire.judges.base import ConfigError

    try:
        return resolve_data_dir()
    except ConfigError as exc:
        pytest.skip(f"benchmark data not available: {exc}")
