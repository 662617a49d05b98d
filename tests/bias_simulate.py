"""Synthetic judgment tables with perturbations, from judges of known susceptibility (test
and perf machinery: used by ``tests/`` and ``perf/``, not shipped in the package).

The world and the decision rule are those of :mod:`voirdire.analysis.position.simulate` (latent
qualities, per-question noise, :func:`voirdire.judges.simulated.decide`). Each perturbed
query is a new asking of the pair in the same order: it reuses the control's random draws
with probability ``1 − repetition_noise`` and draws afresh otherwise (exactly as a
repetition does), so a judge of zero susceptibility has the same verdict distribution with
and without the perturbation (``E[Δ] = 0`` exactly, and RR = CR in expectation). Then,
with probability ``|β|`` (the judge's susceptibility to the variant's kind), the judge is
*swayed*: it picks the target's slot (β > 0) or the other slot (β < 0). Hence
``P(target wins | perturbed) = p + β(1 − p)`` for β ≥ 0 and ``p + βp`` for β < 0, with
``p = P(target wins | control)``: :func:`~voirdire.analysis.biases.effects.bias_effects`'s
``susceptibility`` estimates β (``docs/bias-metrics.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from voirdire.judges.simulated import SimulatedSettings, decide

__all__ = ["SimulatedVariant", "simulate_bias_judgments"]

#: A simulated perturbation variant: (id, kind, param, target_rule); target_rule in
#: candidate, reference, better, worse (the engine's variants are
#: :class:`voirdire.engine.perturb.Variant`).
SimulatedVariant = tuple[str, str, str | None, str]


def _draws(
    rng: np.random.Generator, shape: tuple, noise: float, base: np.ndarray | None
) -> np.ndarray:
    """(3, *shape) uniforms; where ``base`` is given, reuse it with probability 1 − noise."""
    u = rng.random((3, *shape))
    if base is None:
        return u
    fresh = rng.random(shape) < noise
    return np.where(fresh[None], u, base)


def simulate_bias_judgments(
    judges: Mapping[str, tuple[SimulatedSettings | Mapping, Mapping[str, float]]],
    variants: Sequence[SimulatedVariant],
    *,
    n_questions: int = 200,
    candidates: int | Sequence[str] = 4,
    repetitions: int = 2,
    option_mode: int = 3,
    reference: str = "reference",
    qualities: Mapping[str, float] | None = None,
    question_noise: float = 0.5,
    benchmark: str = "SimBench",
    seed: int = 0,
) -> pl.DataFrame:
    """A synthetic pairwise judgments table with a control and perturbed variants.

    Every judge judges every (question, candidate vs reference) pair in both orders,
    ``repetitions`` times, for the control and for each variant:
    ``judges × questions × candidates × 2 × repetitions × (1 + variants)`` rows.

    Args:
        judges: label -> (settings of the simulated judge: ``primacy``, ``tie_rate``,
            ``sensitivity``, ``repetition_noise`` are used; susceptibility per perturbation
            kind, β in [−1, 1], missing kinds 0).
        variants: ``(id, kind, param, target_rule)`` per variant; ``target_rule`` in
            ``candidate``, ``reference``, ``better``, ``worse``.
        n_questions, candidates, repetitions, option_mode, reference, qualities,
        question_noise, benchmark, seed: as in
        :func:`voirdire.analysis.position.simulate.simulate_judgments`.

    Returns:
        Columns ``benchmark``, ``judge``, ``question_id``, ``task``, ``instance_id``,
        ``candidate``, ``reference``, ``candidates``, ``shown``, ``permutation``,
        ``repetition``, ``mode``, ``option_mode``, ``extracted``, ``chosen``, ``tie``,
        ``failed``, ``perturbation``, ``perturbation_kind``, ``perturbation_param``,
        ``target``, ``target_rule``, ``target_slot``, ``better`` (the model of higher
        latent quality on that question).

    Raises:
        ValueError: a bad count, option mode, target rule or susceptibility.
    """
    if option_mode not in (2, 3) or n_questions < 1 or repetitions < 1 or not judges:
        raise ValueError(
            "need option_mode 2 or 3, a judge, a question and a repetition"
        )
    for _, _, _, rule in variants:
        if rule not in ("candidate", "reference", "better", "worse"):
            raise ValueError(f"unknown target rule {rule!r}")
    rng = np.random.default_rng(seed)
    cands = (
        [f"cand-{i:02d}" for i in range(candidates)]
        if isinstance(candidates, int)
        else list(candidates)
    )
    qualities = dict(qualities or {})
    q_cand = np.array(
        [float(qualities[c]) if c in qualities else rng.normal() for c in cands]
    )
    q_ref = float(qualities.get(reference, 0.0))
    nq, nc, nr = n_questions, len(cands), repetitions
    noise = (
        rng.normal(0.0, question_noise, size=(nq, nc + 1))
        if question_noise > 0
        else np.zeros((nq, nc + 1))
    )
    diff = ((q_cand[None, :] + noise[:, :nc]) - (q_ref + noise[:, nc:])).ravel()
    cand_better, gap = diff > 0, np.abs(diff)
    n = gap.shape[0]
    shape = (n, 2, nr)  # pair, order (0: candidate in A), repetition
    best = np.broadcast_to(
        np.stack([np.where(cand_better, 0, 1), np.where(cand_better, 1, 0)], axis=1)[
            :, :, None
        ],
        shape,
    )
    gaps = np.broadcast_to(gap[:, None, None], shape)
    cand_slot = np.broadcast_to(np.array([0, 1])[None, :, None], shape)
    blocks = _decide_blocks(
        judges, variants, rng, best, gaps, cand_slot, nr=nr, option_mode=option_mode
    )
    base, targets = _pair_grid(
        nq,
        nc,
        nr,
        cands,
        cand_better,
        reference=reference,
        benchmark=benchmark,
        option_mode=option_mode,
    )
    return _with_variants(base, targets, blocks, variants)


def _decide_blocks(
    judges, variants, rng, best, gaps, cand_slot, *, nr: int, option_mode: int
) -> list:
    """Per judge, the chosen slots (pairs × 2 orders × repetitions) of the control and of
    each variant, as ``(judge, variant index or -1, slots)``, drawn in that order."""
    shape = best.shape
    n = shape[0]

    def target_slot(rule: str) -> np.ndarray:
        if rule == "candidate":
            return cand_slot
        if rule == "reference":
            return 1 - cand_slot
        return best if rule == "better" else 1 - best

    blocks = []  # (judge, variant index or -1, slots (N,2,R))
    for judge, (raw, sus) in judges.items():
        s = (
            raw
            if isinstance(raw, SimulatedSettings)
            else SimulatedSettings(**dict(raw))
        )
        u0 = _draws(rng, (n, 2, 1), 0.0, None)
        u = (
            _draws(rng, shape, s.repetition_noise, np.broadcast_to(u0, (3, *shape)))
            if nr > 1
            else u0
        )
        if nr > 1:
            u[:, :, :, 0] = u0[:, :, :, 0]
        ctrl = decide(
            s, best, gaps, u[0], u[1], u[2], slots=2, tie_offered=option_mode == 3
        )
        blocks.append((judge, -1, ctrl))
        for vi, (_, kind, _, rule) in enumerate(variants):
            beta = float(dict(sus).get(kind, 0.0))
            if not -1.0 <= beta <= 1.0:
                raise ValueError(
                    f"susceptibility of {judge} to {kind} must lie in [-1, 1], not {beta}"
                )
            uv = _draws(rng, shape, s.repetition_noise, u)
            slots = decide(
                s,
                best,
                gaps,
                uv[0],
                uv[1],
                uv[2],
                slots=2,
                tie_offered=option_mode == 3,
            )
            swayed = rng.random(shape) < abs(beta)
            ts = target_slot(rule)
            blocks.append(
                (judge, vi, np.where(swayed, ts if beta > 0 else 1 - ts, slots))
            )

    return blocks


def _pair_grid(
    nq: int,
    nc: int,
    nr: int,
    cands: list[str],
    cand_better: np.ndarray,
    *,
    reference: str,
    benchmark: str,
    option_mode: int,
) -> tuple[pl.DataFrame, dict[str, pl.Expr]]:
    """The rows every judge and variant share, ordered (question, candidate, order,
    repetition), and the target expressions by rule."""
    qi = np.repeat(np.arange(nq), nc * 2 * nr)
    ci = np.tile(np.repeat(np.arange(nc), 2 * nr), nq)
    perm = np.tile(np.repeat(np.arange(2), nr), nq * nc)
    rep = np.tile(np.arange(1, nr + 1), nq * nc * 2)
    qnames = np.array([f"q{i}" for i in range(nq)])
    base = pl.DataFrame(
        {
            "question_id": qnames[qi].tolist(),
            "task": [f"task-{i % 2}" for i in qi.tolist()],
            "candidate": np.array(cands)[ci].tolist(),
            "permutation": pl.Series(perm, dtype=pl.Int32),
            "repetition": pl.Series(rep, dtype=pl.Int32),
            "_cb": np.repeat(cand_better, 2 * nr),
        }
    ).with_columns(
        benchmark=pl.lit(benchmark),
        reference=pl.lit(reference),
        mode=pl.lit("pairwise"),
        option_mode=pl.lit(option_mode, dtype=pl.Int32),
        candidates=pl.concat_list("candidate", pl.lit(reference)),
        instance_id=pl.concat_str(
            "question_id", "candidate", pl.lit(reference), separator=";"
        ),
        shown=pl.when(pl.col("permutation") == 0)
        .then(pl.concat_list("candidate", pl.lit(reference)))
        .otherwise(pl.concat_list(pl.lit(reference), "candidate")),
        better=pl.when(pl.col("_cb"))
        .then(pl.col("candidate"))
        .otherwise(pl.lit(reference)),
    )
    worse = (
        pl.when(pl.col("_cb")).then(pl.lit(reference)).otherwise(pl.col("candidate"))
    )
    targets = {
        "candidate": pl.col("candidate"),
        "reference": pl.lit(reference),
        "better": pl.col("better"),
        "worse": worse,
    }
    return base, targets


def _with_variants(
    base: pl.DataFrame,
    targets: dict[str, pl.Expr],
    blocks: list,
    variants: Sequence[SimulatedVariant],
) -> pl.DataFrame:
    """``base`` once per (judge, control or variant) block with its slots as verdicts and
    the perturbation columns."""
    frames = []
    for judge, vi, slots in blocks:
        if vi < 0:
            cols = dict(
                perturbation=pl.lit("control"),
                perturbation_kind=pl.lit("control"),
                perturbation_param=pl.lit(None, pl.String),
                target=pl.lit(None, pl.String),
                target_rule=pl.lit(None, pl.String),
            )
        else:
            vid, kind, param, rule = variants[vi]
            cols = dict(
                perturbation=pl.lit(vid),
                perturbation_kind=pl.lit(kind),
                perturbation_param=pl.lit(param, pl.String),
                target=targets[rule],
                target_rule=pl.lit(rule),
            )
        frames.append(
            base.with_columns(
                judge=pl.lit(judge), _slot=pl.Series(slots.ravel()), **cols
            )
        )
    df = pl.concat(frames)
    tslot = (
        pl.when(pl.col("target").is_null())
        .then(None)
        .when(pl.col("shown").list.get(0) == pl.col("target"))
        .then(pl.lit("A"))
        .otherwise(pl.lit("B"))
    )
    return df.with_columns(
        extracted=pl.col("_slot").replace_strict(
            [0, 1, 2], ["A", "B", "C"], return_dtype=pl.String
        ),
        chosen=pl.when(pl.col("_slot") == 2)
        .then(None)
        .otherwise(pl.col("shown").list.get(pl.col("_slot").cast(pl.Int64).clip(0, 1))),
        tie=pl.col("_slot") == 2,
        failed=pl.lit(False),
        target_slot=tslot,
    ).select(
        "benchmark",
        "judge",
        "question_id",
        "task",
        "instance_id",
        "candidate",
        "reference",
        "candidates",
        "shown",
        "permutation",
        "repetition",
        "mode",
        "option_mode",
        "extracted",
        "chosen",
        "tie",
        "failed",
        "perturbation",
        "perturbation_kind",
        "perturbation_param",
        "target",
        "target_rule",
        "target_slot",
        "better",
    )
