"""A release's own statistics from a judgments table: the release's convention as a named view.

A release may publish, per judge × strategy × dataset, counts of its own: ``correct_False``
and ``correct_True`` (items whose winner in the order shown / swapped is the gold output),
``correct_both`` (correct in both orders) and ``equal`` (the same winner in both orders), each
over all ``n`` items (:data:`RELEASE_COLUMNS`). How the release reads a judgment's winner is
the benchmark's (its class's ``release_readings``, :class:`~voirdire.benchmarks.kind.BenchmarkKind`;
see that benchmark's module for its convention and source). Such conventions differ from
voirdire's (``docs/metrics.md``) on two kinds of judgment only:

- a *failed* verdict (winner null): the release view counts two nulls as the same winner
  (``equal``) and a null as not correct; voirdire leaves the pair out of PC (an error pair)
  and counts the null as not correct over all pairs (accuracy);
- a *tie* or a *rating* (score-mode) verdict, which a release may turn into a winner by its
  own rule; voirdire reads equal ratings as a tie (consistent in both orders, correct only
  against a tie label) and unreadable or off-scale ratings as failed.

:func:`pair_outcomes` gives both readings of every judgment pair and flags the pairs with a
failed or tie verdict (``differs``); :func:`release_view` and :func:`voirdire_view` count
them per cell. On the pairs that do not differ the two views count the same (tests assert
it), so those pairs are the whole difference. Input: judgments
(``voirdire.schema.JUDGMENT_SCHEMA``) of pairwise or score mode with a ``gold``
column; pairs are formed by :func:`voirdire.analysis.position.metrics.pairwise_pairs`.
"""

from __future__ import annotations

import polars as pl

from voirdire.analysis.position.cells import pairwise_pairs
from voirdire.analysis.position.gold import gold_accuracy as _gold_accuracy
from voirdire.analysis.position.gold import has_gold
from voirdire.analysis.position.pairing import PAIR_KEYS, candidate_first
from voirdire.benchmarks.kind import BenchmarkKind
from voirdire.benchmarks.registry import find_benchmark

KEYS = ["benchmark", "judge", "task"]
#: the release's counts (``statistics.json``) and voirdire's
RELEASE_COLUMNS = ["n", "equal", "correct_False", "correct_True", "correct_both"]
VOIRDIRE_COLUMNS = [
    "n",
    "v",
    "consistent",
    "pc",
    "correct_shown",
    "correct_swapped",
    "both_correct",
]


def pair_outcomes(judgments: pl.DataFrame) -> pl.DataFrame:
    """One row per judgment pair (:data:`~voirdire.analysis.position.metrics.PAIR_KEYS`) with both
    readings.

    Columns besides the keys: ``gold`` (str), ``score`` (bool: score-mode pair), ``klass``
    (voirdire's class), ``w1``/``w2`` (str|null: voirdire's verdict in the order shown /
    swapped as a model name, ``"tie"``, or null when failed), ``r1``/``r2`` (str|null: the
    release's winner, by the benchmark's ``release_readings``; a benchmark not registered
    here: voirdire's winner, a tie as none), ``differs`` (bool: a failed or tie verdict in
    either order).
    """
    rows = judgments.filter(pl.col("mode").is_in(["pairwise", "score"]))
    meta = rows.group_by(PAIR_KEYS).agg(
        pl.col("gold").first(),
        score=(pl.col("mode") == "score").any(),
        _out=pl.col("output").filter(candidate_first()).first(),
    )
    p = pairwise_pairs(rows).join(meta, on=PAIR_KEYS, how="left")
    cand, ref = pl.col("candidate"), pl.col("reference")

    def model(letter: pl.Expr, first: pl.Expr, second: pl.Expr) -> pl.Expr:
        return (
            pl.when(letter == "A")
            .then(first)
            .when(letter == "B")
            .then(second)
            .when(letter == "C")
            .then(pl.lit("tie"))
        )

    # order shown: (candidate, reference); swapped: (reference, candidate)
    p = p.with_columns(
        w1=model(pl.col("c1"), cand, ref), w2=model(pl.col("c2"), ref, cand)
    )
    names = p["benchmark"].unique(maintain_order=True).to_list()
    if len(names) == 1:
        p = (find_benchmark(names[0]) or BenchmarkKind).release_readings(p)
    else:
        parts = [
            (find_benchmark(n) or BenchmarkKind).release_readings(
                p.filter(pl.col("benchmark") == n)
            )
            for n in names
        ]
        p = pl.concat(parts) if parts else BenchmarkKind.release_readings(p)
    return p.with_columns(
        differs=pl.col("w1").is_null()
        | pl.col("w2").is_null()
        | (pl.col("w1") == "tie")
        | (pl.col("w2") == "tie"),
    ).drop("_out")


def release_view(pairs: pl.DataFrame, keys: list[str] = KEYS) -> pl.DataFrame:
    """The release's counts per ``keys`` from :func:`pair_outcomes` (:data:`RELEASE_COLUMNS`,
    Int64): two null winners are equal; a null is not correct; all over ``n`` pairs."""
    g, r1, r2 = pl.col("gold"), pl.col("r1"), pl.col("r2")
    return pairs.group_by(keys, maintain_order=True).agg(
        n=pl.len().cast(pl.Int64),
        equal=r1.eq_missing(r2).sum().cast(pl.Int64),
        correct_False=(r1 == g).fill_null(False).sum().cast(pl.Int64),
        correct_True=(r2 == g).fill_null(False).sum().cast(pl.Int64),
        correct_both=((r1 == g) & (r2 == g)).fill_null(False).sum().cast(pl.Int64),
    )


def voirdire_view(pairs: pl.DataFrame, keys: list[str] = KEYS) -> pl.DataFrame:
    """voirdire's counts per ``keys`` (:data:`VOIRDIRE_COLUMNS`): ``v`` pairs without a failed
    verdict, ``consistent`` of them, ``pc = consistent / v``; correct per order and in both
    over all ``n`` pairs (a failed verdict is not correct; a tie is correct only against a
    tie label), as the gold-label accuracy of ``docs/metrics.md`` counts them."""
    g, w1, w2 = pl.col("gold"), pl.col("w1"), pl.col("w2")
    k = pl.col("klass")
    return (
        pairs.group_by(keys, maintain_order=True)
        .agg(
            n=pl.len().cast(pl.Int64),
            v=k.is_in(["consistent", "primacy", "recency"]).sum().cast(pl.Int64),
            consistent=(k == "consistent").sum().cast(pl.Int64),
            correct_shown=(w1 == g).fill_null(False).sum().cast(pl.Int64),
            correct_swapped=(w2 == g).fill_null(False).sum().cast(pl.Int64),
            both_correct=((w1 == g) & (w2 == g)).fill_null(False).sum().cast(pl.Int64),
        )
        .with_columns(
            pc=pl.when(pl.col("v") > 0).then(pl.col("consistent") / pl.col("v"))
        )
        .select(*keys, *VOIRDIRE_COLUMNS)
    )


def gold_accuracy(
    judgments: pl.DataFrame,
    keys: list[str] = ["benchmark", "judge"],  # noqa: B006  (read, never changed)
) -> pl.DataFrame:
    """Accuracy against gold labels per ``keys`` over the labelled judgment pairs: ``n``
    pairs, ``accuracy`` (both orders pooled), ``accuracy_shown``, ``accuracy_swapped`` (per
    order) and ``both_correct`` (a failed verdict is not correct); empty when no judgment
    carries a label. The one definition: :func:`voirdire.analysis.position.gold.gold_accuracy`
    (``docs/gold-labels.md``), with ``n_gold`` named ``n``; the counts of
    :func:`voirdire_view` agree with it (``tests/test_gold.py``)."""
    if not has_gold(judgments):
        return pl.DataFrame(schema={**{k: pl.String for k in keys}, "n": pl.Int64})
    return _gold_accuracy(judgments, keys).rename({"n_gold": "n"})


def as_release(voirdire: pl.DataFrame) -> pl.DataFrame:
    """voirdire's counts under the release's names (``equal`` = ``consistent``,
    ``correct_False`` = ``correct_shown``, ...), for comparing the views on pairs that do
    not differ (where ``n == v``)."""
    return voirdire.rename(
        {
            "consistent": "equal",
            "correct_shown": "correct_False",
            "correct_swapped": "correct_True",
            "both_correct": "correct_both",
        }
    ).drop("v", "pc")


__all__ = [
    "KEYS",
    "RELEASE_COLUMNS",
    "VOIRDIRE_COLUMNS",
    "as_release",
    "gold_accuracy",
    "pair_outcomes",
    "release_view",
    "voirdire_view",
]
