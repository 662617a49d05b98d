"""Strategy ``jury-pc``: the panel's vote weighted by each judge's position consistency, per
order (ours; ``docs/mitigation.md``, *Jury*)."""

from __future__ import annotations

import polars as pl

from voirdire.analysis.mitigation.registry import register_strategy
from voirdire.analysis.mitigation.verdicts import judge_pc, jury_vote, normalise


@register_strategy(
    "jury-pc",
    doc="vote weighted by each judge's PC, per order",
    default=True,
    both_orders=True,
    panel=True,
)
def jury_pc(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per order, the verdict with the largest total PC of the judges who give it
    (:func:`~voirdire.analysis.mitigation.verdicts.judge_pc`, on these judgments)."""
    v = normalise(judgments)
    return jury_vote(v, weights=judge_pc(v).rename({"pc": "weight"}))
