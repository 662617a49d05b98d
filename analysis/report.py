"""The plain-text report: the per-judge table in Markdown (``report.md``) and on the terminal."""

from __future__ import annotations

import os
from typing import Any

import polars as pl
from rich.console import Console
from rich.table import Table
from voirdire.analysis.formulas import safe_div, valid
from voirdire.analysis.listwise import listwise_series, slot_shares

#: (column, header, format) of the per-judge table
JUDGE_TABLE = [
    ("benchmark", "benchmark", "{}"),
    ("judge", "judge", "{}"),
    ("pc", "PC", "{:.3f}"),
    ("pc_std", "PC std", "{:.3f}"),
    ("pf", "PF", "{:+.3f}"),
    ("pf_std", "PF std", "{:.3f}"),
    ("error_rate", "errors", "{:.2%}"),
    ("rs", "RS", "{:.3f}"),
    ("rs_spread", "RS ±", "{:.3f}"),
    ("pass_kappa", "κ passes [95% CI]", "kappa"),
    ("pass_kappa_gate", "κ ≥ 0.6", "{}"),
]
#: columns added where the judgments carry gold labels (accuracy against them,
#: ``docs/gold-labels.md``); absent for benchmarks without labels
GOLD_TABLE = [
    ("accuracy", "accuracy", "{:.3f}"),
    ("accuracy_shown", "acc. shown", "{:.3f}"),
    ("accuracy_swapped", "acc. swapped", "{:.3f}"),
    ("both_correct", "both correct", "{:.3f}"),
]


def _table_spec(jm: pl.DataFrame) -> list[tuple[str, str, str]]:
    """:data:`JUDGE_TABLE`, plus :data:`GOLD_TABLE` when some judge has an accuracy."""
    gold = "accuracy" in jm.columns and jm.get_column("accuracy").is_not_null().any()
    return JUDGE_TABLE + GOLD_TABLE if gold else JUDGE_TABLE


def _fmt(value: Any, fmt: str) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return fmt.format(value)


def _kappa_ci(r: dict[str, Any]) -> str:
    """The inter-pass kappa with its interval, ``0.512 [0.47, 0.55]`` (empty when undefined)."""
    k, lo, hi = r.get("pass_kappa"), r.get("pass_kappa_lo"), r.get("pass_kappa_hi")
    if k is None or k != k:
        return ""
    return f"{k:.3f}" if lo is None or hi is None or lo != lo else f"{k:.3f} [{lo:.2f}, {hi:.2f}]"


def _cell(r: dict[str, Any], col: str, fmt: str) -> str:
    return _kappa_ci(r) if fmt == "kappa" else _fmt(r.get(col), fmt)


def judge_table_rows(jm: pl.DataFrame) -> list[list[str]]:
    """The per-judge table as formatted strings (columns of :data:`JUDGE_TABLE`, and of
    :data:`GOLD_TABLE` where the judgments carry gold labels)."""
    spec = _table_spec(jm)
    return [[_cell(r, c, f) for c, _, f in spec] for r in jm.sort("benchmark", "judge").iter_rows(named=True)]


def markdown_judge_table(jm: pl.DataFrame) -> str:
    """The per-judge table as a Markdown table (empty cells where a job does not measure)."""
    spec = _table_spec(jm)
    head = "| " + " | ".join(h for _, h, _ in spec) + " |"
    sep = "|" + "|".join("---" if i < 2 else "---:" for i in range(len(spec))) + "|"
    body = ["| " + " | ".join(r) + " |" for r in judge_table_rows(jm)]
    return "\n".join([head, sep, *body])


#: columns of the terminal tables: position-bias jobs, then repetition jobs
_POSITION_COLS = ["benchmark", "judge", "pc", "pc_std", "pf", "pf_std", "error_rate", "pass_kappa", "pass_kappa_gate"]
_REPETITION_COLS = ["benchmark", "judge", "rs", "rs_spread", "pc", "pf", "error_rate", "pass_kappa", "pass_kappa_gate"]


def print_judge_table(jm: pl.DataFrame, console: Console | None = None) -> None:
    """Print the per-judge tables to the terminal with rich: one for position-bias cells
    (no repetitions) and one for repetition-stability cells (RS measured); both with the
    inter-pass kappa, its interval and its 0.6 gate when ``jm`` carries them. Accuracy
    against gold labels prints in its own table (:func:`print_gold_table`)."""
    console = console or Console()
    fmts = {c: (h, f) for c, h, f in JUDGE_TABLE}
    has_rs = jm["rs"].is_not_null() if "rs" in jm.columns else pl.Series([False] * jm.height)
    for title, cols, part in (
        ("Position bias per judge", _POSITION_COLS, jm.filter(~has_rs)),
        ("Repetition stability per judge", _REPETITION_COLS, jm.filter(has_rs)),
    ):
        if part.height == 0:
            continue
        table = Table(
            title=f"{title} ({part.height} benchmark × judge rows)",
            caption="κ passes: Cohen's kappa between the two orders' verdicts (95% CI); gate κ ≥ 0.6 (docs/mitigation.md)",
        )
        for i, c in enumerate(cols):
            table.add_column(fmts[c][0], justify="left" if i < 2 else "right", no_wrap=i < 2 or c == "pass_kappa", min_width=None if i < 2 else 6)
        for r in part.sort("benchmark", "judge").iter_rows(named=True):
            table.add_row(*[_cell(r, c, fmts[c][1]) for c in cols])
        console.print(table)


def print_gold_table(jm: pl.DataFrame, acc: pl.DataFrame, console: Console | None = None) -> None:
    """Print, per benchmark × judge with gold labels, PC and PF (from the judge table ``jm``)
    beside accuracy against the gold labels (``acc``:
    :func:`voirdire.analysis.release_stats.gold_accuracy`): pooled over both orders, per
    order (as shown, swapped) and both orders correct, a failed verdict counted as wrong
    (the intervals are in ``metrics/judge_metrics.csv`` and the reports)."""
    if acc.height == 0:
        return
    console = console or Console()
    rows = acc.join(jm.select("benchmark", "judge", "pc", "pf"), on=["benchmark", "judge"], how="left")
    table = Table(title=f"Accuracy against gold labels ({rows.height} benchmark × judge rows; failed verdicts count as wrong)")
    for c in ("benchmark", "judge"):
        table.add_column(c, no_wrap=True)
    for c in ("pairs", "PC", "PF", "accuracy", "shown", "swapped", "both"):
        table.add_column(c, justify="right", no_wrap=True)
    for r in rows.sort("benchmark", "judge").iter_rows(named=True):
        table.add_row(r["benchmark"], r["judge"], f"{r['n']:,}", _fmt(r["pc"], "{:.3f}"), _fmt(r["pf"], "{:+.3f}"),
                      *[_fmt(r[c], "{:.3f}") for c in ("accuracy", "accuracy_shown", "accuracy_swapped", "both_correct")])
    console.print(table)


def print_bias_table(effects: pl.DataFrame, console: Console | None = None) -> None:
    """Print the bias suite's effects (``voirdire.analysis.biases.bias_effects``, the
    ``slot == "all"`` rows) to the terminal: per benchmark × judge × perturbation variant,
    CALM's robustness rate RR next to the consistency rate CR (the noise floor), the
    directional effect Δ = P(target wins | perturbed) − P(target wins | control) with its
    95 % cluster-bootstrap interval, the exact McNemar p-value and the valid pairs n."""
    console = console or Console()
    rows = effects.filter(pl.col("slot") == "all").sort("benchmark", "judge", "perturbation")
    table = Table(title=f"Bias effects per judge and perturbation ({rows.height} rows; docs/bias-metrics.md)")
    for c in ("benchmark", "judge"):
        table.add_column(c, no_wrap=True)
    table.add_column("perturbation", overflow="fold", ratio=1)
    for c in ("RR", "CR", "Δ", "95% CI", "McNemar p", "n"):
        table.add_column(c, justify="right", no_wrap=True)
    for r in rows.iter_rows(named=True):
        no_delta = r["delta"] is None
        table.add_row(
            r["benchmark"], r["judge"], r["perturbation"], _fmt(r["rr"], "{:.3f}"), _fmt(r["cr"], "{:.3f}"),
            "" if no_delta else f"{r['delta']:+.3f}", "" if no_delta else f"[{r['delta_lo']:+.2f}, {r['delta_hi']:+.2f}]",
            "" if r["p_value"] is None else f"{r['p_value']:.2g}", f"{r['n']:,}",
        )  # fmt: skip
    console.print(table)


def markdown_slot_table(shares: pl.DataFrame) -> str:
    """List-wise slot choice shares as a Markdown table: one row per (benchmark, judge,
    list size, option mode), one column per slot (share of slot-choosing verdicts, with
    its excess over 1/p in parentheses), then the tie share, the number of choices and the
    chi-square test of the slot counts against uniform, clustered by question
    (:func:`voirdire.analysis.listwise.cluster_wald`: statistic, degrees of freedom,
    questions, p-value).

    Args:
        shares: :func:`voirdire.analysis.listwise.slot_shares` output.
    """
    if shares.height == 0:
        return ""
    max_p = int(shares["list_size"].max())
    slots = "ABCDEFGHI"[:max_p]
    head = "| benchmark | judge | p | 1/p | " + " | ".join(slots) + " | tie | choices | clustered χ² (dof; questions) | p-value |"
    sep = "|---|---|---:|---:|" + "---:|" * (max_p + 4)
    body = []
    keys = ["benchmark", "judge", "list_size", "option_mode"]
    for key, grp in shares.sort([*keys, "position"]).group_by(keys, maintain_order=True):
        bench, judge, p, _ = key
        cells = {r["slot"]: f"{r['share']:.3f} ({r['excess']:+.3f})" for r in grp.iter_rows(named=True)}
        first = grp.row(0, named=True)
        row = [str(bench), str(judge), str(p), f"{first['expected']:.3f}"]
        row += [cells.get(x, "") for x in slots]
        row += [f"{first['tie_share']:.3f}", f"{first['n_choices']:,}"]
        row += [_fmt(first["chi2"], "{:.1f}") + f" ({first['chi2_dof']}; {first['clusters'] or 0})", _fmt(first["chi2_p"], "{:.3g}")]
        body.append("| " + " | ".join(row) + " |")
    return "\n".join([head, sep, *body])


def markdown_series_table(judgments: pl.DataFrame) -> str:
    """List-wise series per (benchmark, judge): all series, consistent, primacy-leaning
    (``s < 0``), recency-leaning (``s > 0``), balanced (inconsistent, ``s = 0``), error and
    other series (integer counts of :func:`voirdire.analysis.listwise.listwise_series`),
    as Markdown."""
    series = listwise_series(judgments)
    if series.height == 0:
        return ""
    k = pl.col("klass")
    agg = (
        series.group_by("benchmark", "judge")
        .agg(
            n=pl.len(),
            **{c: (k == c).sum() for c in ("consistent", "primacy", "recency", "balanced", "error", "other")},
        )
        .sort("benchmark", "judge")
    )
    lines = [
        "| benchmark | judge | series | consistent | primacy-leaning | recency-leaning | balanced | error | other |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in agg.iter_rows(named=True):
        lines.append(
            f"| {r['benchmark']} | {r['judge']} | {r['n']:,} | {r['consistent']:,} | {r['primacy']:,} | "
            f"{r['recency']:,} | {r['balanced']:,} | {r['error']:,} | {r['other']:,} |"
        )
    return "\n".join(lines)


def markdown_candidate_table(cm: pl.DataFrame) -> str:
    """List-wise candidates: per (benchmark, judge, candidate), series counted, pooled PC,
    mean owr and mean quality gap over the candidate's cells (tasks), as Markdown."""
    if cm.height == 0:
        return ""
    agg = (
        cm.filter(pl.col("n") > 0)
        .group_by("benchmark", "judge", "candidate")
        .agg(n=pl.col("n").sum(), _c=pl.col("consistent").sum(), _v=valid().sum(), owr=pl.col("owr").mean(), gap=pl.col("quality_gap").mean())
        .with_columns(pc=safe_div(pl.col("_c"), pl.col("_v")))
        .sort("benchmark", "judge", pl.col("owr").round(12), "candidate", descending=[False, False, True, False])
    )
    lines = ["| benchmark | judge | candidate | series | PC | owr | quality gap |", "|---|---|---|---:|---:|---:|---:|"]
    for r in agg.iter_rows(named=True):
        lines.append(
            f"| {r['benchmark']} | {r['judge']} | {r['candidate']} | {r['n']:,} | {r['pc']:.3f} | {r['owr']:.3f} | {r['gap']:.3f} |"
        )
    return "\n".join(lines)


def write_markdown_report(
    path: str | os.PathLike,
    meta: dict[str, Any],
    judgments: pl.DataFrame,
    jm: pl.DataFrame,
    cm: pl.DataFrame,
    shares: pl.DataFrame | None = None,
) -> None:
    """Write ``report.md``: the job's settings, counts, failures by class and the per-judge
    table; for list-wise jobs the slot shares, the series classes and the candidates.

    Args:
        meta: the job record (``job.json``).
        judgments: JUDGMENT_SCHEMA rows; ``jm``/``cm``: judge and cell metrics.
        shares: :func:`voirdire.analysis.listwise.slot_shares` (computed when ``None`` and
            the job has list-wise rows).
    """
    job = meta["job"]
    comp = job.get("comparison", {})
    n = judgments.height
    failures = (
        judgments.filter(pl.col("failure").is_not_null()).group_by("judge", "failure").len().sort("judge", "failure")
    )
    unextracted = judgments.filter(pl.col("failure").is_null() & pl.col("failed")).height
    lines = [
        f"# voirdire report: {job['name']}",
        "",
        f"- benchmark: **{meta['benchmark']}** ({job['benchmark'].get('sample', 'full')} table), "
        f"{meta['instances']} instances",
        f"- comparison: {comp.get('mode', 'pairwise')}, option mode {meta['option_mode']}, "
        f"permutations `{comp.get('permutations', 'both')}`, repetitions {comp.get('repetitions', 1)}",
        f"- judges: {', '.join(meta['judges'])}",
        f"- judgments: {n:,} ({judgments.filter(pl.col('failed')).height:,} failed: "
        f"{judgments.filter(pl.col('failure').is_not_null()).height:,} with no output, {unextracted:,} with no extractable verdict)",
        "",
        "## Per judge",
        "",
        "PC: position consistency (pooled over cells); PF: preference fairness (mean over cells; "
        "−1 primacy, +1 recency); RS: repetition stability (Shi et al. 2024; definitions in "
        "voirdire's `docs/metrics.md`). κ passes: Cohen's kappa over {win, tie, loss} between the "
        "verdicts of the original and of the swapped order, pair by pair, with its 95 % "
        "cluster-bootstrap interval; the practitioners' gate trusts a judge for the task only "
        "at κ ≥ 0.6 (`docs/mitigation.md`; not kappa against a reference).",
        "",
        markdown_judge_table(jm),
        "",
    ]
    listwise = "mode" in judgments.columns and judgments.filter(pl.col("mode") == "listwise").height > 0
    if listwise:
        perms = str(comp.get("permutations", ""))
        sampled = (
            [
                f"Orders were sampled (`{perms}`): PF is unbiased only on average over drawn "
                "orders; a judge without position bias can read a PF away from 0 on one draw of "
                "orders that is not balanced over the slots.",
                "",
            ]
            if perms.startswith("sample")
            else []
        )
        lines += [
            "## List-wise: slot choice shares",
            "",
            "Share of the verdicts that pick each slot (ties and failures excluded), with the "
            "excess over 1/p in parentheses: a judge without position bias is near 1/p on "
            "every slot; slot A above 1/p is primacy, the last slot above 1/p recency. "
            "Tie: share of verdicts that are the tie option. χ²: goodness-of-fit test of the "
            "slot counts against uniform (p − 1 degrees of freedom). PF only reads a "
            "first-versus-last preference (a judge that favours middle slots reads PF ≈ 0): "
            "read it with these shares.",
            "",
            markdown_slot_table(shares if shares is not None else slot_shares(judgments)),
            "",
            *sampled,
            "## List-wise: series",
            "",
            "A series is one judge's verdicts on one list over all its orders. An inconsistent "
            "series gets the mean position score s of its non-tie choices (slot j of p scores "
            "2(j−1)/(p−1) − 1: slot A −1, last slot +1): primacy-leaning if s < 0, "
            "recency-leaning if s > 0, balanced if s = 0. PF per cell = (Σ max(s, 0) − "
            "Σ max(−s, 0)) / n; `docs/metrics.md`, List-wise.",
            "",
            markdown_series_table(judgments),
            "",
            "## List-wise: candidates",
            "",
            "Per candidate: series it appears in, position consistency (pooled), overall win "
            "rate owr = (C_w + (C_t + C_I)/p)/v and quality gap |owr − 1/p| (means over "
            "tasks); `docs/metrics.md`, List-wise.",
            "",
            # a job has one comparison mode, so a job with list-wise rows has list-wise cells only
            markdown_candidate_table(cm),
            "",
        ]
    if failures.height:
        lines += ["## Failures by class", "", "| judge | class | count |", "|---|---|---:|"]
        lines += [f"| {j} | {c} | {k} |" for j, c, k in failures.iter_rows()]
        lines.append("")
    lines += [
        "## Files",
        "",
        "- `raw/`: raw judge outputs and recorded failures (Parquet)",
        "- `judgments.parquet`: raw rows with extracted verdicts",
        "- `metrics/judge_metrics.csv`, `metrics/cell_metrics.csv`"
        + (", `metrics/slot_shares.csv` (list-wise)" if listwise else ""),
        "",
    ]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


def write_study_markdown(study: Any, path: str | os.PathLike, title: str) -> None:
    """``report.md`` of a multi-directory study (:class:`voirdire.analysis.study.Study`):
    the per-judge table with its sources and flags, and the drop1 tables."""
    lines = [f"# {title}", "", "Directories: " + ", ".join(f"`{d.name}`" for d in study.dirs), "", "## Per judge", ""]
    lines += [markdown_judge_table(study.panel), ""]
    bad = study.panel.filter(~pl.col("readable"))
    if bad.height:
        lines += ["Too unstable for PC/PF to be read: " + "; ".join(f"{b}/{j} ({f})" for b, j, f in bad.select("benchmark", "judge", "flag").iter_rows()), ""]
    lines += ["## Factor regression (final step, R drop1)", ""]
    for r in study.regressions:
        lines += [f"### {r.scope}: {r.response.upper()} (n = {r.n})", "", "| term | Df | Sum of Sq | RSS | AIC |", "|---|---:|---:|---:|---:|"]
        for t, df_, ss, rss, aic in r.drop1.iter_rows():
            lines.append(f"| {'`<none>`' if t == '<none>' else t} | {'' if df_ is None else df_} | {'' if ss is None else f'{ss:.4f}'} | {rss:.4f} | {aic:.2f} |")
        lines.append("")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))
