"""Position-bias metrics: judgments table in, metric tables out.

Pure functions over polars DataFrames (no I/O, no Python row loops). The definitions are
those of ``shared/spec/metrics.md`` (the contract), which follows Shi et al., "Judging the
Judges: A Systematic Study of Position Bias in LLM-as-a-Judge", and the conventions of its
public release, so that the release's raw judge outputs reproduce the paper's tables.

Input
-----
A judgments table (``voirdire.engine.schema.JUDGMENT_SCHEMA``); the columns read are

==============  ===========  =====================================================
benchmark       str
judge           str
question_id     str
task            str
candidate       str          pairwise: the model compared with the reference
reference       str          pairwise: the reference model
shown           list[str]    the models in slot order (slot ``A`` first)
repetition      int          1-based
mode            str          ``"pairwise"`` | ``"listwise"``
option_mode     int          pairwise: 2 (A/B) or 3 (A/B/C = tie)
query_id        str          the same for all repetitions of one prompt
extracted       str | null   the extracted letter, null when failed
failed          bool         no verdict (the call failed or nothing was extracted)
input_chars     int          question(s), summed over turns
output_chars    int          the shown answers, summed over turns
prompt_chars    int          the full prompt sent to the judge
==============  ===========  =====================================================

A row counts as *failed* (no verdict) when ``failed`` is true **or** ``extracted`` is null;
the two agree in tables written by the engine.

Modes
-----
Pairwise rows are handled here; list-wise rows (``mode == "listwise"``) by
:mod:`voirdire.analysis.listwise`, registered at the end of this module with
:func:`register_unit_builder` (the extension point: a builder maps the rows of one mode to
unit rows with the columns of :data:`UNIT_COLUMNS`; the per-judge pooling, error rate and
repetition stability are mode-agnostic and need no change). Rows of a mode with no
builder are skipped with a warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import polars as pl

__all__ = [
    "PAIR_COLUMNS",
    "UNIT_COLUMNS",
    "JUDGE_COLUMNS",
    "RS_COLUMNS",
    "pairwise_pairs",
    "unit_metrics",
    "judge_from_units",
    "judge_metrics",
    "repetition_stability",
    "query_stability",
    "summarize",
    "register_unit_builder",
]

LENGTHS = ["input_chars", "output_chars", "prompt_chars"]
UNIT_KEYS = ["benchmark", "judge", "candidate", "task"]
JUDGE_KEYS = ["benchmark", "judge"]
QUERY_KEYS = ["benchmark", "judge", "query_id"]
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

PAIR_COLUMNS = [*PAIR_KEYS, "c1", "c2", "klass", "candidate_wins", "consistent_tie", *LENGTHS]
UNIT_COLUMNS = [
    *UNIT_KEYS,
    "n",
    "consistent",
    "primacy",
    "recency",
    "pc",
    "pf",
    "owr",
    "quality_gap",
    *LENGTHS,
]
JUDGE_COLUMNS = [
    *JUDGE_KEYS,
    "pc",
    "pc_std",
    "pf",
    "pf_std",
    "error_rate",
    "rs",
    "rs_spread",
    "n_units",
    "n_judgments",
]
RS_COLUMNS = [*JUDGE_KEYS, "rs", "rs_spread", "n_queries"]

#: Modes whose judgments form pairwise judgment pairs: choices, and score mode's letters
#: derived from the two scores (A higher, B higher, C equal).
PAIRWISE_MODES = ["pairwise", "score"]
KLASSES = ("consistent", "primacy", "recency", "error", "other")

_UNIT_SCHEMA = {
    "benchmark": pl.String,
    "judge": pl.String,
    "candidate": pl.String,
    "task": pl.String,
    "n": pl.Int64,
    "consistent": pl.Int64,
    "primacy": pl.Int64,
    "recency": pl.Int64,
    "pc": pl.Float64,
    "pf": pl.Float64,
    "owr": pl.Float64,
    "quality_gap": pl.Float64,
    "input_chars": pl.Float64,
    "output_chars": pl.Float64,
    "prompt_chars": pl.Float64,
}


def _no_verdict() -> pl.Expr:
    """True for a judgment without a verdict: failed, or no letter extracted."""
    return pl.col("failed").fill_null(False) | pl.col("extracted").is_null()


def _safe_div(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    """``num / den`` as float, 0 where ``den == 0``."""
    return pl.when(den == 0).then(pl.lit(0.0)).otherwise(num.cast(pl.Float64) / den)


# --------------------------------------------------------------------------------------
# Pairwise
# --------------------------------------------------------------------------------------


def pairwise_pairs(judgments: pl.DataFrame) -> pl.DataFrame:
    """Form the judgment pairs of the pairwise rows and classify them.

    Source: Shi et al., "Judging the Judges"; ``spec/metrics.md``, *Pairwise classification
    of a judgment pair*. Rows of other modes than :data:`PAIRWISE_MODES` are ignored.

    One row per pair key (:data:`PAIR_KEYS`: benchmark, judge, candidate, task, question_id,
    repetition, and reference / option_mode, which are constant in ordinary tables). Pairs
    are formed per repetition: repetition ``k`` of the candidate-first order pairs with
    repetition ``k`` of the candidate-second order.

    Output columns (:data:`PAIR_COLUMNS`):

    - the keys;
    - ``c1`` (str | null): the letter extracted with the candidate shown first
      (``shown[0] == candidate``); ``c2``: with the candidate shown second. Null when that
      judgment failed or its row is absent. If an order has several rows (duplicates), the
      first is taken.
    - ``klass`` (str): ``"error"`` if either side is null (failed or missing: a pair with
      only one of its two orders present is an error pair); else ``"consistent"`` for
      (A,B), (B,A), (C,C); ``"primacy"`` for (A,A), (A,C), (C,A); ``"recency"`` for (B,B),
      (B,C), (C,B); ``"other"`` for extracted letters in no class (``D``; ``C`` in two-option
      mode, where ``C`` is not an option). ``C`` is the tie letter only when
      ``option_mode == 3``; ties are read from the letters, not the ``tie`` column.
    - ``candidate_wins`` (bool): consistent and the candidate chosen in both orders, i.e.
      ``(c1, c2) == ("A", "B")``.
    - ``consistent_tie`` (bool): (C,C) in three-option mode.
    - ``input_chars``, ``output_chars``, ``prompt_chars`` (float): means over the pair's rows.
    """
    rows = judgments.filter(pl.col("mode").is_in(PAIRWISE_MODES))
    verdict = pl.when(_no_verdict()).then(None).otherwise(pl.col("extracted"))
    first = (pl.col("shown").list.first() == pl.col("candidate")).fill_null(False)
    pairs = (
        rows.lazy()
        .select(*PAIR_KEYS, *LENGTHS, _v=verdict, _first=first)
        .group_by(PAIR_KEYS)
        .agg(
            pl.col("_v").filter(pl.col("_first")).first().alias("c1"),
            pl.col("_v").filter(~pl.col("_first")).first().alias("c2"),
            *[pl.col(c).mean().cast(pl.Float64) for c in LENGTHS],
        )
    )
    tie_ok = pl.col("option_mode") == 3
    c1, c2 = pl.col("c1"), pl.col("c2")
    a1, b1, t1 = c1.eq_missing("A"), c1.eq_missing("B"), c1.eq_missing("C") & tie_ok
    a2, b2, t2 = c2.eq_missing("A"), c2.eq_missing("B"), c2.eq_missing("C") & tie_ok
    klass = (
        pl.when(c1.is_null() | c2.is_null())
        .then(pl.lit("error"))
        .when((a1 & b2) | (b1 & a2) | (t1 & t2))
        .then(pl.lit("consistent"))
        .when((a1 & a2) | (a1 & t2) | (t1 & a2))
        .then(pl.lit("primacy"))
        .when((b1 & b2) | (b1 & t2) | (t1 & b2))
        .then(pl.lit("recency"))
        .otherwise(pl.lit("other"))
    )
    return (
        pairs.with_columns(
            klass=klass,
            candidate_wins=a1 & b2,
            consistent_tie=t1 & t2,
        )
        .select(PAIR_COLUMNS)
        .collect()
    )


def _units_from_pairs(pairs: pl.DataFrame) -> pl.DataFrame:
    """Per-unit counts and metrics from classified pairs (pairwise; see unit_metrics)."""
    k = pl.col("klass")
    counts = pairs.lazy().group_by(UNIT_KEYS).agg(
        n=pl.len().cast(pl.Int64),
        consistent=(k == "consistent").sum().cast(pl.Int64),
        primacy=(k == "primacy").sum().cast(pl.Int64),
        recency=(k == "recency").sum().cast(pl.Int64),
        _wins=pl.col("candidate_wins").sum().cast(pl.Int64),
        _ties=pl.col("consistent_tie").sum().cast(pl.Int64),
        *[pl.col(c).mean().cast(pl.Float64) for c in LENGTHS],
    )
    ccn, pcn, rcn, n = pl.col("consistent"), pl.col("primacy"), pl.col("recency"), pl.col("n")
    v = ccn + pcn + rcn
    inc = pcn + rcn
    ipr, irr = _safe_div(pcn, inc), _safe_div(rcn, inc)
    pf_raw = rcn * irr - pcn * ipr
    owr = _safe_div(pl.col("_wins") + (pl.col("_ties") + inc) / 2, v)
    return (
        counts.with_columns(pc=_safe_div(ccn, v), pf=_safe_div(pf_raw, n), owr=owr)
        .with_columns(quality_gap=(pl.col("owr") - 0.5).abs())
        .select(UNIT_COLUMNS)
        .collect()
    )


def _pairwise_unit_metrics(rows: pl.DataFrame) -> pl.DataFrame:
    return _units_from_pairs(pairwise_pairs(rows))


#: mode -> builder of unit rows (UNIT_COLUMNS) from that mode's judgments. Extension point
#: for list-wise: ``register_unit_builder("listwise", listwise_unit_metrics)``.
_UNIT_BUILDERS: dict[str, Callable[[pl.DataFrame], pl.DataFrame]] = {
    "pairwise": _pairwise_unit_metrics,
    "score": _pairwise_unit_metrics,  # verdict letters derived from the two scores
}


def register_unit_builder(mode: str, builder: Callable[[pl.DataFrame], pl.DataFrame]) -> None:
    """Register the unit builder for judgments of ``mode`` (e.g. ``"listwise"``).

    ``builder`` receives only the rows of that mode and returns unit rows with the columns
    of :data:`UNIT_COLUMNS`; :func:`unit_metrics`, :func:`judge_metrics` and
    :func:`summarize` then include them.
    """
    _UNIT_BUILDERS[mode] = builder


def unit_metrics(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per-unit (judge, candidate, task) position-bias metrics.

    Source: Shi et al., "Judging the Judges"; ``spec/metrics.md``, *Per unit*.

    Output columns (:data:`UNIT_COLUMNS`), one row per (benchmark, judge, candidate, task):

    - ``n`` (int): all judgment pairs, error and "other" pairs included; with repetitions,
      one pair per repetition, all counted.
    - ``consistent``, ``primacy``, ``recency`` (int): ``ccn``, ``pcn``, ``rcn``.
    - ``pc`` (float): ``ccn / v`` with ``v = ccn + pcn + rcn`` (0 when ``v = 0``).
    - ``pf`` (float): ``PF_raw / n`` with ``PF_raw = rcn·irr − pcn·ipr``,
      ``ipr = pcn/(pcn+rcn)``, ``irr = rcn/(pcn+rcn)`` (both 0 when ``pcn+rcn = 0``);
      0 when ``n = 0``. −1 all primacy, +1 all recency.
    - ``owr`` (float): ``(C_w + (C_t + C_I)/2) / v``: ``C_w`` consistent pairs the
      candidate wins, ``C_t`` consistent ties, ``C_I = pcn + rcn``; 0 when ``v = 0``.
    - ``quality_gap`` (float): ``|owr − 1/2|``.
    - ``input_chars``, ``output_chars``, ``prompt_chars`` (float): the mean over the unit's
      pairs of the pair's mean length (equal to the mean over its instances, since the
      orders and repetitions of an instance share the input and output lengths).

    Rows of modes with no registered builder (list-wise, for now) are skipped with a
    ``UserWarning``.
    """
    frames = []
    for mode in judgments.get_column("mode").unique().sort().to_list():
        builder = _UNIT_BUILDERS.get(mode)
        if builder is None:
            warnings.warn(
                f"unit_metrics: no unit builder for mode {mode!r}; its rows are skipped",
                stacklevel=2,
            )
            continue
        frames.append(builder(judgments.filter(pl.col("mode") == mode)))
    empty = pl.DataFrame(schema=_UNIT_SCHEMA)
    units = pl.concat([empty, *[f.select(UNIT_COLUMNS).cast(_UNIT_SCHEMA) for f in frames]])
    return units.sort(UNIT_KEYS)


# --------------------------------------------------------------------------------------
# Per judge
# --------------------------------------------------------------------------------------


def judge_from_units(units: pl.DataFrame, keys: list[str] | None = None) -> pl.DataFrame:
    """Pool unit metrics per (benchmark, judge) (or per ``keys``, e.g. adding ``task``).

    Source: ``spec/metrics.md``, *Per judge*. Units with ``n = 0`` are left out of every
    figure **(ours)**. Output columns: benchmark, judge,

    - ``pc`` (float): pooled ``Σ ccn / Σ v`` over the units (0 when ``Σ v = 0``);
    - ``pc_std`` (float): population std (ddof 0) of the units' ``pc``;
    - ``pf`` (float): unweighted mean of the units' ``pf``; ``pf_std``: population std;
    - ``n_units`` (int): units used (``n > 0``).

    Judges whose units all have ``n = 0`` have no row.
    """
    keys = keys or JUDGE_KEYS
    ccn, pcn, rcn = pl.col("consistent"), pl.col("primacy"), pl.col("recency")
    return (
        units.lazy()
        .filter(pl.col("n") > 0)
        .group_by(keys)
        .agg(
            _ccn=ccn.sum(),
            _v=(ccn + pcn + rcn).sum(),
            pc_std=pl.col("pc").std(ddof=0),
            pf=pl.col("pf").mean(),
            pf_std=pl.col("pf").std(ddof=0),
            n_units=pl.len().cast(pl.Int64),
        )
        .with_columns(pc=_safe_div(pl.col("_ccn"), pl.col("_v")))
        .select(*keys, "pc", "pc_std", "pf", "pf_std", "n_units")
        .sort(keys)
        .collect()
    )


def _judge_metrics(judgments: pl.DataFrame, units: pl.DataFrame) -> pl.DataFrame:
    errors = (
        judgments.lazy()
        .group_by(JUDGE_KEYS)
        .agg(n_judgments=pl.len().cast(pl.Int64), _failed=_no_verdict().sum())
        .with_columns(error_rate=pl.col("_failed").cast(pl.Float64) / pl.col("n_judgments"))
    )
    rs = repetition_stability(judgments).lazy().select(*JUDGE_KEYS, "rs", "rs_spread")
    return (
        errors.join(judge_from_units(units).lazy(), on=JUDGE_KEYS, how="left")
        .join(rs, on=JUDGE_KEYS, how="left")
        .with_columns(pl.col("n_units").fill_null(0))
        .select(JUDGE_COLUMNS)
        .sort(JUDGE_KEYS)
        .collect()
    )


def judge_metrics(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per (benchmark, judge) position-bias figures.

    Source: Shi et al., "Judging the Judges"; ``spec/metrics.md``, *Per judge* and
    *Repetition stability*. One row per (benchmark, judge) present in ``judgments``.

    Output columns (:data:`JUDGE_COLUMNS`):

    - ``pc``, ``pc_std``, ``pf``, ``pf_std`` (float), ``n_units`` (int): see
      :func:`judge_from_units` over :func:`unit_metrics` (units with ``n = 0`` left out).
      Null (``n_units`` 0) for a judge with no unit, e.g. list-wise rows only before a
      list-wise builder is registered.
    - ``error_rate`` (float): judgments without a verdict / all judgments, counted over the
      rows of ``judgments`` (every mode; an absent row is not a judgment).
    - ``rs``, ``rs_spread`` (float): from :func:`repetition_stability`; null when the judge
      has no query asked more than once.
    - ``n_judgments`` (int): rows of ``judgments`` for the judge.
    """
    return _judge_metrics(judgments, unit_metrics(judgments))


# --------------------------------------------------------------------------------------
# Repetition stability
# --------------------------------------------------------------------------------------


def _query_stability(lf: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """``(used, scored)``: queries asked at least twice (``n_j``, ``m_j``), and those with
    an extracted choice with ``rs_j`` and ``sd_j`` (see :func:`repetition_stability`)."""
    ok = ~_no_verdict()
    per_query = lf.group_by(QUERY_KEYS).agg(n_j=pl.len().cast(pl.Int64), question_id=pl.col("question_id").first())
    largest = (
        lf.filter(ok)
        .group_by([*QUERY_KEYS, "extracted"])
        .agg(c=pl.len().cast(pl.Int64))
        .group_by(QUERY_KEYS)
        .agg(m_j=pl.col("c").max())
    )
    n, m = pl.col("n_j"), pl.col("m_j")
    used = per_query.filter(n >= 2).join(largest, on=QUERY_KEYS, how="left").with_columns(m.fill_null(0))
    scored = used.filter(m > 0).with_columns(
        rs_j=m.cast(pl.Float64) / n,
        sd_j=((m * (n - m)).cast(pl.Float64) / (n * (n - 1))).sqrt(),
    )
    return used, scored


def query_stability(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per query asked at least twice with an extracted choice: ``benchmark``, ``judge``,
    ``query_id``, ``question_id`` (str), ``n_j``, ``m_j`` (int), ``rs_j``, ``sd_j``
    (float); the terms that :func:`repetition_stability` averages."""
    _, scored = _query_stability(judgments.lazy())
    return scored.sort(QUERY_KEYS).collect()


def repetition_stability(judgments: pl.DataFrame) -> pl.DataFrame:
    """Repetition stability (RS) and its spread per (benchmark, judge).

    Source: Shi et al., "Judging the Judges"; ``spec/metrics.md``, *Repetition stability*.
    Mode-agnostic: a query is a ``(benchmark, judge, query_id)`` and its choices are the
    extracted letters (ties and out-of-option letters are choices like any other).

    For query ``j`` with ``n_j`` repetitions (rows; failed ones count in ``n_j`` as no
    choice) and ``m_j = max_k |C_k|`` the size of its largest group of identical extracted
    choices: ``RS_j = m_j / n_j``. ``rs`` = mean of ``RS_j`` over the judge's queries.

    ``rs_spread``: per query, the sample std (ddof 1) over its repetitions of the indicator
    "this repetition's choice equals the query's most frequent extracted choice" (failed
    repetitions: 0), averaged over queries. The indicator has ``m_j`` ones and
    ``n_j − m_j`` zeros whichever letter wins a tie for most frequent, so the std is
    computed in closed form: ``sqrt(m_j (n_j − m_j) / (n_j (n_j − 1)))``.

    Readings of the spec (documented choices):

    - Only queries asked more than once (``n_j ≥ 2``) are used, for both figures: a query
      asked once carries no information on stability (``RS_j`` would be 1 by construction
      and its ddof-1 std undefined), so a job that repeats only a sample of its queries
      gets the RS of that sample. A judge with no such query gets ``rs`` and ``rs_spread``
      null and ``n_queries`` 0.
    - Queries whose every repetition failed (``m_j = 0``) are left out of both figures (the
      spread's "queries with no extracted choice skipped" is the same set). If none is
      left, ``rs`` is 0 (as the spec says) and ``rs_spread`` null (no query to average).
    - One row per (query, repetition) is assumed (the engine's unit ids guarantee it).

    Output columns (:data:`RS_COLUMNS`): benchmark, judge, ``rs`` (float), ``rs_spread``
    (float), ``n_queries`` (int: queries used).
    """
    lf = judgments.lazy()
    used, scored = _query_stability(lf)
    has_rep = used.group_by(JUDGE_KEYS).agg(pl.lit(True).alias("_rep"))
    stats = scored.group_by(JUDGE_KEYS).agg(
        rs=pl.col("rs_j").mean(),
        rs_spread=pl.col("sd_j").mean(),
        n_queries=pl.len().cast(pl.Int64),
    )
    judges = lf.select(JUDGE_KEYS).unique()
    return (
        judges.join(has_rep, on=JUDGE_KEYS, how="left")
        .join(stats, on=JUDGE_KEYS, how="left")
        .with_columns(
            rs=pl.when(pl.col("_rep")).then(pl.col("rs").fill_null(0.0)),
            n_queries=pl.col("n_queries").fill_null(0),
        )
        .select(RS_COLUMNS)
        .sort(JUDGE_KEYS)
        .collect()
    )


def summarize(judgments: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(judge_metrics(judgments), unit_metrics(judgments))``, the units computed once."""
    units = unit_metrics(judgments)
    return _judge_metrics(judgments, units), units


# The list-wise builder (imported last: it uses this module's helpers; looked up at call
# time, so importing either module first works).
from voirdire.analysis import listwise as _listwise  # noqa: E402


def _listwise_units(rows: pl.DataFrame) -> pl.DataFrame:
    return _listwise.listwise_unit_metrics(rows)


register_unit_builder("listwise", _listwise_units)
