"""Strategy ``jury+swap-tie``: the panel's majority vote per order, then swap-and-tie over
the panel's two orders (ours; ``docs/mitigation.md``)."""

from __future__ import annotations

import polars as pl

from voirdire.analysis.mitigation.registry import register_strategy
from voirdire.analysis.mitigation.verdicts import jury_vote, normalise, swap_and_tie


@register_strategy(
    "jury+swap-tie",
    doc="jury per order, then swap-and-tie",
    default=True,
    both_orders=True,
    panel=True,
)
def jury_swap_tie(judgments: pl.DataFrame) -> pl.DataFrame:
    """The panel's verdict per order (:func:`~voirdire.analysis.mitigation.verdicts.jury_vote`),
    combined over both orders with a disagreement as ``tie``."""
    return swap_and_tie(jury_vote(normalise(judgments)), on_conflict="tie")
