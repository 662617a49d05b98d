"""Whether a file is a log format's own: each format (a
:class:`~voirdire.benchmarks.logs.base.LogBenchmark`) declares how its files hold records
(``layout``) and what one record holds (``record_keys``); a log given the wrong ``--format``
is then named as such, with the format it reads as, instead of the reader's own error
("not valid JSON ... a truncated file?" for valid JSON of another format). Nothing here
reads more than the file's first record's worth of decisions: the whole file only where it
is one JSON document."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from voirdire.benchmarks.logs.reading import read_json
from voirdire.core import ConfigError

__all__ = ["first_record", "owns", "wrong_format"]


def first_record(path: str | os.PathLike) -> tuple[str, dict[str, Any]] | None:
    """How a file holds its records and its first one, for a format to say whether the
    file is its own: ``("json", record)`` for a JSON document (an array's first object, or
    the object itself), ``("jsonl", record)`` for JSON Lines (the first non-blank line's
    object); None for anything else (not UTF-8 JSON: a table, a zip, a truncated file).
    A document that is one object is also one line of JSON Lines (``"json"`` given)."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    text = head.lstrip()
    if text[:1] not in (b"[", b"{"):
        return None
    try:
        data = read_json(p, "")
    except (ConfigError, OSError, RecursionError):
        data = None
    if isinstance(data, list):
        first = next((r for r in data if isinstance(r, dict)), None)
        return ("json", first) if first is not None else None
    if isinstance(data, dict):
        return "json", data
    for line in head.decode("utf-8", "replace").splitlines():
        if line.strip():
            try:
                obj = json.loads(line)
            except (
                ValueError,
                RecursionError,
            ):  # not a record (a nesting bomb among them)
                return None
            return ("jsonl", obj) if isinstance(obj, dict) else None
    return None


def owns(cls: Any, path: str | os.PathLike) -> bool | None:
    """Whether ``path`` is a log of the format ``cls``: its first record
    (:func:`first_record`) in the format's ``layout`` with every key of one of its
    ``record_keys``; None where the format declares none (it cannot tell). A document that
    is one object on one line is JSON Lines too."""
    if not cls.record_keys:
        return None
    got = first_record(path)
    if got is None:
        return False
    layout, rec = got
    if layout != cls.layout and not (
        layout == "json" and cls.layout == "jsonl" and _one_line(path)
    ):
        return False
    return any(k <= rec.keys() for k in cls.record_keys)


def _one_line(path: str | os.PathLike) -> bool:
    """A file of one non-blank line (a JSON object document is then JSON Lines too)."""
    try:
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip()) == 1
    except OSError:
        return False


def wrong_format(cls: Any, files: Sequence[str | os.PathLike]) -> str | None:
    """The one line for logs given with the wrong ``--format``: the first file ``cls`` says
    is not its own (:meth:`LogBenchmark.owns`) and another format says is its, with those
    formats; None otherwise (the format's own error stands: a truncated file stays one)."""
    from voirdire.benchmarks.registry import BENCHMARKS

    for f in files:
        if cls.owns(f) is not False:
            continue
        others = []
        for c in BENCHMARKS.available().values():
            # a log format: a class that says whether a file is its own (base.LogBenchmark)
            if isinstance(c, type) and hasattr(c, "record_keys") and c is not cls:
                # a format whose sniffing fails says nothing: the answer is not hidden
                try:
                    if c.owns(f):
                        others.append(c.name.lower())
                except (ConfigError, OSError, ValueError):
                    continue
        if others:  # else the format's own error stands (a truncated file, a typo)
            return (
                f"{f}: not a log of the {cls.name} format: it reads as "
                f"{' or '.join(sorted(others))} (give --format {sorted(others)[0]})"
            )
    return None
