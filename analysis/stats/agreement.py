"""Agreement between judges: mutual agreement, Cohen's and Fleiss' kappa, disagreement.

Source: ``docs/metrics.md``, *Agreement between judges* (Shi et al., "Judging the Judges",
the cross-judge agreement analysis); kappas from statsmodels
(``statsmodels.stats.inter_rater``: Cohen 1960, Fleiss 1971).

A *query* is ``(benchmark, query_id)`` at one repetition (default: the first; the query id
is judge-independent, so every judge of a table shares it). Every function takes either
the judgments or, as ``ch=``, the output of :func:`choices` computed once. A judge's
*choice* on a query
is its extracted letter; failed judgments have no choice and drop out of every figure
(queries where neither of two judges failed are the pair's *shared* queries). Ties: the
judgment's ``tie`` column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import polars as pl

__all__ = [
    "cohen_kappa",
    "kappa_rows",
    "kappa_statistic",
    "choices",
    "agreement_matrix",
    "fleiss_panel",
    "query_disagreement",
    "disagreement_histogram",
    "majority_share",
]

QKEYS = ["benchmark", "query_id"]


def choices(judgments: pl.DataFrame, repetition: int | None = 1) -> pl.DataFrame:
    """One row per (benchmark, query_id, judge) with a verdict: ``choice`` (str, the
    extracted letter) and ``is_tie`` (bool). ``repetition=None`` keeps every repetition as
    its own query (``query_id`` suffixed ``#k``)."""
    df = judgments.lazy()
    if repetition is not None:
        df = df.filter(pl.col("repetition") == repetition)
    else:
        df = df.with_columns(query_id=pl.format("{}#{}", "query_id", "repetition"))
    ok = ~(pl.col("failed").fill_null(False) | pl.col("extracted").is_null())
    return (
        df.filter(ok)
        .select(
            *QKEYS,
            "judge",
            choice=pl.col("extracted"),
            is_tie=pl.col("tie").fill_null(False),
        )
        .unique([*QKEYS, "judge"], keep="first")
        .collect()
    )


def cohen_kappa(table: np.ndarray) -> float:
    """Cohen's kappa (Cohen 1960; ``statsmodels.stats.inter_rater.cohens_kappa``) of a
    k × k confusion table of counts (rater 1 in rows, rater 2 in columns). Categories
    neither rater used are dropped first; NaN without counts or with one category left
    (chance agreement is 1: kappa undefined)."""
    table = np.asarray(table, dtype=float)
    used = (table.sum(0) + table.sum(1)) > 0
    table = table[np.ix_(used, used)]
    if table.shape[0] < 2:
        return float("nan")
    from statsmodels.stats.inter_rater import cohens_kappa  # lazily: ~1 s of imports

    return float(cohens_kappa(table, return_results=False))


def kappa_rows(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each k × k table of counts (rows: rater 1), as
    ``statsmodels.stats.inter_rater.cohens_kappa(t, return_results=False)`` after dropping
    the categories neither rater used (:func:`cohen_kappa`), for many tables at once.

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
    """A statistic over sums for :func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`:
    the k × k confusion table of ``columns`` (row-major, k² of them) summed over the cells,
    then :func:`kappa_rows` (:func:`cohen_kappa` of every replicate at once; the same
    figures, bit for bit, on the bootstrap's integer counts). Returns ``{value: (R, U) array} -> (R,) array``."""
    cols = list(columns)
    k = int(round(len(cols) ** 0.5))

    def kappa(s: Mapping[str, np.ndarray]) -> np.ndarray:
        t = np.stack([np.asarray(s[c]).sum(1) for c in cols], axis=1).reshape(-1, k, k)
        return kappa_rows(t)

    return kappa


def _cohen(a: np.ndarray, b: np.ndarray, k: int) -> float:
    """Cohen's kappa of two int-coded rating vectors over ``k`` categories."""
    if len(a) == 0:
        return float("nan")
    return cohen_kappa(np.bincount(a * k + b, minlength=k * k).reshape(k, k))


def agreement_matrix(
    judgments: pl.DataFrame,
    repetition: int | None = 1,
    *,
    ch: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Mutual agreement and Cohen's kappa for every ordered pair of judges (diagonal
    included), per benchmark.

    Columns: ``benchmark``, ``judge_a``, ``judge_b`` (str); ``shared`` (int: queries both
    judged); ``agreement`` (float: share of shared queries with identical choices);
    ``shared_no_tie`` and ``agreement_no_tie`` (the same over shared queries where neither
    chose a tie; ours); ``kappa`` (float: Cohen's kappa over the shared queries, categories
    the letters; NaN when undefined). Null agreement when nothing is shared.
    """
    ch = choices(judgments, repetition) if ch is None else ch
    rows = []
    for bench in sorted(ch.get_column("benchmark").unique().to_list()):
        part = ch.filter(pl.col("benchmark") == bench)
        judges = sorted(part.get_column("judge").unique().to_list())
        cats = sorted(part.get_column("choice").unique().to_list())
        k = len(cats)
        part = part.with_columns(
            code=pl.col("choice").replace_strict(
                cats, list(range(k)), return_dtype=pl.Int64
            )
            + pl.when(pl.col("is_tie")).then(k).otherwise(0)
        )
        wide = part.pivot(on="judge", index="query_id", values="code").fill_null(-1)
        cols = {j: wide.get_column(j).to_numpy() for j in judges}
        for i, ja in enumerate(judges):
            for jb in judges[i:]:
                a, b = cols[ja], cols[jb]
                both = (a >= 0) & (b >= 0)
                nt = both & (a < k) & (b < k)
                same = both & (a % k == b % k)
                n, m = int(both.sum()), int(nt.sum())
                agr = float(same.sum()) / n if n else None
                agr_nt = float((same & nt).sum()) / m if m else None
                kap = _cohen(a[both] % k, b[both] % k, k) if n else float("nan")
                rows.append((bench, ja, jb, n, agr, m, agr_nt, kap))
                if ja != jb:
                    rows.append((bench, jb, ja, n, agr, m, agr_nt, kap))
    schema = {
        "benchmark": pl.String,
        "judge_a": pl.String,
        "judge_b": pl.String,
        "shared": pl.Int64,
        "agreement": pl.Float64,
        "shared_no_tie": pl.Int64,
        "agreement_no_tie": pl.Float64,
        "kappa": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort(
        "benchmark", "judge_a", "judge_b"
    )


def fleiss_panel(
    judgments: pl.DataFrame,
    repetition: int | None = 1,
    *,
    ch: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Fleiss' kappa of the whole panel per benchmark, over the queries every judge of the
    benchmark judged (Fleiss' kappa needs the same number of raters per subject).

    Columns: ``benchmark``, ``judges`` (int), ``queries`` (int: complete queries),
    ``kappa`` (float; NaN with fewer than 2 judges or no complete query).
    """
    ch = choices(judgments, repetition) if ch is None else ch
    rows = []
    for bench in sorted(ch.get_column("benchmark").unique().to_list()):
        part = ch.filter(pl.col("benchmark") == bench)
        nj = part.get_column("judge").n_unique()
        counts = (
            part.with_columns(nj=pl.len().over("query_id"))
            .filter(pl.col("nj") == nj)
            .group_by("query_id", "choice")
            .len()
            .sort("query_id", "choice")
            .pivot(on="choice", index="query_id", values="len")
            .fill_null(0)
        )
        # rows and columns in a fixed order: the kappa's float sums, and so its last
        # digits, must not follow group_by's order (which varies between runs)
        table = counts.select(sorted(counts.columns[1:])).to_numpy().astype(float)
        from statsmodels.stats.inter_rater import fleiss_kappa

        kappa = (
            float(fleiss_kappa(table, method="fleiss"))
            if nj >= 2 and table.shape[0] > 0 and table.shape[1] > 1
            else float("nan")
        )
        rows.append((bench, nj, counts.height, kappa))
    return pl.DataFrame(
        rows,
        schema={
            "benchmark": pl.String,
            "judges": pl.Int64,
            "queries": pl.Int64,
            "kappa": pl.Float64,
        },
        orient="row",
    )


def query_disagreement(
    judgments: pl.DataFrame,
    repetition: int | None = 1,
    *,
    ch: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per query: ``judges`` (int: judges with a choice), ``top`` (int: size of the largest
    group of identical choices), ``disagreement`` (int: ``judges − top``) and ``majority``
    (bool: ``top > judges / 2``, a strict majority of the panel's choices agree). Queries
    with fewer than 2 choices are left out. Columns: benchmark, query_id and those."""
    ch = choices(judgments, repetition) if ch is None else ch
    return (
        ch.lazy()
        .group_by(*QKEYS, "choice")
        .agg(c=pl.len())
        .group_by(QKEYS)
        .agg(
            judges=pl.col("c").sum().cast(pl.Int64),
            top=pl.col("c").max().cast(pl.Int64),
        )
        .filter(pl.col("judges") >= 2)
        .with_columns(
            disagreement=pl.col("judges") - pl.col("top"),
            majority=pl.col("top") * 2 > pl.col("judges"),
        )
        .sort(QKEYS)
        .collect()
    )


def disagreement_histogram(per_query: pl.DataFrame) -> pl.DataFrame:
    """Histogram of :func:`query_disagreement` per benchmark: ``disagreement`` (int level),
    ``queries`` (int), ``share`` (float) and ``cumulative_share`` (share of queries at or
    below the level)."""
    return (
        per_query.group_by("benchmark", "disagreement")
        .agg(queries=pl.len().cast(pl.Int64))
        .sort("benchmark", "disagreement")
        .with_columns(
            share=pl.col("queries") / pl.col("queries").sum().over("benchmark")
        )
        .with_columns(cumulative_share=pl.col("share").cum_sum().over("benchmark"))
    )


def majority_share(per_query: pl.DataFrame) -> pl.DataFrame:
    """Share of queries a strict majority of the panel decides, per benchmark: columns
    ``benchmark``, ``queries`` (int), ``majority_share`` (float), ``unanimous_share``
    (float: disagreement 0)."""
    return (
        per_query.group_by("benchmark")
        .agg(
            queries=pl.len().cast(pl.Int64),
            majority_share=pl.col("majority").mean(),
            unanimous_share=(pl.col("disagreement") == 0).mean(),
        )
        .sort("benchmark")
    )
