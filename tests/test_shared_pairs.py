"""swap-tie and gate settle one pair table per judgments table within an
``apply_strategies`` call (:mod:`voirdire.analysis.mitigation.shared_pairs`): the same
verdicts as each computed on its own, a one-order judge still left out."""

from __future__ import annotations

import polars as pl

from tests.test_mitigation_orders import _rows
from voirdire.analysis.mitigation import verdicts as M
from voirdire.analysis.mitigation.registry import apply_strategies
from voirdire.analysis.mitigation.shared_pairs import judgment_pair_table, shared_pairs


def test_one_pairing_within_the_context_a_fresh_one_outside():
    j = _rows("a", "both")
    with shared_pairs():
        first = judgment_pair_table(j)
        assert judgment_pair_table(j) is first  # the same object: computed once
        other = judgment_pair_table(j.clone())  # an equal frame, another object
        assert other is not first and other[0].equals(first[0])
    assert judgment_pair_table(j) is not first  # outside: computed again


def test_shared_verdicts_are_each_strategys_own():
    """Both strategies through apply_strategies (sharing) equal swap_and_tie on the
    normalised verdicts of the judges of both orders (computed alone); the one-order judge
    ``b`` has no verdict of either."""
    j = pl.concat([_rows("a", "both"), _rows("b", "one"), _rows("c", "both")])
    out = apply_strategies(j, ["swap-tie", "gate"])
    both = M.normalise(j.filter(pl.col("judge") != "b"))
    for name, rule in (("swap-tie", "tie"), ("gate", "undecided")):
        got = out.filter(pl.col("strategy") == name).drop("strategy")
        assert got.equals(M.swap_and_tie(both, rule)), name
        assert got.height == 48 and "b" not in got.get_column("judge").to_list()
    tie = out.filter(pl.col("strategy") == "swap-tie").get_column("verdict")
    gate = out.filter(pl.col("strategy") == "gate").get_column("verdict")
    assert (tie == "tie").sum() > 0 and (gate == "undecided").sum() > 0
