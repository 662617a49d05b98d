"""Cohen's kappa between the two passes: the dual-pass health metric and its gate.

Source: ``docs/mitigation.md`` (the contract ``spec/mitigation.md``, *Evaluation against a
reference*): a practitioners' report on dual-pass judging logs Cohen's kappa over
{win, tie, loss} **between the verdicts of the original and of the swapped order**, pair by
pair, and stops trusting a judge (or its template) for a task below ``kappa = 0.6``. It
needs no reference. It is *not* kappa against a reference (people's labels or a reference
judge), which :mod:`voirdire.analysis.mitigation.evaluation` reports as an agreement figure without a
gate.

For one judge, each pair (question, candidate, reference, repetition) whose two orders both
have a decided verdict (normalised to the candidate: :func:`~voirdire.analysis.mitigation.
verdicts.normalise`) adds one count to a 3 × 3 table ``T[v_first, v_second]`` (rows: the verdict with
the candidate shown first; columns: shown second). Kappa (Cohen 1960) is computed from
``T`` by the formula of ``statsmodels.stats.inter_rater.cohens_kappa`` (simple kappa,
categories neither pass used dropped), vectorised over the bootstrap replicates by
:func:`kappa_rows` with the same floating-point operations in the same order: bit-identical
to statsmodels on tables of integer counts (every table the bootstrap makes), checked on
random tables in ``tests/test_pass_kappa.py``. A judge free of position effects
that is also stable gives the same verdict in both orders (kappa near 1); a judge that
follows the slot flips between orders (kappa near or below 0). The interval is the
question-cluster bootstrap of :func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`,
the statistic :func:`kappa_rows` over the summed cells.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import polars as pl

from voirdire.analysis.mitigation.verdicts import VERDICT_KEYS, normalise
from voirdire.analysis.position.uncertainty import cluster_bootstrap

__all__ = [
    "KAPPA_GATE",
    "PASS_CONF",
    "PASS_KAPPA_COLUMNS",
    "pass_confusion",
    "gate",
    "kappa_rows",
    "pass_kappa",
]

#: The practitioners' gate on the inter-pass kappa: below it the judge is not trusted.
KAPPA_GATE = 0.6
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


def pass_confusion(
    verdicts: pl.DataFrame, by: Sequence[str] = ("judge",)
) -> pl.DataFrame:
    """Per (``benchmark``, *by*, ``question_id``), the inter-pass table of decided pairs.

    Args:
        verdicts: a per-order verdict table (``permutation`` 0/1: the candidate first /
            second; :func:`~voirdire.analysis.mitigation.verdicts.normalise`'s output, or a
            strategy's with *by* columns such as ``strategy``). Rows without
            ``permutation`` (combined orders) have no pairs.
        by: grouping columns besides ``benchmark`` (must be in ``verdicts``).

    Returns:
        ``benchmark``, *by*, ``question_id``, :data:`PASS_CONF` (float counts of pairs
        with (first, second) verdicts), ``pass_pairs`` (float: their sum). Pairs with an
        undecided or a missing order are left out (the flip rate counts them as failed).
    """
    keys = ["benchmark", *by, "question_id"]
    pair_keys = list(
        dict.fromkeys([*VERDICT_KEYS, *by])
    )  # one pair: its two orders share these
    v = verdicts.filter(pl.col("permutation").is_not_null())
    po = v.group_by(pair_keys).agg(
        v1=pl.col("verdict").filter(pl.col("permutation") == 0).first(),
        v2=pl.col("verdict").filter(pl.col("permutation") == 1).first(),
    )
    cnt = {
        f"p_{a}_{b}": ((pl.col("v1") == a) & (pl.col("v2") == b)).sum().cast(pl.Float64)
        for a in CATS
        for b in CATS
    }
    out = po.group_by(keys).agg(**cnt)
    return out.with_columns(pass_pairs=pl.sum_horizontal(PASS_CONF)).sort(keys)


def kappa_rows(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each k × k table of counts (rows: rater 1), as
    ``statsmodels.stats.inter_rater.cohens_kappa(t, return_results=False)`` after dropping
    the categories neither rater used (:func:`~voirdire.analysis.position.agreement.cohen_kappa`).

    ``tables``: (R, k, k) array, k ≤ 7; returns an (R,) float array, NaN where fewer than two
    categories are used (no counts, or chance agreement 1: kappa undefined). Formula
    (Cohen 1960): ``(agree / n − pe) / (1 − pe)``, ``pe = Σ_i (row_i / n)(col_i / n)``.
    The sums run in statsmodels' order (numpy sums fewer than 8 terms one by one); an
    unused category adds an exact 0.0. So the result is bit-identical on integer counts,
    whose sums are exact in any order; on fractional counts the last digit may differ.

    Raises:
        ValueError: ``tables`` not (R, k, k) with 2 ≤ k ≤ 7.
    """
    t = np.asarray(tables, dtype=float)
    if t.ndim != 3 or t.shape[1] != t.shape[2] or not 2 <= t.shape[1] <= 7:
        raise ValueError(
            f"kappa_rows: tables of shape (R, k, k), 2 <= k <= 7; got {t.shape}"
        )
    k = t.shape[1]
    rows, cols = t.sum(2), t.sum(1)  # integer counts: exact
    nobs = rows.sum(1)
    agree = np.zeros(len(t))
    pe = np.zeros(len(t))
    with np.errstate(invalid="ignore", divide="ignore"):
        for i in range(k):
            agree = agree + t[:, i, i]
            pe = pe + (cols[:, i] / nobs) * (rows[:, i] / nobs)
        kappa = (agree / nobs - pe) / (1 - pe)
    used = ((rows + cols) > 0).sum(1)
    return np.where(used >= 2, kappa, np.nan)


def kappa_statistic(
    columns: Sequence[str],
) -> Callable[[Mapping[str, np.ndarray]], np.ndarray]:
    """The statistic of :func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`
    for kappa: the k × k table of ``columns`` (row-major, k² of them) summed over the cells,
    then :func:`kappa_rows`. Returns ``{value: (R, U) array} -> (R,) array``; the same
    figures as :func:`~voirdire.analysis.position.agreement.kappa_statistic` (a statsmodels
    call per replicate) on the bootstrap's integer counts."""
    cols = list(columns)
    k = int(round(len(cols) ** 0.5))

    def kappa(s: Mapping[str, np.ndarray]) -> np.ndarray:
        t = np.stack([np.asarray(s[c]).sum(1) for c in cols], axis=1)
        return kappa_rows(t.reshape(-1, k, k))

    return kappa


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
) -> pl.DataFrame:
    """The inter-pass kappa of every judge of a pairwise job (see the module docstring).

    Args:
        judgments: JUDGMENT_SCHEMA rows (control rows: pass
            :func:`~voirdire.analysis.biases.effects.control_rows` first); list-wise rows are
            ignored.
        replicates, level, seed: of the question-cluster bootstrap.

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
    sums = pass_confusion(v)
    ci = cluster_bootstrap(
        sums,
        PASS_CONF,
        {"pass_kappa": kappa_statistic(PASS_CONF)},  # vectorised (kappa_rows)
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
