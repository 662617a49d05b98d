"""gold board of PandaLM's five models, from the test set's majority labels.

    python -m perf.pandalm_people [--data DIR] [--replicates 1000]
    python -m perf.pandalm_people --smoke     # a simulated test set in PandaLM's format (CI)

Reads the converted release (``voirdire data fetch pandalm``; ``--data`` or the usual lookup,
:func:`voirdire.benchmarks.releases.catalogue.locate`) and prints:

1. **Bradley–Terry ratings** (Bradley & Terry 1952): ``P(i beats j) = σ(θ_i − θ_j)``, fitted
   by maximum likelihood on every pair's majority label, a tie counting as half a win and
   half a loss (the Chatbot Arena convention); on Arena's scale, ``rating = 1000 + 400/ln 10
   · θ`` with the anchor (``llama-7b``) at 1000. Intervals: cluster bootstrap over questions
   (the distinct instruction + input, 170 of them, PandaLM's declared clusters), 95 %
   percentile; rank = 1 + the number of models whose interval lies wholly above (Arena's rule).
   The board is the ranking stage's gold board (``voirdire rank`` on any PandaLM job
   gives the same figures with ``--anchor llama-7b``).
2. **An independent check**: statsmodels ``Logit`` on the expanded design (each item twice:
   a win as two wins, a tie as one win and one loss; one column per model but the anchor,
   ``+1`` for the first model, ``−1`` for the second, no intercept); the largest difference
   of θ is printed and must be below 1e-6.
3. **Win rates**: each model's share of its comparisons won (ties half), and against each
   other model.
4. **The annotators**: each one's agreement with the majority and with each other (Cohen's
   κ; Fleiss' κ of the three), and the ranking each annotator's labels alone give
   (Kendall τ against the majority's).

``--smoke`` draws a test set of the same shape (170 questions, the 10 pairs of 5 models,
labels from known strengths with ties) and checks that the fit recovers the strengths and
agrees with the Logit fit.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

ANCHOR = "llama-7b"
SCALE = 400 / math.log(10)
SMOKE_STRENGTHS = {
    "bloom-7b": 0.1,
    "cerebras-gpt-6.7B": -0.5,
    "llama-7b": 0.0,
    "opt-7b": -0.3,
    "pythia-6.9b": 0.2,
}


def outcomes(pairs: pl.DataFrame, label: str = "label") -> pl.DataFrame:
    """One row per item: ``question_id`` (the question group, str), ``a``, ``b`` (the two
    models, sorted), ``s`` (f64: a's score, 1 win, 0.5 tie, 0 loss) from the label column
    (1/2 = response1/response2 better, 0 = tie)."""
    first = pl.col("model_1") < pl.col("model_2")
    s1 = (
        pl.when(pl.col(label) == 1)
        .then(1.0)
        .when(pl.col(label) == 2)
        .then(0.0)
        .otherwise(0.5)
    )
    return pairs.select(
        question_id=pl.col("prompt").cast(pl.String),
        a=pl.when(first).then("model_1").otherwise("model_2"),
        b=pl.when(first).then("model_2").otherwise("model_1"),
        s=pl.when(first).then(s1).otherwise(1.0 - s1),
    )


def bt_fit(
    models: list[str],
    a: np.ndarray,
    b: np.ndarray,
    wins: np.ndarray,
    n: np.ndarray,
    anchor: int,
) -> np.ndarray:
    """Bradley–Terry θ (natural log-odds scale, θ[anchor] = 0) by Newton's method on the
    log-likelihood ``Σ wins·log σ(θ_a − θ_b) + (n − wins)·log σ(θ_b − θ_a)``, for R tables at
    once.

    Args:
        a, b: (U,) model indices of each comparison cell; wins, n: (R, U) a's wins (ties
            half) and comparisons per cell and table.
    Returns:
        (R, K) θ; NaN where a table's fit does not converge (a model that never loses or wins).
    """
    r, k = wins.shape[0], len(models)
    free = [i for i in range(k) if i != anchor]
    design = np.zeros((len(a), k))
    design[np.arange(len(a)), a] = 1.0
    design[np.arange(len(a)), b] = -1.0
    x = design[:, free]  # (U, K-1)
    beta = np.zeros((r, k - 1))
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(beta @ x.T)))  # (R, U)
        grad = (wins - n * p) @ x
        hess = np.einsum("ru,ui,uj->rij", n * p * (1 - p), x, x)
        step = np.linalg.solve(hess + 1e-12 * np.eye(k - 1), grad[..., None])[..., 0]
        beta += step
        if np.max(np.abs(step)) < 1e-12:
            break
    theta = np.zeros((r, k))
    theta[:, free] = beta
    theta[
        ~np.all(np.isfinite(theta), axis=1) | (np.max(np.abs(theta), axis=1) > 50)
    ] = np.nan
    return theta


def cells(out: pl.DataFrame, models: list[str]) -> pl.DataFrame:
    """Per (question, pair): ``question_id``, ``pair`` ("a|b"), ``w`` (a's wins), ``n``."""
    sums = out.group_by("question_id", "a", "b", maintain_order=True).agg(
        w=pl.col("s").sum(), n=pl.len().cast(pl.Float64)
    )
    return sums.with_columns(
        pair=pl.col("a") + "|" + pl.col("b"), benchmark=pl.lit("PandaLM")
    )


def leaderboard(
    pairs: pl.DataFrame, out: pl.DataFrame, anchor: str, replicates: int, seed: int = 0
) -> pl.DataFrame:
    """model, rating, lo, hi (Arena scale), rank, win_rate, n: the gold board of the
    ranking stage (:func:`~voirdire.analysis.ranking.boards.fit_boards`, one comparison per
    item from its majority label) with the cluster bootstrap drawing PandaLM's declared
    clusters, its questions (:meth:`~voirdire.benchmarks.pandalm.PandaLM.clusters`)."""
    from voirdire.analysis.ranking.boards import fit_boards
    from voirdire.analysis.ranking.gold import GOLD
    from voirdire.analysis.ranking.order_views import COMPARISON_SCHEMA

    first = pl.col("model_1") < pl.col("model_2")
    s1 = (
        pl.when(pl.col("label") == 1)
        .then(1.0)
        .when(pl.col("label") == 2)
        .then(0.0)
        .otherwise(0.5)
    )
    s = pl.when(first).then(s1).otherwise(1.0 - s1)
    comps = pairs.select(
        benchmark=pl.lit("PandaLM"), judge=pl.lit(GOLD), strategy=pl.lit(GOLD), view=pl.lit(GOLD),
        question_id="id", a=pl.when(first).then("model_1").otherwise("model_2"),
        b=pl.when(first).then("model_2").otherwise("model_1"), win=(s == 1.0).cast(pl.Float64),
        tie=(s == 0.5).cast(pl.Float64),
    ).cast(COMPARISON_SCHEMA)  # fmt: skip
    clusters = pairs.select(
        benchmark=pl.lit("PandaLM"),
        question_id="id",
        cluster=pl.format("q{}", "prompt"),
    )
    table = fit_boards(
        comps, anchor=anchor, replicates=replicates, seed=seed, clusters=clusters
    ).table
    board = table.select("model", "rating", "lo", "hi", "rank")
    games = pl.concat(
        [out.select(model="a", s="s"), out.select(model="b", s=1 - pl.col("s"))]
    )
    rates = games.group_by("model").agg(win_rate=pl.col("s").mean(), n=pl.len())
    return board.join(rates, on="model").sort("rating", descending=True)


def logit_check(out: pl.DataFrame, models: list[str], anchor: str) -> np.ndarray:
    """θ from statsmodels ``Logit`` on the expanded design (module docstring), anchor 0."""
    import statsmodels.api as sm

    free = [m for m in models if m != anchor]
    x = np.zeros((2 * out.height, len(free)))
    y = np.zeros(2 * out.height)
    for i, (ma, mb, s) in enumerate(out.select("a", "b", "s").iter_rows()):
        for j in (2 * i, 2 * i + 1):
            if ma != anchor:
                x[j, free.index(ma)] = 1.0
            if mb != anchor:
                x[j, free.index(mb)] = -1.0
        y[2 * i], y[2 * i + 1] = (
            (1.0, 1.0) if s == 1 else (0.0, 0.0) if s == 0 else (1.0, 0.0)
        )
    fit = sm.Logit(y, x).fit(disp=0, tol=1e-12, maxiter=200, method="newton")
    theta = np.zeros(len(models))
    theta[[models.index(m) for m in free]] = fit.params
    return theta


def annotators(pairs: pl.DataFrame) -> dict:
    """Agreement of the three annotators: each with the majority (share of items), each pair's
    Cohen κ, Fleiss' κ (statsmodels ``inter_rater``)."""
    from statsmodels.stats.inter_rater import (
        aggregate_raters,
        cohens_kappa,
        fleiss_kappa,
        to_table,
    )

    cols = ["annotator1", "annotator2", "annotator3"]
    lab = pairs.select(cols).to_numpy()
    out = {
        "with_majority": {c: float((pairs[c] == pairs["label"]).mean()) for c in cols},
        "cohen_kappa": {},
    }
    for i in range(3):
        for j in range(i + 1, 3):
            table, _ = to_table(lab[:, [i, j]], bins=np.arange(4) - 0.5)
            out["cohen_kappa"][f"{cols[i]}~{cols[j]}"] = float(
                cohens_kappa(table, return_results=False)
            )
    out["fleiss_kappa"] = float(fleiss_kappa(aggregate_raters(lab, n_cat=3)[0]))
    return out


def kendall(x: list[float], y: list[float]) -> float:
    from scipy.stats import kendalltau

    return float(kendalltau(x, y).statistic)


def simulated_testset(
    strengths: dict[str, float], questions: int = 170, tie: float = 0.1, seed: int = 0
) -> list[dict]:
    """Items in PandaLM's format: every pair of models on every question, response1 the
    first model's, three annotators drawn from BT with the given strengths (a tie with
    probability ``tie``), each flipping to another label with probability 0.1."""
    rng = np.random.default_rng(seed)
    models, items = sorted(strengths), []
    for q in range(questions):
        for i, m1 in enumerate(models):
            for m2 in models[i + 1 :]:
                p = 1 / (1 + math.exp(strengths[m2] - strengths[m1]))
                true = 0 if rng.random() < tie else (1 if rng.random() < p else 2)
                other = [v for v in (0, 1, 2) if v != true]
                labels = [
                    true if rng.random() < 0.9 else int(rng.choice(other))
                    for _ in range(3)
                ]
                if len(set(labels)) == 3:
                    labels[2] = labels[0]
                items.append(
                    {
                        "idx": len(items),
                        "motivation_app": f"app{q % 7}",
                        "cmp_key": f"{m1}_{m2}",
                        "instruction": f"question {q}",
                        "input": "",
                        "response1": f"{m1} on {q}",
                        "response2": f"{m2} on {q}",
                        "annotator1": labels[0],
                        "annotator2": labels[1],
                        "annotator3": labels[2],
                    }
                )
    return items


def load(data: Path | None, smoke: bool) -> pl.DataFrame:
    from voirdire.benchmarks.releases.pandalm import read_testset

    if smoke:
        return read_testset(json.dumps(simulated_testset(SMOKE_STRENGTHS)).encode())
    from voirdire.benchmarks.releases.catalogue import locate
    from voirdire.benchmarks.releases.pandalm import PANDALM

    return pl.read_parquet(locate(PANDALM, data) / "pairs.parquet")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    pairs = load(args.data, args.smoke)
    models = sorted(set(pairs["model_1"]) | set(pairs["model_2"]))
    out = outcomes(pairs)
    board = leaderboard(pairs, out, ANCHOR, 200 if args.smoke else args.replicates)
    theta = (board.sort("model")["rating"].to_numpy() - 1000) / SCALE
    diff = float(np.max(np.abs(theta - logit_check(out, models, ANCHOR))))
    nq = out["question_id"].n_unique()
    print(
        f"{pairs.height} pairs, {nq} questions, {len(models)} models; anchor {ANCHOR} = 1000"
    )
    print(
        f"{'model':<20}{'rating':>9}{'95% interval':>20}{'rank':>6}{'win rate':>10}{'n':>6}"
    )
    for r in board.iter_rows(named=True):
        print(
            f"{r['model']:<20}{r['rating']:>9.1f}   [{r['lo']:>7.1f}, {r['hi']:>7.1f}]"
            f"{r['rank']:>6}{r['win_rate']:>10.3f}{r['n']:>6}"
        )
    print(
        f"independent check (statsmodels Logit, expanded design): max |Δθ| = {diff:.2e}"
    )
    wr = (
        out.group_by("a", "b")
        .agg(pl.col("s").mean().alias("s"), pl.len().alias("n"))
        .sort("a", "b")
    )
    print(
        "pairwise win rates (first model's, ties half): "
        + "; ".join(f"{a} vs {b} {s:.2f} (n={n})" for a, b, s, n in wr.iter_rows())
    )
    agree = annotators(pairs)
    print(
        "annotators with the majority: "
        + ", ".join(f"{k} {v:.3f}" for k, v in agree["with_majority"].items())
    )
    print(
        "Cohen's kappa: "
        + ", ".join(f"{k} {v:.3f}" for k, v in agree["cohen_kappa"].items())
        + f"; Fleiss' kappa {agree['fleiss_kappa']:.3f}"
    )
    maj = board.sort("model")["rating"].to_list()
    for c in ("annotator1", "annotator2", "annotator3"):
        o = outcomes(pairs, c)
        rows = (
            cells(o, models)
            .group_by("pair", maintain_order=True)
            .agg(pl.col("w").sum(), pl.col("n").sum())
        )
        ab = [p.split("|") for p in rows["pair"]]
        th = bt_fit(
            models,
            np.array([models.index(x) for x, _ in ab]),
            np.array([models.index(y) for _, y in ab]),
            rows["w"].to_numpy()[None],
            rows["n"].to_numpy()[None],
            models.index(ANCHOR),
        )[0]
        order = " > ".join(m for _, m in sorted(zip(-th, models)))
        print(
            f"{c} alone: {order} (Kendall tau vs majority {kendall(list(th), maj):.2f})"
        )
    print(f"({time.perf_counter() - t0:.1f} s)")
    ok = diff < 1e-6
    if args.smoke:
        true = np.array([SMOKE_STRENGTHS[m] - SMOKE_STRENGTHS[ANCHOR] for m in models])
        bounds = board.sort("model").select("model", "lo", "hi").iter_rows()
        # the anchor has no interval (its rating is fixed): the others are checked
        inside = [
            lo <= 1000 + SCALE * t <= hi
            for t, (m, lo, hi) in zip(true, bounds)
            if m != ANCHOR
        ]
        print(
            f"smoke: true strengths inside their intervals for {sum(inside)} of "
            f"{len(inside)} models (the anchor {ANCHOR} has none)"
        )
        ok = ok and sum(inside) >= len(inside) - 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
