"""Metrics of the CALM bias suite: robustness, consistency, accuracy and the directional effect.

Source: Ye et al., "Justice or Prejudice? Quantifying Biases in LLM-as-a-Judge" (CALM,
2024), and the project's ``docs/bias-metrics.md`` (the directional effect and its tests
are ours). CALM's method is *attack and detect*: ask the judge on a prompt and on a
perturbed copy of it, and compare the verdicts.

Input: a judgments table (``voirdire/schema.py`` JUDGMENT_SCHEMA) with the perturbation
columns ``perturbation`` (variant id, ``"control"`` for the control), ``perturbation_kind``,
``perturbation_param``, ``target``, ``target_rule``, ``target_slot`` and ``better``. A
perturbed row pairs with the control row of the same (benchmark, judge, instance_id,
permutation, repetition) (:data:`CONTROL_KEYS`), so each comparison holds the order of the
answers fixed and position and content effects stay apart. The pairing, verdicts and
scores live in :mod:`voirdire.analysis.biases.perturbed` (its names importable here too).

Conventions (ours, ``docs/bias-metrics.md``):

- A *verdict* is the chosen model, ``"<tie>"`` for the tie option, or ``"slot:X"`` for a
  letter outside the slots; a failed query has no verdict and a pair with a failed side is
  left out of every figure (counted in ``n_failed``).
- The target's *score* in one verdict is 1 (target chosen), 1/2 (tie) or 0 (another answer).
- Accuracy counts a tie as half a correct verdict, like the score.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from voirdire.analysis.biases.null_reference import NULL_COLUMNS, swap_null
from voirdire.analysis.biases.perturbed import CONTROL as CONTROL
from voirdire.analysis.biases.perturbed import (
    PERTURBATION_COLUMNS as PERTURBATION_COLUMNS,
)
from voirdire.analysis.biases.perturbed import (
    bias_record_columns,
    consistency_rate,
    paired,
)
from voirdire.analysis.stats.bootstrap import cluster_bootstrap

__all__ = [
    "VARIANT_KEYS",
    "EFFECT_COLUMNS",
    "bias_effects",
]

#: One perturbation variant (a figure is reported per judge × variant).
VARIANT_KEYS = [
    "benchmark",
    "judge",
    "perturbation",
    "perturbation_kind",
    "perturbation_param",
    "target_rule",
]
#: Columns of :func:`bias_effects` (and ``metrics/bias_effects.csv``).
EFFECT_COLUMNS = [
    *VARIANT_KEYS,
    "slot",
    "n",
    "n_failed",
    "rr",
    "rr_lo",
    "rr_hi",
    "cr",
    "p_control",
    "p_perturbed",
    "delta",
    "delta_lo",
    "delta_hi",
    "toward",
    "away",
    "p_value",
    "susceptibility",
    "susceptibility_lo",
    "susceptibility_hi",
    "susceptibility_null",
    "susceptibility_null_lo",
    "susceptibility_null_hi",
    "accuracy_control",
    "accuracy_perturbed",
    "error_rate",
    "error_rate_null",
    "error_rate_null_lo",
    "error_rate_null_hi",
]


def _effect_stats(s: dict) -> dict:
    n, d, u = s["one"], s["d"], s["unchanged"]
    pc = s["s_control"] / n
    delta = d / n
    # the share of the room left that the perturbation takes: Δ/(1 − p_control) toward the
    # target, Δ/p_control away from it (the simulated judge's susceptibility, docs/bias-metrics.md)
    sus = delta / (1.0 - pc)
    sus_away = delta / pc
    return {
        "delta": delta,
        "rr": u / n,
        "susceptibility": np.where(delta >= 0, sus, sus_away),
    }


def _with_slot_all(p: pl.DataFrame) -> pl.DataFrame:
    """The pairs of :func:`paired` (``perturbation_param`` and ``target_rule`` as str) once
    with ``slot = "all"``, then again those whose target is in the first or last slot."""
    base = p.with_columns(
        pl.col("perturbation_param").cast(pl.String),
        pl.col("target_rule").cast(pl.String),
    )
    return pl.concat(
        [
            base.with_columns(slot=pl.lit("all")),
            base.filter(pl.col("slot").is_in(["first", "last"])),
        ]
    )


def _variant_counts(ok: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per ``keys`` (variant × slot) over the valid pairs ``ok``: ``n``, ``rr``,
    ``p_control``, ``p_perturbed``, ``toward``, ``away`` and the two accuracies (the
    counts and means of :func:`bias_effects`)."""
    return ok.group_by(keys).agg(
        n=pl.len().cast(pl.Int64),
        rr=pl.col("unchanged").mean(),
        p_control=pl.col("s_control").mean(),
        p_perturbed=pl.col("s_perturbed").mean(),
        toward=(pl.col("s_perturbed") > pl.col("s_control")).sum().cast(pl.Int64),
        away=(pl.col("s_perturbed") < pl.col("s_control")).sum().cast(pl.Int64),
        accuracy_control=pl.col("c_control").mean(),
        accuracy_perturbed=pl.col("c_perturbed").mean(),
    )


def bias_effects(
    judgments: pl.DataFrame,
    *,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """RR, CR, accuracy, error rate and the directional effect Δ per judge × perturbation variant.

    Sources: CALM (Ye et al. 2024) for RR, CR, accuracy and the refinement-aware error rate;
    ``docs/bias-metrics.md`` for Δ, its interval, its test and the per-slot split (ours).

    For each (benchmark, judge, variant) and ``slot`` in ``"all"``, ``"first"`` (target in
    slot A), ``"last"`` (target in the last slot), over the (instance, order, repetition)
    pairs of a perturbed row and its control that both have a verdict:

    - ``rr``: CALM's robustness rate, the share of pairs whose verdict is unchanged;
      ``rr_lo``/``rr_hi`` its cluster-bootstrap interval over questions.
    - ``cr``: the judge's consistency rate (:func:`consistency_rate`), the same for every
      variant of the judge; null with fewer than two repetitions.
    - ``p_control``/``p_perturbed``: P(target wins), ties as half a win.
    - ``delta`` = ``p_perturbed − p_control`` (over the same pairs), ``delta_lo``/
      ``delta_hi`` its cluster-bootstrap percentile interval (questions resampled,
      :func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`).
    - ``toward``/``away``: discordant pairs whose target score rose / fell; ``p_value``:
      exact two-sided McNemar test, ``scipy.stats.binomtest(toward, toward + away, 1/2)``
      (1 without discordant pairs).
    - ``susceptibility``: Δ / (1 − p_control) when Δ ≥ 0, Δ / p_control when Δ < 0: the
      share of the verdicts not already at the target's side that the perturbation moves
      (the simulated judge's susceptibility), with its interval.
    - ``susceptibility_null`` (with ``_lo``/``_hi``): the null reference, the figure a
      judge the perturbation does not move reads on the same pairs (mean and central 95 %
      of a within-pair permutation null, :func:`~voirdire.analysis.biases.null_reference.
      swap_null`); the susceptibility is not centred on 0 for such a judge (its two
      denominators differ), so read it against this figure, not against 0.
    - ``accuracy_control``/``accuracy_perturbed`` (``fallacy`` and ``cot`` only, where
      ``better`` is known): share of verdicts that pick the truly better response; after
      a ``fallacy`` injection the correct verdict is the other response.
    - ``error_rate`` (``refinement_aware`` only): CALM's ``|ȳ_told − ȳ_untold| / ȳ_untold``
      with the pairwise win rate of the target (the refined answer) in place of its mean
      score (the pairwise jobs have no scores): ``|p_perturbed − p_control| / p_control``;
      ``error_rate_null`` (with ``_lo``/``_hi``): its null reference as for the
      susceptibility (an absolute value: a null judge reads its mean absolute noise, > 0).

    Variants without a target have ``delta`` and its companions null. ``n``: valid pairs
    (int), ``n_failed``: pairs left out because a side failed.

    Returns:
        :data:`EFFECT_COLUMNS`, sorted by benchmark, judge, perturbation, slot.

    Raises:
        ValueError: the perturbation columns are missing.
    """
    p = paired(judgments)
    if p.height == 0:
        return pl.DataFrame(schema={c: pl.String for c in EFFECT_COLUMNS}).select(
            EFFECT_COLUMNS
        )
    allrows = _with_slot_all(p)
    keys = [*VARIANT_KEYS, "slot"]
    fails = allrows.group_by(keys).agg(n_failed=pl.col("failed").sum().cast(pl.Int64))
    ok = allrows.filter(~pl.col("failed"))
    counts = _variant_counts(ok, keys)
    wide, key_map, boot_rows = _effect_intervals(
        ok, keys, replicates=replicates, level=level, seed=seed
    )
    cr = consistency_rate(judgments).select("benchmark", "judge", "cr")
    out = _joined(counts, fails, key_map, wide, cr, keys)
    return _derived(out, boot_rows, replicates=replicates, level=level, seed=seed)


def _joined(
    counts: pl.DataFrame,
    fails: pl.DataFrame,
    key_map: pl.DataFrame,
    wide: pl.DataFrame,
    cr: pl.DataFrame,
    keys: list[str],
) -> pl.DataFrame:
    """The per variant × slot ``counts`` with the failures ``fails`` (``n_failed``), the
    intervals ``wide`` (through ``key_map``), the judge's ``cr``, and ``delta``; ``n`` and
    ``n_failed`` 0 where absent."""
    return (
        counts.join(fails, on=keys, how="full", coalesce=True, nulls_equal=True)
        .join(key_map, on=keys, how="left", nulls_equal=True)
        .join(wide, on=["benchmark", "_key"], how="left")
        .join(cr, on=["benchmark", "judge"], how="left")
        .with_columns(
            pl.col("n").fill_null(0),
            pl.col("n_failed").fill_null(0),
            delta=pl.col("p_perturbed") - pl.col("p_control"),
        )
    )


def _effect_intervals(
    ok: pl.DataFrame, keys: list[str], **bootstrap
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """``(wide, key_map, boot_rows)``: the cluster-bootstrap intervals of RR, Δ and the
    susceptibility per variant × slot (``<metric>_lo``/``_hi`` by ``benchmark`` and a
    ``_key`` joining the ``keys``), the ``keys`` -> ``_key`` map, and the per-pair rows the
    bootstrap read (for the null references)."""
    boot_rows = ok.with_columns(
        one=pl.lit(1.0),
        d=(pl.col("s_perturbed") - pl.col("s_control")),
        s_control=pl.col("s_control"),
        _key=pl.concat_str([pl.col(k).fill_null("∅") for k in keys], separator="\x1f"),
    )
    ci = cluster_bootstrap(
        boot_rows.select(
            "benchmark", "question_id", "_key", "one", "d", "unchanged", "s_control"
        ),
        ["one", "d", "unchanged", "s_control"],
        _effect_stats,
        cells=["_key"],
        **bootstrap,
    )
    wide = ci.pivot(on="metric", index=["benchmark", "_key"], values=["lo", "hi"])
    wide = wide.rename(
        {c: _ci_name(c) for c in wide.columns if c not in ("benchmark", "_key")}
    )
    return wide, boot_rows.select(*keys, "_key").unique("_key"), boot_rows


def _derived(
    out: pl.DataFrame,
    boot_rows: pl.DataFrame,
    *,
    replicates: int,
    level: float,
    seed: int,
) -> pl.DataFrame:
    """:func:`bias_effects`' figures derived from the counts (McNemar p, susceptibility,
    error rate, the kind-specific accuracies) and the null references
    (:func:`~voirdire.analysis.biases.null_reference.swap_null` over ``boot_rows``), in
    :data:`EFFECT_COLUMNS` order."""
    from scipy.stats import binomtest  # lazily: scipy.stats is ~0.5 s of imports

    pv = [
        float(binomtest(a, a + b, 0.5).pvalue) if (a or 0) + (b or 0) > 0 else 1.0
        for a, b in zip(
            out.get_column("toward").to_list(), out.get_column("away").to_list()
        )
    ]
    has_t = pl.col("p_control").is_not_null()
    record = bias_record_columns(pl.col("perturbation_kind"))
    by_error_rate = record["metric"] == "error_rate"
    by_accuracy = record["metric"] == "accuracy"
    out = out.with_columns(
        p_value=pl.when(has_t).then(pl.Series(pv, dtype=pl.Float64)),
        susceptibility=pl.when(pl.col("delta") >= 0)
        .then(pl.col("delta") / (1.0 - pl.col("p_control")))
        .otherwise(pl.col("delta") / pl.col("p_control")),
        error_rate=pl.when(by_error_rate).then(
            (pl.col("delta")).abs() / pl.col("p_control")
        ),
        accuracy_control=pl.when(by_accuracy).then(pl.col("accuracy_control")),
        accuracy_perturbed=pl.when(by_accuracy).then(pl.col("accuracy_perturbed")),
    )
    null = swap_null(
        boot_rows.select("_key", "s_control", "s_perturbed"),
        replicates=replicates,
        level=level,
        seed=seed,
    )
    out = out.join(null, on="_key", how="left").with_columns(
        [pl.when(by_error_rate).then(pl.col(c)).alias(c) for c in NULL_COLUMNS[3:]]
    )
    for c in (
        "delta_lo",
        "delta_hi",
        "susceptibility_lo",
        "susceptibility_hi",
        "rr_lo",
        "rr_hi",
        *NULL_COLUMNS,
    ):
        if c not in out.columns:
            out = out.with_columns(pl.lit(None, dtype=pl.Float64).alias(c))
    out = out.with_columns(
        [
            pl.when(has_t).then(pl.col(c)).alias(c)
            for c in ("delta_lo", "delta_hi", "susceptibility_lo", "susceptibility_hi")
        ]
        + [pl.when(has_t).then(pl.col(c).fill_nan(None)).alias(c) for c in NULL_COLUMNS]
    )
    order = pl.col("slot").replace_strict(
        {"all": 0, "first": 1, "last": 2}, default=3, return_dtype=pl.Int32
    )
    return (
        out.with_columns(_o=order)
        .sort("benchmark", "judge", "perturbation", "_o")
        .select(EFFECT_COLUMNS)
    )


def _ci_name(col: str) -> str:
    """``lo_delta`` or ``delta_lo`` (polars' pivot naming) -> ``delta_lo``."""
    for side in ("lo", "hi"):
        for metric in ("delta", "rr", "susceptibility"):
            if col in (f"{side}_{metric}", f"{metric}_{side}"):
                return f"{metric}_{side}"
    return col
