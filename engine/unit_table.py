"""A judge's work units as one table, built by columns (polars) rather than unit by unit.

:func:`unit_frames` gives the very units :func:`~voirdire.engine.units.iter_unit_batches`
gives (the same ids, columns and order: instance by instance, then order, then
repetition), as DataFrames of :data:`~voirdire.schema.WORK_UNIT_SCHEMA`'s columns, for the
designs where every instance has the same orders: pairwise or score mode, the control only,
a judge that needs no prompt text (replay). The instances are crossed with the scheme's
orders and the repetitions in polars; what only the benchmark knows (each question's prompt
key, each order's prompt and answer lengths) and the content hashes are taken once per
order over plain lists. Other designs (list-wise orders seeded per instance,
perturbations, prompts to render) return None: the generator serves them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence, Set
from typing import Any

import polars as pl

from voirdire.benchmarks.recorded import RecordKey
from voirdire.core import content_hash
from voirdire.engine.permutations import permutations_for
from voirdire.engine.perturb import CONTROL, Variant
from voirdire.engine.prompts import PromptCache
from voirdire.engine.spec import ComparisonSpec
from voirdire.engine.unit_records import TEMPLATE_VERSION
from voirdire.engine.units import option_mode_for
from voirdire.schema import WORK_UNIT_COLUMNS

__all__ = ["INSTANCES_PER_FRAME", "unit_frames"]

#: instances per frame of :func:`unit_frames` (a frame: at most this many x orders x
#: repetitions units, a few hundred bytes each)
INSTANCES_PER_FRAME = 50_000


def unit_frames(
    bench: Any,
    inst: pl.DataFrame,
    comparison: ComparisonSpec,
    *,
    judge: str,
    identity_hash: str,
    prompts: PromptCache,
    variants: Sequence[Variant] = (CONTROL,),
    only: Set[RecordKey] | None = None,
    per_frame: int = INSTANCES_PER_FRAME,
) -> Iterator[pl.DataFrame] | None:
    """The judge's units as DataFrames of ``WORK_UNIT_COLUMNS`` (``permutation``,
    ``repetition``, ``option_mode`` Int32; ``input_chars``, ``output_chars``,
    ``prompt_chars`` Int64; ``candidates``, ``shown`` lists of str), ``per_frame``
    instances each, lazily; the arguments as :func:`~voirdire.engine.units.iter_unit_batches`'s
    for a judge that needs no prompt. None where the design is not one this builds (see the
    module docstring).

    Raises:
        ConfigError: as the generator, from the benchmark (a shown pair it refuses).
    """
    mode = comparison.mode
    if mode not in ("pairwise", "score") or tuple(variants) != (CONTROL,):
        return None
    if inst.height and inst["candidates"].list.len().unique().to_list() != [2]:
        return None
    return _frames(bench, inst, comparison, judge, identity_hash, prompts, only,
                   per_frame)  # fmt: skip


def _frames(
    bench: Any,
    inst: pl.DataFrame,
    c: ComparisonSpec,
    judge: str,
    identity_hash: str,
    prompts: PromptCache,
    only: Set[RecordKey] | None,
    per_frame: int,
) -> Iterator[pl.DataFrame]:
    perms = list(permutations_for(c.mode, c.permutations, 2, c.permutation_seed))
    option_mode = option_mode_for(bench, c, 2)
    style = c.score_style if c.mode == "score" else None
    orders = pl.DataFrame(
        {
            "permutation": list(range(len(perms))),
            "_first": [p[0] for p in perms],
            "_second": [p[1] for p in perms],
        },
        schema={"permutation": pl.Int32, "_first": pl.Int32, "_second": pl.Int32},
    )
    reps = pl.DataFrame(
        {"repetition": list(range(1, c.repetitions + 1))},
        schema={"repetition": pl.Int32},
    )
    for start in range(0, inst.height, per_frame):
        part = inst.slice(start, per_frame)
        yield _frame(bench, part, c.mode, option_mode, style, orders, reps, judge,
                     identity_hash, prompts, only)  # fmt: skip


def _frame(
    bench: Any,
    inst: pl.DataFrame,
    mode: str,
    option_mode: int,
    style: str | None,
    orders: pl.DataFrame,
    reps: pl.DataFrame,
    judge: str,
    identity_hash: str,
    prompts: PromptCache,
    only: Set[RecordKey] | None,
) -> pl.DataFrame:
    """The units of ``inst`` (every instance a pair), in the generator's order."""
    cands = pl.col("candidates")
    opt = [pl.col(k) if k in inst.columns else pl.lit(None, pl.String).alias(k)
           for k in ("better", "gold")]  # fmt: skip
    df = (
        inst.select(
            "question_id",
            "task",
            "instance_id",
            "candidate",
            "reference",
            cands.cast(pl.List(pl.String)),
            pl.col("input_chars").cast(pl.Int64),
            *opt,
        )  # fmt: skip
        .with_row_index("_i")
        .join(orders, how="cross")
        .join(reps, how="cross")
        .sort("_i", "permutation", "repetition", maintain_order=True)
        .with_columns(
            shown=pl.concat_list(
                cands.list.get(pl.col("_first")), cands.list.get(pl.col("_second"))
            )
        )
    )
    qids = df["question_id"].to_list()
    shown = [tuple(s) for s in df["shown"].to_list()]
    repetition = df["repetition"].to_list()
    if only is not None:  # a judge asked only what its records hold
        keep = [
            (";".join((q, *s)), r) in only for q, s, r in zip(qids, shown, repetition)
        ]
        df = df.filter(pl.Series(keep, dtype=pl.Boolean))
        qids = [q for q, k in zip(qids, keep) if k]
        shown = [s for s, k in zip(shown, keep) if k]
        repetition = [r for r, k in zip(repetition, keep) if k]
    name = bench.name
    query_ids, prompt_chars, output_chars = [], [], []
    last: tuple[Any, ...] = ()
    for q, s in zip(qids, shown):
        if last[:2] != (q, s):  # the repetitions of one order share its query
            version = bench.prompt_key(q)
            parts = (TEMPLATE_VERSION, name, q, mode, str(option_mode), *s)
            if version:
                parts = (*parts, "version", version)
            qid = (
                content_hash(*parts)
                if style is None
                else content_hash(*parts, "style", style)
            )
            last = (q, s, qid, *prompts.lengths(q, s, option_mode, mode, None, None))
        query_ids.append(last[2])
        prompt_chars.append(last[3])
        output_chars.append(last[4])
    unit_ids = [
        content_hash(identity_hash, qid, str(r))
        for qid, r in zip(query_ids, repetition)
    ]
    v = CONTROL
    none = pl.lit(None, pl.String)
    return df.with_columns(
        unit_id=pl.Series(unit_ids, dtype=pl.String),
        query_id=pl.Series(query_ids, dtype=pl.String),
        judge=pl.lit(judge, pl.String),
        benchmark=pl.lit(name, pl.String),
        mode=pl.lit(mode, pl.String),
        option_mode=pl.lit(option_mode, pl.Int32),
        output_chars=pl.Series(output_chars, dtype=pl.Int64),
        prompt_chars=pl.Series(prompt_chars, dtype=pl.Int64),
        perturbation=pl.lit(v.label, pl.String),
        perturbation_kind=pl.lit(v.bias, pl.String),
        perturbation_param=none,
        target=none,
        target_rule=none,
        target_slot=none,
    ).select(WORK_UNIT_COLUMNS)
