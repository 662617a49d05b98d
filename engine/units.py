"""Work units: one query (judge, instance, permutation, repetition), generated lazily.

Units are produced in batches that never split an instance (all permutations and
repetitions of an instance travel together, so a local judge can reuse the shared prompt
prefix and answer repetitions as one ``n``-sample request). Nothing holds more than one
batch of units in the driver at a time; a job of millions of units streams through.

Ids (content hashes, 32 hex chars):
- ``query_id`` = H(benchmark, question, models in slot order, mode, option mode, template
  version): equal for every judge and repetition of the same prompt.
- ``unit_id`` = H(judge identity hash, query_id, repetition): the judge's backend,
  model, settings and sampling enter through the identity hash, the label does not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import polars as pl

from voirdire.benchmarks.base import Benchmark
from voirdire.engine.permutations import permutations_for
from voirdire.engine.schema import UNIT_COLUMNS
from voirdire.engine.spec import BenchmarkSpec, ComparisonSpec
from voirdire.judges.base import ConfigError, Query

#: bump when prompt construction changes in a way that changes prompts
TEMPLATE_VERSION = "1"


def _h(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def query_id(benchmark: str, question_id: str, shown: Sequence[str], mode: str, option_mode: int) -> str:
    """Judge-independent id of a prompt (32 hex chars)."""
    return _h("\x1f".join([TEMPLATE_VERSION, benchmark, question_id, mode, str(option_mode), *shown]))


def unit_id(identity_hash: str, qid: str, repetition: int) -> str:
    """Id of one unit: a judge identity asking a query for the ``repetition``-th time."""
    return _h(f"{identity_hash}\x1f{qid}\x1f{repetition}")


def option_mode_for(bench: Benchmark, comparison: ComparisonSpec) -> int:
    """The number of options offered: the job's setting or the benchmark's release setting."""
    return comparison.option_mode or bench.default_option_mode


def instances(bench: Benchmark, spec: BenchmarkSpec, comparison: ComparisonSpec) -> pl.DataFrame:
    """The job's instances, one row each.

    Columns: ``question_id`` (str), ``task`` (str), ``input_chars`` (int),
    ``candidates`` (list[str], canonical order), ``candidate`` (str, pairwise; null
    list-wise), ``reference`` (str, pairwise; null list-wise), ``instance_id`` (str).

    Raises:
        ConfigError: unknown candidate, reference, question or task.
    """
    reference = spec.reference or bench.reference
    known = set(bench.models)
    if reference not in known:
        raise ConfigError(f"benchmark {bench.name}: unknown reference model {reference!r}")
    candidates = spec.candidates or [m for m in bench.models if m != reference]
    unknown = [c for c in candidates if c not in known]
    if unknown:
        raise ConfigError(
            f"benchmark {bench.name}: unknown candidate model(s) {', '.join(map(repr, unknown))}; "
            f"the table has: {', '.join(bench.models)}"
        )
    q = bench.questions
    if spec.questions:
        missing = sorted(set(spec.questions) - set(q["question_id"].to_list()))
        if missing:
            raise ConfigError(f"benchmark {bench.name}: unknown question id(s) {', '.join(missing)}")
        q = q.filter(pl.col("question_id").is_in(spec.questions))
    if spec.tasks:
        missing = sorted(set(spec.tasks) - set(q["task"].unique().to_list()))
        if missing:
            raise ConfigError(f"benchmark {bench.name}: unknown task(s) {', '.join(missing)}")
        q = q.filter(pl.col("task").is_in(spec.tasks))
    if comparison.mode != "pairwise":
        raise ConfigError(f"comparison mode {comparison.mode!r} is not supported by this version")
    cands = pl.DataFrame({"candidate": [c for c in candidates if c != reference]})
    out = (
        q.select("question_id", "task", "input_chars")
        .join(cands, how="cross")
        .with_columns(
            pl.lit(reference).alias("reference"),
            pl.concat_list(pl.col("candidate"), pl.lit(reference)).alias("candidates"),
        )
        .with_columns(
            (pl.col("question_id") + ";" + pl.col("candidates").list.join(";")).alias("instance_id")
        )
    )
    if spec.max_instances:
        out = out.head(spec.max_instances)
    return out


@dataclass
class UnitBatch:
    """A batch of units for one judge: the unit rows (columns of
    :data:`voirdire.engine.schema.UNIT_SCHEMA`) and the queries sent to the judge."""

    judge: str
    columns: dict[str, list[Any]]
    queries: list[Query]

    def __len__(self) -> int:
        return len(self.queries)

    def select(self, keep: list[bool]) -> "UnitBatch":
        """The batch restricted to the rows where ``keep`` is true."""
        cols = {k: [v for v, m in zip(vals, keep) if m] for k, vals in self.columns.items()}
        return UnitBatch(self.judge, cols, [q for q, m in zip(self.queries, keep) if m])


class PromptCache:
    """Builds prompts and their lengths once per distinct query (LRU, bounded)."""

    def __init__(self, bench: Benchmark, maxsize: int = 8192) -> None:
        self.bench = bench
        self._get = lru_cache(maxsize=maxsize)(self._build)

    def _build(self, question_id: str, shown: tuple[str, ...], option_mode: int, mode: str) -> tuple[str, int]:
        prompt = self.bench.build_prompt(question_id, shown, option_mode, mode=mode)
        return prompt, self.bench.output_chars(question_id, shown)

    def get(self, question_id: str, shown: tuple[str, ...], option_mode: int, mode: str) -> tuple[str, int]:
        """``(prompt, output_chars)`` for a query."""
        return self._get(question_id, shown, option_mode, mode)


def iter_unit_batches(
    bench: Benchmark,
    inst: pl.DataFrame,
    comparison: ComparisonSpec,
    *,
    judge: str,
    identity_hash: str,
    needs_prompt: bool,
    batch_size: int,
    prompts: PromptCache | None = None,
) -> Iterator[UnitBatch]:
    """Yield the judge's units in batches of about ``batch_size`` (whole instances).

    Order: instance by instance; within an instance permutation by permutation, then
    repetition. ``inst`` is the output of :func:`instances`.
    """
    mode = comparison.mode
    option_mode = option_mode_for(bench, comparison)
    reps = comparison.repetitions
    prompts = prompts or PromptCache(bench)
    cols: dict[str, list[Any]] = {k: [] for k in UNIT_COLUMNS}
    queries: list[Query] = []
    p = None
    perms: list[tuple[int, ...]] = []
    for row in inst.iter_rows(named=True):
        cands = tuple(row["candidates"])
        if p != len(cands):
            p = len(cands)
            perms = permutations_for(mode, comparison.permutations, p, comparison.permutation_seed)
        qid_ = row["question_id"]
        for k, perm in enumerate(perms):
            shown = tuple(cands[i] for i in perm)
            prompt, out_chars = prompts.get(qid_, shown, option_mode, mode)
            qid = query_id(bench.name, qid_, shown, mode, option_mode)
            for r in range(1, reps + 1):
                uid = unit_id(identity_hash, qid, r)
                cols["unit_id"].append(uid)
                cols["query_id"].append(qid)
                cols["judge"].append(judge)
                cols["benchmark"].append(bench.name)
                cols["question_id"].append(qid_)
                cols["task"].append(row["task"])
                cols["instance_id"].append(row["instance_id"])
                cols["candidate"].append(row["candidate"])
                cols["reference"].append(row["reference"])
                cols["candidates"].append(list(cands))
                cols["shown"].append(list(shown))
                cols["permutation"].append(k)
                cols["repetition"].append(r)
                cols["mode"].append(mode)
                cols["option_mode"].append(option_mode)
                cols["input_chars"].append(row["input_chars"])
                cols["output_chars"].append(out_chars)
                cols["prompt_chars"].append(len(prompt))
                queries.append(
                    Query(
                        unit_id=uid,
                        query_id=qid,
                        benchmark=bench.name,
                        question_id=qid_,
                        shown=shown,
                        repetition=r,
                        option_mode=option_mode,
                        mode=mode,
                        prompt=prompt if needs_prompt else None,
                    )
                )
        if len(queries) >= batch_size:
            yield UnitBatch(judge, cols, queries)
            cols = {k: [] for k in UNIT_COLUMNS}
            queries = []
    if queries:
        yield UnitBatch(judge, cols, queries)


def count_units(inst: pl.DataFrame, comparison: ComparisonSpec) -> int:
    """How many units one judge has for these instances (without generating them)."""
    if inst.height == 0:
        return 0
    p = len(inst["candidates"][0])
    perms = permutations_for(comparison.mode, comparison.permutations, p, comparison.permutation_seed)
    return inst.height * len(perms) * comparison.repetitions
