"""Strategy ``jury``: the panel's majority vote, per order (ours; ``docs/mitigation.md``,
*Jury*)."""

from __future__ import annotations

import polars as pl

from voirdire.analysis.mitigation.registry import register_strategy
from voirdire.analysis.mitigation.verdicts import jury_vote, normalise


@register_strategy(
    "jury", doc="majority vote over the judges, per order", default=True, panel=True
)
def jury(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per order, the verdict most of the judges give (a tie for the most votes: ``tie``);
    the panel is named ``panel-N``; queries = the members' queries."""
    return jury_vote(normalise(judgments))
