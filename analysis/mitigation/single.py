"""Strategy ``single``: each order's verdict on its own, one query per verdict (the baseline
every other strategy is graded against; ``docs/mitigation.md``)."""

from __future__ import annotations

import polars as pl

from voirdire.analysis.mitigation.registry import register_strategy
from voirdire.analysis.mitigation.verdicts import normalise


@register_strategy(
    "single",
    doc="each order's verdict on its own (1 query per verdict; the baseline)",
    default=True,
)
def single(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per-order verdicts from the candidate's side (:func:`~voirdire.analysis.mitigation.
    verdicts.normalise`): a verdict table with ``side`` 0/1 and ``queries`` 1."""
    return normalise(judgments)
