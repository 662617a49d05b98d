"""The report's bounds at scale (issue 43, item 7): past a stated number of judges a
figure draws its aggregate form, never one mark per judge, and a long name is shown cut.

- :data:`JUDGES_DRAWN`: the most judges a per-judge figure (scatter, bars, by-task
  figures, families, win-rate curves) draws; past it, it draws the :data:`JUDGES_DRAWN`
  judges with the most verdicts (:func:`most_judged`) and the PC-against-PF figure draws
  the distribution over every judge (binned counts).
- :data:`AGREEMENT_JUDGES`: the most judges the agreement heatmap draws (those with the
  most verdicts); past it the figure adds the distribution of Cohen's κ over every pair.
- :data:`NAME_CHARS`: the most characters of a name (judge, task, model) a figure shows;
  a longer one is shown as its first :data:`NAME_CHARS` characters and its length
  (:func:`cut_text`): in the figures, the page's tables and ``report.md``; any other text
  the page writes is cut past :data:`TEXT_CHARS`.

A bounded figure says so: its specification carries :data:`BOUND_META` (read by
:mod:`voirdire.analysis.report.coverage`, whose caption gives :func:`bound_reason` for the
judges it leaves out). Every number stays in the CSVs under ``metrics/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

__all__ = [
    "JUDGES_DRAWN",
    "AGREEMENT_JUDGES",
    "NAME_CHARS",
    "TEXT_CHARS",
    "BOUND_META",
    "cut_text",
    "most_judged",
    "bound_reason",
    "mark_bounded",
]

#: the most judges a per-judge figure draws (more: the most judged, and the distribution)
JUDGES_DRAWN = 300
#: the most judges the agreement heatmap draws (more: the most judged, and κ's distribution)
AGREEMENT_JUDGES = 200
#: the most characters of a name a figure shows (more: cut, its length said)
NAME_CHARS = 200
#: the most characters of any text the page writes (more: cut, its length said)
TEXT_CHARS = 4_000
#: the key under a specification's ``usermeta`` naming its bound (``{"drawn": k, "of": n}``)
BOUND_META = "voirdire_bound"


def cut_text(text: str, limit: int = NAME_CHARS) -> str:
    """``text`` as a figure shows it: whole up to ``limit`` characters, else its first
    ``limit`` characters, then ``"… (1,000,000 characters)"`` (its whole length)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def most_judged(panel: pl.DataFrame, k: int) -> list[str]:
    """The ``k`` judges of ``panel`` (rows with ``judge`` and, where it has one, ``n``:
    verdicts or pairs) with the most verdicts summed over its rows, ties by name; every
    judge where there are ``k`` or fewer."""
    if panel.height == 0:
        return []
    weight = pl.col("n").fill_null(0).sum() if "n" in panel.columns else pl.len()
    ranked = (
        panel.group_by("judge")
        .agg(w=weight)
        .sort(["w", "judge"], descending=[True, False])
    )
    return ranked.get_column("judge").head(k).to_list()


def bound_reason(drawn: int, total: int, where: str = "metrics/") -> str:
    """The caption's reason for the judges a bounded figure leaves out."""
    return (
        f"past the report's bound of {drawn:,} judges per figure, it draws the {drawn:,} "
        f"with the most verdicts of {total:,} (every judge's numbers: the CSVs in {where})"
    )


def mark_bounded(spec: dict[str, Any], drawn: int, total: int) -> dict[str, Any]:
    """``spec`` (a Vega-Lite specification) marked as drawing ``drawn`` of ``total``
    judges (:data:`BOUND_META` in its ``usermeta``)."""
    meta = dict(spec.get("usermeta") or {})
    meta[BOUND_META] = {"drawn": drawn, "of": total}
    return {**spec, "usermeta": meta}


def bound_of(spec: dict[str, Any] | None) -> dict[str, int] | None:
    """The bound :func:`mark_bounded` put on ``spec``, or None."""
    if not spec:
        return None
    meta = spec.get("usermeta")
    return meta.get(BOUND_META) if isinstance(meta, dict) else None


def keep(judges: Sequence[str], drawn: Sequence[str]) -> list[str]:
    """``judges`` (in their order) that are among ``drawn``."""
    s = set(drawn)
    return [j for j in judges if j in s]
