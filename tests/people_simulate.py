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
    cols: dict[str, list] = {c: [] for c in (
        "benchmark", "judge", "question_id", "task", "candidate", "reference", "candidates", "shown", "permutation",
        "repetition", "mode", "option_mode", "extracted", "failed", "perturbation", "gold")}  # fmt: skip
    gold = [
        names[x] if s == 1.0 else names[z] if s == 0.0 else "tie"
        for x, z, s in zip(a, b, y)
    ]
    for judge, (skill, primacy) in judges.items():
        for perm in range(orders):
            sees = rng.random(n) < skill
            first = rng.random(n) < primacy
            for t in range(n):
                cand, ref = names[a[t]], names[b[t]]
                shown = [cand, ref] if perm == 0 else [ref, cand]
                if sees[t]:
                    pick = (
                        "C"
                        if y[t] == 0.5
                        else ("A" if (y[t] == 1.0) == (perm == 0) else "B")
                    )
                else:
                    pick = "A" if first[t] else "B"
                for c, v in (("benchmark", benchmark), ("judge", judge), ("question_id", f"q{q[t]:03d}-{t}"),
                             ("task", "t"), ("candidate", cand), ("reference", ref), ("candidates", [cand, ref]),
                             ("shown", shown), ("permutation", perm), ("repetition", 1), ("mode", "pairwise"),
                             ("option_mode", 3), ("extracted", pick), ("failed", False),
                             ("perturbation", "control"), ("gold", gold[t])):  # fmt: skip
                    cols[c].append(v)
    return pl.DataFrame(
        cols,
        schema_overrides={
            "permutation": pl.Int32,
            "repetition": pl.Int32,
            "option_mode": pl.Int32,
        },
    )


def truth(judgments: pl.DataFrame) -> pl.DataFrame:
    """People's labels of a :func:`study` as a grading table (every pair)."""
    from voirdire.analysis.position.gold import gold_grading

    return gold_grading(judgments)
