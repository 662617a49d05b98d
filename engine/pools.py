"""The worker pools of the scheduler: one pool of Ray actors per judge, and the idle workers
kept for later pools.

A pool starts ``workers`` :class:`~voirdire.engine.worker.JudgeWorker` actors for its
judge (or takes idle ones), tracks each one's batches in flight (``load``), deaths and
hold time (Ray restarting it), and the batches to send again. A finished pool's workers
that hold no resource (``num_cpus = 0``, no GPU, custom resource or placement) and never
died are kept, backend closed, for the next pool of the same options in this Ray session:
each batch names its backend (``host``), which such a worker builds first. Starting a Ray
worker process costs about a second of CPU, more than replaying a judge's recorded outputs.
A pool may also take over the workers of the judge before it on the same engine
(``inherit``), whose engine each such worker lends it.
The policy that uses them: :mod:`voirdire.engine.scheduler`.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import ray

from voirdire.engine.unit_records import UnitBatch
from voirdire.engine.worker import JudgeWorker
from voirdire.judges.base import JudgeBackend, JudgeContext

__all__ = ["JudgeRun", "Pool"]


@dataclass
class JudgeRun:
    """What the scheduler needs to run one judge.

    ``batches`` yields the judge's unit batches lazily; ``total`` is the number of units
    still to do (for progress); ``done`` the unit ids already in the store (the only
    structure of the driver whose size grows with the job: about 100 bytes per unit id
    already done, so ~100 MB at 10^6 done units when resuming); ``actor_options`` Ray actor
    options from the job (``resources``, ``scheduling_strategy``) merged over the backend's.
    """

    name: str
    backend: type[JudgeBackend]
    backend_name: str
    settings: dict[str, Any]
    context: JudgeContext
    workers: int
    concurrency: int
    batches: Iterator[UnitBatch]
    total: int
    done: set[str] = field(default_factory=set)
    actor_options: dict[str, Any] = field(default_factory=dict)


_REMOTE_WORKER: Any = None

#: idle worker actors kept for the next pool of the same options, by options key, and the
#: driver they belong to (a new Ray session drops them)
_IDLE: dict[str, list[Any]] = {}
_IDLE_OWNER: list[str] = [""]
#: the only actor options under which a worker is reused: it holds no CPU, GPU, custom
#: resource, placement or environment that another judge's pool would not ask for
_REUSABLE_OPTIONS = {"num_cpus", "max_concurrency", "max_restarts", "max_task_retries"}


def _reusable(options: dict[str, Any]) -> bool:
    """Whether a worker with these Ray options may host another judge's backend later."""
    return set(options) <= _REUSABLE_OPTIONS and not options.get("num_cpus")


def _idle_workers(key: str) -> list[Any]:
    """The idle workers of options ``key`` in this Ray session (emptied on a new one)."""
    ctx = (
        ray.get_runtime_context()
    )  # a new session: a new node here, or a new job there
    owner = f"{ctx.get_node_id()}/{ctx.get_job_id()}"
    if _IDLE_OWNER[0] != owner:
        _IDLE.clear()
        _IDLE_OWNER[0] = owner
    return _IDLE.setdefault(key, [])


def _remote_worker() -> Any:
    """``ray.remote(JudgeWorker)``, made once per process: Ray fingerprints an actor class
    by disassembling its code, which costs more than the replay of a batch when done for
    every actor of every job."""
    global _REMOTE_WORKER
    if _REMOTE_WORKER is None:
        _REMOTE_WORKER = ray.remote(JudgeWorker)
    return _REMOTE_WORKER


class Pool:
    """One judge's workers and their state (see the module docstring); ``opened`` must
    be called once the pools are made (reused workers build their backends meanwhile)."""

    def __init__(
        self, run: JudgeRun, max_restarts: int, inherit: list[Any] | None = None
    ) -> None:
        self.run = run
        self.max_restarts = max_restarts
        opts = dict(run.backend.worker_options(run.backend.Settings(**run.settings)))
        extra = dict(run.actor_options or {})
        if "resources" in extra:
            extra["resources"] = {**(opts.get("resources") or {}), **extra["resources"]}
        opts.update(extra)
        self.options = {
            "max_concurrency": max(1, run.concurrency),
            "max_restarts": max_restarts,
            "max_task_retries": 0,
            **opts,
        }
        self.token = uuid.uuid4().hex
        #: sent with every batch: a reused worker builds this backend first
        self.host = (self.token, run.backend_name, run.settings, run.context)
        self.reuse_key = repr(sorted(self.options.items()))
        self.reusable = _reusable(self.options)
        #: reused workers building this backend: (index, ref of ``open``), see :meth:`opened`
        self.opening: list[tuple[int, Any]] = []
        #: the workers of the judge before this one on the same engine, taken over
        self._inherited = list(inherit or [])
        self.actors = [self._take(i) for i in range(run.workers)]
        for a in self._inherited:  # more than this judge asks for
            _end(a)
        self._inherited = []
        self.load = [0] * run.workers
        self.deaths = [0] * run.workers
        self.pending: deque[tuple[UnitBatch, int]] = deque()  # batches to send again
        self.exhausted = False
        self.held_until = [
            0.0
        ] * run.workers  # an actor Ray is restarting gets no batch until then

    def _new(self) -> Any:
        return (
            _remote_worker()
            .options(**self.options)
            .remote(
                self.run.backend_name, self.run.settings, self.run.context, self.token
            )
        )

    def _take(self, idx: int) -> Any:
        """A worker of the judge before this one on the same engine (``inherit``), else an
        idle worker of an earlier pool with the same options, asked to build this backend
        (awaited by :meth:`opened`), else a new one."""
        idle = self._inherited
        if not idle and self.reusable:
            idle = _idle_workers(self.reuse_key)
        if not idle:
            return self._new()
        actor = idle.pop()
        self.opening.append((idx, actor.open.remote(self.host)))
        return actor

    def opened(self) -> None:
        """Wait for the reused workers to build this backend; one that could not is ended
        and replaced by a new worker, whose start fails (or not) as any new one's does."""
        for idx, ref in self.opening:
            try:
                ray.get(ref)
            except Exception:  # noqa: BLE001 - a new worker reports it as usual
                try:
                    ray.kill(self.actors[idx], no_restart=True)
                except Exception:  # noqa: BLE001 - already gone
                    pass
                self.actors[idx] = self._new()
        self.opening = []

    def _available(self) -> list[int]:
        now = time.monotonic()
        return [i for i in range(len(self.actors)) if self.held_until[i] <= now]

    def capacity(self) -> int:
        return sum(
            max(1, self.run.concurrency) - self.load[i] for i in self._available()
        )

    def pick(self) -> int:
        return min(self._available(), key=self.load.__getitem__)

    def hold(self, idx: int, seconds: float) -> None:
        """Send nothing to actor ``idx`` for ``seconds`` (Ray is restarting it)."""
        self.held_until[idx] = time.monotonic() + seconds

    def replace(self, idx: int) -> None:
        try:
            ray.kill(self.actors[idx], no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
        self.actors[idx] = self._new()
        self.deaths[idx] = 0
        self.held_until[idx] = 0.0

    def next_batch(self) -> tuple[UnitBatch, int] | None:
        if self.pending:
            return self.pending.popleft()
        if self.exhausted:
            return None
        for batch in self.run.batches:
            if self.run.done:
                keep = [u not in self.run.done for u in batch.columns["unit_id"]]
                if not all(keep):
                    batch = batch.select(keep)
            if len(batch):
                return batch, 1
        self.exhausted = True
        return None

    def shutdown(self, reuse: bool = False) -> None:
        """Close every worker's backend; with ``reuse``, keep the reusable workers that
        closed cleanly and never died for a later pool, and end the others."""
        for i, a in enumerate(self.actors):
            try:
                ray.get(a.close.remote(), timeout=10)
            except Exception:  # noqa: BLE001 - best effort
                pass
            else:
                if reuse and self.reusable and not self.deaths[i]:
                    _idle_workers(self.reuse_key).append(a)
                    continue
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001
                pass


def _end(actor: Any) -> None:
    """Close a worker's backend (best effort) and end its process."""
    try:
        ray.get(actor.close.remote(), timeout=10)
    except Exception:  # noqa: BLE001 - best effort
        pass
    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # noqa: BLE001 - already gone
        pass
