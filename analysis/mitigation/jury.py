"""Strategy ``jury``: the panel's majority vote, per order (ours; ``docs/mitigation.md``,
*Jury*)."""

from __future__ import annotations

import polars as pl
from voirdire.analysis.mitigation.verdicts import jury_vote, normalise


def jury(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per order, the verdict most of the judges give (a tie for the most votes: ``tie``);
    the panel is named ``panel-N``; queries = the members' queries."""
    return jury_vote(normalise(judgments))
