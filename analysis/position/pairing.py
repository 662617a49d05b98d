"""The one pairing: where a verdict in one order meets its partner in the other order.

Source: Shi et al., "Judging the Judges" (a *judgment pair*: one comparison judged with the
candidate shown first and with it shown second); ``docs/metrics.md``, *Pairwise
classification of a judgment pair*; ``docs/mitigation.md``, *Verdicts normalised to the
candidate*. Every metric, strategy and board that compares the two orders reads the table
of :func:`judgment_pairs` (judgments) or :func:`verdict_pairs` (a strategy's per-order
verdicts); both are made by one group-by (:func:`meet_orders`). Pure polars, no I/O.

Names (one meaning each):

- **side**: which order a row is, ``0`` the candidate shown first (``shown[0] ==
  candidate``, :func:`candidate_first`), ``1`` shown second; the ``side`` column of the
  verdict tables. It is not ``permutation``, the job's index of an order of the answers.
- **verdict**: the letter read from the candidate's side (:func:`order_verdict`):
  ``win``, ``tie``, ``loss`` or ``undecided``.

Pair classes (:func:`pair_class`, from the two verdicts ``(v1, v2)``; the letters of
Shi et al. in brackets, candidate first then second):

- ``error``: either order without a verdict (failed, or absent);
- ``consistent``: (win, win) [A,B], (loss, loss) [B,A], (tie, tie) [C,C];
- ``primacy``: (win, loss) [A,A], (win, tie) [A,C], (tie, loss) [C,A];
- ``recency``: (loss, win) [B,B], (loss, tie) [B,C], (tie, win) [C,B];
- ``other``: any other pair (a letter outside the options, e.g. ``D``, or ``C`` in
  two-option mode).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from voirdire.analysis.position.formulas import LENGTHS, no_verdict

__all__ = [
    "PAIRWISE_MODES",
    "PAIR_KEYS",
    "PAIR_SCHEMA",
    "DECIDED",
    "candidate_first",
    "side",
    "order_verdict",
    "pair_class",
    "meet_orders",
    "judgment_pairs",
    "verdict_pairs",
    "pair_sums",
]

#: Modes whose judgments form pairwise judgment pairs: choices, and score mode's letters
#: derived from the two scores (A higher, B higher, C equal).
PAIRWISE_MODES = ["pairwise", "score"]
#: A judgment pair: the two orders of one (candidate, reference) comparison on one question
#: in one repetition. ``reference`` and ``option_mode`` only split pairs in tables that mix
#: several references or option modes under one judge label.
PAIR_KEYS = [
    "benchmark",
    "judge",
    "candidate",
    "task",
    "question_id",
    "repetition",
    "reference",
    "option_mode",
]
#: The decided verdicts (``undecided`` is none of them).
DECIDED = ("win", "tie", "loss")

#: Columns and types of :func:`judgment_pairs` (keys typed as in the judgments table).
PAIR_SCHEMA = {
    "c1": pl.String,
    "c2": pl.String,
    "v1": pl.String,
    "v2": pl.String,
    "klass": pl.String,
    "candidate_wins": pl.Boolean,
    "consistent_tie": pl.Boolean,
    "both_orders": pl.Boolean,
    **dict.fromkeys(LENGTHS, pl.Float64),
}


def candidate_first() -> pl.Expr:
    """True where the candidate is shown first (``shown[0] == candidate``); false where it
    is shown second, and where ``shown`` is null. The one spelling of "candidate shown
    first" in the analysis."""
    return (pl.col("shown").list.first() == pl.col("candidate")).fill_null(False)


def side() -> pl.Expr:
    """The side of a judgment (Int64): 0 when the candidate is shown first, else 1."""
    return pl.when(candidate_first()).then(0).otherwise(1).cast(pl.Int64)


def order_verdict() -> pl.Expr:
    """The verdict of one judgment from the candidate's side (str): the candidate's slot
    letter (``A`` when shown first, else ``B``) → ``win``, the other slot → ``loss``, ``C``
    in three-option mode → ``tie``; no verdict (:func:`~voirdire.analysis.position.
    formulas.no_verdict`) or a letter outside the options → ``undecided``."""
    x = pl.col("extracted")
    return (
        pl.when(no_verdict())
        .then(pl.lit("undecided"))
        .when(candidate_first())
        .then(_letter_verdict(x, True))
        .otherwise(_letter_verdict(x, False))
    )


def _letter_verdict(x: pl.Expr, first: bool) -> pl.Expr:
    """:func:`order_verdict` of an extracted letter ``x`` with the candidate shown first
    (``first``) or second; ``undecided`` for a letter outside the options, null for null."""
    win, loss = ("A", "B") if first else ("B", "A")
    return (
        pl.when(x.is_null())
        .then(None)
        .when(x == win)
        .then(pl.lit("win"))
        .when(x == loss)
        .then(pl.lit("loss"))
        .when((x == "C") & (pl.col("option_mode") == 3))
        .then(pl.lit("tie"))
        .otherwise(pl.lit("undecided"))
    )


def pair_class(v1: pl.Expr, v2: pl.Expr) -> pl.Expr:
    """The class of a pair (str, module docstring) from its verdicts with the candidate
    shown first (``v1``) and second (``v2``); null means no verdict (``error``)."""
    w1, t1, l1 = v1.eq_missing("win"), v1.eq_missing("tie"), v1.eq_missing("loss")
    w2, t2, l2 = v2.eq_missing("win"), v2.eq_missing("tie"), v2.eq_missing("loss")
    return (
        pl.when(v1.is_null() | v2.is_null())
        .then(pl.lit("error"))
        .when((w1 & w2) | (l1 & l2) | (t1 & t2))
        .then(pl.lit("consistent"))
        .when((w1 & l2) | (w1 & t2) | (t1 & l2))
        .then(pl.lit("primacy"))
        .when((l1 & w2) | (l1 & t2) | (t1 & w2))
        .then(pl.lit("recency"))
        .otherwise(pl.lit("other"))
    )


def meet_orders(
    per_order: pl.LazyFrame, keys: Sequence[str], values: dict[str, str], *aggs: pl.Expr
) -> pl.LazyFrame:
    """The only place two orders meet. ``per_order``: one row per judgment (or per-order
    verdict) with the ``keys``, a ``side`` column (Int64: 0 the candidate shown first, 1
    shown second; :func:`side`) and the ``values`` columns.

    Returns, per ``keys``: ``asked1`` / ``asked2`` (bool: side 0 / 1 has a row), for each
    ``values`` item ``{column: out}`` the columns ``<out>1`` / ``<out>2`` (the value on side
    0 / 1; null when that side is absent; the first row when duplicated), and ``aggs``
    over all the pair's rows."""
    s = pl.col("side")
    return per_order.group_by(list(keys)).agg(
        (s == 0).any().alias("asked1"),
        (s == 1).any().alias("asked2"),
        *[pl.col(c).filter(s == 0).first().alias(f"{o}1") for c, o in values.items()],
        *[pl.col(c).filter(s == 1).first().alias(f"{o}2") for c, o in values.items()],
        *aggs,
    )


def judgment_pairs(judgments: pl.DataFrame) -> pl.DataFrame:
    """The pairing table of a judgments table: one row per judgment pair.

    Rows of modes other than :data:`PAIRWISE_MODES` are ignored. Repetition ``k`` of the
    candidate-first order pairs with repetition ``k`` of the candidate-second order.

    Returns :data:`PAIR_KEYS` (typed as in ``judgments``) and :data:`PAIR_SCHEMA`:

    - ``c1``, ``c2`` (str | null): the extracted letter with the candidate shown first /
      second; null when that judgment has no verdict or its row is absent;
    - ``v1``, ``v2`` (str | null): the same judgments' verdicts (:func:`order_verdict`),
      null where ``c1`` / ``c2`` is;
    - ``klass`` (str): :func:`pair_class` of ``(v1, v2)``;
    - ``candidate_wins`` (bool): (win, win); ``consistent_tie`` (bool): (tie, tie);
    - ``both_orders`` (bool): both orders have a row (asked), whether or not they have a
      verdict; false for a pair of a one-order log;
    - ``input_chars``, ``output_chars``, ``prompt_chars`` (float): means over the pair's
      rows.

    If an order has several rows (duplicates), the first is taken.
    """
    rows = judgments.lazy().filter(pl.col("mode").is_in(PAIRWISE_MODES))
    letter = pl.when(no_verdict()).then(None).otherwise(pl.col("extracted"))
    per_order = rows.select(*PAIR_KEYS, *LENGTHS, _c=letter, side=side())
    lengths = [pl.col(c).mean().cast(pl.Float64) for c in LENGTHS]
    pairs = meet_orders(per_order, PAIR_KEYS, {"_c": "c"}, *lengths).with_columns(
        v1=_letter_verdict(pl.col("c1"), True), v2=_letter_verdict(pl.col("c2"), False)
    )  # option_mode is a pair key: one value for both orders
    v1, v2 = pl.col("v1"), pl.col("v2")
    return (
        pairs.with_columns(
            klass=pair_class(v1, v2),
            candidate_wins=v1.eq_missing("win") & v2.eq_missing("win"),
            consistent_tie=v1.eq_missing("tie") & v2.eq_missing("tie"),
            both_orders=pl.col("asked1") & pl.col("asked2"),
        )
        .select(*PAIR_KEYS, *PAIR_SCHEMA)
        .collect()
    )


def verdict_pairs(verdicts: pl.DataFrame, by: Sequence[str] = ()) -> pl.DataFrame:
    """The pairing table of a per-order verdict table (``voirdire.analysis.mitigation.
    verdicts.VERDICT_COLUMNS``; rows without a ``side``, combined
    orders, have no pair).

    One row per (benchmark, judge, question_id, task, candidate, reference, repetition,
    *by*): ``v1``, ``v2`` (str | null: the verdict with the candidate shown first / second,
    null when that order is absent; the first row when duplicated), ``queries`` (int: sum
    over the pair's rows), ``klass`` (str: :func:`pair_class`, an ``undecided`` order
    counting as no verdict, i.e. ``error``)."""
    keys = list(
        dict.fromkeys(
            ["benchmark", "judge", "question_id", "task", "candidate", "reference",
             "repetition", *by]
        )
    )  # fmt: skip
    per_order = verdicts.lazy().filter(pl.col("side").is_not_null())
    decided = [pl.when(pl.col(c).is_in(DECIDED)).then(pl.col(c)) for c in ("v1", "v2")]
    return (
        meet_orders(per_order, keys, {"verdict": "v"}, pl.col("queries").sum())
        .with_columns(klass=pair_class(*decided))
        .collect()
    )


def pair_sums(pairs: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """Per ``keys`` (e.g. benchmark, judge, candidate, task, question_id) the sufficient
    statistics of PC and PF of a pairing table (float): ``n`` pairs (all classes), ``ccn``
    consistent, ``v`` consistent or inconsistent, ``d`` = recency − primacy (the PF
    numerator). ``docs/metrics.md``, *Per cell*."""
    k = pl.col("klass")
    return pairs.group_by(list(keys)).agg(
        n=pl.len().cast(pl.Float64),
        ccn=(k == "consistent").sum().cast(pl.Float64),
        v=k.is_in(["consistent", "primacy", "recency"]).sum().cast(pl.Float64),
        d=(
            (k == "recency").sum().cast(pl.Float64)
            - (k == "primacy").sum().cast(pl.Float64)
        ),
    )
