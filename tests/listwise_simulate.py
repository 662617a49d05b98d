"""Synthetic list-wise judgment tables, and the size of the slot-share test on them (test
and perf machinery: used by ``tests/`` and ``perf/``, not shipped in the package).

The judge model is the simulated backend's (:func:`voirdire.judges.simulated.decide`):
each of ``p`` candidates of a question has a latent quality N(0, 1) plus N(0,
``question_noise``); the judge is sure with probability ``1 − exp(−sensitivity · gap)``
(``gap``: best minus second-best) and picks the best candidate's slot, else the tie
(``tie_rate``, when the option mode offers one) or slot ``A`` with probability
``primacy`` and each other slot with ``(1 − primacy)/(p − 1)``. At ``primacy = 1/p`` it
has no position bias. Every question is shown in the ``p`` cyclic orders; repetition
``r > 1`` reuses repetition 1's draws with probability ``1 − repetition_noise``
(0: identical repetitions), as the backend does.

Each *table* is one independent copy of the world and the judge, labelled ``t0``, ``t1``
... in the ``judge`` column, so one call of
:func:`voirdire.analysis.position.listwise.slot_shares` tests every table at once.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from voirdire.core import LETTERS
from voirdire.judges.simulated import SimulatedSettings, decide

__all__ = ["simulate_listwise_tables", "slot_test_size"]


def simulate_listwise_tables(
    s: SimulatedSettings,
    *,
    tables: int,
    n_questions: int,
    p: int = 3,
    repetitions: int = 1,
    seed: int = 0,
) -> pl.DataFrame:
    """``tables`` independent list-wise judgment tables of one simulated judge (module
    docstring), stacked.

    Returns:
        One row per judgment (``tables · n_questions · p · repetitions`` rows): ``benchmark``
        ("SimList"), ``judge`` (``t<k>``: the table), ``question_id``, ``task``,
        ``candidates`` and ``shown`` (list[str], candidates ``c0``..), ``permutation``,
        ``repetition`` (int, 1-based), ``mode`` ("listwise"), ``option_mode`` (p, or p + 1
        when ``tie_rate`` > 0), ``extracted`` (str letter), ``failed`` (false), and the
        three length columns (0).

    Raises:
        ValueError: ``p`` < 2, or ``tables``, ``n_questions`` or ``repetitions`` < 1.
    """
    if p < 2 or min(tables, n_questions, repetitions) < 1:
        raise ValueError(
            f"need p >= 2 and tables, n_questions, repetitions >= 1 (got {p}, {tables}, {n_questions}, {repetitions})"
        )
    rng = np.random.default_rng(seed)
    quality = rng.normal(0.0, 1.0, (tables, n_questions, p)) + rng.normal(
        0.0, s.question_noise, (tables, n_questions, p)
    )
    ranked = np.argsort(-quality, axis=2)
    best = ranked[..., 0]
    gap = (
        np.take_along_axis(quality, ranked[..., :1], 2)[..., 0]
        - np.take_along_axis(quality, ranked[..., 1:2], 2)[..., 0]
    )
    shape = (tables, n_questions, p, repetitions)  # table, question, order, repetition
    u = rng.random((3, *shape))
    fresh = rng.random(shape) < s.repetition_noise
    fresh[..., 0] = False
    u = np.where(fresh[None], u, u[..., :1])
    order = np.arange(p)[None, None, :, None]
    best_slot = (
        best[:, :, None, None] - order
    ) % p  # order o shows candidate (j + o) % p at slot j
    tie = s.tie_rate > 0
    slot = decide(s, np.broadcast_to(best_slot, shape), np.broadcast_to(gap[:, :, None, None], shape),
                  u[0], u[1], u[2], slots=p, tie_offered=tie)  # fmt: skip
    t, q, o, r = (a.ravel() for a in np.indices(shape))
    cands = [f"c{i}" for i in range(p)]
    shown = pl.Series(
        "shown", [[cands[(j + k) % p] for j in range(p)] for k in range(p)]
    )
    return pl.DataFrame(
        {
            "benchmark": "SimList",
            "judge": pl.Series(t).cast(pl.String).str.replace(r"^", "t"),
            "question_id": pl.Series(q).cast(pl.String).str.replace(r"^", "q"),
            "task": "t",
            "permutation": o.astype(np.int64),
            "repetition": (r + 1).astype(np.int64),
            "extracted": pl.Series(slot.ravel()).replace_strict(
                list(range(p + 1)), list(LETTERS[: p + 1]), return_dtype=pl.String
            ),
        }
    ).with_columns(
        candidates=pl.lit(cands, dtype=pl.List(pl.String)),
        shown=shown.gather(pl.Series(o)),
        mode=pl.lit("listwise"),
        option_mode=pl.lit(p + 1 if tie else p, dtype=pl.Int32),
        failed=pl.lit(False),
        input_chars=pl.lit(0),
        output_chars=pl.lit(0),
        prompt_chars=pl.lit(0),
    )


def slot_test_size(tables: pl.DataFrame, alpha: float = 0.05) -> dict[str, float]:
    """The share of tables (judges) whose slot-share test rejects uniform at ``alpha``:
    ``clustered`` (:func:`voirdire.analysis.position.listwise.slot_shares`' ``chi2_p``, questions as
    clusters) and ``pearson`` (Pearson's statistic against χ²(p − 1) as if every judgment
    were independent), and ``tables`` (int as float). For a judge without position bias
    both are the test's size; for a biased one, its power."""
    from scipy.stats import chi2

    from voirdire.analysis.position.listwise import slot_shares

    per = slot_shares(tables).filter(pl.col("position") == 1)
    naive = chi2.sf(per["pearson_chi2"].to_numpy(), per["chi2_dof"].to_numpy())
    return {
        "clustered": float((per["chi2_p"].to_numpy() < alpha).mean()),
        "pearson": float((naive < alpha).mean()),
        "tables": float(per.height),
    }
