"""The cluster bootstrap's draws (:func:`voirdire.analysis.stats.bootstrap.cluster_bootstrap`).

The multinomial weights are drawn ``DRAW_ROWS`` replicates at a time; the figures must be
those of one draw of all the replicates from the same seed, multiplied densely (that
computation written out here): bit for bit where every per-question sum is a whole number,
to rounding where they are fractional (the sparse sums add a replicate's questions in their
order, the dense product in BLAS's). The weights of a large stratum must not be held all at
once.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import polars as pl
import pytest

from voirdire.analysis.stats.bootstrap import cluster_bootstrap
from voirdire.analysis.stats.draws import DRAW_ROWS


def _ratio(s):
    return {"ratio": s["x"].sum(axis=1) / s["y"].sum(axis=1)}


def _centred(s):
    """Not row by row: each replicate's ratio less the mean over all the replicates (as a
    board fitted to every replicate at once depends on them all)."""
    r = _ratio(s)["ratio"]
    return {"ratio": r - r.mean()}


def _rows(rng, strata: dict[str, int], whole: bool) -> pl.DataFrame:
    """Rows of two judges over the questions of each stratum (name -> questions)."""
    out = []
    for bench, nq in strata.items():
        for judge in ("j1", "j2"):
            n = 3 * nq
            x = rng.integers(0, 3, n).astype(float)
            y = x + rng.integers(1, 3, n)
            if not whole:
                x = x + rng.random(n) / 7
            out.append(
                pl.DataFrame(
                    {
                        "benchmark": bench,
                        "judge": judge,
                        "question_id": [f"q{i % nq}" for i in range(n)],
                        "x": x,
                        "y": y,
                    }
                )  # fmt: skip
            )
    return pl.concat(out)


def _strata_case(rng, whole: bool):
    """Rows of three strata (``a`` listed in ``questions`` without rows), the questions
    per stratum and the ``questions`` frame."""
    rows = _rows(rng, {"b": 40, "c": 25}, whole)
    qs = {
        "a": [f"q{i}" for i in range(30)],  # no rows
        "b": [f"q{i}" for i in range(40)],
        "c": [f"q{i}" for i in range(25)],
    }
    questions = pl.DataFrame(
        [(b, q) for b, ids in qs.items() for q in ids],
        schema=["benchmark", "question_id"],
        orient="row",
    )
    return rows, qs, questions


def _one_draw(rows, questions, replicates: int, seed: int, stat) -> dict[tuple, tuple]:
    """(benchmark, judge) -> (estimate, lo, hi): every stratum's weights drawn at once,
    the strata in sorted order, from one generator."""
    rng = np.random.default_rng(seed)
    out = {}
    for bench in sorted(questions):
        qids = sorted(questions[bench])
        nq = len(qids)
        w = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=replicates).astype(float)
        part = rows.filter(pl.col("benchmark") == bench)
        for judge in part.get_column("judge").unique(maintain_order=True).to_list():
            g = part.filter(pl.col("judge") == judge)
            q = np.array([qids.index(x) for x in g.get_column("question_id").to_list()])
            mats = {}
            for c in ("x", "y"):
                m = np.zeros((1, nq))
                np.add.at(m, (np.zeros_like(q), q), g.get_column(c).to_numpy())
                mats[c] = m
            est = stat({c: np.ones((1, nq)) @ m.T for c, m in mats.items()})["ratio"]
            boot = stat({c: w @ m.T for c, m in mats.items()})["ratio"]
            tail = (
                1.0 - 0.95
            ) / 2.0  # the level's quantiles, as cluster_bootstrap takes them
            lo, hi = np.quantile(boot[np.isfinite(boot)], [tail, 1.0 - tail])
            out[(bench, judge)] = (float(est[0]), float(lo), float(hi))
    return out


def _figures(ci: pl.DataFrame) -> dict[tuple, tuple]:
    return {
        (r["benchmark"], r["judge"]): (r["estimate"], r["lo"], r["hi"])
        for r in ci.iter_rows(named=True)
    }


def _same(got: dict, want: dict, whole: bool) -> bool:
    """Bit for bit with whole sums; to rounding (1e-12 relative) with fractional ones."""
    if whole:
        return got == want
    return got.keys() == want.keys() and all(
        got[k] == pytest.approx(want[k], rel=1e-12, abs=0) for k in want
    )


def test_draws_in_blocks_give_the_figures_of_one_draw():
    """Whole-number sums and fractional ones alike; a stratum listed in ``questions``
    without rows still takes its draw, so the strata after it keep theirs; a replicate
    count that is not a multiple of the block; a statistic computed over all the
    replicates at once sees them all at once."""
    rng = np.random.default_rng(5)
    replicates = 2 * DRAW_ROWS + DRAW_ROWS // 2
    for whole, stat in ((True, _ratio), (False, _ratio), (True, _centred)):
        rows, qs, questions = _strata_case(rng, whole)
        ci = cluster_bootstrap(
            rows, ["x", "y"], stat, groups=["judge"], questions=questions,
            replicates=replicates, seed=3,
        )  # fmt: skip
        assert _same(_figures(ci), _one_draw(rows, qs, replicates, 3, stat), whole)


def test_a_large_stratum_is_not_drawn_all_at_once():
    """20,000 questions x 1,000 replicates: one draw would hold 2 x 160 MB of weights (the
    counts and their floats); in blocks, 2 x 16 MB."""
    nq, replicates = 20_000, 1000
    rows = pl.DataFrame({
        "benchmark": "b", "judge": "j", "question_id": [f"q{i}" for i in range(nq)],
        "x": np.arange(nq) % 2, "y": np.ones(nq),
    })  # fmt: skip
    tracemalloc.start()
    ci = cluster_bootstrap(
        rows, ["x", "y"], _ratio, groups=["judge"], replicates=replicates
    )
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert ci.get_column("estimate").to_list() == [0.5]
    assert peak < 64 * 2**20, peak


def test_counts_drawn_ahead_give_the_same_figures_and_are_taken_once(monkeypatch):
    """A preparation with the bootstrap's key (seed, strata sizes in sorted order,
    replicates) is used (numpy's generator is not asked) and removed; the figures are
    those of one draw of all the replicates, whole sums and fractional ones, a replicate
    count off the block and one under it."""
    from voirdire.analysis.stats import draws

    rng = np.random.default_rng(11)
    made: list[bool] = []
    real = draws.Draws.__init__

    def spy(self, *a, **kw):
        real(self, *a, **kw)
        made.append(self.prepared)

    monkeypatch.setattr(draws.Draws, "__init__", spy)
    for whole, replicates in ((True, 2 * DRAW_ROWS + 7), (False, 2 * DRAW_ROWS + 7),
                              (True, DRAW_ROWS // 2)):  # fmt: skip
        rows, qs, questions = _strata_case(rng, whole)
        assert draws.prepare(4, [30, 40, 25], replicates)
        assert draws.prepared_keys() == [(4, (30, 40, 25), replicates)]
        made.clear()
        ci = cluster_bootstrap(
            rows, ["x", "y"], _ratio, groups=["judge"], questions=questions,
            replicates=replicates, seed=4,
        )  # fmt: skip
        assert made == [True], made
        assert draws.prepared_keys() == []
        assert _same(_figures(ci), _one_draw(rows, qs, replicates, 4, _ratio), whole)


def test_a_preparation_of_another_key_is_left_and_the_bootstrap_draws_itself():
    from voirdire.analysis.stats import draws

    rows, qs, questions = _strata_case(np.random.default_rng(2), True)
    assert draws.prepare(4, [30, 40, 26], 150)  # one question more than the data's
    try:
        ci = cluster_bootstrap(
            rows, ["x", "y"], _ratio, groups=["judge"], questions=questions,
            replicates=150, seed=4,
        )  # fmt: skip
        assert _figures(ci) == _one_draw(rows, qs, 150, 4, _ratio)
        assert draws.prepared_keys() == [(4, (30, 40, 26), 150)]
    finally:
        draws._prepared.clear()


def test_preparations_stay_within_their_memory_bound(monkeypatch):
    """More than MAX_COUNTS counts is not prepared; older preparations not yet taken are
    evicted, oldest first, to make room; nothing is prepared without questions."""
    from voirdire.analysis.stats import draws

    monkeypatch.setattr(draws, "MAX_COUNTS", 10_000)
    try:
        assert not draws.prepare(0, [101], 100)
        assert not draws.prepare(0, [], 100)
        assert not draws.prepare(0, [0, 5], 100)
        assert draws.prepare(0, [40], 100) and draws.prepare(1, [40], 100)
        assert draws.prepare(2, [40], 100)  # 12,000 counts: the oldest goes
        assert draws.prepared_keys() == [(1, (40,), 100), (2, (40,), 100)]
        assert draws.prepare(2, [40], 100)  # already there
        assert draws.prepared_keys() == [(1, (40,), 100), (2, (40,), 100)]
    finally:
        draws._prepared.clear()


def test_a_stratum_of_another_size_or_too_many_rows_is_refused():
    from voirdire.analysis.stats.draws import Draws

    d = Draws(0, [5, 7], 10)
    with pytest.raises(ValueError, match="no stratum of 7"):
        d.take(7, 3)
    d.take(5, 10)
    with pytest.raises(ValueError, match="past the stratum"):
        d.take(7, 11)
    assert d.take(7, 10).shape == (10, 7)


class _StopAfter:
    """A preparation's stop flag that also reads as set once ``k`` blocks of its first
    stratum are drawn: the bootstrap overtakes it there."""

    def __init__(self, ahead, k: int) -> None:
        import threading

        self.ahead, self.k, self.real = ahead, k, threading.Event()

    def is_set(self) -> bool:
        return self.real.is_set() or len(self.ahead.blocks[0]) >= self.k

    def set(self) -> None:
        self.real.set()


class _FailsAfter:
    """A generator that raises on its ``k``-th draw (the preparation's thread fails)."""

    def __init__(self, rng, k: int) -> None:
        self.rng, self.k = rng, k

    def multinomial(self, *a, **kw):
        self.k -= 1
        if self.k < 0:
            raise MemoryError("injected")
        return self.rng.multinomial(*a, **kw)


@pytest.mark.parametrize("how", ["stopped", "failed"])
def test_a_preparation_overtaken_or_failed_gives_the_same_figures(monkeypatch, how):
    """The bootstrap takes the rows a preparation drew, then: after it stopped part-way,
    the rest from its generator; after its thread failed, the rest from a new generator
    moved past the rows taken. Either way the figures of one draw."""
    from voirdire.analysis.stats import draws

    real_init = draws._Ahead.__init__

    def init(self, key):
        real_init(self, key)
        if how == "stopped":
            self.stop = _StopAfter(self, 3)
        else:
            self.rng = _FailsAfter(
                self.rng, 3 + (2 * DRAW_ROWS + 7) // draws.AHEAD_ROWS
            )

    monkeypatch.setattr(draws._Ahead, "__init__", init)
    rows, qs, questions = _strata_case(np.random.default_rng(8), True)
    assert draws.prepare(4, [30, 40, 25], 2 * DRAW_ROWS + 7)
    ahead = draws._prepared[(4, (30, 40, 25), 2 * DRAW_ROWS + 7)]
    ahead.thread.join()
    assert (ahead.error is None) == (how == "stopped")
    ci = cluster_bootstrap(
        rows, ["x", "y"], _ratio, groups=["judge"], questions=questions,
        replicates=2 * DRAW_ROWS + 7, seed=4,
    )  # fmt: skip
    assert _figures(ci) == _one_draw(rows, qs, 2 * DRAW_ROWS + 7, 4, _ratio)
    assert draws.prepared_keys() == []


@pytest.mark.process
def test_an_exiting_interpreter_stops_the_preparations_first():
    """A process that exits while counts are being drawn (a run that failed after its
    preparation began) stops the drawing thread and waits for its block before the
    interpreter is finalised: no thread is left inside numpy then."""
    import subprocess
    import sys

    from tests.repo import repo_pythonpath

    code = (
        "import atexit, threading\n"
        "atexit.register(lambda: print('alive at exit:', any("
        "t.name == 'voirdire-bootstrap-draws' and t.is_alive()"
        " for t in threading.enumerate()), flush=True))\n"
        "from voirdire.analysis.stats import draws\n"
        "assert draws.prepare(0, [50_000, 40_000], 1000)\n"
        "print('drawing:', any(t.name == 'voirdire-bootstrap-draws'"
        " for t in threading.enumerate()), flush=True)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "PYTHONPATH": repo_pythonpath()},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split("\n")[:2] == ["drawing: True", "alive at exit: False"]
