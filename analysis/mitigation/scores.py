"""Score-mode calibration: BPC, MEC, their combination, and BPDE (Wang et al. 2023).

In score mode (``[comparison] mode = "score"``) the judge gives each of the two answers a
score from 1 to 10 (``slot_scores`` in the judgments, slot order). Wang et al., "Large
Language Models are not Fair Evaluators" (2023), Section 3:

- **MEC** (multiple evidence calibration): ``k`` evidence-first samples of the same order
  (``repetitions = k`` at temperature > 0; one request with ``n = k`` where the backend
  allows), each answer's score averaged over them; a verdict per order (so its position
  bias is read per order, as for one sample: ``score``).
- **BPC** (balanced position calibration): both orders; each answer's final score is the
  mean of its scores in the first and in the second position.
- **MEC + BPC**: ``k`` samples in each order, each answer's scores averaged within each
  order over the valid samples, then the two positions' means averaged (the mean of all
  ``2k`` when every sample is valid; failed samples never reweight the positions).
- **BPDE** (balanced position diversity entropy): the entropy of the ``2k`` normalised
  outcomes (win/tie/loss from the candidate's side) of a pair; the pairs of highest
  entropy are the ones to give to people (HITLC, top 20 % in the paper). Computed by
  :func:`voirdire.analysis.mitigation.bpde.bpde` over :func:`sample_verdicts`.

Verdicts are written from the candidate's side (``win``, ``tie``, ``loss``; ``undecided``
when an order used has no sample with both scores), as in ``docs/mitigation.md``. Every function is a pure
polars function, table in, table out.
"""

from __future__ import annotations

import polars as pl

from voirdire.analysis.mitigation.registry import register_strategy
from voirdire.analysis.mitigation.verdicts import COMPARISON_KEYS
from voirdire.analysis.position.pairing import candidate_first

#: Columns of :func:`score_samples`.
SAMPLE_COLUMNS = [
    *COMPARISON_KEYS,
    "permutation",
    "repetition",
    "candidate_first",
    "candidate_score",
    "reference_score",
    "outcome",
]
#: Columns of the final-verdict tables of averaged scores (:func:`mean_score_verdicts`).
SCORE_VERDICT_COLUMNS = [
    *COMPARISON_KEYS,
    "candidate_score",
    "reference_score",
    "verdict",
    "side",
    "queries",
]
#: The score strategies by their registered names
#: (the ``score`` strategies of :mod:`voirdire.analysis.mitigation.registry`): (orders: ``each`` = a
#: verdict per order, ``both`` = the two positions averaged; samples per order: ``None`` =
#: all repetitions).
CALIBRATIONS: dict[str, tuple[str, int | None]] = {
    "score-single": ("each", 1),
    "bpc": ("both", 1),
    "mec": ("each", None),
    "mec+bpc": ("both", None),
}


def _outcome(c: pl.Expr, r: pl.Expr) -> pl.Expr:
    return (
        pl.when(c.is_null() | r.is_null())
        .then(None)
        .when(c > r)
        .then(pl.lit("win"))
        .when(c < r)
        .then(pl.lit("loss"))
        .otherwise(pl.lit("tie"))
    )


def score_samples(judgments: pl.DataFrame) -> pl.DataFrame:
    """One row per score-mode judgment, scores written per model.

    Args:
        judgments: judgments (``voirdire.schema.JUDGMENT_SCHEMA``); rows with
            ``mode == "score"`` are read: ``shown`` (list[str], slot order),
            ``slot_scores`` (list[f64] or null), ``permutation``, ``repetition``.

    Returns:
        :data:`SAMPLE_COLUMNS`: ``candidate_first`` (bool: the candidate was in slot A),
        ``candidate_score`` / ``reference_score`` (f64, 1-10; null when the judgment has no
        scores), ``outcome`` (``win``/``tie``/``loss`` from the candidate's side, null when
        failed).

    Raises:
        ValueError: no score-mode judgment in the table.
    """
    rows = judgments.filter(pl.col("mode") == "score")
    if rows.height == 0:
        raise ValueError(
            'no score-mode judgments (a job with [comparison] mode = "score")'
        )
    first = candidate_first()
    a, b = (
        pl.col("slot_scores").list.get(0, null_on_oob=True),
        pl.col("slot_scores").list.get(1, null_on_oob=True),
    )
    return (
        rows.with_columns(
            candidate_first=first,
            candidate_score=pl.when(first).then(a).otherwise(b),
            reference_score=pl.when(first).then(b).otherwise(a),
        )
        .with_columns(
            outcome=_outcome(pl.col("candidate_score"), pl.col("reference_score"))
        )
        .select(SAMPLE_COLUMNS)
    )


def _order_means(s: pl.DataFrame) -> pl.DataFrame:
    """Per pair and order (``candidate_first``): each answer's mean score over the order's
    samples that have both scores (null when none has), ``samples`` (all, failed included)."""
    ok = (
        pl.col("candidate_score").is_not_null()
        & pl.col("reference_score").is_not_null()
    )
    return s.group_by([*COMPARISON_KEYS, "candidate_first"]).agg(
        candidate_score=pl.col("candidate_score").filter(ok).mean(),
        reference_score=pl.col("reference_score").filter(ok).mean(),
        samples=pl.len().cast(pl.Int64),
    )


def mean_score_verdicts(
    samples: pl.DataFrame, *, orders: str = "both", per_order: int | None = None
) -> pl.DataFrame:
    """Final verdicts from averaged scores (Wang et al. 2023, Section 3).

    Each answer's score is first averaged within each order over that order's valid samples
    (repetitions 1..``per_order``; a sample is valid when it has both scores). Then:

    - ``orders="each"`` (no calibration, or MEC alone): one verdict per pair *and order*,
      from that order's means; ``side`` 0 (candidate shown first) or 1, so the
      evaluation reads PC, PF and the flip rate per order as for ``single``.
    - ``orders="both"`` (BPC, MEC + BPC): one verdict per pair from each answer's mean of
      its two positions' means (BPC: "the average of the two scores it receives in the two
      positions"); ``side`` null (order-invariant). A pair with an order that has no
      valid sample (or is absent) is ``undecided``: a failed swap never falls back to the
      one biased order, and failed samples never reweight the positions.

    Args:
        samples: :func:`score_samples` output.
        orders: ``"both"`` or ``"each"``.
        per_order: samples used per order (repetitions 1..k); ``None``: all (MEC).

    Returns:
        :data:`SCORE_VERDICT_COLUMNS`: ``candidate_score`` / ``reference_score`` (f64, the means
        above; null when undecided), ``verdict`` (``win``/``tie``/``loss``/``undecided``),
        ``side`` (i64 or null) and ``queries`` (int: samples spent on this verdict,
        failed ones included: the cost).

    Raises:
        ValueError: ``orders`` not ``both`` or ``each``; ``per_order`` < 1.
    """
    if orders not in ("both", "each"):
        raise ValueError(f"orders must be 'both' or 'each', not {orders!r}")
    if per_order is not None and per_order < 1:
        raise ValueError(f"per_order must be >= 1, not {per_order}")
    s = (
        samples
        if per_order is None
        else samples.filter(pl.col("repetition") <= per_order)
    )
    means = _order_means(s)
    if orders == "each":
        out = means.with_columns(
            side=pl.when(pl.col("candidate_first")).then(0).otherwise(1).cast(pl.Int64),
            queries=pl.col("samples"),
        )
    else:
        both = pl.col("candidate_first").n_unique() == 2
        decided = (
            both
            & pl.col("candidate_score").is_not_null().all()
            & pl.col("reference_score").is_not_null().all()
        )
        out = means.group_by(COMPARISON_KEYS).agg(
            candidate_score=pl.when(decided).then(pl.col("candidate_score").mean()),
            reference_score=pl.when(decided).then(pl.col("reference_score").mean()),
            queries=pl.col("samples").sum(),
            side=pl.lit(None, dtype=pl.Int64),
        )
    return (
        out.with_columns(
            verdict=_outcome(
                pl.col("candidate_score"), pl.col("reference_score")
            ).fill_null("undecided")
        )
        .select(SCORE_VERDICT_COLUMNS)
        .sort([*COMPARISON_KEYS, "side"], nulls_last=True)
    )


def strategy_verdicts(judgments: pl.DataFrame, strategy: str) -> pl.DataFrame:
    """The final verdicts of a named score strategy (:data:`CALIBRATIONS`): ``score-single``
    (one sample per order, a verdict per order: no calibration), ``bpc``, ``mec`` (k
    samples per order, a verdict per order), ``mec+bpc``.

    Raises:
        ValueError: unknown strategy, no score-mode judgments, or ``bpc``/``mec+bpc`` on a
            job asked in one order only.
    """
    if strategy not in CALIBRATIONS:
        raise ValueError(
            f"unknown score strategy {strategy!r} (known: {', '.join(CALIBRATIONS)})"
        )
    orders, k = CALIBRATIONS[strategy]
    samples = score_samples(judgments)
    if orders == "both" and samples.get_column("permutation").n_unique() < 2:
        raise ValueError(f'{strategy} needs both orders (permutations = "both")')
    return mean_score_verdicts(samples, orders=orders, per_order=k)


def sample_verdicts(judgments: pl.DataFrame) -> pl.DataFrame:
    """Each score-mode sample as a verdict table row (``voirdire.analysis.mitigation.verdicts``'s
    :data:`~voirdire.analysis.mitigation.verdicts.VERDICT_COLUMNS`): ``verdict`` = the sample's
    outcome (``undecided`` when it has no scores), ``queries`` 1, ``side`` 0 when
    the candidate was shown first else 1, ``repetition``. BPDE over these rows is Wang et
    al.'s entropy of the 2k outcomes of MEC + BPC (:func:`voirdire.analysis.mitigation.bpde.bpde`).

    Raises:
        ValueError: no score-mode judgment in the table.
    """
    s = score_samples(judgments)
    return s.select(
        *COMPARISON_KEYS,
        verdict=pl.col("outcome").fill_null("undecided"),
        queries=pl.lit(1, dtype=pl.Int64),
        side=pl.when(pl.col("candidate_first")).then(0).otherwise(1).cast(pl.Int64),
        repetition=pl.col("repetition").cast(pl.Int64),
    )


@register_strategy(
    "score-single",
    needs=("slot_scores",),
    doc="score mode, one sample per order, a verdict per order (no calibration; 1 query per verdict)",
    default=True,
    score=True,
)
def score_single(judgments: pl.DataFrame) -> pl.DataFrame:
    """Strategy ``score-single``: one sample per order, a verdict per order (no calibration; 1 query per verdict)."""
    return strategy_verdicts(judgments, "score-single")


@register_strategy(
    "bpc",
    needs=("slot_scores",),
    doc="score mode, both orders: each answer's mean score over its positions (Wang et al.; 2 queries)",
    default=True,
    score=True,
    both_orders=True,
)
def bpc(judgments: pl.DataFrame) -> pl.DataFrame:
    """Strategy ``bpc``: both orders, each answer's mean score over its positions (2 queries)."""
    return strategy_verdicts(judgments, "bpc")


@register_strategy(
    "mec",
    needs=("slot_scores",),
    doc="score mode, k evidence samples averaged within each order, a verdict per order (Wang et al.; k queries)",
    default=True,
    score=True,
)
def mec(judgments: pl.DataFrame) -> pl.DataFrame:
    """Strategy ``mec``: k evidence samples averaged within each order, a verdict per order (k queries)."""
    return strategy_verdicts(judgments, "mec")


@register_strategy(
    "mec+bpc",
    needs=("slot_scores",),
    doc="score mode, k samples per order averaged, then the two positions' means (Wang et al.; 2k queries)",
    default=True,
    score=True,
    both_orders=True,
)
def mec_bpc(judgments: pl.DataFrame) -> pl.DataFrame:
    """Strategy ``mec+bpc``: k samples per order averaged, then the two positions' means (2k queries)."""
    return strategy_verdicts(judgments, "mec+bpc")
