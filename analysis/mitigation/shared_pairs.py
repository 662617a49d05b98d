"""The pair table of the two-order strategies, computed once per judgments table while
:func:`shared_pairs` is open: ``swap-tie`` and ``gate`` settle the same pairing (and sort)
by different rules (:func:`~voirdire.analysis.mitigation.verdicts.settle_pairs`), so one
:func:`~voirdire.analysis.mitigation.registry.apply_strategies` call pairs its judgments
once for both. Outside the context every call computes its own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import polars as pl

from voirdire.analysis.mitigation.verdicts import normalise, pair_table

__all__ = ["shared_pairs", "judgment_pair_table"]

#: per open context: id(judgments) -> (judgments, its pair table); the frame is held so
#: its id is not reused while the context lasts
_MEMO: ContextVar[dict[int, tuple] | None] = ContextVar("voirdire_pairs", default=None)


@contextmanager
def shared_pairs() -> Iterator[None]:
    """While open, :func:`judgment_pair_table` of one judgments object (the same object,
    not an equal one) is computed once; the tables are dropped on leaving."""
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def judgment_pair_table(
    judgments: pl.DataFrame,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`~voirdire.analysis.mitigation.verdicts.pair_table` of the per-order verdicts
    of ``judgments`` (:func:`~voirdire.analysis.mitigation.verdicts.normalise`), shared
    within :func:`shared_pairs`."""
    memo = _MEMO.get()
    if memo is None:
        return pair_table(normalise(judgments))
    hit = memo.get(id(judgments))
    if hit is None or hit[0] is not judgments:
        hit = memo[id(judgments)] = (judgments, pair_table(normalise(judgments)))
    return hit[1]
