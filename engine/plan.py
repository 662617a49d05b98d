"""Planning a job: named stages, each declaring what it reads and what it writes.

``plan_job`` validates a job against its data and judges without sending anything. It is a
sequence of :class:`~voirdire.stages.Stage` records (after Ray Data LLM, where each processor stage declares
its inputs) run in order by :func:`~voirdire.stages.run_stages` over one state, a dict by key. The state
starts with the inputs ``job`` (the :class:`~voirdire.engine.spec.JobSpec`) and ``dry_run``
(bool); a stage is called with exactly the keys it reads, as keyword arguments, and returns
exactly the keys it writes. :func:`~voirdire.stages.check_stages` refuses a sequence where a stage reads a
key no earlier stage wrote, or two stages write the same key, so the order below is the
order of the data and nothing is read before it is made:

==========  ====================================================  =========================
stage       reads                                                 writes
==========  ====================================================  =========================
output      job                                                   (nothing: a check)
benchmark   job                                                   bench, data_dir
instances   job, bench                                            listed, list_size
judges      job, bench, data_dir                                  judges
rewriters   job                                                   rewriters
variants    job, list_size, judges, rewriters                     variants
quality     job, bench, data_dir, judges, listed                  instances
completion  job, bench, data_dir, judges, instances               recorded, own
rewrites    bench, instances, variants, rewriters                 rewrites
preflight   job, dry_run, bench, data_dir, judges, rewriters,     warnings
            rewrites
units       job, instances, variants                              units_per_judge
==========  ====================================================  =========================

(:data:`PLAN_STAGES` is the source; ``tests/test_plan.py`` checks it.) The stages call the
rooms' own functions (:mod:`~voirdire.engine.instances`, :mod:`~voirdire.engine.spec`,
:mod:`~voirdire.engine.perturb`, :mod:`~voirdire.engine.quality`,
:mod:`~voirdire.engine.rewrite`) and act on what a judge backend declares, never on its name.
The errors a stage raises are :class:`~voirdire.core.ConfigError` (one line naming the
culprit), before any query is sent. Running the plan (rewrites, then judging) is
:func:`voirdire.engine.job.run_job`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import polars as pl

from voirdire.benchmarks.base import Benchmark
from voirdire.benchmarks.registry import data_dir_for, load_benchmark
from voirdire.core import ConfigError
from voirdire.engine.bind import ResolvedJudge, resolve_judges
from voirdire.engine.completion import OwnUnits, plan_completion
from voirdire.engine.instances import instances as make_instances
from voirdire.engine.instances import list_size_for
from voirdire.engine.perturb import CONTROL, Variant, expand_variants
from voirdire.engine.quality import quality_identity, with_quality
from voirdire.engine.rewrite import check_rewriters, plan_rewrites, resolve_rewriters
from voirdire.engine.spec import JobSpec
from voirdire.engine.units import count_units
from voirdire.judges.capabilities import Recording
from voirdire.ownership import claim_output_dir
from voirdire.stages import Stage, run_stages

__all__ = [
    "JobPlan",
    "PLAN_INPUTS",
    "PLAN_STAGES",
    "plan_job",
    "check_keys",
]


@dataclass(frozen=True)
class JobPlan:
    """A job validated against its data and judges; nothing sent yet.

    Attributes:
        bench: the loaded benchmark.
        instances: one row per instance (columns of :func:`voirdire.engine.instances.instances`,
            plus ``better`` and ``worst``, str, null where unknown: :func:`voirdire.engine.quality.with_quality`).
        judges: the resolved judges, in job order.
        data_dir: the benchmark data directory.
        units_per_judge: work units (queries) each judge is asked.
        list_size: candidates per instance (2 pairwise, p list-wise).
        warnings: what a dry-run plan let pass that a real run refuses (missing API keys).
        variants: the control and the perturbation variants (``docs/biases.md``).
        rewriters: the resolved ``[[rewriters]]`` by name.
        rewrites: the rewrites the answer variants need (:func:`voirdire.engine.rewrite.plan_rewrites`).
        recorded: per judge completing a log (``recorded_as``), the units the log answers;
            the judge is asked ``units_per_judge`` minus these (:mod:`voirdire.engine.completion`).
        own: per judge asked only the units its own records hold (a log's replay judge),
            those units and how many (:class:`~voirdire.engine.completion.OwnUnits`): it
            is asked ``own[name].count``, not ``units_per_judge`` (:meth:`units_of`).
    """

    bench: Benchmark
    instances: pl.DataFrame
    judges: tuple[ResolvedJudge, ...]
    data_dir: Path
    units_per_judge: int
    list_size: int
    warnings: tuple[str, ...] = ()
    variants: tuple[Variant, ...] = (CONTROL,)
    rewriters: dict[str, ResolvedJudge] | None = None
    rewrites: pl.DataFrame | None = None
    recorded: dict[str, int] = field(default_factory=dict)
    own: dict[str, OwnUnits] = field(default_factory=dict)

    def units_of(self, judge: str) -> int:
        """The units of judge ``judge``: its own records' (:attr:`own`), else
        ``units_per_judge`` (a judge completing a log: those the log answers included)."""
        own = self.own.get(judge)
        return self.units_per_judge if own is None else own.count


# -- the stages --------------------------------------------------------------------------


def check_output_dir(job: JobSpec) -> dict[str, Any]:
    """Refuse an output directory that is not ours (writes nothing; the run claims it
    again). Raises ConfigError: see :func:`~voirdire.ownership.claim_output_dir`."""
    claim_output_dir(job.output_dir)
    return {}


def load_bench(job: JobSpec) -> dict[str, Any]:
    """The benchmark (``bench``) and its data directory (``data_dir``; a user's own pairs:
    the pairs' directory). Raises ConfigError: unknown benchmark, missing data."""
    if job.benchmark.pairs is not None:  # a user's own pairs: no release data directory
        bench = load_benchmark(job.benchmark.name, pairs=job.benchmark.pairs)
        return {"bench": bench, "data_dir": bench.data_dir}
    data_dir = data_dir_for(job.benchmark.name, job.benchmark.data_dir)
    spec = job.benchmark
    bench = load_benchmark(
        spec.name,
        data_dir,
        sample=spec.sample,
        subsets=spec.subsets,
        prompt=spec.prompt,
        logs=spec.logs,
        log=spec.log,
    )
    return {
        "bench": bench,
        "data_dir": data_dir or bench.data_dir,
    }  # a benchmark reading no release: its own


def list_instances(job: JobSpec, bench: Benchmark) -> dict[str, Any]:
    """The instances before the quality source (``listed``) and the candidates per
    instance (``list_size``: 2, or p list-wise). Raises ConfigError: unknown candidates,
    questions or tasks, a bad list size."""
    listed = make_instances(bench, job.benchmark, job.comparison)
    list_size = (
        list_size_for(job.benchmark, job.comparison)
        if job.comparison.mode == "listwise"
        else 2
    )
    return {"listed": listed, "list_size": list_size}


def bind_judges(job: JobSpec, bench: Benchmark, data_dir: Any) -> dict[str, Any]:
    """The judges bound to their backends, entries standing for several expanded
    (``judges``, a tuple of :class:`~voirdire.engine.bind.ResolvedJudge` in job order).
    Raises ConfigError: see :func:`~voirdire.engine.bind.resolve_judges`."""
    return {"judges": tuple(resolve_judges(job, bench.name, data_dir))}


def bind_rewriters(job: JobSpec) -> dict[str, Any]:
    """The ``[[rewriters]]`` bound to the backends that rewrite for them (``rewriters``, by
    name). Raises ConfigError: see :func:`~voirdire.engine.rewrite.resolve_rewriters`."""
    return {"rewriters": resolve_rewriters(job)}


def expand_perturbations(
    job: JobSpec,
    list_size: int,
    judges: tuple[ResolvedJudge, ...],
    rewriters: dict[str, ResolvedJudge],
) -> dict[str, Any]:
    """The control and the perturbation variants (``variants``), checked against what the
    rewriters and the judges' backends declare they can do.

    Raises:
        ConfigError: see :func:`~voirdire.engine.perturb.expand_variants` and
            :func:`~voirdire.engine.rewrite.check_rewriters`; also perturbations with a
            judge whose backend answers only recorded prompts
            (:class:`~voirdire.judges.capabilities.Recording`).
    """
    variants = expand_variants(
        job,
        list_size=list_size,
        rewriter_hashes={n: r.identity_hash for n, r in rewriters.items()},
        quality_identity=quality_identity(
            job.benchmark.quality, {rj.name: rj for rj in judges}
        ),
    )
    check_rewriters(variants, rewriters)
    recording = [rj.name for rj in judges if issubclass(rj.backend, Recording)]
    if len(variants) > 1 and recording:
        raise ConfigError(
            f"judge(s) {', '.join(map(repr, recording))}: answers only recorded prompts (its backend records "
            "outputs of the unperturbed prompts) and cannot answer perturbations; use it in a job without "
            '[[perturbations]] (or as benchmark.quality = "<backend>:<judge>" where its backend is a quality source)'
        )
    return {"variants": variants}


def add_quality(
    job: JobSpec,
    bench: Benchmark,
    data_dir: Any,
    judges: tuple[ResolvedJudge, ...],
    listed: pl.DataFrame,
) -> dict[str, Any]:
    """The instances (``instances``) with the truly better and worst candidate from
    ``benchmark.quality`` (columns ``better``, ``worst``; without a source the instances as
    listed). Raises ConfigError: see :func:`~voirdire.engine.quality.with_quality`."""
    if not job.benchmark.quality:
        return {"instances": listed}
    by_name = {rj.name: rj for rj in judges}
    rated = with_quality(
        listed,
        job.benchmark.quality,
        bench=bench,
        judges=by_name,
        data_dir=str(data_dir),
    )
    return {"instances": rated}


def list_rewrites(
    bench: Benchmark,
    instances: pl.DataFrame,
    variants: tuple[Variant, ...],
    rewriters: dict[str, ResolvedJudge],
) -> dict[str, Any]:
    """Every rewrite the answer variants need (``rewrites``:
    :func:`~voirdire.engine.rewrite.plan_rewrites`)."""
    return {"rewrites": plan_rewrites(bench, instances, variants, rewriters)}


def preflight(
    job: JobSpec,
    dry_run: bool,
    bench: Benchmark,
    data_dir: Any,
    judges: tuple[ResolvedJudge, ...],
    rewriters: dict[str, ResolvedJudge],
    rewrites: pl.DataFrame,
) -> dict[str, Any]:
    """Each judge's and each used rewriter's backend preflight and secrets check
    (``warnings``: with ``dry_run``, the missing secrets; otherwise none).

    Raises:
        ConfigError: a failed preflight, or (unless ``dry_run``) a missing secret.
    """
    used = set(rewrites["rewriter"].unique().to_list())
    warnings = []
    for rj in [*judges, *(r for n, r in rewriters.items() if n in used)]:
        ctx = rj.context(
            bench.name, str(data_dir), job.output_dir, bench.verdict_format
        )
        rj.backend.preflight(rj.settings, ctx)
        try:
            rj.backend.check_secrets(rj.settings, ctx)
        except ConfigError as exc:
            if not dry_run:
                raise
            warnings.append(
                str(exc).replace(
                    " and run again. Nothing was sent.", " before a real run."
                )
            )
    return {"warnings": tuple(warnings)}


def count(
    job: JobSpec, instances: pl.DataFrame, variants: tuple[Variant, ...]
) -> dict[str, Any]:
    """The work units each judge is asked (``units_per_judge``:
    :func:`~voirdire.engine.units.count_units`)."""
    return {"units_per_judge": count_units(instances, job.comparison, variants)}


#: what planning starts from
PLAN_INPUTS = ("job", "dry_run")

#: planning, in order (the module docstring's table)
PLAN_STAGES: tuple[Stage, ...] = (
    Stage("output", ("job",), (), check_output_dir),
    Stage("benchmark", ("job",), ("bench", "data_dir"), load_bench),
    Stage("instances", ("job", "bench"), ("listed", "list_size"), list_instances),
    Stage("judges", ("job", "bench", "data_dir"), ("judges",), bind_judges),
    Stage("rewriters", ("job",), ("rewriters",), bind_rewriters),
    Stage(
        "variants",
        ("job", "list_size", "judges", "rewriters"),
        ("variants",),
        expand_perturbations,
    ),
    Stage(
        "quality",
        ("job", "bench", "data_dir", "judges", "listed"),
        ("instances",),
        add_quality,
    ),
    Stage(
        "completion",
        ("job", "bench", "data_dir", "judges", "instances"),
        ("recorded", "own"),
        plan_completion,
    ),
    Stage(
        "rewrites",
        ("bench", "instances", "variants", "rewriters"),
        ("rewrites",),
        list_rewrites,
    ),
    Stage(
        "preflight",
        ("job", "dry_run", "bench", "data_dir", "judges", "rewriters", "rewrites"),
        ("warnings",),
        preflight,
    ),
    Stage("units", ("job", "instances", "variants"), ("units_per_judge",), count),
)

#: what the plan keeps: the fields of JobPlan
PLAN_OUTPUTS = tuple(f.name for f in fields(JobPlan))


def plan_job(
    job: JobSpec,
    dry_run: bool = False,
    *,
    on_stage: Callable[[Stage], None] | None = None,
) -> JobPlan:
    """Validate a job against its data and judges without sending anything, by running
    :data:`PLAN_STAGES` in order.

    With ``dry_run`` (a plan to estimate, never to run) missing secrets (API keys) are
    returned in ``JobPlan.warnings`` instead of raised. ``on_stage`` is called with each
    stage after it ran.

    Raises:
        ConfigError: an output directory that is not ours (:func:`~voirdire.ownership.claim_output_dir`),
            missing data, unknown candidates/questions/tasks, unknown backends,
            invalid settings, a failed backend preflight, or (unless ``dry_run``) a
            missing API key.
    """
    state = run_stages(
        PLAN_STAGES, {"job": job, "dry_run": dry_run}, PLAN_OUTPUTS, on_stage=on_stage
    )
    return JobPlan(
        **{**{k: state[k] for k in PLAN_OUTPUTS}, "data_dir": Path(state["data_dir"])}
    )


def check_keys(job: JobSpec) -> None:
    """The API keys of a job's named judges checked before anything slow starts (Ray, the
    benchmark's data): each judge whose backend reads a key from the environment
    (``check_secrets``) has it. Judges standing for several (``"*"``) and settings the
    plan refuses otherwise are left to :func:`plan_job`, which checks every judge again.

    Raises:
        ConfigError: the backend's line naming the judge and the variable.
    """
    from pydantic import ValidationError

    from voirdire.judges.base import JudgeContext, get_backend

    for spec in job.judges:
        if "*" in spec.name:
            continue
        try:
            backend = get_backend(spec.backend)
            settings = backend.Settings(**spec.backend_settings)
        except (ConfigError, ValidationError, TypeError):
            continue  # the plan says what is wrong, in its own words
        ctx = JudgeContext(
            judge=spec.name, benchmark="", data_dir=None, output_dir=job.output_dir
        )
        backend.check_secrets(settings, ctx)
