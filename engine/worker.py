"""The Ray actor that hosts one judge backend instance.

One pool of these actors serves each judge (``workers`` of them, each running up to
``concurrency`` batches at once as an async actor). The actor builds its backend from the
backend's registry name and plain settings, so nothing but data crosses the wire.
"""

from __future__ import annotations

import operator
import os
from typing import Any

from voirdire.judges.base import JudgeContext, Query, Result, get_backend
from voirdire.judges.capabilities import AnswersRows, Counts, SharesEngine, engine_key

#: the keys of :meth:`~voirdire.judges.base.Result.as_row`, in its order
_ROW_KEYS = tuple(Result(unit_id="").as_row())
_ROW_VALUES = operator.attrgetter(*_ROW_KEYS)


def results_to_columns(
    queries: list[Query], results: list[Result]
) -> dict[str, list[Any]]:
    """Result columns aligned with ``queries`` (matched by unit id); a query without a
    result gets a recorded failure ("the judge backend returned no result")."""
    return _columns([q.unit_id for q in queries], results)


def _columns(unit_ids: list[str], results: list[Result]) -> dict[str, list[Any]]:
    """:func:`results_to_columns` of the queries with these unit ids: the keys of
    :meth:`~voirdire.judges.base.Result.as_row`, read from the results at once (a
    subclass of ``Result`` through its own ``as_row``)."""
    by_id = {r.unit_id: r for r in results}
    ordered = list(map(by_id.get, unit_ids))
    for i, r in enumerate(ordered):
        if r is None:
            ordered[i] = Result.failed(
                unit_ids[i],
                "error",
                "the judge backend returned no result for this query",
            )
    if not ordered:
        return {}
    if not all(type(r) is Result for r in ordered):
        rows = [r.as_row() for r in ordered]
        return {k: [row[k] for row in rows] for k in rows[0]}
    columns = zip(*map(_ROW_VALUES, ordered))
    return {k: list(col) for k, col in zip(_ROW_KEYS, columns)}


class JudgeWorker:
    """Hosts a :class:`~voirdire.judges.base.JudgeBackend` (wrapped by ``ray.remote``).

    The scheduler may host another judge's backend in the same process once this one is
    closed (starting a Ray worker process costs about a second of CPU): each batch names the
    backend it is for (``host``), and a worker hosting another one (or none: closed, or
    restarted by Ray with its first arguments) builds that one first. A judge of the same
    engine as the one it replaces takes that judge's engine
    (:class:`~voirdire.judges.capabilities.SharesEngine`).

    Args:
        backend: registry name or ``"module:Class"`` of the backend.
        settings: the backend's settings as a plain dict (validated again here).
        context: the job context passed to the backend.
        token: names this backend in ``host`` (any string; ``None``: never matches).
    """

    def __init__(
        self,
        backend: str,
        settings: dict[str, Any],
        context: JudgeContext,
        token: str | None = None,
    ) -> None:
        self._build(backend, settings, context, token)

    def _build(
        self,
        backend: str,
        settings: dict[str, Any],
        context: JudgeContext,
        token: str | None,
    ) -> None:
        cls = get_backend(backend)
        parsed = cls.Settings(**settings)
        self.engine_key = engine_key(cls, parsed, context)
        self.backend = cls(parsed, context)
        self.token = token

    async def judge(
        self, queries: list[Query], host: tuple | None = None
    ) -> dict[str, list[Any]]:
        """Answer a batch; returns result columns (``Result.as_row()`` keys) in query order.

        A query the backend left unanswered comes back as a recorded failure. ``host``:
        ``(token, backend, settings, context)`` of the backend the batch is for, built
        first when it is not the one hosted (see the class).
        """
        if host is not None and host[0] != self.token:
            await self.open(host)
        results: list[Result] = await self.backend.judge(queries)
        return results_to_columns(queries, results)

    async def judge_rows(
        self, rows: list[tuple[Any, ...]], host: tuple | None = None
    ) -> dict[str, list[Any]]:
        """:meth:`judge` of the queries ``Query(*row)``: the scheduler sends plain tuples
        (:attr:`~voirdire.engine.units.UnitBatch.query_rows`), which pickle without a
        per-query ``__getstate__``."""
        if host is not None and host[0] != self.token:
            await self.open(host)
        if not isinstance(self.backend, AnswersRows):
            return await self.judge([Query(*r) for r in rows])
        # a backend that reads the rows itself (the replay judge): no Query is built
        return _columns([r[0] for r in rows], await self.backend.judge_rows(rows))

    async def open(self, host: tuple) -> None:
        """Host the backend of ``host`` = ``(token, backend, settings, context)``, closing
        a live one first.

        Raises:
            Exception: whatever building the backend raises (the worker then hosts none).
        """
        if self.token is not None:  # a live backend of another judge
            if self.engine_key is not None and isinstance(self.backend, SharesEngine):
                cls = get_backend(host[1])
                if engine_key(cls, cls.Settings(**host[2]), host[3]) == self.engine_key:
                    self.backend.lend_engine()  # the next judge's engine: not shut down
            await self.backend.aclose()
        self.token = None
        self._build(*host[1:], host[0])

    async def close(self) -> None:
        """Release the backend's resources (the next batch builds its own)."""
        self.token = None
        await self.backend.aclose()

    def backend_stats(self) -> dict[str, Any]:
        """The backend's own counters (e.g. the vLLM judge's requests and prompt tokens), or {}."""
        return dict(self.backend.stats) if isinstance(self.backend, Counts) else {}

    def pid(self) -> int:
        """The worker's process id (for tests and diagnostics)."""
        return os.getpid()
