"""The two nulls of the order test, as draws of which units' verdicts change orders.

A *unit* is one (question, candidate, reference) of a judge and strategy, judged in both
orders. ``U`` units are *discordant*: their first-order and swapped-order verdicts differ
(swapping the others changes nothing). A draw is a row of a (n, U) 0/1 matrix: 1 where the
unit's verdicts of the two orders change places. Each null is drawn exactly (every
configuration once) when its configurations are no more than the draws asked for, else at
random from a seeded numpy generator.

- **Order-blind** (:func:`blind_swaps`): within every unit the verdicts of the two orders
  are exchangeable, so each unit swaps with probability ½, independently (Fisher's
  randomization test; Good 2005, *Permutation, Parametric and Bootstrap Tests of
  Hypotheses*, §3). Exact: the ``2^U`` swaps.
- **One slot preference common to every unit** (:func:`common_swaps`): the answer shown
  first gets the same ``δ`` added to its logit in every unit, whatever its size (0 included),
  while each unit keeps its own strengths (question, model and model-by-question effects
  alike): Bradley–Terry without ties, Davidson with them (``P(win) ∝ e^{λ/2}``, ``P(tie) ∝
  ν``, ``P(loss) ∝ e^{−λ/2}``, ``λ = η_u ± δ``; Davidson 1970). A unit whose first-order
  verdicts ``x`` and swapped ones ``y`` hold as many verdicts each has
  ``P(x, y) / P(y, x) = exp(δ · D)``, ``D = (wins − losses)_x − (wins − losses)_y``, which
  does not depend on the unit's strengths: given each unit's pair of outcomes, the
  directions ``sign D`` are independent with a probability that depends on ``|D|`` alone.
  Conditioning on the number of positive directions among the units of each ``|D|``
  (sufficient for ``δ``) leaves every arrangement of those directions equally likely: the
  draw permutes the directions within each class of ``|D|`` (units with ``D = 0`` but
  different outcomes swap with probability ½). The test is exact for every ``δ``, like
  the conditional test of McNemar (1947) for one pair of models; ``δ`` need not be
  estimated. Exact: every arrangement, ``Π_c C(n_c, k_c) · 2^{n_0}`` of them. A unit whose
  two orders hold different numbers of decided verdicts (a failure dropped) is swapped as a
  whole, as in the order-blind null; the argument above then holds only approximately.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

__all__ = ["SwapDraws", "blind_swaps", "common_swaps"]


@dataclass(frozen=True)
class SwapDraws:
    """Draws of one null: ``count`` draws (int), ``exact`` (bool: every configuration once,
    the observed among them), ``chunks(size)`` yields (n, U) bool matrices (True: the unit swaps), ``count``
    rows in all."""

    count: int
    exact: bool
    chunks: Callable[[int], Iterator[np.ndarray]]


def blind_swaps(u: int, permutations: int, rng: np.random.Generator) -> SwapDraws:
    """The order-blind null's draws for ``u`` discordant units: every one of the ``2^u``
    swaps (the bits of the draw's number) when ``2^u ≤ permutations``, else
    ``permutations`` draws, each unit swapped with probability ½."""
    exact = u < 31 and 2**u <= permutations
    count = 2**u if exact else permutations

    def chunks(size: int) -> Iterator[np.ndarray]:
        for lo in range(0, count, size):
            n = min(size, count - lo)
            if exact:
                yield ((np.arange(lo, lo + n)[:, None] >> np.arange(u)) & 1).astype(
                    bool
                )
            else:
                yield rng.random((n, u)) < 0.5

    return SwapDraws(count, exact, chunks)


def _classes(score: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The units of each class of ``|D|`` > 0 (``D``: ``score``, rounded to 1e-9) and the
    units with ``D = 0``."""
    mag = np.round(np.abs(score), 9)
    classes = [np.flatnonzero(mag == m) for m in np.unique(mag[mag > 0])]
    return classes, np.flatnonzero(mag == 0)


def _arrangements(n: int, k: int) -> np.ndarray:
    """(C(n, k), n) bool: every choice of ``k`` positive directions among ``n`` units."""
    out = np.zeros((math.comb(n, k), n), dtype=bool)
    for r, pos in enumerate(itertools.combinations(range(n), k)):
        out[r, list(pos)] = True
    return out


def common_swaps(
    score: np.ndarray, permutations: int, rng: np.random.Generator
) -> SwapDraws:
    """The common-preference null's draws (module docstring).

    Args:
        score: (U,) ``D`` of each discordant unit (first-order wins − losses minus
            swapped-order wins − losses).
        permutations: the draws asked for; when the arrangements are no more, every one of
            them instead (exact).
        rng: the generator of the random draws.
    """
    u = score.size
    positive = score > 0
    classes, zero = _classes(score)
    count = math.prod(math.comb(c.size, int(positive[c].sum())) for c in classes)
    exact = zero.size < 31 and count * 2**zero.size <= permutations
    if exact:
        count *= 2**zero.size
        tables = [_arrangements(c.size, int(positive[c].sum())) for c in classes]
        tables.append(
            ((np.arange(2**zero.size)[:, None] >> np.arange(zero.size)) & 1).astype(
                bool
            )
        )
        idx = [*classes, zero]
        every = np.zeros((count, u), dtype=bool)
        for r, combo in enumerate(itertools.product(*(range(len(t)) for t in tables))):
            for c, t, x in zip(idx[:-1], tables[:-1], combo[:-1]):
                every[r, c] = (
                    t[x] != positive[c]
                )  # a direction that changes: the unit swaps
            every[r, zero] = tables[-1][combo[-1]]
    else:
        count = permutations

    def chunks(size: int) -> Iterator[np.ndarray]:
        for lo in range(0, count, size):
            n = min(size, count - lo)
            if exact:
                yield every[lo : lo + n]
                continue
            s = np.zeros((n, u), dtype=bool)
            for c in classes:
                _permute_class(s, c, positive[c], n, rng)
            s[:, zero] = rng.random((n, zero.size)) < 0.5
            yield s

    return SwapDraws(count, exact, chunks)


#: a class of at least this many units is permuted row by row (:func:`_permute_class`)
_ROW_BY_ROW = 1024


def _permute_class(
    s: np.ndarray, c: np.ndarray, positive: np.ndarray, n: int, rng: np.random.Generator
) -> None:
    """Set ``s[:, c]`` (n rows) True where the class ``c``'s directions ``positive``, each
    row permuted at random, change: ``rng.permuted`` of the ``n`` rows, the same numbers
    and the same generator state after. A large class is permuted row by row instead, as
    ``positive[rng.permutation(c.size)]`` (numpy's Fisher–Yates of ``arange``: the same
    draws as :meth:`numpy.random.Generator.permuted` makes for a row, the same permutation;
    ``tests/test_order_nulls.py`` holds numpy to it), and a class whose directions are all
    one way (nothing changes) only takes the draws (a shuffle of the same length)."""
    if c.size < _ROW_BY_ROW:
        s[:, c] = (
            rng.permuted(np.broadcast_to(positive, (n, c.size)), axis=1) != positive
        )
        return
    if positive.all() or not positive.any():
        buf = np.arange(c.size)
        for _ in range(n):
            rng.shuffle(buf)  # the draws of a permutation of c.size
        return
    for r in range(n):
        s[r, c] = positive[rng.permutation(c.size)] != positive
