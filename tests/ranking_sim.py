"""Simulated comparisons and judgments for the ranking tests and perf (not product code)."""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.special import expit


def round_robin(
    strengths: np.ndarray,
    questions: int,
    rng: np.random.Generator,
    *,
    board: str = "pooled",
    strategy: str = "single",
    judge: str = "sim",
    orders: int = 1,
    bias: float = 0.0,
) -> pl.DataFrame:
    """Comparisons (``COMPARISON_SCHEMA``): every pair of models on every question, ``orders``
    times, outcomes drawn from Bradley–Terry with ``strengths`` (natural log scale), ``bias``
    added to the logit of ``a`` (the lower-numbered model) winning."""
    k = strengths.size
    i, j = np.triu_indices(k, 1)
    n = i.size * questions * orders
    q = np.repeat(np.arange(questions), i.size * orders)
    a, b = np.tile(i, questions * orders), np.tile(j, questions * orders)
    win = (rng.random(n) < expit(strengths[a] - strengths[b] + bias)).astype(float)
    names = np.array([f"m{x:02d}" for x in range(k)])
    return pl.DataFrame({
        "benchmark": "sim", "judge": judge, "strategy": strategy, "view": board,
        "question_id": [f"q{x:03d}" for x in q], "a": names[a], "b": names[b], "win": win, "tie": 0.0,
    })  # fmt: skip


def judgments(
    pairs: list[tuple[str, str]], questions: int, choose, judge: str = "sim"
) -> pl.DataFrame:
    """Pairwise judgment rows (the columns the views read) in both orders: ``choose(shown)``
    returns the letter ``"A"``/``"B"`` picked for the order ``shown``."""
    rows = []
    for q in range(questions):
        for cand, ref in pairs:
            for perm, shown in enumerate([[cand, ref], [ref, cand]]):
                rows.append(dict(benchmark="sim", judge=judge, question_id=f"q{q:03d}", task="t", candidate=cand,
                                 reference=ref, candidates=[cand, ref], shown=shown, permutation=perm, repetition=1,
                                 mode="pairwise", option_mode=2, extracted=choose(shown), failed=False,
                                 perturbation="control", perturbation_kind="control", gold=None))  # fmt: skip
    return pl.DataFrame(
        rows,
        schema_overrides={
            "permutation": pl.Int32,
            "repetition": pl.Int32,
            "option_mode": pl.Int32,
            "gold": pl.String,
        },
    )


def length_loving(
    theta: np.ndarray,
    lengths: np.ndarray,
    questions: int,
    gamma: float,
    rng: np.random.Generator,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A judge that prefers longer answers: ``logit P(a beats b) = θ_a − θ_b + γ (l_a − l_b)/(l_a + l_b)``,
    every pair on every question in both orders; answer lengths vary by question (log-normal,
    sd 0.6 around ``lengths``). Returns (comparisons, features)."""
    k, comps, feats = theta.size, [], []
    for q in range(questions):
        ln = lengths * np.exp(rng.normal(0.0, 0.6, k))
        feats += [
            ("sim", f"q{q:03d}", f"m{m:02d}", ln[m], 0.0, 0.0, 0.0) for m in range(k)
        ]
        for i in range(k):
            for j in range(i + 1, k):
                p = expit(
                    theta[i] - theta[j] + gamma * (ln[i] - ln[j]) / (ln[i] + ln[j])
                )
                comps += [
                    (
                        "sim",
                        "sim",
                        "single",
                        "pooled",
                        f"q{q:03d}",
                        f"m{i:02d}",
                        f"m{j:02d}",
                        float(rng.random() < p),
                        0.0,
                    )
                    for _ in range(2)
                ]
    c = pl.DataFrame(
        comps,
        schema=[
            "benchmark",
            "judge",
            "strategy",
            "view",
            "question_id",
            "a",
            "b",
            "win",
            "tie",
        ],
        orient="row",
    )
    f = pl.DataFrame(
        feats,
        schema=[
            "benchmark",
            "question_id",
            "model",
            "length",
            "headers",
            "lists",
            "bold",
        ],
        orient="row",
    )
    return c, f


def order_judgments(
    strengths: np.ndarray,
    questions: int,
    rng: np.random.Generator,
    *,
    bias: float = 0.0,
    judge: str = "sim",
) -> pl.DataFrame:
    """Pairwise judgment rows of a round robin in both orders (the columns the views read):
    the candidate is the lower-numbered model; the answer shown first wins with probability
    ``σ(θ_first − θ_second + bias)`` (``bias`` 0: an order-blind judge; else a position
    bias that favours the low-numbered models in the first-order board)."""
    k = strengths.size
    i, j = np.triu_indices(k, 1)
    q = np.repeat(np.arange(questions), i.size)
    c, r = np.tile(i, questions), np.tile(j, questions)
    names = np.array([f"m{x:02d}" for x in range(k)])
    parts = []
    for perm, (s0, s1) in enumerate([(c, r), (r, c)]):
        a_wins = rng.random(c.size) < expit(strengths[s0] - strengths[s1] + bias)
        parts.append(
            pl.DataFrame({
                "question_id": q, "candidate": names[c], "reference": names[r], "s0": names[s0], "s1": names[s1],
                "extracted": np.where(a_wins, "A", "B"),
            }).select(
                benchmark=pl.lit("sim"), judge=pl.lit(judge), question_id=pl.format("q{}", pl.col("question_id")),
                task=pl.lit("t"), candidate="candidate", reference="reference",
                candidates=pl.concat_list("candidate", "reference"), shown=pl.concat_list("s0", "s1"),
                permutation=pl.lit(perm, pl.Int32), repetition=pl.lit(1, pl.Int32), mode=pl.lit("pairwise"),
                option_mode=pl.lit(2, pl.Int32), extracted="extracted", failed=pl.lit(False),
                perturbation=pl.lit("control"), perturbation_kind=pl.lit("control"), gold=pl.lit(None, pl.String),
            )
        )  # fmt: skip
    return pl.concat(parts)


def star_orders(
    strengths: np.ndarray,
    questions: int,
    rng: np.random.Generator,
    *,
    bias: float = 0.0,
    own: np.ndarray | None = None,
    judge: str = "sim",
) -> pl.DataFrame:
    """Comparisons (``COMPARISON_SCHEMA``, views ``first`` and ``swapped``) of a star, as
    MT-Bench and DevBench are: every candidate ``c00``… against the reference ``ref``
    (strength 0) on every question, in both orders. The answer shown first gains ``bias``
    in logit (one slot preference common to every candidate) plus ``own[c]`` for candidate
    ``c``'s units (a model-specific order effect; None: none)."""
    k = strengths.size
    own = np.zeros(k) if own is None else own
    c = np.tile(np.arange(k), questions)
    q = np.repeat(np.arange(questions), k)
    names = np.array([f"c{x:02d}" for x in range(k)])
    parts = []
    for view, sign in (
        ("first", 1.0),
        ("swapped", -1.0),
    ):  # candidate shown first, then second
        win = (
            rng.random(c.size) < expit(strengths[c] + sign * (bias + own[c]))
        ).astype(float)
        parts.append(pl.DataFrame({
            "benchmark": "sim", "judge": judge, "strategy": "single", "view": view,
            "question_id": [f"q{x:03d}" for x in q], "a": names[c], "b": "ref", "win": win, "tie": 0.0,
        }))  # fmt: skip
    return pl.concat(parts)
