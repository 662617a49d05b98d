"""Strengths without an anchor: a board's maximum likelihood, infinite differences included.

A ranking method's strengths ``θ`` are identified only up to a constant, and only where the
maximum likelihood is finite. This module fits them free of any anchor and says exactly
where a difference is finite, infinite or undefined, for every bootstrap replicate at once:

- **Win graph**: per replicate an edge ``i → j`` when ``i`` beat ``j`` at least once or tied
  with them (``W_ij = wins + ties/2 > 0``). Its **parts** are its strongly connected
  components. Within a part the maximum likelihood is finite (Zermelo 1929; Ford 1957: a
  strongly connected win graph); it is fitted on the comparisons inside the part alone
  (those across parts are dropped: at the likelihood's supremum each is won with
  probability 1), ``θ`` summing to 0 over each part (:func:`fit_strengths`).
- **Across parts**: when ``i``'s part reaches ``j``'s in the win graph (and so not back), the
  supremum of the likelihood is approached only as ``θ_i − θ_j`` grows without bound:
  ``+∞`` (``j`` below ``i``; :attr:`Strengths.above`). Two parts neither of which reaches the
  other — never linked by comparisons (a disconnected design, a model absent from a
  replicate), or linked only through a part above (or below) both — have no defined
  difference: NaN.

So ``θ_i − θ_j`` is a number, ``±∞`` or NaN, whatever model is called the anchor: the
anchor only shifts a row of differences for display (:meth:`Strengths.relative`).
Replicates whose win graph has every edge both ways (the usual case: each part is a
connected piece of the comparison graph) are labelled by propagation in numpy; the others
get their reachability by batched boolean matrix squaring (up to 96 models) or from
``scipy.sparse.csgraph.shortest_path`` (breadth-first, one replicate at a time).
``above`` is kept bit-packed, and only when some replicate needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import (
    breadth_first_order,
    connected_components,
    shortest_path,
)

__all__ = [
    "pieces",
    "win_parts",
    "Strengths",
    "fit_strengths",
    "forest_levels",
    "forest_strengths",
]

_SQUARE_K = 96  # up to this many models, reachability by batched matrix squaring
_ODD_CHUNK = 256  # replicates whose reachability is computed at once


def pieces(met: np.ndarray) -> np.ndarray:
    """Connected pieces of each replicate's comparison graph.

    Args:
        met: (R, K, K) bool, True where models ``i`` and ``j`` met in the replicate
            (symmetric).

    Returns:
        (R, K) int: per replicate each model's piece, labelled by its lowest model index; a
        model that met nobody is a piece of its own.
    """
    r, k, _ = met.shape
    lab = np.broadcast_to(np.arange(k), (r, k)).copy()
    for _ in range(k):
        new = np.minimum(lab, np.where(met, lab[:, None, :], k).min(axis=2))
        if np.array_equal(new, lab):
            break
        lab = new
    return lab


def forest_levels(met: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """The levels of a comparison graph that is a forest, or None when it has a cycle.

    Args:
        met: (K, K) bool, True where models ``i`` and ``j`` met (symmetric; the diagonal
            ignored).

    Returns:
        Each tree rooted at its lowest model, the non-root models by depth: a list of
        ``(children, parents)`` int arrays, depth 1 first (empty list: no edge); None when
        the graph has a cycle (edges ≠ models − trees).
    """
    m = np.array(met, dtype=bool)
    np.fill_diagonal(m, False)
    k = m.shape[0]
    g = csr_matrix(m)
    trees, lab = connected_components(g, directed=False)
    if int(np.triu(m, 1).sum()) != k - trees:
        return None
    parent = np.full(k, -1, dtype=np.int64)
    depth = np.zeros(k, dtype=np.int64)
    for root in np.unique(lab, return_index=True)[1]:  # each tree's lowest model
        order, pred = breadth_first_order(g, int(root), directed=False)
        for v in order[1:]:
            parent[v], depth[v] = pred[v], depth[pred[v]] + 1
    return [
        (np.flatnonzero(depth == d), parent[depth == d])
        for d in range(1, int(depth.max(initial=0)) + 1)
    ]


def forest_strengths(
    levels: list[tuple[np.ndarray, np.ndarray]],
    k: int,
    edge: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
) -> Strengths | None:
    """Bradley–Terry's :class:`Strengths` in closed form on a forest, from its edges alone.

    On a forest the likelihood is one binomial per edge, each free, so within a connected
    piece ``θ_c − θ_p = log(W_cp / W_pc)`` along every edge met in the replicate (Bradley &
    Terry 1952; the maximum is finite only where both are positive: Zermelo 1929). Equals
    :func:`fit_strengths` with :func:`~voirdire.analysis.ranking.bt.fit_bt` on the same
    counts (``tests/test_ranking_fast.py``), without any (R, K, K) array.

    Args:
        levels: :func:`forest_levels` of the comparisons (of the data: a replicate meets a
            subset of them).
        k: the models.
        edge: ``edge(children, parents)`` -> ``(W_cp, W_pc)``, each (R, len(children))
            float, ``W = wins + ties/2`` of the child over its parent and back.

    Returns:
        :class:`Strengths` (``above`` None: every part a connected piece), or None when a
        replicate has an edge won one way only (the win graph then has parts above others:
        :func:`fit_strengths` decides).
    """
    theta = lab = None
    for c, p in levels:
        wc, wp = edge(c, p)
        if theta is None:
            r = wc.shape[0]
            theta = np.zeros((r, k))
            lab = np.broadcast_to(np.arange(k), (r, k)).copy()
        there = (wc + wp) > 0
        if (there & ((wc <= 0) | (wp <= 0))).any():
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.log(wc) - np.log(wp)
        theta[:, c] = np.where(there, theta[:, p] + d, 0.0)
        lab[:, c] = np.where(there, lab[:, p], c)
    if theta is None:  # no edge: nothing to fit (the caller's dense path)
        return None
    r = theta.shape[0]
    key = (np.arange(r)[:, None] * k + lab).ravel()
    low = np.full(r * k, k, dtype=np.int64)
    np.minimum.at(low, key, np.tile(np.arange(k), r))  # each piece's lowest model
    part = low[key].reshape(r, k).astype(np.int32)
    return Strengths(centred(theta, part), part, None)


def win_parts(
    wins: np.ndarray, ties: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """The parts of each replicate's win graph and which part lies above which.

    Args:
        wins, ties: (R, K, K) counts (``wins[r, i, j]``: decisive wins of ``i`` over ``j``;
            ``ties`` symmetric).

    Returns:
        ``(part, above)``: part (R, K) int32, each model's strongly connected part labelled
        by its lowest model index; above (R, K, ⌈K/8⌉) uint8, ``np.packbits`` along the last
        axis of the (R, K, K) bool "``i``'s part reaches ``j``'s, a different part"
        (``θ_i − θ_j = +∞``), or None when no replicate has such a pair.
    """
    e = (wins + 0.5 * ties) > 0
    r, k, _ = e.shape
    e[:, np.arange(k), np.arange(k)] = False
    part = pieces(e | e.transpose(0, 2, 1)).astype(np.int32)
    odd = np.flatnonzero((e != e.transpose(0, 2, 1)).any(axis=(1, 2)))
    above = None
    for lo in range(
        0, odd.size, _ODD_CHUNK
    ):  # an edge one way only: reachability decides
        x = odd[lo : lo + _ODD_CHUNK]
        reach = _reach(e[x])
        same = reach & reach.transpose(0, 2, 1)
        part[x] = same.argmax(axis=2)  # the lowest model of its part
        down = reach & ~reach.transpose(0, 2, 1)
        if down.any():
            if above is None:
                above = np.zeros((r, k, (k + 7) // 8), dtype=np.uint8)
            above[x] = np.packbits(down, axis=-1)
    return part, above


def _reach(e: np.ndarray) -> np.ndarray:
    """(n, K, K) bool: ``j`` reachable from ``i`` in the digraph ``e`` (``i`` itself
    included): repeated squaring in float32 for up to :data:`_SQUARE_K` models, else one
    breadth-first search per replicate (``scipy.sparse.csgraph.shortest_path``)."""
    n, k, _ = e.shape
    if k > _SQUARE_K:
        return np.stack(
            [np.isfinite(shortest_path(csr_matrix(g), unweighted=True)) for g in e]
        )
    reach = e | np.eye(k, dtype=bool)
    for _ in range(max(1, int(np.ceil(np.log2(max(k, 2)))) + 1)):
        f = reach.astype(np.float32)
        new = (f @ f) > 0
        if np.array_equal(new, reach):
            break
        reach = new
    return reach


class Strengths(NamedTuple):
    """Fitted strengths of one board for R replicates, free of any anchor.

    Attributes:
        theta: (R, K) float, finite; summing to 0 over each part.
        part: (R, K) int32, the strongly connected part of each model (module docstring).
        above: (R, K, ⌈K/8⌉) uint8 bit-packed ``θ_i − θ_j = +∞``, or None (no such pair).
    """

    theta: np.ndarray
    part: np.ndarray
    above: np.ndarray | None

    def __len__(self) -> int:  # the replicates
        return self.theta.shape[0]

    def rows(self, sl: slice) -> Strengths:
        """The replicates ``sl`` (a slice of the first axis)."""
        return Strengths(
            self.theta[sl],
            self.part[sl],
            None if self.above is None else self.above[sl],
        )

    def columns(self, idx: np.ndarray) -> Strengths:
        """The models ``idx`` alone (their differences unchanged)."""
        ab = self.above
        if ab is not None:
            full = np.unpackbits(ab, axis=-1, count=self.theta.shape[1]).astype(bool)
            ab = np.packbits(full[:, idx][:, :, idx], axis=-1)
        return Strengths(self.theta[:, idx], self.part[:, idx], ab)

    def _up(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Bits ``above[:, i, j]`` for index arrays of one shape (broadcast), bool."""
        byte = self.above[:, i, j // 8]
        return ((byte >> (7 - j % 8).astype(np.uint8)) & 1).astype(bool)

    def pair_differences(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """``θ_i − θ_j`` for the pairs ``(i[p], j[p])``: (R, P) float, ``±inf`` across parts
        one of which lies above the other, NaN where neither does."""
        i, j = np.asarray(i), np.asarray(j)
        # np.take: the values of theta[:, i], several times faster on (R, K) arrays
        d = np.take(self.theta, i, axis=1) - np.take(self.theta, j, axis=1)
        if self.above is None and (self.part == self.part[:, :1]).all():
            return d  # every replicate one part: every difference finite
        same = np.take(self.part, i, axis=1) == np.take(self.part, j, axis=1)
        if self.above is None:
            return np.where(same, d, np.nan)
        return np.where(
            same,
            d,
            np.where(self._up(i, j), np.inf, np.where(self._up(j, i), -np.inf, np.nan)),
        )

    def differences(self, rows: np.ndarray) -> np.ndarray:
        """``θ_j − θ_i`` for every ``i`` in ``rows`` and every ``j``: (R, len(rows), K)."""
        k = self.theta.shape[1]
        i = np.repeat(np.asarray(rows), k)
        j = np.tile(np.arange(k), len(rows))
        return self.pair_differences(j, i).reshape(-1, len(rows), k)

    def relative(self, anchor: int) -> np.ndarray:
        """``θ_m − θ_anchor`` for every model ``m``: (R, K); the anchor's is 0."""
        return self.differences(np.array([anchor]))[:, 0, :]


def concat(parts: list[Strengths]) -> Strengths:
    """The replicates of ``parts`` one after the other."""
    if any(p.above is not None for p in parts):
        parts = [
            p
            if p.above is not None
            else p._replace(
                above=np.zeros(
                    (len(p), p.theta.shape[1], (p.theta.shape[1] + 7) // 8), np.uint8
                )
            )
            for p in parts
        ]
        above = np.concatenate([p.above for p in parts])
    else:
        above = None
    return Strengths(
        np.concatenate([p.theta for p in parts]),
        np.concatenate([p.part for p in parts]),
        above,
    )


def centred(theta: np.ndarray, part: np.ndarray) -> np.ndarray:
    """``theta`` (R, K) minus its mean over each part of each replicate."""
    r, k = theta.shape
    key = (np.arange(r)[:, None] * k + part).ravel()
    total = np.bincount(key, theta.ravel(), r * k)
    size = np.bincount(key, minlength=r * k)
    return theta - (total / np.maximum(size, 1))[key].reshape(r, k)


def fit_strengths(
    fit: Callable[..., np.ndarray], wins: np.ndarray, ties: np.ndarray | None = None
) -> Strengths:
    """A ranking method's fit of every replicate, free of any anchor (module docstring).

    Args:
        fit: a method's ``fit(wins, ties) -> θ`` ((R, K, K) counts → (R, K), identified up
            to a constant in each connected piece of the comparisons it is given;
            :class:`~voirdire.analysis.ranking.bt.Method`).
        wins, ties: (R, K, K) or (K, K) counts (ties symmetric; None: none).

    Returns:
        :class:`Strengths` (R = 1 for a (K, K) table): the method fitted on the comparisons
        inside each part, centred over each part; a ``fit`` with the attribute
        ``bt_forest`` true (Bradley–Terry's likelihood:
        :func:`~voirdire.analysis.ranking.bt.fit_bt`) on comparisons forming a forest, every
        edge won both ways, by :func:`forest_strengths` instead (the same maximum).
    """
    w = np.asarray(wins, dtype=float)
    w = w[None] if w.ndim == 2 else w
    t = (
        np.zeros_like(w)
        if ties is None
        else np.asarray(ties, dtype=float).reshape(w.shape)
    )
    if getattr(fit, "bt_forest", False):  # BT on a forest (one baseline): closed form
        met = ((w + t) > 0).any(axis=0)
        levels = forest_levels(met | met.T)
        if levels:

            def edge(c, p):
                return w[:, c, p] + 0.5 * t[:, c, p], w[:, p, c] + 0.5 * t[:, p, c]

            got = forest_strengths(levels, w.shape[1], edge)
            if got is not None:
                return got
    part, above = win_parts(w, t)
    same = part[:, :, None] == part[:, None, :]
    theta = np.asarray(fit(w * same, t * same), dtype=float).reshape(part.shape)
    return Strengths(centred(theta, part), part, above)
