"""A release's recorded judge outputs, as a benchmark hands them to the replay judge.

The replay judge (:mod:`voirdire.judges.replay`) reads recorded outputs through the
benchmark (:meth:`~voirdire.benchmarks.base.Benchmark.recorded_judges`,
:meth:`~voirdire.benchmarks.base.Benchmark.recorded_file`,
:meth:`~voirdire.benchmarks.base.Benchmark.read_recorded`). This module holds the record
those hooks yield (:class:`Recorded`) and the default layout, the first release's (Shi et
al., 2024, "Judging the Judges"): ``judgments/<study>/<Benchmark>/<judge>.jsonl.gz``, one
JSON object a line: ``cmp_index`` = ``"<question id>;<model shown first>;<model shown
second>"``, ``judgment`` = the full text or null, and ``repetition`` 1-3 in the repetition
study. A release with another layout overrides the hooks in its benchmark's module.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from voirdire.core import ConfigError

#: the key of a recorded output: (``"<question id>;<shown[0]>;<shown[1]>..."``, repetition 1..)
RecordKey = tuple[str, int]


@dataclass(frozen=True)
class Recorded:
    """One recorded output.

    Attributes:
        output: the judge's text as recorded; ``None``: the recorded call failed.
        choice: the verdict letter the release itself read (``""``: none read), or ``None``:
            the verdict is read from ``output`` by the benchmark's pattern, like a live judge's.
        why: the reason shown when ``output`` is ``None`` (the failure message).
        probs: the verdict's probability per letter where the release records one (letter
            -> probability, as a log-probability verdict's ``option_probs``: AlpacaEval's
            weighted annotator, ``{"A": P(first wins), "B": 1 − that}``), else ``None``.
    """

    output: str | None
    choice: str | None = None
    why: str = "the recorded call failed (null judgment)"
    probs: Mapping[str, float] | None = None


def record_key(
    question_id: str, shown: tuple[str, ...] | list[str], repetition: int = 1
) -> RecordKey:
    """The key of a query's recorded output: ``(";".join((question_id, *shown)), repetition)``."""
    return ";".join((question_id, *shown)), int(repetition)


def judgments_dir(data_dir: str | Path, study: str, benchmark: str) -> Path:
    """``<data_dir>/judgments/<study>/<benchmark>``: where the first release's layout keeps a
    benchmark's recorded outputs (``benchmark``: its release name, ``MTBench``)."""
    return Path(data_dir) / "judgments" / study / benchmark


def jsonl_judges(data_dir: str | Path, study: str, benchmark: str) -> list[str]:
    """The stems of ``judgments/<study>/<benchmark>/*.jsonl.gz``, sorted (empty when none)."""
    d = judgments_dir(data_dir, study, benchmark)
    return (
        sorted(p.name.removesuffix(".jsonl.gz") for p in d.glob("*.jsonl.gz"))
        if d.is_dir()
        else []
    )


def jsonl_file(
    data_dir: str | Path, study: str, benchmark: str, recorded: str, judge: str
) -> Path:
    """The recorded outputs file of one judge in the first release's layout.

    Raises:
        ConfigError: the file does not exist (naming the judge ``judge`` and listing what
            is recorded there).
    """
    d = judgments_dir(data_dir, study, benchmark)
    path = d / f"{recorded}.jsonl.gz"
    if not path.is_file():
        have = jsonl_judges(data_dir, study, benchmark)
        raise ConfigError(
            f"judge {judge!r}: no recorded outputs for {recorded!r} in {d}"
            + (f"; recorded judges there: {', '.join(have)}" if have else "")
        )
    return path


def read_jsonl(path: str | Path) -> dict[RecordKey, Recorded]:
    """``(cmp_index, repetition) -> Recorded`` of a ``.jsonl.gz`` file (``output`` None where
    the recorded call failed)."""
    out: dict[RecordKey, Recorded] = {}
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            out[(rec["cmp_index"], int(rec.get("repetition") or 1))] = Recorded(
                rec.get("judgment")
            )
    return out


__all__ = [
    "RecordKey",
    "Recorded",
    "judgments_dir",
    "jsonl_file",
    "jsonl_judges",
    "read_jsonl",
    "record_key",
]
