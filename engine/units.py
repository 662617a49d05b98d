"""Work units: one query (judge, instance, permutation, repetition), generated lazily.

Units are produced in batches of about ``batch_size``. An instance with at most
``batch_size`` units travels whole in one batch (all its permutations and repetitions
together, so a local judge can reuse the shared prompt prefix and answer repetitions as
one ``n``-sample request); a larger instance (list-wise ``all`` with p = 8 has 40,320
orders) is cut into batches at query boundaries, so the repetitions of one query always
travel together. Nothing holds more than one batch of units in the driver at a time, the
orders of an instance are never materialised (``all`` is unranked lazily), and prompt
text is cached under a character budget: a job of millions of units streams through.

Ids (content hashes, 32 hex chars):
- ``query_id`` = H(benchmark, question, models in slot order, mode, option mode, template
  version): equal for every judge and repetition of the same prompt.
- ``unit_id`` = H(judge identity hash, query_id, repetition): the judge's backend,
  model, settings and sampling enter through the identity hash, the label does not.
- a perturbed query (the bias suite, :mod:`voirdire.engine.perturb`) has ``query_id`` =
  H(control query id, variant key); the control's ids are those of a job without
  perturbations.

Perturbations cross every order: per instance, per order, the control and then each
variant, then the repetitions.

Each unit is one :class:`WorkUnit` record (a row of ``WORK_UNIT_SCHEMA`` plus its prompt);
the :class:`~voirdire.judges.base.Query` sent to the judge is derived from it
(:meth:`WorkUnit.query`), and a :class:`UnitBatch` turns its records into the columns the
store writes.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import polars as pl

from voirdire.benchmarks.base import Benchmark
from voirdire.benchmarks.biases import NAMES, Slots, get_kind
from voirdire.benchmarks.perturb import PromptEdit
from voirdire.benchmarks.scoring import SCORE_OPTION_MODE
from voirdire.core import LETTERS, ConfigError, content_hash
from voirdire.engine.permutations import (
    instance_seed,
    permutations_for,
    scheme_size,
    seeded_per_instance,
)
from voirdire.engine.perturb import CONTROL, QUALITY_RULES, Variant, target_model
from voirdire.engine.prompts import PromptCache
from voirdire.engine.spec import ComparisonSpec
from voirdire.judges.base import Query
from voirdire.schema import WORK_UNIT_COLUMNS

__all__ = [
    "TEMPLATE_VERSION",
    "PromptCache",
    "UnitBatch",
    "WorkUnit",
    "count_units",
    "iter_unit_batches",
    "option_mode_for",
    "query_id",
    "unit_id",
    "variant_edit",
]

#: bump when prompt construction changes in a way that changes prompts
TEMPLATE_VERSION = "1"


def query_id(
    benchmark: str,
    question_id: str,
    shown: Sequence[str],
    mode: str,
    option_mode: int,
    variant_key: str = "",
    style: str | None = None,
    version: str = "",
) -> str:
    """Judge-independent id of a prompt (32 hex chars); ``variant_key``: a perturbation's
    :attr:`~voirdire.engine.perturb.Variant.key` (``""``: the control); ``style``: the
    score-mode prompt style (``None`` for choice prompts); ``version``: the benchmark's
    :meth:`~voirdire.benchmarks.base.Benchmark.prompt_key` of the question (``""`` for the
    release benchmarks). The control choice prompt's id is the same as before either existed."""
    parts = (TEMPLATE_VERSION, benchmark, question_id, mode, str(option_mode), *shown)
    if version:
        parts = (*parts, "version", version)
    qid = (
        content_hash(*parts) if style is None else content_hash(*parts, "style", style)
    )
    return content_hash(qid, variant_key) if variant_key else qid


def unit_id(identity_hash: str, qid: str, repetition: int) -> str:
    """Id of one unit: a judge identity asking a query for the ``repetition``-th time."""
    return content_hash(identity_hash, qid, str(repetition))


def option_mode_for(
    bench: Benchmark, comparison: ComparisonSpec, p: int | None = None
) -> int:
    """The number of options offered: the job's setting or the benchmark's default.

    Pairwise: the release setting (MT-Bench 3, DevBench 2). List-wise (``p`` = list
    size): p + 1 (with a tie) for benchmarks whose release offered a tie (MT-Bench), else
    p (DevBench); see :meth:`~voirdire.benchmarks.base.Benchmark.listwise_option_mode`.
    """
    if comparison.option_mode:
        return comparison.option_mode
    if comparison.mode == "score":
        return SCORE_OPTION_MODE
    if comparison.mode == "listwise":
        if p is None:
            raise ConfigError("list-wise option mode needs the list size")
        return bench.listwise_option_mode(p)
    return bench.default_option_mode


@dataclass(slots=True)
class WorkUnit:
    """One work unit: a row of :data:`voirdire.schema.WORK_UNIT_SCHEMA` (the fields
    up to ``gold``, in the schema's order; see there for each column's meaning) and the
    prompt sent and the benchmark's system turn (None for a judge that needs no prompt),
    with the control's query id (None for the control), from which the judge's
    :class:`~voirdire.judges.base.Query` is derived."""

    unit_id: str
    query_id: str
    judge: str
    benchmark: str
    question_id: str
    task: str
    instance_id: str
    candidate: str | None
    reference: str | None
    candidates: tuple[str, ...]
    shown: tuple[str, ...]
    permutation: int
    repetition: int
    mode: str
    option_mode: int
    input_chars: int
    output_chars: int
    prompt_chars: int
    perturbation: str
    perturbation_kind: str
    perturbation_param: str | None
    target: str | None
    target_rule: str | None
    target_slot: str | None
    better: str | None
    gold: str | None
    prompt: str | None = None
    system: str | None = None
    control_query_id: str | None = None

    def query(self) -> Query:
        """The query the judge is asked (the control carries no perturbation)."""
        control = self.control_query_id is None
        return Query(
            unit_id=self.unit_id,
            query_id=self.query_id,
            benchmark=self.benchmark,
            question_id=self.question_id,
            shown=self.shown,
            repetition=self.repetition,
            option_mode=self.option_mode,
            mode=self.mode,
            prompt=self.prompt,
            system=self.system,
            perturbation_kind=None if control else self.perturbation_kind,
            perturbation_param=None if control else self.perturbation_param,
            target_slot=self.target_slot,
            control_query_id=self.control_query_id,
        )


@dataclass
class UnitBatch:
    """A batch of unit records for one judge (or rewriter): :class:`WorkUnit` (or
    :class:`~voirdire.engine.rewrite.RewriteUnit`) records, each with a ``query()``;
    ``names`` are the record fields written as columns (``WORK_UNIT_COLUMNS``)."""

    judge: str
    units: list[Any]
    names: Sequence[str] = field(default=tuple(WORK_UNIT_COLUMNS))

    def __len__(self) -> int:
        return len(self.units)

    @cached_property
    def columns(self) -> dict[str, list[Any]]:
        """The unit rows as columns (``names`` -> one value per unit, in unit order)."""
        rows = list(map(operator.attrgetter(*self.names), self.units))
        return (
            {name: list(col) for name, col in zip(self.names, zip(*rows))}
            if rows
            else {n: [] for n in self.names}
        )

    @cached_property
    def queries(self) -> list[Query]:
        """The queries sent to the judge, in unit order."""
        return [u.query() for u in self.units]

    def select(self, keep: list[bool]) -> UnitBatch:
        """The batch restricted to the units where ``keep`` is true."""
        return UnitBatch(
            self.judge, [u for u, m in zip(self.units, keep) if m], self.names
        )


class _UnitMaker:
    """Makes one judge's work units, instance by instance and order by order (the state of
    :func:`iter_unit_batches`: the scheme's orders, kept while the list size is the same)."""

    def __init__(
        self,
        bench: Benchmark,
        comparison: ComparisonSpec,
        *,
        judge: str,
        identity_hash: str,
        needs_prompt: bool,
        prompts: PromptCache,
        variants: Sequence[Variant],
        rewrites: Mapping[tuple[str, str, str], tuple[str, ...]],
    ) -> None:
        self.bench, self.comparison = bench, comparison
        self.judge, self.identity_hash, self.needs_prompt = (
            judge,
            identity_hash,
            needs_prompt,
        )
        self.prompts, self.variants, self.rewrites = prompts, variants, rewrites
        self.mode = comparison.mode
        self.style = comparison.score_style if self.mode == "score" else None
        self.per_instance = self.mode == "listwise" and seeded_per_instance(
            comparison.permutations
        )
        self.p: int | None = None
        self.option_mode = 0
        self.perms: Sequence[tuple[int, ...]] = []

    def orders(self, row: dict[str, Any]) -> Sequence[tuple[int, ...]]:
        """The orders (index tuples into the candidates) of an instance's scheme."""
        p = len(row["candidates"])
        if p != self.p or self.per_instance:
            c = self.comparison
            seed = (
                instance_seed(c.permutation_seed, row["instance_id"])
                if self.per_instance
                else c.permutation_seed
            )
            self.p = p
            self.perms = permutations_for(self.mode, c.permutations, p, seed)
            self.option_mode = option_mode_for(self.bench, c, p)
        return self.perms

    def units_per_instance(self) -> int:
        """Units of the last instance whose orders were asked for (every variant counted)."""
        return len(self.perms) * self.comparison.repetitions * len(self.variants)

    def of_order(
        self, row: dict[str, Any], k: int, perm: tuple[int, ...]
    ) -> list[WorkUnit]:
        """The units of the ``k``-th order of an instance: the control and each variant
        (none for a better/worse variant where the better candidate is unknown), each
        asked ``repetitions`` times."""
        bench, qid_ = self.bench, row["question_id"]
        cands = tuple(row["candidates"])
        shown = tuple(cands[i] for i in perm)
        better, worst = row.get("better"), row.get("worst")
        version = bench.prompt_key(qid_)
        system = (
            bench.system_prompt(qid_, shown, self.option_mode)
            if self.needs_prompt
            else None
        )
        base_qid = query_id(
            bench.name,
            qid_,
            shown,
            self.mode,
            self.option_mode,
            style=self.style,
            version=version,
        )
        out: list[WorkUnit] = []
        for v in self.variants:
            target = tslot = edit = None
            qid = base_qid
            if not v.is_control:
                if v.rule in QUALITY_RULES and better is None:
                    continue  # the quality source does not know this instance
                target = target_model(v.rule, cands, shown, better, worst)
                tslot = LETTERS[shown.index(target)] if target is not None else None
                edit = variant_edit(bench, v, qid_, shown, target, self.rewrites)
                qid = query_id(
                    bench.name,
                    qid_,
                    shown,
                    self.mode,
                    self.option_mode,
                    v.key,
                    style=self.style,
                    version=version,
                )
            label = None if edit is None else v.label
            if self.needs_prompt:
                prompt, out_chars = self.prompts.get(
                    qid_, shown, self.option_mode, self.mode, label, edit
                )
                prompt_chars = len(prompt)
            else:
                prompt = None
                prompt_chars, out_chars = self.prompts.lengths(
                    qid_, shown, self.option_mode, self.mode, label, edit
                )
            for r in range(1, self.comparison.repetitions + 1):
                out.append(
                    WorkUnit(
                        unit_id(self.identity_hash, qid, r),
                        qid,
                        self.judge,
                        bench.name,
                        qid_,
                        row["task"],
                        row["instance_id"],
                        row["candidate"],
                        row["reference"],
                        cands,
                        shown,
                        k,
                        r,
                        self.mode,
                        self.option_mode,
                        row["input_chars"],
                        out_chars,
                        prompt_chars,
                        v.label,
                        v.kind,
                        v.param,
                        target,
                        v.rule,
                        tslot,
                        better,
                        row.get("gold"),
                        prompt,
                        system,
                        None if v.is_control else base_qid,
                    )
                )
        return out


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
    variants: Sequence[Variant] = (CONTROL,),
    rewrites: Mapping[tuple[str, str, str], tuple[str, ...]] | None = None,
) -> Iterator[UnitBatch]:
    """Yield the judge's units in batches of about ``batch_size``.

    ``variants``: the control and the perturbation variants
    (:func:`voirdire.engine.perturb.expand_variants`); ``inst`` then needs the columns
    ``better`` and ``worst`` (:func:`voirdire.engine.quality.with_quality`) when a variant's
    target rule is better/worse, and ``rewrites`` maps (question id, model, variant label)
    to the rewritten answer per turn for answer kinds. An instance whose better candidate is
    unknown has no unit of a better/worse variant.

    Order: instance by instance; within an instance permutation by permutation (in the
    scheme's order; ``permutation`` is the index in it), then repetition. An instance of at
    most ``batch_size`` units is never split; a larger one is cut at query boundaries (see
    the module docstring). ``inst`` is the output of :func:`instances`. Memory: one batch,
    whatever the number of instances or orders.
    """
    maker = _UnitMaker(
        bench,
        comparison,
        judge=judge,
        identity_hash=identity_hash,
        needs_prompt=needs_prompt,
        prompts=prompts or PromptCache(bench, score_style=comparison.score_style),
        variants=variants,
        rewrites=rewrites or {},
    )
    units: list[WorkUnit] = []
    for row in inst.iter_rows(named=True):
        perms = maker.orders(row)
        split = maker.units_per_instance() > batch_size
        if split and units:  # a large instance starts in a batch of its own
            yield UnitBatch(judge, units)
            units = []
        for k, perm in enumerate(perms):
            units += maker.of_order(row, k, perm)
            if split and len(units) >= batch_size:
                yield UnitBatch(judge, units)
                units = []
        if len(units) >= batch_size:
            yield UnitBatch(judge, units)
            units = []
    if units:
        yield UnitBatch(judge, units)


def variant_edit(
    bench: Benchmark,
    v: Variant,
    question_id: str,
    shown: Sequence[str],
    target: str | None,
    rewrites: Mapping[tuple[str, str, str], tuple[str, ...]],
) -> PromptEdit:
    """The prompt edit of variant ``v`` for one order: its kind's sentence
    (:meth:`~voirdire.benchmarks.biases.BiasKind.instruction_text`, with the slots' names
    for the names family) or the target's rewritten answer (answer family).

    Raises:
        ConfigError: an unknown kind.
        KeyError: an answer kind whose rewrite is missing from ``rewrites``.
    """
    kind = get_kind(v.kind)
    if kind.rewrites_answers:
        return PromptEdit(answers={target: rewrites[(question_id, target, v.label)]})  # type: ignore[dict-item]
    t = shown.index(target) if target is not None else None
    slots = Slots(
        target=None if t is None else bench.slot_label(t),
        other=bench.slot_label(1 - t) if t is not None and len(shown) == 2 else None,
        labels=tuple(bench.slot_label(i) for i in range(len(shown))),
        shown=tuple(shown),
    )
    return PromptEdit(
        instruction=kind.instruction_text(v.param, slots),
        names=tuple(shown) if kind.family == NAMES else None,
    )


def count_units(
    inst: pl.DataFrame,
    comparison: ComparisonSpec,
    variants: Sequence[Variant] = (CONTROL,),
) -> int:
    """How many units one judge has for these instances (without generating them).

    Sums instances x orders of the scheme x repetitions per list size present, times the
    variants (a better/worse variant counts only instances whose better candidate is known:
    ``inst`` column ``better``).

    Raises:
        ConfigError: unknown scheme, or ``sample:k`` with k > p!.
    """
    if inst.height == 0:
        return 0
    total = 0
    sizes = inst.group_by(pl.col("candidates").list.len().alias("p")).len()
    for p, n in sizes.iter_rows():
        if comparison.mode == "listwise":
            orders = scheme_size(comparison.permutations, p)
        else:
            orders = len(
                permutations_for(
                    comparison.mode,
                    comparison.permutations,
                    p,
                    comparison.permutation_seed,
                )
            )
        total += n * orders * comparison.repetitions
    if len(variants) == 1:
        return total
    known = inst["better"].is_not_null().sum() if "better" in inst.columns else 0
    n_quality = sum(1 for v in variants if v.rule in QUALITY_RULES)
    n_plain = len(variants) - n_quality
    per_instance = (
        total // inst.height
    )  # the same orders x repetitions for every instance of a job
    return per_instance * (n_plain * inst.height + n_quality * int(known))
