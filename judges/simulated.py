"""A simulated judge with known position bias.

Model (pairwise and list-wise alike). Each model ``m`` has a latent quality ``q_m``
(given in ``qualities`` or drawn N(0, 1) from a hash of its name); each question adds
N(0, ``question_noise``) per model. For a query with models ``shown`` in slot order, let
``gap`` be the difference between the best and the second-best quality. The judge is
*sure* with probability ``1 - exp(-sensitivity * gap)`` and then picks the best model's
slot. Otherwise it is *unsure*: with probability ``tie_rate`` it answers the tie option
(when the option mode offers one), else slot A with probability ``primacy`` and each other
slot with ``(1 - primacy) / (p - 1)``. ``primacy = 0.5`` (pairwise) is a fair judge; above,
primacy-preferred; below, recency-preferred.

Score mode (``mode = "score"``): each slot gets the score
``clip(round(5.5 + 1.5 * quality + bonus + N(0, score_noise)), 1, 10)`` where the bonus is
``4 * (primacy - 0.5)`` points for slot A and ``-4 * (primacy - 0.5) / (p - 1)`` for the
others, so a primacy-leaning judge inflates the first answer by a fixed number of points
(the bias BPC removes); each repetition draws its own noise (what MEC averages out).

Repetitions: each repetition reuses the first repetition's random draws with probability
``1 - repetition_noise`` and draws afresh otherwise, so RS falls as the noise rises.

Imperfections (excluded from the judge's identity, so a resumed run asks the same units):
``fail_rate`` outputs with no verdict; ``latency_s`` seconds of delay per batch. (Crashes
and killed drivers are test machinery: ``tests/backends.py`` subclasses this judge.)

Susceptibility (the bias suite): ``susceptibility = {bandwagon = 0.5, ...}`` moves the
verdict toward (or, negative, away from) a perturbation's target with that probability
(:func:`susceptible_slot`); a perturbed query is drawn as one more repetition of its
control at the same repetition (the control's draws at that repetition, redrawn from its
own stream with probability ``repetition_noise``: :func:`draw_stream`), so a judge with no
susceptibility has a robustness rate equal to its consistency rate and ``E[Δ] = 0``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import field_validator

from voirdire.benchmarks.biases.registry import find_bias, known_biases
from voirdire.benchmarks.scoring import load_score_templates
from voirdire.core import ConfigError, letters, stable_int
from voirdire.judges.base import (
    JudgeBackend,
    JudgeContext,
    JudgeSettings,
    Query,
    Result,
    get_backend,
    register,
)
from voirdire.judges.capabilities import (
    PromptFree,
    QualitySource,
    Rewrites,
    SharesWorkers,
)


class SimulatedSettings(JudgeSettings):
    """Parameters of the simulated judge (see the module docstring); probabilities in [0, 1]."""

    primacy: float = 0.5
    tie_rate: float = 0.0
    sensitivity: float = 2.0
    question_noise: float = 0.5
    repetition_noise: float = 0.0
    qualities: dict[str, float] | None = None
    seed: int = 0
    fail_rate: float = 0.0
    latency_s: float = 0.0
    score_noise: float = 1.0
    #: bias type -> strength in [-1, 1] (the CALM bias suite; see susceptible_slot)
    susceptibility: dict[str, float] | None = None

    @field_validator("susceptibility")
    @classmethod
    def _strengths(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        for bias, st in (v or {}).items():
            if not -1.0 <= st <= 1.0:
                raise ValueError(f"susceptibility.{bias} = {st} is outside [-1, 1]")
        return v


def _u(*parts: object) -> int:
    return stable_int(*map(str, parts))


def latent_quality(model: str, qualities: dict[str, float] | None, seed: int) -> float:
    """Latent quality of a model: the given value, else a standard normal draw from its name."""
    if qualities and model in qualities:
        return float(qualities[model])
    return random.Random(_u("quality", seed, model)).gauss(0.0, 1.0)


def best_and_worst(
    s: SimulatedSettings, question_id: str, candidates: Sequence[str]
) -> tuple[str, str]:
    """The candidates of highest and lowest latent quality on a question (the model's
    quality plus the question's noise, as the judge decides by)."""
    qn = random.Random(_u("question", s.seed, question_id))
    noise = {m: qn.gauss(0.0, s.question_noise) for m in sorted(candidates)}
    q = {m: latent_quality(m, s.qualities, s.seed) + noise[m] for m in candidates}
    order = sorted(candidates, key=lambda m: -q[m])
    return order[0], order[-1]


def decide(
    s: SimulatedSettings,
    best_slot: np.ndarray,
    gap: np.ndarray,
    u_sure: np.ndarray,
    u_tie: np.ndarray,
    u_slot: np.ndarray,
    *,
    slots: int,
    tie_offered: np.ndarray | bool,
) -> np.ndarray:
    """The judge model's decision rule, vectorised: the slot index each query chooses.

    This is the one model of the simulated judge: the backend (:func:`simulate_choice`)
    and the synthetic-table generator (:mod:`voirdire.analysis.position.simulate`) both call it.

    Args:
        s: the judge's parameters (``sensitivity``, ``tie_rate``, ``primacy``).
        best_slot: int array (N,), slot index (0 = ``A``) of the best model shown.
        gap: float array (N,), best minus second-best latent quality (>= 0).
        u_sure, u_tie, u_slot: float arrays (N,) of independent U(0, 1) draws.
        slots: models shown per query (pairwise 2).
        tie_offered: bool (or bool array (N,)): the option mode offers a tie letter.

    Returns:
        int array (N,): the chosen slot index, ``slots`` meaning the tie option. Sure
        (probability ``1 - exp(-sensitivity * gap)``): the best slot. Unsure: the tie with
        probability ``tie_rate`` where offered, else slot 0 with probability ``primacy`` and
        each later slot with ``(1 - primacy) / (slots - 1)``.
    """
    sure = u_sure < 1.0 - np.exp(-s.sensitivity * np.asarray(gap, dtype=float))
    tie = np.asarray(tie_offered) & (u_tie < s.tie_rate)
    later = 1 + np.minimum(
        slots - 2,
        ((u_slot - s.primacy) / max(1e-12, 1.0 - s.primacy) * (slots - 1)).astype(
            np.int64
        ),
    )
    unsure_slot = np.where(u_slot < s.primacy, 0, later)
    return np.where(sure, best_slot, np.where(tie, slots, unsure_slot)).astype(np.int64)


def draw_stream(
    s: SimulatedSettings,
    query_id: str,
    repetition: int,
    control_query_id: str | None = None,
) -> random.Random:
    """The random stream a pairwise or list-wise query's verdict draws from.

    Repetition 1 of a query draws from its own first stream. Repetition ``r > 1`` reuses
    the first stream with probability ``1 - repetition_noise`` and otherwise a fresh stream
    keyed by (query, r), so two repetitions share their draws with probability
    ``1 - repetition_noise``. A perturbed query (``control_query_id`` set) at repetition
    ``r`` is one more repetition of its control's repetition ``r``: the control's stream at
    ``r`` with probability ``1 - repetition_noise``, else a fresh stream keyed by its own
    id and ``r`` (independent of the control's own redraw). Hence a judge without
    susceptibility has the same joint law for (control, perturbed) as for (repetition 1,
    repetition 2) of the control: ``E[RR] = E[CR]`` at every repetition.

    Returns: a ``random.Random`` positioned at the verdict's draws (deterministic in the ids).
    """
    if control_query_id:
        base = draw_stream(s, control_query_id, repetition)
    else:
        base = random.Random(_u("draw", s.seed, query_id, 1))
        if repetition <= 1:
            return base
    again = random.Random(_u("draw", s.seed, query_id, repetition))
    return again if again.random() < s.repetition_noise else base


def simulate_choice(s: SimulatedSettings, q: Query) -> str:
    """The simulated verdict letter for one query (deterministic in its inputs): draws the
    query's uniforms from hashes of its ids and applies :func:`decide`."""
    p = len(q.shown)
    rng = draw_stream(s, q.query_id, q.repetition, q.control_query_id)
    qn = random.Random(_u("question", s.seed, q.question_id))
    noise = {m: qn.gauss(0.0, s.question_noise) for m in sorted(q.shown)}
    quality = [latent_quality(m, s.qualities, s.seed) + noise[m] for m in q.shown]
    order = sorted(range(p), key=lambda i: -quality[i])
    gap = quality[order[0]] - quality[order[1]]
    u = np.array([[rng.random()] for _ in range(3)])
    slot = decide(
        s,
        np.array([order[0]]),
        np.array([gap]),
        u[0],
        u[1],
        u[2],
        slots=p,
        tie_offered=q.option_mode > p,
    )
    return letters(p + 1)[susceptible_slot(s, q, int(slot[0]), order[0])]


def susceptible_slot(s: SimulatedSettings, q: Query, slot: int, best: int) -> int:
    """The verdict after the judge's susceptibility to the query's perturbation.

    With ``st = susceptibility[bias]`` and probability ``|st|`` (a draw from the query's
    id and repetition): ``st > 0`` moves the verdict to the target's slot, ``st < 0`` to
    the slot after it (pairwise: the other answer). For ``fallacy`` the target is the
    damaged answer: a judge that sees through the fallacy has ``st < 0`` (it moves away, as
    it should), one that overlooks it ``st = 0``. A bias that never has a target
    (``targeted = False``: ``cot``): with probability ``st`` the judge picks the best
    answer's slot (reasoning helps). Kinds without a target slot otherwise, the control and
    biases not listed keep ``slot`` (as does a bias registered only in the driver, unknown
    to the worker process). Returns a slot index.
    """
    st = (s.susceptibility or {}).get(q.perturbation_kind or "", 0.0)
    if not st or random.Random(
        _u("susceptibility", s.seed, q.query_id, q.repetition)
    ).random() >= abs(st):
        return slot
    bias = find_bias(q.perturbation_kind)
    if bias is not None and not bias.targeted:
        return best if st > 0 else slot
    if q.target_slot is None:
        return slot
    t = "ABCDEFGHIJ".index(q.target_slot)
    return t if st > 0 else (t + 1) % len(q.shown)


def simulate_scores(s: SimulatedSettings, q: Query) -> list[int]:
    """The simulated 1-10 score of each slot of a score-mode query (module docstring);
    deterministic in the query's ids and repetition."""
    p = len(q.shown)
    rng = random.Random(_u("score", s.seed, q.query_id, q.repetition))
    qn = random.Random(_u("question", s.seed, q.question_id))
    noise = {m: qn.gauss(0.0, s.question_noise) for m in sorted(q.shown)}
    lean = 4.0 * (s.primacy - 0.5)
    out = []
    for i, m in enumerate(q.shown):
        bonus = lean if i == 0 else -lean / (p - 1)
        x = (
            5.5
            + 1.5 * (latent_quality(m, s.qualities, s.seed) + noise[m])
            + bonus
            + rng.gauss(0.0, s.score_noise)
        )
        out.append(int(min(10, max(1, round(x)))))
    return out


def score_text(benchmark: str, scores: Sequence[int]) -> str:
    """A score-mode reply in the benchmark's score-line format (``templates/score.json``)."""
    t = load_score_templates()
    labels = t["labels"][benchmark]
    return "Simulated assessment.\n" + "\n".join(
        t["score_line"].format(label=lab) + str(v) for lab, v in zip(labels, scores)
    )


@register
class SimulatedJudge(
    PromptFree,
    QualitySource,
    Rewrites,
    SharesWorkers,
    JudgeBackend[SimulatedSettings],
):
    """A judge of known position bias; see the module docstring. Answers in both release
    formats (``[[X]]`` and ``Choice: X``) so either benchmark's extractor reads it."""

    name = "simulated"
    Settings = SimulatedSettings
    identity_exclude = ("fail_rate", "latency_s")
    #: settings added after 0.1: in the identity only when set (unit ids of before kept)
    identity_if_set = ("susceptibility", "score_noise")

    def __init__(self, settings: SimulatedSettings, context: JudgeContext) -> None:
        super().__init__(settings, context)
        self.answered = 0

    @classmethod
    def worker_options(cls, settings: SimulatedSettings) -> dict[str, Any]:
        return {"num_cpus": 0}

    @classmethod
    def shares_workers(cls, settings: SimulatedSettings) -> bool:
        """A judge with ``latency_s`` waits, as an API judge would: it gets its own workers."""
        return not settings.latency_s

    @classmethod
    def preflight(cls, settings: SimulatedSettings, context: JudgeContext) -> None:
        """Every bias of ``susceptibility`` is a known bias type (checked in the driver,
        where biases registered by the caller are known).

        Raises:
            ConfigError: naming the judge and the unknown bias.
        """
        for bias in settings.susceptibility or {}:
            if find_bias(bias) is None:
                raise ConfigError(
                    f"judge {context.judge!r}: susceptibility: unknown perturbation kind {bias!r}; "
                    f"known: {', '.join(known_biases())}"
                )

    @classmethod
    def rewriter(cls) -> type[JudgeBackend[Any]]:
        """``[[rewriters]]`` entries naming ``simulated`` get the simulated rewriter."""
        return get_backend("simulated_rewriter")

    @classmethod
    def quality(
        cls,
        arg: str,
        inst: Any,
        *,
        bench: Any,
        judges: Mapping[str, Any],
        data_dir: str,
    ) -> Any:
        """``benchmark.quality = "simulated:<judge>"``: the latent quality of that simulated
        judge of the job (its ``qualities``, ``seed`` and ``question_noise``), so tests know
        the truth exactly. Raises ConfigError: ``arg`` is not a simulated judge of the job."""
        import polars as pl

        rj = judges.get(arg)
        if rj is None or not issubclass(rj.backend, SimulatedJudge):
            raise ConfigError(
                f"benchmark.quality = 'simulated:{arg}': {arg!r} is not a simulated judge of this job"
            )
        pairs = [
            best_and_worst(rj.settings, q, c)
            for q, c in zip(inst["question_id"], inst["candidates"].to_list())
        ]
        return inst.with_columns(
            pl.Series("better", [p[0] for p in pairs], pl.String),
            pl.Series("worst", [p[1] for p in pairs], pl.String),
        )

    @classmethod
    def quality_identity(cls, arg: str, judges: Mapping[str, Any]) -> str | None:
        rj = judges.get(arg)
        return f"simulated:{rj.identity_hash}" if rj is not None else None

    async def judge(self, queries: list[Query]) -> list[Result]:
        s = self.settings
        if s.latency_s:
            await asyncio.sleep(s.latency_s)
        out = []
        for q in queries:
            if (
                s.fail_rate
                and random.Random(_u("fail", s.seed, q.unit_id)).random() < s.fail_rate
            ):
                out.append(
                    Result(
                        unit_id=q.unit_id,
                        output="I cannot decide between them.",
                        verdict_mode="free",
                    )
                )
            elif q.mode == "score":
                out.append(
                    Result(
                        unit_id=q.unit_id,
                        output=score_text(q.benchmark, simulate_scores(s, q)),
                    )
                )
            else:
                letter = simulate_choice(s, q)
                # the letter is also the decided ``choice``: a benchmark whose verdict pattern
                # reads other labels (a user's template) reads the simulated verdict too
                out.append(
                    Result(
                        unit_id=q.unit_id,
                        output=f"Simulated verdict.\n[[{letter}]]\nChoice: {letter}",
                        choice=letter,
                    )
                )
            self.answered += 1
        return out
