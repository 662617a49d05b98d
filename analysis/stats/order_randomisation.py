"""The randomisation test of the one-order position effect, at the unit the order was randomised over.

A log format declares the **randomisation unit** of its order shown
(:attr:`~voirdire.benchmarks.kind.BenchmarkKind.order_unit`, read by
:func:`~voirdire.analysis.position.clusters.benchmark_order_units`):

- ``"pair"`` (the default: a coin per pair, a user's own pairs): the order labels are
  shuffled within each (benchmark, judge, candidate), keeping the number shown first
  (:func:`pair_test`);
- ``"cluster"``: one coin per question cluster, shared by every pair in it — AlpacaEval's
  ``random.Random("is_switched_outputs" + instruction + seed)`` puts every model first on
  the same instructions. The order states of whole clusters are permuted across the
  judge's clusters, keeping the number of clusters in each state, and every pair of a
  cluster moves with it (:func:`cluster_test`). Shuffling pairs apart here would
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

**How many candidates differ, against its own null** (:meth:`OrderTest.count_null`). The
candidates' tests of one judge share its randomisation (AlpacaEval puts every model first
on the same instructions), so the number with ``p ≤ α`` is not Binomial(C, α) under the
null. Each shuffle is itself a draw of the design's assignment: its per-candidate p-values
against the observed table and the other shuffles (the P + 1 assignments are exchangeable
under the sharp null) give its count, and the count's p is
``(1 + #{shuffles with at least the observed count}) / (1 + P)`` (the resampling null of
the number of rejections, Westfall & Young 1993, ch. 2). Checked against full enumeration
in ``tests/test_order_count_null.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

__all__ = [
    "MIXED_UNIT", "NOT_RANDOMISED", "ORDER_UNITS", "UNIT_MESSAGES", "OrderTest", "cluster_test",
    "pair_test", "p_two_sided",
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


@dataclass(frozen=True)
class OrderTest:
    """One judge's randomisation test: per candidate (``candidates``, sorted) the observed
    ``win_first − win_second`` (``observed``, (C,); NaN where a half is empty) and its value
    under each of the P shuffles (``shuffled``, (P, C)); the same pooled over the candidates
    (``pooled_observed``, ``pooled_shuffled`` (P,))."""

    candidates: list
    observed: np.ndarray
    shuffled: np.ndarray
    pooled_observed: float
    pooled_shuffled: np.ndarray

    def p_values(self) -> dict[object, float]:
        """Two-sided p per candidate (keys: candidate) and pooled (key None)
        (:func:`p_two_sided`)."""
        out: dict[object, float] = {
            c: p_two_sided(self.observed[i], self.shuffled[:, i])
            for i, c in enumerate(self.candidates)
        }
        out[None] = p_two_sided(self.pooled_observed, self.pooled_shuffled)
        return out

    def count_null(self, alpha: float = 0.05) -> tuple[int, float]:
        """How many candidates have ``p ≤ alpha`` (unadjusted), and the probability of at
        least that many under the sharp null, from the same shuffles (module docstring):
        ``(count, p)``; ``p`` NaN where no candidate's statistic is defined or there are
        no shuffles."""
        obs = np.abs(self.observed)
        ok = np.isfinite(obs)
        p_obs = np.array([self.p_values()[c] for c in self.candidates])
        k_obs = int(np.sum(p_obs[ok] <= alpha))
        draws = self.shuffled.shape[0]
        if not ok.any() or draws == 0:
            return k_obs, float("nan")
        t = np.abs(self.shuffled[:, ok])
        counts = np.zeros(draws, dtype=np.int64)
        for j in range(t.shape[1]):  # per candidate: the rank of each shuffle among all
            col = t[:, j]
            ordered = np.sort(col)
            at_least = draws - np.searchsorted(ordered, col - 1e-12, side="left")
            p = (at_least + (obs[ok][j] >= col - 1e-12)) / (1 + draws)
            counts += p <= alpha
        return k_obs, float((1 + np.sum(counts >= k_obs)) / (1 + draws))


def pair_test(
    rows: pl.DataFrame, permutations: int, rng: np.random.Generator
) -> OrderTest:
    """The randomisation test of one judge's ``rows`` (``candidate``, ``first``,
    ``score``), the labels shuffled within each candidate ``permutations`` times.

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
    obs, shuffled = [], []
    for r in g.iter_rows(named=True):
        draws = rng.multivariate_hypergeometric(
            [r["k0"], r["kh"], r["k1"]], r["n1"], size=permutations
        )
        s1 = 0.5 * draws[:, 1] + draws[:, 2]
        pooled_perm += s1
        obs.append(_diff(r["s1"], r["n1"], r["n"], r["total"]))
        shuffled.append(_diff(s1, r["n1"], r["n"], r["total"]))
    n1, n, total = (g.get_column(c).sum() for c in ("n1", "n", "total"))
    return OrderTest(
        g.get_column("candidate").to_list(),
        np.asarray(obs, dtype=float),
        np.column_stack(shuffled) if shuffled else np.zeros((permutations, 0)),
        float(pooled_obs),
        _diff(pooled_perm, n1, n, total),
    )


def unit_states(rows: pl.DataFrame) -> pl.DataFrame | None:
    """Per ``unit`` of ``rows`` (``unit``, ``first``) its state (``first``: bool, every pair
    of it shown candidate first), or None when some unit has pairs both ways round."""
    s = rows.group_by("unit").agg(
        first=pl.col("first").all(), mixed=pl.col("first").n_unique() > 1
    )
    return None if s.get_column("mixed").any() else s.drop("mixed").sort("unit")


def cluster_test(
    rows: pl.DataFrame, permutations: int, rng: np.random.Generator
) -> OrderTest | None:
    """The randomisation test of one judge's ``rows`` (``unit``, ``candidate``, ``first``,
    ``score``), the states of whole units permuted ``permutations`` times (module
    docstring); None when a unit holds both orders (the declared unit does not hold: the
    caller falls back to :func:`pair_test`).

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
    return OrderTest(
        cands,
        np.asarray(obs, dtype=float),
        np.concatenate(per) if per else np.zeros((0, len(cands))),
        float(pooled_obs),
        np.concatenate(pooled) if pooled else np.zeros(0),
    )
