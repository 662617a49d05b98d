"""Perturbed judgments next to their controls: the verdicts and scores the CALM figures read.

A perturbed row pairs with the control row of the same (benchmark, judge, instance_id,
permutation, repetition) (:data:`CONTROL_KEYS`), so each comparison holds the order of the
answers fixed and position and content effects stay apart (Ye et al., "Justice or
Prejudice? Quantifying Biases in LLM-as-a-Judge", CALM 2024; ``docs/bias-metrics.md``).
The conventions (verdicts, scores, accuracy) are those of
:mod:`voirdire.analysis.biases.effects`, which computes the figures from :func:`paired`
and re-exports the functions and :data:`CONTROL_KEYS`.
"""

from __future__ import annotations

import polars as pl

from voirdire.core import LETTERS

__all__ = [
    "CONTROL",
    "CONTROL_KEYS",
    "PERTURBATION_COLUMNS",
    "control_rows",
    "has_perturbations",
    "verdict",
    "paired",
    "consistency_rate",
]

#: The keys on which a perturbed row meets its control row.
CONTROL_KEYS = ["benchmark", "judge", "instance_id", "permutation", "repetition"]
#: The columns a perturbed judgment carries (JUDGMENT_SCHEMA).
PERTURBATION_COLUMNS = [
    "perturbation",
    "perturbation_kind",
    "perturbation_param",
    "target",
    "target_rule",
    "target_slot",
    "better",
]
#: The ``perturbation`` value of the unperturbed rows.
CONTROL = "control"


def control_rows(judgments: pl.DataFrame) -> pl.DataFrame:
    """The unperturbed rows (``perturbation == "control"``); all rows of a table without the
    column. Position-bias metrics read these only: a perturbed row would pair with the
    control row of the other order as if it were the same query."""
    return (
        judgments.filter(pl.col("perturbation") == CONTROL)
        if "perturbation" in judgments.columns
        else judgments
    )


def has_perturbations(judgments: pl.DataFrame) -> bool:
    """True when ``judgments`` has the perturbation columns and at least one perturbed row."""
    return (
        "perturbation" in judgments.columns
        and judgments.filter(pl.col("perturbation") != CONTROL).height > 0
    )


def verdict() -> pl.Expr:
    """The verdict of a judgment row as a string (see the module's conventions); null when failed."""
    failed = pl.col("failed").fill_null(False) | pl.col("extracted").is_null()
    return (
        pl.when(failed)
        .then(None)
        .when(pl.col("tie").fill_null(False))
        .then(pl.lit("<tie>"))
        .otherwise(
            pl.coalesce(pl.col("chosen"), pl.format("slot:{}", pl.col("extracted")))
        )
    )


def paired(judgments: pl.DataFrame) -> pl.DataFrame:
    """Each perturbed row next to its control row.

    Args:
        judgments: JUDGMENT_SCHEMA rows with the perturbation columns.

    Returns:
        One row per perturbed row that has a control: :data:`CONTROL_KEYS`, ``question_id``,
        the perturbation columns, ``shown`` (list[str]), ``slot`` (``"first"`` when the
        target is in slot ``A``, ``"last"`` when in the last slot, else ``"middle"``; null
        without a target), ``v_control``/``v_perturbed`` (str verdicts, null when failed),
        ``failed`` (bool: either side failed), ``unchanged`` (float 0/1), ``s_control``/
        ``s_perturbed`` (float: the target's score), ``c_control``/``c_perturbed`` (float:
        correctness, null when ``better`` is unknown; after a ``fallacy`` injection the
        correct verdict is the other response, CALM's accuracy for fallacy-oversight).

    Raises:
        ValueError: a perturbation column is missing.
    """
    missing = [c for c in PERTURBATION_COLUMNS if c not in judgments.columns]
    if missing:
        raise ValueError(f"judgments lack the perturbation columns {missing}")
    # one chunk: polars 2.1 panics (binview index assertion) on this plan over string
    # columns of several chunks, as tables concatenated from many raw files are
    base = judgments.rechunk().lazy().with_columns(_v=verdict())
    ctrl = (
        base.filter(pl.col("perturbation") == CONTROL)
        .select(*CONTROL_KEYS, pl.col("_v").alias("v_control"))
        .unique(CONTROL_KEYS, keep="first")
    )
    pert = base.filter(pl.col("perturbation") != CONTROL)
    last = pl.col("shown").list.len().sub(1)
    slot_idx = pl.col("target_slot").replace_strict(
        {x: i for i, x in enumerate(LETTERS)}, default=None, return_dtype=pl.Int64
    )
    joined = (
        pert.join(ctrl, on=CONTROL_KEYS, how="inner")
        .select(
            *CONTROL_KEYS,
            "question_id",
            *[c for c in PERTURBATION_COLUMNS if c not in ("perturbation",)],
            "perturbation",
            "shown",
            slot=pl.when(pl.col("target_slot").is_null())
            .then(None)
            .when(slot_idx == 0)
            .then(pl.lit("first"))
            .when(slot_idx == last)
            .then(pl.lit("last"))
            .otherwise(pl.lit("middle")),
            v_control=pl.col("v_control"),
            v_perturbed=pl.col("_v"),
        )
        .with_columns(
            failed=pl.col("v_control").is_null() | pl.col("v_perturbed").is_null()
        )
        .collect()
    )
    return joined.with_columns(
        unchanged=pl.when(pl.col("failed"))
        .then(None)
        .otherwise((pl.col("v_control") == pl.col("v_perturbed")).cast(pl.Float64)),
        s_control=_score_of("v_control", pl.col("target")),
        s_perturbed=_score_of("v_perturbed", pl.col("target")),
        c_control=_score_of("v_control", pl.col("better")),
        c_perturbed=pl.when(
            bias_record_columns(pl.col("perturbation_kind"))["damages_target"]
        )
        .then(_other_score("v_perturbed", pl.col("better")))
        .otherwise(_score_of("v_perturbed", pl.col("better"))),
    )


def _score_of(col: str, model: pl.Expr) -> pl.Expr:
    """Score of ``model`` in verdict column ``col``: 1 chosen, 1/2 tie, 0 else; null when
    either is null."""
    v = pl.col(col)
    return (
        pl.when(v.is_null() | model.is_null())
        .then(None)
        .when(v == "<tie>")
        .then(0.5)
        .otherwise((v == model).cast(pl.Float64))
    )


def _other_score(col: str, model: pl.Expr) -> pl.Expr:
    """Score of "any answer but ``model``" (pairwise: the other response)."""
    v = pl.col(col)
    return (
        pl.when(v.is_null() | model.is_null())
        .then(None)
        .when(v == "<tie>")
        .then(0.5)
        .otherwise(((v != model) & ~v.str.starts_with("slot:")).cast(pl.Float64))
    )


def consistency_rate(judgments: pl.DataFrame) -> pl.DataFrame:
    """CALM's consistency rate CR: the control asked twice (repetition 1 against 2), the noise floor.

    ``CR = (1/|D|) Σ 1[y_i = y_i']`` over the (instance, order) items of the control whose
    two askings both have a verdict (``docs/bias-metrics.md``; CALM draws CR as a dashed
    line beside RR).

    Returns:
        Columns ``benchmark``, ``judge``, ``cr_n`` (int items), ``cr`` (float; null when the
        job asked each query fewer than twice).
    """
    keys = ["benchmark", "judge", "instance_id", "permutation"]
    ctrl = judgments.rechunk().lazy()  # one chunk: see paired()
    if "perturbation" in judgments.columns:
        ctrl = ctrl.filter(pl.col("perturbation") == CONTROL)
    ctrl = ctrl.with_columns(_v=verdict())
    r1 = (
        ctrl.filter(pl.col("repetition") == 1)
        .select(*keys, v1="_v")
        .unique(keys, keep="first")
    )
    r2 = (
        ctrl.filter(pl.col("repetition") == 2)
        .select(*keys, v2="_v")
        .unique(keys, keep="first")
    )
    judges = ctrl.select("benchmark", "judge").unique()
    both = r1.join(r2, on=keys, how="inner").filter(
        pl.col("v1").is_not_null() & pl.col("v2").is_not_null()
    )
    cr = both.group_by("benchmark", "judge").agg(
        cr_n=pl.len().cast(pl.Int64), cr=(pl.col("v1") == pl.col("v2")).mean()
    )
    return (
        judges.join(cr, on=["benchmark", "judge"], how="left")
        .with_columns(pl.col("cr_n").fill_null(0))
        .sort("benchmark", "judge")
        .collect()
    )


def bias_record_columns(kinds: pl.Expr) -> dict[str, pl.Expr]:
    """What each perturbation kind's :class:`~voirdire.benchmarks.biases.bias.BiasType`
    record says, as expressions over the column ``kinds``: ``metric`` (str:
    ``"robustness"``, ``"accuracy"`` or ``"error_rate"``) and ``damages_target`` (bool).

    The records are read from the bias registry without importing anything a name could
    point at (``allow_import=False``: a results directory is data). A kind this process
    does not know (a directory from a session that registered its own bias) reads as a
    robustness bias that does not damage its target, the record's defaults.
    """
    from voirdire.benchmarks.biases.bias import BiasType
    from voirdire.benchmarks.biases.registry import BIASES
    from voirdire.core import ConfigError

    metric: dict[str, str] = {}
    damages: dict[str, bool] = {}
    for name in BIASES.names():
        try:
            rec = BIASES.get(name, allow_import=False)
        except ConfigError:
            continue
        metric[name], damages[name] = rec.metric, rec.damages_target
    default = BiasType.__dataclass_fields__
    return {
        "metric": kinds.replace_strict(
            metric, default=default["metric"].default, return_dtype=pl.String
        ),
        "damages_target": kinds.replace_strict(
            damages, default=default["damages_target"].default, return_dtype=pl.Boolean
        ),
    }
