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
  removes a judge's *uniform* leniency (the same excess for every candidate);
- ``adj_j(m) = dev_j(m) − (a + b·x(m))``, with ``x(c) = mean_{k≠j} owr_k(c)`` the other
  judges' win rate of ``c`` (its strength) and ``a + b·x`` the least-squares line of
  ``dev_j(c)`` on ``x(c)`` over the other candidates ``c ≠ m`` (ours): the
  *strength-adjusted* estimate, which also removes leniency that grows (or shrinks) with
  the candidate's strength, so a judge that is simply kinder to strong answers reads 0
  however strong its own model is; ``slope`` = ``b``;
- ``error_rate = |owr_j(m) − mean_{k≠j} owr_k(m)| / mean_{k≠j} owr_k(m)``: CALM's error rate
  with the pairwise win rate in place of the mean score (the released pairwise outputs
  carry no scores). An absolute value: a judge that judges its own model like the others
  still reads > 0, so ``error_rate_null`` (with ``_lo``/``_hi``) gives its null reference,
  the mean and central band of the error rate with the judges' scores exchanged at random
  within each pair (:func:`~voirdire.analysis.biases.null_reference.judge_swap_null`).

Which question each answers: ``raw``, "does the judge rate its own model higher than the
other judges do?" (self-preference plus any leniency toward that model); ``did``, "more than
it over-rates the average other candidate?"; ``adj``, "more than it over-rates another
candidate *of the same strength*?" (the closest to self-preference proper, under a linear
leniency-by-strength model).

Intervals: cluster bootstrap over questions
(:func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from voirdire.analysis.biases.null_reference import judge_swap_null
from voirdire.analysis.position.cells import pairwise_pairs
from voirdire.analysis.stats.bootstrap import cluster_bootstrap

__all__ = [
    "OWN_MODELS",
    "SELF_COLUMNS",
    "has_own_models",
    "pair_scores",
    "win_rate_deviations",
    "self_enhancement",
]

#: Judge label -> the candidate model that is the judge's own (MT-Bench release).
OWN_MODELS = {"gpt-4-0613": "gpt-4", "gpt-3.5-turbo-1106": "gpt-3.5-turbo"}
#: Columns of :func:`self_enhancement`.
SELF_COLUMNS = [
    "benchmark",
    "judge",
    "own_model",
    "other_judges",
    "n_pairs",
    "owr_self",
    "owr_others",
    "raw",
    "raw_lo",
    "raw_hi",
    "did",
    "did_lo",
    "did_hi",
    "adj",
    "adj_lo",
    "adj_hi",
    "slope",
    "slope_lo",
    "slope_hi",
    "error_rate",
    "error_rate_lo",
    "error_rate_hi",
    "error_rate_null",
    "error_rate_null_lo",
    "error_rate_null_hi",
]
_PAIR = ["benchmark", "question_id", "candidate", "reference", "repetition"]


def has_own_models(judgments: pl.DataFrame) -> bool:
    """True when a judge of :data:`OWN_MODELS` and its own model are both in ``judgments``
    next to at least one other judge and one other candidate (so self-enhancement can be
    measured)."""
    judges = set(judgments.get_column("judge").unique().to_list())
    cands = set(judgments.get_column("candidate").drop_nulls().unique().to_list())
    return (
        len(judges) >= 2
        and len(cands) >= 2
        and any(j in judges and m in cands for j, m in OWN_MODELS.items())
    )


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
    pairs = pairwise_pairs(judgments).filter(
        k.is_in(["consistent", "primacy", "recency"])
    )
    scored = pairs.select(
        *_PAIR,
        "judge",
        score=pl.when(k != "consistent")
        .then(0.5)
        .when(pl.col("consistent_tie"))
        .then(0.5)
        .otherwise(pl.col("candidate_wins").cast(pl.Float64)),
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


def _strength_adjusted(dev: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-out least squares of ``dev`` on ``x`` over the candidates (last axis).

    For every (replicate, judge, candidate m), the line ``dev = a + b·x`` fitted over the
    *other* candidates c ≠ m with both values defined; returns ``dev_m − (a + b·x_m)``
    (the strength-adjusted deviation) and ``b`` (the slope), each (R, J, C); NaN where
    fewer than three other candidates or no spread in ``x``. Closed form from the sums
    minus candidate m's own term, no loop."""
    ok = np.isfinite(dev) & np.isfinite(x)
    w = ok.astype(float)
    y0, x0 = np.where(ok, dev, 0.0), np.where(ok, x, 0.0)
    tot = [
        np.sum(t, axis=2, keepdims=True)
        for t in (w, w * x0, w * y0, w * x0 * x0, w * x0 * y0)
    ]
    n, sx, sy, sxx, sxy = (
        t - v for t, v in zip(tot, (w, w * x0, w * y0, w * x0 * x0, w * x0 * y0))
    )
    den = n * sxx - sx * sx
    good = (n >= 3) & (den > 1e-12 * np.maximum(n * sxx, 1e-300))
    b = np.where(good, (n * sxy - sx * sy) / np.where(good, den, 1.0), np.nan)
    a = (sy - b * sx) / np.where(n > 0, n, 1.0)
    return dev - (a + b * x), b


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
        others = (np.nansum(owr, axis=1, keepdims=True) - owr) / (
            nj - 1
        )  # mean over k ≠ j
        dev = owr - others
        did = dev - (np.nansum(dev, axis=2, keepdims=True) - dev) / (nc - 1)
        err = np.abs(dev) / others
        adj, slope = _strength_adjusted(dev, others)
        out = {
            "owr": owr,
            "owr_others": others,
            "raw": dev,
            "did": did,
            "error_rate": err,
            "adj": adj,
            "slope": slope,
        }
        return {k: v[:, ji, ci] for k, v in out.items()}

    return stat


def win_rate_deviations(
    judgments: pl.DataFrame,
    *,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
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
        if (
            keys.get_column("judge").n_unique() < 2
            or keys.get_column("candidate").n_unique() < 2
        ):
            continue
        ci = cluster_bootstrap(
            rows,
            ["score", "n"],
            _stat(keys),
            cells=["judge", "candidate"],
            replicates=replicates,
            level=level,
            seed=seed,
        )
        n = rows.group_by("judge", "candidate").agg(n_pairs=pl.len().cast(pl.Int64))
        out.append(ci.join(n, on=["judge", "candidate"], how="left"))
    if not out:
        return pl.DataFrame(
            schema={
                "benchmark": pl.String,
                "judge": pl.String,
                "candidate": pl.String,
                "metric": pl.String,
                "estimate": pl.Float64,
                "lo": pl.Float64,
                "hi": pl.Float64,
                "replicates": pl.Int64,
                "n_pairs": pl.Int64,
            }
        )
    return pl.concat(out).sort("benchmark", "judge", "candidate", "metric")


def _no_rows() -> pl.DataFrame:
    """No rows, the :data:`SELF_COLUMNS` with their types."""
    return pl.DataFrame(
        schema={
            c: (
                pl.Int64
                if c == "n_pairs"
                else pl.String
                if c in ("benchmark", "judge", "own_model", "other_judges")
                else pl.Float64
            )
            for c in SELF_COLUMNS
        }
    )


def _own_rows(dev: pl.DataFrame, own: Mapping[str, str]) -> pl.DataFrame:
    """The rows of :func:`win_rate_deviations` ``dev`` on each judge's own model ``own``
    (judge -> model), one per (benchmark, judge): ``own_model``, ``n_pairs``, the metrics
    as columns (``owr_self`` for ``owr``; ``<metric>_lo``/``_hi``) and ``other_judges``
    (the benchmark's other judges, sorted, comma-separated)."""
    mine = pl.DataFrame({"judge": list(own), "own_model": list(own.values())})
    sel = dev.join(
        mine,
        left_on=["judge", "candidate"],
        right_on=["judge", "own_model"],
        how="semi",
    ).rename({"candidate": "own_model"})
    wide = sel.pivot(
        on="metric",
        index=["benchmark", "judge", "own_model", "n_pairs"],
        values=["estimate", "lo", "hi"],
    )
    ren = {}
    for c in wide.columns:
        for side in ("estimate", "lo", "hi"):
            for m in ("owr_others", "owr", "raw", "did", "adj", "slope", "error_rate"):
                if c in (f"{side}_{m}", f"{m}_{side}"):
                    ren[c] = m if side == "estimate" else f"{m}_{side}"
    wide = wide.rename(ren).rename({"owr": "owr_self"})
    others = (
        dev.select("benchmark", "judge")
        .unique()
        .group_by("benchmark")
        .agg(_all=pl.col("judge").sort())
    )
    wide = wide.join(others, on="benchmark").with_columns(
        other_judges=pl.col("_all")
        .list.set_difference(pl.concat_list("judge"))
        .list.sort()
        .list.join(",")
    )
    return wide


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
        ``raw``/``did``/``adj`` (strength-adjusted)/``slope`` (of the judge's deviation on
        the other judges' win rate, over the non-own candidates)/``error_rate`` with
        ``_lo``/``_hi`` intervals (see the module docstring), ``error_rate_null`` with
        ``_lo``/``_hi`` (the error rate's null reference and band), ``other_judges`` (str, comma-separated), ``n_pairs`` (int). Empty when
        no such judge is present.
    """
    own = dict(OWN_MODELS if own_models is None else own_models)
    empty = _no_rows()
    present = judgments.filter(
        pl.col("judge").is_in(list(own)) & pl.col("mode").eq("pairwise")
    )
    if present.height == 0 or judgments.get_column("judge").n_unique() < 2:
        return empty
    dev = win_rate_deviations(judgments, replicates=replicates, level=level, seed=seed)
    if dev.height == 0:
        return empty
    wide = _own_rows(dev, own)
    nulls = _error_rate_nulls(
        judgments,
        wide.select("benchmark", "judge", "own_model"),
        replicates,
        level,
        seed,
    )
    return (
        wide.join(nulls, on=["benchmark", "judge"], how="left")
        .select(SELF_COLUMNS)
        .sort("benchmark", "judge")
    )


def _error_rate_nulls(
    judgments: pl.DataFrame,
    rows: pl.DataFrame,
    replicates: int,
    level: float,
    seed: int,
) -> pl.DataFrame:
    """Per (benchmark, judge) of ``rows``: the null reference of the error rate
    (:func:`~voirdire.analysis.biases.null_reference.judge_swap_null` on the own model's common
    pairs)."""
    sc = pair_scores(judgments)
    out = []
    for bench, judge, own in rows.iter_rows():
        part = sc.filter((pl.col("benchmark") == bench) & (pl.col("candidate") == own))
        wide = part.pivot(
            on="judge", index=[c for c in _PAIR if c != "benchmark"], values="score"
        )
        judges = sorted(c for c in wide.columns if c not in _PAIR)
        m = wide.select(judges).to_numpy() if judge in judges else np.empty((0, 0))
        band = (
            judge_swap_null(
                m, judges.index(judge), replicates=replicates, level=level, seed=seed
            )
            if m.size
            else (np.nan,) * 3
        )
        out.append((bench, judge, *band))
    cols = [
        "benchmark",
        "judge",
        "error_rate_null",
        "error_rate_null_lo",
        "error_rate_null_hi",
    ]
    return pl.DataFrame(
        out,
        schema={c: (pl.String if i < 2 else pl.Float64) for i, c in enumerate(cols)},
        orient="row",
    ).with_columns([pl.col(c).fill_nan(None) for c in cols[2:]])
