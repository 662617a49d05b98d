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
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
from voirdire.benchmarks.base import SCORE_OPTION_MODE, Benchmark
from voirdire.benchmarks.perturb import (
    ANSWER_KINDS,
    INSTRUCTION_KINDS,
    NAME_KINDS,
    PromptEdit,
    instruction_text,
)
from voirdire.engine.permutations import (
    instance_seed,
    permutations_for,
    scheme_size,
    seeded_per_instance,
)
from voirdire.engine.perturb import CONTROL, QUALITY_RULES, Variant, target_model
from voirdire.engine.schema import WORK_UNIT_COLUMNS
from voirdire.engine.spec import ComparisonSpec
from voirdire.judges.base import Query

from voirdire.core import LETTERS, ConfigError, content_hash

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
    qid = content_hash(*parts) if style is None else content_hash(*parts, "style", style)
    return content_hash(qid, variant_key) if variant_key else qid


def unit_id(identity_hash: str, qid: str, repetition: int) -> str:
    """Id of one unit: a judge identity asking a query for the ``repetition``-th time."""
    return content_hash(identity_hash, qid, str(repetition))


def option_mode_for(bench: Benchmark, comparison: ComparisonSpec, p: int | None = None) -> int:
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


@dataclass
class UnitBatch:
    """A batch of units for one judge: the unit rows (columns of
    :data:`voirdire.engine.schema.WORK_UNIT_SCHEMA`) and the queries sent to the judge."""

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
    """Builds prompts once per distinct query and remembers them, within bounds.

    Two LRU caches shared by a job's judges: prompt texts, bounded by ``max_chars``
    characters in all (list-wise prompts with 8 answers run to tens of kB, so a count
    bound alone would not bound memory), and ``(prompt_chars, output_chars)`` per query,
    bounded by ``maxsize`` entries.
    """

    def __init__(
        self, bench: Benchmark, maxsize: int = 65_536, max_chars: int = 16_000_000, score_style: str = "evidence_first"
    ) -> None:
        self.bench = bench
        self.score_style = score_style
        self.maxsize = maxsize
        self.max_chars = max_chars
        self._texts: OrderedDict[tuple, str] = OrderedDict()
        self._chars = 0
        self._lens: OrderedDict[tuple, tuple[int, int]] = OrderedDict()
        self._last: tuple[tuple, str] | None = None  # the last control prompt built

    def _build(self, key: tuple, keep_text: bool = True, edit: PromptEdit | None = None) -> str:
        question_id, shown, option_mode, mode = key[:4]
        if edit is not None and not edit.answers:
            # an instruction/name edit of the control prompt, which was just built (units
            # come control first, then the variants of the same order): edit that text
            base_key = key[:4]
            if self._last is not None and self._last[0] == base_key:
                base = self._last[1]
            else:
                base = self._texts.get(base_key) or self._build(base_key, keep_text=False)
            prompt = self.bench.apply_edit(base, edit)
        else:
            if mode == "score":
                prompt = self.bench.apply_edit(self.bench.build_score_prompt(question_id, shown, self.score_style), edit)
            else:
                prompt = self.bench.build_prompt(question_id, shown, option_mode, mode=mode, edit=edit)
            if edit is None:
                self._last = (key, prompt)
        if keep_text and len(prompt) <= self.max_chars:
            self._texts[key] = prompt
            self._chars += len(prompt)
            while self._chars > self.max_chars:
                _, old = self._texts.popitem(last=False)
                self._chars -= len(old)
        if edit is None or edit.answers:
            out_chars = self.bench.output_chars(question_id, shown, edit.answers if edit else None)
        else:  # the answers are the control's
            got = self._lens.get(key[:4])
            out_chars = got[1] if got is not None else self.bench.output_chars(question_id, shown)
        self._lens[key] = (len(prompt), out_chars)
        if len(self._lens) > self.maxsize:
            self._lens.popitem(last=False)
        return prompt

    def get(
        self, question_id: str, shown: tuple[str, ...], option_mode: int, mode: str,
        variant: str | None = None, edit: PromptEdit | None = None,
    ) -> tuple[str, int]:
        """``(prompt, output_chars)`` for a query (``variant``: the perturbation's label,
        with its ``edit``; ``None`` for the control)."""
        key = (question_id, shown, option_mode, mode) if variant is None else (question_id, shown, option_mode, mode, variant)
        prompt = self._texts.get(key)
        if prompt is None:
            prompt = self._build(key, edit=edit)
        else:
            self._texts.move_to_end(key)
        return prompt, self.lengths(question_id, shown, option_mode, mode, variant, edit)[1]

    def lengths(
        self, question_id: str, shown: tuple[str, ...], option_mode: int, mode: str,
        variant: str | None = None, edit: PromptEdit | None = None,
    ) -> tuple[int, int]:
        """``(prompt_chars, output_chars)`` for a query (builds the prompt on a miss)."""
        key = (question_id, shown, option_mode, mode) if variant is None else (question_id, shown, option_mode, mode, variant)
        got = self._lens.get(key)
        if got is None:
            self._build(key, keep_text=False, edit=edit)  # a judge that needs the text builds it again
            got = self._lens[key]
        else:
            self._lens.move_to_end(key)
        return got


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
    mode = comparison.mode
    reps = comparison.repetitions
    prompts = prompts or PromptCache(bench, score_style=comparison.score_style)
    style = comparison.score_style if mode == "score" else None
    rewrites = rewrites or {}
    has_better = "better" in inst.columns
    has_gold = "gold" in inst.columns
    per_instance = mode == "listwise" and seeded_per_instance(comparison.permutations)
    cols: dict[str, list[Any]] = {k: [] for k in WORK_UNIT_COLUMNS}
    queries: list[Query] = []
    p = None
    option_mode = 0
    perms: Sequence[tuple[int, ...]] = []
    for row in inst.iter_rows(named=True):
        cands = tuple(row["candidates"])
        if p != len(cands) or per_instance:
            p = len(cands)
            seed = instance_seed(comparison.permutation_seed, row["instance_id"]) if per_instance else comparison.permutation_seed
            perms = permutations_for(mode, comparison.permutations, p, seed)
            option_mode = option_mode_for(bench, comparison, p)
        qid_ = row["question_id"]
        split = len(perms) * reps * len(variants) > batch_size
        if split and queries:  # a large instance starts in a batch of its own
            yield UnitBatch(judge, cols, queries)
            cols = {k: [] for k in WORK_UNIT_COLUMNS}
            queries = []
        better = row["better"] if has_better else None
        worst = row["worst"] if has_better else None
        gold = row["gold"] if has_gold else None
        version = bench.prompt_key(qid_)
        for k, perm in enumerate(perms):
            shown = tuple(cands[i] for i in perm)
            base_qid = query_id(bench.name, qid_, shown, mode, option_mode, style=style, version=version)
            for v in variants:
                if v.is_control:
                    target = tslot = edit = None
                    qid = base_qid
                else:
                    if v.rule in QUALITY_RULES and better is None:
                        continue  # the quality source does not know this instance
                    target = target_model(v.rule, cands, shown, better, worst)
                    tslot = LETTERS[shown.index(target)] if target is not None else None
                    edit = variant_edit(bench, v, qid_, shown, target, rewrites)
                    qid = query_id(bench.name, qid_, shown, mode, option_mode, v.key, style=style, version=version)
                if needs_prompt:
                    prompt, out_chars = prompts.get(qid_, shown, option_mode, mode, None if edit is None else v.label, edit)
                    prompt_chars = len(prompt)
                else:
                    prompt = None
                    prompt_chars, out_chars = prompts.lengths(qid_, shown, option_mode, mode, None if edit is None else v.label, edit)
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
                    cols["prompt_chars"].append(prompt_chars)
                    cols["perturbation"].append(v.label)
                    cols["perturbation_kind"].append(v.kind)
                    cols["perturbation_param"].append(v.param)
                    cols["target"].append(target)
                    cols["target_rule"].append(v.rule)
                    cols["target_slot"].append(tslot)
                    cols["better"].append(better)
                    cols["gold"].append(gold)
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
                            prompt=prompt,
                            system=bench.system_prompt(qid_, shown, option_mode) if needs_prompt else None,
                            perturbation=None if v.is_control else v.kind,
                            target_slot=tslot,
                            control_query_id=None if v.is_control else base_qid,
                        )
                    )
            if split and len(queries) >= batch_size:
                yield UnitBatch(judge, cols, queries)
                cols = {k: [] for k in WORK_UNIT_COLUMNS}
                queries = []
        if len(queries) >= batch_size:
            yield UnitBatch(judge, cols, queries)
            cols = {k: [] for k in WORK_UNIT_COLUMNS}
            queries = []
    if queries:
        yield UnitBatch(judge, cols, queries)


def variant_edit(
    bench: Benchmark, v: Variant, question_id: str, shown: Sequence[str], target: str | None,
    rewrites: Mapping[tuple[str, str, str], tuple[str, ...]],
) -> PromptEdit:
    """The prompt edit of variant ``v`` for one order (see :mod:`voirdire.benchmarks.perturb`).

    Raises:
        KeyError: an answer kind whose rewrite is missing from ``rewrites``.
    """
    if v.kind in INSTRUCTION_KINDS:
        if target is None:
            return PromptEdit(instruction=instruction_text(v.kind, v.param, None, None))
        t = shown.index(target)
        other = bench.slot_label(1 - t) if len(shown) == 2 else None
        return PromptEdit(instruction=instruction_text(v.kind, v.param, bench.slot_label(t), other))
    if v.kind in NAME_KINDS:
        return PromptEdit(names=tuple(shown))
    if v.kind in ANSWER_KINDS:
        return PromptEdit(answers={target: rewrites[(question_id, target, v.label)]})  # type: ignore[dict-item]
    raise ConfigError(f"unknown perturbation kind {v.kind!r}")


def count_units(inst: pl.DataFrame, comparison: ComparisonSpec, variants: Sequence[Variant] = (CONTROL,)) -> int:
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
            orders = len(permutations_for(comparison.mode, comparison.permutations, p, comparison.permutation_seed))
        total += n * orders * comparison.repetitions
    if len(variants) == 1:
        return total
    known = inst["better"].is_not_null().sum() if "better" in inst.columns else 0
    n_quality = sum(1 for v in variants if v.rule in QUALITY_RULES)
    n_plain = len(variants) - n_quality
    per_instance = total // inst.height  # the same orders x repetitions for every instance of a job
    return per_instance * (n_plain * inst.height + n_quality * int(known))
