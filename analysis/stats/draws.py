"""The cluster bootstrap's multinomial counts, drawn ahead where a run knows its questions.

:func:`~voirdire.analysis.stats.bootstrap.cluster_bootstrap` weights each replicate by
multinomial counts: per stratum (in sorted order), ``B`` rows of ``Q`` counts of questions
drawn with replacement, from one numpy generator seeded ``seed``. The counts depend on the
seed, the number of replicates and the strata's sizes, never on the verdicts. They are
also the bootstrap's dearest part at scale: numpy draws one binomial per (replicate,
question), about 2.7 s of one core for 1,000 replicates of 50,000 questions (numpy 2.3
on the development machine), most of a 100,000-verdict audit's analysis.

A run knows its questions before its judges answer. :func:`prepare` draws the counts in a
thread at the lowest priority (numpy releases the GIL while it draws; on Linux the thread's
``nice`` is 19, so it takes a core only while the run's own work leaves one idle) while Ray
starts and the queries run;
:class:`Draws`, the source ``cluster_bootstrap`` takes its counts from, uses a prepared
draw whose key (seed, sizes, replicates) matches and draws from the generator otherwise:
the same numbers either way, so every figure is the same (``tests/test_bootstrap_draws.py``).

Prepared counts are kept in the smallest unsigned integer type that holds them (one byte
per count at 50,000 questions: 50 MB for 1,000 replicates), at most :data:`MAX_COUNTS`
counts in all; a preparation that would pass it evicts the oldest, or is not made.

An interpreter that exits stops the preparations' threads and waits for their current block
(:func:`_stop_all`, an ``atexit`` hook), so that it is never finalised under a thread inside
numpy (a run that failed, or was stopped, after its preparation began).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

__all__ = ["DRAW_ROWS", "MAX_COUNTS", "Draws", "prepare", "prepared_keys"]

#: Replicates drawn at a time where every per-question sum is a whole number: the weights
#: of one stratum are then ``DRAW_ROWS × Q`` floats (Q questions), not ``B × Q`` (at 50,000
#: questions and 1,000 replicates, 40 MB instead of 800), and the figures are the same
#: (the same multinomial stream, and sums of whole numbers do not depend on the order).
DRAW_ROWS = 100

#: The most counts kept drawn ahead, all preparations together (10⁸: 100 MB at one byte
#: per count).
MAX_COUNTS = 100_000_000

#: Replicates a preparation draws at a time (a consumer that overtakes it waits for at
#: most one such block, then draws the rest itself from the same generator).
AHEAD_ROWS = 20

#: (seed, questions per stratum in the strata's sorted order, replicates)
Key = tuple[int, tuple[int, ...], int]


def _multinomial(rng: np.random.Generator, nq: int, rows: int) -> np.ndarray:
    """``rows`` replicates of ``nq`` questions drawn with replacement: (rows × nq) counts."""
    return rng.multinomial(nq, np.full(nq, 1.0 / nq), size=rows)


def _yield_cpu() -> None:
    """Lower the calling thread's priority to the lowest (Linux's ``nice`` is per thread):
    a preparation draws while a core would be idle, never slowing the run's own work."""
    if sys.platform == "linux":
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except OSError:
            pass


class _Ahead:
    """One preparation: its generator and, per stratum, the counts drawn so far (blocks of
    :data:`AHEAD_ROWS` rows, the last of a stratum shorter), appended by a daemon thread at
    the lowest priority until all are drawn or :attr:`stop` is set."""

    def __init__(self, key: Key) -> None:
        self.key = key
        self.rng = np.random.default_rng(key[0])
        self.blocks: list[list[np.ndarray]] = [[] for _ in key[1]]
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(
            target=self._draw, name="voirdire-bootstrap-draws", daemon=True
        )

    @property
    def counts(self) -> int:
        _, sizes, replicates = self.key
        return sum(sizes) * replicates

    def _draw(self) -> None:
        _, sizes, replicates = self.key
        _yield_cpu()
        try:
            for got, nq in zip(self.blocks, sizes):
                for s in range(0, replicates, AHEAD_ROWS):
                    if self.stop.is_set():
                        return
                    w = _multinomial(self.rng, nq, min(AHEAD_ROWS, replicates - s))
                    got.append(w.astype(np.min_scalar_type(int(w.max()))))
        except BaseException as e:  # the consumer draws again from the seed
            self.error = e
        finally:
            with _lock:
                _running.discard(self)


_lock = threading.Lock()
_prepared: OrderedDict[Key, _Ahead] = OrderedDict()
#: the preparations whose thread is drawing (taken, evicted or not)
_running: set[_Ahead] = set()


def prepare(seed: int, sizes: Sequence[int], replicates: int) -> bool:
    """Start drawing, in a thread at the lowest priority, the counts a
    :func:`cluster_bootstrap <voirdire.analysis.stats.bootstrap.cluster_bootstrap>` with
    this ``seed``, strata of ``sizes`` questions (in the strata's sorted order) and
    ``replicates`` will take.

    Returns:
        True when such counts are being drawn or are ready (prepared now or before);
        False when nothing is prepared: a size or ``replicates`` below 1, or more than
        :data:`MAX_COUNTS` counts. Older preparations not yet taken are evicted, oldest
        first, to keep all of them within :data:`MAX_COUNTS`.
    """
    key = (int(seed), tuple(int(n) for n in sizes), int(replicates))
    if not key[1] or min(key[1]) < 1 or key[2] < 1:
        return False
    ahead = _Ahead(key)
    if ahead.counts > MAX_COUNTS:
        return False
    with _lock:
        if key in _prepared:
            return True
        while _prepared and (
            sum(a.counts for a in _prepared.values()) + ahead.counts > MAX_COUNTS
        ):
            _prepared.popitem(last=False)[1].stop.set()
        _prepared[key] = ahead
        _running.add(ahead)
    ahead.thread.start()
    return True


@atexit.register
def _stop_all() -> None:
    """Stop every preparation's thread and wait for its current block (one block of
    :data:`AHEAD_ROWS` rows: well under a second); ``atexit``."""
    with _lock:
        pending = list(_running)
    for ahead in pending:
        ahead.stop.set()
    for ahead in pending:
        if ahead.thread.is_alive():
            ahead.thread.join()


def prepared_keys() -> list[Key]:
    """The keys of the preparations not yet taken, oldest first."""
    with _lock:
        return list(_prepared)


class Draws:
    """The counts one ``cluster_bootstrap`` takes, stratum after stratum: a preparation's
    (:func:`prepare`) where one has this key, numpy's generator seeded ``seed`` otherwise.
    The numbers are the same: the rows the preparation has not drawn yet when they are
    needed are drawn here from its generator, which it has left where they begin.

    Args:
        seed: the generator's seed.
        sizes: questions per stratum, in the order the strata are drawn.
        replicates: rows each stratum takes in all.
    """

    def __init__(self, seed: int, sizes: Sequence[int], replicates: int) -> None:
        self.seed = int(seed)
        self.sizes = tuple(int(n) for n in sizes)
        self.replicates = int(replicates)
        with _lock:
            self._ahead = _prepared.pop((self.seed, self.sizes, self.replicates), None)
        self._rng = None if self._ahead else np.random.default_rng(self.seed)
        self._stratum = 0
        self._row = 0

    @property
    def prepared(self) -> bool:
        """Whether the counts come from a preparation."""
        return self._ahead is not None

    def take(self, nq: int, rows: int) -> np.ndarray:
        """The next ``rows`` replicates' counts of the current stratum ((rows × nq) float64).
        A stratum's :attr:`replicates` rows taken, the next stratum begins.

        Raises:
            ValueError: ``nq`` is not the current stratum's size, or more rows than it has.
        """
        if self._stratum >= len(self.sizes) or nq != self.sizes[self._stratum]:
            raise ValueError(f"bootstrap draws: no stratum of {nq} questions here")
        if self._row + rows > self.replicates:
            raise ValueError(f"bootstrap draws: {rows} rows past the stratum's last")
        if self._ahead is not None:
            parts = self._prepared_rows(nq, rows)
        else:
            parts = [_multinomial(self._rng, nq, rows)]  # type: ignore[arg-type]
        self._row += rows
        if self._row == self.replicates:
            self._stratum, self._row = self._stratum + 1, 0
        return (parts[0] if len(parts) == 1 else np.concatenate(parts)).astype(float)

    def _blocks(self, rows: int) -> list[np.ndarray]:
        """Up to ``rows`` of the current stratum's rows, from the preparation's blocks."""
        blocks = self._ahead.blocks[self._stratum]  # type: ignore[union-attr]
        b, off = divmod(self._row, AHEAD_ROWS)
        parts = []
        while rows > 0 and b < len(blocks):
            parts.append(blocks[b][off : off + rows])
            rows -= len(parts[-1])
            b, off = b + 1, 0
        return parts

    def _prepared_rows(self, nq: int, rows: int) -> list[np.ndarray]:
        """``rows`` rows from the preparation: those it drew, then (its thread stopped, its
        generator left where they end) the rest from its generator; where its thread
        failed, from a new generator seeded alike and moved past the rows taken before."""
        ahead = self._ahead
        assert ahead is not None
        parts = self._blocks(rows)
        if sum(map(len, parts)) < rows:
            ahead.stop.set()
            ahead.thread.join()
            if ahead.error is not None:
                self._ahead, self._rng = None, self._moved_past()
                return [_multinomial(self._rng, nq, rows)]
            parts = self._blocks(rows)  # and what it drew while it stopped
            left = rows - sum(map(len, parts))
            if left:
                parts.append(_multinomial(ahead.rng, nq, left))
        return parts

    def _moved_past(self) -> np.random.Generator:
        """A generator seeded ``seed`` that has drawn every row taken so far."""
        rng = np.random.default_rng(self.seed)
        for i in range(self._stratum + 1):
            past = self.replicates if i < self._stratum else self._row
            for s in range(0, past, DRAW_ROWS):
                _multinomial(rng, self.sizes[i], min(DRAW_ROWS, past - s))
        return rng
