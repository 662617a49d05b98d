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

__all__ = [
    "CHOICE_COLUMNS",
    "Choice",
    "judge_costs",
    "choose_judges",
    "choice_from_table",
]

#: the columns of :attr:`Choice.table`, in order (those absent from the input are left out)
CHOICE_COLUMNS = (
    "benchmark", "rank", "judge", "accuracy", "accuracy_lo", "accuracy_hi", "pc", "pf",
    "pass_kappa", "rs", "error_rate", "usd_per_1k", "judgments_per_s", "gates", "passes",
)  # fmt: skip


@dataclass(frozen=True)
class Choice:
    """The judges ranked per benchmark, and the line a user reads first.

    Attributes:
        table: one row per (benchmark, judge), best first within a benchmark
            (:data:`CHOICE_COLUMNS`): ``rank`` (int, 1 = best), ``gates`` (str: each failed
            gate with its value, ``"; "``-separated, empty when all pass), ``passes`` (bool),
            ``usd_per_1k`` (USD per 1,000 judgments) and ``judgments_per_s`` (judgments per
            second) where known.
        lines: per benchmark, the sentence naming the most accurate judge passing every gate
            and the cheapest within the margin (``{benchmark: text}``).
        key: ``"accuracy"`` or ``"pc"`` per benchmark (what the rank is by).
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


def _line(b: str, rows: pl.DataFrame, key: str, margin: float) -> str:
    """The sentence of one benchmark (``rows``: its ranked rows)."""
    label = "accuracy" if key == "accuracy" else "PC"
    ok = rows.filter(pl.col("passes") & pl.col(key).is_not_null())
    if not ok.height:
        return f"{b}: no judge passes every gate."
    best = ok.row(0, named=True)
    text = f"{b}: most {'accurate' if key == 'accuracy' else 'consistent'} judge passing every gate: {best['judge']} ({label} {best[key]:.3f})"
    near = ok.filter(
        (pl.col(key) >= best[key] - margin - 1e-12) & pl.col("usd_per_1k").is_not_null()
    )
    if not rows.get_column("usd_per_1k").is_not_null().any():
        return text + "."
    if not near.height:
        return text + f"; no judge within {margin:g} of it has a known cost."
    cheap = near.sort("usd_per_1k", "rank").row(0, named=True)
    if cheap["judge"] == best["judge"]:
        return (
            text
            + f", also the cheapest within {margin:g} ({_usd(cheap['usd_per_1k'])} per 1,000 judgments)."
        )
    return (
        text + f"; cheapest within {margin:g} of it: {cheap['judge']} ({label} {cheap[key]:.3f}, "
        f"{_usd(cheap['usd_per_1k'])} per 1,000 judgments)."
    )  # fmt: skip


def choose_judges(
    judges: pl.DataFrame,
    costs: pl.DataFrame | None = None,
    settings: AnalysisSettings = DEFAULTS,
) -> Choice:
    """Rank the judges of each benchmark and name the one to trust first.

    Args:
        judges: one row per (benchmark, judge) with ``pc``, ``pf``, ``error_rate`` and,
            where computed, ``rs``, ``pass_kappa``, ``accuracy`` (``_lo``/``_hi``): a
            directory's ``judge_metrics`` or the study's ``panel``.
        costs: :func:`judge_costs`' table, or None (no cost or throughput).
        settings: the gates (``kappa_gate``, ``rs_min``, ``max_error``) and the margin
            (``choice_margin``).

    Returns:
        :class:`Choice`. Rows without PC (a one-order judge) keep their other figures and
        rank after those with the key.
    """
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
    t = t.sort(
        ["benchmark", "_key", pl.col("pf").abs(), "judge"],
        descending=[False, True, False, False],
        nulls_last=True,
    ).with_columns(rank=pl.int_range(1, pl.len() + 1).over("benchmark").cast(pl.Int64))
    return choice_from_table(
        t.select([c for c in CHOICE_COLUMNS if c in t.columns]), settings.choice_margin
    )


def choice_from_table(
    table: pl.DataFrame, margin: float = DEFAULTS.choice_margin
) -> Choice:
    """The :class:`Choice` of a ranked table (:attr:`Choice.table`, e.g. a report's
    ``metrics/choice.csv`` read back): the key per benchmark (accuracy where any judge has
    one) and its lines, with ``margin``."""
    t = table.with_columns(
        pl.col("gates").cast(pl.String).fill_null(""),
        *(
            pl.col(c).cast(pl.Float64)
            for c in ("accuracy", "pc", "usd_per_1k")
            if c in table.columns
        ),
    ).sort("benchmark", "rank")
    if "accuracy" not in t.columns:
        t = t.with_columns(accuracy=pl.lit(None, pl.Float64))
    key = {
        b: "accuracy" if g else "pc"
        for b, g in t.group_by("benchmark")
        .agg(pl.col("accuracy").is_not_null().any())
        .iter_rows()
    }
    lines = {
        b: _line(b, t.filter(pl.col("benchmark") == b), key[b], margin)
        for b in sorted(key)
    }
    return Choice(table, lines, key, margin)
