"""The per-judge, gold-label and bias tables on the terminal (rich), beside their Markdown
forms in :mod:`voirdire.analysis.report.markdown`. Every cell is a ``rich.text.Text``
(:func:`voirdire.escape.cell`): names from a received file print as written, never as
markup, emoji codes or control bytes."""

from __future__ import annotations

import polars as pl
from rich.console import Console
from rich.table import Table

from voirdire.analysis.report.judge_table import (
    added_metric_columns,
    fmt_value,
    gate_words,
    judge_cell,
    judge_table_spec,
    measured,
    unmeasured_note,
)
from voirdire.escape import cell

__all__ = ["print_judge_table", "print_gold_table", "print_bias_table"]


#: columns of the terminal tables: position-bias jobs, then repetition jobs
_POSITION_COLS = [
    "benchmark",
    "judge",
    "pc",
    "pc_std",
    "pf",
    "pf_std",
    "error_rate",
    "pass_kappa",
    "pass_kappa_gate",
]
_REPETITION_COLS = [
    "benchmark",
    "judge",
    "rs",
    "rs_spread",
    "pc",
    "pf",
    "error_rate",
    "pass_kappa",
    "pass_kappa_gate",
]


def print_judge_table(jm: pl.DataFrame, console: Console | None = None) -> None:
    """Print the per-judge tables to the terminal with rich: one for position-bias cells
    (no repetitions) and one for repetition-stability cells (RS measured); both with the
    inter-pass kappa, its interval and its 0.6 gate when ``jm`` carries them, then a column
    per other registered metric ``jm`` has (header and format from its record). Accuracy
    against gold labels prints in its own table (:func:`print_gold_table`)."""
    console = console or Console(highlight=False)
    fmts = {c: (h, f) for c, h, f in judge_table_spec(jm)}
    added = [
        c for c, _, _ in added_metric_columns(jm)
    ]  # registered metrics other than pc, pf, rs
    has_rs = (
        jm["rs"].is_not_null() if "rs" in jm.columns else pl.Series([False] * jm.height)
    )
    for title, cols, part in (
        ("Position bias per judge", _POSITION_COLS + added, jm.filter(~has_rs)),
        ("Repetition stability per judge", _REPETITION_COLS + added, jm.filter(has_rs)),
    ):
        if part.height == 0:
            continue
        cols = [c for c, _, _ in measured(part, [(c, *fmts[c]) for c in cols])]
        table = Table(
            title=f"{title} ({part.height} benchmark × judge rows)",
            caption=unmeasured_note(part)
            or "κ passes: Cohen's kappa between the two orders' verdicts (95% CI); "
            f"gate {gate_words()} (docs/mitigation.md)",
        )
        for i, c in enumerate(cols):
            table.add_column(
                fmts[c][0],
                justify="left" if i < 2 else "right",
                no_wrap=i < 2 or c == "pass_kappa",
                min_width=None if i < 2 else 6,
            )
        for r in part.sort("benchmark", "judge").iter_rows(named=True):
            table.add_row(*[cell(judge_cell(r, c, fmts[c][1])) for c in cols])
        console.print(table)


def print_gold_table(jm: pl.DataFrame, console: Console | None = None) -> None:
    """Print, per benchmark × judge with gold labels, PC and PF beside accuracy against the
    gold labels, all read from the judge table ``jm`` (its
    :data:`~voirdire.analysis.position.gold.GOLD_JUDGE_COLUMNS`, computed by the analysis:
    nothing is computed here): pooled over both orders, per order (as shown, swapped) and
    both orders correct, a failed verdict counted as wrong (the intervals are in
    ``metrics/judge_metrics.csv`` and the reports). Prints nothing without gold columns."""
    if "n_gold" not in jm.columns:
        return
    rows = jm.filter(pl.col("n_gold").is_not_null()).rename({"n_gold": "n"})
    if rows.height == 0:
        return
    console = console or Console(highlight=False)
    table = Table(
        title=f"Accuracy against gold labels ({rows.height} benchmark × judge rows; failed verdicts count as wrong)"
    )
    for c in ("benchmark", "judge"):
        table.add_column(c, no_wrap=True)
    for c in ("pairs", "PC", "PF", "accuracy", "shown", "swapped", "both"):
        table.add_column(c, justify="right", no_wrap=True)
    for r in rows.sort("benchmark", "judge").iter_rows(named=True):
        table.add_row(
            cell(r["benchmark"]),
            cell(r["judge"]),
            f"{r['n']:,}",
            fmt_value(r["pc"], "{:.3f}"),
            fmt_value(r["pf"], "{:+.3f}"),
            *[
                fmt_value(r[c], "{:.3f}")
                for c in (
                    "accuracy",
                    "accuracy_shown",
                    "accuracy_swapped",
                    "both_correct",
                )
            ],
        )
    console.print(table)


def print_bias_table(effects: pl.DataFrame, console: Console | None = None) -> None:
    """Print the bias suite's effects (``voirdire.analysis.biases.effects.bias_effects``, the
    ``slot == "all"`` rows) to the terminal: per benchmark × judge × perturbation variant,
    CALM's robustness rate RR next to the consistency rate CR (the noise floor), the
    directional effect Δ = P(target wins | perturbed) − P(target wins | control) with its
    95 % cluster-bootstrap interval, the exact McNemar p-value and the valid pairs n."""
    console = console or Console(highlight=False)
    rows = effects.filter(pl.col("slot") == "all").sort(
        "benchmark", "judge", "perturbation"
    )
    table = Table(
        title=f"Bias effects per judge and perturbation ({rows.height} rows; docs/bias-metrics.md)"
    )
    for c in ("benchmark", "judge"):
        table.add_column(c, no_wrap=True)
    table.add_column("perturbation", overflow="fold", ratio=1)
    for c in ("RR", "CR", "Δ", "95% CI", "McNemar p", "n"):
        table.add_column(c, justify="right", no_wrap=True)
    for r in rows.iter_rows(named=True):
        no_delta = r["delta"] is None
        table.add_row(
            cell(r["benchmark"]), cell(r["judge"]), cell(r["perturbation"]), fmt_value(r["rr"], "{:.3f}"), fmt_value(r["cr"], "{:.3f}"),
            "" if no_delta else f"{r['delta']:+.3f}", "" if no_delta else f"[{r['delta_lo']:+.2f}, {r['delta_hi']:+.2f}]",
            "" if r["p_value"] is None else f"{r['p_value']:.2g}", f"{r['n']:,}",
        )  # fmt: skip
    console.print(table)


def print_one_order_table(
    effect: pl.DataFrame, console: Console | None = None, rows: int = 10
) -> None:
    """Print the position effect of the judges that judged each pair in one order (a
    :func:`~voirdire.analysis.position.one_order.one_order_effect` table): per judge the
    pooled row first, then the ``rows`` models with the smallest p (ties by the largest
    |effect|), and one caption with what the design lets the figure mean. Prints nothing
    for an empty table or a fixed order (no figure)."""
    shown = effect.filter(pl.col("effect").is_not_null())
    if not shown.height:
        return
    console = console or Console(highlight=False)
    for (b, j), part in shown.group_by("benchmark", "judge", maintain_order=True):
        models = part.filter(pl.col("candidate").is_not_null())
        pooled = part.filter(pl.col("candidate").is_null())
        top = models.with_columns(_a=pl.col("effect").abs()).sort(
            "p_value", "_a", descending=[False, True], nulls_last=True
        )
        more = max(0, models.height - rows)
        table = Table(
            title=cell(f"Position effect, one order per pair: {b}, {j} "
                       f"(win rate shown first minus shown second)"),
            caption=cell((part.get_column("message").drop_nulls().head(1).to_list() or [""])[0])
            + (f"; … {more} more models in the report" if more else ""),
        )  # fmt: skip
        table.add_column("model", overflow="fold", ratio=1, min_width=14)
        for h in (
            "n first",
            "n second",
            "win first",
            "win second",
            "effect",
            "95% CI",
            "p",
        ):
            table.add_column(h, justify="right", no_wrap=True)
        for r in [*pooled.iter_rows(named=True), *top.head(rows).iter_rows(named=True)]:
            table.add_row(
                cell(r["candidate"]) if r["candidate"] is not None else "all models",
                f"{r['n_first']:,}", f"{r['n_second']:,}", fmt_value(r["win_first"], "{:.3f}"),
                fmt_value(r["win_second"], "{:.3f}"), fmt_value(r["effect"], "{:+.3f}"),
                f"[{r['effect_lo']:+.3f}, {r['effect_hi']:+.3f}]" if r["effect_lo"] is not None else "",
                fmt_value(r["p_value"], "{:.2g}"),
            )  # fmt: skip
        console.print(table)
