"""List-wise position-bias metrics: judgments of p >= 3 candidates in, metric tables out.

Definitions: ``shared/spec/metrics.md``, section *List-wise*, extending Shi et al.,
"Judging the Judges: A Systematic Study of Position Bias in LLM-as-a-Judge" (list-wise
section; the paper shows p = 3 candidates in their p cyclic orders). Pure polars
expressions, no row loops. Registered with
:func:`voirdire.analysis.metrics.register_unit_builder` as the ``"listwise"`` builder, so
:func:`~voirdire.analysis.metrics.unit_metrics`, ``judge_metrics`` and ``summarize``
include list-wise rows; repetition stability (RS) is mode-agnostic and needs nothing here.

Terms
-----
- A **series** is the judgments of one judge on one instance (question + candidate list)
  over all its permutations, in one repetition (pairwise: a judgment pair).
- A judgment's letter names a slot (``A`` first); with option mode p + 1 the letter after
  the last slot is the tie. Any other extracted letter is *other* (chooses nothing).

Series classes (:func:`listwise_series`)
---------------------------------------
- ``error``: a judgment failed (no verdict), or the series has fewer judgments than the
  largest series of its (benchmark, judge, list size, option mode) (an order is missing).
- ``other``: a judgment extracted a letter outside the options (the release's rule: such
  a series is neither consistent nor biased, but counts in ``n``).
- ``consistent``: every choice selects the same candidate, or every choice is a tie.
- ``primacy``: inconsistent, and the share of its non-tie choices that pick slot A
  exceeds 1/p; ``recency``: inconsistent otherwise (one-vs-all preference, **ours**; it
  reduces exactly to the pairwise classes at p = 2).

Units
-----
The unit is (benchmark, judge, candidate, task) as in the pairwise analysis: a series
counts in the unit of **each** of its p candidates. For candidate ``i``: ``n`` series
(all classes), ``ccn``/``pcn``/``rcn`` consistent/primacy/recency series, ``v = ccn +
pcn + rcn``; ``PC = ccn / v``; ``PF = (rcn·irr − pcn·ipr) / n`` as pairwise; ``owr =
(C_w + (C_t + C_I)/p) / v`` with ``C_w`` consistent series won by ``i``, ``C_t``
consistent all-tie series, ``C_I = pcn + rcn``; ``quality_gap = |owr − 1/p|``. Per-judge
PC pools ``Σccn/Σv`` over units, so each series weighs p times, equally for all series.
"""

from __future__ import annotations

import polars as pl
from voirdire.analysis.metrics import (
    LENGTHS,
    UNIT_COLUMNS,
    UNIT_KEYS,
    _no_verdict,
    _safe_div,
)

__all__ = [
    "SERIES_KEYS",
    "SERIES_COLUMNS",
    "SLOT_COLUMNS",
    "listwise_series",
    "listwise_unit_metrics",
    "slot_shares",
]

#: One series: a judge's judgments of one instance (question + list) in one repetition.
SERIES_KEYS = ["benchmark", "judge", "task", "question_id", "candidates", "repetition", "option_mode"]
SERIES_COLUMNS = [*SERIES_KEYS, "p", "n_judgments", "klass", "winner", "all_tie", "slot_a_share", *LENGTHS]
SLOT_COLUMNS = [
    "benchmark", "judge", "list_size", "option_mode", "slot", "position",
    "choices", "n_choices", "share", "expected", "excess", "tie_share",
]  # fmt: skip


def _slot_code() -> pl.Expr:
    """0-based slot index of the extracted letter (``A`` = 0), null when none or not one
    upper-case letter."""
    letter = pl.col("extracted")
    one = letter.str.len_bytes().eq(1) & letter.is_not_null()
    code = letter.str.encode("hex").str.to_integer(base=16, strict=False).cast(pl.Int32) - ord("A")
    return pl.when(one & ~_no_verdict()).then(code).otherwise(None)


def _annotated(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Rows with ``_p``, ``_code``, ``_fail``, ``_tie``, ``_slot`` (in a slot), ``_other``,
    ``_chosen`` (the model in the chosen slot)."""
    p = pl.col("shown").list.len().cast(pl.Int32)
    code = pl.col("_code")
    return rows.with_columns(_p=p, _code=_slot_code(), _fail=_no_verdict()).with_columns(
        _tie=(code == pl.col("_p")) & (pl.col("option_mode") > pl.col("_p")),
        _slot=(code >= 0) & (code < pl.col("_p")),
    ).with_columns(
        _tie=pl.col("_tie").fill_null(False),
        _slot=pl.col("_slot").fill_null(False),
        _other=(~pl.col("_fail") & ~pl.col("_tie").fill_null(False) & ~pl.col("_slot").fill_null(False)),
        _chosen=pl.when(pl.col("_slot")).then(pl.col("shown").list.get(code.clip(0, 64), null_on_oob=True)),
    )


def listwise_series(judgments: pl.DataFrame) -> pl.DataFrame:
    """Form and classify the list-wise series (see the module docstring).

    Rows with ``mode != "listwise"`` are ignored. Reads ``benchmark``, ``judge``, ``task``,
    ``question_id``, ``candidates`` (list[str]), ``shown`` (list[str]), ``repetition``,
    ``option_mode``, ``extracted``, ``failed`` and the lengths.

    Output columns (:data:`SERIES_COLUMNS`), one row per series:

    - the keys (``candidates`` as list[str]); ``p`` (int): list size;
    - ``n_judgments`` (int): judgments in the series;
    - ``klass`` (str): ``error`` | ``other`` | ``consistent`` | ``primacy`` | ``recency``;
    - ``winner`` (str | null): the candidate a consistent series chose (null for ties and
      other classes);
    - ``all_tie`` (bool): consistent because every choice is a tie;
    - ``slot_a_share`` (float | null): share of non-tie choices that picked slot A;
    - ``input_chars``, ``output_chars``, ``prompt_chars`` (float): means over the series.
    """
    rows = _annotated(judgments.lazy().filter(pl.col("mode") == "listwise"))
    series = rows.group_by(SERIES_KEYS).agg(
        p=pl.col("_p").max(),
        n_judgments=pl.len().cast(pl.Int64),
        _failed=pl.col("_fail").sum(),
        _other=pl.col("_other").sum(),
        _ties=pl.col("_tie").sum(),
        _picks=pl.col("_slot").sum(),
        _distinct=pl.col("_chosen").drop_nulls().n_unique(),
        _first_pick=pl.col("_chosen").drop_nulls().first(),
        _slot_a=(pl.col("_slot") & (pl.col("_code") == 0)).sum(),
        *[pl.col(c).mean().cast(pl.Float64) for c in LENGTHS],
    )
    group = ["benchmark", "judge", "p", "option_mode"]
    series = series.with_columns(_expected=pl.col("n_judgments").max().over(group))
    n, ties, picks = pl.col("n_judgments"), pl.col("_ties"), pl.col("_picks")
    share = _safe_div(pl.col("_slot_a"), picks)
    all_tie = (ties == n) & (n > 0)
    same = (ties == 0) & (picks == n) & (pl.col("_distinct") == 1)
    klass = (
        pl.when((pl.col("_failed") > 0) | (n < pl.col("_expected")))
        .then(pl.lit("error"))
        .when(pl.col("_other") > 0)
        .then(pl.lit("other"))
        .when(all_tie | same)
        .then(pl.lit("consistent"))
        .when(share > 1.0 / pl.col("p"))
        .then(pl.lit("primacy"))
        .otherwise(pl.lit("recency"))
    )
    return (
        series.with_columns(klass=klass, slot_a_share=pl.when(picks > 0).then(share))
        .with_columns(
            winner=pl.when((pl.col("klass") == "consistent") & same).then(pl.col("_first_pick")),
            all_tie=(pl.col("klass") == "consistent") & all_tie,
        )
        .select(SERIES_COLUMNS)
        .sort(["benchmark", "judge", "task", "question_id", "repetition", "option_mode"])
        .collect()
    )


def listwise_unit_metrics(rows: pl.DataFrame) -> pl.DataFrame:
    """Per-unit (benchmark, judge, candidate, task) list-wise metrics.

    Source: ``spec/metrics.md``, *List-wise* (see the module docstring for the formulas).
    Output columns: :data:`voirdire.analysis.metrics.UNIT_COLUMNS` (``n``, ``consistent``,
    ``primacy``, ``recency`` int; ``pc``, ``pf``, ``owr``, ``quality_gap`` and the mean
    lengths float), one row per candidate per task per judge.
    """
    series = listwise_series(rows)
    k = pl.col("klass")
    per = (
        series.lazy()
        .with_columns(candidate=pl.col("candidates"))
        .explode("candidate")
        .with_columns(
            _c=(k == "consistent"),
            _i=(k == "primacy") | (k == "recency"),
            _w=(k == "consistent") & (pl.col("winner") == pl.col("candidate")).fill_null(False),
        )
        .with_columns(
            _owr_num=pl.col("_w").cast(pl.Float64)
            + (pl.col("all_tie").cast(pl.Float64) + pl.col("_i").cast(pl.Float64)) / pl.col("p")
        )
    )
    counts = per.group_by(UNIT_KEYS).agg(
        n=pl.len().cast(pl.Int64),
        consistent=(k == "consistent").sum().cast(pl.Int64),
        primacy=(k == "primacy").sum().cast(pl.Int64),
        recency=(k == "recency").sum().cast(pl.Int64),
        _owr_num=pl.col("_owr_num").filter(k.is_in(["consistent", "primacy", "recency"])).sum(),
        _inv_p=(1.0 / pl.col("p")).mean(),
        *[pl.col(c).mean().cast(pl.Float64) for c in LENGTHS],
    )
    ccn, pcn, rcn, n = pl.col("consistent"), pl.col("primacy"), pl.col("recency"), pl.col("n")
    v = ccn + pcn + rcn
    inc = pcn + rcn
    ipr, irr = _safe_div(pcn, inc), _safe_div(rcn, inc)
    return (
        counts.with_columns(
            pc=_safe_div(ccn, v),
            pf=_safe_div(rcn * irr - pcn * ipr, n),
            owr=_safe_div(pl.col("_owr_num"), v),
        )
        .with_columns(quality_gap=(pl.col("owr") - pl.col("_inv_p")).abs())
        .select(UNIT_COLUMNS)
        .sort(UNIT_KEYS)
        .collect()
    )


def slot_shares(judgments: pl.DataFrame) -> pl.DataFrame:
    """How often each slot is chosen, against the 1/p of a judge without position bias.

    Over the list-wise judgments whose verdict picks a slot (ties, failures and other
    letters excluded), per (benchmark, judge, list size p, option mode) and slot.

    Output columns (:data:`SLOT_COLUMNS`): benchmark, judge, ``list_size`` (int),
    ``option_mode`` (int), ``slot`` (str, ``A``..), ``position`` (int, 1-based),
    ``choices`` (int: judgments picking the slot), ``n_choices`` (int: judgments picking
    any slot), ``share`` (float: choices / n_choices, 0 when none), ``expected`` (float:
    1/p), ``excess`` (float: share − 1/p; > 0 at slot A is a primacy preference, at the
    last slot a recency preference), ``tie_share`` (float: ties / judgments with a
    verdict, the same on every slot row of a group). Every slot has a row, chosen or not.
    """
    rows = _annotated(judgments.lazy().filter(pl.col("mode") == "listwise"))
    keys = ["benchmark", "judge", "list_size", "option_mode"]
    rows = rows.with_columns(list_size=pl.col("_p"))
    totals = rows.group_by(keys).agg(
        n_choices=pl.col("_slot").sum().cast(pl.Int64),
        _ties=pl.col("_tie").sum(),
        _verdicts=(~pl.col("_fail")).sum(),
    )
    slots = (
        totals.select(keys)
        .with_columns(position=pl.int_ranges(1, pl.col("list_size") + 1))
        .explode("position")
        .with_columns(pl.col("position").cast(pl.Int32))
    )
    picks = (
        rows.filter(pl.col("_slot"))
        .group_by([*keys, (pl.col("_code") + 1).cast(pl.Int32).alias("position")])
        .agg(choices=pl.len().cast(pl.Int64))
    )
    return (
        slots.join(picks, on=[*keys, "position"], how="left")
        .join(totals, on=keys, how="left")
        .with_columns(
            pl.col("choices").fill_null(0),
            slot=pl.lit("ABCDEFGHI").str.slice(pl.col("position") - 1, 1),
        )
        .with_columns(
            share=_safe_div(pl.col("choices"), pl.col("n_choices")),
            expected=1.0 / pl.col("list_size").cast(pl.Float64),
            tie_share=_safe_div(pl.col("_ties"), pl.col("_verdicts")),
        )
        .with_columns(excess=pl.col("share") - pl.col("expected"))
        .with_columns(pl.col("list_size").cast(pl.Int64), pl.col("option_mode").cast(pl.Int64), pl.col("position").cast(pl.Int64))
        .select(SLOT_COLUMNS)
        .sort(keys + ["position"])
        .collect()
    )
