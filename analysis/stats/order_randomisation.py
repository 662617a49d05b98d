"""The randomisation test of the one-order position effect, at the unit the order was randomised over.

A log format declares the **randomisation unit** of its order shown
(:attr:`~voirdire.benchmarks.kind.BenchmarkKind.order_unit`, read by
:func:`~voirdire.analysis.position.clusters.benchmark_order_units`):

- ``"pair"`` (the default: a coin per pair, a user's own pairs): the order labels are
  shuffled within each (benchmark, judge, candidate), keeping the number shown first
  (:func:`pair_p_values`);
- ``"cluster"``: one coin per question cluster, shared by every pair in it — AlpacaEval's
  ``random.Random("is_switched_outputs" + instruction + seed)`` puts every model first on
  the same instructions. The order states of whole clusters are permuted across the
  judge's clusters, keeping the number of clusters in each state, and every pair of a
  cluster moves with it (:func:`cluster_p_values`). Shuffling pairs apart here would
  treat the ~57 pairs of one instruction as 57 independent coins: with instruction effects
  shared by the models (a hard instruction every model loses) the pair shuffle's size is
  0.07–0.16 at a nominal 0.05 (``perf/bench_one_order.py``);
- ``"none"``: the order was not randomised; no p-value (:data:`NOT_RANDOMISED`).

Both tests are valid under Fisher's sharp null (every verdict would have been the same in
the other order): the verdicts are fixed and only the assignment of orders is random, and
the permutation draws from the design's own assignment distribution (conditional on the
number of units in each state, which a coin per unit makes uniform over subsets). Two-sided
p = (1 + #{|T*| ≥ |T|}) / (1 + P) for P draws; the statistic ``T`` is ``win_first −
win_second`` per candidate and pooled (the ratios of sums). Exactness is checked by full
enumeration in ``tests/test_one_order.py``.

A cluster whose pairs were not all shown the same way round breaks the declared unit; the
judge then gets the pair test and :data:`MIXED_UNIT` in its message.
"""

from __future__ import annotations

import numpy as np
import polars as pl

__all__ = [
    "MIXED_UNIT", "NOT_RANDOMISED", "ORDER_UNITS", "UNIT_MESSAGES", "cluster_p_values",
    "pair_p_values", "p_two_sided",
]  # fmt: skip

#: the randomisation units a format may declare
ORDER_UNITS = ("pair", "cluster", "none")
NOT_RANDOMISED = (
    "the log's format says its order was not randomised: the halves are compared, "
    "but no randomisation test applies"
)
MIXED_UNIT = (
    "the format randomised the order per question, but some question shows its pairs "
    "both ways round: the test shuffles pairs instead"
)
#: what the effect's message adds per unit
UNIT_MESSAGES = {
    "pair": "the test shuffles the order of each pair",
    "cluster": "the test shuffles the order of whole questions, shared by all models "
    "(the unit the format randomised)",
    "none": NOT_RANDOMISED,
}
#: values of ``P × units`` a block of cluster permutations may hold
_BLOCK = 4_000_000


def _diff(s1, n1, n, total):
    with np.errstate(invalid="ignore", divide="ignore"):
        return s1 / n1 - (total - s1) / (n - n1)


def p_two_sided(observed: float, shuffled: np.ndarray) -> float:
    """``(1 + #{|T*| ≥ |T|}) / (1 + P)``; NaN where the statistic is undefined (a half
    empty). Ties within 1e-12 count as at least as extreme."""
    if not np.isfinite(observed):
        return float("nan")
    return float(
        (1 + np.sum(np.abs(shuffled) >= abs(observed) - 1e-12)) / (1 + shuffled.size)
    )


def pair_p_values(
    rows: pl.DataFrame, permutations: int, rng: np.random.Generator
) -> dict[object, float]:
    """Two-sided randomisation p per candidate (keys: candidate) and pooled (key None) of one
    judge's ``rows`` (``candidate``, ``first``, ``score``), the labels shuffled within each
    candidate ``permutations`` times.

    A shuffle only matters through the scores it puts first, and scores take three values
    (0, ½, 1): the counts of each among a candidate's ``n1`` rows shown first after a
    shuffle are multivariate hypergeometric (``numpy``'s ``multivariate_hypergeometric``),
    so each shuffle is drawn as those counts, exactly, in O(1) per candidate."""
    g = rows.group_by("candidate").agg(
        n1=pl.col("first").sum().cast(pl.Int64),
        n=pl.len().cast(pl.Int64),
        s1=pl.col("score").filter(pl.col("first")).sum(),
        total=pl.col("score").sum(),
        k0=(pl.col("score") == 0.0).sum().cast(pl.Int64),
        kh=(pl.col("score") == 0.5).sum().cast(pl.Int64),
        k1=(pl.col("score") == 1.0).sum().cast(pl.Int64),
    ).sort("candidate")  # fmt: skip
    pooled_obs = _diff(*(g.get_column(c).sum() for c in ("s1", "n1", "n", "total")))
    pooled_perm = np.zeros(permutations)
    out: dict[object, float] = {}
    for r in g.iter_rows(named=True):
        draws = rng.multivariate_hypergeometric(
            [r["k0"], r["kh"], r["k1"]], r["n1"], size=permutations
        )
        s1 = 0.5 * draws[:, 1] + draws[:, 2]
        pooled_perm += s1
        obs = _diff(r["s1"], r["n1"], r["n"], r["total"])
        out[r["candidate"]] = p_two_sided(obs, _diff(s1, r["n1"], r["n"], r["total"]))
    n1, n, total = (g.get_column(c).sum() for c in ("n1", "n", "total"))
    out[None] = p_two_sided(pooled_obs, _diff(pooled_perm, n1, n, total))
    return out


def unit_states(rows: pl.DataFrame) -> pl.DataFrame | None:
    """Per ``unit`` of ``rows`` (``unit``, ``first``) its state (``first``: bool, every pair
    of it shown candidate first), or None when some unit has pairs both ways round."""
    s = rows.group_by("unit").agg(
        first=pl.col("first").all(), mixed=pl.col("first").n_unique() > 1
    )
    return None if s.get_column("mixed").any() else s.drop("mixed").sort("unit")


def cluster_p_values(
    rows: pl.DataFrame, permutations: int, rng: np.random.Generator
) -> dict[object, float] | None:
    """Two-sided randomisation p per candidate and pooled (key None) of one judge's ``rows``
    (``unit``, ``candidate``, ``first``, ``score``), the states of whole units permuted
    ``permutations`` times (module docstring); None when a unit holds both orders (the
    declared unit does not hold: the caller falls back to :func:`pair_p_values`).

    Each draw is a permutation of the units' states; a candidate's sums shown first are
    then ``states @ T`` with ``T`` (units × candidates) its score sums and counts per unit,
    computed in blocks of draws (``P × units`` ≤ 4·10⁶ values at a time)."""
    states = unit_states(rows)
    if states is None:
        return None
    units = states.get_column("unit")
    cands = sorted(rows.get_column("candidate").unique().to_list())
    agg = rows.group_by("unit", "candidate").agg(
        t=pl.col("score").sum(), k=pl.len().cast(pl.Float64)
    )
    ui = {u: i for i, u in enumerate(units.to_list())}
    ci = {c: i for i, c in enumerate(cands)}
    t = np.zeros((len(ui), len(ci)))
    k = np.zeros_like(t)
    rr = [ui[u] for u in agg.get_column("unit").to_list()]
    cc = [ci[c] for c in agg.get_column("candidate").to_list()]
    t[rr, cc], k[rr, cc] = (
        agg.get_column("t").to_numpy(),
        agg.get_column("k").to_numpy(),
    )
    s = states.get_column("first").to_numpy().astype(float)
    total, n = t.sum(0), k.sum(0)
    obs = _diff(s @ t, s @ k, n, total)
    pooled_obs = _diff((s @ t).sum(), (s @ k).sum(), n.sum(), total.sum())
    block = max(1, _BLOCK // max(1, s.size))
    per, pooled = [], []
    for start in range(0, permutations, block):
        m = min(block, permutations - start)
        draws = rng.permuted(np.broadcast_to(s, (m, s.size)), axis=1)
        s1, n1 = draws @ t, draws @ k
        per.append(_diff(s1, n1, n, total))
        pooled.append(_diff(s1.sum(1), n1.sum(1), n.sum(), total.sum()))
    shuffled = np.concatenate(per) if per else np.zeros((0, len(cands)))
    out: dict[object, float] = {
        c: p_two_sided(obs[i], shuffled[:, i]) for c, i in ci.items()
    }
    out[None] = p_two_sided(
        pooled_obs, np.concatenate(pooled) if pooled else np.zeros(0)
    )
    return out
