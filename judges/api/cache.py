"""The response cache of API judges: successful replies in SQLite, keyed by content.

Key: H(judge identity hash, system prompt, prompt, repetition) with
:func:`voirdire.core.content_hash` -- so a rerun, a resumed crash or an extended job never
pays twice for the same query. A log-probability verdict keeps its option probabilities
with the text (``logprobs = true`` is part of the judge's identity, so such replies never
answer a text-only judge). Plain text and JSON columns, never pickle. Where it lives:
``cache = "job" | "user" | "off" | <path>`` (:func:`cache_path`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from voirdire.core import content_hash


def default_user_cache_dir() -> Path:
    """``$VOIRDIRE_CACHE_DIR``, else ``$XDG_CACHE_HOME/voirdire``, else ``~/.cache/voirdire``."""
    if os.environ.get("VOIRDIRE_CACHE_DIR"):
        return Path(os.environ["VOIRDIRE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "voirdire"


CACHE_FILE = "api_cache.sqlite"


def cache_path(setting: str, output_dir: str | None) -> Path | None:
    """Where a judge's cache lives: ``"job"`` -> ``<output_dir>/api_cache.sqlite``, ``"user"``
    -> :func:`default_user_cache_dir`, ``"off"`` -> ``None``, anything else is a file path."""
    if setting == "off":
        return None
    if setting == "job":
        return Path(output_dir) / CACHE_FILE if output_dir else None
    if setting == "user":
        return default_user_cache_dir() / CACHE_FILE
    return Path(setting).expanduser()


class ResponseCache:
    """Successful replies keyed by content (one SQLite file, WAL mode; safe for several
    worker processes; plain text columns, no pickle).

    Table ``responses``: ``key`` (text, primary), ``output`` (text), ``input_tokens``,
    ``output_tokens`` (int), ``cost_usd`` (real, USD paid), ``model`` (text), ``created``
    (real, Unix seconds), ``option_probs`` (text: JSON object letter -> probability of a
    log-probability verdict, else null; added in 0.2, older files gain the column on open).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, timeout=60, check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, output TEXT NOT NULL, "
            "input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL, model TEXT, created REAL, "
            "option_probs TEXT)"
        )
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
        if "option_probs" not in columns:  # a cache file written by 0.1
            self._db.execute("ALTER TABLE responses ADD COLUMN option_probs TEXT")

    @staticmethod
    def key(
        identity_hash: str, system: str | None, prompt: str, repetition: int
    ) -> str:
        """H(identity hash, system prompt, prompt, repetition), 32 hex chars."""
        return content_hash(identity_hash, system or "", prompt, str(repetition))

    def get(self, key: str) -> dict[str, Any] | None:
        """The reply stored under ``key``: ``output``, ``input_tokens``, ``output_tokens``,
        ``cost_usd`` (what it cost when it was paid) and ``option_probs`` (dict or ``None``);
        ``None`` when there is none."""
        with self._lock:
            row = self._db.execute(
                "SELECT output, input_tokens, output_tokens, cost_usd, option_probs FROM responses WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        probs = json.loads(row[4]) if row[4] else None
        return {
            "output": row[0],
            "input_tokens": row[1],
            "output_tokens": row[2],
            "cost_usd": row[3],
            "option_probs": probs,
        }

    def put(
        self,
        key: str,
        output: str,
        input_tokens: int | None,
        output_tokens: int | None,
        cost: float | None,
        model: str,
        option_probs: dict[str, float] | None = None,
    ) -> None:
        """Store one successful reply (replacing any under the same key)."""
        probs = (
            json.dumps(option_probs, sort_keys=True)
            if option_probs is not None
            else None
        )
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, output, input_tokens, output_tokens, cost_usd, model, "
                "created, option_probs) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    output,
                    input_tokens,
                    output_tokens,
                    cost,
                    model,
                    time.time(),
                    probs,
                ),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
