"""The Ray actor that hosts one judge backend instance.

One pool of these actors serves each judge (``workers`` of them, each running up to
``concurrency`` batches at once as an async actor). The actor builds its backend from the
backend's registry name and plain settings, so nothing but data crosses the wire.
"""

from __future__ import annotations

import os
from typing import Any

from voirdire.judges.base import JudgeContext, Query, Result, get_backend


class JudgeWorker:
    """Hosts a :class:`~voirdire.judges.base.JudgeBackend` (wrapped by ``ray.remote``).

    Args:
        backend: registry name or ``"module:Class"`` of the backend.
        settings: the backend's settings as a plain dict (validated again here).
        context: the job context passed to the backend.
    """

    def __init__(self, backend: str, settings: dict[str, Any], context: JudgeContext) -> None:
        cls = get_backend(backend)
        self.backend = cls(cls.Settings(**settings), context)

    async def judge(self, queries: list[Query]) -> list[dict[str, Any]]:
        """Answer a batch; returns one result row (``Result.as_row()``) per query.

        A query the backend left unanswered comes back as a recorded failure.
        """
        results: list[Result] = await self.backend.judge(queries)
        rows = [r.as_row() for r in results]
        if len(rows) != len(queries):
            seen = {r["unit_id"] for r in rows}
            rows += [
                Result.failed(q.unit_id, "error", "the judge backend returned no result for this query").as_row()
                for q in queries
                if q.unit_id not in seen
            ]
        return rows

    async def close(self) -> None:
        """Release the backend's resources."""
        await self.backend.aclose()

    def backend_stats(self) -> dict[str, Any]:
        """The backend's own counters (e.g. the vLLM judge's requests and prompt tokens), or {}."""
        return dict(getattr(self.backend, "stats", None) or {})

    def pid(self) -> int:
        """The worker's process id (for tests and diagnostics)."""
        return os.getpid()
