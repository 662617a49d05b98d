"""Instances: what a job compares, one row per (question, candidates), before any order.

Pairwise: one instance per (question, candidate) with the reference. List-wise: one per
(question, list), the lists given in the job or drawn per question by a seeded rule
(:func:`draw_lists`), so the same job always compares the same lists. The work units
(orders, repetitions, perturbations) are generated from these rows by
:mod:`voirdire.engine.units`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import polars as pl

from voirdire.benchmarks.base import Benchmark
from voirdire.core import MAX_LIST, MIN_LIST, ConfigError, content_hash
from voirdire.engine.spec import BenchmarkSpec, ComparisonSpec


def list_size_for(spec: BenchmarkSpec, comparison: ComparisonSpec) -> int:
    """The list size p of a list-wise job: ``comparison.list_size``, else the length of the
    given ``benchmark.lists`` (which must then all have the same length).

    Raises:
        ConfigError: neither is set, lists of different lengths, or p outside 3..8.
    """
    p = comparison.list_size
    if spec.lists:
        sizes = sorted({len(lst) for lst in spec.lists})
        if len(sizes) > 1 or (p is not None and sizes[0] != p):
            want = f"comparison.list_size = {p}" if p is not None else "one length"
            raise ConfigError(
                f"benchmark.lists: every list must have {want}; got lengths {sizes}"
            )
        p = sizes[0]
    if p is None:
        raise ConfigError(
            "a list-wise job needs comparison.list_size (3..8) or benchmark.lists"
        )
    if not MIN_LIST <= p <= MAX_LIST:
        raise ConfigError(
            f"list-wise lists have {MIN_LIST} to {MAX_LIST} candidates, not {p}"
        )
    return p


def draw_lists(
    pool: Sequence[str],
    p: int,
    question_ids: Sequence[str],
    per_question: int,
    seed: int,
) -> list[tuple[str, list[str]]]:
    """The seeded rule that draws list-wise candidate lists from a pool of models.

    For question ``q`` and draw ``j`` (0-based), ``random.Random(H(seed, q, j))`` samples
    ``p`` models of ``pool`` without replacement; a list equal to an earlier one of the
    same question is drawn again (``j`` advances). The canonical order of a list is the
    pool's order. The same (pool, p, questions, per_question, seed) always gives the same
    lists, whatever other questions are selected.

    Returns:
        ``[(question_id, list), ...]``, ``per_question`` lists per question, in question
        order.

    Raises:
        ConfigError: the pool has fewer than p models, or fewer than ``per_question``
            distinct lists exist (C(len(pool), p)).
    """
    n = len(pool)
    if n < p:
        raise ConfigError(
            f"list-wise: {p} candidates per list, but only {n} model(s) to draw from"
        )
    if per_question > math.comb(n, p):
        raise ConfigError(
            f"list-wise: {per_question} lists per question asked, but only C({n}, {p}) = {math.comb(n, p)} distinct lists exist"
        )
    index = {m: i for i, m in enumerate(pool)}
    out: list[tuple[str, list[str]]] = []
    for q in question_ids:
        seen: set[tuple[str, ...]] = set()
        j = 0
        while len(seen) < per_question:
            rng = random.Random(content_hash("lists", str(seed), q, str(j)))
            lst = tuple(sorted(rng.sample(list(pool), p), key=index.__getitem__))
            j += 1
            if lst not in seen:
                seen.add(lst)
                out.append((q, list(lst)))
    return out


def _require_models(
    bench: Benchmark, models: Sequence[str], what: str, where: str = ""
) -> None:
    """Raises ConfigError naming the ``models`` the benchmark's table does not have."""
    known = set(bench.models)
    unknown = [m for m in models if m not in known]
    if unknown:
        raise ConfigError(
            f"benchmark {bench.name}: unknown {what} {', '.join(map(repr, unknown))}{where}; "
            f"the table has: {', '.join(bench.models)}"
        )


def _listwise_instances(
    bench: Benchmark, spec: BenchmarkSpec, comparison: ComparisonSpec, q: pl.DataFrame
) -> pl.DataFrame:
    p = list_size_for(spec, comparison)
    qsel = q.select("question_id", "task", "input_chars")
    if spec.lists:
        lists = [list(map(str, lst)) for lst in spec.lists]
        for lst in lists:
            _require_models(bench, lst, "model(s)", " in benchmark.lists")
            if len(set(lst)) != len(lst):
                raise ConfigError(f"benchmark.lists: a model appears twice in {lst}")
        if len({tuple(lst) for lst in lists}) != len(lists):
            raise ConfigError("benchmark.lists: a list is given twice")
        pairs = pl.DataFrame(
            {"candidates": lists}, schema={"candidates": pl.List(pl.String)}
        )
        out = qsel.join(pairs, how="cross")
    else:
        pool = spec.candidates or list(bench.models)
        _require_models(bench, pool, "candidate model(s)")
        if len(set(pool)) != len(pool):
            raise ConfigError("benchmark.candidates: a model is listed twice")
        drawn = draw_lists(
            pool,
            p,
            qsel["question_id"].to_list(),
            spec.lists_per_question,
            spec.list_seed,
        )
        lists_df = pl.DataFrame(
            {"question_id": [d[0] for d in drawn], "candidates": [d[1] for d in drawn]},
            schema={"question_id": pl.String, "candidates": pl.List(pl.String)},
        )
        out = qsel.join(lists_df, on="question_id", how="inner", maintain_order="left")
    return out.with_columns(
        pl.lit(None, dtype=pl.String).alias("candidate"),
        pl.lit(None, dtype=pl.String).alias("reference"),
        (pl.col("question_id") + ";" + pl.col("candidates").list.join(";")).alias(
            "instance_id"
        ),
    ).select(
        "question_id",
        "task",
        "input_chars",
        "candidate",
        "reference",
        "candidates",
        "instance_id",
    )


def instances(
    bench: Benchmark, spec: BenchmarkSpec, comparison: ComparisonSpec
) -> pl.DataFrame:
    """The job's instances, one row each.

    Columns: ``question_id`` (str), ``task`` (str), ``input_chars`` (int),
    ``candidates`` (list[str], canonical order), ``candidate`` (str, pairwise; null
    list-wise), ``reference`` (str, pairwise; null list-wise), ``instance_id`` (str:
    ``question_id;model;model;...``); pairwise, where the benchmark's questions carry one
    (a ``gold`` column), ``gold`` (str: the better model by the dataset's label); a benchmark whose
    data fixes its pairs (a user's own pairs,
    :meth:`~voirdire.benchmarks.base.Benchmark.fixed_instances`) adds ``gold`` too (str |
    null: the better candidate, ``"tie"``, or unknown).

    Pairwise: one instance per (question, candidate), candidates ``[candidate,
    reference]``. List-wise: one instance per (question, list); the lists are
    ``benchmark.lists`` (every list on every question) or drawn per question by
    :func:`draw_lists` from ``benchmark.candidates`` (default: every model of the table;
    ``reference`` plays no part).

    Raises:
        ConfigError: unknown candidate, reference, question, task or listed model; bad
            list sizes; not enough models to draw lists from.
    """
    fixed = bench.fixed_instances()
    if fixed is not None:
        return _fixed_instances(bench, fixed, spec, comparison)
    reference = spec.reference or bench.reference
    if reference not in bench.models:
        raise ConfigError(
            f"benchmark {bench.name}: unknown reference model {reference!r}"
        )
    candidates = spec.candidates or [m for m in bench.models if m != reference]
    _require_models(bench, candidates, "candidate model(s)")
    q = _select_questions(bench, spec, bench.questions)
    if comparison.mode == "listwise":
        if comparison.mode not in bench.comparison_modes:
            raise ConfigError(
                f"benchmark {bench.name} has no list-wise prompt template"
            )
        out = _listwise_instances(bench, spec, comparison, q)
        return out.head(spec.max_instances) if spec.max_instances else out
    if comparison.mode not in ("pairwise", "score"):
        raise ConfigError(
            f"comparison mode {comparison.mode!r} is not supported by this version"
        )
    if comparison.mode not in bench.comparison_modes:
        raise ConfigError(
            f"benchmark {bench.name} has no {comparison.mode} prompt template"
        )
    cands = pl.DataFrame({"candidate": [c for c in candidates if c != reference]})
    gold = (
        ["gold"] if "gold" in q.columns else []
    )  # the benchmark's gold label (the better model), if any
    out = (
        q.select("question_id", "task", "input_chars", *gold)
        .join(cands, how="cross")
        .with_columns(
            pl.lit(reference).alias("reference"),
            pl.concat_list(pl.col("candidate"), pl.lit(reference)).alias("candidates"),
        )
        .with_columns(
            (pl.col("question_id") + ";" + pl.col("candidates").list.join(";")).alias(
                "instance_id"
            )
        )
    )
    if spec.max_instances:
        out = out.head(spec.max_instances)
    return out


def _fixed_instances(
    bench: Benchmark,
    fixed: pl.DataFrame,
    spec: BenchmarkSpec,
    comparison: ComparisonSpec,
) -> pl.DataFrame:
    """Instances the data fixes (a user's pairs, one per row, with ``gold``), filtered by
    the job's questions, tasks and ``max_instances``.

    Raises:
        ConfigError: candidates, reference or lists given (the data fixes the pairs), a
            comparison mode the benchmark does not offer, unknown questions or tasks.
    """
    for key in ("candidates", "reference", "lists"):
        if getattr(spec, key):
            raise ConfigError(
                f"benchmark {bench.name}: benchmark.{key} does not apply; each row of the data is one pair"
            )
    if comparison.mode not in bench.comparison_modes:
        raise ConfigError(
            f"benchmark {bench.name} has no {comparison.mode} prompt template (offered: {', '.join(bench.comparison_modes)})"
        )
    q = _select_questions(bench, spec, fixed)
    out = (
        q.with_columns(candidates=pl.concat_list("candidate", "reference"))
        .with_columns(
            instance_id=pl.col("question_id")
            + ";"
            + pl.col("candidates").list.join(";")
        )
        .select(
            "question_id",
            "task",
            "input_chars",
            "candidate",
            "reference",
            "candidates",
            "instance_id",
            "gold",
        )
    )
    return out.head(spec.max_instances) if spec.max_instances else out


def _select_questions(
    bench: Benchmark, spec: BenchmarkSpec, q: pl.DataFrame
) -> pl.DataFrame:
    """``q`` (rows with ``question_id``, ``task``) restricted to the job's questions and tasks.

    Raises:
        ConfigError: an unknown question id or task.
    """
    if spec.questions:
        missing = sorted(set(spec.questions) - set(q["question_id"].to_list()))
        if missing:
            raise ConfigError(
                f"benchmark {bench.name}: unknown question id(s) {', '.join(missing)}"
            )
        q = q.filter(pl.col("question_id").is_in(spec.questions))
    if spec.tasks:
        missing = sorted(set(spec.tasks) - set(q["task"].unique().to_list()))
        if missing:
            raise ConfigError(
                f"benchmark {bench.name}: unknown task(s) {', '.join(missing)}"
            )
        q = q.filter(pl.col("task").is_in(spec.tasks))
    return q
