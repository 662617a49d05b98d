"""Strategies that need both orders of a pair, and the judges that judged one order only.

A strategy that combines a pair's two orders (swap-and-tie, the gate, BPC, the calibrated
log-probabilities) or weighs a judge by a figure that does (the PC-weighted jury) is
declared :attr:`~voirdire.analysis.mitigation.registry.Strategy.both_orders`. A judge
whose log holds each pair in one order only (AlpacaEval's annotators, a one-order
Arena-Hard run: :func:`~voirdire.analysis.position.one_order.order_design` other than
``both``) has no verdict of such a strategy: every pair would be ``undecided`` and its PC 1
by construction. Those strategies are therefore not computed for it
(:func:`both_orders_only`), and the mitigation table says so in one line per benchmark
(:func:`one_order_lines`) instead of printing rows of undecided verdicts.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from voirdire.analysis.mitigation.verdicts import VERDICT_SCHEMA
from voirdire.analysis.mitigation.verdicts import Strategy as StrategyFn

__all__ = ["one_order_judges", "both_orders_only", "one_order_lines"]

_KEYS = ["benchmark", "judge"]


def one_order_judges(judgments: pl.DataFrame) -> pl.DataFrame:
    """``benchmark``, ``judge`` (str) of every judge with pairwise control judgments none
    of whose pairs was judged in both orders (sorted); none for list-wise judges."""
    from voirdire.analysis.position.one_order import order_design

    if not judgments.height or "mode" not in judgments.columns:
        return pl.DataFrame(schema=dict.fromkeys(_KEYS, pl.String))
    design = order_design(judgments)
    return (
        design.filter(pl.col("design") != "both")
        .select(_KEYS)
        .cast(dict.fromkeys(_KEYS, pl.String))  # type: ignore[arg-type]
        .sort(_KEYS)
    )


def both_orders_only(fn: StrategyFn, one_order: pl.DataFrame | None) -> StrategyFn:
    """``fn`` run on the judgments of every judge but those of ``one_order``
    (:func:`one_order_judges`); an empty verdict table where no judge is left (``fn`` is
    not called)."""
    if one_order is None or not one_order.height:
        return fn

    def run(judgments: pl.DataFrame) -> pl.DataFrame:
        kept = judgments.join(one_order, on=_KEYS, how="anti")
        return fn(kept) if kept.height else pl.DataFrame(schema=VERDICT_SCHEMA)

    return run


def one_order_lines(judgments: pl.DataFrame, both: Sequence[str]) -> list[str]:
    """One line per benchmark with one-order judges, naming them and the strategies
    ``both`` (those asked for that need both orders:
    :func:`~voirdire.analysis.mitigation.registry.both_orders_names`), which were not
    computed for them; none where ``both`` is empty or every judge judged both orders."""
    if not both:
        return []
    one = one_order_judges(judgments)
    lines = []
    for (bench,), part in one.group_by("benchmark", maintain_order=True):
        judges = part.get_column("judge").to_list()
        who = (
            f"judge {judges[0]} judged"
            if len(judges) == 1
            else f"judges {', '.join(judges)} judged"
        )
        lines.append(
            f"{bench}: {who} each pair in one order only, so {', '.join(both)} (which need "
            f"both orders of a pair) have no verdict for {'it' if len(judges) == 1 else 'them'}: "
            "not computed."
        )
    return lines
