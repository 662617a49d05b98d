"""Calibration against people: is a judge's stated probability the rate at which it is right?

Source and definitions: ``docs/one-order-and-calibration.md``.

Input: judgments (``voirdire.schema.JUDGMENT_SCHEMA``) with ``gold`` (str | null: the
candidate the labels say is better, ``"tie"``, or null) and a probability per judgment:

- a column ``p_candidate`` (float in [0, 1]: the probability that ``candidate`` is the
  better answer) where a log reader supplies one (AlpacaEval's continuous ``preference``
  p ∈ [1, 2] gives ``p_candidate = p − 1`` when the candidate is ``output_2``); it wins over
- ``option_probs`` (letter -> probability, voirdire's log-probability verdicts; letters are
  positions: ``A`` the first answer shown). The probability that the candidate wins is its
  letter's probability renormalised over the two answers' letters,
  ``p = p(cand) / (p(cand) + p(ref))`` (the tie letter's mass is set aside: the labels
  scored are not ties). A judgment whose letters hold a null, NaN, infinite or negative
  probability, or whose two answers' probabilities sum to 0, has no probability (as
  :func:`voirdire.analysis.mitigation.calibration.option_probs_long` reads them).

Scored judgments: pairwise and score mode, control rows, a gold label naming the candidate
or the reference (tie labels are counted in ``n_tie_gold`` and left out: a binary forecast
has no tie outcome), and a probability. Each judgment is one forecast (both orders of a
pair count as two); the outcome ``y`` is 1 when the gold label is the candidate.

Figures per (benchmark, judge):

- ``ece``: expected calibration error with ``M = 10`` equal-width bins on [0, 1]
  (``[0, 0.1), …, [0.9, 1]``; a forecast ``p`` falls in bin ``min(⌊10 p⌋, 9)``):
  ``ECE = Σ_b (n_b / N) · |ȳ_b − p̄_b| = Σ_b |Σ_{i∈b} y_i − Σ_{i∈b} p_i| / N``. Naeini,
  Cooper and Hauskrecht (AAAI 2015) define it on a binary classifier's probability of the
  positive class with 10 equal-width bins; Guo et al. (ICML 2017, eq. 3) use the same
  estimator (with 15 bins, on the top class). ECE is biased upward in small samples, so
  ``ece_calibrated`` gives the mean ECE a perfectly calibrated judge would show with the
  same forecasts (``y ~ Bernoulli(p)`` drawn ``draws`` times): compare ``ece`` with it,
  not with 0.
- ``brier``: Brier score ``Σ (p_i − y_i)² / N`` (Brier 1950), 0 best, 0.25 for a constant
  ½.
- ``*_lo``/``*_hi``: the project's cluster bootstrap (questions, or the clusters a benchmark
  declares, resampled: both figures are functions of per-question sums). Brier: the
  percentile interval. ECE: the percentile interval shifted down by the replicates' median
  minus the estimate (the bias of a bootstrap replicate over the estimate, which repeats
  the estimate's own upward bias: Efron and Tibshirani 1993, ch. 10), clipped at 0; its
  coverage of a calibrated judge's small-sample ECE is measured in
  ``perf/bench_calibration.py`` (the plain percentile interval held it in 34 of 40
  simulated tables of 240 forecasts).

:func:`reliability_table` gives the per-bin figures the reliability diagram draws
(``voirdire.analysis.report.calibration_figure``).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from voirdire.analysis.position.pairing import PAIRWISE_MODES, candidate_first
from voirdire.analysis.stats.bootstrap import cluster_bootstrap, in_clusters

__all__ = [
    "BINS", "CALIBRATION_COLUMNS", "candidate_probability", "RELIABILITY_COLUMNS", "PROB_COLUMN", "forecasts", "has_forecasts",
    "calibration_error", "reliability_table", "ece_of", "brier_of",
]  # fmt: skip

#: equal-width bins of the ECE (Naeini et al. 2015)
BINS = 10
#: the generic per-judgment probability that the candidate wins
PROB_COLUMN = "p_candidate"
JUDGE_KEYS = ["benchmark", "judge"]
CALIBRATION_COLUMNS = [
    *JUDGE_KEYS, "source", "n", "n_tie_gold", "ece", "ece_lo", "ece_hi", "ece_calibrated", "brier",
    "brier_lo", "brier_hi",
]  # fmt: skip
RELIABILITY_COLUMNS = [*JUDGE_KEYS, "bin", "bin_lo", "bin_hi", "n", "mean_p", "mean_y"]
_KV = pl.List(pl.Struct({"key": pl.String, "value": pl.Float64}))


def _labelled(judgments: pl.DataFrame) -> pl.DataFrame:
    rows = judgments
    if "perturbation" in rows.columns:
        rows = rows.filter(pl.col("perturbation") == "control")
    if "gold" not in rows.columns:
        return rows.clear()
    return rows.filter(
        pl.col("mode").is_in(PAIRWISE_MODES)
        & pl.col("gold").is_not_null()
        & pl.col("candidate").is_not_null()
    )


def candidate_probability(rows: pl.DataFrame) -> pl.Series:
    """``p(cand) / (p(cand) + p(ref))`` per row of ``rows`` (``shown``, ``candidate``,
    ``reference``, ``option_probs``) from ``option_probs`` (float; null where unusable,
    module docstring): the probability that the candidate wins, the tie's mass set aside."""
    idx = rows.select(
        r=pl.int_range(pl.len()),
        c=pl.when(candidate_first())
        .then(pl.lit("A"))
        .when(pl.col("shown").list.get(1, null_on_oob=True) == pl.col("candidate"))
        .then(pl.lit("B")),
        f=pl.when(pl.col("shown").list.first() == pl.col("reference"))
        .then(pl.lit("A"))
        .when(pl.col("shown").list.get(1, null_on_oob=True) == pl.col("reference"))
        .then(pl.lit("B")),
        kv=pl.col("option_probs").cast(_KV),
    )
    p = pl.col("value")
    bad = (p.is_null() | p.is_nan() | p.is_infinite() | (p < 0)).fill_null(True)
    per = (
        idx.filter(pl.col("kv").is_not_null())
        .explode("kv")
        .unnest("kv")
        .group_by("r")
        .agg(
            ok=~bad.any(),
            pc=p.filter(pl.col("key") == pl.col("c")).sum(),
            pr=p.filter(pl.col("key") == pl.col("f")).sum(),
        )
        .filter(pl.col("ok") & (pl.col("pc") + pl.col("pr") > 0))
        .select("r", prob=pl.col("pc") / (pl.col("pc") + pl.col("pr")))
    )
    return idx.select("r").join(per, on="r", how="left").sort("r").get_column("prob")


def forecasts(judgments: pl.DataFrame) -> pl.DataFrame:
    """One row per scored forecast (module docstring): ``benchmark``, ``judge``,
    ``question_id``, ``instance`` (str: question, candidate and reference; the forecasts of
    one instance share its label), ``source`` (``"p_candidate"`` | ``"option_probs"``), ``p``
    (float in [0, 1]: the probability that the candidate is better), ``y`` (float: 1 when
    the gold label is the candidate, 0 when it is the reference). Tie labels are kept with
    ``y`` null (counted, not scored).

    Raises:
        ConfigError: ``p_candidate`` holds a value outside [0, 1] (names the column).
    """
    from voirdire.core import ConfigError

    rows = _labelled(judgments)
    schema = {"benchmark": pl.String, "judge": pl.String, "question_id": pl.String, "instance": pl.String,
              "source": pl.String, "p": pl.Float64, "y": pl.Float64}  # fmt: skip
    if not rows.height:
        return pl.DataFrame(schema=schema)
    given = (
        rows.get_column(PROB_COLUMN).cast(pl.Float64)
        if PROB_COLUMN in rows.columns
        else pl.Series([None] * rows.height, dtype=pl.Float64)
    )
    outside = given.is_not_null() & ((given < 0) | (given > 1) | given.is_nan())
    if outside.any():
        raise ConfigError(f"judgments: {PROB_COLUMN} holds a value outside [0, 1]")
    probs = (
        candidate_probability(rows)
        if "option_probs" in rows.columns
        else pl.Series([None] * rows.height, dtype=pl.Float64)
    )
    g = pl.col("gold")
    return (
        rows.select(*JUDGE_KEYS, "question_id", "candidate", "reference", "gold")
        .with_columns(_given=given, _probs=probs)
        .select(
            *JUDGE_KEYS,
            "question_id",
            instance=pl.concat_str(
                ["question_id", "candidate", "reference"], separator="\x1f"
            ),
            source=pl.when(pl.col("_given").is_not_null())
            .then(pl.lit(PROB_COLUMN))
            .when(pl.col("_probs").is_not_null())
            .then(pl.lit("option_probs")),
            p=pl.coalesce("_given", "_probs"),
            y=pl.when(g == pl.col("candidate"))
            .then(1.0)
            .when(g == pl.col("reference"))
            .then(0.0),
            _tie=g == "tie",
        )
        .filter(
            pl.col("p").is_not_null() & (pl.col("y").is_not_null() | pl.col("_tie"))
        )
        .drop("_tie")
        .cast(schema)
    )


def has_forecasts(judgments: pl.DataFrame) -> bool:
    """Whether some labelled (non-tie) pairwise judgment carries a probability."""
    return forecasts(judgments).filter(pl.col("y").is_not_null()).height > 0


def ece_of(p: np.ndarray, y: np.ndarray, bins: int = BINS) -> float:
    """ECE of forecasts ``p`` against outcomes ``y`` (1-D arrays; module docstring); NaN
    when empty. The reference implementation the tables are checked against."""
    p, y = np.asarray(p, float), np.asarray(y, float)
    if p.size == 0:
        return float("nan")
    b = np.minimum((p * bins).astype(int), bins - 1)
    gap = np.bincount(b, y - p, minlength=bins)
    return float(np.abs(gap).sum() / p.size)


def brier_of(p: np.ndarray, y: np.ndarray) -> float:
    """Brier score of forecasts ``p`` against outcomes ``y``; NaN when empty."""
    p, y = np.asarray(p, float), np.asarray(y, float)
    return float(np.mean((p - y) ** 2)) if p.size else float("nan")


def _bin(bins: int) -> pl.Expr:
    return (pl.col("p") * bins).floor().cast(pl.Int64).clip(0, bins - 1)


def _statistic(bins: int):
    def stat(s):
        n = sum(s[f"n{b}"].sum(1) for b in range(bins))
        gaps = sum(np.abs(s[f"y{b}"].sum(1) - s[f"p{b}"].sum(1)) for b in range(bins))
        ok = n > 0
        den = np.where(ok, n, 1)
        return {
            "ece": np.where(ok, gaps / den, np.nan),
            "brier": np.where(ok, s["sq"].sum(1) / den, np.nan),
        }

    return stat


def _ece_calibrated(
    p: np.ndarray, instance: np.ndarray, bins: int, draws: int, rng
) -> float:
    """The mean ECE of a calibrated judge with forecasts ``p``: per draw one label per
    instance, ``y ~ Bernoulli(mean of the instance's forecasts)``, shared by its forecasts
    (both orders of a pair, repetitions), ``draws`` draws."""
    if p.size == 0:
        return float("nan")
    b = np.minimum((p * bins).astype(int), bins - 1)
    onehot = np.zeros((p.size, bins))
    onehot[np.arange(p.size), b] = 1.0
    _, inv = np.unique(instance, return_inverse=True)
    pi = np.bincount(inv, p) / np.bincount(inv)
    out = []
    for start in range(0, draws, 64):
        y = (rng.random((min(64, draws - start), pi.size)) < pi).astype(float)[:, inv]
        out.append(np.abs((y - p) @ onehot).sum(1) / p.size)
    return float(np.concatenate(out).mean())


def _bin_sums(f: pl.DataFrame, bins: int) -> tuple[pl.DataFrame, list[str]]:
    """Per forecast of ``f`` (:func:`forecasts`, gold labels only) the summands of the ECE
    and Brier score: ``n{k}`` (1.0 in bin ``k``), ``p{k}``, ``y{k}`` (the forecast, the
    label, in bin ``k``; else 0) and ``sq`` (``(p − y)²``), with the judge keys and
    ``question_id``; and the names of the summed columns."""
    b = _bin(bins)
    sums = f.select(
        *JUDGE_KEYS,
        "question_id",
        *[(b == k).cast(pl.Float64).alias(f"n{k}") for k in range(bins)],
        *[
            pl.when(b == k).then(pl.col("p")).otherwise(0.0).alias(f"p{k}")
            for k in range(bins)
        ],
        *[
            pl.when(b == k).then(pl.col("y")).otherwise(0.0).alias(f"y{k}")
            for k in range(bins)
        ],
        sq=(pl.col("p") - pl.col("y")) ** 2,
    )
    values = [f"{c}{k}" for c in "npy" for k in range(bins)] + ["sq"]
    return sums, values


def _intervals(
    drawn: pl.DataFrame,
    values: list[str],
    bins: int,
    replicates: int,
    level: float,
    seed: int,
) -> pl.DataFrame:
    """ECE and Brier estimates and intervals per judge (wide: ``estimate_ece``,
    ``lo_ece``, ``hi_ece``, the same for ``brier``) from the cluster bootstrap of the
    per-question sums ``drawn``; the ECE interval shifted back by its replicates' median
    minus the estimate (module docstring), clipped at 0."""
    common = dict(groups=["judge"], replicates=replicates, seed=seed)
    ci = cluster_bootstrap(drawn, values, _statistic(bins), level=level, **common)
    # the same draws' median: ECE's bootstrap replicates carry its small-sample bias twice
    # over, so its interval is shifted back by (median of the replicates − estimate)
    mid = cluster_bootstrap(drawn, values, _statistic(bins), level=1e-9, **common)
    shift = (pl.col("lo_mid") - pl.col("estimate")).fill_nan(0.0)
    ci = ci.join(
        mid.select(*JUDGE_KEYS, "metric", lo_mid="lo"), on=[*JUDGE_KEYS, "metric"]
    )
    ci = ci.with_columns(
        lo=pl.when(pl.col("metric") == "ece").then((pl.col("lo") - shift).clip(0.0)).otherwise("lo"),
        hi=pl.when(pl.col("metric") == "ece").then((pl.col("hi") - shift).clip(0.0)).otherwise("hi"),
    )  # fmt: skip
    return ci.pivot("metric", index=JUDGE_KEYS, values=["estimate", "lo", "hi"])


def _calibrated(
    f: pl.DataFrame, bins: int, draws: int, rng: np.random.Generator
) -> pl.DataFrame:
    """Per judge of ``f`` (sorted): ``benchmark``, ``judge``, ``source`` (the sources
    joined by ``+``), ``n`` (int: forecasts) and ``ece_calibrated`` (float:
    :func:`_ece_calibrated`, the judges drawn from ``rng`` in order)."""
    per_judge = []
    for (bm, j), grp in f.sort(JUDGE_KEYS, maintain_order=True).group_by(
        JUDGE_KEYS, maintain_order=True
    ):
        src = "+".join(
            sorted(grp.get_column("source").unique().to_list(), reverse=True)
        )
        p, inst = grp.get_column("p").to_numpy(), grp.get_column("instance").to_numpy()
        per_judge.append(
            (bm, j, src, grp.height, _ece_calibrated(p, inst, bins, draws, rng))
        )
    return pl.DataFrame(
        per_judge, schema={"benchmark": pl.String, "judge": pl.String, "source": pl.String, "n": pl.Int64,
                           "ece_calibrated": pl.Float64}, orient="row",
    )  # fmt: skip


def calibration_error(
    judgments: pl.DataFrame,
    *,
    bins: int = BINS,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    draws: int = 200,
    clusters: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """ECE and Brier score of each judge's forecasts against the gold labels, with intervals.

    Args:
        judgments: JUDGMENT_SCHEMA rows with ``gold`` and ``option_probs`` or
            ``p_candidate`` (module docstring).
        bins: equal-width bins of the ECE (10: Naeini et al. 2015).
        replicates, level, seed: the cluster bootstrap's
            (:func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`); ``seed``
            also seeds the calibrated judge's draws.
        draws: draws of the calibrated judge behind ``ece_calibrated``.
        clusters: drawn instead of the questions where a benchmark declares them.

    Returns:
        :data:`CALIBRATION_COLUMNS`, one row per (benchmark, judge) with scored forecasts:
        ``source`` (str: where the probabilities came from; ``"p_candidate+option_probs"``
        when both), ``n`` (int: scored forecasts), ``n_tie_gold`` (int: forecasts on tie
        labels, left out), ``ece``, ``ece_lo``, ``ece_hi``, ``ece_calibrated``, ``brier``,
        ``brier_lo``, ``brier_hi`` (float). Empty when no judge has any.

    Raises:
        ConfigError: ``p_candidate`` holds a value outside [0, 1].
    """
    f = forecasts(judgments)
    ties = (
        f.filter(pl.col("y").is_null())
        .group_by(JUDGE_KEYS)
        .agg(n_tie_gold=pl.len().cast(pl.Int64))
    )
    f = f.filter(pl.col("y").is_not_null())
    schema = {c: pl.Float64 for c in CALIBRATION_COLUMNS} | {
        "benchmark": pl.String, "judge": pl.String, "source": pl.String, "n": pl.Int64, "n_tie_gold": pl.Int64,
    }  # fmt: skip
    if not f.height:
        return pl.DataFrame(schema=schema).select(CALIBRATION_COLUMNS)
    sums, values = _bin_sums(f, bins)
    wide = _intervals(
        in_clusters(sums, clusters), values, bins, replicates, level, seed
    )
    meta = _calibrated(f, bins, draws, np.random.default_rng([seed, 2]))
    return (
        meta.join(wide, on=JUDGE_KEYS, how="left")
        .join(ties, on=JUDGE_KEYS, how="left")
        .select(
            *JUDGE_KEYS, "source", "n", pl.col("n_tie_gold").fill_null(0),
            ece="estimate_ece", ece_lo="lo_ece", ece_hi="hi_ece", ece_calibrated="ece_calibrated",
            brier="estimate_brier", brier_lo="lo_brier", brier_hi="hi_brier",
        )
        .cast(schema)
        .sort(JUDGE_KEYS)
    )  # fmt: skip


def reliability_table(judgments: pl.DataFrame, *, bins: int = BINS) -> pl.DataFrame:
    """The reliability diagram's points: :data:`RELIABILITY_COLUMNS`, one row per (benchmark,
    judge, non-empty bin): ``bin`` (int, 0-based), ``bin_lo``/``bin_hi`` (float edges),
    ``n`` (int: forecasts in the bin), ``mean_p`` (mean forecast), ``mean_y`` (share of
    gold labels naming the candidate). A calibrated judge's points lie on ``mean_y = mean_p``."""
    f = forecasts(judgments).filter(pl.col("y").is_not_null())
    return (
        f.with_columns(bin=_bin(bins))
        .group_by(*JUDGE_KEYS, "bin")
        .agg(n=pl.len().cast(pl.Int64), mean_p=pl.col("p").mean(), mean_y=pl.col("y").mean())
        .with_columns(bin_lo=pl.col("bin") / bins, bin_hi=(pl.col("bin") + 1) / bins)
        .select(RELIABILITY_COLUMNS)
        .sort(*JUDGE_KEYS, "bin")
    )  # fmt: skip
