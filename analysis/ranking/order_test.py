"""Does the order the answers were shown in change a leaderboard? Permutation tests.

For one judge and strategy, the first-order and swapped-order boards are fitted on the same
*units* — one (question, candidate, reference) each, judged in both orders — and compared
over the ``K`` models common to both and their ``K(K−1)/2`` pairs. Statistics:

- ``flips``: pairs ordered one way by the first board and the other way by the swapped
  board (a difference below 1e-9 is a tie, an undefined one no order: no flip);
- Kendall τ-b between the two boards (from the same signs);
- per pair the change ``c_ij = b(θ_i − θ_j)_first − b(θ_i − θ_j)_swapped``, the differences
  fitted free of any anchor (:mod:`~voirdire.analysis.ranking.strengths`) and bounded by
  ``b`` (an infinite difference counts as ±:data:`~voirdire.analysis.ranking.bt.CLIP`, an
  undefined one as 0).

Two nulls (:mod:`~voirdire.analysis.ranking.order_nulls`), each a distribution of swaps of
the units' verdicts between the orders, every board refitted after each swap with the
leaderboards' own method:

- **Order-blind** (the two orders' verdicts of every unit exchangeable). The overall tests:
  ``flips_p = (1 + #{π: flips_π ≥ flips}) / (1 + B)`` ("does order change this leaderboard
  at all?", a common slot preference included) and ``tau_p`` likewise for τ ≤ observed;
  ``flips_null``/``tau_null`` are their means, what an order-blind judge gives on these
  verdicts. And the flips **with a reference** (a pair holding a model that is never the
  candidate of a unit — MT-Bench's and DevBench's reference): ``|c_ij|`` over its
  permutation root mean square, single-step max-T over these pairs (Westfall & Young 1993,
  *Resampling-Based Multiple Testing*, §2.6, algorithm 4.1). For an order-blind judge the
  chance of calling any of them significant is at most their share of α; where every
  candidate meets the reference alone (a star, fitted with ``bt``: a pair's change then
  depends on that candidate's units alone, so subset pivotality holds) it stays so for the
  candidates whose verdicts are order-blind whatever the others' are (strong control).
  A judge that prefers one slot moves the reference past candidates: these flips are
  then the order's doing, and meant to be found.
- **One slot preference common to every model and question**, of any size. The flips
  **between candidates** (pairs of two models each the candidate of some unit): ``c_ij``
  centred on its mean over the draws and divided by their standard deviation, single-step
  max-T over these pairs. A common preference moves every candidate against the reference
  alike and leaves their order to noise, so the chance of calling any flip between
  candidates significant is at most their share of α for such a judge, whatever the
  preference (0 included) and the design (exact: the null is conditional, not fitted). A
  significant flip between candidates is an order effect that differs between models. When
  some models have their own order effects, the others' pairs are not controlled (weak
  control: the null is the whole judge's).

Each pair's max-T p-value ``p̃ = (1 + #{π: max_kl z_kl,π ≥ z_ij}) / (1 + B)`` over its own
family is multiplied by the number of families holding a pair (Bonferroni; capped at 1), so
a flip is *significant* when ``p̃ ≤ α``: an order-blind judge gets any significant flip with
probability at most α. A pair whose change no draw moves (spread below 1e-9, numerical
noise) has ``z = 0``: it never counts, nor raises the others' threshold. When a null's
configurations are no more than the draws asked for, every one is drawn once and the
p-values are exact (``#{π: …} / N``, the observed among them). ``perf/bench_flip_test.py``
measures size and power by simulation.

The draws refit both boards in chunks, so memory grows with chunk × K², not B × K².
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import polars as pl
from scipy.sparse import csc_matrix

from voirdire.analysis.ranking.bt import CLIP
from voirdire.analysis.ranking.order_nulls import SwapDraws, blind_swaps, common_swaps
from voirdire.analysis.ranking.registry import ranking_method
from voirdire.analysis.ranking.strengths import Strengths, concat, fit_strengths

__all__ = ["TIE_EPS", "OrderTest", "order_units", "order_test", "pair_stats", "bounded"]

#: θ differences below this are a tie in a board (no flip): equal records fit to equal θ
#: only up to the solver's rounding; a change whose spread over the draws is below it is
#: numerical noise (its z is 0)
TIE_EPS = 1e-9
_CHUNK_CELLS = 4_000_000  # draws per chunk × K² (two boards): about 64 MB of float64
_HOLD_BYTES = 512 * 2**20  # the draws' pair statistics held for the passes up to this


@dataclass(frozen=True)
class OrderTest:
    """The permutation tests of one (benchmark, judge, strategy)'s first vs swapped boards.

    Attributes:
        models: the K models compared (sorted).
        flips: observed flipped pairs (int); flips_null: their mean over the order-blind
            draws (what an order-blind judge gives on these verdicts); flips_p: the
            permutation p-value of ``flips`` (one-sided, large).
        tau: Kendall τ-b of the two boards; tau_null: its order-blind mean; tau_p: the
            p-value (one-sided, small).
        flipped, p_adjusted, between_candidates: (P,) per pair ``(i, j)`` of
            ``np.triu_indices(K, 1)``: whether it flips, its max-T adjusted p-value
            (Bonferroni over the families: module docstring) and whether it is a pair of
            two candidates (tested against one common slot preference) rather than one
            with a reference (tested against order-blindness).
        permutations: B, the order-blind draws (or enumerated swaps); exact: whether every
            one of the 2^U swaps of the U discordant units was drawn (when 2^U ≤ the
            permutations asked for: p-values ``#{π: ...} / 2^U``, the observed swap among
            them; else ``(1 + #{π: ...}) / (1 + B)``).
        common_permutations, common_exact: likewise for the common-preference null (0 and
            False when no pair is between candidates).
    """

    models: list[str]
    flips: int
    flips_null: float
    flips_p: float
    tau: float
    tau_null: float
    tau_p: float
    flipped: np.ndarray
    p_adjusted: np.ndarray
    between_candidates: np.ndarray
    permutations: int
    exact: bool
    common_permutations: int = 0
    common_exact: bool = False

    def significant(
        self, alpha: float = 0.05, *, between_candidates: bool | None = None
    ) -> int:
        """Flipped pairs whose adjusted p-value is at most ``alpha`` (int); with
        ``between_candidates`` True (False) only the pairs of two candidates (with a
        reference)."""
        sig = self.flipped & (self.p_adjusted <= alpha)
        if between_candidates is not None:
            sig &= self.between_candidates == between_candidates
        return int(sig.sum())


def order_units(comps: pl.DataFrame) -> pl.DataFrame:
    """Per unit (benchmark, judge, strategy, question_id, a, b) and order view (``first``,
    ``swapped``) the summed ``win``, ``tie`` and ``loss`` (float) of ``a`` against ``b``.

    Args:
        comps: :data:`~voirdire.analysis.ranking.order_views.COMPARISON_SCHEMA` rows (other views
            are ignored).
    """
    return (
        comps.filter(pl.col("view").is_in(["first", "swapped"]))
        .group_by("benchmark", "judge", "strategy", "question_id", "a", "b", "view")
        .agg(
            pl.col("win").sum(),
            pl.col("tie").sum(),
            loss=(1.0 - pl.col("win") - pl.col("tie")).sum(),
        )
    )


def _counts(units: pl.DataFrame, ix: dict[str, int], k: int):
    """(K², ) win/tie count vectors of the first and swapped boards, the changes a swap of
    each discordant unit makes to the first board's wins and ties (:class:`_Moves`), and
    each discordant unit's ``D`` (first-order wins − losses minus swapped-order ones,
    :func:`~voirdire.analysis.ranking.order_nulls.common_swaps`)."""
    wide = units.pivot(
        on="view", index=["question_id", "a", "b"], values=["win", "tie", "loss"]
    ).sort(
        "question_id", "a", "b"
    )  # the swaps' draws follow the units, whatever the row order
    for c in (f"{s}_{v}" for s in ("win", "tie", "loss") for v in ("first", "swapped")):
        wide = (
            wide.with_columns(pl.col(c).fill_null(0.0))
            if c in wide.columns
            else wide.with_columns(pl.lit(0.0).alias(c))
        )
    names = pl.Enum(sorted(ix, key=ix.__getitem__))  # a model's code: its index in ix
    a, b = (
        wide.get_column(c).cast(names).to_physical().to_numpy().astype(np.int64)
        for c in ("a", "b")
    )
    g = {c: wide.get_column(c).to_numpy().astype(float) for c in wide.columns[3:]}
    ab, ba = a * k + b, b * k + a

    def board(v):
        w = np.bincount(np.r_[ab, ba], np.r_[g[f"win_{v}"], g[f"loss_{v}"]], k * k)
        t = np.bincount(np.r_[ab, ba], np.r_[g[f"tie_{v}"], g[f"tie_{v}"]], k * k)
        return w, t

    dw, dl, dt = (g[f"{s}_swapped"] - g[f"{s}_first"] for s in ("win", "loss", "tie"))
    keep = np.flatnonzero(
        (dw != 0) | (dl != 0) | (dt != 0)
    )  # concordant units: a swap changes nothing
    moves = _Moves.of(ab[keep], ba[keep], dw[keep], dl[keep], dt[keep])
    return board("first"), board("swapped"), moves, (dl - dw)[keep]


class _Moves(NamedTuple):
    """What swapping the U discordant units does to the first board's win and tie counts,
    on the C cells any unit touches only (``cells``: (C,) indices into the K² counts):
    ``w`` and ``t``, sparse (C, U), the amounts a unit adds to a cell's wins and ties when
    swapped (each unit moves its ``(a, b)`` and its ``(b, a)`` cell)."""

    cells: np.ndarray
    w: csc_matrix
    t: csc_matrix
    units: int

    @classmethod
    def of(cls, ab, ba, dw, dl, dt) -> _Moves:
        """From each discordant unit's cells (``ab``, ``ba``) and the changes of its wins,
        losses and ties."""
        u = ab.size
        cells, at = np.unique(np.r_[ab, ba], return_inverse=True)
        unit = np.r_[np.arange(u), np.arange(u)]

        def moved(v):
            return csc_matrix((v, (at.ravel(), unit)), shape=(cells.size, u))

        return cls(cells, moved(np.r_[dw, dl]), moved(np.r_[dt, dt]), u)

    def apply(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n, C) changes of the wins and ties of the cells :attr:`cells` under the swaps
        ``s`` ((n, U) bool or 0/1), each cell's units added in ascending order from 0
        (column by column: the swaps of one unit read once, the C cells' sums held)."""
        st = np.ascontiguousarray(s.T).astype(float, copy=False)
        return (self.w @ st).T, (self.t @ st).T


def _fit(fit, w: np.ndarray, t: np.ndarray, k: int, prior: float) -> Strengths:
    w, t = w.reshape(-1, k, k), t.reshape(-1, k, k)
    if prior:  # as the leaderboards: pseudo-ties between every two models that met
        t = t + prior * ((w + w.transpose(0, 2, 1) + t) > 0)
    return fit_strengths(fit, w, t)


def bounded(d: np.ndarray) -> np.ndarray:
    """Differences of θ as the changes use them: within ±:data:`~voirdire.analysis.ranking.bt.CLIP`
    (``±inf`` at it), NaN (undefined) as 0; ``d`` itself when every difference is within
    ±CLIP already (the usual case: no pass over the array but the check)."""
    if d.size == 0 or np.abs(d).max() <= CLIP:  # NaN fails the test
        return d
    return np.clip(np.nan_to_num(d, nan=0.0, posinf=CLIP, neginf=-CLIP), -CLIP, CLIP)


def _signs(d: np.ndarray) -> np.ndarray:
    """``sign(d)`` where ``|d| > TIE_EPS``, else 0 (NaN: 0), float."""
    with np.errstate(invalid="ignore"):
        x = np.sign(d) * (np.abs(d) > TIE_EPS)
    nan = np.isnan(x)
    if nan.any():
        x[nan] = 0.0
    return x


def pair_stats(df: np.ndarray, ds: np.ndarray):
    """Per row of two (R, P) arrays of pair differences (``θ_i − θ_j`` of the first and the
    second board; ``±inf``/NaN allowed): flipped (R, P) bool, τ-b (R,) and the change
    ``c = b(d_first) − b(d_second)`` (R, P; :func:`bounded`); a difference below
    :data:`TIE_EPS` is a tie, an undefined one has no sign."""
    sf, ss = _signs(df), _signs(ds)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (sf * ss).sum(1) / np.sqrt((sf**2).sum(1) * (ss**2).sum(1))
    return sf * ss < 0, tau, bounded(df) - bounded(ds)


def _refits(
    fit, counts: tuple, model: tuple[int, float], draws: SwapDraws, chunk: int
) -> tuple[Strengths, Strengths]:
    """The first and swapped boards refitted after each swap of ``draws`` (B rows each).

    ``counts``: the first and swapped boards' win and tie counts and the sparse changes a
    swap of each discordant unit makes (:func:`_counts`); ``model``: ``(K, prior)``.
    """
    (wf, tf), (ws, ts), moves = counts[:3]
    k, prior = model
    first, second = [], []
    at = moves.cells
    for s in draws.chunks(chunk):
        dw, dt = moves.apply(s)  # (n, C): what the swaps move
        n = s.shape[0]
        w, t = np.empty((2 * n, k * k)), np.empty((2 * n, k * k))
        w[:n], w[n:], t[:n], t[n:] = wf, ws, tf, ts
        w[:n, at] += dw
        w[n:, at] -= dw
        t[:n, at] += dt
        t[n:, at] -= dt
        fitted = _fit(fit, w, t, k, prior)
        first.append(fitted.rows(slice(0, n)))
        second.append(fitted.rows(slice(n, 2 * n)))
    return concat(first), concat(second)


def _chunks(boards: tuple[Strengths, Strengths], pairs: tuple, chunk: int):
    """:func:`pair_stats` of the refitted boards over ``pairs`` (model indices), ``chunk``
    draws at a time."""
    sf, ss = boards
    for lo in range(0, len(sf), chunk):
        rows = slice(lo, lo + chunk)
        yield pair_stats(
            sf.rows(rows).pair_differences(*pairs),
            ss.rows(rows).pair_differences(*pairs),
        )


def _stats(boards: tuple[Strengths, Strengths], pairs: tuple, chunk: int):
    """``stats(cols=None)``: an iterator of :func:`_chunks`'s ``(flipped, τ, change)`` over
    all ``pairs``, the change's columns ``cols`` only (a bool or index array; the change is
    per pair, so a subset's equals the subset of all). Computed once and held when the
    draws × pairs fit in :data:`_HOLD_BYTES` (the passes then read it), else anew each
    pass."""
    held = None
    if len(boards[0]) * pairs[0].size * 9 <= _HOLD_BYTES:
        held = list(_chunks(boards, pairs, chunk))

    def stats(cols=None):
        for f, tau, c in held if held is not None else _chunks(boards, pairs, chunk):
            yield f, tau, (c if cols is None else c[:, cols])

    return stats


def _max_t(
    stats, cols: np.ndarray, c0: np.ndarray, draws: SwapDraws, centre: bool
) -> np.ndarray:
    """Single-step max-T adjusted p-values of the observed changes ``c0`` (P,) of the pairs
    ``cols`` of ``stats`` (:func:`_stats`): ``|c − m| / s`` with ``m`` the draws' mean
    (``centre``) or 0 and ``s`` the draws' standard deviation (root mean square without
    ``centre``); a spread below :data:`TIE_EPS` gives z = 0."""
    if c0.size == 0:
        return np.zeros(0)
    n, s1, s2 = draws.count, np.zeros(c0.size), np.zeros(c0.size)
    for _, _, c in stats(cols):  # pass 1: the moments
        s1 += c.sum(0)
        s2 += (c**2).sum(0)
    m = s1 / n if centre else np.zeros(c0.size)
    spread = np.sqrt(np.maximum(s2 / n - m**2, 0.0))
    scale = np.where(
        spread > TIE_EPS, spread, np.inf
    )  # numerical noise: never significant
    z0 = np.abs(c0 - m) / scale
    mx = np.sort(np.concatenate([
        (np.abs(c - m) / scale).max(1, initial=0.0) for _, _, c in stats(cols)
    ]))  # fmt: skip
    exceed = n - np.searchsorted(mx, z0 - 1e-12, side="left")
    plus = 0 if draws.exact else 1
    return (plus + exceed) / (plus + n)


def _overall(stats, observed: tuple, draws: SwapDraws):
    """The order-blind draws' flips and τ against the observed ``(flipped, τ)``: the draws
    with at least as many flips, the flips over all draws, the draws with τ at most the
    observed (NaN counts as 1), and the mean τ."""
    flip0, tau0 = observed
    flips_p, flips_sum, tau_p, taus = 0, 0, 0, []
    for f, tau, _ in stats():
        flips_p += int((f.sum(1) >= flip0.sum()).sum())
        flips_sum += int(f.sum())
        tau_p += int((np.nan_to_num(tau, nan=1.0) <= tau0[0]).sum())
        taus.append(tau)
    tau_all = np.concatenate(taus)
    tau_null = (
        float(np.nanmean(tau_all)) if np.isfinite(tau_all).any() else float("nan")
    )
    return flips_p, flips_sum, tau_p, tau_null


def _pair_p(
    fit,
    counts: tuple,
    size: tuple[int, float],
    blind_null: tuple,
    pairs: tuple[np.ndarray, np.ndarray],
    c0: np.ndarray,
    between: np.ndarray,
    *,
    permutations: int,
    seed: int,
    chunk: int,
) -> tuple[np.ndarray, SwapDraws | None]:
    """Each pair's max-t p-value before the family's adjustment: a pair with the reference
    against the order-blind swaps (``blind_null``: their :func:`_stats` and draws), a
    pair of candidates against swaps under one slot preference common to all models (drawn
    here with ``seed``'s second stream); and those common draws (None: no candidate pair)."""
    stats, blind = blind_null
    p = np.ones(between.size)
    ref = ~between
    p[ref] = _max_t(stats, ref, c0[ref], blind, centre=False)
    if not between.any():
        return p, None
    cdraws = common_swaps(counts[3], permutations, np.random.default_rng([seed, 1]))
    cboards = _refits(fit, counts, size, cdraws, chunk)
    cstats = _stats(cboards, pairs, chunk)
    p[between] = _max_t(cstats, between, c0[between], cdraws, centre=True)
    return p, cdraws


def order_test(
    units: pl.DataFrame,
    *,
    method: str = "bt",
    prior: float = 0.0,
    permutations: int = 1000,
    seed: int = 0,
) -> OrderTest:
    """The order tests of one judge and strategy (module docstring).

    Args:
        units: :func:`order_units` rows of one (benchmark, judge, strategy).
        method, prior: the leaderboards' (:func:`~voirdire.analysis.ranking.boards.fit_boards`);
            nothing depends on an anchor.
        permutations: B (≥ 1), the draws of each null; a null whose configurations are no
            more is drawn exactly instead; seed: of the random draws.

    Raises:
        ConfigError: an unknown ranking method; ValueError: ``permutations`` < 1 or no
            units.
    """
    if permutations < 1 or units.height == 0:
        raise ValueError("order_test needs at least one permutation and one unit")
    fit = ranking_method(method).fit
    present = {
        v: set(p.get_column("a").unique().to_list())
        | set(p.get_column("b").unique().to_list())
        for (v,), p in units.group_by(["view"])
    }
    models = sorted(set().union(*present.values()))
    common = sorted(set.intersection(*present.values())) if len(present) == 2 else []
    candidates = set(units.get_column("a").unique().to_list())
    k, ix = len(models), {m: n for n, m in enumerate(models)}
    counts = _counts(units, ix, k)
    (wf, tf), (ws, ts) = counts[:2]
    keep = np.array([ix[m] for m in common], dtype=np.int64)
    i, j = np.triu_indices(keep.size, 1)
    pairs = (keep[i], keep[j])
    obs = _fit(fit, np.stack([wf, ws]), np.stack([tf, ts]), k, prior)
    flip0, tau0, c0 = pair_stats(
        obs.rows(slice(0, 1)).pair_differences(*pairs),
        obs.rows(slice(1, 2)).pair_differences(*pairs),
    )
    between = np.array(
        [common[x] in candidates and common[y] in candidates for x, y in zip(i, j)],
        dtype=bool,
    )
    chunk = max(1, _CHUNK_CELLS // (2 * k * k))
    blind = blind_swaps(counts[2].units, permutations, np.random.default_rng(seed))
    boards = _refits(fit, counts, (k, prior), blind, chunk)
    stats = _stats(boards, pairs, chunk)
    flips_p, flips_sum, tau_p, tau_null = _overall(stats, (flip0, tau0), blind)
    p, cdraws = _pair_p(
        fit, counts, (k, prior), (stats, blind), pairs, c0[0], between,
        permutations=permutations, seed=seed, chunk=chunk,
    )  # fmt: skip
    ref = ~between
    families = int(ref.any()) + int(between.any())
    plus = 0 if blind.exact else 1
    return OrderTest(
        models=common,
        flips=int(flip0.sum()),
        flips_null=flips_sum / blind.count,
        flips_p=(plus + flips_p) / (plus + blind.count),
        tau=float(tau0[0]),
        tau_null=tau_null,
        tau_p=(plus + tau_p) / (plus + blind.count),
        flipped=flip0[0],
        p_adjusted=np.minimum(1.0, families * p),
        between_candidates=between,
        permutations=blind.count,
        exact=blind.exact,
        common_permutations=0 if cdraws is None else cdraws.count,
        common_exact=False if cdraws is None else cdraws.exact,
    )
