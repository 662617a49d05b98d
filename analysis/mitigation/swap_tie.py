"""Strategy ``swap-tie``: both orders, a disagreement becomes a tie (MT-Bench's conservative
rule, Zheng et al. 2023; ``docs/mitigation.md``)."""

from __future__ import annotations

import polars as pl

from voirdire.analysis.mitigation.registry import register_strategy
from voirdire.analysis.mitigation.shared_pairs import judgment_pair_table
from voirdire.analysis.mitigation.verdicts import settle_pairs


@register_strategy(
    "swap-tie",
    doc="both orders; disagreement -> tie (MT-Bench)",
    default=True,
    both_orders=True,
    human_override=True,
)
def swap_tie(judgments: pl.DataFrame) -> pl.DataFrame:
    """One order-invariant verdict per pair: the common verdict of its two orders, ``tie``
    when they disagree, ``undecided`` with a failed or missing order; 2 queries."""
    return settle_pairs(judgment_pair_table(judgments), on_conflict="tie")
