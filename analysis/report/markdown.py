"""The plain-text reports: ``report.md`` of one directory (:func:`markdown_report`) and of
several read together (:func:`study_markdown`), with the per-judge table of
:mod:`voirdire.analysis.report.judge_table`.

Every text of a received file in the Markdown (judge, benchmark, model, job and directory
names, the design's words) passes :func:`voirdire.escape.markdown`: a name cannot add a
cell, a link or HTML of its own."""

from __future__ import annotations

from typing import Any

import polars as pl

from voirdire.analysis.position.formulas import safe_div, valid
from voirdire.analysis.position.regression import one_order_notes
from voirdire.analysis.report.judge_table import (
    fmt_value,
    gate_words,
    markdown_judge_table,
    metrics_reading,
)
from voirdire.escape import markdown, markdown_code


def markdown_slot_table(shares: pl.DataFrame) -> str:
    """List-wise slot choice shares as a Markdown table: one row per (benchmark, judge,
    list size, option mode), one column per slot (share of slot-choosing verdicts, with
    its excess over 1/p in parentheses), then the tie share, the number of choices and the
    chi-square test of the slot counts against uniform, clustered by question
    (:func:`voirdire.analysis.position.listwise.cluster_wald`: statistic, degrees of freedom,
    questions, p-value).

    Args:
        shares: :func:`voirdire.analysis.position.listwise.slot_shares` output.
    """
    if shares.height == 0:
        return ""
    max_p = int(shares["list_size"].max())
    slots = "ABCDEFGHI"[:max_p]
    head = (
        "| benchmark | judge | p | 1/p | "
        + " | ".join(slots)
        + " | tie | choices | clustered χ² (dof; questions) | p-value |"
    )
    sep = "|---|---|---:|---:|" + "---:|" * (max_p + 4)
    body = []
    keys = ["benchmark", "judge", "list_size", "option_mode"]
    for key, grp in shares.sort([*keys, "position"]).group_by(
        keys, maintain_order=True
    ):
        bench, judge, p, _ = key
        cells = {
            r["slot"]: f"{r['share']:.3f} ({r['excess']:+.3f})"
            for r in grp.iter_rows(named=True)
        }
        first = grp.row(0, named=True)
        row = [markdown(bench), markdown(judge), str(p), f"{first['expected']:.3f}"]
        row += [cells.get(x, "") for x in slots]
        row += [f"{first['tie_share']:.3f}", f"{first['n_choices']:,}"]
        row += [
            fmt_value(first["chi2"], "{:.1f}")
            + f" ({first['chi2_dof']}; {first['clusters'] or 0})",
            fmt_value(first["chi2_p"], "{:.3g}"),
        ]
        body.append("| " + " | ".join(row) + " |")
    return "\n".join([head, sep, *body])


def markdown_series_table(series: pl.DataFrame | None) -> str:
    """List-wise series per (benchmark, judge): all series, consistent, primacy-leaning
    (``s < 0``), recency-leaning (``s > 0``), balanced (inconsistent, ``s = 0``), error and
    other series, as Markdown, from their counts
    (:attr:`voirdire.analysis.report.shown.DirShown.series`; "" for None or no row)."""
    if series is None or series.height == 0:
        return ""
    lines = [
        "| benchmark | judge | series | consistent | primacy-leaning | recency-leaning | balanced | error | other |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in series.iter_rows(named=True):
        lines.append(
            f"| {markdown(r['benchmark'])} | {markdown(r['judge'])} | {r['n']:,} | {r['consistent']:,} | {r['primacy']:,} | "
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
        .agg(
            n=pl.col("n").sum(),
            _c=pl.col("consistent").sum(),
            _v=valid().sum(),
            owr=pl.col("owr").mean(),
            gap=pl.col("quality_gap").mean(),
        )
        .with_columns(pc=safe_div(pl.col("_c"), pl.col("_v")))
        .sort(
            "benchmark",
            "judge",
            pl.col("owr").round(12),
            "candidate",
            descending=[False, False, True, False],
        )
    )
    lines = [
        "| benchmark | judge | candidate | series | PC | owr | quality gap |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in agg.iter_rows(named=True):
        lines.append(
            f"| {markdown(r['benchmark'])} | {markdown(r['judge'])} | {markdown(r['candidate'])} | {r['n']:,} | {r['pc']:.3f} | {r['owr']:.3f} | {r['gap']:.3f} |"
        )
    return "\n".join(lines)


def _listwise_sections(
    comp: dict[str, Any],
    series: pl.DataFrame | None,
    cm: pl.DataFrame,
    shares: pl.DataFrame | None,
) -> list[str]:
    """The list-wise sections of ``report.md``: slot shares, series classes, candidates.

    Raises:
        ValueError: no slot shares given (they are computed before: nothing is computed here).
    """
    if shares is None:
        raise ValueError(
            "a list-wise report.md needs the slot shares (Results.slot_shares)"
        )
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
    return [
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
        markdown_slot_table(shares),
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
        markdown_series_table(series),
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


def _failures_section(failures: pl.DataFrame) -> list[str]:
    """``report.md``'s "Failures by class" lines: per judge and failure class the count of
    ``failures`` (rows with a ``failure``); none without failures."""
    if not failures.height:
        return []
    counts = failures.group_by("judge", "failure").len().sort("judge", "failure")
    return [
        "## Failures by class",
        "",
        "| judge | class | count |",
        "|---|---|---:|",
        *(f"| {markdown(j)} | {markdown(c)} | {k} |" for j, c, k in counts.iter_rows()),
        "",
    ]


def markdown_report(
    meta: dict[str, Any],
    judgments: pl.DataFrame,
    jm: pl.DataFrame,
    cm: pl.DataFrame,
    shares: pl.DataFrame | None = None,
    series: pl.DataFrame | None = None,
) -> str:
    """``report.md`` of one output directory: the job's settings, counts, failures by class
    and the per-judge table; for list-wise jobs the slot shares, the series classes and the
    candidates.

    Args:
        meta: the job record (``job.json``).
        judgments: JUDGMENT_SCHEMA rows; ``jm``/``cm``: judge and cell metrics.
        shares, series: the slot shares (``Results.slot_shares``) and the series' counts
            (``DirShown.series``), given for a job with list-wise rows (ValueError without shares).
    """
    from voirdire.analysis.position.one_order import recorded_orders

    job = meta["job"]
    comp = job.get("comparison", {})
    orders = recorded_orders(job.get("judges") or [], judgments)
    n = judgments.height
    failures = judgments.filter(pl.col("failure").is_not_null())
    unextracted = judgments.filter(
        pl.col("failure").is_null() & pl.col("failed")
    ).height
    lines = [
        f"# voirdire report: {markdown(job['name'])}",
        "",
        f"- benchmark: **{markdown(meta['benchmark'])}** ({markdown(job['benchmark'].get('sample', 'full'))} table), "
        f"{markdown(meta['instances'])} instances",
        f"- comparison: {markdown(comp.get('mode', 'pairwise'))}, option mode {markdown(meta['option_mode'])}, "
        f"permutations {markdown(orders) if orders else markdown_code(comp.get('permutations', 'both'))}, repetitions {markdown(comp.get('repetitions', 1))}",
        f"- judges: {', '.join(map(markdown, meta['judges']))}",
        f"- judgments: {n:,} ({judgments.filter(pl.col('failed')).height:,} failed: "
        f"{failures.height:,} with no output, {unextracted:,} with no extractable verdict)",
        "",
        "## Per judge",
        "",
        "PC: position consistency (pooled over cells); PF: preference fairness (mean over cells; "
        "−1 primacy, +1 recency); RS: repetition stability (Shi et al. 2024; definitions in "
        "voirdire's `docs/metrics.md`). κ passes: Cohen's kappa over {win, tie, loss} between the "
        "verdicts of the original and of the swapped order, pair by pair, with its 95 % "
        "cluster-bootstrap interval; the practitioners' gate trusts a judge for the task only "
        f"at {gate_words()} (`docs/mitigation.md`; not kappa against a reference).",
        "",
        markdown_judge_table(jm),
        "",
    ]
    if reading := metrics_reading(jm):
        lines += [reading, ""]
    listwise = (
        "mode" in judgments.columns
        and judgments.filter(pl.col("mode") == "listwise").height > 0
    )
    if listwise:
        lines += _listwise_sections(comp, series, cm, shares)
    lines += _failures_section(failures)
    lines += [
        "## Files",
        "",
        "- `raw/`: raw judge outputs and recorded failures (Parquet)",
        "- `judgments.parquet`: raw rows with extracted verdicts",
        "- `metrics/judge_metrics.csv`, `metrics/cell_metrics.csv`"
        + (", `metrics/slot_shares.csv` (list-wise)" if listwise else ""),
        "",
    ]
    return "\n".join(lines)


def study_markdown(study: Any, title: str) -> str:
    """``report.md`` of a multi-directory study (:class:`voirdire.analysis.study.Study`):
    the per-judge table with its sources and flags, and the drop1 tables."""
    lines = [
        f"# {markdown(title)}",
        "",
        "Directories: " + ", ".join(markdown_code(d.name) for d in study.dirs),
        "",
        "## Per judge",
        "",
    ]
    lines += [markdown_judge_table(study.panel), ""]
    if reading := metrics_reading(study.panel):
        lines += [reading, ""]
    bad = study.panel.filter(~pl.col("readable"))
    if bad.height:
        lines += [
            "Too unstable for PC/PF to be read: "
            + "; ".join(
                f"{markdown(b)}/{markdown(j)} ({markdown(f)})"
                for b, j, f in bad.select("benchmark", "judge", "flag").iter_rows()
            ),
            "",
        ]
    lines += ["## Factor regression (final step, R drop1)", ""]
    if study.reg_cells is not None:
        lines += [f"- {markdown(n)}" for n in one_order_notes(study.reg_cells)]
        lines += [""] if lines[-1] else []
    for r in study.regressions:
        lines += [
            f"### {markdown(r.scope)}: {markdown(r.response.upper())} (n = {r.n})",
            "",
            "| term | Df | Sum of Sq | RSS | AIC |",
            "|---|---:|---:|---:|---:|",
        ]
        for t, df_, ss, rss, aic in r.drop1.iter_rows():
            lines.append(
                f"| {'`<none>`' if t == '<none>' else markdown(t)} | {'' if df_ is None else df_} | {'' if ss is None else f'{ss:.4f}'} | {rss:.4f} | {aic:.2f} |"
            )
        lines.append("")
    return "\n".join(lines)
