"""The rewrite stage: answers rewritten for answer-side perturbations, before judging.

Answer biases (authority, verbosity, sentiment, fallacy) show the judge a rewritten answer
of the target. The stage lists every (question, model, variant) whose answer a variant
needs (:func:`plan_rewrites`), and sends each distinct rewrite once through the same
scheduler and Ray workers as the judges (:func:`voirdire.engine.scheduler.execute`), the
rewriter's backend hosted by a :class:`~voirdire.engine.worker.JudgeWorker`. Rewrites are
content-addressed: the id is H(rewriter identity hash, rewrite prompt), so a rerun, a
resumed crash or another job in the same output directory never rewrites an answer twice.
They are stored with their provenance (rewriter identity, prompt, original) as Parquet in
``rewrites/<rewriter>/part-*.parquet`` (``REWRITE_SCHEMA``).

Only the judged turn is rewritten (MT-Bench: the second; DevBench has one). A rewrite that
failed stops the job after the stage (its failure is recorded; rerun to retry it): no
perturbed unit is judged on a missing rewrite.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa

from voirdire.benchmarks.base import Benchmark
from voirdire.benchmarks.biases.registry import get_bias
from voirdire.benchmarks.prompt_edits import rewrite_prompt
from voirdire.core import ConfigError, canonical_json, content_hash
from voirdire.engine.bind import ResolvedJudge
from voirdire.engine.perturb import Variant, rewrite_targets
from voirdire.engine.spec import JobSpec
from voirdire.engine.store import ResultStore
from voirdire.engine.unit_records import UnitBatch
from voirdire.exceptions import RewriteFailed
from voirdire.judges.base import Query, get_backend
from voirdire.judges.capabilities import Rewrites, rewrite_biases
from voirdire.schema import REWRITE_SCHEMA, REWRITE_UNIT_SCHEMA

REWRITES_DIR = "rewrites"


def resolve_rewriters(job: JobSpec) -> dict[str, ResolvedJudge]:
    """Bind each ``[[rewriters]]`` entry to the backend that rewrites for the one it names
    (:meth:`~voirdire.judges.capabilities.Rewrites.rewriter`: a model backend itself; ``simulated``
    the simulated rewriter; ``template`` the template rewriter).

    Raises:
        ConfigError: a backend that cannot generate (e.g. ``replay``), bad settings, a
            constrained verdict mode, repeated names.
    """
    out: dict[str, ResolvedJudge] = {}
    for spec in job.rewriters:
        if spec.name in out:
            raise ConfigError(f"rewriter names must be unique; repeated: {spec.name}")
        named = get_backend(spec.backend)
        backend = named.rewriter() if issubclass(named, Rewrites) else None
        if backend is None:
            raise ConfigError(
                f"rewriter {spec.name!r}: backend {spec.backend!r} cannot rewrite answers (it declares no rewriter: "
                "it generates no text); use a backend that generates free text or names a rewriter for itself"
            )
        mapped = (
            spec
            if backend is named
            else spec.model_copy(update={"backend": backend.name})
        )
        rj = ResolvedJudge(mapped, job)
        mode = getattr(rj.settings, "verdict_mode", "free")
        if mode != "free":
            raise ConfigError(
                f"rewriter {spec.name!r}: verdict_mode = {mode!r} constrains the output to a verdict "
                "letter; a rewriter generates free text (leave verdict_mode unset)"
            )
        out[spec.name] = rj
    return out


def check_rewriters(
    variants: Sequence[Variant], rewriters: dict[str, ResolvedJudge]
) -> None:
    """Refuse a bias a rewriter cannot do (its backend's
    :attr:`~voirdire.judges.capabilities.Rewrites.rewrite_biases`: the ``template`` rewriter
    does authority and a labelled template verbosity only).

    Raises:
        ConfigError: naming the rewriter, the bias and what it can do.
    """
    for v in variants:
        if v.rewriter is None:
            continue
        biases = rewrite_biases(rewriters[v.rewriter].backend)
        if biases is not None and v.bias not in biases:
            raise ConfigError(
                f"perturbation {v.label!r}: rewriter {v.rewriter!r} ({rewriters[v.rewriter].spec.backend}) cannot do "
                f"{v.bias!r}; its backend declares it does {', '.join(biases)}. Use a rewriter whose backend "
                "generates free text (it rewrites every bias)"
            )


#: the Arrow types of ``REWRITE_UNIT_SCHEMA`` as polars types
_POLARS = {pa.string(): pl.String, pa.int32(): pl.Int32}


def plan_rewrites(
    bench: Benchmark,
    inst: pl.DataFrame,
    variants: Sequence[Variant],
    rewriters: dict[str, ResolvedJudge],
) -> pl.DataFrame:
    """Every rewrite the job's answer variants need.

    Returns one row per (question id, model, variant label) with the columns of
    ``REWRITE_UNIT_SCHEMA`` plus ``variant`` (the label); ``unit_id`` (the rewrite id)
    repeats where two variants need the same rewrite.
    """
    rows: dict[str, list[Any]] = {
        k: [] for k in [*REWRITE_UNIT_SCHEMA.names, "variant"]
    }
    answer_variants = [
        v for v in variants if not v.is_control and get_bias(v.bias).rewrites_answers
    ]
    if not answer_variants:
        # the schema spelt in polars' types: converting an Arrow table would import
        # pandas (a quarter of a second) for an empty frame
        schema = {f.name: _POLARS[f.type] for f in REWRITE_UNIT_SCHEMA}
        return pl.DataFrame(rows, schema={**schema, "variant": pl.String})
    has_better = "better" in inst.columns
    seen: set[tuple[str, str, str]] = set()
    for row in inst.select(
        "question_id", "candidates", *(["better", "worst"] if has_better else [])
    ).iter_rows(named=True):
        q = row["question_id"]
        for v in answer_variants:
            rj = rewriters[v.rewriter]  # type: ignore[index]
            for m in rewrite_targets(
                v.rule or "candidate",
                row["candidates"],
                row.get("better"),
                row.get("worst"),
            ):
                if (q, m, v.label) in seen:
                    continue
                seen.add((q, m, v.label))
                turns = bench.answers(q, m)
                prompt = rewrite_prompt(
                    v.bias, v.param, bench.question_text(q), turns[-1]
                )
                rows["unit_id"].append(
                    content_hash("rewrite", rj.identity_hash, prompt)
                )
                rows["rewriter"].append(rj.name)
                rows["rewriter_identity"].append(canonical_json(rj.identity))
                rows["benchmark"].append(bench.name)
                rows["question_id"].append(q)
                rows["model"].append(m)
                rows["turn"].append(len(turns))
                rows["kind"].append(v.bias)
                rows["param"].append(v.param)
                rows["original"].append(turns[-1])
                rows["prompt"].append(prompt)
                rows["variant"].append(v.label)
    return pl.DataFrame(rows).with_columns(pl.col("turn").cast(pl.Int32))


@dataclass(slots=True)
class RewriteUnit:
    """One rewrite to ask for: a row of ``REWRITE_UNIT_SCHEMA`` (see there), from which the
    rewriter's query is derived (:meth:`query`)."""

    unit_id: str
    rewriter: str
    rewriter_identity: str
    benchmark: str
    question_id: str
    model: str
    turn: int
    kind: str
    param: str | None
    original: str
    prompt: str

    def query(self) -> Query:
        """The rewriter's query: the rewrite prompt, its bias type (column ``kind``) and parameter."""
        return Query(
            unit_id=self.unit_id,
            query_id=self.unit_id,
            benchmark=self.benchmark,
            question_id=self.question_id,
            shown=(self.model,),
            repetition=1,
            option_mode=0,
            mode="rewrite",
            prompt=self.prompt,
            perturbation_kind=self.kind,
            perturbation_param=self.param,
        )


def iter_rewrite_batches(
    needed: pl.DataFrame, rewriter: str, batch_size: int
) -> Iterator[UnitBatch]:
    """The distinct rewrites of one rewriter as scheduler batches of :class:`RewriteUnit`."""
    df = needed.filter(pl.col("rewriter") == rewriter).unique(
        "unit_id", keep="first", maintain_order=True
    )
    names = REWRITE_UNIT_SCHEMA.names
    for chunk in df.select(names).iter_slices(batch_size):
        yield UnitBatch(
            rewriter, [RewriteUnit(*row) for row in chunk.iter_rows()], names
        )


def rewrite_store(output_dir: Any, **kw: Any) -> ResultStore:
    """The store of rewrites (``rewrites/<rewriter>/part-*.parquet``, ``REWRITE_SCHEMA``)."""
    return ResultStore(output_dir, subdir=REWRITES_DIR, schema=REWRITE_SCHEMA, **kw)


def rewrites_for_units(
    bench: Benchmark, needed: pl.DataFrame, store: ResultStore
) -> dict[tuple[str, str, str], tuple[str, ...]]:
    """``(question id, model, variant label) -> answer per turn`` with the judged turn
    rewritten, from the stored rewrites.

    Raises:
        RewriteFailed: a needed rewrite is missing or recorded as failed.
    """
    if needed.height == 0:
        return {}
    done = store.read_raw(["unit_id", "output", "failure", "failure_message"])
    got = needed.join(done, on="unit_id", how="left")
    bad = got.filter(pl.col("output").is_null())
    if bad.height:
        first = bad.row(0, named=True)
        raise RewriteFailed(
            f"{bad['unit_id'].n_unique()} rewrite(s) failed or are missing (first: {first['variant']} of "
            f"{first['model']} on question {first['question_id']}: {first['failure_message'] or 'not done'}); "
            "they are recorded in rewrites/; run the job again to retry them"
        )
    out = {}
    for q, m, label, text in got.select(
        "question_id", "model", "variant", "output"
    ).iter_rows():
        out[(q, m, label)] = (*bench.answers(q, m)[:-1], text)
    return out
