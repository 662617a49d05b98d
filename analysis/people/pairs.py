"""The pairs table: each judge's verdict, score and confidence per pair, with human label
where there is one (what every estimate of :mod:`voirdire.analysis.people` reads).

One row per (benchmark, judge, pair) of the judgments' pairwise control rows (a pair: a
``question_id`` with its ``candidate`` and ``reference``), all orders and repetitions of the
judge together (verdicts normalised to the candidate's side,
:func:`~voirdire.analysis.mitigation.verdicts.normalise`):

============  =====  ====================================================================
yhat          f64    the judge's score of the candidate: mean over its decided verdicts of
                     1 (win), 0.5 (tie), 0 (loss); 0.5 when none is decided (a failed
                     pair: an uninformative prediction, which keeps PPI valid)
verdict       str    its final verdict: the most frequent decided verdict, ``tie`` when two
                     are as frequent (an inconsistent pair, as swap-and-tie reads it),
                     ``undecided`` when none is decided
votes         int    its verdicts on the pair (failed ones included)
confidence    f64    (:func:`with_confidence`) in [0, 1]
y             f64    human score of the candidate (1, 0.5, 0); null: not labelled
label         str    human verdict (win, tie, loss); null: not labelled
agree         bool   ``verdict == label``; null: not labelled
============  =====  ====================================================================

**Confidence** (``source``): ``orders`` the share of the judge's verdicts on the pair (orders
× repetitions, failed ones counted) equal to its final verdict (1: both orders agree);
``jury`` the share of the study's judges whose final verdict on the pair equals this judge's;
``probability`` the mean over its verdicts of the probability the judge gave its final
verdict's letter (``option_probs``, normalised over the pair's options). Several sources
joined by ``+`` are averaged.

**Labels** are a grading table (:mod:`voirdire.analysis.mitigation.grading`: ``benchmark``
(null: any), ``question_id``, ``candidate``, ``reference``, ``ref_verdict``). :func:`hide`
keeps a random share (or number) of them, the same pairs for every judge: the design PPI
assumes, labels drawn uniformly at random from the pairs.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from voirdire.analysis.biases.perturbed import control_rows
from voirdire.analysis.mitigation.verdicts import normalise
from voirdire.analysis.position.pairing import candidate_first
from voirdire.core import ConfigError

__all__ = ["LABELLED_KEYS", "CONFIDENCES", "judge_pairs", "with_confidence", "with_labels", "hide", "check_labels"]  # fmt: skip

#: a comparison people label: one (candidate, reference) pair on one question, both orders
#: and every judge together (``analysis.position.pairing.PAIR_KEYS`` is a judge's pair of
#: orders in one repetition)
LABELLED_KEYS = ["benchmark", "question_id", "candidate", "reference"]
CONFIDENCES = ("orders", "jury", "probability")
_SCORE = {"win": 1.0, "tie": 0.5, "loss": 0.0}


def judge_pairs(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per (benchmark, judge, pair): ``yhat``, ``verdict``, ``votes`` (module docstring)
    and ``own`` (f64: the share of its verdicts equal to ``verdict``), sorted.

    Raises:
        ConfigError: no pairwise judgment.
    """
    v = normalise(control_rows(judgments))
    if v.height == 0:
        raise ConfigError("no pairwise judgments: human boards need pairwise verdicts")
    keys = ["benchmark", "judge", *LABELLED_KEYS[1:]]
    counts = v.group_by(*keys, "verdict").len()
    decided = counts.filter(pl.col("verdict") != "undecided")
    top = (
        decided.filter(pl.col("len") == pl.col("len").max().over(keys))
        .group_by(keys)
        .agg(n_top=pl.len(), top=pl.col("verdict").first(), top_len=pl.col("len").first())
        .with_columns(final=pl.when(pl.col("n_top") == 1).then("top").otherwise(pl.lit("tie")))
    )  # fmt: skip
    score = (
        decided.group_by(keys)
        .agg(yhat=(pl.col("verdict").replace_strict(_SCORE, return_dtype=pl.Float64) * pl.col("len")).sum()
             / pl.col("len").sum())
    )  # fmt: skip
    total = counts.group_by(keys).agg(votes=pl.col("len").sum().cast(pl.Int64))
    same = counts.join(top.select(*keys, "final"), on=keys, how="left").filter(
        pl.col("verdict") == pl.col("final")
    )
    agree = same.group_by(keys).agg(n_same=pl.col("len").sum())
    return (
        total.join(score, on=keys, how="left")
        .join(top.select(*keys, "final"), on=keys, how="left")
        .join(agree, on=keys, how="left")
        .select(
            *keys,
            yhat=pl.col("yhat").fill_null(0.5),
            verdict=pl.col("final").fill_null("undecided"),
            votes="votes",
            own=(pl.col("n_same").fill_null(0) / pl.col("votes")).cast(pl.Float64),
        )
        .sort(keys)
    )


def _probability(judgments: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """Per pair the mean probability of the final verdict over the judge's verdicts that
    carry ``option_probs`` (null where none does)."""
    if "option_probs" not in judgments.columns:
        return pairs.with_columns(prob=pl.lit(None, dtype=pl.Float64))
    rows = control_rows(judgments).filter(pl.col("option_probs").is_not_null())
    first = candidate_first()
    p = (
        rows.with_columns(_i=pl.int_range(pl.len()))
        .explode("option_probs")
        .unnest("option_probs")
    )
    p = p.with_columns(
        v=pl.when(pl.col("key") == "C").then(pl.lit("tie"))
        .when((pl.col("key") == "A") == first).then(pl.lit("win")).otherwise(pl.lit("loss"))
    ).filter(pl.col("key").is_in(["A", "B", "C"]))  # fmt: skip
    keys = ["benchmark", "judge", *LABELLED_KEYS[1:]]
    p = p.with_columns(q=pl.col("value") / pl.col("value").sum().over("_i"))
    got = p.join(pairs.select(*keys, "verdict"), on=keys).filter(
        pl.col("v") == pl.col("verdict")
    )
    per = (
        got.group_by(*keys, "_i")
        .agg(q=pl.col("q").sum())
        .group_by(keys)
        .agg(prob=pl.col("q").mean())
    )
    return pairs.join(per, on=keys, how="left")


def with_confidence(
    pairs: pl.DataFrame, judgments: pl.DataFrame, source: str = "orders"
) -> pl.DataFrame:
    """``pairs`` (:func:`judge_pairs`) with ``confidence`` from ``source`` (module
    docstring: ``orders``, ``jury``, ``probability`` or several joined by ``+``).

    Raises:
        ConfigError: an unknown source; ``probability`` where no verdict of a judge carries
            option probabilities; ``jury`` with one judge.
    """
    names = [s.strip() for s in source.split("+") if s.strip()]
    bad = [s for s in names if s not in CONFIDENCES]
    if bad or not names:
        raise ConfigError(
            f"confidence {source!r}: use {', '.join(CONFIDENCES)} or several joined by '+'"
        )
    parts = []
    if "orders" in names:
        parts.append(pl.col("own"))
    if "jury" in names:
        judges = pairs.group_by("benchmark").agg(k=pl.col("judge").n_unique())
        if judges["k"].max() < 2:
            raise ConfigError(
                "confidence 'jury' needs at least two judges on the same pairs"
            )
        same = pairs.group_by(*LABELLED_KEYS, "verdict").agg(same=pl.len())
        pairs = pairs.join(same, on=[*LABELLED_KEYS, "verdict"], how="left").join(
            judges, on="benchmark"
        )
        pairs = pairs.with_columns(jury=pl.col("same") / pl.col("k")).drop("same", "k")
        parts.append(pl.col("jury"))
    if "probability" in names:
        pairs = _probability(judgments, pairs)
        none = (
            pairs.group_by("judge")
            .agg(n=pl.col("prob").is_not_null().sum())
            .filter(pl.col("n") == 0)
        )
        if none.height:
            raise ConfigError(
                f"confidence 'probability': judge {none['judge'][0]!r} has no verdict probabilities "
                "(option_probs); use orders or jury"
            )
        parts.append(pl.col("prob").fill_null(0.0))
    conf = pl.sum_horizontal(parts) / len(parts)
    undecided = pl.col("verdict") == "undecided"
    return pairs.with_columns(
        confidence=pl.when(undecided).then(0.0).otherwise(conf)
    ).drop([c for c in ("jury", "prob") if c in pairs.columns])


def with_labels(pairs: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """``pairs`` with the human ``y``, ``label`` and ``agree`` (module docstring) from a
    grading table (``ref_verdict``; a null ``benchmark`` matches any)."""
    lab = labels.select(*LABELLED_KEYS, label="ref_verdict")
    exact = lab.filter(pl.col("benchmark").is_not_null())
    anyb = lab.filter(pl.col("benchmark").is_null()).drop("benchmark")
    out = pairs.join(exact, on=LABELLED_KEYS, how="left")
    if anyb.height:
        out = (
            out.join(anyb, on=LABELLED_KEYS[1:], how="left", suffix="_any")
            .with_columns(label=pl.coalesce("label", "label_any"))
            .drop("label_any")
        )
    return out.with_columns(
        y=pl.col("label").replace_strict(_SCORE, default=None, return_dtype=pl.Float64),
        agree=pl.col("verdict") == pl.col("label"),
    )


def check_labels(pairs: pl.DataFrame, labels: pl.DataFrame) -> None:
    """Every label on a pair each judge of its benchmark judged.

    Raises:
        ConfigError: one line naming the judge, the count and the first such pair.
    """
    on = LABELLED_KEYS[1:]
    for (bench, judge), own in pairs.group_by(
        "benchmark", "judge", maintain_order=True
    ):
        here = pairs.filter(pl.col("benchmark") == bench).select(on).unique()
        lab = pl.concat([
            labels.filter(pl.col("benchmark") == bench).select(on),
            labels.filter(pl.col("benchmark").is_null()).join(here, on=on, how="semi").select(on),
        ])  # fmt: skip
        missing = lab.join(own.select(on), on=on, how="anti")
        if missing.height:
            q, c, r = missing.row(0)
            raise ConfigError(
                f"{missing.height} label(s) are on pairs judge {judge!r} never judged (first: {q} / {c} vs {r}); "
                "the estimates need the judge's verdict on every labelled pair"
            )


def hide(
    labels: pl.DataFrame,
    *,
    share: float | None = None,
    rows: int | None = None,
    seed: int = 0,
) -> pl.DataFrame:
    """A uniformly random subset of ``labels`` (without replacement, ``seed``): a ``share``
    in (0, 1] of them (rounded, at least one) or ``rows`` of them; all when neither is given.

    Raises:
        ConfigError: both given, a share outside (0, 1], or rows outside [1, len(labels)].
    """
    if share is not None and rows is not None:
        raise ConfigError(
            "give the labelled share or the number of labelled rows, not both"
        )
    n = labels.height
    if share is not None:
        if not 0.0 < share <= 1.0:
            raise ConfigError(f"labelled share must be in (0, 1], not {share}")
        rows = max(1, round(share * n))
    if rows is None:
        return labels
    if not 1 <= rows <= n:
        raise ConfigError(
            f"labelled rows must be between 1 and the {n} labels, not {rows}"
        )
    pick = np.random.default_rng(seed).choice(n, size=rows, replace=False)
    return labels.sort(LABELLED_KEYS, nulls_last=True)[np.sort(pick)]
