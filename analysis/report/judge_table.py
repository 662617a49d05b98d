"""The per-judge table, declared once for every medium that shows it: its columns,
headers and formats (:data:`JUDGE_TABLE`, the registered metrics' records), the gate in
words, the cells as text, and its Markdown form; the terminal
(:mod:`voirdire.analysis.report.terminal`), ``report.md``
(:mod:`voirdire.analysis.report.markdown`), the page's summary and the mitigation's
Markdown read it. Names pass :func:`voirdire.escape.markdown` in the Markdown."""

from __future__ import annotations

from typing import Any

import polars as pl

from voirdire.analysis.position.registry import added_metrics, metric
from voirdire.analysis.report.scale import cut_text
from voirdire.escape import markdown

#: The per-judge table: (column, header, format), or the name of a metric whose record
#: (:mod:`voirdire.analysis.position.registry`) gives its header (``label``) and format.
JUDGE_TABLE: list[tuple[str, str, str] | str] = [
    ("benchmark", "benchmark", "{}"),
    ("judge", "judge", "{}"),
    "pc",
    ("pc_std", "PC std", "{:.3f}"),
    "pf",
    ("pf_std", "PF std", "{:.3f}"),
    ("error_rate", "errors", "{:.2%}"),
    "rs",
    ("rs_spread", "RS ±", "{:.3f}"),
    ("pass_kappa", "κ passes [95% CI]", "kappa"),
    ("pass_kappa_gate", "{gate}", "{}"),
]
#: columns added where the judgments carry gold labels (accuracy against them,
#: ``docs/gold-labels.md``); absent for benchmarks without labels
GOLD_TABLE = [
    ("accuracy", "accuracy", "{:.3f}"),
    ("accuracy_shown", "acc. shown", "{:.3f}"),
    ("accuracy_swapped", "acc. swapped", "{:.3f}"),
    ("both_correct", "both correct", "{:.3f}"),
]


def _column(entry: tuple[str, str, str] | str) -> tuple[str, str, str]:
    if isinstance(entry, str):
        m = metric(entry)
        return (m.name, m.label, m.fmt)
    column, header, fmt = entry
    return (column, header.format(gate=gate_words()), fmt)


def gate_words(sign: str = "κ ≥ ") -> str:
    """The inter-pass kappa gate in words, ``"κ ≥ 0.6"`` (``sign`` + the value), read when
    called from the value the gate applies,
    :data:`voirdire.analysis.mitigation.pass_kappa.KAPPA_GATE` (``AnalysisSettings.kappa_gate``),
    so every report's text says the gate its ``pass_kappa_gate`` column applied."""
    from voirdire.analysis.mitigation import pass_kappa

    return f"{sign}{pass_kappa.KAPPA_GATE}"


def added_metric_columns(df: pl.DataFrame) -> list[tuple[str, str, str]]:
    """(column, header, format) of each registered metric other than pc, pf and rs that
    ``df`` has a column for, in the registry's order (appended to the per-judge tables)."""
    return [(n, m.label, m.fmt) for n, m in added_metrics().items() if n in df.columns]


def judge_table_spec(jm: pl.DataFrame) -> list[tuple[str, str, str]]:
    """(column, header, format) of the per-judge table of ``jm``: :data:`JUDGE_TABLE`, plus
    :data:`GOLD_TABLE` when some judge has an accuracy, plus every other registered metric
    ``jm`` has a column for (:func:`added_metric_columns`)."""
    gold = "accuracy" in jm.columns and jm.get_column("accuracy").is_not_null().any()
    return (
        [_column(e) for e in JUDGE_TABLE]
        + (GOLD_TABLE if gold else [])
        + added_metric_columns(jm)
    )


def metrics_reading(df: pl.DataFrame) -> str:
    """How to read the registered metrics other than pc, pf and rs that ``df`` has: one
    sentence per metric, ``label: doc (higher is better).``; empty when there is none."""
    return " ".join(
        f"{m.label}: {m.doc or m.name} ({m.direction_text})."
        for n, m in added_metrics().items()
        if n in df.columns
    )


def fmt_value(value: Any, fmt: str) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return fmt.format(value)


def _kappa_ci(r: dict[str, Any]) -> str:
    """The inter-pass kappa with its interval, ``0.512 [0.47, 0.55]`` (empty when undefined)."""
    k, lo, hi = r.get("pass_kappa"), r.get("pass_kappa_lo"), r.get("pass_kappa_hi")
    if k is None or k != k:
        return ""
    return (
        f"{k:.3f}"
        if lo is None or hi is None or lo != lo
        else f"{k:.3f} [{lo:.2f}, {hi:.2f}]"
    )


def judge_cell(r: dict[str, Any], col: str, fmt: str) -> str:
    return _kappa_ci(r) if fmt == "kappa" else fmt_value(r.get(col), fmt)


def measured(
    rows: pl.DataFrame, spec: list[tuple[str, str, str]]
) -> list[tuple[str, str, str]]:
    """The (column, header, format) entries of ``spec`` that some row of ``rows`` has a
    figure in, benchmark and judge always: a column no judge measured (PC, PF and κ of a
    log judged in one order) is left out, not shown empty."""
    recs = list(rows.iter_rows(named=True))
    return spec[:2] + [
        (c, h, f) for c, h, f in spec[2:] if any(judge_cell(r, c, f) for r in recs)
    ]


def unmeasured_note(rows: pl.DataFrame) -> str:
    """One sentence when no judge of ``rows`` has a PC (every pair judged in one order),
    else empty."""
    if rows.height and (
        "pc" not in rows.columns or rows.get_column("pc").is_null().all()
    ):
        return (
            "No PC, PF or κ: every pair was judged in one order. A live judge with "
            "recorded_as asks only the missing order (docs/audit.md, Completing a log)."
        )
    return ""


def judge_table_rows(jm: pl.DataFrame) -> list[list[str]]:
    """The per-judge table as formatted strings (columns of :func:`judge_table_spec`, those
    some judge measured: :func:`measured`)."""
    spec = measured(jm, judge_table_spec(jm))
    return [
        [judge_cell(r, c, f) for c, _, f in spec]
        for r in jm.sort("benchmark", "judge").iter_rows(named=True)
    ]


def markdown_judge_table(jm: pl.DataFrame) -> str:
    """The per-judge table as a Markdown table (empty cells where a job does not measure;
    no column where no judge does: :func:`measured`)."""
    spec = measured(jm, judge_table_spec(jm))
    head = "| " + " | ".join(h for _, h, _ in spec) + " |"
    sep = "|" + "|".join("---" if i < 2 else "---:" for i in range(len(spec))) + "|"
    body = [  # benchmark and judge: text of the directory's; the rest are figures
        "| "
        + " | ".join(
            markdown(cut_text(str(c))) if i < 2 else c for i, c in enumerate(r)
        )
        + " |"
        for r in judge_table_rows(jm)
    ]
    return "\n".join([head, sep, *body])
