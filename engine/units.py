"""Work units: one query (judge, instance, permutation, repetition), generated lazily.

Units are produced in batches of about ``batch_size``. An instance with at most
``batch_size`` units travels whole in one batch (all its permutations and repetitions
together, so a local judge can reuse the shared prompt prefix and answer repetitions as
one ``n``-sample request); a larger instance (list-wise ``all`` with p = 8 has 40,320
orders) is cut into batches at query boundaries, so the repetitions of one query always
travel together. Nothing holds more than one batch of units in the driver at a time, the
orders of an instance are never materialised (``all`` is unranked lazily), and prompt
text is cached under a character budget: a job of millions of units streams through.

The records and their ids (``query_id``, ``unit_id``: content hashes) are
:mod:`voirdire.engine.unit_records`'s: import them from there.

Perturbations cross every order: per instance, per order, the control and then each
variant, then the repetitions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence, Set
from typing import Any

import polars as pl

from voirdire.benchmarks.base import Benchmark
from voirdire.benchmarks.biases.bias import NAMES, Slots
from voirdire.benchmarks.biases.registry import get_bias
from voirdire.benchmarks.prompt_edits import PromptEdit
from voirdire.benchmarks.recorded import RecordKey
from voirdire.benchmarks.scoring import SCORE_OPTION_MODE
from voirdire.core import LETTERS, ConfigError
from voirdire.engine.permutations import (
    instance_seed,
    permutations_for,
    scheme_size,
    seeded_per_instance,
)
from voirdire.engine.perturb import CONTROL, QUALITY_RULES, Variant, target_model
from voirdire.engine.prompts import PromptCache
from voirdire.engine.spec import ComparisonSpec, RunSpec
from voirdire.engine.unit_records import (
    UnitBatch,
    WorkUnit,
    query_id,
    unit_id,
)

__all__ = [
    "batch_size_for",
    "count_units",
    "iter_unit_batches",
    "option_mode_for",
    "variant_edit",
]

#: what :meth:`_UnitMaker.variant` gives for an asked variant: query id, target model,
#: target slot, prompt (None without one), prompt characters, output characters
_Asked = tuple[str, "str | None", "str | None", "str | None", int, int]


#: units per batch of a judge that sends no prompt (replay, simulated) where the job leaves
#: ``[run] batch_size`` unset: such a unit is a few hundred bytes, and each batch is one Ray
#: call and one result table (a 100,000-verdict audit: 25 batches, not 391)
PROMPT_FREE_BATCH = 4096


def batch_size_for(run: RunSpec, prompt_free: bool) -> int:
    """The units per batch of one judge: ``run.batch_size`` where the job sets it or the
    judge sends prompts, else :data:`PROMPT_FREE_BATCH` (at least the default)."""
    if not prompt_free or "batch_size" in run.model_fields_set:
        return run.batch_size
    return max(run.batch_size, PROMPT_FREE_BATCH)


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
        only: Set[RecordKey] | None = None,
    ) -> None:
        self.bench, self.comparison = bench, comparison
        self.only = only
        self.reps = tuple(range(1, comparison.repetitions + 1))
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
        # the instance of_order last saw: its candidates and prompt key
        self._row: dict[str, Any] | None = None
        self._cands: tuple[str, ...] = ()
        self._version = ""

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
        if row is not self._row:  # what every order of the instance shares
            self._row = row
            self._cands = tuple(row["candidates"])
            self._version = bench.prompt_key(qid_)
        cands, version = self._cands, self._version
        shown = tuple(cands[i] for i in perm)
        reps = self.reps
        if self.only is not None:  # a judge asked only what its records hold
            key = ";".join((qid_, *shown))
            reps = tuple(r for r in reps if (key, r) in self.only)
            if not reps:
                return []
        system = (
            bench.system_prompt(qid_, shown, self.option_mode)
            if self.needs_prompt
            else None
        )
        base_qid = self.query_id(qid_, shown, version)
        # the fields every unit of this order shares, in WorkUnit's order up to permutation
        head = (self.judge, bench.name, qid_, row["task"], row["instance_id"],
                row["candidate"], row["reference"], cands, shown, k)  # fmt: skip
        out: list[WorkUnit] = []
        for v in self.variants:
            asked = self.variant(row, cands, shown, version, base_qid, v)
            if asked is not None:
                out += self.repeat(row, head, system, base_qid, v, asked, reps)
        return out

    def query_id(
        self, qid_: str, shown: tuple[str, ...], version: str, key: str = ""
    ) -> str:
        """The query id of this order (``key``: a variant's key, ``""``: the control)."""
        return query_id(self.bench.name, qid_, shown, self.mode, self.option_mode, key,
                        style=self.style, version=version)  # fmt: skip

    def variant(
        self,
        row: dict[str, Any],
        cands: tuple[str, ...],
        shown: tuple[str, ...],
        version: str,
        base_qid: str,
        v: Variant,
    ) -> _Asked | None:
        """What variant ``v`` asks in this order (:data:`_Asked`), or None where its
        target needs the better candidate and the quality source does not know it."""
        target = tslot = edit = None
        qid, qid_ = base_qid, row["question_id"]
        if not v.is_control:
            better = row.get("better")
            if v.rule in QUALITY_RULES and better is None:
                return None
            target = target_model(v.rule, cands, shown, better, row.get("worst"))
            tslot = LETTERS[shown.index(target)] if target is not None else None
            edit = variant_edit(self.bench, v, qid_, shown, target, self.rewrites)
            qid = self.query_id(qid_, shown, version, v.key)
        label = None if edit is None else v.label
        args = (qid_, shown, self.option_mode, self.mode, label, edit)
        if self.needs_prompt:
            prompt, out_chars = self.prompts.get(*args)
            return qid, target, tslot, prompt, len(prompt), out_chars
        prompt_chars, out_chars = self.prompts.lengths(*args)
        return qid, target, tslot, None, prompt_chars, out_chars

    def repeat(
        self,
        row: dict[str, Any],
        head: tuple[Any, ...],
        system: str | None,
        base_qid: str,
        v: Variant,
        asked: _Asked,
        reps: Sequence[int],
    ) -> list[WorkUnit]:
        """The units of one asked variant, one per repetition of ``reps`` (``head``: see
        :meth:`of_order`)."""
        qid, target, tslot, prompt, prompt_chars, out_chars = asked
        tail = (self.mode, self.option_mode, row["input_chars"], out_chars,
                prompt_chars, v.label, v.bias, v.param, target, v.rule, tslot,
                row.get("better"), row.get("gold"), prompt, system,
                None if v.is_control else base_qid)  # fmt: skip
        ident = self.identity_hash
        return [WorkUnit(unit_id(ident, qid, r), qid, *head, r, *tail) for r in reps]


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
    only: Set[RecordKey] | None = None,
) -> Iterator[UnitBatch]:
    """Yield the judge's units in batches of about ``batch_size``.

    ``only``: where given, just the units whose ``(";".join((question id, *shown)),
    repetition)`` is in it (a judge asked what its records hold:
    :func:`voirdire.engine.completion.own_keys`); the others are not its units.

    ``variants``: the control and the perturbation variants
    (:func:`voirdire.engine.perturb.expand_variants`); ``inst`` then needs the columns
    ``better`` and ``worst`` (:func:`voirdire.engine.quality.with_quality`) when a variant's
    target rule is better/worse, and ``rewrites`` maps (question id, model, variant label)
    to the rewritten answer per turn for answer biases. An instance whose better candidate is
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
        only=only,
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
    """The prompt edit of variant ``v`` for one order: its bias's sentence
    (:meth:`~voirdire.benchmarks.biases.bias.BiasType.instruction_text`, with the slots' names
    for the names family) or the target's rewritten answer (answer family).

    Raises:
        ConfigError: an unknown bias.
        KeyError: an answer bias whose rewrite is missing from ``rewrites``.
    """
    bias = get_bias(v.bias)
    if bias.rewrites_answers:
        return PromptEdit(answers={target: rewrites[(question_id, target, v.label)]})  # type: ignore[dict-item]
    t = shown.index(target) if target is not None else None
    slots = Slots(
        target=None if t is None else bench.slot_label(t),
        other=bench.slot_label(1 - t) if t is not None and len(shown) == 2 else None,
        labels=tuple(bench.slot_label(i) for i in range(len(shown))),
        shown=tuple(shown),
    )
    return PromptEdit(
        instruction=bias.instruction_text(v.param, slots),
        names=tuple(shown) if bias.family == NAMES else None,
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
