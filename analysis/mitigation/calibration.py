"""Logprob calibration (ours): divide out a judge's prior over slots before deciding.

Source: ``docs/mitigation.md``, *Logprob calibration*; the idea is the permutation-based
debiasing of Zheng et al., "Large Language Models Are Not Robust Multiple Choice
Selectors" (2023, PriDe, sec. 4).

Model: in order ``o`` the judge's option probabilities factor as
``p(letter | o) ∝ π(slot) · q(answer shown at that slot)``, a prior over slots ``π`` times
a content term ``q``. For one instance judged in every order of a balanced design (both
orders; cyclic; all orders) each answer visits each slot equally often, so the mean over
the orders of ``log p(slot | o)`` is ``log π(slot)`` plus a term common to every slot:
``softmax`` of that mean recovers ``π`` exactly (PriDe's estimator; the arithmetic mean
of the probabilities does not). Our reading of "the mean over all orders of the instance
set": that log-space mean per instance, averaged over the judge's instances.

Input: judgments with ``option_probs`` (``Map(String, Float64)``, or a list of
``{key, value}`` structs: letter -> probability), as vLLM judges write in logprob mode.
Only the slot letters ``A``/``B`` carry a slot prior; the tie letter ``C`` (three-option
mode) is kept as it is and renormalised with the others.
"""

from __future__ import annotations

import polars as pl

from voirdire.analysis.mitigation.registry import register_strategy
from voirdire.analysis.mitigation.verdicts import (
    VERDICT_KEYS,
    conform,
)
from voirdire.analysis.position.formulas import pf_statistic
from voirdire.analysis.position.pairing import pair_sums, side, verdict_pairs

__all__ = [
    "option_probs_long",
    "slot_prior",
    "candidate_probs",
    "logprob_verdicts",
    "logprob_calibrated",
    "logprob_raw",
    "logprob_debiased",
    "pf_removed",
]

_KV = pl.List(pl.Struct({"key": pl.String, "value": pl.Float64}))
SLOTS = ("A", "B")


def _judgment_rows(judgments: pl.DataFrame, **extra: pl.Expr) -> pl.DataFrame:
    """Every pairwise judgment: :data:`VERDICT_KEYS`, ``row`` (int: its index among the
    pairwise judgments), ``side`` (0: candidate in slot A, 1: in slot B), ``extra``."""
    rows = (
        judgments.filter(pl.col("mode") == "pairwise")
        if "mode" in judgments.columns
        else judgments
    )
    return rows.with_row_index("row").select(
        *VERDICT_KEYS[:-1],
        pl.col("repetition").cast(pl.Int64),
        "row",
        **extra,
        side=side(),
    )


def option_probs_long(judgments: pl.DataFrame) -> pl.DataFrame:
    """One row per (pairwise judgment, letter): :data:`VERDICT_KEYS`, ``side`` (0:
    candidate in slot A, 1: in slot B), ``row`` (int: the judgment's index), ``letter``
    (str), ``prob`` (float).

    Judgments without usable option probabilities have no row, so every strategy reads
    them as ``undecided`` and the slot prior never sees them: no probabilities, or any
    letter's probability null, NaN, infinite or negative, or all of them 0 (a softmax over
    log-probabilities that were all ``-inf`` or NaN gives NaN; read as numbers, NaN
    compares as the largest value and would turn into a tie in every order, a consistent
    verdict the judge never gave)."""
    long = (
        _judgment_rows(judgments, _kv=pl.col("option_probs").cast(_KV))
        .filter(pl.col("_kv").is_not_null())
        .explode("_kv")
        .unnest("_kv")
        .rename({"key": "letter", "value": "prob"})
        .filter(pl.col("letter").is_not_null())
    )
    p = pl.col("prob")
    bad = (p.is_null() | p.is_nan() | p.is_infinite() | (p < 0)).fill_null(True)
    usable = ~bad.any().over("row") & (p.fill_nan(0.0).sum().over("row") > 0)
    return long.filter(usable)


def slot_prior(judgments: pl.DataFrame) -> pl.DataFrame:
    """The judge's prior over slots per (benchmark, judge).

    Per instance (pair key with both orders present, slot probabilities > 0): ``softmax``
    over A/B of the mean over its orders of ``log p(slot | order)``; then the mean over the
    judge's instances, renormalised. Columns: ``benchmark``, ``judge``, ``letter`` (A, B),
    ``prior`` (float, sums to 1 per judge), ``instances`` (int).
    """
    long = option_probs_long(judgments).filter(
        pl.col("letter").is_in(SLOTS) & (pl.col("prob") > 0)
    )
    inst = (
        long.group_by([*VERDICT_KEYS, "letter"])
        .agg(lm=pl.col("prob").log().mean(), orders=pl.col("side").n_unique())
        .filter(pl.col("orders") == 2)
        .with_columns(n_letters=pl.len().over(VERDICT_KEYS))
        .filter(pl.col("n_letters") == len(SLOTS))
        .with_columns(e=(pl.col("lm") - pl.col("lm").max().over(VERDICT_KEYS)).exp())
        .with_columns(pi=pl.col("e") / pl.col("e").sum().over(VERDICT_KEYS))
    )
    return (
        inst.group_by("benchmark", "judge", "letter")
        .agg(prior=pl.col("pi").mean(), instances=pl.len().cast(pl.Int64))
        .with_columns(
            prior=pl.col("prior") / pl.col("prior").sum().over("benchmark", "judge")
        )
        .sort("benchmark", "judge", "letter")
    )


def candidate_probs(judgments: pl.DataFrame, debias: bool = True) -> pl.DataFrame:
    """Per judgment with option probabilities: ``p_win``, ``p_tie``, ``p_loss`` (float,
    from the candidate's side: its slot letter, the tie letter C, the reference's letter),
    after dividing the slot letters by :func:`slot_prior` and renormalising when
    ``debias`` (else the raw probabilities, renormalised over the letters present).
    Columns: :data:`VERDICT_KEYS`, ``side``, those three."""
    long = option_probs_long(judgments)
    if debias:
        prior = slot_prior(judgments).select("benchmark", "judge", "letter", "prior")
        long = long.join(
            prior, on=["benchmark", "judge", "letter"], how="left"
        ).with_columns(prob=pl.col("prob") / pl.col("prior").fill_null(1.0))
    long = long.with_columns(prob=pl.col("prob") / pl.col("prob").sum().over("row"))
    cand = pl.when(pl.col("side") == 0).then(pl.lit("A")).otherwise(pl.lit("B"))
    ref = pl.when(pl.col("side") == 0).then(pl.lit("B")).otherwise(pl.lit("A"))
    return long.group_by([*VERDICT_KEYS, "side", "row"]).agg(
        p_win=pl.col("prob").filter(pl.col("letter") == cand).sum(),
        p_tie=pl.col("prob").filter(pl.col("letter") == "C").sum(),
        p_loss=pl.col("prob").filter(pl.col("letter") == ref).sum(),
    )


def _decide() -> pl.Expr:
    w, t, l_ = pl.col("p_win"), pl.col("p_tie"), pl.col("p_loss")
    return (
        pl.when((w > l_) & (w > t))
        .then(pl.lit("win"))
        .when((l_ > w) & (l_ > t))
        .then(pl.lit("loss"))
        .otherwise(pl.lit("tie"))
    )


def _with_probs(judgments: pl.DataFrame, debias: bool) -> pl.DataFrame:
    """Every pairwise judgment (:func:`_judgment_rows`) with its ``p_win``/``p_tie``/``p_loss``
    (:func:`candidate_probs`), null where it has no option probabilities."""
    p = candidate_probs(judgments, debias).select("row", "p_win", "p_tie", "p_loss")
    return _judgment_rows(judgments).join(p, on="row", how="left")


def logprob_verdicts(judgments: pl.DataFrame, debias: bool = True) -> pl.DataFrame:
    """Per-order verdicts from option probabilities: the most probable of win/tie/loss
    (a tie for the largest gives ``tie``), after dividing out the slot prior when
    ``debias``. A verdict table (``voirdire.analysis.mitigation.verdicts.VERDICT_COLUMNS``) with
    one row per pairwise judgment, ``side`` and 1 query per verdict; a judgment
    without option probabilities (failed, or a backend that gave none) is an
    ``undecided`` row, so it counts in the undecided share and in the cost."""
    p = _with_probs(judgments, debias)
    verdict = (
        pl.when(pl.col("p_win").is_null())
        .then(pl.lit("undecided"))
        .otherwise(_decide())
    )
    return conform(p.with_columns(verdict=verdict, queries=pl.lit(1, dtype=pl.Int64)))


@register_strategy(
    "logprob-calibrated",
    needs=("option_probs",),
    doc="debiased probabilities averaged over positions",
    both_orders=True,
)
def logprob_calibrated(judgments: pl.DataFrame) -> pl.DataFrame:
    """Strategy ``logprob-calibrated``: the verdict of each pair from each answer's debiased probability
    averaged over its positions (both orders), then the most probable of win/tie/loss.
    Order-invariant (``side`` null); ``queries`` = the pair's judgments (2 for
    both orders). A pair with an order that has no option probabilities (or is absent) is
    ``undecided``: it never falls back to the one, biased, order."""
    p = _with_probs(judgments, True)
    agg = p.group_by(VERDICT_KEYS).agg(
        pl.col("p_win").mean(), pl.col("p_tie").mean(), pl.col("p_loss").mean(),
        queries=pl.len().cast(pl.Int64),
        _ok=pl.col("p_win").is_not_null().all() & (pl.col("side").n_unique() == 2),
    )  # fmt: skip
    verdict = pl.when(pl.col("_ok")).then(_decide()).otherwise(pl.lit("undecided"))
    return conform(agg.with_columns(verdict=verdict, side=pl.lit(None, dtype=pl.Int64)))


def _pf(verdicts: pl.DataFrame) -> pl.DataFrame:
    """PF per (benchmark, judge) of per-order verdicts: :func:`~voirdire.analysis.position.
    formulas.pf_statistic` over the cells' sums (the one-replicate case of the bootstrap's)."""
    cells = pair_sums(
        verdict_pairs(verdicts), ["benchmark", "judge", "candidate", "task"]
    )
    rows = [
        (
            b,
            j,
            float(
                pf_statistic(
                    {
                        "n": g.get_column("n").to_numpy()[None, :],
                        "d": g.get_column("d").to_numpy()[None, :],
                        "v": g.get_column("v").to_numpy()[None, :],
                    }
                )[0]
            ),
        )
        for (b, j), g in cells.group_by("benchmark", "judge")
    ]
    return pl.DataFrame(
        rows,
        schema={"benchmark": pl.String, "judge": pl.String, "pf": pl.Float64},
        orient="row",
    )


def pf_removed(judgments: pl.DataFrame) -> pl.DataFrame:
    """How much of |PF| the slot-prior division removes, per (benchmark, judge): ``pf_raw``
    (PF of the per-order argmax verdicts), ``pf_debiased`` (after dividing out the prior),
    ``removed`` (``1 − |pf_debiased| / |pf_raw|``; null when ``pf_raw`` is 0). PF as in
    ``docs/metrics.md`` (mean over cells of (rcn − pcn)/n)."""
    raw = _pf(logprob_verdicts(judgments, False)).rename({"pf": "pf_raw"})
    deb = _pf(logprob_verdicts(judgments, True)).rename({"pf": "pf_debiased"})
    return (
        raw.join(deb, on=["benchmark", "judge"], how="full", coalesce=True)
        .with_columns(
            removed=pl.when(pl.col("pf_raw") != 0).then(
                1 - pl.col("pf_debiased").abs() / pl.col("pf_raw").abs()
            )
        )
        .sort("benchmark", "judge")
    )


@register_strategy(
    "logprob-raw",
    needs=("option_probs",),
    doc="per-order argmax of the option probabilities",
)
def logprob_raw(judgments: pl.DataFrame) -> pl.DataFrame:
    """Strategy ``logprob-raw``: the per-order argmax of the option probabilities."""
    return logprob_verdicts(judgments, debias=False)


@register_strategy(
    "logprob-debiased",
    needs=("option_probs",),
    doc="per-order argmax after dividing out the slot prior",
)
def logprob_debiased(judgments: pl.DataFrame) -> pl.DataFrame:
    """Strategy ``logprob-debiased``: the per-order argmax after dividing out the slot prior."""
    return logprob_verdicts(judgments, debias=True)
