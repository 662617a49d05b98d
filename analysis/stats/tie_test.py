"""The tie test of "which judge to trust first": two judges compared on the same questions
(:mod:`voirdire.analysis.shared_units`) are told apart by a paired cluster permutation test
(:func:`paired_test`), and each judge's ratio (PC, accuracy) has a percentile cluster
bootstrap interval (:func:`ratio_interval`; the project's clustering by question,
``docs/metrics.md``, *Intervals*). A judge whose p-value against the pick is at least
:data:`TIE_ALPHA` is named as tied with it (:func:`ties_with_pick`). The test's size is
checked on simulated equal judges (``tests/test_shared_units.py``)."""

from __future__ import annotations

import numpy as np
import polars as pl

__all__ = ["TIE_ALPHA", "paired_test", "ratio_interval", "ties_with_pick"]

#: the permutation test's level: a judge whose p-value against the pick is at least this is
#: tied with it
TIE_ALPHA = 0.05
#: the most cluster indices :func:`ratio_interval` draws at once (8 bytes each)
_BLOCK = 1 << 20


def ratio_interval(
    num: np.ndarray, den: np.ndarray, replicates: int, seed: int
) -> tuple:
    """``(estimate, lo, hi)``: Σnum/Σden over clusters (the rows of ``num``, ``den``) and
    its 95 % percentile cluster bootstrap interval (``replicates`` draws of the clusters
    with replacement, seeded); None where undefined (no denominator, under two clusters)."""
    if den.sum() == 0:
        return None, None, None
    est = num.sum() / den.sum()
    if replicates < 2 or len(num) < 2:
        return est, None, None
    rng = np.random.default_rng(seed)
    n = len(num)
    # the draws a block of replicates at a time (the same stream as one (replicates, n)
    # draw, each replicate's sum in the same order): a few MiB, not replicates × n
    block = max(1, _BLOCK // n)
    nums, dens = [], []
    for start in range(0, replicates, block):
        idx = rng.integers(0, n, size=(min(block, replicates - start), n))
        nums.append(num[idx].sum(axis=1))
        dens.append(den[idx].sum(axis=1))
    d = np.concatenate(dens)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.concatenate(nums) / d
    r = r[d > 0]
    if not len(r):
        return est, None, None
    lo, hi = np.quantile(r, [0.025, 0.975])
    return est, float(lo), float(hi)


def paired_test(
    a_num: np.ndarray,
    a_den: np.ndarray,
    b_num: np.ndarray,
    b_den: np.ndarray,
    replicates: int = 2000,
    seed: int = 0,
) -> float:
    """Two judges' key on the same clusters (questions), as a paired cluster permutation
    test: under H0 the two judges are exchangeable within each question, so the labels are
    swapped per question at random and ``|Σa_num/Σa_den − Σb_num/Σb_den|`` recomputed.

    Args:
        a_num, a_den, b_num, b_den: per question (the same order for both judges) the
            numerator and denominator of each judge's ratio (e.g. consistent and valid
            pairs).
        replicates: random relabellings.

    Returns:
        The Monte Carlo p-value ``(1 + #{T* ≥ T}) / (1 + replicates)`` (valid at every
        size: a p-value at most α with probability at most α under H0); 1.0 where a
        ratio is undefined.
    """
    a_num, a_den, b_num, b_den = (
        np.asarray(x, dtype=float) for x in (a_num, a_den, b_num, b_den)
    )
    if a_den.sum() == 0 or b_den.sum() == 0:
        return 1.0
    t = abs(a_num.sum() / a_den.sum() - b_num.sum() / b_den.sum())
    used = (
        a_den + b_den + a_num + b_num
    ) > 0  # a question neither judged moves nothing
    d = np.stack([(b - a)[used] for a, b in ((a_num, b_num), (a_den, b_den))])
    tot = np.array([a_num.sum(), a_den.sum(), b_num.sum(), b_den.sum()])
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(
        0, replicates, 256
    ):  # bounded memory: 256 relabellings at a time
        k = min(256, replicates - start)
        swap = rng.integers(0, 2, size=(k, int(used.sum()))).astype(float)
        moved = swap @ d.T  # per relabelling what judge a gains from b: (num, den)
        an, ad = tot[0] + moved[:, 0], tot[1] + moved[:, 1]
        bn, bd = tot[2] - moved[:, 0], tot[3] - moved[:, 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            ts = np.nan_to_num(np.abs(an / ad - bn / bd), nan=0.0)
        hits += int(np.sum(ts >= t - 1e-12))
    return float((1 + hits) / (1 + replicates))


def ties_with_pick(t: pl.DataFrame, sums: pl.DataFrame, seed: int = 0) -> pl.DataFrame:
    """``p_vs_pick`` (float) and ``tied`` (bool) per row of ranked boards: the paired
    permutation test (:func:`~voirdire.analysis.shared_units.paired_test`) of each judge of
    a board against its pick (the first row passing every gate with a value); null for the
    pick and for rows without a board's value."""
    p: dict[tuple[str, str], float] = {}
    for (board,), rows in t.group_by("board", maintain_order=True):
        ok = rows.filter(pl.col("passes") & pl.col("shared").is_not_null())
        if not ok.height:
            continue
        pick = ok.row(0, named=True)["judge"]
        sb = sums.filter(pl.col("board") == board)
        a = sb.filter(pl.col("judge") == pick).sort("question_id")
        for r in rows.filter(
            pl.col("shared").is_not_null() & (pl.col("judge") != pick)
        ).iter_rows(named=True):
            b = sb.filter(pl.col("judge") == r["judge"]).sort("question_id")
            p[(board, r["judge"])] = paired_test(
                a["num"].to_numpy(), a["den"].to_numpy(), b["num"].to_numpy(), b["den"].to_numpy(),
                seed=seed,
            )  # fmt: skip
    pv = pl.DataFrame(
        [(b, j, v) for (b, j), v in p.items()],
        schema={"board": pl.String, "judge": pl.String, "p_vs_pick": pl.Float64},
        orient="row",
    )
    return t.join(
        pv, on=["board", "judge"], how="left", maintain_order="left"
    ).with_columns(
        tied=pl.when(pl.col("p_vs_pick").is_not_null()).then(
            pl.col("p_vs_pick") >= TIE_ALPHA
        )
    )
