"""The scheduler: streams work units to per-judge pools of Ray actors, with back-pressure.

Policy:
- one pool of :class:`~voirdire.engine.worker.JudgeWorker` actors per judge; every judge
  runs at the same time, except judges that share workers
  (:class:`~voirdire.judges.capabilities.SharesWorkers`: replay, simulated without latency):
  their pools open in job order while their workers number fewer than the cluster's CPUs,
  the next as one finishes, taking the workers it released;
- each worker holds at most ``concurrency`` batches in flight (the back-pressure bound: the
  driver never generates more units than it can send); a batch goes to the least loaded
  worker of its judge;
- units already in the store are skipped (resume); finished batches are appended to the
  store at once;
- a batch whose worker died is sent again (Ray restarts the actor; after repeated deaths
  the scheduler replaces it), up to ``max_attempts``; a batch whose backend raised is
  retried likewise; after that every unit of it is recorded as failed with the reason;
- a batch refused because Ray is still restarting its actor (``ActorUnavailableError``;
  a vLLM replica takes tens of seconds to start) waits for the actor and is sent again
  without spending an attempt;
- Ctrl-C flushes what finished, cancels what is in flight and raises
  :class:`JobInterrupted`; rerunning resumes;
- judges of one engine (:class:`~voirdire.judges.capabilities.SharesEngine`: vLLM judges
  whose model and engine settings are the same) take turns: the first opens at once, each
  next one when the last finishes, on its workers, which lend it their engine (a vLLM
  engine is started once, not once per judge);
- a finished pool's workers that hold no resource (``num_cpus = 0``, no GPU, custom
  resource or placement) and never died are kept, backend closed, for the next pool of
  the same options in this Ray session (a later judge, a later job of the same process):
  each batch names its backend, which such a worker builds first. Starting a Ray worker
  process costs about a second of CPU, more than replaying a judge's recorded outputs.
  The pools and the idle workers: :mod:`voirdire.engine.pools`.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import ray
from ray.exceptions import ActorUnavailableError, RayActorError, RayTaskError

from voirdire.core import FailureClass
from voirdire.engine.pools import _IDLE, JudgeRun, Pool  # noqa: F401 - _IDLE: read by tests; JudgeRun: its home
from voirdire.engine.stats import RunStats, judge_counts
from voirdire.engine.store import ResultStore
from voirdire.engine.unit_records import UnitBatch
from voirdire.engine.worker import results_to_columns
from voirdire.exceptions import JobInterrupted
from voirdire.judges.base import Result
from voirdire.judges.capabilities import engine_key, shares_workers


def _failed_columns(
    batch: UnitBatch, failure: FailureClass, message: str
) -> dict[str, list[Any]]:
    results = [Result.failed(q.unit_id, failure, message) for q in batch.queries]
    return results_to_columns(batch.queries, results)


class Scheduler:
    """Runs every judge's units to completion (outputs or recorded failures), by the policy
    of the module docstring.

    Args:
        runs: one :class:`JudgeRun` per judge.
        store: where finished rows are appended.
        max_attempts: tries of one batch before its units are recorded as failed.
        max_restarts: Ray restarts of a worker actor before the scheduler replaces it.
        progress: a :class:`voirdire.engine.progress.JobProgress` or ``None``.
    """

    def __init__(
        self,
        runs: list[JudgeRun],
        store: ResultStore,
        *,
        max_attempts: int = 3,
        max_restarts: int = 3,
        progress: Any = None,
    ) -> None:
        self.runs, self.store, self.progress = runs, store, progress
        self.max_attempts, self.max_restarts = max_attempts, max_restarts
        self.stats = RunStats()
        self.pools: dict[str, Pool] = {}
        #: object ref -> (judge, worker index, batch, attempt)
        self.in_flight: dict[Any, tuple[str, int, UnitBatch, int]] = {}

    def execute(self) -> RunStats:
        """Run to completion; returns the counts.

        Raises:
            JobInterrupted: on KeyboardInterrupt, after saving what finished.
        """
        t0 = time.perf_counter()
        self.pools = {}
        #: the judges that share workers, opened a few at a time (module docstring)
        self.waiting: deque[JudgeRun] = deque()
        self.shared: set[str] = set()
        #: judges waiting for the engine another judge holds, by engine (module docstring)
        self.engine_turns: dict[tuple[str, str], deque[JudgeRun]] = {}
        self.engine_of: dict[str, tuple[str, str]] = {}
        for r in self.runs:
            settings = r.backend.Settings(**r.settings)
            key = engine_key(r.backend, settings, r.context)
            if shares_workers(r.backend, settings):
                self.waiting.append(r)
            elif key is not None:
                turn = (
                    key,
                    repr((r.concurrency, sorted((r.actor_options or {}).items()))),
                )
                self.engine_of[r.name] = turn
                if turn in self.engine_turns:
                    self.engine_turns[turn].append(r)
                else:
                    self.engine_turns[turn] = deque()
                    self.pools[r.name] = Pool(r, self.max_restarts)
            else:
                self.pools[r.name] = Pool(r, self.max_restarts)
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._open_waiting()
        for (
            pool
        ) in self.pools.values():  # reused workers build their backends meanwhile
            pool.opened()
        for r in self.runs:
            self.stats.per_judge[r.name] = judge_counts()
        clean = False
        try:
            self._loop()
            clean = True
        except KeyboardInterrupt as exc:
            for ref in self.in_flight:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001
                    pass
            self.store.flush()
            raise JobInterrupted(
                "interrupted: finished results are saved; run the same job again to resume"
            ) from exc
        finally:
            self.store.flush()
            for pool in self.pools.values():
                if pool.actors:
                    pool.shutdown(reuse=clean)
            self.stats.seconds = time.perf_counter() - t0
        return self.stats

    def _open_waiting(self) -> list[Pool]:
        """Open the next waiting judges' pools while the open pools of judges that share
        workers hold fewer workers than the cluster has CPUs (always one when none is
        open); returns the pools opened, whose reused workers are building their backends."""
        busy = sum(len(p.actors) for n, p in self.pools.items() if n in self.shared)
        opened = []
        while self.waiting and (
            busy == 0 or busy + self.waiting[0].workers <= self.cpus
        ):
            r = self.waiting.popleft()
            self.shared.add(r.name)
            self.pools[r.name] = Pool(r, self.max_restarts)
            busy += len(self.pools[r.name].actors)
            opened.append(self.pools[r.name])
        return opened

    def _next_pools(self) -> bool:
        """Release finished pools, open the waiting judges' pools that now fit and send
        them batches; whether any opened."""
        opened = self._shut_finished_pools()
        opened += self._open_waiting() if self.waiting else []
        for pool in opened:  # reused workers build their backends
            pool.opened()
        if opened:
            self._fill()
        return bool(opened)

    def _loop(self) -> None:
        self._fill()
        while (
            self.in_flight
            or self.waiting
            or any(self.engine_turns.values())
            or any(p.pending for p in self.pools.values())
        ):
            if not self.in_flight:
                if self._next_pools():  # the open pools had nothing left to send
                    continue
                time.sleep(0.2)  # every batch waits for an actor Ray is restarting
                self._fill()
                continue
            ready, _ = ray.wait(list(self.in_flight), num_returns=1, timeout=1.0)
            if not ready:
                self._fill()  # held actors may be back
                continue
            # collect everything that is ready now, not just one
            more, _ = ray.wait(
                list(self.in_flight), num_returns=len(self.in_flight), timeout=0
            )
            for ref in dict.fromkeys(ready + more):
                self._collect(ref)
            self._fill()
            self._next_pools()

    def _fill(self) -> None:
        """Send batches until every worker holds ``concurrency`` of them (back-pressure)."""
        for name, pool in self.pools.items():
            while pool.capacity() > 0:
                nxt = pool.next_batch()
                if nxt is None:
                    break
                batch, attempt = nxt
                idx = pool.pick()
                ref = pool.actors[idx].judge_rows.remote(batch.query_rows, pool.host)
                pool.load[idx] += 1
                self.in_flight[ref] = (name, idx, batch, attempt)

    def _collect(self, ref: Any) -> None:
        """Take one finished call: record its rows, or send the batch again, or record it failed."""
        name, idx, batch, attempt = self.in_flight.pop(ref)
        pool = self.pools[name]
        pool.load[idx] -= 1
        try:
            rows = ray.get(ref)
        except ActorUnavailableError:
            # Ray is restarting the actor (a vLLM engine takes a while to start): send the
            # batch again once it is back, without spending an attempt
            pool.hold(idx, 2.0)
            pool.pending.append((batch, attempt))
            self.stats.resent_batches += 1
        except RayActorError as exc:
            pool.deaths[idx] += 1
            if pool.deaths[idx] > self.max_restarts:
                pool.replace(idx)
                self.stats.replaced_workers += 1
            self._retry_or_fail(pool, batch, attempt, FailureClass.ACTOR_CRASHED, exc)
        except RayTaskError as exc:
            self._retry_or_fail(pool, batch, attempt, FailureClass.ERROR, exc)
        else:
            self._record(name, batch, rows)

    def _record(self, name: str, batch: UnitBatch, cols: dict[str, list[Any]]) -> None:
        """Append a finished batch to the store and count it."""
        self.store.append(name, self.store.to_table(batch.columns, cols))
        s = self.stats.per_judge[name]
        n = len(batch)
        n_fail = n - cols["failure"].count(None)
        s["queries"] += n
        s["failures"] += n_fail
        for key in ("input_tokens", "output_tokens", "cost_usd"):
            s[key] += sum(v for v in cols[key] if v)
        self.stats.queries += n
        self.stats.failures += n_fail
        if self.progress is not None:
            self.progress.advance(name, n, s)

    def _retry_or_fail(
        self,
        pool: Pool,
        batch: UnitBatch,
        attempt: int,
        failure: FailureClass,
        exc: BaseException,
    ) -> None:
        if attempt < self.max_attempts:
            pool.pending.append((batch, attempt + 1))
            self.stats.retried_batches += 1
            return
        cause = getattr(exc, "cause", None) or exc
        lines = str(cause).strip().splitlines() or [""]
        # a worker that failed to start: the last line is its own error (one line, e.g. a
        # vLLM engine killed by a signal), the first only Ray's "died in its creation task"
        line = lines[-1] if getattr(exc, "actor_init_failed", False) else lines[0]
        message = f"{type(cause).__name__}: {line} (after {attempt} attempts)"
        self._record(
            pool.run.name, batch, _failed_columns(batch, failure, message[:500])
        )

    def _shut_finished_pools(self) -> list[Pool]:
        """Release the workers of judges with nothing left to send or wait for: to the next
        judge of the same engine, whose pool opens on them (returned, its workers building
        its backend), else shut down."""
        opened = []
        for name, pool in list(self.pools.items()):
            if (
                pool.actors
                and pool.exhausted
                and not pool.pending
                and not any(v[0] == name for v in self.in_flight.values())
            ):
                turns = self.engine_turns.get(self.engine_of.get(name), deque())
                if turns:
                    nxt = turns.popleft()
                    self.pools[nxt.name] = Pool(nxt, self.max_restarts, pool.actors)
                    opened.append(self.pools[nxt.name])
                else:
                    pool.shutdown(reuse=True)
                pool.actors = []
        return opened


def execute(
    runs: list[JudgeRun],
    store: ResultStore,
    *,
    max_attempts: int = 3,
    max_restarts: int = 3,
    progress: Any = None,
) -> RunStats:
    """Run every judge's units to completion (outputs or recorded failures): a
    :class:`Scheduler` run (see there for the arguments).

    Raises:
        JobInterrupted: on KeyboardInterrupt, after saving what finished.
    """
    return Scheduler(
        runs,
        store,
        max_attempts=max_attempts,
        max_restarts=max_restarts,
        progress=progress,
    ).execute()


__all__ = ["Scheduler", "execute"]
