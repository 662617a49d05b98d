"""The cluster bootstrap's sums held sparse (:mod:`voirdire.analysis.stats.sparse_sums`).

The figures are those of the dense computation the engine replaced (written out here as
the reference: a (cells × questions) matrix per group and value, ``w @ M.T`` per replicate),
bit for bit where the sums are whole numbers; and the memory the bootstrap allocates
follows the rows of the data, not cells × questions (nor replicates × questions).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import polars as pl
import pytest

from voirdire.analysis.stats.bootstrap import cluster_bootstrap


def _dense_reference(
    rows, values, stat, *, groups, cells, strata, questions, replicates, level, seed
):
    """The engine before sparse sums, reduced to its arithmetic: per stratum (sorted) one
    draw of every replicate, per group (first appearance) a dense (U × Q) matrix per value
    (cells in the order of their first appearance in the group), replicates ``w @ M.T``."""
    rng = np.random.default_rng(seed)
    qs = questions.select(*strata, "question_id").unique()
    out = {}
    for key in qs.select(strata).unique().sort(strata).iter_rows():
        where = pl.all_horizontal([pl.col(c) == v for c, v in zip(strata, key)])
        qids = qs.filter(where).get_column("question_id").sort().to_list()
        nq, at = len(qids), {q: i for i, q in enumerate(qids)}
        w = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=replicates).astype(float)
        part = rows.filter(where)
        found = part.group_by(groups, maintain_order=True) if groups else [((), part)]
        for gkey, grp in found:
            ck = grp.select(cells).unique(maintain_order=True).rows() if cells else [()]
            u_of = {c: i for i, c in enumerate(ck)}
            u = (
                [u_of[r] for r in grp.select(cells).rows()]
                if cells
                else [0] * grp.height
            )
            q = [at[x] for x in grp.get_column("question_id").to_list()]
            mats = {}
            for c in values:
                m = np.zeros((len(ck), nq))
                np.add.at(m, (u, q), grp.get_column(c).fill_null(0).to_numpy())
                mats[c] = m
            est = stat({c: np.ones((1, nq)) @ m.T for c, m in mats.items()})
            boot = stat({c: w @ m.T for c, m in mats.items()})
            for metric, e in est.items():
                b = np.asarray(boot[metric])
                b2 = b[:, None] if b.ndim == 1 else b
                e2 = np.asarray(e).reshape(1, -1)
                for i, cell in enumerate(ck if np.ndim(e) == 2 else [()]):
                    col = b2[:, i]
                    col = col[np.isfinite(col)]
                    lo, hi = np.quantile(col, [(1 - level) / 2, (1 + level) / 2])
                    out[(*key, *gkey, *cell, metric)] = (float(e2[0, i]), lo, hi)
    return out


def _table(ci: pl.DataFrame, keys: list[str]) -> dict:
    return {
        (*(r[k] for k in keys), r["metric"]): (r["estimate"], r["lo"], r["hi"])
        for r in ci.iter_rows(named=True)
    }


def _pc_like(s):
    """A pooled ratio (per group) and a per-cell share (per cell), as PC and PF are."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "ratio": s["x"].sum(axis=1) / s["y"].sum(axis=1),
            "share": (s["x"] - s["z"]) / s["y"],
        }


def _rows(rng, n: int) -> pl.DataFrame:
    """Two benchmarks, three judges, cells (candidate, task) that meet few questions, every
    question's rows repeated (sums of several rows), a null task, nulls among the values."""
    bench = rng.choice(["b1", "b2"], n)
    x = rng.integers(0, 4, n).astype(float)
    y = x + rng.integers(1, 3, n)
    z = np.where(rng.random(n) < 0.3, np.nan, rng.integers(0, 2, n))
    return pl.DataFrame({
        "benchmark": bench, "judge": rng.choice(["j1", "j2", "j3"], n),
        "candidate": rng.choice([f"c{i}" for i in range(12)], n),
        "task": pl.Series(rng.choice(["t1", "t2", None], n), dtype=pl.String),
        "question_id": [f"q{i}" for i in rng.integers(0, 40, n)],
        "x": x, "y": y, "z": pl.Series(z).fill_nan(None),
    })  # fmt: skip


@pytest.mark.parametrize("replicates", [7, 250])
def test_sparse_sums_give_the_dense_figures_bit_for_bit(replicates):
    """Groups, cells (with a null key), two strata, a question listed without rows, a
    question's rows summed, nulls as 0: every estimate and interval equals the dense
    computation's exactly (whole-number sums)."""
    rows = _rows(np.random.default_rng(3), 900)
    questions = pl.concat([
        rows.select("benchmark", "question_id"),
        pl.DataFrame({"benchmark": ["b1", "b2"], "question_id": ["q-none", "q-none"]}),
    ])  # fmt: skip
    common = dict(
        groups=["judge"], cells=["candidate", "task"], strata=["benchmark"],
        questions=questions, replicates=replicates, level=0.9, seed=11,
    )  # fmt: skip
    ci = cluster_bootstrap(rows, ["x", "y", "z"], _pc_like, **common)
    got = _table(ci, ["benchmark", "judge", "candidate", "task"])
    want = _dense_reference(rows, ["x", "y", "z"], _pc_like, **common)
    assert {k[:2] + k[-1:] for k in got if k[-1] == "ratio"} == {
        k[:2] + k[-1:] for k in want if k[-1] == "ratio"
    }
    flat = {
        (k[0], k[1], None, None, "ratio") if k[-1] == "ratio" else k: v
        for k, v in want.items()
    }
    assert got == flat


def test_long_rows_give_the_figures_of_wide_rows():
    """The same sums given a row per (value, amount) instead of a column per value."""
    rows = _rows(np.random.default_rng(4), 600).with_columns(pl.col("z").fill_null(0))
    common = dict(groups=["judge"], cells=["candidate"], replicates=120, seed=2)
    wide = cluster_bootstrap(rows, ["x", "y", "z"], _pc_like, **common)
    long = rows.unpivot(
        ["x", "y", "z"], index=["benchmark", "judge", "candidate", "question_id"],
        variable_name="value", value_name="amount",
    )  # fmt: skip
    got = cluster_bootstrap(long, ["x", "y", "z"], _pc_like, long=True, **common)
    assert got.equals(wide)
    # the value given by its index in ``values`` instead of its name
    codes = long.with_columns(
        value=pl.col("value").replace_strict(
            {"x": 0, "y": 1, "z": 2}, return_dtype=pl.Int64
        )
    )
    got = cluster_bootstrap(codes, ["x", "y", "z"], _pc_like, long=True, **common)
    assert got.equals(wide)


@pytest.mark.parametrize("replicates", [1, 70])
def test_replicate_sums_of_fractional_values_are_the_one_replicate_products(replicates):
    """The replicates' sums, taken several replicates per sparse product, are bit for bit
    the products of one replicate at a time, on fractional values too (70: not a whole
    number of products)."""
    from scipy import sparse

    from voirdire.analysis.stats.draws import Draws
    from voirdire.analysis.stats.sparse_sums import replicate_blocks

    rng = np.random.default_rng(8)
    m = sparse.random(
        300,
        50,
        density=0.3,
        format="csr",
        rng=rng,
        data_rvs=lambda n: rng.normal(size=n),
    )
    got = np.concatenate(
        list(replicate_blocks(m, Draws(4, [50], replicates), 50, replicates))
    )
    w = Draws(4, [50], replicates).take(50, replicates)
    want = np.stack([m @ w[i] for i in range(replicates)])
    assert got.shape == (replicates, 300) and np.array_equal(got, want)


def test_the_bootstrap_builds_no_cells_by_questions_matrix():
    """300 cells × 20,000 questions, 6 values, one row per question: dense, one value's
    matrix alone is 48 MB (288 MB for the six); the sparse sums, the counts
    (:data:`~voirdire.analysis.stats.sparse_sums.WEIGHT_BYTES` at a time) and every other
    array the bootstrap allocates stay under 64 MB."""
    nq, n_cells = 20_000, 300
    rng = np.random.default_rng(0)
    rows = pl.DataFrame({
        "benchmark": "b", "judge": "j", "candidate": [f"c{i % n_cells}" for i in range(nq)],
        "question_id": [f"q{i}" for i in range(nq)],
        **{v: rng.integers(0, 3, nq).astype(float) for v in "abcdef"},
    })  # fmt: skip

    def stat(s):
        return {"m": s["a"].sum(axis=1) / np.maximum(s["b"].sum(axis=1), 1)}

    tracemalloc.start()
    ci = cluster_bootstrap(
        rows,
        list("abcdef"),
        stat,
        groups=["judge"],
        cells=["candidate"],
        replicates=200,
    )
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert ci.height == 1 and np.isfinite(ci.item(0, "lo"))
    assert peak < 64 * 2**20, peak


def test_a_leaderboard_builds_no_questions_by_cells_by_models_array():
    """40 models against one baseline, a question per pair (AlpacaEval's shape: 6,000
    questions): dense, the wins and ties per (question, cell, opponent) were 6,000 × 41 ×
    41 floats each (81 MB), and the bootstrap's sums 82 values × 41 cells × 6,000
    questions (161 MB); counted sparse, the fit allocates under 40 MB."""
    from voirdire.analysis.ranking.boards import fit_boards

    rng = np.random.default_rng(1)
    models, per = 40, 150
    m = np.repeat(np.arange(models), per)
    comps = pl.DataFrame({
        "benchmark": "b", "judge": "j", "strategy": "single", "view": "pooled",
        "question_id": [f"i{i % per}|m{k}" for i, k in enumerate(m)],
        "a": [f"m{k:02d}" for k in m], "b": "base",
        "win": (rng.random(m.size) < 0.4).astype(float), "tie": 0.0,
    })  # fmt: skip
    tracemalloc.start()
    boards = fit_boards(comps, replicates=20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert boards.table.height == models + 1
    assert peak < 40 * 2**20, peak


def test_unique_codes_are_numpys_unique_with_its_inverse():
    """The packed sort gives numpy.unique's codes and inverse: empty, one code, many
    repeats, and codes too large to pack beside their positions (numpy's own path)."""
    from voirdire.analysis.stats.sparse_sums import unique_codes

    rng = np.random.default_rng(9)
    cases = [np.zeros(0, np.int64), np.array([7]), rng.integers(0, 50, 10_000),
             rng.integers(0, 2**40, 3000), rng.integers(2**55, 2**62, 500)]  # fmt: skip
    for x in cases:
        codes, inv = unique_codes(x)
        want, want_inv = np.unique(x, return_inverse=True)
        assert np.array_equal(codes, want) and np.array_equal(inv, want_inv.ravel())
        assert inv.dtype == np.int64 and np.array_equal(codes[inv], x)
