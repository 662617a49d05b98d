"""The bias section of the report: a CALM-style figure and the section's view for the template.

Tables (per output directory): ``bias_effects_<dir>.csv``
(:func:`~voirdire.analysis.biases.effects.bias_effects`) when the judgments carry perturbations,
``self_enhancement_<dir>.csv`` (:func:`~voirdire.analysis.biases.self_enhancement.self_enhancement`)
when judges whose own model is among the candidates are present. Figure: per directory
and benchmark, CALM's robustness rate per perturbation variant and judge (bars) with the
judge's consistency rate as a dashed line (Ye et al. 2024 draw CR beside RR), above the
directional effect Δ with its 95 % cluster-bootstrap interval. Definitions:
``docs/bias-metrics.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from voirdire.analysis.report.plotting import _save, _short, judge_colors, plt
from voirdire.analysis.report.views import image_view, table_view
from voirdire.escape import unquote_table

__all__ = ["bias_figure", "bias_view"]


def bias_figure(effects: pl.DataFrame, path: str | Path, title: str = "") -> Path:
    """RR (bars, CR dashed per judge) and Δ ± 95 % CI (bars) per variant and judge.

    ``effects``: :func:`~voirdire.analysis.biases.effects.bias_effects` rows of one benchmark
    (``slot == "all"`` is used). Returns the PNG path.
    """
    e = effects.filter(pl.col("slot") == "all").sort("perturbation", "judge")
    variants = e.get_column("perturbation").unique(maintain_order=True).to_list()
    judges = sorted(e.get_column("judge").unique().to_list())
    colors = judge_colors(judges)
    x = np.arange(len(variants))
    width = 0.8 / max(1, len(judges))
    fig, (ax1, ax2) = plt.subplots(
        2,
        1,
        figsize=(max(7, 0.9 * len(variants) * max(1, len(judges)) / 2 + 3), 7.5),
        sharex=True,
    )
    for i, j in enumerate(judges):
        rows = {
            r["perturbation"]: r
            for r in e.filter(pl.col("judge") == j).iter_rows(named=True)
        }
        pos = x - 0.4 + width * (i + 0.5)
        rr = np.array(
            [
                rows[v]["rr"] if v in rows and rows[v]["rr"] is not None else np.nan
                for v in variants
            ]
        )
        ax1.bar(pos, rr, width, color=colors[j], label=_short(j, 28))
        cr = next((r["cr"] for r in rows.values() if r["cr"] is not None), None)
        if cr is not None:
            ax1.axhline(cr, color=colors[j], ls="--", lw=1.2)
        d = np.array(
            [
                rows[v]["delta"]
                if v in rows and rows[v]["delta"] is not None
                else np.nan
                for v in variants
            ]
        )
        lo = np.array(
            [
                rows[v]["delta_lo"]
                if v in rows and rows[v]["delta_lo"] is not None
                else np.nan
                for v in variants
            ]
        )
        hi = np.array(
            [
                rows[v]["delta_hi"]
                if v in rows and rows[v]["delta_hi"] is not None
                else np.nan
                for v in variants
            ]
        )
        err = np.vstack([np.nan_to_num(d - lo), np.nan_to_num(hi - d)])
        ax2.bar(pos, d, width, yerr=err, color=colors[j], capsize=2)
    ax1.set_ylim(0, 1.02)
    ax1.set_ylabel("robustness rate RR")
    ax1.set_title(
        title
        or "Robustness rate (dashed: consistency rate CR) and directional effect Δ"
    )
    ax1.plot([], [], color="grey", ls="--", lw=1.2, label="CR (noise floor)")
    ax1.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax2.axhline(0, color="black", lw=0.8)
    ax2.set_ylabel("Δ target win rate (perturbed − control)")
    ax2.set_xticks(x)
    ax2.set_xticklabels(
        [_short(v, 26) for v in variants], rotation=35, ha="right", fontsize=8
    )
    for ax in (ax1, ax2):
        ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


_EFFECT_SHOWN = [
    "judge",
    "perturbation",
    "perturbation_kind",
    "perturbation_param",
    "target_rule",
    "slot",
    "n",
    "rr",
    "cr",
    "delta",
    "delta_lo",
    "delta_hi",
    "p_value",
    "susceptibility",
    "susceptibility_null",
    "susceptibility_null_lo",
    "susceptibility_null_hi",
    "accuracy_control",
    "accuracy_perturbed",
    "error_rate",
    "error_rate_null",
    "error_rate_null_lo",
    "error_rate_null_hi",
]


def bias_view(written: dict[str, Any]) -> dict[str, Any] | None:
    """The report's bias section as the template takes it (``templates/bias.html.j2``), or
    None when there is nothing to show.

    ``written``: :func:`~voirdire.analysis.report.files.write_study`'s return value (it
    holds the tables and figures :func:`~voirdire.analysis.report.files.write_bias` wrote):
    per directory the effects (``slot == "all"`` rows, then the per-slot rows) with its
    figures, and the self-enhancement tables.
    """
    tabs = {
        k: v
        for k, v in written.get("tables", {}).items()
        if k.startswith(("bias_effects_", "self_enhancement_"))
    }
    if not tabs:
        return None
    figs = written.get("figures", {})
    f3, sg = "{:.3f}", "{:+.3f}"
    fmt = {
        c: f3
        for c in (
            "rr",
            "cr",
            "accuracy_control",
            "accuracy_perturbed",
            "error_rate",
            "error_rate_null",
            "error_rate_null_lo",
            "error_rate_null_hi",
        )
    }
    fmt.update(
        {
            c: sg
            for c in (
                "delta",
                "delta_lo",
                "delta_hi",
                "susceptibility",
                "susceptibility_null",
                "susceptibility_null_lo",
                "susceptibility_null_hi",
            )
        }
    )
    fmt["p_value"] = "{:.2g}"
    effects, selfs = [], []
    for key, path in sorted(tabs.items()):
        if key.startswith("bias_effects_"):
            name = key[len("bias_effects_") :]
            eff = unquote_table(  # our CSV read back: names as they were
                pl.read_csv(
                    path,
                    schema_overrides={
                        "perturbation_param": pl.String,
                        "target_rule": pl.String,
                    },
                )
            )
            shown = [c for c in _EFFECT_SHOWN if c in eff.columns]
            by_slot = eff.filter(pl.col("slot") != "all").select(shown)
            effects.append({
                "name": name,
                "figures": [image_view(fp, fk) for fk, fp in sorted(figs.items()) if fk.startswith(f"bias:{name}:")],
                "main": table_view(eff.filter(pl.col("slot") == "all").select(shown), fmt),
                "by_slot": table_view(by_slot, fmt) if by_slot.height else None, "n_by_slot": by_slot.height,
            })  # fmt: skip
        else:
            se = unquote_table(pl.read_csv(path))
            fse = {
                c: (sg if c.startswith(("raw", "did", "adj", "slope")) else f3)
                for c in se.columns
                if se.schema[c] == pl.Float64
            }
            selfs.append(
                {"name": key[len("self_enhancement_") :], "table": table_view(se, fse)}
            )
    return {"effects": effects, "self_enhancement": selfs}
