"""A simulated study of many judges as a plain verdict log (``--format logtable``): the
report's scale tests (``tests/test_report_browser.py``) and ``perf/bench_report.py`` audit
it as a user audits a table another tool wrote, then report on the audit.

The judges are a grid of families (test and perf machinery, not shipped): ``<model>/<template>-<k>``
(e.g. ``atlas/cot-2``), so the report can parse a family from the name as it does from
LLMBar's ``GPT-4/Swap_CoT``. Each question has ``candidates`` answers compared with one
reference answer, asked in both orders; the gold label names the better answer of each pair
(a fair coin). Judge ``j`` on task ``t`` answers the pair correctly with probability
``skill[j] + task_offset[t]`` (clipped to [0.05, 0.99]) when it is not swayed by position;
with probability ``|bias[j]|`` it picks the first slot (bias > 0: primacy) or the last
(bias < 0: recency) whatever the answers; ties with probability ``tie_rate``. Skill and
bias are drawn per judge from the seed, a family sharing its model's base skill.
"""

from __future__ import annotations

import numpy as np
import polars as pl

__all__ = ["MODELS", "TEMPLATES", "simulated_study_log"]

#: the families' models and templates, in the names' order
MODELS = (
    "atlas",
    "boreal",
    "cirrus",
    "delta",
    "ember",
    "fjord",
    "gale",
    "harbor",
    "iris",
    "juniper",
)
TEMPLATES = ("vanilla", "cot", "rules", "reference", "swap")  # fmt: skip


def judge_names(n_judges: int) -> list[str]:
    """``n_judges`` names ``<model>/<template>-<k>``: models first, then templates, then k."""
    names = [
        f"{m}/{t}-{k}"
        for k in range(1, 1 + -(-n_judges // (len(MODELS) * len(TEMPLATES))))
        for m in MODELS
        for t in TEMPLATES
    ]
    return sorted(names[:n_judges])


def simulated_study_log(
    n_judges: int = 200,
    *,
    tasks: int = 4,
    questions: int = 25,
    candidates: int = 2,
    tie_rate: float = 0.02,
    seed: int = 0,
) -> pl.DataFrame:
    """The verdict log of a simulated study, one row per (judge, pair, order).

    Returns:
        Columns (strings) ``judge``, ``instance`` (``t<task>-q<question>-c<candidate>``),
        ``task`` (``task-1`` ...), ``cluster`` (the question), ``model_a`` (the candidate
        ``model-<c>``), ``model_b`` (``reference``), ``first`` (``a`` or ``b``: the answer
        shown first), ``verdict`` (``A``, ``B`` or ``C`` = tie, by slot), ``label`` (``a``
        or ``b``: the better answer): ``n_judges × tasks × questions × candidates × 2`` rows.
    """
    rng = np.random.default_rng(seed)
    names = judge_names(n_judges)
    base = {m: rng.uniform(0.62, 0.9) for m in MODELS}
    skill = np.array([base[n.split("/")[0]] + rng.normal(0, 0.04) for n in names])
    bias = rng.normal(0.0, 0.1, n_judges)
    offset = rng.normal(0.0, 0.05, tasks)
    pairs = [
        (t, q, c)
        for t in range(tasks)
        for q in range(questions)
        for c in range(candidates)
    ]
    n_pairs = len(pairs)
    better_a = rng.random(n_pairs) < 0.5  # the candidate is better
    task_of = np.array([t for t, _, _ in pairs])
    frames = []
    for order in (0, 1):  # 0: the candidate (a) shown first
        p_right = np.clip(skill[:, None] + offset[task_of][None, :], 0.05, 0.99)
        right = rng.random((n_judges, n_pairs)) < p_right
        better_slot_first = better_a if order == 0 else ~better_a
        slot_first = np.where(
            right, better_slot_first[None, :], ~better_slot_first[None, :]
        )
        swayed = rng.random((n_judges, n_pairs)) < np.abs(bias)[:, None]
        slot_first = np.where(swayed, (bias > 0)[:, None], slot_first)
        tie = rng.random((n_judges, n_pairs)) < tie_rate
        verdict = np.where(tie, "C", np.where(slot_first, "A", "B"))
        frames.append(
            pl.DataFrame(
                {
                    "judge": np.repeat(names, n_pairs),
                    "instance": np.tile([f"t{t + 1}-q{q + 1}-c{c + 1}" for t, q, c in pairs], n_judges),
                    "task": np.tile([f"task-{t + 1}" for t, _, _ in pairs], n_judges),
                    "cluster": np.tile([f"t{t + 1}-q{q + 1}" for t, q, _ in pairs], n_judges),
                    "model_a": np.tile([f"model-{c + 1}" for _, _, c in pairs], n_judges),
                    "model_b": "reference",
                    "first": "a" if order == 0 else "b",
                    "verdict": verdict.ravel(),
                    "label": np.tile(np.where(better_a, "a", "b"), n_judges),
                }
            )
        )  # fmt: skip
    return pl.concat(frames).sort("judge", "instance", "first")
