"""The record of ``voirdire serve``: every exchange appended to ``exchanges.jsonl`` under the
``--out`` directory, one JSON line each, written and flushed before the response leaves
(``docs/serve.md``).

Crash-safe as an append-only log is: a process killed mid-write leaves at most its last line
cut short, which :func:`read_exchanges` skips (with the count of lines skipped); every
answered exchange's line is whole before its client reads the answer.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

__all__ = ["EXCHANGES", "Recorder", "read_exchanges"]

#: the record's file name in the ``--out`` directory
EXCHANGES = "exchanges.jsonl"


class Recorder:
    """Appends exchanges to ``<out>/exchanges.jsonl`` (the directory made if missing).

    One recorder per process writes the file (the server runs one replica); each line is
    written by one ``write`` of the whole line and flushed to the operating system.
    """

    def __init__(self, out: str | os.PathLike[str]) -> None:
        self.path = Path(out) / EXCHANGES
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> None:
        """Write one exchange as one line, then flush."""
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._file.close()


def read_exchanges(out: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], int]:
    """Every whole line of ``<out>/exchanges.jsonl``: ``(records, lines skipped)`` (a last
    line cut short by a crash, or one that is not a JSON object). No file: ``([], 0)``."""
    path = Path(out) / EXCHANGES
    if not path.is_file():
        return [], 0
    records, skipped = [], 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                skipped += 1
                continue
            if isinstance(rec, dict) and line.endswith("\n"):
                records.append(rec)
            else:
                skipped += 1
    return records, skipped
