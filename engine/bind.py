"""Binding a job's judges to their backends: :class:`ResolvedJudge` (a ``[[judges]]`` entry
with its backend class, validated settings, identity and pool sizes) and the expansion of
entries that stand for several judges (:func:`expand_judges`, :func:`resolve_judges`).

Split from :mod:`voirdire.engine.spec` (which still exports these names); a judge whose
``recorded_as`` names a judge of a judgment log (``docs/audit.md``, "Completing a log")
has that in its identity.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError

from voirdire.core import ConfigError, content_hash
from voirdire.engine.judge_names import check_judge_name, name_key
from voirdire.engine.spec import ComparisonSpec, JobSpec, JudgeSpec, _describe
from voirdire.judges.base import (
    JudgeBackend,
    JudgeContext,
    JudgeSettings,
    Sampling,
    get_backend,
)
from voirdire.judges.capabilities import Expands, RewriterOnly, comparison_mode

__all__ = ["ResolvedJudge", "expand_judges", "resolve_judges"]


class ResolvedJudge:
    """A judge spec bound to its backend class and validated settings.

    ``identity_hash`` (32 hex chars) digests the backend identity and the effective
    sampling settings; it enters every unit id of this judge.
    """

    def __init__(self, spec: JudgeSpec, job: JobSpec) -> None:
        self.spec = spec
        self.name = check_judge_name(
            spec.name
        )  # after expansion: a name stands for a folder
        self.backend: type[JudgeBackend[Any]] = get_backend(spec.backend)
        try:
            self.settings: JudgeSettings = self.backend.Settings(
                **spec.backend_settings
            )
            self.sampling = Sampling(
                **{**job.sampling.model_dump(), **(spec.sampling or {})}
            )
        except ValidationError as exc:
            raise ConfigError(
                f"judge {spec.name!r} (backend {spec.backend!r}): "
                + _describe(exc, (self.backend.Settings, Sampling))
            ) from exc
        self.identity = self.backend.identity(self.settings, self.sampling)
        #: the log's judge whose verdicts count as this judge's (engine.completion)
        self.recorded_as = spec.recorded_as
        if spec.recorded_as is not None:
            self.identity = {**self.identity, "recorded_as": spec.recorded_as}
        self.identity_hash = content_hash(self.identity)
        #: the mode of this judge's units when it is not the job's (capabilities.OwnComparisonMode)
        self.mode = comparison_mode(self.backend, self.settings)
        self.workers = spec.workers or self.backend.workers(self.settings)
        self.concurrency = spec.concurrency or self.backend.concurrency(self.settings)
        #: Ray actor options from the job (``resources``, ``scheduling_strategy``), merged
        #: over the backend's ``worker_options`` by the scheduler
        self.actor_options: dict[str, Any] = {}
        if spec.resources:
            self.actor_options["resources"] = dict(spec.resources)
        if spec.scheduling:
            self.actor_options["scheduling_strategy"] = spec.scheduling

    def comparison_for(self, comparison: ComparisonSpec) -> ComparisonSpec:
        """The job's comparison design as this judge's units have it (its own mode, if any)."""
        return (
            comparison
            if self.mode in (None, comparison.mode)
            else comparison.model_copy(update={"mode": self.mode, "option_mode": None})
        )

    def context(
        self,
        benchmark: str,
        data_dir: str | None,
        output_dir: str | None,
        verdict_format: tuple[str, str] | None = None,
    ) -> JudgeContext:
        """The judge's :class:`JudgeContext`; ``verdict_format`` is the benchmark's
        ``(verdict_cue, verdict_closing)``."""
        cue, closing = verdict_format or (None, "")
        return JudgeContext(
            judge=self.name,
            benchmark=benchmark,
            data_dir=data_dir,
            output_dir=output_dir,
            sampling=self.sampling,
            driver_pid=os.getpid(),
            concurrency=self.concurrency,
            identity_hash=self.identity_hash,
            verdict_cue=cue,
            verdict_closing=closing,
        )


def expand_judges(
    job: JobSpec, benchmark: str, data_dir: str | os.PathLike[str]
) -> list[JudgeSpec]:
    """The job's judges, with every entry that stands for several judges replaced by them
    (:meth:`~voirdire.judges.capabilities.Expands.expand`: a replay judge with
    ``recorded = "*"`` becomes one judge per recorded output in ``data_dir`` for its study
    and ``benchmark``, the release name such as ``MTBench``, in name order).

    Raises:
        ConfigError: an unknown backend, an entry that stands for no judge (the backend
            names where it looked), or an expanded name that repeats another judge's.
    """
    out: list[JudgeSpec] = []
    for j in job.judges:
        backend = get_backend(j.backend)
        found = (
            backend.expand(
                j.backend_settings,
                judge=j.name,
                benchmark=benchmark,
                data_dir=data_dir,
                spec=job.benchmark,
            )
            if issubclass(backend, Expands)
            else None
        )
        if found is None:
            out.append(j)
            continue
        out += [
            JudgeSpec.model_validate(
                {**j.model_dump(exclude_none=True), **update, "name": name}
            )
            for name, update in found
        ]
    names = [name_key(j.name) for j in out]  # as shown: "a " is "a"
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(
            f'judge names must be unique after expanding recorded = "*"; repeated: {", ".join(dupes)}'
        )
    return out


def resolve_judges(
    job: JobSpec,
    benchmark: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
) -> list[ResolvedJudge]:
    """Bind every judge of the job to its backend (unknown backends and bad settings raise
    :class:`ConfigError`, as does a backend that cannot judge); with ``benchmark`` and
    ``data_dir``, entries standing for several judges are expanded first
    (:func:`expand_judges`)."""
    specs = (
        expand_judges(job, benchmark, data_dir)
        if benchmark and data_dir is not None
        else job.judges
    )
    out = [ResolvedJudge(j, job) for j in specs]
    if bad := [rj for rj in out if issubclass(rj.backend, RewriterOnly)]:
        raise ConfigError(
            f"judge {bad[0].name!r}: backend {bad[0].spec.backend!r} cannot judge (it rewrites answers: name it in [[rewriters]])"
        )
    return out
