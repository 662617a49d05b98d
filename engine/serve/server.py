"""The server of ``voirdire serve`` on Ray Serve: one ingress deployment on 127.0.0.1. Each
judge is the engine's own :class:`~voirdire.engine.worker.JudgeWorker`: hosted in the
replica itself when it asks Ray for nothing special (:func:`in_replica`: the simulated
judge, API judges), else in an actor of its own with the options the engine's pools give it
(a vLLM judge's GPU), the replica holding its handle. The served judges are the project's
own, and Ray Serve's ``ray[llm]`` (another vLLM) is never needed.

Routes: ``POST /v1/chat/completions`` (:func:`voirdire.engine.serve.exchange.exchange`: both
orders asked at once), ``GET /v1/models`` (the
served judges) and ``GET /v1/voirdire/status`` (counts of exchanges by outcome); any other
path is a 404 and another method a 405, in OpenAI's error shape. A request body is read up
to :data:`~voirdire.engine.serve.openai_shapes.MAX_REQUEST_BYTES` only (a larger one, by its
``Content-Length`` or as it arrives, is a 413). Each exchange is recorded
(:class:`~voirdire.engine.serve.record.Recorder`) before its response leaves.
"""

from __future__ import annotations

import ipaddress
import logging
from collections import Counter
from typing import Any

from voirdire.core import ConfigError
from voirdire.engine.serve.exchange import JudgeHost, ServedJudge, exchange
from voirdire.engine.serve.openai_shapes import (
    MAX_REQUEST_BYTES,
    ServeError,
    models_body,
)

__all__ = [
    "APP_NAME",
    "ActorJudge",
    "GateIngress",
    "check_host",
    "check_strategy",
    "in_replica",
    "start",
    "stop",
]

#: the Serve application's name (``serve.status()`` shows it)
APP_NAME = "voirdire-gate"


class ActorJudge:
    """A judge's ``JudgeWorker`` actor, asked as the exchange asks a local one."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    async def judge(self, queries: list[Any]) -> dict[str, list[Any]]:
        """The actor's result columns for ``queries``."""
        return await self.handle.judge.remote(queries)


class GateIngress:
    """The ingress deployment's class (``serve.deployment`` wraps it in :func:`start`).

    Args:
        judges: the served judges in the job's order, by name: a :class:`ServedJudge`
            holding an :class:`ActorJudge`, or a :class:`JudgeHost` that the replica
            hosts itself (built here: :meth:`JudgeHost.local`).
        out: the record's directory (``None``: nothing recorded).
        strategy: what a disagreement gives (``tie``).
        max_bytes: the largest request body read.
    """

    def __init__(
        self,
        judges: dict[str, ServedJudge | JudgeHost],
        out: str | None,
        strategy: str = "tie",
        max_bytes: int = MAX_REQUEST_BYTES,
    ) -> None:
        from voirdire.engine.serve.record import Recorder

        self.judges = {
            n: j.local() if isinstance(j, JudgeHost) else j for n, j in judges.items()
        }
        self.strategy, self.max_bytes = strategy, max_bytes
        self.recorder = Recorder(out) if out else None
        self.counts: Counter[str] = Counter()

    async def __call__(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        path, method = request.url.path.rstrip("/"), request.method
        routes = {
            "/v1/chat/completions": "POST",
            "/v1/models": "GET",
            "/v1/voirdire/status": "GET",
        }
        if path not in routes:
            err = ServeError(404, f"no route {path[:200]!r}", code="not_found")
            return JSONResponse(err.body(), status_code=404)
        if method != routes[path]:
            err = ServeError(405, f"{path} takes {routes[path]}", code="method")
            return JSONResponse(err.body(), status_code=405)
        if path == "/v1/models":
            return JSONResponse(models_body(list(self.judges)))
        if path == "/v1/voirdire/status":
            return JSONResponse({"judges": list(self.judges), "exchanges": self.counts})
        declared = request.headers.get("content-length", "")
        declared = int(declared) if declared.isdigit() else None
        raw = b""
        if declared is None or declared <= self.max_bytes:  # else refused unread
            raw = await self._body(request)
        ex = await exchange(
            raw, self.judges, strategy=self.strategy, max_bytes=self.max_bytes,
            declared=declared,
        )  # fmt: skip
        if self.recorder is not None:
            self.recorder.append(ex.record)
        gate = ex.body.get("voirdire") or {}
        self.counts[
            gate.get("outcome") or ("passthrough" if ex.status == 200 else "error")
        ] += 1
        return JSONResponse(ex.body, status_code=ex.status, headers=ex.headers)

    async def _body(self, request: Any) -> bytes:
        """The body, read up to ``max_bytes + 1`` bytes (the exchange refuses more)."""
        chunks, size = [], 0
        async for chunk in request.stream():
            chunks.append(chunk)
            size += len(chunk)
            if size > self.max_bytes:
                break
        return b"".join(chunks)


def check_host(host: str) -> None:
    """Refuse a host that is not a loopback address (nothing authenticates a client yet).

    Raises:
        ConfigError: naming the host.
    """
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigError(
            f"--host {host!r}: voirdire serve listens on a loopback address only "
            "(127.0.0.1, ::1); clients are not authenticated yet"
        )


def check_strategy(strategy: str) -> None:
    """Refuse a strategy that is not built (:data:`~voirdire.engine.serve.gate.STRATEGIES`).

    Raises:
        ConfigError: naming it and the known ones.
    """
    from voirdire.engine.serve.gate import STRATEGIES

    if strategy not in STRATEGIES:
        raise ConfigError(
            f"--strategy {strategy!r}: known {', '.join(STRATEGIES)} (swap-tie, gate "
            "and probability averaging are not built yet)"
        )


def in_replica(host: JudgeHost) -> bool:
    """Whether the ingress replica hosts this judge itself (saving a hop per order): one
    that asks Ray for no GPU, no custom resource and no placement (the simulated judge,
    API judges); a vLLM judge gets its own actor, on its GPU."""
    opts = host.actor_options
    return not (
        opts.get("num_gpus") or opts.get("resources") or opts.get("scheduling_strategy")
    )


def start(
    hosts: list[JudgeHost],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    out: str | None = None,
    strategy: str = "tie",
) -> dict[str, Any]:
    """Start the ingress on the running Ray (``ray.init`` first), hosting the judges
    :func:`in_replica` and holding handles to the others' actors, started here; returns
    once the deployment answers. Returns the actors by judge name (for :func:`stop`).

    Raises:
        ConfigError: a non-loopback ``host``, an unknown ``strategy``.
    """
    from ray import serve

    from voirdire.engine.pools import _remote_worker

    check_host(host)
    check_strategy(strategy)
    inside = [h for h in hosts if in_replica(h)]
    actors = {
        h.name: _remote_worker()
        .options(**h.actor_options)
        .remote(h.backend, h.settings, h.context)
        for h in hosts
        if h not in inside
    }
    judges: dict[str, ServedJudge | JudgeHost] = {
        h.name: h
        if h in inside
        else ServedJudge(h.name, h.identity_hash, ActorJudge(actors[h.name]))
        for h in hosts
    }
    # Serve's per-request lines (INFO, escape-coloured) stay in its log files: the
    # record is the account of each exchange
    quiet = {"log_level": "WARNING", "enable_access_log": False}
    # and the driver's own start-up lines ("Started Serve in namespace ..."): the command's
    # first line is where it serves
    logging.getLogger("ray.serve").setLevel(logging.WARNING)
    serve.start(http_options={"host": host, "port": port}, logging_config=quiet)
    deployment = serve.deployment(
        GateIngress,
        name="gate",
        ray_actor_options={"num_cpus": 0},
        max_ongoing_requests=256,
        logging_config=quiet,
    )
    serve.run(
        deployment.bind(judges, out, strategy),
        name=APP_NAME,
        route_prefix="/",
        blocking=False,
    )
    return actors


def stop(actors: dict[str, Any]) -> None:
    """Stop Ray Serve (its proxy, controller and the ingress) and the judges' actors."""
    import ray
    from ray import serve

    serve.shutdown()
    for a in actors.values():
        ray.kill(a)
