"""A study with a known truth for the people's-board tests and perf (not product code).

``k`` models with Bradley–Terry strengths meet in a round robin on ``questions`` questions.
People's label of a pair is drawn from the model (a tie with probability ``tie``); a judge
sees people's label with probability ``skill`` per order and otherwise answers the first
slot with probability ``primacy`` (else the second), so its errors depend on the order: its
two orders agree more often where it saw the label, which makes "both orders agree" a
confidence that means something. Judgment rows carry the columns the analysis reads.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.special import expit

_LETTER = {1.0: "win", 0.5: "tie", 0.0: "loss"}


def study(
    rng: np.random.Generator,
    *,
    k: int = 5,
    questions: int = 40,
    strengths: np.ndarray | None = None,
    tie: float = 0.1,
    judges: dict[str, tuple[float, float]] | None = None,
    orders: int = 2,
    benchmark: str = "sim",
) -> pl.DataFrame:
    """Judgment rows of every judge (name -> (skill, primacy)) on every pair, in ``orders``
    orders (1: the candidate shown first only), with people's label as ``gold``."""
    strengths = np.linspace(0.8, -0.8, k) if strengths is None else strengths
    judges = judges or {"judge": (0.7, 0.7)}
    names = [f"m{x}" for x in range(k)]
    i, j = np.triu_indices(k, 1)
    q = np.repeat(np.arange(questions), i.size)
    a, b = np.tile(i, questions), np.tile(j, questions)
    n = a.size
    u = rng.random(n)
    p = expit(strengths[a] - strengths[b])
    is_tie = rng.random(n) < tie
    y = np.where(is_tie, 0.5, (u < p).astype(float))
    names_a = np.array(names)[a]
    names_b = np.array(names)[b]
    gold = np.where(y == 1.0, names_a, np.where(y == 0.0, names_b, "tie"))
    qid = np.array([f"q{x:03d}-{t}" for t, x in enumerate(q)])
    parts = []
    for judge, (skill, primacy) in judges.items():
        for perm in range(orders):
            sees = rng.random(n) < skill
            first = rng.random(n) < primacy
            cand_wins = (y == 1.0) == (perm == 0)
            pick = np.where(
                sees,
                np.where(y == 0.5, "C", np.where(cand_wins, "A", "B")),
                np.where(first, "A", "B"),
            )
            shown = [[c, r] if perm == 0 else [r, c] for c, r in zip(names_a, names_b)]
            parts.append(pl.DataFrame({
                "benchmark": benchmark, "judge": judge, "question_id": qid, "task": "t", "candidate": names_a,
                "reference": names_b, "candidates": [[c, r] for c, r in zip(names_a, names_b)], "shown": shown,
                "permutation": perm, "repetition": 1, "mode": "pairwise", "option_mode": 3, "extracted": pick,
                "failed": False, "perturbation": "control", "gold": gold,
            }))  # fmt: skip
    return pl.concat(parts).cast(
        {"permutation": pl.Int32, "repetition": pl.Int32, "option_mode": pl.Int32}
    )


def truth(judgments: pl.DataFrame) -> pl.DataFrame:
    """People's labels of a :func:`study` as a grading table (every pair)."""
    from voirdire.analysis.position.gold import gold_grading

    return gold_grading(judgments)


def shared_questions(
    rng: np.random.Generator,
    questions: int,
    *,
    strengths: np.ndarray,
    tie: float = 0.1,
    tau: float = 1.5,
    skill: float = 0.7,
) -> tuple[np.ndarray, ...]:
    """A round robin of ``len(strengths)`` models on every one of ``questions`` questions,
    the pairs of one question correlated: a question moves each model by ``u ~ N(0, tau²)``
    (``P(a ≻ b) = σ(s_a − s_b + u_a − u_b)``). People's score ``y`` (1, ½, 0; a tie with
    probability ``tie``); a judge that sees it with probability ``skill``, else says the
    candidate wins. Returns ``(question, a, b, y, yhat)``, (pairs,) arrays."""
    k = strengths.size
    i, j = np.triu_indices(k, 1)
    q = np.repeat(np.arange(questions), i.size)
    a, b = np.tile(i, questions), np.tile(j, questions)
    u = rng.normal(0, tau, (questions, k))
    p = expit(strengths[a] - strengths[b] + u[q, a] - u[q, b])
    y = np.where(rng.random(q.size) < tie, 0.5, (rng.random(q.size) < p).astype(float))
    yhat = np.where(rng.random(q.size) < skill, y, 1.0)
    return q, a, b, y, yhat


def shared_questions_truth(
    strengths: np.ndarray, *, tie: float = 0.1, tau: float = 1.5, draws: int = 400_000
) -> tuple[np.ndarray, np.ndarray]:
    """The population's truth of :func:`shared_questions`: per model its win rate against the
    others, and the Bradley–Terry strengths (model 0 the anchor) minimising the expected loss
    on the balanced round robin; by Monte Carlo over ``draws`` questions (error < 1e-3)."""
    from voirdire.analysis.people.boards import bt_estimate

    k = strengths.size
    i, j = np.triu_indices(k, 1)
    u = np.random.default_rng(123).normal(0, tau, (draws, k))
    p = np.array([
        (1 - tie) * expit(strengths[x] - strengths[y] + u[:, x] - u[:, y]).mean() + tie / 2
        for x, y in zip(i, j)
    ])  # fmt: skip
    wr = np.array([np.r_[p[i == m], 1 - p[j == m]].mean() for m in range(k)])
    bt = bt_estimate(i, j, p, p, np.ones(i.size, dtype=bool), k, 0, 0.0).theta
    return wr, bt
