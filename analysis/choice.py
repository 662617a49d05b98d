"""Which judge to trust first: the judges of each benchmark ranked by what a user chooses
on, the gates each one fails, and one line naming the most accurate judge that passes every
gate and the cheapest one within a margin of it (``docs/analysis.md``, "The answer first").

Computed here from tables the analysis already made (nothing is re-estimated):

- **the judge table** (a directory's ``judge_metrics`` or the study's ``panel``): ``pc``,
  ``pf``, ``error_rate``, ``rs`` (where measured), ``pass_kappa`` and its gate, ``accuracy``
  with its interval where the judgments carry gold labels;
- **cost and throughput** (:func:`judge_costs`) from the judgments' own records: USD per
  1,000 judgments from ``cost_usd`` (what the price source, :mod:`voirdire.judges.api.pricing`,
  gave each call), judgments per second measured from ``finished_at`` and ``latency_s`` over
  the calls a live judge answered (replayed, audited and cached answers have no throughput).

The rank key is accuracy against the gold labels where the benchmark has them, else PC (the
judge's agreement with itself across orders: no reference); ties by |PF|, then by name. The
gates (the analysis' settings, :class:`~voirdire.analysis.settings.AnalysisSettings`): the
inter-pass κ ≥ ``kappa_gate``, RS ≥ ``rs_min`` where RS was measured, error rate ≤
``max_error``. The margin (``choice_margin``) is in the rank key's unit (accuracy or PC).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from voirdire.analysis.settings import DEFAULTS, AnalysisSettings
from voirdire.analysis.stats.tie_test import TIE_ALPHA

__all__ = [
    "CHOICE_COLUMNS",
    "Choice",
    "judge_costs",
    "choose_judges",
    "choice_from_table",
]

#: the columns of :attr:`Choice.table`, in order (those absent from the input are left out)
CHOICE_COLUMNS = (
    "benchmark", "board", "rank", "judge", "shared", "shared_lo", "shared_hi", "n_shared",
    "n_own", "board_judges", "p_vs_pick", "tied", "accuracy", "accuracy_lo", "accuracy_hi",
    "pc", "pf", "pass_kappa", "rs", "error_rate", "usd_per_1k", "judgments_per_s", "gates",
    "passes", "answer",
)  # fmt: skip


@dataclass(frozen=True)
class Choice:
    """The judges ranked per benchmark, and the line a user reads first.

    Attributes:
        table: one row per (benchmark, judge), best first within a benchmark
            (:data:`CHOICE_COLUMNS`): ``rank`` (int, 1 = best), ``gates`` (str: each failed
            gate with its value, ``"; "``-separated, empty when all pass), ``passes`` (bool),
            ``usd_per_1k`` (USD per 1,000 judgments) and ``judgments_per_s`` (judgments per
            second) where known; ``board`` (str) and, where compared like with like,
            ``shared`` (the key on the board's shared units), ``shared_lo``/``shared_hi``
            (its 95 % interval), ``n_shared``/``n_own`` (units), ``board_judges``,
            ``p_vs_pick`` (float) and ``tied`` (bool); ``rank`` is within the board.
        lines: per board (the benchmark, or one of its boards where its judges were
            measured on different data: :mod:`voirdire.analysis.shared_units`), the sentences
            naming the most accurate judge passing every gate with its interval, what the
            judges were compared on (the shared units' n), the judges tied with it and the
            cheapest within the margin (``{board: text}``).
        key: ``"accuracy"`` or ``"pc"`` per board (what the rank is by).
        margin: the margin used (the key's unit).
    """

    table: pl.DataFrame
    lines: dict[str, str]
    key: dict[str, str]
    margin: float


def judge_costs(judgments: pl.DataFrame) -> pl.DataFrame:
    """Cost and throughput per (benchmark, judge) from judgment rows
    (:data:`voirdire.schema.JUDGMENT_SCHEMA`; ``cost_usd``, ``latency_s``, ``finished_at``,
    ``cached``, ``verdict_mode`` where present).

    Returns:
        ``benchmark``, ``judge``, ``usd_per_1k`` (float: 1,000 × the mean ``cost_usd`` of the
        rows that have one; null when none has), ``judgments_per_s`` (float: rows answered by
        a live call, neither replayed nor cached, divided by the seconds from the first such
        call's start, ``finished_at − latency_s``, to the last one's end; null without two).
    """
    keys = ["benchmark", "judge"]
    if not judgments.height:
        return pl.DataFrame(schema={"benchmark": pl.String, "judge": pl.String,
                                    "usd_per_1k": pl.Float64, "judgments_per_s": pl.Float64})  # fmt: skip
    cols = judgments.columns
    cost = (
        (pl.col("cost_usd").drop_nulls().mean() * 1000).alias("usd_per_1k")
        if "cost_usd" in cols
        else pl.lit(None, pl.Float64).alias("usd_per_1k")
    )
    if {"finished_at", "latency_s"} <= set(cols):
        live = pl.col("finished_at").is_not_null() & pl.col("latency_s").is_not_null()
        if "cached" in cols:
            live &= ~pl.col("cached").fill_null(False)
        if "verdict_mode" in cols:
            live &= pl.col("verdict_mode").fill_null("") != "replay"
        end = pl.col("finished_at").filter(live)
        start = (
            pl.col("finished_at") - pl.duration(microseconds=pl.col("latency_s") * 1e6)
        ).filter(live)
        span = (end.max() - start.min()).dt.total_microseconds() / 1e6
        n = live.sum()
        rate = pl.when((n >= 2) & (span > 0)).then(n / span).alias("judgments_per_s")
    else:
        rate = pl.lit(None, pl.Float64).alias("judgments_per_s")
    return judgments.group_by(keys).agg(cost, rate).sort(keys)


def _one_row_per_judge(jm: pl.DataFrame) -> pl.DataFrame:
    """One row per (benchmark, judge) of judge tables of several directories (``run``'s
    jobs: a position-bias job and a repetition job of the same judges): the figures of the
    judge's row without RS (the position-bias study) where there is one, with the RS
    measured by the other; the study's panel has one already."""
    keys = ["benchmark", "judge"]
    if "rs" not in jm.columns or not jm.select(keys).is_duplicated().any():
        return jm
    rs = jm.group_by(keys, maintain_order=True).agg(pl.col("rs").drop_nulls().first())
    main = jm.sort(pl.col("rs").is_not_null(), maintain_order=True).unique(
        keys, keep="first", maintain_order=True
    )
    return main.drop("rs").join(rs, on=keys, how="left")


def _gates(settings: AnalysisSettings, columns: list[str]) -> pl.Expr:
    """The failed gates of a row as one string (empty: every gate passes). The κ gate is
    the table's own ``pass_kappa_gate`` where it has one (the gate the analysis applied,
    :data:`~voirdire.analysis.mitigation.pass_kappa.KAPPA_GATE`), else κ < ``kappa_gate``."""
    from voirdire.analysis.mitigation import pass_kappa

    def fail(cond: pl.Expr, text: pl.Expr) -> pl.Expr:
        return pl.when(cond.fill_null(False)).then(text)

    def fmt(c: str, spec: str) -> pl.Expr:
        return pl.col(c).map_elements(lambda v: spec.format(v), return_dtype=pl.String)

    gate = (
        pass_kappa.KAPPA_GATE if "pass_kappa_gate" in columns else settings.kappa_gate
    )
    low = (
        pl.col("pass_kappa_gate") == "fail"
        if "pass_kappa_gate" in columns
        else pl.col("pass_kappa") < gate
    )
    parts = [
        fail(low, pl.format("κ {} < {}", fmt("pass_kappa", "{:.3f}"), pl.lit(f"{gate:g}"))),
        fail(
            pl.col("rs") < settings.rs_min,
            pl.format("RS {} < {}", fmt("rs", "{:.3f}"), pl.lit(f"{settings.rs_min:.2f}")),
        ),
        fail(
            pl.col("error_rate") > settings.max_error,
            pl.format("errors {} > {}", fmt("error_rate", "{:.1%}"), pl.lit(f"{settings.max_error:.0%}")),
        ),
    ]  # fmt: skip
    return pl.concat_list(parts).list.drop_nulls().list.join("; ")


def _usd(v: float) -> str:
    return f"${v:,.2f}" if v >= 0.01 else f"${v:.2g}"


def _fmt_interval(r: dict) -> str:
    lo, hi = r.get("shared_lo"), r.get("shared_hi")
    return f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else ""


def _shared_text(rows: pl.DataFrame) -> str:
    """The sentence saying on what the board's judges are compared (empty without a
    like-with-like comparison)."""
    if "n_shared" not in rows.columns or rows.get_column("n_shared").is_null().all():
        return ""
    on = rows.filter(pl.col("n_shared").is_not_null())
    n = int(on.get_column("n_shared").max())
    k = on.height
    if k < 2:  # one judge: nothing compared
        return ""
    bigger = on.filter(pl.col("n_own") > pl.col("n_shared"))
    who = f"all {k} judges"
    text = f" Compared on the {n:,} (question, pair, order) units {who} share"
    if bigger.height:
        most = int(bigger.get_column("n_own").max())
        text += (
            f"; {bigger.height} of them {'have' if bigger.height > 1 else 'has'} more units "
            f"of {'their' if bigger.height > 1 else 'its'} own (up to {most:,}: the judge "
            "table's figures)"
        )
    return text + "."


def _tied_text(rows: pl.DataFrame, best: dict) -> str:
    if "tied" not in rows.columns or not rows.height:
        return ""
    others = rows.filter(pl.col("judge") != best["judge"])
    tested = others.filter(pl.col("tied").is_not_null())
    if not tested.height:
        return ""
    tied = tested.filter(pl.col("tied")).get_column("judge").to_list()
    test = f"paired cluster permutation test, p ≥ {TIE_ALPHA:g}"
    if not tied:
        return f" Every other judge differs from it ({test} not met)."
    names = ", ".join(tied[:8]) + (
        f" and {len(tied) - 8} more" if len(tied) > 8 else ""
    )
    return f" Not distinguishable from it ({test}), so tied with it: {names}."


def _line(b: str, rows: pl.DataFrame, key: str, margin: float) -> str:
    """The sentence of one board (``rows``: its ranked rows); a one-order board's is its
    ``answer`` (:func:`~voirdire.analysis.position.one_order.one_order_answers`)."""
    if "answer" in rows.columns:
        given = rows.get_column("answer").drop_nulls()
        if given.len():
            return str(given[0])
    label = "accuracy" if key == "accuracy" else "PC"
    col = (
        "shared"
        if "shared" in rows.columns and rows.get_column("shared").is_not_null().any()
        else key
    )
    ok = rows.filter(pl.col("passes") & pl.col(col).is_not_null())
    if not ok.height:
        return f"{b}: no judge passes every gate." + _shared_text(rows)
    best = ok.row(0, named=True)
    text = (
        f"{b}: most {'accurate' if key == 'accuracy' else 'consistent'} judge passing every gate: "
        f"{best['judge']} ({label} {best[col]:.3f}{_fmt_interval(best) if col == 'shared' else ''})"
    )
    tail = _shared_text(rows) + _tied_text(rows, best)
    near = ok.filter(
        (pl.col(col) >= best[col] - margin - 1e-12) & pl.col("usd_per_1k").is_not_null()
    )
    if not rows.get_column("usd_per_1k").is_not_null().any():
        return text + "." + tail
    if not near.height:
        return text + f"; no judge within {margin:g} of it has a known cost." + tail
    cheap = near.sort("usd_per_1k", "rank").row(0, named=True)
    if cheap["judge"] == best["judge"]:
        return (
            text
            + f", also the cheapest within {margin:g} ({_usd(cheap['usd_per_1k'])} per 1,000 judgments)."
            + tail
        )
    return (
        text + f"; cheapest within {margin:g} of it: {cheap['judge']} ({label} {cheap[col]:.3f}, "
        f"{_usd(cheap['usd_per_1k'])} per 1,000 judgments)." + tail
    )  # fmt: skip


def choose_judges(
    judges: pl.DataFrame,
    costs: pl.DataFrame | None = None,
    settings: AnalysisSettings = DEFAULTS,
    judgments: pl.DataFrame | list[pl.DataFrame] | None = None,
    one_order: pl.DataFrame | None = None,
) -> Choice:
    """Rank the judges of each benchmark and name the one to trust first.

    Args:
        judges: one row per (benchmark, judge) with ``pc``, ``pf``, ``error_rate`` and,
            where computed, ``rs``, ``pass_kappa``, ``accuracy`` (``_lo``/``_hi``): a
            directory's ``judge_metrics`` or the study's ``panel``.
        costs: :func:`judge_costs`' table, or None (no cost or throughput).
        settings: the gates (``kappa_gate``, ``rs_min``, ``max_error``) and the margin
            (``choice_margin``).
        judgments: the judgments behind ``judges`` (JUDGMENT_SCHEMA; a list: one table per
            directory, each judge read from one: :func:`~voirdire.analysis.shared_units.
            one_source_per_judge`), or None. Given,
            the judges are compared like with like (:mod:`voirdire.analysis.shared_units`):
            ranked per board on the units the board's judges share (``shared``, its
            interval, ``n_shared`` and the judge's own ``n_own``), each tested against the
            board's pick (``p_vs_pick``, ``tied``).
        one_order: the one-order position effect of the judges that judged each pair once
            (:func:`~voirdire.analysis.position.one_order.one_order_effect`), or None. Such
            a judge fails the gate "one order per pair" (its PC, PF and κ are not
            measured), and a benchmark whose every judge is one such is answered by its
            effect instead (``answer``: :func:`~voirdire.analysis.position.one_order.one_order_answers`).

    Returns:
        :class:`Choice`. Rows without PC (a one-order judge) keep their other figures and
        rank after those with the key.
    """
    from voirdire.analysis.shared_units import like_with_like
    from voirdire.analysis.stats.tie_test import ties_with_pick

    t = _one_row_per_judge(judges)
    for c in ("pc", "rs", "pass_kappa", "accuracy", "error_rate", "pf"):
        t = t.with_columns(
            (pl.col(c) if c in t.columns else pl.lit(None)).cast(pl.Float64).alias(c)
        )
    if costs is not None and costs.height:
        t = t.join(
            costs.unique(["benchmark", "judge"], keep="first", maintain_order=True),
            on=["benchmark", "judge"],
            how="left",
        )
    else:
        t = t.with_columns(
            usd_per_1k=pl.lit(None, pl.Float64),
            judgments_per_s=pl.lit(None, pl.Float64),
        )
    gold = t.group_by("benchmark").agg(gold=pl.col("accuracy").is_not_null().any())
    t = (
        t.join(gold, on="benchmark")
        .with_columns(
            _key=pl.when(pl.col("gold"))
            .then(pl.col("accuracy"))
            .otherwise(pl.col("pc")),
            gates=_gates(settings, t.columns),
        )
        .with_columns(passes=pl.col("gates") == "")
    )
    t = _one_order(t, one_order)
    sums = None
    if judgments is not None:
        t, sums = like_with_like(t, judgments, settings)
    if "board" not in t.columns:
        t = t.with_columns(board=pl.col("benchmark"))
    t = t.sort(
        ["benchmark", "board", "_key", pl.col("pf").abs(), "judge"],
        descending=[False, False, True, False, False],
        nulls_last=True,
    ).with_columns(rank=pl.int_range(1, pl.len() + 1).over("board").cast(pl.Int64))
    if sums is not None:
        t = ties_with_pick(t, sums)
    return choice_from_table(
        t.select([c for c in CHOICE_COLUMNS if c in t.columns]), settings.choice_margin
    )


#: the gate a one-order judge fails: what it lacks
ONE_ORDER_GATE = "one order per pair: PC, PF and κ not measured"


def _one_order(t: pl.DataFrame, one_order: pl.DataFrame | None) -> pl.DataFrame:
    """``t`` with the one-order judges' gate and their benchmarks' ``answer`` (null
    elsewhere; a benchmark answers by its one-order effect only when no judge of it has
    the key)."""
    if one_order is None or not one_order.height:
        return t.with_columns(answer=pl.lit(None, pl.String))
    from voirdire.analysis.position.one_order import one_order_answers

    answers = one_order_answers(one_order)
    once = (
        one_order.select("benchmark", "judge").unique().with_columns(_one=pl.lit(True))
    )
    one = pl.col("_one").fill_null(False) & pl.col("pc").is_null()
    gate = pl.lit(ONE_ORDER_GATE)
    return (
        t.join(once, on=["benchmark", "judge"], how="left")
        .with_columns(
            gates=pl.when(one & (pl.col("gates") == "")).then(gate)
            .when(one).then(pl.concat_str(gate, pl.lit("; "), pl.col("gates")))
            .otherwise(pl.col("gates")),
            answer=pl.when(pl.col("_key").is_null().all().over("benchmark"))
            .then(pl.col("benchmark").replace_strict(answers, default=None, return_dtype=pl.String)),
        )
        .with_columns(passes=pl.col("gates") == "")
        .drop("_one")
    )  # fmt: skip


#: the columns of a choice table read back from a CSV, by type (an empty column reads as text)
_FLOATS = (
    "accuracy",
    "pc",
    "usd_per_1k",
    "shared",
    "shared_lo",
    "shared_hi",
    "p_vs_pick",
)
_INTS = ("n_shared", "n_own", "board_judges")


def _typed(table: pl.DataFrame) -> pl.DataFrame:
    """A choice table's columns in their types (``tied``: true/false text as bool)."""
    cols = table.columns
    return table.with_columns(
        *(pl.col(c).cast(pl.Float64) for c in _FLOATS if c in cols),
        *(pl.col(c).cast(pl.Int64) for c in _INTS if c in cols),
        *(
            [pl.col("tied").cast(pl.String).str.to_lowercase().replace_strict(
                {"true": True, "false": False}, default=None, return_dtype=pl.Boolean)]
            if "tied" in cols
            else []
        ),
    )  # fmt: skip


def choice_from_table(
    table: pl.DataFrame, margin: float = DEFAULTS.choice_margin
) -> Choice:
    """The :class:`Choice` of a ranked table (:attr:`Choice.table`, e.g. a report's
    ``metrics/choice.csv`` read back): the key per board (``board``, the benchmark where
    the table has none; accuracy where any judge of the benchmark has one) and its lines,
    with ``margin``."""
    table = _typed(table)
    t = table.with_columns(pl.col("gates").cast(pl.String).fill_null(""))
    if "board" not in t.columns:
        t = t.with_columns(board=pl.col("benchmark"))
    t = t.with_columns(pl.col("board").cast(pl.String).fill_null(pl.col("benchmark")))
    t = t.sort("benchmark", "board", "rank")
    if "accuracy" not in t.columns:
        t = t.with_columns(accuracy=pl.lit(None, pl.Float64))
    gold = dict(
        t.group_by("benchmark").agg(pl.col("accuracy").is_not_null().any()).iter_rows()
    )
    key = {
        bd: "accuracy" if gold[b] else "pc"
        for b, bd in t.select("benchmark", "board").unique().iter_rows()
    }
    lines = {
        bd: _line(bd, t.filter(pl.col("board") == bd), key[bd], margin)
        for bd in sorted(key)
    }
    return Choice(table, lines, key, margin)
