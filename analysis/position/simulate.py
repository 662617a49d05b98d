"""Synthetic judgment tables from a judge of known position bias, and a power table.

The judge model is the one of the simulated backend (:mod:`voirdire.judges.simulated`):
latent qualities per model, per-question noise, a judge that is *sure* with probability
``1 - exp(-sensitivity * gap)`` and otherwise answers the tie (``tie_rate``, when offered)
or slot ``A`` with probability ``primacy``; repetitions reuse the first repetition's draws
with probability ``1 - repetition_noise``. The decision rule itself is
:func:`voirdire.judges.simulated.decide`, called here on whole arrays, so the backend and
the generator cannot drift apart. Only the source of randomness differs: the backend hashes
query ids (deterministic per query, one query at a time); the generator draws from one
numpy ``Generator`` (deterministic per ``seed``, millions of rows at once).

World (ours): every judge of one generated table sees the same candidate qualities and the
same question noise (so judges agree where answers really differ); each judge's own
settings only change how it decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl
from scipy.stats import binom

from voirdire.analysis.position.pair_model import (
    as_settings,
    pair_slots,
    settings_for,
)
from voirdire.judges.simulated import SimulatedSettings

__all__ = [
    "SYNTHETIC_COLUMNS",
    "simulate_judgments",
    "power_table",
]

#: Columns of :func:`simulate_judgments` (the JUDGMENT_SCHEMA columns analysis reads, plus
#: ``true_gap``: the pair's latent quality gap, for checks).
SYNTHETIC_COLUMNS = [
    "benchmark",
    "judge",
    "question_id",
    "task",
    "candidate",
    "reference",
    "shown",
    "permutation",
    "repetition",
    "mode",
    "option_mode",
    "query_id",
    "extracted",
    "chosen",
    "tie",
    "failed",
    "failure",
    "input_chars",
    "output_chars",
    "prompt_chars",
    "true_gap",
]


def simulate_judgments(
    judges: Mapping[str, SimulatedSettings | Mapping],
    *,
    n_questions: int = 80,
    candidates: int | Sequence[str] = 10,
    tasks: int | Sequence[str] = 4,
    repetitions: int = 1,
    option_mode: int = 3,
    reference: str = "reference",
    qualities: Mapping[str, float] | None = None,
    question_noise: float = 0.5,
    benchmark: str = "SimBench",
    seed: int = 0,
) -> pl.DataFrame:
    """A synthetic pairwise judgments table with known position bias.

    Every judge judges every (question, candidate) pair in both orders, ``repetitions``
    times: ``len(judges) * n_questions * n_candidates * repetitions`` judgment pairs, twice
    as many rows. Questions are assigned to tasks round-robin.

    Args:
        judges: judge label -> :class:`~voirdire.judges.simulated.SimulatedSettings` (or a
            dict of its fields); ``primacy``, ``tie_rate``, ``sensitivity``,
            ``repetition_noise`` and ``fail_rate`` are used. The world's qualities and
            question noise are the arguments below, shared by all judges.
        n_questions: questions (>= 1).
        candidates: number of candidate models (named ``cand-00``...) or their names.
        tasks: number of tasks (``task-0``...) or their names.
        repetitions: times each query is asked (>= 1).
        option_mode: 2 (A/B) or 3 (A/B/C = tie).
        qualities: latent quality per model (reference included); missing ones are drawn
            N(0, 1). The reference defaults to 0.
        question_noise: std of the per-(question, model) quality noise.
        seed: seed of the numpy generator.

    Returns:
        DataFrame with :data:`SYNTHETIC_COLUMNS`; ``query_id`` is judge-independent,
        ``failed`` rows (``fail_rate``) have ``extracted`` null and ``failure`` = "error".
        Lengths in characters are synthetic (input per question, output per pair).

    Raises:
        ValueError: ``option_mode`` not 2 or 3, or a count < 1.
    """
    if option_mode not in (2, 3):
        raise ValueError(f"option_mode must be 2 or 3, not {option_mode}")
    if n_questions < 1 or repetitions < 1 or not judges:
        raise ValueError("need at least one judge, one question and one repetition")
    rng = np.random.default_rng(seed)
    cands, task_names = _names(candidates, tasks)
    nq, nc, nr = n_questions, len(cands), repetitions
    cand_better, gap, input_chars, output_chars = _world(
        cands, dict(qualities or {}), reference, nq, question_noise, rng
    )
    frames = _judge_draws(judges, cand_better, gap, nr, option_mode == 3, rng)
    base = _pair_grid(
        nq,
        nc,
        nr,
        cands,
        task_names,
        input_chars,
        output_chars,
        gap,
        reference=reference,
        benchmark=benchmark,
        option_mode=option_mode,
    )
    return _with_verdicts(base, frames)


def _names(
    candidates: int | Sequence[str], tasks: int | Sequence[str]
) -> tuple[list[str], list[str]]:
    """The candidate names (``cand-00``... for a count) and task names (``task-0``...).

    Raises:
        ValueError: no candidate or no task.
    """
    cands = (
        [f"cand-{i:02d}" for i in range(candidates)]
        if isinstance(candidates, int)
        else list(candidates)
    )
    task_names = (
        [f"task-{i}" for i in range(tasks)] if isinstance(tasks, int) else list(tasks)
    )
    if not cands or not task_names:
        raise ValueError("need at least one candidate and one task")
    return cands, task_names


def _world(
    cands: list[str],
    qualities: dict,
    reference: str,
    nq: int,
    question_noise: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The world every judge shares, drawn from ``rng`` in this order: the candidates'
    qualities missing from ``qualities`` (N(0, 1)), the (question, model) noise, the input
    and the output lengths.

    Returns ``(cand_better, gap, input_chars, output_chars)``: per pair in (question,
    candidate) order (N = Q·C) whether the candidate beats the reference (bool) and by how
    much (float, ≥ 0) and its output length (int); per question the input length (int).
    """
    q_ref = float(qualities.get(reference, 0.0))
    q_cand = np.array(
        [float(qualities[c]) if c in qualities else rng.normal() for c in cands]
    )
    nc = len(cands)
    noise = (
        rng.normal(0.0, question_noise, size=(nq, nc + 1))
        if question_noise > 0
        else np.zeros((nq, nc + 1))
    )
    qc = q_cand[None, :] + noise[:, :nc]  # (Q, C)
    qr = q_ref + noise[:, nc:]  # (Q, 1)
    diff = (qc - qr).ravel()  # pairs in (question, candidate) order
    cand_better, gap = diff > 0, np.abs(diff)
    input_chars = rng.integers(200, 2000, size=nq)
    output_chars = rng.integers(400, 6000, size=(nq, nc)).ravel()
    return cand_better, gap, input_chars, output_chars


def _judge_draws(
    judges: Mapping[str, SimulatedSettings | Mapping],
    cand_better: np.ndarray,
    gap: np.ndarray,
    nr: int,
    tie_offered: bool,
    rng: np.random.Generator,
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Per judge (in order) ``(judge, chosen slots, failed)``, flat (N·2·R) arrays in
    (pair, order, repetition) order: the slots of :func:`pair_slots`, then the failures
    (``fail_rate``), both drawn from ``rng``."""
    frames = []
    for judge, raw in judges.items():
        s = as_settings(raw)
        slots = pair_slots(s, cand_better, gap, nr, tie_offered, rng)  # (QC, 2, R)
        failed = (
            rng.random(slots.shape) < s.fail_rate
            if s.fail_rate > 0
            else np.zeros(slots.shape, bool)
        )
        frames.append((judge, slots.ravel(), failed.ravel()))
    return frames


def _pair_grid(
    nq: int,
    nc: int,
    nr: int,
    cands: list[str],
    task_names: list[str],
    input_chars: np.ndarray,
    output_chars: np.ndarray,
    gap: np.ndarray,
    *,
    reference: str,
    benchmark: str,
    option_mode: int,
) -> pl.DataFrame:
    """The rows every judge shares, ordered (question, candidate, order, repetition): keys,
    ``shown``, lengths, ``query_id`` and ``true_gap``."""
    qi = np.repeat(np.arange(nq), nc * 2 * nr)
    ci = np.tile(np.repeat(np.arange(nc), 2 * nr), nq)
    perm = np.tile(np.repeat(np.arange(2), nr), nq * nc)
    rep = np.tile(np.arange(1, nr + 1), nq * nc * 2)
    pair = qi * nc + ci
    base = pl.DataFrame(
        {
            "_q": qi,
            "_c": ci,
            "permutation": perm.astype(np.int32),
            "repetition": rep.astype(np.int32),
            "input_chars": input_chars[qi].astype(np.int64),
            "output_chars": output_chars[pair].astype(np.int64),
            "true_gap": gap[pair],
        }
    )
    cand_s = pl.Series("candidate", cands).to_frame().with_row_index("_c")
    task_s = pl.DataFrame(
        {
            "_q": np.arange(nq),
            "task": [task_names[i % len(task_names)] for i in range(nq)],
        }
    )
    base = (
        base.join(cand_s.with_columns(pl.col("_c").cast(pl.Int64)), on="_c", how="left")
        .join(task_s, on="_q", how="left")
        .with_columns(
            question_id=pl.format("q{}", pl.col("_q")),
            reference=pl.lit(reference),
            benchmark=pl.lit(benchmark),
            mode=pl.lit("pairwise"),
            option_mode=pl.lit(option_mode, dtype=pl.Int32),
        )
        .with_columns(
            shown=pl.when(pl.col("permutation") == 0)
            .then(pl.concat_list("candidate", "reference"))
            .otherwise(pl.concat_list("reference", "candidate")),
            prompt_chars=pl.col("input_chars") + pl.col("output_chars") + 1500,
        )
        .with_columns(
            query_id=pl.concat_str(
                "benchmark",
                "question_id",
                pl.col("shown").list.join(";"),
                separator="|",
            )
        )
    )
    return base


def _with_verdicts(
    base: pl.DataFrame, frames: list[tuple[str, np.ndarray, np.ndarray]]
) -> pl.DataFrame:
    """``base`` once per judge with its chosen slots and failures as verdict columns."""
    out = []
    for judge, slots, failed in frames:
        out.append(
            base.with_columns(
                judge=pl.lit(judge),
                _slot=pl.Series(slots),
                failed=pl.Series(failed),
            )
        )
    df = pl.concat(out)
    return df.with_columns(
        extracted=pl.when(pl.col("failed"))
        .then(None)
        .otherwise(
            pl.col("_slot").replace_strict(
                [0, 1, 2], ["A", "B", "C"], return_dtype=pl.String
            )
        ),
        chosen=pl.when(pl.col("failed") | (pl.col("_slot") == 2))
        .then(None)
        .otherwise(
            pl.col("shown").list.get(pl.col("_slot").cast(pl.Int64), null_on_oob=True)
        ),
        tie=(pl.col("_slot") == 2) & ~pl.col("failed"),
        failure=pl.when(pl.col("failed"))
        .then(pl.lit("error"))
        .otherwise(None)
        .cast(pl.String),
    ).select(SYNTHETIC_COLUMNS)


def power_table(
    pfs: Sequence[float] = (0.05, 0.1, 0.2, 0.3),
    n_pairs: Sequence[int] = (25, 50, 100, 200, 400, 800, 1600, 3200),
    *,
    pc: float = 0.7,
    alpha: float = 0.05,
    replicates: int = 400,
    seed: int = 0,
) -> pl.DataFrame:
    """Power of the exact sign test (primacy vs recency among inconsistent pairs) by size.

    For each target preference fairness ``pf`` (at position consistency ``pc``), the
    simulator (:func:`settings_for`, decision rule :func:`~voirdire.judges.simulated.decide`)
    judges ``replicates`` samples of ``n`` pairs; power is the share of samples in which
    the two-sided exact binomial test of ``pcn`` against ``rcn`` (p = 1/2) rejects at
    ``alpha``. Ours (beyond Shi et al.).

    Returns:
        DataFrame: ``pf`` (float), ``pc`` (float), ``n_pairs`` (int), ``queries`` (int:
        2·n_pairs judgments), ``power`` (float in [0, 1]).
    """
    rng = np.random.default_rng(seed)
    rows = []
    for pf in pfs:
        s = settings_for(pc, pf)
        for n in n_pairs:
            m = n * replicates
            slots = pair_slots(s, np.ones(m, bool), np.ones(m), 1, False, rng)[:, :, 0]
            prim = (
                ((slots[:, 0] == 0) & (slots[:, 1] == 0)).reshape(replicates, n).sum(1)
            )
            rec = (
                ((slots[:, 0] == 1) & (slots[:, 1] == 1)).reshape(replicates, n).sum(1)
            )
            k, tot = np.minimum(prim, rec), prim + rec
            p = np.minimum(1.0, 2.0 * binom.cdf(k, tot, 0.5))
            p = np.where(tot == 0, 1.0, p)
            rows.append(
                (float(pf), float(pc), int(n), 2 * int(n), float((p < alpha).mean()))
            )
    return pl.DataFrame(
        rows, schema=["pf", "pc", "n_pairs", "queries", "power"], orient="row"
    )
