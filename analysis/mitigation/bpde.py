"""People in the loop: the pairs whose verdicts vary most (BPDE), chosen for people to label,
and strategies whose labelled pairs take human verdicts.

Source: ``docs/mitigation.md``, *HITLC / BPDE* (Wang et al., "Large Language Models are not
Fair Evaluators", 2023, sec. 3.3: balanced position diversity entropy and human-in-the-loop
calibration).
"""

from __future__ import annotations

import polars as pl

from voirdire.analysis.key_sort import sort_by_keys
from voirdire.analysis.mitigation.verdicts import COMPARISON_KEYS, Strategy, conform

__all__ = ["bpde", "select_for_annotation", "override", "with_labels"]


def bpde(verdicts: pl.DataFrame) -> pl.DataFrame:
    """Balanced position diversity entropy per pair (``docs/mitigation.md``, *HITLC /
    BPDE*; Wang et al. 2023, sec. 3.3).

    Per (benchmark, judge, question, task, candidate, reference), the decided outcomes over
    both orders and every repetition (with MEC+BPC the 2k sampled outcomes) give a
    distribution over {win, tie, loss}; BPDE is its entropy in bits (0: every outcome the
    same; log2 3 at most). Columns: those keys, ``outcomes`` (int: decided outcomes),
    ``wins``, ``ties``, ``losses`` (int), ``bpde`` (float; 0 without outcomes).
    """
    keys = COMPARISON_KEYS
    counts = (
        conform(verdicts)
        .group_by(keys)
        .agg(
            wins=(pl.col("verdict") == "win").sum().cast(pl.Int64),
            ties=(pl.col("verdict") == "tie").sum().cast(pl.Int64),
            losses=(pl.col("verdict") == "loss").sum().cast(pl.Int64),
        )
        .with_columns(outcomes=pl.col("wins") + pl.col("ties") + pl.col("losses"))
    )

    def term(c: str) -> pl.Expr:
        p = pl.col(c) / pl.col("outcomes")
        return pl.when(pl.col(c) > 0).then(-p * p.log(2)).otherwise(0.0)

    ent = (
        pl.when(pl.col("outcomes") > 0)
        .then(term("wins") + term("ties") + term("losses"))
        .otherwise(0.0)
    )
    out = counts.with_columns(bpde=ent).select(
        *keys, "outcomes", "wins", "ties", "losses", "bpde"
    )
    return sort_by_keys(out, keys)


def select_for_annotation(verdicts: pl.DataFrame, beta: float = 0.2) -> pl.DataFrame:
    """The top-β share of pairs by BPDE, per (benchmark, judge), for people to label
    (Wang et al.: β = 20 %). ``ceil(β · pairs)`` pairs each; ties in BPDE broken by the
    pair keys (deterministic). Columns: :func:`bpde`'s plus ``rank`` (int, 1 = most
    diverse) and an empty ``winner`` (str) for the annotator: ``candidate``,
    ``reference`` or ``tie`` (read back with
    :func:`voirdire.analysis.mitigation.grading.human_grading`).

    Raises:
        ValueError: ``beta`` outside (0, 1].
    """
    if not 0.0 < beta <= 1.0:
        raise ValueError(f"beta must be in (0, 1], not {beta}")
    keys = COMPARISON_KEYS
    scored = sort_by_keys(
        bpde(verdicts),
        ["benchmark", "judge", "bpde", *keys[2:]],
        descending=[False, False, True] + [False] * 4,
    )
    scored = scored.with_columns(
        rank=pl.int_range(1, pl.len() + 1).over("benchmark", "judge").cast(pl.Int64)
    )
    keep = pl.col("rank") <= (pl.len().over("benchmark", "judge") * beta).ceil()
    return scored.filter(keep).with_columns(winner=pl.lit(None, dtype=pl.String))


def override(verdicts: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Replace the final verdicts of labelled pairs by the label (human verdicts for the
    pairs :func:`select_for_annotation` chose). ``labels``: ``question_id``,
    ``candidate``, ``reference``, ``ref_verdict`` (win/tie/loss) and optionally
    ``benchmark`` (as :mod:`voirdire.analysis.mitigation.grading` returns). Queries unchanged."""
    on = ["question_id", "candidate", "reference"] + (
        ["benchmark"]
        if "benchmark" in labels.columns
        and labels.get_column("benchmark").null_count() == 0
        else []
    )
    lab = labels.select(*on, "ref_verdict").unique(on, keep="first")
    v = conform(verdicts).join(lab, on=on, how="left")
    return conform(
        v.with_columns(verdict=pl.coalesce("ref_verdict", "verdict")).drop(
            "ref_verdict"
        )
    )


def with_labels(strategy: Strategy, labels: pl.DataFrame) -> Strategy:
    """``strategy`` whose final verdicts of the labelled pairs are the human labels (:func:`override`):
    the human-in-the-loop step after :func:`select_for_annotation`."""

    def run(judgments: pl.DataFrame) -> pl.DataFrame:
        return override(strategy(judgments), labels)

    return run
