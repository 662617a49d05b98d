"""Self-enhancement from pairwise verdicts already on record: no new query.

Source: Ye et al., "Justice or Prejudice? Quantifying Biases in LLM-as-a-Judge" (CALM, 2024)
define self-enhancement with scores (``ErrorRate_SE = |ȳ_self − ȳ_other| / ȳ_other``); the
project's pairwise form and the difference in differences are ours (``docs/bias-metrics.md``).

For judge ``j`` and candidate ``m``, ``owr_j(m)`` is the overall win rate of ``m`` in ``j``'s
verdicts (``docs/metrics.md``: consistent wins count 1, consistent ties and inconsistent
pairs 1/2, consistent losses 0, error pairs left out), computed over the *same pairs* for
every judge: the (question, candidate, reference, repetition) pairs that every judge of the
panel classified. Then

- ``dev_j(m) = owr_j(m) − mean_{k≠j} owr_k(m)``: the raw self-preference when ``m`` is
  ``j``'s own model;
- ``did_j(m) = dev_j(m) − mean_{c≠m} dev_j(c)``: the difference in differences, which
  removes a judge's general leniency toward (strong) candidates and alone isolates
  self-preference;
- ``error_rate = |owr_j(m) − mean_{k≠j} owr_k(m)| / mean_{k≠j} owr_k(m)``: CALM's error rate
  with the pairwise win rate in place of the mean score (the released pairwise outputs
  carry no scores).

Intervals: cluster bootstrap over questions
(:func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl
from voirdire.analysis.position.metrics import pairwise_pairs
from voirdire.analysis.position.uncertainty import cluster_bootstrap

__all__ = ["OWN_MODELS", "SELF_COLUMNS", "has_own_models", "pair_scores", "win_rate_deviations", "self_enhancement"]

#: Judge label -> the candidate model that is the judge's own (MT-Bench release).
OWN_MODELS = {"gpt-4-0613": "gpt-4", "gpt-3.5-turbo-1106": "gpt-3.5-turbo"}
#: Columns of :func:`self_enhancement`.
SELF_COLUMNS = [
    "benchmark", "judge", "own_model", "other_judges", "n_pairs", "owr_self", "owr_others",
    "raw", "raw_lo", "raw_hi", "did", "did_lo", "did_hi", "error_rate", "error_rate_lo", "error_rate_hi",
]
_PAIR = ["benchmark", "question_id", "candidate", "reference", "repetition"]


def has_own_models(judgments: pl.DataFrame) -> bool:
    """True when a judge of :data:`OWN_MODELS` and its own model are both in ``judgments``
    next to at least one other judge and one other candidate (so self-enhancement can be
    measured)."""
    judges = set(judgments.get_column("judge").unique().to_list())
    cands = set(judgments.get_column("candidate").drop_nulls().unique().to_list())
    return len(judges) >= 2 and len(cands) >= 2 and any(j in judges and m in cands for j, m in OWN_MODELS.items())


def pair_scores(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per pairwise judgment pair, the candidate's score, on the pairs every judge classified.

    Args:
        judgments: JUDGMENT_SCHEMA rows (control rows only when a ``perturbation`` column
            is present).

    Returns:
        Columns ``benchmark``, ``question_id``, ``candidate``, ``reference``,
        ``repetition``, ``judge``, ``score`` (float: 1 consistent win, 1/2 consistent tie or
        inconsistent, 0 consistent loss); only pairs classified (not ``error``/``other``)
        by every judge of the benchmark.
    """
    if "perturbation" in judgments.columns:
        judgments = judgments.filter(pl.col("perturbation") == "control")
    k = pl.col("klass")
    pairs = pairwise_pairs(judgments).filter(k.is_in(["consistent", "primacy", "recency"]))
    scored = pairs.select(
        *_PAIR,
        "judge",
        score=pl.when(k != "consistent").then(0.5).when(pl.col("consistent_tie")).then(0.5).otherwise(pl.col("candidate_wins").cast(pl.Float64)),
    )
    n_judges = scored.group_by("benchmark").agg(_nj=pl.col("judge").n_unique())
    common = (
        scored.group_by(_PAIR)
        .agg(_n=pl.col("judge").n_unique())
        .join(n_judges, on="benchmark")
        .filter(pl.col("_n") == pl.col("_nj"))
        .select(_PAIR)
    )
    return scored.join(common, on=_PAIR, how="semi").sort(*_PAIR, "judge")


def _stat(keys: pl.DataFrame):
    """The bootstrap statistic over units ``keys`` (judge, candidate) in cluster_bootstrap's order."""
    judges = sorted(keys.get_column("judge").unique().to_list())
    cands = sorted(keys.get_column("candidate").unique().to_list())
    ji = np.array([judges.index(j) for j in keys.get_column("judge").to_list()])
    ci = np.array([cands.index(c) for c in keys.get_column("candidate").to_list()])
    nj, nc = len(judges), len(cands)

    def stat(s: dict) -> dict:
        r = s["n"].shape[0]
        owr = np.full((r, nj, nc), np.nan)
        owr[:, ji, ci] = s["score"] / s["n"]
        others = (np.nansum(owr, axis=1, keepdims=True) - owr) / (nj - 1)  # mean over k ≠ j
        dev = owr - others
        did = dev - (np.nansum(dev, axis=2, keepdims=True) - dev) / (nc - 1)
        err = np.abs(dev) / others
        return {"owr": owr[:, ji, ci], "owr_others": others[:, ji, ci], "raw": dev[:, ji, ci], "did": did[:, ji, ci], "error_rate": err[:, ji, ci]}

    return stat


def win_rate_deviations(
    judgments: pl.DataFrame, *, replicates: int = 1000, level: float = 0.95, seed: int = 0
) -> pl.DataFrame:
    """Every judge's deviation from the other judges, per candidate, with bootstrap intervals.

    Returns:
        Long table (one row per benchmark × judge × candidate × metric): ``benchmark``,
        ``judge``, ``candidate``, ``metric`` (``owr``, ``owr_others``, ``raw``, ``did``,
        ``error_rate``; see the module docstring), ``estimate``, ``lo``, ``hi`` (float),
        ``replicates`` (int), ``n_pairs`` (int: the common pairs of that candidate).
        Benchmarks with fewer than two judges or two candidates on common pairs are left
        out (nothing to compare against); the table is empty when none is left.
    """
    sc = pair_scores(judgments)
    out = []
    for bench in sorted(sc.get_column("benchmark").unique().to_list()):
        rows = sc.filter(pl.col("benchmark") == bench).with_columns(n=pl.lit(1.0))
        keys = rows.select("judge", "candidate").unique(maintain_order=True)
        if keys.get_column("judge").n_unique() < 2 or keys.get_column("candidate").n_unique() < 2:
            continue
        ci = cluster_bootstrap(rows, ["score", "n"], _stat(keys), cells=["judge", "candidate"], replicates=replicates, level=level, seed=seed)
        n = rows.group_by("judge", "candidate").agg(n_pairs=pl.len().cast(pl.Int64))
        out.append(ci.join(n, on=["judge", "candidate"], how="left"))
    if not out:
        return pl.DataFrame(schema={"benchmark": pl.String, "judge": pl.String, "candidate": pl.String, "metric": pl.String, "estimate": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "replicates": pl.Int64, "n_pairs": pl.Int64})
    return pl.concat(out).sort("benchmark", "judge", "candidate", "metric")


def self_enhancement(
    judgments: pl.DataFrame,
    own_models: Mapping[str, str] | None = None,
    *,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """Self-enhancement of each judge whose own model is among the candidates.

    Args:
        judgments: JUDGMENT_SCHEMA rows of a pairwise job with at least two judges.
        own_models: judge label -> its own candidate model (default :data:`OWN_MODELS`).
        replicates, level, seed: of the cluster bootstrap over questions.

    Returns:
        :data:`SELF_COLUMNS`, one row per (benchmark, judge) with its own model among the
        candidates: ``owr_self`` = owr_j(m), ``owr_others`` = mean over the other judges,
        ``raw``/``did``/``error_rate`` with ``_lo``/``_hi`` intervals (see the module
        docstring), ``other_judges`` (str, comma-separated), ``n_pairs`` (int). Empty when
        no such judge is present.
    """
    own = dict(OWN_MODELS if own_models is None else own_models)
    empty = pl.DataFrame(schema={c: (pl.Int64 if c == "n_pairs" else pl.String if c in ("benchmark", "judge", "own_model", "other_judges") else pl.Float64) for c in SELF_COLUMNS})
    present = judgments.filter(pl.col("judge").is_in(list(own)) & pl.col("mode").eq("pairwise"))
    if present.height == 0 or judgments.get_column("judge").n_unique() < 2:
        return empty
    dev = win_rate_deviations(judgments, replicates=replicates, level=level, seed=seed)
    if dev.height == 0:
        return empty
    mine = pl.DataFrame({"judge": list(own), "own_model": list(own.values())})
    sel = dev.join(mine, left_on=["judge", "candidate"], right_on=["judge", "own_model"], how="semi").rename({"candidate": "own_model"})
    wide = sel.pivot(on="metric", index=["benchmark", "judge", "own_model", "n_pairs"], values=["estimate", "lo", "hi"])
    ren = {}
    for c in wide.columns:
        for side in ("estimate", "lo", "hi"):
            for m in ("owr_others", "owr", "raw", "did", "error_rate"):
                if c in (f"{side}_{m}", f"{m}_{side}"):
                    ren[c] = m if side == "estimate" else f"{m}_{side}"
    wide = wide.rename(ren).rename({"owr": "owr_self"})
    others = dev.select("benchmark", "judge").unique().group_by("benchmark").agg(_all=pl.col("judge").sort())
    wide = wide.join(others, on="benchmark").with_columns(
        other_judges=pl.col("_all").list.set_difference(pl.concat_list("judge")).list.sort().list.join(",")
    )
    return wide.select(SELF_COLUMNS).sort("benchmark", "judge")
