"""The work-unit records: one :class:`WorkUnit` per query, its ids, and a :class:`UnitBatch`.

Ids (content hashes, 32 hex chars; :mod:`voirdire.engine.units` generates the units):
- ``query_id`` = H(benchmark, question, models in slot order, mode, option mode, template
  version): equal for every judge and repetition of the same prompt.
- ``unit_id`` = H(judge identity hash, query_id, repetition): the judge's backend,
  model, settings and sampling enter through the identity hash, the label does not.
- a perturbed query (the bias suite, :mod:`voirdire.engine.perturb`) has ``query_id`` =
  H(control query id, variant key); the control's ids are those of a job without
  perturbations.

Each unit is one :class:`WorkUnit` record (a row of ``WORK_UNIT_SCHEMA`` plus its prompt);
the :class:`~voirdire.judges.base.Query` sent to the judge is derived from it
(:meth:`WorkUnit.query`; the scheduler sends it as a tuple, :meth:`WorkUnit.query_row`),
and a :class:`UnitBatch` turns its records into the columns the store writes.

The record is its own idea, apart from generating units (:mod:`voirdire.engine.units`):
the store, the scheduler, the pools and the recorded, rewrite and completion paths read and
build records and ids without planning any.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from voirdire.core import content_hash
from voirdire.judges.base import Query
from voirdire.schema import WORK_UNIT_COLUMNS

__all__ = [
    "QUERY_FIELDS",
    "TEMPLATE_VERSION",
    "UnitBatch",
    "WorkUnit",
    "query_id",
    "unit_id",
]

#: the fields of :class:`~voirdire.judges.base.Query`, in order (a query row's layout)
QUERY_FIELDS = tuple(f.name for f in fields(Query))

#: bump when prompt construction changes in a way that changes prompts
TEMPLATE_VERSION = "1"


def query_id(
    benchmark: str,
    question_id: str,
    shown: Sequence[str],
    mode: str,
    option_mode: int,
    variant_key: str = "",
    style: str | None = None,
    version: str = "",
) -> str:
    """Judge-independent id of a prompt (32 hex chars); ``variant_key``: a perturbation's
    :attr:`~voirdire.engine.perturb.Variant.key` (``""``: the control); ``style``: the
    score-mode prompt style (``None`` for choice prompts); ``version``: the benchmark's
    :meth:`~voirdire.benchmarks.base.Benchmark.prompt_key` of the question (``""`` for the
    release benchmarks). The control choice prompt's id is the same as before either existed."""
    parts = (TEMPLATE_VERSION, benchmark, question_id, mode, str(option_mode), *shown)
    if version:
        parts = (*parts, "version", version)
    qid = (
        content_hash(*parts) if style is None else content_hash(*parts, "style", style)
    )
    return content_hash(qid, variant_key) if variant_key else qid


def unit_id(identity_hash: str, qid: str, repetition: int) -> str:
    """Id of one unit: a judge identity asking a query for the ``repetition``-th time."""
    return content_hash(identity_hash, qid, str(repetition))


#: the fields a query row (:meth:`WorkUnit.query_row`, :attr:`UnitBatch.query_rows`) takes
#: as they are, before the perturbation's kind and parameter (None for the control), the
#: target slot and the control's query id
_ROW_HEAD = ("unit_id", "query_id", "benchmark", "question_id", "shown", "repetition",
             "option_mode", "mode", "prompt", "system")  # fmt: skip
_row_head = operator.attrgetter(*_ROW_HEAD)


@dataclass(slots=True)
class WorkUnit:
    """One work unit: a row of :data:`voirdire.schema.WORK_UNIT_SCHEMA` (the fields
    up to ``gold``, in the schema's order; see there for each column's meaning) and the
    prompt sent and the benchmark's system turn (None for a judge that needs no prompt),
    with the control's query id (None for the control), from which the judge's
    :class:`~voirdire.judges.base.Query` is derived."""

    unit_id: str
    query_id: str
    judge: str
    benchmark: str
    question_id: str
    task: str
    instance_id: str
    candidate: str | None
    reference: str | None
    candidates: tuple[str, ...]
    shown: tuple[str, ...]
    permutation: int
    repetition: int
    mode: str
    option_mode: int
    input_chars: int
    output_chars: int
    prompt_chars: int
    perturbation: str
    perturbation_kind: str
    perturbation_param: str | None
    target: str | None
    target_rule: str | None
    target_slot: str | None
    better: str | None
    gold: str | None
    prompt: str | None = None
    system: str | None = None
    control_query_id: str | None = None

    def query_row(self) -> tuple[Any, ...]:
        """The judge's query as a tuple in the field order of
        :class:`~voirdire.judges.base.Query` (``Query(*row)`` is :meth:`query`): what the
        scheduler sends, cheaper to pickle than the record (the control carries no
        perturbation)."""
        control = self.control_query_id is None
        return (
            *_row_head(self),
            None if control else self.perturbation_kind,
            None if control else self.perturbation_param,
            self.target_slot,
            self.control_query_id,
        )

    def query(self) -> Query:
        """The query the judge is asked (the control carries no perturbation)."""
        return Query(*self.query_row())


@dataclass
class UnitBatch:
    """A batch of unit records for one judge (or rewriter): :class:`WorkUnit` (or
    :class:`~voirdire.engine.rewrite.RewriteUnit`) records, each with a ``query()``;
    ``names`` are the record fields written as columns (``WORK_UNIT_COLUMNS``)."""

    judge: str
    units: list[Any]
    names: Sequence[str] = field(default=tuple(WORK_UNIT_COLUMNS))

    def __len__(self) -> int:
        return len(self.units)

    @cached_property
    def columns(self) -> dict[str, list[Any]]:
        """The unit rows as columns (``names`` -> one value per unit, in unit order)."""
        units = self.units
        return {n: list(map(operator.attrgetter(n), units)) for n in self.names}

    @cached_property
    def queries(self) -> list[Query]:
        """The queries sent to the judge, in unit order."""
        return [u.query() for u in self.units]

    @cached_property
    def query_rows(self) -> list[tuple[Any, ...]]:
        """The queries as tuples in :class:`~voirdire.judges.base.Query`'s field order
        (``Query(*row)``), in unit order: what the scheduler sends to a worker
        (:meth:`~voirdire.engine.worker.JudgeWorker.judge_rows`)."""
        units = self.units
        if units and all(type(u) is WorkUnit for u in units):
            # WorkUnit.query_row of every unit, read field by field
            def col(name: str) -> list[Any]:
                return list(map(operator.attrgetter(name), units))

            control = col("control_query_id")
            kind, param = (
                [None if c is None else v for v, c in zip(col(name), control)]
                for name in ("perturbation_kind", "perturbation_param")
            )
            return list(
                zip(*map(col, _ROW_HEAD), kind, param, col("target_slot"), control)
            )
        if units and hasattr(units[0], "query_row"):
            return [u.query_row() for u in units]
        return [tuple(getattr(q, f) for f in QUERY_FIELDS) for q in self.queries]

    def select(self, keep: list[bool]) -> UnitBatch:
        """The batch restricted to the units where ``keep`` is true."""
        return UnitBatch(
            self.judge, [u for u, m in zip(self.units, keep) if m], self.names
        )
