"""The counts of one run of a job's queries (:class:`RunStats`), kept apart from the
scheduler so that a job answered without Ray (:mod:`voirdire.engine.recorded`) imports no Ray."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["RunStats", "judge_counts"]


def judge_counts() -> dict[str, float]:
    """One judge's counts at the start of a run: ``queries``, ``failures``,
    ``input_tokens``, ``output_tokens`` (tokens) and ``cost_usd`` (USD), all zero."""
    return {
        "queries": 0,
        "failures": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
    }


@dataclass
class RunStats:
    """Counts of one scheduler run: ``queries`` answered (outputs and failures),
    ``failures`` recorded, ``retried_batches``, ``resent_batches`` (sent again to an actor Ray
    was restarting, no attempt spent), ``replaced_workers``, ``seconds`` of wall
    time, and per-judge ``tokens`` and ``cost_usd``."""

    queries: int = 0
    failures: int = 0
    retried_batches: int = 0
    resent_batches: int = 0
    replaced_workers: int = 0
    seconds: float = 0.0
    per_judge: dict[str, dict[str, float]] = field(default_factory=dict)
