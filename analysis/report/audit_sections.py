"""The report's sections for one-order logs and for judges' probabilities against labels.

Written only where they apply (``docs/one-order-and-calibration.md``): a judge that judged
each pair in one order (``metrics/order_design.csv``, ``metrics/one_order_effect.csv``), or
a judge that states probabilities where gold labels exist (``metrics/calibration.csv``,
``metrics/reliability.csv``, ``figures/reliability.png``; the CSVs written by
:func:`voirdire.analysis.report.files.write_dir`). The tables are given, computed by the
stages of :mod:`voirdire.analysis.build` (:class:`~voirdire.analysis.build.DirShown`); here
they are rendered and the reliability figure drawn.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from voirdire.analysis.position.calibration_error import BINS
from voirdire.analysis.report.views import image_view, table_view
from voirdire.escape import markdown

if TYPE_CHECKING:
    from voirdire.analysis.report.shown import DirShown

__all__ = ["audit_sections", "audit_view"]


def _name(x) -> str:
    """A label in a Markdown table cell, escaped (:func:`voirdire.escape.markdown`): it
    cannot end the cell or add a link or HTML."""
    return markdown(x)


def _f(x, fmt: str = "{:.3f}") -> str:
    return "" if x is None or x != x else fmt.format(x)


def _one_order_lines(eff: pl.DataFrame) -> list[str]:
    lines = [
        "## Position effect, one order per pair",
        "",
        "Each pair was judged in one order only. Where the order was drawn at random per "
        "pair, the position effect is a randomised comparison: a model's win rate when "
        "shown first minus its win rate when shown second (ties ½), with a 95 % "
        "cluster-bootstrap interval (questions resampled) and a randomisation p-value "
        "(order labels shuffled within each model; its size at 0.05 is measured in "
        "`perf/bench_one_order.py`). **The two halves differ in instructions too**: the "
        "figure mixes position with the chance imbalance of the instructions between the "
        "halves, which the interval and p account for but cannot remove. Where every pair "
        "was shown in one fixed order, position cannot be separated from the pairs and no "
        "figure is given (`docs/one-order-and-calibration.md`).",
        "",
        "| judge | model | design | n first | n second | win first | win second | effect | 95 % CI | p |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in eff.iter_rows(named=True):
        if r["design"] == "fixed":
            lines.append(
                f"| {_name(r['judge'])} | all | fixed | | | | | | {_name(r['message'])} | |"
            )
            continue
        ci = f"[{_f(r['effect_lo'])}, {_f(r['effect_hi'])}]"
        lines.append(
            f"| {_name(r['judge'])} | {_name(r['candidate'] or '**pooled**')} | randomised | {r['n_first']} | "
            f"{r['n_second']} | {_f(r['win_first'])} | {_f(r['win_second'])} | {_f(r['effect'], '{:+.3f}')} "
            f"| {ci} | {_f(r['p_value'], '{:.4f}')} |"
        )
    return [*lines, ""]


def _calibration_lines(cal: pl.DataFrame, figure: str | None) -> list[str]:
    lines = [
        "## Calibration against the labels",
        "",
        f"The judge's probability that the candidate is the better answer against the gold "
        f"labels (tie labels left out). ECE: expected calibration error over {BINS} "
        "equal-width bins (Naeini et al. 2015; Guo et al. 2017); ECE is biased upward in "
        "small samples, so compare it with *ECE if calibrated*, the mean ECE a perfectly "
        "calibrated judge would show with the same probabilities. Brier: mean squared "
        "error of the probability (Brier 1950; 0.25 for a constant ½). 95 % "
        "cluster-bootstrap intervals.",
        "",
        "| judge | source | n | tie labels | ECE | 95 % CI | ECE if calibrated | Brier | 95 % CI |",
        "|---|---|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in cal.iter_rows(named=True):
        lines.append(
            f"| {_name(r['judge'])} | {_name(r['source'])} | {r['n']} | {r['n_tie_gold']} | {_f(r['ece'])} | "
            f"[{_f(r['ece_lo'])}, {_f(r['ece_hi'])}] | {_f(r['ece_calibrated'])} | {_f(r['brier'])} | "
            f"[{_f(r['brier_lo'])}, {_f(r['brier_hi'])}] |"
        )
    if figure:
        lines += ["", f"![reliability]({figure})"]
    return [*lines, ""]


def audit_sections(shown: DirShown, out: Path) -> tuple[str, dict[str, pl.DataFrame]]:
    """The sections that apply to one directory (those of its tables ``shown`` holds): their
    markdown ("" when none) and their
    tables by CSV name (``{"one_order_effect": DataFrame, ...}``, for the caller to write
    under ``out/metrics/``); the reliability figure is drawn to
    ``out/figures/reliability.png`` when the calibration section applies."""
    parts: list[str] = []
    csvs: dict[str, pl.DataFrame] = {}
    if shown.one_order is not None and shown.order_design is not None:
        csvs |= {
            "order_design": shown.order_design,
            "one_order_effect": shown.one_order,
        }
        parts += _one_order_lines(shown.one_order)
    if shown.calibration is not None and shown.reliability is not None:
        csvs |= {
            "calibration": shown.calibration,
            "reliability": shown.reliability,
        }
        from voirdire.analysis.report.calibration_figure import reliability_figure

        reliability_figure(csvs["reliability"], out / "figures" / "reliability.png")
        parts += _calibration_lines(shown.calibration, "figures/reliability.png")
    return "\n".join(parts), csvs


#: rows of a one-order effect table shown before "Show all"
ONE_ORDER_ROWS = 12


def audit_view(dirs: list[DirShown], figures: Path) -> list[dict[str, Any]] | None:
    """The HTML report's "One order per pair and calibration" section: per directory where
    a section applies, ``name``, ``one_order`` and ``calibration`` (table views or None)
    and ``reliability`` (an image view of the figure drawn to
    ``figures/reliability_<n>.png``, or None); None when no directory has either."""
    out = []
    for k, d in enumerate(dirs):
        one, cal = d.one_order is not None, d.calibration is not None
        if not (one or cal):
            continue
        f3 = dict.fromkeys(["win_first", "win_second", "effect", "effect_lo", "effect_hi", "ece", "ece_lo",
                            "ece_hi", "ece_calibrated", "brier", "brier_lo", "brier_hi"], "{:.3f}")  # fmt: skip
        rel = None
        if cal:
            from voirdire.analysis.report.calibration_figure import reliability_figure

            rel = image_view(
                reliability_figure(d.reliability, figures / f"reliability_{k}.png"),
                f"reliability: {d.name}",
            )
        view, notes = None, []
        if one:  # the pooled row first, then the models by effect; the design said once
            eff = d.one_order.sort(
                pl.col("candidate").is_not_null(), "judge", "effect", nulls_last=True
            )
            notes = (
                eff.get_column("message")
                .drop_nulls()
                .unique(maintain_order=True)
                .to_list()
            )
            view = table_view(
                eff.drop("message").with_columns(
                    pl.col("candidate").fill_null("all models")
                ),
                f3 | {"p_value": "{:.4f}"},
            )
            for i, r in enumerate(view["rows"]):
                r["more"] = i >= ONE_ORDER_ROWS
        out.append(
            {
                "name": d.name,
                "one_order": view,
                "one_order_notes": notes,
                "one_order_rows": 0 if view is None else len(view["rows"]),
                "one_order_collapsed": view is not None
                and len(view["rows"]) > ONE_ORDER_ROWS,
                "calibration": table_view(d.calibration, f3) if cal else None,
                "reliability": rel,
            }
        )
    return out or None
