"""``voirdire.api.serving``: the gated judge behind an OpenAI-compatible endpoint, started from a
job file's judges (``docs/serve.md``).

    server = voirdire.serve("job.toml", port=8000, out="runs/served")
    # point a harness at server.base_url ("http://127.0.0.1:8000/v1")
    server.stop()
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Server", "serve"]


@dataclass
class Server:
    """A running ``voirdire serve``.

    Attributes:
        base_url: the OpenAI base URL (``http://127.0.0.1:<port>/v1``).
        judges: the served judges' names (the ``model`` a request names).
        out: the record's directory (``None``: nothing recorded).
    """

    base_url: str
    judges: list[str]
    out: str | None
    _actors: dict[str, Any] = field(default_factory=dict, repr=False)

    def stop(self) -> None:
        """Stop Ray Serve and the judges' actors (Ray itself keeps running)."""
        from voirdire.engine.serve.server import stop

        stop(self._actors)
        self._actors = {}


def serve(
    job: str | os.PathLike | Mapping[str, Any] | Any,
    *,
    judges: list[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    out: str | os.PathLike | None = None,
    strategy: str = "tie",
    address: str | None = None,
) -> Server:
    """Serve the job's judges (``judges``: those named only) on ``host:port`` with Ray
    Serve, every exchange recorded under ``out``; returns once it answers.

    The job's other sections (benchmark, comparison, output directory) are not read; its
    judges are bound and checked as ``voirdire run`` binds them, before Ray starts.

    Raises:
        ConfigError: an unreadable job, a judge it lacks or cannot serve (a replay), a
            missing API key, a non-loopback host, an unknown strategy.
    """
    from voirdire.api.jobs import load_job_spec
    from voirdire.engine.ray_start import init_ray
    from voirdire.engine.serve.exchange import served_judges
    from voirdire.engine.serve.server import check_host, check_strategy, start

    check_host(host)
    check_strategy(strategy)
    spec = load_job_spec(job)
    out_dir = None if out is None else os.fspath(out)
    hosts = served_judges(spec, judges, out_dir)
    init_ray(address)
    actors = start(hosts, host=host, port=port, out=out_dir, strategy=strategy)
    shown = "127.0.0.1" if host == "localhost" else host
    shown = f"[{shown}]" if ":" in shown else shown
    return Server(f"http://{shown}:{port}/v1", [h.name for h in hosts], out_dir, actors)
