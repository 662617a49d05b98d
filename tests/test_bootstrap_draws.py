"""The cluster bootstrap's draws (:func:`voirdire.analysis.position.bootstrap.cluster_bootstrap`).

Where every per-question sum is a whole number, the multinomial weights are drawn
``DRAW_ROWS`` replicates at a time; the figures must be those of one draw of all the
replicates from the same seed (checked against that computation written out here), and
the weights of a large stratum must not be held all at once.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import polars as pl

from voirdire.analysis.position.bootstrap import DRAW_ROWS, cluster_bootstrap


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


def test_draws_in_blocks_give_the_figures_of_one_draw():
    """Whole-number sums (drawn in blocks) and fractional ones (drawn at once) alike; a
    stratum listed in ``questions`` without rows still takes its draw, so the strata after
    it keep theirs; a replicate count that is not a multiple of the block; a statistic
    computed over all the replicates at once sees them all at once."""
    rng = np.random.default_rng(5)
    replicates = 2 * DRAW_ROWS + DRAW_ROWS // 2
    for whole, stat in ((True, _ratio), (False, _ratio), (True, _centred)):
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
        ci = cluster_bootstrap(
            rows, ["x", "y"], stat, groups=["judge"], questions=questions,
            replicates=replicates, seed=3,
        )  # fmt: skip
        assert _figures(ci) == _one_draw(rows, qs, replicates, 3, stat), whole


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
