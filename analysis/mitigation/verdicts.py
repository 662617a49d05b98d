"""Removing position bias from finished judgments: strategies that need no new query.

Source: ``docs/mitigation.md`` (Wang et al., "Large Language Models are not Fair
Evaluators", 2023: conflict rate, HITLC/BPDE; MT-Bench's conservative swap rule, Zheng et
al. 2023; practitioners' dual-pass gate and flip rate; PriDe-style logprob calibration,
Zheng et al. 2023, and the jury are ours).

Verdict tables
--------------
Every strategy maps a judgments table (``voirdire.schema.JUDGMENT_SCHEMA``) to a
*verdict table* (:data:`VERDICT_COLUMNS`), one row per final verdict:

==============  ============  ==========================================================
benchmark       str
judge           str           the judge's label, or the panel's name (``panel-N``)
question_id     str
task            str
candidate       str
reference       str
verdict         str           ``win`` | ``tie`` | ``loss`` | ``undecided``, from the
                              candidate's side
queries         int           judge queries spent on this final verdict
side            int | null    0: the candidate was shown first, 1: second; null when the
                              verdict combines both orders (order-invariant by design)
repetition      int           1-based (1 when the strategy has no repetitions)
==============  ============  ==========================================================

The first eight columns are required of any strategy (e.g. the score-based BPC/MEC);
:func:`conform` fills the last two (null, 1) when absent. A strategy is a function
``judgments -> verdict table`` registered by name (:mod:`voirdire.analysis.mitigation.registry`); the steps
below are ``verdict table -> verdict table`` and compose (:func:`pipeline`), e.g. a jury
per order followed by swap-and-tie.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import polars as pl

from voirdire.analysis.key_sort import sort_by_keys
from voirdire.analysis.position.pairing import (
    PAIRWISE_MODES,
    order_verdict,
    pair_sums,
    side,
    verdict_pairs,
)
from voirdire.analysis.position.registry import metric
from voirdire.core import ConfigError

__all__ = [
    "VERDICT_COLUMNS",
    "VERDICT_KEYS",
    "COMPARISON_KEYS",
    "VERDICT_SCHEMA",
    "VERDICTS",
    "Strategy",
    "normalise",
    "conform",
    "flip_rate",
    "pair_orders",
    "flip_flags",
    "swap_and_tie",
    "pair_table",
    "settle_pairs",
    "jury_vote",
    "judge_pc",
    "pipeline",
    "without_judges",
]

VERDICTS = ("win", "tie", "loss", "undecided")
#: Keys of one judgment pair in a verdict table (the two orders share them).
VERDICT_KEYS = [
    "benchmark",
    "judge",
    "question_id",
    "task",
    "candidate",
    "reference",
    "repetition",
]
#: Keys of one comparison (a candidate against the reference on a question, by a judge), all
#: its orders and repetitions together.
COMPARISON_KEYS = VERDICT_KEYS[:-1]
VERDICT_SCHEMA = {
    "benchmark": pl.String,
    "judge": pl.String,
    "question_id": pl.String,
    "task": pl.String,
    "candidate": pl.String,
    "reference": pl.String,
    "verdict": pl.String,
    "queries": pl.Int64,
    "side": pl.Int64,
    "repetition": pl.Int64,
}
#: The columns of a verdict table, in order.
VERDICT_COLUMNS = list(VERDICT_SCHEMA)

Strategy = Callable[[pl.DataFrame], pl.DataFrame]
Step = Callable[[pl.DataFrame], pl.DataFrame]


# --------------------------------------------------------------------------------------
# Normalised verdicts and the flip rate
# --------------------------------------------------------------------------------------


def conform(verdicts: pl.DataFrame) -> pl.DataFrame:
    """A verdict table with exactly :data:`VERDICT_COLUMNS` and their types: ``side``
    (null) and ``repetition`` (1) added when absent. A strategy written before the column
    was named ``side`` may still call it ``permutation``: read as ``side``.

    Raises:
        ConfigError: a required column is missing, or a verdict outside :data:`VERDICTS`.
    """
    missing = [c for c in VERDICT_COLUMNS[:8] if c not in verdicts.columns]
    if missing:
        raise ConfigError(f"verdict table lacks column(s) {', '.join(missing)}")
    v = verdicts
    if "side" not in v.columns and "permutation" in v.columns:
        v = v.rename({"permutation": "side"})
    if "side" not in v.columns:
        v = v.with_columns(side=pl.lit(None, dtype=pl.Int64))
    if "repetition" not in v.columns:
        v = v.with_columns(repetition=pl.lit(1, dtype=pl.Int64))
    v = v.select(VERDICT_COLUMNS).cast(VERDICT_SCHEMA)  # type: ignore[arg-type]
    bad = (
        v.filter(~pl.col("verdict").is_in(VERDICTS))
        .get_column("verdict")
        .unique()
        .to_list()
    )
    if bad:
        raise ConfigError(f"verdicts {bad} not in {list(VERDICTS)}")
    return v


def normalise(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per-order verdicts from the candidate's side (``docs/mitigation.md``, *Verdicts
    normalised to the candidate*): one row per pairwise judgment, ``queries`` 1.

    ``side``: :func:`~voirdire.analysis.position.pairing.side` (0 candidate in slot A, 1
    in slot B; not the job's permutation index); ``verdict``:
    :func:`~voirdire.analysis.position.pairing.order_verdict`.
    """
    rows = (
        judgments.filter(pl.col("mode").is_in(PAIRWISE_MODES))
        if "mode" in judgments.columns
        else judgments
    )
    return conform(
        rows.select(
            "benchmark",
            "judge",
            "question_id",
            "task",
            "candidate",
            "reference",
            verdict=order_verdict(),
            queries=pl.lit(1, dtype=pl.Int64),
            side=side(),
            repetition=pl.col("repetition").cast(pl.Int64),
        )  # fmt: skip
    )


def pair_orders(verdicts: pl.DataFrame) -> pl.DataFrame:
    """Per pair key: ``v1``/``v2`` the verdict with the candidate first/second (null when
    that order is absent; first row if duplicated) and ``queries`` summed: the pairing
    table :func:`~voirdire.analysis.position.pairing.verdict_pairs`."""
    return verdict_pairs(verdicts)


def flip_flags(pairs: pl.DataFrame) -> pl.DataFrame:
    """:func:`pair_orders` rows plus ``pair_ok`` (bool: a decided verdict in both orders)
    and ``flip`` (bool: (win, loss) or (loss, win))."""
    v1, v2 = pl.col("v1"), pl.col("v2")
    ok = v1.is_in(["win", "tie", "loss"]) & v2.is_in(["win", "tie", "loss"])
    flip = ok & (((v1 == "win") & (v2 == "loss")) | ((v1 == "loss") & (v2 == "win")))
    return pairs.with_columns(pair_ok=ok.fill_null(False), flip=flip.fill_null(False))


def flip_rate(verdicts: pl.DataFrame) -> pl.DataFrame:
    """The practitioners' flip rate per (benchmark, judge) (``docs/mitigation.md``, *Flip
    rate*; Wang et al.'s *conflict rate*).

    ``flip = #pairs whose two normalised verdicts differ, neither a tie / #pairs``, over
    pairs with a verdict in both orders; pairs with an undecided (failed) or missing order
    are left out and counted in ``failed_pairs``. Not ``1 − PC``: (win, tie) counts against
    PC but is no flip.

    Returns: ``benchmark``, ``judge`` (str), ``pairs``, ``failed_pairs``, ``flips`` (int),
    ``flip_rate`` (float, null without pairs). Verdicts without ``side`` (combined
    orders) have no pairs.
    """
    return (
        flip_flags(pair_orders(conform(verdicts)))
        .group_by("benchmark", "judge")
        .agg(
            pairs=pl.col("pair_ok").sum().cast(pl.Int64),
            failed_pairs=(~pl.col("pair_ok")).sum().cast(pl.Int64),
            flips=pl.col("flip").sum().cast(pl.Int64),
        )
        .with_columns(
            flip_rate=pl.when(pl.col("pairs") > 0).then(
                pl.col("flips") / pl.col("pairs")
            )
        )
        .sort("benchmark", "judge")
    )


# --------------------------------------------------------------------------------------
# Steps: verdict table -> verdict table
# --------------------------------------------------------------------------------------


def swap_and_tie(verdicts: pl.DataFrame, on_conflict: str = "tie") -> pl.DataFrame:
    """Dual-pass gate / swap-and-tie (``docs/mitigation.md``): one verdict per pair from its
    two orders.

    The common verdict when both orders agree; when they disagree, ``on_conflict``:
    ``"tie"`` (MT-Bench's conservative rule) or ``"undecided"`` (the gate: escalate to a
    stronger judge or a person). A pair with an undecided or missing order is
    ``undecided``. ``queries`` is the sum over both orders (2 for an ordinary pair);
    ``side`` null. Rows already without ``side`` pass through.

    Raises:
        ValueError: ``on_conflict`` not ``"tie"`` or ``"undecided"``.
    """
    return settle_pairs(pair_table(verdicts), on_conflict)


def pair_table(verdicts: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """What :func:`swap_and_tie` settles, whatever its rule: per pair key the two orders'
    verdicts (``v1``, ``v2``: :func:`pair_orders`), ``queries`` summed, sorted by
    :data:`VERDICT_KEYS`; and the rows without ``side``, passed through. The few-valued keys
    (benchmark, judge, task, models) are Enum codes of their sorted names (cast back by
    :func:`settle_pairs`)."""
    v = conform(verdicts)
    # the pairing groups and the sort compare integers there, in the strings' order. Not
    # question_id: nearly one value per pair, coding it costs more than it saves (10^6
    # verdicts: 0.8 s CPU against 0.5 s)
    few = [
        c for c in VERDICT_KEYS if VERDICT_SCHEMA[c] == pl.String and c != "question_id"
    ]
    keys = _in_order(v, few)
    pairs = pair_orders(keys).select(
        *COMPARISON_KEYS, "v1", "v2", queries="queries",
        side=pl.lit(None, dtype=pl.Int64), repetition="repetition",
    )  # fmt: skip
    # one row per key: the sort has one answer, the rows passed through join it later
    return pairs.sort(VERDICT_KEYS), keys.filter(pl.col("side").is_null())


def settle_pairs(
    table: tuple[pl.DataFrame, pl.DataFrame], on_conflict: str = "tie"
) -> pl.DataFrame:
    """:func:`swap_and_tie`'s verdicts from its :func:`pair_table` ``table``.

    Raises:
        ValueError: ``on_conflict`` not ``"tie"`` or ``"undecided"``.
    """
    if on_conflict not in ("tie", "undecided"):
        raise ValueError(
            f"on_conflict must be 'tie' or 'undecided', not {on_conflict!r}"
        )
    pairs, passed = table
    v1, v2 = pl.col("v1"), pl.col("v2")
    decided = v1.is_in(["win", "tie", "loss"]) & v2.is_in(["win", "tie", "loss"])
    final = (
        pl.when(~decided.fill_null(False))
        .then(pl.lit("undecided"))
        .when(v1 == v2)
        .then(v1)
        .otherwise(pl.lit(on_conflict))
    )
    combined = pairs.with_columns(verdict=final).select(passed.columns)
    if passed.height:
        combined = pl.concat([combined, passed]).sort(VERDICT_KEYS)
    return conform(combined)


def _in_order(v: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """``v`` with each of the String ``columns`` cast to a :class:`polars.Enum` of its
    values sorted (nulls stay null): grouped, joined and sorted by their integer codes, in
    the order the strings sort in."""
    return v.with_columns(
        pl.col(c).cast(pl.Enum(v.get_column(c).drop_nulls().unique().sort()))
        for c in columns
    )


def judge_pc(verdicts: pl.DataFrame) -> pl.DataFrame:
    """Position consistency per (benchmark, judge) of per-order verdicts: the registered
    ``pc`` (:mod:`voirdire.analysis.position.builtin_metrics`, ``Σ ccn / Σ v``,
    ``docs/metrics.md``) on the pairs of :func:`~voirdire.analysis.position.pairing.
    verdict_pairs`. Columns ``benchmark``, ``judge``, ``pc`` (float; null without a pair
    consistent or inconsistent, the rule of every registered figure)."""
    s = pair_sums(verdict_pairs(conform(verdicts)), ["benchmark", "judge"])
    pc = metric("pc")({c: s.get_column(c).to_numpy()[:, None] for c in ("ccn", "v")})
    return s.select(
        "benchmark", "judge", pc=pl.Series(pc, dtype=pl.Float64).fill_nan(None)
    )


def jury_vote(
    verdicts: pl.DataFrame,
    *,
    weights: pl.DataFrame | None = None,
    name: str | None = None,
) -> pl.DataFrame:
    """A panel's verdict from its judges' verdicts (``docs/mitigation.md``, *Jury*, ours).

    Per (benchmark, question, task, candidate, reference, side, repetition), each
    judge's decided verdict is a vote (weight 1, or the judge's ``weight`` from
    ``weights``: columns ``benchmark``, ``judge``, ``weight``, e.g. :func:`judge_pc`'s
    ``pc``); the verdict with the largest total wins, and a tie for the largest total gives
    ``tie``. No vote: ``undecided``. ``queries`` sums the members' queries (failed ones
    included). The panel is named ``name`` (default ``panel-N``, N judges in the
    benchmark). Votes per order keep ``side``, so the panel has its own PC, PF and
    flip rate.
    """
    v = conform(verdicts)
    keys = [
        "benchmark",
        "question_id",
        "task",
        "candidate",
        "reference",
        "side",
        "repetition",
    ]
    if weights is not None:
        v = v.join(
            weights.select("benchmark", "judge", "weight"),
            on=["benchmark", "judge"],
            how="left",
        ).with_columns(pl.col("weight").fill_null(0.0))
    else:
        v = v.with_columns(weight=pl.lit(1.0))
    size = v.group_by("benchmark").agg(_n=pl.col("judge").n_unique())
    cost = v.group_by(keys).agg(queries=pl.col("queries").sum())
    tally = (
        v.filter(pl.col("verdict") != "undecided")
        .group_by([*keys, "verdict"])
        .agg(w=pl.col("weight").sum())
        .with_columns(top=pl.col("w").max().over(keys))
        .filter((pl.col("w") == pl.col("top")) & (pl.col("top") > 0))
        .group_by(keys)
        .agg(n_top=pl.len(), best=pl.col("verdict").first())
        .select(
            *keys,
            verdict=pl.when(pl.col("n_top") > 1)
            .then(pl.lit("tie"))
            .otherwise(pl.col("best")),
        )
    )
    out = (
        cost.join(tally, on=keys, how="left", nulls_equal=True)
        .join(size, on="benchmark")
        .with_columns(
            verdict=pl.col("verdict").fill_null("undecided"),
            judge=pl.lit(name) if name else pl.format("panel-{}", pl.col("_n")),
        )
    )
    return sort_by_keys(conform(out), [*VERDICT_KEYS, "side"], nulls_last=True)


def pipeline(*steps: Step) -> Strategy:
    """The composition ``steps[-1](...steps[1](steps[0](judgments)))``, e.g.
    ``pipeline(normalise, jury_vote, swap_and_tie)``."""

    def run(judgments: pl.DataFrame) -> pl.DataFrame:
        out = judgments
        for step in steps:
            out = step(out)
        return conform(out)

    return run


def without_judges(strategy: Strategy, judges: Iterable[str]) -> Strategy:
    """``strategy`` applied to the judgments of the other judges (e.g. a jury without the
    reference judge, so that agreement with the reference is not inflated)."""
    drop = list(judges)

    def run(judgments: pl.DataFrame) -> pl.DataFrame:
        return strategy(judgments.filter(~pl.col("judge").is_in(drop)))

    return run
