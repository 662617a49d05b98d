"""Strategy ``gate``: the practitioners' dual-pass gate. Both orders; a disagreement is left
undecided, to be escalated to a stronger judge or a person (``docs/mitigation.md``)."""

from __future__ import annotations

import polars as pl

from voirdire.analysis.mitigation.registry import register_strategy
from voirdire.analysis.mitigation.shared_pairs import judgment_pair_table
from voirdire.analysis.mitigation.verdicts import settle_pairs


@register_strategy(
    "gate",
    doc="both orders; disagreement -> undecided (escalate)",
    default=True,
    both_orders=True,
    human_override=True,
)
def gate(judgments: pl.DataFrame) -> pl.DataFrame:
    """One order-invariant verdict per pair: the common verdict of its two orders,
    ``undecided`` when they disagree or an order failed; 2 queries."""
    return settle_pairs(judgment_pair_table(judgments), on_conflict="undecided")
