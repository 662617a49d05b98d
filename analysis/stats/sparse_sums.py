"""The cluster bootstrap's per-question sums, held sparse, and their replicates' sums.

:func:`~voirdire.analysis.stats.bootstrap.cluster_bootstrap` sums each value per (group,
cell, question) and weights the questions by each replicate's multinomial counts. Held
dense, one group's sums are a (cells × questions) matrix per value, almost all zeros where a
cell meets few questions: AlpacaEval 2's 45,875 pairs each touch one of 290 (candidate,
task) cells, so one strategy's 29 mitigation values took 290 × 45,875 × 29 floats (3 GB).
Here one stratum's sums are one CSR matrix (:class:`StratumSums`): a row per (value, group,
cell) whose sum is not zero, holding only its nonzero questions, so memory grows with the
rows of the data, never with cells × questions.

- A per-question sum adds the rows of one (group, cell, question) in their order, from 0
  (``numpy.bincount``), as the dense matrix did: the same float.
- A replicate's sum of a row is ``Σ_q w_q · x_q`` over the row's questions in their sorted
  order (scipy's CSR product, :data:`_PRODUCT_ROWS` replicates at a time, each one's sum
  added in the row's order from 0 as the one-vector product adds it,
  :func:`replicate_blocks`). Where the values are whole numbers the sums are exact, so every figure is the dense product's, bit
  for bit; fractional sums do not depend on how many replicates are taken at once, on BLAS
  or on threads, and agree with the dense product to rounding.
- The (R × cells) arrays a statistic reads are made only for the replicates it is handed
  (:meth:`StratumSums.dense`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import sparse

from voirdire.analysis.stats.draws import DRAW_ROWS, Draws

__all__ = [
    "WEIGHT_BYTES",
    "unique_codes",
    "GroupSums",
    "StratumSums",
    "replicate_blocks",
    "stratum_sums",
]

#: The most bytes of multinomial counts (as drawn, and as floats) taken at once: a stratum
#: of Q questions takes ``WEIGHT_BYTES // (16 Q)`` replicates at a time (at most
#: :data:`~voirdire.analysis.stats.draws.DRAW_ROWS`, at least one), 32 MiB.
WEIGHT_BYTES = 32 * 2**20
#: replicates per sparse product (the counts' columns copied at once: 32 × Q floats)
_PRODUCT_ROWS = 32


@dataclass
class GroupSums:
    """One group's part of a :class:`StratumSums`.

    Attributes:
        key: the group's values of the ``groups`` columns.
        cells: its cells' keys in the order of their first appearance in its rows (no
            column without ``cells``); ``n_cells`` their number (1 without ``cells``).
        rows: per value with a nonzero sum, ``(start, stop, cell indices)``: the matrix rows
            ``start:stop`` are that value's sums of the cells at those indices.
    """

    key: tuple
    cells: pl.DataFrame
    n_cells: int
    rows: dict[str, tuple[int, int, np.ndarray]] = field(default_factory=dict)


@dataclass
class StratumSums:
    """The per-question sums of one stratum: ``matrix`` (scipy CSR, rows × Q float64) and
    its groups (in the order of their first appearance)."""

    matrix: sparse.csr_matrix
    groups: list[GroupSums]
    values: list[str]

    def dense(self, group: GroupSums, sums: np.ndarray) -> dict[str, np.ndarray]:
        """``{value: (R, n_cells) array}`` of ``group`` from ``sums`` (R × matrix rows: the
        rows' sums in R replicates), zeros where a cell has none."""
        out = {}
        for v in self.values:
            m = np.zeros((sums.shape[0], group.n_cells))
            if v in group.rows:
                start, stop, cells = group.rows[v]
                m[:, cells] = sums[:, start:stop]
            out[v] = m
        return out


def unique_codes(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``numpy.unique(x, return_inverse=True)`` of non-negative int64 codes, the same arrays
    (the sorted distinct codes (D,) and each element's index among them (N,)): each code
    and its position packed in one int64 and sorted (a sort, not an argsort), when they
    fit in 63 bits; else ``numpy.unique`` itself."""
    x = np.asarray(x, dtype=np.int64).ravel()
    bits = max(int(x.size - 1).bit_length(), 1)
    if x.size == 0 or x.min() < 0 or int(x.max()).bit_length() + bits > 62:
        codes, inv = np.unique(x, return_inverse=True)
        return codes, inv.ravel()
    s = np.sort((x << bits) | np.arange(x.size))
    value, at = s >> bits, s & ((1 << bits) - 1)
    first = np.empty(x.size, dtype=bool)
    first[0] = True
    np.not_equal(value[1:], value[:-1], out=first[1:])
    inv = np.empty(x.size, dtype=np.int64)
    inv[at] = np.cumsum(first) - 1
    return value[first], inv


def _codes(
    part: pl.DataFrame, groups: list[str], cells: list[str]
) -> tuple[list[tuple], list[pl.DataFrame], np.ndarray, np.ndarray]:
    """The groups' keys and cells (first appearance), and each row's group and cell index."""
    if not groups:
        g = np.zeros(part.height, dtype=np.int64)
        keys: list[tuple] = [()] if part.height else []
    else:
        gk = part.select(groups).unique(maintain_order=True).with_row_index("_g")
        g = (
            part.select(groups)
            .join(gk, on=groups, how="left", nulls_equal=True, maintain_order="left")
            .get_column("_g")
            .to_numpy()
            .astype(np.int64)
        )
        keys = list(gk.drop("_g").iter_rows())
    if not cells:
        return keys, [pl.DataFrame() for _ in keys], g, np.zeros_like(g)
    at = part.select(pl.Series("_g", g), *cells)
    ck = at.unique(maintain_order=True).with_columns(
        _u=pl.int_range(pl.len(), dtype=pl.Int64).over("_g")
    )
    u = (
        at.join(
            ck, on=["_g", *cells], how="left", nulls_equal=True, maintain_order="left"
        )
        .get_column("_u")
        .to_numpy()
    )
    parts = {
        p.item(0, "_g"): p.select(cells)
        for p in ck.partition_by("_g", maintain_order=True)
    }
    return keys, [parts[i] for i in range(len(keys))], g, u


def _question_codes(part: pl.DataFrame, q_index: pl.DataFrame) -> np.ndarray:
    """Each row's question index (``q_index``: ``question_id`` -> ``_q``).

    Raises:
        KeyError: a row's question is not in ``q_index``."""
    q = (
        part.select("question_id")
        .join(
            q_index,
            on="question_id",
            how="left",
            maintain_order="left",
            nulls_equal=True,
        )
        .get_column("_q")
    )
    if q.null_count():
        raise KeyError(part.filter(q.is_null()).get_column("question_id")[0])
    return q.to_numpy().astype(np.int64)


def _entries(
    part: pl.DataFrame, values: Sequence[str], long: bool
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Per value (its index): the rows of ``part`` where it is not zero and their amounts
    (nulls count as 0; NaN is kept). Wide: a column per value; long: ``value`` names it
    (str) or gives its index in ``values`` (int), ``amount`` holds it."""
    if not long:
        for vi, c in enumerate(values):
            x = part.get_column(c).fill_null(0).cast(pl.Float64).to_numpy()
            nz = np.flatnonzero(x != 0)
            yield vi, nz, x[nz]
        return
    named = part.get_column("value")
    vi = (
        named.to_numpy().astype(np.int64)
        if named.dtype.is_integer()
        else named.replace_strict(
            {v: i for i, v in enumerate(values)}, return_dtype=pl.Int64
        ).to_numpy()
    )
    x = part.get_column("amount").fill_null(0).cast(pl.Float64).to_numpy()
    order = np.argsort(vi, kind="stable")
    bounds = np.searchsorted(vi[order], np.arange(len(values) + 1))
    for i in range(len(values)):
        rows = order[bounds[i] : bounds[i + 1]]
        rows = rows[x[rows] != 0]
        yield i, rows, x[rows]


def stratum_sums(
    part: pl.DataFrame,
    q_index: pl.DataFrame,
    nq: int,
    groups: Sequence[str],
    cells: Sequence[str],
    values: Sequence[str],
    long: bool = False,
) -> StratumSums:
    """The per-(group, cell, question) sums of ``values`` in ``part`` (one stratum's rows),
    questions numbered by ``q_index`` (``question_id`` -> ``_q``, 0..nq-1).

    Args:
        part: columns ``question_id``, ``groups``, ``cells`` and either one numeric column
            per value or (``long``) ``value`` (str: one of ``values``, or int: its index)
            and ``amount``.

    Raises:
        KeyError: a row's question is not in ``q_index``.
    """
    keys, cell_keys, g, u = _codes(part, list(groups), list(cells))
    q = _question_codes(part, q_index)
    n_cells = np.array([max(c.height, 1) for c in cell_keys], dtype=np.int64)
    base = np.r_[0, np.cumsum(n_cells)]  # a value's rows: group by group, cell by cell
    out = [GroupSums(k, c, int(n)) for k, c, n in zip(keys, cell_keys, n_cells)]
    pieces, at = [], 0
    for vi, idx, x in _entries(part, values, long):
        if not idx.size:
            continue
        row = base[g[idx]] + u[idx]
        key, inv = unique_codes(row * nq + q[idx])
        data = np.bincount(inv, weights=x)  # in the rows' order, from 0
        row, col = np.divmod(key, nq)
        present, first = np.unique(row, return_index=True)
        indptr = np.r_[first, row.size].astype(np.int64)
        pieces.append(sparse.csr_matrix((data, col, indptr), shape=(present.size, nq)))
        owner = np.searchsorted(base, present, side="right") - 1
        for gi in np.unique(owner):
            lo, hi = np.searchsorted(owner, [gi, gi + 1])
            out[gi].rows[values[vi]] = (at + lo, at + hi, present[lo:hi] - base[gi])
        at += present.size
    matrix = (
        sparse.vstack(pieces, format="csr")
        if pieces
        else sparse.csr_matrix((0, nq), dtype=np.float64)
    )
    return StratumSums(matrix, out, list(values))


def replicate_blocks(
    matrix: sparse.csr_matrix, draws: Draws, nq: int, replicates: int
) -> Iterator[np.ndarray]:
    """The sums of ``matrix``'s rows in every replicate, a block of replicates at a time
    ((R × rows) arrays, R at most :data:`~voirdire.analysis.stats.draws.DRAW_ROWS` and
    ``WEIGHT_BYTES // (16 nq)``), the counts taken from ``draws`` (the current stratum's:
    all ``replicates`` rows are taken, one empty block where there are none)."""
    step = max(1, min(DRAW_ROWS, WEIGHT_BYTES // (16 * max(nq, 1))))
    done = 0
    while True:
        w = draws.take(nq, min(step, replicates - done))
        out = np.empty((w.shape[0], matrix.shape[0]))
        if matrix.shape[0]:
            for i in range(0, w.shape[0], _PRODUCT_ROWS):
                out[i : i + _PRODUCT_ROWS] = (
                    matrix @ np.ascontiguousarray(w[i : i + _PRODUCT_ROWS].T)
                ).T
        yield out
        done += w.shape[0]
        if done >= replicates:
            return
