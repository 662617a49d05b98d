"""The Ray actor that hosts one judge backend instance.

One pool of these actors serves each judge (``workers`` of them, each running up to
``concurrency`` batches at once as an async actor). The actor builds its backend from the
backend's registry name and plain settings, so nothing but data crosses the wire.
"""

from __future__ import annotations

import os
from typing import Any

from voirdire.judges.base import JudgeContext, Query, Result, get_backend
from voirdire.judges.capabilities import Counts


def results_to_columns(
    queries: list[Query], results: list[Result]
) -> dict[str, list[Any]]:
    """Result columns aligned with ``queries`` (matched by unit id); a query without a
    result gets a recorded failure ("the judge backend returned no result")."""
    by_id = {r.unit_id: r for r in results}
    rows = []
    for q in queries:
        r = by_id.get(q.unit_id)
        if r is None:
            r = Result.failed(
                q.unit_id,
                "error",
                "the judge backend returned no result for this query",
            )
        rows.append(r.as_row())
    return {k: [row[k] for row in rows] for k in rows[0]} if rows else {}


class JudgeWorker:
    """Hosts a :class:`~voirdire.judges.base.JudgeBackend` (wrapped by ``ray.remote``).

    Args:
        backend: registry name or ``"module:Class"`` of the backend.
        settings: the backend's settings as a plain dict (validated again here).
        context: the job context passed to the backend.
    """

    def __init__(
        self, backend: str, settings: dict[str, Any], context: JudgeContext
    ) -> None:
        cls = get_backend(backend)
        self.backend = cls(cls.Settings(**settings), context)

    async def judge(self, queries: list[Query]) -> dict[str, list[Any]]:
        """Answer a batch; returns result columns (``Result.as_row()`` keys) in query order.

        A query the backend left unanswered comes back as a recorded failure.
        """
        results: list[Result] = await self.backend.judge(queries)
        return results_to_columns(queries, results)

    async def close(self) -> None:
        """Release the backend's resources."""
        await self.backend.aclose()

    def backend_stats(self) -> dict[str, Any]:
        """The backend's own counters (e.g. the vLLM judge's requests and prompt tokens), or {}."""
        return dict(self.backend.stats) if isinstance(self.backend, Counts) else {}

    def pid(self) -> int:
        """The worker's process id (for tests and diagnostics)."""
        return os.getpid()
