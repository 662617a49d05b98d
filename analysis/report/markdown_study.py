"""The Markdown of several directories: a study's ``report.md`` and ``mitigation.md``
(one directory's ``report.md`` and the tables both use: :mod:`voirdire.analysis.report.markdown`).
Names from the directories pass :func:`voirdire.escape.markdown`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from voirdire.analysis.report.markdown import (
    gate_words,
    markdown_judge_table,
    metrics_reading,
)
from voirdire.escape import markdown, markdown_code


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


def accuracy_label(sources: Sequence[str]) -> str:
    """What the ``accuracy`` column measures, by the reference's ``source``: ``accuracy``
    against gold or people's labels; ``agreement with judge X`` where the reference is a
    judge's verdicts (not the truth)."""
    judges = [s.split(" ", 2)[1] for s in sources if s.startswith("judge ")]
    if sources and len(judges) == len(sources):
        return "agreement with judge " + ", ".join(sorted(set(judges)))
    return "accuracy"


def mitigation_markdown(table: pl.DataFrame) -> str:
    """The evaluation table as GitHub markdown: per benchmark, strategy and judge the cost
    (queries per verdict), share undecided, PC, PF, flip rate, accuracy and kappa against
    the reference (agreement, no gate), and the inter-pass kappa with its κ ≥ 0.6 gate
    (strategies with per-order verdicts), with their 95 % intervals."""

    def ci(r, m, f):
        e, lo, hi = r[m], r[f"{m}_lo"], r[f"{m}_hi"]
        if e is None or (isinstance(e, float) and np.isnan(e)):
            return "–"
        if lo is None or np.isnan(lo) or lo == hi:
            return f.format(e)
        return f"{f.format(e)} [{f.format(lo)}, {f.format(hi)}]"

    src = (
        table.get_column("reference_source").drop_nulls().unique().to_list()
        if table.height
        else []
    )
    head = (f"| benchmark | strategy | judge | cost | undecided | PC | PF | flip | {markdown(accuracy_label(src))} | κ vs reference "
            f"| κ passes | {gate_words('κ passes ≥ ')} |")  # fmt: skip
    lines = [head, "|" + "---|" * 12]
    for r in table.iter_rows(named=True):
        lines.append(
            f"| {markdown(r['benchmark'])} | {markdown(r['strategy'])} | {markdown(r['judge'])} | {r['cost']:.2f} | {r['undecided']:.1%} | "
            f"{ci(r, 'pc', '{:.3f}')} | {ci(r, 'pf', '{:+.3f}')} | {ci(r, 'flip', '{:.3f}')} | "
            f"{ci(r, 'accuracy', '{:.3f}')} | {ci(r, 'kappa', '{:.3f}')} | {ci(r, 'pass_kappa', '{:.3f}')} | "
            f"{markdown(r['pass_kappa_gate'] or '–')} |"
        )
    lines.append("")
    lines.append(
        "κ vs reference: Cohen's kappa of the final verdicts against the reference (agreement, no gate). "
        "κ passes: Cohen's kappa between the original and the swapped order's verdicts, pair by pair, "
        f"gate {gate_words()} (practitioners' health metric; – for strategies that combine both orders)."
    )
    if src:
        lines.append("")
        lines.append(f"Reference: {'; '.join(map(markdown, src))}.")
    return "\n".join(lines) + "\n"
