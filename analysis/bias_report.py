"""The bias section of the report: tables, a CALM-style figure and the HTML block.

Tables (per output directory): ``bias_effects_<dir>.csv``
(:func:`~voirdire.analysis.biases.bias_effects`) when the judgments carry perturbations,
``self_enhancement_<dir>.csv`` (:func:`~voirdire.analysis.self_enhancement.self_enhancement`)
when judges whose own model is among the candidates are present. Figure: per directory
and benchmark, CALM's robustness rate per perturbation variant and judge (bars) with the
judge's consistency rate as a dashed line (Ye et al. 2024 draw CR beside RR), above the
directional effect Δ with its 95 % cluster-bootstrap interval. Definitions:
``docs/bias-metrics.md``.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from voirdire.analysis.biases import bias_effects, has_perturbations
from voirdire.analysis.figures import _save, _short, judge_colors, plt
from voirdire.analysis.self_enhancement import has_own_models, self_enhancement

from voirdire.core import slug

__all__ = ["bias_figure", "write_bias", "bias_section"]


def bias_figure(effects: pl.DataFrame, path: str | Path, title: str = "") -> Path:
    """RR (bars, CR dashed per judge) and Δ ± 95 % CI (bars) per variant and judge.

    ``effects``: :func:`~voirdire.analysis.biases.bias_effects` rows of one benchmark
    (``slot == "all"`` is used). Returns the PNG path.
    """
    e = effects.filter(pl.col("slot") == "all").sort("perturbation", "judge")
    variants = e.get_column("perturbation").unique(maintain_order=True).to_list()
    judges = sorted(e.get_column("judge").unique().to_list())
    colors = judge_colors(judges)
    x = np.arange(len(variants))
    width = 0.8 / max(1, len(judges))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(7, 0.9 * len(variants) * max(1, len(judges)) / 2 + 3), 7.5), sharex=True)
    for i, j in enumerate(judges):
        rows = {r["perturbation"]: r for r in e.filter(pl.col("judge") == j).iter_rows(named=True)}
        pos = x - 0.4 + width * (i + 0.5)
        rr = np.array([rows[v]["rr"] if v in rows and rows[v]["rr"] is not None else np.nan for v in variants])
        ax1.bar(pos, rr, width, color=colors[j], label=_short(j, 28))
        cr = next((r["cr"] for r in rows.values() if r["cr"] is not None), None)
        if cr is not None:
            ax1.axhline(cr, color=colors[j], ls="--", lw=1.2)
        d = np.array([rows[v]["delta"] if v in rows and rows[v]["delta"] is not None else np.nan for v in variants])
        lo = np.array([rows[v]["delta_lo"] if v in rows and rows[v]["delta_lo"] is not None else np.nan for v in variants])
        hi = np.array([rows[v]["delta_hi"] if v in rows and rows[v]["delta_hi"] is not None else np.nan for v in variants])
        err = np.vstack([np.nan_to_num(d - lo), np.nan_to_num(hi - d)])
        ax2.bar(pos, d, width, yerr=err, color=colors[j], capsize=2)
    ax1.set_ylim(0, 1.02)
    ax1.set_ylabel("robustness rate RR")
    ax1.set_title(title or "Robustness rate (dashed: consistency rate CR) and directional effect Δ")
    ax1.plot([], [], color="grey", ls="--", lw=1.2, label="CR (noise floor)")
    ax1.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax2.axhline(0, color="black", lw=0.8)
    ax2.set_ylabel("Δ target win rate (perturbed − control)")
    ax2.set_xticks(x)
    ax2.set_xticklabels([_short(v, 26) for v in variants], rotation=35, ha="right", fontsize=8)
    for ax in (ax1, ax2):
        ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def write_bias(dirs: list[Any], mdir: Path, fdir: Path, replicates: int = 1000) -> dict[str, dict[str, Path]]:
    """Compute and write the bias tables and figures of each directory.

    Args:
        dirs: objects with ``name`` (str) and ``judgments`` (JUDGMENT_SCHEMA DataFrame)
            (the study's :class:`~voirdire.analysis.study.DirAnalysis`); where one also
            carries ``bias_effects`` / ``self_enhancement`` tables already computed (the
            study's, from :func:`~voirdire.analysis.outputs.compute_dir`), they are used
            as they are, else computed here with ``replicates`` bootstrap draws.
        mdir, fdir: the report's ``metrics/`` and ``figures/`` folders.

    Returns:
        ``{"tables": {name: csv path}, "figures": {"bias:<dir slug>:<benchmark>": png path}}``;
        empty dicts when no directory has perturbations or own-model judges.
    """
    tables: dict[str, Path] = {}
    figs: dict[str, Path] = {}
    for d in dirs:
        s = slug(d.name)
        if has_perturbations(d.judgments):
            eff = getattr(d, "bias_effects", None)
            eff = bias_effects(d.judgments, replicates=replicates) if eff is None else eff
            tables[f"bias_effects_{s}"] = p = mdir / f"bias_effects_{s}.csv"
            eff.write_csv(p)
            for b in sorted(eff.get_column("benchmark").unique().to_list()):
                bs = slug(b)
                figs[f"bias:{s}:{b}"] = bias_figure(eff.filter(pl.col("benchmark") == b), fdir / f"bias_{s}_{bs}.png", f"{d.name} · {b}: RR (dashed: CR) and Δ ± 95% CI")
        if has_own_models(d.judgments):
            se = getattr(d, "self_enhancement", None)
            se = self_enhancement(d.judgments, replicates=replicates) if se is None else se
            if se.height:
                tables[f"self_enhancement_{s}"] = p = mdir / f"self_enhancement_{s}.csv"
                se.write_csv(p)
    return {"tables": tables, "figures": figs}


_EFFECT_SHOWN = [
    "judge", "perturbation", "perturbation_kind", "perturbation_param", "target_rule", "slot", "n",
    "rr", "cr", "delta", "delta_lo", "delta_hi", "p_value", "susceptibility", "susceptibility_null", "susceptibility_null_lo",
    "susceptibility_null_hi", "accuracy_control", "accuracy_perturbed", "error_rate", "error_rate_null", "error_rate_null_lo",
    "error_rate_null_hi",
]  # fmt: skip


def bias_section(written: dict[str, Any], table: Callable[..., str], img: Callable[[Any, str], str]) -> str:
    """The report's bias section as HTML (empty string when there is nothing to show).

    ``written``: :func:`~voirdire.analysis.study.write_study`'s return value (it holds the
    tables and figures :func:`write_bias` wrote); ``table``/``img``: the report's table
    and image renderers (``html_report.html_table`` and its PNG embedder).
    """
    tabs = {k: v for k, v in written.get("tables", {}).items() if k.startswith(("bias_effects_", "self_enhancement_"))}
    if not tabs:
        return ""
    figs = written.get("figures", {})
    f3, sg = "{:.3f}", "{:+.3f}"
    p = ['<h2 id="biases">Biases beyond position (CALM)</h2>']
    p.append(
        '<p class="note">Ye et al., “Justice or Prejudice? Quantifying Biases in LLM-as-a-Judge” (CALM, 2024). '
        "RR: share of (instance, order, repetition) whose verdict the perturbation leaves unchanged; CR: the control asked "
        "twice (repetition 1 against 2), the noise floor, drawn dashed; Δ = P(target wins | perturbed) − P(target wins | "
        "control) on the same pairs, ties as half a win, with a 95 % cluster-bootstrap interval over questions and an exact "
        "two-sided McNemar p on the discordant pairs; slot: all pairs, or those with the target in the first / last slot. "
        "Only Δ tells a bias from noise. The susceptibility and the error rate do not read 0 for a judge the perturbation "
        "does not move: each comes with its null reference (<code>_null</code>: the mean reading of such a judge on the same "
        "pairs, control and perturbed askings swapped at random within each pair; <code>_null_lo</code>/<code>_null_hi</code> "
        "its 95 % band). Read them against the null reference, not against 0: inside the band is no evidence of an effect. "
        "Definitions: <code>docs/bias-metrics.md</code>.</p>"
    )
    for key, path in sorted(tabs.items()):
        if not key.startswith("bias_effects_"):
            continue
        name = key[len("bias_effects_"):]
        eff = pl.read_csv(path, schema_overrides={"perturbation_param": pl.String, "target_rule": pl.String})
        p.append(f"<h3>{html.escape(name)}</h3>")
        for fk, fp in sorted(figs.items()):
            if fk.startswith(f"bias:{name}:"):
                p.append(img(fp, fk))
        main = eff.filter(pl.col("slot") == "all").select([c for c in _EFFECT_SHOWN if c in eff.columns])
        fmt = {c: f3 for c in ("rr", "cr", "accuracy_control", "accuracy_perturbed", "error_rate", "error_rate_null", "error_rate_null_lo", "error_rate_null_hi")}
        fmt.update({c: sg for c in ("delta", "delta_lo", "delta_hi", "susceptibility", "susceptibility_null", "susceptibility_null_lo", "susceptibility_null_hi")})
        fmt["p_value"] = "{:.2g}"
        p.append(table(main, fmt))
        by_slot = eff.filter(pl.col("slot") != "all").select([c for c in _EFFECT_SHOWN if c in eff.columns])
        if by_slot.height:
            p.append(f"<details><summary>Δ with the target in the first and in the last slot ({by_slot.height})</summary>")
            p.append(table(by_slot, fmt))
            p.append("</details>")
    for key, path in sorted(tabs.items()):
        if not key.startswith("self_enhancement_"):
            continue
        se = pl.read_csv(path)
        p.append(f"<h3>Self-enhancement · {html.escape(key[len('self_enhancement_'):])}</h3>")
        p.append(
            '<p class="note">Pairwise form, from the verdicts on record (no new query): raw = owr<sub>j</sub>(own model) − '
            "mean over the other judges of their owr of it (same pairs): <i>does the judge rate its own model higher than the "
            "others do?</i> did = that deviation minus the judge's mean deviation over every other candidate: <i>by more than "
            "it over-rates the average other candidate?</i> (removes uniform leniency). adj = the deviation minus the one "
            "predicted at the own model's strength by the judge's least-squares line of deviation on the other judges' win rate "
            "over its other candidates (slope: that line's slope): <i>by more than it over-rates a candidate of the same "
            "strength?</i> (also removes leniency that grows with strength). error_rate: CALM's "
            "|ȳ<sub>self</sub> − ȳ<sub>other</sub>| / ȳ<sub>other</sub> with win rates for scores, an absolute value; "
            "error_rate_null: its null reference (judges' scores exchanged within each pair) with its band. 95 % "
            "cluster-bootstrap intervals over questions.</p>"
        )
        p.append(table(se, {c: (sg if c.startswith(("raw", "did", "adj", "slope")) else f3) for c in se.columns if se.schema[c] == pl.Float64}))
    return "".join(p)
