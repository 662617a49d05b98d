"""The record of ``voirdire serve`` as a judgment log the audit reads: each gated exchange's
two orders as two rows of a plain log table (:mod:`voirdire.benchmarks.logs.table`), so
that ``voirdire audit`` writes them as a results directory (``job.json``,
``raw/<judge>/part-*.parquet``) that ``report``, ``rank``, ``mitigate`` and ``people``
read as a job's (:func:`voirdire.api.serving.served_results`).

Rows: ``instance`` the instruction's hash, ``model_a`` / ``model_b`` the two answers by the
hash of their text (``answer-<12 hex>``, the ``shown`` of the exchange's queries), ``first``
the answer shown first in that order, ``verdict`` its letter as the template's own rule
reads it (``A`` / ``B`` / ``C``; empty: none read), ``output`` the judge's text,
``instruction``, ``output_a``, ``output_b``, ``task`` the template, ``judge``. An order asked
again (a repeated exchange) keeps its first answer; a failed exchange, one passed through
and one refused are not pairs and are left out.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from voirdire.core import content_hash
from voirdire.engine.serve.gate import Pair, read_letter, recognise
from voirdire.engine.serve.record import read_exchanges

__all__ = ["COLUMNS", "TABLE", "table_rows", "write_log_table"]

#: the table's file name beside ``exchanges.jsonl``
TABLE = "served-pairs.jsonl"

#: ``[benchmark.log.columns]`` of the table (the log table's column mapping)
COLUMNS = {
    k: k
    for k in (
        "instance", "model_a", "model_b", "first", "verdict", "judge", "output",
        "instruction", "output_a", "output_b", "task",
    )
}  # fmt: skip


def _name(text: str) -> str:
    return "answer-" + content_hash(text, size=6)


def table_rows(records: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The log table's rows of the recorded exchanges (module docstring), in record order."""
    rows, seen = [], set()
    for rec in records:
        if rec.get("status") != 200 or not isinstance(rec.get("request"), dict):
            continue
        pair = recognise(rec["request"].get("messages") or [])
        orders = rec.get("orders") or []
        if not isinstance(pair, Pair) or len(orders) != 2:
            continue
        a, b = _name(pair.output_1), _name(pair.output_2)
        for order in orders:
            first = (order.get("shown") or [None])[0]
            key = (rec.get("judge"), pair.template, pair.instruction, a, b, first)
            if key in seen or first not in (a, b):
                continue
            seen.add(key)
            letter = read_letter(
                pair.template, order.get("output"), order.get("choice")
            )
            rows.append(
                {
                    "instance": content_hash(pair.template, pair.instruction, size=8),
                    "model_a": a,
                    "model_b": b,
                    "first": first,
                    "verdict": letter or "",
                    "judge": str(rec.get("judge")),
                    "output": order.get("output") or "",
                    "instruction": pair.instruction,
                    "output_a": pair.output_1,
                    "output_b": pair.output_2,
                    "task": pair.template,
                }
            )
    return rows


def write_log_table(out: str | os.PathLike[str]) -> tuple[Path, int]:
    """Write ``<out>/served-pairs.jsonl`` from ``<out>/exchanges.jsonl`` (replaced whole:
    written beside it, then renamed). Returns its path and its number of rows."""
    records, _ = read_exchanges(out)
    rows = table_rows(records)
    path = Path(out) / TABLE
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return path, len(rows)
