"""Our leaderboard beside a reference of the anchors' method, on the same verdicts (issue 42).

    python -m perf.bench_ranking_reference                 # 200 models x 2,500 questions x 2 orders
    python -m perf.bench_ranking_reference --smoke         # 8 models x 30 questions, 50 replicates (CI)
    python -m perf.bench_ranking_reference --style         # also style control, AlpacaEval 2's shape

The verdicts: ``--models`` models each against one baseline on every one of ``--questions``
questions, both orders (10⁶ comparisons by default; outcomes from Bradley–Terry with a tie
share, ``_verdicts``), the ``pooled`` board (Arena-Hard's design).

- **ours**: :func:`~voirdire.analysis.ranking.boards.fit_boards` (cell sums, the
  question-clustered bootstrap, every replicate fitted: the one-baseline board in closed
  form), ``--replicates`` replicates.
- **reference**, the anchors' method (FastChat's ``rating_systems.py`` after its PR 3523,
  written here from its description, not its code): the battles collapsed into unique
  (question, pair) counts of wins, ties and losses, each replicate's counts the question
  multinomial's weights times them (question-clustered, as ours, rather than FastChat's
  battle-level multinomial), and each replicate's Bradley–Terry fitted on its own by
  ``scipy.optimize.minimize(method="L-BFGS-B")`` (ties half a win), one replicate after
  another.

With ``--style``: style-controlled Bradley–Terry
(:func:`~voirdire.analysis.ranking.style.style_controlled`, 200 replicates) on a synthetic
of AlpacaEval 2's shape (``--style-models`` 57 models against one baseline on 805
instructions, one order: 45,875 verdicts; four style features), by the block Hessian, beside
the dense Hessian it replaces (``weighted_logit`` without ``pairs``) on ``--dense-replicates``
replicates, per replicate.

Printed: each one's wall and CPU seconds, the ratio, the load average, and how far their
figures are apart (ratings' largest gap; the intervals' ends, in units of the bootstrap's
Monte-Carlo error of a 2.5 % quantile, about ``sd · 2.2 / √R``: the two use different draws).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import polars as pl
from scipy import sparse
from scipy.optimize import minimize
from scipy.special import expit

from voirdire.analysis.ranking.boards import fit_boards
from voirdire.analysis.ranking.bt import SCALE


def _verdicts(models: int, questions: int, seed: int = 0) -> pl.DataFrame:
    """COMPARISON_SCHEMA rows: model ``m001..`` against ``m000`` on every question, twice."""
    rng = np.random.default_rng(seed)
    theta = np.r_[0.0, rng.normal(0, 0.7, models)]
    m = np.tile(np.repeat(np.arange(1, models + 1), questions), 2)
    q = np.tile(np.tile(np.arange(questions), models), 2)
    p = expit(theta[m] + rng.normal(0, 0.5, questions)[q])
    u = rng.random(m.size)
    tie = (u < 0.15).astype(float)
    win = ((u >= 0.15) & (rng.random(m.size) < p)).astype(float)
    return pl.DataFrame(
        {"question_id": q, "a": m, "win": win, "tie": tie}
    ).select(
        benchmark=pl.lit("sim"), judge=pl.lit("sim"), strategy=pl.lit("single"),
        view=pl.lit("pooled"), question_id=pl.format("q{}", pl.col("question_id").cast(pl.String).str.zfill(5)),
        a=pl.format("m{}", pl.col("a").cast(pl.String).str.zfill(3)), b=pl.lit("m000"),
        win="win", tie="tie",
    )  # fmt: skip


def reference(comps: pl.DataFrame, replicates: int, seed: int = 1) -> dict:
    """The anchors' method (module docstring): ratings (K,) and their 2.5/97.5 % ends (K,)
    on the Arena scale from the first model sorted by name (the anchor), models sorted."""
    models = sorted(set(comps["a"].to_list()) | set(comps["b"].to_list()))
    ix = {x: i for i, x in enumerate(models)}
    agg = comps.group_by("question_id", "a", "b").agg(
        w=pl.col("win").sum(), t=pl.col("tie").sum(),
        l=(1 - pl.col("win") - pl.col("tie")).sum(),
    )  # fmt: skip
    qid = agg["question_id"].to_numpy()
    uq, qi = np.unique(qid, return_inverse=True)
    pair = np.c_[
        agg["a"].replace_strict(ix).to_numpy(), agg["b"].replace_strict(ix).to_numpy()
    ]
    up, pi = np.unique(pair, axis=0, return_inverse=True)
    pi = pi.ravel()
    k, npair = len(models), up.shape[0]
    # per question the (pair) wins-with-half-ties of a over b and of b over a
    wa = agg["w"].to_numpy() + 0.5 * agg["t"].to_numpy()
    wb = agg["l"].to_numpy() + 0.5 * agg["t"].to_numpy()
    m_a = sparse.csr_matrix((wa, (qi, pi)), shape=(uq.size, npair))
    m_b = sparse.csr_matrix((wb, (qi, pi)), shape=(uq.size, npair))

    def fit(ca: np.ndarray, cb: np.ndarray, x0: np.ndarray) -> np.ndarray:
        i, j = up[:, 0], up[:, 1]

        def nll(x):
            d = x[i] - x[j]
            p = expit(d)
            g = np.bincount(i, ca * (1 - p) - cb * p, minlength=k)
            g -= np.bincount(j, ca * (1 - p) - cb * p, minlength=k)
            ll = ca * np.log(np.maximum(p, 1e-300)) + cb * np.log(
                np.maximum(1 - p, 1e-300)
            )
            return -ll.sum(), -g

        x = minimize(nll, x0, jac=True, method="L-BFGS-B").x
        return x - x[0]

    est = fit(m_a.sum(0).A1, m_b.sum(0).A1, np.zeros(k))
    rng = np.random.default_rng(seed)
    boot = np.empty((replicates, k))
    for r in range(replicates):
        w = rng.multinomial(uq.size, np.full(uq.size, 1.0 / uq.size)).astype(float)
        boot[r] = fit(m_a.T @ w, m_b.T @ w, np.zeros(k))
    lo, hi = np.quantile(boot, [0.025, 0.975], axis=0)
    return {
        "models": models,
        "rating": 1000 + SCALE * est,
        "lo": 1000 + SCALE * lo,
        "hi": 1000 + SCALE * hi,
        "sd": SCALE * boot.std(0),
    }


def _style_case(models: int, questions: int, replicates: int, dense: int) -> None:
    """Time style control on a synthetic of AlpacaEval 2's shape (module docstring)."""
    from voirdire.analysis.ranking import style

    rng = np.random.default_rng(2)
    comps = _verdicts(models, questions, seed=3).filter(pl.col("win") >= 0)
    comps = comps.head(comps.height // 2)  # one order
    keys = pl.concat([comps.select("benchmark", "question_id", model="a"),
                      comps.select("benchmark", "question_id", model="b")]).unique()  # fmt: skip
    feats = keys.with_columns(
        length=pl.Series(rng.lognormal(7, 0.6, keys.height)),
        headers=pl.Series(rng.poisson(1.0, keys.height).astype(float)),
        lists=pl.Series(rng.poisson(3.0, keys.height).astype(float)),
        bold=pl.Series(rng.poisson(2.0, keys.height).astype(float)),
    )
    print(f"style control: {models} models x {questions} instructions, one order "
          f"({comps.height:,} verdicts); load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    got, w1, c1 = timed(
        lambda: style.style_controlled(
            comps, feats, anchor="m000", replicates=replicates
        )
    )
    print(f"  blocks     {w1:8.2f} s wall {c1:8.2f} s CPU ({replicates} replicates)")
    saved = style.weighted_logit

    def dense_logit(*args, pairs=None, **kw):
        return saved(*args, **kw)

    style.weighted_logit = dense_logit
    try:
        old, w2, c2 = timed(
            lambda: style.style_controlled(
                comps, feats, anchor="m000", replicates=dense
            )
        )
    finally:
        style.weighted_logit = saved
    per1, per2 = c1 / (replicates + 1), c2 / (dense + 1)
    print(f"  dense      {w2:8.2f} s wall {c2:8.2f} s CPU ({dense} replicates)")
    print(f"  per fit: dense / blocks {per2 / max(per1, 1e-9):.1f}x CPU; "
          f"estimates' largest gap {np.nanmax(np.abs(got['rating'].to_numpy() - old['rating'].to_numpy())):.1e}")  # fmt: skip


def timed(f):
    """``f()``'s result, wall seconds and process CPU seconds."""
    t, c = time.perf_counter(), time.process_time()
    out = f()
    return out, time.perf_counter() - t, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=200)
    ap.add_argument("--questions", type=int, default=2500)
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--style", action="store_true", help="also time style control")
    ap.add_argument("--style-models", type=int, default=57)
    ap.add_argument("--style-questions", type=int, default=805)
    ap.add_argument("--style-replicates", type=int, default=200)
    ap.add_argument("--dense-replicates", type=int, default=2)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.models, a.questions, a.replicates = 8, 30, 50
        a.style, a.style_models, a.style_questions, a.style_replicates = True, 5, 40, 10
    comps = _verdicts(a.models, a.questions)
    print(f"{a.models} models x {a.questions} questions x 2 orders ({comps.height:,} verdicts), "
          f"{a.replicates} replicates; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")  # fmt: skip
    ours, w1, c1 = timed(
        lambda: fit_boards(comps, anchor="m000", replicates=a.replicates)
    )
    ref, w2, c2 = timed(lambda: reference(comps, a.replicates))
    print(f"  ours       {w1:8.2f} s wall {c1:8.2f} s CPU")
    print(f"  reference  {w2:8.2f} s wall {c2:8.2f} s CPU")
    print(f"  reference / ours: {w2 / w1:.2f}x wall, {c2 / max(c1, 1e-9):.2f}x CPU")
    t = ours.table.sort("model")
    assert t["model"].to_list() == ref["models"]
    gap = np.abs(t["rating"].to_numpy() - ref["rating"]).max()
    mc = (
        2.2 * ref["sd"][1:] / np.sqrt(a.replicates)
    )  # MC error of a 2.5 % quantile, roughly
    ends = np.r_[
        np.abs(t["lo"].to_numpy()[1:] - ref["lo"][1:]) / mc,
        np.abs(t["hi"].to_numpy()[1:] - ref["hi"][1:]) / mc,
    ]
    print(f"  ratings' largest gap {gap:.2e} points; interval ends apart by "
          f"{np.median(ends):.2f} (median), {ends.max():.2f} (max) Monte-Carlo errors")  # fmt: skip
    if a.style:
        _style_case(
            a.style_models, a.style_questions, a.style_replicates, a.dense_replicates
        )


if __name__ == "__main__":
    main()
