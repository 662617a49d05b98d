"""Fault injection shared by backends, for resilience tests (never set in production jobs).

A backend with a ``crash_after`` setting calls :func:`crash_once` as it answers queries;
the worker process exits (``os._exit(1)``, no cleanup, as a segfault or an OOM kill would)
once ``answered`` reaches ``after``. With a ``marker`` file it crashes only once: the file
is created just before exiting, and a restarted worker that finds it carries on. These
settings are excluded from a judge's identity, so a crashed and resumed run asks the same
units.
"""

from __future__ import annotations

import os
from pathlib import Path


def crash_once(after: int | None, answered: int, marker: str | None) -> None:
    """Exit the process now if ``after`` is set, ``answered >= after`` and ``marker``
    (a file path, or ``None`` for "every time") does not exist yet.

    Args:
        after: queries answered before the crash; ``None`` disables the fault.
        answered: queries this worker has answered so far.
        marker: file created just before crashing; while it exists no crash happens.
    """
    if after is None or answered < after:
        return
    path = Path(marker) if marker else None
    if path is not None and path.exists():
        return
    if path is not None:
        path.write_text("crashed once\n")
    os._exit(1)


__all__ = ["crash_once"]
