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

__all__ = ["Server", "serve", "served_results"]


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


def served_results(
    out: str | os.PathLike, *, results: str | os.PathLike | None = None
) -> Any:
    """The record of a served directory (``serve(..., out=out)``) as a voirdire results
    directory: its gated exchanges written as a log table (``served-pairs.jsonl``:
    :mod:`voirdire.engine.serve.log_table`) and audited (:func:`voirdire.api.audit`,
    format ``logtable``) into ``results``, which ``report``, ``rank``, ``mitigate`` and
    ``people`` read. Default ``<out>/results-<12 hex>``, named by the table's content: the
    same record gives the same directory (read again, nothing written twice), a record
    that has grown a new one (a results directory holds one configuration). Returns the
    audit's :class:`~voirdire.analysis.outputs.Results` (its ``output_dir``).

    Raises:
        ConfigError: no gated exchange recorded in ``out``.
    """
    from voirdire.api.jobs import audit
    from voirdire.core import ConfigError, content_hash
    from voirdire.engine.serve.log_table import COLUMNS, write_log_table

    table, rows = write_log_table(out)
    if not rows:
        raise ConfigError(f"{os.fspath(out)}: no gated exchange recorded")
    if results is None:
        digest = content_hash(table.read_bytes().decode("utf-8"), size=6)
        results = os.path.join(out, f"results-{digest}")
    dest = os.fspath(results)
    return audit([table], "logtable", out=dest, log={"columns": dict(COLUMNS)})
