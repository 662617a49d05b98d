"""The job spec: a TOML file, validated by pydantic before anything runs.

A job names a benchmark, the candidates compared, the judges (each a backend with its own
settings), the comparison design (mode, option mode, permutations, repetitions), sampling
settings and the output directory. Unknown keys anywhere are errors that name the key and
where it stood; so are unknown judge backends and invalid backend settings. Every key is
shown in the README's "A job file" and in ``examples/*.toml``.
"""

from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from voirdire import bounds
from voirdire.benchmarks.biases.bias import BiasType
from voirdire.benchmarks.biases.registry import get_bias
from voirdire.benchmarks.own_pairs.benchmark import PairsSpec
from voirdire.core import ConfigError, did_you_mean, model_keys
from voirdire.engine.judge_names import name_key
from voirdire.judges.base import (
    Sampling,
)
from voirdire.ownership import check_path_text


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BenchmarkSpec(_Strict):
    """Which benchmark, where its data is, and which candidates are compared.

    ``data_dir`` falls back to ``$VOIRDIRE_DATA``, then to ``../shared/data/judging-the-judges``
    and the directory ``voirdire data fetch`` writes (see
    :func:`voirdire.benchmarks.data.resolve_data_dir`).
    ``candidates`` defaults to every model of the table except the reference.
    """

    name: str = Field(max_length=bounds.MAX_NAME_CHARS)
    data_dir: str | None = None
    sample: Literal["full", "repetition"] = "full"
    reference: str | None = None
    candidates: list[str] | None = None
    questions: list[str] | None = None
    tasks: list[str] | None = None
    #: list-wise: the candidate lists, given (each a list of model names, canonical order);
    #: when absent, ``lists_per_question`` lists of ``comparison.list_size`` models are drawn
    #: per question from ``candidates`` (default: every model of the table) by a seeded rule
    #: (see :func:`voirdire.engine.instances.draw_lists`).
    lists: list[list[str]] | None = None
    list_seed: int = 0
    lists_per_question: int = Field(default=1, ge=1, le=10_000)
    max_instances: int | None = Field(default=None, ge=1)
    #: where the truly better candidate of an instance comes from (perturbation targets
    #: ``better``/``worse``, accuracy of ``fallacy``/``cot``): ``"simulated:<judge>"`` (that
    #: simulated judge's latent qualities), ``"replay:<recorded judge>"`` (the release
    #: judge's verdicts that agree in both orders) or ``"labels:<file.csv>"`` (columns
    #: ``instance_id``, ``better``); see :mod:`voirdire.engine.quality`.
    quality: str | None = None
    #: options of the benchmarks that take them (their class's ``options``): the release's
    #: folders to load and the comparison prompt of live judges
    subsets: list[str] | None = None
    prompt: str | None = None
    #: ``name = "pairs"``: a user's own pairs (:class:`voirdire.benchmarks.own_pairs.benchmark.PairsSpec`,
    #: ``docs/own-data.md``); relative paths from the working directory
    pairs: PairsSpec | None = None
    #: a judgment log format (``voirdire audit``, ``docs/audit.md``): the log files or
    #: directories read, and the format's own settings (``[benchmark.log]``)
    logs: list[str] | None = None
    log: dict[str, Any] | None = None

    @field_validator("questions", mode="before")
    @classmethod
    def _questions_as_str(cls, v: Any) -> Any:
        return [str(q) for q in v] if isinstance(v, list) else v


class ComparisonSpec(_Strict):
    """The comparison design.

    ``mode`` is ``pairwise`` (candidate vs reference), ``listwise`` (p candidates) or
    ``score`` (pairwise, the judge scores each answer from 1 to 10 and the higher score
    wins, equal scores a tie: Wang et al. 2023; ``score_style`` ``evidence_first`` (the
    explanation before the scores, the paper's MEC template) or ``scores_first``). Score
    mode with ``permutations = "both"`` gives BPC, with ``repetitions = k`` at
    temperature > 0 gives MEC (see ``docs/mitigation.md``).
    ``option_mode``: pairwise 2 (A/B) or 3 (A/B/C = tie); ``None`` takes the benchmark's
    release setting. ``permutations``: pairwise ``both`` (the original and the swapped
    order) or ``original``; list-wise ``cyclic``, ``all``, ``latin`` or ``sample:k``
    (:mod:`voirdire.engine.permutations`). ``repetitions``: how many times each query is
    asked (RS needs >= 2).

    List-wise: ``list_size`` p (3..8; may be left out when ``benchmark.lists`` gives the
    lists); ``option_mode`` p (no tie) or p + 1 (the letter after the last slot is the tie;
    ``None``: the benchmark's default, MT-Bench p + 1, DevBench p); ``permutation_seed``
    seeds ``sample:k``.
    """

    mode: Literal["pairwise", "listwise", "score"] = "pairwise"
    score_style: Literal["evidence_first", "scores_first"] = "evidence_first"
    option_mode: int | None = Field(default=None, ge=2, le=9)
    permutations: str = "both"
    repetitions: int = Field(default=1, ge=1, le=100)
    list_size: int | None = Field(default=None, ge=3, le=8)
    permutation_seed: int = 0

    @model_validator(mode="after")
    def _check(self) -> ComparisonSpec:
        if self.mode == "score" and self.option_mode not in (None, 3):
            raise ValueError(
                f"score mode decides win, loss or tie (option_mode 3), not option_mode {self.option_mode}"
            )
        if self.mode in ("pairwise", "score"):
            if self.permutations not in ("both", "original"):
                raise ValueError(
                    f"pairwise permutations must be 'both' or 'original', not {self.permutations!r}"
                )
            if self.option_mode is not None and self.option_mode not in (2, 3):
                raise ValueError(
                    f"pairwise option_mode must be 2 or 3, not {self.option_mode}"
                )
        else:
            from voirdire.engine.permutations import parse_scheme, scheme_size

            try:
                parse_scheme(self.permutations)
                if self.list_size is not None:
                    scheme_size(self.permutations, self.list_size)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
            p = self.list_size
            if (
                p is not None
                and self.option_mode is not None
                and self.option_mode not in (p, p + 1)
            ):
                raise ValueError(
                    f"list-wise option_mode must be list_size ({p}, no tie) or list_size + 1 ({p + 1}, with a tie), "
                    f"not {self.option_mode}"
                )
        return self


class RunSpec(_Strict):
    """How the scheduler runs the job.

    ``batch_size``: queries per batch sent to a judge worker (unset: 4,096 for a prompt-free
    judge, :func:`~voirdire.engine.units.batch_size_for`). ``max_attempts``: tries of a
    batch whose worker died before it is recorded as failed. ``flush_seconds`` /
    ``flush_rows``: how often finished results are appended to Parquet (a crash loses at
    most what was in flight plus this much).
    """

    batch_size: int = Field(default=256, ge=1, le=100_000)
    max_attempts: int = Field(default=3, ge=1, le=20)
    flush_seconds: float = Field(default=2.0, gt=0)
    flush_rows: int = Field(default=20_000, ge=1)


class AnalysisSpec(_Strict):
    """Analysis settings. ``tokenizer``: a local path (or name) loadable by
    ``transformers.AutoTokenizer.from_pretrained``; when set, the report also measures
    lengths in tokens (``prompt_tokens``, ``output_tokens``). Unset: characters only."""

    tokenizer: str | None = None


class PerturbationSpec(BaseModel):
    """One ``[[perturbations]]`` entry: a bias type, its target rule(s) and its parameter
    values; it expands into one variant per (parameter value, target rule)
    (:func:`voirdire.engine.perturb.expand_variants`, ``docs/biases.md``).

    ``kind``: a registered bias type (:func:`voirdire.benchmarks.biases.registry.get_bias`) or an
    import path ``"module:ATTRIBUTE"`` naming one. ``target``: ``better`` | ``worse`` |
    ``candidate`` | ``reference`` | ``slot:A`` ... (one or a list; default per kind). The
    one other key allowed is the kind's parameter (``shares = [60, 90]`` for bandwagon:
    :attr:`voirdire.benchmarks.biases.bias.BiasType.param`), validated by the kind's record and
    stored with its values converted (``ratios = [2]`` reads ``[2.0]``). ``rewriter``: the
    ``[[rewriters]]`` entry that rewrites answers (answer kinds only, required there).
    """

    model_config = ConfigDict(extra="allow")

    kind: str
    target: str | list[str] | None = None
    rewriter: str | None = None

    @model_validator(mode="after")
    def _check_kind(self) -> PerturbationSpec:
        try:  # the parameter's values stored converted
            self.__pydantic_extra__ = get_bias(self.kind).normalize(
                self.model_extra or {}
            )
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return self

    @property
    def bias(self) -> BiasType:
        """The entry's bias type record."""
        return get_bias(self.kind)

    @property
    def values(self) -> tuple[str, ...] | None:
        """The parameter values as text (the kind's defaults when none is given; None for
        a kind without a parameter)."""
        return self.bias.value_texts(self.model_extra or {})


class JudgeSpec(BaseModel):
    """One judge: a label, a backend and that backend's settings.

    Keys other than ``name``, ``backend``, ``workers``, ``concurrency``, ``sampling``,
    ``resources`` and ``scheduling`` are the backend's own settings, validated by its
    ``Settings`` model.

    Placement on a Ray cluster (neither enters the judge's identity): ``resources`` adds
    Ray custom resources each worker actor requires (e.g. ``{"gpu_node": 1}`` or
    ``{"accelerator_type:H100": 0.001}``), merged over the backend's own; ``scheduling``
    is a Ray scheduling strategy for the worker actors: ``"DEFAULT"`` (pack) or
    ``"SPREAD"`` (spread the pool over the nodes).

    ``recorded_as`` (a judgment log benchmark only, ``docs/audit.md``): the judge of the log
    whose recorded verdicts count as this live judge's answers; the judge is then asked only
    the orders the log lacks, and the setting enters its identity
    (:mod:`voirdire.engine.completion`).
    """

    model_config = ConfigDict(extra="allow")

    name: str  # at most 200 characters: engine.judge_names, when the job is planned
    backend: str = Field(max_length=bounds.MAX_NAME_CHARS)
    workers: int | None = Field(default=None, ge=1, le=1024)
    concurrency: int | None = Field(default=None, ge=1, le=4096)
    sampling: dict[str, Any] | None = None
    resources: dict[str, float] | None = None
    scheduling: Literal["DEFAULT", "SPREAD"] | None = None
    recorded_as: str | None = Field(default=None, min_length=1)

    @property
    def backend_settings(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class JobSpec(_Strict):
    """A whole job file (the README's "A job file" shows every key)."""

    name: str = Field(max_length=bounds.MAX_NAME_CHARS)
    output_dir: str
    benchmark: BenchmarkSpec
    comparison: ComparisonSpec = ComparisonSpec()
    sampling: Sampling = Sampling()
    run: RunSpec = RunSpec()
    analysis: AnalysisSpec = AnalysisSpec()
    judges: list[JudgeSpec] = Field(min_length=1)
    #: the bias suite: perturbations crossed with every (instance, order, repetition)
    perturbations: list[PerturbationSpec] = Field(default_factory=list)
    #: generators that rewrite answers for answer-side perturbations (a judge backend, or
    #: ``template`` / ``simulated``); same keys as ``[[judges]]``
    rewriters: list[JudgeSpec] = Field(default_factory=list)
    #: where the file was read from (set by load_job; relative paths resolve against cwd)
    source: str | None = Field(default=None, exclude=True)

    @field_validator("output_dir")
    @classmethod
    def _local_output_dir(cls, v: str) -> str:
        if "://" in v and not v.startswith("file://"):
            raise ValueError(
                f"{v!r}: object-store URIs are not supported as output_dir; use a path on a filesystem "
                "shared by the cluster's head node (NFS/EFS/Filestore, or the bucket mounted with s3fs/gcsfuse)"
            )
        return check_path_text(v[len("file://") :] if v.startswith("file://") else v)

    @model_validator(mode="after")
    def _unique_judges(self) -> JobSpec:
        names = Counter(name_key(j.name) for j in self.judges)  # as shown: "a " is "a"
        dupes = sorted(n for n, k in names.items() if k > 1)
        if dupes:
            raise ValueError(
                f"judge names must be unique; repeated: {', '.join(dupes)}"
            )
        return self


def _describe(exc: ValidationError, models: tuple = ()) -> str:
    """A validation error in one line: each failing key path and its problem, an unknown
    key with the closest known key (:func:`~voirdire.core.did_you_mean`) of ``models``
    (default :class:`JobSpec`) at that path."""
    models = models or (JobSpec,)
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            *above, key = err["loc"] or ("",)
            known = [k for m in models for k in model_keys(m, above)]
            msg = "unknown key" + did_you_mean(key, known)
        else:
            msg = err["msg"]
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def parse_job(data: dict[str, Any], source: str = "<job>") -> JobSpec:
    """Validate a job given as a dict (the parsed TOML).

    Raises:
        ConfigError: naming the source, the offending key path and the problem.
    """
    for key in ("judges", "rewriters"):
        listed = data.get(key) if isinstance(data, dict) else None
        if isinstance(listed, list) and len(listed) > bounds.MAX_JUDGES:
            raise ConfigError(
                f"{source}: {len(listed):,} {key}, over the limit of {bounds.MAX_JUDGES:,} "
                "(voirdire.bounds.MAX_JUDGES); split the study into several jobs"
            )
    try:
        job = JobSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_describe(exc)}") from exc
    job.source = source
    return job


def load_job(path: str | Path) -> JobSpec:
    """Read and validate a TOML job file.

    Raises:
        ConfigError: the file is missing, is not valid TOML, or fails validation.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"job file not found: {p}")
    text = bounds.read_job_text(p, str(p))
    bounds.check_toml_depth(text, str(p))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from exc
    except RecursionError:  # nesting the scan does not see; not expected
        raise ConfigError(f"{p}: nested too deeply to decode") from None
    bounds.check_value_depth(data, str(p))
    return parse_job(data, str(p))
