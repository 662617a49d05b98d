"""Cohen's kappa between the two passes: the dual-pass health metric and its gate.

Source: ``docs/mitigation.md`` (the contract ``spec/mitigation.md``, *Evaluation against a
reference*): a practitioners' report on dual-pass judging logs Cohen's kappa over
{win, tie, loss} **between the verdicts of the original and of the swapped order**, pair by
pair, and stops trusting a judge (or its template) for a task below ``kappa = 0.6``. It
needs no reference. It is *not* kappa against a reference (human labels or a reference
judge), which :mod:`voirdire.analysis.mitigation.evaluation` reports as an agreement figure without a
gate.

For one judge, each pair (question, candidate, reference, repetition) whose two orders both
have a decided verdict (normalised to the candidate: :func:`~voirdire.analysis.mitigation.
verdicts.normalise`) adds one count to a 3 × 3 table ``T[v_first, v_second]`` (rows: the verdict with
the candidate shown first; columns: shown second). Kappa (Cohen 1960) is computed from
``T`` by the formula of ``statsmodels.stats.inter_rater.cohens_kappa`` (simple kappa,
categories neither pass used dropped), vectorised over the bootstrap replicates by
:func:`~voirdire.analysis.stats.agreement.kappa_rows` with the same floating-point operations in the same order: bit-identical
to statsmodels on tables of integer counts (every table the bootstrap makes), checked on
random tables in ``tests/test_pass_kappa.py``. A judge free of position effects
that is also stable gives the same verdict in both orders (kappa near 1); a judge that
follows the slot flips between orders (kappa near or below 0). The interval is the
question-cluster bootstrap of :func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`,
the statistic :func:`~voirdire.analysis.stats.agreement.kappa_statistic`.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from voirdire.analysis.key_sort import sort_by_keys
from voirdire.analysis.mitigation.verdicts import normalise
from voirdire.analysis.position.pairing import verdict_pairs
from voirdire.analysis.settings import DEFAULTS
from voirdire.analysis.stats import draws
from voirdire.analysis.stats.agreement import kappa_statistic
from voirdire.analysis.stats.bootstrap import cluster_bootstrap, in_clusters

__all__ = [
    "KAPPA_GATE",
    "PASS_CONF",
    "PASS_KAPPA_COLUMNS",
    "pass_confusion",
    "gate",
    "pass_kappa",
    "prepare_pass_kappa",
]

#: The practitioners' gate on the inter-pass kappa: below it the judge is not trusted
#: (declared with the analysis' defaults: :class:`voirdire.analysis.settings.AnalysisSettings`).
KAPPA_GATE = DEFAULTS.kappa_gate
CATS = ("win", "tie", "loss")
#: Count columns of the inter-pass table: ``p_<first>_<second>`` (row-major over CATS).
PASS_CONF = [f"p_{a}_{b}" for a in CATS for b in CATS]
#: Columns of :func:`pass_kappa` (also added to ``metrics/judge_metrics.csv``).
PASS_KAPPA_COLUMNS = [
    "benchmark",
    "judge",
    "pass_kappa",
    "pass_kappa_lo",
    "pass_kappa_hi",
    "pass_kappa_pairs",
    "pass_kappa_gate",
]


def pass_confusion(pairs: pl.DataFrame, by: Sequence[str] = ("judge",)) -> pl.DataFrame:
    """Per (``benchmark``, *by*, ``question_id``), the inter-pass table of decided pairs.

    Args:
        pairs: the pairing table of a per-order verdict table
            (:func:`~voirdire.analysis.position.pairing.verdict_pairs`: ``v1``/``v2`` the
            verdicts with the candidate first / second, e.g. of
            :func:`~voirdire.analysis.mitigation.verdicts.normalise`'s output).
        by: grouping columns besides ``benchmark`` (must be in ``pairs``).

    Returns:
        ``benchmark``, *by*, ``question_id``, :data:`PASS_CONF` (float counts of pairs
        with (first, second) verdicts), ``pass_pairs`` (float: their sum). Pairs with an
        undecided or a missing order are left out (the flip rate counts them as failed).
    """
    keys = ["benchmark", *by, "question_id"]
    cnt = {
        f"p_{a}_{b}": ((pl.col("v1") == a) & (pl.col("v2") == b)).sum().cast(pl.Float64)
        for a in CATS
        for b in CATS
    }
    out = pairs.group_by(keys).agg(**cnt)
    return sort_by_keys(out.with_columns(pass_pairs=pl.sum_horizontal(PASS_CONF)), keys)


def gate(col: str = "pass_kappa") -> pl.Expr:
    """``"pass"`` when ``col`` ≥ :data:`KAPPA_GATE`, ``"fail"`` below, null when undefined."""
    k = pl.col(col)
    return (
        pl.when(k.is_null() | k.is_nan())
        .then(None)
        .when(k >= KAPPA_GATE)
        .then(pl.lit("pass"))
        .otherwise(pl.lit("fail"))
    )


def pass_kappa(
    judgments: pl.DataFrame,
    *,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    clusters: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The inter-pass kappa of every judge of a pairwise job (see the module docstring).

    Args:
        judgments: JUDGMENT_SCHEMA rows (control rows: pass
            :func:`~voirdire.analysis.biases.effects.control_rows` first); list-wise rows are
            ignored.
        replicates, level, seed: of the question-cluster bootstrap.
        clusters: the benchmark's declared clusters (``benchmark``, ``question_id``,
            ``cluster``: :func:`~voirdire.analysis.position.clusters.job_clusters`, e.g. an
            audited log's questions, each shared by every model's item), drawn instead of the
            ``question_id`` values (:func:`~voirdire.analysis.position.uncertainty.in_clusters`),
            as PC, PF and ``rank`` draw them; None: each ``question_id`` is its own.

    Returns:
        :data:`PASS_KAPPA_COLUMNS`, one row per (benchmark, judge) with pairwise rows:
        ``pass_kappa`` (float; null when undefined, e.g. no pair judged in both orders),
        ``pass_kappa_lo``/``pass_kappa_hi`` (percentile interval), ``pass_kappa_pairs``
        (int: pairs decided in both orders, repetitions counted apart),
        ``pass_kappa_gate`` (str ``pass``/``fail``, null when undefined).
    """
    schema = {"benchmark": pl.String, "judge": pl.String, "pass_kappa": pl.Float64, "pass_kappa_lo": pl.Float64,
              "pass_kappa_hi": pl.Float64, "pass_kappa_pairs": pl.Int64, "pass_kappa_gate": pl.String}  # fmt: skip
    v = normalise(judgments)
    if v.height == 0:
        return pl.DataFrame(schema=schema)
    sums = pass_confusion(verdict_pairs(v))
    ci = cluster_bootstrap(
        in_clusters(sums, clusters),
        PASS_CONF,
        {"pass_kappa": kappa_statistic(PASS_CONF)},
        groups=["judge"],
        replicates=replicates,
        level=level,
        seed=seed,
    )
    n = sums.group_by("benchmark", "judge").agg(
        pass_kappa_pairs=pl.col("pass_pairs").sum().cast(pl.Int64)
    )
    judges = v.select("benchmark", "judge").unique()
    out = judges.join(
        ci.select(
            "benchmark",
            "judge",
            pass_kappa="estimate",
            pass_kappa_lo="lo",
            pass_kappa_hi="hi",
        ),
        on=["benchmark", "judge"],
        how="left",
    )
    out = out.join(n, on=["benchmark", "judge"], how="left").with_columns(
        [
            pl.col(c).fill_nan(None)
            for c in ("pass_kappa", "pass_kappa_lo", "pass_kappa_hi")
        ]
        + [pl.col("pass_kappa_pairs").fill_null(0)]
    )
    return (
        out.with_columns(pass_kappa_gate=gate())
        .select(list(schema))
        .cast(schema)
        .sort("benchmark", "judge")
    )  # type: ignore[arg-type]


def prepare_pass_kappa(
    questions: int, *, replicates: int = 1000, seed: int = 0
) -> bool:
    """Draw ahead, in a thread, the bootstrap counts :func:`pass_kappa` will take for one
    benchmark of ``questions`` questions with pairwise rows
    (:func:`voirdire.analysis.stats.draws.prepare`: its one stratum is the benchmark),
    so that a run does it while its judges answer. Nothing changes in the figures: where
    the judgments hold another number of questions, the bootstrap draws for itself.

    Returns:
        Whether counts are being drawn (False: too many to keep, or no question).
    """
    return draws.prepare(seed, [questions], replicates)
