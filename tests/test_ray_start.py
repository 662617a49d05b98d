"""Starting a local Ray node on a loaded machine."""

from __future__ import annotations

import pytest
import ray

from voirdire.engine import job


def test_a_local_node_that_misses_rays_start_up_wait_is_started_again(monkeypatch):
    """Ray waits a fixed 30 s for a local raylet and raises a bare Exception when a busy
    machine misses it; the engine starts the node again (up to RAY_START_ATTEMPTS) rather
    than losing the run. Other errors, and a cluster address, are raised at once."""
    calls: list[str | None] = []

    def init(address=None, **kw):
        calls.append(address)
        if len(calls) < job.RAY_START_ATTEMPTS:
            raise Exception(
                "The current node timed out during startup. This could happen"
            )

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    job.init_ray()
    assert calls == [None] * job.RAY_START_ATTEMPTS

    calls.clear()
    with pytest.raises(Exception, match="timed out"):
        job.init_ray("ray://10.0.0.1:10001")
    assert len(calls) == 1

    def broken(address=None, **kw):
        calls.append(address)
        raise RuntimeError("no such thing")

    calls.clear()
    monkeypatch.setattr(ray, "init", broken)
    with pytest.raises(RuntimeError):
        job.init_ray()
    assert len(calls) == 1
