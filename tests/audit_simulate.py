"""Simulated judgment tables for the one-order position effect and for calibration
(``analysis/position/one_order.py``, ``analysis/position/calibration_error.py``); used by
their tests and by ``perf/bench_one_order.py`` / ``perf/bench_calibration.py``.

Model of a pair (question q, model m against one baseline): the candidate's true strength
``s_m`` plus a question effect ``u_q ~ N(0, tau²)`` (the cluster), and the judge picks the
candidate with probability ``σ(s_m + u_q ± delta)``, ``+delta`` when the candidate is shown
first. ``delta = 0``: no position effect. The true pooled effect (win rate first − second,
pairs split evenly between the orders) is :func:`true_effect`.
"""

from __future__ import annotations

import numpy as np
import polars as pl

CAND_BASE = "baseline"


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def one_order_table(
    n_questions: int,
    strengths: list[float],
    *,
    delta: float = 0.0,
    tau: float = 1.0,
    design: str = "randomised",
    tie_rate: float = 0.0,
    fail_rate: float = 0.0,
    seed: int = 0,
    judge: str = "j",
    switch: str = "pair",
) -> pl.DataFrame:
    """A judgments table (the columns analysis reads) with one row per (question, model)
    pair in one order (``design="randomised"``: a fair coin per pair, or with
    ``switch="question"`` one coin per question shared by every model, AlpacaEval's seeded
    switch; ``"fixed"``: all candidate first) or two rows (``"both"``)."""
    rng = np.random.default_rng(seed)
    m = len(strengths)
    u = rng.normal(0.0, tau, n_questions)
    q = np.repeat(np.arange(n_questions), m)
    k = np.tile(np.arange(m), n_questions)
    if design == "randomised" and switch == "question":
        first = [(rng.random(n_questions) < 0.5)[q]]
    elif design == "randomised":
        first = [rng.random(q.size) < 0.5]
    elif design == "fixed":
        first = [np.ones(q.size, bool)]
    else:
        first = [np.ones(q.size, bool), np.zeros(q.size, bool)]
    parts = []
    for f in first:
        eta = np.asarray(strengths)[k] + u[q] + np.where(f, delta, -delta)
        win = rng.random(q.size) < _sigmoid(eta)
        tie = rng.random(q.size) < tie_rate
        fail = rng.random(q.size) < fail_rate
        cand = np.array([f"m{i}" for i in range(m)])[k]
        chosen = np.where(tie | fail, None, np.where(win, cand, CAND_BASE))
        parts.append(
            pl.DataFrame(
                {
                    "benchmark": "B",
                    "judge": judge,
                    "question_id": [f"q{i}" for i in q],
                    "task": "t",
                    "candidate": cand,
                    "reference": CAND_BASE,
                    "shown": [
                        [c, CAND_BASE] if a else [CAND_BASE, c] for c, a in zip(cand, f)
                    ],
                    "permutation": np.where(f, 0, 1).astype(np.int32),
                    "repetition": np.ones(q.size, np.int32),
                    "mode": "pairwise",
                    "option_mode": np.full(q.size, 3, np.int32),
                    "chosen": pl.Series(chosen.tolist(), dtype=pl.String),
                    "tie": tie & ~fail,
                    "failed": fail,
                    "extracted": pl.Series(
                        np.where(fail, None, "X").tolist(), dtype=pl.String
                    ),
                }
            )
        )
    return pl.concat(parts)


def true_effect(
    strengths: list[float],
    delta: float,
    tau: float,
    draws: int = 400_000,
    seed: int = 99,
) -> float:
    """The population pooled effect E[σ(s + u + δ) − σ(s + u − δ)] over u ~ N(0, τ²) and
    the models equally (no ties, no failures: a tie counts ½ in both halves and cancels
    when ties are drawn independently of the order), by Monte Carlo with ``draws`` draws."""
    u = np.random.default_rng(seed).normal(0.0, tau, draws)
    s = np.asarray(strengths)[:, None]
    return float(np.mean(_sigmoid(s + u + delta) - _sigmoid(s + u - delta)))


def calibration_table(
    n_questions: int,
    models: int = 3,
    *,
    slope: float = 1.0,
    spread: float = 1.5,
    both_orders: bool = False,
    tie_letter: float = 0.0,
    source: str = "option_probs",
    seed: int = 0,
    judge: str = "j",
) -> tuple[pl.DataFrame, np.ndarray]:
    """A labelled judgments table with probabilities: per (question, model) pair the true
    probability that the candidate is better is ``π = σ(z)``, ``z ~ N(0, spread²)``; the gold
    label is drawn from it; the judge states ``σ(slope · z)`` (``slope = 1``: calibrated;
    ``> 1``: overconfident), in a random order (both orders with ``both_orders``), as
    ``option_probs`` (Arrow map letter -> probability; ``tie_letter`` of the mass on ``C``)
    or as ``p_candidate``. Returns the table and the stated probabilities (one per row)."""
    rng = np.random.default_rng(seed)
    n = n_questions * models
    z = rng.normal(0.0, spread, n)
    gold_cand = rng.random(n) < _sigmoid(z)
    p = _sigmoid(slope * z)
    q = np.repeat(np.arange(n_questions), models)
    cand = np.array([f"m{i}" for i in range(models)])[
        np.tile(np.arange(models), n_questions)
    ]
    orders = (
        [np.ones(n, bool), np.zeros(n, bool)] if both_orders else [rng.random(n) < 0.5]
    )
    parts, stated = [], []
    for first in orders:
        pa_ = np.where(first, p, 1 - p) * (1 - tie_letter)
        pb_ = np.where(first, 1 - p, p) * (1 - tie_letter)
        probs = [
            {"A": float(a), "B": float(b), **({"C": tie_letter} if tie_letter else {})}
            for a, b in zip(pa_, pb_)
        ]
        df = pl.DataFrame(
            {
                "benchmark": "B",
                "judge": judge,
                "question_id": [f"q{i}" for i in q],
                "task": "t",
                "candidate": cand,
                "reference": CAND_BASE,
                "shown": [
                    [c, CAND_BASE] if f else [CAND_BASE, c] for c, f in zip(cand, first)
                ],
                "repetition": np.ones(n, np.int32),
                "mode": "pairwise",
                "option_mode": np.full(n, 3 if tie_letter else 2, np.int32),
                "gold": np.where(gold_cand, cand, CAND_BASE),
                "failed": np.zeros(n, bool),
                "extracted": "A",
            }
        )
        if source == "p_candidate":
            df = df.with_columns(p_candidate=pl.Series(p))
        else:
            import pyarrow as pa

            arr = pa.array(
                [list(d.items()) for d in probs],
                type=pa.map_(pa.string(), pa.float64()),
            )
            df = df.with_columns(
                pl.from_arrow(pa.table({"option_probs": arr})).to_series()
            )
        parts.append(df)
        stated.append(p)
    return pl.concat(parts), np.concatenate(stated)
