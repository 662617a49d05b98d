"""The cascade of selective judges: the cheapest judge first, each keeping the pairs it is
sure of, passing the rest to the next, then to people.

Source: Jung, Brahman and Choi, *Trust or Escalate*, ICLR 2025, §3.3 (cascaded selective
evaluation). Stage ``j`` calibrates its judge's threshold on the labelled pairs that reach
it, by fixed-sequence testing (:func:`~voirdire.analysis.people.selective.fixed_sequence`)
at ``δ / K`` for ``K`` judges: by the union bound, with probability at least ``1 − δ`` every
stage's agreement with people on the pairs it keeps is at least ``1 − α``, so the kept pairs
together agree at least as much. (The stages reuse one labelled slice, each on the pairs the
earlier ones passed; ``perf/people_validation.py`` measures the realised coverage.) A judge
alone is a cascade of one stage at ``δ``.

The cost of a stage is what its judge would be paid on the pairs that reach it: its mean USD
and queries per pair in the judgments (USD null where the judgments record none, e.g. a
replayed log); the pairs left at the end go to people.
"""

from __future__ import annotations

import math

import polars as pl

from voirdire.analysis.people.pairs import LABELLED_KEYS
from voirdire.analysis.people.selective import fixed_sequence

__all__ = ["CASCADE_COLUMNS", "HUMAN", "run_cascade"]

CASCADE_COLUMNS = [
    "benchmark", "stage", "judge", "threshold", "reached", "kept", "share_kept", "labelled_kept",
    "agreement_labelled", "usd_per_pair", "cost_usd", "queries",
]  # fmt: skip
#: the last stage's name: the pairs no judge keeps go to people
HUMAN = "human"


def run_cascade(
    pairs: pl.DataFrame,
    order: list[str],
    *,
    alpha: float,
    delta: float,
    costs: dict[str, tuple[float | None, float]] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One benchmark's cascade over the judges ``order`` (first asked first).

    Args:
        pairs: :mod:`~voirdire.analysis.people.pairs` rows of one benchmark with
            ``confidence``, ``label`` and ``agree`` (every judge on the same pairs).
        order: judge names, first stage first.
        alpha, delta: agreement ≥ 1 − α on the kept pairs with probability ≥ 1 − δ.
        costs: judge -> (USD per pair or None, queries per pair).

    Returns:
        ``(stages, routed)``: ``stages`` :data:`CASCADE_COLUMNS`, one row per judge and a
        last row ``human`` (``reached``/``kept``: the pairs left; ``labelled_kept``: those
        already labelled; ``threshold`` null); ``routed`` per pair (:data:`LABELLED_KEYS`):
        ``decided_by`` (str: the judge keeping it, or ``human``), ``verdict`` (str: that
        judge's; null for ``human``) and ``label`` (str|null).

    Raises:
        ValueError: a judge of ``order`` without pairs here.
    """
    costs = costs or {}
    bench = pairs["benchmark"][0]
    left = pairs.filter(pl.col("judge") == order[0]).select(*LABELLED_KEYS, "label")
    total = left.height
    stages, routed = [], []
    for j, judge in enumerate(order, start=1):
        mine = pairs.filter(pl.col("judge") == judge).join(
            left.select(LABELLED_KEYS), on=LABELLED_KEYS, how="semi"
        )
        if mine.height == 0 and left.height:
            raise ValueError(f"judge {judge!r} has no pairs on {bench}")
        lab = mine.filter(pl.col("label").is_not_null())
        t = fixed_sequence(
            lab["confidence"].to_numpy(),
            lab["agree"].to_numpy(),
            alpha,
            delta / len(order),
        )
        keep = mine.filter(pl.col("confidence") >= t)
        kl = keep.filter(pl.col("label").is_not_null())
        usd, queries = costs.get(judge, (None, 1.0))
        stages.append({
            "benchmark": bench, "stage": j, "judge": judge, "threshold": None if math.isinf(t) else t,
            "reached": left.height, "kept": keep.height, "share_kept": keep.height / total if total else None,
            "labelled_kept": kl.height, "agreement_labelled": kl["agree"].mean() if kl.height else None,
            "usd_per_pair": usd, "cost_usd": None if usd is None else usd * left.height,
            "queries": queries * left.height,
        })  # fmt: skip
        routed.append(
            keep.select(
                *LABELLED_KEYS,
                decided_by=pl.lit(judge),
                verdict="verdict",
                label="label",
            )
        )
        left = left.join(keep.select(LABELLED_KEYS), on=LABELLED_KEYS, how="anti")
    stages.append({
        "benchmark": bench, "stage": len(order) + 1, "judge": HUMAN, "threshold": None, "reached": left.height,
        "kept": left.height, "share_kept": left.height / total if total else None,
        "labelled_kept": left["label"].is_not_null().sum(), "agreement_labelled": None,
        "usd_per_pair": None, "cost_usd": None, "queries": 0.0,
    })  # fmt: skip
    routed.append(left.select(*LABELLED_KEYS, decided_by=pl.lit(HUMAN), verdict=pl.lit(None, dtype=pl.String), label="label"))  # fmt: skip
    schema = {"threshold": pl.Float64, "share_kept": pl.Float64, "agreement_labelled": pl.Float64,
              "usd_per_pair": pl.Float64, "cost_usd": pl.Float64, "queries": pl.Float64}  # fmt: skip
    table = pl.DataFrame(stages, schema_overrides=schema, infer_schema_length=None)
    return table.select(CASCADE_COLUMNS), pl.concat(routed).sort(LABELLED_KEYS)
