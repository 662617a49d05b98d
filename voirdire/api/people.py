"""Human boards from a few labels and selective judges, through the public API
(``voirdire people``; ``docs/people.md``). No judge is called."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from voirdire.bounds import check_text_table
from voirdire.core import ConfigError
from voirdire.escape import unquote_table

__all__ = ["people"]


def _label_columns(labels: str | os.PathLike | pl.DataFrame) -> list[str] | None:
    """The columns of a labels CSV (the format the pairs for people are written in), or
    None for the gold labels and for a table."""
    if isinstance(labels, pl.DataFrame) or str(labels) == "gold":
        return None
    try:
        check_text_table(labels, str(labels))
        cols = unquote_table(
            pl.read_csv(labels, n_rows=0, infer_schema_length=0)
        ).columns
    except Exception:  # noqa: BLE001 - read again and refused by the grading reader
        return None
    return cols if "winner" in cols else [*cols, "winner"]


def people(
    output_dirs: list[str | os.PathLike],
    *,
    labels: str | os.PathLike | pl.DataFrame = "gold",
    share: float | None = None,
    rows: int | None = None,
    level: float = 0.9,
    alpha: float = 0.1,
    delta: float = 0.1,
    confidence: str = "auto",
    cascade: Sequence[str] | None = None,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    seed: int = 0,
    out: str | os.PathLike | None = None,
    unit: str = "question",
) -> tuple[Any, dict[str, Path]]:
    """Human win rates and Bradley–Terry board estimated from a few human labels and
    the judges' verdicts on every pair (PPI++), beside labels alone and the judge alone;
    rank sets with joint coverage; each judge as a selective judge whose agreement with
    people on the pairs it keeps is at least ``1 − alpha`` with probability ``1 − delta``;
    the cascade over the judges; the pairs to send to people. See
    :func:`voirdire.analysis.people.study.people_study`.

    Args:
        output_dirs: finished output directories (a run's, an audit's), analysed together.
        labels: ``"gold"`` (the benchmark's gold labels, carried by the judgments), a CSV of
            human labels (``question_id``, ``candidate``, ``reference``, ``winner`` ∈
            candidate/reference/tie, optionally ``benchmark``: ``bpde_annotation.csv`` and
            ``mitigate --reference`` read the same) or such a table.
        share, rows: use a random share (or number) of the labels (seeded by ``seed``):
            what a study with only that many labels would get.
        level: the intervals' and the rank sets' coverage.
        alpha, delta: the selective judges' guarantee.
        confidence: ``orders``, ``jury``, ``probability``, several joined by ``+``, or ``auto``.
        cascade: the judges in the cascade's order (default: cheapest first).
        anchor, anchor_rating: the board's fixed model (default: the most compared) and rating.
        out: where to write (default: ``<dir>-people`` next to the first directory, named after the inputs: :func:`~voirdire.analysis.together.default_out`).
        unit: the intervals' resampling unit: ``question`` (clustered by question, the
            benchmark's declared clusters where it has them, e.g. PandaLM's instructions;
            default) or ``pair`` (pairs independent); written to ``people_settings.csv``.

    Returns:
        ``(study, paths)``: the :class:`~voirdire.analysis.people.study.PeopleStudy` and the
        files written by name (``boards``, ``selective``, ``curve``, ``cascade``, ``pairs``,
        ``to_label``, ``markdown``, ``figure:...``).

    Raises:
        FileNotFoundError: a directory is not a voirdire output directory.
        ConfigError: one line, before any estimate: a directory given twice; ``out`` not
            ours; labels that cannot be read, match no pair or lie on pairs a judge never
            judged; too few labels for the guarantee asked or for a model's interval; a
            share, rows, level, alpha or delta out of range; an unknown confidence, cascade
            judge or anchor.
    """
    from voirdire.analysis.mitigation.grading import load_grading
    from voirdire.analysis.people.study import check_settings, people_study
    from voirdire.analysis.report.files import retire_stale_report
    from voirdire.analysis.report.people import write_people
    from voirdire.analysis.together import destination, read_together

    if not output_dirs:
        raise ConfigError("no output directory given")
    check_settings(level=level, alpha=alpha, delta=delta, share=share, rows=rows)
    dest = destination(output_dirs, out, "people")
    found = read_together(output_dirs, ["judgments", "clusters"])
    judgments = found.judgments
    grading = load_grading(
        labels if isinstance(labels, pl.DataFrame) else str(labels), judgments
    )
    study = people_study(
        judgments, grading, share=share, rows=rows, level=level, alpha=alpha, delta=delta, confidence=confidence,
        cascade=cascade, anchor=anchor, anchor_rating=anchor_rating, seed=seed,
        unit=unit, clusters=found.clusters if unit == "question" else None,
    )  # fmt: skip
    paths = write_people(study, dest, _label_columns(labels))
    for d in output_dirs:  # a report in place that showed the people's files replaced
        retire_stale_report(d, "voirdire people run")
    return study, paths
